"""Which plugins a config runs: `plugins:` entries plus drop-in folders, failures isolated per plugin."""

import json
import sys
import textwrap

import pytest
from structlog.testing import capture_logs

from mindroom.config import load_config
from mindroom.constants import RuntimePaths
from mindroom.errors import PluginError, PluginImportError
from mindroom.hooks import (
    EVENT_MESSAGE_RECEIVED,
    HookRegistry,
    MessageReceivedContext,
    get_hook_metadata,
    hook_telemetry,
)
from mindroom.hooks.execution import emit
from mindroom.plugins import build_registry, load_plugins, plugin_folders

BASE_CONFIG = """\
models:
  default: {provider: openai, id: scripted, extra_kwargs: {base_url: "http://127.0.0.1:18190/v1"}}
agents:
  assistant: {display_name: Assistant, role: A helpful assistant., model: default, tools: [], rooms: [bench]}
  analyst: {display_name: Analyst, role: Analyse data., instructions: ["Be precise."], model: default, rooms: [bench, lab]}
router: {model: default}
rooms: {bench: {description: Benchmark room}}
authorization: {global_users: ["@alice:localhost"], room_permissions: {}, default_room_access: false}
room_defaults: {invite_users: ["@alice:localhost"]}
defaults: {enable_streaming: false}
"""  # noqa: E501 - the example config as MindRoom users write it

RECORDING_HOOK = """
from mindroom.hooks import hook

CALLS = []

@hook("message:received")
async def record(ctx):
    CALLS.append((ctx.plugin_name, dict(ctx.settings)))
"""


def make_plugin(parent, folder, source=RECORDING_HOOK, name=None):
    path = parent / folder
    path.mkdir(parents=True)
    (path / "mindroom.plugin.json").write_text(json.dumps({"name": name or folder, "hooks_module": "hooks.py"}))
    (path / "hooks.py").write_text(textwrap.dedent(source))
    return path


def setup(tmp_path, plugins_yaml="plugins: []\n", agents_override=None):
    text = BASE_CONFIG + plugins_yaml
    if agents_override:
        text = text.replace(*agents_override)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(text)
    config = load_config(config_path, env={})
    paths = RuntimePaths(config_path=config_path, storage_root=tmp_path / "mindroom_data")
    return config, paths


def names(loaded):
    return [plugin.name for plugin in loaded.plugins]


def test_discovery_finds_drop_in_folders_beside_config(tmp_path):
    make_plugin(tmp_path / "plugins", "beta")
    make_plugin(tmp_path / "plugins", "alpha")
    config, paths = setup(tmp_path)

    loaded = load_plugins(config, paths)

    assert names(loaded) == ["alpha", "beta"]
    assert loaded.errors == ()
    assert [plugin.plugin_order for plugin in loaded.plugins] == [0, 1]


def test_discovery_ignores_hidden_private_and_manifestless_folders(tmp_path):
    make_plugin(tmp_path / "plugins", "real")
    make_plugin(tmp_path / "plugins", ".hidden")
    make_plugin(tmp_path / "plugins", "_private")
    (tmp_path / "plugins" / "not-a-plugin").mkdir()
    (tmp_path / "plugins" / "README.md").write_text("notes")
    config, paths = setup(tmp_path)

    assert names(load_plugins(config, paths)) == ["real"]


def test_discovery_without_plugins_folder_loads_nothing(tmp_path):
    config, paths = setup(tmp_path)

    loaded = load_plugins(config, paths)

    assert loaded.plugins == ()
    assert loaded.errors == ()


def test_discovery_config_entries_come_first_in_config_order(tmp_path):
    make_plugin(tmp_path / "plugins", "aaa-drop-in")
    make_plugin(tmp_path / "elsewhere", "second")
    make_plugin(tmp_path / "elsewhere", "first")
    config, paths = setup(tmp_path, "plugins:\n  - ./elsewhere/first\n  - path: ./elsewhere/second\n")

    loaded = load_plugins(config, paths)

    assert names(loaded) == ["first", "second", "aaa-drop-in"]
    assert [plugin.plugin_order for plugin in loaded.plugins] == [0, 1, 2]


