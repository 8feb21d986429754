"""Nested reads bounded by what they actually read and by what a key has in flight.

Through the real ASGI app in process, on the embedded store: the issue's read (a member of a
10-memory clique beside a sparse 40-memory ring, three levels of links aliased 14 times) is
stopped at its first level by the estimate refined from the links read (before: it passed the
estimate on the namespace's average and read until the rows cap); what a refined estimate lets
through is answered whole, its read-ahead links taken from the loader's cache; and a key's
operations in flight hold its budget, so its next one waits and is refused while another key's
is answered at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from graphsvc import model as m
from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.bootstrap import bootstrap
from graphsvc.model import LinkInput, LinkKind, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from tests.api_support import in_process

READER = "reader-key-0123456789abcdef"
WRITER = "writer-key-0123456789abcdef"
OTHER = "other-key-0123456789abcdefgh"
KEYS = f"{READER}=fan:read,{WRITER}=fan:write,{OTHER}=others:read"


class CountingService(MemoryService):
    """The service, counting the memories whose links are read, and able to hold a link read
    of one memory until released (an operation kept in flight)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.links_asked: list[UUID] = []
        self.hold: UUID | None = None
        self.release = threading.Event()
        self.holding = threading.Event()

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[m.Link]:
        self.links_asked.extend(ids)
        if self.hold is not None and self.hold in ids:
            self.holding.set()
            self.release.wait(30)
        return super().links_of(namespace, ids)


def fanout_document(memory: UUID, aliases: int = 14) -> str:
    """The issue's read: ``aliases`` copies of three levels of links under one memory."""
    inner = (
        "links { targetMemory { id links { kind targetMemory { id links { kind targetMemory "
        "{ id text } } } } } }"
    )
    body = " ".join(f"a{i}: {inner}" for i in range(aliases))
    return f'{{ memory(id: "{memory}") {{ {body} }} }}'


@pytest.fixture
def service(tmp_path: Path) -> Iterator[CountingService]:
    # The embedded store, whatever GRAPHSVC_NEO4J_URI says (these tests read what they wrote).
    settings = Settings(data_dir=tmp_path / "data", fsync=False, embed="off", neo4j_uri=None)
    opened = bootstrap(settings)
    counting = CountingService(opened.store, settings)
    yield counting
    counting.close()


def app_client(service: MemoryService, **overrides: Any) -> Any:
    settings = Settings(
        data_dir=Path("unused"),
        neo4j_uri=None,
        rate_limit_per_key=0,
        rate_limit_per_client=0,
        embed="off",
        **overrides,
    )
    keys = ApiKeys.parse(KEYS)
    return in_process(create_app(settings, keys, open_service=lambda: service, owns_store=False))


def clique_and_ring(service: MemoryService) -> tuple[list[UUID], list[UUID]]:
    """10 memories linked pairwise (18 links each) beside 40 in a ring (2 each): the namespace
    averages 6 links per memory."""
    clique = [
        m.id
        for m in service.remember_many("fan", [MemoryInput(text=f"clique {i}") for i in range(10)])
    ]
    ring = [
        m.id
        for m in service.remember_many("fan", [MemoryInput(text=f"ring {i}") for i in range(40)])
    ]
    pairs = [(a, b) for a in clique for b in clique if a != b]
    pairs += [(ring[i], ring[(i + 1) % 40]) for i in range(40)]
    inputs = [LinkInput(source=a, target=b, kind=LinkKind.RELATES_TO) for a, b in pairs]
    service.link_many("fan", inputs)
    return clique, ring


