"""Import surface: what plugins import exists, `__all__` is sorted and complete, and hooks stay light."""

import ast
import importlib
import importlib.metadata
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mindroom
from mindroom.constants import RuntimePaths


def isort_key(name):
    """RUF022's order: SCREAMING_CASE, then CamelCase, then the rest; natural order within each."""
    category = 0 if name.isupper() or (name.upper() == name) else 1 if name[0].isupper() else 2
    return (category, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)])


def _all_modules() -> list[str]:
    """Every module of the package (`__main__` runs the CLI on import, so it is left out)."""
    return sorted(
        info.name
        for info in pkgutil.walk_packages(mindroom.__path__, "mindroom.")
        if not info.name.endswith("__main__")
    )


PUBLIC_MODULES = _all_modules()


def test_imports_hooks_loads_neither_nio_nor_agno():
    code = (
        "import json, sys\n"
        "import mindroom.hooks, mindroom.hooks.execution, mindroom.hooks.telemetry\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    modules = json.loads(out.stdout)

    heavy = [m for m in modules if m.split(".")[0] in {"nio", "agno"}]
    assert "mindroom.hooks" in modules
    assert heavy == []


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_imports_all_is_sorted_and_importable(module_name):
    module = importlib.import_module(module_name)
    exported = module.__all__

    assert list(exported) == sorted(exported, key=isort_key)
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert hasattr(module, name), f"{module_name}.{name} is in __all__ but missing"


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_imports_star_import_works(module_name):
    namespace = {}
    exec(f"from {module_name} import *", namespace)

    assert set(importlib.import_module(module_name).__all__) <= set(namespace)


SPEC_HOOKS_NAMES = [
    "hook",
    "HookRegistry",
    "EnrichmentItem",
    "EVENT_MESSAGE_RECEIVED",
    "EVENT_MESSAGE_ENRICH",
    "EVENT_MESSAGE_BEFORE_RESPONSE",
    "EVENT_MESSAGE_AFTER_RESPONSE",
    "EVENT_AGENT_STARTED",
    "EVENT_AGENT_STOPPED",
    "EVENT_BOT_READY",
    "EVENT_SCHEDULE_FIRED",
    "EVENT_REACTION_RECEIVED",
    "EVENT_CONFIG_RELOADED",
    "EVENT_TOOL_BEFORE_CALL",
    "EVENT_TOOL_AFTER_CALL",
    "MessageReceivedContext",
    "MessageEnrichContext",
    "BeforeResponseContext",
    "AfterResponseContext",
    "AgentLifecycleContext",
    "ScheduleFiredContext",
    "ReactionReceivedContext",
    "ConfigReloadedContext",
    "ToolBeforeCallContext",
    "ToolAfterCallContext",
    "MessageEnvelope",
    "ResponseDraft",
    "ResponseResult",
    "ToolTraceEntry",
]


@pytest.mark.parametrize("name", SPEC_HOOKS_NAMES)
def test_imports_spec_names_from_mindroom_hooks(name):
    import mindroom.hooks

    assert name in mindroom.hooks.__all__
    assert getattr(mindroom.hooks, name) is not None


@pytest.mark.parametrize(
    ("module_name", "name"),
    [
        ("mindroom.hooks.execution", "emit"),
        ("mindroom.hooks.execution", "emit_collect"),
        ("mindroom.hooks.execution", "emit_transform"),
        ("mindroom.hooks.execution", "emit_gate"),
        ("mindroom.hooks.decorators", "get_hook_metadata"),
        ("mindroom.config.plugin", "PluginEntryConfig"),
        ("mindroom.tool_system.runtime_context", "emit_custom_event"),
        ("mindroom.constants", "ROUTER_AGENT_NAME"),
        ("mindroom.constants", "VOICE_PREFIX"),
        ("mindroom.constants", "ORIGINAL_SENDER_KEY"),
        ("mindroom.constants", "resolve_config_relative_path"),
        ("mindroom.plugins", "load_plugin_dir"),
    ],
)
def test_imports_spec_import_paths_exist(module_name, name):
    assert hasattr(importlib.import_module(module_name), name)


def test_imports_constants_values():
    from mindroom.constants import ORIGINAL_SENDER_KEY, ROUTER_AGENT_NAME, VOICE_PREFIX

    assert ROUTER_AGENT_NAME == "router"
    assert VOICE_PREFIX == "🎤 "
    assert ORIGINAL_SENDER_KEY == "com.mindroom.original_sender"


def test_imports_resolve_config_relative_path(tmp_path, monkeypatch):
    from mindroom.constants import resolve_config_relative_path

    paths = RuntimePaths(config_path=tmp_path / "conf" / "config.yaml", storage_root=tmp_path / "data")
    monkeypatch.setenv("PLUGIN_HOME", str(tmp_path / "from-env"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))

    assert resolve_config_relative_path("./plugins/x", paths) == (tmp_path / "conf" / "plugins" / "x").resolve()
    assert resolve_config_relative_path("plugins/../y", paths) == (tmp_path / "conf" / "y").resolve()
    assert resolve_config_relative_path(str(tmp_path / "abs"), paths) == (tmp_path / "abs").resolve()
    assert resolve_config_relative_path("$PLUGIN_HOME/p", paths) == (tmp_path / "from-env" / "p").resolve()
    assert resolve_config_relative_path("~/p", paths) == (tmp_path / "home" / "p").resolve()
    assert isinstance(resolve_config_relative_path(Path("rel"), paths), Path)


def test_imports_pytest_plugin_entry_point_registered():
    entry_points = importlib.metadata.entry_points(group="pytest11")

    assert any(ep.name == "mindroom" and ep.value == "mindroom.testing.pytest_plugin" for ep in entry_points)


def test_imports_hook_context_factory_fixture_available(hook_context_factory):
    assert callable(hook_context_factory)


HOOKS_DIR = Path(mindroom.__file__).parent / "hooks"


@pytest.mark.parametrize("path", sorted(HOOKS_DIR.glob("*.py")), ids=lambda path: path.name)
def test_imports_hooks_modules_never_import_their_own_package(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    offending = [
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.ImportFrom) and node.module == "mindroom.hooks")
        or (isinstance(node, ast.Import) and any(alias.name == "mindroom.hooks" for alias in node.names))
    ]

    assert offending == []


