"""``graphsvc fingerprint``: the bytes of many reads, to compare a store or a checkout with another.

A renovation promises "no change of behaviour". This command loads fixed data into a fresh
namespace of the configured store (the embedded one in a temporary folder, or Neo4j when
``GRAPHSVC_NEO4J_URI`` is set), asks bundles at every stage and reconstructs at several depths, and
prints one sha256 per section: the same figures before and after a change (and on both stores) mean
the same bytes out. ``--out`` keeps the reads themselves, to diff when a figure differs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from graphsvc.cli.commands import demo_lines
from graphsvc.cli.common import opened
from graphsvc.cli.embed import vectors_after_write
from graphsvc.ingest import ingest, parse_jsonl
from graphsvc.service import MemoryService
from graphsvc_lab.datasets import eval_data_root, load_locomo, locomo_rows

STAGES = ("default", "recent", "exact")
DEMO_QUESTIONS = (
    "Why did checkout fail?",
    "In what order did the outage unfold?",
    "Who fixed the payment service?",
    "What is the capital of Peru?",
)


def _reads(service: MemoryService, ns: str, questions: list[str]) -> dict[str, Any]:
    bundles = [
        service.bundle(ns, q, budget_tokens=budget, stage=stage).to_json_dict()
        for q in questions
        for stage in STAGES
        for budget in (60, 400)
    ]
    beliefs = []
    for q in questions:
        for k, depth in ((1, 0), (3, 2), (8, 4)):
            belief = service.reconstruct(ns, q, k=k, depth=depth).to_json_dict()
            for memory in belief["memories"]:
                memory.pop("recordedAt")  # when this run wrote it: data, not a result
            beliefs.append(belief)
    return {"bundles": bundles, "beliefs": beliefs}


def _load(service: MemoryService, ns: str, lines: list[str], name: str) -> None:
    ingest(service, ns, parse_jsonl(lines, name), name=name, progress=False)
    vectors_after_write(service, ns, wait=True, show=False, quiet=True)


def _locomo(
    conversation: dict[str, Any], links: bool, questions: int
) -> tuple[list[str], list[str]]:
    rows = [
        r
        for r in locomo_rows(conversation, conversation["sample_id"], "fp")
        if links or r["type"] == "memory"
    ]
    asked = [str(qa["question"]) for qa in conversation["qa"][:questions]]
    return [json.dumps(r) for r in rows], asked


def _sections(service: MemoryService, base: str, questions: int) -> Iterator[tuple[str, Any]]:
    _load(service, f"{base}-demo", demo_lines(), "demo.jsonl")
    yield "demo", _reads(service, f"{base}-demo", list(DEMO_QUESTIONS))
    conversation = load_locomo(eval_data_root() / "locomo" / "locomo_dev.json")[0]
    for links in (True, False):
        lines, asked = _locomo(conversation, links, questions)
        ns = f"{base}-locomo-{'links' if links else 'plain'}"
        _load(service, ns, lines, "locomo")
        yield f"locomo {'with' if links else 'without'} links", _reads(service, ns, asked)


@click.command()
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Keep the reads here as JSON."
)
@click.option(
    "--questions",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="LoCoMo questions asked.",
)
@click.option(
    "--namespace",
    default="fingerprint",
    show_default=True,
    help="Prefix of the namespaces written.",
)
def fingerprint(out: Path | None, questions: int, namespace: str) -> None:
    """Print a sha256 per section of many reads over fixed data, to compare stores or checkouts.

    The data: the demo, one LoCoMo conversation with and without links; the reads: bundles at
    three stages and two budgets, beliefs at three depths."""
    folder = Path(tempfile.mkdtemp(prefix="graphsvc-fingerprint-"))
    kept: dict[str, Any] = {}
    try:
        with opened(folder, None) as (service, _):
            for name, reads in _sections(service, namespace, questions):
                raw = json.dumps(reads, sort_keys=True, ensure_ascii=False).encode()
                kept[name] = reads
                count = len(reads["bundles"]) + len(reads["beliefs"])
                click.echo(f"{hashlib.sha256(raw).hexdigest()[:16]}  {count:4d} reads  {name}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if out is not None:
        out.write_text(json.dumps(kept, sort_keys=True, ensure_ascii=False, indent=1))
