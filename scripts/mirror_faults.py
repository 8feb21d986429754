#!/usr/bin/env python3
"""Fault runner for the embedded store's files: kill -9 during writes, and every corruption case.

Not a unit test: it runs real processes on real files for as long as it takes, and prints
figures.

1. ``--kills N`` times (default 50): a writer process opens one data directory (fsync on, a small
   ``--snapshot-bytes`` so that compactions happen all the time) and writes ``remember_many``
   batches of random sizes, printing each batch's ids before the call and an acknowledgement
   after it; it is killed with SIGKILL at a random moment. The directory is then reopened (as a
   writer: that is the restart) and checked: every acknowledged memory is there, and every
   batch is all there or not at all.
2. ``--queue-kills N`` times (default 10): the same with the vector queue draining. A process
   writes batches, acknowledged before their vectors, while its background vector queue encodes
   them with the real encoder (in steps of random sizes, compactions all the time), and is
   killed at a random moment. After each restart: every acknowledged memory is there, every
   memory either has its vector or waits in the queue (never both, never neither), and every
   stored vector is exactly the encoder's codes of its memory's text (none lost, none
   mismatched). The next process resumes the queue; at the end it is drained to the last vector.
3. Each corruption scenario, on a fresh small store: the file is damaged as described, the store
   is opened; when it refuses, ``repair`` is run and the store opened again. A scenario is
   "loaded silently" when the store opened, said nothing (no warning) and does not hold exactly
   what was acknowledged: the one outcome that must never happen.

Usage: ``python scripts/mirror_faults.py [--kills 50] [--queue-kills 10] [--seed 1] [--keep DIR]``.
Exit status 1 when any acknowledged write was lost, any batch half-applied, any restart failed,
any vector was lost, left out of the queue or mismatched, or any corruption loaded silently.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphsvc.errors import StoreCorruptError, StoreUnavailableError  # noqa: E402
from graphsvc.model import Memory, MemoryInput  # noqa: E402
from graphsvc.service import MemoryService  # noqa: E402
from graphsvc.settings import Settings  # noqa: E402
from graphsvc.store import datadir, journal  # noqa: E402
from graphsvc.store.mirror import MirrorStore  # noqa: E402
from graphsvc.store.repair import repair  # noqa: E402

NS = "faults"

WRITER = """
import random, sys
from pathlib import Path
from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.mirror import MirrorStore

data_dir, run, snapshot_bytes, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(
    sys.argv[4]
)
rng = random.Random(seed)
store = MirrorStore(data_dir, fsync=True, snapshot_bytes=snapshot_bytes)
store.open()
service = MemoryService(store, Settings(data_dir=data_dir, fsync=True))
print("ready", flush=True)
batch = 0
while True:
    inputs = [
        MemoryInput(text=f"run {run} batch {batch} item {i}: " + "fsync " * rng.randint(1, 60))
        for i in range(rng.randint(1, 60))
    ]
    print("begin", run, batch, len(inputs), flush=True)
    written = service.remember_many("faults", inputs)
    print("ack", run, batch, ",".join(str(m.id) for m in written), flush=True)
    batch += 1
"""


QUEUE_NS = "vectors"

QUEUE_WRITER = """
import random, sys, time
from pathlib import Path
from graphsvc.embedding.encoder import open_embedder
from graphsvc.model import MemoryInput
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.mirror import MirrorStore

data_dir, run, snapshot_bytes, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(
    sys.argv[4]
)
rng = random.Random(seed)
store = MirrorStore(data_dir, fsync=True, snapshot_bytes=snapshot_bytes)
store.open()
settings = Settings(
    data_dir=data_dir,
    fsync=True,
    embed_queue_batch=rng.choice([1, 5, 16, 64]),
    embed_queue_poll=0.05,
    embed_queue_nice=0,
)
dense = DenseRecall(open_embedder(workers=2).load(), required=True)
service = MemoryService(store, settings, dense=dense)
service.vector_queue.start("mirror_faults")
print("ready", flush=True)
batch = 0
while True:
    parts = ["kettle", "boiler", "valve", "pump", "fan"]
    inputs = [
        MemoryInput(
            text=f"run {run} batch {batch} item {i}: the {rng.choice(parts)} was checked"
            + " again" * rng.randint(0, 8)
        )
        for i in range(rng.randint(1, 30))
    ]
    print("begin", run, batch, len(inputs), flush=True)
    written = service.remember_many("vectors", inputs)
    print("ack", run, batch, ",".join(str(m.id) for m in written), flush=True)
    batch += 1
    time.sleep(rng.uniform(0.0, 0.15))
