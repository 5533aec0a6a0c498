"""The one reader of the process environment: `.env`, `*_FILE` secrets, the data directory, the homeserver.

Every part of the daemon and the CLI resolves these the same way because they all start from one
`DaemonEnvironment`, built once per process by `daemon_environment()`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from urllib.parse import urlparse

from dotenv import dotenv_values

from mindroom.config.providers import PROVIDERS, provider_env_defaults
from mindroom.constants import DEFAULT_ACCOUNT_PREFIX, DEFAULT_STORAGE_DIRNAME, RuntimePaths
from mindroom.errors import ConfigError

__all__ = [
    "DEFAULT_SHUTDOWN_GRACE_S",
    "SECRET_FILE_VARIABLES",
    "DaemonEnvironment",
    "HomeserverSettings",
    "daemon_environment",
    "embedded_appservice",
    "homeserver_settings",
    "process_environ",
    "read_environment",
    "resolve_storage_root",
    "secret_value",
]

DEFAULT_SHUTDOWN_GRACE_S = 10.0
SECRET_FILE_VARIABLES = (
    "MATRIX_REGISTRATION_SHARED_SECRET",
    *(provider.key_env for provider in PROVIDERS.values() if provider.key_env),
    "OLLAMA_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "MINDROOM_USER_PASSWORD",
    "MINDROOM_DATABASE_URL",
    "OPENAI_COMPAT_API_KEYS",
    "OPENAI_COMPAT_API_KEY_REQUESTERS",
    "MINDROOM_API_KEY",
    "MINDROOM_METRICS_TOKEN",
)
"""Each may instead be given as `<NAME>_FILE`, the path of a file holding the value."""
_NONE: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class HomeserverSettings:
    """Where the homeserver is and how bot accounts are created there."""

    url: str
    server_name: str
    registration_shared_secret: str | None
    account_prefix: str = DEFAULT_ACCOUNT_PREFIX
    appservice_registration: Path | None = None
    """The appservice registration file (`MATRIX_APPSERVICE_REGISTRATION`): events then come in the homeserver's
    transactions, each once, instead of one long-polling sync per bot."""


@dataclass(frozen=True, slots=True)
class DaemonEnvironment:
    """What the process environment says, read once: its values, the config and data paths, the homeserver.

    `homeserver` is None when `MATRIX_HOMESERVER` is unset: the daemon then needs the embedded one.
    """

    config_path: Path
    storage_root: Path
    values: Mapping[str, str]
    homeserver: HomeserverSettings | None = None

    @property
    def runtime_paths(self) -> RuntimePaths:
        """The paths every part of the daemon shares, with the environment the config is read with."""
        return RuntimePaths(config_path=self.config_path, storage_root=self.storage_root, env_values=self.values)

    @property
    def account_prefix(self) -> str:
        """The prefix of the bots' account names (`MINDROOM_ACCOUNT_PREFIX`)."""
        return self.values.get("MINDROOM_ACCOUNT_PREFIX") or DEFAULT_ACCOUNT_PREFIX

    @property
    def database_url(self) -> str | None:
        """`MINDROOM_DATABASE_URL`: the PostgreSQL database of the daemon's state (wins over `storage.database_url`)."""
        return self.values.get("MINDROOM_DATABASE_URL") or None

    @property
    def shutdown_grace_s(self) -> float:
        """How long in-flight answers may take at shutdown (`MINDROOM_SHUTDOWN_GRACE_S`, default 10 s)."""
        try:
            return max(0.0, float(self.values.get("MINDROOM_SHUTDOWN_GRACE_S", DEFAULT_SHUTDOWN_GRACE_S)))
        except ValueError:
            return DEFAULT_SHUTDOWN_GRACE_S

    def with_homeserver(self, homeserver: HomeserverSettings, values: Mapping[str, str] = _NONE) -> DaemonEnvironment:
        """The same environment on `homeserver` (the embedded one, once it runs), with `values` set too."""
        return replace(self, homeserver=homeserver, values={**self.values, **values})


def process_environ() -> dict[str, str]:
    """A copy of the process environment (the only place the daemon reads `os.environ`)."""
    return dict(os.environ)


