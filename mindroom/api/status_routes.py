"""`/api`: health and readiness, the daemon's status (bots, sync, rooms, uptime), agents, plugins with their
load errors, hooks with live counters, rooms, the last turns, and the dashboard's sign-in cookie."""

import dataclasses
import math
import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency, redacted, running_or_503
from mindroom.api.security import COOKIE_NAME, matches
from mindroom.daemon.wiring import ApiCapabilities
from mindroom.hooks.telemetry import hook_telemetry, ordered_telemetry

__all__ = ["SessionRequest", "status_router"]


class SessionRequest(BaseModel):
    """`POST /api/auth/session`: the key the dashboard's cookie will carry."""

    api_key: str


def _bots(running: ApiCapabilities) -> list[dict[str, Any]]:
    directory = running.directory
    config = running.live.config
    names = {room_id: key for key, room_id in directory.room_ids.items()}
    bots = []
    for name, entity in directory.entities.items():
        display = (
            config.router.display_name
            if entity.is_router
            else getattr(config.responders().get(name), "display_name", name)
        )
        bots.append(
            {
                "name": name,
                "display_name": display,
                "user_id": directory.bot_user_ids.get(name),
                "synced": entity.client.has_synced,
                "rooms": [{"room_id": room, "name": names.get(room)} for room in sorted(entity.joined_rooms)],
                "in_flight": entity.in_flight,
                "answers": entity.metrics.answers,
            }
        )
    return bots


def _agents(running: ApiCapabilities) -> list[dict[str, Any]]:
    config = running.live.config
    unavailable: dict[str, list[dict[str, str]]] = {}
    for tool in running.live.tools.unavailable:
        unavailable.setdefault(tool.agent, []).append({"tool": tool.tool, "reason": tool.reason, "fix": tool.fix})
    return [
        {
            "name": name,
            "display_name": agent.display_name,
            "role": agent.role,
            "model": agent.model,
            "rooms": list(agent.rooms),
            "tools": list(agent.tools),
            "unavailable_tools": unavailable.get(name, []),
            "skills": list(agent.skills),
            "running": name in running.directory.entities,
            "private": agent.private.per if agent.private is not None else None,
        }
        for name, agent in config.agents.items()
    ]


def _plugins(ctx: ApiContext, running: ApiCapabilities) -> dict[str, Any]:
    live = running.live
    counts: dict[str, int] = {}
    for hook in live.registry.all_hooks():
        counts[hook.plugin_name] = counts.get(hook.plugin_name, 0) + 1
    reloader = ctx.daemon.reloader
    last_failure = next((o for o in reversed(reloader.history) if not o.ok), None) if reloader is not None else None
    return {
        "plugins": [
            {"name": plugin.name, "path": str(plugin.path), "hooks": counts.get(plugin.name, 0)}
            for plugin in live.plugins
        ],
        "errors": [{"plugin": e.plugin, "path": str(e.path), "error": e.cause} for e in live.plugin_errors],
        "last_reload_failure": None
        if last_failure is None
        else {"at": last_failure.started_at, "failed": list(last_failure.failed), "error": last_failure.error},
    }


def _hooks(running: ApiCapabilities) -> list[dict[str, Any]]:
    return [dataclasses.asdict(row) for row in ordered_telemetry(hook_telemetry(running.live.registry))]


def _ready(running: ApiCapabilities | None) -> bool:
    return running is not None and all(entity.client.has_synced for entity in running.directory.entities.values())


