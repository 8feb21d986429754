"""Hybrid recall's fusion (recall.fuse) and the bundle's abstention under it.

Pure functions: memories are built directly, cosines given by hand.
"""

from __future__ import annotations

from uuid import UUID

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from graphsvc.recall import STAGES, BundleRequest, Scored, build_bundle, fuse
from graphsvc.store.base import TermStats
from tests.unit.test_recall import mem

FAST = hsettings(max_examples=200, deadline=None)
SCORES = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
COSINES = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)


WORDS = ["bravo", "delta", "echo", "golf", "hotel", "india", "kilo", "lima", "mike", "oscar"]


def scored(n: int, score: float) -> Scored:
    text = f"alpha {WORDS[n % len(WORDS)]} {WORDS[(n * 3 + 1) % len(WORDS)]} memory {n}"
    return Scored(mem(n, text), round(score, 6), ("alpha",))


def test_formula_and_order() -> None:
    ranked = [scored(1, 0.8), scored(2, 0.6)]
    cosine = {UUID(int=1): 0.1, UUID(int=2): 0.9, UUID(int=3): 0.95}
    out = fuse(ranked, cosine, [mem(3, "a memory found by meaning")], 0.3, ["alpha"])
    assert [(it.memory.id.int, it.score) for it in out] == [
        (2, round(0.7 * 0.6 + 0.3 * 0.9, 6)),  # 0.69
        (1, round(0.7 * 0.8 + 0.3 * 0.1, 6)),  # 0.59
        (3, round(0.3 * 0.95, 6)),  # 0.285: found by meaning alone
    ]
    assert out[2].matched == ()  # it holds no query term


def test_negative_cosine_takes_nothing_away_and_missing_vector_counts_zero() -> None:
    out = fuse([scored(1, 0.5), scored(2, 0.5)], {UUID(int=1): -0.4}, [], 0.3, ["alpha"])
    assert [it.score for it in out] == [0.35, 0.35]
    assert [it.memory.id.int for it in out] == [1, 2]  # ties keep the lexical order


@FAST
@given(
    st.lists(st.tuples(SCORES, COSINES), min_size=1, max_size=12),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_fused_scores_stay_in_range_and_sorted(pairs: list[tuple[float, float]], w: float) -> None:
    ranked = [scored(i + 1, s) for i, (s, _) in enumerate(pairs)]
    cosine = {UUID(int=i + 1): c for i, (_, c) in enumerate(pairs)}
    out = fuse(ranked, cosine, [], w, ["alpha"])
    assert sorted(it.memory.id for it in out) == sorted(it.memory.id for it in ranked)
    assert all(0.0 <= it.score <= 1.0 for it in out)
    assert [it.score for it in out] == sorted((it.score for it in out), reverse=True)
    if w == 0.0:
        assert [it.score for it in out] == sorted((it.score for it in ranked), reverse=True)


def request(min_score: float) -> BundleRequest:
    return BundleRequest("alpha", 1_000, min_score, 20, STAGES["default"], 0.3, "hybrid")


def stats() -> TermStats:
    return TermStats(n_docs=10, total_length=50, df={"alpha": 2})


def test_abstention_uses_the_lexical_top_score() -> None:
    ranked = [scored(1, 0.6)]  # fused: high thanks to the cosine
    skipped = build_bundle(request(0.45), ["alpha"], stats(), ranked, lexical_top=0.3)
    assert skipped.skipped and skipped.top_score == 0.3 and skipped.capsules == ()
    kept = build_bundle(request(0.45), ["alpha"], stats(), ranked, lexical_top=0.5)
    assert not kept.skipped and [c.score for c in kept.capsules] == [0.6]
    assert kept.retrieval == "hybrid"


def test_hybrid_floor_is_relative_to_the_best_fused_score() -> None:
    ranked = [scored(1, 0.6), scored(2, 0.2), scored(3, 0.1)]
    result = build_bundle(request(0.3), ["alpha"], stats(), ranked, lexical_top=0.5)
    # floor 0.3 * 0.6 = 0.18: 0.2 stays although it is below minScore, 0.1 does not.
    assert [c.score for c in result.capsules] == [0.6, 0.2]
    assert [c.reason for c in result.excluded] == ["below_floor"]
