"""The package's shape: no import cycle, a package order, agno only in `mindroom.ai`, short modules, one env reader.

These read the source (with `ast`), so they hold for imports under `TYPE_CHECKING` and inside functions too.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mindroom

PACKAGE = Path(mindroom.__file__).resolve().parent
MAX_MODULE_LINES = 400
FOUNDATIONS = {
    *("__init__.py", "__main__.py", "constants.py", "errors.py", "logging_config.py", "private_files.py"),
    "backoff.py",  # `Backoff`: the one way to wait between tries (matrix, state, tool_system, ai)
    "tasks.py",  # `TaskOwner`: the one way a task is owned, for packages on every layer (matrix, ai, bots, daemon)
    "hidden_imports.py",  # a library imported without an unused optional package (logging_config, matrix)
}
"""The loose modules every package may import. One joins only when it holds a single mechanism that packages on
several layers need, and that would otherwise be written again in each of them."""
ENVIRONMENT_READERS = {
    "mindroom/config/environment.py",  # the daemon's one reader
    "mindroom/testing/homeserver.py",  # the plugin authors' kit, not the daemon: its own test-server variables
    # `RuntimePaths` made outside the daemon (a plugin's own code or tests) carries no snapshot of the
    # environment and falls back to the process's; the daemon's always carries the one reader's snapshot.
    "mindroom/constants.py",
}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imported(module: str, path: Path) -> set[str]:
    """The package's modules that `module` imports anywhere in its source."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".") if is_package else module.split(".")[:-1]
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each as a closed path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_package_has_no_import_cycle():
    graph = {module: _imported(module, path) for module, path in MODULES.items()}

    cycles = _cycles(graph)

    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_package_cycle_finder_names_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

    assert _cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_package_module_is_under_the_line_limit(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")

    assert lines < MAX_MODULE_LINES, f"{module} has {lines} lines"


def test_package_top_level_holds_only_the_foundations_and_packages():
    loose = {path.name for path in PACKAGE.iterdir() if path.is_file() and path.suffix == ".py"}

    assert loose == FOUNDATIONS


def test_package_reads_the_process_environment_in_one_place():
    readers = set()
    for path in MODULES.values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv"}:
                readers.add(path.relative_to(PACKAGE.parent).as_posix())
            if isinstance(node, ast.ImportFrom) and node.module == "dotenv":
                readers.add(path.relative_to(PACKAGE.parent).as_posix())

    assert readers <= ENVIRONMENT_READERS, f"environment read outside the one reader: {readers - ENVIRONMENT_READERS}"


def _public_definitions(path: Path) -> set[str]:
    """Names a module defines at top level (classes, functions, assignments) that do not start with `_`."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_") and name not in {"logger", "app"}}


IMPORTABLE = sorted(
    info.name for info in pkgutil.walk_packages(mindroom.__path__, "mindroom.") if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("module_name", IMPORTABLE)
def test_package_all_names_every_public_definition(module_name):
    module = importlib.import_module(module_name)
    defined = _public_definitions(MODULES[module_name])

    missing = defined - set(module.__all__)

    assert not missing, f"{module_name} defines public names missing from __all__: {sorted(missing)}"


_LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical"}
_ID_STYLE = re.compile(r"^[a-z0-9]+(?:[._][a-z0-9]+)+$")


def _log_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _LOG_METHODS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in {"logger", "log"}
            ):
                calls.append((f"{module}:{node.lineno}", node))
    return calls


def test_package_logs_constant_prose_events_with_one_entity_key():
    problems = []
    for where, call in _log_calls():
        event = call.args[0] if call.args else None
        if not (isinstance(event, ast.Constant) and isinstance(event.value, str)):
            problems.append(f"{where}: the event is not a constant string")
        elif _ID_STYLE.match(event.value):
            problems.append(f"{where}: {event.value!r} is an id, not a sentence")
        if any(keyword.arg == "bot" for keyword in call.keywords):
            problems.append(f"{where}: the entity key is `agent=`, not `bot=`")

    assert problems == []


def test_package_every_public_error_is_a_mindroom_error():
    from mindroom.errors import MindroomError

    outside = []
    for module_name in IMPORTABLE:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            is_error = isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == module_name
            if is_error and not issubclass(value, MindroomError):
                outside.append(f"{module_name}.{name}")

    assert outside == [], f"errors outside the tree drawn in mindroom/errors.py: {outside}"


def test_the_daemon_starts_without_agno_the_model_sdk_or_sqlalchemy() -> None:
    """The slowest imports (about a second); the daemon loads them once it is ready (`preload_in_background`).

    croniter (with dateutil) loads when a cron schedule is first parsed or due.
    """
    code = (
        "import sys, mindroom.daemon.orchestrator, mindroom.cli.app, mindroom.cli.run; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'agno', 'openai', 'sqlalchemy', 'croniter'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"imported at start: {loaded}"


_START = "import json, sys, mindroom.daemon.orchestrator, mindroom.cli.app, mindroom.cli.run; "


def _loaded_at_start(packages: set[str]) -> list[str]:
    """The modules of `packages` (each a package or a module, with what is under it) the daemon's start imports."""
    code = _START + f"print(json.dumps(sorted(m for m in sys.modules if m.startswith(tuple({sorted(packages)!r})))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return [m for m in json.loads(out) if m in packages or any(m.startswith(p + ".") for p in packages)]


def test_the_daemon_starts_without_the_http_app() -> None:
    """FastAPI, Starlette, uvicorn and prometheus_client load when the HTTP app starts (`--no-api`: never)."""
    assert _loaded_at_start({"fastapi", "starlette", "uvicorn", "prometheus_client", "mindroom.api.app"}) == []


def test_the_daemon_starts_without_the_appservice() -> None:
    """The appservice's server (aiohttp's web server), inbox and transactions load in appservice mode only."""
    appservice = {"aiohttp.web", "mindroom.matrix.appservice.server", "mindroom.matrix.appservice.inbox"}
    assert _loaded_at_start(appservice | {"mindroom.matrix.appservice.transactions"}) == []


def test_the_daemon_starts_without_the_mcp_connections() -> None:
    """An MCP server's connection, its wire and its stdio process load when the first server starts."""
    connections = {"mindroom.tool_system.mcp.connection", "mindroom.tool_system.mcp.wire"}
    assert _loaded_at_start(connections | {"mindroom.tool_system.mcp.stdio", "mcp"}) == []


def test_the_daemon_starts_without_key_serialization() -> None:
    """A cross-signing key's public bytes come raw: cryptography's serialization (SSH keys, bcrypt) stays unloaded."""
    assert _loaded_at_start({"cryptography.hazmat.primitives.serialization", "bcrypt"}) == []


def test_the_daemon_starts_without_twisted_which_still_imports() -> None:
    """structlog would import Twisted (installed with the embedded homeserver) for nothing; Twisted still imports."""
    code = "import twisted.python.log, structlog; print(twisted.__name__, structlog.twisted)"
    out = subprocess.run([sys.executable, "-c", _START + code], capture_output=True, text=True, check=True).stdout
    assert _loaded_at_start({"twisted"}) == []
    assert out.split() == ["twisted", "None"]


def test_the_http_app_starts_without_prometheus() -> None:
    """prometheus_client loads at the first scrape of `/metrics`: a daemon nobody scrapes never imports it."""
    code = "import mindroom.api.app, mindroom.api.server; print(json.dumps('prometheus_client' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", _START + code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) is False


