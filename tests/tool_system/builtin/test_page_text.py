"""A page's readable text: title and main content, without scripts, styles, hidden parts or page chrome."""

from __future__ import annotations

from mindroom.tool_system.builtin.page_text import page_text
from tests.tool_system.builtin.pages import PAGE


def test_page_text_keeps_the_main_content_without_scripts_styles_or_chrome():
    page = page_text(PAGE)

    assert page.title == "Tide tables"
    assert page.text == "High tide\nHigh tide at the harbour is at 14:32 today.\nLow tide follows at 20:45."


def test_page_text_without_a_main_element_reads_the_body():
    page = page_text("<body><p>One</p><script>x()</script><p>Two &amp; three</p><aside>ads</aside></body>")

    assert page.text == "One\nTwo & three"


def test_page_text_closes_what_a_sloppy_page_leaves_open():
    page = page_text("<body><main><p>Enough text in the main part to count as the content<nav>menu</main><p>tail")

    assert page.text == "Enough text in the main part to count as the content"
