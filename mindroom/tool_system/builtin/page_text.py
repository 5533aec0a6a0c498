"""A web page's readable text: its title and main content, without scripts, styles and page chrome.

Read with the standard library's HTML parser (no page code runs, nothing else is fetched). Text inside
`script`, `style`, `noscript`, `template`, `svg`, `nav`, `header`, `footer`, `aside` and elements marked
`hidden` or `aria-hidden="true"` is dropped. When the page has a `main` or `article` element (or one with
`role="main"`) holding at least `MIN_MAIN_CHARS` of text, the longest such element is the content;
otherwise the whole body's text is.
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["MIN_MAIN_CHARS", "PageText", "page_text"]

MIN_MAIN_CHARS = 40
_SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "nav", "header", "footer", "aside", "iframe"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)
_BLOCKS = frozenset(
    {"p", "div", "section", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "br", "pre", "blockquote", "table"}
)


@dataclass(frozen=True, slots=True)
class PageText:
    """A page's title and its readable text."""

    title: str
    text: str


def _clean(parts: list[str]) -> str:
    lines = (" ".join(line.split()) for line in "".join(parts).split("\n"))
    return "\n".join(line for line in lines if line)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool]] = []  # tag, skipped, main
        self.body: list[str] = []
        self.title: list[str] = []
        self.mains: list[list[str]] = []
        self.open_mains: list[list[str]] = []

    @property
    def skipping(self) -> bool:
        return any(skipped for _, skipped, _ in self.stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag == "br":
                self._text("\n")
            return
        values = dict(attrs)
        hidden = "hidden" in values or (values.get("aria-hidden") or "").lower() == "true"
        main = tag in ("main", "article") or (values.get("role") or "").lower() == "main"
        self.stack.append((tag, tag in _SKIPPED or hidden, main and not self.skipping))
        if main and not self.skipping:
            self.open_mains.append([])
        if tag in _BLOCKS:
            self._text("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not any(open_tag == tag for open_tag, _, _ in self.stack):
            return
        while self.stack:  # close what a sloppy page left open inside this element
            open_tag, _, main = self.stack.pop()
            if main and self.open_mains:
                self.mains.append(self.open_mains.pop())
            if open_tag == tag:
                break
        if tag in _BLOCKS:
            self._text("\n")

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1][0] == "title":
            self.title.append(data)
            return
        if not self.skipping:
            self._text(data)

    def _text(self, data: str) -> None:
        self.body.append(data)
        for main in self.open_mains:
            main.append(data)


def page_text(html: str) -> PageText:
    """The title and readable text of an HTML page."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    mains = reader.mains + reader.open_mains
    candidates = [text for text in (_clean(parts) for parts in mains) if len(text) >= MIN_MAIN_CHARS]
    text = max(candidates, key=len) if candidates else _clean(reader.body)
    return PageText(" ".join("".join(reader.title).split()), text)
