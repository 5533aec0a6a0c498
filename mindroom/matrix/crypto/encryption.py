"""End-to-end encryption of one logged-in device: nio's olm machine, fed from the daemon's own sync.

The sync loop reads plain JSON. `DeviceCrypto` hands nio what its crypto needs from each batch (to-device
events, device list changes, one-time key counts, room state), decrypts `m.room.encrypted` events into the
plain events they carry, and encrypts what is sent into an encrypted room for every device of every member,
unverified ones included. It never falls back to plaintext: a send it cannot encrypt raises
`MatrixEncryptionError`, and a room whose encryption it cannot tell is not sent to either.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from typing import Any

import nio

from mindroom.logging_config import get_logger
from mindroom.matrix.errors import MatrixEncryptionError
from mindroom.matrix.transport import JsonTransport, guard_transport, quote_path

__all__ = ["ENCRYPTED_TYPE", "MEGOLM_ALGORITHM", "DeviceCrypto", "encryption_state_content"]

logger = get_logger(__name__)

ENCRYPTED_TYPE = "m.room.encrypted"
MEGOLM_ALGORITHM = "m.megolm.v1.aes-sha2"
_ROOMS_PATH = "/_matrix/client/v3/rooms/"
_TO_DEVICE_PATH = "/_matrix/client/v3/sendToDevice/m.room.encrypted/"
_UPLOAD_RETRY_S = 60.0
_ENVELOPE_FIELDS = ("event_id", "sender", "origin_server_ts", "unsigned")


def encryption_state_content() -> dict[str, Any]:
    """The content of the `m.room.encryption` state event that turns a room's encryption on."""
    return {"algorithm": MEGOLM_ALGORITHM}


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _crypto_view(batch: Mapping[str, Any]) -> dict[str, Any] | None:
    """The part of a sync batch nio's crypto reads (to-device, device lists, room state); None if it has none.

    Timeline events without a state key are left out: they do not change a room's members or encryption,
    and the encrypted ones are decrypted once, by `DeviceCrypto.decrypt`. Most batches carry only such
    events, and nio's parsing of a batch costs milliseconds, so those batches skip it.
    """
    joined: dict[str, Any] = {}
    for room_id, room in _as_dict(_as_dict(batch.get("rooms")).get("join")).items():
        timeline = _as_dict(_as_dict(room).get("timeline"))
        events = _as_list(timeline.get("events"))
        state_changes = [raw for raw in events if isinstance(raw, dict) and "state_key" in raw]
        state = _as_list(_as_dict(_as_dict(room).get("state")).get("events"))
        if state or state_changes:
            joined[room_id] = {
                "state": {"events": state},
                "timeline": {"events": state_changes, "limited": timeline.get("limited") is True},
            }
    device_lists = _as_dict(batch.get("device_lists"))
    to_device = _as_list(_as_dict(batch.get("to_device")).get("events"))
    if not (joined or to_device or _as_list(device_lists.get("changed")) or _as_list(device_lists.get("left"))):
        return None
    view: dict[str, Any] = {"next_batch": batch.get("next_batch"), "rooms": {"join": joined}}
    for key in ("to_device", "device_lists", "device_one_time_keys_count"):
        if isinstance(batch.get(key), dict):
            view[key] = batch[key]
    return view