"""


@dataclass
class QueueFigures:
    kills: int = 0
    acked: int = 0
    lost: int = 0
    vectors_at_kill: list[int] = field(default_factory=list)  # vectors stored at each restart
    partial_restarts: int = 0  # restarts with some vectors stored and some waiting
    unqueued: int = 0  # memories with no vector that were not in the queue
    doubled: int = 0  # memories with a vector that were still in the queue
    mismatched: int = 0  # stored vectors that are not the encoder's codes of the text
    unloadable: int = 0
    drained: int = 0  # vectors the final drain stored
    final_vectors: int = 0
    final_memories: int = 0


@dataclass
class KillFigures:
    kills: int = 0
    batches_acked: int = 0
    acked: int = 0
    lost: int = 0
    half_applied: int = 0
    unloadable: int = 0
    restart_seconds: list[float] = field(default_factory=list)
    compactions_seen: int = 0
    torn_cuts: int = 0


class Warnings(logging.Handler):
    """Collects the store's warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


WARNINGS = Warnings()
logging.getLogger("graphsvc.store").addHandler(WARNINGS)
logging.getLogger("graphsvc.store").setLevel(logging.WARNING)
logging.getLogger("graphsvc.store").propagate = False


def _batch_of(text: str) -> tuple[int, int]:
    run, _, rest = text.removeprefix("run ").partition(" batch ")
    return int(run), int(rest.partition(" ")[0])


def kill_loop(root: Path, kills: int, snapshot_bytes: int, rng: random.Random) -> KillFigures:
    figures = KillFigures()
    data_dir = root / "kills"
    acked_ids: set[UUID] = set()
    acked_batches: dict[tuple[int, int], int] = {}
    begun: dict[tuple[int, int], int] = {}  # every batch a writer started: its size
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for run in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(data_dir), str(run), str(snapshot_bytes),
             str(rng.randrange(1 << 30))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO,
        )  # fmt: skip
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready.strip() != b"ready":
            err = proc.stderr.read().decode() if proc.stderr else ""
            proc.kill()
            proc.wait()
            print(f"run {run}: the writer did not start:\n{err}", file=sys.stderr)
            figures.unloadable += 1
            continue
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        # Read through the buffered reader (readline may have buffered lines past "ready").
        out = proc.stdout.read()
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
        proc.wait()
        figures.kills += 1
        for line in out.decode().splitlines(keepends=True):
            if not line.endswith("\n") or line.count(" ") < 3:
                continue  # a line cut by the kill was not acknowledged to us
            word, run_no, batch_no, rest = line.split(" ", 3)
            key = (int(run_no), int(batch_no))
            if word == "begin":
                begun[key] = int(rest)
            elif word == "ack":
                batch_ids = [UUID(i) for i in rest.strip().split(",")]
                acked_ids.update(batch_ids)
                acked_batches[key] = len(batch_ids)
                figures.batches_acked += 1
        WARNINGS.messages.clear()
        started = time.perf_counter()
        store = MirrorStore(data_dir, fsync=True, snapshot_bytes=snapshot_bytes)
        try:
            store.open()
        except (StoreCorruptError, StoreUnavailableError) as exc:
            figures.unloadable += 1
            print(f"run {run}: restart failed: {exc}", file=sys.stderr)
            continue
        figures.restart_seconds.append(time.perf_counter() - started)
        figures.torn_cuts += sum("torn" in m for m in WARNINGS.messages)
        try:
            present = {m.id: m for m in store.get_memories(NS, sorted(acked_ids))}
            figures.lost = len(acked_ids) - len(present)
            per_batch: dict[tuple[int, int], int] = {}
            for item in store.export(NS):
                if isinstance(item, Memory):
                    key = _batch_of(item.text)
                    per_batch[key] = per_batch.get(key, 0) + 1
            # Every batch a writer began is all there or not at all (acknowledged ones all
            # there: a missing one is counted as lost above).
            half = [
                (key, count, begun.get(key))
                for key, count in per_batch.items()
                if count not in (0, begun.get(key, -1))
            ]
            for key, count, size in half:
                print(f"run {run}: batch {key} holds {count} of {size} memories", file=sys.stderr)
            figures.half_applied = len(half)
        finally:
            store.close()
        if (data_dir / journal.SNAPSHOT_NAME).exists():
            gen = datadir.read_snapshot(data_dir / journal.SNAPSHOT_NAME).head.gen
            figures.compactions_seen = gen
    figures.acked = len(acked_ids)
    return figures


