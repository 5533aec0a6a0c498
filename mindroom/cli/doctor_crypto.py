"""`mindroom doctor`'s line for each bot's encryption: its device, where its crypto state is, whether the device is
cross-signed (the signature chain checked, not just its presence), and its key backup with how many keys it holds.

With state in SQLite the device's store is opened read-only (a lost one is a failure unless the recovery key
and the backup will restore it); with state in PostgreSQL it is in the database, sealed, and not opened here.
A store is opened on the calling thread: nio's store is not safe to use from two threads of one process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mindroom.cli.doctor_http import get_json, post_json
from mindroom.cli.doctor_result import CheckResult, check_fail, check_ok, check_warn
from mindroom.config.main import Config
from mindroom.constants import ROUTER_AGENT_NAME
from mindroom.matrix.credentials import BotCredentials, CredentialStore
from mindroom.matrix.crypto.cross_signing import published_identity
from mindroom.matrix.crypto.recovery_key import RECOVERY_KEY_FILE_ENV, RecoveryKeyError, RecoveryKeys
from mindroom.matrix.crypto.store import CryptoStoreReport, CryptoStoreState, crypto_store_dir, inspect_crypto_store
from mindroom.state.location import safe_url
from mindroom.state.sqlite.crypto import SqliteCryptoVault

__all__ = ["check_crypto_stores"]


def _new_device_fix(bot: str) -> str:
    return (
        f"give the recovery key ({RECOVERY_KEY_FILE_ENV}) so `mindroom run` restores the room keys on a new device"
        f" from the key backup; or restore the store from a backup, or start once with `mindroom run --new-device"
        f" {bot}` for a new device (it cannot read messages encrypted for the old one)"
    )


_SIGN_FIX = (
    "start the bot: it signs its device with its self-signing key; if it logs that the recovery key does not"
    f" open the account's secret storage, give the right one ({RECOVERY_KEY_FILE_ENV})"
)
_BACKUP_FIX = (
    "another client replaced the bot's key backup: keep that backup's key in the account's secret storage under"
    " the bot's recovery key, or delete that backup version so the bot makes its own at its next start"
)


async def _query(url: str, stored: BotCredentials) -> tuple[bool | None, dict[str, Any] | None]:
    """(the device is cross-signed, the current backup: {} when none) from the homeserver; None where it cannot say."""
    token, device = stored.access_token, stored.device_id
    assert token is not None
    assert device is not None
    query = {"device_keys": {stored.user_id: [device]}}
    try:
        status, body = await asyncio.to_thread(post_json, f"{url}/_matrix/client/v3/keys/query", query, token)
        backup_status, backup = await asyncio.to_thread(get_json, f"{url}/_matrix/client/v3/room_keys/version", token)
    except OSError:
        return None, None
    signed = published_identity(body, stored.user_id, device).device_signed if status == 200 else None
    if backup_status == 404:
        return signed, {}
    return signed, backup if backup_status == 200 else None


def _kept_backup_version(storage_root: Path, bot: str) -> str | None:
    """The backup version the bot keeps (files only: in the database it is sealed)."""
    vault = SqliteCryptoVault(storage_root)
    try:
        raw = vault.load(bot).get(("secret", "backup"))
        kept = json.loads(raw) if raw else {}
    finally:
        vault.close()
    version = kept.get("version") if isinstance(kept, dict) else None
    return version if isinstance(version, str) else None


def _describe_keys(signed: bool | None, backup: dict[str, Any] | None, kept: str | None) -> tuple[list[str], str]:
    """Phrases for cross-signing and the backup, and the fix when one of them needs attention ("" when none)."""
    phrases, fix = [], ""
    if signed is None:
        phrases.append("cross-signing unknown (the homeserver could not say)")
    elif signed:
        phrases.append("cross-signed by its self-signing key")
    else:
        phrases.append("not cross-signed")
        fix = _SIGN_FIX
    if backup is None:
        phrases.append("key backup unknown")
    elif not backup:
        phrases.append("no key backup")
        fix = fix or "start the bot: it makes its key backup"
    else:
        version, count = backup.get("version"), backup.get("count")
        if kept is not None and kept != version:
            phrases.append(f"key backup version {version} is not the bot's (it keeps {kept})")
            fix = fix or _BACKUP_FIX
        else:
            phrases.append(f"key backup version {version} holds {count} keys")
    return phrases, fix


def _recovery_source(env: Mapping[str, str], storage_root: Path) -> str | None:
    try:
        key = RecoveryKeys.from_environment(env, storage_root).load()
    except RecoveryKeyError:
        return None
    return key.source if key is not None else None


async def check_crypto_stores(
    config: Config,
    storage_root: Path,
    url: str | None,
    *,
    env: Mapping[str, str] | None = None,
    database_url: str | None = None,
) -> list[CheckResult]:
    """Each bot's device id, where its crypto state is, whether it opens, is cross-signed, and its key backup."""
    store = CredentialStore(storage_root)
    results = []
    for bot in [ROUTER_AGENT_NAME, *config.responders()]:
        name = f"crypto {bot}"
        stored = store.load(bot)
        if stored is None or stored.device_id is None:
            results.append(check_ok(name, "no device yet; its crypto state is made at its first start"))
            continue
        device = stored.device_id
        if database_url:
            where = f"crypto state in {safe_url(database_url)} (mindroom.crypto_items)"
        else:
            directory = crypto_store_dir(storage_root, bot)
            # On this thread, never a worker's: nio's store binds its table models for the whole process while
            # it runs a query, so a store opened on another thread meanwhile (a daemon in this process) would
            # read or write the other's file. Opening one store takes a few milliseconds.
            report = inspect_crypto_store(directory, stored.user_id, device)
            where = report.describe()
            if not report.healthy:
                results.append(await _unhealthy(bot, device, report, url, stored, env or {}, storage_root))
                continue
        signed, backup = await _query(url, stored) if url and stored.access_token else (None, None)
        kept = None if database_url else await asyncio.to_thread(_kept_backup_version, storage_root, bot)
        phrases, fix = _describe_keys(signed, backup, kept)
        detail = "; ".join([f"device {device}", where, *phrases])
        results.append(check_warn(name, detail, fix) if fix else check_ok(name, detail))
    return results


