"""`MatrixBotClient`: one bot's Matrix account (login, rooms, messages, room state, sync) with no nio in its API."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import nio

from mindroom.logging_config import get_logger
from mindroom.matrix.content import edit_content, message_content, reaction_content
from mindroom.matrix.credentials import (
    DEFAULT_ACCOUNT_PREFIX,
    BotCredentials,
    CredentialStore,
    SyncTokenStore,
    bot_localpart,
)
from mindroom.matrix.crypto import DeviceCrypto
from mindroom.matrix.crypto_device import load_crypto_store, open_crypto_store
from mindroom.matrix.crypto_store import (
    CRYPTO_DB_NAME,
    PICKLE_KEY,
    CryptoStore,
    CryptoStoreReport,
    crypto_store_dir,
    set_store_aside,
)
from mindroom.matrix.errors import MatrixCryptoStoreError, MatrixRequestError
from mindroom.matrix.events import MatrixEvent, event_from_raw
from mindroom.matrix.login import BotAccount, new_device_session, obtain_session
from mindroom.matrix.media import MediaMethods
from mindroom.matrix.notices import UnreadableNotices
from mindroom.matrix.rooms import RoomMethods
from mindroom.matrix.sync import EventHandler, InviteHandler, SyncLoop
from mindroom.matrix.transport import JsonTransport, guard_transport, quote_path, send_room_event
from mindroom.matrix.undecrypted import SyncDecryption, is_encrypted
from mindroom.state.tokens import SyncTokens

__all__ = ["MatrixBotClient"]

logger = get_logger(__name__)

_REQUEST_TIMEOUT_S = 30.0
_ROOMS_PATH = "/_matrix/client/v3/rooms/"
_LOST_STORE_MEANING = (
    "messages encrypted for this device cannot be read without its store, and a new device cannot read them either"
)
_LOST_STORE_FIX = "start once with MINDROOM_NEW_CRYPTO_DEVICE=1 to replace the device (see docs/operations.md)"


class MatrixBotClient(RoomMethods, MediaMethods):
    """One bot's Matrix account: call `login()` first, `close()` last; run `run_sync()` in a task you own."""

    def __init__(
        self,
        bot_name: str,
        homeserver_url: str,
        server_name: str,
        storage_root: Path,
        *,
        registration_shared_secret: str | None = None,
        password: str | None = None,
        display_name: str = "",
        account_prefix: str = DEFAULT_ACCOUNT_PREFIX,
        new_crypto_device: bool = False,
        sync_tokens: SyncTokens | None = None,
    ) -> None:
        """`sync_tokens`: the state's sync positions, when they are not files under `storage_root` (PostgreSQL)."""
        bot_localpart(bot_name, account_prefix)  # rejects invalid localparts before anything touches disk
        self._bot = bot_name
        self._server_name = server_name
        self._account = BotAccount(
            bot_name=bot_name,
            server_name=server_name,
            password=password,
            registration_shared_secret=registration_shared_secret,
            display_name=display_name,
            account_prefix=account_prefix,
        )
        config = nio.AsyncClientConfig(
            max_timeouts=1,  # one immediate retry covers a stale keep-alive connection; then it raises
            max_limit_exceeded=5,
            request_timeout=_REQUEST_TIMEOUT_S,
            encryption_enabled=True,
            store=CryptoStore,
            store_name=CRYPTO_DB_NAME,
            pickle_key=PICKLE_KEY,
            store_sync_tokens=False,
        )
        # No store path yet: nio would open (and create) the store at the first `restore_login`, before
        # `login()` has checked that the store on disk belongs to this device.
        self._nio = nio.AsyncClient(homeserver_url.rstrip("/"), config=config, store_path="")
        self._transport = JsonTransport(self._nio)
        self._crypto = DeviceCrypto(self._nio, self._transport, bot_name)
        self._crypto_dir = crypto_store_dir(storage_root, bot_name)
        self._new_crypto_device = new_crypto_device
        self._notices = UnreadableNotices(self, account_prefix)
        self._credentials = CredentialStore(storage_root)
        self._tokens: SyncTokens = SyncTokenStore(storage_root) if sync_tokens is None else sync_tokens
        self._first_sync = asyncio.Event()
        self._user_id: str | None = None
        self._syncing = False
        self._started_ms = int(time.time() * 1000)

    @property
    def bot_name(self) -> str:
        """The bot's name in the config (`mindroom_<bot_name>` is its localpart)."""
        return self._bot

    @property
    def server_name(self) -> str:
        """The Matrix server name used for bare room keys and the bot's user id."""
        return self._server_name

    @property
    def account_prefix(self) -> str:
        """The localpart prefix every bot account of this daemon has (`@<prefix><bot_name>:<server_name>`)."""
        return self._account.account_prefix

    @property
    def user_id(self) -> str:
        """The logged-in user id; raises `RuntimeError` before `login()`."""
        if self._user_id is None:
            msg = f"bot {self._bot!r} is not logged in"
            raise RuntimeError(msg)
        return self._user_id

    @property
    def device_id(self) -> str | None:
        """The device id of the current session."""
        device: str | None = self._nio.device_id or None
        return device

    @property
    def crypto_store_path(self) -> Path:
        """The bot's crypto store file (`<data>/crypto/<bot>/crypto.db`)."""
        return self._crypto_dir / CRYPTO_DB_NAME

    @property
    def started_ms(self) -> int:
        """When this client was made (ms since the epoch): older unreadable messages get no notice."""
        return self._started_ms

    # -- login ---------------------------------------------------------------------------------------

    async def login(self) -> str:
        """Reuse the stored token, else log in by password, else register via the shared secret; returns the user id.

        Then open the device's crypto store and upload its keys. A store that is lost while the device has
        published keys raises `MatrixCryptoStoreError`, unless the client was made with `new_crypto_device`.
        """
        outcome = await obtain_session(self._nio, self._transport, self._credentials, self._account)
        credentials = outcome.credentials
        assert credentials.device_id is not None
        assert credentials.access_token is not None
        self._nio.restore_login(credentials.user_id, credentials.device_id, credentials.access_token)
        if outcome.method != "stored_token":
            self._credentials.save(self._bot, credentials)
        lost = await open_crypto_store(self._nio, self._transport, self._crypto_dir, self._bot)
        if lost is not None:
            credentials = await self._replace_lost_device(lost, credentials)
        await self._crypto.maintain()  # device and one-time keys are on the server before anyone looks
        self._user_id = credentials.user_id
        logger.info(
            "logged in",
            agent=self._bot,
            user_id=credentials.user_id,
            device_id=credentials.device_id,
            method=outcome.method,
        )
        if self._account.display_name:
            try:
                await self.ensure_display_name(self._account.display_name)
            except MatrixRequestError as exc:
                logger.warning("display name not set", agent=self._bot, error=str(exc))
        return credentials.user_id

    async def _replace_lost_device(self, lost: CryptoStoreReport, credentials: BotCredentials) -> BotCredentials:
        """Refuse (the default), or sign out the old device, set its store aside and log in as a new device."""
        old_device = credentials.device_id
        if not self._new_crypto_device:
            logger.error(
                "crypto store lost; bot not started",
                agent=self._bot,
                path=str(lost.path),
                device_id=old_device,
                problem=lost.describe(),
                meaning=_LOST_STORE_MEANING,
                fix=_LOST_STORE_FIX,
            )
            raise MatrixCryptoStoreError(self._bot, str(lost.path), lost.describe())
        aside = set_store_aside(self._crypto_dir, "lost")
        # Signing out deletes the old device and its keys on the homeserver, so nobody encrypts for it again.
        await guard_transport(self._nio.logout(), "logout")
        fresh = await new_device_session(self._nio, self._account, credentials.password or self._account.password)
        assert fresh.device_id is not None
        assert fresh.access_token is not None
        self._credentials.save(self._bot, fresh)
        self._nio.restore_login(fresh.user_id, fresh.device_id, fresh.access_token)
        load_crypto_store(self._nio, self._crypto_dir)
        logger.warning(
            "new crypto device replaces a lost one",
            agent=self._bot,
            old_device_id=old_device,
            device_id=fresh.device_id,
            old_store=str(aside) if aside is not None else None,
            meaning="messages encrypted for the old device stay unreadable",
        )
        return fresh

    async def ensure_display_name(self, name: str) -> None:
        """Set the bot's display name unless it already is `name`."""
        response = await guard_transport(self._nio.get_displayname(self.user_id), "get display name")
        current = None if isinstance(response, nio.ErrorResponse) else response.displayname
        if current != name:
            await self._call(self._nio.set_displayname(name), "set display name")

    # -- messages ------------------------------------------------------------------------------------

    async def send_event(
        self, room_id: str, event_type: str, content: Mapping[str, Any], *, txn_id: str | None = None
    ) -> str:
        """Send any room event, encrypted when the room is; returns its event id.

        Raises `MatrixEncryptionError` when an event for an encrypted room cannot be encrypted: it is then
        not sent at all, never in plaintext.
        """
        if await self._crypto.room_encrypted(room_id):
            event_type, content = await self._crypto.encrypt(room_id, event_type, content)
        # The same `txn_id` on a retry makes the homeserver return the first send instead of a duplicate.
        return await send_room_event(self._transport, room_id, event_type, content, txn_id or uuid.uuid4().hex)

    async def room_needs_encryption(self, room_id: str) -> bool:
        """Whether what is sent to `room_id` must be encrypted."""
        return await self._crypto.room_encrypted(room_id)

    async def send_message(
        self,
        room_id: str,
        body: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        extra_content: Mapping[str, Any] | None = None,
        mentions: Sequence[str] | None = None,
        formatted_body: str | None = None,
        msgtype: str = "m.text",
        txn_id: str | None = None,
    ) -> str:
        """Send a message, in a thread when `thread_root` is given (`reply_to` is the fallback reply target)."""
        content = message_content(
            body,
            msgtype=msgtype,
            thread_root=thread_root,
            reply_to=reply_to,
            mentions=mentions,
            formatted_body=formatted_body,
            extra_content=extra_content,
        )
        return await self.send_event(room_id, "m.room.message", content, txn_id=txn_id)

    async def edit_message(
        self,
        room_id: str,
        event_id: str,
        new_body: str,
        *,
        thread_root: str | None = None,
        extra_content: Mapping[str, Any] | None = None,
        mentions: Sequence[str] | None = None,
        formatted_body: str | None = None,
        msgtype: str = "m.text",
        txn_id: str | None = None,
    ) -> str:
        """Replace the text of `event_id` (an `m.replace` edit); returns the edit's event id."""
        content = edit_content(
            event_id,
            new_body,
            msgtype=msgtype,
            thread_root=thread_root,
            mentions=mentions,
            formatted_body=formatted_body,
            extra_content=extra_content,
        )
        return await self.send_event(room_id, "m.room.message", content, txn_id=txn_id)

    async def react(self, room_id: str, event_id: str, key: str) -> str:
        """Annotate `event_id` with `key` (usually an emoji); returns the reaction's event id."""
        return await self.send_event(room_id, "m.reaction", reaction_content(event_id, key))

    async def redact(self, room_id: str, event_id: str, reason: str | None = None) -> str:
        """Redact an event; returns the redaction's event id."""
        response = await self._call(self._nio.room_redact(room_id, event_id, reason), "redact")
        return str(response.event_id)

    async def get_event(self, room_id: str, event_id: str) -> MatrixEvent | None:
        """Fetch one event as the server stores it; None when it is unknown or not visible."""
        path = f"{_ROOMS_PATH}{quote_path(room_id)}/event/{quote_path(event_id)}"
        reply = await self._transport.request("GET", path)
        if not reply.ok:
            return None
        if is_encrypted(reply.body):
            decrypted = self._crypto.decrypt(room_id, reply.body)
            if decrypted is not None:
                return event_from_raw(room_id, decrypted, encrypted=True)
        return event_from_raw(room_id, reply.body)

    # -- sync ----------------------------------------------------------------------------------------

    async def run_sync(self, handler: EventHandler, *, on_invite: InviteHandler, settle_s: float = 0.0) -> None:
        """Sync until cancelled: deliver new timeline events to `handler`, answer invites with `on_invite`.

        The first run without a stored token skips the backlog. The token is stored after a batch was
        handled, so a batch cut short by cancellation or a crash is delivered again on the next run.
        With `settle_s`, the next long-poll after a batch that brought room events starts that much later.
        """
        if self._syncing:
            msg = f"bot {self._bot!r} is already syncing"
            raise RuntimeError(msg)
        self._syncing = True
        self._reload_crypto_store()
        try:
            loop = SyncLoop(
                bot_name=self._bot,
                user_id=self.user_id,
                transport=self._transport,
                tokens=self._tokens,
                join=self.join,
                leave=self.leave,
                first_sync=self._first_sync,
                decryption=SyncDecryption(self._crypto, self._bot, self._notices.answer),
                settle_s=settle_s,
            )
            await loop.run(handler, on_invite)
        finally:
            self._syncing = False

    def _reload_crypto_store(self) -> None:
        """Load the olm machine again from the store before syncing.

        A hot reload starts a new client for a changed bot while the old one still syncs; room keys and
        one-time key use the old one recorded after `login()` loaded the store are on disk, not in memory.
        """
        store = self._nio.store
        if store is None:
            return
        self._nio.store = None
        self._nio.olm = None
        with contextlib.suppress(Exception):  # the connection is dropped either way
            store.database.close()
        self._nio.load_store()

    async def first_sync_done(self) -> None:
        """Wait until the first sync of `run_sync` has been handled."""
        await self._first_sync.wait()

    @property
    def has_synced(self) -> bool:
        """True once the first sync has been handled."""
        return self._first_sync.is_set()

    async def close(self) -> None:
        """Close the HTTP session; the stored credentials stay valid for the next start."""
        await self._nio.close()
