"""The mirror's persistence: log, snapshot, torn and corrupt lines, the lock, and kill -9.

Mirror only: these are properties of the embedded store's files, not of the store contract.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from graphsvc.errors import StoreCorruptError, StoreUnavailableError
from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.store.mirror import MirrorStore
from tests.helpers import fixed_clock, make_settings

REPO = Path(__file__).resolve().parents[2]
NAMESPACES = ("alpha", "beta")
RUNS = ("run-1", "run-2")
READ_SETTINGS = make_settings(Path("unused"))  # reads only: the data dir is never touched
QUERIES = ("When did the kettle break?", "kettle descaling schedule", "who fixed the boiler")


class Probe:
    """Everything a namespace holds, as comparable data."""

    def __init__(self) -> None:
        self.belief_ids: dict[str, list[UUID]] = {ns: [] for ns in NAMESPACES}
        self.vocabulary: set[str] = {"zebra"}


def populate(service: MemoryService, probe: Probe, rounds: int = 1) -> None:
    """Memories, links, beliefs, events and a forget in two namespaces."""
    for ns in NAMESPACES:
        for r in range(rounds):
            memories = service.remember_many(
                ns,
                [
                    MemoryInput(
                        text=f"Round {r}: the kettle {what} in {ns}",
                        occurred_at=datetime(2024, 1 + i, 1 + r % 28, tzinfo=UTC),
                        tags=(ns, f"r{r}"),
                    )
                    for i, what in enumerate(["broke", "was descaled", "was replaced"])
                ],
                run_id="run-1",
            )
            boiler = service.remember(
                ns, MemoryInput(text=f"Round {r}: Sam fixed the boiler"), run_id="run-2", step=r
            )
            probe.vocabulary.update(t for m in [*memories, boiler] for t in m.terms)
            service.link(
                ns, LinkInput(source=memories[0].id, target=memories[2].id, kind=LinkKind.CAUSES)
            )
            service.link(
                ns,
                LinkInput(
                    source=memories[1].id, target=boiler.id, kind=LinkKind.RELATES_TO, note="n"
                ),
            )
            service.link(
                ns,
                LinkInput(source=memories[2].id, target=memories[0].id, kind=LinkKind.SUPERSEDES),
            )
            belief = service.reconstruct_and_store(ns, "kettle broke", run_id="run-2", step=r)
            assert belief.belief_id is not None
            probe.belief_ids[ns].append(belief.belief_id)
            service.record_event(ns, "run-1", r, "assembled", f"round {r}", 10 + r)
        doomed = service.remember(ns, MemoryInput(text=f"A memory of {ns} that will be forgotten"))
        service.forget(ns, doomed.id)


def state(store: MirrorStore, probe: Probe) -> dict[str, Any]:
    vocabulary = sorted(probe.vocabulary)
    out: dict[str, Any] = {}
    for ns in NAMESPACES:
        service = MemoryService(store, READ_SETTINGS, clock=fixed_clock())
        beliefs = [store.get_belief(ns, b) for b in probe.belief_ids[ns]]
        out[ns] = {
            "export": [item.to_json_dict() for item in store.export(ns)],
            "beliefs": [b.to_json_dict() if b else None for b in beliefs],
            "events": {r: [e.to_json_dict() for e in store.events(ns, r)] for r in RUNS},
            "term_stats": store.term_stats(ns, vocabulary),
            "stats": store.stats(ns).to_json_dict(),
            "bundles": [service.bundle(ns, q).to_json_dict() for q in QUERIES],
            "belief": service.reconstruct(ns, "kettle boiler").to_json_dict(),
        }
    return out


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "mirror"


def open_store(path: Path, **kwargs: Any) -> MirrorStore:
    store = MirrorStore(path, **kwargs)
    store.open()
    return store


@pytest.fixture
def written(data_dir: Path, tmp_path: Path) -> tuple[Probe, dict[str, Any]]:
    """A closed data directory with some history, and its state."""
    probe = Probe()
    store = open_store(data_dir, fsync=False)
    populate(MemoryService(store, make_settings(tmp_path), clock=fixed_clock()), probe, rounds=2)
    expected = state(store, probe)
    store.close()
    return probe, expected


def test_reopen_restores_everything(data_dir: Path, written: tuple[Probe, dict[str, Any]]) -> None:
    probe, expected = written
    assert all(expected[ns]["stats"]["memories"] == 8 for ns in NAMESPACES)
    assert all(expected[ns]["stats"]["beliefs"] == 2 for ns in NAMESPACES)
    store = open_store(data_dir)
    try:
        assert state(store, probe) == expected
    finally:
        store.close()


def test_snapshot_compaction_then_reopen_is_equal(data_dir: Path, tmp_path: Path) -> None:
    probe = Probe()
    store = open_store(data_dir, fsync=False, snapshot_bytes=4_096)
    populate(MemoryService(store, make_settings(tmp_path), clock=fixed_clock()), probe, rounds=6)
    expected = state(store, probe)
    store.close()
    assert (data_dir / "snapshot.json").exists()
    assert not (data_dir / "snapshot.json.tmp").exists()
    assert (data_dir / "log.jsonl").stat().st_size <= 4_096  # compacted past the threshold

    store = open_store(data_dir, snapshot_bytes=4_096)
    try:
        assert state(store, probe) == expected
        # Writes after a reload keep going to the same history.
        more = MemoryService(store, make_settings(tmp_path), clock=fixed_clock())
        more.remember("alpha", MemoryInput(text="A zebra after the snapshot"))
        store.snapshot()
        more.remember("alpha", MemoryInput(text="Another zebra after the explicit snapshot"))
        expected = state(store, probe)
    finally:
        store.close()
    store = open_store(data_dir)
    try:
        assert state(store, probe) == expected
        assert store.term_stats("alpha", ["zebra"]).df == {"zebra": 2}
    finally:
        store.close()


def test_a_torn_last_line_is_dropped(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    probe, expected = written
    log = data_dir / "log.jsonl"
    good = log.read_bytes()
    assert good.endswith(b"\n")
    with open(log, "ab") as handle:
        handle.write(b'{"op":"upsert","ns":"alpha","memories":[["0000')  # a write cut short
    store = open_store(data_dir)
    try:
        assert state(store, probe) == expected
        assert log.read_bytes() == good  # the torn tail is cut, so the next append is clean
        service = MemoryService(store, make_settings(tmp_path), clock=fixed_clock())
        later = service.remember("alpha", MemoryInput(text="Written after the torn line"))
    finally:
        store.close()
    store = open_store(data_dir)
    try:
        assert store.get_memories("alpha", [later.id]) == [later]
    finally:
        store.close()


def _replace_line(log: Path, number: int, content: str) -> bytes:
    original = log.read_bytes()
    lines = original.split(b"\n")
    lines[number - 1] = content.encode()
    log.write_bytes(b"\n".join(lines))
    return original


def test_a_corrupt_middle_line_is_an_error_naming_file_and_line(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    log = data_dir / "log.jsonl"
    _replace_line(log, 3, '{"op": "upsert", garbage')
    store = MirrorStore(data_dir)
    try:
        with pytest.raises(StoreCorruptError, match=rf"{log}:3\b"):
            store.open()
    finally:
        store.close()


def test_a_failed_open_does_not_keep_the_lock(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    log = data_dir / "log.jsonl"
    original = _replace_line(log, 2, "not json")
    broken = MirrorStore(data_dir)
    fresh = MirrorStore(data_dir)
    try:
        with pytest.raises(StoreCorruptError):
            broken.open()
        log.write_bytes(original)  # the operator repairs the file and retries
        fresh.open()
        fresh.ping()
    finally:
        fresh.close()
        broken.close()


@pytest.mark.parametrize("line", ['{"seq": 999}', "[1, 2, 3]", '"text"'])
def test_a_well_formed_line_that_is_no_record_is_a_corrupt_store(
    data_dir: Path, written: tuple[Probe, dict[str, Any]], line: str
) -> None:
    log = data_dir / "log.jsonl"
    _replace_line(log, 2, line)
    store = MirrorStore(data_dir)
    try:
        with pytest.raises(StoreCorruptError, match=rf"{log}:2\b"):
            store.open()
    finally:
        store.close()


def test_a_second_writer_is_refused(data_dir: Path, tmp_path: Path) -> None:
    first = open_store(data_dir, fsync=False)
    second = MirrorStore(data_dir)
    try:
        with pytest.raises(StoreUnavailableError, match="in use") as info:
            second.open()
        assert str(os.getpid()) in str(info.value)
        with pytest.raises(StoreUnavailableError):
            second.ping()
        # The first writer is unaffected.
        service = MemoryService(first, make_settings(tmp_path), clock=fixed_clock())
        service.remember("alpha", MemoryInput(text="still writable"))
    finally:
        second.close()
        first.close()
    # Once the first writer closes, another can open.
    third = open_store(data_dir)
    try:
        assert third.stats("alpha").memories == 1
    finally:
        third.close()


def test_read_only_opens_beside_a_writer_and_refuses_writes(data_dir: Path, tmp_path: Path) -> None:
    writer = open_store(data_dir, fsync=False)
    writes = MemoryService(writer, make_settings(tmp_path), clock=fixed_clock())
    seen = writes.remember("alpha", MemoryInput(text="visible to the reader"))
    reader = open_store(data_dir, read_only=True)
    try:
        assert reader.get_memories("alpha", [seen.id]) == [seen]
        reads = MemoryService(reader, make_settings(tmp_path), clock=fixed_clock())
        with pytest.raises(StoreUnavailableError, match="read-only"):
            reads.remember("alpha", MemoryInput(text="refused"))
        with pytest.raises(StoreUnavailableError, match="read-only"):
            reads.forget("alpha", seen.id)
        with pytest.raises(StoreUnavailableError, match="read-only"):
            reads.record_event("alpha", "run-1", 0, "served")
        assert reader.stats("alpha").memories == 1
        assert reader.stats("alpha").events == 0
        # The reader sees the state as of its open.
        writes.remember("alpha", MemoryInput(text="written after the reader opened"))
        assert reader.stats("alpha").memories == 1
        assert writer.stats("alpha").memories == 2
    finally:
        reader.close()
        writer.close()


def test_read_only_leaves_files_alone(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    probe, expected = written
    log = data_dir / "log.jsonl"
    with open(log, "ab") as handle:
        handle.write(b'{"op":"torn')
    before = log.read_bytes()
    reader = open_store(data_dir, read_only=True)
    try:
        assert state(reader, probe) == expected
    finally:
        reader.close()
    assert log.read_bytes() == before
    missing = data_dir.parent / "never-created"
    empty = open_store(missing, read_only=True)
    try:
        assert empty.stats("alpha").memories == 0
    finally:
        empty.close()
    assert not missing.exists()


# -- kill -9 ------------------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from graphsvc.model import LinkInput, LinkKind, MemoryInput
    from graphsvc.service import MemoryService
    from graphsvc.settings import Settings
    from graphsvc.store.mirror import MirrorStore

    data_dir, snapshot_bytes = Path(sys.argv[1]), int(sys.argv[2])
    store = MirrorStore(data_dir, fsync=True, snapshot_bytes=snapshot_bytes)
    store.open()
    service = MemoryService(store, Settings(data_dir=data_dir, fsync=True))
    previous = None
    i = 0
    while True:
        memory = service.remember(
            "crash", MemoryInput(text=f"memory number {i} about crash safety and fsync")
        )
        if previous is not None:
            service.link(
                "crash",
                LinkInput(source=previous, target=memory.id, kind=LinkKind.PRECEDES),
            )
        previous = memory.id
        sys.stdout.write(f"{memory.id}\\n")
        sys.stdout.flush()
        i += 1
    """
)


