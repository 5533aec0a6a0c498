"""`mindroom plugins check PATH`: validate one plugin folder without a homeserver, one finding per line.

It reads the manifest, checks the plugin API version, imports the plugin the way the daemon does, and
looks at what it declares: hooks (names, events, filters), tools (names, clashes with built-ins,
registered toolkits and their `file_access`) and skills. Errors stop the plugin from loading or from
working; warnings are things a plugin author should know; `ok` lines say what was found.

Importing a plugin runs its code. `check_plugin_sandboxed` does that in a child process under bubblewrap
(`mindroom.tool_system.sandbox.bubblewrap`): no network, an empty throw-away HOME and /tmp, the plugin folder
read-only, no data directory, and of the host only the system folders, the Python installation and the
`mindroom` package, read-only. `check_plugin` imports in this process, with the caller's rights
(`--import`); `check_manifest` imports nothing. The first line of the report says which ran.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import mindroom
from mindroom.config.environment import process_environ, resolve_storage_root
from mindroom.config.main import Config
from mindroom.constants import DEFAULT_CONFIG_FILENAME
from mindroom.errors import PluginError
from mindroom.hooks.decorators import get_hook_metadata
from mindroom.hooks.types import NEWER_EVENTS, is_custom_event
from mindroom.plugin_api.version import PLUGIN_API_VERSION
from mindroom.plugins.loader import Plugin, load_plugin_dir
from mindroom.plugins.manifest import check_api_version, read_manifest
from mindroom.plugins.skills import SkillCatalog, SkillError
from mindroom.tool_system.catalog import ToolCatalogError, build_tool_catalog, registered_toolkits
from mindroom.tool_system.sandbox.bubblewrap import bwrap_command, write_etc

__all__ = [
    "SANDBOXED",
    "SANDBOX_TIMEOUT_S",
    "UNSANDBOXED",
    "Finding",
    "Level",
    "check_manifest",
    "check_plugin",
    "check_plugin_sandboxed",
    "find_bwrap",
    "format_finding",
    "has_errors",
    "report_in_child",
]

SANDBOX_TIMEOUT_S = 120.0
SANDBOXED = (
    "the plugin's modules are imported in a bubblewrap sandbox: no network, an empty HOME, "
    "the plugin folder read-only, no data directory"
)
UNSANDBOXED = "the plugin's modules are imported in this process with your rights, without a sandbox (--import)"
_PATH = "/usr/local/bin:/usr/bin:/bin"
# Run in the sandbox: the parent's module path, the plugin's findings as JSON on the original stdout, and
# what the plugin prints on stderr instead, so it does not mix into the findings.
_CHILD = """
import json, os, sys
sys.path[:] = json.loads(sys.argv[1])
report = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
from mindroom.cli.plugin_check import report_in_child
report.write(report_in_child(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None))
"""

Level = Literal["error", "warning", "ok"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of the report."""

    level: Level
    message: str


def format_finding(finding: Finding) -> str:
    """`<level>: <message>`."""
    return f"{finding.level}: {finding.message}"


def has_errors(findings: list[Finding]) -> bool:
    """True when any finding is an error (the command then exits non-zero)."""
    return any(finding.level == "error" for finding in findings)


def _load(path: Path, deps_dir: Path | None = None) -> tuple[Plugin | None, list[Finding]]:
    try:
        plugin = load_plugin_dir(path, deps_dir=deps_dir)
    except PluginError as exc:
        return None, [Finding("error", f"{exc.plugin}: {exc.cause}")]
    except (OSError, ValueError) as exc:  # a folder is foreign input: anything it makes the loader raise
        return None, [Finding("error", f"{path.name}: {type(exc).__name__}: {exc}")]
    version = plugin.manifest.api_version
    needs = f"plugin API {version}" if version else "no api_version (the hooks spec's API)"
    return plugin, [Finding("ok", f"{plugin.name}: manifest read, modules imported; needs {needs}")]


