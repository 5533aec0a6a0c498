"""`mindroom chat`: talk to the agents from a terminal as the configured human user.

A message you type opens a thread; what you type next continues it (`/new` starts another). Agents'
answers are shown as they stream (they arrive as a message and then edits of it).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from mindroom.errors import MindroomError
from mindroom.homeserver.embedded import embedded_connection
from mindroom.matrix import MatrixEvent, MatrixEventKind, MatrixUserClient
from mindroom.matrix.delivery import STREAM_CURSOR

if TYPE_CHECKING:
    from mindroom.cli.common import CliPaths

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "SETTLE_S",
    "ChatError",
    "ChatLogin",
    "Reply",
    "ReplyBoard",
    "TerminalChat",
    "resolve_login",
]

"""What the daemon appends to an answer while it is still streaming (see `mindroom.bots.turn`)."""

SETTLE_S = 1.0
DEFAULT_TIMEOUT_S = 120.0
_HELP = "Type a message and press Enter. /new starts a new thread, /quit (or Ctrl+D) leaves. Mention with @name."


class ChatError(MindroomError):
    """The chat cannot start; the message says what to set."""


@dataclass(frozen=True, slots=True)
class ChatLogin:
    """Where and as whom the chat signs in."""

    url: str
    user_id: str
    password: str = field(repr=False)


def resolve_login(
    env: Mapping[str, str],
    storage_root: Path,
    *,
    homeserver: str | None = None,
    user: str | None = None,
    password: str | None = None,
    searched: CliPaths | None = None,
) -> ChatLogin:
    """Options first, then `MATRIX_HOMESERVER`/`MINDROOM_USER`/`MINDROOM_USER_PASSWORD`, then the embedded account
    (of the daemon whose data directory is `storage_root`; `searched` says how it was found, for the error)."""
    embedded = embedded_connection(storage_root)
    url = homeserver or env.get("MATRIX_HOMESERVER") or (embedded.url if embedded else None)
    if not url:
        where = searched.data_dir() if searched is not None else str(storage_root)
        fix = f", or {searched.data_dir_fix()}" if searched is not None else ""
        msg = (
            f"no homeserver: no embedded homeserver has run with the data dir {where}; start `mindroom run`{fix},"
            " or set MATRIX_HOMESERVER"
        )
        raise ChatError(msg)
    user_id = user or env.get("MINDROOM_USER") or (embedded.user_id if embedded else None)
    secret = password or env.get("MINDROOM_USER_PASSWORD")
    if secret is None and embedded is not None and embedded.url == url and user_id == embedded.user_id:
        secret = embedded.password
    if not user_id or not secret:
        msg = "no user or password: set MINDROOM_USER and MINDROOM_USER_PASSWORD (or pass --user/--password)"
        raise ChatError(msg)
    return ChatLogin(url.rstrip("/"), user_id, secret)


@dataclass(slots=True)
class Reply:
    """One answer in the thread, as last seen."""

    event_id: str
    sender: str
    text: str

    @property
    def streaming(self) -> bool:
        """True while the daemon is still adding to it."""
        return self.text.endswith(STREAM_CURSOR)

    @property
    def shown_text(self) -> str:
        """The text without the streaming cursor."""
        return self.text.removesuffix(STREAM_CURSOR)


class ReplyBoard:
    """The answers to what this user sent in one thread, kept current from sync events (no I/O)."""

    def __init__(self, own_user_id: str) -> None:
        self.own_user_id = own_user_id
        self.thread_root: str | None = None
        self.replies: dict[str, Reply] = {}
        self.last_change = time.monotonic()

    def watch(self, thread_root: str) -> None:
        """Collect the answers that arrive from now on in the thread rooted at `thread_root`."""
        self.thread_root = thread_root
        self.replies = {}
        self.last_change = time.monotonic()

    def feed(self, event: MatrixEvent) -> bool:
        """Apply one event; True when it changed what is shown."""
        if event.sender == self.own_user_id or self.thread_root is None:
            return False
        if event.kind is MatrixEventKind.REDACTION:
            removed = self.replies.pop(event.redacts_event_id or "", None)
            return self._changed(removed is not None)
        if event.kind is not MatrixEventKind.MESSAGE:
            return False
        if event.relation_type == "m.replace":
            target = self.replies.get(event.related_event_id or "")
            new_content = event.content.get("m.new_content")
            body = new_content.get("body") if isinstance(new_content, dict) else None
            if target is None or not isinstance(body, str):
                return False
            target.text = body
            return self._changed(True)
        if event.thread_root != self.thread_root or event.body is None:
            return False
        self.replies[event.event_id] = Reply(event.event_id, event.sender, event.body)
        return self._changed(True)

    def _changed(self, changed: bool) -> bool:
        if changed:
            self.last_change = time.monotonic()
        return changed

    def done(self, settle_s: float = SETTLE_S) -> bool:
        """At least one answer, none still streaming, and quiet for `settle_s`."""
        return (
            bool(self.replies)
            and not any(reply.streaming for reply in self.replies.values())
            and time.monotonic() - self.last_change >= settle_s
        )


class TerminalChat:
    """One signed-in chat session in one room; use `async with`, then `ask()` or `interactive()`."""

    def __init__(self, login: ChatLogin, room: str, console: Console, *, accept_invites_from: str = "") -> None:
        self.login = login
        self.room = room
        self.console = console
        self.client = MatrixUserClient(login.url, login.user_id)
        self.board = ReplyBoard(login.user_id)
        self.room_id = ""
        self._accept_prefix = accept_invites_from
        self._changed = asyncio.Event()
        self._sync: asyncio.Task[None] | None = None

    async def __aenter__(self) -> TerminalChat:
        try:
            await self.client.login(self.login.password)
            self.board.own_user_id = self.client.user_id
            self._sync = asyncio.create_task(
                self.client.run_sync(self._on_event, accept_invite=self._accept), name="chat-sync"
            )
            await self._first_sync()
            self.room_id = await self.client.join(self.room)
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop syncing and sign out."""
        if self._sync is not None:
            self._sync.cancel()
            await asyncio.gather(self._sync, return_exceptions=True)
            self._sync = None
        await self.client.close()

    def _accept(self, inviter: str) -> bool:
        return inviter.removeprefix("@").startswith(self._accept_prefix)

    async def _first_sync(self) -> None:
        assert self._sync is not None
        waiter = asyncio.ensure_future(self.client.first_sync_done())
        await asyncio.wait({waiter, self._sync}, return_when=asyncio.FIRST_COMPLETED)
        if not waiter.done():
            waiter.cancel()
            self._sync.result()  # the sync loop ended: surface why

    async def _on_event(self, event: MatrixEvent) -> None:
        if event.room_id == self.room_id and self.board.feed(event):
            self._changed.set()

    async def _names(self) -> dict[str, str]:
        return {reply.sender: await self.client.display_name(reply.sender) for reply in self.board.replies.values()}

    def _render(self, names: Mapping[str, str]) -> Group:
        lines = []
        for reply in self.board.replies.values():
            line = Text()
            line.append(names.get(reply.sender, reply.sender), style="bold cyan")
            line.append(": ")
            line.append(reply.shown_text)
            if reply.streaming:
                line.append(STREAM_CURSOR, style="dim")
            lines.append(line)
        return Group(*lines) if lines else Group(Text("…", style="dim"))

    async def ask(self, text: str, *, thread_root: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> str:
        """Send `text` (in `thread_root`'s thread when given), show the answers live; returns the thread root."""
        event_id = await self.client.send_message(self.room_id, text, thread_root=thread_root)
        root = thread_root or event_id
        self.board.watch(root)
        deadline = time.monotonic() + timeout_s
        if self.console.is_terminal:
            with Live(self._render({}), console=self.console, auto_refresh=False) as live:
                while await self._wait_for_change(deadline):
                    live.update(self._render(await self._names()), refresh=True)
        else:  # a pipe or file gets the final answers only, one line each
            while await self._wait_for_change(deadline):
                pass
            names = await self._names()
            for reply in self.board.replies.values():
                line = f"{names.get(reply.sender, reply.sender)}: {reply.shown_text}"
                self.console.print(Text(line), soft_wrap=True)
        if not self.board.replies:
            self.console.print(Text(f"(no answer within {timeout_s:.0f} s)", style="yellow"))
        return root

    async def _wait_for_change(self, deadline: float) -> bool:
        """Wait up to 0.2 s for news; False once the answers are complete or time is up."""
        if self.board.done() or time.monotonic() >= deadline:
            return False
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.2):
                await self._changed.wait()
        return True

    @property
    def answers(self) -> list[Reply]:
        """The answers to the last `ask()`."""
        return list(self.board.replies.values())

    async def interactive(self) -> None:
        """Read lines from the terminal until /quit or end of input."""
        self.console.print(Text(_HELP, style="dim"))
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        fd = sys.stdin.fileno()

        def readable() -> None:
            line = sys.stdin.readline()
            lines.put_nowait(line if line else None)

        loop.add_reader(fd, readable)
        thread_root: str | None = None
        try:
            while True:
                self.console.print(Text("you> ", style="bold green"), end="")
                line = await lines.get()
                if line is None or line.strip() in ("/quit", "/exit"):
                    self.console.print()
                    return
                text = line.strip()
                if text == "/new":
                    thread_root = None
                    self.console.print(Text("(new thread)", style="dim"))
                elif text == "/help":
                    self.console.print(Text(_HELP, style="dim"))
                elif text:
                    thread_root = await self.ask(text, thread_root=thread_root)
        finally:
            loop.remove_reader(fd)
