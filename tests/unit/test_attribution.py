"""Conversation-aware ranking (docs/design.md, "Conversations: answers and speakers"): a memory a
strong question hit PRECEDES inherits part of its score, and a query that names a declared speaker
(a ``speaker:<name>`` tag) prefers what that speaker said (recall.expand_answers / attribute).

Speakers come only from tags: the texts here keep their ``Name: ...`` form, and the ops-log and
issue-tracker tests show that a ``Capitalised:`` prefix is content, never a speaker.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from graphsvc.model import Link, LinkKind, Memory, MemoryInput
from graphsvc.recall import (
    SPEAKER_NAME_CHARS,
    Scored,
    answer_seeds,
    attach,
    attribute,
    expand_answers,
    get_stage,
    is_question,
    rank_order,
    score_candidates,
    speaker_tag,
    speaker_terms,
    speakers,
)
from graphsvc.recall.policy import ConversationPolicy
from graphsvc.store.candidates import Candidate, TermStats
from graphsvc.store.graph import Walk
from graphsvc.text import analyse, query_terms

BASE = datetime(2025, 1, 1, tzinfo=UTC)


POLICY = ConversationPolicy()  # the weights the functions default to


def mem(n: int, text: str, speaker: str | None = None, tags: Sequence[str] = ()) -> Memory:
    declared = (f"speaker:{speaker}",) if speaker is not None else ()
    return Memory(
        id=UUID(int=n),
        namespace="ns",
        text=text,
        kind="turn",
        occurred_at=None,
        recorded_at=BASE + timedelta(seconds=n),
        tags=(*tags, *declared),
        source=None,
        confidence=1.0,
        tokens=1,
        terms=tuple(analyse(text)),
    )


def turn(n: int, speaker: str, text: str) -> Memory:
    """A chat turn as the LoCoMo converter writes it: ``"Speaker: text"`` and its speaker tag."""
    return mem(n, f"{speaker}: {text}", speaker)


def hit(memory: Memory, score: float) -> Scored:
    return Scored(memory, score, tuple(dict.fromkeys(memory.terms)))


def precedes(a: Memory, b: Memory) -> Link:
    return Link(source=a.id, target=b.id, kind=LinkKind.PRECEDES, weight=1.0, created_at=BASE)


def stats_for(corpus: Sequence[Memory], terms: Sequence[str]) -> TermStats:
    return TermStats(
        n_docs=len(corpus),
        total_length=sum(len(m.terms) for m in corpus),
        df={t: sum(1 for m in corpus if t in m.terms) for t in terms},
    )


def rank(corpus: Sequence[Memory], query: str, links: Sequence[Link] = ()) -> list[Scored]:
    """What ``RecallPipeline.rank`` does, on memories held here: score, attach, pass scores on
    over ``PRECEDES`` from the seeds (a one-hop walk over ``links``), attribute, re-sort."""
    terms = query_terms(query)
    stats = stats_for(corpus, terms)
    scored = score_candidates(
        terms, stats, [Candidate.of(m, terms) for m in corpus], get_stage("default")
    )
    by_id = {m.id: m for m in corpus}
    direct = attach(scored, corpus)
    ranked = direct
    seeds = answer_seeds(direct)
    if seeds:
        starts = {s.memory.id for s in seeds}
        hop = [lk for lk in links if lk.source in starts or lk.target in starts]
        ends = {lk.source for lk in hop} | {lk.target for lk in hop}
        reached = tuple((by_id[i], 1) for i in sorted(ends - starts, key=str))
        ranked = expand_answers(direct, seeds, Walk(reached=reached, links=tuple(hop)), terms)
    return rank_order(attribute(ranked, terms), direct)


def view(ranking: Sequence[Scored]) -> list[tuple[int, float]]:
    return [(item.memory.id.int, item.score) for item in ranking]


# -- declared speakers --------------------------------------------------------------------------


def test_speakers_come_from_tags_never_from_text() -> None:
    assert speaker_terms(turn(1, "Caroline", "I went to a support group.")) == {"carolin"}
    assert speaker_terms(mem(2, "Mary Ann Lee: hi", "Mary Ann Lee")) == {"mari", "ann", "lee"}
    assert speaker_terms(mem(3, "user: hello", "user")) == {"user"}
    # The same texts without a tag declare no one.
    assert speaker_terms(mem(4, "Caroline: I went to a support group.")) == frozenset()
    assert speakers(mem(5, "Error: disk full")) == ()
    # Only the exact lower-case prefix with a non-blank name declares; other tags are tags.
    assert speakers(mem(6, "x", tags=("Speaker:Bob", "speaker:", "speaker:  ", "Bob"))) == ()
    assert speakers(mem(7, "x", tags=("speaker: Ann ", "session-1", "speaker:Bo"))) == ("Ann", "Bo")
    assert is_question("Melanie: How was the race? ")
    assert not is_question("Melanie: It was great!")


def test_speaker_tags_are_cut_to_fit_a_tag() -> None:
    assert speaker_tag("Caroline") == "speaker:Caroline"
    assert speaker_tag("  Mary Ann ") == "speaker:Mary Ann"
    assert speaker_tag("   ") is None
    long_name = "Bartholomew " * 8
    tag = speaker_tag(long_name)
    assert tag is not None
    assert len(tag) <= 64
    assert tag == "speaker:" + long_name.strip()[:SPEAKER_NAME_CHARS].rstrip()
    MemoryInput(text="hi", tags=(tag,))  # a converter's tag is always writable
    # A client that writes a longer tag itself is refused at validation, not cut.
    with pytest.raises(ValidationError):
        MemoryInput(text="hi", tags=("speaker:" + long_name,))


# -- answers inherit from the questions they follow -----------------------------------------------


def test_an_answer_inherits_from_the_question_it_follows() -> None:
    question = turn(1, "Caroline", "How was your charity race?")
    answer = turn(2, "Melanie", "Great, I realised self-care matters.")
    other = turn(3, "Melanie", "The charity race raised money.")
    direct = [hit(question, 0.8), hit(other, 0.6)]
    seeds = answer_seeds(direct)
    assert seeds == [direct[0]]
    walk = Walk(reached=((answer, 1),), links=(precedes(question, answer),))
    terms = query_terms("charity race")
    items = {it.memory.id: it for it in expand_answers(direct, seeds, walk, terms)}
    assert items[answer.id].score == round(0.8 * POLICY.answer_share, 6)
    assert items[answer.id].score < items[question.id].score
    ordered = rank_order(list(items.values()), direct)
    assert [it.memory.id for it in ordered] == [question.id, answer.id, other.id]


def test_inheritance_needs_no_speaker_only_the_link() -> None:
    """The answer step is a graph feature: untagged memories linked by PRECEDES take part."""
    question = mem(1, "Which host ran out of disk?")
    answer = mem(2, "db-2, at 03:10.")
    corpus = [question, answer, mem(3, "The disk of db-1 was replaced.")]
    query = "which host ran out of disk"
    linked = dict(view(rank(corpus, query, [precedes(question, answer)])))
    unlinked = dict(view(rank(corpus, query)))
    assert 2 not in unlinked
    assert linked[2] == round(linked[1] * POLICY.answer_share, 6)


def test_expansion_never_lowers_a_direct_hit_nor_follows_statements() -> None:
    statement = turn(1, "Caroline", "I love painting.")
    after = turn(2, "Melanie", "Me too.")
    strong = turn(3, "Melanie", "Painting sunsets is my thing?")
    follower = turn(4, "Caroline", "Nice.")
    direct = [hit(statement, 0.9), hit(strong, 0.5), hit(follower, 0.7)]
    walk = Walk(
        reached=((after, 1),), links=(precedes(statement, after), precedes(strong, follower))
    )
    items = {it.memory.id: it for it in expand_answers(direct, answer_seeds(direct), walk, [])}
    assert after.id not in items  # a statement passes nothing on
    assert items[follower.id].score == 0.7  # 0.5 * share is less than its own score


def test_other_link_kinds_pass_nothing_on() -> None:
    question = mem(1, "Why did the deploy fail?")
    effect = mem(2, "Rollback at 14:05.")
    causes = Link(
        source=question.id, target=effect.id, kind=LinkKind.CAUSES, weight=1.0, created_at=BASE
    )
    direct = [hit(question, 0.9)]
    walk = Walk(reached=((effect, 1),), links=(causes,))
    assert expand_answers(direct, answer_seeds(direct), walk, []) == direct


def test_a_share_of_zero_turns_the_answer_step_off() -> None:
    # The weight is a policy field (what `graphsvc eval --tune ANSWER_SHARE=0` changes).
    direct = [hit(mem(1, "Did it work?"), 0.9)]
    assert answer_seeds(direct) == direct
    assert answer_seeds(direct, ConversationPolicy(answer_share=0.0)) == []


# -- attribution over declared speakers ----------------------------------------------------------


def test_attribution_prefers_the_named_speaker_and_lowers_confidence() -> None:
    own = turn(1, "Caroline", "I ran a charity race last week.")
    said_by_other = turn(2, "Melanie", "I ran a charity race too.")
    asked = turn(3, "Caroline", "Did you run the charity race?")
    terms = query_terms("What did Caroline realise after her charity race?")
    out = {
        it.memory.id: it.score
        for it in attribute([hit(own, 0.8), hit(said_by_other, 0.8), hit(asked, 0.8)], terms)
    }
    common = 1 - POLICY.competition_weight * 0.8
    assert out[own.id] == round(0.8 * common, 6)
    assert out[said_by_other.id] == round(0.8 * common * POLICY.other_speaker_factor, 6)
    assert out[asked.id] == round(0.8 * common * POLICY.question_factor, 6)


def test_attribution_weighs_the_evidence_as_the_score_with_its_own_competitor() -> None:
    """Answerability reads each memory's evidence (its coverage of the query) after the same
    attribution; the common factor comes from the best competing statement's evidence."""
    own = Scored(turn(1, "Caroline", "I ran a charity race."), 0.5, ("race",), 0.6)
    other = Scored(turn(2, "Melanie", "I ran a charity race too."), 0.8, ("race",), 0.9)
    asked = Scored(turn(3, "Caroline", "Did you run the race?"), 0.4, ("race",), 0.3)
    terms = query_terms("What did Caroline realise after her charity race?")
    out = {it.memory.id: it for it in attribute([own, other, asked], terms)}
    common = 1 - POLICY.competition_weight * 0.8
    common_evidence = 1 - POLICY.competition_weight * 0.9
    assert out[own.memory.id].evidence == round(0.6 * common_evidence, 6)
    assert out[other.memory.id].evidence == round(
        0.9 * common_evidence * POLICY.other_speaker_factor, 6
    )
    assert out[asked.memory.id].evidence == round(0.3 * common_evidence * POLICY.question_factor, 6)
    assert out[own.memory.id].score == round(0.5 * common, 6)


