"""Hybrid recall's fusion (recall.fuse) and the bundle's abstention under it.

Pure functions: memories are built directly, cosines given by hand.
"""

from __future__ import annotations

from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from graphsvc import recall
from graphsvc.model import Link, LinkKind
from graphsvc.recall import (
    STAGES,
    BundleRequest,
    Scored,
    build_bundle,
    calibrate,
    context_cosines,
    expand_answers,
    fuse,
    fused_seeds,
    length_prior,
    propagate_answers,
    unlinked_seeds,
)
from graphsvc.store.base import TermStats, Walk
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


# -- dense similarity with context, and the fused score passed from questions to answers --------


def edge(source: int, target: int) -> tuple[UUID, UUID]:
    return UUID(int=source), UUID(int=target)


def link(source: int, target: int, kind: LinkKind = LinkKind.PRECEDES) -> Link:
    return Link(source=UUID(int=source), target=UUID(int=target), kind=kind, created_at=BASE)


def test_a_short_turn_takes_a_share_of_its_neighbours_meaning() -> None:
    cosine = {UUID(int=1): 0.8, UUID(int=2): 0.1, UUID(int=3): 0.5}
    links = [link(1, 2), link(2, 3), link(4, 3, LinkKind.RELATES_TO)]
    out = context_cosines([UUID(int=2), UUID(int=3), UUID(int=4)], links, cosine, 0.5)
    # 2: 0.5 * 0.8 from the turn before it; 3: its own 0.5 beats 0.5 * 0.1;
    # 4 has no cosine of its own and takes 0.5 * 0.5 from 3 (either direction counts).
    assert out == {UUID(int=2): 0.4, UUID(int=3): 0.5, UUID(int=4): 0.25}


def test_supersession_lends_no_meaning_and_weight_zero_is_own_cosine() -> None:
    cosine = {UUID(int=1): 0.9, UUID(int=2): 0.1}
    supersedes = [link(1, 2, LinkKind.SUPERSEDES)]
    assert context_cosines([UUID(int=2)], supersedes, cosine, 1.0) == {UUID(int=2): 0.1}
    assert context_cosines([UUID(int=2)], [link(1, 2)], cosine, 0.0) == {UUID(int=2): 0.1}


@FAST
@given(
    st.lists(COSINES, min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(1, 8), st.integers(1, 8)), max_size=12),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_context_never_lowers_a_cosine_nor_exceeds_the_best(
    values: list[float], edges: list[tuple[int, int]], weight: float
) -> None:
    cosine = {UUID(int=i + 1): c for i, c in enumerate(values)}
    pool = list(cosine)
    out = context_cosines(pool, [link(a, b) for a, b in edges], cosine, weight)
    assert set(out) == set(pool)
    best = max(max(values), 0.0)
    for memory_id, value in out.items():
        assert value >= cosine[memory_id]
        assert value <= max(best, cosine[memory_id])


def test_an_answer_inherits_a_share_of_its_questions_fused_score() -> None:
    question = Scored(mem(1, "Where did you go hiking last weekend?"), 0.9, ("hike",))
    other = Scored(mem(2, "alpha bravo"), 0.5, ())
    answer = mem(3, "Up on the ridge above the lake.")
    fused = [question, other]
    seeds = fused_seeds(fused, 10)
    assert seeds == [question]
    out = propagate_answers(fused, seeds, [edge(1, 3)], {answer.id: answer}, 0.8, ["hike"])
    assert [(it.memory.id.int, it.score) for it in out] == [(1, 0.9), (3, 0.72), (2, 0.5)]
    assert out[1].matched == ()
    # share 0 or a weaker inheritance changes nothing
    assert propagate_answers(fused, seeds, [edge(1, 3)], {answer.id: answer}, 0.0, []) == fused
    ranked = [question, Scored(answer, 0.8, ())]
    assert propagate_answers(ranked, seeds, [edge(1, 3)], {}, 0.8, []) == ranked


def test_only_an_edge_from_a_seed_passes_the_score_on() -> None:
    question = Scored(mem(1, "Is it done?"), 0.9, ())
    statement = Scored(mem(2, "It is done."), 0.6, ())
    after = mem(3, "Later.")
    fused = [question, statement]
    followers = {after.id: after}
    assert propagate_answers(fused, [question], [edge(2, 3)], followers, 0.8, []) == fused
    assert fused_seeds(fused, 1) == [question] and fused_seeds([statement], 10) == []