def _check_vectors(store: MirrorStore, expected: Callable[[list[str]], list[bytes]],
                   figures: QueueFigures) -> tuple[int, int]:  # fmt: skip
    """Count what is wrong with the namespace's vectors and queue; (vectors, memories)."""
    memories = [m for m in store.export(QUEUE_NS) if isinstance(m, Memory)]
    waiting = {p.id for p in store.pending_vectors(QUEUE_NS, len(memories) + 1)}
    # The stored codes themselves (what a search reads), from the store's own table.
    space = store._state.spaces.get(QUEUE_NS)  # what is stored
    table = None if space is None else space.vectors
    with_vector = [m for m in memories if table is not None and m.id.int in table]
    for memory in memories:
        has = table is not None and memory.id.int in table
        figures.doubled += has and memory.id in waiting
        figures.unqueued += not has and memory.id not in waiting
    if with_vector and table is not None:
        codes = expected([m.text for m in with_vector])
        for memory, want in zip(with_vector, codes, strict=True):
            row = table.row_of(memory.id.int)
            assert row is not None
            figures.mismatched += table.matrix[row].tobytes() != want
    return len(with_vector), len(memories)


def queue_kill_loop(
    root: Path, kills: int, snapshot_bytes: int, rng: random.Random
) -> QueueFigures | str:
    """kill -9 while the vector queue drains (see the module docstring); a reason when it
    cannot run (no embedding model installed)."""
    from graphsvc.embedding.codes import quantize, to_bytes
    from graphsvc.embedding.dense_recall import DenseRecall
    from graphsvc.embedding.encoder import open_embedder
    from graphsvc.embedding.registry import ModelUnavailableError

    try:
        encoder = open_embedder().load()
    except ModelUnavailableError as exc:
        return f"not run (no embedding model: {exc})"
    known: dict[str, bytes] = {}

    def expected(texts: list[str]) -> list[bytes]:
        todo = [t for t in dict.fromkeys(texts) if t not in known]
        if todo:
            rows = quantize(encoder.embed(todo))
            known.update(zip(todo, (to_bytes(r) for r in rows), strict=True))
        return [known[t] for t in texts]

    figures = QueueFigures()
    data_dir = root / "queue-kills"
    acked_ids: set[UUID] = set()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for run in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", QUEUE_WRITER, str(data_dir), str(run), str(snapshot_bytes),
             str(rng.randrange(1 << 30))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO,
        )  # fmt: skip
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready.strip() != b"ready":
            err = proc.stderr.read().decode() if proc.stderr else ""
            proc.kill()
            proc.wait()
            print(f"queue run {run}: the writer did not start:\n{err}", file=sys.stderr)
            figures.unloadable += 1
            continue
        time.sleep(rng.uniform(0.3, 3.0))
        os.kill(proc.pid, signal.SIGKILL)
        out = proc.stdout.read()
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
        proc.wait()
        figures.kills += 1
        for line in out.decode().splitlines(keepends=True):
            if line.endswith("\n") and line.startswith("ack "):
                acked_ids.update(UUID(i) for i in line.split(" ", 3)[3].strip().split(","))
        store = MirrorStore(data_dir, fsync=True, snapshot_bytes=snapshot_bytes)
        try:
            store.open()
        except (StoreCorruptError, StoreUnavailableError) as exc:
            figures.unloadable += 1
            print(f"queue run {run}: restart failed: {exc}", file=sys.stderr)
            continue
        try:
            present = store.get_memories(QUEUE_NS, sorted(acked_ids))
            figures.lost = len(acked_ids) - len(present)
            vectors, memories = _check_vectors(store, expected, figures)
            figures.vectors_at_kill.append(vectors)
            figures.partial_restarts += 0 < vectors < memories
        finally:
            store.close()
    # The last restart resumes the queue and drains it to the end, in this process.
    store = MirrorStore(data_dir, fsync=True, snapshot_bytes=snapshot_bytes)
    store.open()
    try:
        service = MemoryService(
            store,
            Settings(data_dir=data_dir, fsync=True),
            dense=DenseRecall(encoder, required=True),
        )
        figures.drained = service.embed(QUEUE_NS)
        figures.final_vectors, figures.final_memories = _check_vectors(store, expected, figures)
    finally:
        store.close()
    figures.acked = len(acked_ids)
    return figures


