"""``graphsvc bench``: a measurement of ingest and read latency against a BM25 baseline.

It is a benchmark, not a timed test: it prints what it measured and which targets were missed, and
exits 0 either way. Everything goes through :func:`graphsvc.bootstrap.bootstrap` and the
:class:`~graphsvc.service.MemoryService` API, so the same command measures the embedded store or,
when ``GRAPHSVC_NEO4J_URI`` is set, Neo4j. Each run writes into a fresh namespace
(``bench<seed>_<hex>``), so it can run against a shared server; it does not delete it afterwards.

The corpus is synthetic and deterministic for a seed: pseudo-words built from syllables (each with
a distinct Snowball stem), drawn from a Zipf distribution, so a query mixes common and rare terms as
real text does. The baseline, ``bm25s`` (the ``bench`` extra), indexes the same texts in the same
run and answers the same queries one at a time.
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import os
import platform
import random
import resource
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import click
from tqdm import tqdm

from graphsvc.bootstrap import bootstrap, store_label
from graphsvc.cli.common import TEMPORARY_DATA_DIR_HELP, data_dir_flag
from graphsvc.errors import GraphsvcError
from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.text import analyse
from graphsvc.tools.eval.metrics import percentile

R = TypeVar("R")

# -- targets -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A bound on one figure: ``value >= bound`` when ``at_least``, else ``value <= bound``."""

    metric: str
    bound: float
    at_least: bool

    def met(self, value: float) -> bool:
        return value >= self.bound if self.at_least else value <= self.bound

    def describe(self) -> str:
        return f"{'>=' if self.at_least else '<='} {_number(self.bound)}"


# Targets per store, keyed by the store's kind (``MemoryService.store_kind``). A store with no entry
# is measured without targets.
TARGETS: dict[str, tuple[Target, ...]] = {
    "embedded": (
        Target("ingest_memories_per_s", 20_000, at_least=True),
        Target("bundle_p50_over_bm25s_p50", 2.0, at_least=False),
        Target("reconstruct_p50_ms", 5.0, at_least=False),
    ),
    "neo4j": (
        Target("ingest_memories_per_s", 5_000, at_least=True),
        Target("bundle_p50_ms", 25.0, at_least=False),
        Target("bundle_p95_ms", 60.0, at_least=False),
        Target("reconstruct_p50_ms", 40.0, at_least=False),
        Target("bundle_p50_over_native_p50", 3.0, at_least=False),
    ),
}

# -- the synthetic corpus ------------------------------------------------------------------------

_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fr gr kl pl pr st tr sk sl sp ch sh th"
_VOWELS = "a e i o u ai ea io ou"
_CODAS = ["", "", "", "n", "r", "l", "m", "x", "k", "nd", "rt"]
# English function words mixed into the texts, so the analyser has stop words to drop.
_FILLERS = "the a and of to was with for on in at by after before it this".split()
_KINDS = ["observation", "event", "decision", "fact", "preference", "error"]
_KIND_WEIGHTS = [40, 25, 10, 15, 5, 5]
_TAGS = ["ops", "billing", "infra", "team", "customer", "release", "security", "data"]
_LINK_KINDS = [LinkKind.CAUSES, LinkKind.RELATES_TO, LinkKind.PRECEDES, LinkKind.SUPERSEDES]
_LINK_WEIGHTS = [60, 22, 15, 3]
_START = datetime(2023, 1, 1, tzinfo=UTC)
_SPAN_SECONDS = 730 * 24 * 3600  # two years
_ZIPF_EXPONENT = 1.05
_FILLER_SHARE = 0.2
_ORDER_QUESTION_SHARE = 0.1  # queries that ask about order (chronological rendering)


@dataclass(frozen=True)
class Query:
    """A query and the memory (by position) most of its words were taken from."""

    text: str
    source: int


@dataclass(frozen=True)
class Corpus:
    """Memories (inputs, in write order), links between positions, and queries."""

    vocabulary: tuple[str, ...]
    memories: tuple[MemoryInput, ...]
    links: tuple[tuple[int, int, LinkKind], ...]
    queries: tuple[Query, ...]


