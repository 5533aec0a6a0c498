"""`MatrixUserClient`: a human's Matrix session (terminal chat, smoke tests) with no nio in its API.

Each session is a new device with its own crypto store, so it reads and writes encrypted rooms. The store
lives in a temporary folder unless one is given: `close()` signs the device out, which deletes its keys on
the homeserver, so nothing in the store would be of use to a later session.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import nio

from mindroom.logging_config import get_logger
from mindroom.matrix.content import message_content
from mindroom.matrix.credentials import SyncTokenStore
from mindroom.matrix.crypto.device import load_crypto_store
from mindroom.matrix.crypto.encryption import DeviceCrypto
from mindroom.matrix.crypto.store import CRYPTO_DB_NAME, PICKLE_KEY, CryptoStore
from mindroom.matrix.crypto.undecrypted import SyncDecryption
from mindroom.matrix.errors import MatrixLoginError, MatrixRequestError
from mindroom.matrix.sync import EventHandler, SyncLoop
from mindroom.matrix.transport import JsonTransport, guard_transport, send_room_event

__all__ = ["MatrixUserClient"]

logger = get_logger(__name__)

_REQUEST_TIMEOUT_S = 30.0
_POLL_TIMEOUT_MS = 10_000


class _MemoryTokens(SyncTokenStore):
    """Sync tokens kept in memory: a chat session starts from now and leaves nothing on disk."""

    def __init__(self) -> None:
        super().__init__(Path())
        self._token: str | None = None

    def load(self, bot_name: str) -> str | None:
        """The token of this session."""
        return self._token

    def save(self, bot_name: str, token: str) -> None:
        """Remember the token."""
        self._token = token

    def clear(self, bot_name: str) -> None:
        """Forget the token."""
        self._token = None


def _raise_for_error(response: object, action: str) -> None:
    if isinstance(response, nio.ErrorResponse):
        status = getattr(getattr(response, "transport_response", None), "status", None)
        raise MatrixRequestError(action, response.status_code, str(response.message or ""), status)


class MatrixUserClient:
    """A person's account: `login()`, run `run_sync()` in a task you own, `send_message()`, `close()`."""

    def __init__(self, homeserver_url: str, user_id: str, *, crypto_dir: Path | None = None) -> None:
        config = nio.AsyncClientConfig(
            max_timeouts=1,
            request_timeout=_REQUEST_TIMEOUT_S,
            encryption_enabled=True,
            store=CryptoStore,
            store_name=CRYPTO_DB_NAME,
            pickle_key=PICKLE_KEY,
            store_sync_tokens=False,
        )
        self.user_id = user_id
        self._nio = nio.AsyncClient(homeserver_url.rstrip("/"), user_id, config=config, store_path="")
        self._transport = JsonTransport(self._nio)
        self._crypto = DeviceCrypto(self._nio, self._transport, "chat")
        self._crypto_dir = crypto_dir
        self._scratch: Path | None = None
        self._first_sync = asyncio.Event()
        self._display_names: dict[str, str] = {}
        self._logged_in = False

    async def login(self, password: str, device_name: str = "mindroom chat") -> str:
        """Log in with a password as a new device and upload its keys; returns the user id.

        Raises `MatrixLoginError` when refused.
        """
        response = await guard_transport(self._nio.login(password, device_name=device_name), "login")
        if not isinstance(response, nio.LoginResponse):
            raise MatrixLoginError(self.user_id, [f"password login failed ({response.status_code or 'error'})"])
        self.user_id = response.user_id
        self._logged_in = True
        crypto_dir = self._crypto_dir
        if crypto_dir is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="mindroom-chat-"))
            crypto_dir = self._scratch / "crypto"
        load_crypto_store(self._nio, crypto_dir)
        await self._crypto.maintain()
        return self.user_id

    @property
    def device_id(self) -> str | None:
        """The device id of this session."""
        device: str | None = self._nio.device_id or None
        return device

    async def resolve_room(self, alias: str) -> str | None:
        """The room id behind `#alias:server`, or None."""
        response = await guard_transport(self._nio.room_resolve_alias(alias), "resolve alias")
        return str(response.room_id) if isinstance(response, nio.RoomResolveAliasResponse) else None

    async def join(self, room_id_or_alias: str) -> str:
        """Join a room (accepting its invite); returns the room id."""
        response = await guard_transport(self._nio.join(room_id_or_alias), "join")
        _raise_for_error(response, "join")
        return str(response.room_id)

    async def leave(self, room_id: str) -> None:
        """Leave a room or decline its invite."""
        response = await guard_transport(self._nio.room_leave(room_id), "leave")
        _raise_for_error(response, "leave")

    async def joined_rooms(self) -> list[str]:
        """The ids of the rooms this user has joined."""
        response = await guard_transport(self._nio.joined_rooms(), "joined rooms")
        _raise_for_error(response, "joined rooms")
        return [str(room_id) for room_id in response.rooms]

    async def send_message(self, room_id: str, body: str, *, thread_root: str | None = None) -> str:
        """Send a text message (encrypted in an encrypted room), in a thread when `thread_root` is given.

        Returns its event id; raises `MatrixEncryptionError` rather than send plaintext into an encrypted room.
        """
        event_type, content = "m.room.message", message_content(body, thread_root=thread_root)
        if await self._crypto.room_encrypted(room_id):
            event_type, content = await self._crypto.encrypt(room_id, event_type, content)
        return await send_room_event(self._transport, room_id, event_type, content, uuid.uuid4().hex)

    async def display_name(self, user_id: str) -> str:
        """A user's display name (cached), else their localpart."""
        cached = self._display_names.get(user_id)
        if cached is not None:
            return cached
        response = await guard_transport(self._nio.get_displayname(user_id), "get display name")
        name = getattr(response, "displayname", None) if not isinstance(response, nio.ErrorResponse) else None
        resolved = str(name) if name else user_id.removeprefix("@").split(":", 1)[0]
        self._display_names[user_id] = resolved
        return resolved

    async def run_sync(self, handler: EventHandler, *, accept_invite: Callable[[str], bool] | None = None) -> None:
        """Sync until cancelled: events after the first sync go to `handler`; invites are accepted if allowed."""

        async def on_invite(room_id: str, inviter: str) -> bool:
            return accept_invite is None or accept_invite(inviter)

        loop = SyncLoop(
            bot_name="chat",
            user_id=self.user_id,
            transport=self._transport,
            tokens=_MemoryTokens(),
            join=self.join,
            leave=self.leave,
            first_sync=self._first_sync,
            poll_timeout_ms=_POLL_TIMEOUT_MS,
            decryption=SyncDecryption(self._crypto, "chat"),
        )
        await loop.run(handler, on_invite)

    async def first_sync_done(self) -> None:
        """Wait until the first sync of `run_sync` has been handled (later events are delivered)."""
        await self._first_sync.wait()

    async def close(self, *, logout: bool = True) -> None:
        """Log the session out (so chat runs leave no stale devices), close the HTTP session, drop a scratch store."""
        try:
            if logout and self._logged_in:
                await guard_transport(self._nio.logout(), "logout")
        except Exception as exc:  # closing must not fail because the server went away first
            logger.debug("matrix chat logout failed", error=str(exc))
        finally:
            await self._nio.close()
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None
