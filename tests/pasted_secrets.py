"""Secrets a person might paste into a chat, made by the daemon's own parts, and near misses that stay as written."""

from __future__ import annotations

import json
import secrets
import string
from dataclasses import dataclass
from pathlib import Path

from mindroom.api.keys import dashboard_key
from mindroom.logging_config import register_secret_values
from mindroom.matrix.credentials import CredentialStore
from mindroom.matrix.crypto.recovery_key import RecoveryKeys
from mindroom.private_files import write_private_file

__all__ = ["Pasted", "pasted_secrets"]

_UPPER_DIGITS = string.ascii_uppercase + string.digits


@dataclass(frozen=True)
class Pasted:
    """Each secret (by kind) as the person pastes it, and near misses of them that are not secrets."""

    secrets: dict[str, str]
    near_misses: tuple[str, ...]

    def message(self) -> str:
        """One message holding every secret and every near miss, each in a sentence of its own."""
        told = [f"my {kind} is {value} ok." for kind, value in self.secrets.items()]
        return " ".join([*told, *(f"not a secret: {near} ok." for near in self.near_misses)])


def _upper(count: int) -> str:
    return "".join(secrets.choice(_UPPER_DIGITS) for _ in range(count))


def pasted_secrets(storage_root: Path) -> Pasted:
    """The daemon's secrets as it makes and registers them under `storage_root`, plus AWS key ids."""
    recovery = RecoveryKeys(storage_root).load_or_create().text
    dashboard = dashboard_key(storage_root).value
    password = secrets.token_urlsafe(24)
    store = CredentialStore(storage_root)
    credentials = {"user_id": "@mindroom_helper:localhost", "password": password, "device_id": "DEVICE"}
    write_private_file(store.path("helper"), json.dumps(credentials))
    loaded = store.load("helper")  # as the daemon reads them when it starts
    assert loaded is not None and loaded.password == password
    registered = f"operator-shared-{secrets.token_hex(8)}"
    register_secret_values([registered])
    groups = recovery.split()
    other_key = "AKIA" + _upper(16)  # the near misses' own, so none of them holds a secret
    return Pasted(
        secrets={
            "recovery key": recovery,
            "recovery key, without its spaces": "".join(groups),
            "dashboard key": dashboard,
            "Matrix password": password,
            "registered value": registered,
            "AWS access key id": "AKIA" + _upper(16),
            "AWS temporary key id": "ASIA" + _upper(16),
        },
        near_misses=(
            "AKIA" + _upper(15),  # one character short
            "akia" + _upper(16).lower(),  # lower case
            "X" + other_key,  # inside a longer word
            other_key + "Z",  # one character long
            other_key + "_suffix",
            " ".join(groups[:11]),  # a recovery key is 12 groups
            registered[:-1],  # a registered value's prefix
            "EsTimate",
        ),
    )
