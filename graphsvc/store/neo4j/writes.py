"""The Neo4j store's writes (:class:`~graphsvc.store.base.MemoryWrites`): memories (with their
vectors, evicting past the cap), links, beliefs and context events, each one transaction that
keeps the namespace's counts (:mod:`~graphsvc.store.neo4j.counts`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from neo4j import Transaction

from graphsvc.model import (
    Belief,
    ContextEvent,
    ContextEventKind,
    Link,
    LinkKind,
    Memory,
    WriteResult,
)
from graphsvc.store.base import MemoryWrites
from graphsvc.store.candidates import micros
from graphsvc.store.cypher import query
from graphsvc.store.facets import memory_facets
from graphsvc.store.neo4j.boundary import Neo4jBoundary, tx_query
from graphsvc.store.neo4j.counts import (
    apply_stats,
    bump_counts,
    bump_facets,
    bump_namespace,
    bump_terms,
    count_memories,
)
from graphsvc.store.neo4j.rows import (
    event_from_props,
    memory_from_props,
    memory_props,
    namespaced_key,
)
from graphsvc.store.neo4j.vectors import store_vectors
from graphsvc.store.rules import (
    belief_memory_missing,
    link_end_missing,
    no_assembled_event,
    split_upsert,
    supersedes_cycle,
)

# Rows of one create_memories.cypher run: a write's parts are pipelined (the client builds a part
# while the server creates the one before), so a part is about as long on the client as on the
# server would be ideal; 1,000 rows are about 25 ms of client work and 100 ms of server work.
CREATE_PART = 1_000


class Neo4jWrites(MemoryWrites):
    """Writes through the store's boundary."""

    def __init__(self, boundary: Neo4jBoundary) -> None:
        self._boundary = boundary

    def upsert_memories(
        self,
        namespace: str,
        memories: Sequence[Memory],
        *,
        max_memories: int,
        vectors: Mapping[UUID, bytes] | None = None,
    ) -> WriteResult:
        def work(tx: Transaction) -> WriteResult:
            ids = sorted({str(m.id) for m in memories})
            found = tx_query(tx, "existing_memories", ns=namespace, ids=ids)[0]["memories"]
            here = {props["id"]: props for props in found}
            created, unchanged = split_upsert(
                memories,
                stored=lambda mid: (
                    memory_from_props(namespace, here[str(mid)]) if str(mid) in here else None
                ),
            )
            self._create_memories(tx, namespace, created)
            added = [m.terms for m in created]
            # Counted while the last part of the create runs on the server.
            terms = bump_terms(tx, namespace, added, [])
            bump_facets(tx, namespace, [memory_facets(m) for m in created], ())
            vector_delta = 0
            if vectors:
                # A created memory gets its vector; one already there only if it has none. (The
                # NamespaceStat is locked here, after the TermStats, as in every write.)
                vector_delta += store_vectors(tx, namespace, vectors, replace=False, only=set(ids))[
                    1
                ]
            evicted: list[Memory] = []
            # A write that adds nothing still evicts when the namespace is over the cap (one that
            # was lowered), as the embedded store does; only then is the count read first.
            if created or vector_delta or count_memories(tx, namespace) > max_memories:
                after = bump_namespace(tx, namespace, added, [], vector_delta, terms)
                # Past the cap, the oldest memories but the batch's go, chosen and deleted under
                # the NamespaceStat's lock, where the count is exact and no other write evicts
                # at the same time. (Their TermStats are then locked after the NamespaceStat: two
                # writes at the cap at once can deadlock, which Neo4j detects, and the write is
                # retried.)
                if after > max_memories:
                    evicted, gone = self._evict(tx, namespace, ids, after - max_memories)
                    apply_stats(
                        tx,
                        namespace,
                        [],
                        [m.terms for m in evicted],
                        -int(gone["vectors"]),
                        gone,
                        [memory_facets(m) for m in evicted],
                    )
            return WriteResult(
                created=tuple(m.id for m in created),
                unchanged=tuple(unchanged),
                evicted=tuple(m.id for m in evicted),
            )

        return self._boundary.write(work)

    def _evict(
        self, tx: Transaction, ns: str, skip: Sequence[str], count: int
    ) -> tuple[list[Memory], dict[str, Any]]:
        """Delete the ``count`` oldest memories of the namespace but those of ``skip``; them,
        and what delete_memories answered (how many had a vector, the links and beliefs that
        went). The caller adjusts the namespace's statistics."""
        rows = tx_query(tx, "oldest_memories", ns=ns, skip=list(skip), limit=count)
        evicted = [memory_from_props(ns, row["memory"]) for row in rows]
        gone = tx_query(tx, "delete_memories", ns=ns, ids=[str(m.id) for m in evicted])[0]
        return evicted, dict(gone)

    @staticmethod
    def _create_memories(tx: Transaction, namespace: str, created: Sequence[Memory]) -> None:
        """create_memories.cypher in parts of :data:`CREATE_PART` rows, pipelined: each part is
        sent without waiting for the one before (Bolt runs a transaction's queries in order), so
        the next part's rows are built and packed here while the server creates the last one.
        The caller's next query waits for them all; an error in any part fails the
        transaction."""
        text = query("create_memories")
        for start in range(0, len(created), CREATE_PART):
            rows = [memory_props(m) for m in created[start : start + CREATE_PART]]
            tx.run(text, {"ns": namespace, "rows": rows})

    def add_links(self, namespace: str, links: Sequence[Link]) -> None:
        if not links:
            return

        def work(tx: Transaction) -> None:
            rows = [
                {
                    "source": str(lk.source),
                    "target": str(lk.target),
                    "kind": lk.kind.value,
                    "weight": lk.weight,
                    "note": lk.note,
                    "createdUs": micros(lk.created_at),
                }
                for lk in links
            ]
            row = tx_query(tx, "merge_links", ns=namespace, links=rows)[0]
            # Fewer merged than sent: an end is missing; name the first (the write rolls back).
            if row["merged"] < len(links):
                ends = sorted({str(e) for lk in links for e in (lk.source, lk.target)})
                found = {r["id"] for r in tx_query(tx, "memory_ids", ns=namespace, ids=ends)}
                for link in links:
                    for end in (link.source, link.target):
                        if str(end) not in found:
                            raise link_end_missing(link, end, namespace)
            sources = list(
                dict.fromkeys(str(lk.source) for lk in links if lk.kind is LinkKind.SUPERSEDES)
            )
            if sources:
                cycle = tx_query(tx, "supersedes_cycle", ns=namespace, ids=sources)
                if cycle:
                    raise supersedes_cycle(cycle[0]["id"])
            if row["created"]:  # the NamespaceStat is locked last, after both ends of each link
                bump_counts(tx, namespace, links=int(row["created"]))

        self._boundary.write(work)

    def save_belief(self, belief: Belief) -> None:
        ns = belief.namespace

        def work(tx: Transaction) -> None:
            wanted = [str(m) for m in (*belief.source_ids, *belief.linked_context_ids)]
            found = {r["id"] for r in tx_query(tx, "memory_ids", ns=ns, ids=wanted)}
            missing = [m for m in wanted if m not in found]
            if missing:
                raise belief_memory_missing(missing[0])
            props = {
                "id": str(belief.id),
                "cue": belief.cue,
                "summary": belief.summary,
                "confidence": belief.confidence,
                "createdAt": belief.created_at,
            }
            tx_query(
                tx,
                "save_belief",
                ns=ns,
                belief=props,
                sources=[str(m) for m in belief.source_ids],
                context=[str(m) for m in belief.linked_context_ids],
            )
            bump_counts(tx, ns, beliefs=1)

        self._boundary.write(work)

    def append_event(
        self,
        namespace: str,
        run_id: str,
        *,
        step: int,
        kind: str,
        detail: str | None,
        est_tokens: int | None,
        at: datetime,
    ) -> ContextEvent:
        props = {
            "step": step,
            "kind": ContextEventKind(kind).value,
            "detail": detail,
            "estTokens": est_tokens,
            "reportedTokens": None,
            "recordedAt": at,
        }

        def work(tx: Transaction) -> int:
            rows = tx_query(
                tx,
                "append_event",
                ns=namespace,
                key=namespaced_key(namespace, run_id),
                runId=run_id,
                event=props,
            )
            return int(rows[0]["seq"])

        seq = self._boundary.write(work)
        return ContextEvent(
            run_id=run_id,
            seq=seq,
            step=step,
            kind=ContextEventKind(kind),
            detail=detail,
            est_tokens=est_tokens,
            reported_tokens=None,
            recorded_at=at,
        )

    def set_reported_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        def work(tx: Transaction) -> ContextEvent:
            rows = tx_query(
                tx,
                "report_tokens",
                key=namespaced_key(namespace, run_id),
                step=step,
                tokens=reported_tokens,
            )
            if not rows:
                raise no_assembled_event(run_id, step)
            return event_from_props(rows[0]["event"])

        return self._boundary.write(work)
