"""Hybrid recall's fusion (recall.fuse) and the bundle's abstention under it.

Pure functions: memories are built directly, cosines given by hand.
"""

from __future__ import annotations

import math
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from graphsvc.model import Link, LinkKind
from graphsvc.recall import (
    STAGES,
    BundleRequest,
    Scored,
    build_bundle,
    calibrate,
    expand_answers,
    fuse,
    length_prior,
    unlinked_seeds,
)
from graphsvc.recall.policy import ConversationPolicy, FusionMode
from graphsvc.store.candidates import TermStats
from graphsvc.store.graph import Walk
from tests.unit.test_recall import BASE, mem

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


def test_abstention_uses_answerability_not_the_fused_score() -> None:
    ranked = [scored(1, 0.6)]  # fused: high thanks to the cosine
    skipped = build_bundle(request(0.45), ["alpha"], stats(), ranked, 0.3)
    assert skipped.skipped and skipped.top_score == 0.3 and skipped.capsules == ()
    kept = build_bundle(request(0.45), ["alpha"], stats(), ranked, 0.5)
    assert not kept.skipped and [c.score for c in kept.capsules] == [0.6]
    assert kept.retrieval == "hybrid"


def test_hybrid_floor_is_relative_to_the_best_fused_score() -> None:
    ranked = [scored(1, 0.6), scored(2, 0.2), scored(3, 0.1)]
    result = build_bundle(request(0.3), ["alpha"], stats(), ranked, 0.5)
    # floor 0.3 * 0.6 = 0.18: 0.2 stays although it is below minScore, 0.1 does not.
    assert [c.score for c in result.capsules] == [0.6, 0.2]
    assert [c.reason for c in result.excluded] == ["below_floor"]


# -- answers followed by what was recorded next ---------------------------------------------------


def edge(source: int, target: int) -> tuple[UUID, UUID]:
    return UUID(int=source), UUID(int=target)


def link(source: int, target: int, kind: LinkKind = LinkKind.PRECEDES) -> Link:
    return Link(source=UUID(int=source), target=UUID(int=target), kind=kind, created_at=BASE)


def test_a_seed_that_precedes_nothing_is_followed_by_what_was_recorded_next() -> None:
    seeds = [Scored(mem(1, "Is it done?"), 0.9, ()), Scored(mem(2, "Who did it?"), 0.8, ())]
    # Only a PRECEDES link out of a seed counts as its follower: other kinds, or a link into it,
    # leave it to the memory recorded after it.
    links = [link(1, 3, LinkKind.CAUSES), link(4, 1), link(2, 5)]
    assert unlinked_seeds(seeds, links) == [UUID(int=1)]
    assert unlinked_seeds(seeds, []) == [UUID(int=1), UUID(int=2)]
    declared_only = ConversationPolicy(next_recorded_follows=False)
    assert unlinked_seeds(seeds, [], declared_only) == []


def test_expansion_treats_the_next_recorded_memory_as_a_precedes_target() -> None:
    question = Scored(mem(1, "Where did you go hiking?"), 0.9, ("hike",))
    reply = mem(3, "Up on the ridge.")
    linked = mem(4, "A hike it was.")  # reached, but from a memory that is no seed
    walk = Walk(reached=((linked, 1),), links=(link(2, 4),))
    out = expand_answers([question], [question], walk, ["hike"], [(question.memory.id, reply)])
    assert {(it.memory.id.int, it.score, it.matched) for it in out} == {
        (1, 0.9, ("hike",)),
        (3, round(0.9 * ConversationPolicy().answer_share, 6), ()),
    }


def test_spread_maps_the_cosine_between_its_lowest_and_best() -> None:
    ranked = [scored(1, 0.8), scored(2, 0.6), scored(3, 0.4)]
    cosine = {UUID(int=1): 0.3, UUID(int=2): 0.5, UUID(int=3): 0.2, UUID(int=4): 0.45}
    out = fuse(ranked, cosine, [mem(4, "found by meaning")], 0.5, ["alpha"], mode="minmax")
    # lexical 0.8 / 0.6 / 0.4 / 0 -> divided by the best: 1 / 0.75 / 0.5 / 0;
    # cosines 0.2 .. 0.5 -> min-max: 1/3 / 1 / 0 / 5/6
    assert [(it.memory.id.int, it.score) for it in out] == [
        (2, round(0.5 * 0.75 + 0.5 * 1.0, 6)),
        (1, round(0.5 * 1.0 + 0.5 * (0.1 / 0.3), 6)),
        (4, round(0.5 * (0.25 / 0.3), 6)),
        (3, 0.25),
    ]


