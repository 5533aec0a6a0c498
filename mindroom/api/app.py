"""`create_app`: the one FastAPI app: `/v1`, `/api`, `/metrics`, and the dashboard at `/`.

FastAPI (on Starlette, served by uvicorn) is chosen for the OpenAPI document it derives from the same
pydantic models that check the requests, and because MindRoom's own server is FastAPI: paths, status
codes and validation errors come out as its clients expect.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mindroom import __version__
from mindroom.api.app_context import ApiContext
from mindroom.api.approval_routes import approval_router
from mindroom.api.config_routes import config_router
from mindroom.api.connection_routes import connection_router
from mindroom.api.docs_page import add_docs
from mindroom.api.limits import BodyLimit
from mindroom.api.oauth_routes import oauth_router
from mindroom.api.openai_protocol import OpenAIError
from mindroom.api.openai_routes import v1_router
from mindroom.api.operator import operator_dependency
from mindroom.api.status_routes import status_router
from mindroom.api.thread_routes import thread_router
from mindroom.api.usage_routes import usage_router
from mindroom.daemon.reload import ReloadOutcome

if TYPE_CHECKING:
    from mindroom.daemon.metrics import MetricsCollector

__all__ = ["DASHBOARD_DIR", "SecurityHeaders", "create_app"]

DASHBOARD_DIR = Path(__file__).resolve().parent / "dashboard"
"""The dashboard's files: plain HTML, CSS and JavaScript, shipped as they are (no build step)."""
_DASHBOARD_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)


class SecurityHeaders:
    """ASGI middleware: no sniffing, no framing, no referrer; the dashboard's pages load only their own files."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        dashboard = scope["path"] == "/" or scope["path"].startswith("/dashboard/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [
                    (b"x-content-type-options", b"nosniff"),
                    (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"no-referrer"),
                ]
                if dashboard:
                    headers.append((b"content-security-policy", _DASHBOARD_CSP.encode()))
                    headers.append((b"cache-control", b"no-cache"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(ctx: ApiContext, collector: "MetricsCollector | None" = None) -> FastAPI:
    """The app on `ctx`; `collector` renders `/metrics` (one is made over the daemon when None)."""
    settings = ctx.settings
    app = FastAPI(
        title="MindRoom daemon",
        version=__version__,
        description="The OpenAI-compatible API (`/v1`), the REST API (`/api`), `/metrics` and the dashboard (`/`).",
        # FastAPI's own document and docs pages would be open to anyone (and load scripts from a CDN).
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    async def openai_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, OpenAIError)
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    app.add_exception_handler(OpenAIError, openai_error)
    app.include_router(v1_router(ctx))
    app.include_router(status_router(ctx))
    app.include_router(config_router(ctx))
    app.include_router(approval_router(ctx))
    app.include_router(usage_router(ctx))
    app.include_router(thread_router(ctx))
    app.include_router(connection_router(ctx))
    app.include_router(oauth_router(ctx))
    add_docs(app, ctx)

    def reloads() -> tuple[ReloadOutcome, ...]:
        reloader = ctx.daemon.reloader
        return tuple(reloader.history) if reloader is not None else ()

    made: list[MetricsCollector] = [collector] if collector is not None else []
    scraper = Annotated[str, Depends(operator_dependency(ctx, metrics=True))]

    @app.get("/metrics", tags=["metrics"], summary="Prometheus metrics of the daemon")
    async def scrape(who: scraper) -> Response:
        # prometheus_client loads at the first scrape: a daemon nobody scrapes never imports it.
        from mindroom.daemon.metrics import CONTENT_TYPE, MetricsCollector

        if not made:
            made.append(MetricsCollector(lambda: ctx.daemon.running, reloads))
        return Response(made[0].render(), media_type=CONTENT_TYPE)

    @app.get("/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(DASHBOARD_DIR / "index.html", media_type="text/html")

    app.mount("/dashboard", StaticFiles(directory=DASHBOARD_DIR), name="dashboard")
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes, timeout_s=settings.body_timeout_s)
    app.add_middleware(SecurityHeaders)
    return app
