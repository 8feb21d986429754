"""Lexical scoring: BM25 and IDF-weighted coverage of the query, freshness and confidence, in one
composite score per candidate (docs/design.md, read semantics: score), and the orders a ranking
keeps (supersessions, ties).

No I/O here: pure functions over what a store returns. Same inputs, same bytes out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple
from uuid import UUID

import numpy as np

from graphsvc.errors import BadInputError
from graphsvc.model import Memory
from graphsvc.store.candidates import Candidate, CandidateColumns, TermStats, WindowGuess, micros

# BM25 parameters (Robertson/Sparck Jones defaults, as Lucene uses them).
BM25_K1 = 1.2
BM25_B = 0.75
# Output floats are rounded to this many places (docs/design.md, determinism).
PLACES = 6


@dataclass(frozen=True)
class Stage:
    """Weights of the lexical ranking score. ``coverage`` and ``bm25`` make the relevance (they
    are normalised to sum 1; BM25 counts over the most a memory could earn for the query);
    ``freshness`` and ``confidence`` are the share of the score that the memory's age and stored
    confidence can take away. ``min_score`` is the stage's abstention threshold on answerability
    (``topScore``) when a request gives none, chosen by the evaluation to keep false abstention
    low (docs/quality.md)."""

    name: str
    coverage: float
    bm25: float
    freshness: float
    confidence: float
    half_life_days: float
    min_score: float = 0.0


STAGES: dict[str, Stage] = {
    stage.name: stage
    for stage in (
        # name, coverage, bm25, freshness, confidence, half-life (days), min_score
        # BM25 (coverage measured no better on LoCoMo and worse on BEAM: docs/quality.md), a
        # little recency and confidence.
        Stage("default", 0.0, 1.0, 0.1, 0.1, 365, 0.4),
        # For "what is the state now" questions: recency weighs more.
        Stage("recent", 0.0, 1.0, 0.3, 0.1, 30, 0.45),
        # For exact lookups: mostly term coverage, no recency.
        Stage("exact", 0.8, 0.2, 0.0, 0.1, 365, 0.3),
    )
}


def default_thresholds() -> str:
    """Each stage's abstention threshold, as a person reads it: "default 0.4, ..."."""
    return ", ".join(f"{stage.name} {stage.min_score:g}" for stage in STAGES.values())


def get_stage(name: str) -> Stage:
    """The named stage, or a BadInputError listing the known ones."""
    try:
        return STAGES[name]
    except KeyError:
        known = ", ".join(sorted(STAGES))
        raise BadInputError(f"unknown stage {name!r}: use one of {known}") from None


class Ranked(NamedTuple):
    """A candidate as the lexical scorer ranked it, before its memory is read: its id, its
    ranking score, the query terms it matched (query order) and its evidence (its IDF coverage
    of the query, a word no memory holds at the largest weight: what answerability reads). A
    ranking needs only the ids to read the memories back (:func:`attach`)."""

    id: UUID
    score: float
    matched: tuple[str, ...]
    evidence: float = 0.0


@dataclass(frozen=True)
class Scored:
    """A ranked memory: what bundles and beliefs are built from (:func:`attach` makes one of a
    :class:`Ranked` candidate whose memory was read). ``score`` ranks it; ``evidence`` is its
    IDF coverage of the query after the graph features (answers, speakers), which answerability
    reads (:mod:`graphsvc.recall.answerability`); 0 for a memory found by meaning alone."""

    memory: Memory
    score: float
    matched: tuple[str, ...]
    evidence: float = 0.0


DAY_US = 86_400_000_000


def score_candidates(
    terms: Sequence[str],
    stats: TermStats,
    candidates: Iterable[Candidate],
    stage: Stage,
    limit: int | None = None,
    bm25_b: float = BM25_B,
) -> list[Ranked]:
    """Score and rank candidates (docs/design.md, read semantics: score).

    ``candidates`` carry the frequencies of ``terms`` in that order. score = relevance * (1 - f -
    c + f * freshness + c * confidence), with relevance the weighted mean of the memory's
    IDF-weighted coverage of the query and its BM25 relevance normalised by the BM25 of a single
    mention of every term in an average-length memory (capped at 1). Freshness halves every
    ``half_life_days`` before the newest candidate's day, so it depends on the data, not on the
    clock. Ranking: score descending, then ``recordedAt`` descending (newer first), then id;
    with ``limit``, only the first ``limit`` of that ranking. ``bm25_b`` is BM25's length
    normalisation (0: a memory's length does not matter, 1: relevance per average length).
    The same as :func:`rank_columns` over the candidates held column-wise.
    """
    columns = CandidateColumns.of(list(candidates), len(terms))
    return rank_columns(terms, stats, columns, stage, limit, bm25_b)


