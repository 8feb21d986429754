"""``graphsvc bench-http`` as a program, on both stores: a tiny run against real ``graphsvc serve``
processes prints a row per worker count and operation, writes the figures to ``--json``, and
leaves nothing behind in the store (``--keep`` keeps it). No timing is asserted."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from lab_support import lab_cli

from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from tests.helpers import STORES
from tests.neo4j_server import neo4j_store_factory

pytestmark = pytest.mark.slow

TINY = [
    "--memories",
    "40",
    "--requests",
    "20",
    "--seconds",
    "5",
    "--warmup",
    "4",
    "--clients",
    "4",
    "--operations",
    "bundle",
]


@pytest.fixture(params=STORES)
def store_kind(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Callable[[], Store] | None]]:
    """The store the bench runs on, and (Neo4j) a factory of stores to look at what it left."""
    monkeypatch.setenv("GRAPHSVC_FSYNC", "false")
    if request.param == "mirror":
        monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
        yield "embedded", None
    else:
        factory = neo4j_store_factory()  # skips loudly when there is no server at all
        if not os.environ.get("GRAPHSVC_NEO4J_URI"):
            pytest.skip("bench-http reads GRAPHSVC_NEO4J_URI: export it to run this on Neo4j")
        yield "Neo4j", factory


def run_bench(args: list[str], tmp_path: Path) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "bench-http.json"
    result = CliRunner().invoke(lab_cli, ["bench-http", *TINY, "--json", str(out), *args])
    assert result.exit_code == 0, result.output
    return result.output, json.loads(out.read_text(encoding="utf-8"))


def memories_in(factory: Callable[[], Store], namespace: str) -> int:
    store = factory()
    store.open()
    try:
        return store.stats(namespace).memories
    finally:
        store.close()


def test_each_worker_count_is_measured_and_the_namespace_erased(
    store_kind: tuple[str, Callable[[], Store] | None], tmp_path: Path
) -> None:
    store, factory = store_kind
    workers = "1,2" if store == "Neo4j" else "1"
    output, report = run_bench(["--workers", workers, "--repeat", "2"], tmp_path)
    counts = [int(n) for n in workers.split(",")]
    assert report["store"] == store and report["workers"] == counts
    assert [f["workers"] for f in report["operations"]] == counts
    for figures in report["operations"]:
        assert figures["operation"] == "bundle" and figures["errors"] == 0
        assert figures["requests"] == 20 and figures["requests_per_s"] > 0
        assert figures["p50_ms"] <= figures["p95_ms"]
        assert figures["server_cpu_ms"] is None or figures["server_cpu_ms"] > 0
    assert [len(group["runs"]) for group in report["runs"]] == [2] * len(counts)
    for n in counts:
        assert f"bundle ({n} worker{'s' if n > 1 else ''}) median" in output
    if factory is not None:
        assert report["namespace_erased"] is True
        assert f"namespace {report['namespace']} erased (40 memories)" in output
        assert memories_in(factory, report["namespace"]) == 0
    else:
        assert report["namespace_erased"] is False  # the temporary data directory is removed
        assert "kept (--keep)" not in output


def test_keep_leaves_what_the_bench_wrote(
    store_kind: tuple[str, Callable[[], Store] | None], tmp_path: Path
) -> None:
    _, factory = store_kind
    output, report = run_bench(["--keep"], tmp_path)
    assert report["namespace_erased"] is False
    kept = next(line for line in output.splitlines() if line.startswith("kept (--keep): "))
    if factory is None:
        data_dir = Path(kept.removeprefix("kept (--keep): data directory "))
        try:
            assert data_dir.is_dir() and any(data_dir.iterdir())
        finally:
            shutil.rmtree(data_dir.parent, ignore_errors=True)
        return
    namespace = report["namespace"]
    assert kept == f"kept (--keep): namespace {namespace}"
    assert memories_in(factory, namespace) == 40
    cleanup = factory()
    cleanup.open()
    try:
        MemoryService(cleanup, Settings()).erase(namespace, everything=True)
    finally:
        cleanup.close()


def test_more_than_one_worker_on_the_embedded_store_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    result = CliRunner().invoke(lab_cli, ["bench-http", *TINY, "--workers", "1,2"])
    assert result.exit_code == 2
    assert "more than one worker needs Neo4j" in result.output
    result = CliRunner().invoke(lab_cli, ["bench-http", *TINY, "--workers", "0"])
    assert result.exit_code == 2 and "worker counts of 1 or more" in result.output
