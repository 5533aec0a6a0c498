"""A session's crypto device at login: load its store, start one for a device that never published keys,
or report the store as lost.

A device whose identity keys are on the homeserver but whose store is gone (or cannot be opened) cannot be
repaired: other members encrypted for keys nobody holds any more. Only a new device (a new device id, new
keys) can go on, and that is the operator's call, so this module only reports the loss; `MatrixBotClient`
refuses to start the bot unless told to replace the device.
"""

from __future__ import annotations

from pathlib import Path

import nio

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.store import (
    CryptoStoreReport,
    CryptoStoreState,
    inspect_crypto_store,
    prepare_crypto_store,
)
from mindroom.matrix.transport import JsonTransport

__all__ = ["device_keys_published", "load_crypto_store", "open_crypto_store"]

logger = get_logger(__name__)

_KEYS_QUERY_PATH = "/_matrix/client/v3/keys/query"


async def device_keys_published(transport: JsonTransport, user_id: str, device_id: str) -> bool:
    """True when the homeserver holds identity keys for `device_id` (others may have encrypted for it)."""
    reply = await transport.request("POST", _KEYS_QUERY_PATH, body={"device_keys": {user_id: [device_id]}})
    reply.raise_for_error("keys query")
    devices = reply.body.get("device_keys", {}).get(user_id, {}) if isinstance(reply.body, dict) else {}
    return isinstance(devices, dict) and device_id in devices


def load_crypto_store(client: nio.AsyncClient, directory: Path) -> None:
    """Open (or create) the store in `directory` for the client's device and load nio's olm machine from it."""
    prepare_crypto_store(directory)
    client.store_path = str(directory)
    client.load_store()
    for entry in directory.iterdir():
        if entry.is_file():
            entry.chmod(0o600)


async def open_crypto_store(
    client: nio.AsyncClient, transport: JsonTransport, directory: Path, name: str
) -> CryptoStoreReport | None:
    """Load the device's store; returns None once loaded, or the report of a store that is lost.

    A missing store, or one without keys for this device, is created when the device never published
    keys: a first start, or an account that ran before encryption was on. Otherwise it is lost.
    """
    user_id, device_id = client.user_id, client.device_id
    report = inspect_crypto_store(directory, user_id, device_id)
    if report.state is CryptoStoreState.UNREADABLE:
        return report
    if report.state is not CryptoStoreState.HEALTHY:
        if await device_keys_published(transport, user_id, device_id):
            return report
        logger.info("crypto store created", agent=name, path=str(report.path), device_id=device_id)
    load_crypto_store(client, directory)
    return None
