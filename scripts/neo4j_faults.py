"""Kill, stop and freeze Neo4j under a writer and readers, and check what the database kept.

A fault runner, not a unit test. It starts a Neo4j of its own with the bundled launcher
(``scripts/neo4j.sh``: its own home and ports, never the server other people use), runs a writer
that sends ``remember_many`` batches with explicit ids through the service (``bootstrap``, so the
real settings path, with ``GRAPHSVC_STORE_TIMEOUT`` as ``--timeout``), a reader that asks
bundles through the service, and a ``graphsvc serve`` on loopback asked bundles over HTTP; and
meanwhile kills the server with SIGKILL ``--kills`` times, stops it gracefully ``--stops``
times (restarting it each time) and freezes it with SIGSTOP ``--freezes`` times for
``--freeze-seconds`` (then SIGCONT), in a shuffled order. Every call in flight during a freeze
(started before it, or during it) must be answered within the timeout and one second of the
later of its start and the freeze (a frozen server keeps its connections open and answers
nothing). Then it checks against the database:

- acknowledged batches: every memory present (``lost`` must be 0);
- every batch: all of its memories or none (``half-applied`` must be 0), and the namespace's
  statistics (memories, document frequency of a term every memory has) match the data;
- batches answered UNAVAILABLE that committed anyway (reported: the answer says a failed write may
  or may not have been applied);
- the longest answer while the server was down (bounded by the timeout);
- finally every UNAVAILABLE batch is resent with the same ids, as the answer tells a client to do,
  and each memory must then exist exactly once.

Usage::

    python scripts/neo4j_faults.py                 # 10 kills, 4 graceful stops, 4 freezes
    python scripts/neo4j_faults.py --kills 2       # the CI size: about a minute and a half
    python scripts/neo4j_faults.py --bolt-port 7688 --http-port 7475 --home /tmp/faults

Exit status: 0 when nothing acknowledged was lost, nothing was half-applied (or duplicated after
the resend) and every call in flight during a freeze was answered in time, 1 otherwise, 2 when
the runner itself could not run (no Java 17, a port in use).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from graphsvc.bootstrap import bootstrap
from graphsvc.errors import GraphsvcError, StoreUnavailableError
from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.text import analyse
from graphsvc_lab.bench_http import start_server, stop_server
from graphsvc_lab.own_neo4j import OwnNeo4j

# Every memory mentions it, so its document frequency must equal the number of memories.
COMMON_WORD = "gearbox"


@dataclass
class Batch:
    """One ``remember_many`` call of the writer and how it was answered."""

    number: int
    items: list[MemoryInput]
    started: float
    took: float = 0.0
    outcome: str = "pending"  # ack | unavailable | error
    message: str = ""


@dataclass
class Writer:
    """Sends batches until told to stop; remembers every call."""

    service: MemoryService
    namespace: str
    size: int
    batches: list[Batch] = field(default_factory=list)
    halt: threading.Event = field(default_factory=threading.Event)
    acked: threading.Condition = field(default_factory=threading.Condition)
    acks: int = 0

    def wait_for_ack(self, timeout: float) -> bool:
        """Wait until one more batch than now is acknowledged (the server is serving again)."""
        with self.acked:
            target = self.acks + 1
            return self.acked.wait_for(lambda: self.acks >= target, timeout=timeout)

    def make(self, number: int) -> list[MemoryInput]:
        return [
            MemoryInput(
                id=uuid.uuid4(),
                text=f"batch {number} item {i}: the {COMMON_WORD} of turbine {number}-{i} ran hot",
                kind="event",
                tags=(f"batch-{number}",),
            )
            for i in range(self.size)
        ]

    def run(self) -> None:
        number = 0
        while not self.halt.is_set():
            batch = Batch(number, self.make(number), time.monotonic())
            self.batches.append(batch)
            try:
                self.service.remember_many(self.namespace, batch.items)
                batch.outcome = "ack"
                with self.acked:
                    self.acks += 1
                    self.acked.notify_all()
            except StoreUnavailableError as exc:
                batch.outcome, batch.message = "unavailable", str(exc)
            except GraphsvcError as exc:
                batch.outcome, batch.message = "error", f"{type(exc).__name__}: {exc}"
            batch.took = time.monotonic() - batch.started
            if batch.outcome != "ack":
                time.sleep(0.2)
            number += 1


@dataclass
class Call:
    """One call of a reader: when it started, how long it took, and what it answered."""

    started: float
    took: float
    outcome: str  # ok | UNAVAILABLE | another code or error


@dataclass
class Reader:
    """Asks ``ask()`` again and again until told to stop; remembers every call."""

    ask: Callable[[], str]
    calls: list[Call] = field(default_factory=list)
    halt: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.halt.is_set():
            began = time.monotonic()
            try:
                outcome = self.ask()
            except StoreUnavailableError:
                outcome = "UNAVAILABLE"
            except (GraphsvcError, httpx.HTTPError) as exc:
                outcome = type(exc).__name__
            self.calls.append(Call(began, time.monotonic() - began, outcome))
            time.sleep(0.1 if outcome == "ok" else 0.2)


def service_reader(service: MemoryService, namespace: str) -> Reader:
    def ask() -> str:
        service.bundle(namespace, f"{COMMON_WORD} turbine ran hot")
        return "ok"

    return Reader(ask)


class HttpServer:
    """``graphsvc serve`` on a free loopback port, on the runner's Neo4j (the lab's
    :func:`~graphsvc_lab.bench_http.start_server`)."""

    def __init__(self, uri: str, timeout: float, namespace: str, root: Path) -> None:
        self.key = secrets.token_urlsafe(24)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
        env.update(
            GRAPHSVC_NEO4J_URI=uri,
            GRAPHSVC_STORE_TIMEOUT=str(timeout),
            GRAPHSVC_API_KEYS=f"{self.key}={namespace}:read",
            GRAPHSVC_EMBED="off",
            GRAPHSVC_RATE_LIMIT_PER_KEY="0",
            GRAPHSVC_RATE_LIMIT_PER_CLIENT="0",
        )
        root.mkdir(parents=True, exist_ok=True)
        self.started = start_server(root, env)

    def reader(self) -> Reader:
        client = httpx.Client(timeout=120)
        headers = {"Authorization": f"Bearer {self.key}"}
        document = "query($q: String!) { bundle(query: $q) { usedTokens } }"

        def ask() -> str:
            response = client.post(
                self.started.url,
                json={"query": document, "variables": {"q": f"{COMMON_WORD} turbine"}},
                headers=headers,
            )
            errors = response.json().get("errors") or []
            return str(errors[0]["extensions"]["code"]) if errors else "ok"

        return Reader(ask)

    def stop(self) -> None:
        stop_server(self.started)


def present_counts(service: MemoryService, namespace: str, batches: list[Batch]) -> list[int]:
    """How many memories of each batch the database holds."""
    counts = []
    for batch in batches:
        ids = [item.id for item in batch.items if item.id is not None]
        counts.append(len(service.store.get_memories(namespace, ids)))
    return counts


def stats_consistent(service: MemoryService, namespace: str, expected: int) -> list[str]:
    """Problems with the namespace's statistics, given ``expected`` memories in the database."""
    problems = []
    stats = service.stats(namespace)
    if stats.memories != expected:
        problems.append(f"stats say {stats.memories} memories, the database holds {expected}")
    term = analyse(COMMON_WORD)[0]
    term_stats = service.store.term_stats(namespace, [term])
    if term_stats.n_docs != expected or term_stats.df.get(term, 0) != expected:
        problems.append(
            f"term statistics say N={term_stats.n_docs}, df({term})={term_stats.df.get(term, 0)}; "
            f"the database holds {expected}"
        )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs (default 10)")
    parser.add_argument(
        "--stops", type=int, default=None, help="graceful stops (default: kills // 3 + 1)"
    )
    parser.add_argument(
        "--freezes", type=int, default=None, help="SIGSTOPs (default: kills // 3 + 1)"
    )
    parser.add_argument(
        "--freeze-seconds",
        type=float,
        default=None,
        help="how long each freeze lasts (default: the timeout + 3 s)",
    )
    parser.add_argument(
        "--no-http", action="store_true", help="no graphsvc serve asked over HTTP meanwhile"
    )
    parser.add_argument("--home", type=Path, default=None, help="Neo4j home (default: a temp dir)")
    parser.add_argument("--bolt-port", type=int, default=0, help="Bolt port (default: a free one)")
    parser.add_argument("--http-port", type=int, default=0, help="HTTP port (default: a free one)")
    parser.add_argument("--heap", default="512m", help="JVM heap of the server (default 512m)")
    parser.add_argument("--batch", type=int, default=50, help="memories per batch (default 50)")
    parser.add_argument(
        "--timeout", type=float, default=5.0, help="GRAPHSVC_STORE_TIMEOUT, seconds (default 5)"
    )
    parser.add_argument(
        "--up",
        type=float,
        default=2.0,
        help="most seconds of writing after the first acknowledged batch, before each fault "
        "(default 2)",
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (fault order, timing)")
    parser.add_argument("--keep", action="store_true", help="keep the server's home afterwards")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--verbose", action="store_true", help="print every batch and fault")
    args = parser.parse_args(argv)
    # The driver logs every connection it loses; here that is the point, not news.
    logging.getLogger("neo4j").setLevel(logging.CRITICAL)
    if (
        args.kills < 0
        or (args.stops is not None and args.stops < 0)
        or (args.freezes is not None and args.freezes < 0)
        or args.batch < 1
    ):
        parser.error("--kills, --stops, --freezes must be >= 0 and --batch >= 1")
    stops = args.kills // 3 + 1 if args.stops is None else args.stops
    args.freezes = args.kills // 3 + 1 if args.freezes is None else args.freezes
    if args.freeze_seconds is None:
        args.freeze_seconds = args.timeout + 3.0
    rng = random.Random(args.seed)

    home = args.home or Path(tempfile.mkdtemp(prefix="graphsvc-faults-"))
    server = OwnNeo4j(
        home.resolve(), bolt_port=args.bolt_port, http_port=args.http_port, heap=args.heap
    )
    print(f"neo4j_faults: own Neo4j at {server.uri} (home {server.home})", flush=True)
    began = time.monotonic()
    try:
        took = server.start()
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"neo4j_faults: cannot run: {exc}", file=sys.stderr)
        return 2
    print(f"neo4j_faults: started in {took:.1f} s", flush=True)
    try:
        return run(server, args, stops, rng, began)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"neo4j_faults: could not finish: {exc}", file=sys.stderr)
        return 2
    finally:
        if server.running():
            server.kill()
        if args.home is None and not args.keep:
            shutil.rmtree(home, ignore_errors=True)


