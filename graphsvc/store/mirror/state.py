"""The mirror's in-memory state: one :class:`_Namespace` per namespace (the graph, the memories,
the inverted index with its exact statistics, beliefs, context events, the vector model and the
vectors) and the pure state changes that writes, log replay and snapshot loading apply to it."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import networkx as nx
import numpy as np
from sortedcontainers import SortedList

from graphsvc.dense import VectorModel
from graphsvc.errors import StoreCorruptError
from graphsvc.model import Belief, ContextEvent, Link, Memory
from graphsvc.store.base import micros, redact, uuids_in
from graphsvc.store.mirror.rows import _link_from_row, _memory_from_row, _model_from_row
from graphsvc.store.mirror.vectors import VectorTable


@dataclass
class _Namespace:
    """Everything of one namespace. Memories are keyed by ``id.int``: integers hash in C, UUIDs
    in Python, and the index is hashed on every posting. (Integer order is ``str(id)`` order.)"""

    graph: Any = field(default_factory=nx.MultiDiGraph)  # id.int nodes; edges keyed by link kind
    memories: dict[int, Memory] = field(default_factory=dict)
    # What scoring needs of each memory: (length, recordedAt µs, occurredAt µs or None, confidence).
    meta: dict[int, tuple[int, int, int | None, float]] = field(default_factory=dict)
    # Eviction order: (recordedAt in microseconds, id.int), oldest first.
    order: SortedList = field(default_factory=SortedList)
    postings: dict[str, dict[int, int]] = field(default_factory=dict)  # term -> {id.int: tf}
    total_length: int = 0
    beliefs: dict[UUID, Belief] = field(default_factory=dict)
    beliefs_of: dict[int, set[UUID]] = field(default_factory=dict)  # memory -> beliefs using it
    events: dict[str, list[ContextEvent]] = field(default_factory=dict)
    # The model of the namespace's vectors (None: not set, or being replaced), and the vectors
    # (None while there is none).
    model: VectorModel | None = None
    vectors: VectorTable | None = None
    # Every memory key in order (str(id) order), built by the first call that pages by id and
    # kept up to date from then on.
    by_id: SortedList | None = None


class MirrorState:
    """The namespaces of a mirror and every change to them, with no I/O: what a write, a replayed
    log record and a loaded snapshot apply. The first layer of
    :class:`~graphsvc.store.mirror.MirrorStore` (whose constructor sets the attributes)."""

    _spaces: dict[str, _Namespace]

    # -- state changes (no I/O) ------------------------------------------------------------------

    def _space(self, namespace: str) -> _Namespace:
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = _Namespace()
        return space

    def _apply(self, record: dict[str, Any]) -> None:
        ns = record["ns"]
        space = self._space(ns)
        op = record["op"]
        if op == "upsert":
            for mid in record["evict"]:
                self._remove_memory(space, UUID(mid).int)
            self._add_memories(space, [_memory_from_row(ns, row) for row in record["memories"]])
            if record.get("vectors"):  # absent from records written before vectors
                self._put_vectors(space, _vectors_from_rows(record["vectors"]))
        elif op == "vectorModel":
            space.model = _model_from_row(record["model"])
        elif op == "vectors":
            self._put_vectors(space, _vectors_from_rows(record["vectors"]))
        elif op == "clearVectors":
            for mid in record["ids"]:
                self._remove_vector(space, UUID(mid).int)
        elif op == "link":
            for row in record["links"]:
                self._add_link(space, _link_from_row(row))
        elif op == "forget":
            self._remove_memory(space, UUID(record["id"]).int)
        elif op == "erase":
            self._erase_memories(space, [UUID(mid).int for mid in record["ids"]])
        elif op == "drop":
            del self._spaces[ns]
            if space.model is not None:  # the model is the namespace's setting, not its data
                self._space(ns).model = space.model
        elif op == "belief":
            self._add_belief(space, Belief.model_validate(record["belief"]))
        elif op == "event":
            event = ContextEvent.model_validate(record["event"])
            space.events.setdefault(event.run_id, []).append(event)
        elif op == "report":
            events = space.events[record["run"]]
            seq = record["eventSeq"]
            events[seq] = events[seq].model_copy(update={"reported_tokens": record["tokens"]})
        else:
            raise StoreCorruptError(f"unknown log operation {op!r}")

    def _add_memories(self, space: _Namespace, memories: Sequence[Memory]) -> None:
        """Index memories that are not in the store (a batch: sorted structures grow once)."""
        stored = space.memories
        meta = space.meta
        postings = space.postings
        order = []
        total = 0
        for memory in memories:
            key = memory.id.int
            stored[key] = memory
            terms = memory.terms
            recorded = micros(memory.recorded_at)
            occurred = None if memory.occurred_at is None else micros(memory.occurred_at)
            meta[key] = (len(terms), recorded, occurred, memory.confidence)
            order.append((recorded, key))
            total += len(terms)
            for term, count in Counter(terms).items():
                posting = postings.get(term)
                if posting is None:
                    postings[term] = {key: count}
                else:
                    posting[key] = count
        space.order.update(order)
        space.graph.add_nodes_from(key for _, key in order)
        space.total_length += total
        if space.by_id is not None:
            space.by_id.update(key for _, key in order)

    def _remove_memory(self, space: _Namespace, key: int) -> None:
        memory = space.memories.pop(key, None)
        if memory is None:
            return
        recorded = space.meta.pop(key)[1]
        space.order.remove((recorded, key))
        space.graph.remove_node(key)
        for term in set(memory.terms):
            posting = space.postings[term]
            del posting[key]
            if not posting:
                del space.postings[term]
        space.total_length -= len(memory.terms)
        for belief_id in space.beliefs_of.pop(key, set()):
            MirrorState._remove_belief(space, belief_id)
        self._remove_vector(space, key)
        if space.by_id is not None:
            space.by_id.remove(key)

    @staticmethod
    def _put_vectors(space: _Namespace, vectors: Sequence[tuple[UUID, bytes]]) -> None:
        """Store vectors (codes of the namespace's model) of memories the namespace holds.

        Raises:
            StoreCorruptError: no vector model, a wrong length, or an unknown memory (a write
                checks all three, so only a damaged record can hold them).
        """
        if not vectors:
            return
        model = space.model
        if model is None:
            raise StoreCorruptError("vectors written while the namespace had no vector model")
        table = space.vectors
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
            memory = space.memories.get(mid.int)
            if memory is None:
                raise StoreCorruptError(f"a vector for memory {mid}, which is not stored")
            ids.append(memory.id)
        matrix = np.frombuffer(b"".join(codes for _, codes in vectors), dtype=np.int8)
        table.put(ids, matrix.reshape(len(ids), model.dimension))
        space.vectors = table

    @staticmethod
    def _remove_vector(space: _Namespace, key: int) -> None:
        table = space.vectors
        if table is not None and table.remove(key) and not len(table):
            space.vectors = None

    def _erase_memories(self, space: _Namespace, keys: Sequence[int]) -> tuple[int, int, int]:
        """Remove memories with their links and beliefs, and put ``[erased]`` in place of their
        ids in the details of context events; return how many links, beliefs and events."""
        graph = space.graph
        links: set[tuple[int, int, str]] = set()
        beliefs: set[UUID] = set()
        for key in keys:
            if key in graph:
                links.update(graph.out_edges(key, keys=True))
                links.update(graph.in_edges(key, keys=True))
            beliefs.update(space.beliefs_of.get(key, ()))
        for key in keys:
            self._remove_memory(space, key)
        erased = {str(UUID(int=key)) for key in keys}
        rewritten = 0
        for events in space.events.values():
            for index, event in enumerate(events):
                if event.detail is not None and uuids_in(event.detail) & erased:
                    detail = redact(event.detail, erased.__contains__)
                    events[index] = event.model_copy(update={"detail": detail})
                    rewritten += 1
        return len(links), len(beliefs), rewritten

    @staticmethod
    def _by_id(space: _Namespace) -> SortedList:
        """The namespace's memory keys in order (built on first use, then kept up to date)."""
        if space.by_id is None:
            space.by_id = SortedList(space.memories)
        return space.by_id

    @staticmethod
    def _add_link(space: _Namespace, link: Link) -> None:
        space.graph.add_edge(link.source.int, link.target.int, key=link.kind.value, link=link)

    @staticmethod
    def _add_belief(space: _Namespace, belief: Belief) -> None:
        space.beliefs[belief.id] = belief
        for mid in (*belief.source_ids, *belief.linked_context_ids):
            space.beliefs_of.setdefault(mid.int, set()).add(belief.id)

    @staticmethod
    def _remove_belief(space: _Namespace, belief_id: UUID) -> None:
        belief = space.beliefs.pop(belief_id, None)
        if belief is None:
            return
        for mid in (*belief.source_ids, *belief.linked_context_ids):
            users = space.beliefs_of.get(mid.int)
            if users is not None:
                users.discard(belief_id)
                if not users:
                    del space.beliefs_of[mid.int]

    @staticmethod
    def _all_links(space: _Namespace) -> list[Link]:
        return [data["link"] for _, _, data in space.graph.edges(data=True)]

    @staticmethod
    def _links_touching(space: _Namespace, key: int) -> list[Link]:
        graph = space.graph
        found = [d["link"] for _, _, d in graph.out_edges(key, data=True)]
        found += [d["link"] for _, _, d in graph.in_edges(key, data=True)]
        return found


def _vectors_from_rows(rows: list[list[str]]) -> list[tuple[UUID, bytes]]:
    """The ``[id, base64 codes]`` pairs of a log record."""
    return [(UUID(mid), base64.b64decode(codes, validate=True)) for mid, codes in rows]