async def _unhealthy(
    bot: str,
    device: str,
    report: CryptoStoreReport,
    url: str | None,
    stored: BotCredentials,
    env: Mapping[str, str],
    storage_root: Path,
) -> CheckResult:
    name = f"crypto {bot}"
    if report.state is CryptoStoreState.UNREADABLE:
        return check_fail(name, f"device {device}; {report.describe()}", _new_device_fix(bot))
    published = None
    if url and stored.access_token:
        query = {"device_keys": {stored.user_id: [device]}}
        try:
            status, body = await asyncio.to_thread(
                post_json, f"{url}/_matrix/client/v3/keys/query", query, stored.access_token
            )
            if status == 200:
                devices = body.get("device_keys", {}).get(stored.user_id, {})
                published = isinstance(devices, dict) and device in devices
        except OSError:
            published = None
    if published is False:
        return check_ok(name, f"device {device} has no keys yet; `mindroom run` makes {report.path}")
    if published is None:
        return check_warn(name, f"device {device}; {report.describe()} (the homeserver could not say if it had keys)")
    source = _recovery_source(env, storage_root)
    lost = f"device {device}; {report.describe()}, but its keys are on the homeserver"
    if source is not None:
        return check_warn(
            name,
            f"{lost}: run makes a new device and restores its room keys from the key backup (recovery key from"
            f" {source})",
            "nothing, if the backup is the bot's; see the run's log",
        )
    return check_fail(name, f"{lost}: run refuses this bot", _new_device_fix(bot))
