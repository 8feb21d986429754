"""Leave-one-conversation-out, the sweep's tables and the new metrics, on hand-made numbers
(lab/graphsvc_lab/eval/crossval.py, metrics.py)."""

from __future__ import annotations

import math
import statistics

import pytest

from graphsvc_lab.eval.crossval import (
    cross_validate,
    crossval_tables,
    leave_one_out,
)
from graphsvc_lab.eval.metrics import operating_point, stdev
from graphsvc_lab.eval.qa import Outcome, Question, Result, SweepPoint


def test_leave_one_out_by_hand() -> None:
    # Two combinations over three conversations; values per question.
    scores = {
        "w=0.1": {"a": [1.0, 0.0], "b": [0.5], "c": [0.0, 0.0, 1.0]},
        "w=0.3": {"a": [1.0, 1.0], "b": [0.0], "c": [0.0, 0.0, 0.0]},
    }
    cv = leave_one_out(scores, ["w=0.1", "w=0.3"])
    assert cv is not None
    # Fold a: train on b + c. w=0.1: (0.5 + 1) / 4 = 0.375; w=0.3: 0 -> w=0.1, test (1+0)/2.
    # Fold b: train on a + c. w=0.1: 2/5 = 0.4; w=0.3: 2/5 = 0.4 -> tie, first listed (w=0.1).
    # Fold c: train on a + b. w=0.1: 1.5/3 = 0.5; w=0.3: 2/3 -> w=0.3, test 0.
    assert [(f.held_out, f.chosen) for f in cv.folds] == [
        ("a", "w=0.1"),
        ("b", "w=0.1"),
        ("c", "w=0.3"),
    ]
    assert [f.train for f in cv.folds] == pytest.approx([0.375, 0.4, 2 / 3])
    assert [f.test for f in cv.folds] == pytest.approx([0.5, 0.5, 0.0])
    assert [(f.train_n, f.test_n) for f in cv.folds] == [(4, 2), (5, 1), (3, 3)]
    # Pooled over the 6 questions: 1 + 0 + 0.5 + 0 + 0 + 0.
    assert cv.pooled == pytest.approx(1.5 / 6)
    assert cv.fold_mean == pytest.approx(1 / 3)
    assert cv.fold_std == pytest.approx(statistics.stdev([0.5, 0.5, 0.0]))
    assert cv.chosen_for() == {"a": "w=0.1", "b": "w=0.1", "c": "w=0.3"}


def test_leave_one_out_needs_two_conversations_and_a_combination() -> None:
    assert leave_one_out({"x": {"a": [1.0]}}, ["x"]) is None
    assert leave_one_out({}, []) is None


def test_stdev_and_operating_point_by_hand() -> None:
    assert stdev([1.0, 3.0]) == pytest.approx(math.sqrt(2))
    assert math.isnan(stdev([1.0]))
    assert stdev([1.0, float("nan"), 3.0]) == pytest.approx(math.sqrt(2))
    positives = [0.9, 0.8, 0.4, 0.1]
    negatives = [0.85, 0.3, 0.2, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    # At most 10% of the 10 negatives (one, 0.85) may be at or above the threshold: 0.4 keeps
    # to that (0.3 would let a second in) and finds 0.9, 0.8 and 0.4.
    assert operating_point(positives, negatives, 0.10) == (0.4, 0.75, 0.1)
    # Nothing may pass: the best threshold is above the top negative.
    assert operating_point(positives, negatives, 0.0) == (0.9, 0.25, 0.0)
    assert operating_point([0.1], [0.5], 0.0) == (math.inf, 0.0, 0.0)
    assert all(math.isnan(v) for v in operating_point([], [0.5], 0.1))


def _outcome(ranked: list[str], top: float) -> Outcome:
    return Outcome(ranked=ranked, packed={}, tokens={}, top_score=top, window_top=top)


def _result(conv: str, n: int, answerable: bool, gold: str, sweep: dict[str, list[str]]) -> Result:
    q = Question(f"{conv}#{n}", conv, "1 multi-hop", "?", (gold,) if answerable else (), answerable)
    return Result(
        question=q,
        true_order={gold: 0} if answerable else {},
        sessions=1,
        outcomes={"bm25": _outcome([], 0.0), "lexical": _outcome([gold], 0.5)},
        sweep={
            label: SweepPoint(ranked, top_score=0.5 if answerable else 0.1, window_top=0.4)
            for label, ranked in sweep.items()
        },
    )


def test_crossval_tables_from_results() -> None:
    hit = ["g"] + [f"x{i}" for i in range(9)]
    miss = [f"x{i}" for i in range(10)]
    results = [
        _result("a", 0, True, "g", {"w=0.1": hit, "w=0.3": miss}),
        _result("b", 0, True, "g", {"w=0.1": hit, "w=0.3": miss}),
        _result("b", 1, False, "g", {"w=0.1": miss, "w=0.3": miss}),
    ]
    cv = cross_validate(results)
    assert cv is not None
    assert [f.chosen for f in cv.folds] == ["w=0.1", "w=0.1"]
    assert cv.pooled == 1.0
    sweep, folds, held = crossval_tables(results, ["1 multi-hop"], 0.3, "w=0.3 (as run)")
    assert sweep.rows[0][:3] == ["w=0.1", 1.0, 1.0]
    assert sweep.rows[1][:3] == ["w=0.3", 0.0, 0.0]
    # The unanswerable question's top score (0.1) is below every answerable one's (0.5).
    assert sweep.rows[0][4] == 1.0
    assert folds.rows[-3][0] == "pooled (all questions)"
    assert folds.rows[-3][4:] == [1.0, 1.0]
    assert held.rows[-1] == ["overall (answerable)", 2, 1.0, 1.0]
    assert crossval_tables([_result("a", 0, True, "g", {})], ["1 multi-hop"], 0.3, "") == []
