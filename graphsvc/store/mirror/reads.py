"""The embedded store's reads of memories, links, beliefs and events: each under the store's
lock, straight from the namespace's tables."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from uuid import UUID

import numpy as np

from graphsvc.model import (
    AsOf,
    Belief,
    ContextEvent,
    Link,
    Memory,
    NamespaceStats,
    Successor,
)
from graphsvc.store.candidates import TermStats, micros
from graphsvc.store.facets import FACETS, FacetCounts, bad_facet
from graphsvc.store.graph import HISTORY_HOPS, Walk, sort_links
from graphsvc.store.mirror.links import LinkTuple, make_link
from graphsvc.store.mirror.state import MirrorState
from graphsvc.store.mirror.table import from_micros


class MirrorReads:
    """Reading memories, links, history, beliefs, events, counts and exports: a part of
    :class:`~graphsvc.store.mirror.MirrorStore`, under its lock."""

    def __init__(self, state: MirrorState, lock: threading.RLock) -> None:
        self._state = state
        self._lock = lock

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        with self._lock:
            table = self._state.space(namespace).memories
            row_of = table.row_of
            rows = [row_of.get(i.int) for i in ids]
            return table.memories([row for row in rows if row is not None])

    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        with self._lock:
            space = self._state.space(namespace)
            postings = space.postings
            df = {t: len(postings[t]) if t in postings else 0 for t in terms}
            return TermStats(len(space.memories), space.total_length, df)

    def visible(self, namespace: str, ids: Sequence[UUID], as_of: AsOf) -> set[UUID]:
        with self._lock:
            space = self._state.space(namespace)
            row_of = space.memories.row_of
            rows = np.asarray(
                [row for i in ids if (row := row_of.get(i.int)) is not None], dtype=np.int64
            )
            kept = space.visible_rows(rows, as_of).tolist()
            return {space.memories.ids[row] for row in kept}

    def successors(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[Successor]:
        with self._lock:
            space = self._state.space(namespace)
            table, graph = space.memories, space.graph
            superseded, incoming = graph.superseded, graph.inn
            known = as_of.at_us if as_of is not None and as_of.known else None
            found: list[tuple[int, int, int]] = []
            for key in {i.int for i in ids}:
                if key not in superseded or key not in table.row_of:
                    continue
                for lk in incoming[key]:
                    if lk[2] != "SUPERSEDES":
                        continue
                    row = table.row_of[lk[0]]
                    if known is not None and (lk[4] > known or table.recorded[row] > known):
                        continue
                    found.append((key, lk[0], table.valid_start(row)))
            found.sort()
            return [
                Successor(UUID(int=older), UUID(int=newer), from_micros(start))
                for older, newer, start in found
            ]

    def supersession_chain(
        self, namespace: str, memory_id: UUID, max_nodes: int
    ) -> tuple[list[Memory], list[Link]]:
        with self._lock:
            space = self._state.space(namespace)
            table, graph = space.memories, space.graph
            if memory_id.int not in table:
                return [], []
            seen = {memory_id.int}
            frontier = [memory_id.int]
            for _ in range(HISTORY_HOPS):
                if not frontier or len(seen) >= max_nodes:
                    break
                layer = sorted(
                    {
                        other
                        for key in frontier
                        for lk in graph.touching(key)
                        if lk[2] == "SUPERSEDES"
                        for other in (lk[0], lk[1])
                        if other not in seen
                    }
                )[: max_nodes - len(seen)]
                seen.update(layer)
                frontier = layer
            members = sorted(seen)
            links = [
                lk
                for key in members
                for lk in graph.outgoing(key)
                if lk[2] == "SUPERSEDES" and lk[1] in seen
            ]
            return [table[key] for key in members], list(sort_links(space.links_of(links)))

    def supersessions(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[tuple[UUID, UUID]]:
        with self._lock:
            graph = self._state.space(namespace).graph
            wanted = {i.int for i in ids}
            written_by = as_of.at_us if as_of is not None and as_of.known else None
            pairs = sorted(
                (u, lk[1])
                for u in wanted
                for lk in graph.outgoing(u)
                if lk[2] == "SUPERSEDES"
                and lk[1] in wanted
                and (written_by is None or lk[4] <= written_by)
            )
            return [(UUID(int=u), UUID(int=v)) for u, v in pairs]

    def walk(
        self,
        namespace: str,
        start: Sequence[UUID],
        depth: int,
        max_nodes: int,
        as_of: AsOf | None = None,
    ) -> Walk:
        with self._lock:
            space = self._state.space(namespace)
            graph = space.graph
            table = space.memories
            starts = {s.int for s in start if s.int in table}
            written_by = as_of.at_us if as_of is not None and as_of.known else None
            frontier = set(starts)
            seen = set(frontier)
            reached: list[tuple[int, int]] = []
            for distance in range(1, depth + 1):
                if not frontier or len(reached) >= max_nodes:
                    break
                layer: set[int] = set()
                for node in frontier:
                    if written_by is None:
                        layer.update(graph.neighbours(node))
                    else:
                        layer.update(lk[1] for lk in graph.out.get(node, ()) if lk[4] <= written_by)
                        layer.update(lk[0] for lk in graph.inn.get(node, ()) if lk[4] <= written_by)
                layer -= seen
                if as_of is not None and layer:
                    row_of = table.row_of
                    rows = np.asarray([row_of[n] for n in layer], dtype=np.int64)
                    keys = table.keys
                    layer = {keys[r] for r in space.visible_rows(rows, as_of).tolist()}
                seen |= layer
                reached += [(n, distance) for n in sorted(layer)]
                frontier = layer
            reached = reached[:max_nodes]
            members = starts | {n for n, _ in reached}
            links = space.links_of(
                [
                    lk
                    for u in members
                    for lk in graph.outgoing(u)
                    if lk[1] in members and (written_by is None or lk[4] <= written_by)
                ],
            )
            return Walk(
                reached=tuple((table[n], d) for n, d in reached),
                links=sort_links(links),
            )

    def next_recorded(self, namespace: str, ids: Sequence[UUID]) -> list[tuple[UUID, Memory]]:
        with self._lock:
            space = self._state.space(namespace)
            table, order = space.memories, space.order  # (recordedAt micros, id.int), oldest first
            found: list[tuple[UUID, Memory]] = []
            for mid in dict.fromkeys(ids):
                row = table.row_of.get(mid.int)
                if row is None:
                    continue
                after = order.bisect_right((table.recorded[row], mid.int))
                if after < len(order):
                    found.append((mid, table[order[after][1]]))
            return found

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        with self._lock:
            space = self._state.space(namespace)
            found: dict[tuple[int, int, str], LinkTuple] = {}
            for mid in ids:
                for lk in space.graph.touching(mid.int):
                    found[(lk[0], lk[1], lk[2])] = lk
            return list(sort_links(space.links_of(list(found.values()))))

    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        with self._lock:
            return self._state.space(namespace).beliefs.get(belief_id)

    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        with self._lock:
            return list(self._state.space(namespace).events.get(run_id, ()))

    def stats(self, namespace: str) -> NamespaceStats:
        with self._lock:
            space = self._state.space(namespace)
            return NamespaceStats(
                namespace=namespace,
                memories=len(space.memories),
                links=space.graph.count,
                beliefs=len(space.beliefs),
                terms=len(space.postings),
                events=sum(len(ev) for ev in space.events.values()),
            )

    def facet_counts(self, namespace: str, facet: str, top: int) -> FacetCounts:
        with self._lock:
            space = self._state.spaces.get(namespace)
            if space is None:
                if facet not in FACETS:
                    raise bad_facet(facet)
                return FacetCounts(facet, 0, ())
            return space.facets.top(facet, top)

    def list_memories(
        self,
        namespace: str,
        *,
        after: tuple[datetime, str] | None,
        limit: int,
        kind: str | None,
        tag: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> list[Memory]:
        with self._lock:
            space = self._state.space(namespace)
            order = space.order  # (recordedAt micros, id.int), oldest first
            end = (
                len(order)
                if after is None
                else order.bisect_left((micros(after[0]), UUID(after[1]).int))
            )
            table = space.memories
            row_of = table.row_of
            low = None if since is None else micros(since)
            high = None if until is None else micros(until)
            page: list[Memory] = []
            for index in range(end - 1, -1, -1):
                row = row_of[order[index][1]]
                if kind is not None and table.kinds[row] != kind:
                    continue
                if tag is not None and tag not in table.tags[row]:
                    continue
                if low is not None or high is not None:
                    when = table.when(row)
                    if (low is not None and when < low) or (high is not None and when >= high):
                        continue
                page.append(table.memory(row))
                if len(page) == limit:
                    break
            return page

    def namespaces(self) -> list[str]:
        with self._lock:
            return sorted(ns for ns, space in self._state.spaces.items() if space.memories)

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        """As :meth:`Store.export`: the state at the call, copied under the lock (a few memory
        copies); the memories and links are built from the copy without it."""
        with self._lock:
            space = self._state.space(namespace)
            table = space.memories.copy()
            keys = [key for _, key in space.order]  # oldest first, as Neo4j exports them
            tuples = list(space.graph.links())
        # Rows are in write order, which an import of older times does not keep.
        row_of = table.row_of
        for key in keys:
            yield table.memory(row_of[key])
        yield from sort_links([make_link(lk, table) for lk in tuples])
