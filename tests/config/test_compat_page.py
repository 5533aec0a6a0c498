"""`docs/mindroom-compat.md` is what `tests.config.compat_page` writes from the daemon's tables today, and every
MindRoom tool name it lists is known here."""

from __future__ import annotations

import json

import pytest

from tests.config import compat_page


def test_compat_page_is_up_to_date():
    written = compat_page.PAGE.read_text(encoding="utf-8")

    assert written == compat_page.render(), "docs/mindroom-compat.md is out of date: python -m tests.config.compat_page"


def test_compat_page_lists_every_key_and_tool_name_once():
    key_part, tool_part = compat_page.render().split("\n## Tool names\n")
    keys, tools = compat_page.recorded(compat_page.KEYS), compat_page.recorded(compat_page.TOOLS)

    assert len(tools) == 155
    for part, names in ((key_part, keys), (tool_part, tools)):
        for name in names:
            assert part.count(f"| `{name}` |") == 1, name
    assert "| unknown |" not in tool_part


def test_compat_page_tool_names_recorded_match_mindroom_s_install():
    metadata = next(
        iter(sorted(compat_page._REFERENCE.glob("lib/python3*/site-packages/mindroom/tools_metadata.json"))), None
    )
    if metadata is None:
        pytest.skip(f"MindRoom's install is not at {compat_page._REFERENCE} (set MINDROOM_REFERENCE)")
    names = {tool["name"] for tool in json.loads(metadata.read_text(encoding="utf-8"))["tools"]}

    assert sorted(names ^ set(compat_page.recorded(compat_page.TOOLS))) == []
