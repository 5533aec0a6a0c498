"""`/api/config/*` and `/api/reload`: read, validate and save `config.yaml`, reload it, and show the config in force.

A save goes the way an edit of the file goes: the text is validated (422 with each problem and its line),
written to the file atomically, and reloaded by the same coordinator as a file change (the live state is
swapped only when the new config and its plugins build). Reads carry `x-mindroom-config-generation`, a
digest of the file; a write naming an older generation is refused with 409, so two editors cannot
overwrite each other unnoticed.

`GET /api/config/effective` is the config in force, value by value, each with its source: config.yaml, a
change from chat (who, when) or a default (`mindroom.config.effective`), beside the room and thread settings
from chat and the kept changes not in effect; 409 while config.yaml does not load as it is now.

The dashboard reads the file redacted (`?redacted=true`): a line whose secret was hidden comes back
unchanged on save, and is then written as it stands in the file; a hidden secret cannot be edited there.
"""

import asyncio
import dataclasses
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any

import yaml
from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency, redacted, running_or_503
from mindroom.api.security import bearer_token, matches
from mindroom.config.effective import EffectiveConfig, hidden, read_effective_config
from mindroom.config.loading import MAX_CONFIG_BYTES, parse_config_text
from mindroom.config.main import Config
from mindroom.config.overrides import Override
from mindroom.daemon.reload import ReloadOutcome
from mindroom.errors import ConfigError
from mindroom.logging_config import get_logger, redact_text

__all__ = [
    "GENERATION_HEADER",
    "ConfigSource",
    "config_errors",
    "config_notices",
    "config_router",
    "generation",
    "redact_lines",
    "restore_redacted",
]

logger = get_logger(__name__)

GENERATION_HEADER = "x-mindroom-config-generation"
_REDACTED = redact_text("password=hidden-value").split("=", 1)[1]
_LINE = re.compile(r"\(line (\d+)\)|^line (\d+)")
_RELOAD_WAIT_S = 60.0


class ConfigSource(BaseModel):
    """The YAML text of `config.yaml`."""

    source: str


def generation(text: str) -> str:
    """The generation of a config text: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def config_errors(error: ConfigError) -> list[dict[str, Any]]:
    """Each problem with the line it names (None when it names none)."""
    found = []
    for problem in error.problems:
        match = _LINE.search(problem)
        line = int(match.group(1) or match.group(2)) if match else None
        found.append({"line": line, "message": redact_text(problem)})
    return found


def redact_lines(text: str) -> str:
    """The config text with secrets hidden, line by line (each hidden line can then be matched on save)."""
    return "\n".join(redact_text(line) for line in text.splitlines()) + ("\n" if text.endswith("\n") else "")


def restore_redacted(new: str, current: str) -> str:
    """`new` with each line that is still the redacted form of a line of `current` put back as it stands there.

    Raises ValueError when a hidden secret was edited (its line differs from every redacted line).
    """
    originals = {redact_text(line): line for line in current.splitlines() if redact_text(line) != line}
    lines = [originals.get(line, line) for line in new.splitlines()]
    if any(_REDACTED in line for line in lines):
        msg = "a hidden secret was changed; edit that line in config.yaml itself"
        raise ValueError(msg)
    return "\n".join(lines) + ("\n" if new.endswith("\n") else "")


def _write_atomically(path: Path, text: str) -> None:
    """Replace the file in one rename (the watcher and readers never see half a file), keeping its mode."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    handle, temporary = tempfile.mkstemp(prefix=".config-", suffix=".yaml", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _outcome(outcome: ReloadOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {
        "ok": outcome.ok,
        "summary": outcome.summary(),
        "reason": outcome.reason,
        "at": outcome.started_at,
        "error": outcome.error,
        "failed": list(outcome.failed),
    }


def _override(override: Override) -> dict[str, Any]:
    value = hidden(override.value, override.key.rsplit(".", 1)[-1])
    where = {"scope": override.scope, "room_id": override.room_id or None, "thread_id": override.thread_id or None}
    # `path`, not `key`: the answer is redacted, and a field named `key` would be blanked as a secret.
    return {**where, "path": override.key, "value": value, "set_by": override.set_by, "set_at": override.set_at}


def config_notices(config: Config) -> list[dict[str, Any]]:
    """The config's keys accepted and not used here (`Config.notices`), each with its line and the reason."""
    # `path`, not `key`: the answer is redacted, and a field named `key` would be blanked as a secret.
    return [{"path": item.key, "line": item.line, "message": item.message} for item in config.notices]


def _effective_body(found: EffectiveConfig, config: Config) -> dict[str, Any]:
    return {
        "notices": config_notices(config),
        "values": [dataclasses.asdict(value) for value in found.values],
        "scoped": [_override(override) for override in found.scoped],
        "not_in_effect": [{**_override(override), "why": why} for override, why in found.not_in_effect],
    }