def run(
    server: OwnNeo4j, args: argparse.Namespace, stops: int, rng: random.Random, began: float
) -> int:
    settings = Settings(neo4j_uri=server.uri, store_timeout=args.timeout, fsync=False)
    service = bootstrap(settings)
    namespace = f"faults{uuid.uuid4().hex[:8]}"
    writer = Writer(service, namespace, args.batch)
    readers = {"service": service_reader(service, namespace)}
    http = None
    if not args.no_http:
        http = HttpServer(server.uri, args.timeout, namespace, server.home / "serve")
        readers["http"] = http.reader()
    threads = [threading.Thread(target=writer.run, name="writer", daemon=True)]
    threads += [
        threading.Thread(target=reader.run, name=f"{name} reader", daemon=True)
        for name, reader in readers.items()
    ]
    faults = ["kill"] * args.kills + ["stop"] * stops + ["freeze"] * args.freezes
    rng.shuffle(faults)
    outages: list[tuple[float, float]] = []
    freezes: list[tuple[float, float]] = []
    restarts: list[float] = []
    for thread in threads:
        thread.start()
    try:
        for index, fault in enumerate(faults, 1):
            # Faults come while the writer is writing: after it is served again (the first
            # batch after a start is slow: cold query caches), then a random while.
            if not writer.wait_for_ack(timeout=120):
                raise RuntimeError("the writer got no batch acknowledged within 120 s")
            time.sleep(args.up * rng.uniform(0.0, 1.0))
            down = time.monotonic()
            if fault == "freeze":
                pid = server.pid()
                os.kill(pid, signal.SIGSTOP)
                try:
                    time.sleep(args.freeze_seconds)
                finally:
                    os.kill(pid, signal.SIGCONT)
                freezes.append((down, time.monotonic()))
                span = f"frozen {freezes[-1][1] - down:.1f} s"
            else:
                if fault == "kill":
                    server.kill()
                else:
                    server.stop()
                time.sleep(rng.uniform(0.0, 0.5))
                restarts.append(server.start())
                outages.append((down, time.monotonic()))
                span = f"down {outages[-1][1] - down:.1f} s (restart {restarts[-1]:.1f} s)"
            acked = sum(b.outcome == "ack" for b in writer.batches)
            print(
                f"neo4j_faults: {index}/{len(faults)} {fault}: {span}, {len(writer.batches)} "
                f"batches so far, {acked} acknowledged",
                flush=True,
            )
        time.sleep(args.up)  # a few batches against the last restart
    finally:
        writer.halt.set()
        for reader in readers.values():
            reader.halt.set()
        for thread in threads:
            thread.join(timeout=120)
        if http is not None:
            http.stop()
    service.close()
    frozen = freeze_figures(args, writer, readers, freezes)
    return verify(server, args, writer, outages, restarts, began, frozen)


