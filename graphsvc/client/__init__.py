"""A Python client for graphsvc's GraphQL API, for agents: sync and async, on httpx.

Results are graphsvc's own pydantic models (:mod:`graphsvc.model`), and failures are graphsvc's
own errors, mapped back from ``extensions.code``::

    from graphsvc.client import GraphsvcClient
    from graphsvc.prompt import PromptInput

    with GraphsvcClient("http://127.0.0.1:8000/graphql", api_key="...") as client:
        memory = client.remember("The checkout timed out after the deploy", tags=["ops"])
        bundle = client.bundle("Why did checkout time out?", budget_tokens=500)
        belief = client.reconstruct("checkout timeouts", run_id="run-42")
        prompt = client.prompt_bundle(PromptInput(user_turn="Why?", run_id="run-42", step=1))
        client.report_tokens("run-42", 1, reported_tokens=1234)

``AsyncGraphsvcClient`` has the same methods, as coroutines. Constructing a client does no I/O;
close it (or use it as a context manager) to release its connections. Writes are idempotent by
id (a memory written without one gets an id derived from its content), so retrying a ``remember``
after a timeout is safe.

Errors: ``BAD_INPUT`` -> :class:`~graphsvc.errors.BadInputError`, ``NOT_FOUND`` ->
:class:`~graphsvc.errors.NotFoundError`, ``LIMIT_EXCEEDED`` ->
:class:`~graphsvc.errors.LimitExceededError`, ``UNAVAILABLE`` (and a server that cannot be
reached or answers 502-504) -> :class:`~graphsvc.errors.StoreUnavailableError`,
``UNAUTHENTICATED`` / ``FORBIDDEN`` -> :class:`~graphsvc.errors.UnauthenticatedError` /
:class:`~graphsvc.errors.ForbiddenError`; anything else -> :class:`~graphsvc.errors.GraphsvcError`.

``AsyncGraphsvcClient`` (``_async.py``) is the hand-written client; ``GraphsvcClient``
(``_sync.py``) is generated from it by ``scripts/gen_client.py``. What both share (the documents,
the operations, the mapping of responses to errors) is in ``_operations.py``. Importing this
package loads httpx and pydantic, and nothing of the server (strawberry, the stores, numpy).
"""

from __future__ import annotations

from graphsvc.client._async import AsyncGraphsvcClient
from graphsvc.client._operations import DEFAULT_URL, ERRORS
from graphsvc.client._sync import GraphsvcClient
from graphsvc.errors import ForbiddenError, UnauthenticatedError

__all__ = [
    "DEFAULT_URL",
    "ERRORS",
    "AsyncGraphsvcClient",
    "ForbiddenError",
    "GraphsvcClient",
    "UnauthenticatedError",
]
