"""Files and images tools send with the agent's answer: `send_file` for tool code, and the size limit.

What a tool returns as a `ToolOutput` (an agno toolkit's images and files, an MCP server's images) and what
tool code passes to `send_file` joins the turn's outbox. After the answer is sent, each file follows it in
the same thread as `m.image` or `m.file`, encrypted in an encrypted room. A file larger than
`tools.max_file_bytes` is left out, and the model is told so in the tool's result.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable
from pathlib import Path

from mindroom.tool_system.runtime_context import ToolRuntimeContext, get_runtime_context
from mindroom.tool_system.spec import OutboundFile, ToolError

__all__ = ["DEFAULT_MAX_FILE_BYTES", "admit_files", "send_file"]

DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024


def _limit(bound: ToolRuntimeContext | None) -> int:
    tools = getattr(getattr(bound, "config", None), "tools", None)
    limit = getattr(tools, "max_file_bytes", None)
    return limit if isinstance(limit, int) else DEFAULT_MAX_FILE_BYTES


def admit_files(files: Iterable[OutboundFile], bound: ToolRuntimeContext) -> list[str]:
    """Put the files that fit the limit in the turn's outbox; returns a note on each one left out."""
    limit = _limit(bound)
    notes: list[str] = []
    for file in files:
        if len(file.data) > limit:
            notes.append(f"{file.name} ({len(file.data)} bytes) is over the {limit}-byte limit and is not sent")
        else:
            bound.outbox.append(file)
    return notes


def send_file(content: bytes | str | Path, *, name: str | None = None, mime_type: str | None = None) -> str:
    """Send a file with the answer of the turn this tool runs in; returns the name it is sent under.

    `content` is the file's bytes, or the path of a file to read now. `ToolError` (the model reads why)
    outside a turn, or for a file over the limit.
    """
    bound = get_runtime_context()
    if bound is None:
        raise ToolError("there is no answer to send a file with (send_file runs inside a tool call of a turn)")
    if isinstance(content, bytes):
        data, shown = content, name or "file"
    else:
        path = Path(content)
        data, shown = path.read_bytes(), name or path.name
    kind = mime_type or mimetypes.guess_type(shown)[0] or "application/octet-stream"
    refused = admit_files([OutboundFile(shown, data, kind)], bound)
    if refused:
        raise ToolError(refused[0])
    return shown
