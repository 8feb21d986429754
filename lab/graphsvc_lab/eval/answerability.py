"""``graphsvc eval answerability``: fit the answerability model and choose the abstention
thresholds, from the ``questions.jsonl`` of ``graphsvc eval locomo|beam`` runs.

A bundle's ``topScore`` is a logistic model of its answer evidence (``answerEvidence``:
coverage, unseen, bm25, cosine, agreement; :mod:`graphsvc.recall.answerability`). The
coefficients are fitted here, once per encoder (and once for lexical recall), on every
question of the runs given (unanswerable questions as the positives of "abstain"), and the
service only evaluates the formula: they are printed as a registry entry's ``Answerability``.

- ``fit RUNS...``: the coefficients, fitted with scikit-learn's L2-regularised logistic
  regression (every question weighing the same, or ``--weigh datasets``), and how well they
  separate unanswerable questions held out: leave-one-dataset-out (fitted on the other
  datasets) and joint leave-one-conversation-out (fitted without the conversation; AUROC over
  the pooled held-out probabilities, and the spread of the per-fold ones), beside the model
  without each feature in turn. The regularisation strength is chosen by the joint
  leave-one-conversation-out AUROC among a few values.
- ``thresholds RUNS...``: for runs made with the fitted model (at one ``--stage``), the highest
  threshold on a grid whose false abstention (answerable questions skipped) stays within the cap
  on every dataset, with each dataset's figures there.

Each run folder is named by its dataset (``.../locomo``, ``.../beam``), as for
``graphsvc eval joint``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np

from graphsvc_lab.eval.metrics import auroc, mean, stdev

FEATURES = ("coverage", "unseen", "bm25", "cosine", "agreement", "attribution", "margin")
LEXICAL_FEATURES = ("coverage", "unseen", "bm25", "attribution")
STRENGTHS = (0.3, 1.0, 3.0, 10.0)
MAX_FALSE_ABSTENTION = 0.05
# What a foreign question weighs beside a dataset's own: on a grid of 0, 0.1, 0.3 and 1, the most
# that keeps LoCoMo's held-out AUROC at least at its level without them: 0.1 for the default
# encoder's model, 0.3 for the lexical one (--foreign-weight; docs/quality.md).
FOREIGN_WEIGHT = 0.1
GRID = tuple(round(0.01 * i, 2) for i in range(1, 100))


@dataclass(frozen=True)
class Row:
    """One question of one run: its dataset and conversation, whether it is answerable, its
    answer evidence and the topScore the run's service gave it."""

    dataset: str
    conversation: str
    answerable: bool
    features: Mapping[str, float]
    top_score: float
    #: A question of another conversation asked of this one (``--foreign``): unanswerable.
    foreign: bool = False


