"""MCP over streamable HTTP at ``/mcp``, for ``graphsvc serve`` to mount beside ``/graphql``.

Wiring (in :func:`graphsvc.api.app.create_app`)::

    mcp = McpHttp(lambda: state.service, keys, settings, limiter_of=lambda: state.limiter)
    routes = [..., mcp.route]
    # in the lifespan, once the service is open and before it is closed:
    async with mcp.run():
        yield

Each request is authenticated on its own, like ``/graphql``: ``Authorization: Bearer <key>``
maps to a namespace and a role (:class:`~graphsvc.api.auth.ApiKeys`); a missing, malformed or
unknown key is HTTP 401 (``UNAUTHENTICATED``) before anything reaches the MCP session layer. With
no keys configured every request is the anonymous writer of the default namespace (``graphsvc
serve`` then binds loopback only). The SDK's session manager runs stateless with JSON responses:
no session outlives a request, so a session id never carries one caller's identity into another
caller's request, and any worker can answer any request. On a loopback bind the SDK's DNS
rebinding protection (Host and Origin checks) is on, since an anonymous local endpoint is
otherwise reachable from a web page through a rebinding domain.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from graphsvc.api.auth import ApiKeys, Principal, UnauthenticatedError
from graphsvc.api.middleware import PRINCIPAL, AuthGate
from graphsvc.api.ratelimit import RateLimits
from graphsvc.mcp.server import LimiterSource, ServiceSource, build_server
from graphsvc.settings import Settings

MCP_PATH = "/mcp"

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _no_limiter() -> None:
    return None


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body), status_code=status, media_type="application/json", headers=headers
    )


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host/Origin checks for a loopback bind (the browser origins of GRAPHSVC_CORS_ORIGINS are
    allowed too); none otherwise, where API keys are required anyway."""
    # Imported here: graphsvc.api.serve imports graphsvc.api.app, which mounts this module.
    from graphsvc.api.serve import is_loopback

    if not is_loopback(settings.host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = [*_LOOPBACK_HOSTS, *(f"{h}:*" for h in _LOOPBACK_HOSTS)]
    origins = [f"http://{h}" for h in _LOOPBACK_HOSTS] + [f"http://{h}:*" for h in _LOOPBACK_HOSTS]
    origins += [origin for origin in settings.cors_origins if origin != "*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def mcp_refusal(status: int, message: str, code: str, headers: dict[str, str]) -> Response:
    """How ``/mcp`` answers the gate's refusals (401, 429): JSON with an OAuth-style ``error`` and
    graphsvc's ``code``, the shape MCP clients read."""
    error = "invalid_token" if status == 401 else "rate_limited" if status == 429 else "refused"
    return _json(status, {"error": error, "error_description": message, "code": code}, headers)


def request_principal(ctx: ServerRequestContext[Any, Any]) -> Principal:
    """The principal the gate (:class:`graphsvc.api.middleware.AuthGate`) put in the scope of the
    request being served.

    Raises:
        UnauthenticatedError: the request did not pass the gate (no HTTP request, no principal).
    """
    scope = getattr(ctx.request, "scope", None)
    principal = scope.get(PRINCIPAL) if isinstance(scope, dict) else None
    if not isinstance(principal, Principal):
        raise UnauthenticatedError("no API key: send the header 'Authorization: Bearer <key>'")
    return principal


class McpHttp:
    """The ``/mcp`` endpoint: its route, and the context manager its lifespan must enter.

    Nothing happens in the constructor; :meth:`run` starts the SDK's session manager (a task
    group for the requests in flight) and stops it on exit. Requests before or after ``run``
    get 503.

    Args:
        service_of: the opened service, or ``None`` while the store is not open.
        keys: the configured API keys.
        settings: the namespace of anonymous callers, the body size limit, the bind address.
        limiter_of: the worker-thread limiter store calls share with GraphQL.
        limits: the rate limits (shared with ``/graphql``); ``None``: none.
        path: where to route it.
    """

    def __init__(
        self,
        service_of: ServiceSource,
        keys: ApiKeys,
        settings: Settings,
        *,
        limiter_of: LimiterSource = _no_limiter,
        limits: RateLimits | None = None,
        path: str = MCP_PATH,
    ) -> None:
        self.server = build_server(service_of, request_principal, limiter_of)
        self.settings = settings
        self.path = path
        # The same gate as /graphql: rate limits, failed-authentication limits, keys.
        self.gate = AuthGate(self._endpoint, keys, settings.namespace, limits, refuse=mcp_refusal)
        #: The route to add to the app (every method: POST, GET, DELETE).
        self.route = Route(path, endpoint=self.gate)
        self._manager: StreamableHTTPSessionManager | None = None

    async def _endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            body = {"error": "unavailable", "code": "UNAVAILABLE",
                    "error_description": "the MCP endpoint is not running (the server is "
                    "starting or stopping): retry shortly"}  # fmt: skip
            await _json(503, body)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve ``/mcp`` while inside (enter it in the app's lifespan)."""
        manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            security_settings=transport_security(self.settings),
            max_request_body_size=self.settings.max_body_bytes,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None


def mcp_http(
    service_of: ServiceSource,
    keys: ApiKeys,
    settings: Settings,
    *,
    limiter_of: LimiterSource = _no_limiter,
) -> McpHttp:
    """The ``/mcp`` endpoint over a service (see :class:`McpHttp`)."""
    return McpHttp(service_of, keys, settings, limiter_of=limiter_of)


__all__ = [
    "MCP_PATH",
    "PRINCIPAL",
    "McpHttp",
    "mcp_http",
    "mcp_refusal",
    "request_principal",
    "transport_security",
]
