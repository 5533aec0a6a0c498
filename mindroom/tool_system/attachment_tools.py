"""The built-in `attachments` tool: read a file someone sent into the room the conversation is in."""

from __future__ import annotations

from mindroom.tool_system.runtime_context import get_runtime_context
from mindroom.tool_system.spec import AgentToolEnvironment, ToolError, ToolSpec

__all__ = ["ATTACHMENT_TOOL_NAMES", "MAX_ATTACHMENT_CHARS", "attachment_tools"]

ATTACHMENT_TOOL_NAMES = ("read_attachment",)
MAX_ATTACHMENT_CHARS = 50_000
_TEXT_TYPES = ("application/json", "application/xml", "application/x-yaml", "application/yaml", "application/csv")


def _is_text(mimetype: str | None) -> bool:
    return mimetype is not None and (mimetype.startswith("text/") or mimetype.split(";")[0] in _TEXT_TYPES)


def attachment_tools(env: AgentToolEnvironment) -> tuple[ToolSpec, ...]:
    """The `attachments` group: `read_attachment(attachment_id)`."""

    def read_attachment(attachment_id: str) -> str:
        """Read a file someone sent: its text for text files, else what kind of file it is.

        Args:
            attachment_id: The id given where the message names its attachment ("attachment 3f2a...").
        """
        bound = get_runtime_context()
        room_id = bound.room_id if bound is not None else None
        store = env.attachments
        item = store.read(attachment_id.strip()) if store is not None and room_id is not None else None
        # Only a file of the room this turn runs in: the same agent in another room (a DM of someone else)
        # answers other people, who must not read it. One refusal for every case, so that it tells nothing.
        if item is None or item.info.room_id != room_id or room_id not in env.joined_rooms():
            raise ToolError(f"there is no attachment {attachment_id!r} in this room")
        info = item.info
        header = f"{info.name} ({info.mimetype or 'unknown type'}, {info.size} bytes)"
        if not _is_text(info.mimetype):
            return f"{header}: not a text file; its contents cannot be shown as text."
        text = item.data.decode("utf-8", errors="replace")
        if len(text) > MAX_ATTACHMENT_CHARS:
            text = text[:MAX_ATTACHMENT_CHARS] + f"\n[... cut at {MAX_ATTACHMENT_CHARS} characters]"
        return f"{header}:\n{text}"

    return (ToolSpec(name="read_attachment", function=read_attachment, in_thread=True),)