def post(client: httpx.Client, key: str, document: str) -> dict[str, Any]:
    response = client.post(
        "/graphql", json={"query": document}, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_clique_hidden_in_the_average_is_stopped_at_its_first_level(
    service: CountingService,
) -> None:
    clique, _ = clique_and_ring(service)
    with app_client(service) as client:
        body = post(client, READER, fanout_document(clique[0]))
        first_reads = list(service.links_asked)
        # The same operation again, soon: refused before it runs, from the degrees the first
        # one read (a client repeating it costs a lookup, not an execution).
        again = post(client, READER, fanout_document(clique[0]))
        assert service.links_asked == first_reads
    assert again["errors"][0]["message"] == body["errors"][0]["message"]
    error = body["errors"][0]
    assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
    assert "counting the links of the memories read so far" in error["message"], error
    assert "one has 18 links where the estimate assumed 6" in error["message"], error
    assert "GRAPHSVC_MAX_QUERY_COST" in error["message"], error
    assert body["data"] is None
    # The links of the member and of its 9 neighbours (read ahead), nothing deeper. Before,
    # it passed the estimate and read until GRAPHSVC_MAX_RESULT_ROWS stopped it.
    assert set(service.links_asked) <= set(clique)
    assert len(service.links_asked) <= 10


def test_what_the_refined_estimate_lets_through_is_answered_whole(
    service: CountingService,
) -> None:
    clique, ring = clique_and_ring(service)
    two_levels = (
        f'{{ memory(id: "{ring[0]}") {{ links {{ targetMemory {{ id links {{ kind '
        "targetMemory { id } } } } } }"
    )
    with app_client(service) as client:
        body = post(client, READER, two_levels)
        assert "errors" not in body, body
        links = body["data"]["memory"]["links"]
        assert len(links) == 2
        inner = {link["targetMemory"]["id"]: len(link["targetMemory"]["links"]) for link in links}
        # ring[0] -> ring[1], and ring[39] -> ring[0] (whose target is ring[0] itself)
        assert inner == {str(ring[1]): 2, str(ring[0]): 2}
        # Read once each: the memory's links, then its targets' (read ahead, then taken from
        # the loader's cache by the resolvers of the next level).
        assert sorted(service.links_asked) == sorted([ring[0], ring[1]])
        # One level under a clique member passes: 18 links, nothing nested under them.
        service.links_asked.clear()
        one_level = f'{{ memory(id: "{clique[0]}") {{ links {{ kind targetMemory {{ id }} }} }} }}'
        body = post(client, READER, one_level)
        assert "errors" not in body, body
        assert len(body["data"]["memory"]["links"]) == 18
        assert service.links_asked == [clique[0]]


def test_a_links_kind_read_ahead_counts_that_kind_only(service: CountingService) -> None:
    # A hub with 60 RELATES_TO links and one CAUSES link, under a chain: the next level asks
    # only for CAUSES, so the hub costs 1 link there, not 61.
    hub, start, *spokes = [
        m.id for m in service.remember_many("fan", [MemoryInput(text=f"m {i}") for i in range(62)])
    ]
    service.link_many(
        "fan",
        [LinkInput(source=start, target=hub, kind=LinkKind.CAUSES)]
        + [LinkInput(source=hub, target=s, kind=LinkKind.RELATES_TO) for s in spokes[:-1]]
        + [LinkInput(source=hub, target=spokes[-1], kind=LinkKind.CAUSES)],
    )
    deep = "links(kind: CAUSES) { targetMemory { id } }"
    for _ in range(3):
        deep = f"links(kind: CAUSES) {{ targetMemory {{ id {deep} }} }}"
    document = " ".join(f"a{i}: {deep}" for i in range(14))
    with app_client(service, max_query_cost=3_000) as client:
        body = post(client, READER, f'{{ memory(id: "{start}") {{ {document} }} }}')
    assert "errors" not in body, body


def test_a_keys_operations_in_flight_hold_its_budget(service: CountingService) -> None:
    # Each of these reads is estimated at 50 fields (6 links per memory on average); the key's
    # budget in flight is 60: a second one waits for the first, and is refused when it has
    # waited its share (half) of the request's time; another key's read is answered meanwhile.
    clique, _ = clique_and_ring(service)
    heavy = f'{{ memory(id: "{clique[0]}") {{ links {{ targetMemory {{ links {{ kind }} }} }} }} }}'
    service.hold = clique[0]
    with (
        app_client(service, max_cost_in_flight_per_key=60, request_timeout=8.0) as client,
        ThreadPoolExecutor(2) as pool,
    ):
        first = pool.submit(post, client, READER, heavy)
        assert service.holding.wait(10), "the first read did not reach the store"
        began = time.monotonic()
        second = post(client, READER, heavy)  # waits, then is refused
        waited = time.monotonic() - began
        error = second["errors"][0]
        assert error["extensions"]["code"] == "LIMIT_EXCEEDED", error
        assert "GRAPHSVC_MAX_COST_IN_FLIGHT_PER_KEY" in error["message"], error
        assert "waited 4 s" in error["message"], error
        assert waited >= 4.0
        other = post(client, OTHER, "{ viewer { namespace } }")  # another key: at once
        assert other["data"]["viewer"]["namespace"] == "others"
        service.release.set()
        assert "errors" not in first.result(timeout=30)
        third = post(client, READER, heavy)  # the budget was given back
        assert "errors" not in third, third