# -- corruption scenarios --------------------------------------------------------------------------


@dataclass
class Outcome:
    name: str
    expected: str  # "refused", "warned" (opened with a warning, nothing acknowledged lost)
    result: str = ""  # refused / warned / loaded / loaded-silently / error
    repaired: bool | None = None  # after a refusal: repair made it open again
    note: str = ""


def _service(store: MirrorStore, data_dir: Path) -> MemoryService:
    return MemoryService(store, Settings(data_dir=data_dir, fsync=False))


def make_store(data_dir: Path, *, batches: int = 6, snapshot: bool = False) -> list[str]:
    """A small store, cleanly closed; the texts acknowledged, in order."""
    store = MirrorStore(data_dir, fsync=False)
    store.open()
    texts = []
    try:
        service = _service(store, data_dir)
        for b in range(batches):
            inputs = [MemoryInput(text=f"batch {b} item {i} kettle number {b * 10 + i}")
                      for i in range(3)]  # fmt: skip
            service.remember_many(NS, inputs)
            texts += [m.text for m in inputs]
            if snapshot and b == batches // 2:
                store.snapshot()
    finally:
        store.close()
    return texts


def texts_in(data_dir: Path) -> list[str]:
    store = MirrorStore(data_dir, read_only=True)
    store.open()
    try:
        return sorted(m.text for m in store.export(NS) if isinstance(m, Memory))
    finally:
        store.close()


def flip(path: Path, needle: bytes) -> None:
    data = bytearray(path.read_bytes())
    data[data.index(needle)] ^= 0x01
    path.write_bytes(bytes(data))


def crash(data_dir: Path) -> None:
    """What kill -9 after the last acknowledged write leaves: no clean-close marker."""
    (data_dir / journal.CLEAN_NAME).unlink(missing_ok=True)


