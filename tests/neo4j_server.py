"""How the Neo4j suite finds a server.

1. ``GRAPHSVC_NEO4J_URI`` (and ``GRAPHSVC_NEO4J_USER`` / ``_PASSWORD`` / ``_DATABASE``) when set:
   CI sets it after ``bash scripts/neo4j.sh start``;
2. else a ``neo4j:5.26-community`` container through testcontainers, when a Docker engine answers
   (started once per test session, removed at exit);
3. else the test is skipped, with a reason that says how to run it.
"""

from __future__ import annotations

import atexit
import os
import socket
from collections.abc import Callable
from functools import cache
from typing import Any
from urllib.parse import urlparse

import pytest
from neo4j import GraphDatabase
from pydantic import SecretStr

from graphsvc.store.base import Store
from graphsvc.store.neo4j import Neo4jStore

NEO4J_IMAGE = "neo4j:5.26-community"
SKIP_REASON = (
    "NEO4J SUITE NOT RUN: GRAPHSVC_NEO4J_URI is not set and no Docker engine answers. "
    "Start the bundled server with `bash scripts/neo4j.sh start` and export "
    "GRAPHSVC_NEO4J_URI=bolt://127.0.0.1:7687 (CI does this)."
)


def docker_answers() -> bool:
    """True when a Docker engine answers ``GET /_ping`` (unix socket or tcp ``DOCKER_HOST``)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    try:
        if host.startswith("unix://"):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            address: Any = host.removeprefix("unix://")
        else:
            parsed = urlparse(host)
            conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            address = (parsed.hostname or "127.0.0.1", parsed.port or 2375)
        with conn:
            conn.settimeout(2.0)
            conn.connect(address)
            conn.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in conn.recv(4096)
    except OSError:
        return False


@cache
def _container() -> tuple[str, str, str] | None:
    """(uri, user, password) of a testcontainers Neo4j, or None when Docker is not there."""
    if not docker_answers():
        return None
    from testcontainers.community.neo4j import Neo4jContainer

    container: Any = Neo4jContainer(NEO4J_IMAGE)
    container.start()
    atexit.register(container.stop)
    return container.get_connection_url(), "neo4j", container.password


def neo4j_store_factory() -> Callable[[], Store]:
    """A factory of unopened Neo4j stores, or ``pytest.skip`` with the reason."""
    uri = os.environ.get("GRAPHSVC_NEO4J_URI")
    if uri:
        user = os.environ.get("GRAPHSVC_NEO4J_USER", "neo4j")
        password = os.environ.get("GRAPHSVC_NEO4J_PASSWORD", "")
    else:
        found = _container()
        if found is None:
            pytest.skip(SKIP_REASON)
        uri, user, password = found
    database = os.environ.get("GRAPHSVC_NEO4J_DATABASE", "neo4j")
    secret = SecretStr(password)
    return lambda: Neo4jStore(uri, user=user, password=secret, database=database)


def _direct() -> tuple[str, tuple[str, str] | None, str]:
    """The suite server's URI, auth and database, or ``pytest.skip`` without one."""
    uri = os.environ.get("GRAPHSVC_NEO4J_URI")
    if not uri:
        pytest.skip("runs Cypher on GRAPHSVC_NEO4J_URI's database directly: set it")
    password = os.environ.get("GRAPHSVC_NEO4J_PASSWORD", "")
    auth = (os.environ.get("GRAPHSVC_NEO4J_USER", "neo4j"), password) if password else None
    return uri, auth, os.environ.get("GRAPHSVC_NEO4J_DATABASE", "neo4j")


def cypher(text: str, **params: Any) -> list[dict[str, Any]]:
    """Run Cypher on the suite's server directly (to look at, or age, what the store wrote)."""
    uri, auth, database = _direct()
    with GraphDatabase.driver(uri, auth=auth) as driver:
        records = driver.execute_query(text, params, database_=database).records
    return [record.data() for record in records]


def profiled_rows(text: str, params: dict[str, Any]) -> list[tuple[str, str, int]]:
    """Run a query under ``PROFILE`` on the suite's server: each operator of the plan that ran,
    as ``(operator, details, rows it produced)``."""
    uri, auth, database = _direct()
    with GraphDatabase.driver(uri, auth=auth) as driver, driver.session(database=database) as s:
        plan = s.run("PROFILE " + text, params).consume().profile
    found: list[tuple[str, str, int]] = []
    stack = [plan] if plan else []
    while stack:
        operator = stack.pop()
        details = str(operator.get("args", {}).get("Details", ""))
        found.append((operator["operatorType"], details, int(operator.get("rows", 0))))
        stack.extend(operator.get("children", []))
    return found
