"""``graphsvc bench-http``: HTTP throughput and latency of ``bundle`` and ``reconstruct``.

Starts ``graphsvc serve`` as a subprocess on a free loopback port with a fresh data directory (the
embedded store, or Neo4j when ``GRAPHSVC_NEO4J_URI`` is set: then a fresh namespace), loads a
synthetic corpus through ``rememberMany`` and ``linkMany`` (the corpus of ``graphsvc bench``), and
drives the GraphQL endpoint with concurrent clients (one keep-alive connection each), for a bounded
number of requests and a bounded time per operation. Prints req/s, latency percentiles, the
server's CPU time per request (Linux) and the load average; exits 0 either way (it is a
measurement). Loopback only.

``--workers 1,2`` measures each worker count against its own server (``graphsvc serve --workers
N``; more than one needs Neo4j): the corpus is loaded once, through the first server, and every
server reads the same namespace. Afterwards the bench erases its Neo4j namespace through the API
(``--keep`` keeps it, and keeps the embedded store's temporary data directory).

The load generator runs on the same machine as the server, so on a small machine it takes CPU
from the server: the figures are a lower bound of what the server does alone. Its default client
(``--client raw``) writes each request as bytes on an asyncio stream and reads the answer by its
``Content-Length``: about 0.1 ms of CPU per request where ``httpx`` (``--client httpx``, the
client of earlier rounds) takes about 1.5 ms, which on two shared cores capped the figure below
what the server could answer. Every answer is still checked: status 200 and no GraphQL errors.
``--repeat`` runs each operation several times and reports the median run; the server's CPU time
per request is the figure that a busy machine disturbs least.
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
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from statistics import median_low
from typing import Any

import click
import httpx
import orjson

from graphsvc.settings import Settings
from graphsvc_lab.bench import Corpus, make_corpus
from graphsvc_lab.eval.metrics import percentile

START_SECONDS = 120.0
LOAD_BATCH = 500
#: Memories per write with dense recall on and GRAPHSVC_EMBED_WRITES=inline: each is encoded in
#: the request, and a batch must finish within the server's GRAPHSVC_REQUEST_TIMEOUT on a busy
#: machine. With the vector queue (the default) a write is acknowledged before its vectors.
EMBED_LOAD_BATCH = 50
#: The longest the bench waits for the server's vector queue to drain after the load (seconds).
VECTORS_SECONDS = 4 * 3600.0
BUNDLE_TARGET_RPS = 300.0  # bundle on the embedded store, lexical, one worker, 2 cores
REQUEST_TIMEOUT = 60.0  # seconds one request may take before it counts as an error
CLIENTS = ("raw", "httpx")

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
    """What one run of an operation measured. ``server_cpu_ms`` is the CPU time (user and
    system) per timed request of the server process and its workers, ``None`` where ``/proc`` is
    not there; ``load`` the 1-minute load average at the end of the run; ``workers`` the server's
    worker processes."""

    operation: str
    requests: int
    errors: int
    seconds: float
    requests_per_s: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    server_cpu_ms: float | None = None
    load: float | None = None
    workers: int = 1


def median_run(runs: Sequence[Figures]) -> Figures:
    """The run of median throughput (the lower middle one of an even number)."""
    middle = median_low(f.requests_per_s for f in runs)
    return next(f for f in runs if f.requests_per_s == middle)


def process_cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of a process so far, from ``/proc`` (``None`` elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def child_pids(pid: int) -> list[int]:
    """The children of a process, from ``/proc`` (empty where it is not there)."""
    children: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += [int(c) for c in (task / "children").read_text().split()]
    except (OSError, ValueError):
        pass
    return children


def tree_cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds so far of a process and its descendants (a server with
    workers), from ``/proc`` (``None`` elsewhere). A descendant that exits in between takes its
    seconds with it; the server's processes live for the whole run."""
    total = process_cpu_seconds(pid)
    if total is None:
        return None
    for child in child_pids(pid):
        total += tree_cpu_seconds(child) or 0.0
    return total


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path


def start_server(root: Path, env: dict[str, str], workers: int = 1) -> ServerProcess:
    """``python -m graphsvc.api.serve --port 0 --workers N``; the port is read back from its
    log (``server-N.log`` in ``root``)."""
    log_path = root / f"server-{workers}.log"
    command = [
        sys.executable,
        "-m",
        "graphsvc.api.serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--data-dir",
        str(root / "data"),
        "--create",
        "--workers",
        str(workers),
    ]
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


