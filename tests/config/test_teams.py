"""`teams:`, `room_models:`, `delegate_to:` and `config_command_enabled`: MindRoom's keys, checked at load."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from mindroom.config.loading import parse_config_text
from mindroom.errors import ConfigError

MODELS = {"default": {"provider": "openai", "id": "m"}, "fast": {"provider": "openai", "id": "f"}}
AGENTS = {
    "research": {"display_name": "Research", "rooms": ["lobby"], "thread_mode": "room"},
    "writer": {"display_name": "Writer", "rooms": ["lobby"], "thread_mode": "room"},
}


def load(**sections: Any):
    raw = {"models": MODELS, "agents": AGENTS, **sections}
    return parse_config_text(yaml.safe_dump(raw), "config.yaml", {})


def team(**fields: Any) -> dict[str, Any]:
    return {"display_name": "Crew", "role": "answers together", "agents": ["research", "writer"], **fields}


def test_teams_load_with_mindroom_keys_and_defaults():
    config = load(teams={"crew": team(rooms=["studio"], model="fast", mode="collaborate", accept_invites=False)})

    crew = config.teams["crew"]
    assert (crew.mode, crew.model, crew.accept_invites, crew.rooms) == ("collaborate", "fast", "never", ["studio"])
    assert load(teams={"crew": team()}).teams["crew"].mode == "coordinate"
    assert "studio" in config.all_room_keys()
    assert list(config.responders()) == ["research", "writer", "crew"]


@pytest.mark.parametrize(
    ("teams", "problem"),
    [
        ({"crew": team(mode="weird")}, "teams.crew.mode"),
        ({"crew": team(agents=["research", "ghost"])}, "unknown agents ['ghost']"),
        ({"crew": team(agents=[])}, "teams.crew.agents"),
        ({"crew": team(agents=["writer", "writer"])}, "each agent once"),
        ({"crew": team(model="huge")}, "teams.crew.model: unknown model 'huge'"),
        ({"research": team()}, "an agent's too"),
        ({"router": team()}, "reserved for the router"),
        ({"crew": team(), "Crew": team(display_name="Other")}, "differ only in case"),
        ({"crew.x/y": team()}, "letters, digits"),
        ({"crew": team(sidekick=True)}, "teams.crew.sidekick"),
        ({"crew": {"display_name": "Crew", "agents": ["research"]}}, "teams.crew.role"),
    ],
)
def test_teams_that_do_not_fit_are_refused_at_load(teams, problem):
    with pytest.raises(ConfigError) as caught:
        load(teams=teams)

    assert problem in str(caught.value)


def test_a_teams_thread_mode_is_its_members_when_they_agree():
    config = load(teams={"crew": team()})
    mixed = load(
        agents={**AGENTS, "writer": {"display_name": "Writer"}}, teams={"crew": team()}
    )  # a member without `thread_mode` answers in threads (the default)

    assert config.thread_mode("crew", ()) == "room"
    assert mixed.thread_mode("crew", ()) == "thread"


def test_room_models_and_delegate_to_must_name_what_exists():
    assert load(room_models={"lobby": "fast"}).room_models == {"lobby": "fast"}
    with pytest.raises(ConfigError, match=r"room_models\.lobby: unknown model .huge."):
        load(room_models={"lobby": "huge"})
    helper = {**AGENTS["research"], "delegate_to": ["writer"]}
    assert load(agents={**AGENTS, "research": helper}).agents["research"].delegate_to == ["writer"]
    for target, why in (("research", "itself"), ("ghost", "unknown agent")):
        with pytest.raises(ConfigError, match=why):
            load(agents={**AGENTS, "research": {**helper, "delegate_to": [target]}})


def test_config_command_is_off_unless_enabled():
    assert load().authorization.config_command_enabled is False
    enabled = load(authorization={"config_command_enabled": True})
    assert enabled.authorization.config_command_enabled is True
