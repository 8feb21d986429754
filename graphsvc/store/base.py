"""The store interface, in domain terms.

Two honest implementations: :class:`graphsvc.store.mirror.MirrorStore` (compact in-memory tables
and an inverted index, persisted to a data directory) and the Neo4j store. The recall engine is
pure functions over what these methods return, so both stores give byte-identical results when
they return the same data. Every method is scoped to exactly one namespace.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import ClassVar, Self
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.embedding.codes import VectorModel
from graphsvc.errors import BadInputError, ConflictError, NotFoundError
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


@dataclass(frozen=True)
class TermStats:
    """Exact term statistics of a namespace: live memories, their total analysed length, and the
    document frequency of each asked term (0 when no memory contains it)."""

    n_docs: int
    total_length: int
    df: Mapping[str, int]

    @property
    def avg_length(self) -> float:
        return self.total_length / self.n_docs if self.n_docs else 0.0

    def _smooth_idf(self, df: int) -> float:
        # BM25's (Lucene's) IDF, ln(1 + (N - df + 0.5) / (df + 0.5)). The simpler form
        # ln((N + 1) / (df + 1)) is exactly 0 for a term every memory contains: a namespace
        # with one memory could then never recall it, nor two memories that both say "pizza" be
        # found by "pizza". This one ranks the same way, stays positive, and is tiny for such terms.
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))

    def idf(self, term: str) -> float:
        """The IDF of a term for scoring; a term no memory contains weighs 0."""
        df = self.df.get(term, 0)
        if df == 0:
            return 0.0
        return self._smooth_idf(df)

    def coverage_weight(self, term: str) -> float:
        """The weight of a term for coverage: as :meth:`idf`, but a term memory has never seen
        weighs the most, ``ln(2N + 2)`` (the same formula at df = 0): the strongest sign of a
        gap."""
        return self._smooth_idf(self.df.get(term, 0))


@dataclass(frozen=True)
class CandidatePlan:
    """Which postings to fetch: every memory containing one of ``terms``, plus the
    ``fallback_limit`` newest memories containing ``fallback_term`` when even the rarest term is
    too common."""

    terms: tuple[str, ...]
    fallback_term: str | None = None
    fallback_limit: int = 0


def plan_candidates(terms: Sequence[str], stats: TermStats, limit: int) -> CandidatePlan:
    """Bound the work of candidate generation by what the query touches.

    Terms are taken rarest first (df ascending, then the term) while their summed df stays within
    ``limit``: rare terms discriminate, and a memory that shares only very common terms with the
    query could not score high anyway. When the rarest known term alone is over the limit, the
    ``limit`` newest memories containing it stand in.
    """
    known = sorted((stats.df.get(t, 0), t) for t in terms if stats.df.get(t, 0) > 0)
    chosen: list[str] = []
    total = 0
    for df, term in known:
        if total + df > limit:
            continue
        chosen.append(term)
        total += df
    if chosen or not known:
        return CandidatePlan(terms=tuple(chosen))
    return CandidatePlan(terms=(), fallback_term=known[0][1], fallback_limit=limit)


@dataclass(frozen=True, slots=True)
class Candidate:
    """What scoring needs of a memory, without its text: stores compute it where the data is, so a
    query moves a few numbers per candidate, not whole memories.

    ``tf`` holds the term frequency of each scored query term, in the order they were asked;
    times are microseconds since the Unix epoch (UTC).
    """

    id: UUID
    tf: tuple[int, ...]
    length: int
    recorded_us: int
    occurred_us: int | None
    confidence: float

    @property
    def when_us(self) -> int:
        """``occurredAt`` when known, else ``recordedAt``."""
        return self.recorded_us if self.occurred_us is None else self.occurred_us

    @classmethod
    def of(cls, memory: Memory, terms: Sequence[str]) -> Candidate:
        """The candidate form of a memory for these query terms."""
        counts = Counter(memory.terms)
        occurred = memory.occurred_at
        return cls(
            id=memory.id,
            tf=tuple(counts.get(t, 0) for t in terms),
            length=len(memory.terms),
            recorded_us=micros(memory.recorded_at),
            occurred_us=None if occurred is None else micros(occurred),
            confidence=memory.confidence,
        )


@dataclass(frozen=True, eq=False)
class CandidateColumns:
    """Candidates column-wise: entry ``i`` of every column is candidate ``i`` (in no particular
    order). What scoring reads, without a Python object per candidate: a store that holds its data
    in arrays answers :meth:`Store.recall_columns` with these directly.

    ``tf`` has one row per candidate and one column per scored query term (in the order asked);
    times are microseconds since the Unix epoch (UTC), ``when_us`` is ``occurredAt`` when known,
    else ``recordedAt``.
    """

    ids: Sequence[UUID]
    tf: NDArray[np.int64]
    length: NDArray[np.int64]
    recorded_us: NDArray[np.int64]
    occurred_us: NDArray[np.int64]  # meaningless where ``occurred`` is False
    occurred: NDArray[np.bool_]  # whether ``occurredAt`` is known
    when_us: NDArray[np.int64]
    confidence: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(cls, candidates: Sequence[Candidate], n_terms: int) -> CandidateColumns:
        """The columns of candidates that carry ``n_terms`` frequencies each."""
        n = len(candidates)
        tf = np.array([c.tf for c in candidates], dtype=np.int64).reshape(n, n_terms)
        occurred = [c.occurred_us for c in candidates]
        return cls(
            ids=[c.id for c in candidates],
            tf=tf,
            length=np.fromiter((c.length for c in candidates), dtype=np.int64, count=n),
            recorded_us=np.fromiter((c.recorded_us for c in candidates), dtype=np.int64, count=n),
            occurred_us=np.array([0 if o is None else o for o in occurred], dtype=np.int64),
            occurred=np.array([o is not None for o in occurred], dtype=np.bool_),
            when_us=np.fromiter((c.when_us for c in candidates), dtype=np.int64, count=n),
            confidence=np.fromiter((c.confidence for c in candidates), dtype=np.float64, count=n),
        )

    def candidate(self, i: int) -> Candidate:
        """Candidate ``i`` as a :class:`Candidate`."""
        return Candidate(
            self.ids[i],
            tuple(self.tf[i].tolist()),
            int(self.length[i]),
            int(self.recorded_us[i]),
            int(self.occurred_us[i]) if self.occurred[i] else None,
            float(self.confidence[i]),
        )


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """Exact microseconds since the Unix epoch (a float timestamp would round)."""
    return (moment - EPOCH) // _MICROSECOND


@dataclass(frozen=True)
class Walk:
    """What a bounded graph walk reached.

    ``reached`` are the memories at hop distance 1..depth from the start set (never a start), sorted
    by ``(distance, str(id))`` and cut to ``max_nodes``; ``links`` are every link whose both ends
    are in the start set or ``reached``, sorted by ``(source, target, kind)`` as strings.
    """

    reached: tuple[tuple[Memory, int], ...] = ()
    links: tuple[Link, ...] = field(default=())


@dataclass(frozen=True)
class WindowGuess:
    """How the service will rank a query's candidates (:func:`graphsvc.recall.rank_columns`):
    its stage's weights (plain numbers, so the stores need nothing of recall), ``bm25_b`` and
    ``coverage_b``, and the ranking's constants ``k1`` and ``day_us``.
    A store whose reads wait on a server reads the ``size`` best candidates by that score ahead,
    with the candidates themselves (:meth:`Store.recall_window`), so that the ranked window is
    usually read already when the ranking has chosen it. A guess only saves a round trip:
    :meth:`Store.window` reads whatever it missed, so what a query answers never depends on
    it."""

    size: int
    coverage: float
    bm25: float
    freshness: float
    confidence: float
    half_life_days: float
    bm25_b: float
    coverage_b: float
    k1: float
    day_us: int


class ReadAhead:
    """Memories a store read ahead of :meth:`Store.window` (its own form: only the store that
    made it reads it)."""

    __slots__ = ()


@dataclass(frozen=True)
class Recalled:
    """What a bundle reads first (:meth:`Store.recall_window`): the query's term statistics,
    its candidates' columns, the namespace's vector model, what was read ahead of the window
    (None: nothing), and how many of the namespace's memories have a vector (the rest wait for
    theirs: ``stats.n_docs - vectors``)."""

    stats: TermStats
    columns: CandidateColumns
    model: VectorModel | None
    ahead: ReadAhead | None = None
    vectors: int = 0


#: What an overview counts memories by (:meth:`Store.facet_counts`): ``kind``; ``tag`` (each
#: distinct tag of a memory); ``source`` (memories without one are not counted); ``day`` (the UTC
#: day of :attr:`Memory.when`, ``YYYY-MM-DD``); ``recorded`` (the UTC day of ``recordedAt``: the
#: days a KNOWN view changes); ``valid`` (the UTC days its validity starts and, with a
#: ``validUntil``, ends: with the starts of the memories that supersede others, the days a VALID
#: view changes).
FACETS = ("kind", "tag", "source", "day", "recorded", "valid")
#: The facets whose values are days: read latest first, not most frequent first.
DAY_FACETS = frozenset({"day", "recorded", "valid"})


def _utc_day(moment: datetime) -> str:
    return moment.astimezone(UTC).date().isoformat()


def memory_facets(memory: Memory) -> list[tuple[str, str]]:
    """The ``(facet, value)`` pairs a memory counts under, each once."""
    pairs = [
        ("kind", memory.kind),
        ("day", _utc_day(memory.when)),
        ("recorded", _utc_day(memory.recorded_at)),
    ]
    changes = {_utc_day(memory.valid_start)}
    if memory.valid_until is not None:
        changes.add(_utc_day(memory.valid_until))
    pairs += [("valid", day) for day in sorted(changes)]
    pairs += [("tag", tag) for tag in dict.fromkeys(memory.tags)]
    if memory.source is not None:
        pairs.append(("source", memory.source))
    return pairs


def facet_deltas(
    added: Iterable[Iterable[tuple[str, str]]], removed: Iterable[Iterable[tuple[str, str]]]
) -> list[tuple[str, str, int]]:
    """How the facet counts change when memories with these pairs (:func:`memory_facets`) are
    added and removed: ``(facet, value, delta)``, sorted, no zero delta."""
    counts: Counter[tuple[str, str]] = Counter()
    for pairs in added:
        counts.update(pairs)
    for pairs in removed:
        counts.subtract(pairs)
    return [(facet, value, n) for (facet, value), n in sorted(counts.items()) if n]


def facet_order(value: str) -> str:
    """The order both stores give facet values of equal count: Unicode code points, Python's
    order of strings, and Neo4j's for stored strings (a string sent as a parameter compares by
    UTF-16 code units there, which differs above U+FFFF; the contract test pins the stored
    order)."""
    return value


@dataclass(frozen=True)
class FacetCounts:
    """The most frequent values of one facet of a namespace (:meth:`Store.facet_counts`), and how
    many distinct values it has."""

    facet: str
    distinct: int
    top: tuple[tuple[str, int], ...]


def bad_facet(facet: str) -> BadInputError:
    return BadInputError(f"unknown facet {facet!r}: use one of {', '.join(FACETS)}")


#: How far a fact's history reaches (:meth:`Store.supersession_chain`), in SUPERSEDES hops.
HISTORY_HOPS = 16


@dataclass(frozen=True, slots=True)
class PendingVector:
    """A memory that waits for its vector (:meth:`Store.pending_vectors`): its id, its
    ``recordedAt`` in microseconds (which names this very memory: one forgotten and written
    again under the same id is recorded at another instant) and the text to encode."""

    id: UUID
    recorded_us: int
    text: str


@dataclass(frozen=True, slots=True)
class VectorBacklog:
    """A namespace whose memories wait for vectors (:meth:`Store.vector_backlogs`): how many
    (its memories less its vectors), how many vectors it holds, and its vector model (None:
    not declared yet, or being replaced)."""

    namespace: str
    pending: int
    vectors: int
    model: VectorModel | None


@dataclass(frozen=True, slots=True)
class QueueLease:
    """Who drains the vector queue of a store (:meth:`Store.vector_queue_lease`): ``owner``
    (a process's own name for itself) and the seconds left before the lease lapses unless it
    is renewed."""

    owner: str
    seconds_left: float


class Store(ABC):
    """Where memories, links, beliefs and context events live."""

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

    # -- lifecycle -------------------------------------------------------------------------------

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

    # -- writes (each call is all-or-nothing) ----------------------------------------------------

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

        ``vectors`` (int8 codes, :mod:`graphsvc.dense`, of the namespace's :meth:`vector_model`) are
        stored with the memories they name in the same all-or-nothing write: a created memory gets
        its vector, an unchanged one gets it only if it has none. A vector whose length is not the
        model's dimension, or any vector while the namespace has no vector model, is a BadInputError
        and nothing is written."""

    @abstractmethod
    def add_links(self, namespace: str, links: Sequence[Link]) -> None:
        """Create links (or update weight and note of an existing one of the same kind). Both ends
        must exist (NotFoundError, nothing written)."""

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

    # -- reads -----------------------------------------------------------------------------------

    @abstractmethod
    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        """The memories with these ids, in the order asked; unknown ids are left out."""

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

    @abstractmethod
    def supersessions(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[tuple[UUID, UUID]]:
        """``(newer, older)`` pairs of SUPERSEDES links with both ends in ``ids``, sorted
        (``as_of`` KNOWN: only links written by then)."""

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

    # -- vectors (dense recall; graphsvc/dense.py) ------------------------------------------------

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
    def namespaces(self) -> list[str]:
        """Every namespace that holds at least one memory, sorted."""

    @abstractmethod
    def vector_count(self, namespace: str) -> int:
        """How many memories of the namespace have a vector."""

    # -- the vector queue: memories that wait for their vector -----------------------------------
    #
    # A memory waits for its vector from the write that creates it (unless that write gives
    # it one) until a vector is stored for it; clearing a vector puts it back. The stores keep
    # an index of the waiting memories (the embedded store a sorted set of rows, Neo4j an
    # indexed property), so the queue's work grows with the backlog, never with the namespace.

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

    @abstractmethod
    def similar(
        self, namespace: str, query: bytes, k: int, ids: Sequence[UUID]
    ) -> list[tuple[UUID, float]]:
        """Dense recall in one call: the exact cosines (:func:`graphsvc.dense.cosines`) of the
        memories ``ids`` names that have a vector, together with the ``k`` memories of the
        namespace of highest exact cosine with ``query`` (codes of the namespace's model), each
        once, sorted by cosine descending then id. Ids of other namespaces or without a vector are
        left out. Empty when the namespace has no vector model. A store may find the ``k`` best
        with an approximate index, but must re-score them exactly (the k best of the exact
        ranking must come out, as the embedded store's exhaustive search gives them, on every
        namespace the tests and the dev data hold); BadInputError for a wrong length."""

    @abstractmethod
    def export(self, namespace: str) -> Iterator[Memory | Link]:
        """Every memory (oldest first), then every link: what ``graphsvc export`` writes."""


def sort_links(links: Sequence[Link]) -> tuple[Link, ...]:
    """The total order both stores use for links."""
    return tuple(sorted(links, key=lambda lk: (str(lk.source), str(lk.target), lk.kind.value)))


# -- what both stores say and decide the same way (parity depends on the exact words) -----------


def split_upsert(
    memories: Sequence[Memory],
    stored: Callable[[UUID], Memory | None],
) -> tuple[list[Memory], list[UUID]]:
    """Which memories of a write are new (``created``) and which are already there with the same
    content (``unchanged``), in input order; a repeat inside the batch counts as unchanged.

    Ids are scoped to the namespace: the same id may name a memory in another namespace, and
    nothing here (no answer, no error) depends on whether it does.

    Args:
        stored: the namespace's memory with an id, or None.

    Raises:
        ConflictError: an id the namespace holds with other content.
    """
    created: list[Memory] = []
    unchanged: list[UUID] = []
    batch: dict[int, Memory] = {}  # by id.int: integers hash in C, UUIDs in Python
    for memory in memories:
        old = stored(memory.id) or batch.get(memory.id.int)
        if old is not None:
            if not old.same_content(memory):
                raise ConflictError(
                    f"memory {memory.id} exists with different content; forget it first or "
                    "write the new content under a new id"
                )
            unchanged.append(memory.id)
            continue
        batch[memory.id.int] = memory
        created.append(memory)
    return created, unchanged


#: What an erase leaves in a context event's detail in place of an erased memory's id.
ERASED = "[erased]"
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def uuids_in(detail: str | None) -> set[str]:
    """The UUIDs (lowercase, hyphenated: how graphsvc writes ids) a context event's detail
    names."""
    return set(_UUID_RE.findall(detail)) if detail else set()


def redact(detail: str, erased: Callable[[str], bool]) -> str:
    """A detail with every id ``erased`` says was erased replaced by :data:`ERASED`."""
    return _UUID_RE.sub(lambda found: ERASED if erased(found.group(0)) else found.group(0), detail)


def erase_started(namespace: str, spec: EraseFilter, at: datetime) -> EraseReceipt:
    """The receipt of an erase before its first batch: nothing removed, not complete."""
    return EraseReceipt(
        namespace=namespace,
        filter=spec,
        memories=0,
        links=0,
        beliefs=0,
        events=0,
        erased_at=at,
        complete=False,
    )


def nothing_to_erase() -> BadInputError:
    return BadInputError(
        "say what to erase: everything=true for the whole namespace, or a tag, a source, or a "
        "time range (since, until)"
    )


def link_end_missing(link: Link, end: UUID, namespace: str) -> NotFoundError:
    return NotFoundError(
        f"cannot link {link.source} -> {link.target}: memory {end} does not exist in namespace "
        f"{namespace!r}; write it first"
    )


def supersedes_cycle(memory_id: UUID | str) -> BadInputError:
    return BadInputError(
        f"SUPERSEDES links would form a cycle through memory {memory_id}: a newer memory cannot "
        "be superseded by one it supersedes"
    )


def memory_missing(memory_id: UUID, namespace: str) -> NotFoundError:
    return NotFoundError(f"memory {memory_id} does not exist in namespace {namespace!r}")


def belief_memory_missing(memory_id: UUID | str) -> NotFoundError:
    return NotFoundError(f"belief names memories that do not exist: {memory_id}")


def no_assembled_event(run_id: str, step: int) -> NotFoundError:
    return NotFoundError(
        f"run {run_id!r} has no 'assembled' event at step {step}: call promptBundle with this "
        "runId and step first"
    )


# -- the vector contract's words (both stores say the same) --------------------------------------


def describe_model(model: VectorModel) -> str:
    """A model for messages."""
    return f"{model.model_id} (dimension {model.dimension})"


def no_vector_model(namespace: str) -> BadInputError:
    return BadInputError(
        f"namespace {namespace!r} has no vector model: set one (Store.set_vector_model; "
        "`graphsvc embed` does it) before storing vectors"
    )


def wrong_length(what: str, length: int, namespace: str, model: VectorModel) -> BadInputError:
    return BadInputError(
        f"{what} has {length} codes, but namespace {namespace!r} uses vector model "
        f"{describe_model(model)}: encode it with that model (graphsvc.dense.quantize)"
    )


def vectors_in_the_way(
    namespace: str, count: int, model: VectorModel, current: VectorModel | None
) -> BadInputError:
    what = "no model (being replaced)" if current is None else describe_model(current)
    return BadInputError(
        f"namespace {namespace!r} stores {count} vector(s) of its model in force, {what}: "
        f"remove them (Store.clear_vectors until it answers 0; `graphsvc embed --rebuild` does "
        f"it) before setting vector model {describe_model(model)}"
    )


def bad_model(model: VectorModel) -> BadInputError | None:
    """Why a model cannot be declared, or None."""
    if not model.model_id or not model.model_id.strip():
        return BadInputError("a vector model needs a model id (the encoder's name)")
    if model.dimension < 1:
        return BadInputError(
            f"vector model {model.model_id} has dimension {model.dimension}: it must be at least 1"
        )
    return None


__all__ = [
    "EPOCH",
    "ERASED",
    "FACETS",
    "Candidate",
    "CandidateColumns",
    "CandidatePlan",
    "FacetCounts",
    "PendingVector",
    "QueueLease",
    "Store",
    "TermStats",
    "VectorBacklog",
    "Walk",
    "bad_facet",
    "bad_model",
    "belief_memory_missing",
    "describe_model",
    "erase_started",
    "facet_deltas",
    "facet_order",
    "link_end_missing",
    "memory_facets",
    "memory_missing",
    "micros",
    "no_assembled_event",
    "no_vector_model",
    "nothing_to_erase",
    "plan_candidates",
    "redact",
    "sort_links",
    "split_upsert",
    "supersedes_cycle",
    "uuids_in",
    "vectors_in_the_way",
    "wrong_length",
]
