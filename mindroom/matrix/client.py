"""`MatrixBotClient`: one bot's Matrix account (login, rooms, messages, room state, sync) with no nio in its API."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import nio

from mindroom.logging_config import get_logger
from mindroom.matrix.content import edit_content, message_content, reaction_content
from mindroom.matrix.credentials import DEFAULT_ACCOUNT_PREFIX, CredentialStore, SyncTokenStore, bot_localpart
from mindroom.matrix.errors import MatrixRequestError
from mindroom.matrix.events import MatrixEvent, event_from_raw
from mindroom.matrix.login import BotAccount, obtain_session
from mindroom.matrix.sync import EventHandler, InviteHandler, SyncLoop
from mindroom.matrix.transport import JsonTransport, guard_transport, quote_path

__all__ = ["MatrixBotClient"]

logger = get_logger(__name__)

_T = TypeVar("_T")

_REQUEST_TIMEOUT_S = 30.0
_ROOMS_PATH = "/_matrix/client/v3/rooms/"
_RACE_JOIN_ATTEMPTS = 20
_RACE_JOIN_DELAY_S = 0.25


def _raise_for_error(response: Any, action: str) -> None:
    if isinstance(response, nio.ErrorResponse):
        status = getattr(getattr(response, "transport_response", None), "status", None)
        raise MatrixRequestError(action, response.status_code, str(response.message or ""), status)


class MatrixBotClient:
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
    ) -> None:
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
            encryption_enabled=False,
            store_sync_tokens=False,
        )
        self._nio = nio.AsyncClient(homeserver_url.rstrip("/"), config=config)
        self._transport = JsonTransport(self._nio)
        self._credentials = CredentialStore(storage_root)
        self._tokens = SyncTokenStore(storage_root)
        self._first_sync = asyncio.Event()
        self._user_id: str | None = None
        self._syncing = False

    @property
    def bot_name(self) -> str:
        """The bot's name in the config (`mindroom_<bot_name>` is its localpart)."""
        return self._bot

    @property
    def server_name(self) -> str:
        """The Matrix server name used for bare room keys and the bot's user id."""
        return self._server_name

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

    async def _call(self, awaitable: Awaitable[_T], action: str) -> _T:
        response = await guard_transport(awaitable, action)
        _raise_for_error(response, action)
        return response

    # -- login ---------------------------------------------------------------------------------------

    async def login(self) -> str:
        """Reuse the stored token, else log in by password, else register via the shared secret; returns the user id."""
        outcome = await obtain_session(self._nio, self._transport, self._credentials, self._account)
        credentials = outcome.credentials
        assert credentials.device_id is not None
        assert credentials.access_token is not None
        self._nio.restore_login(credentials.user_id, credentials.device_id, credentials.access_token)
        if outcome.method != "stored_token":
            self._credentials.save(self._bot, credentials)
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

    async def ensure_display_name(self, name: str) -> None:
        """Set the bot's display name unless it already is `name`."""
        response = await guard_transport(self._nio.get_displayname(self.user_id), "get display name")
        current = None if isinstance(response, nio.ErrorResponse) else response.displayname
        if current != name:
            await self._call(self._nio.set_displayname(name), "set display name")

    # -- rooms ---------------------------------------------------------------------------------------

    def room_alias(self, key: str) -> str:
        """`#alias:server` for a bare key like `lobby`; full aliases pass through."""
        return key if key.startswith("#") else f"#{key}:{self._server_name}"

    async def resolve_room(self, key_or_id: str) -> str | None:
        """The room id for `!id`, `#alias:server` or a bare key (`lobby` -> `#lobby:<server>`); None if unknown."""
        if key_or_id.startswith("!"):
            return key_or_id
        response = await guard_transport(self._nio.room_resolve_alias(self.room_alias(key_or_id)), "resolve alias")
        if isinstance(response, nio.RoomResolveAliasResponse):
            return str(response.room_id)
        return None

    async def ensure_room(
        self, key: str, *, name: str | None = None, topic: str | None = None, invite: Sequence[str] = ()
    ) -> str:
        """Join the room behind `key` or create it under that alias (members may invite); invite `invite`.

        When another bot creates the same alias first, this one joins theirs, which needs that bot's
        invite: list every bot of the room in `invite`.
        """
        room_id = await self.resolve_room(key)
        if room_id is not None:
            room_id = await self.join(room_id)
        else:
            alias = self.room_alias(key)
            localpart, _, alias_server = alias[1:].partition(":")
            if alias_server != self._server_name:
                room_id = await self.join(alias)  # another server's alias: joining it is all we can do
            else:
                room_id, created = await self._create_or_find(alias, localpart, name, topic)
                if not created:
                    room_id = await self._join_created_elsewhere(room_id)
        await self._invite_missing(room_id, invite)
        return room_id

    async def _create_or_find(
        self, alias: str, localpart: str, name: str | None, topic: str | None
    ) -> tuple[str, bool]:
        response = await guard_transport(
            self._nio.room_create(
                alias=localpart,
                name=name,
                topic=topic,
                preset=nio.RoomPreset.private_chat,
                power_level_override={"invite": 0},
            ),
            "create room",
        )
        if isinstance(response, nio.RoomCreateResponse):
            logger.info("room created", agent=self._bot, room_id=response.room_id, alias=alias)
            return str(response.room_id), True
        # Another bot may have taken the alias between our lookup and our create (Synapse answers
        # M_ROOM_IN_USE or, when both creates overlap, M_UNKNOWN): join theirs.
        room_id = await self.resolve_room(alias)
        if room_id is None:
            _raise_for_error(response, "create room")
            raise MatrixRequestError("create room", None, f"no room for {alias}")
        logger.info("room alias taken; using its room", agent=self._bot, room_id=room_id, alias=alias)
        return room_id, False

    async def _join_created_elsewhere(self, room_id: str) -> str:
        """Join a room another bot is still creating: its invite, or the room itself, may not be there yet."""
        for _ in range(_RACE_JOIN_ATTEMPTS - 1):
            with contextlib.suppress(MatrixRequestError):
                return await self.join(room_id)
            await asyncio.sleep(_RACE_JOIN_DELAY_S)
        return await self.join(room_id)

    async def _invite_missing(self, room_id: str, user_ids: Sequence[str]) -> None:
        if not user_ids:
            return
        members = await self.get_room_state(room_id, "m.room.member") or {}
        for user_id in user_ids:
            membership = members.get(user_id, {}).get("membership")
            if user_id == self._user_id or membership in {"join", "invite"}:
                continue
            try:
                await self.invite(room_id, user_id)
            except MatrixRequestError as exc:
                logger.warning(
                    "inviting a user failed", agent=self._bot, room_id=room_id, user_id=user_id, error=str(exc)
                )

    async def join(self, room_id_or_alias: str) -> str:
        """Join a room by id or alias; returns the room id."""
        response = await self._call(self._nio.join(room_id_or_alias), "join")
        return str(response.room_id)

    async def invite(self, room_id: str, user_id: str) -> None:
        """Invite `user_id`; inviting someone already in the room is not an error."""
        response = await guard_transport(self._nio.room_invite(room_id, user_id), "invite")
        if isinstance(response, nio.ErrorResponse) and "already in the room" in str(response.message):
            return
        _raise_for_error(response, "invite")

    async def leave(self, room_id: str) -> None:
        """Leave a room, or reject an invite to it."""
        await self._call(self._nio.room_leave(room_id), "leave")

    async def joined_rooms(self) -> list[str]:
        """The ids of the rooms the bot has joined."""
        response = await self._call(self._nio.joined_rooms(), "joined rooms")
        return [str(room_id) for room_id in response.rooms]

    async def room_members(self, room_id: str) -> list[str]:
        """The user ids of the joined members of a room."""
        response = await self._call(self._nio.joined_members(room_id), "joined members")
        return [str(member.user_id) for member in response.members]

    # -- messages ------------------------------------------------------------------------------------

    async def send_event(
        self, room_id: str, event_type: str, content: Mapping[str, Any], *, txn_id: str | None = None
    ) -> str:
        """Send any room event; returns its event id."""
        # The same `txn_id` on a retry makes the homeserver return the first send instead of a duplicate.
        sending = self._nio.room_send(room_id, event_type, dict(content), tx_id=txn_id)
        response = await self._call(sending, "send " + event_type)
        return str(response.event_id)

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
        return event_from_raw(room_id, reply.body) if reply.ok else None

    # -- room state ----------------------------------------------------------------------------------

    async def get_room_state(
        self, room_id: str, event_type: str, state_key: str | None = None
    ) -> dict[str, Any] | None:
        """With `state_key`: that event's content; without: `{state_key: content}` of the type. None on error."""
        if state_key is not None:
            path = f"{_ROOMS_PATH}{quote_path(room_id)}/state/{quote_path(event_type)}/{quote_path(state_key)}"
            reply = await self._transport.request("GET", path)
            return reply.body if reply.ok and isinstance(reply.body, dict) else None
        reply = await self._transport.request("GET", f"{_ROOMS_PATH}{quote_path(room_id)}/state")
        if not reply.ok or not isinstance(reply.body, list):
            return None
        return {
            event["state_key"]: event.get("content") if isinstance(event.get("content"), dict) else {}
            for event in reply.body
            if isinstance(event, dict) and event.get("type") == event_type and isinstance(event.get("state_key"), str)
        }

    async def put_room_state(self, room_id: str, event_type: str, state_key: str, content: Mapping[str, Any]) -> bool:
        """Set a state event; False when the homeserver refuses (e.g. too little power)."""
        path = f"{_ROOMS_PATH}{quote_path(room_id)}/state/{quote_path(event_type)}/{quote_path(state_key)}"
        reply = await self._transport.request("PUT", path, body=dict(content))
        if not reply.ok:
            logger.info("room state refused", agent=self._bot, room_id=room_id, type=event_type, errcode=reply.errcode)
        return reply.ok

    # -- sync ----------------------------------------------------------------------------------------

    async def run_sync(self, handler: EventHandler, *, on_invite: InviteHandler) -> None:
        """Sync until cancelled: deliver new timeline events to `handler`, answer invites with `on_invite`.

        The first run without a stored token skips the backlog. The token is stored after a batch was
        handled, so a batch cut short by cancellation or a crash is delivered again on the next run.
        """
        if self._syncing:
            msg = f"bot {self._bot!r} is already syncing"
            raise RuntimeError(msg)
        self._syncing = True
        try:
            loop = SyncLoop(
                bot_name=self._bot,
                user_id=self.user_id,
                transport=self._transport,
                tokens=self._tokens,
                join=self.join,
                leave=self.leave,
                first_sync=self._first_sync,
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
        """Close the HTTP session; the stored credentials stay valid for the next start."""
        await self._nio.close()
