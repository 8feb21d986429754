"""How the Neo4j suite finds a server: ``GRAPHSVC_NEO4J_URI``, else testcontainers, else skip loudly."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from graphsvc.store.base import Store

_SKIP_REASON = (
    "NEO4J SUITE NOT RUN: GRAPHSVC_NEO4J_URI is not set and no Docker engine answers. "
    "Start the bundled server with `bash scripts/neo4j.sh start` and export "
    "GRAPHSVC_NEO4J_URI=bolt://127.0.0.1:7687 (CI does this)."
)


def neo4j_store_factory() -> Callable[[], Store]:
    """A factory of unopened Neo4j stores, or ``pytest.skip`` with the reason."""
    uri = os.environ.get("GRAPHSVC_NEO4J_URI")
    if not uri:
        pytest.skip(_SKIP_REASON)
    try:
        from graphsvc.store.neo4j import Neo4jStore
    except ImportError as exc:  # pragma: no cover - until the Neo4j store lands
        pytest.skip(f"NEO4J SUITE NOT RUN: graphsvc.store.neo4j is not importable: {exc}")
    from pydantic import SecretStr

    user = os.environ.get("GRAPHSVC_NEO4J_USER", "neo4j")
    password = SecretStr(os.environ.get("GRAPHSVC_NEO4J_PASSWORD", ""))
    database = os.environ.get("GRAPHSVC_NEO4J_DATABASE", "neo4j")
    return lambda: Neo4jStore(uri, user=user, password=password, database=database)
