"""The Neo4j store's :class:`~graphsvc.store.base.Store` interface: each method runs named
queries (``cypher/``) through :mod:`graphsvc.store.neo4j.boundary` and converts the records with
:mod:`graphsvc.store.neo4j.rows`."""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import neo4j
from neo4j import Transaction
from pydantic import SecretStr

from graphsvc.embedding.codes import VectorModel
from graphsvc.errors import BadInputError, GraphsvcError
from graphsvc.model import (
    AsOf,
    Belief,
    ContextEvent,
    ContextEventKind,
    EraseFilter,
    EraseReceipt,
    ForgetReceipt,
    Link,
    LinkKind,
    LinkRef,
    Memory,
    NamespaceStats,
    Successor,
    WriteResult,
)
from graphsvc.store.base import (
    DAY_FACETS,
    FACETS,
    Candidate,
    CandidateColumns,
    FacetCounts,
    ReadAhead,
    Recalled,
    Store,
    TermStats,
    Walk,
    WindowGuess,
    bad_facet,
    belief_memory_missing,
    erase_started,
    facet_deltas,
    link_end_missing,
    memory_facets,
    memory_missing,
    micros,
    no_assembled_event,
    redact,
    sort_links,
    split_upsert,
    supersedes_cycle,
    uuids_in,
)
from graphsvc.store.cypher import query
from graphsvc.store.neo4j.boundary import DEFAULT_TIMEOUT, PING_TIMEOUT
from graphsvc.store.neo4j.rows import (
    KEY_SEP,
    NO_OCCURRED,
    candidates_from_rows,
    columns_from_row,
    event_from_props,
    link_from_row,
    lucene_query,
    memory_from_props,
    memory_props,
    namespaced_key,
    stored_terms,
    successor_from_row,
    term_deltas,
    utc_datetime,
)
from graphsvc.store.neo4j.vectors import Neo4jVectors, vector_model_from_row

# Terms per full-text query: Lucene refuses more than 1024 clauses, and some versions return
# nothing for very long queries; chunks stay well below both.
TERMS_PER_QUERY = 100
EXPORT_PAGE = 1_000
# Breadth-first hops one walk.cypher round trip makes (its layers are written out four times).
HOPS_PER_QUERY = 4
# Rows of one create_memories.cypher run: a write's parts are pipelined (the client builds a part
# while the server creates the one before), so a part is about as long on the client as on the
# server would be ideal; 1,000 rows are about 25 ms of client work and 100 ms of server work.
CREATE_PART = 1_000
# A context event detail that names an id (Java regex, matches the whole detail): what an erase
# reads once to find the events it rewrites.
DETAIL_WITH_ID = r"(?s).*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}.*"
# Where an erase's first batch starts: before any recordedAt.
ERASE_START = datetime.min.replace(tzinfo=UTC)
# What erasing everything removes after the memories, in this order, a batch at a time.
ERASE_AFTER_MEMORIES = ("beliefs", "events", "runs", "statistics")

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Recalled:
    """What recall_columns.cypher says beside the columns: whether the plan fell back to the
    newest memories of its rarest term, the namespace's vector model, and its vector count."""

    fallback: bool
    model: VectorModel | None
    ahead: ReadAhead | None = None
    vectors: int = 0


