"""Baseline for the end-to-end benchmarks: a bare matrix-nio bot that answers every message in its thread.

Usage: python benchmarks/echo_bot.py HOMESERVER_URL USER_ID PASSWORD [CRYPTO_STORE_DIR]
With CRYPTO_STORE_DIR it is an encryption device (as the daemon's bots are): it reads encrypted
messages and answers encrypted, to every device of the room's members. Prints "ready DEVICE_ID" on stdout
once it syncs; answers until terminated.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

import nio
from nio.store import SqliteStore


def _client(url: str, user_id: str, store_dir: str | None) -> nio.AsyncClient:
    if store_dir is None:
        return nio.AsyncClient(url, user_id)
    Path(store_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    config = nio.AsyncClientConfig(encryption_enabled=True, store=SqliteStore, store_sync_tokens=False)
    return nio.AsyncClient(url, user_id, store_path=store_dir, config=config)


async def _crypto_chores(client: nio.AsyncClient) -> None:
    """What nio's own sync_forever does between syncs: keys up, devices queried, to-device messages out."""
    if client.should_upload_keys:
        await client.keys_upload()
    if client.should_query_keys:
        await client.keys_query()
    if client.should_claim_keys:
        await client.keys_claim(client.get_users_for_key_claiming())
    await client.send_to_device_messages()


def _reply(event: Any) -> dict[str, Any] | None:
    """The echo of one timeline event, or None for what is not someone's text message."""
    source = event.source
    content = source.get("content", {}) if isinstance(source, dict) else {}
    if not isinstance(event, nio.RoomMessageText) or not isinstance(content, dict):
        return None
    relates = content.get("m.relates_to", {})
    root = relates.get("event_id") if relates.get("rel_type") == "m.thread" else event.event_id
    return {
        "msgtype": "m.text",
        "body": f"echo: {event.body}",
        "m.relates_to": {
            "rel_type": "m.thread",
            "event_id": root,
            "is_falling_back": True,
            "m.in_reply_to": {"event_id": event.event_id},
        },
    }


async def main(url: str, user_id: str, password: str, store_dir: str | None = None) -> None:
    client = _client(url, user_id, store_dir)
    login = await client.login(password)
    assert isinstance(login, nio.LoginResponse), login
    encrypted = store_dir is not None
    if encrypted:
        await _crypto_chores(client)
    first = await client.sync(timeout=0)
    assert isinstance(first, nio.SyncResponse), first
    since = first.next_batch
    for room_id in first.rooms.invite:
        await client.join(room_id)
    print(f"ready {client.device_id}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    while not stop.is_set():
        response = await client.sync(timeout=1000, since=since)
        if not isinstance(response, nio.SyncResponse):
            continue
        since = response.next_batch
        for room_id in response.rooms.invite:
            await client.join(room_id)
        if encrypted:
            await _crypto_chores(client)
        for room_id, room in response.rooms.join.items():
            for event in room.timeline.events:
                reply = _reply(event) if event.sender != user_id else None
                if reply is not None:
                    await client.room_send(room_id, "m.room.message", reply, ignore_unverified_devices=True)
    await client.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
