"""`agents.<name>.private`: MindRoom's key, checked at load (paths inside the private root, `per` required,
not beside `worker_scope`, no private agent in a team, directly or through `delegate_to`)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from mindroom.config.loading import parse_config_text
from mindroom.errors import ConfigError

MODELS = {"default": {"provider": "openai", "id": "m"}}


def load(agents: dict[str, Any], **sections: Any):
    raw = {"models": MODELS, "agents": agents, **sections}
    return parse_config_text(yaml.safe_dump(raw), "config.yaml", {})


def agent(**fields: Any) -> dict[str, Any]:
    return {"display_name": "Buddy", "rooms": ["lobby"], **fields}


def test_private_agent_loads_with_mindroom_keys():
    config = load(
        {"buddy": agent(private={"per": "user_agent", "root": "notes/mine", "template_dir": " seed ",
                                 "context_files": ["./SOUL.md", "notes/a.md"]})}
    )  # fmt: skip

    private = config.agents["buddy"].private
    assert private is not None
    assert (private.per, private.root, private.template_dir) == ("user_agent", "notes/mine", "seed")
    assert private.context_files == ["SOUL.md", "notes/a.md"]
    assert load({"buddy": agent()}).agents["buddy"].private is None


@pytest.mark.parametrize(
    ("private", "problem"),
    [
        ({}, "agents.buddy.private.per"),
        ({"per": "shared"}, "agents.buddy.private.per"),
        ({"per": "users"}, "agents.buddy.private.per"),
        ({"per": "user", "root": "/srv/notes"}, "private.root"),
        ({"per": "user", "root": "notes/../../other"}, "private.root"),
        ({"per": "user", "root": "."}, "private.root"),
        ({"per": "user", "template_dir": "  "}, "private.template_dir"),
        ({"per": "user", "context_files": ["../SOUL.md"]}, "private.context_files"),
        ({"per": "user", "context_files": ["/etc/passwd"]}, "private.context_files"),
        ({"per": "user", "roots": "notes"}, "agents.buddy.private.roots"),
    ],
)
def test_private_agent_bad_values_name_their_key(private, problem):
    with pytest.raises(ConfigError, match=problem.replace(".", r"\.")):
        load({"buddy": agent(private=private)})


@pytest.mark.parametrize("scope", ["shared", "user", "user_agent"])
def test_private_agent_refuses_worker_scope_beside_it(scope):
    with pytest.raises(ConfigError, match=r"agents\.buddy.*private or worker_scope"):
        load({"buddy": agent(private={"per": "user"}, worker_scope=scope)})


def test_worker_scope_alone_is_accepted_with_a_notice():
    config = load({"buddy": agent(worker_scope="user")})

    assert config.agents["buddy"].private is None
    assert any(notice.key == "agents.buddy.worker_scope" for notice in config.notices)


def test_private_knowledge_is_accepted_with_a_not_offered_notice():
    config = load({"buddy": agent(private={"per": "user", "knowledge": {"path": "docs"}})})

    notes = [notice for notice in config.notices if notice.key == "agents.buddy.private.knowledge"]
    assert len(notes) == 1 and "does not offer" in notes[0].message


def test_team_refuses_a_private_member_and_one_reaching_a_private_agent():
    agents = {
        "buddy": agent(private={"per": "user"}),
        "helper": agent(delegate_to=["middle"]),
        "middle": agent(delegate_to=["buddy"]),
        "plain": agent(),
    }
    crew = {"display_name": "Crew", "role": "r"}

    with pytest.raises(ConfigError, match=r"teams\.crew\.agents: 'buddy' is a private agent"):
        load(agents, teams={"crew": {**crew, "agents": ["plain", "buddy"]}})
    with pytest.raises(ConfigError, match=r"teams\.crew\.agents: 'helper' reaches the private agent 'buddy'"):
        load(agents, teams={"crew": {**crew, "agents": ["plain", "helper"]}})
    # A team of shared agents next to a private one loads, and so does a delegation cycle without one.
    cycle = {**agents, "plain": agent(delegate_to=["other"]), "other": agent(delegate_to=["plain"])}
    assert load(cycle, teams={"crew": {**crew, "agents": ["plain", "other"]}}).teams["crew"].agents == [
        "plain",
        "other",
    ]
