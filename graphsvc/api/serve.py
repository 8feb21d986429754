"""``graphsvc serve``: the GraphQL API under uvicorn, in one process or in several workers.

The store is the embedded one in ``--data-dir`` by default, Neo4j when ``GRAPHSVC_NEO4J_URI`` is
set. API keys come from ``GRAPHSVC_API_KEYS`` and/or ``GRAPHSVC_API_KEYS_FILE``; with none, the
server serves one namespace (``GRAPHSVC_NAMESPACE``, ``default``) with write access to anyone who
can connect, so it refuses to bind anything but a loopback address. SIGINT/SIGTERM stop it
gracefully: no new connections, in-flight requests get ``GRAPHSVC_SHUTDOWN_TIMEOUT`` seconds,
then the store is closed. A connection that does not send a request's headers within
``GRAPHSVC_HEADER_TIMEOUT`` seconds is answered 408 and closed, one whose headers pass 16 KiB is
refused, whichever parser ``GRAPHSVC_HTTP_PARSER`` picks (:mod:`graphsvc.api.protocol`).

``--workers N`` (N > 1, Neo4j only) runs N API processes on one listening socket, under a
:class:`Supervisor` (this process). The workers hold no state of their own beyond caches and
rate-limit buckets: every write is committed before its response, so on one Neo4j server a read
through any worker afterwards sees it. The embedded store is opened by one process at a time, so
with it ``--workers`` above 1 is refused before anything starts. Each worker's log lines carry its
``pid``.

Exit status: 0 after a clean stop, 2 for bad settings or arguments, 3 when the store cannot be
opened (the log says why), a worker could not start or stop, or a stop did not finish within
``GRAPHSVC_SHUTDOWN_TIMEOUT`` plus :data:`EXIT_GRACE_SECONDS` (a request stuck: the process exits
anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.context import SpawnProcess
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import click
import uvicorn

from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.api.logs import configure_logging
from graphsvc.api.loopback import is_loopback
from graphsvc.api.protocol import ServerConfig, protocol_class
from graphsvc.bootstrap import store_label
from graphsvc.cli.common import (
    BAD_INPUT_EXIT,
    UNAVAILABLE_EXIT,
    check_data_dir,
    create_option,
    data_dir_option,
    make_settings,
)
from graphsvc.errors import BadInputError
from graphsvc.settings import Settings

logger = logging.getLogger("graphsvc.api")

#: Seconds a stopping worker gets beyond ``GRAPHSVC_SHUTDOWN_TIMEOUT`` (closing the store and the
#: process) before the supervisor kills it.
STOP_GRACE_SECONDS = 10.0
#: Seconds a stopping process gets beyond ``GRAPHSVC_SHUTDOWN_TIMEOUT`` (closing the store) before
#: it exits anyway (:class:`Server`): a request that keeps the event loop or a thread busy must
#: not keep the process alive.
EXIT_GRACE_SECONDS = 5.0
#: How often the supervisor looks at its signals when nothing else happens (seconds).
POLL_SECONDS = 0.2
#: Collections of the middle generation after which a full one runs anyway (the collector's
#: default is 10): under sustained load; a quiet second runs one sooner.
FULL_COLLECTION_AFTER = 1000
#: Seconds with no request in flight after which the server runs a full collection.
QUIET_SECONDS = 1.0
_READY = "ready"


class Server(uvicorn.Server):
    """uvicorn's server, but a clean stop exits 0, a stop that cannot finish exits anyway, and
    the garbage collector leaves what startup built alone.

    After a graceful shutdown on SIGTERM or SIGINT, uvicorn re-raises the signal, so the process
    dies of it (exit status 143 for SIGTERM) although it stopped cleanly. graphsvc promises exit 0
    after a clean stop: the captured signals are dropped once the shutdown has finished.

    Once started (modules, schema and the opened store in memory), every object is moved to the
    collector's permanent generation (``gc.freeze``): a full collection, which a request that
    allocates a lot triggers in whatever thread it runs, then scans only what requests made since.
    Without it such a collection paused the event loop for 100-350 ms, with it a few ms.

    What requests in flight hold is not frozen: concurrent nested reads hold hundreds of
    thousands of objects, and the collector's default full collection after every ten younger
    ones scanned them several times a second, 80-450 ms each (``/healthz`` waited up to 1.6 s).
    Full collections are therefore left for quiet moments (:meth:`_collect_when_quiet`: a
    second with no request in flight) and otherwise come only after :data:`FULL_COLLECTION_AFTER`
    younger ones, so cyclic garbage is still freed under sustained load.

    The stop is bounded: the first SIGTERM or SIGINT also wakes a watchdog thread, which ends the
    process with status 3 when it is still running ``GRAPHSVC_SHUTDOWN_TIMEOUT`` plus
    :data:`EXIT_GRACE_SECONDS` later. uvicorn's stop runs on the event loop, so a request that
    keeps the loop (or the store's thread) busy would otherwise hold the process forever; the
    embedded store's log survives an exit at any point (every acknowledged write is fsynced).
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stopping = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        # The watchdog waits from the start: the signal handler only sets an event.
        threading.Thread(target=self._exit_when_stuck, name="stop-watchdog", daemon=True).start()
        await super().startup(sockets=sockets)
        gc.collect()
        gc.freeze()
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, FULL_COLLECTION_AFTER)
        self._collector = asyncio.get_running_loop().create_task(self._collect_when_quiet())

    async def _collect_when_quiet(self) -> None:
        """A full collection whenever a second passes with no request in flight and younger
        collections have run since the last full one (a quiet server pauses no request)."""
        while not self.should_exit:
            await asyncio.sleep(QUIET_SECONDS)
            if not self.server_state.tasks and gc.get_count()[2] > 0:
                gc.collect()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._stopping.set()
        super().handle_exit(sig, frame)

    def _exit_when_stuck(self) -> None:
        self._stopping.wait()
        limit = float(self.config.timeout_graceful_shutdown or 0) + EXIT_GRACE_SECONDS
        time.sleep(limit)
        logger.error(
            "the server did not stop within %g s of the signal (GRAPHSVC_SHUTDOWN_TIMEOUT + "
            "%g s): a request is stuck; exiting without waiting for it",
            limit,
            EXIT_GRACE_SECONDS,
        )
        for handler in logging.getLogger().handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        os._exit(UNAVAILABLE_EXIT)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()


