"""One real ``graphsvc serve`` per store for the LangChain and LangGraph adapters' suites, shared
by every test of the session: a namespace (and key) per suite, emptied before each test.

These suites run as a pytest session of their own, with the adapters' configuration
(``integrations/langchain/pyproject.toml``: pytest-asyncio's auto mode, which the standard suites
of langchain-tests expect); graphsvc's own session leaves this folder out. scripts/test.sh runs
both.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from graphsvc.client import GraphsvcClient
from tests.api_support import Server, start_server

# One namespace per suite, so that suites sharing a server never see each other's memories.
SUITES = ("vectorstore", "retriever", "store", "example")


@dataclass(frozen=True)
class Tenant:
    """A suite's namespace on a running server, and its write key."""

    server: Server
    key: str
    namespace: str
    store: str

    @property
    def url(self) -> str:
        return self.server.graphql_url

    @property
    def secret(self) -> SecretStr:
        return SecretStr(self.key)

    def client(self) -> GraphsvcClient:
        return GraphsvcClient(self.url, api_key=self.key)

    def empty(self) -> None:
        """Erase the namespace (a test starts from nothing)."""
        with self.client() as client:
            while not client.erase(everything=True).complete:
                pass


def _serve(tmp_path_factory: pytest.TempPathFactory, store: str) -> Iterator[dict[str, Tenant]]:
    run = secrets.token_hex(4)
    tenants = {suite: (f"lc{run}{suite}", "write") for suite in SUITES}
    # A vector store answers the k nearest for any query ("bar" finds "foo"), related or not: a
    # server that serves one lets every nearest memory join by meaning, which
    # docs/integrations.md asks of it (by default one must clear the encoder's unrelated
    # baseline, and for e5 "foo" does not for "bar").
    server = start_server(
        tmp_path_factory.mktemp(f"graphsvc-{store}"),
        store,
        tenants=tenants,
        extra_env={"GRAPHSVC_DENSE_MIN_COSINE": "0"},
    )
    try:
        with GraphsvcClient(server.graphql_url, api_key=server.keys["store"]) as client:
            retrieval = client.execute("{ stats { retrieval retrievalNote } }")["stats"]
        # graphsvc finds memories by meaning only with its encoder.
        assert retrieval["retrieval"] == "hybrid", (
            f"the server answers {retrieval}: install the encoder (bash scripts/install_model.sh)"
        )
        yield {
            suite: Tenant(server, server.keys[suite], server.namespaces[suite], store)
            for suite in SUITES
        }
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mirror_tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Tenant]]:
    yield from _serve(tmp_path_factory, "mirror")


@pytest.fixture(scope="session")
def neo4j_tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Tenant]]:
    # start_server skips with the Neo4j suite's reason when no server is configured (and under
    # CI=true such a skip fails the run: tests/conftest.py).
    yield from _serve(tmp_path_factory, "neo4j")


@pytest.fixture(params=["mirror", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def tenants(request: pytest.FixtureRequest) -> dict[str, Tenant]:
    """The suites' tenants on each store."""
    found: dict[str, Tenant] = request.getfixturevalue(f"{request.param}_tenants")
    return found


def python_env() -> dict[str, str]:
    """The environment for a child Python process of these suites (no GRAPHSVC_ settings)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
