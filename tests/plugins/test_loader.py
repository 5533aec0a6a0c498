"""`load_plugin_dir`: real plugin folders on disk, imported the way the daemon imports them."""

import json
import os
import sys
import textwrap

import pytest

from mindroom.config.plugin import HookOverrideConfig
from mindroom.errors import ManifestError, PluginError, PluginImportError
from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    HookRegistry,
    MessageReceivedContext,
    get_hook_metadata,
)
from mindroom.hooks.execution import emit, emit_collect, emit_gate, emit_transform
from mindroom.plugins import Plugin, load_plugin_dir


def make_plugin(root, folder, files, manifest=None):
    """Write a plugin folder: `files` maps relative paths to source; `manifest` is a dict or raw text."""
    path = root / folder
    path.mkdir(parents=True, exist_ok=True)
    if manifest is None:
        manifest = {"name": folder, "hooks_module": "hooks.py"}
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (path / "mindroom.plugin.json").write_text(text, encoding="utf-8")
    for relative, source in files.items():
        file_path = path / relative
        file_path.parent.mkdir(parents=True, exist_ok=True)
        file_path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


SIMPLE_HOOK = """
from mindroom.hooks import hook

@hook("message:received")
async def mark(ctx):
    ctx.suppress = True
"""


def hook_names(plugin):
    return [get_hook_metadata(callback).hook_name for callback in plugin.discovered_hooks]


# -- manifest -----------------------------------------------------------------------------------------------


def test_loader_loads_a_plugin_folder(tmp_path):
    path = make_plugin(tmp_path, "demo", {"hooks.py": SIMPLE_HOOK})

    plugin = load_plugin_dir(path)

    assert isinstance(plugin, Plugin)
    assert plugin.name == "demo"
    assert plugin.path == path.resolve()
    assert hook_names(plugin) == ["mark"]
    assert plugin.entry_config.settings == {}
    assert plugin.plugin_order == 0


def test_loader_name_comes_from_manifest_not_folder(tmp_path):
    path = make_plugin(
        tmp_path, "folder-name", {"hooks.py": SIMPLE_HOOK}, {"name": "real-name", "hooks_module": "hooks.py"}
    )

    assert load_plugin_dir(path).name == "real-name"


def test_loader_missing_folder_is_a_plugin_error(tmp_path):
    with pytest.raises(PluginError, match="not found"):
        load_plugin_dir(tmp_path / "ghost")


def test_loader_missing_manifest_names_folder(tmp_path):
    (tmp_path / "bare").mkdir()

    with pytest.raises(ManifestError) as exc_info:
        load_plugin_dir(tmp_path / "bare")

    assert exc_info.value.plugin == "bare"
    assert "mindroom.plugin.json" in exc_info.value.cause


def test_loader_invalid_json_names_plugin_and_line(tmp_path):
    path = make_plugin(tmp_path, "broken-json", {}, '{\n  "name": "broken-json",\n  "hooks_module": \n}')

    with pytest.raises(ManifestError) as exc_info:
        load_plugin_dir(path)

    assert exc_info.value.plugin == "broken-json"
    assert "invalid JSON" in exc_info.value.cause
    assert "line 4" in exc_info.value.cause
    assert "broken-json" in str(exc_info.value)


@pytest.mark.parametrize(
    ("manifest", "plugin_label", "cause_part"),
    [
        ({"hooks_module": "hooks.py"}, "m", "name"),
        ({"name": "m", "hooks_modul": "hooks.py"}, "m", "hooks_modul"),
        ({"name": "m", "skills": "skills"}, "m", "skills"),
        ({"name": "m", "hooks_module": "/etc/passwd"}, "m", "inside the plugin folder"),
        ({"name": "m", "tools_module": "../outside.py"}, "m", "inside the plugin folder"),
        (["not", "an", "object"], "m", "<root>"),
    ],
)
def test_loader_manifest_validation_errors_name_plugin_and_cause(tmp_path, manifest, plugin_label, cause_part):
    path = make_plugin(tmp_path, "m", {"hooks.py": SIMPLE_HOOK}, manifest)

    with pytest.raises(ManifestError) as exc_info:
        load_plugin_dir(path)

    assert exc_info.value.plugin == plugin_label
    assert cause_part in exc_info.value.cause


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "", "x\n", "spaces here", "..", "a" * 200])
def test_loader_refuses_unsafe_plugin_names(tmp_path, name):
    path = make_plugin(tmp_path, "unsafe", {"hooks.py": SIMPLE_HOOK}, {"name": name, "hooks_module": "hooks.py"})

    with pytest.raises(ManifestError, match="invalid plugin name"):
        load_plugin_dir(path)


