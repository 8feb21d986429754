"""Kill Neo4j under a writer, again and again, and check what the database kept.

A fault runner, not a unit test. It starts a Neo4j of its own with the bundled launcher
(``scripts/neo4j.sh``: its own home and ports, never the server other people use), runs a writer
that sends ``remember_many`` batches with explicit ids through the service (``bootstrap``, so the
real settings path, with ``GRAPHSVC_STORE_TIMEOUT`` as ``--timeout``), and meanwhile kills the
server with SIGKILL ``--kills`` times and stops it gracefully ``--stops`` times, in a shuffled
order, restarting it each time. Then it checks against the database:

- acknowledged batches: every memory present (``lost`` must be 0);
- every batch: all of its memories or none (``half-applied`` must be 0), and the namespace's
  statistics (memories, document frequency of a term every memory has) match the data;
- batches answered UNAVAILABLE that committed anyway (reported: the answer says a failed write may
  or may not have been applied);
- the longest answer while the server was down (bounded by the timeout);
- finally every UNAVAILABLE batch is resent with the same ids, as the answer tells a client to do,
  and each memory must then exist exactly once.

Usage::

    python scripts/neo4j_faults.py                 # 10 kills, 3 graceful stops
    python scripts/neo4j_faults.py --kills 2       # the CI size: about a minute
    python scripts/neo4j_faults.py --bolt-port 7688 --http-port 7475 --home /tmp/faults

Exit status: 0 when nothing acknowledged was lost and nothing was half-applied (or duplicated after
the resend), 1 otherwise, 2 when the runner itself could not run (no Java 17, a port in use).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from graphsvc.bootstrap import bootstrap
from graphsvc.errors import GraphsvcError, StoreUnavailableError
from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.text import analyse
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
    if args.kills < 0 or (args.stops is not None and args.stops < 0) or args.batch < 1:
        parser.error("--kills, --stops must be >= 0 and --batch >= 1")
    stops = args.kills // 3 + 1 if args.stops is None else args.stops
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
    thread = threading.Thread(target=writer.run, name="writer", daemon=True)
    faults = ["kill"] * args.kills + ["stop"] * stops
    rng.shuffle(faults)
    outages: list[tuple[float, float]] = []
    restarts: list[float] = []
    thread.start()
    try:
        for index, fault in enumerate(faults, 1):
            # Faults come while the writer is writing: after it is served again (the first
            # batch after a start is slow: cold query caches), then a random while.
            if not writer.wait_for_ack(timeout=120):
                raise RuntimeError("the writer got no batch acknowledged within 120 s")
            time.sleep(args.up * rng.uniform(0.0, 1.0))
            down = time.monotonic()
            if fault == "kill":
                server.kill()
            else:
                server.stop()
            time.sleep(rng.uniform(0.0, 0.5))
            restarts.append(server.start())
            outages.append((down, time.monotonic()))
            acked = sum(b.outcome == "ack" for b in writer.batches)
            print(
                f"neo4j_faults: {index}/{len(faults)} {fault}: down {outages[-1][1] - down:.1f} s "
                f"(restart {restarts[-1]:.1f} s), {len(writer.batches)} batches so far, "
                f"{acked} acknowledged",
                flush=True,
            )
        time.sleep(args.up)  # a few batches against the last restart
    finally:
        writer.halt.set()
        thread.join(timeout=120)
    service.close()
    return verify(server, args, writer, outages, restarts, began)


def verify(
    server: OwnNeo4j,
    args: argparse.Namespace,
    writer: Writer,
    outages: list[tuple[float, float]],
    restarts: list[float],
    began: float,
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
    failed = lost > 0 or half or missing_after > 0 or problems
    print(
        "neo4j_faults: FAILED"
        if failed
        else "neo4j_faults: OK (nothing lost, nothing half-applied)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
