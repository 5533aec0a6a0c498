"""MindRoom's catalogue names that are neither agno toolkits nor built-in groups here, and what each is.

With `AGNO_TOOLKITS` (`toolkit_table.py`) and the built-in groups (`catalog.BUILTIN_PROVIDERS`), these make
every name of MindRoom's tool catalogue known:

- `LATER`: tools that come with a capability this daemon does not have yet. An agent naming one runs
  without it, and the start log, `mindroom doctor`, `mindroom tools list` and the dashboard say so. A
  built-in group registered under one of these names takes its place.
- `NOT_OFFERED`: names this daemon refuses, with the reason: they exist for MindRoom's hosted services, or
  they would run the model's choices with the daemon's rights outside any sandbox. An agent naming one is a
  config error giving the reason.

Nothing here is imported by an agent's turn: the names are read when the catalogue is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["LATER", "NOT_OFFERED", "LaterTool"]


@dataclass(frozen=True, slots=True)
class LaterTool:
    """A tool that comes with a capability of the daemon still to come, and what does its work meanwhile."""

    capability: str
    meanwhile: str = ""


_OWN = "a toolkit of its own (agno 3.1 has none)"
_OAUTH = "OAuth connections"


def _later(capability: str, names: str, meanwhile: str = "") -> dict[str, LaterTool]:
    return dict.fromkeys(names.split(), LaterTool(capability, meanwhile))


LATER: Mapping[str, LaterTool] = MappingProxyType(
    {
        **_later("agent schedules", "scheduler"),
        **_later("page fetching", "website", "newspaper, trafilatura or jina"),
        **_later("hand-offs as a tool", "delegate", "an agent's delegate_to"),
        **_later("memory as a tool", "memory", "an agent's memory, kept without a tool"),
        **_later("Matrix tools", "matrix_message matrix_room matrix_api", "the built-in matrix group"),
        **_later("to-do lists", "todo"),
        **_later("compaction as a tool", "compact_context", "compaction, which runs without a tool"),
        **_later("deferred tools", "dynamic_tools"),
        **_later("stopping a reply as a tool", "stop_reply"),
        **_later("skills managed from chat", "skill_manage"),
        **_later("config changes by tool", "config_manager self_config", "!config set, for administrators"),
        **_later("usage and budgets", "usage_stats"),
        **_later("external triggers", "external_trigger_manager"),
        **_later(_OAUTH, "oauth_connections outlook_calendar outlook_mail"),
        **_later(_OAUTH, "microsoft_files microsoft_meetings microsoft_onenote microsoft_people"),
        **_later(_OAUTH, "microsoft_sharepoint microsoft_teams microsoft_todo"),
        **_later(_OAUTH, "atlassian", "jira and confluence, with an API token"),
        **_later(_OAUTH, "google_docs", "google_drive, with a service account"),
        **_later(_OAUTH, "google_tasks"),
        **_later(_OWN, "composio", "Composio's MCP servers under mcp_servers"),
        **_later(_OWN, "google_scholar", "arxiv or pubmed"),
        **_later(_OWN, "coding", "the file and shell groups"),
        **_later(_OWN, "browser", "a browser MCP server under mcp_servers"),
        **_later(_OWN, "knowledge_graph", "knowledge_bases"),
        **_later(_OWN, "dynamic_workflow", "teams and hand-offs"),
    }
)
"""MindRoom's tools that come with a capability this daemon does not have yet, by name."""

_HOSTED = "it exists for MindRoom's hosted service: "

NOT_OFFERED: Mapping[str, str] = MappingProxyType(
    {
        "python": "it runs the model's code inside the daemon's process; use `shell` with python allowed instead",
        "web_browser_tools": "it opens a browser on the daemon's machine, where nobody is looking",
        "airflow": "it writes DAG files anywhere the daemon can; no confined variant exists here yet",
        "custom_api": "it sends requests with credentials to any URL the model names",
        "claude_agent": "it runs coding sessions with the daemon's rights, outside the shell tool's sandbox",
        "script": "it runs Python scripts that call the agent's tools in the background, outside any sandbox; "
        "`shell` runs commands in one",
        "callback_manager": "it wakes agents from background scripts (`script`), which this daemon does not run",
        "invite_router": "rooms and who is in them come from config.yaml here (rooms, room_defaults.invite_users); "
        "nothing from chat widens them",
        "desktop": _HOSTED + "it reaches into a person's own computer through MindRoom's desktop app",
        "egress_credentials": _HOSTED + "it opts calls into MindRoom's egress broker and its keys",
        "approved_egress": _HOSTED + "it asks MindRoom's egress broker to open a blocked site; here the network of "
        "sandboxed commands is set in config.yaml (tools.shell.network)",
        "agent_vault_access": _HOSTED + "it links to MindRoom's Agent Vault",
        "openclaw_compat": _HOSTED + "a preset of MindRoom's OpenClaw compatibility; name the tools themselves "
        "(shell, duckduckgo, website, scheduler, matrix_message)",
        "chat_ui": _HOSTED + "it opens panels of MindRoom's own web chat, which Matrix clients do not have",
        "browser_mcp": _HOSTED + "it drives a browser in MindRoom's worker computers; a browser MCP server under "
        "mcp_servers does this here",
        "shared_directories": _HOSTED + "it shares folders between MindRoom's worker computers",
        "report_publishing": _HOSTED + "it publishes reports at public links MindRoom serves",
        "update_awareness": _HOSTED + "it tells agents about MindRoom's releases, not this daemon's",
    }
)
"""MindRoom's catalogue names this daemon refuses, and why."""