def read_environment(config_path: Path) -> dict[str, str]:
    """The process environment, completed by a `.env` file beside the config (the environment wins; a relative
    `MINDROOM_STORAGE_PATH` there is taken from the config's folder)."""
    env: dict[str, str] = {}
    dotenv = config_path.parent / ".env"
    if dotenv.is_file():
        env.update({k: v for k, v in dotenv_values(dotenv).items() if v is not None})
        if storage := env.get("MINDROOM_STORAGE_PATH"):
            # The file sits beside the config, so its relative path is the config folder's, whatever the
            # command's folder (as MindRoom reads it); an absolute one is kept as it is.
            env["MINDROOM_STORAGE_PATH"] = str(config_path.parent / Path(storage).expanduser())
    env.update(process_environ())
    return env


def _with_secret_files(env: dict[str, str]) -> dict[str, str]:
    for name in SECRET_FILE_VARIABLES:
        path = env.get(f"{name}_FILE")
        if path and not env.get(name):
            # Docker and systemd hand secrets over as files; the value never has to sit in the environment.
            env[name] = Path(path).read_text(encoding="utf-8").strip()
    return env


def secret_value(env: Mapping[str, str], name: str) -> str | None:
    """`name` from the environment, else the content of the file `<name>_FILE` names; None when neither is set.

    For the secrets tools and MCP servers name (an API key per tool): read when the tool is built, not at start.
    """
    value = env.get(name)
    if value:
        return value
    path = env.get(f"{name}_FILE")
    if not path:
        return None
    try:
        return Path(path).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def resolve_storage_root(config_path: Path, option: Path | None, env: Mapping[str, str]) -> Path:
    """`--storage-path`, else `MINDROOM_STORAGE_PATH` (also from `.env`), else `mindroom_data` beside the config."""
    raw = option or (Path(env["MINDROOM_STORAGE_PATH"]) if env.get("MINDROOM_STORAGE_PATH") else None)
    return (raw or config_path.resolve().parent / DEFAULT_STORAGE_DIRNAME).expanduser().resolve()


def _server_name_from_url(url: str) -> str:
    host = urlparse(url).hostname or "localhost"
    return "localhost" if host in ("127.0.0.1", "::1") else host


def homeserver_settings(env: Mapping[str, str]) -> HomeserverSettings | None:
    """The homeserver the environment names (`MATRIX_*`), or None when `MATRIX_HOMESERVER` is unset."""
    url = env.get("MATRIX_HOMESERVER")
    if not url:
        return None
    return HomeserverSettings(
        url,
        env.get("MATRIX_SERVER_NAME") or _server_name_from_url(url),
        env.get("MATRIX_REGISTRATION_SHARED_SECRET"),
        env.get("MINDROOM_ACCOUNT_PREFIX") or DEFAULT_ACCOUNT_PREFIX,
        Path(registration).expanduser() if (registration := env.get("MATRIX_APPSERVICE_REGISTRATION")) else None,
    )


def embedded_appservice(env: Mapping[str, str]) -> bool:
    """Whether the embedded homeserver delivers events as an application service (`MINDROOM_MATRIX_DELIVERY=
    appservice`, the default: each event once, pushed) rather than through one long-polling sync per bot (`sync`)."""
    delivery = env.get("MINDROOM_MATRIX_DELIVERY", "").strip().lower() or "appservice"
    if delivery not in ("appservice", "sync"):
        raise ConfigError("environment", [f"MINDROOM_MATRIX_DELIVERY must be 'appservice' or 'sync', not {delivery!r}"])
    return delivery == "appservice"


def daemon_environment(config_path: Path, storage_option: Path | None = None) -> DaemonEnvironment:
    """Read the environment once: process env and `.env`, `*_FILE` secrets, provider defaults, paths, homeserver."""
    config_path = config_path.resolve()
    env = _with_secret_files(read_environment(config_path))
    for key, value in provider_env_defaults(env).items():
        env.setdefault(key, value)
    storage_root = resolve_storage_root(config_path, storage_option, env)
    if storage_option is not None:
        # The config loader finds the data directory from these values (it refuses includes into it).
        env["MINDROOM_STORAGE_PATH"] = str(storage_root)
    return DaemonEnvironment(
        config_path=config_path,
        storage_root=storage_root,
        values=env,
        homeserver=homeserver_settings(env),
    )