def _erased_facets(memory: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The facets (:func:`memory_facets`) of a memory as erase_select.cypher gives it."""
    pairs = [("kind", str(memory["kind"])), ("day", str(memory["day"]))]
    pairs += [("recorded", str(memory["recordedDay"]))]
    pairs += [("valid", str(day)) for day in sorted(set(memory["validDays"]))]
    pairs += [("tag", str(tag)) for tag in dict.fromkeys(memory["tags"])]
    if memory["source"] is not None:
        pairs.append(("source", str(memory["source"])))
    return pairs


class RowsAhead(ReadAhead):
    """The memories recall_columns.cypher read ahead of the window, as window.cypher's rows,
    by id."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = {row["id"]: row for row in rows}


def _as_of_param(as_of: AsOf | None) -> dict[str, Any] | None:
    """The ``$asOf`` of the queries that read as of an instant (null: now)."""
    return None if as_of is None else {"us": as_of.at_us, "known": as_of.known}


def _guess_params(guess: WindowGuess | None, asked: Sequence[str], terms: Sequence[str]) -> Any:
    """recall_columns.cypher's ``$guess``: size 0 reads nothing ahead."""
    if guess is None or guess.size <= 0:
        return {"size": 0}
    count = Counter(terms)
    return {
        "size": guess.size,
        "dayUs": guess.day_us,
        "mult": [count[term] for term in asked],
        "k1": guess.k1,
        "b": guess.bm25_b,
        "coverageB": guess.coverage_b,
        "coverage": guess.coverage,
        "bm25": guess.bm25,
        "freshness": guess.freshness,
        "confidence": guess.confidence,
        "keep": 1.0 - guess.freshness - guess.confidence,
        "halfLife": guess.half_life_days,
    }


class Neo4jStore(Neo4jVectors, Store):
    """The store on a Neo4j server (5.26 LTS or newer).

    Args:
        uri: Bolt URI, e.g. ``bolt://127.0.0.1:7687`` or ``neo4j://host``.
        user: user name (ignored when ``password`` is empty: no authentication).
        password: the password, kept secret in logs and reprs.
        database: database name (Community has one user database, ``neo4j``).
        timeout: the outage budget of one store call, in seconds (``GRAPHSVC_STORE_TIMEOUT``):
            connecting, waiting for a pooled connection and retrying transient failures all
            fit in it, then the call raises :class:`StoreUnavailableError`. Work on a live
            server (a large batch) is not cut short by it.
        ping_timeout: the most one :meth:`ping` waits (capped by ``timeout``).
    """

    kind = "neo4j"
    concurrent_writes = True
    overlapped_reads = True

    def __init__(
        self,
        uri: str,
        *,
        user: str = "neo4j",
        password: SecretStr | None = None,
        database: str = "neo4j",
        timeout: float = DEFAULT_TIMEOUT,
        ping_timeout: float = PING_TIMEOUT,
    ) -> None:
        if timeout <= 0 or ping_timeout <= 0:
            raise BadInputError(
                f"the Neo4j store timeouts must be positive, got {timeout} and {ping_timeout}: "
                "check GRAPHSVC_STORE_TIMEOUT"
            )
        self.uri = uri
        self._user = user
        self._password = password or SecretStr("")
        self._database = database
        self._timeout = timeout
        self._ping_timeout = min(ping_timeout, timeout)
        self._driver: neo4j.Driver | None = None
        # Pings get a driver of their own: one that checks a pooled connection before using it
        # (a frozen server then times out instead of hanging) and never waits past its bound.
        self._ping_driver: neo4j.Driver | None = None

    def open(self) -> None:
        """Connect, make sure of the schema (idempotent migrations, and the vector index of
        every dimension a namespace's model has)."""
        if self._driver is not None:
            return
        super().open()
        try:
            self._ensure_vector_indexes()
            self._backfill_counts()
            self._backfill_facets()
            self._backfill_vector_queue()
        except GraphsvcError:
            self.close()
            raise

    def _backfill_counts(self) -> None:
        """Give every NamespaceStat that has no link, belief and term counts its counts, one
        namespace a transaction (a database written before graphsvc kept them, or a bulk
        import's): counted once by reading them all, then kept by every write."""
        while True:
            rows = self._write(lambda tx: self._tx(tx, "backfill_counts"))
            if not rows:
                return
            row = rows[0]
            logger.info(
                "namespace %r: counted %d links, %d beliefs and %d terms once; writes keep them "
                "from now on",
                row["namespace"],
                row["links"],
                row["beliefs"],
                row["terms"],
            )

    def _backfill_facets(self) -> None:
        """Count the facets of every namespace whose NamespaceStat does not say they are kept
        (backfill_facets.cypher), one namespace a transaction; writes keep them from then on."""
        while True:
            rows = self._write(lambda tx: self._tx(tx, "backfill_facets", sep=KEY_SEP))
            if not rows:
                return
            logger.info(
                "namespace %r: counted its kinds, tags, sources and days once (%d values); "
                "writes keep them from now on",
                rows[0]["namespace"],
                rows[0]["facets"],
            )

    # -- writes ----------------------------------------------------------------------------------

    def _apply_stats(
        self,
        tx: Transaction,
        ns: str,
        added: Sequence[Sequence[str]],
        removed: Sequence[Sequence[str]],
        vectors: int = 0,
        gone: Mapping[str, Any] | None = None,
        facets: Sequence[Sequence[tuple[str, str]]] = (),
    ) -> None:
        """Term statistics after memories with these analysed terms were added and removed, and
        ``vectors`` more (or fewer) stored vectors (in the transaction that makes the change);
        ``gone``: what delete_memories answered for the removed ones (their links and beliefs
        leave the namespace's counts); ``facets``: the removed ones' (:func:`memory_facets`).
        TermStats, then FacetStats, are locked (in key order) before the NamespaceStat, in every
        write."""
        terms = self._bump_terms(tx, ns, added, removed)
        self._bump_facets(tx, ns, (), facets)
        links = -int(gone["links"]) if gone is not None else 0
        beliefs = -int(gone["beliefs"]) if gone is not None else 0
        self._bump_namespace(tx, ns, added, removed, vectors, terms, links, beliefs)

    def _bump_terms(
        self,
        tx: Transaction,
        ns: str,
        added: Sequence[Sequence[str]],
        removed: Sequence[Sequence[str]],
    ) -> int:
        """Add to the TermStats; how many more (or fewer) terms the namespace then holds."""
        terms, deltas = term_deltas(added, removed)
        if not terms:
            return 0
        rows = self._tx(tx, "bump_term_stats", ns=ns, sep=KEY_SEP, terms=terms, deltas=deltas)
        return int(rows[0]["terms"])

    def _bump_facets(
        self,
        tx: Transaction,
        ns: str,
        added: Sequence[Sequence[tuple[str, str]]],
        removed: Sequence[Sequence[tuple[str, str]]],
    ) -> None:
        """Add to the FacetStats (how many memories have each kind, tag, source and day)."""
        deltas = facet_deltas(added, removed)
        if deltas:
            facets, values, counts = (list(column) for column in zip(*deltas, strict=True))
            self._tx(
                tx,
                "bump_facet_stats",
                ns=ns,
                sep=KEY_SEP,
                facets=facets,
                values=values,
                deltas=counts,
            )

    def _bump_namespace(
        self,
        tx: Transaction,
        ns: str,
        added: Sequence[Sequence[str]],
        removed: Sequence[Sequence[str]],
        vectors: int,
        terms: int = 0,
        links: int = 0,
        beliefs: int = 0,
    ) -> int:
        """Add to the namespace's counts (locking its NamespaceStat); its memories after that,
        exact: every write changes them under this lock."""
        length = sum(len(t) for t in added) - sum(len(t) for t in removed)
        return self._bump_counts(
            tx,
            ns,
            memories=len(added) - len(removed),
            length=length,
            vectors=vectors,
            terms=terms,
            links=links,
            beliefs=beliefs,
        )

    def _count(self, tx: Transaction, ns: str) -> int:
        """The namespace's memories, read without a lock."""
        return int(self._tx(tx, "term_stats", ns=ns, keys=[])[0]["memories"])

    def _evict(
        self, tx: Transaction, ns: str, skip: Sequence[str], count: int
    ) -> tuple[list[Memory], dict[str, Any]]:
        """Delete the ``count`` oldest memories of the namespace but those of ``skip``; them,
        and what delete_memories answered (how many had a vector, the links and beliefs that
        went). The caller adjusts the namespace's statistics."""
        rows = self._tx(tx, "oldest_memories", ns=ns, skip=list(skip), limit=count)
        evicted = [memory_from_props(ns, row["memory"]) for row in rows]
        gone = self._tx(tx, "delete_memories", ns=ns, ids=[str(m.id) for m in evicted])[0]
        return evicted, dict(gone)

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
            found = self._tx(tx, "existing_memories", ns=namespace, ids=ids)[0]["memories"]
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
            terms = self._bump_terms(tx, namespace, added, [])
            self._bump_facets(tx, namespace, [memory_facets(m) for m in created], ())
            vector_delta = 0
            if vectors:
                # A created memory gets its vector; one already there only if it has none. (The
                # NamespaceStat is locked here, after the TermStats, as in every write.)
                vector_delta += self._store_vectors(
                    tx, namespace, vectors, replace=False, only=set(ids)
                )[1]
            evicted: list[Memory] = []
            # A write that adds nothing still evicts when the namespace is over the cap (one that
            # was lowered), as the embedded store does; only then is the count read first.
            if created or vector_delta or self._count(tx, namespace) > max_memories:
                after = self._bump_namespace(tx, namespace, added, [], vector_delta, terms)
                # Past the cap, the oldest memories but the batch's go, chosen and deleted under
                # the NamespaceStat's lock, where the count is exact and no other write evicts
                # at the same time. (Their TermStats are then locked after the NamespaceStat: two
                # writes at the cap at once can deadlock, which Neo4j detects, and the write is
                # retried.)
                if after > max_memories:
                    evicted, gone = self._evict(tx, namespace, ids, after - max_memories)
                    self._apply_stats(
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

        return self._write(work)

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
            row = self._tx(tx, "merge_links", ns=namespace, links=rows)[0]
            # Fewer merged than sent: an end is missing; name the first (the write rolls back).
            if row["merged"] < len(links):
                ends = sorted({str(e) for lk in links for e in (lk.source, lk.target)})
                found = {r["id"] for r in self._tx(tx, "memory_ids", ns=namespace, ids=ends)}
                for link in links:
                    for end in (link.source, link.target):
                        if str(end) not in found:
                            raise link_end_missing(link, end, namespace)
            sources = list(
                dict.fromkeys(str(lk.source) for lk in links if lk.kind is LinkKind.SUPERSEDES)
            )
            if sources:
                cycle = self._tx(tx, "supersedes_cycle", ns=namespace, ids=sources)
                if cycle:
                    raise supersedes_cycle(cycle[0]["id"])
            if row["created"]:  # the NamespaceStat is locked last, after both ends of each link
                self._bump_counts(tx, namespace, links=int(row["created"]))

        self._write(work)

    def forget(self, namespace: str, memory_id: UUID, *, at: datetime) -> ForgetReceipt:
        def work(tx: Transaction) -> ForgetReceipt:
            rows = self._tx(tx, "forget_receipt", ns=namespace, id=str(memory_id))
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
            gone = self._tx(tx, "delete_memories", ns=namespace, ids=[str(memory_id)])[0]
            self._apply_stats(
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

        return self._write(work)

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
            rows = self._read("erase_event_mentions", ns=namespace, pattern=DETAIL_WITH_ID)
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
            count, links, beliefs, last, new = self._write(batch)
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
                    removed = self._write(step)
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
        row = self._tx(
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
        gone = self._tx(tx, "delete_memories", ns=namespace, ids=ids)[0]
        self._apply_stats(
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
            self._tx(tx, "erase_rewrite_events", rows=rows)
        last = utc_datetime(batch[-1]["recordedAt"]) or after
        return len(ids), int(row["links"]), int(row["beliefs"]), last, new

    def _erase_nodes(self, what: str, namespace: str, limit: int, tx: Transaction) -> int:
        """One batch of what erasing everything removes after the memories (``what`` is one of
        :data:`ERASE_AFTER_MEMORIES`); how many nodes it removed."""
        if what == "beliefs":
            rows = self._tx(tx, "erase_beliefs", ns=namespace, limit=limit)
            if rows[0]["removed"]:
                self._bump_counts(tx, namespace, beliefs=-int(rows[0]["removed"]))
        elif what == "events":
            rows = self._tx(tx, "erase_events", ns=namespace, limit=limit)
        elif what == "runs":
            rows = self._tx(tx, "erase_runs", ns=namespace, limit=limit)
        else:
            rows = self._tx(tx, "erase_statistics", ns=namespace, limit=limit)
        return int(rows[0]["removed"])

    def save_belief(self, belief: Belief) -> None:
        ns = belief.namespace

        def work(tx: Transaction) -> None:
            wanted = [str(m) for m in (*belief.source_ids, *belief.linked_context_ids)]
            found = {r["id"] for r in self._tx(tx, "memory_ids", ns=ns, ids=wanted)}
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
            self._tx(
                tx,
                "save_belief",
                ns=ns,
                belief=props,
                sources=[str(m) for m in belief.source_ids],
                context=[str(m) for m in belief.linked_context_ids],
            )
            self._bump_counts(tx, ns, beliefs=1)

        self._write(work)

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
            rows = self._tx(
                tx,
                "append_event",
                ns=namespace,
                key=namespaced_key(namespace, run_id),
                runId=run_id,
                event=props,
            )
            return int(rows[0]["seq"])

        seq = self._write(work)
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
            rows = self._tx(
                tx,
                "report_tokens",
                key=namespaced_key(namespace, run_id),
                step=step,
                tokens=reported_tokens,
            )
            if not rows:
                raise no_assembled_event(run_id, step)
            return event_from_props(rows[0]["event"])

        return self._write(work)

    # -- reads -----------------------------------------------------------------------------------

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        if not ids:
            return []
        found = self._read("get_memories", ns=namespace, ids=[str(i) for i in ids])[0]["memories"]
        by_id = {props["id"]: memory_from_props(namespace, props) for props in found}
        return [by_id[str(i)] for i in ids if str(i) in by_id]

    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        keys = [namespaced_key(namespace, t) for t in dict.fromkeys(terms)]
        row = self._read("term_stats", ns=namespace, keys=keys)[0]
        df = {item["key"].split(KEY_SEP, 1)[1]: int(item["df"]) for item in row["df"]}
        return TermStats(int(row["memories"]), int(row["totalLength"]), df)

    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        unique = list(dict.fromkeys(terms))
        found: dict[str, list[Any]] = {}
        for start in range(0, len(unique), TERMS_PER_QUERY):
            chunk = unique[start : start + TERMS_PER_QUERY]
            rows = self._read("candidates", query=lucene_query(namespace, chunk))
            for row in rows[0]["rows"]:
                found.setdefault(row[0], row)
        return candidates_from_rows([found[key] for key in sorted(found)], score_terms)

    def recall_candidates(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> tuple[TermStats, list[Candidate]]:
        """:meth:`term_stats` of ``terms`` and the candidates
        :func:`graphsvc.recall.plan_candidates` picks with them (``limit``: its candidate
        limit), with the frequencies of ``terms``, in one round trip (:meth:`recall_columns`),
        ordered as :meth:`candidates` (by id) or :meth:`recent_candidates` (newest first)."""
        stats, columns, recalled = self._recall(namespace, terms, limit)
        found = [columns.candidate(i) for i in range(len(columns))]
        if recalled.fallback:
            found.sort(key=lambda c: (-c.recorded_us, str(c.id)))
        else:
            found.sort(key=lambda c: str(c.id))
        return stats, found

    def recall_columns(
        self, namespace: str, terms: Sequence[str], limit: int, as_of: AsOf | None = None
    ) -> tuple[TermStats, CandidateColumns]:
        """As :meth:`Store.recall_columns`, in one round trip (recall_columns.cypher): the
        statistics, the plan and the candidates' columns, with the term frequencies counted in
        Cypher, so a candidate crosses Bolt as a few numbers and no Python object is made for
        it (ids become UUIDs only when scoring reads them)."""
        stats, columns, _ = self._recall(namespace, terms, limit, as_of=as_of)
        return stats, columns

    def recall_window(
        self,
        namespace: str,
        terms: Sequence[str],
        limit: int,
        guess: WindowGuess | None,
        as_of: AsOf | None = None,
    ) -> Recalled:
        """As :meth:`Store.recall_window`, in the one round trip of :meth:`recall_columns`:
        recall_columns.cypher scores the candidates as ``guess`` says and reads the best
        ``guess.size`` with them, so the window is usually read without a round trip of its
        own."""
        stats, columns, recalled = self._recall(namespace, terms, limit, guess, as_of)
        return Recalled(stats, columns, recalled.model, recalled.ahead, recalled.vectors)

    def _recall(
        self,
        namespace: str,
        terms: Sequence[str],
        limit: int,
        guess: WindowGuess | None = None,
        as_of: AsOf | None = None,
    ) -> tuple[TermStats, CandidateColumns, _Recalled]:
        """The statistics and candidate columns of a query, with whether the plan fell back to
        the newest memories of its rarest term, the namespace's vector model, and what ``guess``
        read ahead."""
        distinct = list(dict.fromkeys(terms))
        asked = sorted(distinct)
        row = self._read(
            "recall_columns",
            ns=namespace,
            sep=KEY_SEP,
            terms=asked,
            limit=limit,
            chunk=TERMS_PER_QUERY,
            none=NO_OCCURRED,
            needles=[f" {term} " for term in asked],
            guess=_guess_params(guess, asked, terms),
            asOf=_as_of_param(as_of),
        )[0]
        df = {asked[i]: int(count) for i, count in row["known"]}
        stats = TermStats(
            int(row["memories"]), int(row["totalLength"]), {t: df[t] for t in distinct}
        )
        ahead = RowsAhead(row["ahead"]) if row["ahead"] else None
        recalled = _Recalled(
            row["fallback"] is not None, vector_model_from_row(row), ahead, int(row["vectors"])
        )
        return stats, columns_from_row(row, asked, terms), recalled

    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        rows = self._read("recent_candidates", query=lucene_query(namespace, [term]), limit=limit)
        return candidates_from_rows(rows[0]["rows"], score_terms)

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
            found = self._read("window", ns=namespace, ids=missing, asOf=_as_of_param(as_of))[0][
                "memories"
            ]
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
        rows = self._read(
            "supersessions", ns=namespace, ids=[str(i) for i in ids], asOf=_as_of_param(as_of)
        )
        return [(UUID(row["newer"]), UUID(row["older"])) for row in rows]

    def successors(
        self, namespace: str, ids: Sequence[UUID], as_of: AsOf | None = None
    ) -> list[Successor]:
        if not ids:
            return []
        rows = self._read(
            "successors", ns=namespace, ids=[str(i) for i in ids], asOf=_as_of_param(as_of)
        )
        return [successor_from_row(row) for row in rows]

    def visible(self, namespace: str, ids: Sequence[UUID], as_of: AsOf) -> set[UUID]:
        if not ids:
            return set()
        row = self._read(
            "visible", ns=namespace, ids=[str(i) for i in ids], asOf=_as_of_param(as_of)
        )[0]
        return {UUID(key) for key in row["ids"]}

    def supersession_chain(
        self, namespace: str, memory_id: UUID, max_nodes: int
    ) -> tuple[list[Memory], list[Link]]:
        rows = self._read("supersession_chain", ns=namespace, id=str(memory_id), max=max_nodes)
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
            row = self._read(
                "walk",
                ns=namespace,
                frontier=frontier,
                seen=seen,
                room=max_nodes - len(reached),
                hops=hops,
                members=last,
                reached=[n for n, _ in reached],
                starts=starts,
                asOf=_as_of_param(as_of),
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
        rows = self._read("next_recorded", ns=namespace, ids=[str(i) for i in asked])
        after = {row["seed"]: memory_from_props(namespace, row["memory"]) for row in rows}
        return [(mid, after[key]) for mid in asked if (key := str(mid)) in after]

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        if not ids:
            return []
        found = self._read("links_touching", ns=namespace, ids=[str(i) for i in ids])[0]["links"]
        return list(sort_links([link_from_row(link) for link in found]))

    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        rows = self._read("get_belief", ns=namespace, id=str(belief_id))
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
        rows = self._read("run_events", key=namespaced_key(namespace, run_id))
        return [event_from_props(row["event"]) for row in rows]

    def stats(self, namespace: str) -> NamespaceStats:
        """The namespace's counts as its NamespaceStat keeps them (no read grows with the
        namespace); counted afresh only where they are not kept yet (a NamespaceStat made before
        they were, until the next open backfills it: :meth:`_backfill_counts`)."""
        row = dict(self._read("namespace_stats", ns=namespace)[0])
        if any(row[name] is None for name in ("links", "beliefs", "terms")):
            row.update(self._read("namespace_counted_stats", ns=namespace)[0])
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
        row = self._read("facet_counts", ns=namespace, facet=facet, top=top, byDay=by_day)[0]
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
        rows = self._read(
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

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        after: datetime | None = None
        after_id = ""
        while True:
            rows = self._read(
                "export_memories", ns=namespace, after=after, afterId=after_id, limit=EXPORT_PAGE
            )
            for row in rows:
                memory = memory_from_props(namespace, row["memory"])
                after, after_id = memory.recorded_at, str(memory.id)
                yield memory
            if len(rows) < EXPORT_PAGE:
                break
        for row in self._read("export_links", ns=namespace):
            yield link_from_row(row)
