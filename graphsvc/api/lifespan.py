"""The application's lifetime: what it opens (:class:`AppState`), in how many worker threads store
calls run (:func:`store_threads`), and the lifespan that opens the store at startup and closes it
at shutdown (:func:`store_lifespan`).

The store is opened in a worker thread and closed after uvicorn has let in-flight requests
finish. Nothing here does I/O at import or in a constructor.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

import anyio.to_thread
from anyio import CapacityLimiter
from starlette.applications import Starlette

from graphsvc.api.auth import ApiKeys
from graphsvc.api.context import Limits
from graphsvc.errors import GraphsvcError
from graphsvc.mcp.http import McpHttp
from graphsvc.service import MemoryService
from graphsvc.settings import Settings

logger = logging.getLogger("graphsvc.api")


@dataclass
class AppState:
    """What the lifespan opens and the handlers use."""

    limits: Limits
    service: MemoryService | None = None
    limiter: CapacityLimiter | None = None
    store_label: str = ""


def store_threads(settings: Settings) -> int:
    """How many worker threads run store calls at once: ``GRAPHSVC_API_THREADS``, at most
    ``GRAPHSVC_EMBEDDED_THREADS`` on the embedded store (its calls hold the interpreter lock, so
    more threads only contend for it; Neo4j's calls wait on the network)."""
    if settings.neo4j_uri:
        return settings.api_threads
    return min(settings.api_threads, settings.embedded_threads)


def store_lifespan(
    state: AppState,
    settings: Settings,
    keys: ApiKeys,
    mcp: McpHttp,
    *,
    opener: Callable[[], MemoryService],
    owns_store: bool,
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: at startup ``opener`` runs in a worker thread and its service goes into
    ``state`` (with the worker threads' limiter), the vector queue starts draining when the app
    ``owns_store``, and MCP's session manager runs; at shutdown the queue and the store are
    closed (when owned) after MCP stops.

    Raises:
        GraphsvcError: the store cannot be opened (logged with its code first).
    """

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

    return lifespan


__all__ = ["AppState", "store_lifespan", "store_threads"]
