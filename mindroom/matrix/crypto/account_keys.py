"""A bot account's keys beyond its device: cross-signing, secret storage and the key backup, set up once and
checked at every start.

At the first start the account gets cross-signing keys (its device signed by them), a key backup, and
secret storage under the recovery key holding the private keys of both. At later starts what the
homeserver publishes is compared with what the bot keeps (its vault items): a new device is signed, a
backup made by another client is taken over when secret storage holds its key, and anything that cannot
be set right (a recovery key that does not open the account's secret storage, a backup whose key the bot
cannot get) is logged once with the fix, the bot running on without it. `restore` reads the backup into
a new device's store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nio.crypto import Olm

from mindroom.logging_config import get_logger
from mindroom.matrix.crypto.backup_uploader import BACKED_UP, BackupTarget
from mindroom.matrix.crypto.bot_vault import BotVault
from mindroom.matrix.crypto.cross_signing import (
    SECRET_NAMES,
    CrossSigningKeys,
    query_identity,
    sign_own_device,
    upload_cross_signing_keys,
)
from mindroom.matrix.crypto.key_backup import (
    BACKUP_ALGORITHM,
    BACKUP_SECRET,
    BackupKey,
    KeyBackupApi,
    decrypt_session_data,
    restored_session,
)
from mindroom.matrix.crypto.recovery_key import RECOVERY_KEY_ENV, RECOVERY_KEY_FILE_ENV, RecoveryKeyError, RecoveryKeys
from mindroom.matrix.crypto.secret_storage import SSSS_ALGORITHM, SecretStorage, SecretStorageError, key_matches
from mindroom.matrix.crypto.signing import add_signature, signed_part
from mindroom.matrix.errors import MatrixError, MatrixRequestError
from mindroom.matrix.transport import JsonTransport

__all__ = ["AccountKeys", "KeyProblem", "KeyStatus"]

logger = get_logger(__name__)

_SECRET = "secret"
_GIVE_KEY = (
    f"give the recovery key printed at the bot's first start ({RECOVERY_KEY_FILE_ENV} names a file holding it,"
    f" or {RECOVERY_KEY_ENV} holds it), then restart"
)


class KeyProblem(MatrixError):  # noqa: N818 - a finding more than an error: logged with its fix, the bot goes on
    """Something about the account's keys the bot cannot set right itself: what, and the operator's fix."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix


@dataclass(slots=True)
class KeyStatus:
    """What the last check found (for `mindroom doctor` and tests); updated as the bot runs."""

    cross_signed: bool = False
    backup_version: str | None = None
    problems: list[str] = field(default_factory=list)