def rank_columns(
    terms: Sequence[str],
    stats: TermStats,
    columns: CandidateColumns,
    stage: Stage,
    limit: int | None = None,
    bm25_b: float = BM25_B,
) -> list[Ranked]:
    """:func:`score_candidates` over candidates held column-wise (:meth:`Store.recall_columns`):
    the same scores and ranking, with no :class:`Candidate` built."""
    ranked = _rank_columns(terms, stats, columns, stage, limit, bm25_b)
    ids = columns.ids
    return [Ranked(ids[i], score, matched, evidence) for i, score, matched, evidence in ranked]


#: Candidates a store reads ahead beyond the ranked window (:func:`window_guess`): a guess
#: computed on the server with its own float arithmetic can order the window's last few
#: differently (ties, a last bit of a power), and these few keep them in what it read.
WINDOW_GUESS_MARGIN = 10


def window_guess(stage: Stage, limit: int, bm25_b: float) -> WindowGuess:
    """What :func:`rank_columns` with these arguments will rank, for a store to read the
    ``limit`` best candidates (and :data:`WINDOW_GUESS_MARGIN` more) ahead of the window.
    Coverage has no length prior (the guess's ``coverage_b`` is 0)."""
    return WindowGuess(
        size=limit + WINDOW_GUESS_MARGIN,
        coverage=stage.coverage,
        bm25=stage.bm25,
        freshness=stage.freshness,
        confidence=stage.confidence,
        half_life_days=stage.half_life_days,
        bm25_b=bm25_b,
        coverage_b=0.0,
        k1=BM25_K1,
        day_us=DAY_US,
    )


# 0.5 ** (age / half_life) by half-life and age in days (Python's pow, the same bits every time);
# cleared past _DECAY_CACHE_SIZE ages.
_DECAY: dict[float, dict[int, float]] = {}
_DECAY_CACHE_SIZE = 200_000


def _decays(half_life_days: float, ages: list[int]) -> list[float]:
    """The freshness of each age (days before the newest candidate's day)."""
    known = _DECAY.get(half_life_days)
    if known is None or len(known) > _DECAY_CACHE_SIZE:
        known = _DECAY[half_life_days] = {}
    missing = [age for age in ages if age not in known]
    for age in missing:
        known[age] = 0.5 ** (age / half_life_days)
    return list(map(known.__getitem__, ages))


# A score rounded to PLACES differs from the unrounded one by at most half a unit of the last
# place (and a float's error): candidates this far below the limit-th best unrounded score can
# still round to its rounded score, and so tie with it.
_ROUNDING_MARGIN = 2.0 * 10.0**-PLACES


def _rank_columns(
    terms: Sequence[str],
    stats: TermStats,
    columns: CandidateColumns,
    stage: Stage,
    limit: int | None,
    bm25_b: float,
) -> list[tuple[int, float, tuple[str, ...], float]]:
    """The ranking of :func:`score_candidates`: ``(position in columns, score, matched,
    evidence)``."""
    weights = [stats.idf(t) for t in terms]
    total_weight = sum(weights)
    # Coverage for evidence weighs a word no memory holds the most (TermStats.coverage_weight);
    # a seen word weighs its IDF, so a candidate's covered weight is the same sum.
    coverage_total = sum(stats.coverage_weight(t) for t in terms)
    n = len(columns)
    if not n or total_weight <= 0.0:
        return []
    # Vectorised over candidates, one query term at a time, with the same operations in the same
    # order as the scalar formula, so every store (and every run) gets the same bits. pow and
    # round stay in Python: numpy may vectorise pow differently, and rounds differently.
    tf = columns.tf.astype(np.float64)
    length = columns.length.astype(np.float64)
    when_days = columns.when_us // DAY_US
    confidence = columns.confidence
    avg_len = stats.avg_length or 1.0
    norm = BM25_K1 * (1.0 - bm25_b + bm25_b * length / avg_len)
    covered = np.zeros(n)
    bm25 = np.zeros(n)
    for j, weight in enumerate(weights):
        count = tf[:, j]
        hit = count > 0.0
        covered += np.where(hit, weight, 0.0)
        bm25 += np.where(hit, weight * count * (BM25_K1 + 1.0) / (count + norm), 0.0)
    rel_sum = stage.coverage + stage.bm25
    coverage = covered / total_weight
    # BM25 over the most any memory could earn (every term, saturated, at no length): in [0, 1)
    # and, for a query, the BM25 ranking itself (its own saturation and length normalisation).
    relevance = (
        stage.coverage * coverage + stage.bm25 * (bm25 / (total_weight * (BM25_K1 + 1.0)))
    ) / rel_sum
    ages, age_of = np.unique(int(when_days.max()) - when_days, return_inverse=True)
    freshness = np.array(_decays(stage.half_life_days, ages.tolist()), dtype=np.float64)[
        age_of.reshape(-1)
    ]
    keep = 1.0 - stage.freshness - stage.confidence
    factor = keep + stage.freshness * freshness + stage.confidence * confidence
    raw = np.clip(relevance * factor, 0.0, 1.0)

    # Rank: score descending, recordedAt descending, then id (UUIDs order as their integers do
    # as their strings: fixed-width hex). Candidates that match no scored term are dropped.
    # Rounding never reverses an order, so the first ``limit`` are among those whose unrounded
    # score is at least the limit-th best's, less the rounding margin: only those are rounded
    # and sorted.
    order = np.flatnonzero(covered > 0.0)
    if limit is not None and limit < len(order):
        best = raw[order]
        kth = float(np.partition(best, len(best) - limit)[len(best) - limit])
        order = order[best >= kth - _ROUNDING_MARGIN]
    at = order.tolist()
    scores = [round(x, PLACES) for x in raw[order].tolist()]
    recorded = columns.recorded_us[order].tolist()
    ids = columns.ids
    ranking = sorted(range(len(at)), key=lambda k: (-scores[k], -recorded[k], ids[at[k]].int))
    if limit is not None:
        ranking = ranking[:limit]
    tf_rows = columns.tf[[at[k] for k in ranking]].tolist()
    evidence = (covered[[at[k] for k in ranking]] / coverage_total).tolist()
    return [
        (
            at[k],
            scores[k],
            tuple([t for t, c in zip(terms, counts, strict=True) if c > 0]),
            round(share, PLACES),
        )
        for k, counts, share in zip(ranking, tf_rows, evidence, strict=True)
    ]


