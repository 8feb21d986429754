"""The embedded store's file format: checksummed frames, how a file of them is scanned, the headers
of log segments and snapshots, and durable writes. How a data directory's files fit together
(reading the snapshot, the marker and ``store.json``, the chain of segments to replay) is
:mod:`graphsvc.store.datadir`. No state of the store lives here: the mirror
(:mod:`graphsvc.store.mirror`) applies what is read, and :mod:`graphsvc.store.repair` rewrites
what is found damaged.

**Frames.** Every record is one line, ``LLLLLLLL CCCCCCCC PAYLOAD\\n``: the payload's length and
its CRC-32 (``zlib.crc32``) as eight hex digits each, then the payload, a JSON object without a
newline. A reader tells three things apart:

- a frame that verifies (length and checksum hold), even when its final newline is missing;
- a *torn tail*: an incomplete frame at the end of the file (a prefix of a frame: fewer payload
  bytes than its length says, or a cut header, or zero bytes), the mark of a write that was never
  acknowledged because the process died in it;
- *damage*: a complete frame whose checksum or length fails, or anything that is no frame at all,
  or a torn frame followed by more data.

**A data directory** holds:

- ``store.json``: the store's identity, one frame (``op: store``, ``store``: a random id),
  written once, just after the store's first log (so ``store.json`` without a log is a store
  whose log is gone, refused like any other trace of an earlier store, never opened empty).
  Every segment header and snapshot header carries the id (``store``), and one that names
  another store is refused. Stores made before it have no ``store.json`` and headers without
  ``store``: a writer gives them an id at its first open, and the headers it writes from then
  on carry it (a header without one is not checked).
- ``log.jsonl``: the active log segment, a header frame (``op: header``: a random log id, the
  store's id, the generation, ``base``, the sequence number the segment continues from, and
  ``prev``, the id of the segment before it) then one frame per acknowledged write, ``seq``
  increasing by one.
- ``snapshot.json``: the whole state at one sequence number, as frames: a header (``op:
  snapshot``: its version, generation, ``seq``, ``log``, the id of the segment that continues
  it, and the store's id), chunks of rows (version 2) or of binary columns (version 3), and an
  ``end`` frame counting them. Written to ``snapshot.json.tmp``, fsynced, renamed.
- ``log.old.jsonl``: while a compaction runs, the segment it retired; its records up to the
  snapshot's ``seq`` are in the new snapshot once that is renamed into place, then it is deleted.
- ``log.new.jsonl``: a segment being created (header written and fsynced before it is renamed to
  ``log.jsonl``).
- ``clean-close.json``: written by a clean close (the log id and the last ``seq``), deleted by the
  next writer before it writes. With it, a torn or short log cannot be a crash's torn write: it
  is damage. It is renamed into place whole, so one that does not verify is damage too.
- ``LOCK``: the writer's ``flock``.

A missing ``log.jsonl`` where the directory says there was one (a snapshot, a marker,
``store.json``, ``log.old.jsonl`` or a lock file), an empty one (0 bytes: every segment this
format writes starts with its header, so an empty log lost its header and whatever followed
it), a log that is not the one the snapshot names, or a log that continues a snapshot that is
missing, are refused (:attr:`~graphsvc.store.datadir.Chain.refusal`); ``graphsvc repair``
accepts them explicitly. The one empty log that is not refused is beside a version-1
snapshot (graphsvc before checksums emptied its log after each snapshot).

**Version 1** (graphsvc before checksums): ``log.jsonl`` held bare JSON lines with ``seq`` and
``snapshot.json`` one JSON object with ``"version": 1``. Both still load, without checksums; a
writer migrates them at open by taking a snapshot at once (the next snapshot rewrites the state
in this format and the version-1 log is retired as ``log.old.jsonl``, then deleted).
"""

from __future__ import annotations

import os
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any, Literal

import orjson

FORMAT_VERSION = 2
LEGACY_VERSION = 1
#: The snapshot's content: 3 holds memories, postings and links as binary columns (see
#: :mod:`graphsvc.store.mirror.columns`); 2 (still read) held them as JSON rows. Frames, the
#: snapshot's header and ``end`` record, and log segments are the same in both.
SNAPSHOT_VERSION = 3
SNAPSHOT_VERSIONS = frozenset({FORMAT_VERSION, SNAPSHOT_VERSION})
#: ``prev`` of the first segment written after a version-1 log.
LEGACY_PREV = "v1"

LOG_NAME = "log.jsonl"
OLD_LOG_NAME = "log.old.jsonl"
NEW_LOG_NAME = "log.new.jsonl"
SNAPSHOT_NAME = "snapshot.json"
SNAPSHOT_TMP_NAME = "snapshot.json.tmp"
CLEAN_NAME = "clean-close.json"
STORE_NAME = "store.json"
LOCK_NAME = "LOCK"

