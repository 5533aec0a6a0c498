"""Baseline for the end-to-end benchmark: a bare matrix-nio bot that answers every message in its thread.

Usage: python benchmarks/echo_bot.py HOMESERVER_URL USER_ID PASSWORD
Prints "ready" on stdout once it syncs; answers until terminated.
"""

from __future__ import annotations

import asyncio
import signal
import sys

import nio


async def main(url: str, user_id: str, password: str) -> None:
    client = nio.AsyncClient(url, user_id)
    login = await client.login(password)
    assert isinstance(login, nio.LoginResponse), login
    first = await client.sync(timeout=0)
    assert isinstance(first, nio.SyncResponse), first
    since = first.next_batch
    for room_id in first.rooms.invite:
        await client.join(room_id)
    print("ready", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    while not stop.is_set():
        response = await client.sync(timeout=1000, since=since)
        if not isinstance(response, nio.SyncResponse):
            continue
        since = response.next_batch
        for room_id in response.rooms.invite:
            await client.join(room_id)
        for room_id, room in response.rooms.join.items():
            for event in room.timeline.events:
                source = event.source
                if source.get("type") != "m.room.message" or source.get("sender") == user_id:
                    continue
                content = source.get("content", {})
                relates = content.get("m.relates_to", {})
                root = relates.get("event_id") if relates.get("rel_type") == "m.thread" else source["event_id"]
                reply = {
                    "msgtype": "m.text",
                    "body": f"echo: {content.get('body', '')}",
                    "m.relates_to": {
                        "rel_type": "m.thread",
                        "event_id": root,
                        "is_falling_back": True,
                        "m.in_reply_to": {"event_id": source["event_id"]},
                    },
                }
                await client.room_send(room_id, "m.room.message", reply)
    await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