class WorkerServer(Server):
    """:class:`Server` in a worker process: it tells the supervisor once it serves, and stops
    gracefully when the supervisor goes away (its end of ``channel`` closes), so a supervisor
    killed outright does not leave workers serving on their own.

    Args:
        config: the uvicorn configuration.
        channel: the worker's end of its pipe to the supervisor.
    """

    def __init__(self, config: uvicorn.Config, channel: Connection) -> None:
        super().__init__(config)
        self.channel = channel

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.channel.send(_READY)

    def watch_supervisor(self) -> None:
        """Block until the supervisor's end of the pipe closes, then ask for a graceful stop
        (run in a daemon thread)."""
        with contextlib.suppress(EOFError, OSError):
            while True:
                self.channel.recv()
        self.should_exit = True


class _PidField(logging.Filter):
    """Adds the process id to every log line (``pid``): the lines of several workers share one
    stream, and each says which process wrote it."""

    def filter(self, record: logging.LogRecord) -> bool:
        fields = getattr(record, "fields", None)
        extra = dict(fields) if isinstance(fields, dict) else {}
        extra["pid"] = os.getpid()
        record.__dict__["fields"] = extra
        return True


def _log_pids() -> None:
    for handler in logging.getLogger().handlers:
        handler.addFilter(_PidField())


