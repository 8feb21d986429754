"""The mirror's persistence: a log that can be trusted.

Checksummed records; a torn tail (a write that was never acknowledged) told apart from damage;
repair; missing and foreign logs; rollback of a failed write (a full disk); kill -9; a crash at
any point of a compaction; compaction that does not block reads; version-1 data directories.

Mirror only: these are properties of the embedded store's files, not of the store contract.

"A crash" here is what ``kill -9`` after the last acknowledged write leaves on disk: the same
files a clean close leaves, without ``clean-close.json`` (:func:`as_if_crashed`). The real
``kill -9`` tests below check that this is so.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from click.testing import CliRunner

from graphsvc.errors import StoreCorruptError, StoreUnavailableError
from graphsvc.model import LinkInput, LinkKind, Memory, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.store import datadir, journal
from graphsvc.store.mirror import MirrorStore
from graphsvc.store.mirror.snapshot import snapshot_frames
from graphsvc.store.repair import repair, repair_command
from tests.helpers import fixed_clock, make_settings

REPO = Path(__file__).resolve().parents[2]
NAMESPACES = ("alpha", "beta")
RUNS = ("run-1", "run-2")
READ_SETTINGS = make_settings(Path("unused"))  # reads only: the data dir is never touched
QUERIES = ("When did the kettle break?", "kettle descaling schedule", "who fixed the boiler")
REPAIR = r"graphsvc repair --data-dir"


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
            service.report_tokens(ns, "run-1", r, 20 + r)
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


def service_on(store: MirrorStore, tmp_path: Path) -> MemoryService:
    return MemoryService(store, make_settings(tmp_path), clock=fixed_clock())


def as_if_crashed(data_dir: Path) -> None:
    """Turn a cleanly closed directory into what a kill -9 after the last acknowledged write
    leaves: the same files without the clean-close marker."""
    (data_dir / journal.CLEAN_NAME).unlink(missing_ok=True)


def log_lines(data_dir: Path) -> list[bytes]:
    return (data_dir / journal.LOG_NAME).read_bytes().split(b"\n")


def refuses(data_dir: Path, pattern: str, **kwargs: Any) -> str:
    """Opening the directory fails with StoreCorruptError matching ``pattern`` and naming the
    repair command; the message."""
    store = MirrorStore(data_dir, **kwargs)
    try:
        with pytest.raises(StoreCorruptError, match=pattern) as info:
            store.open()
    finally:
        store.close()
    message = str(info.value)
    assert f"{REPAIR} {data_dir}" in message or "restore" in message, message
    return message


@pytest.fixture
def written(data_dir: Path, tmp_path: Path) -> tuple[Probe, dict[str, Any]]:
    """A cleanly closed data directory with some history, and its state."""
    probe = Probe()
    store = open_store(data_dir, fsync=False)
    populate(service_on(store, tmp_path), probe, rounds=2)
    expected = state(store, probe)
    store.close()
    return probe, expected


def write_one_more(data_dir: Path, tmp_path: Path) -> tuple[Memory, int]:
    """Open, write one memory, close; the memory and the log's size before it."""
    before = (data_dir / journal.LOG_NAME).stat().st_size
    store = open_store(data_dir, fsync=False)
    try:
        memory = service_on(store, tmp_path).remember("alpha", MemoryInput(text="one more zebra"))
    finally:
        store.close()
    return memory, before


# -- the format ---------------------------------------------------------------------------------


def test_reopen_restores_everything(data_dir: Path, written: tuple[Probe, dict[str, Any]]) -> None:
    probe, expected = written
    assert all(expected[ns]["stats"]["memories"] == 8 for ns in NAMESPACES)
    assert all(expected[ns]["stats"]["beliefs"] == 2 for ns in NAMESPACES)
    store = open_store(data_dir)
    try:
        assert state(store, probe) == expected
    finally:
        store.close()


def test_every_record_is_a_checksummed_frame_after_a_log_header(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    lines = log_lines(data_dir)
    assert lines[-1] == b""  # every record ends with its newline
    seqs = []
    for number, line in enumerate(lines[:-1], start=1):
        length, crc, payload = line[:8], line[9:17], line[18:]
        assert line[8:9] == line[17:18] == b" "
        assert int(length, 16) == len(payload), number
        assert int(crc, 16) == zlib.crc32(payload), number
        record = orjson.loads(payload)
        if number == 1:
            assert record["op"] == "header" and record["base"] == 0 and record["prev"] is None
            assert len(record["log"]) == 32
        else:
            seqs.append(record["seq"])
    assert seqs == list(range(1, len(seqs) + 1))
    marker = datadir.read_marker(data_dir / journal.CLEAN_NAME)
    assert marker == datadir.Marker(log=orjson.loads(lines[0][18:])["log"], seq=seqs[-1])


def test_snapshot_compaction_then_reopen_is_equal(data_dir: Path, tmp_path: Path) -> None:
    probe = Probe()
    store = open_store(data_dir, fsync=False, snapshot_bytes=4_096)
    populate(service_on(store, tmp_path), probe, rounds=6)
    store.wait_for_compaction()
    expected = state(store, probe)
    store.close()
    snapshot = datadir.read_snapshot(data_dir / journal.SNAPSHOT_NAME)
    head = journal.log_head(journal.scan_file(data_dir / journal.LOG_NAME))
    assert snapshot.head.gen >= 1  # compacted (how often depends on the thread's pace)
    assert snapshot.head.log == head.log and snapshot.head.seq >= head.base > 0
    assert sorted(p.name for p in data_dir.iterdir()) == [
        journal.LOCK_NAME,
        journal.CLEAN_NAME,
        journal.LOG_NAME,
        journal.SNAPSHOT_NAME,
        journal.STORE_NAME,
    ]
    store_id = datadir.read_store_id(data_dir / journal.STORE_NAME)
    assert store_id is not None and snapshot.head.store == head.store == store_id

    store = open_store(data_dir, snapshot_bytes=4_096)
    try:
        assert state(store, probe) == expected
        # Writes after a reload keep going to the same history.
        more = service_on(store, tmp_path)
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


# -- torn tails and damage ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tear",
    [
        pytest.param(lambda data, start: data[:-10], id="last-record-cut-by-10-bytes"),
        pytest.param(lambda data, start: data[: start + 12], id="cut-in-its-header"),
        pytest.param(
            lambda data, start: data[:start] + b"\0" * (len(data) - start), id="zero-filled"
        ),
    ],
)
def test_a_torn_last_record_after_a_crash_is_cut_with_a_warning(
    data_dir: Path,
    tmp_path: Path,
    written: tuple[Probe, dict[str, Any]],
    caplog: pytest.LogCaptureFixture,
    tear: Any,
) -> None:
    probe, expected = written
    last, size_before = write_one_more(data_dir, tmp_path)
    as_if_crashed(data_dir)
    log = data_dir / journal.LOG_NAME
    log.write_bytes(tear(log.read_bytes(), size_before))
    torn_bytes = log.stat().st_size - size_before
    with caplog.at_level(logging.WARNING, logger="graphsvc.store"):
        store = open_store(data_dir)
    try:
        assert state(store, probe) == expected  # the torn write was never acknowledged
        assert store.get_memories("alpha", [last.id]) == []
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings
        assert "torn" in warnings[0] and str(log) in warnings[0]
        assert f"{torn_bytes} bytes from byte {size_before}" in warnings[0]
        assert log.stat().st_size == size_before  # cut, so the next append is clean
        later = service_on(store, tmp_path).remember("alpha", MemoryInput(text="after the tear"))
    finally:
        store.close()
    store = open_store(data_dir)
    try:
        assert store.get_memories("alpha", [later.id]) == [later]
    finally:
        store.close()


