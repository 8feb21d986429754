"""Helpers for the API suites: run operations through the schema, and run a real server process."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.applications import Starlette

from graphsvc.api.auth import Principal, Role
from graphsvc.api.context import RequestContext
from graphsvc.api.schema import schema
from graphsvc.service import MemoryService
from tests.neo4j_server import neo4j_store_factory

SERVER_START_SECONDS = 60.0


def context(
    service: MemoryService, namespace: str, role: str = "write", request_id: str = "test-request"
) -> RequestContext:
    """A request context for a caller of ``namespace`` with ``role``."""
    return RequestContext(
        service=service,
        principal=Principal(namespace=namespace, role=Role(role), key_id="testkey0"),
        request_id=request_id,
    )


@dataclass(frozen=True)
class Outcome:
    """What an operation answered: ``data`` and the errors' codes and messages."""

    data: dict[str, Any] | None
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def codes(self) -> list[str]:
        return [str((e.get("extensions") or {}).get("code")) for e in self.errors]

    @property
    def messages(self) -> list[str]:
        return [str(e.get("message")) for e in self.errors]

    def ok(self) -> dict[str, Any]:
        """``data``, asserting there was no error."""
        assert not self.errors, self.errors
        assert self.data is not None
        return self.data


def run(
    ctx: RequestContext,
    document: str,
    variables: dict[str, Any] | None = None,
    *,
    on_schema: Any = None,
) -> Outcome:
    """Execute through ``schema.execute`` (the resolvers are async) in a fresh event loop, and
    return the result as a client would see it (JSON round trip)."""
    target = on_schema or schema
    result = asyncio.run(target.execute(document, variable_values=variables, context_value=ctx))
    errors = [e.formatted for e in result.errors or []]
    payload = json.loads(json.dumps({"data": result.data, "errors": errors}, default=str))
    return Outcome(payload["data"], payload["errors"])


# -- the ASGI app in process -----------------------------------------------------------------------


class PortalTransport(httpx.BaseTransport):
    """A sync httpx transport that runs an ASGI app on an anyio portal's event loop (what
    Starlette's TestClient does, without its dependency on a particular httpx)."""

    def __init__(self, app: Any, portal: BlockingPortal) -> None:
        self._asgi = httpx.ASGITransport(app=app)
        self._portal = portal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        chunked = "content-length" not in request.headers
        forwarded = httpx.Request(
            request.method, request.url, headers=request.headers, content=body
        )
        if chunked:
            forwarded.headers.pop("content-length", None)

        async def call() -> httpx.Response:
            response = await self._asgi.handle_async_request(forwarded)
            content = b"".join([chunk async for chunk in response.aiter_raw()])
            return httpx.Response(
                response.status_code, headers=response.headers, content=content, request=request
            )

        return self._portal.call(call)


@contextmanager
def in_process(app: Starlette) -> Iterator[httpx.Client]:
    """An httpx client on ``app``, with its lifespan run (startup before, shutdown after)."""
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(app.router.lifespan_context(app)),
        httpx.Client(
            transport=PortalTransport(app, portal), base_url="http://testserver"
        ) as client,
    ):
        yield client


# -- a real server process ------------------------------------------------------------------------


@dataclass
class Server:
    """A ``python -m graphsvc.api.serve`` process on a free loopback port."""

    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path
    keys: dict[str, str]  # name -> API key
    namespaces: dict[str, str]  # name -> namespace

    @property
    def graphql_url(self) -> str:
        return f"{self.base_url}/graphql"

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for raw in self.log_path.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(raw))
            except ValueError:
                lines.append({"raw": raw})
        return lines

    def wait_for_log(self, request_id: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The log lines of a request (the access line is written after the response is sent,
        so it may lag the response a little)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in self.log_lines() if line.get("request_id") == request_id]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def stop(self) -> int:
        """SIGTERM, then wait; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        return self.process.returncode


def server_env(store: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a server on ``store`` ('mirror' or 'neo4j'); skips loudly when the
    Neo4j one is asked for and no server is configured."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
    if store == "neo4j":
        neo4j_store_factory()  # skips with the suite's loud reason when there is no server
        for name in ("NEO4J_URI", "NEO4J_USER", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
            value = os.environ.get(f"GRAPHSVC_{name}")
            if value is not None:
                env[f"GRAPHSVC_{name}"] = value
    env["GRAPHSVC_FSYNC"] = "false"
    # A write's vectors in the write: what a test compares is then the same from one call to
    # the next (with the queue, a bundle may run before or after the memories' vectors). The
    # tests of the vector queue ask for it (GRAPHSVC_EMBED_WRITES=queue).
    env["GRAPHSVC_EMBED_WRITES"] = "inline"
    env.update(extra or {})
    return env


def start_server(
    tmp_path: Path,
    store: str,
    *,
    tenants: dict[str, tuple[str, str]] | None = None,
    extra_env: dict[str, str] | None = None,
    data_dir: Path | None = None,
) -> Server:
    """Start a server (port 0: the kernel picks a free one; read back from the log).

    Args:
        tenants: name -> (namespace, role); a fresh key is made for each. None: no keys.
        data_dir: the embedded store's folder (default: a new one), e.g. one a test filled.
    """
    keys: dict[str, str] = {}
    namespaces: dict[str, str] = {}
    env_extra = dict(extra_env or {})
    if tenants:
        entries = []
        for name, (namespace, role) in tenants.items():
            keys[name] = secrets.token_urlsafe(24)
            namespaces[name] = namespace
            entries.append(f"{keys[name]}={namespace}:{role}")
        env_extra["GRAPHSVC_API_KEYS"] = ",".join(entries)
    log_path = tmp_path / f"server-{secrets.token_hex(4)}.log"
    data_dir = data_dir or tmp_path / f"data-{secrets.token_hex(4)}"
    command = [
        sys.executable,
        "-m",
        "graphsvc.api.serve",
        "--port",
        "0",
        "--data-dir",
        str(data_dir),
        "--create",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=server_env(store, env_extra)
        )
    server = Server(process, "", log_path, keys, namespaces)
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"the server exited with {process.returncode}:\n{log_path.read_text()}"
            )
        for line in server.log_lines():
            message = str(line.get("msg", ""))
            if message.startswith("Uvicorn running on "):
                server.base_url = message.split()[3]
                break
        if server.base_url:
            break
        time.sleep(0.05)
    else:
        server.stop()
        raise AssertionError(f"the server did not start:\n{log_path.read_text()}")
    response = httpx.get(f"{server.base_url}/readyz", timeout=10)
    assert response.status_code == 200, response.text
    return server


__all__ = ["Outcome", "PortalTransport", "Server", "context", "in_process", "run", "start_server"]