def _hook_findings(plugin: Plugin) -> list[Finding]:
    findings: list[Finding] = []
    metas = [meta for meta in map(get_hook_metadata, plugin.discovered_hooks) if meta is not None]
    for name, count in Counter(meta.hook_name for meta in metas).items():
        if count > 1:
            findings.append(Finding("warning", f"hook name {name!r} is used {count} times; only the first runs"))
    for meta in metas:
        where = f"hook {meta.hook_name!r} on {meta.event_name}"
        if is_custom_event(meta.event_name):
            findings.append(Finding("ok", f"{where} (a custom event, run as an observer)"))
        elif meta.event_name in NEWER_EVENTS:
            findings.append(Finding("ok", f"{where} (an event of plugin API {PLUGIN_API_VERSION})"))
        else:
            findings.append(Finding("ok", where))
    if plugin.manifest.hooks_module is not None and not metas:
        findings.append(Finding("warning", f"hooks_module {plugin.manifest.hooks_module!r} defines no @hook function"))
    return findings


def _tool_findings(plugin: Plugin) -> list[Finding]:
    from mindroom.ai.tools import foreign_tool_specs  # here: agno is needed only to read toolkits

    findings = [
        Finding(
            "warning",
            f"tool {registration.name!r} declares no file_access; it is treated as unconfined"
            f" (plugin API {PLUGIN_API_VERSION} requires it: file_access=ToolFileAccess.NONE, AGENT or UNCONFINED)",
        )
        for registration in registered_toolkits(plugin)
        if not registration.metadata.file_access_declared
    ]
    try:
        catalog = build_tool_catalog(Config(), [plugin], adapt=foreign_tool_specs)
    except ToolCatalogError as exc:
        findings.extend(Finding("error", problem) for problem in exc.problems)
        return findings
    for tool_name, owners in catalog.shared_names.items():
        labels = " and by ".join(catalog.providers[owner].label for owner in owners)
        findings.append(Finding("warning", f"tool {tool_name!r} is defined by {labels}: an agent may have one of them"))
    builtin = {"calculator", "file", "shell", "matrix"}
    for name, provider in catalog.providers.items():
        if name in builtin or not provider.tool_names:
            continue
        findings.append(Finding("ok", f"{provider.label} gives tools: {', '.join(provider.tool_names)}"))
    return findings


def _skill_findings(plugin: Plugin) -> list[Finding]:
    if not plugin.skill_dirs:
        return []
    try:
        catalog = SkillCatalog.from_plugins([plugin])
    except SkillError as exc:
        return [Finding("error", str(exc))]
    if not catalog.skills:
        return [Finding("warning", "the manifest lists skill folders, but none holds a SKILL.md")]
    return [Finding("ok", f"skills: {', '.join(sorted(catalog.skills))}")]


def _guarded(stage: str, check: Callable[[Plugin], list[Finding]], plugin: Plugin) -> list[Finding]:
    try:
        return check(plugin)
    except Exception as exc:  # the plugin's code may break a check in ways the daemon would also meet
        return [Finding("error", f"{plugin.name}: cannot check its {stage}: {type(exc).__name__}: {exc}")]


def check_plugin(path: Path | str, *, deps_dir: Path | None = None) -> list[Finding]:
    """Every finding about the plugin folder at `path` (its packages in `deps_dir`): manifest, hooks, tools, skills."""
    folder = Path(path)
    if not folder.is_dir():
        return [Finding("error", f"{folder}: not a folder")]
    plugin, findings = _load(folder, deps_dir)
    if plugin is None:
        return findings
    findings += _guarded("hooks", _hook_findings, plugin)
    findings += _guarded("tools", _tool_findings, plugin)
    findings += _guarded("skills", _skill_findings, plugin)
    if not plugin.discovered_hooks and plugin.tools_module is None and not plugin.skill_dirs:
        findings.append(Finding("warning", "the plugin has no hooks, tools or skills"))
    return findings


