"""The vector queue on a real server process (uvicorn, the real encoder), on both stores.

A write returns once its memories are stored, before their vectors: the server encodes them in
the background, and meanwhile stats, /readyz and every bundle say how many wait. Once the
backlog is empty, bundles find by meaning and say nothing is missing.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api_support import Server, start_server
from tests.helpers import STORES

PUPPY = "My puppy keeps chewing the sofa cushions whenever I leave the flat."
# Enough memories that the encoder needs seconds for them: the calls right after the write see
# the backlog, whatever the machine's load.
FILLER = [
    f"Maintenance log {n}: the {part} of unit {n % 97} was checked and logged on shift {n % 3}."
    for n, part in zip(range(600), ["boiler", "valve", "pump", "fan", "filter"] * 120, strict=True)
]
STATS = "{ stats { memories vectors pendingVectors retrieval retrievalNote } }"
BUNDLE = """query($q: String!) { bundle(query: $q, minScore: 0) {
  retrieval pendingVectors retrievalNote capsules { text } } }"""
WRITE = """mutation($inputs: [MemoryInput!]!) { rememberMany(inputs: $inputs) { id } }"""


def graphql(server: Server, query: str, variables: dict[str, Any] | None = None) -> Any:
    response = httpx.post(
        server.graphql_url, json={"query": query, "variables": variables or {}}, timeout=120
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


@pytest.mark.parametrize("store_kind", STORES)
def test_a_write_returns_before_its_vectors_and_bundles_report_them_pending(
    tmp_path: Path, store_kind: str
) -> None:
    namespace = f"q{uuid.uuid4().hex[:12]}"
    server = start_server(
        tmp_path,
        store_kind,
        extra_env={
            "GRAPHSVC_NAMESPACE": namespace,
            "GRAPHSVC_EMBED_WRITES": "queue",
            "GRAPHSVC_EMBED": "on",
            # A fair share of a machine shared with other work (the test is of the contract,
            # not of the priority: at nice 10 other processes take nearly all of it).
            "GRAPHSVC_EMBED_QUEUE_NICE": "0",
        },
    )
    try:
        texts = [PUPPY, *FILLER]
        written = graphql(server, WRITE, {"inputs": [{"text": t} for t in texts]})
        assert len(written["rememberMany"]) == len(texts)
        # The write has returned: its memories are there, most of their vectors are not.
        stats = graphql(server, STATS)["stats"]
        assert stats["memories"] == len(texts)
        assert stats["vectors"] < len(texts)
        assert stats["pendingVectors"] == len(texts) - stats["vectors"] > 0
        assert "this server encodes them in the background" in stats["retrievalNote"]
        bundle = graphql(server, BUNDLE, {"q": "dog destroying furniture"})["bundle"]
        assert bundle["pendingVectors"] > 0
        assert "wait for their vector" in bundle["retrievalNote"]
        ready = httpx.get(f"{server.base_url}/readyz", timeout=30)
        assert ready.status_code == 200  # a backlog is not unreadiness
        queue = ready.json()["vectorQueue"]
        assert queue["state"] in ("starting", "draining", "idle")
        assert "graphsvc serve" in queue["drainedBy"]

        deadline = time.monotonic() + 600
        while graphql(server, STATS)["stats"]["pendingVectors"] > 0:
            assert time.monotonic() < deadline, "the backlog did not drain"
            time.sleep(0.5)
        stats = graphql(server, STATS)["stats"]
        assert (stats["vectors"], stats["pendingVectors"], stats["retrievalNote"]) == (
            len(texts),
            0,
            None,
        )
        bundle = graphql(server, BUNDLE, {"q": "dog destroying furniture"})["bundle"]
        assert (bundle["retrieval"], bundle["pendingVectors"], bundle["retrievalNote"]) == (
            "hybrid",
            0,
            None,
        )
        assert bundle["capsules"][0]["text"] == PUPPY  # found by meaning
        queue = httpx.get(f"{server.base_url}/readyz", timeout=30).json()["vectorQueue"]
        assert (queue["pending"], queue["state"]) == (0, "idle")
        assert queue["stored"] >= len(texts)
    finally:
        assert server.stop() == 0
