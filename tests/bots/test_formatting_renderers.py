"""An answer's HTML: the same from markdown-it's Rust port and from markdown-it-py, and never markup a model or a
person wrote (raw HTML shows as text, links with unsafe schemes stay text)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mindroom.bots import formatting
from mindroom.bots.formatting import python_renderer, to_html

CORPUS = [
    "a reply of several words",
    "**bold** and _it_ ~~gone~~ `code` <b>raw</b> & more",
    "| a | b | c |\n|---|:-:|--:|\n| 1 | 2 | 3 |\n| x | **y** | `z` |",
    "```python\nprint(1)\n```\n\n~~~\nplain\n~~~",
    "- one\n- two\n  - nested\n    * deeper\n\n1. x\n2. y\n\n1) a\n2) b",
    "line one\nline two\n\npara\\\nhard break  \nand another",
    "<div>x</div>\n\ntext <span onclick=1>y</span> <!-- c --> <script>alert(1)</script>",
    '[link](https://x.y) <https://auto.link> http://bare.link ![img](http://x/y.png "title")',
    "# Heading\n## Two\nSetext\n===\n> quote\n> > deeper\n\n***\n\n    indented code",
    "&amp; &copy; &#35; &nbsp; &unknown; < > \" '",
    '[ref]\n\n[ref]: http://x "t"',
    "Émoji 🎉 and ünïcödé, 中文, עברית; a*b*c, snake_case_name, 2 * 3 * 4",
    "`a <b>` ``double `tick` ``",
    "*   spaced list\n\n    continued paragraph\n\n*   second",
    "[x](javascript:alert(1)) [x](JaVaScRiPt:alert(1)) <javascript:alert(1)> [x](vbscript:msgbox)",
    "[x](file:///etc/passwd) [x](data:text/html;base64,PHNjcmlwdD4=) ![i](data:image/png;base64,AAAA)",
    "[x](  javascript:alert(1)) [x](&#106;avascript:alert(1)) [a]: javascript:x\n\n[a] [x](mxc://server/id)",
    "| a |\n|---|\n| <b>x</b> |\n\nText after a table.",
    "",
    "   \n\n",
    "- [ ] task\n- [x] done",
    "Here is a **bold** answer with a [link](https://x.y) and a list:\n\n- one\n- two\n\n```py\nprint(1)\n```\n" * 5,
]


def _renderers() -> list[Callable[[str], str]]:
    return [formatting._renderer(), python_renderer()]


@pytest.mark.parametrize("text", CORPUS)
def test_formatting_the_rust_port_renders_what_markdown_it_py_renders(text: str) -> None:
    pytest.importorskip("markdown_it_pyrs")  # installed where it has wheels (pyproject.toml)
    port, python = _renderers()
    assert port is not python
    assert port(text) == python(text)


@pytest.mark.parametrize("which", ["chosen", "python"])
def test_formatting_never_passes_written_markup_or_an_unsafe_link(which: str) -> None:
    render = formatting._renderer() if which == "chosen" else python_renderer()
    html = render("<script>alert(1)</script> <b onclick=x>hi</b> [x](javascript:alert(1)) ![i](javascript:x)")
    assert "<script" not in html and "<b " not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html and 'src="javascript' not in html


def test_formatting_to_html_drops_the_wrapper_of_one_plain_paragraph_only() -> None:
    assert to_html("**hi** there") == "<strong>hi</strong> there"
    assert to_html("one\n\ntwo") == "<p>one</p>\n<p>two</p>"