def make_vocabulary(rng: random.Random, size: int) -> list[str]:
    """``size`` pseudo-words of 2-4 syllables, each with its own analysed (stemmed) form."""
    onsets, vowels = _ONSETS.split(), _VOWELS.split()
    words: list[str] = []
    stems: set[str] = set()
    attempts = 0
    while len(words) < size:
        attempts += 1
        if attempts > 50 * size + 1000:
            raise click.ClickException(f"cannot build {size} distinct words: ask for fewer")
        word = "".join(
            rng.choice(onsets) + rng.choice(vowels) + rng.choice(_CODAS)
            for _ in range(rng.randint(2, 4))
        )
        analysed = analyse(word)
        if len(analysed) != 1 or analysed[0] in stems:
            continue
        stems.add(analysed[0])
        words.append(word)
    return words


def make_corpus(
    seed: int, n_memories: int, n_queries: int, vocabulary_size: int, links_per_memory: float
) -> Corpus:
    """The corpus for a seed: the same arguments give the same corpus."""
    rng = random.Random(seed)
    vocabulary = make_vocabulary(rng, vocabulary_size)
    cum_weights = list(
        itertools.accumulate(1.0 / rank**_ZIPF_EXPONENT for rank in range(1, vocabulary_size + 1))
    )
    offsets = sorted(rng.randrange(_SPAN_SECONDS) for _ in range(n_memories))

    memories: list[MemoryInput] = []
    content: list[list[str]] = []
    for offset in offsets:
        words = rng.choices(vocabulary, cum_weights=cum_weights, k=rng.randint(8, 40))
        content.append(words)
        text = [rng.choice(_FILLERS) if rng.random() < _FILLER_SHARE else w for w in words]
        text[0] = text[0].capitalize()
        memories.append(
            MemoryInput(
                text=" ".join(text) + ".",
                kind=rng.choices(_KINDS, weights=_KIND_WEIGHTS)[0],
                occurred_at=_START + timedelta(seconds=offset),
                tags=tuple(rng.sample(_TAGS, rng.randint(0, 2))),
            )
        )

    links = _make_links(rng, n_memories, round(links_per_memory * n_memories))

    queries: list[Query] = []
    for _ in range(n_queries):
        source = rng.randrange(n_memories)
        own = list(dict.fromkeys(content[source]))
        size = rng.randint(3, 8)
        extra = min(rng.randint(1, 2), size - 1)
        words = rng.sample(own, min(size - extra, len(own)))
        words += rng.choices(vocabulary, cum_weights=cum_weights, k=1)  # Zipf: often common
        if extra > 1:
            words.append(rng.choice(vocabulary))  # uniform: mostly rare
        rng.shuffle(words)
        if rng.random() < _ORDER_QUESTION_SHARE:
            words.insert(rng.randrange(len(words) + 1), rng.choice(["before", "after", "when"]))
        queries.append(Query(" ".join(words) + "?", source))
    return Corpus(tuple(vocabulary), tuple(memories), links, tuple(queries))


def _later(rng: random.Random, start: int, n: int) -> int:
    """A position after ``start``, usually close to it (clamped to the corpus)."""
    return min(n - 1, start + 1 + int(rng.expovariate(1 / 50)))


def _make_links(rng: random.Random, n: int, count: int) -> tuple[tuple[int, int, LinkKind], ...]:
    """``CAUSES`` mostly to a later memory, ``PRECEDES`` always to one, ``RELATES_TO`` anywhere,
    and a few ``SUPERSEDES`` from a later to an earlier one (never a cycle)."""
    if n < 2:
        return ()
    found: dict[tuple[int, int, LinkKind], None] = {}
    for _ in range(count):
        kind = rng.choices(_LINK_KINDS, weights=_LINK_WEIGHTS)[0]
        first = rng.randrange(n - 1)
        if kind is LinkKind.RELATES_TO or (kind is LinkKind.CAUSES and rng.random() < 0.1):
            second = rng.randrange(n)
        else:
            second = _later(rng, first, n)
        if kind is LinkKind.SUPERSEDES:
            first, second = second, first  # newer -> older
        if first != second:
            found[(first, second, kind)] = None
    return tuple(found)


