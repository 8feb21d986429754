"""The mirror: the embedded store. A networkx graph of memories and links, an inverted index with
exact term statistics kept up to date on every write and delete, and a crash-safe log.

Persistence: every acknowledged write is one JSON line in ``log.jsonl``, flushed and fsynced before
the call returns. When the log grows past ``snapshot_bytes`` the whole state is written to
``snapshot.json`` (write to a temporary file, fsync, atomic rename) and the log starts again. On
open, the snapshot is loaded and the log replayed; records carry a sequence number, so a crash
between the snapshot's rename and the log's truncation replays nothing twice. A torn last line
(a write that was never acknowledged) is dropped; any other unreadable line is an error.

One process writes a data directory at a time (an exclusive ``flock`` on ``LOCK``); read-only opens
take no lock and see the state as of their open.
"""

from __future__ import annotations

import errno
import fcntl
import heapq
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from uuid import UUID

import networkx as nx
import orjson
from sortedcontainers import SortedList

from graphsvc.errors import (
    StoreCorruptError,
    StoreUnavailableError,
)
from graphsvc.model import (
    Belief,
    ContextEvent,
    ContextEventKind,
    ForgetReceipt,
    Link,
    LinkKind,
    LinkRef,
    Memory,
    NamespaceStats,
    WriteResult,
)
from graphsvc.store.base import (
    Candidate,
    Store,
    TermStats,
    Walk,
    belief_memory_missing,
    link_end_missing,
    memory_missing,
    micros,
    no_assembled_event,
    sort_links,
    split_upsert,
    supersedes_cycle,
)

FORMAT_VERSION = 1


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


# -- compact JSON forms (faster than pydantic's for the log's hot path) ------------------------


