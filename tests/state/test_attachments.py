"""The attachment store: random ids, one stored copy per event, private files."""

from __future__ import annotations

import hashlib
import stat

from mindroom.state.attachments import ATTACHMENTS_DIRNAME, AttachmentStore


def test_attachments_id_is_not_derived_from_the_content(tmp_path):
    """An id computed from a file's bytes would tell anyone holding the file whether it was ever sent."""
    store = AttachmentStore(tmp_path)
    data = b"the same contract\n"

    first = store.put(data, name="a.txt", mimetype="text/plain", room_id="!dm:localhost", event_id="$1")
    second = store.put(data, name="a.txt", mimetype="text/plain", room_id="!lobby:localhost", event_id="$2")

    digest = hashlib.sha256(data).hexdigest()
    assert first.attachment_id != second.attachment_id
    assert digest[:32] not in {first.attachment_id, second.attachment_id}
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in (first.attachment_id, second.attachment_id))


def test_attachments_each_copy_keeps_the_room_it_came_from(tmp_path):
    store = AttachmentStore(tmp_path)
    data = b"same bytes"

    dm = store.put(data, name="a.txt", mimetype=None, room_id="!dm:localhost", event_id="$1")
    lobby = store.put(data, name="b.txt", mimetype=None, room_id="!lobby:localhost", event_id="$2")

    dm_read, lobby_read = store.read(dm.attachment_id), store.read(lobby.attachment_id)
    assert dm_read is not None and lobby_read is not None
    assert (dm_read.info.room_id, dm_read.info.name, dm_read.data) == ("!dm:localhost", "a.txt", data)
    assert (lobby_read.info.room_id, lobby_read.info.name) == ("!lobby:localhost", "b.txt")


def test_attachments_files_are_private(tmp_path):
    store = AttachmentStore(tmp_path)
    info = store.put(b"x", name="x", mimetype=None, room_id="!r:localhost", event_id="$1")

    folder = tmp_path / ATTACHMENTS_DIRNAME
    for path in (folder / info.attachment_id, folder / f"{info.attachment_id}.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
