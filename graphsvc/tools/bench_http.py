"""``graphsvc bench-http``: HTTP throughput and latency of ``bundle`` and ``reconstruct``.

Starts ``graphsvc serve`` as a subprocess on a free loopback port with a fresh data directory (the
embedded store, or Neo4j when ``GRAPHSVC_NEO4J_URI`` is set: then a fresh namespace), loads a
synthetic corpus through ``rememberMany`` and ``linkMany`` (the corpus of ``graphsvc bench``), and
drives the GraphQL endpoint with concurrent clients (``httpx.AsyncClient``, one connection each),
for a bounded number of requests and a bounded time per operation. Prints req/s and latency
percentiles; exits 0 either way (it is a measurement). Loopback only.

The load generator runs on the same machine as the server, so on a small machine it takes CPU
from the server: the figures are a lower bound of what the server does alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import httpx

from graphsvc.settings import Settings
from graphsvc.tools.bench import Corpus, make_corpus
from graphsvc.tools.eval.metrics import percentile

START_SECONDS = 120.0
LOAD_BATCH = 500
BUNDLE_TARGET_RPS = 300.0  # bundle on the embedded store, one worker, a 2-core machine

BUNDLE = """query Bundle($q: String!) {
  bundle(query: $q) { usedTokens skipped topScore evidenceCoverage uncoveredTerms chronological
    rendered capsules { memoryId score tokens reason } excluded { memoryId reason } }
}"""
RECONSTRUCT = """mutation Reconstruct($cue: String!) {
  reconstruct(cue: $cue) { summary sourceIds linkedContextIds confidence beliefId }
}"""
RECONSTRUCT_QUERY = """query Reconstruct($cue: String!) {
  reconstruct(cue: $cue) { summary sourceIds linkedContextIds confidence }
}"""
VIEWER = """query Viewer { viewer { namespace role } }"""
OPERATIONS = {
    "viewer": (VIEWER, "q"),
    "bundle": (BUNDLE, "q"),
    "reconstruct": (RECONSTRUCT, "cue"),
    "reconstruct-query": (RECONSTRUCT_QUERY, "cue"),
}


@dataclass(frozen=True)
class Figures:
    """What one operation measured."""

    operation: str
    requests: int
    errors: int
    seconds: float
    requests_per_s: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path


def start_server(root: Path, env: dict[str, str]) -> ServerProcess:
    """``python -m graphsvc.api.serve --port 0``; the port is read back from its log."""
    log_path = root / "server.log"
    command = [
        sys.executable, "-m", "graphsvc.api.serve", "--host", "127.0.0.1", "--port", "0",
        "--data-dir", str(root / "data"),
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise click.ClickException(
                f"the server exited with {process.returncode}: {log_path.read_text()[-2000:]}"
            )
        for raw in log_path.read_text(encoding="utf-8").splitlines():
            try:
                message = str(json.loads(raw).get("msg", ""))
            except ValueError:
                continue
            if message.startswith("Uvicorn running on "):
                base = message.split()[3]
                if httpx.get(f"{base}/readyz", timeout=10).status_code == 200:
                    return ServerProcess(process, f"{base}/graphql", log_path)
        time.sleep(0.1)
    process.kill()
    raise click.ClickException(f"the server did not start in {START_SECONDS:g} s")


def stop_server(server: ServerProcess) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)


def _post(http: httpx.Client, url: str, document: str, variables: dict[str, Any]) -> Any:
    response = http.post(url, json={"query": document, "variables": variables}, timeout=300)
    payload = response.json()
    if payload.get("errors"):
        raise click.ClickException(f"load failed: {payload['errors'][0]['message']}")
    return payload["data"]


def load(url: str, key: str, corpus: Corpus) -> tuple[float, float]:
    """Write the corpus through the API; returns (seconds for memories, seconds for links)."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(headers=headers) as http:
        began = time.perf_counter()
        ids: list[str] = []
        for start in range(0, len(corpus.memories), LOAD_BATCH):
            batch = [m.to_json_dict() for m in corpus.memories[start : start + LOAD_BATCH]]
            data = _post(
                http,
                url,
                "mutation($i: [MemoryInput!]!) { rememberMany(inputs: $i) { id } }",
                {"i": batch},
            )
            ids += [row["id"] for row in data["rememberMany"]]
        memories_s = time.perf_counter() - began
        began = time.perf_counter()
        links = [
            {"source": ids[a], "target": ids[b], "kind": kind.value} for a, b, kind in corpus.links
        ]
        for start in range(0, len(links), LOAD_BATCH):
            _post(
                http,
                url,
                "mutation($i: [LinkInput!]!) { linkMany(inputs: $i) { kind } }",
                {"i": links[start : start + LOAD_BATCH]},
            )
        return memories_s, time.perf_counter() - began


