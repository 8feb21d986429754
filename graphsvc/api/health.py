"""``/healthz`` (the process answers) and ``/readyz`` (the store answers, and what recall and the
vector queue are doing). Anyone who can connect may ask: an orchestrator has no key."""

from __future__ import annotations

import logging

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from graphsvc.api.lifespan import AppState
from graphsvc.errors import GraphsvcError
from graphsvc.settings import Settings

logger = logging.getLogger("graphsvc.api")


def health_routes(state: AppState, settings: Settings) -> list[Route]:
    """The two routes, reading the service ``state`` holds; ``/readyz`` waits at most
    ``GRAPHSVC_READY_TIMEOUT`` for the store."""

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        # The answer names the kind of store, never its folder or URI; why a store does not
        # answer goes to the log.
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

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]


__all__ = ["health_routes"]
