"""What every resolver of one request sees: :class:`RequestContext`, the GraphQL layer's
:class:`Limits`, and the opaque page cursors of ``memories``.

The service and the stores are synchronous: resolvers are ``async`` and hand each call to a worker
thread (:meth:`RequestContext.run`), so the event loop never waits on a store. Strawberry itself
calls a sync resolver on the event loop, not in a thread pool.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import anyio.to_thread
import strawberry
from anyio import CapacityLimiter
from strawberry.dataloader import DataLoader

from graphsvc import model as m
from graphsvc.api.auth import Principal, UnauthenticatedError
from graphsvc.api.budget import CostPlan, RequestBudget
from graphsvc.api.pacing import pacer
from graphsvc.errors import BadInputError, GraphsvcError
from graphsvc.service import MemoryService
from graphsvc.settings import Settings

T = TypeVar("T")

LINKS_BATCH = 500  # most memory ids in one links_of / get_memories call of a DataLoader
DOCUMENT_CACHE = 256  # parsed and validated documents kept (LRU, per process)


@dataclass(frozen=True)
class Limits:
    """Limits of the GraphQL layer, taken from the settings (the service enforces batch sizes,
    budgets, k and depth). Build it with :meth:`from_settings`."""

    max_depth: int
    max_tokens: int
    max_aliases: int
    default_page_size: int
    max_page_size: int
    max_cost: int
    max_rows: int
    document_cache: int = DOCUMENT_CACHE
    cost_in_flight_per_key: int = 0
    cost_in_flight_per_namespace: int = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The limits the settings name (``GRAPHSVC_MAX_QUERY_DEPTH``, ``..._QUERY_TOKENS``,
        ``..._ALIASES``, ``..._DEFAULT_PAGE_SIZE``, ``..._MAX_PAGE_SIZE``, ``..._MAX_QUERY_COST``,
        ``..._MAX_RESULT_ROWS``, ``..._MAX_COST_IN_FLIGHT_PER_KEY`` and ``..._PER_NAMESPACE``)."""
        per_key = settings.max_cost_in_flight_per_key
        per_namespace = settings.max_cost_in_flight_per_namespace
        return cls(
            max_depth=settings.max_query_depth,
            max_tokens=settings.max_query_tokens,
            max_aliases=settings.max_aliases,
            default_page_size=min(settings.default_page_size, settings.max_page_size),
            max_page_size=settings.max_page_size,
            max_cost=settings.max_query_cost,
            max_rows=settings.max_result_rows,
            cost_in_flight_per_key=settings.max_query_cost if per_key is None else per_key,
            cost_in_flight_per_namespace=(
                2 * settings.max_query_cost if per_namespace is None else per_namespace
            ),
        )

    @classmethod
    def defaults(cls) -> Limits:
        """The limits of the settings' declared defaults, without reading the environment (the
        module-level schema is built at import). ``data_dir`` is given only so that its default,
        which looks at ``XDG_DATA_HOME``, is not computed: the limits do not use it."""
        return cls.from_settings(Settings.model_construct(data_dir=Path()))


def new_request_id() -> str:
    """A fresh request id: 32 hex digits."""
    return uuid.uuid4().hex


