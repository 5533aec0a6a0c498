"""`mindroom plugins check PATH`: validate one plugin folder without a homeserver, one finding per line.

It reads the manifest, checks the plugin API version, imports the plugin the way the daemon does, and
looks at what it declares: hooks (names, events, filters), tools (names, clashes with built-ins,
registered toolkits and their `file_access`) and skills. Errors stop the plugin from loading or from
working; warnings are things a plugin author should know; `ok` lines say what was found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mindroom.config.main import Config
from mindroom.errors import PluginError
from mindroom.hooks.decorators import get_hook_metadata
from mindroom.hooks.types import NEWER_EVENTS, is_custom_event
from mindroom.plugin_api.version import PLUGIN_API_VERSION
from mindroom.plugins.loader import Plugin, load_plugin_dir
from mindroom.plugins.skills import SkillCatalog, SkillError
from mindroom.tool_system.catalog import ToolCatalogError, build_tool_catalog, registered_toolkits

__all__ = ["Finding", "Level", "check_plugin", "format_finding", "has_errors"]

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


def _load(path: Path) -> tuple[Plugin | None, list[Finding]]:
    try:
        plugin = load_plugin_dir(path)
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


def check_plugin(path: Path | str) -> list[Finding]:
    """Every finding about the plugin folder at `path`, in the order manifest, hooks, tools, skills."""
    folder = Path(path)
    if not folder.is_dir():
        return [Finding("error", f"{folder}: not a folder")]
    plugin, findings = _load(folder)
    if plugin is None:
        return findings
    findings += _guarded("hooks", _hook_findings, plugin)
    findings += _guarded("tools", _tool_findings, plugin)
    findings += _guarded("skills", _skill_findings, plugin)
    if not plugin.discovered_hooks and plugin.tools_module is None and not plugin.skill_dirs:
        findings.append(Finding("warning", "the plugin has no hooks, tools or skills"))
    return findings