class AccountKeys:
    """The cross-signing keys, secret storage and key backup of one bot's account, seen from its current device."""

    def __init__(
        self,
        transport: JsonTransport,
        user_id: str,
        vault: BotVault,
        recovery: RecoveryKeys,
        *,
        name: str,
        password: str | None,
    ) -> None:
        self._transport = transport
        self._user_id = user_id
        self._olm: Olm | None = None
        self._vault = vault
        self._recovery = recovery
        self._name = name
        self._password = password
        self._ssss = SecretStorage(transport, self._user_id)
        self.api = KeyBackupApi(transport)
        self.status = KeyStatus()
        self._opened: tuple[str, bytes] | None = None

    # -- the whole check -----------------------------------------------------------------------------

    @property
    def _device(self) -> Olm:
        assert self._olm is not None, "the device's store is not loaded"
        return self._olm

    @property
    def _device_id(self) -> str:
        return str(self._device.device_id)

    async def ensure(self, olm: Olm) -> BackupTarget | None:
        """Cross-sign the device of `olm`, make sure the backup is the bot's; returns where keys go (None: nowhere)."""
        self._olm = olm
        self.status.problems = []
        self._opened = None
        unsaved: dict[str, str] = {}
        keys = await self._guarded("cross-signing", self._cross_signing(unsaved))
        target = await self._guarded("key backup", self._backup(unsaved, keys))
        if unsaved:
            await self._guarded("secret storage", self._store_secrets(unsaved))
        return target if isinstance(target, tuple) else None

    async def backup_replaced(self) -> BackupTarget | None:
        """The uploader found its backup version replaced: take the new one over if its key can be had."""
        unsaved: dict[str, str] = {}
        keys = CrossSigningKeys.from_seeds(self._vault.get(_SECRET, "cross_signing") or {})
        target = await self._guarded("key backup", self._backup(unsaved, keys))
        if unsaved:
            await self._guarded("secret storage", self._store_secrets(unsaved))
        return target if isinstance(target, tuple) else None

    async def _guarded(self, part: str, step: Any) -> Any:
        """Run one part; a problem (or a refused request) is logged with its fix, and the bot goes on without it."""
        try:
            return await step
        except KeyProblem as problem:
            self.status.problems.append(f"{part}: {problem.problem}")
            logger.error(
                "account keys need the operator", agent=self._name, part=part, problem=problem.problem, fix=problem.fix
            )
        except MatrixRequestError as exc:
            self.status.problems.append(f"{part}: {exc}")
            logger.error("account keys could not be set up", agent=self._name, part=part, error=str(exc))
        return None

    # -- secret storage ------------------------------------------------------------------------------

    async def _open_secret_storage(self, *, create: bool) -> tuple[str, bytes] | None:
        """The default key's id and the recovery key when it opens it; None when the account has none (and
        `create` is False). A key that does not fit raises `KeyProblem`."""
        if self._opened is not None:
            return self._opened
        found = await self._ssss.default_key()
        try:
            if found is None:
                if not create:
                    return None
                key = self._recovery.load_or_create()
                self._opened = (await self._ssss.create_key(key.key, "mindroom recovery key"), key.key)
                logger.info("secret storage created", agent=self._name, recovery_key=key.source)
                return self._opened
            recovery = self._recovery.load()
        except RecoveryKeyError as exc:
            raise KeyProblem(str(exc), _GIVE_KEY) from exc
        key_id, description = found
        if recovery is None:
            raise KeyProblem("the account's secret storage is locked and no recovery key is given", _GIVE_KEY)
        if description.get("algorithm") != SSSS_ALGORITHM or not key_matches(recovery.key, description):
            problem = f"the recovery key from {recovery.source} does not open the account's secret storage"
            raise KeyProblem(problem, _GIVE_KEY)
        self._opened = (key_id, recovery.key)
        return self._opened

    async def _read_secret(self, name: str) -> str | None:
        opened = await self._open_secret_storage(create=False)
        if opened is None:
            return None
        try:
            return await self._ssss.read(opened[0], opened[1], name)
        except SecretStorageError as exc:
            raise KeyProblem(str(exc), _GIVE_KEY) from exc

    async def _store_secrets(self, secrets: dict[str, str]) -> None:
        opened = await self._open_secret_storage(create=True)
        assert opened is not None
        for name, value in secrets.items():
            await self._ssss.store(opened[0], opened[1], name, value)
        logger.info("secrets stored", agent=self._name, secrets=sorted(secrets))

    # -- cross-signing -------------------------------------------------------------------------------

    async def _cross_signing(self, unsaved: dict[str, str]) -> CrossSigningKeys:
        identity = await query_identity(self._transport, self._user_id, self._device_id)
        keys = CrossSigningKeys.from_seeds(self._vault.get(_SECRET, "cross_signing") or {})
        if identity.master is None:
            keys = keys or CrossSigningKeys.generate()
            await upload_cross_signing_keys(self._transport, self._user_id, keys, self._password)
            self._vault.put(_SECRET, "cross_signing", keys.seeds())
            unsaved.update({SECRET_NAMES[usage]: seed for usage, seed in keys.seeds().items()})
            logger.info("cross-signing keys published", agent=self._name, master_key=keys.master.public_key)
            identity = await query_identity(self._transport, self._user_id, self._device_id)
        elif keys is None or keys.master.public_key != identity.master:
            keys = await self._keys_from_secret_storage(identity.master)
        if not identity.device_signed and identity.device is not None:
            master = signed_part(keys.key_object(self._user_id, "master"))
            device_signature = self._device.sign_json(master)
            await sign_own_device(
                self._transport, self._user_id, self._device_id, identity.device, keys, device_signature
            )
            logger.info("device cross-signed", agent=self._name, device_id=self._device_id)
        self.status.cross_signed = identity.device is not None
        return keys

    async def _keys_from_secret_storage(self, master: str) -> CrossSigningKeys:
        seeds = {usage: await self._read_secret(name) for usage, name in SECRET_NAMES.items()}
        keys = CrossSigningKeys.from_seeds(seeds)
        if keys is None or keys.master.public_key != master:
            raise KeyProblem(
                "the account's cross-signing keys on the homeserver are not in its secret storage (another client"
                " replaced them), so its device stays unsigned",
                "reset the account's cross-signing from a client that has its keys, or " + _GIVE_KEY,
            )
        self._vault.put(_SECRET, "cross_signing", keys.seeds())
        return keys

    # -- the key backup ------------------------------------------------------------------------------

    def _auth_data(self, key: BackupKey, keys: CrossSigningKeys | None) -> dict[str, Any]:
        auth: dict[str, Any] = {"public_key": key.public_key}
        auth = add_signature(auth, self._user_id, self._device_id, self._device.sign_json(auth))
        return keys.master.sign_json(auth, self._user_id) if keys is not None else auth

    def _keep_backup(self, version: str, key: BackupKey) -> BackupTarget:
        self._vault.put(_SECRET, "backup", {"version": version, "key": key.to_base64()})
        self.status.backup_version = version
        return version, key.public_key

    async def _backup(self, unsaved: dict[str, str], keys: CrossSigningKeys | None) -> BackupTarget:
        self.status.backup_version = None
        server = await self.api.latest()
        kept = self._vault.get(_SECRET, "backup")
        local = BackupKey.from_base64(str(kept["key"])) if kept and kept.get("key") else None
        if server is None:
            made = local or BackupKey.generate()
            version = await self.api.create(self._auth_data(made, keys))
            unsaved[BACKUP_SECRET] = made.to_base64()
            logger.info("key backup created", agent=self._name, version=version)
            return self._keep_backup(version, made)
        ours = server.algorithm == BACKUP_ALGORITHM and server.public_key is not None
        if ours and local is not None and local.public_key == server.public_key:
            return self._keep_backup(server.version, local)
        stored = await self._read_secret(BACKUP_SECRET) if ours else None
        key = BackupKey.from_base64(stored) if stored else None
        if key is not None and key.public_key == server.public_key:
            logger.info("key backup taken over", agent=self._name, version=server.version)
            return self._keep_backup(server.version, key)
        raise KeyProblem(
            f"the account's key backup (version {server.version}) was made by another client, and the bot cannot get"
            " its key: room keys are not backed up",
            f"keep that backup's key in the account's secret storage under the bot's recovery key, or delete backup"
            f" version {server.version} so the bot makes its own at its next start",
        )

    async def restore(self, olm: Olm, target: BackupTarget) -> int:
        """Read every room key of the backup into the store of `olm`; returns how many were new to it."""
        version = target[0]
        kept = self._vault.get(_SECRET, "backup")
        if not kept or kept.get("version") != version:
            return 0
        key = BackupKey.from_base64(str(kept["key"]))
        rooms = await self.api.download(version)
        sessions = []
        for room_id, entries in rooms.items():
            for session_id, entry in entries.items():
                try:
                    session = restored_session(room_id, decrypt_session_data(key, entry.get("session_data") or {}))
                except ValueError as exc:
                    logger.warning(
                        "backed-up room key unusable", agent=self._name, session_id=session_id, error=str(exc)
                    )
                    continue
                if session is not None:
                    sessions.append(session)
        # Marked first: the store tells the uploader of each session it saves, and these are in the backup.
        self._vault.put_many(BACKED_UP, {session.id: {"version": version} for session in sessions})
        restored = 0
        for session in sessions:
            if olm.inbound_group_store.add(session):
                olm.save_inbound_group_session(session)
                restored += 1
        logger.info("room keys restored from the backup", agent=self._name, version=version, keys=restored)
        return restored

    async def restorable(self) -> bool:
        """Whether a lost store's room keys can come back: secret storage opens and holds the current backup's key.

        False without a recovery key; raises `KeyProblem` when the account has secret storage it does not open.
        """
        try:
            if self._recovery.load() is None:
                return False
        except RecoveryKeyError as exc:
            raise KeyProblem(str(exc), _GIVE_KEY) from exc
        server = await self.api.latest()
        if server is None or server.public_key is None:
            return False
        stored = await self._read_secret(BACKUP_SECRET)
        return stored is not None and BackupKey.from_base64(stored).public_key == server.public_key