def test_the_daemon_starts_without_the_postgresql_driver_which_still_imports() -> None:
    """nio's store (peewee) would import psycopg; state in PostgreSQL imports it when it opens, and can."""
    code = "import psycopg, peewee; print(psycopg.__name__, 'nio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", _START + code], capture_output=True, text=True, check=True).stdout
    assert _loaded_at_start({"psycopg"}) == []
    assert out.split() == ["psycopg", "True"]


def test_the_daemon_runs_without_pygments_which_still_imports() -> None:
    """structlog (rich's traceback printer) and httpx (its command line) would load pygments: tracebacks here
    are plain text and httpx's command line never runs, so neither the start nor the preload of the model
    libraries brings it; it still imports."""
    code = (
        "import threading, mindroom.ai as ai; ai.preload_in_background(postgres=False); "
        "[t.join() for t in threading.enumerate() if t.name == 'preload-ai']; "
        "print(json.dumps(['pygments' in sys.modules, 'agno.models.openai' in sys.modules])); import pygments"
    )
    out = subprocess.run([sys.executable, "-c", _START + code], capture_output=True, text=True, check=True).stdout
    assert _loaded_at_start({"pygments", "rich.traceback"}) == []
    assert json.loads(out) == [False, True]


@pytest.mark.parametrize("postgres", [True, False])
def test_the_preload_brings_the_session_store_of_the_states_backend(postgres: bool) -> None:
    """A standby preloads while it waits: the turns it takes over must not import agno's store on the loop."""
    code = (
        "import sys, threading, mindroom.ai as ai; "
        f"ai.preload_in_background(postgres={postgres}); "
        "[t.join() for t in threading.enumerate() if t.name == 'preload-ai']; "
        "print('agno.db.postgres' in sys.modules, 'agno.models.openai' in sys.modules)"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == [str(postgres), "True"]


def _library_imports(source: str, library: str = "agno") -> list[int]:
    """Lines of `source` that import `library`: statements anywhere (functions, `TYPE_CHECKING`) and `import_module`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in {
            "import_module",
            "__import__",
        }:
            names = [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
        else:
            continue
        if any(name.split(".")[0] == library for name in names):
            lines.append(node.lineno)
    return lines


def test_package_only_ai_imports_agno():
    outside = [
        f"{module}:{line}"
        for module, path in MODULES.items()
        if module != "mindroom.ai" and not module.startswith("mindroom.ai.")
        for line in _library_imports(path.read_text(encoding="utf-8"))
    ]

    assert outside == [], f"agno imported outside mindroom.ai: {outside}"


def test_package_only_matrix_imports_nio():
    outside = [
        f"{module}:{line}"
        for module, path in MODULES.items()
        if module != "mindroom.matrix" and not module.startswith("mindroom.matrix.")
        for line in _library_imports(path.read_text(encoding="utf-8"), "nio")
    ]

    assert outside == [], f"nio imported outside mindroom.matrix: {outside}"
    assert _library_imports("import nio\nfrom nio.crypto import Olm\nimport niota\n", "nio") == [1, 2]


def test_package_agno_finder_sees_imports_in_functions_type_checking_and_import_module():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import agnostic\n"
        "if TYPE_CHECKING:\n"
        "    from agno.agent import Agent\n"
        "def build():\n"
        "    import agno.models.openai\n"
        "    return importlib.import_module('agno.db.sqlite')\n"
        "from .agno import x\n"
    )

    assert _library_imports(source) == [4, 6, 7]


LAYERS = [
    "foundations",  # the loose modules (FOUNDATIONS) and the package itself
    "config",
    "hooks",
    "plugins",
    "state",
    "matrix",
    "oauth",  # people's connections: tokens sealed (state, matrix's sealer), the flow; tools ask it for tokens
    "tools",  # MindRoom's path of the shell tool's environment builder, which the shell tool calls (plugins patch it)
    "tool_system",  # below ai: `ai/tools.py` turns the tool system's specs into agno functions
    "ai",
    "bots",
    "daemon",
    "homeserver",
    # The one HTTP app (OpenAI-compatible API, REST API, dashboard, /metrics): an operator's view over the
    # running daemon, and a second way into the pipeline (its turns run the bots' answer stages).
    "api",
    # The import paths MindRoom plugins use: facades over the packages above (the CLI's plugin check reads one).
    "dispatch_source",
    "message_target",
    "turn_origin",
    "model_loading",
    "plugin_api",
    "workspaces",
    "thread_export",
    "runtime_resolution",
    "cli",  # with `mindroom.__main__`, which runs it
    "testing",
]
"""The package order, lowest first: a package imports only packages before it in this list."""
KNOWN_UPWARD_IMPORTS: dict[tuple[str, str], str] = {}
"""Imports against the order that are known and kept for now: (importer, imported) -> why."""


def _layer(module: str) -> str:
    parts = module.split(".")
    if module == "mindroom.__main__":
        return "cli"
    if len(parts) == 1 or f"{parts[1]}.py" in FOUNDATIONS:
        return "foundations"
    return parts[1]


def _upward_imports(graph: dict[str, set[str]], layers: list[str]) -> list[str]:
    """Every import of a module by one whose package is drawn before it in `layers`."""
    rank = {layer: index for index, layer in enumerate(layers)}
    return [
        f"{module} -> {target}"
        for module in sorted(graph)
        for target in sorted(graph[module])
        if rank[_layer(target)] > rank[_layer(module)]
    ]


def test_package_order_names_every_package():
    assert {_layer(module) for module in MODULES} == set(LAYERS)


def test_package_imports_no_package_drawn_above_it():
    graph = {module: _imported(module, path) for module, path in MODULES.items()}
    known = {f"{importer} -> {imported}" for importer, imported in KNOWN_UPWARD_IMPORTS}

    upward = _upward_imports(graph, LAYERS)

    assert [arrow for arrow in upward if arrow not in known] == [], "imports against the package order"
    assert sorted(known - set(upward)) == [], "known upward imports that are gone: drop them from the list"


def test_package_order_check_names_an_upward_import():
    graph = {"mindroom.config.main": {"mindroom.errors"}, "mindroom.hooks.x": {"mindroom.bots.turn", "mindroom.config"}}

    assert _upward_imports(graph, LAYERS) == ["mindroom.hooks.x -> mindroom.bots.turn"]


def _importers_of(name: str, defined_in: str) -> set[str]:
    """The package's modules whose source imports `name` from the module `defined_in` (anywhere in it)."""
    found = set()
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == defined_in:
                if any(alias.name in (name, "*") for alias in node.names):
                    found.add(module)
            elif isinstance(node, ast.Import) and any(alias.name == defined_in for alias in node.names):
                found.add(module)  # `import mindroom.daemon.wiring` reaches every name in it
    return found


def test_package_running_daemon_stays_with_the_daemon_and_the_cli():
    """The whole run is the composition root's (and the CLI's): other packages get declared capabilities."""
    importers = _importers_of("RunningDaemon", "mindroom.daemon.wiring")

    outside = sorted(module for module in importers if _layer(module) not in {"daemon", "cli"})

    assert importers, "the finder sees the composition root's own imports"
    assert outside == [], f"RunningDaemon imported outside daemon/ and cli/: {outside}"


def test_package_importer_finder_names_a_star_import_and_a_module_import(tmp_path, monkeypatch):
    module = tmp_path / "probe.py"
    module.write_text("from mindroom.daemon.wiring import *\nimport mindroom.daemon.wiring\n", encoding="utf-8")
    monkeypatch.setitem(MODULES, "mindroom.api.probe", module)

    assert "mindroom.api.probe" in _importers_of("RunningDaemon", "mindroom.daemon.wiring")


# -- the pipeline's entities hold no bag of the daemon's services ------------------------------------------


def _daemon_capabilities() -> frozenset[type]:
    """What the composition root hands out; one object holding several of these is a service locator."""
    from mindroom.bots.approvals.desk import ApprovalDesk
    from mindroom.bots.coordination import TurnCoordinator
    from mindroom.bots.directory import Directory
    from mindroom.bots.pipeline_capabilities import RunClock, Traffic, TurnStores
    from mindroom.bots.recent import RecentMessages
    from mindroom.bots.runtime import LiveCell, LiveState
    from mindroom.bots.sharing import SharedWork
    from mindroom.constants import RuntimePaths
    from mindroom.state.answers import AnswerLog
    from mindroom.state.attachments import AttachmentStore
    from mindroom.state.journal import TurnJournal
    from mindroom.state.rooms import RoomMemory

    return frozenset(
        {
            *(LiveCell, LiveState, Directory, TurnStores, Traffic, RunClock, RecentMessages, SharedWork),
            *(RuntimePaths, TurnJournal, AnswerLog, AttachmentStore, RoomMemory, ApprovalDesk, TurnCoordinator),
        }
    )


def _types_in(hint: object) -> set[object]:
    """`hint` and every type it is made of (`X | None`, `Mapping[str, X]`, `Callable[[X], Y]`, ...)."""
    import typing

    if isinstance(hint, list | tuple):  # a Callable's parameters
        return set().union(*map(_types_in, hint))
    found = {hint}
    for arg in typing.get_args(hint):
        found |= _types_in(arg)
    origin = typing.get_origin(hint)
    return found | ({origin} if origin is not None else set())


def _capabilities_held(cls: type) -> set[object]:
    """The daemon's capabilities among the types of a class's fields and constructor parameters."""
    import typing

    hints: dict[str, object] = {}
    for source in (cls, getattr(cls, "__init__", None)):
        try:
            hints.update(typing.get_type_hints(source))
        except (TypeError, NameError):
            continue
    capabilities = _daemon_capabilities()
    return {found for hint in hints.values() for found in _types_in(hint) if found in capabilities}


def _returned_types(member: object) -> set[object]:
    import typing

    function = member.fget if isinstance(member, property) else member
    if not callable(function):
        return set()
    return _types_in(typing.get_type_hints(function).get("return"))


def test_package_holder_check_recognizes_a_holder_of_everything():
    from mindroom.daemon.wiring import RunningDaemon

    assert len(_capabilities_held(RunningDaemon)) > 2


def test_package_entity_exposes_no_runtime_bag():
    """`Entity` gives the pipeline an account, not the daemon: no `runtime`, no member returning a holder of it all."""
    from mindroom.bots.runtime import Entity

    members = {name: value for name, value in vars(Entity).items() if not name.startswith("_")}
    assert "runtime" not in members
    bags = {
        name: sorted(map(str, held))
        for name, member in members.items()
        for returned in _returned_types(member)
        if isinstance(returned, type) and len(held := _capabilities_held(returned)) > 2
    }
    assert bags == {}, f"Entity members returning a holder of the daemon's capabilities: {bags}"


def test_package_bot_exposes_no_runtime_bag(tmp_path):
    """A running bot's public attributes and properties: none is the runtime, none holds the daemon's capabilities."""
    from mindroom.bots.bot import EntityBot
    from mindroom.bots.runtime import LiveState
    from mindroom.config.main import Config
    from mindroom.hooks import HookRegistry
    from mindroom.testing.recording_client import RecordingHomeserver
    from tests.bots.support import close_stores, unit_daemon

    daemon = unit_daemon(tmp_path, LiveState(Config(), HookRegistry.empty()), bots={}, rooms={}, started_at_ms=0)
    bot = EntityBot(
        "router",
        RecordingHomeserver().client("router"),
        {},
        cell=daemon.cell,
        directory=daemon.directory,
        recent=daemon.recent,
        clock=daemon.clock,
        paths=daemon.paths,
        attachments=daemon.stores.attachments,
    )
    public = {name for name in dir(bot) if not name.startswith("_")}
    values = {name: getattr(bot, name) for name in public if not callable(getattr(bot, name))}
    close_stores(daemon)

    assert "runtime" not in public
    held = {name: _capabilities_held(type(value)) for name, value in values.items()}
    assert {name: found for name, found in held.items() if len(found) > 2} == {}
