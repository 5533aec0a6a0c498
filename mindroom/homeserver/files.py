"""The files a private Synapse needs in its folder: signing key, log config, `homeserver.yaml`.

Pure file writing, no process handling. The embedded homeserver (`mindroom.homeserver.embedded`) and the
test homeserver (`mindroom.testing.homeserver`) both write their config here; they differ only in the
limiter level and their `extra` settings.
"""

from __future__ import annotations

import io
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from mindroom.private_files import private_dir, write_private_file

__all__ = ["LIMITER_KEYS", "LOG_FILENAME", "LimiterLevel", "LimiterRate", "rate_limits", "write_synapse_files"]

LOG_FILENAME = "homeserver.log"

# Every client-facing limiter Synapse 1.163 reads, mapped to its sub-limiters (none: the key is one limiter).
# Federation is off (no federation listener, empty whitelist), so rc_federation and rc_remote_media_downloads
# would never apply.
LIMITER_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "rc_3pid_validation": (),
        "rc_admin_redaction": (),
        "rc_delayed_event_mgmt": (),
        "rc_invites": ("per_issuer", "per_room", "per_user"),
        "rc_joins": ("local", "remote"),
        "rc_joins_per_room": (),
        "rc_key_requests": (),
        "rc_login": ("account", "address", "failed_attempts"),
        "rc_media_create": (),
        "rc_message": (),
        "rc_presence": ("per_user",),
        "rc_profile": (),
        "rc_registration": (),
        "rc_registration_token_validity": (),
        "rc_reports": (),
        "rc_room_creation": (),
        "rc_third_party_invite": (),
        "rc_user_directory": (),
    }
)
_FAILED_LOGINS = ("rc_login", "failed_attempts")


@dataclass(frozen=True, slots=True)
class LimiterRate:
    """One limiter's setting: the steady rate, and the burst allowed above it."""

    per_second: float
    burst_count: int

    def as_config(self) -> dict[str, float | int]:
        """The mapping Synapse reads for one limiter."""
        return {"per_second": self.per_second, "burst_count": self.burst_count}


class LimiterLevel(Enum):
    """How much every limiter allows: GENEROUS for people on the embedded server, UNLIMITED for tests and benchmarks."""

    # A private server that only our own bots and one human use: streaming edits and several bots
    # signing in from one address never meet a 429, but failed logins stay slow, so guessing the
    # human's password takes ages even from loopback.
    GENEROUS = (LimiterRate(100, 1000), LimiterRate(1, 10))
    # Tests and benchmarks measure the daemon, never Synapse's throttling.
    UNLIMITED = (LimiterRate(10_000, 100_000), LimiterRate(10_000, 100_000))

    def __init__(self, rate: LimiterRate, failed_logins: LimiterRate) -> None:
        self.rate = rate
        self.failed_logins = failed_logins

    def rate_for(self, key: str, part: str | None = None) -> LimiterRate:
        """The rate of limiter `key` (and its sub-limiter `part`) at this level."""
        return self.failed_logins if (key, part) == _FAILED_LOGINS else self.rate


def rate_limits(level: LimiterLevel) -> dict[str, Any]:
    """Synapse's `rc_*` settings: every key of `LIMITER_KEYS` at `level`."""
    settings: dict[str, Any] = {}
    for key, parts in LIMITER_KEYS.items():
        if parts:
            settings[key] = {part: level.rate_for(key, part).as_config() for part in parts}
        else:
            settings[key] = level.rate_for(key).as_config()
    return settings


def _ensure_signing_key(path: Path) -> None:
    if path.exists():
        return
    from signedjson.key import generate_signing_key, write_signing_keys

    # Built in memory and written private, so the key is never readable by others, not even briefly.
    text = io.StringIO()
    write_signing_keys(text, [generate_signing_key("a_" + secrets.token_hex(2))])
    write_private_file(path, text.getvalue())


def _log_config(log_path: Path) -> dict[str, Any]:
    return {
        "version": 1,
        "formatters": {"plain": {"format": "%(asctime)s %(name)s %(levelname)s %(message)s"}},
        "handlers": {
            "file": {
                "class": "logging.handlers.RotatingFileHandler",
                "formatter": "plain",
                "filename": str(log_path),
                "maxBytes": 10_000_000,
                "backupCount": 3,
            }
        },
        "root": {"level": "WARNING", "handlers": ["file"]},
        "disable_existing_loggers": False,
    }


def write_synapse_files(
    base: Path,
    *,
    port: int,
    state: Mapping[str, Any],
    limiter: LimiterLevel = LimiterLevel.GENEROUS,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write (or refresh) Synapse's files for a loopback listener on `port`; returns `homeserver.yaml`'s path.

    `state` holds `server_name`, `registration_shared_secret`, `macaroon_secret_key` and `form_secret`.
    The signing key is created once and kept; every file is mode 0600 in 0700 folders (what Synapse writes
    itself, its database, media and logs, is private by the umask it is started with). `extra` settings
    go into the config as given (the test homeserver makes hashing cheap).
    """
    private_dir(base)
    private_dir(base / "media_store")
    signing_key = base / "signing.key"
    _ensure_signing_key(signing_key)
    write_private_file(base / "log.config", yaml.safe_dump(_log_config(base / LOG_FILENAME)))
    config: dict[str, Any] = {
        "server_name": state["server_name"],
        "public_baseurl": f"http://127.0.0.1:{port}/",
        "pid_file": str(base / "homeserver.pid"),
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "database": {"name": "sqlite3", "args": {"database": str(base / "homeserver.db")}},
        "log_config": str(base / "log.config"),
        "media_store_path": str(base / "media_store"),
        "signing_key_path": str(signing_key),
        "registration_shared_secret": state["registration_shared_secret"],
        "macaroon_secret_key": state["macaroon_secret_key"],
        "form_secret": state["form_secret"],
        "enable_registration": False,
        "report_stats": False,
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "federation_domain_whitelist": [],
        "presence": {"enabled": False},
        "url_preview_enabled": False,
        "enable_metrics": False,
        **rate_limits(limiter),
        **(extra or {}),
    }
    path = base / "homeserver.yaml"
    write_private_file(path, yaml.safe_dump(config, sort_keys=False))
    return path