ERASE = "mutation { erase(input: {everything: true}) { memories complete } }"


def erase(url: str, key: str) -> int:
    """Erase the key's whole namespace through the API (again until it is complete); memories
    removed.

    Raises:
        click.ClickException: the server answered an error.
        httpx.HTTPError: the server could not be reached.
    """
    removed = 0
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as http:
        while True:
            receipt = _post(http, url, ERASE, {})["erase"]
            removed += int(receipt["memories"])
            if receipt["complete"]:
                return removed


def erase_with_new_server(root: Path, env: dict[str, str], key: str, namespace: str) -> None:
    """Erase the namespace of a run that failed, through a server started for it; say how to
    finish by hand when that fails too."""
    try:
        server = start_server(root, env)
        try:
            erase(server.url, key)
        finally:
            stop_server(server)
    except (click.ClickException, httpx.HTTPError, OSError) as exc:
        click.echo(
            f"warning: the bench's namespace {namespace} could not be erased ({exc}): erase it "
            f"with `graphsvc erase --everything --yes --namespace {namespace}`",
            err=True,
        )


def parse_workers(text: str, neo4j: bool) -> list[int]:
    """The worker counts of ``--workers`` (``"1,2"``), in order.

    Raises:
        click.BadParameter: not a list of counts of 1 or more, or more than one worker on the
            embedded store.
    """
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise click.BadParameter(
            f"{text!r}: give worker counts of 1 or more, e.g. 1,2", param_hint="--workers"
        )
    if max(counts) > 1 and not neo4j:
        raise click.BadParameter(
            "more than one worker needs Neo4j (set GRAPHSVC_NEO4J_URI): the embedded store is "
            "opened by one process at a time",
            param_hint="--workers",
        )
    return counts