def config_router(ctx: ApiContext) -> APIRouter:
    """The config and reload routes on `ctx`."""
    router = APIRouter(prefix="/api", tags=["config"])
    operator = Annotated[str, Depends(operator_dependency(ctx))]
    path = ctx.daemon.config_path

    def env() -> dict[str, str]:
        running = ctx.daemon.running
        return dict(running.paths.env_values) if running is not None else {}

    def read() -> str:
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def headers(text: str) -> dict[str, str]:
        return {
            GENERATION_HEADER: generation(text),
            "x-mindroom-config-uses-includes": "false",
            "x-mindroom-config-pending-restart": "false",
        }

    async def reload(reason: str) -> ReloadOutcome | None:
        reloader = ctx.daemon.reloader
        if reloader is None:
            return None
        async with asyncio.timeout(_RELOAD_WAIT_S):
            return await asyncio.shield(reloader.request(reason))

    async def save(text: str, expected: str | None, who: str) -> JSONResponse:
        current = read()
        if expected is not None and expected != generation(current):
            raise HTTPException(409, {"message": "config.yaml changed since it was read", **headers(current)})
        try:
            text = restore_redacted(text, current)
        except ValueError as exc:
            raise HTTPException(422, {"message": str(exc), "errors": [{"line": None, "message": str(exc)}]}) from None
        if len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
            raise HTTPException(413, "config too large")
        try:
            parse_config_text(text, path, env())
        except ConfigError as exc:
            raise HTTPException(422, {"message": "invalid config", "errors": config_errors(exc)}) from None
        try:
            await asyncio.to_thread(_write_atomically, path, text)
        except OSError as exc:  # a read-only mount (Docker), a full disk
            raise HTTPException(409, f"config.yaml cannot be written here: {exc.strerror}") from None
        logger.info("config saved through the API", by=who, generation=generation(text))
        outcome = await reload("config saved through the API")
        body = {"saved": True, "generation": generation(text), "reload": _outcome(outcome)}
        return JSONResponse(redacted(body), headers=headers(text))

    @router.post("/config/load", summary="The current config as JSON")
    async def load(who: operator) -> JSONResponse:
        text = read()
        config = running_or_503(ctx).live.config
        return JSONResponse(redacted(config.model_dump(mode="json")), headers=headers(text))

    @router.get("/config/raw", summary="The YAML source of config.yaml (redacted=true hides secrets)")
    async def raw(who: operator, hide: Annotated[bool, Query(alias="redacted")] = False) -> JSONResponse:
        text = read()
        body = {"source": redact_lines(text) if hide else text, "uses_includes": False, "redacted": hide}
        return JSONResponse(body, headers=headers(text))

    @router.put("/config/raw", summary="Replace config.yaml after validation, then reload it (409, 422)")
    async def put_raw(
        body: ConfigSource,
        who: operator,
        generation_header: Annotated[str | None, Header(alias=GENERATION_HEADER)] = None,
    ) -> JSONResponse:
        return await save(body.source, generation_header, who)

    @router.put("/config/save", summary="Replace the whole config (JSON), then reload it (409, 422)")
    async def put_config(
        body: dict[str, Any],
        who: operator,
        generation_header: Annotated[str | None, Header(alias=GENERATION_HEADER)] = None,
    ) -> JSONResponse:
        return await save(yaml.safe_dump(body, sort_keys=False, allow_unicode=True), generation_header, who)

    @router.post("/config/validate", summary="Validate a config text without saving it")
    async def validate(body: ConfigSource, who: operator) -> dict[str, Any]:
        try:
            config = parse_config_text(restore_redacted(body.source, read()), path, env())
        except ConfigError as exc:
            return {"valid": False, "errors": config_errors(exc), "notices": []}
        except ValueError as exc:
            return {"valid": False, "errors": [{"line": None, "message": str(exc)}], "notices": []}
        return {"valid": True, "errors": [], "notices": config_notices(config)}

    @router.get("/config/effective", summary="The config in force, value by value, with where each comes from")
    async def effective(who: operator) -> JSONResponse:
        live = running_or_503(ctx).live
        try:
            found = await asyncio.to_thread(read_effective_config, live.config, live.settings, path, env())
        except ConfigError as exc:
            body = {"message": "config.yaml does not load as it is now", "errors": config_errors(exc)}
            raise HTTPException(409, body) from None
        return JSONResponse(redacted(_effective_body(found, live.config)), headers=headers(read()))

    @router.get("/config/schema", summary="The JSON schema of config.yaml")
    async def schema(who: operator) -> dict[str, Any]:
        return Config.model_json_schema()

    @router.get("/config/reload-status", summary="Whether the live config is the file's (operator key required)")
    async def reload_status(request: Request) -> dict[str, Any]:
        key = ctx.settings.api_key
        if not key:
            raise HTTPException(503, "MINDROOM_API_KEY is not set")
        if not matches(bearer_token(request), key):
            raise HTTPException(401, "Invalid API key")
        text = read()
        running = ctx.daemon.running
        try:
            applied = running is not None and parse_config_text(text, path, env()) == running.live.config
        except ConfigError:
            applied = False
        reloader = ctx.daemon.reloader
        last = reloader.history[-1] if reloader is not None and reloader.history else None
        return redacted({"generation": generation(text), "applied": applied, "last_reload": _outcome(last)})

    @router.post("/reload", summary="Reload config.yaml and every plugin now")
    async def reload_now(who: operator) -> dict[str, Any]:
        running_or_503(ctx)
        outcome = await reload(f"reload requested through the API by {who}")
        if outcome is None:
            raise HTTPException(503, "reloading is not available yet")
        return redacted(_outcome(outcome)) or {}  # never None: the outcome is there

    return router
