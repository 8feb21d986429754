"""The side-by-side tables of the question-answering evaluation (lab/graphsvc_lab/eval/qa.py):
hand-made outcomes for the arithmetic, and one tiny conversation through the real embedded store
for the loadings (lexical, plain)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graphsvc_lab.datasets import dataset_id
from graphsvc_lab.eval.common import Tuning, run_context
from graphsvc_lab.eval.qa import (
    FOREIGN,
    Conversation,
    Outcome,
    Question,
    Result,
    abstention_tables,
    build_report,
    candidate_signals,
    foreign_questions,
    graphsvc_systems,
    recall_tables,
    run_questions,
    systems_of,
)
from tests.helpers import installed_model


def _o(ranked: list[str], top: float, skipped: bool | None = None, cover: float = 1.0) -> Outcome:
    return Outcome(
        ranked=ranked,
        packed={500: ranked[:1], 1000: ranked[:2], 2000: ranked[:3]},
        tokens={500: 10, 1000: 20, 2000: 30},
        top_score=top,
        skipped=skipped,
        coverage=cover,
        window_top=top + 0.05,
        seconds=0.001,
    )


def _r(n: int, answerable: bool, outcomes: dict[str, Outcome]) -> Result:
    q = Question(
        f"c#{n}",
        "c",
        "1 multi-hop" if answerable else "5 adversarial",
        "?",
        ("g",) if answerable else (),
        answerable,
    )
    return Result(q, {"g": 0} if answerable else {}, 1, outcomes)


RESULTS = [
    # Two answerable questions, two unanswerable ones; systems given out of order on purpose.
    _r(0, True, {"hybrid": _o(["g", "x"], 0.8, False), "bm25": _o(["x", "g"], 9.0),
                 "lexical": _o(["x", "y", "g"], 0.6, False), "dense": _o(["y", "z"], 0.7)}),
    _r(1, True, {"hybrid": _o(["x", "g"], 0.2, True), "bm25": _o(["g"], 3.0),
                 "lexical": _o(["g"], 0.25, True), "dense": _o(["g"], 0.6)}),
    _r(2, False, {"hybrid": _o(["x"], 0.1, True), "bm25": _o(["x"], 4.0),
                  "lexical": _o(["x"], 0.1, True, 0.0), "dense": _o(["x"], 0.65)}),
    _r(3, False, {"hybrid": _o(["x"], 0.5, False), "bm25": _o(["x"], 1.0),
                  "lexical": _o(["x"], 0.2, True, 0.5), "dense": _o(["x"], 0.9)}),
]  # fmt: skip


def test_systems_come_in_a_fixed_order() -> None:
    assert systems_of(RESULTS) == ["bm25", "dense", "lexical", "hybrid"]
    assert graphsvc_systems(RESULTS) == ["lexical", "hybrid"]
    assert RESULTS[0].graphsvc is RESULTS[0].outcomes["hybrid"]
    assert RESULTS[0].bm25 is RESULTS[0].outcomes["bm25"]


def test_recall_side_by_side_by_hand() -> None:
    r5, r1, r10, hit5 = recall_tables(RESULTS, ["1 multi-hop", "5 adversarial"])
    assert r5.header == ["category", "n", "bm25 R@5", "dense R@5", "lexical R@5", "hybrid R@5"]
    assert r1.rows[0] == ["1 multi-hop", 2, 0.5, 0.5, 0.5, 0.5]
    assert r5.rows[-1] == ["overall (answerable)", 2, 1.0, 0.5, 1.0, 1.0]
    assert r10.key == "recall_at_10"
    assert hit5.rows[-1][2:] == [1.0, 0.5, 1.0, 1.0]


def test_every_abstention_signal_by_hand() -> None:
    labels = [s.label for s in candidate_signals(RESULTS)]
    assert labels == [
        "bm25 top score",
        "dense top cosine",
        "lexical topScore",
        "lexical evidenceCoverage",
        "hybrid topScore",
        "hybrid best fused score (ranked window)",
        "hybrid evidenceCoverage",
    ]
    signals, by_category, sweep = abstention_tables(RESULTS, ["1 multi-hop"], 0.3, "unanswerable")
    rows = {row[0]: row[1:] for row in signals.rows}
    # bm25 tops: unanswerable 4.0, 1.0 vs answerable 9.0, 3.0: pairs won (4<9? no...) by hand:
    # a positive "abstains more" when its top is lower: 4 vs (9 yes, 3 no), 1 vs (9 yes, 3 yes).
    assert rows["bm25 top score"][0] == pytest.approx(3 / 4)
    # dense tops: 0.65, 0.9 vs 0.7, 0.6: 0.65 < 0.7 only -> 1/4.
    assert rows["dense top cosine"][0] == pytest.approx(1 / 4)
    # lexical: 0.1, 0.2 vs 0.6, 0.25 -> 1.0; its skipped flags: both unanswerable, one answerable.
    assert rows["lexical topScore"][0] == 1.0
    assert rows["lexical topScore"][3:] == [1.0, 0.5]
    # Uncovered share: unanswerable 1.0 and 0.5 against answerable 0.0 and 0.0.
    assert rows["lexical evidenceCoverage"][0] == 1.0
    # A signal without a skipped flag has no operating point.
    assert rows["dense top cosine"][3:] == [None, None]
    # Within 10% false abstention (none of the two answerable): lexical catches both.
    assert rows["lexical topScore"][1:3] == [1.0, 0.0]
    assert by_category.rows[-1] == ["overall (answerable)", 2, 0.5, 0.5]
    assert sweep.header[1:3] == ["lexical recall", "lexical false abstention"]
    at_03 = next(row for row in sweep.rows if row[0] == "0.3")
    assert at_03[1:] == [1.0, 0.5, 0.5, 0.5]


def test_build_report_names_the_tables_for_figures() -> None:
    report = build_report("locomo", ["- x"], RESULTS, ["1 multi-hop"], 0.3, "unanswerable")
    assert report.figures["systems"] == ["bm25", "dense", "lexical", "hybrid"]
    assert set(report.figures["recall_at_k"]) == {"1", "5", "10"}
    assert report.figures["recall_at_k"]["5"]["overall (answerable)"]["hybrid R@5"] == 1.0
    assert "Evidence recall@k" in "\n".join(t.title for t in report.tables)


def _tiny() -> Conversation:
    start = datetime(2024, 5, 1, 10, tzinfo=UTC)
    turns = [
        ("Ann", "I adopted a grey cat called Pixel last week."),
        ("Bob", "Nice, what does Pixel eat?"),
        ("Ann", "Only salmon, she refuses everything else."),
        ("Bob", "I am training for the Berlin marathon in September."),
        ("Ann", "Good luck with the marathon training."),
    ]
    ids = [dataset_id("t", "tiny", str(i)) for i in range(len(turns))]
    rows: list[dict[str, Any]] = [
        {
            "type": "memory",
            "id": ids[i],
            "text": f"{who}: {text}",
            "kind": "turn",
            "occurredAt": (start + timedelta(seconds=i)).isoformat(),
            "tags": ["session-1", f"speaker:{who.lower()}"],
            "source": f"tiny:{i}",
        }
        for i, (who, text) in enumerate(turns)
    ]
    rows += [
        {"type": "link", "source": a, "target": b, "kind": "PRECEDES"}
        for a, b in itertools.pairwise(ids)
    ]
    questions = [
        Question("tiny#0", "tiny", "4 single-hop", "What does Pixel eat?", ("tiny:2",), True),
        Question("tiny#1", "tiny", "4 single-hop", "Which marathon is Bob training for?",
                 ("tiny:3",), True),
        Question("tiny#2", "tiny", "5 adversarial", "Which marathon is Ann training for?", (),
                 False),
    ]  # fmt: skip
    return Conversation("tiny", rows, questions, {f"tiny:{i}": "session-1" for i in range(5)})


def test_a_tiny_conversation_through_lexical_and_plain_loadings() -> None:
    with run_context(None, embed="off", neo4j_uri=None) as ctx:
        assert ctx.hybrid is None and ctx.embedder is None
        assert ctx.notes == ("dense-only and hybrid skipped: --embed off",)
        results = run_questions(ctx, "tiny", [_tiny()], 0.3, None, plain=True)
    declared: Tuning = {"NEXT_RECORDED_FOLLOWS": False}
    with run_context(None, embed="off", neo4j_uri=None, tuning=declared) as ctx:
        declared_only = run_questions(ctx, "tiny", [_tiny()], 0.3, None, plain=True)
    assert systems_of(results) == ["bm25", "lexical", "plain lexical"]
    first = results[0]
    # The answer shares no word with the question: it ranks through the converter's PRECEDES link
    # from the question turn, and in the plain loading (no links) as the turn written after it.
    assert first.outcomes["lexical"].ranked[:2] == ["tiny:1", "tiny:2"]
    assert first.outcomes["plain lexical"].ranked[:2] == ["tiny:1", "tiny:2"]
    # Declared links only: the plain loading misses it, the converter's loading does not.
    assert declared_only[0].outcomes["lexical"].ranked[:2] == ["tiny:1", "tiny:2"]
    assert declared_only[0].outcomes["plain lexical"].ranked[0] == "tiny:1"
    assert "tiny:2" not in declared_only[0].outcomes["plain lexical"].ranked[:2]
    assert results[1].outcomes["bm25"].ranked[0] == "tiny:3"
    assert all(r.sweep == {} for r in results)
    assert {r.outcomes[s].retrieval for r in results for s in ("lexical", "plain lexical")} == {
        "lexical"
    }


def test_hybrid_and_dense_run_beside_lexical_with_the_real_model(tmp_path: Path) -> None:
    """With the installed model: dense and hybrid join, hybrid bundles are answered hybrid, the
    sweep re-reads hybrid, and a second run reads every vector back from the cache."""
    installed_model("hybrid eval test")
    cache = tmp_path / "vectors"
    configs: list[Tuning] = [{"dense_weight": 0.0}, {"dense_weight": 0.5}]
    with run_context(None, embed="on", vector_cache=cache, neo4j_uri=None) as ctx:
        assert ctx.embedder is not None and ctx.notes == ()
        results = run_questions(ctx, "tiny", [_tiny()], 0.3, None, plain=True, configs=configs)
        assert ctx.embedder.misses == 5 + 3  # the turns, then the questions
    assert systems_of(results) == [
        "bm25",
        "dense",
        "lexical",
        "hybrid",
        "plain lexical",
        "plain hybrid",
    ]
    assert {r.outcomes["hybrid"].retrieval for r in results} == {"hybrid"}
    assert {r.outcomes["plain hybrid"].retrieval for r in results} == {"hybrid"}
    assert {r.outcomes["lexical"].retrieval for r in results} == {"lexical"}
    assert list(results[0].sweep) == ["dense_weight=0", "dense_weight=0.5"]
    # With no weight on the cosine, hybrid ranks as lexical does.
    assert (
        results[0].sweep["dense_weight=0"].ranked[:3] == results[0].outcomes["lexical"].ranked[:3]
    )
    with run_context(None, embed="on", vector_cache=cache, neo4j_uri=None) as ctx:
        again = run_questions(ctx, "tiny", [_tiny()], 0.3, None)
        assert ctx.embedder is not None and ctx.embedder.misses == 0
    assert again[0].outcomes["dense"].ranked == results[0].outcomes["dense"].ranked


def test_foreign_questions_are_the_next_conversations_asked_here_and_stay_apart() -> None:
    tiny = _tiny()
    other = Conversation(
        "other",
        tiny.rows,
        [Question(f"other#{i}", "other", "4 single-hop", f"q{i}?", ("tiny:0",), True)
         for i in range(6)]
        + [Question("other#x", "other", "5 adversarial", "no?", (), False)],
        tiny.session,
    )  # fmt: skip
    asked = foreign_questions([tiny, other], 0, 3)
    assert [q.text for q in asked] == ["q0?", "q2?", "q4?"]  # evenly spread, answerable only
    assert all(q.foreign and not q.answerable and q.evidence == () for q in asked)
    assert {q.conversation for q in asked} == {"tiny"} and asked[0].category == FOREIGN
    assert foreign_questions([tiny], 0, 3) == []  # no other conversation to ask
    assert [q.conversation for q in foreign_questions([tiny, other], 1, 1)] == ["other"]
    with run_context(None, embed="off", neo4j_uri=None) as ctx:
        results = run_questions(ctx, "tiny", [tiny, other], 0.3, None, foreign=0.5)
    foreign = [r for r in results if r.question.foreign]
    # Half of each conversation's question count (3 and 7), at most the other's answerable ones.
    assert [r.question.conversation for r in foreign] == ["tiny", "tiny", "other", "other"]
    report = build_report("tiny", [], results, ["4 single-hop"], 0.3, "unanswerable")
    assert "foreign" in report.figures
    # Foreign questions take part in no other figure: abstention counts the one adversarial.
    abstention = report.figures["abstention"]["lexical topScore"]
    plain = build_report("tiny", [], [r for r in results if not r.question.foreign],
                         ["4 single-hop"], 0.3, "unanswerable")  # fmt: skip
    assert abstention == plain.figures["abstention"]["lexical topScore"]
