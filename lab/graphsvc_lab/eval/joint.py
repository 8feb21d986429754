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
    labels: dict[str, None] = {}
    seen: dict[str, set[str]] = {}
    for run in runs:
        dataset = run.name
        fixed = _fixed(run)
        with (run / "questions.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                question = row["question"]
                if not question["answerable"] or not question["evidence"]:
                    continue
                conversation = f"{dataset}/{question['conversation']}"
                swept = {f"{fixed}{label}": point for label, point in row.get("sweep", {}).items()}
                systems = {**swept, **{b: row[b] for b in BASELINES if b in row}}
                labels.update(dict.fromkeys(swept))
                # A dataset's baselines are counted once, however many of its runs are given.
                known = seen.setdefault(dataset, set())
                first = question["qid"] not in known
                known.add(question["qid"])
                for label, point in systems.items():
                    if label in BASELINES and not first:
                        continue
                    value = _recall(point["evidence_ranks"])
                    by_dataset = recalls.setdefault(label, {}).setdefault(dataset, {})
                    by_dataset.setdefault(conversation, []).append(value)
    # Every combination must have been run on every dataset.
    datasets = {run.name for run in runs}
    complete = [label for label in labels if set(recalls.get(label, {})) == datasets]
    return recalls, complete


def _fixed(run: Path) -> str:
    """What a run set with one value per ``--tune`` name (its report's ``tuned`` figures), as a
    label prefix (``"fusion_mode=zscore "``), so that the combinations of runs made with other
    fixed settings stay apart when their runs are merged."""
    path = run / "figures.json"
    if not path.is_file():
        return ""
    tuned = json.loads(path.read_text(encoding="utf-8")).get("tuned", {})
    return "".join(f"{name}={_shown(value)} " for name, value in sorted(tuned.items()))


def _shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


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


def family_of(label: str, name: str) -> str:
    """The value of ``name`` in a combination's label (``"A=1 B=x"``), or ``"(not swept)"``."""
    for part in label.split(" "):
        key, _, value = part.partition("=")
        if key == name:
            return value
    return "(not swept)"


def _families(recalls: Recalls, labels: list[str], datasets: list[str], name: str) -> None:
    """Leave-one-dataset-out within each family: chosen on the other datasets among the
    family's combinations, measured on the held-out one; a family's figure is the mean of its
    held-out recalls (how well its best setting carries to a dataset it was not chosen on)."""
    groups: dict[str, list[str]] = {}
    for label in labels:
        groups.setdefault(family_of(label, name), []).append(label)
    click.echo(f"### Leave-one-dataset-out by {name} (answerable R@5)\n")
    heads = " | ".join(f"{d} held out (chosen)" for d in datasets)
    click.echo(f"| {name} | {heads} | mean held out |")
    click.echo("|---|" + "---|" * len(datasets) + "---:|")
    for value, members in groups.items():
        cells, held_values = [], []
        for held in datasets:
            others = {
                label: {d: c for d, c in recalls[label].items() if d != held} for label in members
            }
            chosen = max(members, key=lambda label: (_score(others[label]), -members.index(label)))
            result = _pooled(recalls[chosen][held])
            held_values.append(result)
            cells.append(f"{result:.3f} ({chosen})")
        click.echo(f"| {value} | " + " | ".join(cells) + f" | {mean(held_values):.3f} |")
    click.echo("")


@click.command("joint")
@click.argument("runs", nargs=-1, required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--family",
    default=None,
    metavar="NAME",
    help="Also hold out each dataset within each family of combinations: those with the same "
    "value of the swept NAME (FUSION_MODE: rank fusion, z-scores, min-max, ...).",
)
def joint(runs: tuple[Path, ...], family: str | None) -> None:
    """Choose one swept combination across RUNS (report folders of `graphsvc eval locomo|beam
    --tune ...`, named by dataset; several runs of one dataset are merged) by
    leave-one-dataset-out and joint leave-one-conversation-out."""
    recalls, labels = load(runs)
    if not labels:
        raise click.UsageError("the runs hold no swept combinations (run them with --tune)")
    datasets = list(dict.fromkeys(run.name for run in runs))
    if family is not None:
        _families(recalls, labels, datasets, family)
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
