"""The GraphQL route: strawberry's ASGI view with graphsvc's request context, a strict JSON
decoder (:mod:`graphsvc.api.body`: 400/413), a time bound (``GRAPHSVC_REQUEST_TIMEOUT``: 503
``UNAVAILABLE`` with ``Retry-After``) and the request's budget of rows (:mod:`graphsvc.api.budget`),
a fast JSON encoder, and GraphQL-shaped error bodies with a code: a GraphQL error that reached the
response without one is masked and logged (:meth:`GraphQLView.process_result`), and
``Retry-After`` is answered when a store error says when to retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.to_thread
import orjson
from cross_web import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse
from strawberry.http.parse_content_type import parse_content_type
from strawberry.http.types import QueryParams as StrawberryQueryParams
from strawberry.types import ExecutionResult

from graphsvc.api.body import SMALL_BODY_BYTES, decode_body, decode_parameter
from graphsvc.api.budget import DeadlinePassedError, RequestBudget, deadline_message
from graphsvc.api.context import RequestContext, new_request_id
from graphsvc.api.errors import MASKED_CODE, GraphsvcSchema, retry_after_of
from graphsvc.api.lifespan import AppState
from graphsvc.api.middleware import LOG_FIELDS, PRINCIPAL, REQUEST_ID, RETRY_AFTER, error_response
from graphsvc.api.ratelimit import retry_after
from graphsvc.api.web import graphiql_html, graphiql_response
from graphsvc.errors import GraphsvcError, LimitExceededError

logger = logging.getLogger("graphsvc.api")

#: Retry-After of a request that ran out of GRAPHSVC_REQUEST_TIMEOUT (the store said nothing).
TIMEOUT_RETRY_AFTER = 5.0
#: What uvicorn says when it cancels the requests still running GRAPHSVC_SHUTDOWN_TIMEOUT after
#: a stop signal.
SHUTDOWN_CANCEL = "graceful shutdown exceeded"


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


__all__ = ["BUDGET", "SHUTDOWN_CANCEL", "TIMEOUT_RETRY_AFTER", "GraphQLView", "media_type_of"]
