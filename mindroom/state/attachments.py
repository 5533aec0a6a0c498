"""Files people send to the agents (images, voice, documents), kept under the data directory by id.

An attachment id is random (128 bits), drawn when the file is stored: it says nothing of the file's
bytes, so it cannot be computed from a file to ask whether that file was ever sent, nor guessed. Each
event's file is stored once (every entity handling the event shares the download) and sits beside a
small JSON record of its name, type, size and the room and event it came from; both are private to the
daemon's user (0600). Tools and hooks read attachments by the ids in `envelope.attachment_ids`, and
`read_attachment` only within the room the file was sent in (`AttachmentInfo.room_id`).

Records stored before ids were random (ids derived from the content) have the same shape and stay
readable, scoped to the room their record names like every other.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from mindroom.private_files import private_dir, write_private_file

__all__ = ["ATTACHMENTS_DIRNAME", "Attachment", "AttachmentInfo", "AttachmentStore"]

ATTACHMENTS_DIRNAME = "attachments"
_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True, slots=True)
class AttachmentInfo:
    """What is known of an attachment besides its bytes."""

    attachment_id: str
    name: str
    mimetype: str | None
    size: int
    room_id: str
    event_id: str


@dataclass(frozen=True, slots=True)
class Attachment:
    """An attachment's bytes and its record."""

    info: AttachmentInfo
    data: bytes


class AttachmentStore:
    """`<data>/attachments/<id>` and `<id>.json`."""

    def __init__(self, storage_root: Path) -> None:
        self.root = Path(storage_root) / ATTACHMENTS_DIRNAME

    def put(self, data: bytes, *, name: str, mimetype: str | None, room_id: str, event_id: str) -> AttachmentInfo:
        """Store `data` under a new random id and return its record."""
        attachment_id = secrets.token_hex(16)
        info = AttachmentInfo(attachment_id, name, mimetype, len(data), room_id, event_id)
        private_dir(self.root)
        write_private_file(self.root / attachment_id, data, durable=False)
        record = {**asdict(info), "stored_at": time.time()}
        write_private_file(self.root / f"{attachment_id}.json", json.dumps(record) + "\n", durable=False)
        return info

    def info(self, attachment_id: str) -> AttachmentInfo | None:
        """The record of an attachment; None for an unknown or malformed id."""
        if not _ID.match(attachment_id):
            return None
        try:
            record = json.loads((self.root / f"{attachment_id}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        fields = {name: record.get(name) for name in AttachmentInfo.__dataclass_fields__}
        return AttachmentInfo(**fields)

    def read(self, attachment_id: str) -> Attachment | None:
        """An attachment's bytes and record; None when there is no such attachment."""
        info = self.info(attachment_id)
        if info is None:
            return None
        try:
            return Attachment(info, (self.root / attachment_id).read_bytes())
        except OSError:
            return None
