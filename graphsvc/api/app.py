"""The ASGI application: GraphQL at ``/graphql`` (GraphiQL for browsers), ``/healthz``, ``/readyz``.

Layers, outermost first:

1. :class:`RequestLog`: a request id (the caller's ``X-Request-Id`` when it is sane, else a new
   one), returned in ``X-Request-Id``, and one JSON log line per request (``graphsvc.access``).
2. CORS (Starlette's), when ``GRAPHSVC_CORS_ORIGINS`` names origins.
3. :class:`BodyLimit`: 413 (``LIMIT_EXCEEDED``) past ``GRAPHSVC_MAX_BODY_BYTES``.
4. The routes; ``/graphql`` behind :class:`AuthGate` (``Authorization: Bearer <key>``; a missing,
   malformed or unknown key is HTTP 401 with a GraphQL-shaped body, ``code: UNAUTHENTICATED``;
   the GraphiQL page itself needs no key).

The store is opened in the lifespan (in a worker thread) and closed on shutdown, after uvicorn has
let in-flight requests finish. Nothing here does I/O at import or in a constructor.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
from anyio import CapacityLimiter
from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL

from graphsvc.api.auth import ApiKeys, Principal, UnauthenticatedError, anonymous
from graphsvc.api.schema import GraphsvcSchema, Limits, RequestContext, make_schema, new_request_id
from graphsvc.bootstrap import bootstrap, store_label
from graphsvc.errors import GraphsvcError
from graphsvc.service import MemoryService
from graphsvc.settings import Settings

logger = logging.getLogger("graphsvc.api")
access_logger = logging.getLogger("graphsvc.access")

# Keys this app adds to the ASGI scope.
REQUEST_ID = "graphsvc.request_id"
LOG_FIELDS = "graphsvc.log"
PRINCIPAL = "graphsvc.principal"

_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_STATUS_CODES = {
    401: "UNAUTHENTICATED",
    403: "FORBIDDEN",
    413: "LIMIT_EXCEEDED",
    503: "UNAVAILABLE",
}


def limits_of(settings: Settings) -> Limits:
    """The GraphQL limits the settings name."""
    return Limits(
        max_depth=settings.max_query_depth,
        max_tokens=settings.max_query_tokens,
        max_aliases=settings.max_aliases,
        default_page_size=min(settings.default_page_size, settings.max_page_size),
        max_page_size=settings.max_page_size,
    )


# -- logging --------------------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the record's ``fields`` extra,
    and the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            entry["exc"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: str) -> None:
    """JSON lines on stderr for graphsvc, uvicorn and everything else (the server process)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


# -- responses ------------------------------------------------------------------------------------


