"""A thread written out as Markdown and JSON: its messages (author, time, text, attachments by name), its
summary and its tags, read through one of the daemon's accounts (so decrypted where that account can).

The files are the daemon's own private files (0600, in 0700 folders): an export of an encrypted room holds
its decrypted text, so it is never written anywhere else. `export_folder` is `<data>/thread_exports/`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mindroom.matrix.events import MatrixEvent
from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.thread_reader import thread_messages
from mindroom.matrix.thread_summaries import is_summary, latest_summary
from mindroom.matrix.thread_tags import ThreadTagStore
from mindroom.private_files import private_dir, write_private_file

__all__ = ["ExportedMessage", "ThreadExport", "export_file_name", "export_folder", "read_thread", "write_export"]

_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_ATTACHMENT_TYPES = frozenset({"m.image", "m.file", "m.audio", "m.video"})


@dataclass(frozen=True, slots=True)
class ExportedMessage:
    """One message of an exported thread."""

    event_id: str
    author: str
    sent_at: str
    text: str
    attachments: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ThreadExport:
    """A thread as it is exported."""

    room_id: str
    thread_id: str
    exported_at: str
    messages: tuple[ExportedMessage, ...]
    summary: str | None = None
    tags: dict[str, dict[str, Any]] = field(default_factory=dict)
    encrypted: bool = False

    @property
    def resolved(self) -> bool:
        """Whether the thread carries the `resolved` tag."""
        return "resolved" in self.tags

    def as_json(self) -> str:
        """The export as JSON."""
        data = asdict(self)
        data["resolved"] = self.resolved
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    def as_markdown(self) -> str:
        """The export as Markdown."""
        lines = [f"# Thread {self.thread_id}", "", f"- Room: `{self.room_id}`", f"- Exported: {self.exported_at}"]
        if self.tags:
            lines.append("- Tags: " + ", ".join(f"`{tag}`" for tag in self.tags))
        if self.summary:
            lines.append(f"- Summary: {self.summary}")
        lines.append("")
        for message in self.messages:
            lines += [f"## {message.author} · {message.sent_at}", "", message.text or "(no text)"]
            lines += [f"- Attachment: {name}" for name in message.attachments]
            lines.append("")
        return "\n".join(lines)


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def _message(event: MatrixEvent) -> ExportedMessage:
    content = event.content
    attachments: tuple[str, ...] = ()
    text = str(content.get("body") or "")
    if content.get("msgtype") in _ATTACHMENT_TYPES:
        filename = content.get("filename")
        attachments = (str(filename or text or "attachment"),)
        text = text if filename and text != filename else ""  # a body beside a file name is its caption
    return ExportedMessage(event.event_id, event.sender, _time(event.origin_server_ts), text, attachments)


async def read_thread(client: RoomAccount, room_id: str, root: str, trusted: Collection[str]) -> ThreadExport:
    """The thread of `root` as `client` reads it: messages (summary notices apart), summary, tags."""
    events = await thread_messages(client, room_id, root)
    if not events:
        raise LookupError(f"no thread {root} in room {room_id}")
    summary = latest_summary(events, trusted)
    tags = await ThreadTagStore(client).thread_tags(room_id, root)
    return ThreadExport(
        room_id,
        root,
        datetime.now(UTC).isoformat(timespec="seconds"),
        tuple(_message(event) for event in events if not is_summary(event, trusted)),
        summary.text if summary is not None else None,
        {tag: record.content() for tag, record in tags.items()},
        any(event.encrypted for event in events),
    )


def export_folder(storage_root: Path) -> Path:
    """Where the daemon writes thread exports: `<data>/thread_exports/`."""
    return Path(storage_root) / "thread_exports"


def export_file_name(matrix_id: str) -> str:
    """A room or thread id as a file or folder name of an export."""
    # Letters, digits, '.', '_' and '-' only, never starting or ending with a dot: no '..', no hidden name.
    return _FILE_NAME.sub("_", matrix_id).strip("._") or "_"


def write_export(export: ThreadExport, folder: Path) -> tuple[Path, Path]:
    """Write the export as `<room>/<thread>.md` and `.json` under `folder` (0600 files, 0700 folders)."""
    room_folder = folder / export_file_name(export.room_id)
    private_dir(room_folder)
    stem = export_file_name(export.thread_id)
    markdown, data = room_folder / f"{stem}.md", room_folder / f"{stem}.json"
    write_private_file(markdown, export.as_markdown())
    write_private_file(data, export.as_json())
    return markdown, data