def _server_config(app: Any, settings: Settings) -> ServerConfig:
    return ServerConfig(
        app,
        header_timeout=settings.header_timeout,
        http_parser=settings.http_parser,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=round(settings.shutdown_timeout),
    )


def run_worker(settings: Settings, keys: ApiKeys, port: int, channel: Connection) -> None:
    """One worker process (the target the supervisor spawns): the app on its own socket in the
    port's SO_REUSEPORT group (the kernel spreads new connections over the group's sockets).

    Exits 0 after a clean stop; 3 (uvicorn's startup failure) when the store cannot be opened.
    """
    configure_logging(settings.log_level)
    _log_pids()
    server = WorkerServer(_server_config(create_app(settings, keys), settings), channel)
    threading.Thread(target=server.watch_supervisor, name="supervisor-watch", daemon=True).start()
    sock = bind_socket(settings.host, port, reuse_port=True)
    server.run(sockets=[sock])
    if not server.started:
        sys.exit(UNAVAILABLE_EXIT)


def bind_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: one the kernel picks), for the workers to
    share; they listen on it.

    Raises:
        OSError: the address cannot be bound (in use, not an address of this machine, ...).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _status_text(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-exitcode).name}"
    return f"status {exitcode}"


@dataclass
class _Worker:
    slot: int
    process: SpawnProcess
    channel: Connection  # the supervisor's end of the worker's pipe
    ready: bool = False

    @property
    def pid(self) -> int | None:
        return self.process.pid