def test_an_answer_inherits_evidence_apart_from_its_score() -> None:
    question = Scored(turn(1, "Caroline", "How was your charity race?"), 0.8, ("race",), 0.5)
    answer = turn(2, "Melanie", "Great, I realised self-care matters.")
    known = Scored(answer, 0.1, (), 0.7)  # more evidence of its own than it would inherit
    walk = Walk(reached=(), links=(precedes(question.memory, answer),))
    items = {it.memory.id: it for it in expand_answers([question, known], [question], walk, [])}
    assert items[answer.id].score == round(0.8 * POLICY.answer_share, 6)
    assert items[answer.id].evidence == 0.7


def test_untagged_memories_are_spoken_by_no_one() -> None:
    """In a namespace that mixes chat turns and notes, a note keeps its score but for the common
    factor, even when its text looks like a turn or asks a question."""
    own = turn(1, "Caroline", "I ran a charity race.")
    other = turn(2, "Melanie", "I ran a charity race too.")
    looks_like_a_turn = mem(3, "Melanie: a note that only looks like a turn about the race")
    asks = mem(4, "Who organised the charity race?")
    items = [hit(own, 0.8), hit(other, 0.6), hit(looks_like_a_turn, 0.9), hit(asks, 0.7)]
    out = {it.memory.id: it.score for it in attribute(items, query_terms("Caroline's race"))}
    common = 1 - POLICY.competition_weight * 0.6  # only the tagged statement competes
    assert out[looks_like_a_turn.id] == round(0.9 * common, 6)
    assert out[asks.id] == round(0.7 * common, 6)
    assert out[other.id] == round(0.6 * common * POLICY.other_speaker_factor, 6)


