"""The boundary between graphsvc and the Neo4j driver: opening and closing the drivers, one
bounded retry loop for every store call (the outage budget, see :mod:`graphsvc.store.neo4j`), and
the translation of driver errors into graphsvc errors (``raise ... from`` the driver's)."""

from __future__ import annotations

import functools
import queue
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar
from urllib.parse import urlsplit

import neo4j
from neo4j import READ_ACCESS, WRITE_ACCESS, GraphDatabase, Transaction
from neo4j import exceptions as neo4j_errors
from pydantic import SecretStr

from graphsvc.errors import (
    BadInputError,
    ConflictError,
    GraphsvcError,
    StoreCorruptError,
    StoreUnavailableError,
)
from graphsvc.store.cypher import query, schema_statements

T = TypeVar("T")
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
#: Seconds a ping may take past its budget before it is given up on (thread hand-off, slack).
PING_GRACE = 0.5
# Server error codes (parts of) that mean "not available now", not "your request is wrong".
UNAVAILABLE_CODES = ("DatabaseNotFound", "DatabaseUnavailable", "TransactionTimedOut")
#: Seconds the Bolt handshake that asks whether a server holding a call lives may take
#: (:meth:`Neo4jBoundary._liveness`): a live server's network threads answer it in
#: milliseconds, so this tells a frozen one within the store's budget.
LIVENESS_PROBE = 0.75
#: Seconds an attempt runs before that is asked at all.
LIVENESS_AFTER = 0.5
#: The Bolt handshake: the magic preamble, then four versions proposed (5.4 to 5.1, 4.4). Any
#: four bytes back, an agreed version or none, say the server is there.
BOLT_HANDSHAKE = bytes.fromhex("6060b01700030405000004040000010400000003")
#: Most store calls running at once on the threads a frozen server may hold (see
#: :class:`_Attempts`); past it, calls wait for one, within their budget.
MOST_ATTEMPTS = 64


class _Attempts:
    """Daemon threads that run the attempts of store calls, so that the caller can stop waiting
    for one: a frozen server (SIGSTOP, a stalled VM) keeps its connections open and never
    answers, and the driver has no read timeout, so an attempt on a pooled connection waited
    until the server came back. The caller gives up at its budget (:meth:`Neo4jBoundary._await`);
    the thread finishes when the server answers or the connection breaks. Daemon threads: one
    stuck on a server that never comes back does not keep the process from exiting.

    Args:
        most: threads at most (made when needed, kept while the store is open).
    """

    def __init__(self, most: int) -> None:
        self.most = most
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._idle == 0 and self._threads < self.most:
                self._threads += 1
                threading.Thread(target=self._work, name="graphsvc-neo4j", daemon=True).start()
            else:
                self._idle = max(self._idle - 1, 0)
        self._tasks.put((future, fn))
        return future

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            future, fn = task
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to the caller, who translates it
                    future.set_exception(exc)
            with self._lock:
                self._idle += 1

    def close(self) -> None:
        """Let the idle threads end (one stuck on a frozen server ends when it returns)."""
        with self._lock:
            threads, self._threads, self._idle = self._threads, 0, 0
        for _ in range(threads):
            self._tasks.put(None)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, outermost first (the driver wraps socket errors, and a routing
    driver gathers what every router it tried raised in an ``ExceptionGroup``)."""
    chain: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending and len(chain) < 32:
        link = pending.pop(0)
        if any(link is seen for seen in chain):
            continue
        chain.append(link)
        if isinstance(link, BaseExceptionGroup):
            pending.extend(link.exceptions)
        following = link.__cause__ or link.__context__
        if following is not None:
            pending.append(following)
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


# How the schema makes the full-text index memory_terms (cypher/schema.cypher). Its namespace
# field is then one exact token, so `+namespace:"ns"` matches exactly one namespace and the
# candidate queries read no namespace property to check what the index found.
FULLTEXT_CONFIG = {
    "labels": ["Memory"],
    "properties": ["namespace", "termText"],
    "analyzer": "whitespace",
}


def check_fulltext(found: list[dict[str, Any]]) -> None:
    """Refuse a database whose memory_terms index was made otherwise (by hand, or by another
    program): with another analyser a namespace could match another's memories."""
    if found != [FULLTEXT_CONFIG]:
        raise StoreCorruptError(
            f"the full-text index memory_terms is {found[0] if found else 'missing'}, not "
            f"{FULLTEXT_CONFIG}: drop it (DROP INDEX memory_terms) and open the store again, "
            "which makes it anew (the index is then populated from the memories)"
        )


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


