"""The ASGI application: GraphQL at ``/graphql`` (GraphiQL for browsers), ``/healthz``, ``/readyz``.

Layers, outermost first (the middleware is :mod:`graphsvc.api.middleware`):

1. :class:`RequestLog`: a request id (the caller's ``X-Request-Id`` when it is sane, else a new
   one), returned in ``X-Request-Id``, and one JSON log line per request (``graphsvc.access``).
2. CORS (Starlette's), when ``GRAPHSVC_CORS_ORIGINS`` names origins.
3. :class:`BodyLimit`: 413 (``LIMIT_EXCEEDED``) past ``GRAPHSVC_MAX_BODY_BYTES``; 408 when the
   body takes longer than ``GRAPHSVC_BODY_TIMEOUT`` to arrive.
4. The routes; ``/graphql`` behind :class:`AuthGate`: rate limits per client address, per API
   key and on failed authentications (:mod:`graphsvc.api.ratelimit`: 429 with ``Retry-After``),
   then ``Authorization: Bearer <key>`` (a missing, malformed or unknown key is HTTP 401 with a
   GraphQL-shaped body, ``code: UNAUTHENTICATED``; the GraphiQL page itself needs no key).
   :class:`GraphQLView` decodes the body strictly (:mod:`graphsvc.api.body`, 400/413), bounds the
   request's time (``GRAPHSVC_REQUEST_TIMEOUT``: 503 ``UNAVAILABLE`` with ``Retry-After``), and
   answers ``Retry-After`` when a store error says when to retry.

Every error body, from any layer, is GraphQL-shaped with ``extensions.code``; a GraphQL error that
reached the response without a code is masked and logged (:meth:`GraphQLView.process_result`).

The store is opened in the lifespan (in a worker thread) and closed on shutdown, after uvicorn has
let in-flight requests finish. Nothing here does I/O at import or in a constructor.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import sys
import threading
import time
import traceback
import warnings
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
import orjson
from anyio import CapacityLimiter
from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse
from strawberry.http.parse_content_type import parse_content_type
from strawberry.http.types import QueryParams as StrawberryQueryParams
from strawberry.types import ExecutionResult

from graphsvc.api.auth import ApiKeys
from graphsvc.api.body import SMALL_BODY_BYTES, decode_body, decode_parameter
from graphsvc.api.budget import DeadlinePassedError, RequestBudget, deadline_message
from graphsvc.api.context import Limits, RequestContext, new_request_id
from graphsvc.api.errors import MASKED_CODE, GraphsvcSchema, retry_after_of
from graphsvc.api.middleware import (
    CLIENT_CLOSED,
    LOG_FIELDS,
    PRINCIPAL,
    REQUEST_ID,
    RETRY_AFTER,
    AuthGate,
    BodyLimit,
    RequestLog,
    access_logger,
    error_response,
    is_ide_request,
)
from graphsvc.api.ratelimit import RateLimits, retry_after
from graphsvc.api.schema import make_schema
from graphsvc.api.web import graphiql_html, graphiql_response, web_routes
from graphsvc.bootstrap import bootstrap, store_label
from graphsvc.errors import GraphsvcError, LimitExceededError
from graphsvc.mcp.http import McpHttp
from graphsvc.service import MemoryService
from graphsvc.settings import Settings

logger = logging.getLogger("graphsvc.api")

#: Retry-After of a request that ran out of GRAPHSVC_REQUEST_TIMEOUT (the store said nothing).
TIMEOUT_RETRY_AFTER = 5.0
#: What uvicorn says when it cancels the requests still running GRAPHSVC_SHUTDOWN_TIMEOUT after
#: a stop signal.
SHUTDOWN_CANCEL = "graceful shutdown exceeded"


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


class RepeatLimit(logging.Filter):
    """Lets at most ``burst`` records of one kind (logger, level, message template) through per
    ``window`` seconds, and says on the next one let through how many were held back
    (``suppressed``). Warnings and errors only, the access log aside (one line per request is its
    point).

    A failure that repeats as fast as the event loop turns (``socket.accept() out of system
    resource`` while descriptors are exhausted) would otherwise fill the disk with one traceback
    per turn, and the disk filling is then a second outage.

    Args:
        burst: records of one kind let through per window.
        window: seconds.
        clock: monotonic seconds (tests pass their own).
    """

    #: Kinds remembered; past this the counts start again (a message formatted before logging
    #: makes a kind per value).
    MAX_KINDS = 1024

    def __init__(
        self, burst: int = 5, window: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self._kinds: dict[tuple[str, int, str], list[float]] = {}  # start, let through, held
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or record.name == access_logger.name:
            return True
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        with self._lock:
            kind = self._kinds.get(key)
            if kind is None:
                if len(self._kinds) >= self.MAX_KINDS:
                    self._kinds.clear()
                kind = self._kinds[key] = [now, 0.0, 0.0]
            held = 0
            if now - kind[0] >= self.window:
                held = int(kind[2])
                kind[:] = [now, 0.0, 0.0]
            if kind[1] >= self.burst:
                kind[2] += 1
                return False
            kind[1] += 1
        if held:
            fields = getattr(record, "fields", None)
            extra = dict(fields) if isinstance(fields, dict) else {}
            extra["suppressed"] = held  # like records held back in the last window
            record.__dict__["fields"] = extra
        return True


#: The coroutines graphql-core and strawberry leave unawaited when a request's task is cancelled
#: (its deadline, its rows, a stop): each resolver's coroutine made but never started. Python
#: warns of each when it is collected, once per location, without saying which request; the
#: request itself was answered and logged. Only these are silenced (graphsvc's own code is
#: checked for unused coroutines by mypy).
ABANDONED_COROUTINES = (
    r"coroutine '(Executor|GraphQLCoreConverter|StrawberryGraphQLCoreExecutionContext)\."
    r"[\w.<>]+' was never awaited"
)


def configure_logging(level: str) -> None:
    """JSON lines on stderr for graphsvc, uvicorn and everything else (the server process);
    repeated warnings and errors are rate-limited (:class:`RepeatLimit`); the warnings of
    coroutines abandoned by a cancelled request are dropped (:data:`ABANDONED_COROUTINES`)."""
    warnings.filterwarnings("ignore", ABANDONED_COROUTINES, RuntimeWarning)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RepeatLimit())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


# -- the application ------------------------------------------------------------------------------


@dataclass
class AppState:
    """What the lifespan opens and the handlers use."""

    limits: Limits
    service: MemoryService | None = None
    limiter: CapacityLimiter | None = None
    store_label: str = ""


#: Where the view keeps a request's budget in the ASGI scope (for the request's context).
BUDGET = "graphsvc.budget"

# The decoded JSON of the request being answered: (the body's bytes, the object).
_DECODED_BODY: ContextVar[tuple[bytes, dict[str, Any]] | None] = ContextVar(
    "graphsvc_decoded_body", default=None
)


#: What orjson hands to the fallback instead of encoding itself: values ``json.dumps`` refuses
#: (a datetime, a dataclass) go to it, so they fail exactly as they always did.
ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


@functools.lru_cache(maxsize=256)
def media_type_of(header: str) -> str:
    """The media type of a ``Content-Type`` value, as strawberry reads it (``""`` when the
    value is unreadable: strawberry then answers 400, unsupported content type). Clients send a
    handful of distinct values, and strawberry's reader is the email parser: the answers are
    kept (at most 256 values)."""
    try:
        return parse_content_type(header)[0]
    except Exception:  # the email parser fails in several ways on odd headers
        return ""


def _media_type(request: Request) -> str:
    """The request's media type (:func:`media_type_of`)."""
    return media_type_of(request.headers.get("content-type", ""))


