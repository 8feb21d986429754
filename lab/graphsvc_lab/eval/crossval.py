"""Choosing constants by leave-one-conversation-out cross-validation (``--tune NAME=V1,V2,...``).

Every combination of the swept values is measured on every question (the main graphsvc system
re-read with it: :attr:`graphsvc_lab.eval.qa.Result.sweep`). For each conversation in turn, the
combination with the best mean evidence recall@5 over the answerable questions of the *other*
conversations is chosen (pooled over their questions; a tie goes to the combination listed first)
and measured on the held-out one. Reported: the choice and the held-out recall of every fold, their
spread (sample standard deviation over folds), and the held-out recall pooled over all questions
(each question scored with the combination chosen without its conversation), beside the run's own
setting. The in-sample table (every combination on every question) is there to read the curve,
not to pick from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from graphsvc_lab.eval.metrics import auroc, mean, recall_at_k, stdev
from graphsvc_lab.eval.qa import HYBRID, LEXICAL, Result, SweepPoint
from graphsvc_lab.eval.report import Table

K = 5


@dataclass(frozen=True)
class Fold:
    """One fold: the held-out conversation, the combination chosen on the others, its mean on
    the others (``train``) and on the held-out one (``test``), and how many questions each had."""

    held_out: str
    chosen: str
    train: float
    test: float
    train_n: int
    test_n: int


@dataclass(frozen=True)
class CrossValidation:
    """Every fold, and the held-out figures over all of them."""

    folds: tuple[Fold, ...]
    pooled: float
    fold_mean: float
    fold_std: float

    def chosen_for(self) -> dict[str, str]:
        """Held-out conversation -> the combination chosen without it."""
        return {f.held_out: f.chosen for f in self.folds}


def leave_one_out(
    scores: Mapping[str, Mapping[str, Sequence[float]]], labels: Sequence[str]
) -> CrossValidation | None:
    """Leave-one-conversation-out over per-question values.

    Args:
        scores: combination label -> conversation -> the value of each of its questions (every
            combination has the same conversations and questions).
        labels: the combinations in the order given; a tie goes to the earlier one.

    Returns:
        The folds, or ``None`` with fewer than two conversations or no combination.
    """
    if not labels:
        return None
    conversations = list(scores[labels[0]])
    if len(conversations) < 2:
        return None
    folds = []
    pooled: list[float] = []
    for held in conversations:
        best: tuple[float, str, int] | None = None
        for label in labels:
            train = [v for c in conversations if c != held for v in scores[label][c]]
            value = mean(train)
            if best is None or value > best[0]:
                best = (value, label, len(train))
        assert best is not None
        test = list(scores[best[1]][held])
        pooled += test
        folds.append(Fold(held, best[1], best[0], mean(test), best[2], len(test)))
    tests = [f.test for f in folds]
    return CrossValidation(tuple(folds), mean(pooled), mean(tests), stdev(tests))


def _answerable(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.question.answerable and r.question.evidence]


def _by_conversation(
    results: Sequence[Result], value: Callable[[Result], float]
) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in results:
        out.setdefault(r.question.conversation, []).append(value(r))
    return out


def _recall(point: SweepPoint, r: Result, k: int = K) -> float:
    return recall_at_k(point.ranked, r.question.evidence, k)


def _sweep_recall(label: str) -> Callable[[Result], float]:
    return lambda r: _recall(r.sweep[label], r)


def sweep_labels(results: Sequence[Result]) -> list[str]:
    """The swept combinations, in the order they were given."""
    return list(results[0].sweep) if results else []


def cross_validate(results: Sequence[Result]) -> CrossValidation | None:
    """Leave-one-conversation-out on answerable recall@5 of the swept combinations."""
    labels = sweep_labels(results)
    answerable = _answerable(results)
    scores = {label: _by_conversation(answerable, _sweep_recall(label)) for label in labels}
    return leave_one_out(scores, labels)


def crossval_tables(
    results: Sequence[Result],
    categories: Sequence[str],
    min_score: float,
    reference: str,
) -> list[Table]:
    """The in-sample sweep, the folds and the held-out recall by category (``reference``
    describes the run's own setting of the swept names)."""
    labels = sweep_labels(results)
    if not labels:
        return []
    system = HYBRID if HYBRID in results[0].outcomes else LEXICAL
    answerable = _answerable(results)
    pos = [r for r in results if not r.question.answerable]
    neg = [r for r in results if r.question.answerable]
    shown = [c for c in categories if any(r.question.category == c for r in answerable)]
    sweep = Table(
        f"Sweep of {system} (in-sample: every combination on every question)",
        [
            "combination",
            "answerable R@5",
            "R@10",
            *(f"{c} R@5" for c in shown),
            "AUROC topScore",
            "AUROC fused top",
            f"false abstention (topScore < {min_score:g})",
        ],
        note="Read the curve here; choose with the cross-validation below.",
        key="sweep",
    )
    for label in labels:
        row: list[float | str | int | None] = [
            label,
            mean(_recall(r.sweep[label], r) for r in answerable),
            mean(_recall(r.sweep[label], r, 10) for r in answerable),
        ]
        row += [
            mean(_recall(r.sweep[label], r) for r in answerable if r.question.category == c)
            for c in shown
        ]
        if pos and neg:
            row += [
                auroc(
                    [-r.sweep[label].top_score for r in pos],
                    [-r.sweep[label].top_score for r in neg],
                ),
                auroc(
                    [-r.sweep[label].window_top for r in pos],
                    [-r.sweep[label].window_top for r in neg],
                ),
                mean(float(r.sweep[label].top_score < min_score) for r in neg),
            ]
        else:
            row += [None, None, None]
        sweep.rows.append(row)
    tables = [sweep]
    cv = cross_validate(results)
    if cv is None:
        sweep.note += " (Cross-validation needs two or more conversations.)"
        return tables
    own = _by_conversation(
        answerable, lambda r: recall_at_k(r.graphsvc.ranked, r.question.evidence, K)
    )
    folds = Table(
        f"Leave-one-conversation-out on answerable R@5 ({len(cv.folds)} folds, {system})",
        ["held out", "questions", "chosen", "train R@5", "held-out R@5", f"{reference} R@5"],
        note="Each fold chooses on the other conversations (pooled questions; ties to the first "
        "listed) and is measured on the held-out one. Spread: sample standard deviation over "
        "folds. Pooled: every question scored with the combination chosen without its "
        f"conversation. Last column: the run's own setting ({reference}) on the same questions.",
        key="crossval",
    )
    for f in cv.folds:
        folds.rows.append([f.held_out, f.test_n, f.chosen, f.train, f.test, mean(own[f.held_out])])
    own_folds = [mean(own[f.held_out]) for f in cv.folds]
    own_pooled = mean(v for vs in own.values() for v in vs)
    folds.rows.append(["pooled (all questions)", len(answerable), "", None, cv.pooled, own_pooled])
    folds.rows.append(["mean of folds", len(cv.folds), "", None, cv.fold_mean, mean(own_folds)])
    folds.rows.append(["std of folds", len(cv.folds), "", None, cv.fold_std, stdev(own_folds)])
    chosen = cv.chosen_for()
    held = Table(
        "Held-out R@5 by category (each question with the combination chosen without its "
        "conversation)",
        ["category", "n", "cross-validated", reference],
        key="crossval_by_category",
    )
    for c in [*shown, None]:
        rs = [r for r in answerable if c is None or r.question.category == c]
        held.rows.append(
            [
                "overall (answerable)" if c is None else c,
                len(rs),
                mean(_recall(r.sweep[chosen[r.question.conversation]], r) for r in rs),
                mean(recall_at_k(r.graphsvc.ranked, r.question.evidence, K) for r in rs),
            ]
        )
    return [sweep, folds, held]


__all__ = [
    "CrossValidation",
    "Fold",
    "cross_validate",
    "crossval_tables",
    "leave_one_out",
    "sweep_labels",
]