def test_loader_missing_module_file_names_plugin(tmp_path):
    path = make_plugin(tmp_path, "nofile", {}, {"name": "nofile", "hooks_module": "hooks.py"})

    with pytest.raises(PluginImportError) as exc_info:
        load_plugin_dir(path)

    assert exc_info.value.plugin == "nofile"
    assert "hooks.py" in exc_info.value.cause


def test_loader_skills_folder_outside_plugin_is_refused(tmp_path):
    path = make_plugin(tmp_path, "sk", {}, {"name": "sk", "skills": ["../../elsewhere"]})

    with pytest.raises(PluginError, match="outside"):
        load_plugin_dir(path)


def test_loader_skills_folders_resolved(tmp_path):
    path = make_plugin(tmp_path, "sk", {"skills/a/SKILL.md": "# a"}, {"name": "sk", "skills": ["skills"]})

    assert load_plugin_dir(path).skill_dirs == ((path / "skills").resolve(),)


# -- module import errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "cause_part"),
    [
        ("raise RuntimeError('import exploded')\n", "RuntimeError: import exploded"),
        ("def broken(:\n    pass\n", "SyntaxError"),
        ("import sys\nsys.exit(3)\n", "SystemExit"),
        ("import a_module_that_does_not_exist_anywhere\n", "ModuleNotFoundError"),
        (
            "from mindroom.hooks import hook\n@hook('message:bogus')\nasync def h(ctx):\n    pass\n",
            "reserved",
        ),
        ("from mindroom.hooks import hook\n@hook('message:received')\ndef h(ctx):\n    pass\n", "async"),
    ],
)
def test_loader_module_import_failure_names_plugin_and_cause(tmp_path, source, cause_part):
    path = make_plugin(tmp_path, "bad", {"hooks.py": source})

    with pytest.raises(PluginImportError) as exc_info:
        load_plugin_dir(path)

    assert exc_info.value.plugin == "bad"
    assert cause_part in exc_info.value.cause
    assert "bad" in str(exc_info.value)


def test_loader_syntax_error_names_file_and_line(tmp_path):
    path = make_plugin(tmp_path, "syn", {"hooks.py": "x = 1\ny = 2\ndef broken(:\n    pass\n"})

    with pytest.raises(PluginImportError) as exc_info:
        load_plugin_dir(path)

    assert "hooks.py" in exc_info.value.cause
    assert "line 3" in exc_info.value.cause


def test_loader_failed_import_leaves_no_module_behind(tmp_path):
    path = make_plugin(tmp_path, "leaky", {"hooks.py": "raise RuntimeError('x')\n"})
    before = set(sys.modules)

    with pytest.raises(PluginImportError):
        load_plugin_dir(path)

    assert not [name for name in set(sys.modules) - before if name.endswith(".hooks")]


# -- which module is scanned ------------------------------------------------------------------------------------


TOOLS_WITH_HOOK = """
from mindroom.hooks import hook

def read_file(path):
    return "tool"

@hook("message:received")
async def from_tools(ctx):
    pass
"""

HOOKS_MODULE = """
from mindroom.hooks import hook

@hook("message:received")
async def from_hooks(ctx):
    pass
"""


def test_loader_hooks_module_is_scanned_when_given(tmp_path):
    path = make_plugin(
        tmp_path,
        "both",
        {"tools.py": TOOLS_WITH_HOOK, "hooks.py": HOOKS_MODULE},
        {"name": "both", "tools_module": "tools.py", "hooks_module": "hooks.py"},
    )

    plugin = load_plugin_dir(path)

    assert hook_names(plugin) == ["from_hooks"]
    assert plugin.tools_module.read_file("x") == "tool"


