"""The Neo4j store's reads of memories, links, beliefs, runs and counts
(:class:`~graphsvc.store.base.MemoryReads`), and what an operator reads whole (the namespaces,
a namespace's export): each one auto-commit query, a graph walk one per four hops."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from uuid import UUID

from graphsvc.errors import GraphsvcError
from graphsvc.model import AsOf, Belief, ContextEvent, Link, Memory, NamespaceStats, Successor
from graphsvc.store.base import MemoryReads
from graphsvc.store.candidates import ReadAhead
from graphsvc.store.facets import DAY_FACETS, FACETS, FacetCounts, bad_facet
from graphsvc.store.graph import Walk, sort_links
from graphsvc.store.neo4j.boundary import Neo4jBoundary
from graphsvc.store.neo4j.candidates import RowsAhead
from graphsvc.store.neo4j.rows import (
    as_of_param,
    event_from_props,
    link_from_row,
    memory_from_props,
    namespaced_key,
    successor_from_row,
    utc_datetime,
)

EXPORT_PAGE = 1_000
# Breadth-first hops one walk.cypher round trip makes (its layers are written out four times).
HOPS_PER_QUERY = 4


class Neo4jReads(MemoryReads):
    """Reads through the store's boundary."""

    def __init__(self, boundary: Neo4jBoundary) -> None:
        self._boundary = boundary

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        if not ids:
            return []
        found = self._boundary.read("get_memories", ns=namespace, ids=[str(i) for i in ids])[0][
            "memories"
        ]
        by_id = {props["id"]: memory_from_props(namespace, props) for props in found}
        return [by_id[str(i)] for i in ids if str(i) in by_id]

    def window(
        self,
        namespace: str,
        ids: Sequence[UUID],
        ahead: ReadAhead | None = None,
        as_of: AsOf | None = None,
    ) -> tuple[list[Memory], list[tuple[UUID, UUID]]]:
        if not ids:
            return [], []
        asked = [str(i) for i in ids]
        read = ahead.rows if isinstance(ahead, RowsAhead) else {}
        by_id = {key: read[key] for key in asked if key in read}
        missing = [key for key in asked if key not in by_id]
        if missing:
            found = self._boundary.read(
                "window", ns=namespace, ids=missing, asOf=as_of_param(as_of)
            )[0]["memories"]
            by_id.update((props["id"], props) for props in found)
        memories = [memory_from_props(namespace, by_id[key]) for key in asked if key in by_id]
        pairs = sorted(
            {
                (props["id"], older)
                for props in by_id.values()
                for older in props["supersedes"]
                if older in by_id
            }
        )
        return memories, [(UUID(a), UUID(b)) for a, b in pairs]

    def supersessions(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[tuple[UUID, UUID]]:
        if not ids:
            return []
        rows = self._boundary.read(
            "supersessions", ns=namespace, ids=[str(i) for i in ids], asOf=as_of_param(as_of)
        )
        return [(UUID(row["newer"]), UUID(row["older"])) for row in rows]

    def successors(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[Successor]:
        if not ids:
            return []
        rows = self._boundary.read(
            "successors", ns=namespace, ids=[str(i) for i in ids], asOf=as_of_param(as_of)
        )
        return [successor_from_row(row) for row in rows]

    def visible(self, namespace: str, ids: Sequence[UUID], as_of: AsOf) -> set[UUID]:
        if not ids:
            return set()
        row = self._boundary.read(
            "visible", ns=namespace, ids=[str(i) for i in ids], asOf=as_of_param(as_of)
        )[0]
        return {UUID(key) for key in row["ids"]}

    def supersession_chain(
        self, namespace: str, memory_id: UUID, max_nodes: int
    ) -> tuple[list[Memory], list[Link]]:
        rows = self._boundary.read(
            "supersession_chain", ns=namespace, id=str(memory_id), max=max_nodes
        )
        if not rows:
            return [], []
        memories = [memory_from_props(namespace, props) for props in rows[0]["memories"]]
        memories.sort(key=lambda m: str(m.id))
        links = [link_from_row(link) for link in rows[0]["links"]]
        return memories, list(sort_links(links))

    def walk(
        self,
        namespace: str,
        start: Sequence[UUID],
        depth: int,
        max_nodes: int,
        as_of: AsOf | None = None,
    ) -> Walk:
        """As :meth:`Store.walk`: walk.cypher makes up to :data:`HOPS_PER_QUERY` breadth-first hops
        and reads what they reached in one round trip (a deeper walk takes one more per four
        hops). Ids that are no memory of the namespace expand to nothing and match no link."""
        starts = list(dict.fromkeys(str(s) for s in start))
        seen = list(starts)
        frontier = list(starts)
        reached: list[tuple[str, int]] = []
        left = max(depth, 0)
        while True:
            hops = min(left, HOPS_PER_QUERY)
            last = left <= HOPS_PER_QUERY
            row = self._boundary.read(
                "walk",
                ns=namespace,
                frontier=frontier,
                seen=seen,
                room=max_nodes - len(reached),
                hops=hops,
                members=last,
                reached=[n for n, _ in reached],
                starts=starts,
                asOf=as_of_param(as_of),
            )[0]
            distance = depth - left
            for layer in row["layers"][:hops]:
                distance += 1
                reached += [(node, distance) for node in layer]
                seen += layer
                frontier = layer
            left -= hops
            if last:
                break
            if not frontier or len(reached) >= max_nodes:
                left = 0  # nothing more to reach: one more round trip reads the members
        memories = {props["id"]: memory_from_props(namespace, props) for props in row["memories"]}
        links = [link_from_row(link) for link in row["links"]]
        return Walk(
            reached=tuple((memories[n], d) for n, d in reached),
            links=sort_links(links),
        )

    def next_recorded(self, namespace: str, ids: Sequence[UUID]) -> list[tuple[UUID, Memory]]:
        asked = list(dict.fromkeys(ids))
        if not asked:
            return []
        rows = self._boundary.read("next_recorded", ns=namespace, ids=[str(i) for i in asked])
        after = {row["seed"]: memory_from_props(namespace, row["memory"]) for row in rows}
        return [(mid, after[key]) for mid in asked if (key := str(mid)) in after]

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        if not ids:
            return []
        found = self._boundary.read("links_touching", ns=namespace, ids=[str(i) for i in ids])[0][
            "links"
        ]
        return list(sort_links([link_from_row(link) for link in found]))

    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        rows = self._boundary.read("get_belief", ns=namespace, id=str(belief_id))
        if not rows:
            return None
        props = rows[0]["belief"]
        created = utc_datetime(props["createdAt"])
        if created is None:
            raise GraphsvcError(f"belief {belief_id} has no createdAt")
        return Belief(
            id=UUID(props["id"]),
            namespace=namespace,
            cue=props["cue"],
            summary=props["summary"],
            confidence=float(props["confidence"]),
            created_at=created,
            source_ids=tuple(UUID(s) for s in rows[0]["sources"]),
            linked_context_ids=tuple(UUID(s) for s in rows[0]["context"]),
        )

    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        rows = self._boundary.read("run_events", key=namespaced_key(namespace, run_id))
        return [event_from_props(row["event"]) for row in rows]

    def stats(self, namespace: str) -> NamespaceStats:
        """The namespace's counts as its NamespaceStat keeps them (no read grows with the
        namespace); counted afresh only where they are not kept yet (a NamespaceStat made before
        they were, until the next open backfills it: :meth:`_backfill_counts`)."""
        row = dict(self._boundary.read("namespace_stats", ns=namespace)[0])
        if any(row[name] is None for name in ("links", "beliefs", "terms")):
            row.update(self._boundary.read("namespace_counted_stats", ns=namespace)[0])
        return NamespaceStats(
            namespace=namespace,
            memories=row["memories"],
            links=row["links"],
            beliefs=row["beliefs"],
            terms=row["terms"],
            events=row["events"],
        )

    def facet_counts(self, namespace: str, facet: str, top: int) -> FacetCounts:
        if facet not in FACETS:
            raise bad_facet(facet)
        by_day = facet in DAY_FACETS
        row = self._boundary.read("facet_counts", ns=namespace, facet=facet, top=top, byDay=by_day)[
            0
        ]
        found = tuple((str(value), int(count)) for value, count in row["top"])
        return FacetCounts(facet, int(row["distinct"]), found)

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
        rows = self._boundary.read(
            "list_memories",
            ns=namespace,
            after=after[0] if after else None,
            afterId=after[1] if after else "",
            limit=limit,
            kind=kind,
            tag=tag,
            since=since,
            until=until,
        )
        return [memory_from_props(namespace, row["memory"]) for row in rows]

    def namespaces(self) -> list[str]:
        return [row["namespace"] for row in self._boundary.read("namespaces")]

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        after: datetime | None = None
        after_id = ""
        while True:
            rows = self._boundary.read(
                "export_memories", ns=namespace, after=after, afterId=after_id, limit=EXPORT_PAGE
            )
            for row in rows:
                memory = memory_from_props(namespace, row["memory"])
                after, after_id = memory.recorded_at, str(memory.id)
                yield memory
            if len(rows) < EXPORT_PAGE:
                break
        for row in self._boundary.read("export_links", ns=namespace):
            yield link_from_row(row)
