"""The files a private Synapse needs under `<data>/homeserver/`: signing key, log config, `homeserver.yaml`.

Pure file writing, no process handling; `mindroom.homeserver.embedded` decides the port and secrets and runs Synapse.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from mindroom.private_files import write_private_file

__all__ = ["LOG_FILENAME", "write_synapse_files"]

LOG_FILENAME = "homeserver.log"

# A private server that only our own bots and one human use: generous limits, so streaming edits and
# several bots logging in from one address never meet a 429.
_GENEROUS = {"per_second": 100, "burst_count": 1000}
_RATE_LIMITS: dict[str, Any] = {
    "rc_message": _GENEROUS,
    "rc_registration": _GENEROUS,
    "rc_login": {"address": _GENEROUS, "account": _GENEROUS, "failed_attempts": {"per_second": 1, "burst_count": 10}},
    "rc_joins": {"local": _GENEROUS, "remote": _GENEROUS},
    "rc_joins_per_room": _GENEROUS,
    "rc_invites": {"per_room": _GENEROUS, "per_user": _GENEROUS, "per_issuer": _GENEROUS},
    "rc_room_creation": _GENEROUS,
    "rc_admin_redaction": _GENEROUS,
}


def _ensure_signing_key(path: Path) -> None:
    if path.exists():
        return
    from signedjson.key import generate_signing_key, write_signing_keys

    with path.open("w", encoding="utf-8") as key_file:
        write_signing_keys(key_file, [generate_signing_key("a_" + secrets.token_hex(2))])
    path.chmod(0o600)


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
    rate_limits: Mapping[str, Any] = _RATE_LIMITS,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write (or refresh) Synapse's files for a loopback listener on `port`; returns `homeserver.yaml`'s path.

    `state` holds `server_name`, `registration_shared_secret`, `macaroon_secret_key` and `form_secret`.
    The signing key is created once and kept. `rate_limits` and `extra` settings go into the config as given
    (the test homeserver lifts every limit and makes password hashing cheap).
    """
    base.mkdir(parents=True, exist_ok=True)
    (base / "media_store").mkdir(exist_ok=True)
    signing_key = base / "signing.key"
    _ensure_signing_key(signing_key)
    (base / "log.config").write_text(yaml.safe_dump(_log_config(base / LOG_FILENAME)), encoding="utf-8")
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
        **rate_limits,
        **(extra or {}),
    }
    path = base / "homeserver.yaml"
    write_private_file(path, yaml.safe_dump(config, sort_keys=False))
    return path
