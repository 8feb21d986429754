"""The recall engine's pure functions (docs/design.md, read semantics 2-8, 10, 11).

No store here: memories are built directly, term statistics computed from them by hand.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from graphsvc.errors import BadInputError
from graphsvc.model import ContextBundle, ContextCapsule, Link, LinkKind, Memory, OrderReason
from graphsvc.recall import (
    BM25_K1,
    STAGES,
    BundleRequest,
    CandidatePlan,
    Scored,
    apply_supersessions,
    attach,
    build_belief,
    build_bundle,
    get_stage,
    plan_candidates,
    render_bundle,
    score_candidates,
    spans_days,
)
from graphsvc.recall.scoring import matched_terms
from graphsvc.store.candidates import Candidate, TermStats
from graphsvc.store.graph import Walk
from graphsvc.text import analyse, estimate_tokens, query_terms, query_words

FAST = hsettings(max_examples=150, deadline=None)
BASE = datetime(2025, 1, 1, tzinfo=UTC)
VOCAB = ["alpha", "bravo", "delta", "echo", "golf", "hotel", "india", "kilo", "lima", "mike"]
UNKNOWN = ["zulu", "oscar"]  # never in a memory
REASONS = {"abstained", "duplicate", "budget", "max_capsules", "below_floor"}


def uid(n: int) -> UUID:
    return UUID(int=n)


def mem(
    n: int,
    text: str,
    *,
    occurred: datetime | None = None,
    recorded: datetime | None = None,
    confidence: float = 1.0,
) -> Memory:
    return Memory(
        id=uid(n),
        namespace="ns",
        text=text,
        kind="note",
        occurred_at=occurred,
        recorded_at=recorded or BASE + timedelta(seconds=n),
        confidence=confidence,
        tokens=estimate_tokens(text),
        terms=tuple(analyse(text)),
    )


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def stats_for(corpus: Sequence[Memory], terms: Sequence[str]) -> TermStats:
    """Exact statistics, as a store must return them."""
    return TermStats(
        n_docs=len(corpus),
        total_length=sum(len(m.terms) for m in corpus),
        df={t: sum(1 for m in corpus if t in m.terms) for t in terms},
    )


def rank(
    query: str, corpus: Sequence[Memory], stage: str = "default"
) -> tuple[list[str], TermStats, list[Scored]]:
    terms = query_terms(query)
    stats = stats_for(corpus, terms)
    candidates = [Candidate.of(m, terms) for m in corpus if set(m.terms) & set(terms)]
    ranked = score_candidates(terms, stats, candidates, STAGES[stage])
    return terms, stats, attach(ranked, corpus)


def request(
    query: str,
    *,
    budget: int = 1_000,
    min_score: float = 0.0,
    max_capsules: int = 20,
    stage: str = "default",
) -> BundleRequest:
    return BundleRequest(query, budget, min_score, max_capsules, STAGES[stage])


def scored(memory: Memory, score: float) -> Scored:
    return Scored(memory, score, tuple(dict.fromkeys(memory.terms)))


def ids(capsules: Sequence[ContextCapsule]) -> list[UUID]:
    return [c.memory_id for c in capsules]


def _midnight(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


# -- strategies -------------------------------------------------------------------------------


_MEMORY_SPECS = st.tuples(
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=10),
    st.integers(0, 80),  # characters that are no term: varies the token count
    st.none() | st.dates(date(2020, 1, 1), date(2025, 12, 31)),
    st.integers(0, 50),  # recorded offset in seconds: ties happen
    st.floats(0.0, 1.0),
)


def _corpus(specs: list[tuple[list[str], int, date | None, int, float]]) -> list[Memory]:
    return [
        mem(
            key,
            " ".join(words) + " " + "." * padding,
            occurred=None if occurred is None else _midnight(occurred),
            recorded=BASE + timedelta(seconds=offset),
            confidence=confidence,
        )
        for key, (words, padding, occurred, offset, confidence) in enumerate(specs, start=1)
    ]


corpora = st.lists(_MEMORY_SPECS, min_size=1, max_size=12).map(_corpus)
queries = st.lists(st.sampled_from(VOCAB + UNKNOWN), min_size=1, max_size=5).map(" ".join)
stages = st.sampled_from(sorted(STAGES))


def discriminating(terms: Sequence[str], stats: TermStats) -> list[str]:
    return [t for t in terms if stats.coverage_weight(t) > 0.0]


# -- stages -----------------------------------------------------------------------------------


def test_get_stage_returns_known_stages() -> None:
    for name in ("default", "recent", "exact"):
        assert get_stage(name).name == name


def test_get_stage_unknown_lists_the_known_ones() -> None:
    with pytest.raises(BadInputError) as info:
        get_stage("fastest")
    message = str(info.value)
    assert "'fastest'" in message
    for name in STAGES:
        assert name in message


# -- plan_candidates --------------------------------------------------------------------------


def test_plan_takes_rarest_terms_first_within_the_limit() -> None:
    stats = TermStats(100, 1_000, {"common": 60, "rare": 3, "mid": 30, "gone": 0})
    plan = plan_candidates(["common", "rare", "mid", "gone"], stats, limit=40)
    assert plan == CandidatePlan(terms=("rare", "mid"))


def test_plan_falls_back_to_newest_postings_of_the_rarest_term() -> None:
    stats = TermStats(10_000, 50_000, {"a": 5_000, "b": 2_000})
    plan = plan_candidates(["a", "b"], stats, limit=1_000)
    assert plan == CandidatePlan(terms=(), fallback_term="b", fallback_limit=1_000)


def test_plan_for_terms_memory_never_saw_fetches_nothing() -> None:
    stats = TermStats(10, 50, {"x": 0})
    assert plan_candidates(["x"], stats, limit=5) == CandidatePlan(terms=())
    assert plan_candidates([], stats, limit=5) == CandidatePlan(terms=())


@FAST
@given(
    st.dictionaries(st.sampled_from(VOCAB + UNKNOWN), st.integers(0, 300), min_size=1),
    st.integers(1, 400),
)
def test_plan_respects_the_limit_and_is_a_rarest_first_prefix(
    df: dict[str, int], limit: int
) -> None:
    terms = list(df)
    stats = TermStats(1_000, 10_000, df)
    plan = plan_candidates(terms, stats, limit)
    known = sorted((n, t) for t, n in df.items() if n > 0)
    if plan.fallback_term is None:
        assert sum(df[t] for t in plan.terms) <= limit
        assert list(plan.terms) == [t for _, t in known[: len(plan.terms)]]
        if len(plan.terms) < len(known):  # the next rarest would not have fit
            assert sum(df[t] for t in plan.terms) + known[len(plan.terms)][0] > limit
        assert all(df[t] > 0 for t in plan.terms)
    else:
        assert plan.terms == ()
        assert known
        assert known[0][0] > limit
        assert plan.fallback_term == known[0][1]
        assert plan.fallback_limit == limit


# -- scoring ----------------------------------------------------------------------------------


def _equal_length_corpus() -> list[Memory]:
    return [
        mem(1, "alpha bravo", occurred=day(2024, 6, 1)),
        mem(2, "delta echo", occurred=day(2024, 6, 1)),
        mem(3, "golf hotel", occurred=day(2024, 6, 1)),
    ]


def test_a_fresh_confident_match_scores_its_bm25_over_the_most_it_could_earn() -> None:
    # One mention of each term at the average length earns BM25 = W (the IDFs' sum); the most
    # any memory could earn is W * (k1 + 1): a saturated count at no length.
    _, _, ranked = rank("alpha bravo", _equal_length_corpus())
    assert [(r.memory.id, r.score, r.matched) for r in ranked] == [
        (uid(1), round(1.0 / (BM25_K1 + 1.0), 6), ("alpha", "bravo"))
    ]
    # Its evidence is its IDF coverage: every term.
    assert ranked[0].evidence == 1.0


def test_confidence_takes_its_share_of_the_score() -> None:
    corpus = _equal_length_corpus()
    full = rank("alpha bravo", corpus)[2][0].score
    corpus[0] = corpus[0].model_copy(update={"confidence": 0.0})
    _, _, ranked = rank("alpha bravo", corpus)
    stage = STAGES["default"]
    assert ranked[0].score == pytest.approx(full * (1.0 - stage.confidence), abs=1e-6)


def test_freshness_halves_every_half_life_before_the_newest_candidate() -> None:
    stage = STAGES["default"]
    old = day(2024, 6, 1) - timedelta(days=int(stage.half_life_days))
    corpus = [
        mem(1, "alpha bravo", occurred=day(2024, 6, 1)),
        mem(2, "alpha delta", occurred=old),
        mem(3, "golf hotel", occurred=day(2024, 6, 1)),
    ]
    _, _, ranked = rank("alpha", corpus)
    by_id = {r.memory.id: r.score for r in ranked}
    assert by_id[uid(2)] == pytest.approx(by_id[uid(1)] * (1.0 - stage.freshness / 2), abs=1e-6)
    # The "exact" stage takes no freshness into account.
    _, _, exact = rank("alpha", corpus, stage="exact")
    assert exact[0].score == exact[1].score


def test_terms_memory_never_saw_weigh_nothing_for_scoring() -> None:
    corpus = _equal_length_corpus()
    _, _, plain = rank("alpha", corpus)
    _, _, with_unknown = rank("alpha zulu oscar", corpus)
    assert [(r.memory.id, r.score) for r in plain] == [(r.memory.id, r.score) for r in with_unknown]


def test_no_weight_no_ranking() -> None:
    corpus = _equal_length_corpus()
    assert rank("zulu", corpus)[2] == []
    assert score_candidates(["alpha"], stats_for(corpus, ["alpha"]), [], STAGES["default"]) == []


def test_matching_more_of_the_query_scores_higher() -> None:
    corpus = [
        mem(1, "alpha bravo delta", occurred=day(2024, 1, 1)),
        mem(2, "alpha golf hotel", occurred=day(2024, 1, 1)),
        mem(3, "india kilo lima", occurred=day(2024, 1, 1)),
    ]
    _, _, ranked = rank("alpha bravo delta", corpus)
    assert [r.memory.id for r in ranked] == [uid(1), uid(2)]
    assert ranked[0].score > ranked[1].score
    assert ranked[1].matched == ("alpha",)


def test_score_ties_break_by_recorded_at_newest_first_then_id() -> None:
    when = day(2024, 1, 1)
    corpus = [
        mem(5, "alpha bravo", occurred=when, recorded=BASE),
        mem(2, "alpha bravo", occurred=when, recorded=BASE),
        mem(9, "alpha bravo", occurred=when, recorded=BASE + timedelta(seconds=1)),
        mem(7, "golf hotel", occurred=when),
    ]
    _, _, ranked = rank("alpha", corpus)
    assert len({r.score for r in ranked}) == 1
    assert [r.memory.id for r in ranked] == [uid(9), uid(2), uid(5)]


@FAST
@given(corpora, queries, stages)
def test_scores_are_in_unit_range_and_ranking_is_a_total_order(
    corpus: list[Memory], query: str, stage: str
) -> None:
    terms, stats, ranked = rank(query, corpus, stage)
    weight = sum(stats.idf(t) for t in terms)
    expected = {m.id for m in corpus if set(m.terms) & set(terms)} if weight > 0 else set()
    assert {r.memory.id for r in ranked} == expected
    assert len(ranked) == len(expected)
    for item in ranked:
        assert 0.0 <= item.score <= 1.0
        assert item.score == round(item.score, 6)
        assert item.matched
        assert list(item.matched) == [t for t in terms if t in item.memory.terms]
    keys = [(-r.score, -r.memory.recorded_at.timestamp(), str(r.memory.id)) for r in ranked]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


@FAST
@given(corpora, queries, stages)
def test_scoring_does_not_depend_on_candidate_order(
    corpus: list[Memory], query: str, stage: str
) -> None:
    terms = query_terms(query)
    stats = stats_for(corpus, terms)
    candidates = [Candidate.of(m, terms) for m in corpus if set(m.terms) & set(terms)]
    forward = score_candidates(terms, stats, candidates, STAGES[stage])
    backward = score_candidates(terms, stats, list(reversed(candidates)), STAGES[stage])
    assert forward == backward


def test_a_term_every_memory_contains_still_finds_them() -> None:
    corpus = [mem(1, "the pizza place on main street")]
    _, _, ranked = rank("pizza", corpus)
    assert [r.memory.id for r in ranked] == [uid(1)]
    assert ranked[0].score > 0.0


# -- supersessions ----------------------------------------------------------------------------


def _ranked(n: int) -> list[Scored]:
    return [Scored(mem(i, f"memory {i}"), round(1.0 - i / 100, 6), ()) for i in range(1, n + 1)]


def test_a_superseded_memory_moves_below_its_superseder() -> None:
    ranked = _ranked(4)
    out = apply_supersessions(ranked, [(uid(3), uid(1))])
    assert [r.memory.id for r in out] == [uid(2), uid(3), uid(1), uid(4)]


def test_supersessions_with_outside_ends_or_self_pairs_change_nothing() -> None:
    ranked = _ranked(3)
    out = apply_supersessions(ranked, [(uid(99), uid(1)), (uid(2), uid(2)), (uid(1), uid(98))])
    assert out == ranked


def test_supersession_chains_are_ordered_newest_first() -> None:
    ranked = _ranked(3)
    out = apply_supersessions(ranked, [(uid(3), uid(2)), (uid(2), uid(1))])
    assert [r.memory.id for r in out] == [uid(3), uid(2), uid(1)]


def test_supersession_cycles_terminate() -> None:
    ranked = _ranked(3)
    out = apply_supersessions(ranked, [(uid(1), uid(2)), (uid(2), uid(1)), (uid(3), uid(1))])
    assert sorted(r.memory.id for r in out) == [uid(1), uid(2), uid(3)]


@FAST
@given(st.integers(1, 12), st.data())
def test_supersession_order_is_a_permutation_respecting_every_pair(
    n: int, data: st.DataObject
) -> None:
    ranked = _ranked(n)
    newest_first = data.draw(st.permutations(range(n)))
    place = {v: i for i, v in enumerate(newest_first)}
    raw = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=20))
    pairs = [
        (uid(a + 1), uid(b + 1)) if place[a] < place[b] else (uid(b + 1), uid(a + 1))
        for a, b in raw
        if a != b
    ]  # newer -> older along one total order: acyclic
    out = apply_supersessions(ranked, pairs)
    assert Counter(r.memory.id for r in out) == Counter(r.memory.id for r in ranked)
    position = {r.memory.id: i for i, r in enumerate(out)}
    for newer, older in pairs:
        assert position[newer] < position[older]
    if all(position_in(ranked, a) < position_in(ranked, b) for a, b in pairs):
        assert out == ranked  # already consistent: untouched


def position_in(ranked: Sequence[Scored], memory_id: UUID) -> int:
    return next(i for i, r in enumerate(ranked) if r.memory.id == memory_id)


@FAST
@given(
    st.integers(1, 10),
    st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), max_size=30),
)
def test_supersessions_with_cycles_still_give_a_permutation(
    n: int, raw: list[tuple[int, int]]
) -> None:
    ranked = _ranked(n)
    out = apply_supersessions(ranked, [(uid(a), uid(b)) for a, b in raw])
    assert sorted(r.memory.id for r in out) == [r.memory.id for r in ranked]


# -- bundles: unit ----------------------------------------------------------------------------


def _bundle(
    query: str,
    corpus: Sequence[Memory],
    ranked: Sequence[Scored],
    *,
    budget: int = 1_000,
    min_score: float = 0.0,
    max_capsules: int = 20,
    top_score: float | None = None,
) -> ContextBundle:
    """The bundle of ``ranked``; its answerability is ``top_score`` (default: the best score,
    so that only packing is under test)."""
    terms = query_terms(query)
    req = request(query, budget=budget, min_score=min_score, max_capsules=max_capsules)
    top = best(ranked) if top_score is None else top_score
    return build_bundle(req, terms, stats_for(corpus, terms), ranked, top)


def best(ranked: Sequence[Scored]) -> float:
    return max((r.score for r in ranked), default=0.0)


def test_packing_continues_past_a_capsule_that_does_not_fit() -> None:
    big = mem(1, "alpha " + "word " * 40)
    small = mem(2, "alpha bravo")
    corpus = [big, small, mem(3, "delta")]
    ranked = [scored(big, 0.9), scored(small, 0.5)]
    bundle = _bundle("alpha", corpus, ranked, budget=10)
    assert ids(bundle.capsules) == [small.id]
    assert [(c.memory_id, c.reason) for c in bundle.excluded] == [(big.id, "budget")]
    assert bundle.used_tokens == small.tokens
    assert bundle.excluded[0].tokens == big.tokens


def test_max_capsules_is_respected_and_the_rest_say_so() -> None:
    corpus = [mem(i, f"alpha {w}") for i, w in enumerate(VOCAB[1:6], start=1)]
    ranked = [scored(m, 0.9 - i / 10) for i, m in enumerate(corpus)]
    bundle = _bundle("alpha", corpus, ranked, max_capsules=2)
    assert ids(bundle.capsules) == [uid(1), uid(2)]
    assert [(c.memory_id, c.reason) for c in bundle.excluded] == [
        (uid(3), "max_capsules"),
        (uid(4), "max_capsules"),
        (uid(5), "max_capsules"),
    ]


def test_near_identical_texts_are_packed_once() -> None:
    first = mem(1, "alpha bravo delta echo")
    copy = mem(2, "Alpha, bravo; delta & echo!")  # same terms
    near = mem(3, "alpha bravo delta echo golf")  # Jaccard 4/5 = 0.8
    other = mem(4, "alpha bravo delta golf")  # Jaccard 3/5 with the first: kept
    corpus = [first, copy, near, other, mem(5, "india")]
    ranked = [scored(m, 0.9 - i / 10) for i, m in enumerate([first, copy, near, other])]
    bundle = _bundle("alpha", corpus, ranked)
    assert ids(bundle.capsules) == [first.id, other.id]
    assert [(c.memory_id, c.reason) for c in bundle.excluded] == [
        (copy.id, "duplicate"),
        (near.id, "duplicate"),
    ]


def test_abstention_below_min_score() -> None:
    a, b = mem(1, "alpha bravo"), mem(2, "alpha golf")
    corpus = [a, b, mem(3, "delta"), mem(4, "echo")]
    ranked = [scored(a, 0.6), scored(b, 0.4)]
    bundle = _bundle("alpha bravo zulu", corpus, ranked, min_score=0.61)
    assert bundle.skipped
    assert bundle.top_score == 0.6
    assert bundle.capsules == ()
    assert bundle.used_tokens == 0
    assert [(c.memory_id, c.reason) for c in bundle.excluded] == [
        (a.id, "abstained"),
        (b.id, "abstained"),
    ]
    assert bundle.evidence_coverage == 0.0
    assert bundle.uncovered_terms == ("zulu", "bravo", "alpha")  # highest weight first
    assert bundle.rendered.startswith("Memory has no confident answer")
    assert "0.600" in bundle.rendered
    assert "0.610" in bundle.rendered


def test_below_the_floor_is_relative_to_the_best_score_never_to_min_score() -> None:
    # minScore is compared with topScore, a probability; capsule scores rank on another scale,
    # so only the relative floor (0.3 of the best, the request's) excludes them.
    a, b, c, d = (mem(n, f"alpha {w}") for n, w in enumerate(("bravo", "golf", "hotel", "kilo")))
    corpus = [a, b, c, d, mem(5, "delta")]
    ranked = [scored(a, 0.7), scored(b, 0.3), scored(c, 0.2), scored(d, 0.0)]
    terms = query_terms("alpha")
    req = BundleRequest("alpha", 1_000, 0.5, 20, STAGES["default"], 0.3)
    bundle = build_bundle(req, terms, stats_for(corpus, terms), ranked, 0.9)
    assert not bundle.skipped
    assert ids(bundle.capsules) == [a.id, b.id]  # 0.3 is below minScore, above 0.3 * 0.7
    assert [x.reason for x in bundle.excluded] == ["below_floor", "below_floor"]
    # A zero score is never packed, even with no floor.
    assert ids(_bundle("alpha", corpus, ranked).capsules) == [a.id, b.id, c.id]


def test_an_empty_ranking_abstains_unless_abstention_is_off() -> None:
    corpus = [mem(1, "alpha")]
    bundle = _bundle("zulu", corpus, [], min_score=0.3)
    assert bundle.skipped
    assert bundle.top_score == 0.0
    assert bundle.capsules == bundle.excluded == ()
    assert bundle.uncovered_terms == ("zulu",)
    assert bundle.rendered.startswith("Memory holds nothing that matches this request.")
    # minScore 0 turns abstention off: nothing matched is an empty bundle, not an abstention,
    # and its text never claims that 0 is below the minimum 0.
    off = _bundle("zulu", corpus, [], min_score=0.0)
    assert not off.skipped and off.capsules == off.excluded == ()
    assert off.evidence_coverage == 0.0 and off.uncovered_terms == ("zulu",)
    assert "below the minimum" not in off.rendered
    assert off.rendered.startswith("Memory holds nothing that matches this request.")


def test_order_reason_counts_only_what_is_offered() -> None:
    # Two memories on two days, but only one fits the budget: the evidence offered is one day.
    a = mem(1, "alpha bravo", occurred=datetime(2024, 1, 1, tzinfo=UTC))
    b = mem(2, "alpha " + "golf " * 60, occurred=datetime(2024, 2, 1, tzinfo=UTC))
    ranked = [scored(a, 0.9), scored(b, 0.8)]
    bundle = _bundle("alpha", [a, b], ranked, budget=estimate_tokens("[2024-01-01] alpha bravo"))
    assert ids(bundle.capsules) == [a.id] and [c.reason for c in bundle.excluded] == ["budget"]
    assert not bundle.chronological and bundle.order_reason is None
    assert bundle.capsules[0].text == a.text
    # Both offered: they span days.
    both = _bundle("alpha", [a, b], ranked)
    assert both.order_reason is OrderReason.EVIDENCE_SPANS_DAYS and both.chronological
    # An abstention offers nothing, so it has no order, even for a question about order.
    skipped = _bundle("what happened after alpha", [a, b], ranked, min_score=0.95)
    assert skipped.skipped and not skipped.chronological and skipped.order_reason is None
    assert all(not c.text.startswith("[") for c in skipped.excluded)


def test_coverage_is_idf_weighted_over_the_packed_capsules() -> None:
    a = mem(1, "alpha delta")
    corpus = [a, mem(2, "bravo"), mem(3, "bravo golf"), mem(4, "echo")]
    terms = query_terms("alpha bravo zulu")
    stats = stats_for(corpus, terms)
    bundle = build_bundle(request("alpha bravo zulu"), terms, stats, [scored(a, 0.8)], 0.8)
    # BM25's IDF, ln(1 + (N - df + 0.5) / (df + 0.5)), with N = 4; an unseen term has df = 0.
    w_alpha, w_bravo, w_zulu = (math.log(1 + 3.5 / 1.5), math.log(1 + 2.5 / 2.5), math.log(10))
    assert bundle.evidence_coverage == round(w_alpha / (w_alpha + w_bravo + w_zulu), 6)
    assert bundle.uncovered_terms == ("zulu", "bravo")
    assert "Not covered by memory: zulu, bravo." in bundle.rendered


def test_bundles_name_terms_in_the_question_s_own_words() -> None:
    # The rendered text said "Not covered by memory: iguana, mar" and capsules "matched: melani".
    query = "What is the name of Melanie's pet iguana on Mars?"
    pet = mem(1, "Melanie has a pet cat named Luna")
    corpus = [pet, mem(2, "Caroline went to the market"), mem(3, "alpha bravo")]
    found = Scored(pet, 0.8, matched_terms(pet, query_terms(query)))
    bundle = _bundle(query, corpus, [found])
    assert bundle.uncovered_terms == ("iguana", "mar")
    assert bundle.uncovered_words == ("iguana", "Mars")
    assert bundle.rendered.splitlines()[-1] == "Not covered by memory: iguana, Mars."
    (capsule,) = bundle.capsules
    assert capsule.matched_terms == ("name", "melani", "pet")
    assert capsule.matched_words == ("name", "Melanie", "pet")
    assert render_bundle(bundle) == bundle.rendered
    # A bundle that carries no words (built elsewhere) renders its terms.
    bare = bundle.model_copy(update={"uncovered_words": ()})
    assert render_bundle(bare).splitlines()[-1] == "Not covered by memory: iguana, mar."


def test_coverage_is_one_when_no_query_term_discriminates() -> None:
    a, b = mem(1, "alpha bravo"), mem(2, "alpha golf")
    corpus = [a, b]  # "alpha" is in every memory: it discriminates nothing
    bundle = _bundle("alpha", corpus, [scored(a, 0.5)])
    assert not bundle.skipped
    assert bundle.evidence_coverage == 1.0
    assert bundle.uncovered_terms == ()


def test_chronological_bundle_is_oldest_first_with_date_prefixes() -> None:
    newer = mem(1, "alpha bravo", occurred=day(2024, 5, 2))
    older = mem(2, "alpha delta", occurred=day(2023, 1, 9))
    undated = mem(3, "alpha golf")
    corpus = [newer, older, undated, mem(4, "hotel")]
    ranked = [scored(undated, 0.9), scored(newer, 0.8), scored(older, 0.7)]
    # One day or none: best match first unless the question asks about order.
    plain = _bundle("alpha", corpus, [scored(undated, 0.9), scored(newer, 0.8)])
    assert not plain.chronological
    assert ids(plain.capsules) == [undated.id, newer.id]
    # Dates on two days: oldest first even without a marker word.
    assert _bundle("alpha", corpus, ranked).chronological
    timely = _bundle("when alpha", corpus, ranked)
    assert timely.chronological
    assert ids(timely.capsules) == [older.id, newer.id, undated.id]
    assert [c.text for c in timely.capsules] == [
        "[2023-01-09] alpha delta",
        "[2024-05-02] alpha bravo",
        "[undated] alpha golf",
    ]
    assert [c.tokens for c in timely.capsules] == [estimate_tokens(c.text) for c in timely.capsules]
    assert timely.used_tokens == sum(c.tokens for c in timely.capsules)
    assert "oldest first" in timely.rendered
    assert timely.rendered.splitlines()[1:] == [f"- {c.text}" for c in timely.capsules]


def test_a_bundle_names_the_true_reason_of_its_order() -> None:
    # The explorer and MCP said "the question asks about order" for every chronological bundle,
    # also when the order came from evidence dated on several days.
    newer = mem(1, "alpha bravo", occurred=day(2024, 5, 2))
    older = mem(2, "alpha delta", occurred=day(2023, 1, 9))
    same_day = mem(3, "alpha golf", occurred=day(2024, 5, 2))
    corpus = [newer, older, same_day, mem(4, "hotel")]
    spans = _bundle("alpha", corpus, [scored(newer, 0.9), scored(older, 0.8)])
    asks = _bundle("when alpha", corpus, [scored(newer, 0.9), scored(older, 0.8)])
    asks_one_day = _bundle("before alpha", corpus, [scored(newer, 0.9), scored(same_day, 0.8)])
    plain = _bundle("alpha", corpus, [scored(newer, 0.9), scored(same_day, 0.8)])
    assert (spans.chronological, spans.order_reason) == (True, OrderReason.EVIDENCE_SPANS_DAYS)
    assert (asks.chronological, asks.order_reason) == (True, OrderReason.QUESTION_ASKS_ORDER)
    assert asks_one_day.order_reason is OrderReason.QUESTION_ASKS_ORDER
    assert (plain.chronological, plain.order_reason) == (False, None)
    assert "oldest first, as the evidence spans several days):" in spans.rendered.splitlines()[0]
    assert "oldest first, as the question asks about order):" in asks.rendered.splitlines()[0]
    assert "asks about order" not in spans.rendered
    assert plain.rendered.splitlines()[0].endswith("best match first):")
    for bundle in (spans, asks, plain):
        assert render_bundle(bundle) == bundle.rendered
        assert bundle.to_json_dict()["orderReason"] == (
            bundle.order_reason.value if bundle.order_reason else None
        )


def test_chronological_ordering_never_removes_a_capsule_under_a_tight_budget() -> None:
    corpus = [
        mem(1, "alpha bravo delta", occurred=day(2024, 3, 1)),
        mem(2, "alpha golf hotel", occurred=day(2024, 1, 1)),
        mem(3, "alpha india kilo", occurred=day(2024, 2, 1)),
        mem(4, "mike"),
    ]
    ranked = [scored(m, 0.9 - i / 10) for i, m in enumerate(corpus[:3])]
    budget = dated_cost(corpus[0]) + dated_cost(corpus[1])
    plain = _bundle("alpha", corpus, ranked, budget=budget)
    timely = _bundle("when alpha", corpus, ranked, budget=budget)
    assert len(plain.capsules) == 2
    assert sorted(ids(timely.capsules)) == sorted(ids(plain.capsules))


def test_abstention_reads_answerability_not_the_capsule_scores() -> None:
    old = mem(1, "alpha bravo delta", occurred=day(2023, 1, 1))
    new = mem(2, "alpha golf", occurred=day(2024, 1, 1))
    corpus = [old, new, mem(3, "hotel")]
    ranked = apply_supersessions([scored(old, 0.8), scored(new, 0.5)], [(new.id, old.id)])
    assert [r.memory.id for r in ranked] == [new.id, old.id]
    kept = _bundle("alpha bravo", corpus, ranked, min_score=0.6, top_score=0.65)
    assert kept.top_score == 0.65 and not kept.skipped
    skipped = _bundle("alpha bravo", corpus, ranked, min_score=0.6, top_score=0.55)
    assert skipped.top_score == 0.55 and skipped.skipped and skipped.capsules == ()


def test_render_bundle_lists_capsules_best_first() -> None:
    a, b = mem(1, "alpha bravo"), mem(2, "alpha golf")
    bundle = _bundle("alpha", [a, b, mem(3, "x y delta")], [scored(a, 0.9), scored(b, 0.8)])
    assert bundle.rendered == render_bundle(bundle)
    assert bundle.rendered.splitlines() == [
        f"Memory (2 item(s), {a.tokens + b.tokens}/1000 tokens, evidence coverage 1.000, "
        "best match first):",
        "- alpha bravo",
        "- alpha golf",
    ]


# -- bundles: properties ----------------------------------------------------------------------


@st.composite
def bundle_cases(draw: st.DrawFn) -> tuple[BundleRequest, list[str], TermStats, list[Scored]]:
    corpus = draw(corpora)
    query = draw(queries)
    if draw(st.booleans()):
        query = draw(st.sampled_from(["when", "before", "timeline of", "after"])) + " " + query
    stage = draw(stages)
    terms, stats, ranked = rank(query, corpus, stage)
    pairs = draw(st.lists(st.tuples(st.sampled_from(corpus), st.sampled_from(corpus)), max_size=4))
    ranked = apply_supersessions(ranked, [(a.id, b.id) for a, b in pairs])
    min_score = draw(st.just(0.0) | st.floats(0.0, 1.0))
    req = BundleRequest(
        query,
        draw(st.integers(1, 120)),
        min_score,
        draw(st.integers(1, 8)),
        STAGES[stage],
    )
    return req, terms, stats, ranked


def dated_cost(memory: Memory) -> int:
    """What packing charges for a capsule: the tokens of its chronological (dated) form."""
    date = memory.occurred_at.date().isoformat() if memory.occurred_at else "undated"
    return estimate_tokens(f"[{date}] {memory.text}")


@FAST
@given(bundle_cases())
def test_bundle_invariants(case: tuple[BundleRequest, list[str], TermStats, list[Scored]]) -> None:
    req, terms, stats, ranked = case
    bundle = build_bundle(req, terms, stats, ranked, best(ranked))

    # Every ranked candidate is accounted for exactly once.
    assert Counter(ids(bundle.capsules) + ids(bundle.excluded)) == Counter(
        r.memory.id for r in ranked
    )
    # The budget and the capsule cap hold.
    assert bundle.used_tokens == sum(c.tokens for c in bundle.capsules)
    assert bundle.used_tokens <= req.budget_tokens
    assert len(bundle.capsules) <= req.max_capsules
    assert 0.0 <= bundle.evidence_coverage <= 1.0
    scores = [r.score for r in ranked]
    if scores == sorted(scores, reverse=True):  # no supersession moved a lower score up
        assert bundle.top_score == (scores[0] if scores else 0.0)
    assert all(c.reason == "match" for c in bundle.capsules)
    assert all(c.reason in REASONS for c in bundle.excluded)
    assert all(c.tokens == estimate_tokens(c.text) for c in bundle.capsules + bundle.excluded)
    # Packing pays for each capsule's dated form, whether or not the bundle is chronological.
    memories = {r.memory.id: r.memory for r in ranked}
    spent = sum(dated_cost(memories[c.memory_id]) for c in bundle.capsules)
    assert spent <= req.budget_tokens
    for capsule in bundle.excluded:
        if capsule.reason == "budget":  # it did not fit then, so not in what is left now
            assert spent + dated_cost(memories[capsule.memory_id]) > req.budget_tokens
        if capsule.reason == "max_capsules":
            assert len(bundle.capsules) == req.max_capsules
        if capsule.reason == "below_floor":
            assert capsule.score < req.relative_floor * best(ranked) or capsule.score == 0.0
    # Uncovered terms: discriminating, not in any capsule, highest coverage weight first.
    disc = discriminating(terms, stats)
    weights = [stats.coverage_weight(t) for t in bundle.uncovered_terms]
    assert weights == sorted(weights, reverse=True)
    assert list(bundle.uncovered_terms) == sorted(
        bundle.uncovered_terms, key=lambda t: (-stats.coverage_weight(t), t)
    )
    # Words: the query's own word for each term, one for each, in the same order.
    words = dict(query_words(req.query))
    assert bundle.uncovered_words == tuple(words[t] for t in bundle.uncovered_terms)
    for capsule in bundle.capsules + bundle.excluded:
        assert capsule.matched_words == tuple(words[t] for t in capsule.matched_terms)
    by_id = {r.memory.id: r.memory for r in ranked}
    packed_terms = {t for c in bundle.capsules for t in by_id[c.memory_id].terms}
    if not bundle.skipped:
        assert set(bundle.uncovered_terms) == {t for t in disc if t not in packed_terms}

    if bundle.skipped:
        assert bundle.top_score < req.min_score or not ranked
        assert bundle.capsules == ()
        assert bundle.used_tokens == 0
        assert {c.reason for c in bundle.excluded} <= {"abstained"}
        assert bundle.evidence_coverage == 0.0
        assert set(bundle.uncovered_terms) == set(disc)
    else:
        assert "abstained" not in {c.reason for c in bundle.excluded}

    if bundle.chronological:
        recorded = {r.memory.id: r.memory.recorded_at for r in ranked}
        keys = [
            (c.occurred_at is None, c.occurred_at or recorded[c.memory_id], recorded[c.memory_id])
            for c in bundle.capsules
        ]
        assert keys == sorted(keys)
        for capsule in bundle.capsules:
            prefix = (
                f"[{capsule.occurred_at.date().isoformat()}] "
                if capsule.occurred_at
                else "[undated] "
            )
            assert capsule.text == prefix + by_id[capsule.memory_id].text
    else:
        order = [r.memory.id for r in ranked]
        positions = [order.index(i) for i in ids(bundle.capsules)]
        assert positions == sorted(positions)
        assert all(c.text == by_id[c.memory_id].text for c in bundle.capsules)


@FAST
@given(corpora, queries, st.sampled_from(["when", "before", "after", "until"]), stages)
def test_chronological_ordering_changes_presentation_only(
    corpus: list[Memory], query: str, marker: str, stage: str
) -> None:
    # Markers that are stop words leave the query terms, and so the ranking, unchanged. With a
    # budget that holds every dated capsule, both bundles must pick the same memories.
    terms, stats, ranked = rank(query, corpus, stage)
    budget = sum(estimate_tokens(f"[0000-00-00] {r.memory.text}") for r in ranked) or 1
    plain = build_bundle(
        request(query, budget=budget, stage=stage), terms, stats, ranked, best(ranked)
    )
    timely_query = f"{marker} {query}"
    assert query_terms(timely_query) == terms
    timely = build_bundle(
        request(timely_query, budget=budget, stage=stage), terms, stats, ranked, best(ranked)
    )
    # A question about order orders what is offered; with nothing offered there is no order.
    assert timely.chronological == bool(timely.capsules)
    expected = OrderReason.QUESTION_ASKS_ORDER if timely.capsules else None
    assert timely.order_reason is expected
    # The order is about what is offered: the memories packed, never those left out.
    memory_of = {r.memory.id: r.memory for r in ranked}
    offered = [memory_of[c.memory_id] for c in plain.capsules]
    assert plain.chronological == spans_days(offered)
    assert plain.order_reason is (OrderReason.EVIDENCE_SPANS_DAYS if spans_days(offered) else None)
    assert Counter(ids(timely.capsules)) == Counter(ids(plain.capsules))
    assert {(c.memory_id, c.reason) for c in timely.excluded} == {
        (c.memory_id, c.reason) for c in plain.excluded
    }
    assert timely.evidence_coverage == plain.evidence_coverage
    assert timely.uncovered_terms == plain.uncovered_terms
    assert timely.skipped == plain.skipped
    recorded = {r.memory.id: r.memory.recorded_at for r in ranked}
    assert ids(timely.capsules) == [
        c.memory_id
        for c in sorted(
            plain.capsules,
            key=lambda c: (
                c.occurred_at is None,
                c.occurred_at or recorded[c.memory_id],
                recorded[c.memory_id],
                str(c.memory_id),
            ),
        )
    ]


@hsettings(max_examples=60, deadline=None)
@given(bundle_cases())
def test_bundles_are_deterministic(
    case: tuple[BundleRequest, list[str], TermStats, list[Scored]],
) -> None:
    req, terms, stats, ranked = case
    first = build_bundle(req, terms, stats, ranked, best(ranked)).to_json_dict()
    again = build_bundle(req, terms, stats, list(ranked), best(ranked)).to_json_dict()
    assert first == again


# -- beliefs ----------------------------------------------------------------------------------


def test_no_hits_gives_an_empty_belief_that_says_so() -> None:
    belief = build_belief("the moon", [], Walk())
    assert belief.confidence == 0.0
    assert belief.source_ids == belief.linked_context_ids == ()
    assert belief.memories == ()
    assert belief.summary == 'Memory holds nothing that matches "the moon".'


def _link(src: Memory, dst: Memory, kind: LinkKind) -> Link:
    return Link(source=src.id, target=dst.id, kind=kind, created_at=BASE)


def test_belief_summary_has_evidence_then_causal_chains_then_linked_context() -> None:
    root = mem(1, "The disk filled up", occurred=day(2023, 6, 1))
    crash = mem(2, "The database crashed", occurred=day(2024, 1, 1))
    outage = mem(3, "The site went down", occurred=day(2024, 2, 1))
    note = mem(4, "Ops on-call rota changed")
    hits = [Scored(outage, 0.7, ("site",)), Scored(note, 0.2, ("rota",))]
    walk = Walk(
        reached=((crash, 1), (root, 2)),
        links=(
            _link(crash, outage, LinkKind.CAUSES),
            _link(root, crash, LinkKind.CAUSES),
            _link(note, crash, LinkKind.RELATES_TO),
        ),
    )
    belief = build_belief("why did the site go down", hits, walk)
    assert belief.source_ids == (outage.id, note.id)
    assert belief.linked_context_ids == (crash.id, root.id)
    assert belief.confidence == 0.45
    assert [m.id for m in belief.memories] == [outage.id, note.id, crash.id, root.id]
    assert belief.summary.splitlines() == [
        'Belief about "why did the site go down": 2 direct source(s), 2 linked memory(ies), '
        "confidence 0.450.",
        "Direct evidence:",
        "1. [2024-02-01] The site went down (score 0.700)",
        "2. [undated] Ops on-call rota changed (score 0.200)",
        "Causal chains (cause -> effect, oldest first):",
        "- [2023-06-01] The disk filled up -> [2024-01-01] The database crashed",
        "- [2024-01-01] The database crashed -> [2024-02-01] The site went down",
    ]


def test_belief_linked_context_names_the_relation_kinds() -> None:
    hit = mem(1, "alpha", occurred=day(2024, 1, 1))
    later = mem(2, "bravo", occurred=day(2024, 2, 1))
    newer = mem(3, "delta")
    walk = Walk(
        reached=((later, 1), (newer, 1)),
        links=(_link(hit, later, LinkKind.PRECEDES), _link(newer, hit, LinkKind.SUPERSEDES)),
    )
    summary = build_belief("alpha", [Scored(hit, 1.0, ("alpha",))], walk).summary
    assert summary.splitlines()[-3:] == [
        "Linked context:",
        "- [2024-02-01] bravo (PRECEDES)",
        "- [undated] delta (SUPERSEDES)",
    ]


def test_belief_quotes_are_one_line_and_bounded() -> None:
    long = mem(1, "alpha\n\n" + "word " * 200)
    summary = build_belief("alpha", [Scored(long, 0.5, ("alpha",))], Walk()).summary
    line = summary.splitlines()[2]
    assert line.startswith("1. [undated] alpha word word")
    assert "…" in line
    assert len(line) < 320


_POOL = [mem(i, f"memory {i} {VOCAB[i % len(VOCAB)]}") for i in range(1, 11)]


@st.composite
def belief_cases(draw: st.DrawFn) -> tuple[list[Scored], Walk]:
    pool = _POOL
    hit_mems = draw(
        st.lists(st.sampled_from(pool), min_size=1, max_size=5, unique_by=lambda m: m.id)
    )
    hits = [Scored(m, draw(st.floats(0.0, 1.0).map(lambda x: round(x, 6))), ()) for m in hit_mems]
    # A careless walk may even hand back a source: build_belief must still keep it out.
    reached_mems = draw(st.lists(st.sampled_from(pool), max_size=8, unique_by=lambda m: m.id))
    reached = tuple((m, 1 + i // 3) for i, m in enumerate(reached_mems))
    members = hit_mems + reached_mems
    links = draw(
        st.lists(
            st.tuples(
                st.sampled_from(members), st.sampled_from(members), st.sampled_from(LinkKind)
            ),
            max_size=8,
        )
    )
    walk = Walk(
        reached=reached,
        links=tuple(
            sorted(
                {(a.id, b.id, k): _link(a, b, k) for a, b, k in links if a.id != b.id}.values(),
                key=lambda lk: (str(lk.source), str(lk.target), lk.kind.value),
            )
        ),
    )
    return hits, walk


@FAST
@given(belief_cases())
def test_belief_invariants(case: tuple[list[Scored], Walk]) -> None:
    hits, walk = case
    belief = build_belief("cue", hits, walk)
    assert belief.source_ids == tuple(h.memory.id for h in hits)
    assert not set(belief.linked_context_ids) & set(belief.source_ids)
    assert list(belief.linked_context_ids) == [
        m.id for m, _ in walk.reached if m.id not in set(belief.source_ids)
    ]
    assert 0.0 <= belief.confidence <= 1.0
    assert belief.confidence == round(sum(h.score for h in hits) / len(hits), 6)
    assert [m.id for m in belief.memories] == [*belief.source_ids, *belief.linked_context_ids]
    assert build_belief("cue", hits, walk) == belief
    lines = belief.summary.splitlines()
    assert lines[0].startswith('Belief about "cue"')
    assert lines[1] == "Direct evidence:"
    assert len([ln for ln in lines if ln[:1].isdigit()]) == len(hits)


def test_bm25_b_sets_how_much_length_costs() -> None:
    corpus = [
        mem(1, "backup failed"),
        mem(2, "backup failed after the nightly rotation of disks, logs, mirrors and snapshots"),
        mem(3, "unrelated gardening notes about tomatoes"),
    ]
    terms = query_terms("backup")
    stats = stats_for(corpus, terms)
    candidates = [Candidate.of(m, terms) for m in corpus if set(m.terms) & set(terms)]

    def scores(b: float) -> dict[int, float]:
        ranked = score_candidates(terms, stats, candidates, STAGES["exact"], bm25_b=b)
        return {r.id.int: r.score for r in ranked}

    assert scores(0.75)[1] > scores(0.75)[2]  # the long memory pays for its length
    assert scores(0.0)[1] == scores(0.0)[2]  # b = 0: length does not matter
    assert scores(0.75) == {
        r.id.int: r.score for r in score_candidates(terms, stats, candidates, STAGES["exact"])
    }  # the default is Lucene's 0.75