@pytest.mark.parametrize("entry_path", ["./plugins/weather", "plugins/weather", "weather"])
@pytest.mark.asyncio
async def test_discovery_config_entry_adds_settings_and_overrides_to_drop_in(tmp_path, entry_path):
    make_plugin(tmp_path / "plugins", "weather")
    config, paths = setup(
        tmp_path,
        f"plugins:\n  - path: {entry_path}\n    settings:\n      api_key: k-1\n"
        "    hooks:\n      record:\n        priority: 7\n",
    )

    loaded = load_plugins(config, paths)

    assert names(loaded) == ["weather"]
    (plugin,) = loaded.plugins
    assert plugin.settings == {"api_key": "k-1"}
    registry = build_registry(config, loaded.plugins)
    (compiled,) = registry.hooks_for(EVENT_MESSAGE_RECEIVED)
    assert compiled.priority == 7
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    assert plugin.hooks_module.CALLS == [("weather", {"api_key": "k-1"})]


@pytest.mark.parametrize("entry_path", ["./plugins/noisy", "noisy"])
def test_discovery_enabled_false_disables_a_drop_in(tmp_path, entry_path):
    make_plugin(tmp_path / "plugins", "noisy")
    make_plugin(tmp_path / "plugins", "quiet")
    config, paths = setup(tmp_path, f"plugins:\n  - path: {entry_path}\n    enabled: false\n")

    assert names(load_plugins(config, paths)) == ["quiet"]


def test_discovery_same_folder_listed_twice_loads_once(tmp_path):
    make_plugin(tmp_path / "plugins", "once")
    config, paths = setup(tmp_path, "plugins:\n  - ./plugins/once\n  - path: ./plugins/once\n")

    loaded = load_plugins(config, paths)

    assert names(loaded) == ["once"]


def test_discovery_plugin_folders_lists_paths_and_entries(tmp_path):
    make_plugin(tmp_path / "plugins", "drop")
    make_plugin(tmp_path / "ext", "listed")
    config, paths = setup(tmp_path, "plugins:\n  - path: ./ext/listed\n    settings: {a: 1}\n")

    folders = plugin_folders(config, paths)

    assert [(path.name, entry.settings) for path, entry in folders] == [("listed", {"a": 1}), ("drop", {})]
    assert all(path.is_absolute() for path, _ in folders)


@pytest.mark.parametrize(
    ("source", "cause_part"),
    [
        ("raise RuntimeError('import exploded')\n", "RuntimeError: import exploded"),
        ("def broken(:\n", "SyntaxError"),
        ("import sys\nsys.exit(1)\n", "SystemExit"),
    ],
)
def test_discovery_broken_plugin_is_reported_and_others_load(tmp_path, source, cause_part):
    make_plugin(tmp_path / "plugins", "a-good")
    make_plugin(tmp_path / "plugins", "b-broken", source)
    make_plugin(tmp_path / "plugins", "c-good")
    config, paths = setup(tmp_path)

    with capture_logs() as logs:
        loaded = load_plugins(config, paths)

    assert names(loaded) == ["a-good", "c-good"]
    (error,) = loaded.errors
    assert isinstance(error, PluginImportError)
    assert error.plugin == "b-broken"
    assert cause_part in error.cause
    (logged,) = [entry for entry in logs if entry["event"] == "plugin failed to load"]
    assert logged["log_level"] == "error"
    assert logged["plugin"] == "b-broken"
    assert cause_part in logged["cause"]


def test_discovery_bad_manifest_and_missing_entry_folder_are_reported(tmp_path):
    good = make_plugin(tmp_path / "plugins", "good")
    bad = tmp_path / "plugins" / "bad-manifest"
    bad.mkdir()
    (bad / "mindroom.plugin.json").write_text("{not json")
    config, paths = setup(tmp_path, "plugins:\n  - ./nowhere/ghost\n")

    loaded = load_plugins(config, paths)

    assert [plugin.path for plugin in loaded.plugins] == [good.resolve()]
    assert sorted(error.plugin for error in loaded.errors) == ["bad-manifest", "ghost"]
    assert all(isinstance(error, PluginError) for error in loaded.errors)


