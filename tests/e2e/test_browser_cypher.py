"""The ready-made Neo4j Browser explorations run on a real server over graphsvc's data."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store import cypher
from graphsvc.store.neo4j import Neo4jStore
from tests.helpers import fixed_clock
from tests.neo4j_server import neo4j_store_factory

pytestmark = pytest.mark.neo4j

CHAIN = [
    "A storm knocked out the substation",
    "The hospital switched to its diesel generator",
    "The generator ran out of fuel overnight",
    "Surgeries were postponed on Tuesday morning",
]


def exploration(name: str) -> str:
    return cypher.browser_query(name)


def test_browser_explorations_answer_over_graphsvc_data() -> None:
    store = neo4j_store_factory()()
    assert isinstance(store, Neo4jStore)
    store.open()
    ns = f"browser{uuid.uuid4().hex[:8]}"
    try:
        service = MemoryService(store, Settings(fsync=False), clock=fixed_clock())
        memories = service.remember_many(ns, [MemoryInput(text=t, kind="event") for t in CHAIN])
        service.link_many(
            ns,
            [
                LinkInput(source=a.id, target=b.id, kind=LinkKind.CAUSES)
                for a, b in itertools.pairwise(memories)
            ],
        )
        belief = service.reconstruct_and_store(ns, "Why were surgeries postponed?")
        assert belief.belief_id is not None
        params: dict[str, Any] = {
            "ns": ns,
            "id": str(memories[-1].id),
            "beliefId": str(belief.belief_id),
        }

        def run(name: str) -> list[dict[str, Any]]:
            records = store.boundary.run(
                lambda d: d.execute_query(exploration(name), params, database_="neo4j").records
            )
            return [r.data() for r in records]

        ancestry = run("causal_ancestry")
        longest = max(len(row["path"]) for row in ancestry if row["path"])
        assert longest == 2 * len(CHAIN) - 1  # nodes and relationships of the whole chain
        sources = run("belief_sources")
        assert sources[0]["b"]["cue"] == "Why were surgeries postponed?"
        assert any(row["used"] for row in sources)
        overview = run("namespace_overview")[0]
        assert overview["memoriesByKind"] == ["event: 4"]
        assert overview["linksByType"] == ["CAUSES: 3"]
        assert overview["beliefs"] == 1
        assert overview["newest"][0] == CHAIN[-1]
        old, new = service.remember_many(
            ns,
            [
                MemoryInput(
                    text="The ward has 20 beds", valid_from=datetime(2024, 1, 1, tzinfo=UTC)
                ),
                MemoryInput(
                    text="The ward has 24 beds", valid_from=datetime(2024, 6, 1, tzinfo=UTC)
                ),
            ],
        )
        service.link(ns, LinkInput(source=new.id, target=old.id, kind=LinkKind.SUPERSEDES))
        params["at"] = 1_710_115_200_000_000  # 2024-03-11T00:00:00Z in microseconds
        then = {row["m"]["text"] for row in run("as_of")}
        assert "The ward has 20 beds" in then and "The ward has 24 beds" not in then
    finally:
        store.close()