class DeviceCrypto:
    """The crypto of one device whose store nio has loaded; every network step goes through `guard_transport`."""

    def __init__(self, client: nio.AsyncClient, transport: JsonTransport, name: str) -> None:
        self._nio = client
        self._transport = transport
        self._name = name
        self._lock = asyncio.Lock()
        self._plain_rooms: set[str] = set()
        self._upload_failed_at = -_UPLOAD_RETRY_S

    @property
    def _olm(self) -> Any:
        olm = self._nio.olm
        if olm is None:
            msg = f"the crypto store of {self._name} is not loaded"
            raise RuntimeError(msg)
        return olm

    # -- the sync side ---------------------------------------------------------------------------------

    async def absorb(self, batch: Mapping[str, Any]) -> None:
        """Feed one sync batch to nio's crypto: room keys, device changes, key counts, room membership.

        nio follows device changes only of members of encrypted rooms it holds; a room it does not hold
        yet (quiet since a restart) gets all its members' devices queried when a send first prepares it.
        """
        view = _crypto_view(batch)
        if view is not None:
            response = nio.SyncResponse.from_dict(view)
            if not isinstance(response, nio.SyncResponse):
                logger.warning("sync batch unusable for encryption", agent=self._name, error=str(response.message))
                return
            await self._nio.receive_response(response)
        olm = self._olm
        count = _as_dict(batch.get("device_one_time_keys_count")).get("signed_curve25519")
        if isinstance(count, int):
            # nio skips a count of 0, which is exactly when new one-time keys are needed most.
            olm.uploaded_key_count = count

    async def maintain(self) -> None:
        """Upload keys, query changed devices, claim keys and send queued to-device messages, as nio asks."""
        async with self._lock:
            client = self._nio
            if client.should_upload_keys and time.monotonic() - self._upload_failed_at >= _UPLOAD_RETRY_S:
                uploaded = await guard_transport(client.keys_upload(), "keys upload")
                if not self._succeeded(uploaded, "keys upload"):
                    self._upload_failed_at = time.monotonic()
            if client.should_query_keys:
                logger.debug("device keys queried", agent=self._name, users=len(client.users_for_key_query))
                self._succeeded(await guard_transport(client.keys_query(), "keys query"), "keys query")
            if client.should_claim_keys:
                claim = client.keys_claim(client.get_users_for_key_claiming())
                self._succeeded(await guard_transport(claim, "keys claim"), "keys claim")
            for message in list(client.outgoing_to_device_messages):
                # nio drops a message from its queue once the homeserver took it; one it refused is dropped
                # here, or it would be offered again after every sync.
                response = await guard_transport(client.to_device(message), "to-device")
                if not self._succeeded(response, "to-device message") and message in client.outgoing_to_device_messages:
                    client.outgoing_to_device_messages.remove(message)

    def _succeeded(self, response: Any, action: str) -> bool:
        if isinstance(response, nio.ErrorResponse):
            logger.warning("encryption request refused", agent=self._name, action=action, error=str(response))
            return False
        return True

    # -- incoming --------------------------------------------------------------------------------------

    def _megolm_event(self, room_id: str, raw: Mapping[str, Any]) -> Any:
        """nio's view of an encrypted event; fills the sender key and device that newer clients leave out."""
        content = dict(_as_dict(raw.get("content")))
        if not isinstance(content.get("sender_key"), str):
            session_id = content.get("session_id")
            known = (s for s in self._olm.inbound_group_store if s.room_id == room_id and s.id == session_id)
            session = next(known, None)
            content["sender_key"] = session.sender_key if session is not None else ""
        content.setdefault("device_id", "")
        event = nio.MegolmEvent.from_dict({**raw, "content": content, "room_id": room_id})
        return event if isinstance(event, nio.MegolmEvent) else None

    def decrypt(self, room_id: str, raw: Mapping[str, Any]) -> dict[str, Any] | None:
        """The plain event an `m.room.encrypted` event carries, or None while its room key is missing."""
        event = self._megolm_event(room_id, raw)
        if event is None:
            return None
        try:
            plain = self._olm.decrypt_megolm_event(event, room_id)
        except nio.EncryptionError:
            return None
        source = _as_dict(getattr(plain, "source", None))
        if not isinstance(source.get("type"), str) or source.get("type") == ENCRYPTED_TYPE:
            return None
        # Who sent it and when is what the homeserver says; only the type and content come from the sender.
        decrypted = {key: raw[key] for key in _ENVELOPE_FIELDS if key in raw}
        decrypted.update(type=source["type"], content=_as_dict(source.get("content")), room_id=room_id)
        return decrypted

    def request_key(self, room_id: str, raw: Mapping[str, Any]) -> bool:
        """Queue a room key request to the sending device (sent by the next `maintain`); False if unusable."""
        event = self._megolm_event(room_id, raw)
        if event is None or not event.session_id or event.session_id in self._olm.outgoing_key_requests:
            return False
        queued = self._olm.outgoing_to_device_messages
        if any(isinstance(m, nio.RoomKeyRequestMessage) and m.session_id == event.session_id for m in queued):
            return False  # several events of one session in one batch: one request
        request = event.as_key_request(event.sender, self._nio.device_id, event.session_id, event.device_id or None)
        self._olm.outgoing_to_device_messages.append(request)
        return True

    # -- outgoing --------------------------------------------------------------------------------------

    async def room_encrypted(self, room_id: str) -> bool:
        """Whether events sent to `room_id` must be encrypted: asked of the homeserver once per room and run."""
        if room_id in self._nio.encrypted_rooms:
            return True
        if room_id in self._plain_rooms:
            return False
        path = f"{_ROOMS_PATH}{quote_path(room_id)}/state/m.room.encryption/"
        reply = await self._transport.request("GET", path)
        if reply.ok:
            self.mark_encrypted(room_id)
            return True
        if reply.errcode == "M_NOT_FOUND":
            # A room that turns encryption on later says so in a sync, which nio records in `encrypted_rooms`.
            self._plain_rooms.add(room_id)
            return False
        if reply.status == 403:
            reply.raise_for_error("send")  # not a member: the send itself would be refused the same way
        raise MatrixEncryptionError(room_id, f"its encryption state is unknown ({reply.errcode or reply.status})")

    def mark_encrypted(self, room_id: str) -> None:
        """Record that `room_id` is encrypted (kept in the store across restarts)."""
        self._nio.encrypted_rooms.add(room_id)
        self._plain_rooms.discard(room_id)
        room = self._nio.rooms.get(room_id)
        if room is not None:
            room.encrypted = True
        if self._nio.store is not None:
            self._nio.store.save_encrypted_rooms({room_id})

    async def encrypt(self, room_id: str, event_type: str, content: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The `m.room.encrypted` type and content for an event in `room_id`, shared with every member's devices."""
        try:
            async with self._lock:
                await self._prepare(room_id)
                encrypted_type, encrypted = self._nio.encrypt(room_id, event_type, dict(content))
        except (nio.LocalProtocolError, nio.EncryptionError, nio.GroupEncryptionError, nio.MembersSyncError) as exc:
            raise MatrixEncryptionError(room_id, str(exc) or type(exc).__name__) from exc
        return str(encrypted_type), dict(encrypted)

    async def _prepare(self, room_id: str) -> None:
        """Members known, their devices queried, and an outbound session shared with all of them."""
        client = self._nio
        room = client.rooms.get(room_id)
        if room is None:
            room = client.rooms[room_id] = nio.MatrixRoom(room_id, client.user_id, True)
        room.encrypted = True
        if not room.members_synced:
            response = await guard_transport(client.joined_members(room_id), "joined members")
            if isinstance(response, nio.ErrorResponse):
                raise MatrixEncryptionError(room_id, f"its members are unknown ({response.status_code})")
        if client.should_query_keys:
            response = await guard_transport(client.keys_query(), "keys query")
            if isinstance(response, nio.ErrorResponse):
                raise MatrixEncryptionError(room_id, f"its members' devices are unknown ({response.status_code})")
        if self._olm.should_share_group_session(room_id):
            await self._share_session(room_id, list(room.users))

    async def _share_session(self, room_id: str, users: list[str]) -> None:
        """Send the room's outbound session to each device; it counts as shared only when every send went out.

        nio's own sharing marks the session shared even when a send failed, and then encrypts with a key
        some members never got; here a failed send raises and the next attempt resumes with the devices left.
        """
        client = self._nio
        olm = self._olm
        missing = client.get_missing_sessions(room_id)
        if missing:
            response = await guard_transport(client.keys_claim(missing), "keys claim")
            if isinstance(response, nio.ErrorResponse):
                raise MatrixEncryptionError(room_id, f"one-time keys could not be claimed ({response.status_code})")
        for sharing_with, to_device in olm.share_group_session_parallel(room_id, users, ignore_unverified_devices=True):
            reply = await self._transport.request("PUT", _TO_DEVICE_PATH + uuid.uuid4().hex, body=to_device)
            if not reply.ok:
                problem = f"the room key was not delivered ({reply.errcode or reply.status})"
                raise MatrixEncryptionError(room_id, problem)
            olm.outbound_group_sessions[room_id].users_shared_with.update(sharing_with)
        olm.outbound_group_sessions[room_id].shared = True
        logger.debug("room key shared", agent=self._name, room_id=room_id, users=len(users))