def freeze_figures(
    args: argparse.Namespace,
    writer: Writer,
    readers: dict[str, Reader],
    freezes: list[tuple[float, float]],
) -> dict[str, object]:
    """How the calls in flight during each freeze were answered. A call is *due* the timeout
    and a second after the later of its start and the freeze's; one still unanswered when due,
    with the server still frozen, was held past the bound (a call the server finished after it
    came back was not held: a live server is left to finish its work)."""
    bound = args.timeout + 1.0
    calls: dict[str, list[Call]] = {
        "writer": [
            Call(b.started, b.took, "ok" if b.outcome == "ack" else b.outcome.upper())
            for b in writer.batches
            if b.outcome != "pending"
        ],
        **{name: reader.calls for name, reader in readers.items()},
    }
    figures: dict[str, object] = {"freezes": len(freezes), "freeze_bound_s": bound}
    held: list[str] = []
    for name, made in calls.items():
        caught = 0
        unavailable: list[float] = []
        for call in made:
            answered = call.started + call.took
            for start, end in freezes:
                if not (call.started < end and answered > start):
                    continue
                caught += 1
                since = max(call.started, start)
                if answered <= end and call.outcome == "UNAVAILABLE":
                    unavailable.append(answered - since)
                if answered > since + bound and since + bound < end:
                    held.append(f"{name}: {call.outcome} after {answered - since:.2f} s")
        figures[f"{name}_calls_in_flight_at_freezes"] = caught
        figures[f"{name}_unavailable_during_freezes"] = len(unavailable)
        figures[f"{name}_max_unavailable_answer_s_at_freezes"] = round(
            max(unavailable, default=0), 2
        )
    figures["held_past_bound_by_a_freeze"] = held
    return figures


