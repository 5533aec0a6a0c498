"""MindRoom keys this daemon does not use: accepted with one notice each (key, line, why); unknown keys stay errors."""

from __future__ import annotations

import pytest

from mindroom.config.loading import parse_config_text
from mindroom.config.notices import ConfigNotice
from mindroom.errors import ConfigError

_AGENT = "agents:\n  helper:\n    display_name: Helper\n"


def _notices(text: str) -> list[ConfigNotice]:
    return list(parse_config_text(text, "config.yaml", {}).notices)


def test_unused_keys_an_agent_key_is_accepted_with_its_line_and_reason():
    notices = _notices(_AGENT + "    participation: {debounce_seconds: 3}\n    worker_scope: user\n")

    assert [(item.key, item.line) for item in notices] == [
        ("agents.helper.participation", 4),
        ("agents.helper.worker_scope", 5),
    ]
    assert "judgment" in notices[0].message and notices[0].message.startswith("accepted, not used here")
    assert str(notices[1]).startswith("agents.helper.worker_scope (line 5): accepted, not used here: ")


def test_unused_keys_a_whole_section_gets_one_notice():
    notices = _notices("calls:\n  enabled: true\n  profiles: {p: {backend: realtime, model: m, voice: v}}\n")

    assert [item.key for item in notices] == ["calls"]


def test_unused_keys_a_key_unknown_to_mindroom_inside_an_unused_section_is_an_error():
    with pytest.raises(ConfigError) as caught:
        parse_config_text(_AGENT + "    participation: {debounce_seconds: 3, debounce_secs: 4}\n", "config.yaml", {})

    assert caught.value.problems == [
        "agents.helper.participation.debounce_secs (line 4): not a key here, nor of MindRoom's config"
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (_AGENT + "    participations: {}\n", "agents.helper.participations (line 4)"),
        ("calendar: {}\n", "calendar (line 1)"),
        ("storage: {database: x}\n", "storage.database (line 1)"),
        ("defaults: {streaming: {update_interval: 2, max_idles: 1}}\n", "defaults.streaming.max_idles (line 1)"),
        ("egress_broker: {services: {s: {rules: [{host: h, ports: 1}]}}}\n", "rules[0].ports (line 1)"),
    ],
)
def test_unused_keys_near_misses_of_mindroom_keys_are_errors(text: str, where: str):
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, "config.yaml", {})

    assert any(where in problem for problem in caught.value.problems), caught.value.problems


def test_unused_keys_a_key_the_models_keep_is_still_checked():
    notices = _notices("memory:\n  search: {mode: semantic}\n")

    assert [item.key for item in notices] == ["memory.search"]
    with pytest.raises(ConfigError, match=r"memory\.search\.mode"):
        parse_config_text("memory:\n  search: {mode: fuzzy}\n", "config.yaml", {})


def test_unused_keys_a_config_without_them_has_no_notices():
    assert _notices(_AGENT + "    role: helps\n    rooms: [lobby]\ntimezone: Europe/Berlin\n") == []


def test_unused_keys_values_this_daemon_cannot_act_on_are_noticed():
    text = "knowledge_reranker: {provider: vertex_ai, model: m}\nprompts:\n  THREAD_SUMMARY_INSTRUCTIONS: short\n"

    notices = _notices(text)

    assert [(item.key, item.line) for item in notices] == [
        ("prompts.THREAD_SUMMARY_INSTRUCTIONS", 3),
        ("knowledge_reranker.provider", 1),
    ]
    assert "vertex_ai" in notices[1].message
