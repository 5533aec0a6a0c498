"""A bot's device at login: its crypto state opened, a lost store replaced (and restored from the key backup when
the recovery key allows), then its account's keys checked and the backup uploader started.

Where the state lives: with state in SQLite, nio's file store under `<data>/crypto/<bot>/` and the bot's
vault file beside it (keys, backup marks); with state in PostgreSQL, everything in the state's database,
sealed with the recovery key (`vault_store.VaultStore`), credentials included, so a standby anywhere logs
in as the same device. A store that is lost while the device published keys is refused
(`MatrixCryptoStoreError`) unless the backup can restore it or the operator asked for a new device.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import nio
from nio.crypto import InboundGroupSession, Olm

from mindroom.logging_config import get_logger
from mindroom.matrix.credentials import BotCredentials, CredentialKeeper, CredentialStore
from mindroom.matrix.crypto.account_keys import AccountKeys, KeyProblem
from mindroom.matrix.crypto.backup_uploader import KeyBackupUploader
from mindroom.matrix.crypto.bot_vault import BotVault, read_items
from mindroom.matrix.crypto.device import device_keys_published, load_crypto_store, open_crypto_store
from mindroom.matrix.crypto.file_store_import import read_file_store, write_file_store
from mindroom.matrix.crypto.recovery_key import RECOVERY_KEY_ENV, RECOVERY_KEY_FILE_ENV, RecoveryKeyError, RecoveryKeys
from mindroom.matrix.crypto.sealing import Sealer, SealError
from mindroom.matrix.crypto.store import PICKLE_KEY, crypto_store_dir, set_store_aside
from mindroom.matrix.crypto.vault_store import DEVICE_KINDS, VaultStore
from mindroom.matrix.errors import MatrixCryptoStoreError, MatrixRecoveryError
from mindroom.matrix.login import BotAccount, new_device_session
from mindroom.matrix.transport import JsonTransport, guard_transport
from mindroom.state.crypto import CryptoVault
from mindroom.state.sqlite.crypto import SqliteCryptoVault

__all__ = ["DeviceSetup", "VaultCredentials"]

logger = get_logger(__name__)

_LOST_STORE_MEANING = (
    "messages encrypted for this device cannot be read without its store, and a new device cannot read them either"
)
_LOST_STORE_FIX = (
    f"give the recovery key ({RECOVERY_KEY_FILE_ENV} or {RECOVERY_KEY_ENV}) so a new device restores the room keys"
    " from the key backup, or start once with MINDROOM_NEW_CRYPTO_DEVICE=1 to replace the device without them"
    " (see docs/operations.md)"
)
_GIVE_KEY = (
    f"set {RECOVERY_KEY_FILE_ENV} (a file holding it) or {RECOVERY_KEY_ENV} to the recovery key printed at the"
    " first start"
)


@dataclass(frozen=True, slots=True)
class _Lost:
    location: str
    problem: str


class VaultCredentials:
    """Credentials kept with the bot's crypto state in the database, and as the file beside it (read second)."""

    def __init__(self, vault: BotVault, files: CredentialStore) -> None:
        self._vault = vault
        self._files = files

    def load(self, bot_name: str) -> BotCredentials | None:
        """The credentials in the database, else the file's."""
        item = self._vault.get("credentials")
        if item is not None:
            with contextlib.suppress(ValueError):
                return BotCredentials.from_json(json.dumps(item))
        return self._files.load(bot_name)

    def save(self, bot_name: str, credentials: BotCredentials) -> None:
        """Keep them in both places."""
        self._vault.put("credentials", "", json.loads(credentials.to_json()))
        self._files.save(bot_name, credentials)