class Supervisor:
    """Runs ``workers`` API processes on one listening socket and stops them together.

    The socket is bound here, once; each worker is a fresh interpreter (``spawn``, so no state of
    this process leaks into it) that receives the socket, the settings and the keys, opens its own
    store and serves until told to stop. The kernel hands each new connection to one of the
    workers waiting on the socket.

    - Start: once every worker serves, ``Uvicorn running on URL with N workers`` is logged. A
      worker that exits before it serves (the store cannot be opened, say) stops the others, and
      :meth:`run` returns 3.
    - A worker that dies while serving is replaced (logged as an error); a replacement that cannot
      start stops the service as above.
    - SIGTERM or SIGINT: the listening socket is closed here and every worker gets SIGTERM: each
      stops accepting, gives in-flight requests ``GRAPHSVC_SHUTDOWN_TIMEOUT`` seconds, closes its
      store and exits 0. A second SIGINT is passed on, so a second Ctrl+C stops at once as with
      one process. A worker still running ``STOP_GRACE_SECONDS`` after that timeout is killed.
      :meth:`run` returns 0 when every worker stopped cleanly, 3 otherwise.
    - Killed outright (SIGKILL), the supervisor cannot stop its workers; each notices that its
      pipe to the supervisor closed and stops gracefully on its own.

    Nothing happens in the constructor.

    Args:
        settings: the validated settings (passed to every worker as they are).
        keys: the API keys (passed to every worker).
        workers: how many worker processes (at least 2; one worker runs without a supervisor).
    """

    def __init__(self, settings: Settings, keys: ApiKeys, workers: int) -> None:
        self.settings = settings
        self.keys = keys
        self.count = workers
        self.workers: list[_Worker] = []
        self._context = multiprocessing.get_context("spawn")
        self._socket: socket.socket | None = None
        self._signals: list[int] = []

    def _on_signal(self, sig: int, frame: FrameType | None) -> None:
        self._signals.append(sig)

    def _spawn(self, slot: int) -> _Worker:
        assert self._socket is not None
        mine, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=run_worker,
            args=(self.settings, self.keys, self._socket.getsockname()[1], theirs),
            name=f"graphsvc-worker-{slot}",
        )
        process.start()
        theirs.close()
        logger.info("worker %d starting", slot, extra={"fields": {"worker_pid": process.pid}})
        return _Worker(slot, process, mine)

    def run(self) -> int:
        """Serve until SIGTERM/SIGINT or a failure; the exit status (0 clean, 3 otherwise)."""
        handlers = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            try:
                # Bound, never listening: it holds the port (0: the kernel picks one) for the
                # workers' sockets and receives no connection itself.
                self._socket = bind_socket(self.settings.host, self.settings.port, reuse_port=True)
            except OSError as exc:
                logger.error("cannot bind %s:%d: %s", self.settings.host, self.settings.port, exc)
                return UNAVAILABLE_EXIT
            healthy = self._serve()
            return self._stop(healthy)
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
            if self._socket is not None:
                self._socket.close()
            for worker in self.workers:
                worker.channel.close()

    def _serve(self) -> bool:
        """Start the workers and keep them running until a signal (True) or a worker that
        could not start (False)."""
        assert self._socket is not None
        url = _url(self._socket)
        self.workers = [self._spawn(slot) for slot in range(self.count)]
        announced = False
        while not self._signals:
            waiting: list[Connection | int] = [w.channel for w in self.workers if not w.ready]
            waiting += [w.process.sentinel for w in self.workers]
            wait(waiting, timeout=POLL_SECONDS)
            for index, worker in enumerate(self.workers):
                if not worker.ready and worker.channel.poll():
                    with contextlib.suppress(EOFError, OSError):
                        worker.ready = worker.channel.recv() == _READY
                    if worker.ready:
                        logger.info(
                            "worker %d serving",
                            worker.slot,
                            extra={"fields": {"worker_pid": worker.pid}},
                        )
                if worker.process.exitcode is None:
                    continue
                worker.process.join()
                if not worker.ready:
                    logger.error(
                        "worker %d exited with %s before it could serve (the lines above say "
                        "why); stopping the other workers",
                        worker.slot,
                        _status_text(worker.process.exitcode),
                        extra={"fields": {"worker_pid": worker.pid}},
                    )
                    return False
                logger.error(
                    "worker %d exited with %s while serving; starting a replacement",
                    worker.slot,
                    _status_text(worker.process.exitcode),
                    extra={"fields": {"worker_pid": worker.pid}},
                )
                worker.channel.close()
                self.workers[index] = self._spawn(worker.slot)
            if not announced and all(w.ready for w in self.workers):
                announced = True
                logger.info(
                    "Uvicorn running on %s with %d workers (Press CTRL+C to quit)",
                    url,
                    self.count,
                    extra={"fields": {"worker_pids": [w.pid for w in self.workers]}},
                )
        return True

    def _stop(self, healthy: bool) -> int:
        """Stop every worker (see the class description); the exit status."""
        assert self._socket is not None
        self._socket.close()  # with the workers' copies closed, new connections are refused
        logger.info("stopping %d workers", len(self.workers))
        for worker in self.workers:
            self._signal(worker, signal.SIGTERM)
        passed_on = len(self._signals)
        deadline = time.monotonic() + self.settings.shutdown_timeout + STOP_GRACE_SECONDS
        running = [w for w in self.workers if w.process.exitcode is None]
        while running and time.monotonic() < deadline:
            wait([w.process.sentinel for w in running], timeout=POLL_SECONDS)
            for sig in self._signals[passed_on:]:
                for worker in running:
                    self._signal(worker, sig)
            passed_on = len(self._signals)
            running = [w for w in running if w.process.exitcode is None]
        clean = healthy
        for worker in running:
            logger.error(
                "worker %d did not stop within GRAPHSVC_SHUTDOWN_TIMEOUT + %g s: killed",
                worker.slot,
                STOP_GRACE_SECONDS,
                extra={"fields": {"worker_pid": worker.pid}},
            )
            worker.process.kill()
            clean = False
        for worker in self.workers:
            worker.process.join()
            code = worker.process.exitcode
            # A worker that was not serving yet may die of the SIGTERM itself (before its
            # handlers were installed): nothing was in flight there.
            stopped = code == 0 or (not worker.ready and code == -signal.SIGTERM)
            if not stopped and healthy:
                logger.error(
                    "worker %d stopped with %s",
                    worker.slot,
                    _status_text(code),
                    extra={"fields": {"worker_pid": worker.pid}},
                )
            clean = clean and stopped
        logger.info("all workers stopped")
        return 0 if clean else UNAVAILABLE_EXIT

    @staticmethod
    def _signal(worker: _Worker, sig: int) -> None:
        if worker.process.exitcode is None and worker.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, sig)