def test_loader_tools_module_auto_scanned_without_hooks_module(tmp_path):
    path = make_plugin(
        tmp_path, "tools-only", {"tools.py": TOOLS_WITH_HOOK}, {"name": "tools-only", "tools_module": "tools.py"}
    )

    plugin = load_plugin_dir(path)

    assert hook_names(plugin) == ["from_tools"]
    assert plugin.hooks_module is None


def test_loader_legacy_manifest_without_hooks_still_loads(tmp_path):
    tools = "def read_file(path):\n    return 'legacy'\n"
    path = make_plugin(
        tmp_path,
        "legacy",
        {"tools.py": tools, "skills/s/SKILL.md": "# s"},
        {"name": "legacy", "tools_module": "tools.py", "skills": ["skills"]},
    )

    plugin = load_plugin_dir(path)

    assert plugin.discovered_hooks == ()
    assert plugin.tools_module.read_file("x") == "legacy"
    assert len(HookRegistry.from_plugins([plugin])) == 0


def test_loader_manifest_with_no_modules_loads_with_no_hooks(tmp_path):
    path = make_plugin(tmp_path, "empty", {}, {"name": "empty"})

    plugin = load_plugin_dir(path)

    assert plugin.discovered_hooks == ()
    assert plugin.tools_module is None


COUNTING_MODULE = """
from pathlib import Path
from mindroom.hooks import hook

with open(Path(__file__).with_name("imports.log"), "a") as log:
    log.write("imported\\n")

def tool():
    return "tool"

@hook("message:received")
async def counted(ctx):
    pass
"""


@pytest.mark.parametrize("hooks_path", ["tools.py", "./tools.py"])
def test_loader_same_file_named_twice_is_imported_once(tmp_path, hooks_path):
    path = make_plugin(
        tmp_path,
        "shared",
        {"tools.py": COUNTING_MODULE},
        {"name": "shared", "tools_module": "tools.py", "hooks_module": hooks_path},
    )

    plugin = load_plugin_dir(path)

    assert (path / "imports.log").read_text().splitlines() == ["imported"]
    assert plugin.tools_module is plugin.hooks_module
    assert hook_names(plugin) == ["counted"]


def test_loader_separate_files_each_imported_once(tmp_path):
    path = make_plugin(
        tmp_path,
        "two",
        {"tools.py": COUNTING_MODULE, "hooks.py": COUNTING_MODULE},
        {"name": "two", "tools_module": "tools.py", "hooks_module": "hooks.py"},
    )

    load_plugin_dir(path)

    assert (path / "imports.log").read_text().splitlines() == ["imported", "imported"]


def test_loader_discovers_hooks_in_definition_order_once_each(tmp_path):
    source = """
    from mindroom.hooks import hook

    @hook("message:received")
    async def zeta(ctx):
        pass

    @hook("message:enrich")
    async def alpha(ctx):
        pass

    alias = zeta

    def not_a_hook():
        pass

    @hook("message:received")
    async def mid(ctx):
        pass
    """
    plugin = load_plugin_dir(make_plugin(tmp_path, "order", {"hooks.py": source}))

    assert hook_names(plugin) == ["zeta", "alpha", "mid"]


def test_loader_hooks_module_can_import_its_own_helpers(tmp_path):
    files = {
        "helpers.py": "GREETING = 'from helper'\n",
        "pkg/__init__.py": "",
        "pkg/deep.py": "DEEP = 'deep'\n",
        "hooks.py": """
        from mindroom.hooks import hook
        from .helpers import GREETING
        from .pkg.deep import DEEP

        @hook("message:received")
        async def greet(ctx):
            ctx.settings["seen"] = (GREETING, DEEP)
        """,
    }
    plugin = load_plugin_dir(make_plugin(tmp_path, "helpers", files))

    assert plugin.hooks_module.GREETING == "from helper"
    assert plugin.hooks_module.DEEP == "deep"


def test_loader_settings_and_hook_overrides_become_entry_config(tmp_path):
    path = make_plugin(tmp_path, "cfg", {"hooks.py": SIMPLE_HOOK})

    plugin = load_plugin_dir(path, {"url": "http://x"}, hooks={"mark": {"priority": 3, "timeout_ms": 50}})

    assert plugin.settings == {"url": "http://x"}
    assert plugin.entry_config.hooks["mark"] == HookOverrideConfig(priority=3, timeout_ms=50)
    (compiled,) = HookRegistry.from_plugins([plugin]).hooks_for(EVENT_MESSAGE_RECEIVED)
    assert (compiled.priority, compiled.timeout_ms, compiled.settings) == (3, 50, {"url": "http://x"})


