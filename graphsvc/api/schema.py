"""The GraphQL schema (strawberry, code-first): DESIGN.md's contract and what a frontend needs.

The parts live in rooms: :mod:`~graphsvc.api.context` (the request context, limits, cursors),
:mod:`~graphsvc.api.types` and :mod:`~graphsvc.api.inputs` (derived from the domain models),
:mod:`~graphsvc.api.resolvers` (one module per domain) and :mod:`~graphsvc.api.errors` (what a
client sees when something fails). Here they are put together: the root types, composed from the
domains' classes in the order the schema prints them, and the extensions that enforce the limits.

``schema`` below is built with the limits of the default settings; ``schema.graphql`` at the
repository root is its printed form (``python -m graphsvc.api.export``), and a test fails when
the file is stale.
"""

from __future__ import annotations

import functools

import strawberry

from graphsvc.api.context import Limits, RequestContext, decode_cursor, encode_cursor
from graphsvc.api.cost import CostMemo, LinkCounts, QueryCost, Refusals
from graphsvc.api.errors import ErrorPolicy, GraphsvcSchema, OperationLog, classify
from graphsvc.api.execution import PlainExecutor
from graphsvc.api.inflight import InFlight
from graphsvc.api.limits import DocumentLimits, PreparedCache, PreparedDocuments
from graphsvc.api.resolvers.admin import AdminQuery
from graphsvc.api.resolvers.memories import MemoryMutation, MemoryQuery
from graphsvc.api.resolvers.prompt import PromptMutation, PromptQuery
from graphsvc.api.resolvers.recall import RecallMutation, RecallQuery
from graphsvc.api.types import HistoryReuse, LinkKind, TranscriptRole, Visibility
from graphsvc.settings import Settings

#: Seconds an operation waits for room in its budgets in flight when the request has no deadline
#: (an embedding process without the HTTP view); the view's requests wait half their timeout.
DEFAULT_WAIT = 15.0


@strawberry.type(description="Reads. Every field works in the caller's namespace.")
class Query(MemoryQuery, RecallQuery, PromptQuery, AdminQuery):
    pass


@strawberry.type(description="Writes. Every field needs a key with role 'write'.")
class Mutation(MemoryMutation, RecallMutation, PromptMutation):
    pass


def make_schema(limits: Limits | None = None, settings: Settings | None = None) -> GraphsvcSchema:
    """The schema with these limits (default: :meth:`Limits.defaults`); the document limits
    that :class:`Limits` does not hold (length, fragment spreads) come from ``settings``
    (default: the declared defaults).

    Documents are parsed, checked and validated by :class:`PreparedDocuments`, off the event
    loop and once per distinct document (an LRU cache per schema), in place of strawberry's
    parser and validation caches and its depth, alias and token limiters; an operation whose
    estimated cost is above ``limits.max_cost`` is refused before it runs, and the others hold
    their estimate against their key's and namespace's budget in flight while they run
    (:class:`~graphsvc.api.cost.QueryCost`, :mod:`~graphsvc.api.inflight`); they are executed by
    :class:`~graphsvc.api.execution.PlainExecutor`, graphql-core's executor with a direct
    completion of plain data objects (the capsules of a bundle), same answers.
    """
    limits = limits or Limits.defaults()
    cache = PreparedCache(DocumentLimits.of(limits, settings))
    inflight = InFlight(
        limits.cost_in_flight_per_key, limits.cost_in_flight_per_namespace, DEFAULT_WAIT
    )
    built = GraphsvcSchema(
        query=Query,
        mutation=Mutation,
        extensions=[
            functools.partial(PreparedDocuments, cache=cache),
            functools.partial(
                QueryCost,
                counts=LinkCounts(),
                inflight=inflight,
                memo=CostMemo(),
                refusals=Refusals(),
            ),
            OperationLog,
            ErrorPolicy,
        ],
        execution_context_class=PlainExecutor,
    )
    built.documents = cache
    return built


schema = make_schema()

__all__ = [
    "ErrorPolicy",
    "GraphsvcSchema",
    "HistoryReuse",
    "Limits",
    "LinkKind",
    "Mutation",
    "Query",
    "RequestContext",
    "TranscriptRole",
    "Visibility",
    "classify",
    "decode_cursor",
    "encode_cursor",
    "make_schema",
    "schema",
]