def test_discovery_duplicate_plugin_names_are_reported(tmp_path):
    make_plugin(tmp_path / "plugins", "one", name="same-name")
    make_plugin(tmp_path / "plugins", "two", name="same-name")
    config, paths = setup(tmp_path)

    loaded = load_plugins(config, paths)

    assert names(loaded) == ["same-name"]
    (error,) = loaded.errors
    assert "duplicate plugin name" in error.cause


AGENT_REPORTING_HOOK = """
from mindroom.hooks import hook

CALLS = []

@hook("message:received")
async def record(ctx):
    CALLS.append(ctx.envelope.agent_name)
"""


@pytest.mark.asyncio
async def test_discovery_agent_plugins_allowlist_restricts_hooks(tmp_path, hook_context_factory):
    make_plugin(tmp_path / "plugins", "allowed", AGENT_REPORTING_HOOK)
    make_plugin(tmp_path / "plugins", "blocked", AGENT_REPORTING_HOOK)
    config, paths = setup(
        tmp_path,
        agents_override=(
            "model: default, tools: [], rooms: [bench]}",
            "model: default, rooms: [bench], plugins: [allowed]}",
        ),
    )
    assert config.agents["assistant"].plugins == ["allowed"]
    loaded = load_plugins(config, paths)
    registry = build_registry(config, loaded.plugins)

    for agent in ("assistant", "analyst"):
        await emit(registry, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name=agent))

    calls = {plugin.name: plugin.hooks_module.CALLS for plugin in loaded.plugins}
    # `allowed` is the assistant's (it lists it); the analyst lists none and gets only the plugins nobody lists.
    assert calls == {"allowed": ["assistant"], "blocked": ["analyst"]}


@pytest.mark.asyncio
async def test_discovery_empty_allowlist_runs_no_plugin_hooks_for_that_agent(tmp_path, hook_context_factory):
    make_plugin(tmp_path / "plugins", "any", AGENT_REPORTING_HOOK)
    config, paths = setup(
        tmp_path,
        agents_override=("model: default, tools: [], rooms: [bench]}", "model: default, rooms: [bench], plugins: []}"),
    )
    loaded = load_plugins(config, paths)
    registry = build_registry(config, loaded.plugins)

    await emit(registry, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name="assistant"))
    await emit(registry, EVENT_MESSAGE_RECEIVED, hook_context_factory(MessageReceivedContext, agent_name="analyst"))

    assert loaded.plugins[0].hooks_module.CALLS == ["analyst"]


FLAKY_HOOK = """
from mindroom.hooks import hook

@hook("message:received")
async def flaky(ctx):
    raise RuntimeError("broken")
"""


