"""The store interface, in domain terms, by capability.

Two honest implementations: :class:`graphsvc.store.mirror.MirrorStore` (compact in-memory tables
and an inverted index, persisted to a data directory) and the Neo4j store. The recall engine is
pure functions over what these methods return, so both stores give byte-identical results when
they return the same data. Every method is scoped to exactly one namespace.

:class:`Store`, what the code types against, is the combination of the capabilities: :class:`Admin`
(lifecycle, and what operators read whole), :class:`MemoryWrites`, :class:`Erasure`,
:class:`MemoryReads`, :class:`CandidateReads` (what recall reads first), :class:`VectorStorage`
and :class:`VectorQueue`. A store implements all of them; one made of parts implements each
capability in a part and answers the interface by :class:`delegate`. The values these methods
take and answer live beside this module by topic (:mod:`~graphsvc.store.candidates`,
:mod:`~graphsvc.store.graph`, :mod:`~graphsvc.store.facets`, :mod:`~graphsvc.store.vectors`) with
what both stores decide and say the same way (:mod:`~graphsvc.store.rules`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, Self, TypeVar, overload
from uuid import UUID

from graphsvc.embedding.codes import VectorModel
from graphsvc.model import (
    AsOf,
    Belief,
    ContextEvent,
    EraseFilter,
    EraseReceipt,
    ForgetReceipt,
    Link,
    Memory,
    NamespaceStats,
    Successor,
    WriteResult,
)
from graphsvc.store.candidates import (
    Candidate,
    CandidateColumns,
    ReadAhead,
    Recalled,
    TermStats,
    WindowGuess,
    plan_candidates,
)
from graphsvc.store.facets import FacetCounts
from graphsvc.store.graph import Walk
from graphsvc.store.vectors import PendingVector, QueueLease, VectorBacklog

P = ParamSpec("P")
R = TypeVar("R")
Part = TypeVar("Part")


class Admin(ABC):
    """Lifecycle (open, close, ping; a store is a context manager) and what an operator reads
    whole: the namespaces, a namespace's export."""

    @abstractmethod
    def open(self) -> None:
        """Connect or load. Raises StoreUnavailableError when that is not possible."""

    @abstractmethod
    def close(self) -> None:
        """Release connections, files and locks. Safe to call twice."""

    @abstractmethod
    def ping(self) -> None:
        """Raise StoreUnavailableError unless the store answers now."""

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @abstractmethod
    def namespaces(self) -> list[str]:
        """Every namespace that holds at least one memory, sorted."""

    @abstractmethod
    def export(self, namespace: str) -> Iterator[Memory | Link]:
        """Every memory (oldest first), then every link: what ``graphsvc export`` writes."""


class MemoryWrites(ABC):
    """Writes of memories, links, beliefs and context events (each call is all-or-nothing)."""

    @abstractmethod
    def upsert_memories(
        self,
        namespace: str,
        memories: Sequence[Memory],
        *,
        max_memories: int,
        vectors: Mapping[UUID, bytes] | None = None,
    ) -> WriteResult:
        """Write memories, idempotent by id. An id that exists with the same content is left as it
        is (``unchanged``); with other content it is a ConflictError and nothing is written. When
        the namespace then holds more than ``max_memories``, the oldest (by ``recordedAt``, then
        id) among those not in this batch are forgotten, links included (``evicted``).

        ``vectors`` (int8 codes, :mod:`graphsvc.embedding.codes`, of the namespace's
        :meth:`vector_model`) are stored with the memories they name in the same all-or-nothing
        write: a created memory gets its vector, an unchanged one gets it only if it has none. A
        vector whose length is not the model's dimension, or any vector while the namespace has no
        vector model, is a BadInputError and nothing is written."""

    @abstractmethod
    def add_links(self, namespace: str, links: Sequence[Link]) -> None:
        """Create links (or update weight and note of an existing one of the same kind). Both ends
        must exist (NotFoundError, nothing written)."""

    @abstractmethod
    def save_belief(self, belief: Belief) -> None:
        """Store a belief with ``DERIVED_FROM`` its sources and ``USED_CONTEXT`` its context."""

    @abstractmethod
    def append_event(
        self,
        namespace: str,
        run_id: str,
        *,
        step: int,
        kind: str,
        detail: str | None,
        est_tokens: int | None,
        at: datetime,
    ) -> ContextEvent:
        """Record a context event at the end of a run (``seq`` is assigned here)."""

    @abstractmethod
    def set_reported_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        """Put the provider's token count on the latest ``assembled`` event of a run's step.
        NotFoundError when that step has no ``assembled`` event."""