def scenarios(root: Path) -> list[tuple[str, str, Callable[[Path], None], bool]]:
    """(name, expected outcome, damage, with a snapshot). ``refused-kept``: refused, and repair
    then keeps every acknowledged memory (the damage is beside intact records, which repair
    must never set aside)."""
    log = journal.LOG_NAME

    def cut_newline(d: Path) -> None:
        (d / log).write_bytes((d / log).read_bytes()[:-1])

    def cut10(d: Path) -> None:
        (d / log).write_bytes((d / log).read_bytes()[:-10])

    def cut10_crash(d: Path) -> None:
        crash(d)
        cut10(d)

    def zero_tail_crash(d: Path) -> None:
        crash(d)
        data = (d / log).read_bytes()
        start = data.rindex(b"\n", 0, -1) + 1
        (d / log).write_bytes(data[:start] + b"\0" * (len(data) - start))

    def flip_mid(d: Path) -> None:
        flip(d / log, b"kettle number 21")

    def flip_last(d: Path) -> None:
        crash(d)
        flip(d / log, b"kettle number 52")

    def delete_log(d: Path) -> None:
        (d / log).unlink()

    def delete_log_crash(d: Path) -> None:
        crash(d)
        (d / log).unlink()

    def foreign_log(d: Path) -> None:
        other = root / f"other-{d.name}"
        make_store(other, snapshot=True)
        shutil.copy(other / log, d / log)

    def foreign_log_crash(d: Path) -> None:
        crash(d)
        other = root / f"other-{d.name}"
        make_store(other, batches=2)
        shutil.copy(other / log, d / log)

    def older_generation(d: Path) -> None:
        older = (d / log).read_bytes()
        store = MirrorStore(d)
        store.open()
        store.snapshot()
        store.close()
        (d / log).write_bytes(older)

    def partial_then_append(d: Path) -> None:
        # What a failed (ENOSPC) write used to leave: a partial record, then later appends.
        lines = (d / log).read_bytes().split(b"\n")
        lines[-2] = lines[-2][:37] + lines[-2]
        (d / log).write_bytes(b"\n".join(lines))

    def empty_log_crash(d: Path) -> None:
        crash(d)
        os.truncate(d / log, 0)

    def cut_and_marker(d: Path) -> None:
        # The last record removed whole (every frame left verifies) and the marker, the only
        # record of where the log ended, damaged.
        data = (d / log).read_bytes()
        (d / log).write_bytes(data[: data.rindex(b"\n", 0, -1) + 1])
        flip(d / journal.CLEAN_NAME, b"seq")

    def delete_snapshot(d: Path) -> None:
        (d / journal.SNAPSHOT_NAME).unlink()

    def flip_snapshot(d: Path) -> None:
        flip(d / journal.SNAPSHOT_NAME, b"kettle number 11")

    def drop_middle_record(d: Path) -> None:
        lines = (d / log).read_bytes().split(b"\n")
        del lines[3]
        (d / log).write_bytes(b"\n".join(lines))

    def store_json_alone(d: Path) -> None:
        # Everything but store.json deleted: before, that opened as an empty store.
        for name in (log, journal.LOCK_NAME, journal.CLEAN_NAME):
            (d / name).unlink(missing_ok=True)

    def garbage_old_log(d: Path) -> None:
        # Garbage beside an intact log: before, repair moved the intact log aside.
        crash(d)
        (d / journal.OLD_LOG_NAME).write_bytes(random.Random(3).randbytes(300))

    def foreign_store_json(d: Path) -> None:
        other = root / f"other-{d.name}"
        make_store(other, batches=1)
        shutil.copy(other / journal.STORE_NAME, d / journal.STORE_NAME)

    def rolled_back_snapshot(d: Path) -> None:
        older = (d / journal.SNAPSHOT_NAME).read_bytes()
        store = MirrorStore(d, fsync=False)
        store.open()
        _service(store, d).remember(NS, MemoryInput(text="after the first snapshot"))
        store.snapshot()
        _service(store, d).remember(NS, MemoryInput(text="after the second snapshot"))
        store.close()
        crash(d)
        (d / journal.SNAPSHOT_NAME).write_bytes(older)

    return [
        ("final newline removed", "warned", cut_newline, False),
        ("last record cut by 10 bytes, after a clean close", "refused", cut10, False),
        ("last record cut by 10 bytes, after a crash (torn write)", "warned", cut10_crash, False),
        ("last record zero-filled, after a crash", "warned", zero_tail_crash, False),
        ("one bit flipped in a memory text mid-file", "refused", flip_mid, False),
        ("one bit flipped in the last record, after a crash", "refused", flip_last, False),
        ("a whole record removed mid-file", "refused", drop_middle_record, False),
        ("partial record followed by later appends", "refused", partial_then_append, False),
        ("last record removed whole, clean-close.json damaged", "refused", cut_and_marker, False),
        ("log.jsonl deleted, after a clean close", "refused", delete_log, False),
        ("log.jsonl deleted, after a crash, no snapshot", "refused", delete_log_crash, False),
        ("log.jsonl deleted, with a snapshot", "refused", delete_log, True),
        ("log.jsonl emptied (0 bytes), after a crash", "refused", empty_log_crash, False),
        ("log.jsonl emptied, after a crash, with a snapshot", "refused", empty_log_crash, True),
        ("log.jsonl replaced by another store's", "refused", foreign_log, True),
        ("log.jsonl replaced by another store's, no snapshot", "refused", foreign_log_crash, False),
        ("log.jsonl replaced by an older generation", "refused", older_generation, True),
        ("snapshot.json deleted", "refused", delete_snapshot, True),
        ("one bit flipped in snapshot.json", "refused", flip_snapshot, True),
        ("store.json alone (log, LOCK, marker deleted)", "refused", store_json_alone, False),
        ("garbage log.old.jsonl beside an intact log", "refused-kept", garbage_old_log, False),
        ("store.json replaced by another store's", "refused-kept", foreign_store_json, True),
        ("snapshot.json rolled back to an older copy", "refused", rolled_back_snapshot, True),
    ]


