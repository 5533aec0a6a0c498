"""`/api/threads`: the threads of the daemon's rooms with their summaries and tags, and their export.

`GET /api/threads` lists a room's latest threads (`room`: key, alias or id; else every room the daemon is
in) with their summary, tags, resolution and last activity, filtered by `tag` and `resolved`.
`POST /api/threads/export` writes one thread (or a room's latest threads) as Markdown and JSON into
`<data>/thread_exports/` (0600), through an account of the daemon in the room, decrypted where it can read,
and answers with the files. Behind the same keys as the rest of `/api`.
"""

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency, running_or_503
from mindroom.bots.directory import Directory
from mindroom.bots.thread_export import export_folder, read_thread, write_export
from mindroom.logging_config import get_logger
from mindroom.matrix.events import MatrixEvent
from mindroom.matrix.room_account import RoomAccount
from mindroom.matrix.thread_reader import room_thread_roots, thread_messages
from mindroom.matrix.thread_summaries import latest_summary
from mindroom.matrix.thread_tags import RESOLVED_TAG, ThreadTagStore

__all__ = ["MAX_THREADS", "ExportRequest", "room_threads", "thread_router"]

logger = get_logger(__name__)

MAX_THREADS = 50
"""The most threads of a room listed or exported at once (the latest)."""
_READS_AT_ONCE = 8
"""Threads of one listing read from the homeserver at the same time."""


class ExportRequest(BaseModel):
    """`POST /api/threads/export`: a room (key, alias or id) and one thread of it, or its latest threads."""

    room: str
    thread: str | None = None


def _reader(directory: Directory, room: str) -> tuple[str, RoomAccount]:
    room_id = directory.room_ids.get(room, room)
    entities = sorted(directory.entities.values(), key=lambda entity: not entity.is_router)
    for entity in entities:  # the router first: it is in every room the daemon manages
        if room_id in entity.joined_rooms:
            return room_id, entity.client
    raise HTTPException(404, f"no account of the daemon is in the room {room!r}")


async def room_threads(client: RoomAccount, room_id: str, limit: int = MAX_THREADS) -> list[str]:
    """The room's latest thread roots, newest first (the homeserver's thread list)."""
    return await room_thread_roots(client, room_id, limit)


def _last_activity(messages: Sequence[MatrixEvent]) -> float | None:
    """When the thread's newest message was sent (Unix seconds), None for a thread the account cannot read."""
    newest = max((event.origin_server_ts for event in messages), default=None)
    return newest / 1000 if newest is not None else None


def thread_router(ctx: ApiContext) -> APIRouter:
    """The thread routes on `ctx`."""
    router = APIRouter(prefix="/api", tags=["threads"])
    operator = Annotated[str, Depends(operator_dependency(ctx))]

    @router.get("/threads", summary="Threads with their summaries and tags, by room, tag and resolution")
    async def threads(
        who: operator, room: str | None = None, tag: str | None = None, resolved: bool | None = None
    ) -> dict[str, Any]:
        running = running_or_503(ctx)
        trusted = frozenset(running.directory.bot_user_ids.values())
        rooms = [room] if room else sorted({r for e in running.directory.entities.values() for r in e.joined_rooms})
        listed: list[dict[str, Any]] = []
        reading = asyncio.Semaphore(_READS_AT_ONCE)

        async def read(client: RoomAccount, room_id: str, root: str) -> Sequence[MatrixEvent]:
            async with reading:
                return await thread_messages(client, room_id, root)

        for name in rooms:
            room_id, client = _reader(running.directory, name)
            tags = await ThreadTagStore(client).room_tags(room_id)
            roots = [
                root
                for root in await room_threads(client, room_id)
                if not (tag and tag not in tags.get(root, {}))
                and (resolved is None or (RESOLVED_TAG in tags.get(root, {})) == resolved)
            ]
            # The threads are read side by side (a few at once): one after the other, 50 threads took 50 trips.
            threads = await asyncio.gather(*(read(client, room_id, root) for root in roots))
            for root, messages in zip(roots, threads, strict=True):
                here = tags.get(root, {})
                summary = latest_summary(messages, trusted)
                listed.append({
                    "room_id": room_id, "thread_id": root, "resolved": RESOLVED_TAG in here,
                    "tags": {name: record.content() for name, record in here.items()},
                    "summary": summary.text if summary is not None else None,
                    "last_activity": _last_activity(messages),
                })  # fmt: skip
        return {"threads": listed}

    @router.post("/threads/export", summary="Write a thread (or a room's latest threads) as Markdown and JSON")
    async def export(who: operator, request: ExportRequest) -> dict[str, Any]:
        running = running_or_503(ctx)
        room_id, client = _reader(running.directory, request.room)
        trusted = frozenset(running.directory.bot_user_ids.values())
        roots = [request.thread] if request.thread else await room_threads(client, room_id)
        folder = export_folder(running.paths.storage_root)
        files: list[dict[str, str]] = []
        for root in roots:
            try:
                exported = await read_thread(client, room_id, root, trusted)
            except LookupError as error:
                raise HTTPException(404, str(error)) from error
            markdown, data = write_export(exported, folder)
            files.append({"thread_id": root, "markdown": str(markdown), "json": str(data)})
        logger.info("threads exported", room_id=room_id, threads=len(files), by=who)
        return {"room_id": room_id, "files": files}

    return router