@pytest.mark.parametrize("path", sorted(HOOKS_DIR.glob("*.py")), ids=lambda path: path.name)
def test_imports_hooks_modules_stay_under_400_lines(path):
    assert len(path.read_text(encoding="utf-8").splitlines()) < 400


@pytest.mark.parametrize("module_name", [m for m in PUBLIC_MODULES if m.startswith("mindroom.hooks.")])
def test_imports_each_hooks_module_imports_first_in_a_fresh_interpreter(module_name):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    code = f"import {module_name}, mindroom.hooks\nprint(len(mindroom.hooks.__all__))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)

    assert out.returncode == 0, out.stderr


def _defined_names(tree):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (name.id for target in node.targets for name in ast.walk(target) if isinstance(name, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id


@pytest.mark.parametrize("path", sorted(HOOKS_DIR.glob("*.py")), ids=lambda path: path.name)
def test_imports_hooks_modules_export_every_public_name(path):
    module = importlib.import_module("mindroom.hooks" if path.stem == "__init__" else f"mindroom.hooks.{path.stem}")
    public = {name for name in _defined_names(ast.parse(path.read_text(encoding="utf-8"))) if not name.startswith("_")}

    assert public - {"logger"} - set(module.__all__) == set()


@pytest.mark.parametrize("path", sorted(HOOKS_DIR.glob("*.py")), ids=lambda path: path.name)
def test_imports_hooks_public_objects_have_docstrings(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    undocumented = [
        f"{node.name}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
        and not any(isinstance(d, ast.Attribute) and d.attr == "setter" for d in getattr(node, "decorator_list", []))
        and ast.get_docstring(node) is None
    ]

    assert ast.get_docstring(tree) is not None
    assert undocumented == []
