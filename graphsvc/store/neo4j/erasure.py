"""The Neo4j store's removals (:class:`~graphsvc.store.base.Erasure`): forget one memory, erase
what a filter names in idempotent batches, each one transaction that keeps the counts exact and
rewrites the context events naming what it removed."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from neo4j import Transaction

from graphsvc.model import EraseFilter, EraseReceipt, ForgetReceipt, LinkRef
from graphsvc.store.base import Erasure
from graphsvc.store.facets import memory_facets
from graphsvc.store.neo4j.boundary import Neo4jBoundary, tx_query
from graphsvc.store.neo4j.counts import apply_stats, bump_counts
from graphsvc.store.neo4j.rows import memory_from_props, stored_terms, utc_datetime
from graphsvc.store.rules import erase_started, memory_missing, redact, uuids_in

# A context event detail that names an id (Java regex, matches the whole detail): what an erase
# reads once to find the events it rewrites.
DETAIL_WITH_ID = r"(?s).*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}.*"
# Where an erase's first batch starts: before any recordedAt.
ERASE_START = datetime.min.replace(tzinfo=UTC)
# What erasing everything removes after the memories, in this order, a batch at a time.
ERASE_AFTER_MEMORIES = ("beliefs", "events", "runs", "statistics")


def _erased_facets(memory: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The facets (:func:`memory_facets`) of a memory as erase_select.cypher gives it."""
    pairs = [("kind", str(memory["kind"])), ("day", str(memory["day"]))]
    pairs += [("recorded", str(memory["recordedDay"]))]
    pairs += [("valid", str(day)) for day in sorted(set(memory["validDays"]))]
    pairs += [("tag", str(tag)) for tag in dict.fromkeys(memory["tags"])]
    if memory["source"] is not None:
        pairs.append(("source", str(memory["source"])))
    return pairs


