"""`EntityBot.tools()`: the agent's own tools as agno Functions, built once and reused until something changes."""

from types import SimpleNamespace

from mindroom.bots.bot import EntityBot
from mindroom.config.main import Config
from mindroom.constants import RuntimePaths
from mindroom.hooks import HookRegistry
from mindroom.tool_system.registry import ToolCatalog


def bot_for(tmp_path, tools, name="helper", **config_extra):
    config = Config.model_validate(
        {"agents": {name: {"display_name": "Helper", "tools": tools}, "other": {"display_name": "O"}}, **config_extra}
    )
    runtime = SimpleNamespace(
        config=config, tools=ToolCatalog.builtin(), runtime_paths=RuntimePaths.for_directory(tmp_path), room_ids={}
    )
    return EntityBot(name, runtime, client=None)  # type: ignore[arg-type]


def names(functions):
    return [function.name for function in functions]


def test_bot_tools_are_the_agents_list(tmp_path):
    bot = bot_for(tmp_path, ["calculator", "read_file"])

    assert names(bot.tools(HookRegistry.empty(), None)) == ["calculate", "read_file"]
    assert bot_for(tmp_path, [], name="other").tools(HookRegistry.empty(), None) == ()


def test_bot_tools_are_built_once_and_reused_across_turns_and_registries(tmp_path):
    bot = bot_for(tmp_path, ["file"])

    first = bot.tools(HookRegistry.empty(), None)
    second = bot.tools(HookRegistry.empty(), None)

    assert second is first


def test_bot_tools_rebuild_when_catalogue_list_or_settings_change(tmp_path):
    bot = bot_for(tmp_path, ["shell"])
    first = bot.tools(HookRegistry.empty(), None)

    bot.runtime.tools = ToolCatalog.builtin()
    after_reload = bot.tools(HookRegistry.empty(), None)
    bot.runtime.config = bot.runtime.config.model_copy(
        update={"tools": Config.model_validate({"tools": {"shell": {"allowed_commands": ["ls"]}}}).tools}
    )
    after_settings = bot.tools(HookRegistry.empty(), None)

    assert after_reload is not first
    assert after_settings is not after_reload
    assert "Allowed programs: ls." in after_settings[0].description
