"""`/openapi.json`, and with `MINDROOM_ENABLE_API_DOCS` `/docs` and `/redoc`, all behind the operator's key.

The document lists every route an attacker would try, so it is the operator's like the rest of `/api`. The
docs page is HTML rendered here from that document: a table of the routes, no script at all, under a strict
Content-Security-Policy, so nothing from another origin runs where the dashboard's cookie works.
"""

# No `from __future__ import annotations`: FastAPI reads the routes' local `Annotated` dependencies at runtime.
from collections.abc import Mapping
from html import escape
from typing import Annotated, Any

from fastapi import Depends, FastAPI
from fastapi.responses import HTMLResponse, JSONResponse

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import operator_dependency

__all__ = ["DOCS_CSP", "add_docs", "routes_page"]

DOCS_CSP = (
    "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self'; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
_METHODS = ("get", "post", "put", "patch", "delete")


def _schema_name(schema: Mapping[str, Any]) -> str:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    return str(schema.get("type", "object"))


def _row(path: str, method: str, operation: Mapping[str, Any]) -> str:
    parameters = [
        f"{p.get('name')} ({p.get('in')}{', required' if p.get('required') else ''})"
        for p in operation.get("parameters", [])
    ]
    content = operation.get("requestBody", {}).get("content", {})
    bodies = [f"{kind}: {_schema_name(media.get('schema', {}))}" for kind, media in content.items()]
    cells = (
        method.upper(),
        path,
        operation.get("summary", ""),
        "; ".join(parameters),
        "; ".join(bodies),
        ", ".join(operation.get("responses", {})),
    )
    return "<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in cells) + "</tr>"


def routes_page(document: Mapping[str, Any]) -> str:
    """The routes of an OpenAPI `document` as one HTML page (every value escaped; no script)."""
    info = document.get("info", {})
    title = escape(f"{info.get('title', 'API')} {info.get('version', '')}".strip())
    rows = [
        _row(path, method, operation)
        for path, item in document.get("paths", {}).items()
        for method, operation in item.items()
        if method in _METHODS
    ]
    head = "".join(f"<th>{name}</th>" for name in ("method", "path", "what", "parameters", "body", "answers"))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<title>{title}</title><link rel="stylesheet" href="/dashboard/style.css"></head>'
        f"<body><main><h1>{title}</h1><p>{escape(str(info.get('description', '')))}</p>"
        '<p>The whole description: <a href="/openapi.json">/openapi.json</a>.</p>'
        f"<section><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
        "</main></body></html>\n"
    )


def add_docs(app: FastAPI, ctx: ApiContext) -> None:
    """Serve `/openapi.json` (and `/docs`, `/redoc` when `ctx.settings.docs`) to the operator only."""
    operator = Annotated[str, Depends(operator_dependency(ctx))]

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(who: operator) -> JSONResponse:
        return JSONResponse(app.openapi())

    if not ctx.settings.docs:
        return

    async def docs(who: operator) -> HTMLResponse:
        return HTMLResponse(routes_page(app.openapi()), headers={"content-security-policy": DOCS_CSP})

    for path in ("/docs", "/redoc"):
        app.add_api_route(path, docs, methods=["GET"], include_in_schema=False)