class Erasure(ABC):
    """Removal: one memory (forget), or what a filter names (erase)."""

    @abstractmethod
    def forget(self, namespace: str, memory_id: UUID, *, at: datetime) -> ForgetReceipt:
        """Remove a memory, its links, and the beliefs that derived from or used it."""

    @abstractmethod
    def erase(
        self,
        namespace: str,
        spec: EraseFilter,
        *,
        at: datetime,
        batch_size: int,
        time_budget: float | None = None,
        progress: Callable[[EraseReceipt], None] | None = None,
    ) -> EraseReceipt:
        """Remove what ``spec`` names (it is never empty: the service refuses that), and say what
        was removed.

        A filter removes every memory of the namespace it matches (:meth:`EraseFilter.matches`),
        their links and the beliefs that derived from or used them, keeps term statistics exact,
        and rewrites context events whose detail names an erased memory (the id becomes
        :data:`ERASED`). ``everything`` removes the namespace's memories, links, beliefs, runs,
        context events and statistics.

        A store may work in batches of ``batch_size`` memories, each atomic and idempotent, with
        statistics updated in the batch's transaction: an erase interrupted between batches leaves
        exact statistics, and the same call again finishes it (its receipt counts what that call
        removed). Past ``time_budget`` seconds it stops after the current batch and answers
        ``complete=False``. ``progress`` is called after each durable batch with the receipt so
        far; an exception it raises stops the erase there (and propagates).
        """