# -- measurement ---------------------------------------------------------------------------------


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (``ru_maxrss`` is KiB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def time_calls(
    call: Callable[[str], R], queries: Sequence[str], warmup: int
) -> tuple[list[float], list[R]]:
    """Seconds per call over ``queries`` (after ``warmup`` untimed calls) and the results."""
    for query in queries[:warmup]:
        call(query)
    gc.collect()
    seconds: list[float] = []
    results: list[R] = []
    for query in queries:
        start = time.perf_counter()
        result = call(query)
        seconds.append(time.perf_counter() - start)
        results.append(result)
    return seconds, results


def _progress(total: int, desc: str, unit: str) -> Any:
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty())


def ingest_corpus(
    service: MemoryService, namespace: str, corpus: Corpus, batch: int
) -> tuple[list[UUID], float, int, float]:
    """Write the memories, then the links, in batches. Returns the ids in corpus order, the
    seconds the memories took, the links written and the seconds they took."""
    ids: list[UUID] = []
    memories = corpus.memories
    with _progress(len(memories), "remember", "mem") as bar:
        start = time.perf_counter()
        for first in range(0, len(memories), batch):
            stored = service.remember_many(namespace, memories[first : first + batch])
            ids.extend(m.id for m in stored)
            bar.update(len(stored))
        memory_seconds = time.perf_counter() - start
    links = [
        LinkInput(source=ids[a], target=ids[b], kind=kind)
        for a, b, kind in corpus.links
        if ids[a] != ids[b]  # two memories with identical content share an id
    ]
    with _progress(len(links), "link", "link") as bar:
        start = time.perf_counter()
        for first in range(0, len(links), batch):
            written = service.link_many(namespace, links[first : first + batch])
            bar.update(len(written))
        link_seconds = time.perf_counter() - start
    return ids, memory_seconds, len(links), link_seconds


@dataclass(frozen=True)
class Baseline:
    """What bm25s measured on the same texts and queries."""

    index_seconds: float
    latencies: list[float]
    hits: int


def run_baseline(texts: Sequence[str], queries: Sequence[Query], warmup: int) -> Baseline:
    """Index ``texts`` with bm25s (Snowball English stems, English stop words, as graphsvc does)
    and time tokenize + top-10 retrieve, one query per call."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    start = time.perf_counter()
    tokens = bm25s.tokenize(list(texts), stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    index_seconds = time.perf_counter() - start
    k = min(10, len(texts))

    def search(query: str) -> list[int]:
        query_tokens = bm25s.tokenize(
            query, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )
        documents, _ = retriever.retrieve(query_tokens, k=k, show_progress=False)
        return [int(d) for d in documents[0]]

    latencies, found = time_calls(search, [q.text for q in queries], warmup)
    hits = sum(q.source in docs for q, docs in zip(queries, found, strict=True))
    return Baseline(index_seconds, latencies, hits)


# -- report --------------------------------------------------------------------------------------


def _load_average() -> float:
    """The 1-minute load average, NaN where the platform has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _number(value: float) -> str:
    if value != value:  # NaN
        return "n/a"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"


# (figure key, label) in print order.
_ROWS: tuple[tuple[str, str], ...] = (
    ("corpus_build_s", "corpus build (s)"),
    ("ingest_memories_per_s", "ingest (memories/s)"),
    ("ingest_memories_s", "ingest memories (s)"),
    ("ingest_links_per_s", "links (links/s)"),
    ("ingest_links_s", "links (s)"),
    ("ingest_total_s", "ingest total (s)"),
    ("rss_after_corpus_mib", "peak RSS after corpus build (MiB)"),
    ("rss_after_ingest_mib", "peak RSS after ingest (MiB)"),
    ("bundle_p50_ms", "bundle p50 (ms)"),
    ("bundle_p95_ms", "bundle p95 (ms)"),
    ("bundle_source_packed", "bundle: source memory packed (share)"),
    ("reconstruct_p50_ms", "reconstruct k=5 depth=2 p50 (ms)"),
    ("reconstruct_p95_ms", "reconstruct k=5 depth=2 p95 (ms)"),
    ("bm25s_index_s", "bm25s index (s)"),
    ("bm25s_p50_ms", "bm25s top-10 p50 (ms)"),
    ("bm25s_p95_ms", "bm25s top-10 p95 (ms)"),
    ("bm25s_source_in_top10", "bm25s: source memory in top 10 (share)"),
    ("bundle_p50_over_bm25s_p50", "bundle p50 / bm25s p50"),
    ("native_top10_p50_ms", "store's own top-10 p50 (ms): plain BM25 / full-text index"),
    ("native_top10_p95_ms", "store's own top-10 p95 (ms)"),
    ("bundle_p50_over_native_p50", "bundle p50 / store's own top-10 p50"),
    ("rss_end_mib", "peak RSS at end (MiB)"),
)