def test_a_name_only_in_text_names_no_one() -> None:
    items = [hit(mem(1, "Caroline: I ran a race."), 0.8), hit(mem(2, "Melanie: Me too."), 0.5)]
    assert attribute(items, query_terms("What did Caroline run?")) == items


def test_attribution_leaves_queries_without_a_speaker_alone() -> None:
    items = [hit(turn(1, "Caroline", "I ran a race."), 0.8), hit(turn(2, "Melanie", "Me?"), 0.5)]
    assert attribute(items, query_terms("Who ran a race?")) == items


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), st.booleans())
def test_attribution_keeps_scores_in_range_and_never_raises_them(
    scores: list[float], name_asked: bool
) -> None:
    names: list[str | None] = ["Caroline", "Melanie", None]
    items = [
        hit(mem(i, f"Caroline: statement {i}{'?' if i % 2 else '.'}", names[i % 3]), round(s, 6))
        for i, s in enumerate(scores)
    ]
    terms = query_terms("What did Caroline say?" if name_asked else "What was said?")
    out = attribute(items, terms)
    assert [it.memory.id for it in out] == [it.memory.id for it in items]
    assert all(0.0 <= b.score <= a.score for a, b in zip(items, out, strict=True))


# -- a "Capitalised:" prefix is content: ops logs and issue trackers ------------------------------