def load(url: str, key: str, corpus: Corpus, batch: int = LOAD_BATCH) -> tuple[float, float]:
    """Write the corpus through the API, ``batch`` memories a request; returns (seconds for
    memories, seconds for links)."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(headers=headers) as http:
        began = time.perf_counter()
        ids: list[str] = []
        for start in range(0, len(corpus.memories), batch):
            items = [m.to_json_dict() for m in corpus.memories[start : start + batch]]
            data = _post(
                http,
                url,
                "mutation($i: [MemoryInput!]!) { rememberMany(inputs: $i) { id } }",
                {"i": items},
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


def wait_for_vectors(url: str, key: str, timeout: float = VECTORS_SECONDS) -> float:
    """Wait until no memory of the bench's namespace waits for its vector (``stats
    { pendingVectors }``), so that the timed requests neither compete with the server's vector
    queue nor meet memories without a vector; the seconds waited.

    Raises:
        click.ClickException: the backlog did not drain within ``timeout``.
    """
    began = time.perf_counter()
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as http:
        while True:
            pending = _post(http, url, "{ stats { pendingVectors } }", {})["stats"]
            if pending["pendingVectors"] == 0:
                return time.perf_counter() - began
            if time.perf_counter() - began > timeout:
                raise click.ClickException(
                    f"the server's vector queue did not drain in {timeout:.0f} s: "
                    f"{pending['pendingVectors']} memories still wait"
                )
            time.sleep(0.5)


@dataclass
class _Load:
    """Shared by the workers of one operation."""

    max_requests: int
    deadline: float = float("inf")
    issued: int = 0
    errors: int = 0


class RawConnection:
    """One keep-alive HTTP/1.1 connection for the load: a request is written as bytes, the
    answer read by its ``Content-Length`` (or its chunks, or to the end of the connection).
    A broken or closed connection is opened again for the next request.

    Args:
        url: the GraphQL endpoint (``http://host:port/path``).
        headers: headers sent with every request.
    """

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parsed = httpx.URL(url)
        self.host = parsed.host
        self.port = parsed.port or 80
        lines = [f"POST {parsed.raw_path.decode()} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        lines.append("Content-Type: application/json")
        self._head = ("\r\n".join(lines) + "\r\n").encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes) -> tuple[int, bytes]:
        """Send one request; the answer's status and body.

        Raises:
            OSError: the connection failed (it is closed; the next request opens another).
            asyncio.IncompleteReadError: the server closed the connection mid-answer.
        """
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        reader, writer = self._reader, self._writer
        try:
            writer.write(self._head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            fields: dict[bytes, bytes] = {}
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                fields[name.strip().lower()] = value.strip()
            if b"content-length" in fields:
                answer = await reader.readexactly(int(fields[b"content-length"]))
            elif fields.get(b"transfer-encoding", b"").lower() == b"chunked":
                answer = await self._chunks(reader)
            else:
                answer = await reader.read()
                fields[b"connection"] = b"close"
        except BaseException:
            self.close()
            raise
        if fields.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, answer

    @staticmethod
    async def _chunks(reader: asyncio.StreamReader) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append((await reader.readexactly(size + 2))[:-2])

    def close(self) -> None:
        """Close the connection (the next request opens another)."""
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


class HttpxConnection:
    """The same as :class:`RawConnection`, through ``httpx.AsyncClient`` (one connection)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self.url = url
        self._http = httpx.AsyncClient(
            headers={**headers, "Content-Type": "application/json"},
            limits=limits,
            timeout=REQUEST_TIMEOUT,
        )

    async def post(self, body: bytes) -> tuple[int, bytes]:
        """Send one request; the answer's status and body."""
        response = await self._http.post(self.url, content=body)
        return response.status_code, response.content

    async def aclose(self) -> None:
        """Close the client."""
        await self._http.aclose()


def _answered(status: int, body: bytes) -> bool:
    """A 200 whose JSON holds no GraphQL errors."""
    if status != 200:
        return False
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(payload, dict) and not payload.get("errors")


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
    client: str = "raw",
    server_pid: int | None = None,
) -> Figures:
    """``clients`` concurrent clients, each with one connection, until ``max_requests`` have
    been sent or ``max_seconds`` have passed (after ``warmup`` untimed requests). With
    ``server_pid``, the server's CPU time over the timed requests is measured too."""
    document, name = OPERATIONS[operation]
    headers = {"Authorization": f"Bearer {key}"}
    latencies: list[float] = []
    state = _Load(max_requests=max_requests)
    barrier = asyncio.Barrier(clients + 1)

    async def one(connection: RawConnection | HttpxConnection, text: str) -> bool:
        body = orjson.dumps({"query": document, "variables": {name: text}})
        try:
            status, answer = await asyncio.wait_for(connection.post(body), REQUEST_TIMEOUT)
        except (
            OSError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            TimeoutError,
            httpx.HTTPError,
            ValueError,
        ):
            return False
        return _answered(status, answer)

    async def worker(index: int) -> None:
        connection: RawConnection | HttpxConnection = (
            RawConnection(url, headers) if client == "raw" else HttpxConnection(url, headers)
        )
        try:
            for i in range(index, warmup, clients):
                await one(connection, texts[i % len(texts)])
            await barrier.wait()
            while state.issued < state.max_requests and time.perf_counter() < state.deadline:
                text = texts[state.issued % len(texts)]
                state.issued += 1
                began = time.perf_counter()
                ok = await one(connection, text)
                latencies.append(time.perf_counter() - began)
                state.errors += 0 if ok else 1
        finally:
            if isinstance(connection, RawConnection):
                connection.close()
            else:
                await connection.aclose()

    tasks = [asyncio.create_task(worker(i)) for i in range(clients)]
    await barrier.wait()  # every client warmed up: the clock starts now
    cpu_before = tree_cpu_seconds(server_pid) if server_pid is not None else None
    began = time.perf_counter()
    state.deadline = began + max_seconds
    await asyncio.gather(*tasks)
    seconds = time.perf_counter() - began
    cpu_after = tree_cpu_seconds(server_pid) if server_pid is not None else None
    ms = [x * 1000 for x in latencies]
    cpu_ms = (
        round((cpu_after - cpu_before) * 1000 / len(latencies), 3)
        if cpu_before is not None and cpu_after is not None and latencies
        else None
    )
    return Figures(
        operation=operation,
        requests=len(latencies),
        errors=state.errors,
        seconds=round(seconds, 3),
        requests_per_s=round(len(latencies) / seconds, 1) if seconds else 0.0,
        p50_ms=round(percentile(ms, 50), 2),
        p95_ms=round(percentile(ms, 95), 2),
        p99_ms=round(percentile(ms, 99), 2),
        server_cpu_ms=cpu_ms,
        load=load_average(),
    )


