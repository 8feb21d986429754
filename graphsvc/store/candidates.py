"""What a query's lexical candidates are made of: a namespace's term statistics, the plan that
bounds which postings are read, the candidates themselves (one by one or column-wise), and what a
bundle reads first (:meth:`~graphsvc.store.base.CandidateReads.recall_window`). Times are
microseconds since the Unix epoch (:func:`micros`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.embedding.codes import VectorModel
from graphsvc.model import Memory


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


__all__ = [
    "EPOCH",
    "Candidate",
    "CandidateColumns",
    "CandidatePlan",
    "ReadAhead",
    "Recalled",
    "TermStats",
    "WindowGuess",
    "micros",
    "plan_candidates",
]