@dataclass
class _Load:
    """Shared by the workers of one operation."""

    max_requests: int
    deadline: float = float("inf")
    issued: int = 0
    errors: int = 0


async def drive(
    url: str,
    key: str,
    operation: str,
    texts: Sequence[str],
    *,
    clients: int,
    max_requests: int,
    max_seconds: float,
    warmup: int,
) -> Figures:
    """``clients`` concurrent clients, each with one connection, until ``max_requests`` have
    been sent or ``max_seconds`` have passed (after ``warmup`` untimed requests)."""
    document, name = OPERATIONS[operation]
    headers = {"Authorization": f"Bearer {key}"}
    latencies: list[float] = []
    state = _Load(max_requests=max_requests)
    barrier = asyncio.Barrier(clients + 1)

    async def one(http: httpx.AsyncClient, text: str) -> bool:
        response = await http.post(url, json={"query": document, "variables": {name: text}})
        return response.status_code == 200 and not response.json().get("errors")

    async def worker(index: int) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(headers=headers, limits=limits, timeout=60) as http:
            for i in range(index, warmup, clients):
                await one(http, texts[i % len(texts)])
            await barrier.wait()
            while state.issued < state.max_requests and time.perf_counter() < state.deadline:
                text = texts[state.issued % len(texts)]
                state.issued += 1
                began = time.perf_counter()
                ok = await one(http, text)
                latencies.append(time.perf_counter() - began)
                state.errors += 0 if ok else 1

    tasks = [asyncio.create_task(worker(i)) for i in range(clients)]
    await barrier.wait()  # every client warmed up: the clock starts now
    began = time.perf_counter()
    state.deadline = began + max_seconds
    await asyncio.gather(*tasks)
    seconds = time.perf_counter() - began
    ms = [x * 1000 for x in latencies]
    return Figures(
        operation=operation,
        requests=len(latencies),
        errors=state.errors,
        seconds=round(seconds, 3),
        requests_per_s=round(len(latencies) / seconds, 1) if seconds else 0.0,
        p50_ms=round(percentile(ms, 50), 2),
        p95_ms=round(percentile(ms, 95), 2),
        p99_ms=round(percentile(ms, 99), 2),
    )