def test_a_record_cut_after_a_clean_close_is_damage_not_a_torn_write(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    write_one_more(data_dir, tmp_path)
    log = data_dir / journal.LOG_NAME
    cut = log.read_bytes()[:-10]
    log.write_bytes(cut)
    line = cut.count(b"\n") + 1
    message = refuses(data_dir, rf"{log}:{line} \(byte \d+\): damaged: an incomplete record")
    assert "closed cleanly" in message
    assert log.read_bytes() == cut  # refused, not truncated
    refuses(data_dir, rf"{log}:{line}\b", read_only=True)


@pytest.mark.parametrize("crashed", [False, True], ids=["clean-close", "crash"])
def test_a_missing_final_newline_keeps_the_last_record(
    data_dir: Path,
    tmp_path: Path,
    written: tuple[Probe, dict[str, Any]],
    caplog: pytest.LogCaptureFixture,
    crashed: bool,
) -> None:
    last, _ = write_one_more(data_dir, tmp_path)
    if crashed:
        as_if_crashed(data_dir)
    log = data_dir / journal.LOG_NAME
    whole = log.read_bytes()
    log.write_bytes(whole[:-1])
    with caplog.at_level(logging.WARNING, logger="graphsvc.store"):
        store = open_store(data_dir)
    try:
        assert store.get_memories("alpha", [last.id]) == [last]  # its checksum holds
        assert any("newline" in r.getMessage() for r in caplog.records)
        assert log.read_bytes() == whole
    finally:
        store.close()


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda data: data[:20], id="cut"),
        pytest.param(lambda data: data.replace(b'"seq"', b'"seQ"'), id="flipped-byte"),
        pytest.param(lambda data: b"", id="empty"),
    ],
)
def test_an_unreadable_clean_close_marker_is_refused_not_ignored(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]], spoil: Any
) -> None:
    # A forget, a clean close, then the log cut at the record boundary before the forget: only
    # the marker tells that acknowledged records are missing, so a marker that cannot be read
    # must not be taken for no marker (the forgotten memory would come back).
    store = open_store(data_dir, fsync=False)
    service = service_on(store, tmp_path)
    doomed = service.remember("alpha", MemoryInput(text="a zebra to forget"))
    before_forget = (data_dir / journal.LOG_NAME).stat().st_size
    service.forget("alpha", doomed.id)
    store.close()
    os.truncate(data_dir / journal.LOG_NAME, before_forget)
    marker = data_dir / journal.CLEAN_NAME
    marker.write_bytes(spoil(marker.read_bytes()))
    message = refuses(data_dir, rf"{marker}:1 \(byte 0\): .*cannot be read")
    assert "cut" in message
    refuses(data_dir, r"clean-close\.json", read_only=True)

    report = repair(data_dir)  # accepts, explicitly, what it cannot check
    assert any("clean-close.json" in p for p in report.problems), report.problems
    assert [p for p in report.moved_aside if p.name.startswith("clean-close.json.damaged-")]
    store = open_store(data_dir)
    store.close()


def _flip(path: Path, needle: bytes) -> int:
    """Flip one bit of the first byte of ``needle`` in a file; the line it is on (1-based)."""
    data = bytearray(path.read_bytes())
    at = data.index(needle)
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    return data[:at].count(b"\n") + 1


@pytest.mark.parametrize("crashed", [False, True], ids=["clean-close", "crash"])
def test_a_flipped_byte_in_a_memory_text_is_refused_naming_file_and_line(
    data_dir: Path, written: tuple[Probe, dict[str, Any]], crashed: bool
) -> None:
    if crashed:
        as_if_crashed(data_dir)
    log = data_dir / journal.LOG_NAME
    line = _flip(log, b"was descaled in beta")
    assert 2 < line < len(log_lines(data_dir)) - 1  # mid-file
    message = refuses(data_dir, rf"{log}:{line} \(byte \d+\): damaged: .*checksum")
    assert "later record(s) verify" in message
    refuses(data_dir, rf"{log}:{line}\b", read_only=True)


def test_a_flipped_byte_in_the_last_record_is_damage_even_after_a_crash(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    write_one_more(data_dir, tmp_path)
    as_if_crashed(data_dir)
    log = data_dir / journal.LOG_NAME
    line = _flip(log, b"one more zebra")
    assert line == len(log_lines(data_dir)) - 1  # the last record, complete
    refuses(data_dir, rf"{log}:{line} .*checksum")


def _replace_line(log: Path, number: int, content: bytes) -> bytes:
    original = log.read_bytes()
    lines = original.split(b"\n")
    lines[number - 1] = content
    log.write_bytes(b"\n".join(lines))
    return original


def test_a_corrupt_middle_line_is_an_error_naming_file_and_line(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    log = data_dir / "log.jsonl"
    _replace_line(log, 3, b'{"op": "upsert", garbage')
    refuses(data_dir, rf"{log}:3\b.*not a record")


def test_a_failed_open_does_not_keep_the_lock(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    log = data_dir / "log.jsonl"
    original = _replace_line(log, 2, b"not json")
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


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b'{"seq": 1}', "not a valid log record"),
        (b'{"seq": 999}', "seq 999 follows seq 0"),
        (b"[1, 2, 3]", "not a valid log record"),
        (b'"text"', "not a valid log record"),
        (b'{"seq": "1"}', "not a valid log record"),
    ],
)
def test_a_checksummed_frame_that_is_no_record_is_a_corrupt_store(
    data_dir: Path, written: tuple[Probe, dict[str, Any]], payload: bytes, reason: str
) -> None:
    log = data_dir / "log.jsonl"
    _replace_line(log, 2, journal.encode_payload(payload)[:-1])
    refuses(data_dir, rf"{log}:2\b.*{reason}")