class Neo4jErasure(Erasure):
    """Forget and erase through the store's boundary."""

    def __init__(self, boundary: Neo4jBoundary) -> None:
        self._boundary = boundary

    def forget(self, namespace: str, memory_id: UUID, *, at: datetime) -> ForgetReceipt:
        def work(tx: Transaction) -> ForgetReceipt:
            rows = tx_query(tx, "forget_receipt", ns=namespace, id=str(memory_id))
            if not rows:
                raise memory_missing(memory_id, namespace)
            row = rows[0]
            memory = memory_from_props(namespace, row["memory"])
            refs = sorted(
                (
                    LinkRef(source=UUID(r["source"]), target=UUID(r["target"]), kind=r["kind"])
                    for r in row["links"]
                    if r["kind"] is not None
                ),
                key=lambda lk: (str(lk.source), str(lk.target), lk.kind.value),
            )
            gone = tx_query(tx, "delete_memories", ns=namespace, ids=[str(memory_id)])[0]
            apply_stats(
                tx,
                namespace,
                [],
                [memory.terms],
                -int(gone["vectors"]),
                gone,
                [memory_facets(memory)],
            )
            return ForgetReceipt(
                memory_id=memory_id,
                namespace=namespace,
                removed_links=tuple(refs),
                removed_belief_ids=tuple(sorted((UUID(b) for b in row["beliefs"]), key=str)),
                forgotten_at=at,
            )

        return self._boundary.write(work)

    def erase(
        self,
        namespace: str,
        spec: EraseFilter,
        *,
        at: datetime,
        batch_size: int,
        time_budget: float | None = None,
        progress: Callable[[EraseReceipt], None] | None = None,
    ) -> EraseReceipt:
        """As :meth:`Store.erase`: batches of ``batch_size`` memories, oldest first, each one
        transaction that deletes them with their links and beliefs, updates the term statistics
        and rewrites the context events naming them. ``everything`` then removes strays of
        beliefs, the events, the runs and the statistics, a batch at a time. A batch is
        idempotent (it selects what is still there), so after an interruption the same call
        finishes the work; no transaction grows with the namespace."""
        started = time.monotonic()
        receipt = erase_started(namespace, spec, at)

        def done(**more: int) -> None:
            nonlocal receipt
            receipt = receipt.model_copy(
                update={name: getattr(receipt, name) + n for name, n in more.items()}
            )
            if progress is not None:
                progress(receipt)

        def out_of_time() -> bool:
            return time_budget is not None and time.monotonic() - started >= time_budget

        # The events whose detail names an id, read once (erasing everything removes them all).
        details: dict[tuple[str, int], str] = {}
        if not spec.everything:
            rows = self._boundary.read("erase_event_mentions", ns=namespace, pattern=DETAIL_WITH_ID)
            details = {(row["key"], int(row["seq"])): row["detail"] for row in rows}
        naming: dict[str, list[tuple[str, int]]] = {}
        for event, detail in details.items():
            for mid in uuids_in(detail):
                naming.setdefault(mid, []).append(event)
        rewritten: set[tuple[str, int]] = set()
        after = ERASE_START
        while True:
            batch = functools.partial(
                self._erase_batch,
                namespace=namespace,
                spec=spec,
                after=after,
                limit=batch_size,
                details=details,
                naming=naming,
            )
            count, links, beliefs, last, new = self._boundary.write(batch)
            if count == 0:
                break
            details.update(new)
            done(memories=count, links=links, beliefs=beliefs, events=len(new.keys() - rewritten))
            rewritten |= new.keys()
            if count < batch_size:
                break
            after = last
            if out_of_time():
                return receipt
        if spec.everything:
            for name in ERASE_AFTER_MEMORIES:
                while True:
                    step = functools.partial(self._erase_nodes, name, namespace, batch_size)
                    removed = self._boundary.write(step)
                    if removed and name in ("beliefs", "events"):  # counted in the receipt
                        done(**{name: removed})
                    if removed < batch_size:
                        break
                    if out_of_time():
                        return receipt
        return receipt.model_copy(update={"complete": True})

    def _erase_batch(
        self,
        tx: Transaction,
        *,
        namespace: str,
        spec: EraseFilter,
        after: datetime,
        limit: int,
        details: Mapping[tuple[str, int], str],
        naming: Mapping[str, Sequence[tuple[str, int]]],
    ) -> tuple[int, int, int, datetime, dict[tuple[str, int], str]]:
        """One batch of an erase (a transaction function: it changes nothing outside the
        transaction, so a retry is safe). Returns the memories, links and beliefs removed, the
        newest recordedAt of the batch, and the events rewritten with their new details."""
        row = tx_query(
            tx,
            "erase_select",
            ns=namespace,
            after=after,
            limit=limit,
            tag=spec.tag,
            source=spec.source,
            since=spec.since,
            until=spec.until,
        )[0]
        batch = row["memories"]
        if not batch:
            return 0, 0, 0, after, {}
        ids = [memory["id"] for memory in batch]
        gone = tx_query(tx, "delete_memories", ns=namespace, ids=ids)[0]
        apply_stats(
            tx,
            namespace,
            [],
            [stored_terms(memory["terms"]) for memory in batch],
            -int(gone["vectors"]),
            gone,
            [_erased_facets(memory) for memory in batch],
        )
        erased = set(ids)
        events = sorted({event for mid in ids for event in naming.get(mid, ())})
        new = {event: redact(details[event], erased.__contains__) for event in events}
        if new:
            rows = [{"key": key, "seq": seq, "detail": d} for (key, seq), d in new.items()]
            tx_query(tx, "erase_rewrite_events", rows=rows)
        last = utc_datetime(batch[-1]["recordedAt"]) or after
        return len(ids), int(row["links"]), int(row["beliefs"]), last, new

    def _erase_nodes(self, what: str, namespace: str, limit: int, tx: Transaction) -> int:
        """One batch of what erasing everything removes after the memories (``what`` is one of
        :data:`ERASE_AFTER_MEMORIES`); how many nodes it removed."""
        if what == "beliefs":
            rows = tx_query(tx, "erase_beliefs", ns=namespace, limit=limit)
            if rows[0]["removed"]:
                bump_counts(tx, namespace, beliefs=-int(rows[0]["removed"]))
        elif what == "events":
            rows = tx_query(tx, "erase_events", ns=namespace, limit=limit)
        elif what == "runs":
            rows = tx_query(tx, "erase_runs", ns=namespace, limit=limit)
        else:
            rows = tx_query(tx, "erase_statistics", ns=namespace, limit=limit)
        return int(rows[0]["removed"])
