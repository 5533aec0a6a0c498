"""How a bot gets a working session: its stored token, else a password login, else shared-secret registration."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import nio

from mindroom.matrix.credentials import (
    DEFAULT_ACCOUNT_PREFIX,
    BotCredentials,
    CredentialKeeper,
    bot_localpart,
    bot_user_id,
)
from mindroom.matrix.errors import MatrixLoginError, MatrixRequestError
from mindroom.matrix.registration import register_with_shared_secret
from mindroom.matrix.transport import JsonTransport, guard_transport

__all__ = ["BotAccount", "LoginMethod", "LoginOutcome", "new_device_session", "obtain_session"]

LoginMethod = Literal["stored_token", "password", "registered"]
"""How a bot got its session: the stored token, a password login, or a new registration."""


@dataclass(frozen=True, slots=True)
class BotAccount:
    """Who a bot is on Matrix and which ways in it may use; secrets are kept out of `repr`."""

    bot_name: str
    server_name: str
    password: str | None = field(default=None, repr=False)
    registration_shared_secret: str | None = field(default=None, repr=False)
    display_name: str = ""
    account_prefix: str = DEFAULT_ACCOUNT_PREFIX

    @property
    def user_id(self) -> str:
        """`@<prefix><bot>:<server_name>`."""
        return bot_user_id(self.bot_name, self.server_name, self.account_prefix)


@dataclass(frozen=True, slots=True)
class LoginOutcome:
    """A working session and how it was obtained."""

    credentials: BotCredentials
    method: LoginMethod


def _distinct(values: Iterable[str | None]) -> list[str]:
    seen: list[str] = []
    for value in values:
        if value and value not in seen:
            seen.append(value)
    return seen


async def obtain_session(
    client: nio.AsyncClient, transport: JsonTransport, store: CredentialKeeper, account: BotAccount
) -> LoginOutcome:
    """Try the stored token, the stored and configured passwords, then registration; raise `MatrixLoginError`."""
    stored = store.load(account.bot_name)
    reasons: list[str] = []
    if stored is not None and stored.access_token and stored.device_id:
        if await _token_accepted(client, stored, stored.access_token, stored.device_id):
            return LoginOutcome(stored, "stored_token")
        reasons.append("stored access token was rejected")
    device_id = stored.device_id if stored is not None else None
    for password in _distinct([stored.password if stored else None, account.password]):
        credentials = await _password_login(client, account, password, device_id, reasons)
        if credentials is not None:
            return LoginOutcome(credentials, "password")
    if account.registration_shared_secret:
        credentials = await _register(transport, store, account, stored, reasons)
        if credentials is not None:
            return LoginOutcome(credentials, "registered")
    raise MatrixLoginError(account.bot_name, reasons)


async def new_device_session(client: nio.AsyncClient, account: BotAccount, password: str | None) -> BotCredentials:
    """A password login that makes the homeserver assign a new device id; raises `MatrixLoginError`."""
    reasons: list[str] = []
    if password:
        credentials = await _password_login(client, account, password, None, reasons)
        if credentials is not None:
            return credentials
    else:
        reasons.append("a new device needs a password login, and no password is stored or configured")
    raise MatrixLoginError(account.bot_name, reasons)


async def _token_accepted(client: nio.AsyncClient, stored: BotCredentials, access_token: str, device_id: str) -> bool:
    client.restore_login(stored.user_id, device_id, access_token)
    response = await guard_transport(client.whoami(), "whoami")
    if isinstance(response, nio.WhoamiResponse) and response.user_id == stored.user_id:
        return True
    client.access_token = ""
    return False


async def _password_login(
    client: nio.AsyncClient, account: BotAccount, password: str, device_id: str | None, reasons: list[str]
) -> BotCredentials | None:
    client.user = account.user_id
    client.device_id = device_id or ""  # logging in to the known device keeps the bot's device id stable
    response = await guard_transport(client.login(password, device_name=f"mindroom {account.bot_name}"), "login")
    if isinstance(response, nio.LoginResponse):
        return BotCredentials(response.user_id, response.device_id, response.access_token, password)
    reasons.append(f"password login failed ({response.status_code or 'error'})")
    return None


async def _register(
    transport: JsonTransport,
    store: CredentialKeeper,
    account: BotAccount,
    stored: BotCredentials | None,
    reasons: list[str],
) -> BotCredentials | None:
    assert account.registration_shared_secret is not None
    password = (stored.password if stored else None) or account.password or secrets.token_urlsafe(32)
    # The password is on disk before the account exists, so a crash in between can still log in later.
    device_id = stored.device_id if stored is not None else None
    store.save(account.bot_name, BotCredentials(user_id=account.user_id, device_id=device_id, password=password))
    try:
        registered = await register_with_shared_secret(
            transport,
            account.registration_shared_secret,
            bot_localpart(account.bot_name, account.account_prefix),
            password,
            displayname=account.display_name or None,
        )
    except MatrixRequestError as exc:
        if exc.errcode == "M_USER_IN_USE":
            reasons.append("the account exists but no stored or configured password works")
        else:
            reasons.append(f"registration failed ({exc.errcode or exc.status})")
        return None
    return BotCredentials(registered.user_id, registered.device_id, registered.access_token, password)
