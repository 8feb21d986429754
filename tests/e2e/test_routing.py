"""The service on a ``neo4j://`` routing URI, as it runs against a Neo4j cluster or Aura.

With ``neo4j://`` the driver first asks the server for a routing table (writers, readers,
routers) and sends each transaction to a member of the right role: graphsvc's writes open WRITE
sessions, its reads READ sessions. A standalone Neo4j 5.26 answers routing requests (it is its own
writer, reader and router), so the suite's server checks that every kind of call works through
routing: writes, reads, walks, a mutation that reads and writes, a forget, in two workers and from
the command line. What a cluster adds (reads on followers, and what holds for read-your-writes
there) is in docs/operations.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from tests.api_support import server_env
from tests.e2e.workers_support import start
from tests.neo4j_server import neo4j_store_factory

MEMORY = "query($id: UUID!) { memory(id: $id) { text links { source target kind } } }"


def routing_uri(uri: str) -> str:
    """The routing form of a Bolt URI (``bolt://`` -> ``neo4j://``, TLS variants too)."""
    scheme, sep, rest = uri.partition("://")
    routed = {"bolt": "neo4j", "bolt+s": "neo4j+s", "bolt+ssc": "neo4j+ssc"}
    return f"{routed.get(scheme, scheme)}{sep}{rest}"


@pytest.fixture
def routed() -> str:
    """The suite's Neo4j as a ``neo4j://`` URI (skips loudly without a server)."""
    neo4j_store_factory()
    uri = os.environ.get("GRAPHSVC_NEO4J_URI")
    if not uri:
        pytest.skip("NEO4J ROUTING NOT RUN: export GRAPHSVC_NEO4J_URI=bolt://127.0.0.1:7687")
    return routing_uri(uri)


def test_routing_uri() -> None:
    assert routing_uri("bolt://127.0.0.1:7687") == "neo4j://127.0.0.1:7687"
    assert routing_uri("bolt+s://db.example:7687") == "neo4j+s://db.example:7687"
    assert routing_uri("neo4j+s://x.databases.neo4j.io") == "neo4j+s://x.databases.neo4j.io"


@pytest.mark.neo4j
@pytest.mark.slow
def test_the_service_runs_on_a_routing_uri(tmp_path: Path, routed: str) -> None:
    assert routed.startswith("neo4j://")
    namespace = f"rt{uuid.uuid4().hex[:14]}"
    server = start(
        tmp_path,
        "neo4j",
        "--workers",
        "2",
        tenants={"w": (namespace, "write")},
        extra_env={"GRAPHSVC_NEO4J_URI": routed},
    )
    try:
        ready = httpx.get(f"{server.base_url}/readyz", timeout=10).json()
        assert (ready["status"], ready["store"]) == ("ready", "neo4j")
        key = server.keys["w"]
        written = server.gql(
            key,
            "mutation($inputs: [MemoryInput!]!) { rememberMany(inputs: $inputs) { id } }",
            {
                "inputs": [
                    {
                        "text": "The router lost its lease at noon",
                        "occurredAt": "2025-04-01T12:00Z",
                    },
                    {
                        "text": "Writes failed over to the new leader",
                        "occurredAt": "2025-04-01T12:01Z",
                    },
                ]
            },
        )["rememberMany"]
        ids = [w["id"] for w in written]
        server.gql(
            key,
            "mutation($input: LinkInput!) { link(input: $input) { kind } }",
            {"input": {"source": ids[0], "target": ids[1], "kind": "CAUSES"}},
        )
        memory = server.gql(key, MEMORY, {"id": ids[1]})["memory"]
        assert memory["text"] == "Writes failed over to the new leader"
        assert memory["links"] == [{"source": ids[0], "target": ids[1], "kind": "CAUSES"}]
        bundle = server.gql(
            key,
            '{ bundle(query: "why did writes fail over to the leader?") '
            "{ capsules { memoryId } skipped } }",
        )["bundle"]
        assert bundle["skipped"] is False
        assert bundle["capsules"][0]["memoryId"] == ids[1]
        reconstruct = (
            'mutation { reconstruct(cue: "writes failed over", runId: "rt") '
            "{ sourceIds linkedContextIds beliefId } }"
        )
        belief = server.gql(key, reconstruct)["reconstruct"]
        assert belief["sourceIds"][0] == ids[1]
        assert ids[0] in belief["sourceIds"] + belief["linkedContextIds"]  # the walk, routed
        assert belief["beliefId"]
        forgotten = server.gql(
            key, "mutation($id: UUID!) { forget(id: $id) { memoryId } }", {"id": ids[0]}
        )["forget"]
        assert forgotten["memoryId"] == ids[0]
        assert server.gql(key, MEMORY, {"id": ids[0]})["memory"] is None

        # The command line on the same routing URI sees what the server wrote.
        env = server_env("neo4j", {"GRAPHSVC_NEO4J_URI": routed})
        command = [sys.executable, "-m", "graphsvc.cli", "stats", "--namespace", namespace]
        stats = subprocess.run(
            [*command, "--json"], env=env, capture_output=True, text=True, timeout=120
        )
        assert stats.returncode == 0, stats.stderr
        assert '"memories": 1' in stats.stdout
    finally:
        assert server.stop() == 0


def test_an_unreachable_routing_uri_says_why(tmp_path: Path) -> None:
    env = server_env(
        "mirror", {"GRAPHSVC_NEO4J_URI": "neo4j://127.0.0.1:1", "GRAPHSVC_STORE_TIMEOUT": "1"}
    )
    result = subprocess.run(
        [sys.executable, "-m", "graphsvc.cli", "stats", "--namespace", "nowhere"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3
    assert "connection refused at 127.0.0.1:1" in result.stderr
