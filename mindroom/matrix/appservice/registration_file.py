"""Application-service mode: the homeserver pushes every event of the bots' rooms to the daemon once.

In sync mode each bot holds its own long-polling `/sync`, so every event in a room wakes every bot in it, and
the homeserver computes a sync reply per bot. Registered as an application service, the daemon receives each
event once, in a transaction, and hands it to each of its bots in that room in-process. The bots keep their
own accounts, devices and access tokens for everything they send; only receiving changes.

`AppserviceRegistration` is the registration file the homeserver reads (and the daemon reads back): who the
service is, where the homeserver reaches it, the two tokens, and the namespace of the bots' accounts. The
homeserver must also send to-device messages (MSC2409/MSC4203) and device-list changes and one-time key
counts (MSC3202) in transactions, which `SYNAPSE_EXPERIMENTAL_FEATURES` turns on in Synapse: the bots'
encryption needs them.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from mindroom.errors import MindroomError
from mindroom.private_files import write_private_file

__all__ = [
    "APPSERVICE_ID",
    "SYNAPSE_EXPERIMENTAL_FEATURES",
    "AppserviceConfigError",
    "AppserviceRegistration",
    "synapse_appservice_settings",
]

APPSERVICE_ID = "mindroom"
SYNAPSE_EXPERIMENTAL_FEATURES = {"msc2409_to_device_messages_enabled": True, "msc3202_transaction_extensions": True}
"""What Synapse needs turned on to put the bots' to-device messages, device lists and key counts in transactions."""


class AppserviceConfigError(MindroomError, ValueError):
    """The appservice registration file is missing, unreadable, or lacks what the daemon needs."""


def _token() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class AppserviceRegistration:
    """One application service: its id, where the homeserver sends transactions, its tokens, its bots' namespace."""

    id: str
    url: str
    as_token: str = field(repr=False)
    """What the daemon shows the homeserver (here only to ping it)."""
    hs_token: str = field(repr=False)
    """What the homeserver shows the daemon with every transaction."""
    sender_localpart: str
    user_regex: str
    """The accounts whose rooms, invites, to-device messages and key counts the homeserver sends."""

    @classmethod
    def create(
        cls, url: str, account_prefix: str, server_name: str, service_id: str = APPSERVICE_ID
    ) -> AppserviceRegistration:
        """A new registration with fresh tokens for the bots `@<account_prefix>…:<server_name>`."""
        regex = f"@{re.escape(account_prefix)}.*:{re.escape(server_name)}"
        return cls(service_id, url, _token(), _token(), f"{service_id}_appservice", regex)

    @classmethod
    def load(cls, path: Path) -> AppserviceRegistration:
        """Read a registration file (YAML, as the homeserver reads it); `AppserviceConfigError` says what is wrong."""
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            msg = f"the appservice registration {path} is unreadable: {exc}"
            raise AppserviceConfigError(msg) from exc
        if not isinstance(data, dict):
            msg = f"the appservice registration {path} is not a mapping"
            raise AppserviceConfigError(msg)
        missing = [key for key in ("id", "url", "as_token", "hs_token", "sender_localpart") if not data.get(key)]
        users = data.get("namespaces", {}).get("users") if isinstance(data.get("namespaces"), dict) else None
        regexes = [entry.get("regex") for entry in users or () if isinstance(entry, dict)]
        if not regexes or not all(isinstance(regex, str) for regex in regexes):
            missing.append("namespaces.users[].regex")
        if missing:
            msg = f"the appservice registration {path} lacks {', '.join(missing)}"
            raise AppserviceConfigError(msg)
        if not data.get("receive_ephemeral"):
            msg = f"the appservice registration {path} needs `receive_ephemeral: true` (the bots' to-device messages)"
            raise AppserviceConfigError(msg)
        return cls(
            str(data["id"]),
            str(data["url"]),
            str(data["as_token"]),
            str(data["hs_token"]),
            str(data["sender_localpart"]),
            "|".join(f"(?:{regex})" for regex in regexes),
        )

    def as_dict(self) -> dict[str, Any]:
        """The registration as the homeserver reads it."""
        return {
            "id": self.id,
            "url": self.url,
            "as_token": self.as_token,
            "hs_token": self.hs_token,
            "sender_localpart": self.sender_localpart,
            # Not exclusive: the bots are ordinary accounts, registered and signed in as before.
            "namespaces": {"users": [{"exclusive": False, "regex": self.user_regex}], "rooms": [], "aliases": []},
            "rate_limited": False,
            # Ephemeral events are the price of to-device messages (MSC2409): the homeserver sends both or neither.
            "receive_ephemeral": True,
            "org.matrix.msc3202": True,
        }

    def write(self, path: Path) -> None:
        """Write the registration file (mode 0600: it holds both tokens)."""
        write_private_file(path, yaml.safe_dump(self.as_dict(), sort_keys=False))

    def covers(self, user_id: str) -> bool:
        """True when `user_id` is in the service's namespace."""
        return re.fullmatch(self.user_regex, user_id) is not None

    @property
    def listen_address(self) -> tuple[str, int]:
        """Where the daemon listens: the URL's port, on its host when that is an address, else on every interface."""
        parsed = urlparse(self.url)
        host = parsed.hostname or "127.0.0.1"
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        if host != "localhost":
            try:
                ipaddress.ip_address(host)
            except ValueError:
                host = "0.0.0.0"  # a name (a container's, a proxy's): the homeserver connects from elsewhere
        return host, port


def synapse_appservice_settings(registration_path: Path) -> dict[str, Any]:
    """The `homeserver.yaml` settings that register the service with Synapse and send what encryption needs."""
    return {
        "app_service_config_files": [str(registration_path)],
        "experimental_features": dict(SYNAPSE_EXPERIMENTAL_FEATURES),
    }