OPS_LOG = (
    "{}disk full on db-2 during the nightly backup",
    "{}nightly backup of db-2 finished late",
    "{}release 4.2 rolled out to db-2",
)
OPS_PREFIXES = ("Error", "Backup", "Deploy")
TRACKER = (
    "{}login page crashes on Safari after the update",
    "{}dark mode for the login page",
    "{}Safari login crash fixed in 4.2.1",
    "{}crash reports from Safari users doubled",
)
TRACKER_PREFIXES = ("Bug", "Feature", "Fix", "Support")


def corpus_of(texts: Sequence[str], prefixes: Sequence[str], sep: str) -> list[Memory]:
    return [mem(n, t.format(p + sep)) for n, (t, p) in enumerate(zip(texts, prefixes, strict=True))]


@pytest.mark.parametrize(
    ("texts", "prefixes", "query"),
    [
        (OPS_LOG, OPS_PREFIXES, "Why did the nightly backup of db-2 fail with disk full?"),
        (OPS_LOG, OPS_PREFIXES, "Which error stopped the nightly backup of db-2?"),
        (OPS_LOG, OPS_PREFIXES, "Did the deploy of release 4.2 fill the disk?"),
        (TRACKER, TRACKER_PREFIXES, "Which bug crashes the login page on Safari?"),
        (TRACKER, TRACKER_PREFIXES, "Is there a fix for the Safari crash bug?"),
        (TRACKER, TRACKER_PREFIXES, "What feature requests mention the login page?"),
    ],
)
def test_a_capitalised_prefix_is_content_not_a_speaker(
    texts: Sequence[str], prefixes: Sequence[str], query: str
) -> None:
    """``Error: ...`` and ``Error - ...`` analyse to the same terms; with speakers read from text,
    the first would credit the query's "error" to a speaker called Error and lower every other
    memory (the top score of the first query fell from 0.98 to 0.25). Scores and order must be
    those of the form without the pattern, and attribution must change nothing."""
    colon = corpus_of(texts, prefixes, ": ")
    dash = corpus_of(texts, prefixes, " - ")
    assert [m.terms for m in colon] == [m.terms for m in dash]
    ranked = rank(colon, query)
    assert ranked, "the query must find something for the comparison to mean anything"
    assert view(ranked) == view(rank(dash, query))
    assert attribute(ranked, query_terms(query)) == ranked


def test_a_capitalised_prefix_is_content_even_beside_a_conversation() -> None:
    """A namespace holding both a chat and an ops log: the log's prefixes name no one, so a query
    naming a log prefix is not a speaker query, and the chat's speakers act only on the chat."""
    chat = [
        turn(10, "Caroline", "The backup drive is full again."),
        turn(11, "Melanie", "I will order a bigger backup drive."),
    ]
    for query in ("Which error stopped the backup?", "What did Caroline say about the backup?"):
        colon = rank([*corpus_of(OPS_LOG, OPS_PREFIXES, ": "), *chat], query)
        dash = rank([*corpus_of(OPS_LOG, OPS_PREFIXES, " - "), *chat], query)
        assert view(colon) == view(dash)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Error", "Backup", "Bug", "Mary Ann", "Fix", "Q"]),
            st.sampled_from(["disk full", "backup late", "login crash?", "bug fixed", "error"]),
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["error backup", "bug fix", "Mary's disk", "login crash error"]),
)
def test_untagged_memories_rank_the_same_whatever_their_prefix(
    specs: list[tuple[str, str]], query: str
) -> None:
    colon = [mem(i, f"{p}: {t}") for i, (p, t) in enumerate(specs)]
    dash = [mem(i, f"{p} - {t}") for i, (p, t) in enumerate(specs)]
    ranked = rank(colon, query)
    assert view(ranked) == view(rank(dash, query))
    assert attribute(ranked, query_terms(query)) == ranked