def check_manifest(path: Path | str) -> list[Finding]:
    """The findings that need no import: the manifest and the plugin API version."""
    folder = Path(path).resolve()
    try:
        manifest = read_manifest(folder)
        check_api_version(manifest, folder)
    except PluginError as exc:
        return [Finding("error", f"{exc.plugin}: {exc.cause}")]
    version = manifest.api_version
    needs = f"plugin API {version}" if version else "no api_version (the hooks spec's API)"
    return [Finding("ok", f"{manifest.name}: manifest read, modules not imported; needs {needs}")]


def report_in_child(path: str, deps_dir: str | None = None) -> str:
    """`check_plugin(path)` as JSON: what the sandboxed child hands back."""
    from mindroom.logging_config import configure_logging

    configure_logging("CRITICAL", json=True)
    findings = check_plugin(path, deps_dir=Path(deps_dir) if deps_dir else None)
    return json.dumps([asdict(finding) for finding in findings])


def _python_paths() -> tuple[list[str], list[str]]:
    """What the child needs to import what this process imports: folders to show, and its `sys.path`.

    The Python installation and site-packages folders are shown whole; of a source folder on the path
    (a checkout, the working directory) only the `mindroom` package is, so its other files stay out.
    """
    roots = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    package = Path(mindroom.__file__).resolve().parent
    shown: set[Path] = set(roots)
    search: list[str] = []
    for entry in sys.path:
        if not entry or not Path(entry).exists():
            continue
        folder = Path(entry).resolve()
        if any(folder == root or root in folder.parents for root in roots):
            search.append(str(folder))
        elif folder.is_file() or folder.name in ("site-packages", "dist-packages"):
            shown.add(folder)
            search.append(str(folder))
        elif folder == package.parent:
            shown.add(package)
            search.append(str(folder))
    if not any(Path(entry) == package.parent or Path(entry) in package.parents for entry in search):
        shown.add(package)
        search.insert(0, str(package.parent))
    return sorted(str(p) for p in shown), search


def _child_failure(output: str) -> Finding:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    if lines and lines[0].startswith("bwrap:"):
        cause = f"cannot start the sandbox ({lines[0]}); pass --import to import it here, with your rights"
    else:
        cause = "the sandboxed check failed: " + (" | ".join(lines[-5:]) or "no output")
    return Finding("error", cause)


def check_plugin_sandboxed(path: Path | str, bwrap: str, *, deps_dir: Path | None = None) -> list[Finding]:
    """`check_plugin` run in a bubblewrap sandbox by `bwrap`; the first finding says so."""
    folder = Path(path).resolve()
    if not folder.is_dir():
        return [Finding("error", f"{path}: not a folder")]
    shown, search = _python_paths()
    # The default data directory, in case a folder shown holds it: covered, as in the shell sandbox.
    data = resolve_storage_root(Path(DEFAULT_CONFIG_FILENAME), None, process_environ())
    with tempfile.TemporaryDirectory(prefix="mindroom-plugin-check-") as scratch:
        options = bwrap_command(
            bwrap,
            path=_PATH,
            lang="C.UTF-8",
            accounts=write_etc(Path(scratch)),
            readonly=shown,
            hidden=(data,),
            on_top=((folder, False),) if deps_dir is None else ((folder, False), (deps_dir.resolve(), False)),
            chdir=folder,
        )
        argv = [*options, "--", sys.executable, "-I", "-c", _CHILD, json.dumps(search), str(folder)]
        argv += [str(deps_dir.resolve())] if deps_dir is not None else []
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=SANDBOX_TIMEOUT_S, env={"PATH": _PATH}, check=False
            )
        except subprocess.TimeoutExpired:
            return [Finding("error", f"the sandboxed import did not finish within {SANDBOX_TIMEOUT_S:g} s")]
    try:
        found = [Finding(item["level"], item["message"]) for item in json.loads(done.stdout)]
    except (ValueError, TypeError, KeyError):
        return [_child_failure(done.stderr)]
    return [Finding("ok", SANDBOXED), *found]


def find_bwrap() -> str | None:
    """The `bwrap` on this process's PATH, if any."""
    return shutil.which("bwrap", path=process_environ().get("PATH") or _PATH)
