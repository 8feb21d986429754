"""The ASGI middleware in front of graphsvc's routes (:func:`graphsvc.api.app.create_app`
orders them): :class:`RequestLog` (request ids and the access log), :class:`BodyLimit` (body size
and arrival time) and :class:`AuthGate` (rate limits and API keys, for ``/graphql``); and
:func:`error_response`, the GraphQL-shaped error body every layer answers with."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphsvc.api.auth import ApiKeys, Principal, UnauthenticatedError, anonymous
from graphsvc.api.context import new_request_id
from graphsvc.api.errors import MASKED_CODE
from graphsvc.api.ratelimit import ClientAddresses, RateLimits, retry_after

logger = logging.getLogger("graphsvc.api")
access_logger = logging.getLogger("graphsvc.access")

# Keys this app adds to the ASGI scope.
REQUEST_ID = "graphsvc.request_id"
LOG_FIELDS = "graphsvc.log"
PRINCIPAL = "graphsvc.principal"
RETRY_AFTER = "graphsvc.retry_after"  # seconds, for the response's Retry-After
CLIENT = "graphsvc.client"  # the client address the limits counted (a trusted proxy's client)
#: A closed connection before the answer (nginx's convention), in the access log.
CLIENT_CLOSED = 499

_REQUEST_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_STATUS_CODES = {
    401: "UNAUTHENTICATED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    408: "LIMIT_EXCEEDED",
    413: "LIMIT_EXCEEDED",
    429: "LIMIT_EXCEEDED",
    503: "UNAVAILABLE",
}


# -- responses ------------------------------------------------------------------------------------


def error_response(
    status: int, message: str, code: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """A GraphQL-shaped error body (``{"errors": [{message, extensions: {code}}]}``), so GraphQL
    clients read the code the same way for HTTP-level refusals. A character the body cannot
    encode (a lone surrogate quoted from the request) is escaped."""
    body = {
        "data": None,
        "errors": [
            {
                "message": message.encode("utf-8", "backslashreplace").decode("utf-8"),
                "extensions": {
                    "code": code
                    or _STATUS_CODES.get(status, MASKED_CODE if status >= 500 else "BAD_INPUT")
                },
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
        except ClientDisconnect:
            if not started:
                status = CLIENT_CLOSED  # the client left before its body arrived: no answer
        except Exception:
            logger.exception("unhandled error", extra={"fields": {"request_id": request_id}})
            if not started:
                response = error_response(
                    500, f"Unexpected error; request id {request_id}", "INTERNAL"
                )
                await response(scope, receive, send_wrapper)
        finally:
            client = scope.get("client")
            named = scope.get(CLIENT)
            line = {
                "request_id": request_id,
                "method": scope.get("method"),
                "path": scope.get("path"),
                "status": status,
                "duration_ms": round((time.perf_counter() - began) * 1000, 2),
                "bytes_out": sent,
                "client": named if named else client[0] if client else None,
                **fields,
            }
            access_logger.log(
                logging.WARNING if status >= 500 else logging.INFO,
                "request",
                extra={"fields": line},
            )


class _BodyTooLargeError(Exception):
    """Raised from ``receive`` once the body passes the limit."""


class _BodyTooSlowError(Exception):
    """Raised from ``receive`` once the body has taken longer than the limit to arrive."""


#: How a gate answers a refusal: (status, message, code, headers) -> the response. The GraphQL
#: endpoint answers GraphQL-shaped errors; the MCP endpoint answers its own JSON shape.
Refusal = Callable[[int, str, str, dict[str, str]], Response]


def graphql_refusal(status: int, message: str, code: str, headers: dict[str, str]) -> Response:
    """A refusal as a GraphQL-shaped error body (``errors[0].extensions.code``)."""
    return error_response(status, message, code, headers=headers)


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, by Content-Length or while reading, and
    bodies that have not arrived within ``timeout`` seconds of the request with 408.

    Both refusals close the connection (``Connection: close``): the rest of the body is never
    read, so the client cannot hold the connection by sending it slowly.

    Args:
        app: what is behind the limit.
        max_bytes: ``GRAPHSVC_MAX_BODY_BYTES``.
        timeout: ``GRAPHSVC_BODY_TIMEOUT`` (``None``: unbounded).
        refuse: how the refusals are answered (default: GraphQL-shaped errors).
        hint: how to make a smaller request, for the 413's message.
        skip: paths passed through untouched (an endpoint that limits its own bodies behind
            its key check: ``/mcp``).
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        timeout: float | None = None,
        *,
        refuse: Refusal = graphql_refusal,
        hint: str = "split the request, e.g. rememberMany in smaller batches",
        skip: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.refuse = refuse
        self.hint = hint
        self.skip = skip

    def _refusal(self) -> Response:
        return self.refuse(
            413,
            f"the request body is larger than {self.max_bytes} bytes (GRAPHSVC_MAX_BODY_BYTES): "
            f"{self.hint}",
            "LIMIT_EXCEEDED",
            {"Connection": "close"},
        )

    def _too_slow(self) -> Response:
        return self.refuse(
            408,
            f"the request body did not arrive within {self.timeout:g} s (GRAPHSVC_BODY_TIMEOUT): "
            "send the body right after the headers, or split the request",
            "LIMIT_EXCEEDED",
            {"Connection": "close"},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.skip:
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refusal()(scope, receive, send)
            return
        received = 0
        body_done = False
        started = False
        # On the event loop's clock: asyncio.timeout_at costs half of anyio.fail_after a receive.
        now = asyncio.get_running_loop().time()
        deadline = None if self.timeout is None else now + self.timeout

        async def limited_receive() -> Message:
            nonlocal received, body_done
            if body_done or deadline is None:
                message = await receive()
            else:
                try:
                    async with asyncio.timeout_at(deadline):
                        message = await receive()
                except TimeoutError:
                    raise _BodyTooSlowError from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _BodyTooLargeError
                body_done = not message.get("more_body", False)
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
        except _BodyTooSlowError:
            if started:  # pragma: no cover - the app answers only after reading the body
                raise
            await self._too_slow()(scope, receive, send)


def is_ide_request(scope: Scope) -> bool:
    """A browser asking for the GraphiQL page: a GET that accepts HTML and has no ``query``
    parameter. The query string is parsed as strawberry parses it, so any ``query`` parameter
    (``%71uery=``, ``query=`` with no value) makes the request an operation, which needs a key.
    """
    if scope.get("method") != "GET":
        return False
    if "query" in QueryParams(scope.get("query_string", b"")):
        return False
    accept = Headers(scope=scope).get("accept", "")
    return "text/html" in accept or "*/*" in accept


def _too_many(wait: float, what: str, setting: str, refuse: Refusal) -> Response:
    seconds = retry_after(wait)
    return refuse(
        429,
        f"too many {what}: retry after {seconds} s ({setting})",
        "LIMIT_EXCEEDED",
        {"Retry-After": seconds},
    )


class AuthGate:
    """Rate-limit and authenticate ``/graphql`` requests; the principal goes into the scope.

    The client address is the TCP peer's, or the client a trusted proxy names
    (:class:`~graphsvc.api.ratelimit.ClientAddresses`). In order: its request limit; then, for
    anything but the GraphiQL page, the address's failed-authentication limit (checked before
    the key, so a guesser whose bucket is empty learns nothing), the key (a failure takes from
    that bucket), and the key's request limit. A refusal is 429 with ``Retry-After``. With no
    keys configured every request is the ``anonymous`` principal (write role) of the default
    namespace; the ``serve`` command then binds loopback only.

    Args:
        app: the view behind the gate.
        keys: the configured API keys.
        default_namespace: the namespace of the ``anonymous`` principal.
        limits: the rate limits; ``None``: none.
        refuse: how refusals are answered (default: GraphQL-shaped error bodies).
    """

    def __init__(
        self,
        app: ASGIApp,
        keys: ApiKeys,
        default_namespace: str,
        limits: RateLimits | None = None,
        refuse: Refusal = graphql_refusal,
    ) -> None:
        self.app = app
        self.keys = keys
        self.default = anonymous(default_namespace)
        self.limits = limits
        self.refuse = refuse

    def principal(self, scope: Scope) -> Principal:
        """The caller the request's ``Authorization`` header names.

        Raises:
            UnauthenticatedError: keys are configured and the header names none of them.
        """
        if not len(self.keys):
            return self.default
        return self.keys.authenticate_header(Headers(scope=scope).get("authorization"))

    def admit(self, scope: Scope) -> Response | None:
        """``None`` when the request may go on (its principal is then in the scope), else the
        answer that refuses it."""
        limits = self.limits
        client = (limits.clients if limits is not None else ClientAddresses()).of(scope)
        scope[CLIENT] = client
        if limits is not None and (wait := limits.per_client.take(client)):
            return _too_many(
                wait, "requests from this address", "GRAPHSVC_RATE_LIMIT_PER_CLIENT", self.refuse
            )
        if is_ide_request(scope):
            return None
        if limits is not None and len(self.keys) and (wait := limits.auth_failures.wait(client)):
            return _too_many(
                wait,
                "failed authentications from this address",
                "GRAPHSVC_AUTH_FAILURES_PER_MINUTE",
                self.refuse,
            )
        try:
            principal = self.principal(scope)
        except UnauthenticatedError as exc:
            if limits is not None:
                limits.auth_failures.take(client)
            return self.refuse(
                401, str(exc), exc.code, {"WWW-Authenticate": 'Bearer realm="graphsvc"'}
            )
        fields = scope.get(LOG_FIELDS)
        if isinstance(fields, dict):
            fields["namespace"] = principal.namespace
            fields["key_id"] = principal.key_id
        if limits is not None and (wait := limits.per_key.take(principal.key_id)):
            return _too_many(
                wait, "requests with this API key", "GRAPHSVC_RATE_LIMIT_PER_KEY", self.refuse
            )
        scope[PRINCIPAL] = principal
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") != "OPTIONS":
            refusal = self.admit(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


__all__ = [
    "CLIENT",
    "CLIENT_CLOSED",
    "LOG_FIELDS",
    "PRINCIPAL",
    "REQUEST_ID",
    "RETRY_AFTER",
    "AuthGate",
    "BodyLimit",
    "Refusal",
    "RequestLog",
    "access_logger",
    "error_response",
    "graphql_refusal",
    "is_ide_request",
]
