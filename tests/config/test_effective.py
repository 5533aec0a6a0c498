"""The config in force value by value: each from config.yaml, from chat (who, when), or a default, secrets hidden."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindroom.config.effective import (
    NO_LONGER_FITS,
    NOT_SETTABLE,
    EffectiveValue,
    effective_config,
    read_effective_config,
)
from mindroom.config.loading import parse_config_text
from mindroom.config.overrides import ChatSettings, Override
from mindroom.errors import ConfigError

TEXT = """\
models:
  default: {provider: openai, id: small, api_key: "${MODEL_KEY}"}
  fast: {provider: openai, id: quick}
agents:
  helper: {display_name: Helper, model: default, rooms: [lobby]}
memory: mem0
defaults: {markdown: false}
"""
ENV = {"MODEL_KEY": "sk-operator-0123456789abcdef"}
ALICE = "@alice:localhost"


def _running(text: str, overrides: tuple[Override, ...]) -> tuple[object, ChatSettings]:
    settings = ChatSettings(overrides)
    return parse_config_text(text, "config.yaml", ENV, settings.config_overrides(), strict=False), settings


def _by_path(values: tuple[EffectiveValue, ...]) -> dict[str, EffectiveValue]:
    return {value.path: value for value in values}


def test_effective_config_names_the_file_chat_and_defaults_as_sources():
    model = Override("config", "agents.helper.model", "fast", ALICE, 1_700_000_000.0)
    room = Override("room", "model", "fast", ALICE, 1_700_000_100.0, room_id="!lobby:localhost")
    config, settings = _running(TEXT, (model, room))

    effective = effective_config(config, settings, TEXT, "config.yaml", ENV)  # type: ignore[arg-type]
    values = _by_path(effective.values)

    assert values["agents.helper.model"] == EffectiveValue(
        "agents.helper.model", "fast", "chat", ALICE, 1_700_000_000.0
    )
    assert values["agents.helper.display_name"].source == "config.yaml"
    assert values["defaults.markdown"] == EffectiveValue("defaults.markdown", False, "config.yaml")
    assert values["defaults.enable_streaming"].source == "default"
    assert values["memory.backend"].source == "config.yaml"  # written as the short form `memory: mem0`
    assert values["memory.file.max_entrypoint_lines"] == EffectiveValue(
        "memory.file.max_entrypoint_lines", 200, "default"
    )
    assert values["agents.helper.rooms"] == EffectiveValue("agents.helper.rooms", ["lobby"], "config.yaml")
    assert effective.scoped == (room,) and effective.not_in_effect == ()


def test_effective_config_hides_secrets_by_name_and_by_shape():
    config, settings = _running(TEXT, ())

    values = _by_path(effective_config(config, settings, TEXT, "config.yaml", ENV).values)  # type: ignore[arg-type]

    assert values["models.default.api_key"].source == "config.yaml"
    assert "0123456789" not in repr(values["models.default.api_key"].value)
    assert all("sk-operator" not in repr(value.value) for value in values.values())
    assert isinstance(values["memory.file.max_entrypoint_tokens"].value, int)  # a count is no secret


def test_effective_config_counts_a_value_the_config_normalises_as_in_effect():
    one_line = Override("config", "agents.helper.instructions", "Be brief.", ALICE, 1.0)  # text becomes a list
    config, settings = _running(TEXT, (one_line,))

    effective = effective_config(config, settings, TEXT, "config.yaml", ENV)  # type: ignore[arg-type]

    assert _by_path(effective.values)["agents.helper.instructions"].source == "chat"
    assert effective.not_in_effect == ()


def test_effective_config_lists_the_changes_passed_over_with_why():
    host = Override("config", "models.default.host", "http://10.0.0.7/v1", "@old:hs", 1.0)  # chat may not
    gone = Override("config", "agents.writer.model", "fast", "@old:hs", 2.0)  # no such agent in the file
    stale = Override("room", "model", "huge", "@old:hs", 3.0, room_id="!lobby:localhost")  # no such model
    kept = Override("thread", "instructions:helper", ["Shout."], ALICE, 4.0, "!lobby:localhost", "$root")
    config, settings = _running(TEXT, (host, gone, stale, kept))

    effective = effective_config(config, settings, TEXT, "config.yaml", ENV)  # type: ignore[arg-type]
    values = _by_path(effective.values)

    assert [(item.key, why) for item, why in effective.not_in_effect] == [
        ("models.default.host", NOT_SETTABLE),
        ("agents.writer.model", NO_LONGER_FITS),
        ("model", NO_LONGER_FITS),
    ]
    assert effective.scoped == (kept,)
    assert values["models.default.host"].source == "default"
    assert all(value.source != "chat" for value in values.values())


def test_effective_config_a_later_change_of_the_same_key_is_the_one_named():
    first = Override("config", "defaults", {"markdown": True}, "@old:hs", 1.0)
    later = Override("config", "defaults.markdown", False, ALICE, 2.0)
    config, settings = _running(TEXT, (first, later))

    values = _by_path(effective_config(config, settings, TEXT, "config.yaml", ENV).values)  # type: ignore[arg-type]

    assert (values["defaults.markdown"].value, values["defaults.markdown"].set_by) == (False, ALICE)


@pytest.mark.parametrize("prefix", ["agents.helper", "agents.helper."])
def test_effective_config_under_a_path_takes_whole_key_names(prefix: str):
    text = TEXT.replace("agents:\n", "agents:\n  helper2: {display_name: Other, model: default}\n")
    config, settings = _running(text, ())

    under = effective_config(config, settings, text, "config.yaml", ENV).under(prefix)  # type: ignore[arg-type]

    assert under and all(value.path.startswith("agents.helper.") for value in under)


def test_effective_config_of_a_file_that_no_longer_loads_says_so(tmp_path: Path):
    path = tmp_path / "config.yaml"
    path.write_text(TEXT)
    config, settings = _running(TEXT, ())
    path.write_text(TEXT + "favourite_colour: blue\n")

    with pytest.raises(ConfigError, match="favourite_colour"):
        read_effective_config(config, settings, path, ENV)  # type: ignore[arg-type]