def test_a_missing_record_in_the_middle_is_a_gap_in_seq(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    log = data_dir / "log.jsonl"
    lines = log.read_bytes().split(b"\n")
    del lines[4]  # a whole frame: every frame left verifies
    log.write_bytes(b"\n".join(lines))
    refuses(data_dir, rf"{log}:5\b.*seq 5 follows seq 3: records 4..4 are missing")


# -- missing, foreign and orphaned files --------------------------------------------------------


def test_a_brand_new_data_dir_opens_empty(data_dir: Path) -> None:
    for read_only in (True, False):
        store = open_store(data_dir, read_only=read_only)
        try:
            assert store.stats("alpha").memories == 0
        finally:
            store.close()
    assert (data_dir / journal.LOG_NAME).exists()
    store = open_store(data_dir)  # and again, now that it has a (header-only) log
    store.close()


def test_a_crash_while_the_first_log_is_created_still_opens(data_dir: Path) -> None:
    store = open_store(data_dir)
    store.close()
    # The crash: the header written to log.new.jsonl, not yet renamed to log.jsonl.
    os.rename(data_dir / journal.LOG_NAME, data_dir / journal.NEW_LOG_NAME)
    as_if_crashed(data_dir)
    store = open_store(data_dir)
    try:
        assert store.stats("alpha").memories == 0
    finally:
        store.close()
    assert not (data_dir / journal.NEW_LOG_NAME).exists()


def test_a_first_open_that_fails_on_a_full_disk_leaves_no_false_evidence(
    small_filesystem: Path,
) -> None:
    _fill(small_filesystem / "filler")
    data_dir = small_filesystem / "data"
    with pytest.raises(StoreUnavailableError, match="No space left"):
        open_store(data_dir)
    (small_filesystem / "filler").unlink()
    store = open_store(data_dir)  # not refused as "log.jsonl is missing"
    store.close()


@pytest.mark.parametrize("how", ["clean-close", "crash-with-snapshot", "crash-without-snapshot"])
def test_a_deleted_log_is_refused_then_repair_accepts_the_loss(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]], how: str
) -> None:
    probe, _ = written
    kept: dict[str, Any] | None = None
    if how == "crash-with-snapshot":
        store = open_store(data_dir)
        store.snapshot()
        kept = state(store, probe)
        store.close()
    write_one_more(data_dir, tmp_path)
    if how != "clean-close":
        as_if_crashed(data_dir)
    (data_dir / journal.LOG_NAME).unlink()
    message = refuses(data_dir, r"log\.jsonl is missing")
    evidence = {
        "clean-close": "clean-close.json",
        "crash-with-snapshot": "snapshot.json",
        "crash-without-snapshot": "store.json",
    }[how]
    assert evidence in message
    refuses(data_dir, r"log\.jsonl is missing", read_only=True)

    report = repair(data_dir)
    assert report.changed and report.problems and report.lost_seq is not None
    assert report.lost_seq[0] == (report.snapshot_seq or 0) + 1
    store = open_store(data_dir)
    try:
        if kept is not None:
            assert state(store, probe) == kept  # the snapshot's state
        else:
            assert all(store.stats(ns).memories == 0 for ns in NAMESPACES)
    finally:
        store.close()


