"""How an answer looks in a Matrix client: Markdown rendered to safe HTML, and long answers in several messages.

The HTML comes from a CommonMark renderer with raw HTML disabled, so only the tags the renderer makes
itself (paragraphs, emphasis, lists, code, tables, links with safe schemes) can appear: text a model or
a user wrote can never inject markup. A Matrix event is at most 64 KiB, body and HTML together, so an
answer longer than a message holds is split at paragraph, then line, then character boundaries.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from mindroom.constants import STREAM_STATUS_KEY

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["MAX_BODY_BYTES", "MAX_HTML_BYTES", "split_message", "to_html", "with_stream_status"]

MAX_BODY_BYTES = 24_000
MAX_HTML_BYTES = 32_000
"""Room for the body, its HTML and the relations within the homeserver's 65,536-byte event limit."""


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt  # about 80 ms of imports: with the first answer, not at start

    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
        ["table", "strikethrough"]
    )


def to_html(text: str) -> str | None:
    """`text` as Matrix `formatted_body` HTML, or None when it is too large to send beside the body."""
    html: str = _renderer().render(text).strip()
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