def render_table(figures: dict[str, float], targets: Sequence[Target]) -> list[str]:
    """``metric | value | target | ok``, one line per figure, columns aligned."""
    by_metric = {t.metric: t for t in targets}
    rows = [("metric", "value", "target", "ok")]
    for key, label in _ROWS:
        if key not in figures:
            continue
        value = figures[key]
        target = by_metric.get(key)
        if target is None:
            rows.append((label, _number(value), "", ""))
        else:
            rows.append(
                (label, _number(value), target.describe(), "yes" if target.met(value) else "NO")
            )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for n, row in enumerate(rows):
        cells = [
            row[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(row[1:3], widths[1:3], strict=True)),
            row[3],
        ]
        lines.append(" | ".join(cells).rstrip())
        if n == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return lines


# -- the command ---------------------------------------------------------------------------------


@click.command("bench")
@click.option(
    "--memories",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Memories in the synthetic corpus.",
)
@click.option(
    "--queries",
    type=click.IntRange(min=1),
    default=200,
    show_default=True,
    help="Queries timed (each for bundle, reconstruct and bm25s).",
)
@click.option(
    "--seed", type=int, default=7, show_default=True, help="Seed of the corpus and the queries."
)
@data_dir_flag(TEMPORARY_DATA_DIR_HELP)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the figures to this JSON file.",
)
@click.option(
    "--vocabulary",
    type=click.IntRange(min=100),
    default=30_000,
    show_default=True,
    help="Distinct words of the corpus.",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=5_000,
    show_default=True,
    help="Memories (and links) per write; capped by GRAPHSVC_MAX_BATCH.",
)
def bench(
    memories: int,
    queries: int,
    seed: int,
    data_dir: Path | None,
    json_path: Path | None,
    vocabulary: int,
    batch: int,
) -> None:
    """Measure ingest, bundle and reconstruct on a synthetic corpus, beside a bm25s baseline.

    Uses Neo4j when GRAPHSVC_NEO4J_URI is set, the embedded store otherwise. Prints a table of
    figures and which targets were missed; exits 0 either way (it is a measurement).
    """
    try:
        import bm25s  # noqa: F401 - checked before minutes of ingest, used in run_baseline
    except ImportError:
        raise click.ClickException(
            "the baseline needs bm25s: pip install 'graphsvc[bench]'"
        ) from None
    temporary = data_dir is None
    root = Path(tempfile.mkdtemp(prefix="graphsvc-bench-")) if data_dir is None else data_dir
    try:
        report = _run(root, memories, queries, seed, vocabulary, batch)
    except GraphsvcError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
    for line in report["lines"]:
        click.echo(line)
    if json_path is not None:
        body = {k: v for k, v in report.items() if k != "lines"}
        body["figures"] = {k: _finite_or_none(v) for k, v in report["figures"].items()}
        json_path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        click.echo(f"figures written to {json_path}")


