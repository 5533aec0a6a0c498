"""`MatrixBotClient`: one bot's Matrix account (login, rooms, messages, room state, sync) with no nio in its API."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nio

from mindroom.logging_config import get_logger
from mindroom.matrix.content import edit_content, message_content, reaction_content
from mindroom.matrix.credentials import DEFAULT_ACCOUNT_PREFIX, SyncTokenStore, bot_localpart
from mindroom.matrix.crypto.account_keys import KeyStatus
from mindroom.matrix.crypto.device_setup import DeviceSetup
from mindroom.matrix.crypto.encryption import DeviceCrypto
from mindroom.matrix.crypto.recovery_key import RecoveryKeys
from mindroom.matrix.crypto.store import CRYPTO_DB_NAME, PICKLE_KEY, CryptoStore
from mindroom.matrix.crypto.undecrypted import SenderCheck, SyncDecryption, is_encrypted
from mindroom.matrix.crypto.unreadable_notices import UnreadableNotices
from mindroom.matrix.errors import MatrixRequestError
from mindroom.matrix.events import MatrixEvent, event_from_raw
from mindroom.matrix.inbound import EventHandler, InviteHandler
from mindroom.matrix.login import BotAccount, obtain_session
from mindroom.matrix.media import MediaMethods
from mindroom.matrix.rooms import RoomMethods
from mindroom.matrix.sync import SyncLoop
from mindroom.matrix.transport import JsonTransport, guard_transport, quote_path, send_room_event
from mindroom.state.crypto import CryptoVault
from mindroom.state.tokens import SyncTokens

if TYPE_CHECKING:
    from mindroom.matrix.appservice.server import Appservice

__all__ = ["MatrixBotClient"]

logger = get_logger(__name__)

_REQUEST_TIMEOUT_S = 30.0
_ROOMS_PATH = "/_matrix/client/v3/rooms/"


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
        crypto_vault: CryptoVault | None = None,
        recovery_keys: RecoveryKeys | None = None,
        appservice: Appservice | None = None,
    ) -> None:
        """`sync_tokens` and `crypto_vault`: the state's sync positions and crypto items when they are not files
        under `storage_root` (PostgreSQL); `recovery_keys`: where the recovery key comes from (default: the file
        under `storage_root` only); `appservice`: the daemon's appservice, when events come in its transactions
        instead of this account's own sync."""
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
        self._device = DeviceSetup(
            self._nio,
            self._transport,
            self._account,
            storage_root,
            vault=crypto_vault,
            recovery=recovery_keys or RecoveryKeys(storage_root),
            new_device=new_crypto_device,
        )
        self._notices = UnreadableNotices(self, account_prefix)
        self._tokens: SyncTokens = SyncTokenStore(storage_root) if sync_tokens is None else sync_tokens
        self._first_sync = asyncio.Event()
        self._user_id: str | None = None
        self._syncing = False
        self._started_ms = int(time.time() * 1000)
        self._appservice = appservice
        self._registered = False

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
        """The bot's crypto store file with state in SQLite (`<data>/crypto/<bot>/crypto.db`)."""
        return self._device.directory / CRYPTO_DB_NAME

    @property
    def crypto_location(self) -> str:
        """Where the device's crypto state is: that folder, or the state's database."""
        return self._device.location

    @property
    def key_status(self) -> KeyStatus | None:
        """Cross-signing and key backup as the last check found them (None before `login()`)."""
        return self._device.keys.status if self._device.keys is not None else None

    @property
    def started_ms(self) -> int:
        """When this client was made (ms since the epoch): older unreadable messages get no notice."""
        return self._started_ms

    # -- login ---------------------------------------------------------------------------------------

    async def login(self) -> str:
        """Reuse the stored token, else log in by password, else register via the shared secret; returns the user id.

        Then open the device's crypto state and upload its keys, and check the account's cross-signing and key
        backup. A store that is lost while the device has published keys raises `MatrixCryptoStoreError` unless
        the backup restores it or the client was made with `new_crypto_device`; crypto state the recovery key
        does not open raises `MatrixRecoveryError`.
        """
        device = self._device
        await device.open_vault()
        outcome = await obtain_session(self._nio, self._transport, device.credentials, self._account)
        credentials = outcome.credentials
        assert credentials.device_id is not None
        assert credentials.access_token is not None
        self._nio.restore_login(credentials.user_id, credentials.device_id, credentials.access_token)
        if outcome.method != "stored_token":
            device.credentials.save(self._bot, credentials)
        password = credentials.password or self._account.password
        credentials = await device.open_device(credentials, password)
        await self._crypto.maintain()  # device and one-time keys are on the server before anyone looks
        self._user_id = credentials.user_id
        await device.secure(password)
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
        if self._appservice is not None:
            # From now on transactions about this account wait for it; its rooms tell which ones those are.
            router = self._appservice.router
            router.register(credentials.user_id)
            self._registered = True
            router.set_rooms(credentials.user_id, await self.joined_rooms())
        return credentials.user_id

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

    async def run_sync(
        self,
        handler: EventHandler,
        *,
        on_invite: InviteHandler,
        settle_s: float = 0.0,
        authorized: SenderCheck | None = None,
    ) -> None:
        """Receive until cancelled: deliver new timeline events to `handler`, answer invites with `on_invite`.

        Events come from this account's own sync, or in appservice mode from the daemon's transactions.

        The first run without a stored token skips the backlog. The token is stored after a batch was
        handled, so a batch cut short by cancellation or a crash is delivered again on the next run.
        With `settle_s`, the next long-poll after a batch that brought room events starts that much later.
        Only senders `authorized` in a room get key requests and notices for the events the bot cannot read.
        """
        if self._syncing:
            msg = f"bot {self._bot!r} is already syncing"
            raise RuntimeError(msg)
        self._syncing = True
        await self._device.reload()
        decryption = SyncDecryption(
            self._crypto,
            self._bot,
            self._notices.answer,
            authorized=authorized,
            restored_at_ms=self._device.restored_at_ms,
        )
        logger.info("receiving", agent=self._bot, delivery="sync" if self._appservice is None else "appservice")
        try:
            if self._appservice is not None:
                from mindroom.matrix.appservice.inbox import BotInbox  # appservice mode only

                inbox = BotInbox(
                    bot_name=self._bot,
                    user_id=self.user_id,
                    device_id=self.device_id or "",
                    transport=self._transport,
                    decryption=decryption,
                    handler=handler,
                    on_invite=on_invite,
                    join=self.join,
                    leave=self.leave,
                )
                await self._appservice.serve(inbox, self._tokens, self._first_sync)
                return
            loop = SyncLoop(
                bot_name=self._bot,
                user_id=self.user_id,
                transport=self._transport,
                tokens=self._tokens,
                join=self.join,
                leave=self.leave,
                first_sync=self._first_sync,
                decryption=decryption,
                settle_s=settle_s,
            )
            await loop.run(handler, on_invite)
        finally:
            self._syncing = False

    async def first_sync_done(self) -> None:
        """Wait until the first sync of `run_sync` has been handled."""
        await self._first_sync.wait()

    @property
    def has_synced(self) -> bool:
        """True once the first sync has been handled."""
        return self._first_sync.is_set()

    async def close(self) -> None:
        """Back up pending room keys (briefly), close the HTTP session; the stored credentials stay valid."""
        if self._registered and self._appservice is not None:
            self._registered = False
            self._appservice.router.release(self.user_id)
        with contextlib.suppress(Exception):  # closing must not fail on a homeserver that went away
            await self._device.close()
        await self._nio.close()