def load_rows(runs: Sequence[Path], system: str | None = None) -> tuple[list[Row], str]:
    """The questions of ``runs`` as seen by ``system`` (default: hybrid when the runs have it,
    else lexical), and the system read."""
    rows: list[Row] = []
    chosen = system
    for run in runs:
        with (run / "questions.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if chosen is None:
                    chosen = "hybrid" if "hybrid" in row else "lexical"
                outcome = row.get(chosen)
                if outcome is None:
                    raise click.UsageError(f"{run}: the run has no {chosen!r} system")
                question = row["question"]
                rows.append(
                    Row(
                        run.name,
                        f"{run.name}/{question['conversation']}",
                        bool(question["answerable"]),
                        {k: float(v) for k, v in outcome.get("answer_evidence", {}).items()},
                        float(outcome["top_score"]),
                        bool(question.get("foreign", False)),
                    )
                )
    return rows, chosen or "lexical"


def _matrix(
    rows: Sequence[Row], features: Sequence[str], by_dataset: bool, foreign_weight: float
) -> tuple[Any, Any, Any]:
    """Features, labels (1: unanswerable, "abstain") and sample weights: every question the
    same, or with ``by_dataset`` each dataset the same in total; a foreign question weighs
    ``foreign_weight`` times one of its dataset's own."""
    x = np.array([[r.features.get(f, 0.0) for f in features] for r in rows], dtype=np.float64)
    y = np.array([0 if r.answerable else 1 for r in rows])
    count: dict[str, int] = {}
    for r in rows:
        count[r.dataset] = count.get(r.dataset, 0) + 1
    weights = []
    for r in rows:
        weight = len(rows) / (len(count) * count[r.dataset]) if by_dataset else 1.0
        weights.append(weight * (foreign_weight if r.foreign else 1.0))
    return x, y, np.array(weights)


@dataclass(frozen=True)
class Fitted:
    """A fitted model in the service's terms: ``z = intercept + sum(coef * feature)`` is the
    log-odds that memory holds the answer (so the signs are those of "answerable")."""

    features: tuple[str, ...]
    intercept: float
    coefficients: tuple[float, ...]

    def probability(self, row: Row) -> float:
        z = self.intercept + sum(
            c * row.features.get(f, 0.0)
            for f, c in zip(self.features, self.coefficients, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def fit(
    rows: Sequence[Row],
    features: Sequence[str],
    strength: float,
    by_dataset: bool = False,
    foreign_weight: float = 1.0,
) -> Fitted:
    """A logistic regression of "answerable" on ``features`` (L2, inverse strength
    ``strength``), every question weighing the same (``by_dataset``: each dataset)."""
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    x, y, w = _matrix(rows, features, by_dataset, foreign_weight)
    model = LogisticRegression(C=strength, max_iter=10_000)
    # Fitted on "unanswerable"; the service's z is the log-odds of "answerable": negate.
    model.fit(x, y, sample_weight=w)
    return Fitted(
        tuple(features),
        -float(model.intercept_[0]),
        tuple(-float(c) for c in model.coef_[0]),
    )


def _auroc(rows: Sequence[Row], p: Mapping[int, float], foreign: bool = False) -> float:
    """AUROC of "abstain" (1 - probability) against the answerable questions, with the dataset's
    own unanswerable questions as positives (``foreign``: the foreign ones instead)."""
    pos = [1.0 - p[i] for i, r in enumerate(rows) if not r.answerable and r.foreign == foreign]
    neg = [1.0 - p[i] for i, r in enumerate(rows) if r.answerable]
    return auroc(pos, neg)


@dataclass(frozen=True)
class HeldOut:
    """Held-out probabilities of every question, and per-fold AUROCs by dataset."""

    probability: dict[int, float]
    fold_aurocs: dict[str, list[float]]


def leave_one_conversation_out(
    rows: Sequence[Row],
    features: Sequence[str],
    strength: float,
    by_dataset: bool = False,
    foreign_weight: float = 1.0,
) -> HeldOut:
    """Each conversation held out in turn, the model fitted on every other question."""
    p: dict[int, float] = {}
    folds: dict[str, list[float]] = {}
    for held in sorted({r.conversation for r in rows}):
        train = [r for r in rows if r.conversation != held]
        model = fit(train, features, strength, by_dataset, foreign_weight)
        test = [i for i, r in enumerate(rows) if r.conversation == held]
        for i in test:
            p[i] = model.probability(rows[i])
        subset = [rows[i] for i in test]
        value = _auroc(subset, {k: p[i] for k, i in enumerate(test)})
        if not math.isnan(value):
            folds.setdefault(rows[test[0]].dataset, []).append(value)
    return HeldOut(p, folds)


def leave_one_dataset_out(
    rows: Sequence[Row],
    features: Sequence[str],
    strength: float,
    by_dataset: bool = False,
    foreign_weight: float = 1.0,
) -> dict[str, float]:
    """Each dataset held out, the model fitted on the others: its AUROC there."""
    out: dict[str, float] = {}
    datasets = sorted({r.dataset for r in rows})
    if len(datasets) < 2:
        return out
    for held in datasets:
        train = [r for r in rows if r.dataset != held]
        model = fit(train, features, strength, by_dataset, foreign_weight)
        test = [r for r in rows if r.dataset == held]
        out[held] = _auroc(test, {i: model.probability(r) for i, r in enumerate(test)})
    return out


def _by_dataset(
    rows: Sequence[Row], p: Mapping[int, float], foreign: bool = False
) -> dict[str, float]:
    out = {}
    for dataset in sorted({r.dataset for r in rows}):
        idx = [i for i, r in enumerate(rows) if r.dataset == dataset]
        mine = [rows[i] for i in idx]
        if foreign and not any(r.foreign for r in mine):
            continue
        out[dataset] = _auroc(mine, {k: p[i] for k, i in enumerate(idx)}, foreign)
    return out


def threshold_for(
    rows: Sequence[Row], cap: float = MAX_FALSE_ABSTENTION, grid: Sequence[float] = GRID
) -> float:
    """The highest threshold of ``grid`` whose false abstention (answerable questions with
    topScore below it) is at most ``cap`` on every dataset (0 when none is)."""
    chosen = 0.0
    datasets = sorted({r.dataset for r in rows})
    for t in grid:
        if all(
            mean(float(r.top_score < t) for r in rows if r.dataset == d and r.answerable) <= cap
            for d in datasets
        ):
            chosen = t
    return chosen


@click.group("answerability")
def answerability() -> None:
    """Fit the answerability model (topScore) and choose abstention thresholds from runs of
    `graphsvc eval locomo|beam` (folders named by dataset)."""


_runs = click.argument(
    "runs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path)
)
_system = click.option(
    "--system",
    type=click.Choice(["hybrid", "lexical"]),
    default=None,
    help="Which graphsvc system's evidence to read (default: hybrid when the runs have it).",
)


@answerability.command("fit")
@_runs
@_system
@click.option(
    "--weigh",
    type=click.Choice(["questions", "datasets"]),
    default="questions",
    show_default=True,
    help="Every question weighs the same in the fit, or every dataset in total.",
)
@click.option(
    "--foreign-weight",
    type=click.FloatRange(0.0),
    default=FOREIGN_WEIGHT,
    show_default=True,
    help="What a foreign question (eval --foreign) weighs beside one of its dataset's own.",
)
def fit_command(
    runs: tuple[Path, ...], system: str | None, weigh: str, foreign_weight: float
) -> None:
    """Fit the coefficients on every question of RUNS, held out two ways."""
    rows, chosen = load_rows(runs, system)
    features = FEATURES if chosen == "hybrid" else LEXICAL_FEATURES
    by_dataset = weigh == "datasets"
    scores = {}
    for strength in STRENGTHS:
        held = leave_one_conversation_out(rows, features, strength, by_dataset, foreign_weight)
        per = _by_dataset(rows, held.probability)
        scores[strength] = (mean(per.values()), per)
    strength = max(STRENGTHS, key=lambda s: (scores[s][0], -s))
    click.echo(f"### Answerability of {chosen} recall ({len(rows)} questions)\n")
    click.echo("Regularisation (inverse strength C) by joint leave-one-conversation-out AUROC:\n")
    for s in STRENGTHS:
        shown = ", ".join(f"{d} {v:.3f}" for d, v in scores[s][1].items())
        chosen_mark = " <- chosen" if s == strength else ""
        click.echo(f"- C {s:g}: mean {scores[s][0]:.3f} ({shown}){chosen_mark}")
    click.echo(
        "\n| model | in-sample AUROC | leave-one-dataset-out | joint leave-one-conversation-out "
        "(fold std) | foreign questions, held out |"
    )
    click.echo("|---|---|---|---|---|")
    variants: list[tuple[str, tuple[str, ...]]] = [("all features", tuple(features))]
    variants += [(f"without {f}", tuple(g for g in features if g != f)) for f in features]
    for label, used in variants:
        model = fit(rows, used, strength, by_dataset, foreign_weight)
        inside = _by_dataset(rows, {i: model.probability(r) for i, r in enumerate(rows)})
        lodo = leave_one_dataset_out(rows, used, strength, by_dataset, foreign_weight)
        held = leave_one_conversation_out(rows, used, strength, by_dataset, foreign_weight)
        per = _by_dataset(rows, held.probability)
        cells = [
            ", ".join(f"{d} {v:.3f}" for d, v in inside.items()),
            ", ".join(f"{d} {v:.3f}" for d, v in lodo.items()) or "n/a",
            ", ".join(
                f"{d} {v:.3f} ({stdev(held.fold_aurocs.get(d, [])):.3f})" for d, v in per.items()
            ),
            ", ".join(f"{d} {v:.3f}" for d, v in _by_dataset(rows, held.probability, True).items())
            or "n/a",
        ]
        click.echo(f"| {label} | " + " | ".join(cells) + " |")
    final = fit(rows, features, strength, by_dataset, foreign_weight)
    click.echo("\nCoefficients (fitted on every question; the registry entry's Answerability):\n")
    args = ", ".join(
        f"{f}={c:.3f}" for f, c in zip(final.features, final.coefficients, strict=True)
    )
    click.echo(f"    Answerability(intercept={final.intercept:.3f}, {args})")


@answerability.command("thresholds")
@_runs
@_system
@click.option(
    "--cap",
    type=click.FloatRange(0.0, 1.0),
    default=MAX_FALSE_ABSTENTION,
    show_default=True,
    help="Most false abstention allowed on each dataset.",
)
def thresholds_command(runs: tuple[Path, ...], system: str | None, cap: float) -> None:
    """The highest topScore threshold whose false abstention stays within --cap on every
    dataset of RUNS (runs made with the fitted model, at one stage)."""
    rows, chosen = load_rows(runs, system)
    t = threshold_for(rows, cap)
    click.echo(f"threshold {t:g} ({chosen}; false abstention <= {cap:g} on every dataset)\n")
    click.echo(
        "| dataset | AUROC | false abstention | unanswerable abstained | foreign abstained "
        "| next step up: false abstention |"
    )
    click.echo("|---|---:|---:|---:|---:|---|")
    step = round(t + 0.01, 2)
    for dataset in sorted({r.dataset for r in rows}):
        mine = [r for r in rows if r.dataset == dataset]
        value = _auroc(mine, {i: r.top_score for i, r in enumerate(mine)})
        false = mean(float(r.top_score < t) for r in mine if r.answerable)
        caught = mean(float(r.top_score < t) for r in mine if not r.answerable and not r.foreign)
        foreign = mean(float(r.top_score < t) for r in mine if r.foreign)
        nxt = mean(float(r.top_score < step) for r in mine if r.answerable)
        click.echo(
            f"| {dataset} | {value:.3f} | {false:.3f} | {caught:.3f} | {foreign:.3f} "
            f"| {step:g}: {nxt:.3f} |"
        )


__all__ = [
    "FEATURES",
    "Fitted",
    "Row",
    "answerability",
    "fit",
    "leave_one_conversation_out",
    "leave_one_dataset_out",
    "load_rows",
    "threshold_for",
]