def _dt(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _memory_row(m: Memory) -> list[Any]:
    return [
        str(m.id), m.text, m.kind, _dt(m.occurred_at), _dt(m.recorded_at), _dt(m.invalidated_at),
        list(m.tags), m.source, m.confidence, m.tokens, list(m.terms),
    ]  # fmt: skip


def _memory_from_row(ns: str, row: list[Any]) -> Memory:
    mid, text, kind, occ, rec, inv, tags, source, conf, tokens, terms = row
    return Memory.model_construct(
        id=UUID(mid), namespace=ns, text=text, kind=kind, occurred_at=_parse_dt(occ),
        recorded_at=_parse_dt(rec), invalidated_at=_parse_dt(inv), tags=tuple(tags),
        source=source, confidence=conf, tokens=tokens, terms=tuple(terms),
    )  # fmt: skip


def _link_row(lk: Link) -> list[Any]:
    return [str(lk.source), str(lk.target), lk.kind.value, lk.weight, _dt(lk.created_at), lk.note]


def _link_from_row(row: list[Any]) -> Link:
    src, dst, kind, weight, created, note = row
    return Link.model_construct(
        source=UUID(src), target=UUID(dst), kind=LinkKind(kind), weight=weight,
        created_at=_parse_dt(created), note=note,
    )  # fmt: skip


def _belief_row(b: Belief) -> dict[str, Any]:
    return b.model_dump(mode="json")


def _event_row(e: ContextEvent) -> dict[str, Any]:
    return e.model_dump(mode="json")


class MirrorStore(Store):
    """The embedded store, persisted under ``data_dir``.

    Args:
        data_dir: folder for ``log.jsonl``, ``snapshot.json`` and ``LOCK`` (created on open).
        fsync: fsync the log on every write (turn off only for throwaway data).
        snapshot_bytes: compact the log into a snapshot past this size.
            ``None`` keeps everything in memory only (nothing persists).
        read_only: take no lock and refuse writes.
    """

    def __init__(
        self,
        data_dir: Path | None,
        *,
        fsync: bool = True,
        snapshot_bytes: int = 64 * 1024 * 1024,
        read_only: bool = False,
    ) -> None:
        self._dir = data_dir
        self._fsync = fsync
        self._snapshot_bytes = snapshot_bytes
        self._read_only = read_only
        self._lock = threading.RLock()
        self._spaces: dict[str, _Namespace] = {}
        self._owner: dict[int, str] = {}  # memory ids are unique across namespaces
        self._seq = 0
        self._log: IO[bytes] | None = None
        self._lock_file: IO[str] | None = None
        self._open = False

    # -- lifecycle -------------------------------------------------------------------------------

    def open(self) -> None:
        with self._lock:
            if self._open:
                return
            if self._dir is not None:
                self._load_dir(self._dir)
            self._open = True

    def close(self) -> None:
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None
            if self._lock_file is not None:
                self._lock_file.close()  # releases the flock
                self._lock_file = None
            self._open = False

    def ping(self) -> None:
        if not self._open:
            raise StoreUnavailableError("the embedded store is not open: call open() first")

    def _load_dir(self, root: Path) -> None:
        try:
            if not self._read_only:
                root.mkdir(parents=True, exist_ok=True)
                self._take_lock(root)
            snapshot = root / "snapshot.json"
            if snapshot.exists():
                self._load_snapshot(snapshot)
            log_path = root / "log.jsonl"
            if log_path.exists():
                self._replay(log_path)
            if not self._read_only:
                self._log = open(log_path, "ab")  # noqa: SIM115 - held open
        except OSError as exc:
            self.close()
            raise StoreUnavailableError(f"cannot open data dir {root}: {exc.strerror}") from exc
        except BaseException:
            self.close()  # release the lock: the directory can be repaired and reopened
            raise

    def _take_lock(self, root: Path) -> None:
        lock_file = open(root / "LOCK", "a+", encoding="utf-8")  # noqa: SIM115 - held open
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            lock_file.seek(0)
            holder = lock_file.read().strip() or "unknown"
            lock_file.close()
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise StoreUnavailableError(
                    f"data dir {root} is in use by another graphsvc process (pid {holder}); "
                    "stop it, or use another --data-dir"
                ) from exc
            raise
        lock_file.seek(0)
        lock_file.truncate()
        lock_file.write(str(os.getpid()))
        lock_file.flush()
        self._lock_file = lock_file

    def _load_snapshot(self, path: Path) -> None:
        try:
            data = orjson.loads(path.read_bytes())
        except ValueError as exc:
            raise StoreCorruptError(f"{path} is not valid JSON: {exc}") from exc
        if data.get("version") != FORMAT_VERSION:
            raise StoreCorruptError(f"{path} has format {data.get('version')!r}, expected 1")
        self._seq = data["seq"]
        for ns, body in data["namespaces"].items():
            space = self._space(ns)
            for row in body["memories"]:
                self._add_memory(space, _memory_from_row(ns, row))
            for row in body["links"]:
                self._add_link(space, _link_from_row(row))
            for row in body["beliefs"]:
                self._add_belief(space, Belief.model_validate(row))
            for run_id, rows in body["events"].items():
                space.events[run_id] = [ContextEvent.model_validate(r) for r in rows]

    def _replay(self, path: Path) -> None:
        with open(path, "rb") as handle:
            lines = handle.read().split(b"\n")
        torn = lines.pop()  # text after the last newline: a write that was never acknowledged
        good_bytes = sum(len(line) + 1 for line in lines)
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                record = orjson.loads(raw)
                if record["seq"] <= self._seq:
                    continue
                self._apply(record)
            except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
                raise StoreCorruptError(
                    f"{path}:{number} is not a valid log record ({type(exc).__name__}: {exc})"
                ) from exc
            self._seq = record["seq"]
        if torn and not self._read_only:
            with open(path, "r+b") as handle:
                handle.truncate(good_bytes)

    # -- the log ---------------------------------------------------------------------------------

    def _write(self, record: dict[str, Any], apply: Callable[[], None] | None = None) -> None:
        """Append a record and make it durable; then apply it (with ``apply``, which changes the
        state from the objects at hand, or by replaying the record). Raises before applying on
        failure."""
        if self._read_only:
            raise StoreUnavailableError("this store was opened read-only; writes are refused")
        if not self._open:
            raise StoreUnavailableError("the embedded store is not open: call open() first")
        record["seq"] = self._seq + 1
        if self._log is not None:
            line = orjson.dumps(record) + b"\n"
            try:
                self._log.write(line)
                self._log.flush()
                if self._fsync:
                    os.fsync(self._log.fileno())
            except OSError as exc:
                raise StoreUnavailableError(f"cannot write the log: {exc.strerror}") from exc
        if apply is None:
            self._apply(record)
        else:
            apply()
        self._seq = record["seq"]
        if self._log is not None and self._log.tell() > self._snapshot_bytes:
            self.snapshot()

    def snapshot(self) -> None:
        """Write the whole state to ``snapshot.json`` and start an empty log."""
        with self._lock:
            if self._dir is None or self._log is None:
                return
            body = {
                ns: {
                    "memories": [_memory_row(m) for m in space.memories.values()],
                    "links": [_link_row(lk) for lk in self._all_links(space)],
                    "beliefs": [_belief_row(b) for b in space.beliefs.values()],
                    "events": {r: [_event_row(e) for e in ev] for r, ev in space.events.items()},
                }
                for ns, space in self._spaces.items()
            }
            data = {"version": FORMAT_VERSION, "seq": self._seq, "namespaces": body}
            tmp = self._dir / "snapshot.json.tmp"
            with open(tmp, "wb") as handle:
                handle.write(orjson.dumps(data))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self._dir / "snapshot.json")
            dir_fd = os.open(self._dir, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
            self._log.seek(0)
            self._log.truncate()
            self._log.flush()
            os.fsync(self._log.fileno())

    def _apply(self, record: dict[str, Any]) -> None:
        ns = record["ns"]
        space = self._space(ns)
        op = record["op"]
        if op == "upsert":
            for mid in record["evict"]:
                self._remove_memory(space, UUID(mid).int)
            for row in record["memories"]:
                self._add_memory(space, _memory_from_row(ns, row))
        elif op == "link":
            for row in record["links"]:
                self._add_link(space, _link_from_row(row))
        elif op == "forget":
            self._remove_memory(space, UUID(record["id"]).int)
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

    # -- state changes (no I/O) ------------------------------------------------------------------

    def _space(self, namespace: str) -> _Namespace:
        space = self._spaces.get(namespace)
        if space is None:
            space = self._spaces[namespace] = _Namespace()
        return space

    def _add_memory(self, space: _Namespace, memory: Memory) -> None:
        key = memory.id.int
        self._owner[key] = memory.namespace
        space.memories[key] = memory
        recorded = micros(memory.recorded_at)
        occurred = None if memory.occurred_at is None else micros(memory.occurred_at)
        space.meta[key] = (len(memory.terms), recorded, occurred, memory.confidence)
        space.order.add((recorded, key))
        space.graph.add_node(key)
        counts: dict[str, int] = {}
        for term in memory.terms:
            counts[term] = counts.get(term, 0) + 1
        postings = space.postings
        for term, count in counts.items():
            posting = postings.get(term)
            if posting is None:
                postings[term] = {key: count}
            else:
                posting[key] = count
        space.total_length += len(memory.terms)

    def _remove_memory(self, space: _Namespace, key: int) -> None:
        memory = space.memories.pop(key, None)
        if memory is None:
            return
        del self._owner[key]
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
            MirrorStore._remove_belief(space, belief_id)

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

    # -- writes ----------------------------------------------------------------------------------

    def upsert_memories(
        self, namespace: str, memories: Sequence[Memory], *, max_memories: int
    ) -> WriteResult:
        with self._lock:
            space = self._space(namespace)
            created, unchanged = split_upsert(
                memories,
                stored=lambda mid: space.memories.get(mid.int),
                taken_elsewhere=lambda mid: mid.int in self._owner,
            )
            overflow = len(space.memories) + len(created) - max_memories
            evict: list[UUID] = []
            if overflow > 0:
                keep = {mid.int for mid in unchanged}
                for _, old in space.order:
                    if len(evict) == overflow:
                        break
                    if old not in keep:
                        evict.append(space.memories[old].id)

            def apply() -> None:
                for mid in evict:
                    self._remove_memory(space, mid.int)
                for memory in created:
                    self._add_memory(space, memory)

            if created or evict:
                record = {
                    "op": "upsert", "ns": namespace,
                    "memories": [_memory_row(m) for m in created],
                    "evict": [str(mid) for mid in evict],
                }  # fmt: skip
                self._write(record, apply)
            return WriteResult(
                created=tuple(m.id for m in created), unchanged=tuple(unchanged),
                evicted=tuple(evict),
            )  # fmt: skip

    def add_links(self, namespace: str, links: Sequence[Link]) -> None:
        with self._lock:
            space = self._space(namespace)
            for link in links:
                for end in (link.source, link.target):
                    if end.int not in space.memories:
                        raise link_end_missing(link, end, namespace)
            self._check_supersedes_acyclic(space, links)
            rows = []
            for link in links:
                old = space.graph.get_edge_data(link.source.int, link.target.int, link.kind.value)
                if old is not None:  # keep the original creation time
                    link = link.model_copy(update={"created_at": old["link"].created_at})
                rows.append(_link_row(link))
            if rows:
                self._write({"op": "link", "ns": namespace, "links": rows})

    @staticmethod
    def _check_supersedes_acyclic(space: _Namespace, links: Sequence[Link]) -> None:
        pending: dict[int, set[int]] = {}
        for link in links:
            if link.kind is LinkKind.SUPERSEDES:
                pending.setdefault(link.source.int, set()).add(link.target.int)
        if not pending:
            return
        graph = space.graph

        def successors(node: int) -> set[int]:
            nxt = {v for _, v, k in graph.out_edges(node, keys=True) if k == "SUPERSEDES"}
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
            space = self._space(namespace)
            if memory_id.int not in space.memories:
                raise memory_missing(memory_id, namespace)
            links = sort_links(self._links_touching(space, memory_id.int))
            beliefs = sorted(space.beliefs_of.get(memory_id.int, set()), key=str)
            self._write({"op": "forget", "ns": namespace, "id": str(memory_id)})
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
            space = self._space(belief.namespace)
            missing = [
                m for m in (*belief.source_ids, *belief.linked_context_ids)
                if m.int not in space.memories
            ]  # fmt: skip
            if missing:
                raise belief_memory_missing(missing[0])
            self._write({"op": "belief", "ns": belief.namespace, "belief": _belief_row(belief)})

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
            space = self._space(namespace)
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
            self._write({"op": "event", "ns": namespace, "event": _event_row(event)})
            return event

    def set_reported_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        with self._lock:
            events = self._space(namespace).events.get(run_id, [])
            target = self._assembled(events, step)
            if target is None:
                raise no_assembled_event(run_id, step)
            self._write({
                "op": "report", "ns": namespace, "run": run_id,
                "eventSeq": target.seq, "tokens": reported_tokens,
            })  # fmt: skip
            return events[target.seq]

    @staticmethod
    def _assembled(events: Sequence[ContextEvent], step: int) -> ContextEvent | None:
        found = [e for e in events if e.step == step and e.kind is ContextEventKind.ASSEMBLED]
        return found[-1] if found else None

    # -- reads -----------------------------------------------------------------------------------

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        with self._lock:
            memories = self._space(namespace).memories
            found = (memories.get(i.int) for i in ids)
            return [m for m in found if m is not None]

    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        with self._lock:
            space = self._space(namespace)
            df = {t: len(space.postings.get(t, ())) for t in terms}
            return TermStats(len(space.memories), space.total_length, df)

    @staticmethod
    def _candidates(
        space: _Namespace, keys: Sequence[int], score_terms: Sequence[str]
    ) -> list[Candidate]:
        lists = [space.postings.get(t, {}) for t in score_terms]
        memories = space.memories
        meta = space.meta
        found = []
        for key in keys:
            length, recorded, occurred, confidence = meta[key]
            if len(lists) == 1:
                tf: tuple[int, ...] = (lists[0].get(key, 0),)
            else:
                tf = tuple([posting.get(key, 0) for posting in lists])
            found.append(Candidate(memories[key].id, tf, length, recorded, occurred, confidence))
        return found

    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._space(namespace)
            keys: set[int] = set()
            for term in terms:
                keys.update(space.postings.get(term, ()))
            return self._candidates(space, sorted(keys), score_terms)

    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        with self._lock:
            space = self._space(namespace)
            meta = space.meta
            newest = heapq.nsmallest(
                limit, space.postings.get(term, ()), key=lambda k: (-meta[k][1], k)
            )
            return self._candidates(space, newest, score_terms)

    def supersessions(self, namespace: str, ids: Sequence[UUID]) -> list[tuple[UUID, UUID]]:
        with self._lock:
            graph = self._space(namespace).graph
            wanted = {i.int for i in ids}
            pairs = sorted(
                (u, v)
                for u in wanted
                if u in graph
                for _, v, k in graph.out_edges(u, keys=True)
                if k == "SUPERSEDES" and v in wanted
            )
            return [(UUID(int=u), UUID(int=v)) for u, v in pairs]

    def walk(self, namespace: str, start: Sequence[UUID], depth: int, max_nodes: int) -> Walk:
        with self._lock:
            space = self._space(namespace)
            graph = space.graph
            starts = {s.int for s in start if s.int in graph}
            frontier = set(starts)
            seen = set(frontier)
            reached: list[tuple[int, int]] = []
            for distance in range(1, depth + 1):
                if not frontier or len(reached) >= max_nodes:
                    break
                layer: set[int] = set()
                for node in frontier:
                    layer.update(graph.succ[node])
                    layer.update(graph.pred[node])
                layer -= seen
                seen |= layer
                reached += [(n, distance) for n in sorted(layer)]
                frontier = layer
            reached = reached[:max_nodes]
            members = starts | {n for n, _ in reached}
            links = [
                data["link"]
                for u in members
                for _, v, data in graph.out_edges(u, data=True)
                if v in members
            ]
            return Walk(
                reached=tuple((space.memories[n], d) for n, d in reached),
                links=sort_links(links),
            )

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        with self._lock:
            space = self._space(namespace)
            found: dict[tuple[UUID, UUID, str], Link] = {}
            for mid in ids:
                if mid.int in space.graph:
                    for link in self._links_touching(space, mid.int):
                        found[(link.source, link.target, link.kind.value)] = link
            return list(sort_links(list(found.values())))

    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        with self._lock:
            return self._space(namespace).beliefs.get(belief_id)

    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        with self._lock:
            return list(self._space(namespace).events.get(run_id, ()))

    def stats(self, namespace: str) -> NamespaceStats:
        with self._lock:
            space = self._space(namespace)
            return NamespaceStats(
                namespace=namespace,
                memories=len(space.memories),
                links=space.graph.number_of_edges(),
                beliefs=len(space.beliefs),
                terms=len(space.postings),
                events=sum(len(ev) for ev in space.events.values()),
            )

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
            space = self._space(namespace)
            order = space.order  # (recordedAt micros, id.int), oldest first
            end = (
                len(order)
                if after is None
                else order.bisect_left((micros(after[0]), UUID(after[1]).int))
            )
            page: list[Memory] = []
            for index in range(end - 1, -1, -1):
                memory = space.memories[order[index][1]]
                if kind is not None and memory.kind != kind:
                    continue
                if tag is not None and tag not in memory.tags:
                    continue
                if (since is not None and memory.when < since) or (
                    until is not None and memory.when >= until
                ):
                    continue
                page.append(memory)
                if len(page) == limit:
                    break
            return page

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        with self._lock:
            space = self._space(namespace)
            memories = list(space.memories.values())
            links = sort_links(self._all_links(space))
        yield from memories
        yield from links


__all__ = ["MirrorStore"]
