"""Per-bot Matrix credentials and sync tokens on disk: private (0600 in 0700 dirs), written atomically."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from mindroom.constants import DEFAULT_ACCOUNT_PREFIX
from mindroom.logging_config import get_logger, register_secret_values
from mindroom.private_files import write_private_file

__all__ = [
    "DEFAULT_ACCOUNT_PREFIX",
    "BotCredentials",
    "CredentialKeeper",
    "CredentialStore",
    "SyncTokenStore",
    "bot_localpart",
    "bot_user_id",
    "write_private_file",
]

logger = get_logger(__name__)

_BOT_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_.=-]*$")
_PREFIX = re.compile(r"[a-z0-9_.=-]*")


def bot_localpart(bot_name: str, prefix: str = DEFAULT_ACCOUNT_PREFIX) -> str:
    """The Matrix localpart of a bot's account: `<prefix><bot_name>` (`mindroom_<bot_name>` by default), in
    lowercase: an agent named with capitals (MindRoom allows them) has the account its lowercase name gives."""
    if not _BOT_NAME.fullmatch(bot_name):
        msg = f"bot name {bot_name!r} must be letters, digits, '_', '.', '=' or '-'"
        raise ValueError(msg)
    if not _PREFIX.fullmatch(prefix):
        msg = f"account prefix {prefix!r} must be lowercase letters, digits, '_', '.', '=' or '-'"
        raise ValueError(msg)
    return prefix + bot_name.lower()


def bot_user_id(bot_name: str, server_name: str, prefix: str = DEFAULT_ACCOUNT_PREFIX) -> str:
    """The full Matrix user id of a bot's account: `@<prefix><bot_name>:<server_name>`."""
    return f"@{bot_localpart(bot_name, prefix)}:{server_name}"


@dataclass(frozen=True, slots=True)
class BotCredentials:
    """What a bot needs to resume its Matrix session; secrets are kept out of `repr`."""

    user_id: str
    device_id: str | None = None
    access_token: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Wherever credentials come from (a file, the database, a login), their secrets are redacted from
        # then on: in log lines, and in what a person pastes before it is kept or sent to a model.
        register_secret_values([self.access_token, self.password])

    def with_session(self, user_id: str, device_id: str, access_token: str) -> BotCredentials:
        """A copy with a fresh login session, keeping the password."""
        return replace(self, user_id=user_id, device_id=device_id, access_token=access_token)

    def to_json(self) -> str:
        """The on-disk JSON form."""
        data = {
            "user_id": self.user_id,
            "device_id": self.device_id,
            "access_token": self.access_token,
            "password": self.password,
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> BotCredentials:
        """Parse the on-disk JSON form; raises `ValueError` when it is not a credentials object."""
        data: Any = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("user_id"), str):
            msg = "credentials file has no user_id"
            raise ValueError(msg)

        def optional_str(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) and value else None

        return cls(
            user_id=data["user_id"],
            device_id=optional_str("device_id"),
            access_token=optional_str("access_token"),
            password=optional_str("password"),
        )


class CredentialKeeper(Protocol):
    """Where a bot's credentials are kept: files (`CredentialStore`), or also its crypto state in the database."""

    def load(self, bot_name: str) -> BotCredentials | None:
        """The stored credentials, or None."""

    def save(self, bot_name: str, credentials: BotCredentials) -> None:
        """Keep the credentials."""


class CredentialStore:
    """Credentials per bot under `<storage_root>/matrix/credentials/<bot>.json`."""

    def __init__(self, storage_root: Path) -> None:
        self._dir = Path(storage_root) / "matrix" / "credentials"

    def path(self, bot_name: str) -> Path:
        """The credentials file of one bot."""
        bot_localpart(bot_name)  # validates the name before it becomes part of a path
        return self._dir / f"{bot_name}.json"

    def names(self) -> list[str]:
        """The bots with a credentials file here, sorted."""
        return sorted(path.stem for path in self._dir.glob("*.json")) if self._dir.is_dir() else []

    def load(self, bot_name: str) -> BotCredentials | None:
        """The stored credentials, or None when there are none (an unreadable file is logged and ignored)."""
        path = self.path(bot_name)
        try:
            return BotCredentials.from_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("stored credentials unreadable", agent=bot_name, path=str(path), error=str(exc))
            return None

    def save(self, bot_name: str, credentials: BotCredentials) -> None:
        """Write the credentials atomically with mode 0600."""
        write_private_file(self.path(bot_name), credentials.to_json())


class SyncTokenStore:
    """The last fully handled sync token per bot as files, `<storage_root>/matrix/sync/<bot>.token` (a `SyncTokens`
    of `mindroom.state.tokens`; with state in PostgreSQL the client is given the database's one instead)."""

    def __init__(self, storage_root: Path) -> None:
        self._dir = Path(storage_root) / "matrix" / "sync"

    def path(self, bot_name: str) -> Path:
        """The token file of one bot."""
        bot_localpart(bot_name)
        return self._dir / f"{bot_name}.token"

    def load(self, bot_name: str) -> str | None:
        """The stored token, or None."""
        try:
            token = self.path(bot_name).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        return token or None

    def save(self, bot_name: str, token: str) -> None:
        """Write the token atomically with mode 0600."""
        write_private_file(self.path(bot_name), token + "\n", durable=False)

    def clear(self, bot_name: str) -> None:
        """Forget the token so the next sync starts fresh (without backlog)."""
        with contextlib.suppress(FileNotFoundError):
            self.path(bot_name).unlink()