@click.command("bench-http")
@click.option(
    "--memories",
    type=click.IntRange(min=10),
    default=10_000,
    show_default=True,
    help="Memories in the synthetic corpus.",
)
@click.option(
    "--clients",
    type=click.IntRange(min=1, max=256),
    default=16,
    show_default=True,
    help="Concurrent clients (one connection each).",
)
@click.option(
    "--requests",
    "max_requests",
    type=click.IntRange(min=1),
    default=3_000,
    show_default=True,
    help="Most timed requests per operation.",
)
@click.option(
    "--seconds",
    "max_seconds",
    type=click.FloatRange(min=1),
    default=20.0,
    show_default=True,
    help="Longest timed run per operation.",
)
@click.option(
    "--warmup",
    type=click.IntRange(min=0),
    default=200,
    show_default=True,
    help="Untimed requests before each operation.",
)
@click.option(
    "--operations",
    default="bundle,reconstruct",
    show_default=True,
    help="Comma-separated: bundle, reconstruct (the mutation), reconstruct-query.",
)
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the corpus.")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the figures to this JSON file.",
)
def bench_http(
    memories: int, clients: int, max_requests: int, max_seconds: float, warmup: int,
    operations: str, seed: int, json_path: Path | None,
) -> None:  # fmt: skip
    """Measure bundle and reconstruct over HTTP with concurrent clients, against a fresh server.

    Uses Neo4j when GRAPHSVC_NEO4J_URI is set (in a fresh namespace), the embedded store
    otherwise (in a fresh temporary folder). Prints req/s and p50/p95/p99 latency.
    """
    chosen = [op.strip() for op in operations.split(",") if op.strip()]
    unknown = sorted(set(chosen) - set(OPERATIONS))
    if unknown:
        raise click.BadParameter(
            f"unknown operation(s) {', '.join(unknown)}", param_hint="--operations"
        )
    root = Path(tempfile.mkdtemp(prefix="graphsvc-bench-http-"))
    key = secrets.token_urlsafe(24)
    namespace = f"benchhttp{seed}_{secrets.token_hex(4)}"
    neo4j = bool(Settings().neo4j_uri)  # an empty GRAPHSVC_NEO4J_URI means the embedded store
    # The benchmark measures throughput: the server's per-key and per-client rate limits are off.
    env = {
        **os.environ,
        "GRAPHSVC_API_KEYS": f"{key}={namespace}:write",
        "GRAPHSVC_RATE_LIMIT_PER_KEY": "0",
        "GRAPHSVC_RATE_LIMIT_PER_CLIENT": "0",
    }
    env.pop("GRAPHSVC_API_KEYS_FILE", None)
    corpus = make_corpus(seed, memories, 500, 30_000, links_per_memory=1.0)
    texts = [q.text for q in corpus.queries]
    server = start_server(root, env)
    try:
        store = "Neo4j" if neo4j else "embedded"
        click.echo(
            f"graphsvc bench-http: {store} store, {memories} memories, {clients} clients, "
            f"<= {max_requests} requests / <= {max_seconds:g} s per operation; "
            f"{platform.python_implementation()} {platform.python_version()}, "
            f"{os.cpu_count()} CPU(s); server pid {server.process.pid}"
        )
        memories_s, links_s = load(server.url, key, corpus)
        click.echo(
            f"loaded {memories} memories in {memories_s:.1f} s "
            f"({memories / memories_s:,.0f}/s over HTTP) and {len(corpus.links)} links in "
            f"{links_s:.1f} s"
        )
        results: list[Figures] = []
        for operation in chosen:
            figures = asyncio.run(
                drive(server.url, key, operation, texts, clients=clients,
                      max_requests=max_requests, max_seconds=max_seconds, warmup=warmup)
            )  # fmt: skip
            results.append(figures)
        click.echo(f"{'operation':<18} {'requests':>8} {'errors':>6} {'req/s':>8} "
                   f"{'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")  # fmt: skip
        for f in results:
            click.echo(f"{f.operation:<18} {f.requests:>8} {f.errors:>6} {f.requests_per_s:>8.1f} "
                       f"{f.p50_ms:>8.2f} {f.p95_ms:>8.2f} {f.p99_ms:>8.2f}")  # fmt: skip
        bundle = next((f for f in results if f.operation == "bundle"), None)
        if bundle is not None and not neo4j:
            met = bundle.requests_per_s >= BUNDLE_TARGET_RPS
            click.echo(
                f"target bundle >= {BUNDLE_TARGET_RPS:g} req/s on the embedded store: "
                + ("met" if met else f"MISSED ({bundle.requests_per_s:g} req/s)")
            )
        if json_path is not None:
            body = {
                "store": store, "memories": memories, "clients": clients,
                "load_memories_s": round(memories_s, 3), "load_links_s": round(links_s, 3),
                "operations": [asdict(f) for f in results],
            }  # fmt: skip
            json_path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
            click.echo(f"figures written to {json_path}")
    finally:
        stop_server(server)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    bench_http()