@pytest.mark.asyncio
async def test_discovery_rebuilt_registry_carries_stats_across_reload(tmp_path):
    plugin_dir = make_plugin(tmp_path / "plugins", "flaky", FLAKY_HOOK)
    config, paths = setup(tmp_path)
    old = build_registry(config, load_plugins(config, paths).plugins)
    await emit(old, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    (plugin_dir / "hooks.py").write_text(FLAKY_HOOK.replace('raise RuntimeError("broken")', "pass"))
    reloaded = load_plugins(config, paths)
    new = build_registry(config, reloaded.plugins, previous=old)
    await emit(new, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())

    (row,) = hook_telemetry(new)
    assert (row.calls, row.failures, row.last_error) == (2, 1, "RuntimeError: broken")
    assert row.breaker_state == "closed"
    assert isinstance(new, HookRegistry)
    assert new is not old


def test_discovery_loaded_hooks_keep_manifest_name(tmp_path):
    make_plugin(tmp_path / "plugins", "folder", name="manifest-name")
    config, paths = setup(tmp_path)

    (plugin,) = load_plugins(config, paths).plugins
    registry = build_registry(config, (plugin,))

    assert registry.plugin_names == ("manifest-name",)
    assert get_hook_metadata(plugin.discovered_hooks[0]).hook_name == "record"
    assert registry.hooks_for(EVENT_MESSAGE_RECEIVED)[0].plugin_name == "manifest-name"


BAD_MANIFESTS = {
    "invalid-utf8": (b'{"name": "caf\xe9", "hooks_module": "hooks.py"}', "not UTF-8"),
    "deep-nesting": (b'{"name": "x", "skills": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", "nests deeper"),
    "nul-byte": (b'{"name": "nul-byte",\x00 "hooks_module": "hooks.py"}', "NUL"),
    "nul-escape": (b'{"name": "nul-escape", "hooks_module": "hooks\\u0000.py"}', "NUL"),
    "lone-surrogate": (b'{"name": "lone-surrogate", "skills": ["\\ud800"]}', "surrogate"),
    "too-large": (b'{"name": "too-large", "description": "' + b"x" * 70_000 + b'"}', "larger than 64 KiB"),
    "long-module-path": (b'{"name": "long-module-path", "hooks_module": "' + b"a" * 5000 + b'.py"}', "255"),
    "not-an-object": (b"[]", "<root>"),
    "name-is-garbage": (b'{"name": "\\u001b[31m' + b"x" * 300 + b'"}', "invalid plugin name"),
}


@pytest.mark.parametrize("folder", sorted(BAD_MANIFESTS))
def test_discovery_each_bad_manifest_fails_alone_named_by_its_folder(tmp_path, folder):
    content, cause_part = BAD_MANIFESTS[folder]
    make_plugin(tmp_path / "plugins", "a-good")
    bad = tmp_path / "plugins" / folder
    bad.mkdir()
    (bad / "mindroom.plugin.json").write_bytes(content)
    (bad / "hooks.py").write_text(RECORDING_HOOK)
    make_plugin(tmp_path / "plugins", "z-good")
    config, paths = setup(tmp_path)

    loaded = load_plugins(config, paths)

    assert names(loaded) == ["a-good", "z-good"]
    (error,) = loaded.errors
    assert error.plugin == folder and error.path.parent == bad.resolve()
    assert cause_part in error.cause
    assert len(error.cause) < 500


LAZY_HOOK = """
from mindroom.hooks import hook

@hook("message:received")
async def record(ctx):
    from . import helper  # imported when the hook runs, long after the load

    helper.CALLS.append(dict(ctx.settings))
"""


@pytest.mark.asyncio
async def test_discovery_last_good_generation_runs_on_with_new_settings_while_its_folder_is_broken(tmp_path):
    folder = make_plugin(tmp_path / "plugins", "lazy", LAZY_HOOK)
    (folder / "helper.py").write_text("CALLS = []\n")
    make_plugin(tmp_path / "plugins", "fresh")
    config, paths = setup(tmp_path)
    good = load_plugins(config, paths)
    assert [p.name for p in good.plugins] == ["fresh", "lazy"]
    (folder / "hooks.py").write_text("raise RuntimeError('broken at import')\n")
    (tmp_path / "plugins" / "never").mkdir()
    (tmp_path / "plugins" / "never" / "mindroom.plugin.json").write_text("{")
    config, paths = setup(tmp_path, "plugins:\n  - path: lazy\n    settings: {tag: new}\n")

    for _attempt in range(3):  # failing again and again must not unload the generation that runs
        loaded = load_plugins(config, paths, last_good=good.plugins)
        assert (loaded.kept, loaded.left_out) == (("lazy",), ("never",))
        assert [error.plugin for error in loaded.errors] == ["lazy", "never"]

    lazy = loaded.plugins[0]
    assert lazy.name == "lazy" and lazy.hooks_module is good.plugins[1].hooks_module
    assert lazy.settings == {"tag": "new"} and lazy.plugin_order == 0
    await emit(build_registry(config, loaded.plugins), EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    helper = next((m for name, m in sys.modules.items() if name.endswith(".helper") and "lazy" in name), None)
    assert helper is not None, "the running generation's package was unloaded"
    assert helper.CALLS == [{"tag": "new"}]
    assert load_plugins(config, paths).kept == ()  # without a last good generation, a broken plugin stays out


def test_discovery_last_good_generation_never_duplicates_a_name_taken_meanwhile(tmp_path):
    old = make_plugin(tmp_path / "plugins", "zeta", name="shared")
    config, paths = setup(tmp_path)
    good = load_plugins(config, paths)
    (old / "hooks.py").write_text("raise RuntimeError('broken')\n")
    make_plugin(tmp_path / "plugins", "alpha", name="shared")  # loads first now, under the same name

    loaded = load_plugins(config, paths, last_good=good.plugins)

    assert [plugin.path.name for plugin in loaded.plugins] == ["alpha"]
    assert loaded.kept == () and loaded.left_out == ("shared",)