@pytest.mark.parametrize("how", ["crash-without-snapshot", "crash-with-snapshot", "clean-close"])
def test_a_log_emptied_to_0_bytes_is_refused_never_loaded_empty_or_migrated(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]], how: str
) -> None:
    probe, _ = written
    kept: dict[str, Any] | None = None
    if how == "crash-with-snapshot":
        store = open_store(data_dir)
        store.snapshot()
        kept = state(store, probe)
        store.close()
        write_one_more(data_dir, tmp_path)
    if how != "clean-close":
        as_if_crashed(data_dir)
    log = data_dir / journal.LOG_NAME
    os.truncate(log, 0)
    before = sorted((p.name, p.read_bytes()) for p in data_dir.iterdir())
    message = refuses(data_dir, rf"{log} is empty \(0 bytes\): it lost its header")
    assert "not loaded as an empty store" in message
    refuses(data_dir, r"lost its header", read_only=True)
    # Nothing was migrated or snapshotted over it: repair still sees the loss.
    assert sorted((p.name, p.read_bytes()) for p in data_dir.iterdir()) == before

    report = repair(data_dir)
    start = (report.snapshot_seq or 0) + 1
    assert report.lost_seq is not None and report.lost_seq[0] == start
    assert any("lost its header" in p for p in report.problems), report.problems
    aside = [p for p in report.moved_aside if ".damaged-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == b""
    store = open_store(data_dir)
    try:
        if kept is not None:
            assert state(store, probe) == kept  # the snapshot's state
        else:
            assert all(store.stats(ns).memories == 0 for ns in NAMESPACES)
    finally:
        store.close()


def test_a_log_emptied_after_kill_9_is_refused_by_the_command_line(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    data_dir = tmp_path / "crash"
    acked = _acknowledged_then_kill(script, data_dir, 64 * 1024 * 1024, acks=5)
    assert acked and not (data_dir / journal.SNAPSHOT_NAME).exists()
    os.truncate(data_dir / journal.LOG_NAME, 0)
    env = {**os.environ, "PYTHONPATH": str(REPO), "GRAPHSVC_EMBED": "off"}
    env.pop("GRAPHSVC_NEO4J_URI", None)
    for command in (["stats"], ["remember", "after the loss"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "graphsvc.cli",
                *command,
                "--data-dir",
                str(data_dir),
                "--namespace",
                "crash",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=120,
            check=False,
        )
        assert done.returncode == 3, (done.stdout, done.stderr)
        assert "lost its header" in done.stderr and f"{REPAIR} {data_dir}" in done.stderr
        assert "Traceback" not in done.stderr and "migrating" not in done.stderr
    assert (data_dir / journal.LOG_NAME).stat().st_size == 0
    assert not (data_dir / journal.SNAPSHOT_NAME).exists()


def test_an_empty_log_beside_a_version_1_snapshot_still_loads(
    data_dir: Path, tmp_path: Path
) -> None:
    # graphsvc before checksums emptied its log after each snapshot: that store is whole.
    probe = Probe()
    store = open_store(data_dir, fsync=False)
    populate(service_on(store, tmp_path), probe)
    store.snapshot(version=2)
    expected = state(store, probe)
    store.close()
    to_version_1(data_dir)
    (data_dir / journal.LOG_NAME).write_bytes(b"")
    store = open_store(data_dir)  # migrates
    try:
        assert state(store, probe) == expected
    finally:
        store.close()
    assert journal.scan_file(data_dir / journal.LOG_NAME).version == journal.FORMAT_VERSION


def test_a_crash_before_the_first_log_had_its_header_still_opens(data_dir: Path) -> None:
    # The first open's crash between creating log.new.jsonl and writing its header: nothing was
    # ever acknowledged, so this is a brand-new store.
    store = open_store(data_dir)
    store.close()
    (data_dir / journal.LOG_NAME).rename(data_dir / journal.NEW_LOG_NAME)
    os.truncate(data_dir / journal.NEW_LOG_NAME, 0)
    as_if_crashed(data_dir)
    store = open_store(data_dir)
    try:
        assert store.stats("alpha").memories == 0
    finally:
        store.close()
    assert not (data_dir / journal.NEW_LOG_NAME).exists()
    assert journal.scan_file(data_dir / journal.LOG_NAME).version == journal.FORMAT_VERSION


def _compacted_store(path: Path, tmp_path: Path, text: str) -> None:
    store = open_store(path, fsync=False)
    service_on(store, tmp_path).remember("alpha", MemoryInput(text=text))
    store.snapshot()
    service_on(store, tmp_path).remember("alpha", MemoryInput(text=f"{text}, later"))
    store.close()


def test_a_log_from_another_store_is_refused_and_repair_sets_it_aside(
    data_dir: Path, tmp_path: Path
) -> None:
    _compacted_store(data_dir, tmp_path, "the kettle of store A")
    other = tmp_path / "other"
    _compacted_store(other, tmp_path, "the kettle of store B")
    foreign = (other / journal.LOG_NAME).read_bytes()
    (data_dir / journal.LOG_NAME).write_bytes(foreign)
    refuses(data_dir, r"replaced by (another store|one from another store or generation)")

    report = repair(data_dir)
    aside = [p for p in report.moved_aside if ".foreign-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == foreign
    store = open_store(data_dir)
    try:
        texts = [m.text for m in store.export("alpha") if isinstance(m, Memory)]
        assert texts == ["the kettle of store A"]  # the snapshot; what A's log had is lost
    finally:
        store.close()


def _crashed_store(path: Path, tmp_path: Path, texts: list[str]) -> None:
    store = open_store(path, fsync=False)
    service = service_on(store, tmp_path)
    for text in texts:
        service.remember("alpha", MemoryInput(text=text))
    store.close()
    as_if_crashed(path)


def test_a_log_from_another_store_without_snapshot_or_marker_is_refused_then_kept(
    data_dir: Path, tmp_path: Path
) -> None:
    _crashed_store(data_dir, tmp_path, ["the kettle of store A", "the boiler of store A"])
    other = tmp_path / "other"
    _crashed_store(other, tmp_path, ["the kettle of store B"])
    foreign = (other / journal.LOG_NAME).read_bytes()
    (data_dir / journal.LOG_NAME).write_bytes(foreign)
    assert {p.name for p in data_dir.iterdir()} == {
        journal.LOCK_NAME,
        journal.LOG_NAME,
        journal.STORE_NAME,
    }
    refuses(data_dir, r"is a log of store [0-9a-f]{32}, but .*store\.json says .*another store")
    refuses(data_dir, r"another store", read_only=True)

    # store.json and the log disagree and nothing else says which one is the stranger: repair
    # keeps the log, whose records verify, and moves store.json aside (before: the log, and
    # the store opened empty). A's own log, if it was the one lost, is restored from a backup.
    store_json = (data_dir / journal.STORE_NAME).read_bytes()
    report = repair(data_dir)
    aside = [p for p in report.moved_aside if ".foreign-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == store_json
    assert (data_dir / journal.LOG_NAME).read_bytes() == foreign
    assert report.lost_seq is None
    assert [m.text for m in _memories(data_dir)] == ["the kettle of store B"]


def test_store_json_alone_is_refused_never_opened_empty(data_dir: Path, tmp_path: Path) -> None:
    # The reproduction: a store whose log, lock and clean-close marker are deleted keeps
    # its store.json. Before, that opened as an empty store (export: 0 rows), and the next
    # writer made the loss permanent.
    _crashed_store(data_dir, tmp_path, ["x"])
    for name in (journal.LOG_NAME, journal.LOCK_NAME):
        (data_dir / name).unlink()
    assert {p.name for p in data_dir.iterdir()} == {journal.STORE_NAME}
    message = refuses(data_dir, r"log\.jsonl is missing, but store\.json \(store [0-9a-f]{32}\)")
    assert "Put it back, or accept the loss" in message
    refuses(data_dir, r"store\.json", read_only=True)
    assert {p.name for p in data_dir.iterdir()} == {journal.STORE_NAME}  # nothing left behind
    done = subprocess.run(
        [sys.executable, "-m", "graphsvc.cli", "export", "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}},
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert f"{REPAIR} {data_dir}" in done.stderr and "Traceback" not in done.stderr

    report = repair(data_dir)  # accepting the loss is explicit
    assert report.lost_seq == (1, None)
    assert any(f.startswith("store.json: store ") for f in report.files), report.files
    store = open_store(data_dir)
    try:
        assert store.stats("alpha").memories == 0
    finally:
        store.close()


def test_repair_never_moves_aside_a_log_whose_records_verify(
    data_dir: Path, tmp_path: Path
) -> None:
    # The reproduction: garbage in log.old.jsonl beside an intact log of 40 records.
    # The open is refused (good); before, repair then moved the intact log aside, started an
    # empty store and reported "log.jsonl is missing", "cut: 0 records", "lost: unknown".
    _crashed_store(data_dir, tmp_path, [f"memory {i} of forty" for i in range(40)])
    intact = (data_dir / journal.LOG_NAME).read_bytes()
    garbage = random.Random(4).randbytes(300)
    (data_dir / journal.OLD_LOG_NAME).write_bytes(garbage)
    refuses(data_dir, r"log\.old\.jsonl:1 .*no valid header")

    report = repair(data_dir)
    assert (data_dir / journal.LOG_NAME).read_bytes() == intact
    assert [p.read_bytes() for p in report.moved_aside] == [garbage]  # kept, unchanged
    assert report.lost_seq is None and report.cut_records == 0
    assert any(
        f.startswith("log.jsonl: log ") and "40 records (seq 1..40) verify" in f
        for f in report.files
    ), report.files
    assert any(f.startswith("log.old.jsonl: no valid header") for f in report.files)
    text = report.describe()
    assert "40 records (seq 1..40) verify" in text and "lost" not in text
    store = open_store(data_dir)
    try:
        assert store.stats("alpha").memories == 40
    finally:
        store.close()


@pytest.mark.parametrize("snapshot", [False, True], ids=["log-only", "snapshot-and-log"])
def test_another_stores_store_json_is_set_aside_not_the_log(
    data_dir: Path, tmp_path: Path, snapshot: bool
) -> None:
    # store.json replaced by another store's, beside a log (and snapshot) that agree with each
    # other: the odd one out is store.json. Before, repair moved the log aside as foreign.
    if snapshot:
        _compacted_store(data_dir, tmp_path, "the kettle of store A")
        as_if_crashed(data_dir)
    else:
        _crashed_store(data_dir, tmp_path, [f"memory {i} of store A" for i in range(5)])
    expected = sorted(m.id for m in _memories(data_dir))
    other = tmp_path / "other"
    _crashed_store(other, tmp_path, ["the kettle of store B"])
    foreign = (other / journal.STORE_NAME).read_bytes()
    (data_dir / journal.STORE_NAME).write_bytes(foreign)
    logs = {p.name: p.read_bytes() for p in data_dir.iterdir() if p.name.endswith(".json")}
    refuses(data_dir, r"store")

    report = repair(data_dir)
    assert [p.read_bytes() for p in report.moved_aside] == [foreign]
    assert report.lost_seq is None
    assert any("store.json" in p for p in report.problems), report.problems
    for name, content in logs.items():
        if name != journal.STORE_NAME:
            assert (data_dir / name).read_bytes() == content
    assert sorted(m.id for m in _memories(data_dir)) == expected
    assert not repair(data_dir).changed


def test_a_rolled_back_snapshot_reports_the_sequence_numbers_it_loses(
    data_dir: Path, tmp_path: Path
) -> None:
    store = open_store(data_dir, fsync=False)
    service = service_on(store, tmp_path)
    for i in range(3):
        service.remember("alpha", MemoryInput(text=f"before the first snapshot {i}"))
    store.snapshot()  # at seq 3
    older = (data_dir / journal.SNAPSHOT_NAME).read_bytes()
    for i in range(4):
        service.remember("alpha", MemoryInput(text=f"between the snapshots {i}"))
    store.snapshot()  # at seq 7: the log continues it
    for i in range(2):
        service.remember("alpha", MemoryInput(text=f"after the second snapshot {i}"))  # 8, 9
    store.close()
    as_if_crashed(data_dir)
    (data_dir / journal.SNAPSHOT_NAME).write_bytes(older)  # a restored copy, rolled back
    refuses(data_dir, r"continues into log")

    report = repair(data_dir)
    assert report.lost_seq == (4, 9)  # before: (4, None), "unknown"
    assert any("generation 1, the state at seq 3" in f for f in report.files), report.files
    assert any(
        f.startswith("log.jsonl: ") and "continuing from seq 7" in f and "(seq 8..9)" in f
        for f in report.files
    ), report.files
    assert "lost: acknowledged records from seq 4 to 9" in report.describe()
    assert len(report.moved_aside) == 1
    assert [m.text for m in _memories(data_dir)] == [
        f"before the first snapshot {i}" for i in range(3)
    ]


def _memories(data_dir: Path) -> list[Memory]:
    store = open_store(data_dir, read_only=True)
    try:
        return [m for m in store.export("alpha") if isinstance(m, Memory)]
    finally:
        store.close()


def test_a_store_made_before_store_ids_loads_and_gains_one(data_dir: Path, tmp_path: Path) -> None:
    _crashed_store(data_dir, tmp_path, ["an old kettle"])
    # What graphsvc wrote before store ids: no store.json, a log header without "store".
    (data_dir / journal.STORE_NAME).unlink()
    log = data_dir / journal.LOG_NAME
    lines = log.read_bytes().split(b"\n")
    header = orjson.loads(lines[0][18:])
    del header["store"]
    lines[0] = journal.encode(header)[:-1]
    log.write_bytes(b"\n".join(lines))
    before = sorted((p.name, p.read_bytes()) for p in data_dir.iterdir())

    reader = open_store(data_dir, read_only=True)
    try:
        assert reader.stats("alpha").memories == 1
    finally:
        reader.close()
    assert sorted((p.name, p.read_bytes()) for p in data_dir.iterdir()) == before

    store = open_store(data_dir)
    try:
        assert store.stats("alpha").memories == 1
        store_id = datadir.read_store_id(data_dir / journal.STORE_NAME)
        assert store_id is not None
        assert journal.log_head(journal.scan_file(log)).store is None  # not rewritten yet
        store.snapshot()  # the next rewrite carries the id
    finally:
        store.close()
    assert journal.log_head(journal.scan_file(log)).store == store_id
    assert datadir.read_snapshot(data_dir / journal.SNAPSHOT_NAME).head.store == store_id
    store = open_store(data_dir)
    try:
        assert store.stats("alpha").memories == 1
    finally:
        store.close()


def test_an_older_generation_of_the_log_is_refused(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    older = (data_dir / journal.LOG_NAME).read_bytes()
    store = open_store(data_dir)
    store.snapshot()
    store.close()
    (data_dir / journal.LOG_NAME).write_bytes(older)
    as_if_crashed(data_dir)
    refuses(data_dir, r"continues into log [0-9a-f]{32}")


def test_a_log_without_its_snapshot_is_refused_and_repair_cannot_invent_it(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    store = open_store(data_dir)
    store.snapshot()
    store.close()
    (data_dir / journal.SNAPSHOT_NAME).unlink()
    refuses(data_dir, r"continues from seq \d+ .*snapshot\.json is missing")
    with pytest.raises(StoreCorruptError, match=r"restore snapshot\.json from a backup"):
        repair(data_dir)


def test_a_damaged_snapshot_is_refused_with_a_restore_hint(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    store = open_store(data_dir)
    store.snapshot()
    store.close()
    snapshot = data_dir / journal.SNAPSHOT_NAME
    line = _flip(snapshot, b"was descaled")
    refuses(data_dir, rf"{snapshot}:{line} .*checksum.*restore .*snapshot\.json from a backup")


# -- repair ---------------------------------------------------------------------------------------


def test_repair_keeps_every_record_before_the_damage_and_reports_the_rest(
    data_dir: Path, tmp_path: Path
) -> None:
    store = open_store(data_dir, fsync=False)
    service = service_on(store, tmp_path)
    ids = [service.remember("alpha", MemoryInput(text=f"memory {i} of ten")).id for i in range(10)]
    store.close()
    log = data_dir / journal.LOG_NAME
    line = _flip(log, b"memory 6 of ten")  # seq 7, line 8
    damaged = log.read_bytes()
    offset = sum(len(x) + 1 for x in damaged.split(b"\n")[: line - 1])

    report = repair(data_dir)
    assert report.kept_records == 6 and report.kept_seq == (1, 6)
    assert report.cut_records == 3 and report.cut_seq == (8, 10)
    assert report.cut_bytes == len(damaged) - offset
    assert report.kept_bytes == offset == log.stat().st_size
    assert report.lost_seq == (7, 10)
    assert len(report.moved_aside) == 1 and report.moved_aside[0].read_bytes() == damaged
    assert f"{log}:{line} (byte {offset}): damaged" in report.problems[0]
    text = report.describe()
    assert "kept: 6 log records (seq 1..6)" in text and "(seq 8..10)" in text
    assert not (data_dir / journal.CLEAN_NAME).exists()

    store = open_store(data_dir)
    try:
        assert [m.id for m in store.get_memories("alpha", ids)] == ids[:6]
        service_on(store, tmp_path).remember("alpha", MemoryInput(text="after the repair"))
    finally:
        store.close()
    assert not repair(data_dir).changed


def test_repair_cuts_a_torn_tail_and_a_healthy_store_is_left_alone(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    probe, expected = written
    before = sorted((p.name, p.read_bytes()) for p in data_dir.iterdir())
    healthy = repair(data_dir)
    assert not healthy.changed and not healthy.problems
    assert "nothing to repair" in healthy.describe()
    assert sorted((p.name, p.read_bytes()) for p in data_dir.iterdir()) == before

    as_if_crashed(data_dir)
    log = data_dir / journal.LOG_NAME
    good = log.read_bytes()
    with open(log, "ab") as handle:
        handle.write(journal.encode({"op": "forget", "ns": "alpha", "id": "x", "seq": 99})[:40])
    report = repair(data_dir)
    assert report.problems[0].endswith("(a write that was never acknowledged)")
    assert report.lost_seq is None and report.cut_bytes == 40 and report.cut_records == 0
    assert log.read_bytes() == good
    store = open_store(data_dir)
    try:
        assert state(store, probe) == expected
    finally:
        store.close()


def test_repair_refuses_while_a_writer_has_the_store_open(data_dir: Path) -> None:
    store = open_store(data_dir, fsync=False)
    try:
        with pytest.raises(StoreUnavailableError, match="in use"):
            repair(data_dir)
    finally:
        store.close()


def test_the_repair_command_prints_its_report(
    data_dir: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    log = data_dir / journal.LOG_NAME
    _flip(log, b"Round 1: the kettle was replaced in beta")
    result = CliRunner().invoke(repair_command, ["--data-dir", str(data_dir), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["changed"] and report["kept"]["records"] >= 1 and report["cut"]["bytes"] > 0
    again = CliRunner().invoke(repair_command, ["--data-dir", str(data_dir)])
    assert again.exit_code == 0 and "nothing to repair" in again.output


# -- version 1 -------------------------------------------------------------------------------------


def to_version_1(data_dir: Path) -> None:
    """Rewrite a closed directory the way graphsvc wrote it before checksums: the log's records
    as bare JSON lines, the snapshot as one JSON object with ``"version": 1``, no marker."""
    log = data_dir / journal.LOG_NAME
    frames = journal.scan_file(log).frames[1:]
    log.write_bytes(b"".join(bytes(f.payload) + b"\n" for f in frames))
    snapshot_path = data_dir / journal.SNAPSHOT_NAME
    if snapshot_path.exists():
        snapshot = datadir.read_snapshot(snapshot_path)
        spaces: dict[str, dict[str, Any]] = {}
        for frame in snapshot.frames:
            value = frame.record()
            body = spaces.setdefault(
                value["ns"], {"memories": [], "links": [], "beliefs": [], "events": {}}
            )
            if value["op"] == "events":
                body["events"].setdefault(value["run"], []).extend(value["rows"])
            else:
                body[value["op"]].extend(value["rows"])
        legacy = {"version": 1, "seq": snapshot.head.seq, "namespaces": spaces}
        snapshot_path.write_bytes(orjson.dumps(legacy))
    (data_dir / journal.CLEAN_NAME).unlink(missing_ok=True)


@pytest.mark.parametrize("with_snapshot", [False, True], ids=["log-only", "snapshot-and-log"])
def test_a_version_1_directory_loads_and_is_migrated_by_its_first_writer(
    data_dir: Path, tmp_path: Path, with_snapshot: bool
) -> None:
    probe = Probe()
    store = open_store(data_dir, fsync=False)
    service = service_on(store, tmp_path)
    populate(service, probe)
    if with_snapshot:
        store.snapshot(version=2)  # to_version_1 converts JSON rows
        service.remember("alpha", MemoryInput(text="a zebra after the snapshot"))
    expected = state(store, probe)
    store.close()
    to_version_1(data_dir)
    log = data_dir / journal.LOG_NAME
    assert log.read_bytes().startswith(b'{"op":')
    legacy = sorted((p.name, p.read_bytes()) for p in data_dir.iterdir())

    reader = open_store(data_dir, read_only=True)
    try:
        assert state(reader, probe) == expected
    finally:
        reader.close()
    assert sorted((p.name, p.read_bytes()) for p in data_dir.iterdir()) == legacy

    writer = open_store(data_dir)  # migrates: a snapshot in the new format at once
    try:
        assert state(writer, probe) == expected
    finally:
        writer.close()
    assert journal.scan_file(log).version == journal.FORMAT_VERSION
    assert (
        datadir.read_snapshot(data_dir / journal.SNAPSHOT_NAME).head.version
        == journal.SNAPSHOT_VERSION
    )
    assert not (data_dir / journal.OLD_LOG_NAME).exists()
    store = open_store(data_dir)
    try:
        assert state(store, probe) == expected
    finally:
        store.close()


def test_a_damaged_version_1_log_is_refused_and_repaired(
    data_dir: Path, tmp_path: Path, written: tuple[Probe, dict[str, Any]]
) -> None:
    to_version_1(data_dir)
    log = data_dir / journal.LOG_NAME
    _replace_line(log, 5, b'{"op": "upsert", garb')
    refuses(data_dir, rf"{log}:5\b")
    report = repair(data_dir)
    assert report.kept_records == 4 and report.kept_seq == (1, 4) and report.cut_records > 0
    store = open_store(data_dir)
    store.close()
    assert journal.scan_file(log).version == journal.FORMAT_VERSION


# -- a failed write (a full disk) ------------------------------------------------------------------


def _big_batch(tag: str) -> list[MemoryInput]:
    return [MemoryInput(text=f"{tag} {i} " + "filler words " * 300) for i in range(12)]


def _fill(path: Path) -> None:
    """Write to ``path`` until the file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Any:
    """A 512 KiB tmpfs (needs root: mount), unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(
            "ENOSPC ON TMPFS NOT RUN: mounting a tmpfs needs root "
            f"({done.stderr.decode().strip()}); the RLIMIT_FSIZE variant still runs"
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_a_write_that_fills_the_disk_is_rolled_back_and_the_store_stays_usable(
    small_filesystem: Path, tmp_path: Path
) -> None:
    data_dir = small_filesystem / "data"
    store = open_store(data_dir, fsync=True)
    service = service_on(store, tmp_path)
    try:
        first = service.remember("alpha", MemoryInput(text="written before the disk fills"))
        filler = small_filesystem / "filler"
        _fill(filler)
        log = data_dir / journal.LOG_NAME
        size = log.stat().st_size
        with pytest.raises(StoreUnavailableError, match=r"No space left.*nothing was written"):
            service.remember_many("alpha", _big_batch("refused"))
        assert log.stat().st_size == size  # the partial record was cut
        assert store.stats("alpha").memories == 1
        filler.unlink()  # space comes back
        kept = service.remember_many("alpha", _big_batch("accepted"))
    finally:
        store.close()
    store = open_store(data_dir)
    try:
        assert store.stats("alpha").memories == 1 + len(kept)
        assert store.get_memories("alpha", [first.id]) == [first]
    finally:
        store.close()


ROLLBACK = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path

    from graphsvc.errors import StoreUnavailableError
    from graphsvc.model import MemoryInput
    from graphsvc.service import MemoryService
    from graphsvc.settings import Settings
    from graphsvc.store.mirror import MirrorStore

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    data_dir = Path(sys.argv[1])
    store = MirrorStore(data_dir, fsync=True)
    store.open()
    service = MemoryService(store, Settings(data_dir=data_dir, fsync=True))
    log = data_dir / "log.jsonl"
    out = {"acked": [str(service.remember("alpha", MemoryInput(text="first")).id)]}
    size = log.stat().st_size
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 2000, hard))
    big = [MemoryInput(text=f"big {i} " + "filler words " * 300) for i in range(12)]
    try:
        service.remember_many("alpha", big)
        out["error"] = None
    except StoreUnavailableError as exc:
        out["error"] = str(exc)
    out["size_after_failure"] = log.stat().st_size
    out["size_before"] = size
    out["acked"].append(str(service.remember("alpha", MemoryInput(text="small fits")).id))
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    out["acked"] += [str(m.id) for m in service.remember_many("alpha", big)]
    store.close()
    print(json.dumps(out))
    """
)


def test_a_write_past_the_file_size_limit_is_rolled_back(tmp_path: Path) -> None:
    script = tmp_path / "rollback.py"
    script.write_text(ROLLBACK)
    data_dir = tmp_path / "data"
    done = subprocess.run(
        [sys.executable, str(script), str(data_dir)],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    out = json.loads(done.stdout)
    assert "File too large" in out["error"] and "nothing was written" in out["error"]
    assert out["size_after_failure"] == out["size_before"]
    store = open_store(data_dir)
    try:
        acked = [UUID(i) for i in out["acked"]]
        assert [m.id for m in store.get_memories("alpha", acked)] == acked
        assert store.stats("alpha").memories == len(acked) == 14
    finally:
        store.close()


# -- locks and read-only opens -------------------------------------------------------------------


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
        service_on(first, tmp_path).remember("alpha", MemoryInput(text="still writable"))
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
    writes = service_on(writer, tmp_path)
    seen = writes.remember("alpha", MemoryInput(text="visible to the reader"))
    reader = open_store(data_dir, read_only=True)
    try:
        assert reader.get_memories("alpha", [seen.id]) == [seen]
        reads = service_on(reader, tmp_path)
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
    as_if_crashed(data_dir)
    log = data_dir / "log.jsonl"
    with open(log, "ab") as handle:
        handle.write(journal.encode({"op": "torn", "seq": 1000})[:25])
    before = sorted((p.name, p.read_bytes()) for p in data_dir.iterdir())
    reader = open_store(data_dir, read_only=True)
    try:
        assert state(reader, probe) == expected
    finally:
        reader.close()
    assert sorted((p.name, p.read_bytes()) for p in data_dir.iterdir()) == before
    missing = data_dir.parent / "never-created"
    empty = open_store(missing, read_only=True)
    try:
        assert empty.stats("alpha").memories == 0
    finally:
        empty.close()
    assert not missing.exists()


# -- compaction: crashes at every step, failures, reads during it ------------------------------


def _copy(data_dir: Path, name: str) -> Path:
    """What a crash at this moment leaves (the live store's files, copied as they are)."""
    target = data_dir.parent / name
    shutil.copytree(data_dir, target)
    return target


def test_a_crash_at_any_point_of_a_compaction_reopens_to_the_same_state(
    data_dir: Path, tmp_path: Path
) -> None:
    probe = Probe()
    store = open_store(data_dir, fsync=False, snapshot_bytes=1 << 40)
    service = service_on(store, tmp_path)
    try:
        populate(service, probe)
        store.snapshot()  # an earlier generation: the compaction below replaces it
        service.remember("alpha", MemoryInput(text="a zebra in the log before the compaction"))
        before = state(store, probe)
        crashes = {"before": (_copy(data_dir, "before"), before)}
        with store._log.lock:  # the compaction's steps, one at a time
            store._log.rotate()
            capture = store._log.capture()
        switched = _copy(data_dir, "switched")
        crashes["switched"] = (switched, before)
        # Between writing the new segment and the first rename: the old files and the new one.
        header_written = _copy(crashes["before"][0], "header-written")
        shutil.copy(switched / journal.LOG_NAME, header_written / journal.NEW_LOG_NAME)
        crashes["header-written"] = (header_written, before)
        # Between the two renames: log.old.jsonl and log.new.jsonl, no log.jsonl.
        between = _copy(switched, "between-renames")
        os.rename(between / journal.LOG_NAME, between / journal.NEW_LOG_NAME)
        crashes["between-renames"] = (between, before)
        # Writes go on into the new segment while the snapshot is written.
        service.remember("beta", MemoryInput(text="a zebra written during the compaction"))
        during = state(store, probe)
        half = _copy(data_dir, "snapshot-half-written")
        frames = b"".join(snapshot_frames(capture))
        (half / journal.SNAPSHOT_TMP_NAME).write_bytes(frames[: len(frames) // 2])
        crashes["snapshot-half-written"] = (half, during)
        retired = data_dir / journal.OLD_LOG_NAME
        old_segment = retired.read_bytes()
        store._log.write_snapshot(capture, True)
        assert not retired.exists()
        crashes["done"] = (_copy(data_dir, "done"), during)
        # Between the snapshot's rename and the retired segment's deletion.
        renamed = _copy(data_dir, "snapshot-renamed")
        (renamed / journal.OLD_LOG_NAME).write_bytes(old_segment)
        crashes["snapshot-renamed"] = (renamed, during)
    finally:
        store.close()

    for name, (path, expected) in crashes.items():
        (path / journal.LOCK_NAME).write_text("")  # the copy's lock is not held by anyone
        reader = open_store(path, read_only=True)
        try:
            assert state(reader, probe) == expected, name
        finally:
            reader.close()
        store = open_store(path)
        try:
            assert state(store, probe) == expected, name
        finally:
            store.close()
        leftovers = {journal.OLD_LOG_NAME, journal.NEW_LOG_NAME, journal.SNAPSHOT_TMP_NAME}
        assert not leftovers & {p.name for p in path.iterdir()}, name
        store = open_store(path)
        try:
            assert state(store, probe) == expected, name
        finally:
            store.close()


def test_a_compaction_that_fails_keeps_every_write_and_is_retried(
    data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe()
    store = open_store(data_dir, fsync=False, snapshot_bytes=1 << 40)
    try:
        populate(service_on(store, tmp_path), probe)
        (data_dir / journal.SNAPSHOT_TMP_NAME).mkdir()  # the snapshot cannot be written
        with pytest.raises(StoreUnavailableError, match="the log still holds every write"):
            store.snapshot()
        assert (data_dir / journal.OLD_LOG_NAME).exists()  # retired, not deleted
        service_on(store, tmp_path).remember("alpha", MemoryInput(text="a zebra after it"))
        expected = state(store, probe)
    finally:
        store.close()
    with caplog.at_level(logging.WARNING, logger="graphsvc.store"):
        store = open_store(data_dir)  # tries to finish it, fails again, opens all the same
    try:
        assert state(store, probe) == expected
        assert any("compaction in" in r.getMessage() for r in caplog.records)
    finally:
        store.close()
    caplog.clear()
    (data_dir / journal.SNAPSHOT_TMP_NAME).rmdir()
    with caplog.at_level(logging.WARNING, logger="graphsvc.store"):
        store = open_store(data_dir)  # finishes the compaction
    try:
        assert any("finishing a compaction" in r.getMessage() for r in caplog.records)
        assert not (data_dir / journal.OLD_LOG_NAME).exists()
        assert state(store, probe) == expected
    finally:
        store.close()


def test_a_compaction_does_not_block_reads(tmp_path: Path) -> None:
    data_dir = tmp_path / "big"
    store = open_store(data_dir, fsync=False, snapshot_bytes=1 << 40)
    rng = random.Random(7)
    words = [f"w{i}x" for i in range(5000)]
    try:
        service = service_on(store, tmp_path)
        for batch in range(10):
            service.remember_many(
                "alpha",
                [
                    MemoryInput(text=" ".join(rng.choices(words, k=18)) + f" number {i}")
                    for i in range(batch * 2000, (batch + 1) * 2000)
                ],
            )
        assert store.stats("alpha").memories == 20_000
    finally:
        store.close()
    started = time.perf_counter()
    store = open_store(data_dir, fsync=False, snapshot_bytes=1024)
    restart = time.perf_counter() - started
    latencies: list[tuple[float, float]] = []
    stop = threading.Event()
    reads = service_on(store, tmp_path)

    def reader() -> None:
        for i in itertools.count():
            if stop.is_set():
                return
            began = time.perf_counter()
            reads.bundle("alpha", f"{words[i % 5000]} {words[(i * 31) % 5000]}")
            latencies.append((began, time.perf_counter() - began))

    thread = threading.Thread(target=reader)
    try:
        thread.start()
        time.sleep(0.2)
        began = time.perf_counter()
        service_on(store, tmp_path).remember("alpha", MemoryInput(text="triggers compaction"))
        write = time.perf_counter() - began
        assert store.compacting  # the snapshot is written in the background
        store.wait_for_compaction()
        ended = time.perf_counter()
        time.sleep(0.1)
    finally:
        stop.set()
        thread.join()
        store.close()
    during = [seconds for at, seconds in latencies if began <= at + seconds and at <= ended]
    print(
        f"\n20000 memories: restart {restart:.2f} s; the write that starts the compaction "
        f"{write * 1000:.0f} ms; compaction {ended - began:.2f} s; {len(during)} reads during "
        f"it, slowest {max(during) * 1000:.0f} ms (before: slowest "
        f"{max((s for at, s in latencies if at < began), default=0) * 1000:.0f} ms)"
    )
    assert len(during) >= 2
    assert max(during) < 1.0
    assert write < 1.0
    assert datadir.read_snapshot(data_dir / journal.SNAPSHOT_NAME).head.seq == 11


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
        # Through the buffered reader: readline() may hold lines that communicate() would skip.
        rest = proc.stdout.read()
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
        proc.wait(timeout=30)
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
    assert not (data_dir / journal.CLEAN_NAME).exists()  # what as_if_crashed() imitates

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


@pytest.mark.parametrize("how", ["log", "snapshot-v3", "snapshot-v2"])
def test_validity_intervals_persist_through_log_and_snapshots(tmp_path: Path, how: str) -> None:
    data_dir = tmp_path / "data"
    start = datetime(2024, 1, 1, tzinfo=UTC)
    store = open_store(data_dir, fsync=False)
    with store:
        service = service_on(store, tmp_path)
        written = service.remember_many(
            "alpha",
            [
                MemoryInput(
                    text="Lead is Alice", valid_from=start, valid_until=start.replace(month=6)
                ),
                MemoryInput(text="Lead is Bob", valid_from=start.replace(month=6)),
                MemoryInput(text="No interval at all"),
            ],
        )
        if how != "log":
            store.snapshot(version=3 if how == "snapshot-v3" else 2)
    with open_store(data_dir, fsync=False) as again:
        # Through the service, which sets invalidatedAt (computed when read, never stored).
        read = service_on(again, tmp_path).get_memories("alpha", [m.id for m in written])
        assert read == written


def test_memory_rows_written_before_validity_intervals_still_load(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with open_store(data_dir, fsync=False) as store:
        made = service_on(store, tmp_path).remember_many(
            "alpha", [MemoryInput(text="Old"), MemoryInput(text="Older")]
        )
    log = data_dir / journal.LOG_NAME
    for number, line in enumerate(log_lines(data_dir)[:-1], start=1):
        record = orjson.loads(line[18:])
        if record.get("op") == "upsert":
            rows = record["memories"]
            assert all(len(row) == 13 and row[11:] == [None, None] for row in rows)
            record["memories"] = [row[:11] for row in rows]  # as graphsvc wrote them before
            _replace_line(log, number, journal.encode(record)[:-1])
            break
    else:
        raise AssertionError("no memories record in the log")
    with open_store(data_dir, fsync=False) as again:
        assert again.get_memories("alpha", [m.id for m in made]) == made
