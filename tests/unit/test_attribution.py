"""Conversation-aware ranking (docs/design.md): answers inherit from the questions they follow,
and a query that names a speaker prefers what that speaker said (recall.expand_answers /
attribute)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

from hypothesis import given
from hypothesis import strategies as st

from graphsvc.model import Link, LinkKind, Memory
from graphsvc.recall import (
    ANSWER_SHARE,
    COMPETITION_WEIGHT,
    OTHER_SPEAKER_FACTOR,
    QUESTION_FACTOR,
    Scored,
    answer_seeds,
    attribute,
    expand_answers,
    is_question,
    rank_order,
    speaker_terms,
)
from graphsvc.store.base import Walk
from graphsvc.text import analyse, query_terms

BASE = datetime(2025, 1, 1, tzinfo=UTC)


def mem(n: int, text: str) -> Memory:
    return Memory(
        id=UUID(int=n), namespace="ns", text=text, kind="turn", occurred_at=None,
        recorded_at=BASE + timedelta(seconds=n), tags=(), source=None, confidence=1.0,
        tokens=1, terms=tuple(analyse(text)),
    )  # fmt: skip


def hit(memory: Memory, score: float) -> Scored:
    return Scored(memory, score, tuple(dict.fromkeys(memory.terms)))


def precedes(a: Memory, b: Memory) -> Link:
    return Link(source=a.id, target=b.id, kind=LinkKind.PRECEDES, weight=1.0, created_at=BASE)


def test_speakers_are_capitalised_prefixes() -> None:
    assert speaker_terms("Caroline: I went to a support group.") == {"carolin"}
    assert speaker_terms("Mary Ann Lee: hi") == {"mari", "ann", "lee"}
    assert speaker_terms("user: lower-case roles are not speakers") == frozenset()
    assert speaker_terms("begin: an EventStoryLine trigger") == frozenset()
    assert speaker_terms("No colon here") == frozenset()
    assert is_question("Melanie: How was the race? ")
    assert not is_question("Melanie: It was great!")


def test_an_answer_inherits_from_the_question_it_follows() -> None:
    question = mem(1, "Caroline: How was your charity race?")
    answer = mem(2, "Melanie: Great, I realised self-care matters.")
    other = mem(3, "Melanie: The charity race raised money.")
    direct = [hit(question, 0.8), hit(other, 0.6)]
    seeds = answer_seeds(direct)
    assert seeds == [direct[0]]
    walk = Walk(reached=((answer, 1),), links=(precedes(question, answer),))
    terms = query_terms("charity race")
    items = {it.memory.id: it for it in expand_answers(direct, seeds, walk, terms)}
    assert items[answer.id].score == round(0.8 * ANSWER_SHARE, 6)
    assert items[answer.id].score < items[question.id].score
    ordered = rank_order(list(items.values()), direct)
    assert [it.memory.id for it in ordered] == [question.id, answer.id, other.id]


def test_expansion_never_lowers_a_direct_hit_nor_follows_statements() -> None:
    statement = mem(1, "Caroline: I love painting.")
    after = mem(2, "Melanie: Me too.")
    strong = mem(3, "Melanie: Painting sunsets is my thing?")
    follower = mem(4, "Caroline: Nice.")
    direct = [hit(statement, 0.9), hit(strong, 0.5), hit(follower, 0.7)]
    walk = Walk(reached=((after, 1),),
                links=(precedes(statement, after), precedes(strong, follower)))  # fmt: skip
    items = {it.memory.id: it for it in expand_answers(direct, answer_seeds(direct), walk, [])}
    assert after.id not in items  # a statement passes nothing on
    assert items[follower.id].score == 0.7  # 0.5 * share is less than its own score


def test_attribution_prefers_the_named_speaker_and_lowers_confidence() -> None:
    own = mem(1, "Caroline: I ran a charity race last week.")
    said_by_other = mem(2, "Melanie: I ran a charity race too.")
    asked = mem(3, "Caroline: Did you run the charity race?")
    terms = query_terms("What did Caroline realise after her charity race?")
    out = {it.memory.id: it.score for it in attribute([hit(own, 0.8), hit(said_by_other, 0.8),
                                                       hit(asked, 0.8)], terms)}  # fmt: skip
    common = 1 - COMPETITION_WEIGHT * 0.8
    assert out[own.id] == round(0.8 * common, 6)
    assert out[said_by_other.id] == round(0.8 * common * OTHER_SPEAKER_FACTOR, 6)
    assert out[asked.id] == round(0.8 * common * QUESTION_FACTOR, 6)


def test_attribution_leaves_queries_without_a_speaker_alone() -> None:
    items = [hit(mem(1, "Caroline: I ran a race."), 0.8), hit(mem(2, "Melanie: Me too?"), 0.5)]
    assert attribute(items, query_terms("Who ran a race?")) == items


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), st.booleans())
def test_attribution_keeps_scores_in_range_and_never_raises_them(
    scores: list[float], name_asked: bool
) -> None:
    speakers = ["Caroline", "Melanie", "user"]
    items = [
        hit(mem(i, f"{speakers[i % 3]}: statement {i}{'?' if i % 2 else '.'}"), round(s, 6))
        for i, s in enumerate(scores)
    ]
    terms = query_terms("What did Caroline say?" if name_asked else "What was said?")
    out = attribute(items, terms)
    assert [it.memory.id for it in out] == [it.memory.id for it in items]
    assert all(0.0 <= b.score <= a.score for a, b in zip(items, out, strict=True))
