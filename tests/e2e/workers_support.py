"""Helpers for the multi-worker and routing suites: a ``graphsvc serve`` process with any command
line options, GraphQL calls on a fresh connection each (so the kernel may hand each one to any
worker), and which process answered a request (the ``pid`` of its access-log line)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.api_support import SERVER_START_SECONDS, Server, server_env


@dataclass
class Served(Server):
    """A server process and, with ``--workers``, the worker pids its supervisor announced."""

    worker_pids: list[int] = field(default_factory=list)

    def gql(
        self,
        key: str,
        document: str,
        variables: dict[str, Any] | None = None,
        *,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """POST a GraphQL document on a new connection; the ``data``, asserting no errors."""
        headers = {"Authorization": f"Bearer {key}", "Connection": "close"}
        if request_id:
            headers["X-Request-Id"] = request_id
        response = httpx.post(
            self.graphql_url,
            json={"query": document, "variables": variables or {}},
            headers=headers,
            timeout=30,
        )
        assert response.status_code == 200, response.text
        payload = response.json()
        assert not payload.get("errors"), payload["errors"]
        data: dict[str, Any] = payload["data"]
        return data

    def answered_by(self, request_ids: set[str], timeout: float = 10.0) -> dict[str, int]:
        """request id -> pid of the process whose access log line names it (lines are written
        after the response, so they may lag it a little)."""
        deadline = time.monotonic() + timeout
        while True:
            found = {
                str(line["request_id"]): int(line["pid"])
                for line in self.log_lines()
                if line.get("msg") == "request" and line.get("request_id") in request_ids
            }
            if len(found) == len(request_ids) or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


def start(
    tmp_path: Path,
    store: str,
    *args: str,
    tenants: dict[str, tuple[str, str]] | None = None,
    extra_env: dict[str, str] | None = None,
) -> Served:
    """``python -m graphsvc.api.serve --port 0 ARGS`` (a fresh data dir); returns once it logged
    ``Uvicorn running on`` and ``/readyz`` answers 200.

    Args:
        store: 'mirror' or 'neo4j' (skips loudly when no Neo4j is configured).
        args: more options, e.g. ``--workers 2``.
        tenants: name -> (namespace, role); a fresh key is made for each. None: no keys.
        extra_env: more environment variables (they win over the suite's).
    """
    keys: dict[str, str] = {}
    namespaces: dict[str, str] = {}
    env_extra: dict[str, str] = {}
    if tenants:
        entries = []
        for name, (namespace, role) in tenants.items():
            keys[name] = secrets.token_urlsafe(24)
            namespaces[name] = namespace
            entries.append(f"{keys[name]}={namespace}:{role}")
        env_extra["GRAPHSVC_API_KEYS"] = ",".join(entries)
    env_extra.update(extra_env or {})
    log_path = tmp_path / f"server-{secrets.token_hex(4)}.log"
    data_dir = tmp_path / f"data-{secrets.token_hex(4)}"
    command = [sys.executable, "-m", "graphsvc.api.serve", "--port", "0"]
    command += ["--data-dir", str(data_dir), "--create", *args]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=server_env(store, env_extra)
        )
    served = Served(process, "", log_path, keys, namespaces)
    deadline = time.monotonic() + SERVER_START_SECONDS
    while not served.base_url:
        if process.poll() is not None:
            raise AssertionError(
                f"the server exited with {process.returncode}:\n{log_text(served)}"
            )
        if time.monotonic() > deadline:
            served.stop()
            raise AssertionError(f"the server did not start:\n{log_text(served)}")
        for line in served.log_lines():
            if str(line.get("msg", "")).startswith("Uvicorn running on "):
                served.base_url = str(line["msg"]).split()[3]
                served.worker_pids = [int(pid) for pid in line.get("worker_pids") or []]
                break
        else:
            time.sleep(0.05)
    response = httpx.get(f"{served.base_url}/readyz", timeout=10)
    assert response.status_code == 200, response.text
    return served


def log_text(server: Server) -> str:
    """The last lines of a server's log, for a failure message."""
    return "\n".join(server.log_path.read_text(encoding="utf-8").splitlines()[-40:])


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie nobody has reaped yet counts as exited)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return True
    return "\nState:\tZ" in status


def wait_until_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait for ``pids`` to exit; those still running after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in pids if not gone(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


__all__ = ["Served", "gone", "log_text", "start", "wait_until_gone"]
