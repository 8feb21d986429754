"""``graphsvc eval joint``: one fusion setting chosen across datasets, held out two ways.

It reads the ``questions.jsonl`` of several ``graphsvc eval ... --tune`` runs (one per dataset, the
same swept combinations in each) and reports, on answerable recall@5:

- leave-one-dataset-out: each dataset held out, the combination chosen by the mean over the other
  datasets (each weighing the same), measured on the held-out one;
- joint leave-one-conversation-out: each conversation held out, the combination chosen by the mean
  over the datasets (the held-out conversation's own dataset without it), measured on it;

beside each dataset's bm25, dense-only and lexical graphsvc recall, so a reader sees whether the
fused ranking beats both of its parts on every dataset.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import click

from graphsvc_lab.eval.metrics import mean, stdev

K = 5
BASELINES = ("bm25", "dense", "lexical")
# recall -> dataset -> conversation -> one value per answerable question
Recalls = dict[str, dict[str, dict[str, list[float]]]]


def _recall(ranks: Sequence[float | None]) -> float:
    if not ranks:
        return 0.0
    return sum(1.0 for r in ranks if r is not None and r <= K) / len(ranks)


def load(runs: Sequence[Path]) -> tuple[Recalls, list[str]]:
    """Per combination (and baseline): dataset -> conversation -> recall@5 of each answerable
    question; and the swept combinations in the order of the first run."""
    recalls: Recalls = {}
    labels: list[str] = []
    for run in runs:
        dataset = run.name
        with (run / "questions.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                question = row["question"]
                if not question["answerable"] or not question["evidence"]:
                    continue
                conversation = f"{dataset}/{question['conversation']}"
                systems = {**row.get("sweep", {}), **{b: row[b] for b in BASELINES if b in row}}
                if not labels:
                    labels = list(row.get("sweep", {}))
                for label, point in systems.items():
                    value = _recall(point["evidence_ranks"])
                    by_dataset = recalls.setdefault(label, {}).setdefault(dataset, {})
                    by_dataset.setdefault(conversation, []).append(value)
    return recalls, labels


def _score(values: dict[str, dict[str, list[float]]], skip: str | None = None) -> float:
    """The mean over datasets of each dataset's mean recall, without conversation ``skip``."""
    per_dataset = []
    for conversations in values.values():
        kept = [v for c, vs in conversations.items() if c != skip for v in vs]
        if kept:
            per_dataset.append(mean(kept))
    return mean(per_dataset)


def _pooled(values: dict[str, list[float]]) -> float:
    return mean(v for vs in values.values() for v in vs)


@click.command("joint")
@click.argument("runs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
def joint(runs: tuple[Path, ...]) -> None:
    """Choose one swept combination across RUNS (report folders of `graphsvc eval locomo|beam
    --tune ...`, named by dataset) by leave-one-dataset-out and joint leave-one-conversation-out."""
    recalls, labels = load(runs)
    if not labels:
        raise click.UsageError("the runs hold no swept combinations (run them with --tune)")
    datasets = [run.name for run in runs]
    click.echo("### Leave-one-dataset-out (answerable R@5)\n")
    click.echo("| held out | chosen on the others | held-out R@5 | " + " | ".join(BASELINES) + " |")
    click.echo("|---|---|---:|" + "---:|" * len(BASELINES))
    for held in datasets:
        others = {label: {d: c for d, c in recalls[label].items() if d != held} for label in labels}
        chosen = max(labels, key=lambda label: (_score(others[label]), -labels.index(label)))
        bases = " | ".join(f"{_pooled(recalls[b][held]):.3f}" for b in BASELINES if b in recalls)
        click.echo(f"| {held} | {chosen} | {_pooled(recalls[chosen][held]):.3f} | {bases} |")
    click.echo("\n### Joint leave-one-conversation-out (answerable R@5)\n")
    held_out: dict[str, list[float]] = {d: [] for d in datasets}
    fold_means: dict[str, list[float]] = {d: [] for d in datasets}
    chosen_count: dict[str, int] = {}
    for held_dataset in datasets:
        for conversation in recalls[labels[0]][held_dataset]:

            def fit(label: str, skip: str = conversation) -> tuple[float, int]:
                return (_score(recalls[label], skip=skip), -labels.index(label))

            chosen = max(labels, key=fit)
            chosen_count[chosen] = chosen_count.get(chosen, 0) + 1
            values = recalls[chosen][held_dataset][conversation]
            held_out[held_dataset] += values
            fold_means[held_dataset].append(mean(values))
    click.echo("| dataset | held-out R@5 | fold std | folds |\n|---|---:|---:|---:|")
    for dataset in datasets:
        click.echo(
            f"| {dataset} | {mean(held_out[dataset]):.3f} | {stdev(fold_means[dataset]):.3f} "
            f"| {len(fold_means[dataset])} |"
        )
    click.echo("\nchosen: " + ", ".join(f"{c} ({n} folds)" for c, n in chosen_count.items()))
    click.echo("\n### In-sample mean over datasets, best first\n")
    ranked = sorted(labels, key=lambda label: -_score(recalls[label]))
    for label in ranked[:5]:
        per = ", ".join(f"{d} {_pooled(recalls[label][d]):.3f}" for d in datasets)
        click.echo(f"- {label}: mean {_score(recalls[label]):.3f} ({per})")
