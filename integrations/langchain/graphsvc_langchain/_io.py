"""How the adapters talk to graphsvc: each operation is written once, as a plan, and run by the
synchronous or the asynchronous client.

A plan is a generator that yields :class:`Call`s (a method of the graphsvc client, with its
arguments) and receives each call's result, or has the call's exception thrown into it; its return
value is the operation's. :func:`run` drives it with a ``GraphsvcClient``, :func:`arun` with an
``AsyncGraphsvcClient``: the two clients have the same methods (graphsvc tests that), so the
adapters' sync and async methods share every line but the driver.

The reads and forgets by id that the adapters need in bulk are sent as one GraphQL document with
one alias per id, at most :data:`ALIASES` a document (graphsvc's ``GRAPHSVC_MAX_ALIASES``,
15 by default).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from graphsvc.client import AsyncGraphsvcClient, GraphsvcClient
from graphsvc.errors import NotFoundError
from graphsvc.model import ContextBundle, EraseReceipt, MemoryInput

R = TypeVar("R")

# graphsvc's default GRAPHSVC_MAX_ALIASES: the most aliases one document may hold.
ALIASES = 15
# graphsvc's default GRAPHSVC_MAX_PAGE_SIZE: the largest page of `memories`.
PAGE = 100
# What the adapters read of a memory.
FIELDS = "id text kind tags source recordedAt occurredAt"


@dataclass(frozen=True)
class Call:
    """One call of a graphsvc client method: ``getattr(client, method)(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Call, Any, R]


def run(plan: Plan[R], client: GraphsvcClient) -> R:
    """Run ``plan`` with the synchronous client."""
    try:
        call = next(plan)
        while True:
            try:
                result = getattr(client, call.method)(*call.args, **call.kwargs)
            except Exception as exc:
                call = plan.throw(exc)
            else:
                call = plan.send(result)
    except StopIteration as stop:
        value: R = stop.value
        return value


async def arun(plan: Plan[R], client: AsyncGraphsvcClient) -> R:
    """Run ``plan`` with the asynchronous client."""
    try:
        call = next(plan)
        while True:
            try:
                result = await getattr(client, call.method)(*call.args, **call.kwargs)
            except Exception as exc:
                call = plan.throw(exc)
            else:
                call = plan.send(result)
    except StopIteration as stop:
        value: R = stop.value
        return value


@dataclass(frozen=True)
class Stored:
    """A memory as the adapters read it."""

    id: UUID
    text: str
    kind: str
    tags: tuple[str, ...]
    source: str | None
    recorded_at: datetime
    occurred_at: datetime | None

    @classmethod
    def parse(cls, row: dict[str, Any]) -> Stored:
        occurred = row.get("occurredAt")
        return cls(
            id=UUID(row["id"]),
            text=row["text"],
            kind=row["kind"],
            tags=tuple(row["tags"]),
            source=row["source"],
            recorded_at=datetime.fromisoformat(row["recordedAt"]),
            occurred_at=datetime.fromisoformat(occurred) if occurred else None,
        )


def chunks(items: Sequence[R], size: int) -> Iterable[Sequence[R]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _aliased(operation: str, field: str, ids: Sequence[UUID], selection: str) -> str:
    params = ", ".join(f"$i{n}: UUID!" for n in range(len(ids)))
    body = " ".join(f"m{n}: {field}(id: $i{n}) {{ {selection} }}" for n in range(len(ids)))
    return f"{operation} Batch({params}) {{ {body} }}"


def read(ids: Sequence[UUID]) -> Plan[dict[UUID, Stored]]:
    """The memories of ``ids`` that exist, by id."""
    found: dict[UUID, Stored] = {}
    unique = list(dict.fromkeys(ids))
    for part in chunks(unique, ALIASES):
        document = _aliased("query", "memory", part, FIELDS)
        data = yield Call("execute", (document, {f"i{n}": str(i) for n, i in enumerate(part)}))
        for n in range(len(part)):
            row = data[f"m{n}"]
            if row is not None:
                memory = Stored.parse(row)
                found[memory.id] = memory
    return found


def forget(ids: Sequence[UUID]) -> Plan[None]:
    """Forget the memories of ``ids``; one that is already gone is no error.

    A batch stops at its first missing memory (GraphQL runs mutation fields in order and a failed
    non-null field ends the operation), so on NOT_FOUND the rest of that batch is checked and sent
    again: a concurrent forget of the same memory costs a retry, never an error.
    """
    pending = list(dict.fromkeys(ids))
    while pending:
        part, pending = pending[:ALIASES], pending[ALIASES:]
        document = _aliased("mutation", "forget", part, "memoryId")
        try:
            yield Call("execute", (document, {f"i{n}": str(i) for n, i in enumerate(part)}))
        except NotFoundError:
            still = yield from read(part)
            pending = [i for i in part if i in still] + pending


# Memories written per request.
WRITE_BATCH = 500


def remember(memories: Sequence[MemoryInput], wait_for_vectors: bool) -> Plan[None]:
    """Write ``memories`` in batches of :data:`WRITE_BATCH`, each all or nothing; with
    ``wait_for_vectors`` each answers once its vectors are stored (found by meaning at once)."""
    for part in chunks(memories, WRITE_BATCH):
        yield Call("remember_many", (list(part),), {"wait_for_vectors": wait_for_vectors})


MEMORIES = f"""query Page($first: Int, $after: String, $kind: String, $tag: String) {{
  memories(first: $first, after: $after, kind: $kind, tag: $tag) {{
    nodes {{ {FIELDS} }}
    pageInfo {{ hasNextPage endCursor }}
  }}
}}"""


def page(kind: str, tag: str | None, after: str | None) -> Plan[tuple[list[Stored], str | None]]:
    """One page of memories of ``kind`` (and ``tag``), newest first, and the cursor of the next
    page (None after the last)."""
    variables = {"first": PAGE, "after": after, "kind": kind, "tag": tag}
    data = yield Call("execute", (MEMORIES, variables))
    connection = data["memories"]
    info = connection["pageInfo"]
    rows = [Stored.parse(row) for row in connection["nodes"]]
    return rows, (info["endCursor"] if info["hasNextPage"] else None)


def erase_tag(tag: str) -> Plan[int]:
    """Erase every memory carrying ``tag``, again until graphsvc says it is complete; the number
    of memories erased."""
    erased = 0
    while True:
        receipt: EraseReceipt = yield Call("erase", kwargs={"tag": tag})
        erased += receipt.memories
        if receipt.complete:
            return erased


def ranked(
    query: str,
    *,
    min_score: float | None,
    stage: str | None = None,
    budget_tokens: int | None = None,
) -> Plan[list[tuple[UUID, float]]]:
    """graphsvc's ranking for ``query``: every memory the bundle ranked (packed capsules and
    exclusions together), best first, with its score."""
    bundle: ContextBundle = yield Call(
        "bundle",
        (query,),
        {"min_score": min_score, "stage": stage, "budget_tokens": budget_tokens},
    )
    if bundle.skipped:
        return []
    # Packed capsules may be rendered oldest first; a stable sort by score restores the ranking
    # (ties keep graphsvc's order within each list).
    candidates = [*bundle.capsules, *bundle.excluded]
    candidates.sort(key=lambda capsule: -capsule.score)
    return [(capsule.memory_id, capsule.score) for capsule in candidates]
