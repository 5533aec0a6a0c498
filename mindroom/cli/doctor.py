"""`mindroom doctor`: one line per check, pass or the fix. Output never contains a secret.

Checks: the config loads; the data dir is writable; the state backend can be used, and which daemon holds
its lock (`doctor_state`); the homeserver answers (or the embedded one can start); each account has a
usable session or a way to get one; each bot's device has a healthy crypto store; each model has its key
and answers; each plugin imports; each agno toolkit an agent names can run; each MCP server starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mindroom.cli.doctor_result import CheckResult, CheckStatus
from mindroom.cli.doctor_result import check_fail as _fail
from mindroom.cli.doctor_result import check_ok as _ok
from mindroom.cli.doctor_result import check_warn as _warn
from mindroom.cli.doctor_state import check_state
from mindroom.cli.doctor_tools import check_mcp_servers, check_toolkits
from mindroom.config.loading import load_config
from mindroom.config.main import Config, ModelConfig
from mindroom.config.providers import PROVIDER_ENV_VARS
from mindroom.constants import ROUTER_AGENT_NAME, RuntimePaths
from mindroom.errors import ConfigError
from mindroom.homeserver.embedded import embedded_connection, synapse_installed
from mindroom.logging_config import register_secret_env
from mindroom.matrix.credentials import BotCredentials, CredentialStore
from mindroom.matrix.crypto_store import CryptoStoreState, crypto_store_dir, inspect_crypto_store
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

_HTTP_TIMEOUT_S = 5.0
_MODEL_TIMEOUT_S = 60.0
_PROBE = "Reply with the single word OK."


def _get_json(url: str, token: str | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url)  # noqa: S310 - the operator's own homeserver URL
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:  # noqa: S310
            data = json.loads(response.read() or b"{}")
            return int(response.status), data if isinstance(data, dict) else {}
    except urllib.error.HTTPError as exc:
        return int(exc.code), {}


def _post_json(url: str, body: dict[str, Any], token: str) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST")  # noqa: S310 - the operator's homeserver
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:  # noqa: S310
            parsed = json.loads(response.read() or b"{}")
            return int(response.status), parsed if isinstance(parsed, dict) else {}
    except urllib.error.HTTPError as exc:
        return int(exc.code), {}


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
                "pip install -e '.[embedded]', or set MATRIX_HOMESERVER",
            ), None
        connection = embedded_connection(storage_root)
        if connection is not None:
            with contextlib.suppress(OSError):
                status, _ = await asyncio.to_thread(_get_json, f"{connection.url}/_matrix/client/versions")
                if status == 200:
                    return _ok(name, f"embedded homeserver is running at {connection.url}"), connection.url
        where = storage_root / "homeserver"
        return _ok(name, f"embedded homeserver will start with `mindroom run` (data in {where})"), None
    versions = f"{url.rstrip('/')}/_matrix/client/versions"
    try:
        status, body = await asyncio.to_thread(_get_json, versions)
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
    passwords = {ROUTER_AGENT_NAME: config.router.password} | {n: a.password for n, a in config.agents.items()}
    for bot, password in passwords.items():
        name = f"account {bot}"
        password_key = "router.password" if bot == ROUTER_AGENT_NAME else f"agents.{bot}.password"
        stored = store.load(bot)
        fallback = can_register or bool(password) or bool(stored and stored.password)
        if stored is not None and stored.access_token and url is not None:
            try:
                status, body = await asyncio.to_thread(
                    _get_json, f"{url}/_matrix/client/v3/account/whoami", stored.access_token
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


_NEW_DEVICE_FIX = (
    "restore the store from a backup, or run once with MINDROOM_NEW_CRYPTO_DEVICE=1 for a new device"
    " (it cannot read messages encrypted for the old one)"
)


async def _keys_published(url: str, stored: BotCredentials) -> bool | None:
    """Whether the homeserver holds keys for the stored device; None when it cannot be asked."""
    assert stored.device_id is not None
    assert stored.access_token is not None
    query = {"device_keys": {stored.user_id: [stored.device_id]}}
    try:
        status, body = await asyncio.to_thread(
            _post_json, f"{url}/_matrix/client/v3/keys/query", query, stored.access_token
        )
    except OSError:
        return None
    if status != 200:
        return None
    devices = body.get("device_keys", {}).get(stored.user_id, {})
    return isinstance(devices, dict) and stored.device_id in devices


async def check_crypto_stores(config: Config, storage_root: Path, url: str | None) -> list[CheckResult]:
    """Each bot's device id, and whether its crypto store opens and holds that device's keys."""
    store = CredentialStore(storage_root)
    results = []
    for bot in [ROUTER_AGENT_NAME, *config.agents]:
        name = f"crypto {bot}"
        stored = store.load(bot)
        if stored is None or stored.device_id is None:
            results.append(_ok(name, "no device yet; its crypto store is made at its first start"))
            continue
        device = stored.device_id
        report = await asyncio.to_thread(
            inspect_crypto_store, crypto_store_dir(storage_root, bot), stored.user_id, device
        )
        if report.healthy:
            results.append(_ok(name, f"device {device}; {report.describe()}"))
        elif report.state is CryptoStoreState.UNREADABLE:
            results.append(_fail(name, f"device {device}; {report.describe()}", _NEW_DEVICE_FIX))
        else:
            published = await _keys_published(url, stored) if url and stored.access_token else None
            if published is False:
                results.append(_ok(name, f"device {device} has no keys yet; `mindroom run` makes {report.path}"))
            elif published:
                lost = f"device {device}; {report.describe()}, but its keys are on the homeserver: run refuses this bot"
                results.append(_fail(name, lost, _NEW_DEVICE_FIX))
            else:
                results.append(
                    _warn(name, f"device {device}; {report.describe()} (the homeserver could not say if it had keys)")
                )
    return results


def _used_models(config: Config) -> dict[str, ModelConfig]:
    names = [agent.model for agent in config.agents.values()]
    if len(config.agents) > 1:
        names.append(config.router.model)
    return {name: config.models[name] for name in dict.fromkeys(names) if name in config.models}


def _key_problem(model: ModelConfig, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(what is missing, the fix) for a model whose provider cannot be used as configured."""
    import importlib.util

    custom_url = model.host or model.extra_kwargs.get("base_url")
    if model.provider == "openai" and not (model.api_key or env.get("OPENAI_API_KEY") or custom_url):
        return "no OpenAI key", "set OPENAI_API_KEY (or `api_key` on the model)"
    if model.provider == "anthropic":
        if importlib.util.find_spec("anthropic") is None:
            return "the anthropic package is missing", "pip install anthropic"
        if not (model.api_key or env.get("ANTHROPIC_API_KEY")):
            return "no Anthropic key", "set ANTHROPIC_API_KEY (or `api_key` on the model)"
    if model.provider == "ollama" and importlib.util.find_spec("ollama") is None:
        return "the ollama package is missing", "pip install ollama"
    return None