class DeviceSetup:
    """One bot's device state from login to close: `open_vault`, `open_device`, `secure`, `reload`, `close`."""

    def __init__(
        self,
        client: nio.AsyncClient,
        transport: JsonTransport,
        account: BotAccount,
        storage_root: Path,
        *,
        vault: CryptoVault | None,
        recovery: RecoveryKeys,
        new_device: bool,
    ) -> None:
        self._nio = client
        self._transport = transport
        self._account = account
        self._name = account.bot_name
        self.directory = crypto_store_dir(storage_root, account.bot_name)
        self._owns_source = vault is None
        self._source: CryptoVault = vault if vault is not None else SqliteCryptoVault(storage_root)
        self._recovery = recovery
        self._new_device = new_device
        self._files = CredentialStore(storage_root)
        self.credentials: CredentialKeeper = self._files
        self._sealer: Sealer | None = None
        self.vault: BotVault | None = None
        self.keys: AccountKeys | None = None
        self.uploader: KeyBackupUploader | None = None
        self._restore = False
        self.restored_at_ms: int | None = None
        """When the lost store's room keys came back from the key backup (ms since the epoch); None if they did not."""

    @property
    def shared(self) -> bool:
        """True when the device's state lives in the state's database (PostgreSQL)."""
        return self._source.shared

    @property
    def location(self) -> str:
        """Where the device's state is, safe to show."""
        return self._source.location if self.shared else str(self.directory)

    # -- the vault (before the session: with state in PostgreSQL it holds the credentials) ----------

    async def open_vault(self) -> None:
        """Read the bot's items; with state in PostgreSQL, open them with the recovery key (made when none exists)."""
        raw = await read_items(self._source, self._name)
        if self.shared:
            self._sealer = await self._open_sealer(bool(raw))
        try:
            self.vault = BotVault(self._source, self._name, self._sealer, raw)
        except SealError as exc:
            problem = f"its crypto state in the database ({self.location}) does not open: {exc}"
            fix = "give the recovery key it was sealed with: " + _GIVE_KEY if exc.other_key else _LOST_STORE_FIX
            raise self._unopened(problem, fix) from exc
        except ValueError as exc:
            raise self._unopened(f"its crypto items at {self.location} are damaged ({exc})", _LOST_STORE_FIX) from exc
        if self.shared:
            self.credentials = VaultCredentials(self.vault, self._files)

    async def _open_sealer(self, has_items: bool) -> Sealer:
        try:
            key = self._recovery.load()
        except RecoveryKeyError as exc:
            raise self._unopened(str(exc), _GIVE_KEY) from exc
        if key is None:
            # A new key only for a database without sealed state: another bot's would then need two keys.
            sealed_bots = [self._name] if has_items else await asyncio.to_thread(self._source.bots)
            if sealed_bots:
                problem = f"its crypto state in the database ({self.location}) is sealed with the recovery key"
                raise self._unopened(problem + ", and none is given", _GIVE_KEY)
            key = self._recovery.load_or_create()
        return Sealer(key.key)

    def _unopened(self, problem: str, fix: str) -> MatrixRecoveryError:
        """The error for crypto state that does not open, logged once with what to do."""
        logger.error("crypto state cannot be opened; bot not started", agent=self._name, problem=problem, fix=fix)
        return MatrixRecoveryError(self._name, problem, fix)

    # -- the device's store -------------------------------------------------------------------------

    def _attach_vault_store(self) -> VaultStore:
        assert self.vault is not None
        user_id, device_id = str(self._nio.user_id), str(self._nio.device_id)
        store = VaultStore(user_id, device_id, self.vault, PICKLE_KEY)
        self._nio.store = store
        self._nio.olm = Olm(user_id, device_id, store)
        self._nio.encrypted_rooms = store.load_encrypted_rooms()
        return store

    async def _load_store(self) -> _Lost | None:
        """Load the device's store; None once loaded, or what is lost."""
        if not self.shared:
            report = await open_crypto_store(self._nio, self._transport, self.directory, self._name)
            return None if report is None else _Lost(str(report.path), report.describe())
        assert self.vault is not None
        user_id, device_id = str(self._nio.user_id), str(self._nio.device_id)
        if VaultStore(user_id, device_id, self.vault, PICKLE_KEY).load_account() is None:
            # Read here, on the loop's thread, where the other bots' stores are read too (see `read_file_store`).
            contents = read_file_store(self.directory, user_id, device_id)
            imported = 0 if contents is None else await asyncio.to_thread(write_file_store, contents, self.vault)
            if imported:
                logger.info(
                    "crypto store moved into the database", agent=self._name, items=imported, path=str(self.directory)
                )
            elif await device_keys_published(self._transport, user_id, device_id):
                return _Lost(self.location, f"{self.location} holds no keys for this device")
        self._attach_vault_store()
        return None

    async def open_device(self, credentials: BotCredentials, password: str | None) -> BotCredentials:
        """Load the device's store; a lost one is replaced by a new device (restored from the backup when the
        recovery key allows it) or refused. Returns the credentials of the device now in use."""
        lost = await self._load_store()
        if lost is None:
            return credentials
        assert self.vault is not None
        keys = self._account_keys(credentials.user_id, password)
        try:
            self._restore = await keys.restorable()
        except KeyProblem as problem:
            if not self._new_device:
                fix = (
                    f"{problem.fix}; or start once with MINDROOM_NEW_CRYPTO_DEVICE=1 to replace the device without"
                    " the messages before"
                )
                self._refuse(lost, credentials, problem.problem, fix)
                raise MatrixRecoveryError(
                    self._name, f"its crypto store is lost ({lost.problem}) and {problem.problem}", fix
                ) from problem
        if not (self._restore or self._new_device):
            self._refuse(lost, credentials, lost.problem)
            raise MatrixCryptoStoreError(self._name, lost.location, lost.problem)
        return await self._replace(lost, credentials, password)

    def _refuse(self, lost: _Lost, credentials: BotCredentials, problem: str, fix: str = _LOST_STORE_FIX) -> None:
        logger.error(
            "crypto store lost; bot not started",
            agent=self._name,
            path=lost.location,
            device_id=credentials.device_id,
            problem=problem,
            meaning=_LOST_STORE_MEANING,
            fix=fix,
        )

    async def _replace(self, lost: _Lost, credentials: BotCredentials, password: str | None) -> BotCredentials:
        """Sign the old device out (so nobody encrypts for it again) and log in as a new one with a new store."""
        old_device = credentials.device_id
        aside = None
        if self.shared:
            assert self.vault is not None
            for kind in DEVICE_KINDS:  # room keys stay: the new device can still read with them
                self.vault.delete(kind)
        else:
            aside = set_store_aside(self.directory, "lost")
        await guard_transport(self._nio.logout(), "logout")
        fresh = await new_device_session(self._nio, self._account, credentials.password or password)
        assert fresh.device_id is not None
        assert fresh.access_token is not None
        self.credentials.save(self._name, fresh)
        self._nio.restore_login(fresh.user_id, fresh.device_id, fresh.access_token)
        if self.shared:
            self._attach_vault_store()
        else:
            load_crypto_store(self._nio, self.directory)
        logger.warning(
            "new crypto device replaces a lost one",
            agent=self._name,
            old_device_id=old_device,
            device_id=fresh.device_id,
            old_store=str(aside) if aside is not None else lost.location,
            meaning="room keys come back from the key backup"
            if self._restore
            else "messages encrypted for the old device stay unreadable",
        )
        return fresh

    # -- the account's keys and the backup -----------------------------------------------------------

    async def secure(self, password: str | None) -> None:
        """Check the account's keys (a new device gets signed, and restored from the backup), start the uploader."""
        assert self.vault is not None
        olm = self._nio.olm
        keys = self.keys = self._account_keys(str(olm.user_id), password)
        target = await keys.ensure(olm)
        if target is not None and self._restore:
            await keys.restore(olm, target)
            self.restored_at_ms = int(time.time() * 1000)
        self._restore = False
        if target is not None:
            self.uploader = KeyBackupUploader(
                keys.api,
                self.vault,
                self._name,
                target,
                keys.backup_replaced,
                self._room_keys,
            )
            self.uploader.queue_missing(olm.inbound_group_store)
            self.uploader.start()
        self._listen()

    def _account_keys(self, user_id: str, password: str | None) -> AccountKeys:
        assert self.vault is not None
        return AccountKeys(self._transport, user_id, self.vault, self._recovery, name=self._name, password=password)

    def _room_keys(self) -> list[InboundGroupSession]:
        olm = self._nio.olm
        return list(olm.inbound_group_store) if olm is not None else []

    def _listen(self) -> None:
        """Every room key the store saves goes to the uploader."""
        store = self._nio.store
        if store is not None:
            store.on_room_key = self.uploader.queue if self.uploader is not None else None

    async def reload(self) -> None:
        """Load the device's state again before syncing (a client of the same bot may have changed it meanwhile)."""
        if self.shared:
            assert self.vault is not None
            self.vault.replace_items(await read_items(self._source, self._name))
            self._attach_vault_store()
        else:
            store = self._nio.store
            if store is None:
                return
            self._nio.store = None
            self._nio.olm = None
            with contextlib.suppress(Exception):  # the connection is dropped either way
                store.database.close()
            self._nio.load_store()
        self._listen()

    async def close(self) -> None:
        """Upload pending room keys (briefly), stop the uploader, close the vault file this setup opened."""
        if self.uploader is not None:
            await self.uploader.stop()
            self.uploader = None
        if self._owns_source:
            self._source.close()