def verify(
    server: OwnNeo4j,
    args: argparse.Namespace,
    writer: Writer,
    outages: list[tuple[float, float]],
    restarts: list[float],
    began: float,
    frozen: dict[str, object],
) -> int:
    # A fresh service (its own driver) reads what the database holds.
    settings = Settings(neo4j_uri=server.uri, store_timeout=args.timeout, fsync=False)
    checker = bootstrap(settings)
    ns = writer.namespace
    batches = [b for b in writer.batches if b.outcome != "pending"]
    counts = present_counts(checker, ns, batches)
    size = args.batch
    acked = [b for b in batches if b.outcome == "ack"]
    unavailable = [b for b in batches if b.outcome == "unavailable"]
    errors = [b for b in batches if b.outcome == "error"]
    lost = sum(size - n for b, n in zip(batches, counts, strict=True) if b.outcome == "ack")
    half = [b.number for b, n in zip(batches, counts, strict=True) if 0 < n < size]
    committed_anyway = [
        b.number for b, n in zip(batches, counts, strict=True) if b.outcome != "ack" and n == size
    ]
    problems = stats_consistent(checker, ns, sum(counts))

    def started_down(b: Batch) -> bool:
        return any(start <= b.started < end for start, end in outages)

    def caught_by_fault(b: Batch) -> bool:
        return any(b.started < start < b.started + b.took for start, _ in outages)

    # Calls that began while the server was down are bounded by the timeout; a call already at
    # work when the fault came also spent its time on the live server before it.
    during = [b.took for b in batches if started_down(b)]
    caught = [b.took for b in batches if caught_by_fault(b)]
    max_unavailable = max((b.took for b in unavailable), default=0.0)
    # One second of slack: the machine, not graphsvc, decides when a thread runs again.
    within = sum(b.took <= args.timeout + 1.0 for b in unavailable)
    wordings = sum("may or may not have been applied" in b.message for b in unavailable)

    # What a client is told to do: resend an unanswered batch with the same ids.
    for batch in unavailable + errors:
        checker.remember_many(ns, batch.items)
    after = present_counts(checker, ns, batches)
    missing_after = sum(size - n for n in after)
    problems += stats_consistent(checker, ns, len(batches) * size)
    checker.close()

    figures = {
        "kills": args.kills,
        "stops": len(outages) - args.kills,
        "batches": len(batches),
        "batch_size": size,
        "acknowledged": len(acked),
        "unavailable": len(unavailable),
        "unavailable_with_may_or_may_not_wording": wordings,
        "unavailable_answered_within_timeout_plus_1s": within,
        "other_errors": len(errors),
        "lost_acknowledged_memories": lost,
        "half_applied_batches": len(half),
        "unavailable_but_committed": len(committed_anyway),
        "calls_started_during_outages": len(during),
        "max_answer_s_started_during_outages": round(max(during, default=0.0), 2),
        "max_answer_s_in_flight_at_a_fault": round(max(caught, default=0.0), 2),
        "max_unavailable_answer_s": round(max_unavailable, 2),
        "store_timeout_s": args.timeout,
        "missing_after_resend": missing_after,
        "stats_problems": problems,
        "mean_restart_s": round(sum(restarts) / len(restarts), 1) if restarts else 0.0,
        **frozen,
        "wall_s": round(time.monotonic() - began, 1),
    }
    if args.verbose:
        for start, end in outages:
            print(f"  outage {start - began:7.2f} .. {end - began:7.2f}")
        for batch, count in zip(batches, counts, strict=True):
            print(
                f"  batch {batch.number:4} at {batch.started - began:7.2f} took {batch.took:5.2f}s:"
                f" {batch.outcome:11} present {count:3}  {batch.message[:110]}"
            )
    print("neo4j_faults: results")
    for key, value in figures.items():
        print(f"  {key:42} {value}")
    for batch in errors[:5]:
        print(f"  other error in batch {batch.number}: {batch.message}")
    if args.json:
        print(json.dumps(figures))
    failed = (
        lost > 0 or half or missing_after > 0 or problems or frozen["held_past_bound_by_a_freeze"]
    )
    print(
        "neo4j_faults: FAILED"
        if failed
        else "neo4j_faults: OK (nothing lost, nothing half-applied, freezes answered in time)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
