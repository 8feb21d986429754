"""The Neo4j store: graphsvc's system of record.

All retrieval work happens in the database: candidates come from the ``memory_terms`` full-text
index, exact term statistics (``:TermStat`` df per term, ``:NamespaceStat`` N and total length) are
kept in the same transaction as every write and delete, and graph walks are bounded breadth-first
hops in Cypher. Writes are explicit transactions batched with ``UNWIND``; reads are single
auto-commit queries.

Outages are bounded: every store call has a total time budget (``timeout``,
``GRAPHSVC_STORE_TIMEOUT``). Connection acquisition (which includes connecting) never waits past
it, and graphsvc's own retry loop (not the driver's, whose loop can run well past its nominal retry
time) retries transient failures with short backoff until the budget is spent, then raises
:class:`~graphsvc.errors.StoreUnavailableError` naming the real cause (connection refused at
host:port, timed out, authentication failed, database unavailable) and a ``retry_after`` hint. A
write that fails that way may or may not have been applied (the connection can be lost after the
server committed but before it answered, and a server shutting down has been seen to commit and
still answer "database unavailable"); it is never half-applied, and because every write is
idempotent the caller resends it with the same ids. The budget does not cut short a call that a
live server is working on (a large batch), nor one a starting or stopping server holds while it
waits for its database. ``ping`` makes one attempt, no retries, on a checked connection.

This is the only module that imports ``neo4j``; driver errors become graphsvc errors here.
"""

from __future__ import annotations

import random
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit
from uuid import UUID

import neo4j
from neo4j import READ_ACCESS, WRITE_ACCESS, GraphDatabase, Transaction
from neo4j import exceptions as neo4j_errors
from pydantic import SecretStr