def test_a_seed_that_precedes_nothing_is_followed_by_what_was_recorded_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seeds = [Scored(mem(1, "Is it done?"), 0.9, ()), Scored(mem(2, "Who did it?"), 0.8, ())]
    # Only a PRECEDES link out of a seed counts as its follower: other kinds, or a link into it,
    # leave it to the memory recorded after it.
    links = [link(1, 3, LinkKind.CAUSES), link(4, 1), link(2, 5)]
    assert unlinked_seeds(seeds, links) == [UUID(int=1)]
    assert unlinked_seeds(seeds, []) == [UUID(int=1), UUID(int=2)]
    monkeypatch.setattr(recall, "NEXT_RECORDED_FOLLOWS", False)
    assert unlinked_seeds(seeds, []) == []


def test_expansion_treats_the_next_recorded_memory_as_a_precedes_target() -> None:
    question = Scored(mem(1, "Where did you go hiking?"), 0.9, ("hike",))
    reply = mem(3, "Up on the ridge.")
    linked = mem(4, "A hike it was.")  # reached, but from a memory that is no seed
    walk = Walk(reached=((linked, 1),), links=(link(2, 4),))
    out = expand_answers([question], [question], walk, ["hike"], [(question.memory.id, reply)])
    assert {(it.memory.id.int, it.score, it.matched) for it in out} == {
        (1, 0.9, ("hike",)),
        (3, round(0.9 * recall.ANSWER_SHARE, 6), ()),
    }


@FAST
@given(
    st.lists(SCORES, min_size=1, max_size=10),
    st.lists(st.tuples(st.integers(1, 10), st.integers(1, 14)), max_size=12),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_propagation_keeps_scores_in_range_sorted_and_never_lower(
    scores: list[float], edges: list[tuple[int, int]], share: float
) -> None:
    fused = sorted(
        (Scored(mem(i + 1, f"turn {i}?"), round(s, 6), ()) for i, s in enumerate(scores)),
        key=lambda it: -it.score,
    )
    followers = {UUID(int=n): mem(n, f"reply {n}") for n in range(11, 15)}
    out = propagate_answers(
        fused, fused_seeds(fused, 10), [edge(a, b) for a, b in edges], followers, share, []
    )
    before = {it.memory.id: it.score for it in fused}
    assert all(0.0 <= it.score <= 1.0 for it in out)
    assert [it.score for it in out] == sorted((it.score for it in out), reverse=True)
    assert all(it.score >= before.get(it.memory.id, 0.0) for it in out)
    assert before.keys() <= {it.memory.id for it in out}


def test_spread_maps_the_cosine_between_its_lowest_and_best() -> None:
    ranked = [scored(1, 0.8), scored(2, 0.6), scored(3, 0.4)]
    cosine = {UUID(int=1): 0.3, UUID(int=2): 0.5, UUID(int=3): 0.2, UUID(int=4): 0.45}
    out = fuse(ranked, cosine, [mem(4, "found by meaning")], 0.5, ["alpha"], spread=True)
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
        spread=True,
    )
    assert [(it.memory.id.int, it.score) for it in out] == [
        (1, 1.0),
        (2, round(0.3 / 0.9 * 0.3, 6)),
    ]


def test_spread_gives_a_lone_memory_found_by_meaning_its_cosines_weight() -> None:
    # No query word in memory and one memory near enough by meaning: min-max has one value to
    # map, which then counts in full instead of nothing.
    out = fuse([], {UUID(int=4): 0.41}, [mem(4, "found by meaning")], 0.7, ["alpha"], spread=True)
    assert [(it.memory.id.int, it.score) for it in out] == [(4, 0.7)]
    # Two lexical hits of the same score: each keeps the lexical part in full.
    same = fuse([scored(1, 0.4), scored(2, 0.4)], {}, [], 0.3, ["alpha"], spread=True)
    assert [it.score for it in same] == [0.7, 0.7]


@FAST
@given(
    st.lists(st.tuples(SCORES, COSINES), min_size=1, max_size=12),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_spread_scores_stay_in_range(pairs: list[tuple[float, float]], w: float) -> None:
    ranked = [scored(i + 1, s) for i, (s, _) in enumerate(pairs)]
    cosine = {UUID(int=i + 1): c for i, (_, c) in enumerate(pairs)}
    out = fuse(ranked, cosine, [], w, ["alpha"], spread=True)
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
    off = fuse([long, short], cosine, [], 0.4, ["alpha", "bravo"], True)
    assert [it.memory.id.int for it in off] == [1, 2]
    on = fuse([long, short], cosine, [], 0.4, ["alpha", "bravo"], True, False, 0.5, average)
    assert [it.memory.id.int for it in on] == [2, 1]
    # The short memory is below the average length: its score is as without the prior.
    plain = fuse([short], cosine, [], 0.4, ["alpha", "bravo"], True)
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
    out = fuse(ranked, cosine, [], w, ["alpha"], False, False, b, 8.0)
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