def _fail(message: str, status: int = BAD_INPUT_EXIT) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(status)


@click.command("serve")
@click.option(
    "--host", default=None, help="Interface to bind (default GRAPHSVC_HOST or 127.0.0.1)."
)
@click.option(
    "--port", type=int, default=None, help="TCP port (default GRAPHSVC_PORT or 8000; 0: any)."
)
@data_dir_option
@create_option
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default=None,
    help="Log level (default GRAPHSVC_LOG_LEVEL or info).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="API processes sharing the port; more than 1 needs Neo4j (GRAPHSVC_NEO4J_URI).",
)
def serve(
    host: str | None,
    port: int | None,
    data_dir: Path | None,
    create: bool,
    log_level: str | None,
    workers: int,
) -> None:
    """Serve the GraphQL API (GraphiQL at /graphql, /healthz, /readyz).

    Uses Neo4j when GRAPHSVC_NEO4J_URI is set, the embedded store otherwise. Callers send
    'Authorization: Bearer <key>' with a key from GRAPHSVC_API_KEYS ('key=namespace:write,...')
    or GRAPHSVC_API_KEYS_FILE; with no keys the server binds loopback only. On Neo4j,
    --workers N runs N processes on one port (any of them answers any request).
    """
    try:
        settings = make_settings(data_dir, host=host, port=port, log_level=log_level)
        check_data_dir(settings, data_dir, create)
    except BadInputError as exc:
        _fail(str(exc))
    if workers > 1 and not settings.neo4j_uri:
        _fail(
            f"--workers {workers} needs Neo4j: the embedded store in {settings.data_dir} is "
            "opened by one process at a time, so it is served by one worker. Run with "
            "--workers 1, or set GRAPHSVC_NEO4J_URI to serve from Neo4j (graphsvc export and "
            "graphsvc import move the data)"
        )
    try:
        parser = protocol_class(settings.http_parser)
        secret = settings.api_keys.get_secret_value() if settings.api_keys else None
        keys = ApiKeys.configured(secret, settings.api_keys_file)
    except BadInputError as exc:
        _fail(str(exc))
    if not len(keys) and not is_loopback(settings.host):
        _fail(
            f"no API keys are configured, so anyone who can connect could read and write "
            f"namespace {settings.namespace!r}: refusing to bind {settings.host!r}. Set "
            "GRAPHSVC_API_KEYS ('key=namespace:write,...') or GRAPHSVC_API_KEYS_FILE, or bind "
            "127.0.0.1"
        )

    configure_logging(settings.log_level)
    if workers > 1:
        _log_pids()
    if not len(keys):
        logger.warning(
            "no API keys configured: serving namespace %r with write access to every caller on "
            "%s; set GRAPHSVC_API_KEYS or GRAPHSVC_API_KEYS_FILE to require keys",
            settings.namespace,
            settings.host,
        )
    else:
        logger.info("%d API key(s) for namespace(s) %s", len(keys), ", ".join(keys.namespaces))
    logger.info("store: %s", store_label(settings))
    logger.info("HTTP protocol: %s", parser.__name__)
    if workers > 1:
        sys.exit(Supervisor(settings, keys, workers).run())
    server = Server(_server_config(create_app(settings, keys), settings))
    server.run()
    if not server.started:
        sys.exit(UNAVAILABLE_EXIT)


if __name__ == "__main__":
    serve()
