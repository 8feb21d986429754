"""The embedded store's writes of memories, links, beliefs and context events: each checks
its input against the state, then logs and applies one record (:class:`LogWriter`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any
from uuid import UUID

from graphsvc.model import (
    Belief,
    ContextEvent,
    ContextEventKind,
    ForgetReceipt,
    Link,
    LinkKind,
    LinkRef,
    Memory,
    WriteResult,
)
from graphsvc.store.graph import sort_links
from graphsvc.store.mirror.rows import (
    log_belief_row,
    log_event_row,
    log_link_row,
    log_memory_rows,
    log_vector_rows,
    memory_fields,
)
from graphsvc.store.mirror.state import MirrorNamespace, MirrorState
from graphsvc.store.mirror.table import from_micros
from graphsvc.store.mirror.vector_store import check_vectors
from graphsvc.store.mirror.writer import LogWriter
from graphsvc.store.rules import (
    belief_memory_missing,
    link_end_missing,
    memory_missing,
    no_assembled_event,
    split_upsert,
    supersedes_cycle,
)

_id_of = attrgetter("id")


class MirrorWrites:
    """Writing memories, links, beliefs and context events: a part of
    :class:`~graphsvc.store.mirror.MirrorStore`, under its lock."""

    def __init__(self, state: MirrorState, log: LogWriter) -> None:
        self._state = state
        self._log = log
        self._lock = log.lock

    def upsert_memories(
        self,
        namespace: str,
        memories: Sequence[Memory],
        *,
        max_memories: int,
        vectors: Mapping[UUID, bytes] | None = None,
    ) -> WriteResult:
        with self._lock:
            space = self._state.space(namespace)
            keys = [mid.int for mid in map(_id_of, memories)]
            if len(set(keys)) == len(keys) and space.memories.row_of.keys().isdisjoint(keys):
                created, unchanged = list(memories), list[UUID]()  # all new, as split_upsert finds
            else:
                created, unchanged = split_upsert(
                    memories,
                    stored=lambda mid: space.memories.get(mid.int),
                )
            given: dict[UUID, bytes] = {}
            if vectors:
                check_vectors(namespace, space, vectors)
                table = space.vectors
                for memory in created:
                    if memory.id in vectors:
                        given[memory.id] = vectors[memory.id]
                for mid in unchanged:  # an unchanged memory gets a vector only if it has none
                    if (
                        mid in vectors
                        and mid not in given
                        and (table is None or mid.int not in table)
                    ):
                        given[mid] = vectors[mid]
            overflow = len(space.memories) + len(created) - max_memories
            evict: list[UUID] = []
            if overflow > 0:
                keep = {mid.int for mid in unchanged}
                for _, old in space.order:
                    if len(evict) == overflow:
                        break
                    if old not in keep:
                        evict.append(space.memories.uuid(old))

            fields = list(map(memory_fields, created))
            columns = list(zip(*fields, strict=True))

            def apply() -> None:
                for mid in evict:
                    space.remove_memory(mid.int)
                space.add_columns(columns)
                space.put_vectors(list(given.items()))

            if created or evict or given:
                record: dict[str, Any] = {
                    "op": "upsert",
                    "ns": namespace,
                    "memories": log_memory_rows(fields, columns),
                    "evict": [str(mid) for mid in evict],
                }
                if given:  # in the same record as the memories: one atomic write
                    record["vectors"] = log_vector_rows(given.items())
                self._log.write(record, apply)
            return WriteResult(
                created=tuple(m.id for m in created),
                unchanged=tuple(unchanged),
                evicted=tuple(evict),
            )

    def add_links(self, namespace: str, links: Sequence[Link]) -> None:
        with self._lock:
            space = self._state.space(namespace)
            for link in links:
                for end in (link.source, link.target):
                    if end.int not in space.memories:
                        raise link_end_missing(link, end, namespace)
            self._check_supersedes_acyclic(space, links)
            rows = []
            for link in links:
                old = space.graph.find(link.source.int, link.target.int, link.kind.value)
                if old is not None:  # keep the original creation time
                    link = link.model_copy(update={"created_at": from_micros(old[4])})
                rows.append(log_link_row(link))
            if rows:
                self._log.write({"op": "link", "ns": namespace, "links": rows})

    @staticmethod
    def _check_supersedes_acyclic(space: MirrorNamespace, links: Sequence[Link]) -> None:
        pending: dict[int, set[int]] = {}
        for link in links:
            if link.kind is LinkKind.SUPERSEDES:
                pending.setdefault(link.source.int, set()).add(link.target.int)
        if not pending:
            return
        graph = space.graph

        def successors(node: int) -> set[int]:
            nxt = {lk[1] for lk in graph.outgoing(node) if lk[2] == "SUPERSEDES"}
            return nxt | pending.get(node, set())

        for start in pending:
            stack, seen = list(pending[start]), set()
            while stack:
                node = stack.pop()
                if node == start:
                    raise supersedes_cycle(UUID(int=start))
                if node not in seen:
                    seen.add(node)
                    stack.extend(successors(node))

    def forget(self, namespace: str, memory_id: UUID, *, at: datetime) -> ForgetReceipt:
        with self._lock:
            space = self._state.space(namespace)
            if memory_id.int not in space.memories:
                raise memory_missing(memory_id, namespace)
            links = sort_links(space.links_touching(memory_id.int))
            beliefs = sorted(space.beliefs_of.get(memory_id.int, set()), key=str)
            self._log.write({"op": "forget", "ns": namespace, "id": str(memory_id)})
            return ForgetReceipt(
                memory_id=memory_id,
                namespace=namespace,
                removed_links=tuple(
                    LinkRef(source=lk.source, target=lk.target, kind=lk.kind) for lk in links
                ),
                removed_belief_ids=tuple(beliefs),
                forgotten_at=at,
            )

    def save_belief(self, belief: Belief) -> None:
        with self._lock:
            space = self._state.space(belief.namespace)
            missing = [
                m
                for m in (*belief.source_ids, *belief.linked_context_ids)
                if m.int not in space.memories
            ]
            if missing:
                raise belief_memory_missing(missing[0])
            self._log.write(
                {"op": "belief", "ns": belief.namespace, "belief": log_belief_row(belief)}
            )

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
        with self._lock:
            space = self._state.space(namespace)
            event = ContextEvent(
                run_id=run_id,
                seq=len(space.events.get(run_id, ())),
                step=step,
                kind=ContextEventKind(kind),
                detail=detail,
                est_tokens=est_tokens,
                reported_tokens=None,
                recorded_at=at,
            )
            self._log.write({"op": "event", "ns": namespace, "event": log_event_row(event)})
            return event

    def set_reported_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        with self._lock:
            events = self._state.space(namespace).events.get(run_id, [])
            target = self._assembled(events, step)
            if target is None:
                raise no_assembled_event(run_id, step)
            self._log.write(
                {
                    "op": "report",
                    "ns": namespace,
                    "run": run_id,
                    "eventSeq": target.seq,
                    "tokens": reported_tokens,
                }
            )
            return events[target.seq]

    @staticmethod
    def _assembled(events: Sequence[ContextEvent], step: int) -> ContextEvent | None:
        found = [e for e in events if e.step == step and e.kind is ContextEventKind.ASSEMBLED]
        return found[-1] if found else None
