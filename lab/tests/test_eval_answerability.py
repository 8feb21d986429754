"""Fitting answerability and choosing thresholds (lab/graphsvc_lab/eval/answerability.py), on
hand-made questions: the fit's formula is the service's, the held-out figures never see the
held-out conversation, and the threshold keeps false abstention within its cap on every
dataset."""

from __future__ import annotations

import json
import random
from pathlib import Path

from click.testing import CliRunner

from graphsvc.embedding.registry import Answerability
from graphsvc.model import AnswerEvidence
from graphsvc.recall.answerability import probability
from graphsvc_lab.eval.answerability import (
    Row,
    answerability,
    fit,
    leave_one_conversation_out,
    threshold_for,
)


def rows(seed: int = 3) -> list[Row]:
    """Two datasets of four conversations each: answerable questions have more coverage and a
    higher cosine, with noise; every fifth question is unanswerable."""
    rng = random.Random(seed)
    out = []
    for dataset in ("alpha", "bravo"):
        for conversation in range(4):
            for n in range(40):
                answerable = n % 5 != 0
                lift = 0.3 if answerable else 0.0
                features = {
                    "coverage": min(1.0, rng.random() * 0.6 + lift),
                    "cosine": min(1.0, rng.random() * 0.5 + lift),
                    "unseen": rng.random() * 0.2,
                }
                out.append(
                    Row(dataset, f"{dataset}/{conversation}", answerable, features, rng.random())
                )
    return out


def test_the_fit_is_the_service_s_formula() -> None:
    data = rows()
    model = fit(data, ("coverage", "cosine", "unseen"), 1.0)
    assert model.coefficients[0] > 0 and model.coefficients[1] > 0  # more of either: answerable
    service = Answerability(
        intercept=model.intercept,
        coverage=model.coefficients[0],
        cosine=model.coefficients[1],
        unseen=model.coefficients[2],
    )
    for row in data[:20]:
        evidence = AnswerEvidence(**row.features)
        assert abs(probability(evidence, service) - model.probability(row)) < 1e-6


def test_held_out_probabilities_come_from_fits_without_their_conversation() -> None:
    data = rows()
    held = leave_one_conversation_out(data, ("coverage", "cosine"), 1.0)
    assert set(held.probability) == set(range(len(data)))
    assert {d: len(v) for d, v in held.fold_aurocs.items()} == {"alpha": 4, "bravo": 4}
    # Changing one conversation's labels never moves its own held-out probabilities.
    flipped = [
        Row(r.dataset, r.conversation, not r.answerable, r.features, r.top_score)
        if r.conversation == "alpha/0"
        else r
        for r in data
    ]
    again = leave_one_conversation_out(flipped, ("coverage", "cosine"), 1.0)
    own = [i for i, r in enumerate(data) if r.conversation == "alpha/0"]
    assert [again.probability[i] for i in own] == [held.probability[i] for i in own]


def test_the_threshold_keeps_false_abstention_within_the_cap_everywhere() -> None:
    data = rows()
    t = threshold_for(data, 0.05)
    for dataset in ("alpha", "bravo"):
        answerable = [r for r in data if r.dataset == dataset and r.answerable]
        assert sum(r.top_score < t for r in answerable) / len(answerable) <= 0.05
    higher = round(t + 0.01, 2)
    assert any(
        sum(r.top_score < higher for r in data if r.dataset == d and r.answerable)
        / sum(1 for r in data if r.dataset == d and r.answerable)
        > 0.05
        for d in ("alpha", "bravo")
    )


def test_the_commands_read_runs_and_print_the_registry_entry(tmp_path: Path) -> None:
    data = rows()
    for dataset in ("alpha", "bravo"):
        run = tmp_path / dataset
        run.mkdir()
        with (run / "questions.jsonl").open("w") as handle:
            for r in data:
                if r.dataset != dataset:
                    continue
                question = {
                    "conversation": r.conversation.split("/")[1],
                    "answerable": r.answerable,
                    "foreign": False,
                }
                system = {"answer_evidence": dict(r.features), "top_score": r.top_score}
                handle.write(json.dumps({"question": question, "lexical": system}) + "\n")
    runs = [str(tmp_path / "alpha"), str(tmp_path / "bravo")]
    fitted = CliRunner().invoke(answerability, ["fit", *runs])
    assert fitted.exit_code == 0, fitted.output
    assert "Answerability(intercept=" in fitted.output
    assert "leave-one-dataset-out" in fitted.output
    chosen = CliRunner().invoke(answerability, ["thresholds", *runs])
    assert chosen.exit_code == 0, chosen.output
    assert f"threshold {threshold_for(data):g}" in chosen.output
