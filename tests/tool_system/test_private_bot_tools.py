"""`EntityBot.tools()` of a private agent: one set per requester, working in that requester's copy, reused for
them, rebuilt when `private` changes, and none without a requester."""

import asyncio
import dataclasses

from mindroom.config.agent import AgentPrivateConfig
from mindroom.constants import RuntimePaths
from mindroom.state.private_roots import ensure_private_workspace, requester_workspace
from tests.tool_system.test_bot_tools import bot_for


def _call(functions, name, **arguments):
    function = next(function for function in functions if function.name == name)
    result = function.entrypoint(**arguments)
    return asyncio.run(result) if asyncio.iscoroutine(result) else result


def test_private_bot_tools_work_in_each_requesters_copy(tmp_path):
    bot, live = bot_for(tmp_path, ["file"])
    private = AgentPrivateConfig(per="user")
    agent = live.config.agents["helper"].model_copy(update={"private": private})
    live = dataclasses.replace(live, config=live.config.model_copy(update={"agents": {"helper": agent}}))
    data = RuntimePaths.for_directory(tmp_path).storage_root
    alice = ensure_private_workspace(requester_workspace(data, "helper", private, "@alice:hs"))
    bob = ensure_private_workspace(requester_workspace(data, "helper", private, "@bob:hs"))

    for_alice, for_bob = bot.tools(live, "@alice:hs"), bot.tools(live, "@bob:hs")
    _call(for_alice, "write_file", path="note.md", content="alice's")

    assert bot.tools(live, "@alice:hs") is for_alice and for_bob is not for_alice
    assert (alice / "note.md").read_text() == "alice's" and not (bob / "note.md").exists()
    assert "no file named" in str(_call(for_bob, "read_file", path="note.md"))
    assert bot.tools(live) == () and bot.tools(live, "") == ()  # nobody's copy: no tools
    moved = agent.model_copy(update={"private": AgentPrivateConfig(per="user", root="elsewhere")})
    changed = dataclasses.replace(live, config=live.config.model_copy(update={"agents": {"helper": moved}}))
    assert bot.tools(changed, "@alice:hs") is not for_alice


def test_private_bot_tools_a_rebuild_for_a_kept_requester_drops_no_other(tmp_path):
    bot, live = bot_for(tmp_path, ["file"])
    private = AgentPrivateConfig(per="user")
    agent = live.config.agents["helper"].model_copy(update={"private": private})
    live = dataclasses.replace(live, config=live.config.model_copy(update={"agents": {"helper": agent}}))
    moved = agent.model_copy(update={"private": AgentPrivateConfig(per="user", root="elsewhere")})
    changed = dataclasses.replace(live, config=live.config.model_copy(update={"agents": {"helper": moved}}))
    first = bot.tools(live, "@u0:hs")
    for number in range(1, 64):  # as many requesters as are kept
        bot.tools(live, f"@u{number}:hs")

    bot.tools(changed, "@u63:hs")  # one already kept, built again: it takes its own place

    assert bot.tools(live, "@u0:hs") is first
