"""MindRoom's `MatrixState` account list over the daemon's own credential files, for plugins and their tests.

An account keyed `agent_<name>` is the bot `<name>`'s credentials file (`<data>/matrix/credentials/<name>.json`,
0600): `load` lists those files, `save` writes the accounts added (keeping the stored session of an account
whose user id did not change). MindRoom's rooms and space in the same file are kept by the daemon elsewhere
and are not part of this view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mindroom.constants import RuntimePaths
from mindroom.matrix.credentials import BotCredentials, CredentialStore
from mindroom.matrix.identity import bot_name_of_key, managed_account_key

__all__ = ["MatrixAccount", "MatrixState"]


@dataclass(frozen=True, slots=True)
class MatrixAccount:
    """One kept account: its localpart, password, server name and session."""

    username: str
    password: str | None = field(default=None, repr=False)
    domain: str | None = None
    device_id: str | None = None
    access_token: str | None = field(default=None, repr=False)

    @property
    def user_id(self) -> str:
        """The full Matrix user id; `ValueError` for an account without a server name."""
        if not self.domain:
            msg = f"account {self.username!r} has no server name (domain)"
            raise ValueError(msg)
        return f"@{self.username}:{self.domain}"


def _account(credentials: BotCredentials) -> MatrixAccount:
    username, _, domain = credentials.user_id.removeprefix("@").partition(":")
    return MatrixAccount(
        username, credentials.password, domain or None, credentials.device_id, credentials.access_token
    )


@dataclass(slots=True)
class MatrixState:
    """The daemon's bot accounts by MindRoom's account key (`agent_<name>`)."""

    accounts: dict[str, MatrixAccount] = field(default_factory=dict)

    @classmethod
    def load(cls, runtime_paths: RuntimePaths) -> MatrixState:
        """The accounts whose credentials the daemon keeps under `runtime_paths.storage_root`."""
        store = CredentialStore(runtime_paths.storage_root)
        state = cls()
        for name in store.names():
            credentials = store.load(name)
            if credentials is not None:
                state.accounts[managed_account_key(name)] = _account(credentials)
        return state

    def get_account(self, key: str) -> MatrixAccount | None:
        """The account of `key`, None when there is none."""
        return self.accounts.get(key)

    def add_account(
        self,
        key: str,
        username: str,
        password: str | None,
        *,
        domain: str | None = None,
        device_id: str | None = None,
        access_token: str | None = None,
    ) -> None:
        """Add or replace the account of `key` (`agent_<name>`; `ValueError` for another key)."""
        bot_name_of_key(key)
        before = self.accounts.get(key)
        self.accounts[key] = MatrixAccount(
            username,
            password,
            domain if domain is not None else before.domain if before else None,
            device_id,
            access_token,
        )

    def save(self, runtime_paths: RuntimePaths) -> None:
        """Write every account as its bot's credentials file (0600)."""
        store = CredentialStore(runtime_paths.storage_root)
        for key, account in self.accounts.items():
            name = bot_name_of_key(key)
            stored = store.load(name)
            same = stored is not None and stored.user_id == account.user_id
            device_id = account.device_id or (stored.device_id if same and stored else None)
            token = account.access_token or (stored.access_token if same and stored else None)
            store.save(name, BotCredentials(account.user_id, device_id, token, account.password))