from graphsvc.errors import (
    BadInputError,
    ConflictError,
    GraphsvcError,
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
    as_utc,
)
from graphsvc.store.base import (
    EPOCH,
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
from graphsvc.store.cypher import query, schema_statements

T = TypeVar("T")
KEY_SEP = "\x1f"
# Terms per full-text query: Lucene refuses more than 1024 clauses, and some versions return
# nothing for very long queries; chunks stay well below both.
TERMS_PER_QUERY = 100
EXPORT_PAGE = 1_000
# The outage budget: a store call answers within about ``timeout`` seconds when Neo4j is down.
DEFAULT_TIMEOUT = 5.0
# The longest a single ping (/readyz) waits for a connection and its answer.
PING_TIMEOUT = 2.0
# graphsvc's retry backoff: first pause, growth, cap (seconds), with +-20% jitter.
RETRY_FIRST, RETRY_GROWTH, RETRY_CAP = 0.2, 2.0, 1.0
# The least time an attempt gets to acquire a connection, even at the very end of the budget.
MIN_ACQUIRE = 0.25
# Retry-After hints (seconds): the server is not reachable (a restart takes a while) / it is up
# but refused this attempt (lock contention, a database still starting, a dropped connection).
RETRY_AFTER_DOWN = 5.0
RETRY_AFTER_BUSY = 1.0
# Server error codes (parts of) that mean "not available now", not "your request is wrong".
UNAVAILABLE_CODES = ("DatabaseNotFound", "DatabaseUnavailable", "TransactionTimedOut")


def _key(namespace: str, name: str) -> str:
    return f"{namespace}{KEY_SEP}{name}"


def _native(value: Any) -> datetime | None:
    """A Neo4j temporal value as an aware UTC datetime."""
    if value is None:
        return None
    if isinstance(value, neo4j.time.DateTime):
        value = value.to_native()
    if not isinstance(value, datetime):
        raise GraphsvcError(f"expected a DateTime from Neo4j, got {type(value).__name__}")
    return as_utc(value)


def _memory_props(memory: Memory) -> dict[str, Any]:
    return {
        "id": str(memory.id),
        "text": memory.text,
        "kind": memory.kind,
        "occurredAt": memory.occurred_at,
        "recordedAt": memory.recorded_at,
        "invalidatedAt": memory.invalidated_at,
        "tags": list(memory.tags),
        "source": memory.source,
        "confidence": memory.confidence,
        "tokens": memory.tokens,
        "terms": list(memory.terms),
        "length": len(memory.terms),
        # What the full-text index sees: the distinct analysed terms, space separated.
        "termText": " ".join(sorted(set(memory.terms))),
        # Epoch microseconds for the candidate query: integers cross Bolt far faster than
        # DateTimes, which stay the readable form for people and Cypher.
        "recordedUs": micros(memory.recorded_at),
        "occurredUs": None if memory.occurred_at is None else micros(memory.occurred_at),
    }


def _time(props: dict[str, Any], name: str) -> datetime | None:
    """A time property, from its epoch-microseconds copy when the query returned that."""
    micros = props.get(f"{name}Us")
    if micros is not None:
        return _frommicros(micros)
    return _native(props.get(f"{name}At"))


def _memory(ns: str, props: dict[str, Any]) -> Memory:
    recorded = _time(props, "recorded")
    if recorded is None:
        raise GraphsvcError(f"memory {props.get('id')} has no recordedAt")
    return Memory.model_construct(
        id=UUID(props["id"]),
        namespace=ns,
        text=props["text"],
        kind=props["kind"],
        occurred_at=_time(props, "occurred"),
        recorded_at=recorded,
        invalidated_at=_native(props.get("invalidatedAt")),
        tags=tuple(props.get("tags") or ()),
        source=props.get("source"),
        confidence=float(props.get("confidence", 1.0)),
        tokens=int(props["tokens"]),
        terms=tuple(props.get("terms") or ()),
    )


def _frommicros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


def _candidate(row: Any) -> Candidate:
    occurred = row["occurredUs"]
    return Candidate(
        id=UUID(row["id"]),
        tf=tuple(row["tf"]),
        length=int(row["length"]),
        recorded_us=int(row["recordedUs"]),
        occurred_us=None if occurred is None else int(occurred),
        confidence=float(row["confidence"]),
    )


def _link(row: Any) -> Link:
    created = _native(row["createdAt"])
    if created is None:
        raise GraphsvcError(f"link {row['source']} -> {row['target']} has no createdAt")
    return Link.model_construct(
        source=UUID(row["source"]),
        target=UUID(row["target"]),
        kind=LinkKind(row["kind"]),
        weight=float(row["weight"]),
        created_at=created,
        note=row["note"],
    )


def _event(props: dict[str, Any]) -> ContextEvent:
    recorded = _native(props.get("recordedAt"))
    return ContextEvent.model_construct(
        run_id=props["runId"],
        seq=int(props["seq"]),
        step=int(props["step"]),
        kind=ContextEventKind(props["kind"]),
        detail=props.get("detail"),
        est_tokens=props.get("estTokens"),
        reported_tokens=props.get("reportedTokens"),
        recorded_at=recorded,
    )


def _lucene(namespace: str, terms: Sequence[str]) -> str:
    """A full-text query for memories of ``namespace`` containing any of ``terms``. Namespaces are
    ``[A-Za-z0-9_-]`` and analysed terms are letters and digits only, so nothing needs escaping."""
    return f'+namespace:"{namespace}" +termText:({" ".join(terms)})'


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, outermost first (the driver wraps socket errors)."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain and len(chain) < 16:
        chain.append(link)
        link = link.__cause__ or link.__context__
    return chain


_ESTABLISHING = (
    ConnectionRefusedError,
    TimeoutError,
    socket.gaierror,
    neo4j_errors.ConnectionAcquisitionTimeoutError,
    neo4j_errors.AuthError,
)


def _retryable(exc: Exception) -> bool:
    """The driver's own verdict: transient errors and lost connections are worth another attempt;
    a commit whose outcome is unknown (``IncompleteCommit`` anywhere in the chain, even under an
    error closing the session) is not."""
    if any(isinstance(link, neo4j_errors.IncompleteCommit) for link in _chain(exc)):
        return False
    return isinstance(exc, neo4j_errors.Neo4jError | neo4j_errors.DriverError) and (
        exc.is_retryable()
    )


def _commit(tx: Transaction) -> None:
    """Commit. A connection that fails once COMMIT may have been sent leaves the outcome unknown:
    that is an ``IncompleteCommit``, never retried, whatever form the driver's error took."""
    try:
        tx.commit()
    except neo4j_errors.IncompleteCommit:
        raise
    except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired, OSError) as exc:
        raise neo4j_errors.IncompleteCommit(f"the connection failed during COMMIT: {exc}") from exc


