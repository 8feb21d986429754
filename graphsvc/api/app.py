"""The ASGI application: GraphQL at ``/graphql`` (GraphiQL for browsers), MCP at ``/mcp``,
``/healthz`` and ``/readyz`` (:mod:`graphsvc.api.health`), the explorer (:mod:`graphsvc.api.web`).

Layers, outermost first (the middleware is :mod:`graphsvc.api.middleware`, stacked by
:func:`middleware_stack`):

1. :class:`RequestLog`: a request id (the caller's ``X-Request-Id`` when it is sane, else a new
   one), returned in ``X-Request-Id``, and one JSON log line per request (``graphsvc.access``).
2. CORS (Starlette's), when ``GRAPHSVC_CORS_ORIGINS`` names origins.
3. :class:`BodyLimit`: 413 (``LIMIT_EXCEEDED``) past ``GRAPHSVC_MAX_BODY_BYTES``; 408 when the
   body takes longer than ``GRAPHSVC_BODY_TIMEOUT`` to arrive.
4. The routes; ``/graphql`` behind :class:`AuthGate`: rate limits per client address, per API
   key and on failed authentications (:mod:`graphsvc.api.ratelimit`: 429 with ``Retry-After``),
   then ``Authorization: Bearer <key>`` (a missing, malformed or unknown key is HTTP 401 with a
   GraphQL-shaped body, ``code: UNAUTHENTICATED``; the GraphiQL page itself needs no key).
   :class:`~graphsvc.api.view.GraphQLView` decodes the body strictly (:mod:`graphsvc.api.body`,
   400/413), bounds the request's time (``GRAPHSVC_REQUEST_TIMEOUT``: 503 ``UNAVAILABLE`` with
   ``Retry-After``), and answers ``Retry-After`` when a store error says when to retry.

Every error body, from any layer, is GraphQL-shaped with ``extensions.code``; a GraphQL error that
reached the response without a code is masked and logged
(:meth:`~graphsvc.api.view.GraphQLView.process_result`).

The store is opened in the lifespan (:mod:`graphsvc.api.lifespan`, in a worker thread) and closed
on shutdown, after uvicorn has let in-flight requests finish. Nothing here does I/O at import or
in a constructor.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from graphsvc.api.auth import ApiKeys
from graphsvc.api.context import Limits
from graphsvc.api.health import health_routes
from graphsvc.api.lifespan import AppState, store_lifespan
from graphsvc.api.middleware import AuthGate, BodyLimit, RequestLog, error_response
from graphsvc.api.ratelimit import RateLimits
from graphsvc.api.schema import make_schema
from graphsvc.api.view import GraphQLView
from graphsvc.api.web import web_routes
from graphsvc.bootstrap import bootstrap, store_label
from graphsvc.mcp.http import McpHttp
from graphsvc.service import MemoryService
from graphsvc.settings import Settings


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route: 404, wrong method: 405) GraphQL-shaped too."""
    if not isinstance(exc, StarletteHTTPException):  # pragma: no cover - registered for it
        raise exc
    headers = dict(exc.headers) if exc.headers else None
    return error_response(exc.status_code, str(exc.detail), headers=headers)


async def root(request: Request) -> Response:
    """``/``: the GraphQL route (GraphiQL for a browser)."""
    return RedirectResponse("/graphql")


def middleware_stack(settings: Settings, *, skip: tuple[str, ...]) -> list[Middleware]:
    """The middleware in front of every route, outermost first: the request log, CORS when
    ``GRAPHSVC_CORS_ORIGINS`` names origins, and the body limits (not for the paths in ``skip``,
    which limit their bodies themselves)."""
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
            skip=skip,
        )
    )
    return middleware


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
    view = GraphQLView(
        make_schema(limits, settings),
        state,
        graphiql=settings.graphiql,
        max_input_values=settings.max_input_values,
        request_timeout=settings.request_timeout,
    )
    app = Starlette(
        routes=[
            *health_routes(state, settings),
            Route("/graphql", AuthGate(view, keys, settings.namespace, rate_limits)),
            mcp.route,
            *web_routes(),
            Route("/", root, methods=["GET"]),
        ],
        # /mcp limits its bodies itself, behind its key check
        middleware=middleware_stack(settings, skip=(mcp.path,)),
        lifespan=store_lifespan(state, settings, keys, mcp, opener=opener, owns_store=owns_store),
        exception_handlers={StarletteHTTPException: http_error},
    )
    app.state.graphsvc = state
    return app


__all__ = ["create_app", "http_error", "middleware_stack"]
