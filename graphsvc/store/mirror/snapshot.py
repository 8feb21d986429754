"""What a compaction writes: the state captured at one ``seq`` (:class:`Capture`, copies of the
containers taken under the store's lock) and the snapshot's frames made from it without the lock
(version 3: memories, postings and links as binary columns,
:mod:`~graphsvc.store.mirror.columns`; version 2: JSON rows). The file format is
:mod:`graphsvc.store.journal`."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from graphsvc.embedding.codes import VectorModel
from graphsvc.model import Belief, ContextEvent
from graphsvc.store import journal
from graphsvc.store.journal import FORMAT_VERSION, SnapshotHead
from graphsvc.store.mirror import columns
from graphsvc.store.mirror.links import LinkTuple, link_row
from graphsvc.store.mirror.rows import log_belief_row, log_event_row, log_model_row
from graphsvc.store.mirror.state import MirrorState
from graphsvc.store.mirror.table import MemoryTable
from graphsvc.store.mirror.vectors import VectorShare

#: Rows per snapshot frame: small frames keep the compaction thread's turns at the GIL short.
SNAPSHOT_CHUNK = 1000


@dataclass(frozen=True)
class Capture:
    """The state at one ``seq``: copies of the containers (every item in them is immutable, and
    the memory columns that only grow are shared): what a compaction writes while the store goes
    on."""

    head: SnapshotHead
    # (namespace, memories, links, beliefs, events by run)
    spaces: list[
        tuple[str, MemoryTable, list[LinkTuple], list[Belief], dict[str, list[ContextEvent]]]
    ]
    # (namespace, vector model, vectors): every namespace with a model or a vector
    vectors: list[tuple[str, VectorModel | None, VectorShare | None]]

    def release(self) -> None:
        """The snapshot is written (or abandoned): the vector tables may change rows in place."""
        for _, _, share in self.vectors:
            if share is not None:
                share.table.release(share)


def capture(state: MirrorState, head: SnapshotHead) -> Capture:
    """The state now: shallow copies of the containers (the store's lock held)."""
    spaces = [
        (
            ns,
            space.memories.copy(),
            list(space.graph.links()),
            list(space.beliefs.values()),
            {run: list(events) for run, events in space.events.items()},
        )
        for ns, space in state.spaces.items()
    ]
    vectors = [
        (ns, space.model, None if space.vectors is None else space.vectors.share())
        for ns, space in state.spaces.items()
        if space.model is not None or space.vectors is not None
    ]
    return Capture(head, spaces, vectors)


def _chunks(items: Sequence[Any], size: int = SNAPSHOT_CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def snapshot_frames(capture: Capture) -> Iterator[bytes]:
    """The snapshot's frames (version 3: memories, postings and links as binary columns,
    :mod:`~graphsvc.store.mirror.columns`). Each frame is serialised on its own and its
    objects freed at once, so that writing a snapshot leaves no garbage for a full collection
    of the cyclic garbage collector (which would stop every thread, readers included)."""

    def body() -> Iterator[bytes]:
        for ns, memories, links, beliefs, events in capture.spaces:
            for record in columns.table_records(ns, memories):
                yield journal.encode(record)
            for record in columns.link_records(ns, links):
                yield journal.encode(record)
            yield from _row_frames(ns, [], beliefs, events)

    return _counted(capture.head.record(), body(), capture)


def snapshot_frames_v2(capture: Capture) -> Iterator[bytes]:
    """The frames of a version-2 snapshot (memories and links as JSON rows): what graphsvc
    wrote before version 3, kept so that tests can build such a directory."""
    head = capture.head

    def body() -> Iterator[bytes]:
        for ns, memories, links, beliefs, events in capture.spaces:
            rows = [memories.row_form(row) for row in memories.rows()]
            yield from _row_frames(ns, rows, beliefs, events, links)

    record = SnapshotHead(FORMAT_VERSION, head.gen, head.seq, head.log, head.store).record()
    return _counted(record, body(), capture)


def _counted(head: dict[str, Any], body: Iterator[bytes], capture: Capture) -> Iterator[bytes]:
    """A snapshot's frames: its head, ``body``, the vectors' frames, and the end frame that
    counts them all."""
    yield journal.encode(head)
    count = 1
    for frame in body:
        yield frame
        count += 1
    for frame in _vector_frames(capture):
        yield frame
        count += 1
    yield journal.encode({"op": "end", "frames": count + 1})


def _row_frames(
    ns: str,
    memory_rows: Sequence[list[Any]],
    beliefs: Sequence[Belief],
    events: dict[str, list[ContextEvent]],
    links: Sequence[LinkTuple] = (),
) -> Iterator[bytes]:
    """Frames of JSON rows: memories and links (version 2 only), beliefs and events."""
    dumps = orjson.dumps
    parts: list[tuple[bytes, Sequence[Any], Callable[[Any], Any]]] = [
        (b'"op":"memories","ns":%b' % dumps(ns), memory_rows, list),
        (b'"op":"links","ns":%b' % dumps(ns), links, link_row),
        (b'"op":"beliefs","ns":%b' % dumps(ns), beliefs, log_belief_row),
    ]
    parts += [
        (b'"op":"events","ns":%b,"run":%b' % (dumps(ns), dumps(run)), rows, log_event_row)
        for run, rows in events.items()
    ]
    for head, items, row in parts:
        for chunk in _chunks(items):
            rows = b",".join([dumps(row(item)) for item in chunk])
            yield journal.encode_payload(b'{%b,"rows":[%b]}' % (head, rows))


def _vector_frames(capture: Capture) -> Iterator[bytes]:
    """Frames of each namespace's vector model and vectors."""
    for ns, model, share in capture.vectors:
        if model is not None:
            yield journal.encode({"op": "vectorModel", "ns": ns, "model": log_model_row(model)})
        if share is None:
            continue
        # Compact and fast to load: per chunk of rows, the ids as 16 bytes each and the int8
        # codes, both concatenated and base64-encoded.
        for start in range(0, len(share.ids), SNAPSHOT_CHUNK):
            stop = min(start + SNAPSHOT_CHUNK, len(share.ids))
            ids = b"".join([mid.bytes for mid in share.ids[start:stop]])
            yield journal.encode(
                {
                    "op": "vectors",
                    "ns": ns,
                    "dimension": share.matrix.shape[1],
                    "total": len(share.ids),
                    "ids": base64.b64encode(ids).decode("ascii"),
                    "codes": base64.b64encode(share.codes(start, stop)).decode("ascii"),
                }
            )