def _stale_connection(exc: Exception) -> bool:
    """A connection that was already open broke (a pooled connection to a server that restarted
    or died), as opposed to a new connection that could not be made: a fresh one may work now."""
    chain = _chain(exc)
    lost = any(
        isinstance(link, neo4j_errors.SessionExpired | neo4j_errors.ServiceUnavailable)
        for link in chain
    )
    return (
        lost
        and not any(isinstance(link, _ESTABLISHING) for link in chain)
        and not any(isinstance(link, neo4j_errors.IncompleteCommit) for link in chain)
    )


class Neo4jStore(Store):
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

    # -- the boundary: driver errors become graphsvc errors --------------------------------------

    def _where(self) -> str:
        """``host:port`` of the server, for messages."""
        try:
            parts = urlsplit(self.uri)
            return f"{parts.hostname or '?'}:{parts.port or 7687}"
        except ValueError:
            return self.uri

    def _cause(self, exc: BaseException) -> tuple[str, float | None]:
        """What really went wrong, in words, and a Retry-After hint (None: retrying won't help).

        The driver wraps the socket error it hit (refused, timed out, unresolvable) in its own;
        the whole chain is searched, most telling cause first.
        """
        chain = _chain(exc)
        where = self._where()

        def find(kind: type[BaseException] | tuple[type[BaseException], ...]) -> Any:
            return next((link for link in chain if isinstance(link, kind)), None)

        if find(neo4j_errors.AuthError) is not None:
            return (
                f"authentication failed at {where}: check GRAPHSVC_NEO4J_USER and "
                "GRAPHSVC_NEO4J_PASSWORD",
                None,
            )
        if find(neo4j_errors.IncompleteCommit) is not None:
            return f"the connection to {where} was lost while a commit was in flight", (
                RETRY_AFTER_DOWN
            )
        if find(ConnectionRefusedError) is not None:
            return (
                f"connection refused at {where} (is it running? bash scripts/neo4j.sh start)",
                RETRY_AFTER_DOWN,
            )
        if find(socket.gaierror) is not None:
            return f"cannot resolve the host of {where}: check GRAPHSVC_NEO4J_URI", None
        for link in chain:
            code = getattr(link, "code", None) or ""
            if isinstance(link, neo4j_errors.Neo4jError) and "DatabaseNotFound" in code:
                return (
                    f"database {self._database!r} does not exist at {where}: check "
                    "GRAPHSVC_NEO4J_DATABASE",
                    None,
                )
            if isinstance(link, neo4j_errors.Neo4jError) and "DatabaseUnavailable" in code:
                return f"database {self._database!r} is unavailable at {where}", RETRY_AFTER_BUSY
            if isinstance(link, neo4j_errors.Neo4jError) and "TransactionTimedOut" in code:
                return f"{where} did not answer within the time limit", RETRY_AFTER_BUSY
        if find(neo4j_errors.ConnectionAcquisitionTimeoutError) is not None:
            return f"timed out waiting for a connection to {where}", RETRY_AFTER_DOWN
        if find(TimeoutError) is not None:
            return f"timed out connecting to {where}", RETRY_AFTER_DOWN
        transient = find(neo4j_errors.TransientError)
        if transient is not None:
            return f"{transient.code}: {transient.message}", RETRY_AFTER_BUSY
        if find((neo4j_errors.SessionExpired, neo4j_errors.ServiceUnavailable)) is not None:
            return f"the connection to {where} was lost", RETRY_AFTER_DOWN
        os_error = find(OSError)
        if os_error is not None:
            return f"{os_error.strerror or os_error} ({where})", RETRY_AFTER_DOWN
        return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", (
            RETRY_AFTER_BUSY
        )

    def _translate(self, exc: Exception, *, write: bool = False) -> GraphsvcError:
        """The graphsvc error for a driver error; ``write``: the failed call was a write."""
        if isinstance(exc, GraphsvcError):
            return exc
        if isinstance(exc, neo4j_errors.ConstraintError):
            return ConflictError(f"the write conflicts with existing data: {exc.message}")
        database_down = isinstance(exc, neo4j_errors.Neo4jError) and any(
            word in (exc.code or "") for word in UNAVAILABLE_CODES
        )
        if database_down or isinstance(
            exc,
            neo4j_errors.AuthError
            | neo4j_errors.ServiceUnavailable
            | neo4j_errors.SessionExpired
            | neo4j_errors.TransientError
            | neo4j_errors.DriverError
            | OSError,
        ):
            cause, retry_after = self._cause(exc)
            message = f"Neo4j at {self.uri} is unavailable: {cause}"
            if write:
                message += (
                    ". The write may or may not have been applied (it is never half-applied): "
                    "resend it with the same ids (writes are idempotent)"
                )
            elif retry_after is not None:
                message += f"; retry in {retry_after:g} s"
            return StoreUnavailableError(message, retry_after=retry_after)
        if isinstance(exc, neo4j_errors.Neo4jError):
            return GraphsvcError(f"Neo4j error {exc.code}: {exc.message}")
        raise exc

    def _require(self) -> neo4j.Driver:
        if self._driver is None:
            raise StoreUnavailableError(
                f"the Neo4j store for {self.uri} is not open: call open() first"
            )
        return self._driver

    def _run(self, action: Callable[[neo4j.Driver], T]) -> T:
        """One attempt of ``action``, its errors translated (no retry)."""
        driver = self._require()
        try:
            return action(driver)
        except Exception as exc:  # translated at this one boundary
            raise self._translate(exc) from exc

    def _call(self, attempt: Callable[[neo4j.Driver, float], T], *, write: bool) -> T:
        """Run ``attempt(driver, acquisition_timeout)`` within the store's timeout, retrying what
        the driver calls retryable, then translate what is left.

        Each attempt may wait for a connection only until the budget is spent (at least
        :data:`MIN_ACQUIRE`). Between attempts graphsvc pauses with a short capped backoff,
        except once after a stale pooled connection (a fresh one is tried at once). Bad
        credentials, an unknown host or database, and a commit whose outcome is unknown are not
        retried.
        """
        driver = self._require()
        deadline = time.monotonic() + self._timeout
        pause = RETRY_FIRST
        fresh_tried = False
        while True:
            try:
                return attempt(driver, max(deadline - time.monotonic(), MIN_ACQUIRE))
            except GraphsvcError:
                raise
            except Exception as exc:  # translated at this one boundary
                left = deadline - time.monotonic()
                stale = not fresh_tried and _stale_connection(exc)
                hopeless = self._cause(exc)[1] is None  # bad credentials, host or database
                if left <= 0 or hopeless or not _retryable(exc):
                    raise self._translate(exc, write=write) from exc
            if stale:
                fresh_tried = True
            else:
                time.sleep(min(pause * random.uniform(0.8, 1.2), left))
                pause = min(pause * RETRY_GROWTH, RETRY_CAP)

    def _read(self, name: str, **params: Any) -> list[neo4j.Record]:
        text = query(name)

        def attempt(driver: neo4j.Driver, acquire: float) -> list[neo4j.Record]:
            with driver.session(
                database=self._database,
                default_access_mode=READ_ACCESS,
                connection_acquisition_timeout=acquire,
                disable_auto_commit_retries=True,
            ) as session:
                return list(session.run(text, params))

        return self._call(attempt, write=False)

    def _write(self, work: Callable[[Transaction], T]) -> T:
        def attempt(driver: neo4j.Driver, acquire: float) -> T:
            done: list[T] = []
            try:
                with (
                    driver.session(
                        database=self._database,
                        default_access_mode=WRITE_ACCESS,
                        connection_acquisition_timeout=acquire,
                    ) as session,
                    session.begin_transaction() as tx,
                ):
                    result = work(tx)
                    _commit(tx)
                    done.append(result)
            except Exception:
                # COMMIT answered, so the write is applied, whatever closing the session said:
                # retrying would apply a write that is not idempotent (an event) twice.
                if done:
                    return done[0]
                raise
            return done[0]

        return self._call(attempt, write=True)

    @staticmethod
    def _tx(tx: Transaction, name: str, **params: Any) -> list[neo4j.Record]:
        return list(tx.run(query(name), params))

    # -- lifecycle -------------------------------------------------------------------------------

    def open(self) -> None:
        if self._driver is not None:
            return
        secret = self._password.get_secret_value()
        auth = (self._user, secret) if secret else None
        # "property/label does not exist yet" on a fresh database is expected, not news.
        quiet = [neo4j.NotificationDisabledClassification.UNRECOGNIZED]
        try:
            driver = GraphDatabase.driver(
                self.uri,
                auth=auth,
                # graphsvc retries itself (bounded by the budget); these bound what is left to
                # the driver: a managed transaction's retries, one connect, one acquisition.
                max_transaction_retry_time=self._timeout,
                connection_timeout=min(5.0, self._timeout),
                connection_acquisition_timeout=self._timeout,
                notifications_disabled_classifications=quiet,
            )
            ping_driver = GraphDatabase.driver(
                self.uri,
                auth=auth,
                connection_timeout=self._ping_timeout,
                connection_acquisition_timeout=self._ping_timeout,
                liveness_check_timeout=0.0,
                max_connection_pool_size=4,
                notifications_disabled_classifications=quiet,
            )
        except (ValueError, neo4j_errors.ConfigurationError) as exc:
            raise BadInputError(f"invalid Neo4j URI {self.uri!r}: {exc}") from exc
        self._driver = driver
        self._ping_driver = ping_driver
        try:
            self._read("ping")
            self._ensure_schema()
        except GraphsvcError:
            self.close()
            raise

    def _ensure_schema(self) -> None:
        def attempt(driver: neo4j.Driver, acquire: float) -> None:
            with driver.session(
                database=self._database, connection_acquisition_timeout=acquire
            ) as session:
                for statement in schema_statements():
                    session.run(statement).consume()
                session.run("CALL db.awaitIndexes(120)").consume()

        self._call(attempt, write=False)

    def close(self) -> None:
        for driver in (self._driver, self._ping_driver):
            if driver is not None:
                driver.close()
        self._driver = self._ping_driver = None

    def ping(self) -> None:
        """One query (``RETURN 1``): no retry, bounded by ``ping_timeout``, on a connection that
        is checked first (a pooled connection to a server that died or froze is not trusted).

        Raises:
            StoreUnavailableError: the server does not answer now, with the real cause
                (connection refused at host:port, timed out, authentication failed, database
                unavailable).
        """
        driver = self._ping_driver
        if driver is None:
            raise StoreUnavailableError(
                f"the Neo4j store for {self.uri} is not open: call open() first"
            )
        budget = self._ping_timeout
        try:
            with driver.session(
                database=self._database,
                default_access_mode=READ_ACCESS,
                connection_acquisition_timeout=budget,
                disable_auto_commit_retries=True,
            ) as session:
                session.run(neo4j.Query(query("ping"), timeout=budget)).consume()
        except Exception as exc:  # translated at this one boundary
            raise self._translate(exc) from exc

    # -- writes ----------------------------------------------------------------------------------

    @staticmethod
    def _term_deltas(
        ns: str, added: Sequence[Memory], removed: Sequence[Memory]
    ) -> list[dict[str, Any]]:
        counts: Counter[str] = Counter()
        for memory in added:
            counts.update(set(memory.terms))
        for memory in removed:
            counts.subtract(set(memory.terms))
        return [
            {"key": _key(ns, term), "term": term, "delta": delta}
            for term, delta in sorted(counts.items())
            if delta != 0
        ]

    def _apply_stats(
        self,
        tx: Transaction,
        ns: str,
        added: Sequence[Memory],
        removed: Sequence[Memory],
    ) -> None:
        deltas = self._term_deltas(ns, added, removed)
        if deltas:
            self._tx(tx, "bump_term_stats", ns=ns, deltas=deltas)
        length = sum(len(m.terms) for m in added) - sum(len(m.terms) for m in removed)
        self._tx(
            tx, "bump_namespace_stat", ns=ns, memories=len(added) - len(removed), length=length
        )

    def upsert_memories(
        self, namespace: str, memories: Sequence[Memory], *, max_memories: int
    ) -> WriteResult:
        def work(tx: Transaction) -> WriteResult:
            ids = sorted({str(m.id) for m in memories})
            existing = {
                row["memory"]["id"]: (row["namespace"], row["memory"])
                for row in self._tx(tx, "existing_memories", ids=ids)
            }
            here = {mid: props for mid, (ns, props) in existing.items() if ns == namespace}
            created, unchanged = split_upsert(
                memories,
                stored=lambda mid: _memory(namespace, here[str(mid)]) if str(mid) in here else None,
                taken_elsewhere=lambda mid: str(mid) in existing,
            )
            stat = self._tx(tx, "term_stats", ns=namespace, keys=[])[0]
            overflow = stat["memories"] + len(created) - max_memories
            evicted: list[Memory] = []
            if overflow > 0:
                skip = [str(mid) for mid in unchanged]
                rows = self._tx(tx, "oldest_memories", ns=namespace, skip=skip, limit=overflow)
                evicted = [_memory(namespace, row["memory"]) for row in rows]
                self._tx(tx, "delete_memories", ns=namespace, ids=[str(m.id) for m in evicted])
            if created:
                props = [_memory_props(m) for m in created]
                self._tx(tx, "create_memories", ns=namespace, rows=props)
            if created or evicted:
                self._apply_stats(tx, namespace, created, evicted)
            return WriteResult(
                created=tuple(m.id for m in created),
                unchanged=tuple(unchanged),
                evicted=tuple(m.id for m in evicted),
            )

        return self._write(work)

    def add_links(self, namespace: str, links: Sequence[Link]) -> None:
        if not links:
            return

        def work(tx: Transaction) -> None:
            ends = sorted({str(e) for lk in links for e in (lk.source, lk.target)})
            found = {row["id"] for row in self._tx(tx, "memory_ids", ns=namespace, ids=ends)}
            for link in links:
                for end in (link.source, link.target):
                    if str(end) not in found:
                        raise link_end_missing(link, end, namespace)
            rows = [
                {"source": str(lk.source), "target": str(lk.target), "kind": lk.kind.value,
                 "weight": lk.weight, "note": lk.note, "createdAt": lk.created_at}
                for lk in links
            ]  # fmt: skip
            self._tx(tx, "merge_links", ns=namespace, links=rows)
            sources = list(
                dict.fromkeys(str(lk.source) for lk in links if lk.kind is LinkKind.SUPERSEDES)
            )
            if sources:
                cycle = self._tx(tx, "supersedes_cycle", ns=namespace, ids=sources)
                if cycle:
                    raise supersedes_cycle(cycle[0]["id"])

        self._write(work)

    def forget(self, namespace: str, memory_id: UUID, *, at: datetime) -> ForgetReceipt:
        def work(tx: Transaction) -> ForgetReceipt:
            rows = self._tx(tx, "forget_receipt", ns=namespace, id=str(memory_id))
            if not rows:
                raise memory_missing(memory_id, namespace)
            row = rows[0]
            memory = _memory(namespace, row["memory"])
            refs = sorted(
                (LinkRef(source=UUID(r["source"]), target=UUID(r["target"]), kind=r["kind"])
                 for r in row["links"] if r["kind"] is not None),
                key=lambda lk: (str(lk.source), str(lk.target), lk.kind.value),
            )  # fmt: skip
            self._tx(tx, "delete_memories", ns=namespace, ids=[str(memory_id)])
            self._apply_stats(tx, namespace, [], [memory])
            return ForgetReceipt(
                memory_id=memory_id,
                namespace=namespace,
                removed_links=tuple(refs),
                removed_belief_ids=tuple(sorted((UUID(b) for b in row["beliefs"]), key=str)),
                forgotten_at=at,
            )

        return self._write(work)

    def save_belief(self, belief: Belief) -> None:
        ns = belief.namespace

        def work(tx: Transaction) -> None:
            wanted = [str(m) for m in (*belief.source_ids, *belief.linked_context_ids)]
            found = {r["id"] for r in self._tx(tx, "memory_ids", ns=ns, ids=wanted)}
            missing = [m for m in wanted if m not in found]
            if missing:
                raise belief_memory_missing(missing[0])
            props = {
                "id": str(belief.id), "cue": belief.cue, "summary": belief.summary,
                "confidence": belief.confidence, "createdAt": belief.created_at,
            }  # fmt: skip
            self._tx(
                tx, "save_belief", ns=ns, belief=props,
                sources=[str(m) for m in belief.source_ids],
                context=[str(m) for m in belief.linked_context_ids],
            )  # fmt: skip

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
            "step": step, "kind": ContextEventKind(kind).value, "detail": detail,
            "estTokens": est_tokens, "reportedTokens": None, "recordedAt": at,
        }  # fmt: skip

        def work(tx: Transaction) -> int:
            rows = self._tx(
                tx, "append_event", ns=namespace, key=_key(namespace, run_id), runId=run_id,
                event=props,
            )  # fmt: skip
            return int(rows[0]["seq"])

        seq = self._write(work)
        return ContextEvent(
            run_id=run_id, seq=seq, step=step, kind=ContextEventKind(kind), detail=detail,
            est_tokens=est_tokens, reported_tokens=None, recorded_at=at,
        )  # fmt: skip

    def set_reported_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        def work(tx: Transaction) -> ContextEvent:
            rows = self._tx(
                tx, "report_tokens", key=_key(namespace, run_id), step=step, tokens=reported_tokens
            )
            if not rows:
                raise no_assembled_event(run_id, step)
            return _event(rows[0]["event"])

        return self._write(work)

    # -- reads -----------------------------------------------------------------------------------

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        if not ids:
            return []
        rows = self._read("get_memories", ns=namespace, ids=[str(i) for i in ids])
        by_id = {row["memory"]["id"]: _memory(namespace, row["memory"]) for row in rows}
        return [by_id[str(i)] for i in ids if str(i) in by_id]

    def term_stats(self, namespace: str, terms: Sequence[str]) -> TermStats:
        keys = [_key(namespace, t) for t in dict.fromkeys(terms)]
        row = self._read("term_stats", ns=namespace, keys=keys)[0]
        df = {item["key"].split(KEY_SEP, 1)[1]: int(item["df"]) for item in row["df"]}
        return TermStats(int(row["memories"]), int(row["totalLength"]), df)

    def candidates(
        self, namespace: str, terms: Sequence[str], score_terms: Sequence[str]
    ) -> list[Candidate]:
        unique = list(dict.fromkeys(terms))
        found: dict[str, Candidate] = {}
        for start in range(0, len(unique), TERMS_PER_QUERY):
            chunk = unique[start : start + TERMS_PER_QUERY]
            rows = self._read(
                "candidates", ns=namespace, query=_lucene(namespace, chunk),
                terms=list(score_terms),
            )  # fmt: skip
            for row in rows:
                if row["id"] not in found:
                    found[row["id"]] = _candidate(row)
        return [found[key] for key in sorted(found)]

    def recent_candidates(
        self, namespace: str, term: str, limit: int, score_terms: Sequence[str]
    ) -> list[Candidate]:
        rows = self._read(
            "recent_candidates", ns=namespace, query=_lucene(namespace, [term]), limit=limit,
            terms=list(score_terms),
        )  # fmt: skip
        return [_candidate(row) for row in rows]

    def native_top_k(self, namespace: str, terms: Sequence[str], k: int) -> list[UUID]:
        """The full-text index's own top ``k`` (Lucene's BM25) for analysed terms: the raw
        baseline of ``graphsvc bench`` on Neo4j. Not used by recall."""
        if not terms:
            return []
        query = _lucene(namespace, list(dict.fromkeys(terms))[:TERMS_PER_QUERY])
        rows = self._read("fulltext_top_k", ns=namespace, query=query, k=k)
        return [UUID(row["id"]) for row in rows]

    def window(
        self, namespace: str, ids: Sequence[UUID]
    ) -> tuple[list[Memory], list[tuple[UUID, UUID]]]:
        if not ids:
            return [], []
        row = self._read("window", ns=namespace, ids=[str(i) for i in ids])[0]
        by_id = {props["id"]: _memory(namespace, props) for props in row["memories"]}
        memories = [by_id[str(i)] for i in ids if str(i) in by_id]
        pairs = sorted((p["newer"], p["older"]) for p in row["supersessions"])
        return memories, [(UUID(a), UUID(b)) for a, b in pairs]

    def supersessions(self, namespace: str, ids: Sequence[UUID]) -> list[tuple[UUID, UUID]]:
        if not ids:
            return []
        rows = self._read("supersessions", ns=namespace, ids=[str(i) for i in ids])
        return [(UUID(row["newer"]), UUID(row["older"])) for row in rows]

    def walk(self, namespace: str, start: Sequence[UUID], depth: int, max_nodes: int) -> Walk:
        # Ids that are no memory of the namespace expand to nothing and match no link.
        starts = list(dict.fromkeys(str(s) for s in start))
        seen = set(starts)
        frontier = list(starts)
        reached: list[tuple[str, int]] = []
        for distance in range(1, depth + 1):
            if not frontier or len(reached) >= max_nodes:
                break
            rows = self._read(
                "walk_layer", ns=namespace, frontier=frontier, seen=sorted(seen),
                limit=max_nodes - len(reached),
            )  # fmt: skip
            layer = [row["id"] for row in rows]
            seen.update(layer)
            reached += [(node, distance) for node in layer]
            frontier = layer
        members = starts + [n for n, _ in reached]
        row = self._read(
            "walk_members", ns=namespace, reached=[n for n, _ in reached], members=members
        )[0]
        memories = {props["id"]: _memory(namespace, props) for props in row["memories"]}
        links = [_link(link) for link in row["links"]]
        return Walk(
            reached=tuple((memories[n], d) for n, d in reached),
            links=sort_links(links),
        )

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        if not ids:
            return []
        rows = self._read("links_touching", ns=namespace, ids=[str(i) for i in ids])
        return list(sort_links([_link(row) for row in rows]))

    def get_belief(self, namespace: str, belief_id: UUID) -> Belief | None:
        rows = self._read("get_belief", ns=namespace, id=str(belief_id))
        if not rows:
            return None
        props = rows[0]["belief"]
        created = _native(props["createdAt"])
        if created is None:
            raise GraphsvcError(f"belief {belief_id} has no createdAt")
        return Belief(
            id=UUID(props["id"]), namespace=namespace, cue=props["cue"],
            summary=props["summary"], confidence=float(props["confidence"]),
            created_at=created, source_ids=tuple(UUID(s) for s in rows[0]["sources"]),
            linked_context_ids=tuple(UUID(s) for s in rows[0]["context"]),
        )  # fmt: skip

    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        rows = self._read("run_events", key=_key(namespace, run_id))
        return [_event(row["event"]) for row in rows]

    def stats(self, namespace: str) -> NamespaceStats:
        row = self._read("namespace_stats", ns=namespace)[0]
        return NamespaceStats(
            namespace=namespace, memories=row["memories"], links=row["links"],
            beliefs=row["beliefs"], terms=row["terms"], events=row["events"],
        )  # fmt: skip

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
            "list_memories", ns=namespace, after=after[0] if after else None,
            afterId=after[1] if after else "", limit=limit, kind=kind, tag=tag, since=since,
            until=until,
        )  # fmt: skip
        return [_memory(namespace, row["memory"]) for row in rows]

    def export(self, namespace: str) -> Iterator[Memory | Link]:
        after: datetime | None = None
        after_id = ""
        while True:
            rows = self._read(
                "export_memories", ns=namespace, after=after, afterId=after_id, limit=EXPORT_PAGE
            )
            for row in rows:
                memory = _memory(namespace, row["memory"])
                after, after_id = memory.recorded_at, str(memory.id)
                yield memory
            if len(rows) < EXPORT_PAGE:
                break
        for row in self._read("export_links", ns=namespace):
            yield _link(row)


__all__ = ["Neo4jStore"]
