"""The odds an early walk's guess holds, per namespace (recall.pipeline.GuessOdds): they only
decide whether a reconstruct walks early, never what it answers (see
tests/contract/test_early_walk.py)."""

from __future__ import annotations

from graphsvc.recall.pipeline import GuessOdds


def test_guess_odds_follow_the_outcomes_of_each_namespace() -> None:
    odds = GuessOdds()
    assert odds.likely("a")  # a namespace is guessed for until its guesses mostly fail
    for _ in range(7):  # 0.9 ** 7 = 0.48
        odds.record("a", False)
    assert not odds.likely("a") and odds.likely("b")
    for _ in range(3):
        odds.record("a", True)
    assert odds.likely("a")  # 0.9 ** 10 + 0.1 * (1 + 0.9 + 0.81) = 0.62
    for n in range(GuessOdds.NAMESPACES):
        odds.record(f"n{n}", False)
    assert odds.likely("a")  # past NAMESPACES namespaces all are forgotten: they start at 1