def _row(label: str, f: Figures) -> str:
    cpu = "-" if f.server_cpu_ms is None else f"{f.server_cpu_ms:.2f}"
    load = "-" if f.load is None else f"{f.load:.2f}"
    return (
        f"{label:<32} {f.requests:>8} {f.errors:>6} {f.requests_per_s:>8.1f} "
        f"{f.p50_ms:>8.2f} {f.p95_ms:>8.2f} {f.p99_ms:>8.2f} {cpu:>8} {load:>6}"
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
@click.option(
    "--client",
    type=click.Choice(CLIENTS),
    default="raw",
    show_default=True,
    help="The load's HTTP client: 'raw' (bytes on asyncio streams, about 0.1 ms of CPU a "
    "request) or 'httpx' (about 1.5 ms, the client of earlier rounds).",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Runs per operation; each is printed and the median run is reported.",
)
@click.option(
    "--embed",
    type=click.Choice(["off", "on"]),
    default="off",
    show_default=True,
    help="Dense recall in the server (GRAPHSVC_EMBED): 'on' encodes every memory at load and "
    "every query (query cache off unless --query-cache, so the queries' repeats do not measure "
    "the cache).",
)
@click.option(
    "--query-cache",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="With --embed on: query vectors the server keeps (GRAPHSVC_QUERY_CACHE); the run cycles "
    "through 500 queries, so 500 or more measures a warm cache.",
)
@click.option(
    "--workers",
    "worker_counts",
    default="1",
    show_default=True,
    help="Comma-separated server worker counts to measure in turn, e.g. 1,2 (graphsvc serve "
    "--workers N; above 1 needs Neo4j). The corpus is loaded once, through the first server.",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Keep the bench's Neo4j namespace (default: erase it at the end) and the embedded "
    "store's temporary data directory (default: remove it).",
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
    memories: int,
    clients: int,
    max_requests: int,
    max_seconds: float,
    warmup: int,
    operations: str,
    client: str,
    repeat: int,
    embed: str,
    query_cache: int,
    worker_counts: str,
    keep: bool,
    seed: int,
    json_path: Path | None,
) -> None:
    """Measure bundle and reconstruct over HTTP with concurrent clients, against a fresh server.

    Uses Neo4j when GRAPHSVC_NEO4J_URI is set (in a fresh namespace, erased afterwards unless
    --keep), the embedded store otherwise (in a fresh temporary folder). Prints req/s,
    p50/p95/p99 latency, the server's CPU time per request and the load average, for each
    worker count of --workers.
    """
    chosen = [op.strip() for op in operations.split(",") if op.strip()]
    unknown = sorted(set(chosen) - set(OPERATIONS))
    if unknown:
        raise click.BadParameter(
            f"unknown operation(s) {', '.join(unknown)}", param_hint="--operations"
        )
    neo4j = bool(Settings().neo4j_uri)  # an empty GRAPHSVC_NEO4J_URI means the embedded store
    counts = parse_workers(worker_counts, neo4j)
    root = Path(tempfile.mkdtemp(prefix="graphsvc-bench-http-"))
    key = secrets.token_urlsafe(24)
    namespace = f"benchhttp{seed}_{secrets.token_hex(4)}"
    # The benchmark measures throughput: the server's per-key and per-client rate limits are off.
    env = {
        **os.environ,
        "GRAPHSVC_API_KEYS": f"{key}={namespace}:write",
        "GRAPHSVC_RATE_LIMIT_PER_KEY": "0",
        "GRAPHSVC_RATE_LIMIT_PER_CLIENT": "0",
        "GRAPHSVC_EMBED": embed,
    }
    if embed == "on":
        env["GRAPHSVC_QUERY_CACHE"] = str(query_cache)
    env.pop("GRAPHSVC_API_KEYS_FILE", None)
    recall = "hybrid" if embed == "on" else "lexical"
    cache = query_cache if embed == "on" else None
    store = "Neo4j" if neo4j else "embedded"
    corpus = make_corpus(seed, memories, 500, 30_000, links_per_memory=1.0)
    texts = [q.text for q in corpus.queries]
    click.echo(
        f"graphsvc bench-http: {store} store, {recall} recall"
        + ("" if cache is None else f" (query cache {cache})")
        + f", {memories} memories, "
        f"{clients} clients ({client}), <= {max_requests} requests / <= {max_seconds:g} s "
        f"per run, {repeat} run(s) per operation, workers {','.join(map(str, counts))}; "
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} "
        f"CPU(s); load average {load_average()}"
    )
    runs: dict[tuple[int, str], list[Figures]] = {}
    memories_s = links_s = vectors_s = 0.0
    inline = env.get("GRAPHSVC_EMBED_WRITES") == "inline"
    loaded = erased = False
    try:
        for index, workers in enumerate(counts):
            server = start_server(root, env, workers)
            try:
                click.echo(f"server with {workers} worker(s): pid {server.process.pid}")
                if not loaded:
                    batch = EMBED_LOAD_BATCH if embed == "on" and inline else LOAD_BATCH
                    memories_s, links_s = load(server.url, key, corpus, batch)
                    loaded = True
                    click.echo(
                        f"loaded {memories} memories in {memories_s:.1f} s "
                        f"({memories / memories_s:,.0f}/s over HTTP) and {len(corpus.links)} "
                        f"links in {links_s:.1f} s"
                    )
                    if embed == "on" and not inline:
                        vectors_s = wait_for_vectors(server.url, key)
                        click.echo(
                            f"the server's vector queue drained {vectors_s:.1f} s after the load "
                            f"({memories / (memories_s + links_s + vectors_s):,.0f} memories/s "
                            "from the first write to the last vector)"
                        )
                for operation in chosen:
                    for _ in range(repeat):
                        figures = asyncio.run(
                            drive(
                                server.url,
                                key,
                                operation,
                                texts,
                                clients=clients,
                                max_requests=max_requests,
                                max_seconds=max_seconds,
                                warmup=warmup,
                                client=client,
                                server_pid=server.process.pid,
                            )
                        )
                        runs.setdefault((workers, operation), []).append(
                            replace(figures, workers=workers)
                        )
                if neo4j and not keep and index == len(counts) - 1:
                    began = time.perf_counter()
                    removed = erase(server.url, key)
                    erased = True
                    click.echo(
                        f"namespace {namespace} erased ({removed} memories) in "
                        f"{time.perf_counter() - began:.1f} s"
                    )
            finally:
                stop_server(server)
        _report(runs, neo4j=neo4j, embed=embed)
        if json_path is not None:
            body = {
                "store": store,
                "recall": recall,
                "query_cache": cache,
                "memories": memories,
                "clients": clients,
                "client": client,
                "repeat": repeat,
                "workers": counts,
                "load_memories_s": round(memories_s, 3),
                "load_links_s": round(links_s, 3),
                "vectors_after_load_s": round(vectors_s, 3),
                "namespace": namespace,
                "namespace_erased": erased,
                "operations": [asdict(median_run(found)) for found in runs.values()],
                "runs": [
                    {"workers": workers, "operation": operation, "runs": [asdict(f) for f in found]}
                    for (workers, operation), found in runs.items()
                ],
            }
            json_path.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
            click.echo(f"figures written to {json_path}")
    finally:
        if neo4j and loaded and not keep and not erased:  # after a failure or an interrupt
            erase_with_new_server(root, env, key, namespace)
        if keep:
            where = f"namespace {namespace}" if neo4j else f"data directory {root / 'data'}"
            click.echo(f"kept (--keep): {where}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def _report(runs: dict[tuple[int, str], list[Figures]], *, neo4j: bool, embed: str) -> None:
    """Print every run, the median run per worker count and operation, and the target."""
    click.echo(
        f"{'operation':<32} {'requests':>8} {'errors':>6} {'req/s':>8} {'p50 ms':>8} "
        f"{'p95 ms':>8} {'p99 ms':>8} {'cpu ms':>8} {'load':>6}"
    )
    for (workers, operation), found in runs.items():
        label = f"{operation} ({workers} worker{'s' if workers > 1 else ''})"
        if len(found) > 1:
            for number, f in enumerate(found, 1):
                click.echo(_row(f"{label} run {number}", f))
        click.echo(_row(label + (" median" if len(found) > 1 else ""), median_run(found)))
    click.echo(
        "cpu ms: the CPU time (user + system) of the server's processes per timed request; "
        "load: the 1-minute load average at the end of the run"
    )
    bundle = runs.get((1, "bundle"))
    if bundle is not None and not neo4j and embed == "off":
        rate = median_run(bundle).requests_per_s
        met = rate >= BUNDLE_TARGET_RPS
        click.echo(
            f"target bundle >= {BUNDLE_TARGET_RPS:g} req/s on the embedded store: "
            + ("met" if met else f"MISSED ({rate:g} req/s)")
        )


if __name__ == "__main__":
    bench_http()