_HEAD = 18  # "LLLLLLLL CCCCCCCC "
_HEX = frozenset(b"0123456789abcdef")

ProblemKind = Literal["torn", "damaged"]


class LogError(Exception):
    """A problem found in a data directory's files, where it is (for messages and repair)."""

    def __init__(self, path: Path, line: int, offset: int, reason: str) -> None:
        super().__init__(f"{path}:{line} (byte {offset}): {reason}")
        self.path = path
        self.line = line
        self.offset = offset
        self.reason = reason


# -- frames ---------------------------------------------------------------------------------------


def encode_payload(payload: bytes) -> bytes:
    """The frame of a payload (JSON without a newline), newline included."""
    return b"%08x %08x " % (len(payload), zlib.crc32(payload)) + payload + b"\n"


def encode(record: Mapping[str, Any]) -> bytes:
    """The frame of a record."""
    return encode_payload(orjson.dumps(record))


_tzinfo = attrgetter("tzinfo")
# The zones whose times orjson (the records' encoder) writes exactly as isoformat() does (it rounds
# other offsets to the minute): UTC, every time graphsvc makes or accepts, and none (naive).
_ISOFORMAT_ZONES = frozenset({UTC, None})


def orjson_writes_isoformat(times: Iterable[datetime]) -> bool:
    """Whether orjson writes every one of ``times`` as its ``isoformat()``."""
    return set(map(_tzinfo, times)) <= _ISOFORMAT_ZONES


def isoformats(times: Sequence[datetime]) -> list[str]:
    """``[t.isoformat() for t in times]``, from one orjson call when it writes them the same."""
    if times and orjson_writes_isoformat(times):
        return orjson.dumps(times).decode("ascii")[2:-2].split('","')
    return [t.isoformat() for t in times]


def encode_parts(record: Mapping[str, Any]) -> tuple[bytes, bytes, bytes]:
    """The frame of a record in three parts (header, payload, newline), to be written with
    :func:`write_all_parts` without copying a large payload into one frame."""
    payload = orjson.dumps(record)
    return b"%08x %08x " % (len(payload), zlib.crc32(payload)), payload, b"\n"


@dataclass(frozen=True, slots=True)
class Frame:
    """A frame that verifies: its line (1-based), byte offset, header size (0 for a version-1
    line) and payload (a view of the file's bytes)."""

    line: int
    offset: int
    head: int
    payload: memoryview

    @property
    def end(self) -> int:
        """The byte offset just after the payload (its newline, if any, is not counted)."""
        return self.offset + self.head + len(self.payload)

    def record(self) -> Any:
        """The payload parsed (any JSON value; callers check the shape)."""
        return orjson.loads(self.payload)


@dataclass(frozen=True)
class Problem:
    """Where a file stops verifying: ``torn`` (an incomplete frame at the end: a write that was
    never acknowledged) or ``damaged`` (anything else)."""

    kind: ProblemKind
    line: int
    offset: int
    reason: str

    def error(self, path: Path) -> LogError:
        """This problem as an error located in ``path``."""
        return LogError(path, self.line, self.offset, self.reason)


@dataclass
class Scan:
    """What a file holds, frame by frame, up to the first problem.

    Attributes:
        path: the file.
        version: 2, or 1 for a version-1 file (bare JSON lines, no checksums; an empty file is 1).
        size: bytes in the file.
        frames: every frame that verifies, in order, up to the first problem.
        end: the byte offset just after the last verified frame (and its newline, if present):
            cutting the file there keeps every verified frame.
        problem: the first problem, or None.
        missing_newline: the last frame verifies but its final newline is missing.
        after: frames after the problem that verify (what a cut there loses).
    """

    path: Path
    version: int
    size: int
    frames: list[Frame] = field(default_factory=list)
    end: int = 0
    problem: Problem | None = None
    missing_newline: bool = False
    after: list[Frame] = field(default_factory=list)

    @property
    def cut_bytes(self) -> int:
        """Bytes after :attr:`end` (what a cut at the first problem removes)."""
        return self.size - self.end


def _is_torn_prefix(rest: bytes) -> bool:
    """Whether ``rest`` (bytes after the last newline, shorter than a header) can be the start
    of a frame, or a run of zero bytes (what some file systems leave after a crash)."""
    if not rest.strip(b"\0"):
        return True
    if len(rest) >= _HEAD:
        return False
    for index, byte in enumerate(rest):
        if index in (8, 17):
            if byte != 0x20:
                return False
        elif byte not in _HEX:
            return False
    return True


