"""`/api/oauth/{provider}/authorize` and `/callback`: a browser connecting a person's account at a provider.

Outside the operator's keys (as MindRoom's flow routes: per-flow state): the connect link a person got in
chat is their authorization. The link works once and gives the browser opening it a cookie; the provider's
callback finishes only with that cookie and the `state` sent with it (`mindroom.oauth.flow`). No response
carries a token: the callback answers with a short page saying whether the account is connected.
"""

import contextlib
from html import escape
from urllib.parse import urlsplit

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from mindroom.api.app_context import ApiContext
from mindroom.api.operator import running_or_503
from mindroom.logging_config import get_logger
from mindroom.oauth.errors import OAuthError, OAuthFlowError
from mindroom.oauth.service import OAuthConnections, connections_for

__all__ = ["BROWSER_COOKIE", "oauth_router"]

logger = get_logger(__name__)

BROWSER_COOKIE = "mindroom_oauth_browser"
_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
    "<body><h1>{title}</h1><p>{text}</p></body></html>"
)
_NO_STORE = {"Cache-Control": "no-store"}


def _page(title: str, text: str, status: int = 200) -> HTMLResponse:
    body = _PAGE.format(title=escape(title), text=escape(text))
    return HTMLResponse(body, status_code=status, headers=_NO_STORE)


def _cookie_path(callback: str) -> str:
    """The folder of the callback URL: the browser sends the cookie back with the callback, and nowhere else."""
    return urlsplit(callback).path.rsplit("/", 1)[0] + "/"


def oauth_router(ctx: ApiContext) -> APIRouter:
    """The OAuth connection routes on `ctx`."""
    router = APIRouter(prefix="/api/oauth", tags=["oauth"])

    def service(request: Request) -> OAuthConnections:
        # No key here, so the limit is per address, as for the rest of `/api` without a credential.
        wait = ctx.api_limiter.retry_after(request.client.host if request.client is not None else "local")
        if wait is not None:
            raise HTTPException(429, "Rate limit reached", headers={"Retry-After": str(int(wait) + 1)})
        found = connections_for(running_or_503(ctx).paths.storage_root)
        if found is None:
            raise HTTPException(503, "OAuth connections are not available in this daemon")
        return found

    @router.get("/{provider}/authorize", summary="Open a connect link: go on to the provider's sign-in")
    async def authorize(request: Request, provider: str, link: str = "") -> Response:
        connections = service(request)
        try:
            url, secret = connections.authorize(provider, link)
            callback = connections.provider(provider).redirect_uri
        except OAuthFlowError as error:
            return _page("Link not valid", str(error), 400)
        except OAuthError as error:
            return _page("Not available", str(error), 404)
        response = RedirectResponse(url, status_code=302, headers=_NO_STORE)
        response.set_cookie(
            BROWSER_COOKIE,
            secret,
            max_age=int(connections.flows.ttl_s),
            # The callback's own folder as the browser sees it (a reverse proxy's prefix included).
            path=_cookie_path(callback),
            httponly=True,
            samesite="lax",
            secure=urlsplit(callback).scheme == "https",
        )
        return response

    @router.get("/{provider}/callback", summary="The provider's redirect back: finish connecting the account")
    async def callback(request: Request, provider: str, state: str = "", code: str = "", error: str = "") -> Response:
        connections = service(request)
        try:
            connections.provider(provider)
        except OAuthError as unknown:
            return _page("Not available", str(unknown), 404)
        if error or not code:
            # The flow ends here either way: its state is used up.
            if state:
                with contextlib.suppress(OAuthFlowError):
                    connections.flows.take(state, request.cookies.get(BROWSER_COOKIE), provider)
            return _page("Not connected", f"The provider did not authorize the connection ({error or 'no code'}).", 400)
        try:
            await connections.complete(provider, state, code, request.cookies.get(BROWSER_COOKIE))
        except OAuthFlowError as refused:
            logger.info("OAuth callback refused", provider=provider, reason=str(refused))
            return _page("Not connected", str(refused), 400)
        except OAuthError as failed:
            logger.warning("OAuth callback failed", provider=provider, error=str(failed))
            return _page("Not connected", str(failed), 502)
        response = _page("Connected", "Your account is connected. You can close this page and go back to the chat.")
        response.delete_cookie(BROWSER_COOKIE, path=_cookie_path(connections.provider(provider).redirect_uri))
        return response

    return router