def run_scenario(root: Path, index: int, name: str, expected: str,
                 damage: Callable[[Path], None], with_snapshot: bool) -> Outcome:  # fmt: skip
    data_dir = root / f"scenario-{index}"
    acknowledged = sorted(make_store(data_dir, snapshot=with_snapshot))
    damage(data_dir)
    outcome = Outcome(name, expected)
    WARNINGS.messages.clear()
    store = MirrorStore(data_dir, fsync=False)
    try:
        store.open()
    except StoreCorruptError as exc:
        outcome.result = "refused"
        outcome.note = str(exc).split(";")[0][-90:]
        try:
            report = repair(data_dir)
            held = texts_in(data_dir)
            outcome.repaired = True
            kept = len(set(acknowledged) & set(held))
            if expected == "refused-kept" and kept == len(acknowledged):
                outcome.result = "refused-kept"
            gone = ""
            if report.lost_seq:
                first, last = report.lost_seq
                gone = f", lost seq {first}.." + ("?" if last is None else str(last))
            outcome.note = (
                f"repair kept {kept} of {len(acknowledged)} memories, cut {report.cut_bytes} "
                f"bytes{gone}"
            )
        except StoreCorruptError as again:
            outcome.repaired = False
            outcome.note = "not repairable: " + str(again).rsplit(";", 1)[-1].strip()[:70]
        return outcome
    store.close()
    held = texts_in(data_dir)
    if WARNINGS.messages:
        lost = len(set(acknowledged) - set(held))
        outcome.result = "warned"
        outcome.note = WARNINGS.messages[0][:90]
        if lost and "torn" not in WARNINGS.messages[0]:
            outcome.result = "loaded-silently"
    elif held == acknowledged:
        outcome.result = "loaded"
    else:
        outcome.result = "loaded-silently"
        outcome.note = f"holds {len(held)} of {len(acknowledged)} acknowledged memories"
    return outcome