def _status_of(exc: GraphsvcError) -> int:
    return 413 if isinstance(exc, LimitExceededError) else 400


def _forget(task: asyncio.Future[Response]) -> None:
    """Retrieve the outcome of a request abandoned at its deadline or stopped by its budget
    (so asyncio does not warn)."""
    if not task.cancelled() and task.exception() is not None:
        logger.debug("an abandoned request ended with %r", task.exception())


class GraphQLView(GraphQL[RequestContext, None]):
    """Strawberry's ASGI GraphQL view with graphsvc's context, a strict JSON decoder, a time
    bound, and GraphQL-shaped error bodies with a code.

    Args:
        schema: the schema (:func:`~graphsvc.api.schema.make_schema`).
        state: what the lifespan opens.
        graphiql: serve GraphiQL to browsers.
        max_input_values: most JSON values in a request (``GRAPHSVC_MAX_INPUT_VALUES``).
        request_timeout: seconds a request may run after its body arrived
            (``GRAPHSVC_REQUEST_TIMEOUT``); ``None``: unbounded.
    """

    def __init__(
        self,
        schema: GraphsvcSchema,
        state: AppState,
        *,
        graphiql: bool,
        max_input_values: int,
        request_timeout: float | None,
    ) -> None:
        super().__init__(
            schema,
            graphql_ide="graphiql" if graphiql else None,
            allow_queries_via_get=True,
            subscription_protocols=(),
        )
        self.state = state
        self.max_input_values = max_input_values
        self.request_timeout = request_timeout

    def encode_json(self, data: object) -> bytes:
        """The response body, encoded by orjson (about ten times faster than ``json.dumps``
        for a bundle). The JSON is the same value; the bytes differ only where JSON allows: text
        outside ASCII is UTF-8 rather than ``\\u`` escapes, and a float's exponent has no ``+``.
        What orjson cannot encode (an integer past 64 bits, text with an unpaired surrogate, a
        key that is not a string, a datetime or a dataclass) is encoded by strawberry's
        ``json.dumps``, so it is answered, or fails, as it always was. One difference: a
        non-finite float, which only a ``JSON`` scalar could hold (GraphQL's ``Float`` refuses
        it), is ``null`` where ``json.dumps`` wrote ``NaN``, which no JSON parser reads."""
        try:
            return orjson.dumps(data, option=ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError
            encoded = super().encode_json(data)
            return encoded.encode() if isinstance(encoded, str) else encoded

    def parse_json(self, data: str | bytes) -> Any:
        """The request body, decoded strictly (:func:`~graphsvc.api.body.decode_body`); the body
        :meth:`__call__` decoded already is not decoded again.

        Raises:
            BadInputError: the body is not a JSON object of the right shape, or not Unicode.
            LimitExceededError: too many values, or nested too deeply.
        """
        decoded = _DECODED_BODY.get()
        if decoded is not None and decoded[0] is data:
            return decoded[1]
        return decode_body(data, self.max_input_values)

    def parse_query_params(self, params: StrawberryQueryParams) -> dict[str, Any]:
        """A GET's parameters, with ``variables`` and ``extensions`` decoded strictly.

        Raises:
            BadInputError: a JSON parameter is malformed or not Unicode.
            LimitExceededError: too many values, or nested too deeply.
        """
        parsed: dict[str, Any] = dict(params)
        for name in ("variables", "extensions"):
            text = parsed.get(name)
            if text:
                parsed[name] = decode_parameter(text, name, self.max_input_values)
        return parsed

    async def process_result(
        self, request: Request, result: ExecutionResult
    ) -> GraphQLHTTPResponse:
        """Strawberry's result, with two guarantees: every error carries ``extensions.code`` (one
        that reached here without a code is masked as INTERNAL and logged), and an UNAVAILABLE
        error whose store said when to retry sets the response's ``Retry-After``."""
        response = await super().process_result(request, result)
        errors = response.get("errors")
        if errors:
            response["errors"] = [self._coded(error, request) for error in errors]
        wait = retry_after_of(result.errors or [])
        if wait is not None:
            request.scope[RETRY_AFTER] = wait
        return response

    @staticmethod
    def _coded(error: object, request: Request) -> object:
        if isinstance(error, dict):
            extensions = error.get("extensions")
            if isinstance(extensions, dict) and "code" in extensions:
                return error
        request_id = str(request.scope.get(REQUEST_ID) or "-")
        logger.error(
            "an error without a code reached a response: %r",
            error,
            extra={"fields": {"request_id": request_id}},
        )
        return {
            "message": f"Unexpected error; request id {request_id}",
            "extensions": {"code": MASKED_CODE, "requestId": request_id},
        }

    @property
    def graphql_ide_html(self) -> str:
        """GraphiQL with same-origin assets (strawberry's own page loads them from unpkg)."""
        return graphiql_html()

    async def render_graphql_ide(self, request: Request) -> Response:
        return graphiql_response()

    async def get_context(
        self, request: Request | WebSocket, response: Response | WebSocket
    ) -> RequestContext:
        service = self.state.service
        if service is None:
            raise HTTPException(503, "the store is not open (starting or stopping): retry shortly")
        scope = request.scope
        log = scope.get(LOG_FIELDS)
        budget = scope.get(BUDGET)
        return RequestContext(
            service=service,
            principal=scope.get(PRINCIPAL),
            request_id=scope.get(REQUEST_ID) or new_request_id(),
            limits=self.state.limits,
            limiter=self.state.limiter,
            log=log if isinstance(log, dict) else {},
            budget=budget if isinstance(budget, RequestBudget) else None,
        )

    async def _decode_body(self, request: Request) -> None:
        """Read and decode a JSON body before strawberry does: a large one in a worker thread
        (``json.loads`` and the inspection are CPU work proportional to the body)."""
        if request.method != "POST" or "application/json" not in _media_type(request):
            return
        body = await request.body()
        if len(body) <= SMALL_BODY_BYTES:
            value = decode_body(body, self.max_input_values)
        else:
            value = await anyio.to_thread.run_sync(
                decode_body, body, self.max_input_values, abandon_on_cancel=True
            )
        _DECODED_BODY.set((body, value))

    async def _run_bounded(self, request: Request) -> Response:
        """Strawberry's ``run``, abandoned at ``request_timeout`` with 503 UNAVAILABLE, or
        stopped when its budget runs out (:mod:`graphsvc.api.budget`).

        The request runs as its own task, so the answer does not wait for a store call that
        cannot be interrupted (a worker thread): the task is cancelled and ends when that call
        returns; its thread slot stays taken until then. The budget cancels the same task when
        the request reads too many rows, or when a resolver finds the deadline passed (a busy
        event loop delays the timer, not that check).
        """
        loop = asyncio.get_running_loop()
        budget = RequestBudget(self.state.limits.max_rows, self.request_timeout)
        request.scope[BUDGET] = budget
        task = loop.create_task(self.run(request))
        budget.task = task
        if self.request_timeout is None:
            try:
                response = await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if budget.failure is None or (current is not None and current.cancelling()):
                    raise  # this request itself is being cancelled
                return self._stopped(request, budget)
            return response if budget.failure is None else self._stopped(request, budget)
        woken = loop.create_future()

        def wake(_: object = None) -> None:
            if not woken.done():
                woken.set_result(None)

        task.add_done_callback(wake)
        timer = loop.call_later(self.request_timeout, wake)
        try:
            await woken
        except BaseException:
            task.cancel()
            raise
        finally:
            timer.cancel()
            task.remove_done_callback(wake)
        if task.done() and budget.failure is None:
            return task.result()
        if task.done():  # stopped by its budget, cancelled or not: its failure is the answer
            _forget(task)
        if not task.done():
            task.cancel()
            task.add_done_callback(_forget)
            if budget.failure is None:
                budget.failure = DeadlinePassedError(deadline_message(self.request_timeout))
        return self._stopped(request, budget)

    def _stopped(self, request: Request, budget: RequestBudget) -> Response:
        """The answer to a request stopped by its budget: 503 UNAVAILABLE with Retry-After at
        the deadline, else a GraphQL error (HTTP 200, ``data: null``) with the failure's code."""
        failure = budget.failure
        assert failure is not None
        log = request.scope.get(LOG_FIELDS)
        if isinstance(log, dict):
            log["errors"] = [failure.code]
        if isinstance(failure, DeadlinePassedError):
            logger.warning(
                "request abandoned after %g s (GRAPHSVC_REQUEST_TIMEOUT)",
                budget.timeout,
                extra={"fields": {"request_id": request.scope.get(REQUEST_ID)}},
            )
            request.scope[RETRY_AFTER] = TIMEOUT_RETRY_AFTER
            return error_response(503, str(failure), failure.code)
        return error_response(200, str(failure), failure.code)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        request = Request(scope=scope, receive=receive)
        try:
            await self._decode_body(request)
            response = await self._run_bounded(request)
        except asyncio.CancelledError as exc:
            # The server is stopping and this request outlived GRAPHSVC_SHUTDOWN_TIMEOUT:
            # answer with a code, not uvicorn's bare 500 and a traceback in the log.
            stopping = error_response(
                503,
                "the server is stopping and this request did not finish within "
                "GRAPHSVC_SHUTDOWN_TIMEOUT: retry it (a write may or may not have been "
                "applied: resend it with the same ids, writes are idempotent)",
                "UNAVAILABLE",
                headers={"Retry-After": retry_after(TIMEOUT_RETRY_AFTER)},
            )
            with contextlib.suppress(Exception):
                await stopping(scope, receive, send)
            current = asyncio.current_task()
            if current is None or not any(SHUTDOWN_CANCEL in str(a) for a in exc.args):
                raise
            current.uncancel()  # uvicorn's stop: answered, and the request ends here
            return
        except HTTPException as exc:
            response = error_response(exc.status_code, exc.reason)
        except GraphsvcError as exc:  # the body or the query string, refused by graphsvc.api.body
            response = error_response(_status_of(exc), str(exc), exc.code)
        wait = scope.get(RETRY_AFTER)
        if wait is not None:
            response.headers["Retry-After"] = retry_after(wait)
        await response(scope, receive, send)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route: 404, wrong method: 405) GraphQL-shaped too."""
    if not isinstance(exc, StarletteHTTPException):  # pragma: no cover - registered for it
        raise exc
    headers = dict(exc.headers) if exc.headers else None
    return error_response(exc.status_code, str(exc.detail), headers=headers)


def store_threads(settings: Settings) -> int:
    """How many worker threads run store calls at once: ``GRAPHSVC_API_THREADS``, at most
    ``GRAPHSVC_EMBEDDED_THREADS`` on the embedded store (its calls hold the interpreter lock, so
    more threads only contend for it; Neo4j's calls wait on the network)."""
    if settings.neo4j_uri:
        return settings.api_threads
    return min(settings.api_threads, settings.embedded_threads)


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
    limits = Limits.from_settings(settings)
    state = AppState(limits=limits, store_label=store_label(settings))
    schema = make_schema(limits, settings)
    # warm: the encoder loads at start (GRAPHSVC_EMBED=on fails there when its model is missing).
    opener = open_service or (lambda: bootstrap(settings, warm=True))
    # MCP (streamable HTTP) at /mcp: the same service, keys and limits as /graphql.
    # /graphql and /mcp share one set of rate limits (per key, per client, failed authentications).
    rate_limits = RateLimits.from_settings(settings)
    mcp = McpHttp(
        lambda: state.service,
        keys,
        settings,
        limiter_of=lambda: state.limiter,
        limits=rate_limits,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.limiter = CapacityLimiter(store_threads(settings))
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
        if owns_store:
            # Writes are acknowledged before their vectors: this server drains the vector queue
            # in the background (one process per store drains it: the others stand by).
            await anyio.to_thread.run_sync(service.vector_queue.start, "graphsvc serve")
        logger.info(
            "graphsvc API ready",
            extra={
                "fields": {
                    "store": state.store_label,
                    "auth": f"{len(keys)} API key(s)" if len(keys) else "none (loopback only)",
                    "vector_queue": service.vector_queue.status().state,
                }
            },
        )
        try:
            async with mcp.run():
                yield
        finally:
            state.service = None
            if owns_store:
                # The step under way is given up after its encoder call; what waits stays in the
                # store's queue for the next start.
                await anyio.to_thread.run_sync(
                    service.vector_queue.close, settings.shutdown_timeout
                )
                await anyio.to_thread.run_sync(service.close)
            logger.info("graphsvc API stopped; store closed")

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        # Anyone who can connect may ask (an orchestrator has no key): the answer names the
        # kind of store, never its folder or URI; why a store does not answer goes to the log.
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
            logger.warning("not ready: %s (%s)", reason, state.store_label)
            return JSONResponse({"status": "not ready", "reason": reason}, status_code=503)
        except GraphsvcError as exc:
            logger.warning("not ready: %s", exc, extra={"fields": {"code": exc.code}})
            reason = f"the store is unavailable ({exc.code}): the server's log says why"
            return JSONResponse({"status": "not ready", "reason": reason}, status_code=503)
        recall = service.dense.status()
        queue = service.vector_queue.status()
        # A backlog does not make the server unready: every request is answered, words find
        # every memory at once, and each bundle says how many memories wait for their vector
        # (pendingVectors). The figures are here for whoever watches the backlog drain.
        return JSONResponse(
            {
                "status": "ready",
                "store": service.store.kind,
                "retrieval": recall.retrieval,
                "embedModel": recall.model,
                "retrievalNote": recall.reason,
                "vectorQueue": {
                    "state": queue.state,
                    "pending": queue.pending,
                    "drainedBy": queue.owner,
                    "stored": queue.stored,
                    "perSecond": round(queue.rate, 1),
                    "skipped": queue.skipped,
                    "error": queue.error,
                },
            }
        )

    async def root(request: Request) -> Response:
        return RedirectResponse("/graphql")

    view = GraphQLView(
        schema,
        state,
        graphiql=settings.graphiql,
        max_input_values=settings.max_input_values,
        request_timeout=settings.request_timeout,
    )
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
    middleware.append(
        Middleware(
            BodyLimit,
            max_bytes=settings.max_body_bytes,
            timeout=settings.body_timeout,
            skip=(mcp.path,),  # /mcp limits its bodies itself, behind its key check
        )
    )
    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/graphql", AuthGate(view, keys, settings.namespace, rate_limits)),
            mcp.route,
            *web_routes(),
            Route("/", root, methods=["GET"]),
        ],
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={StarletteHTTPException: http_error},
    )
    app.state.graphsvc = state
    return app


# The middleware's names stay importable from here (they lived here before
# graphsvc.api.middleware).
__all__ = [
    "CLIENT_CLOSED",
    "LOG_FIELDS",
    "PRINCIPAL",
    "REQUEST_ID",
    "RETRY_AFTER",
    "AppState",
    "AuthGate",
    "BodyLimit",
    "JsonFormatter",
    "RepeatLimit",
    "RequestLog",
    "access_logger",
    "configure_logging",
    "create_app",
    "error_response",
    "is_ide_request",
    "store_threads",
]
