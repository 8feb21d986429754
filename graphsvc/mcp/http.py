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

Event streams (``GET /mcp`` with ``Accept: text/event-stream``) hold a connection open, and no
request timeout covers them: :class:`StreamSlots` caps them per key
(``GRAPHSVC_MCP_MAX_STREAMS_PER_KEY``, then 429) and in total (``GRAPHSVC_MCP_MAX_STREAMS``, at
most half the process's file descriptor limit, then 503), and a stream that carries no message
for ``GRAPHSVC_MCP_STREAM_IDLE_TIMEOUT`` seconds is ended (the SSE pings do not count: they are
the server's own). A refused stream's connection is closed, so it frees its descriptor at once.

Every refusal of ``/mcp``, the gate's and the SDK's own (a wrong Content-Type, Host or Origin, a
method it does not serve), is a JSON-RPC error whose message starts with graphsvc's code
(``UNAUTHENTICATED: no API key: ...``), the shape MCP clients show their user, with
``error_description`` and ``code`` beside it (:func:`mcp_refusal`, :func:`sdk_refusals`). A 401
challenges ``ApiKey``, not ``Bearer``: a host reads a Bearer challenge as OAuth and goes looking for
metadata graphsvc does not serve.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INTERNAL_ERROR, INVALID_REQUEST
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from graphsvc.api.auth import ApiKeys, Principal, UnauthenticatedError
from graphsvc.api.loopback import is_loopback
from graphsvc.api.middleware import PRINCIPAL, AuthGate, BodyLimit
from graphsvc.api.ratelimit import RateLimits, retry_after
from graphsvc.mcp.server import LimiterSource, ServiceSource, build_server
from graphsvc.settings import Settings

MCP_PATH = "/mcp"

logger = logging.getLogger("graphsvc.mcp")

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
    if not is_loopback(settings.host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = [*_LOOPBACK_HOSTS, *(f"{h}:*" for h in _LOOPBACK_HOSTS)]
    origins = [f"http://{h}" for h in _LOOPBACK_HOSTS] + [f"http://{h}:*" for h in _LOOPBACK_HOSTS]
    origins += [origin for origin in settings.cors_origins if origin != "*"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


#: The challenge of a 401 from ``/mcp``. Not ``Bearer``: to an MCP host a Bearer challenge means
#: OAuth, and sends it looking for a protected-resource metadata document graphsvc does not have.
#: The key still goes in ``Authorization: Bearer <key>`` (the refusal's message says so).
MCP_CHALLENGE = 'ApiKey realm="graphsvc"'


def mcp_refusal(
    status: int,
    message: str,
    code: str,
    headers: dict[str, str],
    *,
    rpc_code: int | None = None,
    request_id: str | int | None = None,
) -> Response:
    """How ``/mcp`` answers a refusal (the gate's 401 and 429, the stream caps, the SDK's own).

    The body is a JSON-RPC error, which MCP clients surface as the error of the request they
    sent (the SDK's client reads it at any status; another body becomes its bare "Server
    returned an error response"): ``message`` is ``CODE: message`` like a tool error's, and
    ``data`` holds graphsvc's ``code`` and the HTTP ``status``. ``error_description`` and
    ``code`` repeat the message and code at the top level for plain HTTP clients. A 401 carries
    :data:`MCP_CHALLENGE` in place of the gate's Bearer challenge.

    Args:
        status: the HTTP status.
        message: what went wrong and what to do.
        code: graphsvc's code (``UNAUTHENTICATED``, ``LIMIT_EXCEEDED``, ...).
        headers: response headers (``Retry-After``, ``Allow``, ...).
        rpc_code: the JSON-RPC error code (default: -32600 for a 4xx, -32603 for a 5xx).
        request_id: the JSON-RPC id of the refused request, when known.
    """
    if rpc_code is None:
        rpc_code = INTERNAL_ERROR if status >= 500 else INVALID_REQUEST
    headers = {k: v for k, v in headers.items() if k.lower() != "www-authenticate"}
    if status == 401:
        headers["WWW-Authenticate"] = MCP_CHALLENGE
    error = {
        "code": rpc_code,
        "message": f"{code}: {message}",
        "data": {"code": code, "status": status},
    }
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": error,
        "error_description": message,
        "code": code,
    }
    return _json(status, body, headers)


#: graphsvc's code for each refusal status of the SDK; any other 4xx is BAD_INPUT, 5xx INTERNAL.
_SDK_CODES = {
    403: "FORBIDDEN",  # an Origin the DNS-rebinding protection refuses
    404: "NOT_FOUND",
    413: "LIMIT_EXCEEDED",
    421: "FORBIDDEN",  # a Host the DNS-rebinding protection refuses
    503: "UNAVAILABLE",
}
#: Response headers of the SDK's refusal kept in ours (the rest describe its own body).
_KEPT_HEADERS = {b"allow", b"retry-after", b"mcp-session-id"}
#: Most bytes of a refusal's body read for its message.
_MAX_REFUSAL_BYTES = 64 * 1024


#: The part of a pydantic error line after its message: the error type, the input value (which
#: echoes what the client sent) and the input type.
_PYDANTIC_DETAIL = re.compile(r"\s*\[type=.*$")


def plain_message(text: str) -> str:
    """An SDK refusal's message as graphsvc tells it: one line, and for a message that does
    not parse (the SDK hands on pydantic's dump, which quotes the input values, names the
    library's version and links its documentation) the first field and problem only."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return text
    if "validation error" not in lines[0]:
        return lines[0][:500]
    found = "not a JSON-RPC 2.0 message"
    for number, line in enumerate(lines[1:], start=1):
        if line.startswith("  ") and not line.startswith("    "):  # a message under its field
            field = lines[number - 1].strip()
            found = f"{field}: {_PYDANTIC_DETAIL.sub('', line).strip()}"
            break
    return (
        f"the body is not an MCP message ({found[:200]}): send a JSON-RPC 2.0 object with "
        "'jsonrpc': '2.0', a 'method' and, for a request, an 'id'"
    )


def _sdk_error(body: bytes, status: int) -> tuple[str, int | None, str | int | None]:
    """The message, JSON-RPC code and request id of an SDK refusal: a JSON-RPC error's, else
    the text (``Invalid Host header``) or the status, with no code and no id; the message as
    :func:`plain_message` tells it."""
    text = body[:_MAX_REFUSAL_BYTES].decode("utf-8", "replace").strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            rpc = error.get("code")
            found = parsed.get("id")
            return (
                plain_message(str(error["message"])),
                rpc if isinstance(rpc, int) and not isinstance(rpc, bool) else None,
                found if isinstance(found, str | int) and not isinstance(found, bool) else None,
            )
    return plain_message(text) if text else f"refused with HTTP {status}", None, None


def sdk_refusals(send: Send) -> Send:
    """``send`` for the SDK's answers: a refusal (status 400 or above) is rewritten as
    :func:`mcp_refusal` (same status, graphsvc's code, the SDK's message); anything else passes
    through unchanged."""
    refusal: dict[str, Any] | None = None
    body = bytearray()

    async def rewriting(message: Message) -> None:
        nonlocal refusal
        if message["type"] == "http.response.start" and message["status"] >= 400:
            refusal = dict(message)
            return
        if refusal is None or message["type"] != "http.response.body":
            await send(message)
            return
        if len(body) < _MAX_REFUSAL_BYTES:
            body.extend(message.get("body", b""))
        if message.get("more_body", False):
            return
        status = int(refusal["status"])
        code = _SDK_CODES.get(status, "INTERNAL" if status >= 500 else "BAD_INPUT")
        kept = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in refusal.get("headers", [])
            if name.lower() in _KEPT_HEADERS
        }
        text, rpc_code, request_id = _sdk_error(bytes(body), status)
        answer = mcp_refusal(status, text, code, kept, rpc_code=rpc_code, request_id=request_id)
        await send({"type": "http.response.start", "status": status, "headers": answer.raw_headers})
        await send({"type": "http.response.body", "body": answer.body, "more_body": False})

    return rewriting


#: The share of GRAPHSVC_MCP_MAX_STREAMS one namespace's keys may hold together by default.
NAMESPACE_STREAM_SHARE = 4


def namespace_stream_cap(settings: Settings, total: int) -> int:
    """Most event streams one namespace's keys may hold: the setting, else a quarter of
    ``total`` (at least the per-key cap)."""
    configured = settings.mcp_max_streams_per_namespace
    if configured is not None:
        return configured
    return max(settings.mcp_max_streams_per_key, total // NAMESPACE_STREAM_SHARE)


class StreamSlots:
    """Open event streams, per API key, per namespace and in total (used on the event loop
    only). A key's streams count against its namespace's too: a tenant with 25 read keys took
    all 100 streams, 4 a key, and left none to the others.

    Args:
        per_key: most streams one key may hold (``GRAPHSVC_MCP_MAX_STREAMS_PER_KEY``).
        total: most streams in all (``GRAPHSVC_MCP_MAX_STREAMS``, after :func:`stream_cap`).
        per_namespace: most streams one namespace's keys may hold together
            (``GRAPHSVC_MCP_MAX_STREAMS_PER_NAMESPACE``, :func:`namespace_stream_cap`).
    """

    def __init__(self, per_key: int, total: int, per_namespace: int | None = None) -> None:
        self.per_key = per_key
        self.total = total
        self.per_namespace = total if per_namespace is None else per_namespace
        self.open = 0
        self._by_key: dict[str, int] = {}
        self._by_namespace: dict[str, int] = {}

    def take(self, key: str, namespace: str = "") -> str | None:
        """Take a slot for ``key`` of ``namespace``: ``None`` when taken, else the setting that
        refuses it."""
        if self._by_key.get(key, 0) >= self.per_key:
            return "GRAPHSVC_MCP_MAX_STREAMS_PER_KEY"
        if self._by_namespace.get(namespace, 0) >= self.per_namespace:
            return "GRAPHSVC_MCP_MAX_STREAMS_PER_NAMESPACE"
        if self.open >= self.total:
            return "GRAPHSVC_MCP_MAX_STREAMS"
        self._by_key[key] = self._by_key.get(key, 0) + 1
        self._by_namespace[namespace] = self._by_namespace.get(namespace, 0) + 1
        self.open += 1
        return None

    def give_back(self, key: str, namespace: str = "") -> None:
        """Return a slot :meth:`take` gave ``key`` of ``namespace``."""
        self.open -= 1
        for counts, name in ((self._by_key, key), (self._by_namespace, namespace)):
            left = counts.get(name, 1) - 1
            if left > 0:
                counts[name] = left
            else:
                counts.pop(name, None)


def descriptor_limit() -> int | None:
    """The process's soft limit on open file descriptors (``None``: no such limit here)."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def stream_cap(configured: int, descriptors: int | None) -> int:
    """Most event streams at once: ``configured``, and at most half of ``descriptors`` (the
    other half is kept for health checks, GraphQL requests, the store and the log)."""
    return configured if descriptors is None else min(configured, descriptors // 2)


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
        # The same gate as /graphql: rate limits, failed-authentication limits, keys; then the
        # body's size and time limits, answered in this endpoint's shape (the app's own limit
        # passes /mcp through: a caller without a key is told so first).
        limited = BodyLimit(
            self._endpoint,
            settings.max_body_bytes,
            settings.body_timeout,
            refuse=mcp_refusal,
            hint="send less in one call (remember_many with fewer memories, or several calls)",
        )
        self.gate = AuthGate(limited, keys, settings.namespace, limits, refuse=mcp_refusal)
        #: The route to add to the app (every method: POST, GET, DELETE).
        self.route = Route(path, endpoint=self.gate)
        self._manager: StreamableHTTPSessionManager | None = None
        #: The open event streams (the total is set by :meth:`run`).
        self.streams = StreamSlots(
            settings.mcp_max_streams_per_key,
            settings.mcp_max_streams,
            namespace_stream_cap(settings, settings.mcp_max_streams),
        )

    async def _endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            message = (
                "the MCP endpoint is not running (the server is starting or stopping): "
                "retry shortly"
            )
            await mcp_refusal(503, message, "UNAVAILABLE", {})(scope, receive, send)
            return
        if scope.get("method") == "GET":  # an event stream, or a quick refusal of one
            await self._stream(manager, scope, receive, send)
            return
        await manager.handle_request(scope, receive, sdk_refusals(send))

    async def _stream(
        self, manager: StreamableHTTPSessionManager, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """One event stream, within the caps, ended after the idle timeout."""
        principal = scope.get(PRINCIPAL)
        if isinstance(principal, Principal):
            namespace = principal.namespace
            key = f"{namespace}\x1f{principal.key_id}"
        else:
            namespace, key = "", "anonymous"
        idle = self.settings.mcp_stream_idle_timeout
        refused = self.streams.take(key, namespace)
        if refused is not None:
            whose, limit = {
                "GRAPHSVC_MCP_MAX_STREAMS_PER_KEY": ("this API key holds", self.streams.per_key),
                "GRAPHSVC_MCP_MAX_STREAMS_PER_NAMESPACE": (
                    "this namespace's keys hold",
                    self.streams.per_namespace,
                ),
            }.get(refused, ("the server holds", self.streams.total))
            message = (
                f"{whose} {limit} open event streams, the most they may ({refused}): close "
                "one, or retry after the Retry-After seconds (idle streams are ended)"
            )
            headers = {"Retry-After": retry_after(idle), "Connection": "close"}
            mine = refused != "GRAPHSVC_MCP_MAX_STREAMS"
            status, code = (429, "LIMIT_EXCEEDED") if mine else (503, "UNAVAILABLE")
            await mcp_refusal(status, message, code, headers)(scope, receive, send)
            return
        started = ended = False
        answer = sdk_refusals(send)
        try:
            with anyio.CancelScope() as idle_scope:
                idle_scope.deadline = anyio.current_time() + idle

                async def watched(message: Message) -> None:
                    nonlocal started, ended
                    if message["type"] == "http.response.start":
                        started = True
                        # the connection ends with the stream, and frees its descriptor
                        headers = [
                            (n, v)
                            for n, v in message.get("headers", [])
                            if n.lower() != b"connection"
                        ]
                        message = {**message, "headers": [*headers, (b"connection", b"close")]}
                    elif message["type"] == "http.response.body":
                        if not message.get("body", b"").startswith(b":"):  # not a ping
                            idle_scope.deadline = anyio.current_time() + idle
                        ended = not message.get("more_body", False)
                    await answer(message)

                await manager.handle_request(scope, receive, watched)
            if idle_scope.cancelled_caught and started and not ended:
                # the stream's end: the client sees it close, and the connection is reusable
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self.streams.give_back(key, namespace)

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """Serve ``/mcp`` while inside (enter it in the app's lifespan)."""
        configured = self.settings.mcp_max_streams
        self.streams.total = stream_cap(configured, descriptor_limit())
        self.streams.per_namespace = namespace_stream_cap(self.settings, self.streams.total)
        if self.streams.total < configured:
            logger.warning(
                "at most %d MCP event streams (GRAPHSVC_MCP_MAX_STREAMS is %d): half of the "
                "process's file descriptor limit is kept for health checks and requests; raise "
                "the limit (ulimit -n) to allow more",
                self.streams.total,
                configured,
            )
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
    "MCP_CHALLENGE",
    "MCP_PATH",
    "NAMESPACE_STREAM_SHARE",
    "PRINCIPAL",
    "McpHttp",
    "StreamSlots",
    "descriptor_limit",
    "mcp_http",
    "mcp_refusal",
    "namespace_stream_cap",
    "plain_message",
    "request_principal",
    "sdk_refusals",
    "stream_cap",
    "transport_security",
]
