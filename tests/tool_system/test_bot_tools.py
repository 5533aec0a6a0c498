"""`EntityBot.tools()`: the agent's own tools as agno Functions, built once and reused until something changes."""

import dataclasses
from types import SimpleNamespace

from mindroom.bots.bot import EntityBot
from mindroom.bots.pipeline_capabilities import RunClock
from mindroom.bots.recent import RecentMessages
from mindroom.bots.runtime import LiveCell, LiveState
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.hooks import HookRegistry
from mindroom.tool_system.catalog import ToolCatalog


def bot_for(tmp_path, tools, name="helper", **config_extra):
    config = Config.model_validate(
        {"agents": {name: {"display_name": "Helper", "tools": tools}, "other": {"display_name": "O"}}, **config_extra}
    )
    live = LiveState(config=config, registry=HookRegistry.empty())
    bot = EntityBot(
        name,
        None,  # type: ignore[type-var]
        {},
        cell=LiveCell(live),
        directory=SimpleNamespace(room_ids={}),  # type: ignore[arg-type]
        recent=RecentMessages(),
        clock=RunClock(0),
        paths=RuntimePaths.for_directory(tmp_path),
        attachments=None,  # type: ignore[arg-type]
    )
    return bot, live


def names(functions):
    return [function.name for function in functions]


def test_bot_tools_are_the_agents_list(tmp_path):
    bot, live = bot_for(tmp_path, ["calculator", "read_file"])

    assert names(bot.tools(live)) == ["calculate", "read_file"]
    other, other_live = bot_for(tmp_path, [], name="other")
    assert other.tools(other_live) == ()


def test_bot_tools_are_built_once_and_reused_across_turns_and_registries(tmp_path):
    bot, live = bot_for(tmp_path, ["file"])

    first = bot.tools(live)
    second = bot.tools(live)

    assert second is first


def test_bot_tools_rebuild_when_catalogue_list_or_settings_change(tmp_path):
    bot, live = bot_for(tmp_path, ["shell"])
    first = bot.tools(live)

    reloaded = dataclasses.replace(live, tools=ToolCatalog.builtin())
    after_reload = bot.tools(reloaded)
    settings = Config.model_validate({"tools": {"shell": {"allowed_commands": ["ls"]}}}).tools
    after_settings = bot.tools(
        dataclasses.replace(reloaded, config=reloaded.config.model_copy(update={"tools": settings}))
    )

    assert after_reload is not first
    assert after_settings is not after_reload
    assert "Allowed programs: ls." in after_settings[0].description
