"""``graphsvc serve``: the GraphQL API under uvicorn, one worker.

The store is the embedded one in ``--data-dir`` by default, Neo4j when ``GRAPHSVC_NEO4J_URI`` is
set. API keys come from ``GRAPHSVC_API_KEYS`` and/or ``GRAPHSVC_API_KEYS_FILE``; with none, the
server serves one namespace (``GRAPHSVC_NAMESPACE``, ``default``) with write access to anyone who
can connect, so it refuses to bind anything but a loopback address. SIGINT/SIGTERM stop it
gracefully: no new connections, in-flight requests get ``GRAPHSVC_SHUTDOWN_TIMEOUT`` seconds,
then the store is closed. A connection that does not send a request's headers within
``GRAPHSVC_HEADER_TIMEOUT`` seconds is answered 408 and closed
(:class:`~graphsvc.api.protocol.HeaderDeadlineProtocol`).

Exit status: 0 after a clean stop, 2 for bad settings or arguments, 3 when the store cannot be
opened (the log says why).
"""

from __future__ import annotations

import contextlib
import gc
import ipaddress
import logging
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import click
import uvicorn

from graphsvc.api.app import configure_logging, create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.api.protocol import ServerConfig
from graphsvc.bootstrap import store_label
from graphsvc.cli.common import BAD_INPUT_EXIT, UNAVAILABLE_EXIT, data_dir_option, make_settings
from graphsvc.errors import BadInputError

logger = logging.getLogger("graphsvc.api")


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Server(uvicorn.Server):
    """uvicorn's server, but a clean stop exits 0, and the garbage collector leaves what startup
    built alone.

    After a graceful shutdown on SIGTERM or SIGINT, uvicorn re-raises the signal, so the process
    dies of it (exit status 143 for SIGTERM) although it stopped cleanly. graphsvc promises exit 0
    after a clean stop: the captured signals are dropped once the shutdown has finished.

    Once started (modules, schema and the opened store in memory), every object is moved to the
    collector's permanent generation (``gc.freeze``): a full collection, which a request that
    allocates a lot triggers in whatever thread it runs, then scans only what requests made since.
    Without it such a collection paused the event loop for 100-350 ms, with it a few ms.
    """

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        gc.collect()
        gc.freeze()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()


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
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default=None,
    help="Log level (default GRAPHSVC_LOG_LEVEL or info).",
)
def serve(host: str | None, port: int | None, data_dir: Path | None, log_level: str | None) -> None:
    """Serve the GraphQL API (GraphiQL at /graphql, /healthz, /readyz).

    Uses Neo4j when GRAPHSVC_NEO4J_URI is set, the embedded store otherwise. Callers send
    'Authorization: Bearer <key>' with a key from GRAPHSVC_API_KEYS ('key=namespace:write,...')
    or GRAPHSVC_API_KEYS_FILE; with no keys the server binds loopback only.
    """
    try:
        settings = make_settings(data_dir, host=host, port=port, log_level=log_level)
    except BadInputError as exc:
        _fail(str(exc))
    try:
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
    app = create_app(settings, keys)
    config = ServerConfig(
        app,
        header_timeout=settings.header_timeout,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=round(settings.shutdown_timeout),
    )
    server = Server(config)
    server.run()
    if not server.started:
        sys.exit(UNAVAILABLE_EXIT)


if __name__ == "__main__":
    serve()
