"""Answerability: the probability that memory holds the answer to a query, from evidence a
reader can name (docs/design.md, abstention). Pure functions.

The ranking orders memories; it does not say whether any of them answers. That is a separate
question with its own evidence, read off the ranking once it is made (:func:`evidence_of`):

- ``coverage``: the best IDF coverage of the query by one ranked memory, after the graph
  features (answers inherit it from their questions; speaker attribution lowers it for a
  question that credits the wrong speaker). A word no memory holds weighs the most
  (:meth:`~graphsvc.store.candidates.TermStats.coverage_weight`): the strongest sign of a gap.
- ``unseen``: the share of the query's coverage weight on words no memory of the namespace holds.
- ``bm25``: the best lexical-graph ranking score (BM25 over the most a memory could earn).
- ``cosine``: the best cosine of a memory found by meaning, read above the encoder's unrelated
  baseline (:func:`~graphsvc.recall.fusion.calibrate`; 0 without an encoder).
- ``agreement``: how high one memory ranks in both rankings: ``1 / r`` for the best ``r`` such
  that some memory is in the first ``r`` of the lexical-graph ranking and of the ranking by
  meaning (0 when none is in both, and without an encoder).
- ``attribution``: the share of the best coverage that survives speaker attribution (1 when the
  query names no declared speaker): low when the best match is another speaker's statement.
- ``margin``: how far the best cosine stands above the :data:`MARGIN_RANK`-th best (0 without
  an encoder): one memory that matches by meaning, rather than a topic many share.

A logistic model of these (:class:`~graphsvc.embedding.registry.Answerability`, coefficients fitted
in the lab and kept as data in each encoder's registry entry; :data:`LEXICAL` when recall is
lexical) turns them into ``topScore``, which a bundle's ``minScore`` is compared with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from uuid import UUID

from graphsvc.embedding.registry import Answerability
from graphsvc.model import AnswerEvidence as Evidence
from graphsvc.model import construct
from graphsvc.recall.scoring import PLACES, Scored
from graphsvc.store.candidates import TermStats

#: The rank whose cosine ``margin`` measures the best one against.
MARGIN_RANK = 10

#: Answerability when recall is lexical (no encoder, a namespace answered lexically, or an
#: encoder without fitted coefficients): coverage, unseen words and BM25 only. Fitted with
#: ``graphsvc eval answerability`` (docs/quality.md).
LEXICAL = Answerability(
    intercept=-2.198, coverage=5.230, unseen=-0.305, bm25=-2.518, attribution=2.395
)


def unseen_share(terms: Sequence[str], stats: TermStats) -> float:
    """The share of the query's coverage weight that falls on terms no memory holds (0 for a
    query without terms)."""
    total = sum(stats.coverage_weight(t) for t in terms)
    if total <= 0.0:
        return 0.0
    unseen = sum(stats.coverage_weight(t) for t in terms if stats.df.get(t, 0) == 0)
    return round(unseen / total, PLACES)


def agreement(lexical: Sequence[UUID], dense: Sequence[UUID]) -> float:
    """``1 / r`` for the least ``r`` at which the first ``r`` of ``lexical`` and the first
    ``r`` of ``dense`` (both best first) share a memory; 0 when they share none."""
    dense_rank = {memory_id: rank for rank, memory_id in enumerate(dense, start=1)}
    best = 0
    for rank, memory_id in enumerate(lexical, start=1):
        if best and rank >= best:
            break
        other = dense_rank.get(memory_id)
        if other is not None:
            joint = max(rank, other)
            if not best or joint < best:
                best = joint
    return round(1.0 / best, PLACES) if best else 0.0


def evidence_of(
    terms: Sequence[str],
    stats: TermStats,
    lexical: Sequence[Scored],
    unattributed: float,
    cosine: Mapping[UUID, float] | None = None,
) -> Evidence:
    """The evidence of a ranking: ``lexical`` is the lexical-graph ranking (best first, before
    any fusion), ``unattributed`` its best evidence before speaker attribution, ``cosine`` the
    calibrated cosines of the memories the search by meaning found and of the ranked ones (None
    without an encoder)."""
    coverage = max((item.evidence for item in lexical), default=0.0)
    bm25 = max((item.score for item in lexical), default=0.0)
    attributed = min(1.0, coverage / unattributed) if unattributed > 0.0 else 1.0
    best_cosine = margin = joint = 0.0
    if cosine:
        values = sorted((max(0.0, value) for value in cosine.values()), reverse=True)
        best_cosine = values[0]
        margin = values[0] - values[min(MARGIN_RANK, len(values)) - 1]
        by_meaning = sorted(
            (memory_id for memory_id, value in cosine.items() if value > 0.0),
            key=lambda memory_id: (-cosine[memory_id], memory_id.int),
        )
        joint = agreement([item.memory.id for item in lexical], by_meaning)
    return construct(
        Evidence,
        {
            "coverage": round(coverage, PLACES),
            "unseen": unseen_share(terms, stats),
            "bm25": round(bm25, PLACES),
            "cosine": round(best_cosine, PLACES),
            "agreement": joint,
            "attribution": round(attributed, PLACES),
            "margin": round(margin, PLACES),
        },
    )


def probability(evidence: Evidence, model: Answerability) -> float:
    """The probability that memory holds the answer, by ``model``, rounded to
    :data:`~graphsvc.recall.scoring.PLACES`."""
    z = (
        model.intercept
        + model.coverage * evidence.coverage
        + model.unseen * evidence.unseen
        + model.bm25 * evidence.bm25
        + model.cosine * evidence.cosine
        + model.agreement * evidence.agreement
        + model.attribution * evidence.attribution
        + model.margin * evidence.margin
    )
    if z >= 0.0:
        value = 1.0 / (1.0 + math.exp(-z))
    else:
        e = math.exp(z)
        value = e / (1.0 + e)
    return round(value, PLACES)


__all__ = [
    "LEXICAL",
    "MARGIN_RANK",
    "Evidence",
    "agreement",
    "evidence_of",
    "probability",
    "unseen_share",
]