def _check_v2(data: bytes, start: int, stop: int) -> tuple[int, int] | None:
    """Parse the header of the frame in ``data[start:stop]`` (no newline): ``(length, crc)``,
    or None when the bytes are no frame header."""
    if stop - start < _HEAD or data[start + 8] != 0x20 or data[start + 17] != 0x20:
        return None
    head = data[start : start + 17]
    if not all(b in _HEX for b in head[:8]) or not all(b in _HEX for b in head[9:]):
        return None
    return int(head[:8], 16), int(head[9:], 16)


def scan_frames(path: Path, data: bytes) -> Scan:
    """Scan the bytes of a framed file (a version-2 log, a snapshot, a marker, ``store.json``)."""
    scan = Scan(path=path, version=FORMAT_VERSION, size=len(data))
    view = memoryview(data)
    size = len(data)
    pos = 0
    line = 0
    crc32 = zlib.crc32
    frames = scan.frames
    while pos < size:
        line += 1
        newline = data.find(b"\n", pos)
        complete = newline != -1
        stop = newline if complete else size
        head = _check_v2(data, pos, stop)
        problem: Problem | None = None
        if head is None:
            if not complete and _is_torn_prefix(data[pos:stop]):
                problem = Problem("torn", line, pos, f"an incomplete record of {stop - pos} bytes")
            else:
                problem = Problem("damaged", line, pos, "not a record (no valid frame header)")
        else:
            length, crc = head
            payload = view[pos + _HEAD : stop]
            got = stop - pos - _HEAD
            if got < length and not complete:
                problem = Problem(
                    "torn", line, pos, f"an incomplete record ({got} of {length} payload bytes)"
                )
            elif got != length:
                problem = Problem(
                    "damaged", line, pos, f"the record has {got} bytes where it says {length}"
                )
            elif crc32(payload) != crc:
                problem = Problem("damaged", line, pos, "the record's checksum does not match")
            else:
                frames.append(Frame(line, pos, _HEAD, payload))
                scan.end = newline + 1 if complete else size
                scan.missing_newline = not complete
        if problem is not None:
            scan.problem = problem
            scan.after = _frames_after_v2(data, stop + 1, line)
            break
        pos = stop + 1
    return scan


def _frames_after_v2(data: bytes, pos: int, line: int) -> list[Frame]:
    """The frames that verify from ``pos`` on (line ``line + 1``): what a cut there loses."""
    found = []
    size = len(data)
    view = memoryview(data)
    while pos < size:
        line += 1
        newline = data.find(b"\n", pos)
        stop = size if newline == -1 else newline
        head = _check_v2(data, pos, stop)
        if (
            head is not None
            and stop - pos - _HEAD == head[0]
            and zlib.crc32(view[pos + _HEAD : stop]) == head[1]
        ):
            found.append(Frame(line, pos, _HEAD, view[pos + _HEAD : stop]))
        pos = stop + 1
    return found


def _v1_record(raw: bytes) -> bool:
    try:
        value = orjson.loads(raw)
    except ValueError:
        return False
    return isinstance(value, dict) and isinstance(value.get("seq"), int)


def _scan_v1(path: Path, data: bytes) -> Scan:
    """A version-1 log: bare JSON lines. Without checksums, "verifies" means "parses as an object
    with a ``seq``"; blank lines are skipped."""
    scan = Scan(path=path, version=LEGACY_VERSION, size=len(data))
    view = memoryview(data)
    size = len(data)
    pos = 0
    line = 0
    while pos < size:
        line += 1
        newline = data.find(b"\n", pos)
        complete = newline != -1
        stop = newline if complete else size
        raw = data[pos:stop]
        if not raw.strip():
            scan.end = stop + 1 if complete else size
        elif _v1_record(raw):
            scan.frames.append(Frame(line, pos, 0, view[pos:stop]))
            scan.end = stop + 1 if complete else size
            scan.missing_newline = not complete
        else:
            kind: ProblemKind = "damaged" if complete else "torn"
            reason = "not a valid log record" if complete else "an incomplete last line"
            scan.problem = Problem(kind, line, pos, reason)
            rest = stop + 1
            while rest < size:
                line += 1
                newline = data.find(b"\n", rest)
                end = size if newline == -1 else newline
                if data[rest:end].strip() and _v1_record(data[rest:end]):
                    scan.after.append(Frame(line, rest, 0, view[rest:end]))
                rest = end + 1
            break
        pos = stop + 1
    return scan


def scan_bytes(path: Path, data: bytes) -> Scan:
    """Scan a file's bytes (version detected: a version-1 file starts with ``{`` or is empty)."""
    if not data or data[:1] == b"{":
        return _scan_v1(path, data)
    return scan_frames(path, data)


def scan_file(path: Path) -> Scan:
    """Scan a file.

    Raises:
        OSError: the file cannot be read.
    """
    return scan_bytes(path, path.read_bytes())


# -- segment headers, snapshot headers, the marker ---------------------------------------------