async def check_models(config: Config, env: Mapping[str, str], *, call_models: bool) -> list[CheckResult]:
    """Each model the agents use has its key, and (unless `call_models` is False) answers a short prompt."""
    results = []
    for model_name, model in _used_models(config).items():
        name = f"model {model_name}"
        problem = _key_problem(model, env)
        if problem is not None:
            results.append(_fail(name, f"{model.provider}:{model.id}: {problem[0]}", problem[1]))
            continue
        if model.provider == "offline":
            results.append(
                _warn(
                    name,
                    "the offline model answers by repeating the message",
                    f"set {', '.join(PROVIDER_ENV_VARS[:-1])} or {PROVIDER_ENV_VARS[-1]} for a real model",
                )
            )
            continue
        if not call_models:
            results.append(_ok(name, f"{model.provider}:{model.id} is configured (not called)"))
            continue
        results.append(await _probe_model(name, model_name, model, env))
    return results


async def _probe_model(name: str, model_name: str, model: ModelConfig, env: Mapping[str, str]) -> CheckResult:
    from mindroom.ai import GenerationRequest, close_caches, generate

    request = GenerationRequest(
        agent_name="doctor",
        display_name="Doctor",
        role="Checks that the model answers.",
        instructions=(),
        model=model,
        user_message=_PROBE,
        session_id="doctor",
        num_history_runs=0,
        markdown=False,
    )
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mindroom-doctor-") as scratch:
        try:
            async with asyncio.timeout(_MODEL_TIMEOUT_S):
                result = await generate(request, storage_root=Path(scratch), env=env)
        except TimeoutError:
            return _fail(
                name,
                f"{model.provider}:{model.id} did not answer within {_MODEL_TIMEOUT_S:.0f} s",
                "check the provider",
            )
        except Exception as exc:
            return _fail(name, f"{model.provider}:{model.id}: {exc}", "check the key, the model id and the network")
        finally:
            await close_caches()
    seconds = time.monotonic() - started
    if not result.text.strip():
        return _warn(name, f"{model.provider}:{model.id} answered with nothing", "check the model id")
    return _ok(name, f"{model.provider}:{model.id} answered in {seconds:.1f} s")


def check_plugins(config: Config, config_path: Path, storage_root: Path, env: Mapping[str, str]) -> list[CheckResult]:
    """Each plugin folder imports and its hooks compile."""
    from mindroom.plugins.discovery import build_registry, load_plugins

    paths = RuntimePaths(config_path=config_path.resolve(), storage_root=storage_root, env_values=dict(env))
    loaded = load_plugins(config, paths)
    registry = build_registry(config, loaded.plugins)
    results = []
    for plugin in loaded.plugins:
        count = sum(1 for hook in registry.all_hooks() if hook.plugin_name == plugin.name)
        results.append(_ok(f"plugin {plugin.name}", f"imports; {count} hooks"))
    results.extend(
        _fail(f"plugin {error.plugin}", error.cause, f"fix {error.path} or remove it from the config")
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
    try:
        config = load_config(config_path, env)
    except ConfigError as exc:
        problems = "; ".join(exc.problems)
        results.append(_fail("config", f"{config_path}: {problems}", "fix the file (see docs/configuration.md)"))
        results.append(check_data_dir(storage_root))
        return results
    results.append(_ok("config", f"{config_path} is valid ({len(config.agents)} agents)"))
    results.append(check_data_dir(storage_root))
    results.extend(await check_state(config, config_path, storage_root, env))
    homeserver, url = await check_homeserver(env, storage_root)
    results.append(homeserver)
    if homeserver.status is not CheckStatus.FAIL:
        results.extend(await check_accounts(config, env, storage_root, url))
    results.extend(await check_crypto_stores(config, storage_root, url))
    results.extend(await check_models(config, env, call_models=call_models))
    results.extend(check_plugins(config, config_path, storage_root, env))
    results.extend(check_toolkits(config, env))
    results.extend(await check_mcp_servers(config, RuntimePaths(config_path, storage_root, dict(env))))
    return results