def error_response(
    status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """A GraphQL-shaped error body (``{"errors": [{message, extensions: {code}}]}``), so GraphQL
    clients read the code the same way for HTTP-level refusals."""
    body = {
        "data": None,
        "errors": [
            {
                "message": message,
                "extensions": {"code": code or _STATUS_CODES.get(status, "BAD_INPUT")},
            }
        ],
    }
    return JSONResponse(body, status_code=status, headers=headers)


# -- middleware -----------------------------------------------------------------------------------


class RequestLog:
    """Request id in and out (``X-Request-Id``) and one JSON access-log line per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = Headers(scope=scope).get("x-request-id", "")
        request_id = incoming if _REQUEST_ID_RE.match(incoming) else new_request_id()
        fields: dict[str, Any] = {}
        scope[REQUEST_ID] = request_id
        scope[LOG_FIELDS] = fields
        status = 500
        sent = 0
        started = False
        began = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status, sent, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                MutableHeaders(scope=message)["x-request-id"] = request_id
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception:
            logger.exception("unhandled error", extra={"fields": {"request_id": request_id}})
            if not started:
                response = error_response(
                    500, f"Unexpected error; request id {request_id}", "INTERNAL"
                )
                await response(scope, receive, send_wrapper)
        finally:
            client = scope.get("client")
            line = {
                "request_id": request_id,
                "method": scope.get("method"),
                "path": scope.get("path"),
                "status": status,
                "duration_ms": round((time.perf_counter() - began) * 1000, 2),
                "bytes_out": sent,
                "client": client[0] if client else None,
                **fields,
            }
            access_logger.log(
                logging.WARNING if status >= 500 else logging.INFO,
                "request",
                extra={"fields": line},
            )


class _BodyTooLargeError(Exception):
    """Raised from ``receive`` once the body passes the limit."""


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, by Content-Length or while reading."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _refusal(self) -> JSONResponse:
        return error_response(
            413,
            f"the request body is larger than {self.max_bytes} bytes (GRAPHSVC_MAX_BODY_BYTES): "
            "split the request, e.g. rememberMany in smaller batches",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refusal()(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLargeError
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _BodyTooLargeError:
            if started:  # pragma: no cover - the app answers only after reading the body
                raise
            await self._refusal()(scope, receive, send)


def is_ide_request(scope: Scope) -> bool:
    """A browser asking for the GraphiQL page (what strawberry renders it for)."""
    if scope.get("method") != "GET":
        return False
    if b"query=" in scope.get("query_string", b""):
        return False
    accept = Headers(scope=scope).get("accept", "")
    return "text/html" in accept or "*/*" in accept


class AuthGate:
    """Authenticate ``/graphql`` requests; the principal goes into the scope.

    With no keys configured every request is the ``anonymous`` principal (write role) of the
    default namespace; the ``serve`` command then binds loopback only.
    """

    def __init__(self, app: ASGIApp, keys: ApiKeys, default_namespace: str) -> None:
        self.app = app
        self.keys = keys
        self.default = anonymous(default_namespace)

    def principal(self, scope: Scope) -> Principal:
        if not len(self.keys):
            return self.default
        return self.keys.authenticate_header(Headers(scope=scope).get("authorization"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope.get("method") != "OPTIONS"
            and not is_ide_request(scope)
        ):
            try:
                principal = self.principal(scope)
            except UnauthenticatedError as exc:
                response = error_response(
                    401, str(exc), headers={"WWW-Authenticate": 'Bearer realm="graphsvc"'}
                )
                await response(scope, receive, send)
                return
            scope[PRINCIPAL] = principal
            fields = scope.get(LOG_FIELDS)
            if isinstance(fields, dict):
                fields["namespace"] = principal.namespace
                fields["key_id"] = principal.key_id
        await self.app(scope, receive, send)


# -- the application ------------------------------------------------------------------------------


@dataclass
class AppState:
    """What the lifespan opens and the handlers use."""

    limits: Limits
    service: MemoryService | None = None
    limiter: CapacityLimiter | None = None
    store_label: str = ""


class GraphQLView(GraphQL[RequestContext, None]):
    """Strawberry's ASGI GraphQL view with graphsvc's context and JSON error bodies."""

    def __init__(self, schema: GraphsvcSchema, state: AppState, *, graphiql: bool) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if graphiql else None,
            allow_queries_via_get=True,
            subscription_protocols=(),
        )
        self.state = state

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> RequestContext:
        service = self.state.service
        if service is None:
            raise HTTPException(503, "the store is not open (starting or stopping): retry shortly")
        scope = request.scope
        log = scope.get(LOG_FIELDS)
        return RequestContext(
            service=service,
            principal=scope.get(PRINCIPAL),
            request_id=scope.get(REQUEST_ID) or new_request_id(),
            limits=self.state.limits,
            limiter=self.state.limiter,
            log=log if isinstance(log, dict) else {},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        try:
            response = await self.run(Request(scope=scope, receive=receive))
        except HTTPException as exc:
            response = error_response(exc.status_code, exc.reason)
        await response(scope, receive, send)


def create_app(
    settings: Settings,
    keys: ApiKeys,
    *,
    open_service: Callable[[], MemoryService] | None = None,
    owns_store: bool = True,
) -> Starlette:
    """The ASGI app. The store opens in the lifespan: ``open_service`` (default
    ``bootstrap(settings)``) runs in a worker thread at startup, and the store is closed at
    shutdown when ``owns_store``."""
    state = AppState(limits=limits_of(settings), store_label=store_label(settings))
    schema = make_schema(limits_of(settings))
    opener = open_service or (lambda: bootstrap(settings))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.limiter = CapacityLimiter(settings.api_threads)
        try:
            service = await anyio.to_thread.run_sync(opener)
        except GraphsvcError as exc:
            logger.error(
                "cannot open the %s: %s",
                state.store_label,
                exc,
                extra={"fields": {"code": exc.code}},
            )
            raise
        state.service = service
        logger.info(
            "graphsvc API ready",
            extra={
                "fields": {
                    "store": state.store_label,
                    "auth": f"{len(keys)} API key(s)" if len(keys) else "none (loopback only)",
                }
            },
        )
        try:
            yield
        finally:
            state.service = None
            if owns_store:
                await anyio.to_thread.run_sync(service.close)
            logger.info("graphsvc API stopped; store closed")

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        service = state.service
        if service is None:
            return JSONResponse(
                {"status": "not ready", "reason": "the store is not open (starting or stopping)"},
                status_code=503,
            )
        try:
            with anyio.fail_after(settings.ready_timeout):
                await anyio.to_thread.run_sync(
                    service.ping, abandon_on_cancel=True, limiter=state.limiter
                )
        except TimeoutError:
            reason = f"the store did not answer within {settings.ready_timeout:g} s"
            return JSONResponse({"status": "not ready", "reason": reason}, status_code=503)
        except GraphsvcError as exc:
            return JSONResponse({"status": "not ready", "reason": str(exc)}, status_code=503)
        return JSONResponse({"status": "ready", "store": state.store_label})

    async def root(request: Request) -> Response:
        return RedirectResponse("/graphql")

    view = GraphQLView(schema, state, graphiql=settings.graphiql)
    middleware = [Middleware(RequestLog)]
    if settings.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(settings.cors_origins),
                allow_methods=["GET", "POST", "OPTIONS"],
                allow_headers=["Authorization", "Content-Type", "X-Request-Id"],
                expose_headers=["X-Request-Id"],
                max_age=600,
            )
        )
    middleware.append(Middleware(BodyLimit, max_bytes=settings.max_body_bytes))
    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/graphql", AuthGate(view, keys, settings.namespace)),
            Route("/", root, methods=["GET"]),
        ],
        middleware=middleware,
        lifespan=lifespan,
    )
    app.state.graphsvc = state
    return app


__all__ = [
    "AppState",
    "JsonFormatter",
    "configure_logging",
    "create_app",
    "error_response",
    "limits_of",
]
