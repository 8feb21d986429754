"""``graphsvc bench-erase``: an erase of half a namespace, with reads asked all the while.

Builds the synthetic corpus of ``graphsvc bench`` (``--memories``, its links, the same seed) in a
fresh embedded store (or, with ``GRAPHSVC_NEO4J_URI`` set, a fresh Neo4j namespace), times
bundles on it while nothing else runs (idle), then erases every memory whose ``occurredAt`` is
before the middle memory's (half the corpus, with its links) the way ``graphsvc erase`` does:
calling erase again while it answers ``complete: false`` (each call stops at
``GRAPHSVC_ERASE_TIME_BUDGET``). Meanwhile another thread asks bundles, one after another, and
each one's answer time is kept. Prints the erase's time, calls and slices (the receipts its
progress reports), and the reads' p50, p95, p99 and longest during the erase beside idle; exits
0 either way (it is a measurement). Target: the reads' p95 during the erase within
:data:`READ_P95_TARGET` seconds.

The store erases in slices of ``GRAPHSVC_ERASE_BATCH`` memories, each logged and applied whole
while reads wait (embedded) or one transaction (Neo4j); reads are answered between slices.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from graphsvc.bootstrap import make_store
from graphsvc.cli.common import make_settings
from graphsvc.errors import GraphsvcError
from graphsvc.model import EraseReceipt
from graphsvc.service import MemoryService
from graphsvc_lab.bench import _progress, ingest_corpus, make_corpus
from graphsvc_lab.eval.metrics import percentile

#: Seconds the reads' p95 during the erase may take (the issue's bound).
READ_P95_TARGET = 1.0


def _reads(service: MemoryService, namespace: str, queries: list[str], stop: threading.Event,
           times: list[float]) -> None:  # fmt: skip
    """Ask bundles one after another until ``stop``; keep each answer's time."""
    index = 0
    while not stop.is_set():
        began = time.perf_counter()
        service.bundle(namespace, queries[index % len(queries)])
        times.append(time.perf_counter() - began)
        index += 1


def _summary(times: list[float]) -> dict[str, float]:
    ms = [t * 1000 for t in times]
    return {
        "reads": len(ms),
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(max(ms, default=float("nan")), 2),
    }


@click.command("bench-erase")
@click.option("--memories", type=click.IntRange(min=100), default=1_000_000, show_default=True,
              help="Memories in the corpus; the erase removes half of them.")  # fmt: skip
@click.option("--idle-seconds", type=click.FloatRange(min=1), default=10.0, show_default=True,
              help="How long bundles are timed before the erase.")  # fmt: skip
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the corpus.")
@click.option("--batch", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Memories per write while the corpus is loaded.")  # fmt: skip
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Also write the figures to this JSON file.")  # fmt: skip
def bench_erase(
    memories: int, idle_seconds: float, seed: int, batch: int, json_path: Path | None
) -> None:
    """Erase half of a namespace with bundles asked all the while; time both.

    Uses Neo4j when GRAPHSVC_NEO4J_URI is set (a fresh namespace, erased afterwards), the
    embedded store otherwise (a temporary folder). GRAPHSVC_ERASE_BATCH and
    GRAPHSVC_ERASE_TIME_BUDGET apply as they do to `graphsvc erase`.
    """
    root = Path(tempfile.mkdtemp(prefix="graphsvc-bench-erase-"))
    settings = make_settings(root, None, embed="off", max_memories_per_namespace=max(memories, 1))
    store = make_store(settings)
    namespace = f"erase{seed}_{os.getpid()}"
    figures: dict[str, Any] = {
        "store": store.kind,
        "memories": memories,
        "erase_batch": settings.erase_batch,
        "erase_time_budget_s": settings.erase_time_budget,
        "load_average_start": round(os.getloadavg()[0], 2),
    }
    try:
        store.open()
        service = MemoryService(store, settings)
        with _progress(memories, "corpus", "mem") as bar:
            corpus = make_corpus(seed, memories, 200, 30_000, 1.0, bar.update)
        began = time.perf_counter()
        ingest = ingest_corpus(service, namespace, corpus, batch)
        figures["load_s"] = round(time.perf_counter() - began, 1)
        figures["links"] = ingest.links
        queries = [q.text for q in corpus.queries]
        middle = corpus.memories[memories // 2].occurred_at
        assert isinstance(middle, datetime)
        del corpus, ingest

        stop = threading.Event()
        idle: list[float] = []
        reader = threading.Thread(target=_reads, args=(service, namespace, queries, stop, idle))
        reader.start()
        time.sleep(idle_seconds)
        stop.set()
        reader.join()

        during: list[float] = []
        stop = threading.Event()
        reader = threading.Thread(target=_reads, args=(service, namespace, queries, stop, during))
        slices: list[EraseReceipt] = []
        calls = erased = 0
        reader.start()
        began = time.perf_counter()
        try:
            while True:
                calls += 1
                receipt = service.erase(namespace, until=middle, progress=slices.append)
                erased += receipt.memories
                if receipt.complete:
                    break
        finally:
            erase_s = time.perf_counter() - began
            stop.set()
            reader.join()
        figures.update(
            {
                "erased": erased,
                "left": service.stats(namespace).memories,
                "erase_s": round(erase_s, 1),
                "erase_calls": calls,
                "erase_slices": len(slices),
                "idle": _summary(idle),
                "during_erase": _summary(during),
                "load_average_end": round(os.getloadavg()[0], 2),
            }
        )
        if store.kind == "neo4j":
            service.erase(namespace, everything=True)
    except GraphsvcError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()
        shutil.rmtree(root, ignore_errors=True)
    during_p95 = figures["during_erase"]["p95_ms"] / 1000
    met = during_p95 <= READ_P95_TARGET
    click.echo(f"graphsvc bench-erase: {store.kind} store, {memories} memories")
    for key, value in figures.items():
        click.echo(f"  {key:24} {value}")
    click.echo(
        f"target: reads during the erase p95 <= {READ_P95_TARGET:g} s: "
        + ("met" if met else f"MISSED ({during_p95:.3f} s)")
    )
    if json_path is not None:
        json_path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        click.echo(f"figures written to {json_path}")


__all__ = ["READ_P95_TARGET", "bench_erase"]