def test_spread_never_drops_a_lexical_match_to_zero() -> None:
    # Two memories that match: the weaker by both words and meaning keeps its lexical share.
    out = fuse(
        [scored(1, 0.9), scored(2, 0.3)],
        {UUID(int=1): 0.8, UUID(int=2): 0.7},
        [],
        0.7,
        ["alpha"],
        mode="minmax",
    )
    assert [(it.memory.id.int, it.score) for it in out] == [
        (1, 1.0),
        (2, round(0.3 / 0.9 * 0.3, 6)),
    ]


def test_spread_gives_a_lone_memory_found_by_meaning_its_cosines_weight() -> None:
    # No query word in memory and one memory near enough by meaning: min-max has one value to
    # map, which then counts in full instead of nothing.
    out = fuse([], {UUID(int=4): 0.41}, [mem(4, "found by meaning")], 0.7, ["alpha"], mode="minmax")
    assert [(it.memory.id.int, it.score) for it in out] == [(4, 0.7)]
    # Two lexical hits of the same score: each keeps the lexical part in full.
    same = fuse([scored(1, 0.4), scored(2, 0.4)], {}, [], 0.3, ["alpha"], mode="minmax")
    assert [it.score for it in same] == [0.7, 0.7]


@FAST
@given(
    st.lists(st.tuples(SCORES, COSINES), min_size=1, max_size=12),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_spread_scores_stay_in_range(pairs: list[tuple[float, float]], w: float) -> None:
    ranked = [scored(i + 1, s) for i, (s, _) in enumerate(pairs)]
    cosine = {UUID(int=i + 1): c for i, (_, c) in enumerate(pairs)}
    out = fuse(ranked, cosine, [], w, ["alpha"], mode="minmax")
    assert all(0.0 <= it.score <= 1.0 for it in out)
    assert [it.score for it in out] == sorted((it.score for it in out), reverse=True)


def test_a_long_message_no_longer_outranks_a_short_exact_answer() -> None:
    # The long message mentions both query words among many others and wins the lexical score;
    # the short turn states the answer. Their cosines are alike.
    filler = " ".join(f"word{i}" for i in range(60))
    long = Scored(mem(1, f"alpha bravo {filler}"), 0.8, ("alpha", "bravo"))
    short = Scored(mem(2, "alpha bravo in May"), 0.6, ("alpha", "bravo"))
    cosine = {UUID(int=1): 0.5, UUID(int=2): 0.5}
    average = 10.0  # analysed terms per memory in the namespace
    off = fuse([long, short], cosine, [], 0.4, ["alpha", "bravo"], "relative")
    assert [it.memory.id.int for it in off] == [1, 2]
    on = fuse([long, short], cosine, [], 0.4, ["alpha", "bravo"], "relative", 0.5, average)
    assert [it.memory.id.int for it in on] == [2, 1]
    # The short memory is below the average length: its score is as without the prior.
    plain = fuse([short], cosine, [], 0.4, ["alpha", "bravo"], "relative")
    assert plain[0].score == next(it.score for it in on if it.memory.id.int == 2)


def test_length_prior_keeps_short_memories_and_falls_with_length() -> None:
    assert length_prior(5, 10.0, 1.0) == 1.0
    assert length_prior(10, 10.0, 1.0) == 1.0
    assert length_prior(40, 10.0, 0.0) == 1.0
    assert length_prior(40, 0.0, 1.0) == 1.0  # an empty namespace has no average
    assert length_prior(40, 10.0, 1.0) == 0.25  # per average length at full strength
    shares = [length_prior(n, 10.0, 0.5) for n in (10, 20, 40, 80)]
    assert shares == sorted(shares, reverse=True) and shares[0] > shares[-1]
    assert length_prior(40, 10.0, 0.25) > length_prior(40, 10.0, 0.75)


@FAST
@given(
    st.lists(st.tuples(SCORES, COSINES, st.integers(0, 40)), min_size=1, max_size=12),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_length_prior_scores_stay_in_range_and_never_rise(
    rows: list[tuple[float, float, int]], w: float, b: float
) -> None:
    ranked = [
        Scored(mem(i + 1, " ".join(["alpha"] + [WORDS[j % 10] for j in range(n)])), s, ("alpha",))
        for i, (s, _, n) in enumerate(rows)
    ]
    cosine = {UUID(int=i + 1): c for i, (_, c, _) in enumerate(rows)}
    before = {it.memory.id: it.score for it in fuse(ranked, cosine, [], w, ["alpha"])}
    out = fuse(ranked, cosine, [], w, ["alpha"], "raw", b, 8.0)
    assert all(0.0 <= it.score <= before[it.memory.id] for it in out)
    assert [it.score for it in out] == sorted((it.score for it in out), reverse=True)


@given(
    st.floats(-1.0, 1.0),
    st.floats(-1.0, 1.0),
    st.floats(0.0, 0.95),
)
def test_calibrated_cosines_keep_their_order_and_start_at_the_unrelated_one(
    a: float, b: float, unrelated: float
) -> None:
    low, high = sorted((a, b))
    assert calibrate(low, unrelated) <= calibrate(high, unrelated)
    assert calibrate(unrelated, unrelated) == 0.0
    assert calibrate(1.0, unrelated) == pytest.approx(1.0)
    assert 0.0 <= calibrate(high, unrelated) <= 1.0 + 1e-12


def test_rank_fusion_counts_each_part_by_its_rank() -> None:
    ranked = [scored(1, 0.8), scored(2, 0.6), scored(3, 0.4)]
    cosine = {UUID(int=1): 0.2, UUID(int=2): 0.5, UUID(int=3): -0.1, UUID(int=4): 0.45}
    out = fuse(ranked, cosine, [mem(4, "by meaning")], 0.5, ["alpha"], mode="rrf", rrf_k=10)
    # Lexical ranks 1, 2, 3 (memory 4 has no lexical match); by meaning 2 (0.5), 4 (0.45),
    # 1 (0.2); memory 3's cosine is below 0: no part. Scaled so that first in both scores 1.
    part = {1: (1 / 11, 1 / 13), 2: (1 / 12, 1 / 11), 3: (1 / 13, 0.0), 4: (0.0, 1 / 12)}
    expected = {n: round(0.5 * a * 11 + 0.5 * b * 11, 6) for n, (a, b) in part.items()}
    assert [(it.memory.id.int, it.score) for it in out] == sorted(
        expected.items(), key=lambda kv: -kv[1]
    )
    assert out[0].memory.id.int == 2  # second lexically, first by meaning
    # The same memory first in both parts scores 1, whatever the weight.
    top = fuse([scored(1, 0.9)], {UUID(int=1): 0.9}, [], 0.3, ["alpha"], mode="rrf")
    assert top[0].score == 1.0


def test_zscores_weigh_each_part_by_its_spread_over_the_querys_memories() -> None:
    ranked = [scored(1, 0.8), scored(2, 0.6), scored(3, 0.4)]
    cosine = {UUID(int=1): 0.3, UUID(int=2): 0.6, UUID(int=3): 0.3}
    out = fuse(ranked, cosine, [], 0.5, ["alpha"], mode="zscore")
    lexical = [0.8, 0.6, 0.4]
    dense = [0.3, 0.6, 0.3]

    def z(values: list[float]) -> list[float]:
        mean = sum(values) / len(values)
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return [(v - mean) / spread for v in values]

    fused = [0.5 * a + 0.5 * b for a, b in zip(z(lexical), z(dense), strict=True)]
    expected = {n + 1: round(1 / (1 + math.exp(-f)), 6) for n, f in enumerate(fused)}
    assert {it.memory.id.int: it.score for it in out} == expected
    assert [it.memory.id.int for it in out] == [2, 1, 3]
    # One memory: no spread, every part 0, the logistic of 0.
    alone = fuse([scored(1, 0.8)], {UUID(int=1): 0.9}, [], 0.5, ["alpha"], mode="zscore")
    assert alone[0].score == 0.5


@FAST
@given(
    st.lists(st.tuples(SCORES, COSINES), min_size=1, max_size=12),
    st.lists(COSINES, max_size=4),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.sampled_from(["rrf", "zscore", "minmax", "relative", "raw"]),
    st.integers(1, 100),
)
def test_every_mode_scores_in_range_sorted_and_keeps_every_memory(
    pairs: list[tuple[float, float]],
    extra: list[float],
    w: float,
    mode: FusionMode,
    k: int,
) -> None:
    ranked = [scored(i + 1, s) for i, (s, _) in enumerate(pairs)]
    cosine = {UUID(int=i + 1): c for i, (_, c) in enumerate(pairs)}
    found = [mem(100 + i, f"meaning {i}") for i in range(len(extra))]
    cosine.update({m.id: c for m, c in zip(found, extra, strict=True)})
    out = fuse(ranked, cosine, found, w, ["alpha"], mode=mode, rrf_k=k)
    assert sorted(it.memory.id.int for it in out) == sorted(
        [it.memory.id.int for it in ranked] + [m.id.int for m in found]
    )
    assert all(0.0 <= it.score <= 1.0 for it in out)
    assert [it.score for it in out] == sorted((it.score for it in out), reverse=True)
    # Without the dense part, the lexical order stands (ties broken by it too).
    if w == 0.0:
        lexical = [it.memory.id.int for it in out if it.memory.id.int < 100]
        order = sorted(ranked, key=lambda it: -it.score)
        assert lexical == [it.memory.id.int for it in order]
