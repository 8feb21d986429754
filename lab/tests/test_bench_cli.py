"""``graphsvc bench`` as a program, on both stores: a tiny run prints its table, writes every figure
and the run's settings to ``--json``, and leaves nothing behind in the store (a shared Neo4j server
must not fill up with benchmark namespaces). No timing is asserted."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from lab_support import lab_cli

from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.helpers import STORES, installed_model
from tests.neo4j_server import neo4j_store_factory

TINY = [
    "--memories",
    "200",
    "--queries",
    "5",
    "--rounds",
    "2",
    "--vocabulary",
    "400",
    "--warmup-memories",
    "60",
]


@pytest.fixture(params=STORES)
def where(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[list[str], Any]]:
    """The bench's store arguments for each store kind, and a function that opens that store
    (to look at what the bench left)."""
    monkeypatch.setenv("GRAPHSVC_FSYNC", "false")
    if request.param == "mirror":
        monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
        data_dir = tmp_path / "data"
        yield ["--data-dir", str(data_dir)], lambda: MirrorStore(data_dir, fsync=False)
    else:
        factory = neo4j_store_factory()  # skips loudly when there is no server at all
        if not os.environ.get("GRAPHSVC_NEO4J_URI"):
            pytest.skip("the bench reads GRAPHSVC_NEO4J_URI: export it to run this test on Neo4j")
        yield [], factory


def run_bench(args: list[str], tmp_path: Path) -> tuple[str, dict[str, Any]]:
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(lab_cli, ["bench", *TINY, "--json", str(out), *args])
    assert result.exit_code == 0, result.output
    return result.output, json.loads(out.read_text(encoding="utf-8"))


def memories_left(open_store: Any, namespace: str) -> int:
    store: Store = open_store()
    store.open()
    try:
        return store.stats(namespace).memories
    finally:
        store.close()


def test_bench_reports_every_figure_with_its_settings_and_erases_its_namespace(
    where: tuple[list[str], Any], tmp_path: Path
) -> None:
    args, open_store = where
    output, report = run_bench(args, tmp_path)
    config, environment, figures = report["config"], report["environment"], report["figures"]
    assert config["memories"] == 200 and config["embed"] == "off" and config["rounds"] == 2
    assert config["retrieval"] == "lexical" and config["store"] == environment["store_kind"]
    assert len(environment["load_averages_start"]) == len(environment["load_averages_end"]) == 3
    for key in (
        "ingest_memories_per_s",
        "ingest_links_per_s",
        "restart_open_s",
        "restart_s",
        "restart_cpu_s",
        "bundle_p50_ms",
        "bundle_p95_ms",
        "reconstruct_p50_ms",
        "bm25s_p50_ms",
        "native_top10_p50_ms",
        "erase_s",
        "rss_before_ingest_mib",
        "rss_after_ingest_mib",
    ):
        assert figures[key] > 0, key
    assert figures["ingest_links"] == config["links"] > 150
    assert figures["bundle_p50_min_ms"] <= figures["bundle_p50_max_ms"]
    # Neo4j's bundle and full-text top 10 are timed paired, query by query (time_paired).
    paired = environment["store_kind"] == "neo4j"
    assert ("bundle_over_native_paired_p50" in figures) == paired
    assert ("native_top10_p50_min_ms" in figures) == paired  # timed in the bundle's rounds
    if paired:
        assert figures["bundle_over_native_paired_p50"] > 0
    assert 0 <= figures["restart_open_cpu_s"] <= figures["restart_cpu_s"]
    assert "vector_bytes_per_memory" not in figures and "query_encode_p50_ms" not in figures
    assert "restart: open + first bundle" in output and "load average (1/5/15 min)" in output
    assert environment["namespace_erased"] is True
    assert memories_left(open_store, environment["namespace"]) == 0
    # On Neo4j the write path is warmed first, in a namespace of its own that is erased.
    if paired:
        assert config["warmup_memories"] == figures["warmup_memories"] == 60
        assert figures["warmup_memories_per_s"] > 0 and "warm-up ingest" in output
        assert memories_left(open_store, f"{environment['namespace']}_warmup") == 0
    else:
        assert config["warmup_memories"] == 0 and "warmup_s" not in figures


def test_writers_write_every_memory_in_batches_in_flight(
    where: tuple[list[str], Any], tmp_path: Path
) -> None:
    args, open_store = where
    output, report = run_bench([*args, "--writers", "2", "--batch", "30", "--keep"], tmp_path)
    config, figures = report["config"], report["figures"]
    assert config["writers"] == 2 and config["batch"] == 30
    assert "writes of 30, 2 at a time" in output
    assert ("(embedded: one)" in output) == (config["store"] == "embedded")
    assert figures["ingest_memories_per_s"] > 0 and figures["ingest_links"] == config["links"]
    namespace = report["environment"]["namespace"]
    store: Store = open_store()
    store.open()
    try:
        assert store.stats(namespace).memories == 200
        MemoryService(store, Settings()).erase(namespace, everything=True)
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["valid", "known"])
def test_as_of_times_the_as_of_bundle_beside_the_plain_one(
    where: tuple[list[str], Any], tmp_path: Path, mode: str
) -> None:
    args, open_store = where
    output, report = run_bench([*args, "--as-of", mode], tmp_path)
    config, figures = report["config"], report["figures"]
    assert config["as_of"] == mode and config["as_of_at"] is not None
    for key in ("bundle_as_of_p50_ms", "bundle_as_of_p95_ms", "bundle_as_of_capsules_mean"):
        assert figures[key] > 0, key
    assert figures["bundle_as_of_p50_min_ms"] <= figures["bundle_as_of_p50_max_ms"]
    assert figures["bundle_as_of_over_bundle_paired_p50"] > 0
    assert "bundle_as_of_p50_over_bundle_p50" in report["missed"] or any(
        t["metric"] == "bundle_as_of_p50_over_bundle_p50" and t["met"] for t in report["targets"]
    )
    assert "bundle as of p50 (ms)" in output and "bundle p50 (ms)" in output
    assert memories_left(open_store, report["environment"]["namespace"]) == 0


def test_keep_leaves_the_namespace(where: tuple[list[str], Any], tmp_path: Path) -> None:
    args, open_store = where
    _, report = run_bench([*args, "--keep", "--memories", "50"], tmp_path)
    namespace = report["environment"]["namespace"]
    assert report["environment"]["namespace_erased"] is False
    if report["environment"]["store_kind"] == "neo4j":  # no warm-up larger than the corpus
        assert report["figures"]["warmup_memories"] == 50
    store: Store = open_store()
    store.open()
    try:
        assert store.stats(namespace).memories == 50
    finally:
        store.close()
    cleanup = open_store()
    cleanup.open()
    try:
        MemoryService(cleanup, Settings()).erase(namespace, everything=True)
    finally:
        cleanup.close()


def test_embed_on_reports_vectors_and_encodes_every_memory(
    where: tuple[list[str], Any], tmp_path: Path
) -> None:
    installed_model("bench --embed on")
    args, open_store = where
    small = ["--memories", "30", "--queries", "3", "--rounds", "1"]
    _, report = run_bench([*args, *small, "--embed", "on"], tmp_path)
    figures, config = report["figures"], report["config"]
    assert config["embed"] == "on" and config["retrieval"] == "hybrid"
    assert config["query_cache"] == 0
    assert figures["vectors_stored"] == 30
    assert figures["vector_bytes_per_memory"] == 384
    assert figures["model_load_s"] > 0
    assert figures["query_encode_p50_ms"] > 0
    # The vectors followed from the queue, drained from the first write on.
    assert config["embed_writes"] == "queue"
    assert 0 < figures["vectors_after_ingest_s"] <= figures["vectors_complete_s"]
    assert figures["vectors_per_s"] == pytest.approx(30 / figures["vectors_complete_s"])
    assert figures["vectors_per_cpu_s"] > 0 and figures["memory_tokens_p50"] > 2
    assert ("disk_bytes_per_memory" in figures) == (config["store"] == "embedded")
    assert "vectors_per_s" in {t["metric"] for t in report["targets"]}
    assert memories_left(open_store, report["environment"]["namespace"]) == 0


def test_embed_writes_inline_encodes_in_the_writes_and_words_shape_the_corpus(
    where: tuple[list[str], Any], tmp_path: Path
) -> None:
    installed_model("bench --embed-writes inline")
    args, _ = where
    small = ["--memories", "20", "--queries", "3", "--rounds", "1", "--embed", "on"]
    _, report = run_bench(
        [*args, *small, "--embed-writes", "inline", "--memory-words", "2-3"], tmp_path
    )
    figures, config = report["figures"], report["config"]
    assert (config["embed_writes"], config["memory_words"]) == ("inline", [2, 3])
    assert figures["vectors_stored"] == 20 and figures["vectors_after_ingest_s"] == 0
    assert figures["vectors_complete_s"] == figures["ingest_memories_s"]  # in the writes
    assert figures["memory_tokens_p50"] < 20  # two or three pseudo-words


def test_memory_words_must_be_a_range() -> None:
    result = CliRunner().invoke(lab_cli, ["bench", "--memories", "10", "--memory-words", "9-3"])
    assert result.exit_code == 2 and "--memory-words" in result.output


def test_embed_synthetic_stores_word_hash_vectors_and_sets_no_targets(
    where: tuple[list[str], Any], tmp_path: Path
) -> None:
    args, open_store = where
    output, report = run_bench([*args, "--embed", "synthetic"], tmp_path)
    figures, config = report["figures"], report["config"]
    assert config["embed"] == "synthetic" and config["retrieval"] == "hybrid"
    assert figures["vectors_stored"] == 200
    assert report["targets"] == [] and "synthetic vectors): figures only" in output
    # Word-hash vectors put a query near its source: the bundle packs it as often as bm25s does.
    assert figures["bundle_source_packed"] >= 0.6
    assert memories_left(open_store, report["environment"]["namespace"]) == 0


def test_embed_synthetic_prices_queries_at_the_asked_token_length(
    where: tuple[list[str], Any], tmp_path: Path
) -> None:
    installed_model("bench --query-tokens")
    args, _ = where
    small = ["--memories", "30", "--queries", "3", "--rounds", "1", "--embed", "synthetic"]
    _, report = run_bench([*args, *small, "--query-tokens", "13"], tmp_path)
    assert report["config"]["query_tokens"] == 13
    assert report["figures"]["model_query_tokens_p50"] == 13
    assert report["figures"]["bundle_model_p50_ms"] > 0


def test_query_tokens_without_synthetic_vectors_is_refused_before_any_work() -> None:
    result = CliRunner().invoke(lab_cli, ["bench", "--memories", "10", "--query-tokens", "13"])
    assert result.exit_code == 2
    assert "--query-tokens" in result.output and "only with --embed synthetic" in result.output
