"""The embedded store's in-memory state: one :class:`MirrorNamespace` per namespace (the graph, the
memories, the inverted index with its exact statistics, beliefs, context events, the vector model
and the vectors) and the pure state changes that writes, log replay and snapshot loading apply to
it."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import numpy as np
from numpy.typing import NDArray
from sortedcontainers import SortedList

from graphsvc.embedding.codes import VectorModel
from graphsvc.errors import StoreCorruptError
from graphsvc.model import AsOf, Belief, ContextEvent, Link
from graphsvc.store.mirror.columns import gather_terms
from graphsvc.store.mirror.facets import Facets
from graphsvc.store.mirror.links import (
    LinkGraph,
    LinkTuple,
    link_tuples_from_rows,
    make_link,
)
from graphsvc.store.mirror.rows import model_from_log_row
from graphsvc.store.mirror.table import NO_TIME, MemoryTable, Posting
from graphsvc.store.mirror.vectors import VectorTable
from graphsvc.store.rules import redact, uuids_in

#: Rows added at once from which their postings are built with numpy rather than row by row.
BULK_ROWS = 64
#: The bits of a memory key (``UUID.int``) in a :func:`queue_key`.
KEY_BITS = 128
KEY_MASK = (1 << KEY_BITS) - 1


def queue_key(recorded_us: int, key: int) -> int:
    """One integer that sorts a waiting memory by ``(recordedAt, id)``, as the vector queue
    is read (:attr:`MirrorNamespace.pending`): one int per memory instead of a tuple."""
    return (recorded_us << KEY_BITS) + key


@dataclass
class MirrorNamespace:
    """Everything of one namespace, compactly (:mod:`~graphsvc.store.mirror.table`), and the
    changes to it, with no I/O. Memories are keyed by ``id.int`` (integers hash in C, UUIDs in
    Python; integer order is ``str(id)`` order) and indexed by row."""

    memories: MemoryTable
    graph: LinkGraph = field(default_factory=LinkGraph)
    # Eviction order: (recordedAt in microseconds, id.int), oldest first.
    order: SortedList = field(default_factory=SortedList)
    postings: dict[str, Posting] = field(default_factory=dict)  # term -> rows and counts
    total_length: int = 0
    beliefs: dict[UUID, Belief] = field(default_factory=dict)
    beliefs_of: dict[int, set[UUID]] = field(default_factory=dict)  # memory -> beliefs using it
    events: dict[str, list[ContextEvent]] = field(default_factory=dict)
    # The model of the namespace's vectors (None: not set, or being replaced), and the vectors
    # (None while there is none).
    model: VectorModel | None = None
    vectors: VectorTable | None = None
    # The memories that wait for their vector (the vector queue), each as
    # ``queue_key(recordedAt in microseconds, id.int)``, oldest first: built by the first call
    # that reads the queue (empty at once when every memory has a vector) and kept up to date
    # by every change from then on.
    pending: SortedList | None = None
    # How many memories have each kind, tag, source and day (kept by every change).
    facets: Facets = field(default_factory=Facets)

    # -- memories --------------------------------------------------------------------------------

    def add_columns(self, columns: Sequence[Sequence[Any]]) -> None:
        """Index memories that are not in the store, given as the columns of their fields
        (:meth:`~graphsvc.store.mirror.table.MemoryTable.add_columns`; a batch: sorted
        structures grow once)."""
        self._index_rows(self.memories.add_columns(columns))

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        """Index memories given as log rows that are not in the store."""
        self._index_rows(self.memories.add_rows(rows))

    def _index_rows(self, rows: Sequence[int]) -> None:
        """Index rows just added (each larger than every row indexed before)."""
        table = self.memories
        keys, recorded, lengths = table.keys, table.recorded, table.lengths
        order = list(zip(map(recorded.__getitem__, rows), map(keys.__getitem__, rows), strict=True))
        total = sum(map(lengths.__getitem__, rows))
        if len(rows) < BULK_ROWS:
            postings = self.postings
            names = table.term_names
            for row in rows:
                for number, count in table.term_counts(row).items():
                    term = names[number]
                    posting = postings.get(term)
                    if posting is None:
                        posting = postings[term] = Posting()
                    posting.rows.append(row)
                    posting.tfs.append(count)
        else:
            self._index_bulk(rows)
        self.order.update(order)
        self.total_length += total
        self.facets.add(table, rows)
        if self.pending is not None:  # new memories wait for their vectors (a write that
            # gives them one takes them out again: put_vectors)
            self.pending.update(queue_key(us, key) for us, key in order)

    def _index_bulk(self, rows: Sequence[int]) -> None:
        """:meth:`_index_rows`' postings for many rows at once: the (term, row) pairs counted and
        grouped by numpy, then each term's run appended to its posting in one go (the same
        postings as row by row)."""
        table = self.memories
        wanted = np.asarray(rows, dtype=np.int64)
        terms = gather_terms(table, wanted).astype(np.int64)
        counts = np.frombuffer(table.lengths, dtype=np.int32)[wanted].astype(np.int64)
        span = len(table.ids)  # every row is smaller
        pairs, tfs = np.unique(terms * span + np.repeat(wanted, counts), return_counts=True)
        if not len(pairs):
            return
        numbers, posted = pairs // span, (pairs % span).astype(np.int32)
        tfs = tfs.astype(np.int32)
        starts = np.flatnonzero(np.r_[True, numbers[1:] != numbers[:-1]])
        ends = np.r_[starts[1:], len(pairs)]
        postings = self.postings
        names = table.term_names
        # Byte views of the whole runs: a term's slice of them is cheaper than an array's.
        posted_bytes = posted.data.cast("B")
        tf_bytes = tfs.data.cast("B")
        width = posted.itemsize
        for number, low, high in zip(
            numbers[starts].tolist(),
            (starts * width).tolist(),
            (ends * width).tolist(),
            strict=True,
        ):
            term = names[number]
            posting = postings.get(term)
            if posting is None:
                posting = postings[term] = Posting()
            posting.rows.frombytes(posted_bytes[low:high])
            posting.tfs.frombytes(tf_bytes[low:high])

    def remove_memory(self, key: int, postings: dict[int, list[int]] | None = None) -> None:
        """Remove a memory. ``postings``: instead of leaving its postings now, add its row under
        each of its term numbers, for the caller to remove them all at once
        (:meth:`_remove_postings`)."""
        table = self.memories
        row = table.row_of.get(key)
        if row is None:
            return
        counts = table.term_counts(row)
        length = table.lengths[row]
        if self.pending is not None:
            self.pending.discard(queue_key(table.recorded[row], key))
        self.facets.remove(table, row)
        table.remove(key)
        self.order.remove((table.recorded[row], key))
        self.graph.remove_node(key)
        if postings is None:
            self._remove_postings({number: [row] for number in counts})
        else:
            for number in counts:
                postings.setdefault(number, []).append(row)
        self.total_length -= length
        for belief_id in self.beliefs_of.pop(key, set()):
            self._remove_belief(belief_id)
        self.remove_vector(key)

    def _remove_postings(self, rows_by_term: dict[int, list[int]]) -> None:
        """Remove rows from the postings of the terms they are under (term number -> rows)."""
        names = self.memories.term_names
        for number, rows in rows_by_term.items():
            term = names[number]
            posting = self.postings[term]
            posting.remove_many(sorted(rows))
            if not posting:
                del self.postings[term]

    def erase_memories(self, keys: Sequence[int]) -> tuple[int, int, set[tuple[str, int]]]:
        """Remove memories with their links and beliefs, and put ``[erased]`` in place of their
        ids in the details of context events; return how many links and beliefs, and which
        events (run, position) were rewritten."""
        graph = self.graph
        links: set[tuple[int, int, str]] = set()
        beliefs: set[UUID] = set()
        for key in keys:
            links.update((lk[0], lk[1], lk[2]) for lk in graph.touching(key))
            beliefs.update(self.beliefs_of.get(key, ()))
        postings: dict[int, list[int]] = {}
        for key in keys:
            self.remove_memory(key, postings)
        self._remove_postings(postings)
        erased = {str(UUID(int=key)) for key in keys}
        rewritten: set[tuple[str, int]] = set()
        for run, events in self.events.items():
            for index, event in enumerate(events):
                if event.detail is not None and uuids_in(event.detail) & erased:
                    detail = redact(event.detail, erased.__contains__)
                    events[index] = event.model_copy(update={"detail": detail})
                    rewritten.add((run, index))
        return len(links), len(beliefs), rewritten

    # -- vectors ---------------------------------------------------------------------------------

    def put_vectors(self, vectors: Sequence[tuple[UUID, bytes]]) -> None:
        """Store vectors (codes of the namespace's model) of memories the namespace holds.

        Raises:
            StoreCorruptError: no vector model, a wrong length, or an unknown memory (a write
                checks all three, so only a damaged record can hold them).
        """
        if not vectors:
            return
        model = self.model
        if model is None:
            raise StoreCorruptError("vectors written while the namespace had no vector model")
        table = self.vectors
        if table is None:
            table = VectorTable(model.dimension)
        elif table.dimension != model.dimension:
            raise StoreCorruptError(
                f"vectors of dimension {model.dimension} beside stored ones of {table.dimension}"
            )
        ids = []
        for mid, codes in vectors:
            if len(codes) != model.dimension:
                raise StoreCorruptError(
                    f"a vector of {len(codes)} codes for a model of dimension {model.dimension}"
                )
            if mid.int not in self.memories:
                raise StoreCorruptError(f"a vector for memory {mid}, which is not stored")
            ids.append(self.memories.uuid(mid.int))
        matrix = np.frombuffer(b"".join(codes for _, codes in vectors), dtype=np.int8)
        table.put(ids, matrix.reshape(len(ids), model.dimension))
        self.vectors = table
        pending = self.pending
        if pending is not None:
            memories = self.memories
            recorded, row_of = memories.recorded, memories.row_of
            for mid in ids:
                pending.discard(queue_key(recorded[row_of[mid.int]], mid.int))

    def remove_vector(self, key: int) -> None:
        """Remove a memory's vector, if it has one; a memory still stored then waits for a
        vector again."""
        table = self.vectors
        if table is None or not table.remove(key):
            return
        if not len(table):
            self.vectors = None
        row = self.memories.row_of.get(key)
        if row is not None and self.pending is not None:
            self.pending.add(queue_key(self.memories.recorded[row], key))

    def vector_queue(self) -> SortedList:
        """The namespace's vector queue (:attr:`pending`), built on first use: empty at once
        when every memory has a vector, else from one pass over the rows (after a reopen with a
        backlog); kept up to date by every change from then on."""
        if self.pending is None:
            table = self.memories
            vectors = self.vectors
            waiting = len(table) - (0 if vectors is None else len(vectors))
            if waiting <= 0:
                self.pending = SortedList()
            else:
                recorded = table.recorded
                self.pending = SortedList(
                    queue_key(recorded[row], key)
                    for key, row in table.row_of.items()
                    if vectors is None or key not in vectors
                )
        return self.pending

    # -- beliefs and links -----------------------------------------------------------------------

    def add_belief(self, belief: Belief) -> None:
        self.beliefs[belief.id] = belief
        for mid in (*belief.source_ids, *belief.linked_context_ids):
            self.beliefs_of.setdefault(mid.int, set()).add(belief.id)

    def _remove_belief(self, belief_id: UUID) -> None:
        belief = self.beliefs.pop(belief_id, None)
        if belief is None:
            return
        for mid in (*belief.source_ids, *belief.linked_context_ids):
            users = self.beliefs_of.get(mid.int)
            if users is not None:
                users.discard(belief_id)
                if not users:
                    del self.beliefs_of[mid.int]

    def links_touching(self, key: int) -> list[Link]:
        """The links from and to a memory, built."""
        return self.links_of(self.graph.touching(key))

    def links_of(self, links: Sequence[LinkTuple]) -> list[Link]:
        """The links of these tuples, built."""
        return [make_link(lk, self.memories) for lk in links]

    # -- reads -----------------------------------------------------------------------------------

    def visible_rows(self, rows: NDArray[np.int64], as_of: AsOf) -> NDArray[np.int64]:
        """The rows of ``rows`` visible as of ``as_of`` (:meth:`Store.visible`), in order: the
        times are compared on the columns; in VALID mode only the rows left that have an
        incoming SUPERSEDES link (:attr:`LinkGraph.superseded`) are checked for one from a
        memory started by then."""
        table, at = self.memories, as_of.at_us
        recorded = np.frombuffer(table.recorded, dtype=np.int64)[rows]
        if as_of.known:
            return rows[recorded <= at]
        occurred = np.frombuffer(table.occurred, dtype=np.int64)[rows]
        since = np.frombuffer(table.valid_from, dtype=np.int64)[rows]
        until = np.frombuffer(table.valid_until, dtype=np.int64)[rows]
        start = np.where(since != NO_TIME, since, np.where(occurred != NO_TIME, occurred, recorded))
        rows = rows[(start <= at) & ((until == NO_TIME) | (until > at))]
        superseded = self.graph.superseded
        if not superseded:
            return rows
        incoming, keys, start_of = self.graph.inn, table.keys, table.valid_start
        row_of = table.row_of
        closed = [
            i
            for i, row in enumerate(rows.tolist())
            if keys[row] in superseded
            and any(
                lk[2] == "SUPERSEDES" and start_of(row_of[lk[0]]) <= at
                for lk in incoming[keys[row]]
            )
        ]
        return np.delete(rows, closed) if closed else rows


class MirrorState:
    """The namespaces of a mirror and the change each log record makes to them, with no I/O:
    what a write applies, a replay of the log applies, and a loaded snapshot fills. One part
    of :class:`~graphsvc.store.mirror.MirrorStore`, shared by the others under its lock."""

    def __init__(self) -> None:
        self.spaces: dict[str, MirrorNamespace] = {}

    def space(self, namespace: str) -> MirrorNamespace:
        """The namespace, created empty if it holds nothing yet."""
        space = self.spaces.get(namespace)
        if space is None:
            space = self.spaces[namespace] = MirrorNamespace(MemoryTable(namespace))
        return space

    def clear(self) -> None:
        """Forget every namespace (after an open that failed)."""
        self.spaces.clear()

    def apply(self, record: dict[str, Any]) -> None:
        """Apply a log record.

        Raises:
            StoreCorruptError: an unknown operation, or vectors that do not fit.
            KeyError, ValueError, TypeError, IndexError, AttributeError: a record that is no
                valid write.
        """
        ns = record["ns"]
        space = self.space(ns)
        op = record["op"]
        if op == "upsert":
            for mid in record["evict"]:
                space.remove_memory(UUID(mid).int)
            space.add_rows(record["memories"])
            if record.get("vectors"):  # absent from records written before vectors
                space.put_vectors(_vectors_from_rows(record["vectors"]))
        elif op == "vectorModel":
            space.model = model_from_log_row(record["model"])
        elif op == "vectors":
            space.put_vectors(_vectors_from_rows(record["vectors"]))
        elif op == "clearVectors":
            for mid in record["ids"]:
                space.remove_vector(UUID(mid).int)
        elif op == "link":
            space.graph.add_many(link_tuples_from_rows(record["links"]))
        elif op == "forget":
            space.remove_memory(UUID(record["id"]).int)
        elif op == "erase":
            space.erase_memories([UUID(mid).int for mid in record["ids"]])
        elif op == "drop":
            del self.spaces[ns]
            if space.model is not None:  # the model is the namespace's setting, not its data
                self.space(ns).model = space.model
        elif op == "belief":
            space.add_belief(Belief.model_validate(record["belief"]))
        elif op == "event":
            event = ContextEvent.model_validate(record["event"])
            space.events.setdefault(event.run_id, []).append(event)
        elif op == "report":
            events = space.events[record["run"]]
            seq = record["eventSeq"]
            events[seq] = events[seq].model_copy(update={"reported_tokens": record["tokens"]})
        else:
            raise StoreCorruptError(f"unknown log operation {op!r}")


def _vectors_from_rows(rows: list[list[str]]) -> list[tuple[UUID, bytes]]:
    """The ``[id, base64 codes]`` pairs of a log record."""
    return [(UUID(mid), base64.b64decode(codes, validate=True)) for mid, codes in rows]