def attach(ranked: Sequence[Ranked], memories: Iterable[Memory]) -> list[Scored]:
    """The ranked candidates with their memories (as read back), in rank order; a candidate
    whose memory is gone (forgotten since) is left out."""
    by_key = {memory.id.int: memory for memory in memories}
    found = [(by_key.get(r.id.int), r) for r in ranked]
    return [Scored(m, r.score, r.matched, r.evidence) for m, r in found if m is not None]


def apply_supersessions(
    ranked: Sequence[Scored], pairs: Iterable[tuple[UUID, UUID]]
) -> list[Scored]:
    """Make every superseded memory rank below the memories that supersede it.

    A topological order of the ``newer -> older`` edges, taking among the ready items the one of
    best original rank. A cycle (which ``link`` refuses) falls back to rank order for its members.
    """
    edges = [(newer.int, older.int) for newer, older in pairs]
    if not edges:
        return list(ranked)
    position = {item.memory.id.int: i for i, item in enumerate(ranked)}
    blockers: dict[int, set[int]] = {}
    for newer, older in edges:
        if newer in position and older in position and newer != older:
            blockers.setdefault(older, set()).add(newer)
    if not blockers:
        return list(ranked)
    placed: set[int] = set()
    order: list[Scored] = []
    remaining = list(ranked)
    none: set[int] = set()
    while remaining:
        ready = next(
            (i for i, it in enumerate(remaining) if blockers.get(it.memory.id.int, none) <= placed),
            0,  # a cycle: take the best-ranked remaining item
        )
        item = remaining.pop(ready)
        placed.add(item.memory.id.int)
        order.append(item)
    return order


def matched_terms(memory: Memory, terms: Sequence[str]) -> tuple[str, ...]:
    """The query ``terms`` that ``memory`` holds, in query order."""
    present = set(memory.terms)
    return tuple(t for t in terms if t in present)


def rank_order(items: Sequence[Scored], direct: Sequence[Scored]) -> list[Scored]:
    """Score descending; ties keep the order of the direct ranking (``direct``, as
    :func:`score_candidates` ranked it), and memories the walk added come after direct hits of
    the same score, newest ``recordedAt`` first, then id."""
    position = {item.memory.id.int: i for i, item in enumerate(direct)}
    after = len(position)

    def key(it: Scored) -> tuple[float, int, int, int]:
        at = position.get(it.memory.id.int)
        if at is not None:  # a direct hit's position is its own: nothing further is compared
            return (-it.score, at, 0, 0)
        return (-it.score, after, -micros(it.memory.recorded_at), it.memory.id.int)

    return sorted(items, key=key)


__all__ = [
    "BM25_B",
    "BM25_K1",
    "DAY_US",
    "PLACES",
    "STAGES",
    "WINDOW_GUESS_MARGIN",
    "Ranked",
    "Scored",
    "Stage",
    "apply_supersessions",
    "attach",
    "get_stage",
    "matched_terms",
    "rank_columns",
    "rank_order",
    "score_candidates",
    "window_guess",
]
