"""How an answer looks in a Matrix client: Markdown rendered to safe HTML, and long answers in several messages.

The HTML comes from a CommonMark renderer with raw HTML disabled, so only the tags the renderer makes
itself (paragraphs, emphasis, lists, code, tables, links with safe schemes) can appear: text a model or
a user wrote can never inject markup. A Matrix event is at most 64 KiB, body and HTML together, so an
answer longer than a message holds is split at paragraph, then line, then character boundaries.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from mindroom.constants import STREAM_STATUS_KEY

__all__ = ["MAX_BODY_BYTES", "MAX_HTML_BYTES", "python_renderer", "split_message", "to_html", "with_stream_status"]

MAX_BODY_BYTES = 24_000
MAX_HTML_BYTES = 32_000
"""Room for the body, its HTML and the relations within the homeserver's 65,536-byte event limit."""


_RULES = (
    *("blockquote", "code", "fence", "heading", "hr", "lheading", "list", "paragraph", "reference"),
    *("autolink", "backticks", "emphasis", "entity", "escape", "image", "link", "newline"),
    *("strikethrough", "table"),
)
"""CommonMark's rules but raw HTML (`html_block`, `html_inline`), with GitHub's tables and strikethrough."""


@lru_cache(maxsize=1)
def _renderer() -> Callable[[str], str]:
    """The Markdown renderer's `render`: markdown-it's Rust port when it is installed, else markdown-it-py.

    Both run markdown-it's rules, so the HTML is the same (a test renders a corpus with both); the port takes
    about 20 us for a page of Markdown where markdown-it-py takes over a millisecond, and a streamed answer is
    rendered again at each edit."""
    try:
        import markdown_it_pyrs
    except ImportError:
        return python_renderer()
    renderer = markdown_it_pyrs.MarkdownIt("zero")
    rules: list[Any] = list(_RULES)  # the port types its rule names as literals
    renderer.enable_many(rules)
    render: Callable[[str], str] = renderer.render
    return render


def python_renderer() -> Callable[[str], str]:
    """markdown-it-py's CommonMark with raw HTML off (written HTML shows as text), tables and strikethrough."""
    from markdown_it import MarkdownIt  # about 80 ms of imports: with the first answer, not at start

    options = {"html": False, "linkify": False, "typographer": False}
    render: Callable[[str], str] = MarkdownIt("commonmark", options).enable(["table", "strikethrough"]).render
    return render


def to_html(text: str) -> str | None:
    """`text` as Matrix `formatted_body` HTML, or None when it is too large to send beside the body."""
    html: str = _renderer()(text).strip()
    if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
        html = html[3:-4]  # one plain paragraph: no wrapper, as clients send it themselves
    if len(html.encode()) > MAX_HTML_BYTES:
        return None
    return html


def _fits(text: str, limit: int) -> bool:
    return len(text.encode()) <= limit


def _cut(text: str, limit: int) -> tuple[str, str]:
    """The longest head of `text` within `limit` bytes, preferring a paragraph, then a line, then a space."""
    head = text.encode()[:limit].decode(errors="ignore")
    for separator in ("\n\n", "\n", " "):
        at = head.rfind(separator)
        if at > len(head) // 2:
            return head[:at].rstrip(), text[at + len(separator) :].lstrip("\n")
    return head, text[len(head) :]


def split_message(text: str, limit: int = MAX_BODY_BYTES) -> list[str]:
    """`text` in parts of at most `limit` UTF-8 bytes, split where a reader would (never mid-character)."""
    parts: list[str] = []
    rest = text
    while not _fits(rest, limit):
        head, rest = _cut(rest, limit)
        parts.append(head)
    parts.append(rest)
    return parts


def with_stream_status(extra: dict[str, Any] | None, status: str) -> dict[str, Any]:
    """A reply's extra content marked with its stream status (`STREAM_STATUS_KEY`): the daemon's word wins
    over a hook's, since plugins read it to tell a reply still being written from a finished one."""
    return {**(extra or {}), STREAM_STATUS_KEY: status}