def _run(
    root: Path, n_memories: int, n_queries: int, seed: int, vocabulary: int, batch: int
) -> dict[str, Any]:
    settings = Settings(data_dir=root)
    batch = min(batch, settings.max_batch)
    load_start = _load_average()
    warmup = min(20, n_queries)
    figures: dict[str, float] = {}

    start = time.perf_counter()
    corpus = make_corpus(seed, n_memories, n_queries, vocabulary, links_per_memory=1.0)
    figures["corpus_build_s"] = time.perf_counter() - start
    figures["rss_after_corpus_mib"] = peak_rss_mib()
    query_texts = [q.text for q in corpus.queries]

    namespace = f"bench{seed}_{secrets.token_hex(4)}"
    label = store_label(settings)
    service = bootstrap(settings)
    try:
        store_kind = service.store_kind
        gc.collect()
        ids, memory_s, n_links, link_s = ingest_corpus(service, namespace, corpus, batch)
        figures["ingest_memories_s"] = memory_s
        figures["ingest_memories_per_s"] = n_memories / memory_s
        figures["ingest_links_s"] = link_s
        figures["ingest_links_per_s"] = n_links / link_s if link_s > 0 else float("nan")
        figures["ingest_total_s"] = memory_s + link_s
        figures["rss_after_ingest_mib"] = peak_rss_mib()

        bundle_s, bundles = time_calls(lambda q: service.bundle(namespace, q), query_texts, warmup)
        figures["bundle_p50_ms"] = percentile(bundle_s, 50) * 1000
        figures["bundle_p95_ms"] = percentile(bundle_s, 95) * 1000
        packed = sum(
            ids[q.source] in {c.memory_id for c in b.capsules}
            for q, b in zip(corpus.queries, bundles, strict=True)
        )
        figures["bundle_source_packed"] = packed / n_queries
        del bundles

        recon_s, _ = time_calls(
            lambda q: service.reconstruct(namespace, q, k=5, depth=2), query_texts, warmup
        )
        figures["reconstruct_p50_ms"] = percentile(recon_s, 50) * 1000
        figures["reconstruct_p95_ms"] = percentile(recon_s, 95) * 1000

        # The store's own lexical top 10 on the same data (the embedded store's plain BM25,
        # Neo4j's full-text index): the raw query a bundle is built on.
        native_s, _ = time_calls(
            lambda q: service.native_top_k(namespace, q, 10), query_texts, warmup
        )
        figures["native_top10_p50_ms"] = percentile(native_s, 50) * 1000
        figures["native_top10_p95_ms"] = percentile(native_s, 95) * 1000
        figures["bundle_p50_over_native_p50"] = (
            figures["bundle_p50_ms"] / figures["native_top10_p50_ms"]
        )
    finally:
        service.close()

    baseline = run_baseline([m.text for m in corpus.memories], corpus.queries, warmup)
    figures["bm25s_index_s"] = baseline.index_seconds
    figures["bm25s_p50_ms"] = percentile(baseline.latencies, 50) * 1000
    figures["bm25s_p95_ms"] = percentile(baseline.latencies, 95) * 1000
    figures["bm25s_source_in_top10"] = baseline.hits / n_queries
    figures["bundle_p50_over_bm25s_p50"] = figures["bundle_p50_ms"] / figures["bm25s_p50_ms"]
    figures["rss_end_mib"] = peak_rss_mib()

    targets = TARGETS.get(store_kind, ())
    missed = [t for t in targets if not t.met(figures[t.metric])]
    load_end = _load_average()
    cpus = os.cpu_count() or 1
    busy_note = " (other processes compete for the CPU: timings are inflated and noisy)"
    environment = {
        "load_average_start": load_start,
        "load_average_end": load_end,
        "store": label,
        "store_kind": store_kind,
        "namespace": namespace,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpus": cpus,
        "platform": platform.platform(),
    }
    config = {
        "memories": n_memories,
        "links": n_links,
        "vocabulary": vocabulary,
        "queries": n_queries,
        "warmup": warmup,
        "seed": seed,
        "batch": batch,
    }
    lines = [
        f"graphsvc bench: {n_memories:,} memories, {n_links:,} links, {vocabulary:,}-word "
        f"vocabulary, {n_queries} queries ({warmup} warm-up), seed {seed}",
        f"store: {label} (namespace {namespace})",
        f"python: {environment['python']}, {environment['cpus']} CPU(s), {environment['platform']}",
        f"load average (1 min): {_number(load_start)} at start, {_number(load_end)} at end"
        + (busy_note if max(load_start, load_end) >= 0.75 * cpus else ""),
        "",
        *render_table(figures, targets),
        "",
    ]
    if not targets:
        lines.append(f"no targets are set for {store_kind}: figures only")
    elif missed:
        lines.append(f"targets MISSED ({len(missed)} of {len(targets)}):")
        lines += [
            f"  {t.metric} = {_number(figures[t.metric])}, target {t.describe()}" for t in missed
        ]
    else:
        lines.append(f"all {len(targets)} targets met")
    return {
        "lines": lines,
        "config": config,
        "environment": environment,
        "figures": figures,
        "targets": [
            {**asdict(t), "value": figures[t.metric], "met": t.met(figures[t.metric])}
            for t in targets
        ],
        "missed": [t.metric for t in missed],
    }


__all__ = ["TARGETS", "Corpus", "Query", "Target", "bench", "make_corpus"]