def _acknowledged_then_kill(
    script: Path, data_dir: Path, snapshot_bytes: int, acks: int
) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(data_dir), str(snapshot_bytes)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    try:
        while len(lines) < acks:
            line = proc.stdout.readline()
            if not line:
                stderr = proc.stderr.read().decode() if proc.stderr else ""
                pytest.fail(f"the writer exited early ({proc.wait()}):\n{stderr}")
            lines.append(line.decode())
            assert time.monotonic() < deadline, "the writer is too slow"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    # What was printed before the kill was acknowledged too; a last line without its newline
    # may not have been.
    lines += rest.decode().splitlines(keepends=True)
    return [line.strip() for line in lines if line.endswith("\n")]


@pytest.mark.slow
@pytest.mark.parametrize("snapshot_bytes", [64 * 1024 * 1024, 8_192], ids=["log", "snapshots"])
def test_acknowledged_writes_survive_kill_9(tmp_path: Path, snapshot_bytes: int) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    data_dir = tmp_path / "crash"
    acked = _acknowledged_then_kill(script, data_dir, snapshot_bytes, acks=200)
    assert len(acked) >= 200
    if snapshot_bytes < 64 * 1024 * 1024:
        assert (data_dir / "snapshot.json").exists()

    store = open_store(data_dir)
    try:
        found = store.get_memories("crash", [UUID(i) for i in acked])
        assert [str(m.id) for m in found] == acked
        stats = store.stats("crash")
        assert stats.memories >= len(acked)
        # An id is printed after its memory and the PRECEDES link from the one before it were
        # both acknowledged: every consecutive pair of acknowledged ids is linked.
        links = {
            (str(lk.source), str(lk.target))
            for lk in store.links_of("crash", [m.id for m in found])
        }
        assert set(itertools.pairwise(acked)) <= links
        # Nothing half-applied: at most the last memory (written, not acknowledged) lacks its link.
        assert stats.memories - 2 <= stats.links <= stats.memories - 1
        # The store is usable: a further write, then a reopen.
        service = MemoryService(store, make_settings(tmp_path, fsync=True), clock=fixed_clock())
        after = service.remember("crash", MemoryInput(text="written after the crash"))
    finally:
        store.close()
    store = open_store(data_dir)
    try:
        assert store.get_memories("crash", [after.id]) == [after]
        assert store.stats("crash").memories == stats.memories + 1
    finally:
        store.close()