def test_loader_invalid_hook_override_is_rejected(tmp_path):
    path = make_plugin(tmp_path, "cfg", {"hooks.py": SIMPLE_HOOK})

    with pytest.raises(ValueError, match="priorty"):
        load_plugin_dir(path, hooks={"mark": {"priorty": 3}})


# -- reload --------------------------------------------------------------------------------------------------------


def versioned_hook(tag):
    return f"""
from mindroom.hooks import hook

SEEN = []

@hook("message:received")
async def versioned(ctx):
    SEEN.append("{tag}")
"""


async def run_version(plugin):
    """Emit through a registry built from the plugin; returns the version its hook reported."""
    registry = HookRegistry.from_plugins([plugin])
    await emit(registry, EVENT_MESSAGE_RECEIVED, MessageReceivedContext())
    return plugin.hooks_module.SEEN[-1]


def freeze_mtime(path, stat):
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.asyncio
async def test_loader_reload_reimports_a_file_edited_within_the_same_second(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = make_plugin(tmp_path, "reload", {"hooks.py": versioned_hook("AAA")})
    hooks_file = path / "hooks.py"
    original = hooks_file.stat()

    assert await run_version(load_plugin_dir(path)) == "AAA"

    hooks_file.write_text(versioned_hook("BBB"))
    freeze_mtime(hooks_file, original)
    assert hooks_file.stat().st_size == original.st_size
    assert await run_version(load_plugin_dir(path)) == "BBB"

    hooks_file.write_text(versioned_hook("CCC"))
    freeze_mtime(hooks_file, original)
    assert await run_version(load_plugin_dir(path)) == "CCC"


@pytest.mark.asyncio
async def test_loader_reload_reimports_an_edited_helper_module(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    hooks = """
    from mindroom.hooks import hook
    from .helper import VERSION

    SEEN = []

    @hook("message:received")
    async def versioned(ctx):
        SEEN.append(VERSION)
    """
    path = make_plugin(tmp_path, "helper-reload", {"hooks.py": hooks, "helper.py": "VERSION = 'AAA'\n"})
    helper = path / "helper.py"
    original = helper.stat()

    assert await run_version(load_plugin_dir(path)) == "AAA"
    for tag in ("BBB", "CCC"):
        helper.write_text(f"VERSION = '{tag}'\n")
        freeze_mtime(helper, original)
        assert await run_version(load_plugin_dir(path)) == tag


def test_loader_reload_keeps_old_plugin_objects_working(tmp_path):
    path = make_plugin(tmp_path, "gen", {"hooks.py": versioned_hook("AAA")})
    old = load_plugin_dir(path)
    (path / "hooks.py").write_text(versioned_hook("BBB"))

    new = load_plugin_dir(path)

    assert old.hooks_module is not new.hooks_module
    assert old.discovered_hooks[0] is not new.discovered_hooks[0]


def test_loader_reload_forgets_old_generations(tmp_path):
    path = make_plugin(tmp_path, "many-reloads", {"hooks.py": SIMPLE_HOOK})

    for _ in range(6):
        load_plugin_dir(path)

    packages = {name.split(".")[0] for name in sys.modules if name.startswith("mindroom_plugin_many_reloads_")}
    assert len(packages) <= 2


# -- end to end: a plugin importing only the spec's names ----------------------------------------------------------

SPEC_ONLY_PLUGIN = """
import asyncio

from mindroom.hooks import (
    EVENT_MESSAGE_BEFORE_RESPONSE,
    EVENT_MESSAGE_ENRICH,
    EVENT_MESSAGE_RECEIVED,
    EVENT_TOOL_BEFORE_CALL,
    EnrichmentItem,
    hook,
)


@hook(EVENT_MESSAGE_RECEIVED)
async def suppress_spam(ctx):
    if "spam" in ctx.envelope.body:
        ctx.suppress = True


@hook(EVENT_MESSAGE_RECEIVED, name="crashes_on_received", priority=1)
async def crashes(ctx):
    ctx.suppress = True
    raise RuntimeError("observer failure loses only its effects")


@hook(EVENT_MESSAGE_ENRICH, priority=10)
async def enrich_with_weather(ctx):
    await asyncio.sleep(0.02)
    ctx.add_metadata("weather", f"Weather from {ctx.settings['api_url']}")


@hook(EVENT_MESSAGE_ENRICH, priority=20)
async def enrich_with_time(ctx):
    return EnrichmentItem(key="time", text="2026-03-23T10:00:00Z", cache_policy="stable")


@hook(EVENT_MESSAGE_ENRICH, priority=30)
async def enrich_that_fails(ctx):
    ctx.add_metadata("lost", "never seen")
    raise ValueError("collector failure loses only its items")


@hook(EVENT_MESSAGE_ENRICH, priority=40, timeout_ms=30)
async def enrich_that_hangs(ctx):
    ctx.add_metadata("hung", "never seen")
    await asyncio.sleep(5)


@hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=10)
async def add_disclaimer(ctx):
    ctx.draft.response_text += "\\n\\n*Generated automatically.*"


@hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=20)
async def broken_transformer(ctx):
    ctx.draft.response_text = "CORRUPTED"
    raise RuntimeError("transformer failure loses only its changes")


@hook(EVENT_MESSAGE_BEFORE_RESPONSE, priority=30)
async def redact_secrets(ctx):
    ctx.draft.response_text = ctx.draft.response_text.replace("sk-secret", "[redacted]")


@hook(EVENT_TOOL_BEFORE_CALL, priority=5, timeout_ms=20)
async def slow_gate(ctx):
    await asyncio.sleep(5)


@hook(EVENT_TOOL_BEFORE_CALL, priority=10)
async def block_secret_reads(ctx):
    if ctx.tool_name == "read_file" and "secret" in str(ctx.arguments.get("path", "")):
        ctx.decline("Sensitive files must stay unread.")
"""


@pytest.mark.asyncio
async def test_loader_spec_only_plugin_runs_every_mode_end_to_end(tmp_path, hook_context_factory):
    path = make_plugin(tmp_path, "spec-only", {"hooks.py": SPEC_ONLY_PLUGIN})
    plugin = load_plugin_dir(path, {"api_url": "http://weather.local"})
    registry = HookRegistry.from_plugins([plugin])

    spam = hook_context_factory("MessageReceivedContext", body="buy spam now")
    ham = hook_context_factory("MessageReceivedContext", body="hello")
    await emit(registry, EVENT_MESSAGE_RECEIVED, spam)
    await emit(registry, EVENT_MESSAGE_RECEIVED, ham)
    assert (spam.suppress, ham.suppress) == (True, False)

    items = await emit_collect(registry, EVENT_MESSAGE_ENRICH, hook_context_factory("MessageEnrichContext"))
    assert [(item.key, item.text) for item in items] == [
        ("weather", "Weather from http://weather.local"),
        ("time", "2026-03-23T10:00:00Z"),
    ]

    draft = await emit_transform(
        registry,
        EVENT_MESSAGE_BEFORE_RESPONSE,
        hook_context_factory("BeforeResponseContext", response_text="key sk-secret"),
    )
    assert draft.response_text == "key [redacted]\n\n*Generated automatically.*"

    secret = await emit_gate(
        registry,
        EVENT_TOOL_BEFORE_CALL,
        hook_context_factory("ToolBeforeCallContext", tool_name="read_file", arguments={"path": "/secret"}),
    )
    public = await emit_gate(
        registry,
        EVENT_TOOL_BEFORE_CALL,
        hook_context_factory("ToolBeforeCallContext", tool_name="read_file", arguments={"path": "/pub"}),
    )
    assert (secret.declined, secret.decline_reason) == (True, "Sensitive files must stay unread.")
    assert public.declined is False

    failures = {h.hook_name: (h.stats.failures, h.stats.timeouts) for h in registry.all_hooks() if h.stats.failures}
    assert failures == {
        "crashes_on_received": (2, 0),
        "enrich_that_fails": (1, 0),
        "enrich_that_hangs": (1, 1),
        "broken_transformer": (1, 0),
        "slow_gate": (2, 2),
    }
