"""Keys borrowed from the command-line tools a user already signed in with: the Codex CLI and the Kimi Code CLI.

Only a token the tool stored and that has not expired is used; signing in again (`codex login`, `/login` in
`kimi`) renews it. A model's `api_key` wins over both. A login that cannot give a token is a `ValueError`
whose message says how to sign in again.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CliLogin", "codex_login", "kimi_login"]

_EXPIRY_MARGIN_S = 30


@dataclass(frozen=True, slots=True)
class CliLogin:
    """A borrowed access token, and the account it belongs to when the tool records one."""

    token: str
    account_id: str | None = None


def _read(path: Path, how_to_login: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"no login found at {path}: {how_to_login}") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path} ({exc}): {how_to_login}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds no login: {how_to_login}")
    return data


def _jwt_expiry(token: str) -> float | None:
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    return float(expiry) if isinstance(expiry, int | float) else None


def _fresh(expiry: float | None) -> bool:
    return expiry is None or time.time() < expiry - _EXPIRY_MARGIN_S


def codex_login(env: Mapping[str, str]) -> CliLogin:
    """The ChatGPT token the Codex CLI stored in `$CODEX_HOME/auth.json` (default `~/.codex`)."""
    how = "run `codex login`"
    path = Path(env.get("CODEX_HOME") or "~/.codex").expanduser() / "auth.json"
    tokens = _read(path, how).get("tokens")
    token = tokens.get("access_token") if isinstance(tokens, dict) else None
    if not isinstance(token, str) or not token:
        raise ValueError(f"{path} has no ChatGPT access token: {how}")
    if not _fresh(_jwt_expiry(token)):
        raise ValueError(f"the Codex login in {path} has expired: {how} again")
    account = tokens.get("account_id") if isinstance(tokens, dict) else None
    return CliLogin(token, str(account) if account else None)


def kimi_login(env: Mapping[str, str]) -> CliLogin:
    """The token the Kimi Code CLI stored in `$KIMI_CODE_HOME/credentials/kimi-code.json` (default `~/.kimi-code`)."""
    how = "run `kimi` and `/login`"
    path = Path(env.get("KIMI_CODE_HOME") or "~/.kimi-code").expanduser() / "credentials" / "kimi-code.json"
    data = _read(path, how)
    token = data.get("access_token")
    if not isinstance(token, str) or not token:
        raise ValueError(f"{path} has no access token: {how}")
    expiry = data.get("expires_at")
    if not _fresh(float(expiry) if isinstance(expiry, int | float) else None):
        raise ValueError(f"the Kimi Code login in {path} has expired: {how} again")
    return CliLogin(token)
