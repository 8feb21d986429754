"""Hybrid recall's fusion: lexical-graph scores and dense cosines in one score (docs/design.md,
hybrid recall), the cosine calibration that makes encoders comparable, and the length prior.
Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from uuid import UUID

from graphsvc.model import Memory
from graphsvc.recall.policy import FusionMode
from graphsvc.recall.scoring import PLACES, Scored, matched_terms
from graphsvc.store.candidates import micros


def fuse(
    ranked: Sequence[Scored],
    cosine: Mapping[UUID, float],
    dense_only: Sequence[Memory],
    weight: float,
    terms: Sequence[str],
    mode: FusionMode = "raw",
    length_b: float = 0.0,
    avg_length: float = 0.0,
    rrf_k: int = 60,
) -> list[Scored]:
    """Lexical-graph scores and dense cosines in one score (docs/design.md, hybrid recall).

    With ``length_b`` (a length prior on the lexical part, for ranking only), a ranked memory
    longer than ``avg_length`` (the namespace's mean analysed length) first keeps
    ``1 / (1 - length_b + length_b * length / avg_length)`` of its lexical-graph score
    (:func:`length_prior`): a long message that mentions many query words among many others no
    longer outranks a short one that states the answer. The lexical ``topScore`` that abstention
    reads is taken before fusion, so the prior never moves it.

    With ``mode`` ``relative``, each part is first divided by its best value among this query's
    memories (the best lexical-graph score, the best positive cosine), so the weight shares
    out two parts on the same scale whatever a corpus' typical scores are. With ``minmax``, the
    cosine is instead mapped to [0, 1] between its lowest and its best value among
    the memories being fused (all the same: divided by that value, so a lone memory found by
    meaning keeps its cosine's weight), because an encoder's cosines may sit in a narrow band far
    from 0; the lexical part stays divided by its best, since a lexical score of 0 already means
    no match, so a memory that matches the query never falls to 0 for being the window's
    weakest.

    Each ranked memory scores ``(1 - weight) * score + weight * max(cosine, 0)``, with cosine 0
    for a memory without a vector; ``dense_only`` memories (the nearest by meaning that no query
    term reached) join with score 0 for the first part. Order: fused score descending; ties keep
    the lexical ranking's order, then dense-only memories by cosine descending, newest
    ``recordedAt`` first, then id. ``matched`` stays the query terms a memory holds.
    """
    keep = 1.0 - weight
    if length_b > 0.0 and avg_length > 0.0:
        ranked = [
            Scored(
                it.memory,
                it.score * length_prior(len(it.memory.terms), avg_length, length_b),
                it.matched,
                it.evidence,
            )
            for it in ranked
        ]
    position = {it.memory.id: i for i, it in enumerate(ranked)}
    members = [(it.memory.id, it.score) for it in ranked] + [(m.id, 0.0) for m in dense_only]
    similar = {m_id: max(cosine.get(m_id, 0.0), 0.0) for m_id, _ in members}
    if mode == "rrf":
        parts = _reciprocal_ranks(members, similar, position, rrf_k)
        scale = float(rrf_k + 1)
        value = {
            m_id: keep * lex * scale + weight * den * scale for m_id, (lex, den) in parts.items()
        }
    elif mode == "zscore":
        lex_z = _standardised([score for _, score in members])
        den_z = _standardised([similar[m_id] for m_id, _ in members])
        value = {
            m_id: _logistic(keep * lz + weight * dz)
            for (m_id, _), lz, dz in zip(members, lex_z, den_z, strict=True)
        }
    else:
        lexical_low = cosine_low = 0.0
        lexical_scale = cosine_scale = 1.0
        if mode == "minmax":
            lexical_scale = max((it.score for it in ranked), default=0.0) or 1.0
            cosine_low, cosine_scale = _spread(list(similar.values()))
        elif mode == "relative":
            lexical_scale = max((it.score for it in ranked), default=0.0) or 1.0
            cosine_scale = max((max(c, 0.0) for c in cosine.values()), default=0.0) or 1.0
        value = {
            m_id: keep * ((score - lexical_low) / lexical_scale)
            + weight * ((similar[m_id] - cosine_low) / cosine_scale)
            for m_id, score in members
        }
    items = [
        Scored(it.memory, round(value[it.memory.id], PLACES), it.matched, it.evidence)
        for it in ranked
    ]
    for memory in dense_only:
        items.append(Scored(memory, round(value[memory.id], PLACES), matched_terms(memory, terms)))
    return sorted(
        items,
        key=lambda it: (
            -it.score,
            position.get(it.memory.id, len(position)),
            -cosine.get(it.memory.id, 0.0),
            -micros(it.memory.recorded_at),
            it.memory.id.int,
        ),
    )


def _reciprocal_ranks(
    members: Sequence[tuple[UUID, float]],
    similar: Mapping[UUID, float],
    position: Mapping[UUID, int],
    k: int,
) -> dict[UUID, tuple[float, float]]:
    """Each member's ``1 / (k + rank)`` in the lexical ranking (by score, then lexical position)
    and in the ranking by meaning (by cosine, then lexical position, then id): 0 for a part it
    has no match in (a lexical score or cosine of 0)."""
    after = len(position)
    lexical = sorted(
        (m for m in members if m[1] > 0.0),
        key=lambda m: (-m[1], position.get(m[0], after), m[0].int),
    )
    dense = sorted(
        (m for m in members if similar[m[0]] > 0.0),
        key=lambda m: (-similar[m[0]], position.get(m[0], after), m[0].int),
    )
    lex_rank = {m_id: rank for rank, (m_id, _) in enumerate(lexical, start=1)}
    den_rank = {m_id: rank for rank, (m_id, _) in enumerate(dense, start=1)}
    return {
        m_id: (
            1.0 / (k + lex_rank[m_id]) if m_id in lex_rank else 0.0,
            1.0 / (k + den_rank[m_id]) if m_id in den_rank else 0.0,
        )
        for m_id, _ in members
    }


def _standardised(values: Sequence[float]) -> list[float]:
    """``values`` as z-scores (mean 0, population standard deviation 1); all 0 when they are
    all the same."""
    if not values:
        return []
    centre = sum(values) / len(values)
    spread = math.sqrt(sum((v - centre) ** 2 for v in values) / len(values))
    if spread <= 0.0:
        return [0.0] * len(values)
    return [(v - centre) / spread for v in values]


def _logistic(value: float) -> float:
    """The logistic function, in (0, 1)."""
    if value >= 0.0:
        return 1.0 / (1.0 + math.exp(-value))
    e = math.exp(value)
    return e / (1.0 + e)


def calibrate(cosine: float, unrelated: float) -> float:
    """A cosine read above an encoder's typical unrelated cosine ``unrelated`` (in [0, 1)):
    ``(cosine - unrelated) / (1 - unrelated)``, 0 at or below it and 1 at 1. Two encoders'
    cosines then mean alike: 0 for a pair about different things, whether the encoder puts such
    pairs at 0.07 or at 0.75."""
    if cosine <= unrelated:
        return 0.0
    return (cosine - unrelated) / (1.0 - unrelated)


def _spread(values: Sequence[float]) -> tuple[float, float]:
    """The low end and the width that map ``values`` onto [0, 1] (min-max); for values that are
    all the same, 0 and that value (or 1 for 0): each of them then counts 1."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    if high > low:
        return low, high - low
    return 0.0, high or 1.0


def length_prior(length: int, avg_length: float, b: float) -> float:
    """The share of its lexical score a memory of ``length`` analysed terms keeps under a length
    prior of strength ``b`` (BM25's pivoted length normalisation, one-sided): 1 up to the
    average length ``avg_length``, then ``1 / (1 - b + b * length / avg_length)``; 1 when ``b``
    is 0."""
    if b <= 0.0 or avg_length <= 0.0 or length <= avg_length:
        return 1.0
    return 1.0 / (1.0 - b + b * length / avg_length)


__all__ = ["calibrate", "fuse", "length_prior"]
