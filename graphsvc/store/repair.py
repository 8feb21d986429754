"""Repair of the embedded store's files: ``graphsvc repair --data-dir DIR``.

When :class:`~graphsvc.store.mirror.MirrorStore` refuses to open a data directory (damage in the
log, a torn record after a clean close, a missing or replaced log), :func:`repair` makes it
openable again, losing as little as the files allow and saying exactly what:

- it keeps every record that verifies (checksum, a valid write, ``seq`` following the one
  before) up to the first one that does not, and rewrites the log with them;
- it moves every file it replaces aside, unchanged, as ``NAME.damaged-<UTC time>`` (the file with
  the damage), ``NAME.cut-<time>`` (a later segment cut with it) or ``NAME.foreign-<time>`` (a
  log that belongs to another store or generation), so nothing is deleted;
- a missing, foreign or emptied (0 bytes) log is replaced by a new one that continues the
  snapshot (the records after the snapshot, if there were any, are lost: the report says from
  which ``seq``, and to which when a file shows it);
- it never sets aside a log whose records verify and replay: a damaged ``log.old.jsonl`` that
  the log does not continue goes aside alone, and a ``store.json`` that names another store
  than the log (and the snapshot) is the one set aside and rewritten
  (:meth:`_Repair.settle_store_id`);
- it reports what it found in each file before changing anything (:func:`survey`: identities
  and the ``seq`` ranges of the records that verify), and what it kept and cut: records, bytes
  and ``seq`` ranges.

It refuses what it cannot fix: a damaged snapshot, or a log that continues a snapshot that is
gone (restore ``snapshot.json`` from a backup). It takes the writer's lock, so it never runs beside
a writer. A healthy directory is left untouched ("nothing to repair").

The command (the lead wires it into ``graphsvc.cli.COMMANDS`` as
``"repair": ("graphsvc.store.repair:repair_command", "Check the embedded store's files; keep every
record that verifies and move the rest aside.")``) is :func:`repair_command`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from graphsvc.errors import BadInputError, StoreCorruptError, StoreUnavailableError
from graphsvc.store import datadir, journal
from graphsvc.store.datadir import Chain
from graphsvc.store.journal import (
    CLEAN_NAME,
    LOG_NAME,
    NEW_LOG_NAME,
    OLD_LOG_NAME,
    SNAPSHOT_NAME,
    STORE_NAME,
    Frame,
    LogError,
    LogHead,
    Scan,
)
from graphsvc.store.mirror import MirrorStore, Replayed, lock_data_dir, lock_used

_TMP_NAME = "log.repair.tmp"


@dataclass(frozen=True)
class RepairReport:
    """What :func:`repair` found and did.

    Attributes:
        data_dir: the data directory.
        problems: what was wrong, one sentence each (empty: nothing to repair).
        actions: what was done, one sentence each.
        kept_records: log records the repaired log holds after the snapshot.
        kept_bytes: size of the rewritten log (0 when no log was rewritten).
        kept_seq: first and last ``seq`` of the records kept after the snapshot, or None.
        snapshot_seq: the snapshot's ``seq`` (the state the log continues), None without one.
        cut_records: records that verify but were cut, because they follow the damage.
        cut_bytes: bytes cut from the log (the damaged record, what follows, later segments).
        cut_seq: lowest and highest ``seq`` among the cut records that verify, or None.
        lost_seq: a range of acknowledged records that are gone and could not be recovered
            (a log cut short after a clean close, a missing log), or None; ``(first, None)`` when
            the end is unknown.
        moved_aside: the files moved aside, unchanged.
        files: what repair found in each file before it changed anything, one line each
            (its identity, and the ``seq`` range of the records that verify).
    """

    data_dir: Path
    problems: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    kept_records: int = 0
    kept_bytes: int = 0
    kept_seq: tuple[int, int] | None = None
    snapshot_seq: int | None = None
    cut_records: int = 0
    cut_bytes: int = 0
    cut_seq: tuple[int, int] | None = None
    lost_seq: tuple[int, int | None] | None = None
    moved_aside: tuple[Path, ...] = ()
    files: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether any file was changed."""
        return bool(self.actions)

    def to_json_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (paths as strings)."""
        return {
            "dataDir": str(self.data_dir),
            "changed": self.changed,
            "problems": list(self.problems),
            "actions": list(self.actions),
            "snapshotSeq": self.snapshot_seq,
            "kept": {
                "records": self.kept_records,
                "bytes": self.kept_bytes,
                "seq": list(self.kept_seq) if self.kept_seq else None,
            },
            "cut": {
                "records": self.cut_records,
                "bytes": self.cut_bytes,
                "seq": list(self.cut_seq) if self.cut_seq else None,
            },
            "lostSeq": list(self.lost_seq) if self.lost_seq else None,
            "movedAside": [str(p) for p in self.moved_aside],
            "files": list(self.files),
        }

    def describe(self) -> str:
        """The report for people."""
        if not self.problems:
            return f"{self.data_dir}: nothing to repair (every record verifies)."
        lines = [f"Repair of {self.data_dir}", "files:"]
        lines += [f"  - {f}" for f in self.files]
        lines.append("found:")
        lines += [f"  - {p}" for p in self.problems]
        lines.append("did:")
        lines += [f"  - {a}" for a in self.actions] or ["  - nothing"]
        kept = f"{self.kept_records} log records"
        if self.kept_seq:
            kept += f" (seq {self.kept_seq[0]}..{self.kept_seq[1]})"
        if self.snapshot_seq is not None:
            kept += f" after the snapshot at seq {self.snapshot_seq}"
        lines.append(f"kept: {kept}; the log is {self.kept_bytes} bytes")
        cut = f"{self.cut_bytes} bytes, {self.cut_records} records that verify"
        if self.cut_seq:
            cut += f" (seq {self.cut_seq[0]}..{self.cut_seq[1]})"
        lines.append(f"cut: {cut}")
        if self.lost_seq:
            first, last = self.lost_seq
            lines.append(
                f"lost: acknowledged records from seq {first}"
                + (f" to {last}" if last is not None else " on, if there were any (unknown)")
            )
        for path in self.moved_aside:
            lines.append(f"moved aside (unchanged): {path}")
        return "\n".join(lines)


def repair(data_dir: Path) -> RepairReport:
    """Make an embedded store's data directory openable, keeping every record that verifies up
    to the first damage; see the module docstring.

    Args:
        data_dir: the data directory (no writer may have it open).

    Raises:
        BadInputError: ``data_dir`` is not a directory.
        StoreUnavailableError: a writer has it open, or a file cannot be read or written.
        StoreCorruptError: what repair cannot fix (a damaged or missing snapshot); the message
            says what to do.
    """
    if not data_dir.is_dir():
        raise BadInputError(f"{data_dir} is not a directory: there is no store to repair")
    lock_existed = lock_used(data_dir)
    lock = lock_data_dir(data_dir)
    try:
        files = survey(data_dir)
        report = replace(_Repair(data_dir, lock_existed).run(), files=files)
    except OSError as exc:
        raise StoreUnavailableError(f"cannot repair {data_dir}: {exc}") from exc
    finally:
        lock.close()
    if report.changed:  # what repair keeps, an open accepts: check it, changing nothing
        check = MirrorStore(data_dir, read_only=True)
        check.open()
        check.close()
    return report


class _Repair:
    """One repair: fix the files' arrangement first (missing, foreign, headless logs), then cut
    the log at its first problem."""

    def __init__(self, root: Path, lock_existed: bool) -> None:
        self.root = root
        self.lock_existed = lock_existed
        self.stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.problems: list[str] = []
        self.actions: list[str] = []
        self.moved: list[Path] = []
        self.lost: tuple[int, int | None] | None = None
        self.installed_bytes = 0
        #: The last seq of verified records set aside because they cannot be replayed (they
        #: continue a segment or snapshot that is gone), when there were any.
        self.unreplayable_end: int | None = None
        self.cut_records = 0
        self.cut_bytes = 0
        self.cut_seq: tuple[int, int] | None = None

    # -- files -----------------------------------------------------------------------------------

    def aside_path(self, path: Path, why: str) -> Path:
        target = path.with_name(f"{path.name}.{why}-{self.stamp}")
        number = 1
        while target.exists():
            target = path.with_name(f"{path.name}.{why}-{self.stamp}-{number}")
            number += 1
        return target

    def set_aside(self, path: Path, why: str, *, keep: bool = False) -> Path:
        """Move ``path`` aside (``keep``: as a hard link, leaving the original for an atomic
        replace)."""
        target = self.aside_path(path, why)
        if keep:
            os.link(path, target)
        else:
            os.rename(path, target)
        self.moved.append(target)
        self.actions.append(f"moved {path.name} aside as {target.name}")
        return target

    def drop_marker(self) -> None:
        marker = self.root / CLEAN_NAME
        if marker.exists():
            marker.unlink()
            self.actions.append(f"removed {CLEAN_NAME} (the log changed)")

    def install_log(self, frames: list[bytes]) -> int:
        """Write a new ``log.jsonl`` from frames (temporary file, fsync, rename)."""
        tmp = self.root / _TMP_NAME
        journal.write_file(tmp, frames)
        size = tmp.stat().st_size
        os.replace(tmp, self.root / LOG_NAME)
        journal.fsync_dir(self.root)
        return size

    @staticmethod
    def continuation(chain: Chain) -> LogHead:
        """The header of an empty log that continues the snapshot (or starts a store)."""
        snap = chain.snapshot
        store = chain.store
        if snap is not None and snap.head.log is not None:
            return LogHead(
                snap.head.log, gen=snap.head.gen, base=snap.head.seq, prev=None, store=store
            )
        return LogHead(journal.new_log_id(), gen=0, base=chain.start_seq, prev=None, store=store)

    # -- the steps -------------------------------------------------------------------------------

    def run(self) -> RepairReport:
        chain = self.arrange()
        store = MirrorStore(None)
        if chain.snapshot is not None:
            try:
                store.load_snapshot(chain.snapshot)
            except LogError as exc:
                raise StoreCorruptError(
                    f"{exc}; restore {SNAPSHOT_NAME} from a backup: repair cannot rebuild it"
                ) from exc
        replayed = store.replay(chain)
        snapshot_seq = None if chain.snapshot is None else chain.start_seq
        report: dict[str, Any] = {"snapshot_seq": snapshot_seq}
        if replayed.problem is not None:
            report.update(self.cut(chain, replayed))
        else:
            kept = sum(len(s.scan.frames) - (s.scan.version == 2) for s in chain.segments)
            report["kept_records"] = kept
            report["kept_bytes"] = self.installed_bytes
            if replayed.first_seq is not None and replayed.last_seq is not None:
                report["kept_seq"] = (replayed.first_seq, replayed.last_seq)
        if self.cut_records:  # logs set aside whole because they cannot be replayed here
            ranges = [r for r in (report.get("cut_seq"), self.cut_seq) if r is not None]
            report["cut_records"] = report.get("cut_records", 0) + self.cut_records
            report["cut_bytes"] = report.get("cut_bytes", 0) + self.cut_bytes
            report["cut_seq"] = (min(r[0] for r in ranges), max(r[1] for r in ranges))
        marker = chain.marker
        last_seq = store.seq
        problem = replayed.problem
        if problem is not None and (problem.kind == "damaged" or marker is not None):
            cut_seqs = _seqs(replayed.after)
            end = marker.seq if marker is not None else max(cut_seqs, default=None)
            if end is None or end > last_seq:
                self.lost = (last_seq + 1, end)
        if marker is not None:
            active = chain.active
            if active is not None and active.head.log != marker.log:
                self.problems.append(
                    f"{CLEAN_NAME} names log {marker.log}, but {LOG_NAME} is {active.describe()}"
                )
            if marker.seq > last_seq and replayed.problem is None:
                self.problems.append(
                    f"the store was closed cleanly at seq {marker.seq}, but the log ends at seq "
                    f"{last_seq}"
                )
                self.lost = (last_seq + 1, marker.seq)
            if self.problems or self.actions:
                self.drop_marker()
        return RepairReport(
            data_dir=self.root,
            problems=tuple(self.problems),
            actions=tuple(self.actions),
            lost_seq=self.lost,
            moved_aside=tuple(self.moved),
            **report,
        )

    def arrange(self) -> Chain:
        """Fix what keeps :func:`datadir.inspect` from naming a chain to replay: a log whose
        header does not verify, a missing or foreign log.

        Raises:
            StoreCorruptError: a damaged or missing snapshot.
        """
        root = self.root
        log_path, old_path = root / LOG_NAME, root / OLD_LOG_NAME
        self.settle_store_id()
        for _ in range(4):
            try:
                chain = datadir.inspect(root, lock_existed=self.lock_existed)
            except LogError as exc:
                if exc.path.name == SNAPSHOT_NAME:
                    raise StoreCorruptError(
                        f"{exc}; restore {SNAPSHOT_NAME} from a backup: repair cannot rebuild a "
                        "snapshot"
                    ) from exc
                self.problems.append(str(exc))
                self.set_aside(exc.path, "damaged")
                if exc.path.name == OLD_LOG_NAME and log_path.exists():
                    self.cut_if_continuing(log_path)
                self.drop_marker()
                continue
            if chain.refusal_kind == "missing-snapshot":
                raise StoreCorruptError(
                    f"cannot repair {root}: {chain.refusal}; restore {SNAPSHOT_NAME} from a backup"
                )
            if chain.refusal_kind is None:
                return chain
            assert chain.refusal is not None
            self.problems.append(chain.refusal)
            if chain.refusal_kind == "foreign-log" and log_path.exists():
                self.note_unreplayable(log_path, chain, chain.start_seq)
                self.set_aside(log_path, "foreign")
                continue  # the old segment, if any, may now be the log to keep
            if chain.refusal_kind == "empty-log":
                # Then as a missing log: a new one continues the snapshot, the loss reported.
                self.set_aside(chain.roll_forward or log_path, "damaged")
            if old_path.exists():
                if not log_path.exists() and self.old_continues(chain):
                    os.rename(old_path, log_path)
                    journal.fsync_dir(root)
                    self.actions.append(
                        f"renamed {OLD_LOG_NAME} to {LOG_NAME}: it continues the snapshot"
                    )
                    continue
                self.set_aside(old_path, "foreign")
            head = self.continuation(chain)
            size = self.install_log([journal.encode(head.record())])
            self.installed_bytes = size
            self.actions.append(
                f"started an empty {LOG_NAME} ({size} bytes) continuing "
                + (f"the snapshot at seq {head.base}" if chain.snapshot else "an empty store")
            )
            marker = chain.marker
            ends = [self.unreplayable_end, None if marker is None else marker.seq]
            end = max((e for e in ends if e is not None), default=None)
            if end is None:
                self.lost = (head.base + 1, None)
            elif end > head.base:
                self.lost = (head.base + 1, end)
            self.drop_marker()
        raise StoreCorruptError(f"cannot make sense of the files in {root}; restore a backup")

    def settle_store_id(self) -> None:
        """``store.json`` names one store, and the log (and the snapshot, when there is one)
        agree on another: ``store.json`` is the stranger (replaced by another store's), so it
        is moved aside and rewritten with the id the other files carry. A log whose records
        verify is never set aside for it."""
        path = self.root / STORE_NAME
        try:
            mine = datadir.read_store_id(path)
        except LogError:
            return  # unreadable: inspect reports it and it is set aside as damaged
        if mine is None:
            return
        theirs: set[str | None] = set()
        logs: set[str | None] = set()
        for name in (LOG_NAME, OLD_LOG_NAME):
            segment = self.root / name
            if segment.exists():
                try:
                    head = journal.log_head(journal.scan_file(segment))
                except LogError:
                    continue
                theirs.add(head.store)
                logs.add(head.log)
        if not logs:
            return
        snapshot = self.root / SNAPSHOT_NAME
        if snapshot.exists():
            try:
                snap = datadir.read_snapshot(snapshot).head
            except LogError:
                return
            if snap.log not in logs:
                return  # the snapshot and the log disagree: not a matter of store.json
            theirs.add(snap.store)
        try:
            marker = datadir.read_marker(self.root / CLEAN_NAME)
        except LogError:
            marker = None
        if marker is not None and marker.log not in logs:
            return  # the marker names another log: the log is the stranger
        known = theirs - {None}
        if len(known) != 1 or mine in known:
            return
        store = known.pop()
        assert store is not None
        self.problems.append(
            f"{STORE_NAME} says this directory is store {mine}, but the log"
            + (" and the snapshot are" if snapshot.exists() else " is")
            + f" of store {store}: {STORE_NAME} was replaced by another store's (if the log is "
            "the stranger instead, restore this store's log from a backup)"
        )
        self.set_aside(path, "foreign")
        datadir.write_store_id(self.root, store)
        self.actions.append(f"wrote {STORE_NAME} for store {store}, the store of the log")

    def cut_if_continuing(self, log_path: Path) -> None:
        """``log.old.jsonl`` was set aside as damaged: move ``log.jsonl`` aside too only when it
        continues that segment (its records cannot be replayed without it); a log that starts
        its store, or continues the snapshot, stays where it is."""
        try:
            head = journal.log_head(journal.scan_file(log_path))
        except LogError:
            return  # inspect will report it
        snapshot = self.root / SNAPSHOT_NAME
        snap_log = None
        if snapshot.exists():
            try:
                snap_log = datadir.read_snapshot(snapshot).head.log
            except LogError:
                return  # inspect will refuse the snapshot
        if head.prev is None or head.log == snap_log:
            return
        start = 0
        if snapshot.exists():
            start = datadir.read_snapshot(snapshot).head.seq
        self.note_unreplayable(log_path, None, start)
        self.set_aside(log_path, "cut")

    def note_unreplayable(self, path: Path, chain: Chain | None, start: int) -> None:
        """A log whose records verify but cannot be replayed here is about to be set aside:
        count those past ``start`` (the state the directory keeps) as cut, with their ``seq``
        range, when they are this store's."""
        try:
            scan = journal.scan_file(path)
            head = journal.log_head(scan)
        except LogError:
            return
        store = chain.store if chain is not None else None
        if head.store is not None and store is not None and head.store != store:
            return  # another store's records: not this store's loss
        records = scan.frames[1:] if scan.version == journal.FORMAT_VERSION else scan.frames
        seqs = [seq for seq in _seqs(records) if seq > start]
        if seqs:
            self.cut_records += len(seqs)
            self.cut_bytes += scan.size
            low, high = min(seqs), max(seqs)
            self.cut_seq = (
                (low, high)
                if self.cut_seq is None
                else (
                    min(low, self.cut_seq[0]),
                    max(high, self.cut_seq[1]),
                )
            )
            self.unreplayable_end = max(high, self.unreplayable_end or 0)

    def old_continues(self, chain: Chain) -> bool:
        """Whether ``log.old.jsonl`` is the segment the snapshot continues into (or the first
        one, without a snapshot that names a log)."""
        try:
            old = journal.log_head(journal.scan_file(self.root / OLD_LOG_NAME))
        except LogError:
            return False
        snap = chain.snapshot
        if snap is not None and snap.head.log is not None:
            return old.log == snap.head.log
        return old.base <= chain.start_seq

    def cut(self, chain: Chain, replayed: Replayed) -> dict[str, Any]:
        """Rewrite the log up to the replay's first problem; move the originals aside."""
        problem, index = replayed.problem, replayed.problem_segment
        assert problem is not None and index is not None
        segment = chain.segments[index]
        if problem.kind == "damaged":
            what = f"damaged: {problem.reason}"
        elif chain.marker is not None:
            what = (
                f"damaged: {problem.reason} at the end of a log closed cleanly at seq "
                f"{chain.marker.seq} (the file was cut after close)"
            )
        else:
            what = f"torn: {problem.reason} (a write that was never acknowledged)"
        self.problems.append(f"{segment.path}:{problem.line} (byte {problem.offset}): {what}")
        kept_frames = replayed.frames[index]
        if segment.scan.version == journal.FORMAT_VERSION:
            frames = [journal.encode_payload(bytes(f.payload)) for f in kept_frames]
        else:  # a version-1 log: its records move to a new header in this format
            head = LogHead(
                journal.new_log_id(), gen=0, base=chain.start_seq, prev=None, store=chain.store
            )
            frames = [journal.encode(head.record())]
            frames += [journal.encode_payload(bytes(f.payload)) for f in kept_frames]
        later = chain.segments[index + 1 :]
        cut_bytes = segment.scan.size - replayed.kept[index] + sum(s.scan.size for s in later)
        self.set_aside(segment.path, "damaged", keep=True)
        for other in later:
            self.set_aside(other.path, "cut", keep=True)
        size = self.install_log(frames)
        if segment.path.name != LOG_NAME:
            segment.path.unlink()  # its kept records are log.jsonl now
            journal.fsync_dir(self.root)
        self.actions.append(
            f"rewrote {LOG_NAME} with the {len(frames)} frames that verify before the problem"
        )
        self.drop_marker()
        cut_seqs = _seqs(replayed.after)
        out: dict[str, Any] = {
            "kept_records": sum(len(replayed.frames[i]) for i in range(index + 1))
            - sum(s.scan.version == 2 for s in chain.segments[: index + 1]),
            "kept_bytes": size,
            "cut_records": len(cut_seqs),
            "cut_bytes": cut_bytes,
            "cut_seq": (min(cut_seqs), max(cut_seqs)) if cut_seqs else None,
        }
        if replayed.first_seq is not None and replayed.last_seq is not None:
            out["kept_seq"] = (replayed.first_seq, replayed.last_seq)
        return out


def survey(root: Path) -> tuple[str, ...]:
    """What each file of a data directory holds, one line each, read before repair changes
    anything: identities (store, log, generation) and the ``seq`` ranges of the records that
    verify, before and after the first problem."""
    found = []
    for name in (STORE_NAME, SNAPSHOT_NAME, OLD_LOG_NAME, LOG_NAME, NEW_LOG_NAME, CLEAN_NAME):
        path = root / name
        if path.exists():
            found.append(f"{name}: {_describe(path)}")
    return tuple(found)


def _describe(path: Path) -> str:
    name = path.name
    try:
        if name == STORE_NAME:
            return f"store {datadir.read_store_id(path)}"
        if name == CLEAN_NAME:
            marker = datadir.read_marker(path)
            assert marker is not None
            return f"closed cleanly at seq {marker.seq}, log {marker.log}"
        if name == SNAPSHOT_NAME:
            head = datadir.read_snapshot(path).head
            store = f", store {head.store}" if head.store else ""
            follows = f", continued by log {head.log}" if head.log else ""
            return f"generation {head.gen}, the state at seq {head.seq}{follows}{store}"
    except LogError as exc:
        return f"does not verify: line {exc.line} (byte {exc.offset}): {exc.reason}"
    scan = journal.scan_file(path)
    return _describe_log(scan)


def _describe_log(scan: Scan) -> str:
    if scan.size == 0:
        return "empty (0 bytes)"
    try:
        head = journal.log_head(scan)
    except LogError:
        return f"no valid header ({scan.size} bytes)"
    records = scan.frames[1:] if scan.version == journal.FORMAT_VERSION else scan.frames
    store = f" of store {head.store}" if head.store else ""
    text = f"{head.describe()}{store}: {_count(_seqs(records))} verify"
    problem = scan.problem
    if problem is not None:
        text += (
            f"; line {problem.line} (byte {problem.offset}) does not ({problem.reason}), and "
            f"{_count(_seqs(scan.after))} verify after it"
        )
    return text


def _count(seqs: list[int]) -> str:
    if not seqs:
        return "0 records"
    return f"{len(seqs)} record{'s' if len(seqs) != 1 else ''} (seq {min(seqs)}..{max(seqs)})"


def _seqs(frames: list[Frame]) -> list[int]:
    """The ``seq`` of each frame that holds a log record (headers and unreadable ones skipped)."""
    found = []
    for frame in frames:
        try:
            value = frame.record()
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("seq"), int):
            found.append(value["seq"])
    return found


@click.command("repair")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The embedded store's folder (no graphsvc process may have it open).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def repair_command(data_dir: Path, as_json: bool) -> None:
    """Check the embedded store's files; keep every record that verifies and move the rest aside.

    Up to the first damaged record, every record whose checksum holds is kept and the log is
    rewritten with them; the original files are moved aside unchanged (NAME.damaged-TIME). A
    missing or foreign log is replaced by an empty one continuing the snapshot. The report says
    what was kept and cut (records, bytes, seq ranges). A healthy store is left untouched.
    """
    report = repair(data_dir)
    if as_json:
        click.echo(json.dumps(report.to_json_dict(), indent=2))
    else:
        click.echo(report.describe())


__all__ = ["RepairReport", "repair", "repair_command"]