def new_log_id() -> str:
    """A random log id."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class LogHead:
    """A log segment's identity. ``log`` is None for a version-1 log (no header); ``store`` is
    None for a segment written before headers named their store."""

    log: str | None
    gen: int
    base: int
    prev: str | None
    store: str | None = None

    def record(self) -> dict[str, Any]:
        record = {
            "op": "header",
            "version": FORMAT_VERSION,
            "log": self.log,
            "gen": self.gen,
            "base": self.base,
            "prev": self.prev,
        }
        if self.store is not None:
            record["store"] = self.store
        return record

    def describe(self) -> str:
        if self.log is None:
            return "a version-1 log (no header)"
        return f"log {self.log} (generation {self.gen}, continuing from seq {self.base})"


LEGACY_HEAD = LogHead(log=None, gen=0, base=0, prev=None)


def log_head(scan: Scan) -> LogHead:
    """The header of a scanned log segment.

    Raises:
        LogError: a version-2 segment whose first frame is no valid header.
    """
    if scan.version == LEGACY_VERSION:
        return LEGACY_HEAD
    if not scan.frames or scan.frames[0].line != 1:
        problem = scan.problem
        where = (problem.line, problem.offset) if problem else (1, 0)
        raise LogError(scan.path, *where, "the segment has no valid header record")
    value = scan.frames[0].record()
    try:
        if value["op"] != "header" or value["version"] != FORMAT_VERSION:
            raise ValueError("not a header of this format")
        head = LogHead(
            log=value["log"],
            gen=value["gen"],
            base=value["base"],
            prev=value["prev"],
            store=value.get("store"),
        )
        if not isinstance(head.log, str) or not isinstance(head.gen, int):
            raise ValueError("bad types")
        if not (head.store is None or isinstance(head.store, str)):
            raise ValueError("bad types")
        if not isinstance(head.base, int) or not (head.prev is None or isinstance(head.prev, str)):
            raise ValueError("bad types")
    except (KeyError, TypeError, ValueError) as exc:
        raise LogError(scan.path, 1, 0, f"the first record is no valid header ({exc})") from exc
    return head


@dataclass(frozen=True)
class SnapshotHead:
    """A snapshot's identity: the state at ``seq``, continued by the segment ``log`` (None for a
    version-1 snapshot, which names no log), of the store ``store`` (None when written before
    snapshots named their store)."""

    version: int
    gen: int
    seq: int
    log: str | None
    store: str | None = None

    def record(self) -> dict[str, Any]:
        record = {
            "op": "snapshot",
            "version": self.version,
            "gen": self.gen,
            "seq": self.seq,
            "log": self.log,
        }
        if self.store is not None:
            record["store"] = self.store
        return record


# -- files -----------------------------------------------------------------------------------------


def fsync_dir(root: Path) -> None:
    """Make renames and deletions in ``root`` durable.

    Raises:
        OSError: the directory cannot be opened or synced.
    """
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (``os.write`` may write fewer).

    Raises:
        OSError: the write fails (ENOSPC, EIO, EFBIG, ...).
    """
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_all_parts(fd: int, parts: Sequence[bytes]) -> None:
    """:func:`write_all` of the parts one after the other, in as few ``writev`` calls as the
    system allows.

    Raises:
        OSError: the write fails (ENOSPC, EIO, EFBIG, ...).
    """
    views = [memoryview(part) for part in parts if part]
    while views:
        written = os.writev(fd, views)
        while views and written >= len(views[0]):
            written -= len(views.pop(0))
        if written:
            views[0] = views[0][written:]


def write_file(path: Path, chunks: Iterator[bytes] | list[bytes], *, sync: bool = True) -> None:
    """Write a new file from chunks (fsynced when ``sync``); the file is removed on failure.

    Raises:
        OSError: the file cannot be written.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for chunk in chunks:
            write_all(fd, chunk)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)


__all__ = [
    "CLEAN_NAME",
    "FORMAT_VERSION",
    "LEGACY_PREV",
    "LEGACY_VERSION",
    "LOCK_NAME",
    "LOG_NAME",
    "NEW_LOG_NAME",
    "OLD_LOG_NAME",
    "SNAPSHOT_NAME",
    "SNAPSHOT_TMP_NAME",
    "SNAPSHOT_VERSION",
    "SNAPSHOT_VERSIONS",
    "STORE_NAME",
    "Frame",
    "LogError",
    "LogHead",
    "Problem",
    "Scan",
    "SnapshotHead",
    "encode",
    "encode_parts",
    "encode_payload",
    "fsync_dir",
    "isoformats",
    "log_head",
    "new_log_id",
    "orjson_writes_isoformat",
    "scan_bytes",
    "scan_file",
    "write_all",
    "write_all_parts",
    "write_file",
]