class MemoryReads(ABC):
    """Reads of memories, their links and validity, beliefs, runs and counts."""

    @abstractmethod
    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        """The memories with these ids, in the order asked; unknown ids are left out."""

    def window(
        self,
        namespace: str,
        ids: Sequence[UUID],
        ahead: ReadAhead | None = None,
        as_of: AsOf | None = None,
    ) -> tuple[list[Memory], list[tuple[UUID, UUID]]]:
        """A query's ranked window at once: :meth:`get_memories` and :meth:`supersessions` of
        ``ids`` (a store where that is one round trip overrides it). ``ahead``: what this store's
        :meth:`recall_window` read ahead, used where it holds the asked memories (the answer is
        the same with or without it)."""
        return self.get_memories(namespace, ids), self.supersessions(namespace, ids, as_of)

    @abstractmethod
    def supersessions(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[tuple[UUID, UUID]]:
        """``(newer, older)`` pairs of SUPERSEDES links with both ends in ``ids``, sorted
        (``as_of`` KNOWN: only links written by then)."""

    @abstractmethod
    def walk(
        self,
        namespace: str,
        start: Sequence[UUID],
        depth: int,
        max_nodes: int,
        as_of: AsOf | None = None,
    ) -> Walk:
        """Breadth-first over every link kind in both directions, as :class:`Walk` says. With
        ``as_of``, only through memories :meth:`visible` then (and, KNOWN, links written by
        then): the graph as it stood."""

    @abstractmethod
    def visible(self, namespace: str, ids: Sequence[UUID], as_of: AsOf) -> set[UUID]:
        """Which of ``ids`` are memories of the namespace visible as of ``as_of``: KNOWN,
        recorded at or before the instant; VALID, whose effective validity holds it
        (:func:`graphsvc.validity.effective_interval`: from ``validFrom``, else ``occurredAt``,
        else ``recordedAt``, to ``validUntil`` or the start of the earliest memory that
        SUPERSEDES it, whichever is first; the start included, the end not)."""

    @abstractmethod
    def successors(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[Successor]:
        """The memories that SUPERSEDE each of ``ids`` (any memory of the namespace, not only
        among ``ids``), each with its start: what closes the validity of those memories
        (:func:`graphsvc.validity.validities`). Sorted by ``(str(older), str(newer))``. With
        ``as_of`` KNOWN, only what was known then: links written and newer memories recorded
        by the instant; otherwise every link (a VALID read sees what is true then as memory
        knows it now)."""

    @abstractmethod
    def supersession_chain(
        self, namespace: str, memory_id: UUID, max_nodes: int
    ) -> tuple[list[Memory], list[Link]]:
        """The memories joined to ``memory_id`` by SUPERSEDES links, in either direction and
        up to :data:`HISTORY_HOPS` hops (the memory itself included; at most ``max_nodes``, by hops,
        then by
        ``str(id)``), sorted by ``str(id)``, and the SUPERSEDES links among them (sorted as
        :func:`sort_links`). Empty when the memory is not stored."""

    @abstractmethod
    def next_recorded(self, namespace: str, ids: Sequence[UUID]) -> list[tuple[UUID, Memory]]:
        """For each of ``ids`` that is a memory of the namespace, the memory recorded right after
        it there (the least ``(recordedAt, id)`` above its own, ids compared as their canonical
        strings), if any: ``(asked id, that memory)`` in the order asked, a repeated id once."""

    @abstractmethod
    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        """Every link touching one of ``ids``, sorted by ``(source, target, kind)`` as strings."""

    @abstractmethod
    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        """A stored belief, or None."""

    @abstractmethod
    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        """The run's events in the order recorded."""

    @abstractmethod
    def stats(self, namespace: str) -> NamespaceStats:
        """Counts for the namespace."""

    @abstractmethod
    def list_memories(
        self,
        namespace: str,
        *,
        after: tuple[datetime, str] | None,
        limit: int,
        kind: str | None,
        tag: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[Memory]:
        """A page of the namespace's memories, newest first.

        Order: ``(recordedAt, str(id))`` descending (a total order). ``after``: only memories
        strictly after that key in this order (keyset pagination; the key of the last memory of
        the previous page). Filters, all optional and combined with AND: ``kind`` equal;
        ``tag`` among the memory's tags; ``since <= when < until`` with ``when`` = ``occurredAt``,
        else ``recordedAt`` (:attr:`Memory.when`). At most ``limit`` memories. Cost: the page,
        not the namespace (Neo4j: the ``memory_namespace_recorded`` index; mirror: a sorted
        index of ``(recordedAt, id)`` per namespace).
        """

    def facet_counts(self, namespace: str, facet: str, top: int) -> FacetCounts:
        """The ``top`` values of ``facet`` (one of :data:`FACETS`) with the most memories, by
        count descending then value (:func:`facet_order`); for a day facet (:data:`DAY_FACETS`),
        the ``top`` latest days that have memories, newest first. Counts are kept by every
        write, so the cost is the facet's distinct values, never the namespace's memories.
        BadInputError for an unknown facet."""
        raise NotImplementedError(f"{type(self).__name__} keeps no facet counts")


class CandidateReads(ABC):
    """What recall reads first: a query's term statistics and lexical candidates, and the
    memories nearest by meaning (:meth:`similar`). :class:`Store` gives :meth:`recall_columns`
    and :meth:`recall_window` defaults built of the other capabilities."""

    @abstractmethod
    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        """Exact N, total length and df for ``terms``."""

    @abstractmethod
    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        """Every memory containing at least one of ``terms``, as a :class:`Candidate` with the
        frequencies of ``score_terms``, sorted by ``str(id)``."""

    @abstractmethod
    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        """The ``limit`` newest memories containing ``term``, by ``recordedAt`` descending, then
        ``str(id)`` ascending, as candidates."""

    def recall_candidates(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> tuple[TermStats, list[Candidate]]:
        """What a ranking needs first: :meth:`term_stats` of ``terms`` and the candidates
        :func:`plan_candidates` picks with them (``limit``: its candidate limit), scored on the
        frequencies of ``terms``. A store that can answer it in fewer round trips overrides it."""
        stats = self.term_stats(namespace, terms)
        plan = plan_candidates(terms, stats, limit)
        if plan.fallback_term is not None:
            return stats, self.recent_candidates(
                namespace, plan.fallback_term, plan.fallback_limit, terms
            )
        return stats, self.candidates(namespace, plan.terms, terms) if plan.terms else []

    @abstractmethod
    def recall_columns(
        self, namespace: str, terms: Sequence[str], limit: int, as_of: AsOf | None = None
    ) -> tuple[TermStats, CandidateColumns]:
        """As :meth:`recall_candidates`, the candidates column-wise and in any order (scoring
        does not depend on it). ``as_of``: only the candidates :meth:`~MemoryReads.visible`
        then (the statistics stay the namespace's now), filtered where they are read."""

    @abstractmethod
    def recall_window(
        self,
        namespace: str,
        terms: Sequence[str],
        limit: int,
        guess: WindowGuess | None,
        as_of: AsOf | None = None,
    ) -> Recalled:
        """What a bundle needs first, hybrid or not: :meth:`recall_columns` and
        :meth:`~VectorStorage.vector_model`, and the memories ``guess`` expects in the ranked
        window, read ahead for :meth:`~MemoryReads.window`. A store whose reads are local
        ignores the guess (reading ahead would save it nothing); one that waits on a server
        answers all of it in one round trip."""

    @abstractmethod
    def similar(
        self, namespace: str, query: bytes, k: int, ids: Sequence[UUID]
    ) -> list[tuple[UUID, float]]:
        """Dense recall in one call: the exact cosines (:func:`graphsvc.embedding.codes.cosines`) of
        the memories ``ids`` names that have a vector, together with the ``k`` memories of the
        namespace of highest exact cosine with ``query`` (codes of the namespace's model), each
        once, sorted by cosine descending then id. Ids of other namespaces or without a vector are
        left out. Empty when the namespace has no vector model. A store may find the ``k`` best with
        an approximate index, but must re-score them exactly (the k best of the exact ranking must
        come out, as the embedded store's exhaustive search gives them, on every namespace the tests
        and the dev data hold); BadInputError for a wrong length."""


class VectorStorage(ABC):
    """Dense recall's storage (graphsvc/dense.py): a namespace's vector model and its vectors."""

    @abstractmethod
    def vector_model(self, namespace: str) -> VectorModel | None:
        """The model every stored vector of the namespace comes from; None before one is set,
        and while :meth:`set_vector_model` ``(namespace, None)`` is in force (being replaced)."""

    @abstractmethod
    def set_vector_model(self, namespace: str, model: VectorModel | None) -> None:
        """Declare the model of the namespace's vectors (durably).

        Setting the model already in force does nothing. None may be set at any time: it says
        "vectors are being replaced", and dense recall is off until a model is set again. Any other
        model requires that the namespace stores no vector (:meth:`clear_vectors` first;
        BadInputError otherwise), so vectors of two models are never mixed. Namespaces may use
        models of different dimensions (on Neo4j each dimension has its own vector index)."""

    @abstractmethod
    def clear_vectors(self, namespace: str, limit: int) -> int:
        """Remove up to ``limit`` stored vectors of the namespace; the number removed (0: none
        left). Each call is atomic; repeat until it answers 0."""

    @abstractmethod
    def set_vectors(self, namespace: str, vectors: Mapping[UUID, bytes]) -> int:
        """Store vectors (codes of the namespace's model) for existing memories of the namespace,
        replacing theirs; ids not in the namespace are skipped. One atomic write; the number of
        memories that got a vector. BadInputError for a wrong length or no vector model."""

    @abstractmethod
    def vector_count(self, namespace: str) -> int:
        """How many memories of the namespace have a vector."""


class VectorQueue(ABC):
    """The vector queue: memories that wait for their vector.

    A memory waits for its vector from the write that creates it (unless that write gives
    it one) until a vector is stored for it; clearing a vector puts it back. The stores keep
    an index of the waiting memories (the embedded store a sorted set of rows, Neo4j an
    indexed property), so the queue's work grows with the backlog, never with the namespace.
    """

    @abstractmethod
    def pending_vectors(self, namespace: str, limit: int) -> list[PendingVector]:
        """Up to ``limit`` memories of the namespace that wait for their vector, oldest
        recorded first (memories recorded at the same microsecond, which only writes of two
        processes can be, in an order of the store's), read through the index of waiting
        memories: the cost grows with ``limit``."""

    @abstractmethod
    def fill_vectors(
        self,
        namespace: str,
        model: VectorModel,
        vectors: Sequence[tuple[PendingVector, bytes]],
    ) -> int:
        """Store the vectors of memories that waited for one, in one atomic write, and say how
        many were stored. Nothing is stored unless the namespace's vector model is still
        ``model``; a memory's vector is stored only while it still waits for one and is the
        memory :meth:`pending_vectors` named (the same id recorded at the same instant): one
        forgotten, given a vector meanwhile, or forgotten and written again is left as it is.
        So two drainers of one queue, or a drainer racing a rebuild, never write a vector twice
        or onto another model's namespace. BadInputError for a vector of the wrong length."""

    @abstractmethod
    def vector_backlogs(self) -> list[VectorBacklog]:
        """Every namespace with memories waiting for vectors, by namespace (from the kept
        counts: one entry per namespace, no memory read)."""

    @abstractmethod
    def take_vector_queue(self, owner: str, seconds: float) -> bool:
        """Take or renew the lease on this store's vector queue for ``seconds``: True when
        ``owner`` holds it now (it was free, lapsed, or already ``owner``'s). One process at a
        time drains a store's queue; a holder that stops renewing (killed) loses it when it
        lapses."""

    @abstractmethod
    def release_vector_queue(self, owner: str) -> None:
        """Give the lease up, if ``owner`` holds it."""

    @abstractmethod
    def vector_queue_lease(self) -> QueueLease | None:
        """Who holds the lease on the vector queue now (None: nobody, or it lapsed)."""


class Store(Admin, MemoryWrites, Erasure, MemoryReads, CandidateReads, VectorStorage, VectorQueue):
    """Where memories, links, beliefs and context events live: every capability."""

    #: Which store this is (``embedded``, ``neo4j``): what benchmarks and ``stats`` report.
    kind: ClassVar[str]
    #: Whether writes from several threads run at once (each its own transaction) and may
    #: commit in any order. The embedded store writes one at a time, in the order it takes its
    #: lock, and keeps memories in recorded order: it says no.
    concurrent_writes: ClassVar[bool] = False
    #: Whether a read waits on another process (a database server), so that reads started from
    #: other threads meanwhile run beside it: a hybrid bundle then searches by meaning while it
    #: ranks lexically. The embedded store's reads are Python in this process: it says no.
    overlapped_reads: ClassVar[bool] = False

    # -- defaults of candidate reads built of other capabilities (a store may answer faster) ----

    def recall_columns(
        self, namespace: str, terms: Sequence[str], limit: int, as_of: AsOf | None = None
    ) -> tuple[TermStats, CandidateColumns]:
        """As :meth:`recall_candidates`, the candidates column-wise and in any order (scoring
        does not depend on it). A store that holds its data in arrays overrides it.

        ``as_of``: only the candidates :meth:`visible` then (the statistics stay the
        namespace's now); a store filters them where it reads them (both stores override
        this)."""
        stats, found = self.recall_candidates(namespace, terms, limit)
        if as_of is not None:
            keep = self.visible(namespace, [c.id for c in found], as_of)
            found = [c for c in found if c.id in keep]
        return stats, CandidateColumns.of(found, len(terms))

    def recall_window(
        self,
        namespace: str,
        terms: Sequence[str],
        limit: int,
        guess: WindowGuess | None,
        as_of: AsOf | None = None,
    ) -> Recalled:
        """What a bundle needs first, hybrid or not: :meth:`recall_columns` and
        :meth:`vector_model`, and the memories ``guess`` expects in the ranked window, read
        ahead for :meth:`window`. A store whose reads are local ignores the guess (reading
        ahead would save it nothing); one that waits on a server answers all of it in one
        round trip."""
        stats, columns = self.recall_columns(namespace, terms, limit, as_of)
        return Recalled(
            stats, columns, self.vector_model(namespace), vectors=self.vector_count(namespace)
        )


class delegate(Generic[Part, P, R]):  # noqa: N801 (used like a decorator-made method)
    """A method of a store made of parts, answered by the part that implements it::

        class SomeStore(Store):
            upsert_memories = delegate("writes", SomeWrites.upsert_memories)

    ``part`` names the store's attribute that holds the part; the method is looked up on it by
    name at each call. mypy checks the part's signature against the interface's (the store's
    attribute has the part method's type), and the abstract method counts as implemented.
    """

    def __init__(self, part: str, method: Callable[Concatenate[Part, P], R]) -> None:
        self.part = part
        self.name = method.__name__
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} delegates to a method named {self.name}")

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, instance: object, owner: type[Any]) -> Callable[P, R]: ...

    def __get__(self, instance: object | None, owner: type[Any]) -> Self | Callable[P, R]:
        if instance is None:
            return self
        method: Callable[P, R] = getattr(getattr(instance, self.part), self.name)
        return method


__all__ = [
    "Admin",
    "CandidateReads",
    "Erasure",
    "MemoryReads",
    "MemoryWrites",
    "Store",
    "VectorQueue",
    "VectorStorage",
    "delegate",
]
