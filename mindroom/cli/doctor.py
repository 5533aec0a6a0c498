"""`mindroom doctor`: one line per check, pass or the fix. Output never contains a secret.

Checks: the config loads, and what `mindroom run` would refuse or start without (`check_start`, the check
of `mindroom config validate`, in its words); the data dir is writable; the state backend can be used, and
which daemon holds its lock (`doctor_state`); the homeserver answers (or the embedded one can start); each
account has a usable session or a way to get one; each bot's device has healthy crypto state, is
cross-signed and has its key backup (`doctor_crypto`); each configured model has its key and package and
answers (`doctor_models`); each plugin imports; each agno toolkit an agent names can run; each MCP server
starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Mapping
from pathlib import Path

from mindroom.cli.doctor_crypto import check_crypto_stores
from mindroom.cli.doctor_http import get_json
from mindroom.cli.doctor_models import check_models
from mindroom.cli.doctor_overrides import check_overrides
from mindroom.cli.doctor_result import CheckResult, CheckStatus
from mindroom.cli.doctor_result import check_fail as _fail
from mindroom.cli.doctor_result import check_ok as _ok
from mindroom.cli.doctor_result import check_warn as _warn
from mindroom.cli.doctor_state import check_state
from mindroom.cli.doctor_tools import check_mcp_servers, check_sandbox, check_toolkits
from mindroom.config.main import Config
from mindroom.config.project_extras import install_extra_command
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.daemon.start_check import CONFIG_FIX, check_start
from mindroom.homeserver.embedded import embedded_connection, synapse_installed
from mindroom.logging_config import register_secret_env
from mindroom.matrix.credentials import CredentialStore
from mindroom.private_files import open_to_others

__all__ = [
    "CheckResult",
    "CheckStatus",
    "check_accounts",
    "check_crypto_stores",
    "check_data_dir",
    "check_homeserver",
    "check_models",
    "check_plugins",
    "run_checks",
]


def check_data_dir(storage_root: Path) -> CheckResult:
    """The data dir exists (or can be created), takes a file, and is its owner's alone."""
    name = "data dir"
    try:
        storage_root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=storage_root, prefix=".doctor-", delete=True) as probe:
            probe.write(b"ok")
    except OSError as exc:
        return _fail(
            name, f"{storage_root} is not writable ({exc.strerror})", "fix its permissions or set MINDROOM_STORAGE_PATH"
        )
    if open_to_others(storage_root):
        return _warn(
            name,
            f"{storage_root} is writable but other users may read it (it holds credentials and conversations)",
            f"chmod 700 {storage_root}",
        )
    return _ok(name, f"{storage_root} is writable")


async def check_homeserver(env: Mapping[str, str], storage_root: Path) -> tuple[CheckResult, str | None]:
    """The configured homeserver answers, or the embedded one can start; returns the reachable URL."""
    name = "homeserver"
    url = env.get("MATRIX_HOMESERVER")
    if not url:
        if not synapse_installed():
            return _fail(
                name,
                "no MATRIX_HOMESERVER is set and the embedded homeserver is not installed",
                f"{install_extra_command('embedded')}, or set MATRIX_HOMESERVER",
            ), None
        connection = embedded_connection(storage_root)
        if connection is not None:
            with contextlib.suppress(OSError):
                status, _ = await asyncio.to_thread(get_json, f"{connection.url}/_matrix/client/versions")
                if status == 200:
                    return _ok(name, f"embedded homeserver is running at {connection.url}"), connection.url
        where = storage_root / "homeserver"
        return _ok(name, f"embedded homeserver will start with `mindroom run` (data in {where})"), None
    versions = f"{url.rstrip('/')}/_matrix/client/versions"
    try:
        status, body = await asyncio.to_thread(get_json, versions)
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        return _fail(name, f"cannot reach {url} ({reason})", "check MATRIX_HOMESERVER and that the server runs"), None
    if status != 200:
        return _fail(name, f"{url} answered HTTP {status}", "MATRIX_HOMESERVER must be the client API base URL"), None
    spec = ", ".join(body.get("versions", [])[-2:]) if isinstance(body.get("versions"), list) else "?"
    return _ok(name, f"{url} is reachable (Matrix {spec})"), url.rstrip("/")