def status_router(ctx: ApiContext) -> APIRouter:
    """The status routes on `ctx`."""
    router = APIRouter(prefix="/api", tags=["status"])
    operator = Annotated[str, Depends(operator_dependency(ctx))]

    @router.get("/health", summary="Liveness, with each bot's Matrix sync state (no key needed)")
    async def health() -> dict[str, Any]:
        running = ctx.daemon.running
        sync = {} if running is None else {name: e.client.has_synced for name, e in running.directory.entities.items()}
        status = "starting" if running is None else ("ok" if all(sync.values()) else "degraded")
        return {"status": status, "matrix_sync": sync, "uptime_s": round(time.time() - ctx.started_at, 1)}

    @router.get("/ready", summary="Ready once the daemon has started and every bot has synced (no key needed)")
    async def ready() -> JSONResponse:
        ok = _ready(ctx.daemon.running)
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

    @router.post("/auth/session", summary="Sign the dashboard in: set its key cookie (HttpOnly, SameSite=Strict)")
    async def sign_in(body: SessionRequest, request: Request, response: Response) -> dict[str, bool]:
        if not ctx.settings.api_key:
            return {"ok": True}
        if not matches(body.api_key, ctx.settings.api_key):
            raise HTTPException(401, "Invalid API key")
        secure = request.url.scheme == "https"
        response.set_cookie(COOKIE_NAME, body.api_key, httponly=True, samesite="strict", secure=secure)
        return {"ok": True}

    @router.delete("/auth/session", summary="Sign the dashboard out")
    async def sign_out(response: Response) -> dict[str, bool]:
        response.delete_cookie(COOKIE_NAME)
        return {"ok": True}

    @router.get("/status", summary="Bots (synced or not, and in which rooms), uptime, counts")
    async def status(who: operator) -> dict[str, Any]:
        running = running_or_503(ctx)
        live = running.live
        return redacted(
            {
                "ready": _ready(running),
                "started_at": running.clock.started_at_ms / 1000,
                "uptime_s": round(time.time() - running.clock.started_at_ms / 1000, 1),
                "bots": _bots(running),
                "rooms": dict(running.directory.room_ids),
                "agents": len(live.config.agents),
                "plugins": len(live.plugins),
                "hooks": len(live.registry),
                "turns": running.turns.total,
                "operator": who,
            }
        )

    @router.get("/agents", summary="The configured agents")
    async def agents(who: operator) -> list[dict[str, Any]]:
        return redacted(_agents(running_or_503(ctx)))

    @router.get("/plugins", summary="Loaded plugins, the ones that failed to load and why, the last failed reload")
    async def plugins(who: operator) -> dict[str, Any]:
        return redacted(_plugins(ctx, running_or_503(ctx)))

    @router.get("/hooks", summary="Every hook with its live counters (what `mindroom hooks list` shows)")
    async def hooks(who: operator) -> list[dict[str, Any]]:
        return redacted(_hooks(running_or_503(ctx)))

    @router.get("/rooms", summary="Room keys from `rooms` and every agent's `rooms`")
    async def rooms(who: operator) -> list[str]:
        running = running_or_503(ctx)
        return list(running.live.config.all_room_keys())

    @router.get("/overview", summary="What the dashboard shows, in one read: status, plugins, hooks, approvals, turns")
    async def overview(who: operator) -> JSONResponse:
        running = running_or_503(ctx)
        desk = running.stores.approvals
        # Every pending approval is "overdue" at the end of time: the store's one query over pending ones.
        pending = desk.store.overdue(now=math.inf) if desk is not None else []
        # Read every two seconds by each open dashboard: handed out as it is built, without a second
        # validation pass over it.
        return JSONResponse(
            redacted(
                {
                    "ready": _ready(running),
                    "uptime_s": round(time.time() - running.clock.started_at_ms / 1000, 1),
                    "operator": who,
                    "bots": _bots(running),
                    "agents": _agents(running),
                    "plugins": _plugins(ctx, running),
                    "hooks": _hooks(running),
                    "approvals": [dataclasses.asdict(record) for record in pending],
                    "turns": [dataclasses.asdict(record) for record in running.turns.recent(20)],
                }
            )
        )

    @router.get("/turns", summary="The last answers: agent, source, latency, outcome and the hooks called")
    async def turns(who: operator, limit: int = 50) -> list[dict[str, Any]]:
        running = running_or_503(ctx)
        return redacted([dataclasses.asdict(record) for record in running.turns.recent(max(1, min(limit, 100)))])

    return router