@dataclass
class RequestContext:
    """What every resolver of one request sees.

    Args:
        service: the service on the opened store.
        principal: the authenticated caller; ``None`` only for requests that run no resolver
            (the GraphiQL page), and a resolver then refuses with UNAUTHENTICATED.
        request_id: the id logged and returned in ``X-Request-Id``.
        limits: page sizes and other GraphQL-layer limits (default: :meth:`Limits.defaults`).
        limiter: bounds the worker threads store calls run in (``None``: anyio's default).
        log: fields the access log line adds (operation name and type, error codes).
        budget: rows and time left to the request (default: ``limits.max_rows`` rows, no
            deadline); the view gives one with the request's deadline and task.
        cost: the operation's estimated cost, set when the cost check admits it.
    """

    service: MemoryService
    principal: Principal | None
    request_id: str = field(default_factory=new_request_id)
    limits: Limits = field(default_factory=Limits.defaults)
    limiter: CapacityLimiter | None = None
    log: dict[str, Any] = field(default_factory=dict)
    budget: RequestBudget | None = None
    cost: CostPlan | None = None
    _links: DataLoader[UUID, list[m.Link]] | None = field(default=None, init=False, repr=False)
    _memories: DataLoader[UUID, m.Memory | None] | None = field(
        default=None, init=False, repr=False
    )

    @property
    def namespace(self) -> str:
        """The caller's namespace."""
        return self.caller.namespace

    @property
    def caller(self) -> Principal:
        """The authenticated caller.

        Raises:
            UnauthenticatedError: the request carries no API key.
        """
        if self.principal is None:
            raise UnauthenticatedError("no API key: send the header 'Authorization: Bearer <key>'")
        return self.principal

    def take_rows(self, rows: int) -> None:
        """Count ``rows`` a nested resolver hands out against the request's budget (made on
        first use when the view gave none).

        Raises:
            LimitExceededError: past ``GRAPHSVC_MAX_RESULT_ROWS``.
            DeadlinePassedError: past the request's deadline.
        """
        self._budget().take(rows)

    @property
    def stopped(self) -> bool:
        """Whether the request was stopped by its budget (its failure is the answer)."""
        return self.budget is not None and self.budget.failure is not None

    def refine(self, failure: GraphsvcError | None) -> None:
        """Stop the request with ``failure`` when there is one (a refined estimate over the
        limit, :class:`~graphsvc.api.budget.CostPlan`).

        Raises:
            GraphsvcError: ``failure``.
        """
        if failure is not None:
            self._budget().fail(failure)

    def _budget(self) -> RequestBudget:
        if self.budget is None:
            self.budget = RequestBudget(self.limits.max_rows)
        return self.budget

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Call a synchronous service or store function in a worker thread."""
        call = functools.partial(fn, *args, **kwargs)
        return await anyio.to_thread.run_sync(call, limiter=self.limiter)

    @property
    def links_loader(self) -> DataLoader[UUID, list[m.Link]]:
        """Links touching a memory, batched: one ``links_of`` call per batch of memory ids."""
        if self._links is None:
            self._links = DataLoader(self._load_links, max_batch_size=LINKS_BATCH)
        return self._links

    @property
    def memory_loader(self) -> DataLoader[UUID, m.Memory | None]:
        """Memories by id, batched: one ``get_memories`` call per batch."""
        if self._memories is None:
            self._memories = DataLoader(self._load_memories, max_batch_size=LINKS_BATCH)
        return self._memories

    async def _load_links(self, ids: list[UUID]) -> list[list[m.Link]]:
        return await self._graph_call(links_by_id, ids)

    async def _load_memories(self, ids: list[UUID]) -> list[m.Memory | None]:
        return await self._graph_call(memories_by_id, ids)

    async def _graph_call(
        self, fn: Callable[[MemoryService, str, list[UUID]], T], ids: list[UUID]
    ) -> T:
        """A loader's store call, counted as graph work by the loop's pacer (which yields the
        interpreter to other requests' store calls, not to these)."""
        paced = pacer()
        paced.limiter = self.limiter or anyio.to_thread.current_default_thread_limiter()
        paced.graph_calls += 1
        try:
            return await self.run(fn, self.service, self.namespace, ids)
        finally:
            paced.graph_calls -= 1

    async def pace(self, rows: int) -> None:
        """Wait for the turn of the event loop in which this caller may hand ``rows`` rows of
        a nested graph field to graphql-core (:class:`~graphsvc.api.pacing.Pacer`)."""
        caller = self.caller
        await pacer().take(f"{caller.namespace}\x1f{caller.key_id}", max(rows, 1))


# The loaders' batch functions, whole in a worker thread: a batch of 500 memories may touch tens
# of thousands of links, and sorting them out is no work for the event loop.


def links_by_id(service: MemoryService, namespace: str, ids: list[UUID]) -> list[list[m.Link]]:
    """The links touching each of ``ids``, in the order of ``ids`` (one ``links_of`` call)."""
    found = service.links_of(namespace, ids)
    by_id: dict[UUID, list[m.Link]] = {i: [] for i in ids}
    for link in found:
        for end in {link.source, link.target}:
            if end in by_id:
                by_id[end].append(link)
    return [by_id[i] for i in ids]


def memories_by_id(
    service: MemoryService, namespace: str, ids: list[UUID]
) -> list[m.Memory | None]:
    """The memory of each of ``ids`` (``None`` where there is none; one ``get_memories`` call)."""
    by_id = {memory.id: memory for memory in service.get_memories(namespace, ids)}
    return [by_id.get(i) for i in ids]


Info = strawberry.Info[RequestContext, None]

PageKey = tuple[datetime, str]


def encode_cursor(memory: m.Memory) -> str:
    """An opaque cursor for a memory's position in the newest-first order."""
    raw = json.dumps([memory.recorded_at.isoformat(), str(memory.id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> PageKey:
    """The position a cursor stands for.

    Raises:
        BadInputError: the cursor is not one this API handed out.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        recorded, memory_id = json.loads(raw)
        return m.as_utc(datetime.fromisoformat(recorded)), str(UUID(memory_id))
    except (ValueError, TypeError, binascii.Error):
        raise BadInputError(
            f"invalid cursor {cursor[:80]!r}: pass the endCursor of a previous page"
        ) from None


__all__ = [
    "Info",
    "Limits",
    "PageKey",
    "RequestContext",
    "decode_cursor",
    "encode_cursor",
    "links_by_id",
    "memories_by_id",
    "new_request_id",
]