def tx_query(
    tx: Transaction, name: str, /, *, spliced: Mapping[str, int] | None = None, **params: Any
) -> list[neo4j.Record]:
    """Run a named query in ``tx`` (in a :meth:`Neo4jBoundary.write`). ``spliced``: integers
    written into the text in place of ``{name}`` (only where Cypher takes no parameter, an
    index's property name); anything else is a parameter."""
    text = query(name)
    for key, number in (spliced or {}).items():
        text = text.replace(f"{{{key}}}", str(int(number)))
    return list(tx.run(text, params))


class Neo4jBoundary:
    """The drivers, the bounded retry loop and the translation of driver errors: every call of
    the store goes through :meth:`read`, :meth:`write` or :meth:`run`. The part of
    :class:`~graphsvc.store.neo4j.Neo4jStore` that talks to the server; every other part runs
    its queries through it.

    Args: as :class:`~graphsvc.store.neo4j.Neo4jStore`'s.
    """

    def __init__(
        self,
        uri: str,
        *,
        user: str,
        password: SecretStr | None,
        database: str,
        timeout: float,
        ping_timeout: float,
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
        # One per opened store: every read and write session of this process shares it, so a
        # read waits for this process's latest write on whichever cluster member serves it
        # (causal consistency; on a single server it costs nothing).
        self._bookmarks: neo4j.BookmarkManager | None = None
        self._ping_pool: ThreadPoolExecutor | None = None  # made by the first ping
        self._attempts: _Attempts | None = None  # made by open()

    @property
    def is_open(self) -> bool:
        return self._driver is not None

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

    def run(self, action: Callable[[neo4j.Driver], T]) -> T:
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
        retried. A write that meets a uniqueness constraint is tried again once, at once: a
        concurrent write of the same ids committed first (the one a caller was told to resend,
        given up on while the server was frozen, finishing after it came back), and the retry
        finds them and compares their content as any write does.
        """
        driver = self._require()
        deadline = time.monotonic() + self._timeout
        pause = RETRY_FIRST
        fresh_tried = raced = False
        while True:
            acquire = max(deadline - time.monotonic(), MIN_ACQUIRE)
            run = functools.partial(attempt, driver, acquire)
            try:
                return self._await(run, deadline, write=write)
            except GraphsvcError:
                raise
            except Exception as exc:  # translated at this one boundary
                left = deadline - time.monotonic()
                if write and not raced and isinstance(exc, neo4j_errors.ConstraintError):
                    raced = True
                    continue
                stale = not fresh_tried and _stale_connection(exc)
                hopeless = self._cause(exc)[1] is None  # bad credentials, host or database
                if left <= 0 or hopeless or not _retryable(exc):
                    raise self._translate(exc, write=write) from exc
            if stale:
                fresh_tried = True
            else:
                time.sleep(min(pause * random.uniform(0.8, 1.2), left))
                pause = min(pause * RETRY_GROWTH, RETRY_CAP)

    def _await(self, run: Callable[[], T], deadline: float, *, write: bool) -> T:
        """One attempt, on an attempt thread, waited for until it answers, as long as the
        server lives: from shortly before ``deadline`` (so that a frozen server is known by
        then), and again every :data:`LIVENESS_PROBE` seconds after it, :meth:`_liveness` asks.
        A live server is left to finish a long call (a large batch, a first query after a
        restart); one that does not complete a Bolt handshake is frozen or gone, and the
        attempt is given up on (UNAVAILABLE).

        Raises:
            StoreUnavailableError: the server stopped answering.
            Exception: what the attempt raised (the caller translates or retries it).
        """
        attempts = self._attempts
        if attempts is None:
            return run()
        future = attempts.submit(run)
        # Only of an attempt that has waited a while: one that fails at once (a server that is
        # down) says why itself.
        check = max(deadline - LIVENESS_PROBE - PING_GRACE, time.monotonic() + LIVENESS_AFTER)
        while True:
            try:
                return future.result(timeout=max(check - time.monotonic(), 0.0))
            except FutureTimeout:
                pass
            dead = self._liveness(LIVENESS_PROBE)
            if dead is None:
                check = time.monotonic() + LIVENESS_PROBE  # alive: working on it
                continue
            if future.done():
                return future.result()
            future.cancel()  # not started yet: it never will be
            message = (
                f"Neo4j at {self.uri} is unavailable: it holds the call without answering past "
                f"GRAPHSVC_STORE_TIMEOUT ({self._timeout:g} s), and {dead}"
            )
            if write:
                message += (
                    ". The write may or may not have been applied (it is never half-applied): "
                    "resend it with the same ids (writes are idempotent)"
                )
            else:
                message += f"; retry in {RETRY_AFTER_DOWN:g} s"
            raise StoreUnavailableError(message, retry_after=RETRY_AFTER_DOWN)

    def _liveness(self, budget: float) -> str | None:
        """Whether the server lives: ``None`` when it completes a Bolt handshake on a new
        connection within ``budget`` seconds, else what happened. The handshake is answered by
        the server's network threads, whatever its queries are doing (a server busy with a
        large batch, or running its first queries after a restart, answers it at once), and by
        no process that is frozen (SIGSTOP, a stalled VM), whose kernel still accepts the
        connection. Nothing is sent but the handshake (no credentials); over TLS
        (``+s``, ``+ssc``) the certificate is not checked, since nothing is trusted to it."""
        parts = urlsplit(self.uri)
        host, port = parts.hostname or "localhost", parts.port or 7687
        began = time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=budget) as raw:
                conn: socket.socket = raw
                if (parts.scheme or "").endswith(("+s", "+ssc")):
                    context = ssl.create_default_context()
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                    conn = context.wrap_socket(raw, server_hostname=host)
                conn.settimeout(max(budget - (time.monotonic() - began), 0.05))
                conn.sendall(BOLT_HANDSHAKE)
                answer = conn.recv(4)
        except ConnectionRefusedError:
            return f"connection refused at {host}:{port}"
        except TimeoutError:
            return f"it did not complete a Bolt handshake within {budget:g} s (frozen?)"
        except OSError as exc:
            return f"{exc.strerror or exc} ({host}:{port})"
        if not answer:
            return f"it closed the connection before a Bolt handshake ({host}:{port})"
        return None

    def read(self, name: str, /, **params: Any) -> list[neo4j.Record]:
        text = query(name)

        def attempt(driver: neo4j.Driver, acquire: float) -> list[neo4j.Record]:
            with driver.session(
                database=self._database,
                default_access_mode=READ_ACCESS,
                connection_acquisition_timeout=acquire,
                disable_auto_commit_retries=True,
                bookmark_manager=self._bookmarks,
            ) as session:
                return list(session.run(text, params))

        return self._call(attempt, write=False)

    def write(self, work: Callable[[Transaction], T]) -> T:
        def attempt(driver: neo4j.Driver, acquire: float) -> T:
            done: list[T] = []
            try:
                with (
                    driver.session(
                        database=self._database,
                        default_access_mode=WRITE_ACCESS,
                        connection_acquisition_timeout=acquire,
                        bookmark_manager=self._bookmarks,
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
        self._bookmarks = GraphDatabase.bookmark_manager()
        try:
            self.read("ping")
            self._ensure_schema()
        except GraphsvcError:
            self.close()
            raise
        # Watched from now on: a server that has just started answers its first queries (and
        # pings, on a connection of their own) slowly while it warms up, which is no freeze.
        self._attempts = _Attempts(MOST_ATTEMPTS)

    def _ensure_schema(self) -> None:
        def attempt(driver: neo4j.Driver, acquire: float) -> None:
            with driver.session(
                database=self._database, connection_acquisition_timeout=acquire
            ) as session:
                for statement in schema_statements():
                    session.run(statement).consume()
                session.run("CALL db.awaitIndexes(120)").consume()
                found = [record.data() for record in session.run(query("fulltext_config"))]
            check_fulltext(found)

        self._call(attempt, write=False)

    def close(self) -> None:
        for driver in (self._driver, self._ping_driver):
            if driver is not None:
                driver.close()
        self._driver = self._ping_driver = None
        if self._attempts is not None:
            self._attempts.close()
            self._attempts = None
        if self._ping_pool is not None:
            self._ping_pool.shutdown(wait=False, cancel_futures=True)
            self._ping_pool = None

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
        # The driver's own bounds do not cover everything (closing a session on a frozen server
        # waited 120 s in CI): the ping runs on its own thread and is given up on after its
        # budget. One thread: while a ping is stuck, the next ones time out behind it.
        if self._ping_pool is None:
            self._ping_pool = ThreadPoolExecutor(1, thread_name_prefix="graphsvc-ping")
        future = self._ping_pool.submit(self._ping_once, driver, budget)
        try:
            future.result(timeout=budget + PING_GRACE)
        except FutureTimeout:
            raise StoreUnavailableError(
                f"Neo4j at {self.uri} is unavailable: timed out (no answer to a ping within "
                f"{budget:g} s); retry in {RETRY_AFTER_DOWN:g} s",
                retry_after=RETRY_AFTER_DOWN,
            ) from None

    def _ping_once(self, driver: neo4j.Driver, budget: float) -> None:
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