async def check_accounts(
    config: Config, env: Mapping[str, str], storage_root: Path, url: str | None
) -> list[CheckResult]:
    """Each bot has a stored session the homeserver accepts, or a password or registration secret."""
    store = CredentialStore(storage_root)
    can_register = not env.get("MATRIX_HOMESERVER") or bool(env.get("MATRIX_REGISTRATION_SHARED_SECRET"))
    results = []
    passwords = {ROUTER_AGENT_NAME: config.router.password} | {n: a.password for n, a in config.responders().items()}
    for bot, password in passwords.items():
        name = f"account {bot}"
        password_key = "router.password" if bot == ROUTER_AGENT_NAME else f"agents.{bot}.password"
        stored = store.load(bot)
        fallback = can_register or bool(password) or bool(stored and stored.password)
        if stored is not None and stored.access_token and url is not None:
            try:
                status, body = await asyncio.to_thread(
                    get_json, f"{url}/_matrix/client/v3/account/whoami", stored.access_token
                )
            except OSError as exc:
                results.append(_warn(name, f"could not ask the homeserver ({exc})"))
                continue
            if status == 200 and body.get("user_id") == stored.user_id:
                results.append(_ok(name, f"{stored.user_id} has a working session"))
            elif fallback:
                results.append(_warn(name, f"stored session of {stored.user_id} was refused; run will sign in again"))
            else:
                results.append(
                    _fail(
                        name,
                        "stored session refused and no password",
                        f"set agents.{bot}.password or the shared secret",
                    )
                )
        elif stored is not None and stored.access_token:
            results.append(_ok(name, f"{stored.user_id} has a stored session (checked when the homeserver runs)"))
        elif can_register:
            results.append(_ok(name, "will be registered on first run"))
        elif password:
            results.append(_ok(name, "will sign in with the configured password"))
        else:
            results.append(
                _fail(
                    name,
                    "no stored session, no password and no registration secret",
                    f"set MATRIX_REGISTRATION_SHARED_SECRET or {password_key}",
                )
            )
    return results


def check_plugins(config: Config, config_path: Path, storage_root: Path, env: Mapping[str, str]) -> list[CheckResult]:
    """Each plugin folder imports and its hooks compile; one that does not is a warning (run starts without it)."""
    from mindroom.plugins.discovery import build_registry, load_plugins

    paths = RuntimePaths(config_path=config_path.resolve(), storage_root=storage_root, env_values=dict(env))
    loaded = load_plugins(config, paths)
    registry = build_registry(config, loaded.plugins, start_workers=False)
    results = []
    for plugin in loaded.plugins:
        count = sum(1 for hook in registry.all_hooks() if hook.plugin_name == plugin.name)
        results.append(_ok(f"plugin {plugin.name}", f"imports; {count} hooks"))
    # `mindroom run` starts without a plugin that does not load (and says so): a warning, as at validate.
    results.extend(
        _warn(
            f"plugin {error.plugin}",
            f"mindroom run starts without it: {error.cause}",
            f"fix {error.path} or remove it from the config",
        )
        for error in loaded.errors
    )
    if not results:
        results.append(_ok("plugins", "none configured"))
    return results


async def run_checks(
    config_path: Path, storage_root: Path, env: Mapping[str, str], *, call_models: bool = True
) -> list[CheckResult]:
    """Every check, in order; later checks that need an earlier one's result are skipped when it failed."""
    register_secret_env(env)
    results: list[CheckResult] = []
    paths = RuntimePaths(config_path=config_path, storage_root=storage_root, env_values=dict(env))
    checked = await asyncio.to_thread(check_start, paths)
    config = checked.config
    if config is None:
        results.extend(_fail("config", f"{config_path}: {f.text}", f.fix or CONFIG_FIX) for f in checked.errors)
        results.append(check_data_dir(storage_root))
        return results
    refused = [finding for finding in checked.errors if finding.topic == "config"]
    results.extend(_fail("config", f"{config_path}: {finding.text}", finding.fix) for finding in refused)
    if not checked.errors:
        results.append(
            _ok("config", f"{config_path} is valid ({len(config.agents)} agents, {len(config.teams)} teams)")
        )
    # Plugins and models have lines of their own below; tools too, with the findings of the start check.
    results.extend(_warn("config", str(finding)) for finding in checked.warnings if finding.topic == "notice")
    results.append(check_data_dir(storage_root))
    results.extend(await check_state(config, config_path, storage_root, env))
    results.extend(await check_overrides(config, config_path, storage_root, env))
    homeserver, url = await check_homeserver(env, storage_root)
    results.append(homeserver)
    if homeserver.status is not CheckStatus.FAIL:
        results.extend(await check_accounts(config, env, storage_root, url))
    database = env.get("MINDROOM_DATABASE_URL") or config.storage.database_url
    results.extend(await check_crypto_stores(config, storage_root, url, env=env, database_url=database))
    results.extend(await check_models(config, env, call_models=call_models))
    results.extend(check_plugins(config, config_path, storage_root, env))
    results.extend(await check_sandbox(config, env))
    results.extend(check_toolkits(config, env, checked))
    results.extend(await check_mcp_servers(config, RuntimePaths(config_path, storage_root, dict(env))))
    return results
