"""What an agent is told afresh at each turn, beside its instructions: the date, its context files, its MEMORY.md.

Each part is there only when config asks for it (`timezone`, `context_files`, `memory_backend: file`), so an
agent with none of them costs nothing here. The text joins the run's system prompt and is never stored, so
an edited file or a new day shows at the next turn. Files are read from the agent's workspace without
following links (`mindroom.tool_system.confined_open`), up to `defaults.max_preload_chars` for the context
files and `memory.file`'s caps for MEMORY.md. A private agent (`private:`) reads them from the requester's
copy of its workspace (`mindroom.state.private_roots`), made and seeded here at the requester's first turn.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from zoneinfo import ZoneInfo

from mindroom.config.main import Config
from mindroom.config.settings import AgentSettings
from mindroom.constants import RuntimePaths
from mindroom.logging_config import get_logger
from mindroom.state.private_roots import ensure_private_workspace, private_template, requester_workspace
from mindroom.tool_system.confined_open import open_file_in, open_folder_below, open_root
from mindroom.tool_system.spec import workspace_dir

__all__ = [
    "DEFAULT_DATETIME_TEMPLATE",
    "DEFAULT_HIDDEN_TOOL_CALLS",
    "MEMORY_FILE",
    "date_context",
    "read_workspace_text",
    "turn_context",
]

logger = get_logger(__name__)

DEFAULT_DATETIME_TEMPLATE = "## Date and time\nIt is {date_str}, {time_str} now ({timezone_str}, {timezone_abbrev})."
DEFAULT_HIDDEN_TOOL_CALLS = (
    "The people you talk with see only your messages, not your tool calls or their results: write your answer "
    "as a finished reply, without narrating the calls you make."
)
MEMORY_FILE = "MEMORY.md"
_READ_LIMIT = 1024 * 1024


def date_context(config: Config, zone: str, now: datetime | None = None) -> str:
    """The date block for an agent in `zone` (the `DATETIME_CONTEXT_TEMPLATE` prompt, if config replaces it)."""
    local = (now or datetime.now(UTC)).astimezone(ZoneInfo(zone))
    fields = {
        "date_str": local.strftime("%A, %B %d, %Y"),
        "time_str": local.strftime("%H:%M"),
        "timezone_str": zone,
        "timezone_abbrev": local.tzname() or zone,
    }
    text = config.prompt("DATETIME_CONTEXT_TEMPLATE", DEFAULT_DATETIME_TEMPLATE)
    for name, value in fields.items():
        text = text.replace("{" + name + "}", value)
    return text.strip()


def read_workspace_text(workspace: Path, relative: str, limit: int = _READ_LIMIT) -> str | None:
    """The text of a file of the workspace (at most `limit` bytes), never through a link; None when absent."""
    *folders, name = PurePosixPath(relative).parts
    try:
        root = open_root(workspace, may_be_link=False)
    except OSError:
        return None
    try:
        folder = open_folder_below(root, folders)
        try:
            fd = open_file_in(folder, name, os.O_RDONLY)
        finally:
            os.close(folder)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit)
    except (OSError, ValueError) as exc:
        if not isinstance(exc, FileNotFoundError):
            logger.warning("workspace file not read", path=relative, error=str(exc))
        return None
    finally:
        os.close(root)
    return data.decode("utf-8", errors="replace")


def _context_files(workspace: Path, paths: list[str], budget: int) -> str:
    parts: list[str] = []
    for path in paths:
        text = read_workspace_text(workspace, path)
        if text is None or budget <= 0:
            continue
        if len(text) > budget:
            text = text[:budget] + "\n[cut: defaults.max_preload_chars reached]"
        budget -= len(text)
        parts.append(f"## {path}\n{text.strip()}")
    return "\n\n".join(parts)


def _memory_file(config: Config, workspace: Path) -> str:
    text = read_workspace_text(workspace, MEMORY_FILE)
    if not text or not text.strip():
        return ""
    caps = config.memory.file
    lines = text.splitlines()[: caps.max_entrypoint_lines]
    kept = "\n".join(lines)[: caps.max_entrypoint_tokens * 4]
    cut = "\n[MEMORY.md goes on; only its start is shown]" if len(kept) < len(text.strip()) else ""
    return f"## What you remember ({MEMORY_FILE} in your workspace)\n{kept.strip()}{cut}"


def _agent_workspace(config: Config, name: str, paths: RuntimePaths, requester: str | None) -> Path:
    """The folder `name` works in: its workspace, or for a private agent `requester`'s copy of it (made and
    seeded on first use, so call it off the event loop); `ValueError` for a private agent without a requester."""
    agent = config.agents.get(name)
    private = agent.private if agent is not None else None
    if private is None:
        return workspace_dir(paths.storage_root, name)
    if not requester:
        msg = f"agents.{name}.private: a private agent answers a person only"
        raise ValueError(msg)
    template = private_template(name, private, paths)
    return ensure_private_workspace(requester_workspace(paths.storage_root, name, private, requester), template)


async def turn_context(
    config: Config, name: str, settings: AgentSettings, paths: RuntimePaths, requester: str | None, *more: str
) -> str:
    """The block agent (or team) `name` is told this turn for `requester`, followed by `more` ("" when nothing)."""
    parts = [date_context(config, settings.timezone)] if settings.timezone else []
    agent = config.agents.get(name)
    files = agent.context_files if agent is not None else []
    memory = config.memory_backend(name) == "file"
    private = agent.private if agent is not None else None
    if private is not None and private.context_files is not None:
        files = private.context_files
    if files or memory or private is not None:
        # A private agent's copy is made before anything of the turn may want it (its tools, its files).
        workspace = await asyncio.to_thread(_agent_workspace, config, name, paths, requester)
        if files:
            parts.append(await asyncio.to_thread(_context_files, workspace, files, config.defaults.max_preload_chars))
        if memory:
            parts.append(await asyncio.to_thread(_memory_file, config, workspace))
    return "\n\n".join(part for part in (*parts, *more) if part)
