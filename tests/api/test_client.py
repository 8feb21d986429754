"""The Python client: typed results equal to the service's, errors mapped back from codes; in
process on both stores, and against a real server (``slow``)."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.client import AsyncGraphsvcClient, GraphsvcClient
from graphsvc.errors import (
    BadInputError,
    ForbiddenError,
    GraphsvcError,
    LimitExceededError,
    NotFoundError,
    StoreUnavailableError,
    UnauthenticatedError,
)
from graphsvc.model import ContextEventKind, LinkInput, LinkKind, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from tests.api_support import Server, in_process, start_server
from tests.helpers import STORES, fixed_clock, make_settings

WRITER = "client-writer-key-0001"
READER = "client-reader-key-0001"
URL = "http://testserver/graphql"

NOTES = [
    ("The deploy at 14:00 rotated the database credentials", "event", datetime(2025, 4, 1, 14)),
    ("Checkout requests failed with authentication errors", "event", datetime(2025, 4, 1, 14, 5)),
    ("The payment worker kept a cached database password", "fact", datetime(2025, 4, 1, 9)),
]


@pytest.fixture
def ns() -> str:
    return f"c{uuid.uuid4().hex[:12]}"


@pytest.fixture
def service(store: Store, tmp_path: Path) -> MemoryService:
    return MemoryService(store, make_settings(tmp_path, max_batch=10), clock=fixed_clock())


@pytest.fixture
def app(service: MemoryService, ns: str) -> object:
    keys = ApiKeys.parse(f"{WRITER}={ns}:write,{READER}={ns}:read")
    return create_app(service.settings, keys, open_service=lambda: service, owns_store=False)


@pytest.fixture
def http(app: object) -> Iterator[httpx.Client]:
    with in_process(app) as client:  # type: ignore[arg-type]
        yield client


def test_sync_client_returns_the_models_the_service_returns(
    http: httpx.Client, service: MemoryService, ns: str
) -> None:
    with GraphsvcClient(URL, api_key=WRITER, http=http) as client:
        first = client.remember(
            NOTES[0][0],
            kind=NOTES[0][1],
            occurred_at=NOTES[0][2],
            tags=["ops"],
            source="deploy-log",
            run_id="run-9",
        )
        assert first == service.get_memory(ns, first.id)
        assert first.occurred_at == NOTES[0][2].replace(tzinfo=UTC)
        rest = client.remember_many(
            [MemoryInput(text=t, kind=k, occurred_at=o) for t, k, o in NOTES[1:]]
        )
        assert [m.text for m in rest] == [t for t, _, _ in NOTES[1:]]
        assert (
            client.remember(
                NOTES[0][0],
                kind=NOTES[0][1],
                occurred_at=NOTES[0][2],
                tags=["ops"],
                source="deploy-log",
            )
            == first
        )

        link = client.link(first.id, rest[0].id, LinkKind.CAUSES, note="credentials rotated")
        assert (link.source, link.target, link.kind) == (first.id, rest[0].id, LinkKind.CAUSES)
        more = client.link_many(
            [LinkInput(source=rest[1].id, target=rest[0].id, kind=LinkKind.CAUSES)]
        )
        assert more[0].kind is LinkKind.CAUSES

        question = "why did checkout fail with authentication errors?"
        assert client.bundle(question, budget_tokens=300) == service.bundle(
            ns, question, budget_tokens=300
        )
        expected = service.reconstruct(ns, "checkout authentication errors", k=2)
        belief = client.reconstruct("checkout authentication errors", k=2, run_id="run-9", step=3)
        assert belief.summary == expected.summary
        assert belief.source_ids == expected.source_ids
        assert belief.memories == expected.memories
        assert belief.belief_id is not None

        events = client.events("run-9")
        assert [e.kind for e in events] == [
            ContextEventKind.MEMORY_WRITE,
            ContextEventKind.MEMORY_RECALL,
        ]
        assert events[1].step == 3

        receipt = client.forget(rest[0].id)
        assert receipt.memory_id == rest[0].id
        assert len(receipt.removed_links) == 2
        assert receipt.removed_belief_ids == (belief.belief_id,)
        assert client.memory(rest[0].id) is None
        assert client.memory(first.id) == first


def test_errors_map_back_to_graphsvc_errors(http: httpx.Client, ns: str) -> None:
    with GraphsvcClient(URL, api_key=WRITER, http=http) as client:
        with pytest.raises(BadInputError, match="text is empty"):
            client.remember("   ")
        with pytest.raises(BadInputError, match="kind"):
            client.remember("x", kind="9lives")  # refused before sending
        with pytest.raises(BadInputError, match="budgetTokens"):
            client.bundle("x", budget_tokens=0)
        with pytest.raises(LimitExceededError, match="k must be at most"):
            client.reconstruct("x", k=10_000)
        with pytest.raises(LimitExceededError, match="GRAPHSVC_MAX_BATCH"):
            client.remember_many([MemoryInput(text=f"note {i}") for i in range(11)])
        with pytest.raises(NotFoundError, match="does not exist"):
            client.forget(uuid.uuid4())
        with pytest.raises(NotFoundError):
            client.link(uuid.uuid4(), uuid.uuid4(), "CAUSES")
    with GraphsvcClient(URL, api_key=READER, http=http) as client:
        with pytest.raises(ForbiddenError, match="read-only"):
            client.remember("a read key cannot write")
        assert client.bundle("anything at all").capsules == ()
    with (
        GraphsvcClient(URL, api_key="not-a-configured-key", http=http) as client,
        pytest.raises(UnauthenticatedError, match="unknown API key"),
    ):
        client.memory(uuid.uuid4())
    with GraphsvcClient(URL, http=http) as client, pytest.raises(UnauthenticatedError):
        client.memory(uuid.uuid4())


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_transport_failures_are_unavailable() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/graphql"
    with (
        GraphsvcClient(url, timeout=2) as client,
        pytest.raises(StoreUnavailableError, match="cannot reach graphsvc"),
    ):
        client.memory(uuid.uuid4())

    def gateway(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, text="upstream down")

    def teapot(request: httpx.Request) -> httpx.Response:
        return httpx.Response(418, text="<html>")

    with (
        httpx.Client(transport=httpx.MockTransport(gateway)) as http,
        pytest.raises(StoreUnavailableError, match="HTTP 503"),
    ):
        GraphsvcClient(URL, http=http).bundle("x")
    with (
        httpx.Client(transport=httpx.MockTransport(teapot)) as http,
        pytest.raises(GraphsvcError, match="HTTP 418"),
    ):
        GraphsvcClient(URL, http=http).bundle("x")


def test_async_transport_failures_are_unavailable() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/graphql"

    async def scenario() -> None:
        async with AsyncGraphsvcClient(url, timeout=2) as client:
            with pytest.raises(StoreUnavailableError, match="cannot reach graphsvc"):
                await client.memory(uuid.uuid4())

    asyncio.run(scenario())


def test_clients_close_what_they_opened_and_nothing_they_were_given() -> None:
    with httpx.Client() as given:
        with GraphsvcClient(URL, http=given):
            pass
        assert not given.is_closed
    with GraphsvcClient(URL) as owned:
        pass
    assert owned._http.is_closed

    async def scenario() -> None:
        async with httpx.AsyncClient() as given:
            async with AsyncGraphsvcClient(URL, http=given):
                pass
            assert not given.is_closed
        async with AsyncGraphsvcClient(URL) as owned:
            pass
        assert owned._http.is_closed

    asyncio.run(scenario())


def test_async_client(app: object, service: MemoryService, ns: str) -> None:
    async def scenario() -> None:
        async with (
            app.router.lifespan_context(app),  # type: ignore[attr-defined]
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,  # type: ignore[arg-type]
            AsyncGraphsvcClient(URL, api_key=WRITER, http=http) as client,
        ):
            made = await client.remember_many(
                [MemoryInput(text=t, kind=k, occurred_at=o) for t, k, o in NOTES]
            )
            await client.link(made[0].id, made[1].id, "CAUSES")
            question = "checkout authentication errors"
            assert await client.bundle(question) == service.bundle(ns, question)
            belief = await client.reconstruct(question)
            assert made[0].id in belief.source_ids + belief.linked_context_ids
            assert await client.memory(made[2].id) == made[2]
            assert (await client.forget(made[2].id)).memory_id == made[2].id
            with pytest.raises(NotFoundError):
                await client.forget(made[2].id)
            with pytest.raises(BadInputError):
                await client.remember("   ")
            assert await client.events("none-yet") == []

    asyncio.run(scenario())


# -- against a real server ------------------------------------------------------------------------


@pytest.fixture(scope="module", params=STORES)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    namespace = f"client{uuid.uuid4().hex[:10]}"
    running = start_server(
        tmp_path_factory.mktemp("client-server"),
        request.param,
        tenants={"writer": (namespace, "write"), "reader": (namespace, "read")},
    )
    yield running
    running.stop()


@pytest.mark.slow
def test_clients_against_a_real_server(server: Server) -> None:
    with GraphsvcClient(server.graphql_url, api_key=server.keys["writer"]) as client:
        made = client.remember_many(
            [MemoryInput(text=t, kind=k, occurred_at=o) for t, k, o in NOTES]
        )
        client.link(made[0].id, made[1].id, LinkKind.CAUSES)
        bundle = client.bundle("why did checkout fail with authentication errors?")
        assert bundle.capsules[0].memory_id == made[1].id
    with GraphsvcClient(server.graphql_url, api_key=server.keys["reader"]) as reader:
        assert reader.bundle("why did checkout fail with authentication errors?") == bundle
        with pytest.raises(ForbiddenError):
            reader.forget(made[0].id)

    async def in_async() -> None:
        async with AsyncGraphsvcClient(server.graphql_url, api_key=server.keys["writer"]) as client:
            results = await asyncio.gather(
                *(client.bundle("checkout authentication errors") for _ in range(8))
            )
            assert len({r.model_dump_json() for r in results}) == 1
            belief = await client.reconstruct("checkout authentication errors", run_id="r1")
            assert belief.belief_id is not None
            assert [e.kind for e in await client.events("r1")] == [ContextEventKind.MEMORY_RECALL]

    asyncio.run(in_async())