def full_disk(root: Path) -> str:
    """A write that fills a small tmpfs (root only): rolled back, store usable afterwards."""
    mount = root / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        return "not run (mounting a tmpfs needs root)"
    try:
        data_dir = mount / "data"
        store = MirrorStore(data_dir, fsync=True)
        store.open()
        service = _service(store, data_dir)
        service.remember(NS, MemoryInput(text="before the disk fills"))
        filler = mount / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"x" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        size = (data_dir / journal.LOG_NAME).stat().st_size
        big = [MemoryInput(text=f"big {i} " + "words " * 500) for i in range(10)]
        try:
            service.remember_many(NS, big)
            verdict = "the write succeeded on a full disk?"
        except StoreUnavailableError:
            same = (data_dir / journal.LOG_NAME).stat().st_size == size
            filler.unlink()
            service.remember_many(NS, big)
            store.close()
            count = len(texts_in(data_dir))
            verdict = (
                f"refused, {'rolled back' if same else 'NOT rolled back'}; after space came "
                f"back: {count} memories, reopened fine"
            )
        return verdict
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50, help="kill -9 rounds (default 50)")
    parser.add_argument("--queue-kills", type=int, default=10,
                        help="kill -9 rounds while the vector queue drains")  # fmt: skip
    parser.add_argument("--seed", type=int, default=1, help="random seed")
    parser.add_argument("--snapshot-bytes", type=int, default=256 * 1024,
                        help="compaction threshold of the writer (default 256 KiB)")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    root = args.keep or Path(tempfile.mkdtemp(prefix="graphsvc-faults-"))
    root.mkdir(parents=True, exist_ok=True)
    failed = False
    try:
        started = time.perf_counter()
        figures = kill_loop(root, args.kills, args.snapshot_bytes, rng)
        restarts = sorted(figures.restart_seconds)
        print(f"kill -9 during remember_many ({time.perf_counter() - started:.0f} s):")
        print(f"  kills                    {figures.kills}")
        print(f"  acknowledged batches     {figures.batches_acked}")
        print(f"  acknowledged writes      {figures.acked} memories")
        print(f"  lost                     {figures.lost}")
        print(f"  half-applied batches     {figures.half_applied}")
        print(f"  unloadable restarts      {figures.unloadable}")
        print(f"  torn tails cut (warned)  {figures.torn_cuts}")
        print(f"  compactions (generation) {figures.compactions_seen}")
        if restarts:
            print(f"  restart p50 / max        {restarts[len(restarts) // 2]:.2f} s / "
                  f"{restarts[-1]:.2f} s")  # fmt: skip
        failed |= bool(figures.lost or figures.half_applied or figures.unloadable)

        started = time.perf_counter()
        queue = queue_kill_loop(root, args.queue_kills, args.snapshot_bytes, rng)
        print(f"\nkill -9 while the vector queue drains ({time.perf_counter() - started:.0f} s):")
        if isinstance(queue, str):
            print(f"  {queue}")
        else:
            print(f"  kills                             {queue.kills}")
            print(f"  acknowledged writes               {queue.acked} memories")
            print(f"  lost                              {queue.lost}")
            print(f"  vectors stored at each restart    {queue.vectors_at_kill}")
            print(f"  restarts mid-drain (some waiting) {queue.partial_restarts}")
            print(f"  neither encoded nor queued        {queue.unqueued}")
            print(f"  encoded and still queued          {queue.doubled}")
            print(f"  vectors not the encoder's codes   {queue.mismatched}")
            print(f"  unloadable restarts               {queue.unloadable}")
            print(f"  drained after the last kill       {queue.drained} vectors: "
                  f"{queue.final_vectors} of {queue.final_memories} memories have one")  # fmt: skip
            failed |= bool(
                queue.lost
                or queue.unqueued
                or queue.doubled
                or queue.mismatched
                or queue.unloadable
                or queue.final_vectors != queue.final_memories
            )

        print("\ncorruption scenarios:")
        outcomes = [run_scenario(root, i, *spec) for i, spec in enumerate(scenarios(root))]
        for o in outcomes:
            mark = "ok " if o.result == o.expected else "BAD"
            repaired = {True: ", repaired", False: ", not repairable", None: ""}[o.repaired]
            print(f"  {mark} {o.name:58} {o.result}{repaired}: {o.note}")
        refused = sum(o.result.startswith("refused") for o in outcomes)
        repaired_count = sum(o.repaired is True for o in outcomes)
        warned = sum(o.result == "warned" for o in outcomes)
        silent = sum(o.result == "loaded-silently" for o in outcomes)
        print(f"  refused {refused} (repaired {repaired_count}, not repairable "
              f"{sum(o.repaired is False for o in outcomes)}), opened with a warning {warned}, "
              f"loaded silently {silent}, of {len(outcomes)}")  # fmt: skip
        print(f"  full disk: {full_disk(root)}")
        failed |= bool(silent) or any(o.result != o.expected for o in outcomes)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
