"""The HTTP server: auth, health, CORS, body limits, request ids and logs (in process, on both
stores), the API key configuration, the ``serve`` command, and end-to-end tests against a real
uvicorn process with a real GraphQL client (``gql``), on both stores (``slow``)."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import io
import json
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.httpx import HTTPXTransport
from graphql import GraphQLError, GraphQLObjectType, build_schema, get_introspection_query
from starlette.requests import Request
from strawberry.types import ExecutionResult

from graphsvc.api.app import create_app
from graphsvc.api.auth import (
    ApiKeys,
    ForbiddenError,
    Principal,
    Role,
    UnauthenticatedError,
    hash_key,
)
from graphsvc.api.context import Limits
from graphsvc.api.errors import classify
from graphsvc.api.lifespan import AppState
from graphsvc.api.limits import DocumentLimits, prepare
from graphsvc.api.logs import JsonFormatter, RepeatLimit, configure_logging
from graphsvc.api.loopback import is_loopback
from graphsvc.api.middleware import is_ide_request
from graphsvc.api.ratelimit import ClientAddresses, Rate, TokenBuckets, retry_after
from graphsvc.api.schema import make_schema, schema
from graphsvc.api.serve import serve
from graphsvc.api.view import GraphQLView
from graphsvc.embedding.registry import DEFAULT_MODEL
from graphsvc.errors import BadInputError, StoreUnavailableError
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.api_support import Server, in_process, start_server
from tests.helpers import STORES, fixed_clock, make_settings

WRITER = "w" * 8 + "-writer-key-0001"
READER = "r" * 8 + "-reader-key-0001"
OTHER = "o" * 8 + "-other-key-00001"
VIEWER = "{ viewer { namespace role keyId } }"
# A clean stop (SIGTERM, in-flight requests finished, store closed) exits 0.
GRACEFUL = (0,)
REMEMBER = 'mutation { remember(input: {text: "The kettle whistles"}) { id namespace } }'


def post(client: httpx.Client, query: str, key: str | None = None, **kw: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    headers.update(kw.pop("headers", {}))
    return client.post("/graphql", json={"query": query, **kw}, headers=headers)


def codes(response: httpx.Response) -> list[str]:
    return [e["extensions"]["code"] for e in response.json().get("errors") or []]


@pytest.fixture
def ns() -> str:
    return f"h{uuid.uuid4().hex[:12]}"


@pytest.fixture
def keys(ns: str) -> ApiKeys:
    return ApiKeys.parse(f"{WRITER}={ns}:write,{READER}={ns}:read,{OTHER}=o{ns}:write")


def app_on(store: Store, tmp_path: Path, keys: ApiKeys, **api: Any) -> Any:
    settings = make_settings(tmp_path, **api)
    service = MemoryService(store, settings, clock=fixed_clock())
    return create_app(settings, keys, open_service=lambda: service, owns_store=False)


@pytest.fixture
def client(store: Store, tmp_path: Path, keys: ApiKeys) -> Iterator[httpx.Client]:
    with in_process(app_on(store, tmp_path, keys, cors_origins="https://app.example")) as c:
        yield c


# -- in process, both stores -------------------------------------------------------------------


def test_health_and_readiness(client: httpx.Client, store: Store, tmp_path: Path) -> None:
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    # The kind of store, never where it is (before: the absolute data folder, or the Bolt URI,
    # to anyone who could connect).
    assert ready.json()["store"] == store.kind
    assert str(tmp_path) not in ready.text and "bolt" not in ready.text


def test_readiness_says_why_the_store_is_not_ready(
    store: Store,
    tmp_path: Path,
    keys: ApiKeys,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def down() -> None:
        raise StoreUnavailableError("Neo4j at bolt://db:7687 is unavailable")

    with in_process(app_on(store, tmp_path, keys)) as client:
        monkeypatch.setattr(store, "ping", down)
        with caplog.at_level(logging.WARNING, logger="graphsvc.api"):
            ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json() == {
            "status": "not ready",
            "reason": "the store is unavailable (UNAVAILABLE): the server's log says why",
        }
        assert any("bolt://db:7687" in r.getMessage() for r in caplog.records)  # the log does
        assert client.get("/healthz").status_code == 200


def test_keys_decide_namespace_and_role(client: httpx.Client, ns: str) -> None:
    writer = post(client, VIEWER, WRITER).json()["data"]["viewer"]
    assert writer == {"namespace": ns, "role": "write", "keyId": hash_key(WRITER).hex()[:8]}
    made = post(client, REMEMBER, WRITER).json()["data"]["remember"]
    assert made["namespace"] == ns

    read = post(client, REMEMBER, READER)
    assert read.status_code == 200
    assert codes(read) == ["FORBIDDEN"]
    assert read.json()["data"] is None
    found = post(client, '{ memory(id: "%s") { id } }' % made["id"], READER)  # noqa: UP031
    assert found.json()["data"]["memory"] == {"id": made["id"]}

    other = post(client, '{ memory(id: "%s") { id } }' % made["id"], OTHER)  # noqa: UP031
    assert other.json()["data"]["memory"] is None


@pytest.mark.parametrize(
    ("header", "fragment"),
    [
        (None, "no API key"),
        ("Basic dXNlcjpwYXNz", "malformed Authorization header"),
        ("Bearer", "malformed Authorization header"),
        ("Bearer not-a-known-key-at-all", "unknown API key"),
    ],
)
def test_missing_or_unknown_keys_are_401(
    client: httpx.Client, header: str | None, fragment: str
) -> None:
    headers = {"Authorization": header} if header else {}
    response = client.post("/graphql", json={"query": VIEWER}, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="graphsvc"'
    assert codes(response) == ["UNAUTHENTICATED"]
    assert fragment in response.json()["errors"][0]["message"]
    assert "x-request-id" in response.headers


def test_graphiql_needs_no_key_but_queries_do(client: httpx.Client) -> None:
    page = client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert "GraphiQL" in page.text
    by_get = client.get("/graphql", params={"query": VIEWER})
    assert by_get.status_code == 401
    by_get = client.get("/graphql", params={"query": VIEWER}, headers=_bearer(READER))
    assert by_get.json()["data"]["viewer"]["role"] == "read"
    mutation_by_get = client.get("/graphql", params={"query": REMEMBER}, headers=_bearer(WRITER))
    assert mutation_by_get.status_code == 400
    assert codes(mutation_by_get) == ["BAD_INPUT"]
    assert client.get("/", follow_redirects=False).headers["location"] == "/graphql"


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_http_level_bad_requests_are_json(client: httpx.Client) -> None:
    not_json = client.post(
        "/graphql",
        content=b"{not json",
        headers={**_bearer(WRITER), "Content-Type": "application/json"},
    )
    assert not_json.status_code == 400
    assert codes(not_json) == ["BAD_INPUT"]
    wrong_type = client.post(
        "/graphql",
        content=b"query { viewer { role } }",
        headers={**_bearer(WRITER), "Content-Type": "text/plain"},
    )
    assert wrong_type.status_code == 400
    assert codes(wrong_type) == ["BAD_INPUT"]
    no_query = client.post("/graphql", json={}, headers=_bearer(WRITER))
    assert no_query.status_code == 400
    assert client.put("/graphql", headers=_bearer(WRITER)).status_code in (400, 405)


def test_request_ids(client: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="graphsvc.access"):
        mine = post(
            client,
            "query Who { viewer { role } }",
            WRITER,
            headers={"X-Request-Id": "agent-42.step-7"},
        )
        fresh = post(client, VIEWER, WRITER, headers={"X-Request-Id": "bad id with spaces"})
    assert mine.headers["x-request-id"] == "agent-42.step-7"
    assert len(fresh.headers["x-request-id"]) == 32
    lines = [r.fields for r in caplog.records if r.name == "graphsvc.access"]  # type: ignore[attr-defined]
    assert lines[0]["request_id"] == "agent-42.step-7"
    assert lines[0]["status"] == 200
    assert lines[0]["operation"] == "Who"
    assert lines[0]["operation_type"] == "query"
    assert lines[0]["key_id"] == hash_key(WRITER).hex()[:8]
    assert lines[1]["request_id"] == fresh.headers["x-request-id"]


def test_error_codes_reach_the_access_log(
    client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="graphsvc.access"):
        post(client, '{ bundle(query: "x", budgetTokens: 0) { usedTokens } }', WRITER)
    line = next(r.fields for r in caplog.records if r.name == "graphsvc.access")  # type: ignore[attr-defined]
    assert line["errors"] == ["BAD_INPUT"]


def test_cors(client: httpx.Client) -> None:
    preflight = client.options(
        "/graphql",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    refused = client.options(
        "/graphql",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    actual = post(client, VIEWER, WRITER, headers={"Origin": "https://app.example"})
    assert actual.headers["access-control-allow-origin"] == "https://app.example"
    assert "x-request-id" in actual.headers["access-control-expose-headers"].lower()
    unauthenticated = post(client, VIEWER, headers={"Origin": "https://app.example"})
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["access-control-allow-origin"] == "https://app.example"


def test_oversized_bodies_are_refused(store: Store, tmp_path: Path, keys: ApiKeys) -> None:
    with in_process(app_on(store, tmp_path, keys, max_body_bytes=2048)) as client:
        big = {"query": REMEMBER, "variables": {"pad": "x" * 4096}}
        declared = client.post("/graphql", json=big, headers=_bearer(WRITER))
        assert declared.status_code == 413
        assert codes(declared) == ["LIMIT_EXCEEDED"]
        assert "GRAPHSVC_MAX_BODY_BYTES" in declared.json()["errors"][0]["message"]

        def chunks() -> Iterator[bytes]:
            yield json.dumps(big).encode()

        streamed = client.post(
            "/graphql",
            content=chunks(),
            headers={**_bearer(WRITER), "Content-Type": "application/json"},
        )
        assert streamed.status_code == 413
        assert codes(streamed) == ["LIMIT_EXCEEDED"]
        assert post(client, VIEWER, WRITER).status_code == 200


def test_without_keys_every_caller_is_the_default_namespace(store: Store, tmp_path: Path) -> None:
    namespace = f"d{uuid.uuid4().hex[:12]}"
    settings = make_settings(tmp_path, namespace=namespace)
    service = MemoryService(store, settings, clock=fixed_clock())
    app = create_app(settings, ApiKeys(), open_service=lambda: service, owns_store=False)
    with in_process(app) as client:
        viewer = post(client, VIEWER, "whatever-is-sent-is-ignored").json()["data"]["viewer"]
        assert viewer == {"namespace": namespace, "role": "write", "keyId": "anonymous"}
        assert post(client, REMEMBER).json()["data"]["remember"]["namespace"] == namespace


def test_the_lifespan_opens_and_closes_the_store(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "own", fsync=False, neo4j_uri=None)
    app = create_app(settings, ApiKeys())
    with in_process(app) as client:
        assert post(client, REMEMBER).status_code == 200
    reopened = MirrorStore(tmp_path / "own", fsync=False)  # the lock was released
    reopened.open()
    assert reopened.stats("default").memories == 1
    reopened.close()


def test_a_store_that_cannot_open_fails_startup(tmp_path: Path) -> None:
    def broken() -> MemoryService:
        raise StoreUnavailableError("Neo4j at bolt://nowhere:7687 is unavailable")

    settings = make_settings(tmp_path)
    app = create_app(settings, ApiKeys(), open_service=broken)
    with pytest.raises(StoreUnavailableError), in_process(app):
        pass  # pragma: no cover


# -- the edge: document limits, strict bodies, rate limits, time bounds --------------------------


def fragment_bomb(levels: int, name: str = "F") -> str:
    """Each fragment spreads the next twice: 2^levels spreads once expanded."""
    chain = " ".join(
        f"fragment {name}{i} on Query {{ ...{name}{i + 1} ...{name}{i + 1} }}"
        for i in range(levels)
    )
    return f"query {{ ...{name}0 }} {chain} fragment {name}{levels} on Query {{ __typename }}"


DEFAULT_DOCUMENT_LIMITS = DocumentLimits.of(Limits.defaults())


def prepared_codes(document: str, limits: DocumentLimits = DEFAULT_DOCUMENT_LIMITS) -> list[str]:
    prepared = prepare(document, schema._schema, limits)
    return [(classify(error) or ("INTERNAL", ""))[0] for error in prepared.errors]


def test_a_fragment_bomb_is_refused_in_milliseconds() -> None:
    began = time.perf_counter()
    prepared = prepare(fragment_bomb(30), schema._schema, DEFAULT_DOCUMENT_LIMITS)
    assert time.perf_counter() - began < 0.2  # strawberry's depth limiter: over ten minutes
    assert [classify(error) for error in prepared.errors] == [
        (
            "LIMIT_EXCEEDED",
            "the document spreads fragments over 1000000000 times (a spread inside a fragment "
            "counts each time that fragment is spread); the limit is 100 "
            "(GRAPHSVC_MAX_FRAGMENT_SPREADS): spread fewer fragments, or split the request",
        )
    ]
    assert prepared_codes(fragment_bomb(5)) == []  # 62 spreads: within the limit, and valid


def memory_chain(fragments: int) -> str:
    """memories(0) nodes(1), then per fragment links(+1) sourceMemory(+1), then id."""
    chain = " ".join(
        f"fragment L{i} on Memory {{ links {{ sourceMemory {{ ...L{i + 1} }} }} }}"
        for i in range(fragments)
    )
    last = f"fragment L{fragments} on Memory {{ id }}"
    return f"{{ memories {{ nodes {{ ...L0 }} }} }} {chain} {last}"


def test_depth_and_aliases_are_counted_through_fragments_once_each() -> None:
    tight = DocumentLimits.of(Limits.defaults(), make_settings(Path(), max_fragment_spreads=10))
    assert prepared_codes(memory_chain(4), tight) == []  # id at level 10: the limit
    assert prepared_codes(memory_chain(5), tight) == ["LIMIT_EXCEEDED"]  # id at level 12
    assert prepared_codes(memory_chain(11), tight) == ["LIMIT_EXCEEDED"]  # 12 spreads
    # aliases: 4, and a fragment of 3 spread 4 times: 16 aliases, over the 15 allowed
    aliased = (
        "{ v: viewer { ...A } w: viewer { ...A } x: viewer { ...A } y: viewer { ...A } }"
        " fragment A on Viewer { a: role b: role c: namespace }"
    )
    prepared = prepare(aliased, schema._schema, tight)
    assert [classify(e) for e in prepared.errors] == [
        (
            "LIMIT_EXCEEDED",
            "the query uses 16 aliases; the limit is 15: split it into several requests",
        )
    ]
    # introspection fields count as leaves: the full introspection query passes
    assert prepared_codes(get_introspection_query(descriptions=True)) == []


@pytest.mark.parametrize(
    ("document", "code", "fragment"),
    [
        ("{ ...Nope }", "BAD_INPUT", "Unknown fragment 'Nope'"),  # was {"message": "'Nope'"}
        ("{ ...A } fragment A on Query { ...A }", "BAD_INPUT", "within itself"),
        ("{ " + "viewer " * 900 + "}", "LIMIT_EXCEEDED", "ask for each field once"),  # aborted
        ("{ " + " ".join(f"f{i}" for i in range(150)) + " }", "BAD_INPUT", "f0"),
        ("{ " + "viewer { role } " * 51 + "}", "LIMIT_EXCEEDED", "'viewer' 51 times"),
        ("{ " + "a" * 300_000 + " }", "LIMIT_EXCEEDED", "GRAPHSVC_MAX_QUERY_CHARS"),
        ("{ a" + " { a" * 300 + " }" * 301, "LIMIT_EXCEEDED", "nests selections"),
        ("{ bundle(query: ", "BAD_INPUT", "Syntax Error"),
    ],
)
def test_every_document_error_has_a_code(document: str, code: str, fragment: str) -> None:
    prepared = prepare(document, schema._schema, DEFAULT_DOCUMENT_LIMITS)
    found = [classify(error) for error in prepared.errors]
    assert found and all(f is not None for f in found), found
    assert found[0] is not None
    assert found[0][0] == code
    assert fragment in found[0][1]
    # graphql-core stops at 100 errors: the last one then says what to do
    last = found[-1]
    assert last is not None
    assert "Validation aborted" not in last[1]


def test_too_many_validation_errors_say_what_to_do() -> None:
    document = "{ " + " ".join(f"f{i}" for i in range(150)) + " }"
    prepared = prepare(document, schema._schema, DEFAULT_DOCUMENT_LIMITS)
    assert len(prepared.errors) == 101
    assert classify(prepared.errors[-1]) == (
        "BAD_INPUT",
        "the document has too many errors to list them all (the first ones are above): fix "
        "those and send it again",
    )


def test_documents_are_prepared_once_per_schema() -> None:
    built = make_schema()
    assert built.documents is not None
    document = "query CacheProbe { __typename }"
    for _ in range(3):
        result = asyncio.run(built.execute(document))
        assert result.errors is None
    assert (built.documents.misses, built.documents.hits) == (1, 2)
    broken = asyncio.run(built.execute("query Broken { __typename ", operation_name="Broken"))
    assert [e.extensions for e in broken.errors or []] == [{"code": "BAD_INPUT"}]


def test_errors_reach_the_client_with_codes_over_http(client: httpx.Client) -> None:
    for document, name, code in [
        ("{ ...Nope }", None, "BAD_INPUT"),
        (fragment_bomb(30), None, "LIMIT_EXCEEDED"),
        ("query Named { broken", "Named", "BAD_INPUT"),  # no document: the name is kept
    ]:
        response = post(client, document, WRITER, operationName=name)
        assert response.status_code == 200, response.text
        assert codes(response) == [code], response.text
    by_get = client.get("/graphql", params={"query": "mutation { x"}, headers=_bearer(WRITER))
    assert codes(by_get) == ["BAD_INPUT"]


@pytest.mark.parametrize(
    ("body", "status", "code", "fragment"),
    [
        (b'{"query": "{ viewer { role } }\xff"}', 400, "BAD_INPUT", "not valid UTF-8 (byte 0xff"),
        (b"123", 400, "BAD_INPUT", "is a number, not a JSON object"),
        (b"true", 400, "BAD_INPUT", "is a boolean, not a JSON object"),
        (b"null", 400, "BAD_INPUT", "is null, not a JSON object"),
        (b"[]", 400, "BAD_INPUT", "batched operations are not supported"),
        (b"[" * 100_000 + b"]" * 100_000, 413, "LIMIT_EXCEEDED", "deeper than 64 levels"),
        (b'{"query": "{ viewer { role } }", "variables": ' + b'{"a": ' * 80 + b"1" + b"}" * 81,
         413, "LIMIT_EXCEEDED", "variables.a.a.a"),
        (b'{"query": "x", "variables": {"n": ' + b"9" * 5000 + b"}}", 400, "BAD_INPUT",
         "not valid JSON"),
        (b'{"query": "x", "variables": {"n": NaN}}', 400, "BAD_INPUT", "NaN is not JSON"),
        (b'{"query": 5}', 400, "BAD_INPUT", "query must be a string"),
        (b'{"query": "{ viewer { role } }", "operationName": []}', 400, "BAD_INPUT",
         "operationName must be a string"),
        (b'{"query": "{ viewer { role } }", "variables": "x"}', 400, "BAD_INPUT",
         "variables must be an object"),
        (b"{not json", 400, "BAD_INPUT", "not valid JSON"),
    ],
)  # fmt: skip
def test_malformed_bodies_are_refused_with_a_reason(
    client: httpx.Client, body: bytes, status: int, code: str, fragment: str
) -> None:
    response = client.post(
        "/graphql", content=body, headers={**_bearer(WRITER), "Content-Type": "application/json"}
    )
    assert response.status_code == status, response.text
    assert codes(response) == [code]
    assert fragment in response.json()["errors"][0]["message"]


def test_too_many_values_are_refused_before_graphql_coerces_them(
    store: Store, tmp_path: Path, keys: ApiKeys
) -> None:
    with in_process(app_on(store, tmp_path, keys, max_input_values=1000)) as client:
        many = {"in": [{"text": "x", "tags": ["t"] * 2000}]}
        response = post(
            client,
            "mutation($in: [MemoryInput!]!) { rememberMany(inputs: $in) { id } }",
            WRITER,
            variables=many,
        )
        assert response.status_code == 413
        assert codes(response) == ["LIMIT_EXCEEDED"]
        assert "GRAPHSVC_MAX_INPUT_VALUES" in response.json()["errors"][0]["message"]


def test_lone_surrogates_are_refused_naming_the_field(client: httpx.Client) -> None:
    remember = "mutation($t: String!) { remember(input: {text: $t}) { id } }"
    event = (
        'mutation($d: String) { recordContextEvent(runId: "r", step: 0, kind: "note", '
        "detail: $d) { kind } }"
    )
    for document, variables, field in [
        (remember, {"t": "a\udfffb"}, "variables.t"),
        (event, {"d": "x\ud800"}, "variables.d"),
        (remember, {"t": "ok", "\udfff": 1}, "variables.\\udfff"),
    ]:
        body = json.dumps({"query": document, "variables": variables})  # escapes: \\udfff
        response = client.post(
            "/graphql",
            content=body,
            headers={**_bearer(WRITER), "Content-Type": "application/json"},
        )
        assert response.status_code == 400, response.text
        assert codes(response) == ["BAD_INPUT"]
        message = response.json()["errors"][0]["message"]
        assert message.startswith(f"{field}: the text holds an unpaired surrogate"), message
    # in the document itself (an escape or the character): graphql-core's lexer refuses both
    for literal in ('"a\\udfffb"', '"a\udfffb"', '"""a\udfffb"""'):
        document = "mutation { remember(input: {text: %s}) { id } }" % literal  # noqa: UP031
        response = client.post(
            "/graphql",
            content=json.dumps({"query": document}),
            headers={**_bearer(WRITER), "Content-Type": "application/json"},
        )
        assert codes(response) == ["BAD_INPUT"], response.text
    as_get = client.get(
        "/graphql",
        params={"query": remember, "variables": '{"t": "\\udfff"}'},
        headers=_bearer(WRITER),
    )
    assert as_get.status_code == 400
    assert as_get.json()["errors"][0]["message"].startswith("variables.t: ")
    # a valid pair escaped in JSON is one character, and welcome
    fine = post(client, remember, WRITER, variables={"t": "rocket \U0001f680"})
    assert fine.json()["data"]["remember"]["id"]
    stats = post(client, "{ stats { memories } }", WRITER).json()["data"]["stats"]
    assert stats == {"memories": 1}


@pytest.mark.parametrize(
    "query_string",
    [
        "%71uery=%7B__schema%7Btypes%7Bname%7D%7D%7D",
        "query=",
        "query",
        "a=1&query=%7B__typename%7D",
    ],
)
def test_any_query_parameter_needs_a_key(client: httpx.Client, query_string: str) -> None:
    response = client.get(f"/graphql?{query_string}", headers={"Accept": "text/html"})
    assert response.status_code == 401, response.text
    assert codes(response) == ["UNAUTHENTICATED"]
    assert client.get("/graphql", headers={"Accept": "text/html"}).status_code == 200
    assert is_ide_request(
        {
            "type": "http",
            "method": "GET",
            "query_string": b"QUERY=x",
            "headers": [(b"accept", b"text/html")],
        }
    )


def test_trusted_proxies_name_the_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHSVC_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7,::1")
    settings = Settings(data_dir=tmp_path)
    assert settings.trusted_proxies == ("10.0.0.0/8", "192.0.2.7", "::1")
    clients = ClientAddresses.from_settings(settings)

    def scope(peer: str, *forwarded: str) -> dict[str, Any]:
        headers = [(b"x-forwarded-for", value.encode()) for value in forwarded]
        return {"client": (peer, 5000), "headers": headers}

    assert clients.of(scope("10.1.1.1", "203.0.113.5, 198.51.100.2")) == "198.51.100.2"
    assert clients.of(scope("10.1.1.1", "203.0.113.5", "198.51.100.2, 10.9.9.9")) == (
        "198.51.100.2"  # several headers are one list; trusted hops are skipped from the right
    )
    assert clients.of(scope("::1", "2001:db8::5")) == "2001:db8::5"
    assert clients.of(scope("203.0.113.9", "198.51.100.2")) == "203.0.113.9"  # not a proxy
    assert clients.of(scope("10.1.1.1")) == "10.1.1.1"  # no header: the proxy itself
    assert clients.of(scope("10.1.1.1", "198.51.100.2, not-an-address")) == "10.1.1.1"
    assert ClientAddresses().of(scope("127.0.0.1", "198.51.100.2")) == "127.0.0.1"
    # Entries written with their port (what some proxies send): before, each fell back to the
    # proxy's address, so one client's bad keys locked out every tenant behind the proxy.
    assert clients.of(scope("10.1.1.1", "198.51.100.2:54321")) == "198.51.100.2"
    assert clients.of(scope("10.1.1.1", "[2001:db8::5]:443, 10.2.2.2:80")) == "2001:db8::5"
    assert clients.of(scope("10.1.1.1", "[2001:db8::6]")) == "2001:db8::6"
    assert clients.of(scope("10.1.1.1", "198.51.100.2:port")) == "10.1.1.1"  # garbled
    assert clients.of(scope("10.1.1.1", "[2001:db8::5]x")) == "10.1.1.1"
    monkeypatch.setenv("GRAPHSVC_TRUSTED_PROXIES", "10.0.0.0/33")
    with pytest.raises(ValueError, match=r"'10\.0\.0\.0/33' is not an IP address or network"):
        Settings(data_dir=tmp_path)


def test_token_buckets() -> None:
    now = [100.0]
    buckets = TokenBuckets(Rate(per_second=2.0, burst=3), max_names=2, clock=lambda: now[0])
    assert [buckets.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a") == pytest.approx(0.5)
    assert buckets.wait("a") == pytest.approx(0.5)
    now[0] += 0.5
    assert buckets.take("a") == 0.0
    assert buckets.take("b") == 0.0
    assert buckets.take("c") == 0.0  # past max_names: "a", the least recently used, is forgotten
    assert buckets.wait("a") == 0.0
    assert retry_after(0.01) == "1"
    assert retry_after(6.2) == "7"
    unlimited = TokenBuckets(Rate(per_second=0.0, burst=1))
    assert all(unlimited.take("x") == 0.0 for _ in range(1000))


def test_rate_limits_answer_429_with_retry_after(
    store: Store, tmp_path: Path, keys: ApiKeys
) -> None:
    app = app_on(
        store,
        tmp_path,
        keys,
        auth_failures_per_minute=3,
        rate_limit_per_key=1,
        rate_limit_per_key_burst=4,
        rate_limit_per_client=0,
    )
    with in_process(app) as client:
        wrong = [post(client, VIEWER, "wrong-key-0000000000000000").status_code for _ in range(5)]
        assert wrong == [401, 401, 401, 429, 429]
        blocked = post(client, VIEWER, WRITER)  # checked before the key: a guesser learns nothing
        assert blocked.status_code == 429
        assert codes(blocked) == ["LIMIT_EXCEEDED"]
        assert int(blocked.headers["retry-after"]) >= 1
        assert "GRAPHSVC_AUTH_FAILURES_PER_MINUTE" in blocked.json()["errors"][0]["message"]
        assert client.get("/healthz").status_code == 200  # probes are never limited
    app = app_on(
        store,
        tmp_path,
        keys,
        rate_limit_per_key=1,
        rate_limit_per_key_burst=4,
        rate_limit_per_client=1,
        rate_limit_per_client_burst=6,
    )
    with in_process(app) as client:
        statuses = [post(client, VIEWER, WRITER).status_code for _ in range(5)]
        assert statuses == [200, 200, 200, 200, 429]
        limited = post(client, VIEWER, WRITER)
        assert "GRAPHSVC_RATE_LIMIT_PER_KEY" in limited.json()["errors"][0]["message"]
        assert post(client, VIEWER, READER).status_code == 429  # the address's 6 are spent
        assert "GRAPHSVC_RATE_LIMIT_PER_CLIENT" in post(client, VIEWER, READER).text


def _service_on(store: Store, tmp_path: Path, **api: Any) -> tuple[MemoryService, Any]:
    settings = make_settings(tmp_path, **api)
    service = MemoryService(store, settings, clock=fixed_clock())
    return service, settings


def test_unavailable_answers_carry_the_stores_retry_after(
    store: Store, tmp_path: Path, keys: ApiKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, settings = _service_on(store, tmp_path)
    app = create_app(settings, keys, open_service=lambda: service, owns_store=False)

    def down(namespace: str, *, retry_after: float | None) -> None:
        raise StoreUnavailableError("Neo4j is unavailable", retry_after=retry_after)

    with in_process(app) as client:
        monkeypatch.setattr(service, "stats", functools.partial(down, retry_after=7.2))
        told = post(client, "{ stats { memories } }", WRITER)
        assert told.status_code == 200  # a GraphQL-level error keeps HTTP 200
        assert codes(told) == ["UNAVAILABLE"]
        assert told.headers["retry-after"] == "8"
        monkeypatch.setattr(service, "stats", functools.partial(down, retry_after=None))
        untold = post(client, "{ stats { memories } }", WRITER)
        assert codes(untold) == ["UNAVAILABLE"]
        assert "retry-after" not in untold.headers


def test_a_request_is_bounded_in_time(
    store: Store, tmp_path: Path, keys: ApiKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, settings = _service_on(store, tmp_path, request_timeout=0.3)
    app = create_app(settings, keys, open_service=lambda: service, owns_store=False)
    stats = service.stats

    def slow(namespace: str) -> Any:
        time.sleep(1.5)
        return stats(namespace)

    with in_process(app) as client:
        monkeypatch.setattr(service, "stats", slow)
        began = time.perf_counter()
        response = post(client, "{ stats { memories } }", WRITER)
        assert time.perf_counter() - began < 1.2
        assert response.status_code == 503
        assert codes(response) == ["UNAVAILABLE"]
        assert response.headers["retry-after"] == "5"
        assert "GRAPHSVC_REQUEST_TIMEOUT" in response.json()["errors"][0]["message"]
        assert post(client, VIEWER, WRITER).status_code == 200  # the next request is served
        time.sleep(1.5)  # let the abandoned store call finish before the store closes


def test_an_error_without_a_code_never_reaches_a_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    view = GraphQLView(
        make_schema(),
        AppState(limits=Limits.defaults()),
        graphiql=False,
        max_input_values=100,
        request_timeout=None,
    )
    request = Request(
        {
            "type": "http",
            "method": "POST",
            "headers": [],
            "query_string": b"",
            "graphsvc.request_id": "req-1",
        }
    )
    result = ExecutionResult(data=None, errors=[GraphQLError("'Nope'")])
    with caplog.at_level(logging.ERROR, logger="graphsvc.api"):
        answer = asyncio.run(view.process_result(request, result))
    assert answer["errors"] == [
        {
            "message": "Unexpected error; request id req-1",
            "extensions": {"code": "INTERNAL", "requestId": "req-1"},
        }
    ]
    assert "without a code" in caplog.text


def test_routing_refusals_are_graphql_shaped(client: httpx.Client) -> None:
    missing = client.get("/no-such-page")
    assert missing.status_code == 404
    assert codes(missing) == ["NOT_FOUND"]
    wrong_method = client.post("/healthz")
    assert wrong_method.status_code == 405
    assert codes(wrong_method) == ["BAD_INPUT"]


# -- API keys ------------------------------------------------------------------------------------


def test_keys_from_the_environment_form() -> None:
    keys = ApiKeys.parse(f" {WRITER}=team-a:write , {READER}=team-b:read,")
    assert len(keys) == 2
    assert keys.namespaces == ["team-a", "team-b"]
    assert keys.authenticate(WRITER) == Principal("team-a", Role.WRITE, hash_key(WRITER).hex()[:8])
    assert keys.authenticate_header(f"bearer {READER}").role is Role.READ
    with pytest.raises(UnauthenticatedError, match="unknown API key"):
        keys.authenticate(WRITER + "x")
    padded = "abc" * 6 + "=="  # base64 padding in a key is fine
    assert ApiKeys.parse(f"{padded}=ns:read").authenticate(padded).namespace == "ns"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("short=ns:write", "too short"),
        (f"{WRITER}=ns:admin", "invalid role"),
        (f"{WRITER}=bad/ns:write", "invalid namespace"),
        (f"{WRITER}=ns", "expected KEY=NAMESPACE:ROLE"),
        (f"{WRITER}", "expected KEY=NAMESPACE:ROLE"),
        (f"{WRITER}=a:write,{WRITER}=b:read", "configured twice"),
        ("sha256:abc=ns:read", "64 hex digits"),
        ("has space in the key x=ns:read", "whitespace"),
    ],
)
def test_bad_key_configuration_says_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(BadInputError, match=fragment):
        ApiKeys.parse(text)
    assert WRITER not in fragment


def test_keys_from_files(tmp_path: Path) -> None:
    digest = hashlib.sha256(READER.encode()).hexdigest()
    as_json = tmp_path / "keys.json"
    entries = {
        WRITER: {"namespace": "a", "role": "write"},
        f"sha256:{digest}": {"namespace": "b", "role": "read"},
    }
    as_json.write_text(json.dumps(entries))
    keys = ApiKeys.load_file(as_json)
    assert keys.authenticate(WRITER).namespace == "a"
    assert keys.authenticate(READER) == Principal("b", Role.READ, digest[:8])

    as_toml = tmp_path / "keys.toml"
    as_toml.write_text(f'["{OTHER}"]\nnamespace = "c"\nrole = "write"\n')
    assert ApiKeys.load_file(as_toml).authenticate(OTHER).namespace == "c"

    merged = ApiKeys.configured(f"{READER}=d:read", as_toml)
    assert sorted(merged.namespaces) == ["c", "d"]

    for content, fragment in [
        ("[1, 2]", "must hold a mapping"),
        ("{not json", "not JSON"),
        (json.dumps({WRITER: "a:write"}), "expected a table"),
        (json.dumps({WRITER: {"namespace": "a", "role": "write", "extra": 1}}), "unknown field"),
    ]:
        as_json.write_text(content)
        with pytest.raises(BadInputError, match=fragment):
            ApiKeys.load_file(as_json)
    with pytest.raises(BadInputError, match="cannot read"):
        ApiKeys.load_file(tmp_path / "missing.toml")


def test_principals_enforce_roles() -> None:
    reader = Principal("ns", Role.READ, "abcd1234")
    with pytest.raises(ForbiddenError, match="read-only"):
        reader.require_write("remember")
    Principal("ns", Role.WRITE, "abcd1234").require_write("remember")


# -- the serve command and logging ------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_serve_refuses_a_public_host_without_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GRAPHSVC_API_KEYS", "GRAPHSVC_API_KEYS_FILE"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(serve, ["--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 2
    assert "refusing to bind '0.0.0.0'" in result.output
    assert "GRAPHSVC_API_KEYS" in result.output


def test_serve_refuses_bad_key_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHSVC_API_KEYS", "tooshort=ns:write")
    result = CliRunner().invoke(serve, ["--port", "0"])
    assert result.exit_code == 2
    assert "too short" in result.output
    monkeypatch.setenv("GRAPHSVC_API_KEYS", f"{WRITER}=ns:write")
    result = CliRunner().invoke(serve, ["--port", "99999"])
    assert result.exit_code == 2
    assert "port" in result.output


def test_json_log_lines() -> None:
    record = logging.LogRecord("graphsvc.access", logging.INFO, __file__, 1, "request", None, None)
    record.fields = {"request_id": "r1", "status": 200}
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["msg"] == "request"
    assert entry["request_id"] == "r1"
    assert entry["level"] == "info"


def test_repeated_errors_are_rate_limited_in_the_log() -> None:
    # Out of descriptors, asyncio logs "socket.accept() out of system resource" with a traceback
    # on every turn of the event loop: before, each one was written, and the log filled the disk.
    root = logging.getLogger()
    kept = root.handlers[:], root.level
    stream = io.StringIO()
    error = OSError(24, "Too many open files")
    try:
        configure_logging("info")  # the server's log
        handler = root.handlers[0]
        assert isinstance(handler, logging.StreamHandler)
        handler.setStream(stream)
        for _ in range(1000):
            logging.getLogger("asyncio").error(
                "socket.accept() out of system resource", exc_info=error
            )
            logging.getLogger("graphsvc.api").info("below warnings nothing is held back")
        logging.getLogger("asyncio").error("another failure %s", 1)
        for _ in range(20):  # the access log is never held back
            logging.getLogger("graphsvc.access").warning("request")
    finally:
        root.handlers[:], level = kept
        root.setLevel(level)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert sum(line["msg"].startswith("socket.accept()") for line in lines) == 5
    assert sum(line["msg"].startswith("below warnings") for line in lines) == 1000
    assert sum(line["msg"] == "request" for line in lines) == 20
    assert any(line["msg"] == "another failure 1" for line in lines)


def test_the_log_says_how_many_repeats_it_held_back() -> None:
    now = [0.0]
    limit = RepeatLimit(burst=2, window=60.0, clock=lambda: now[0])

    def record(message: str, level: int = logging.ERROR) -> logging.LogRecord:
        return logging.LogRecord("asyncio", level, __file__, 1, message, None, None)

    assert [limit.filter(record("boom")) for _ in range(5)] == [True, True, False, False, False]
    assert limit.filter(record("other"))
    now[0] = 61.0
    again = record("boom")
    assert limit.filter(again)
    assert again.fields == {"suppressed": 3}  # type: ignore[attr-defined]


# -- a real uvicorn process, a real GraphQL client ------------------------------------------------


@pytest.fixture(scope="module", params=STORES)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    suffix = uuid.uuid4().hex[:10]
    running = start_server(
        tmp_path_factory.mktemp("server"),
        request.param,
        tenants={
            "alpha": (f"alpha{suffix}", "write"),
            "beta": (f"beta{suffix}", "write"),
            "reader": (f"alpha{suffix}", "read"),
        },
        extra_env={
            "GRAPHSVC_CORS_ORIGINS": "http://localhost:5173",
            "GRAPHSVC_MAX_BODY_BYTES": "65536",
            "GRAPHSVC_MAX_BATCH": "50",
        },
    )
    yield running
    status = running.stop()
    messages = [str(line.get("msg")) for line in running.log_lines()]
    assert status in GRACEFUL, messages[-10:]
    assert "graphsvc API stopped; store closed" in messages


def gql_client(server: Server, key: str | None, fetch_schema: bool = False) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    transport = HTTPXTransport(url=server.graphql_url, headers=headers, timeout=30)
    return Client(transport=transport, fetch_schema_from_transport=fetch_schema)


def run_gql(
    session: Any, document: str, variable_values: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Execute with gql (variables set on the request, as gql 4 wants)."""
    request = gql(document)
    if variable_values is not None:
        request.variable_values = variable_values
    result: dict[str, Any] = session.execute(request)
    return result


def error_code(exc: TransportQueryError) -> str:
    assert exc.errors
    return str(exc.errors[0]["extensions"]["code"])


@pytest.mark.slow
def test_e2e_introspection_matches_the_schema(server: Server) -> None:
    with gql_client(server, server.keys["reader"], fetch_schema=True) as session:
        assert session.client.schema is not None
        remote = session.client.schema
    local = build_schema(schema.as_str())
    for name, local_type in local.type_map.items():
        if name.startswith("__"):
            continue
        remote_type = remote.get_type(name)
        assert remote_type is not None, name
        if isinstance(local_type, GraphQLObjectType):
            assert isinstance(remote_type, GraphQLObjectType)
            assert set(remote_type.fields) == set(local_type.fields), name


@pytest.mark.slow
def test_e2e_main_queries_and_mutations(server: Server) -> None:
    alpha = server.keys["alpha"]
    with gql_client(server, alpha, fetch_schema=True) as session:
        written = run_gql(
            session,
            (
                """mutation($inputs: [MemoryInput!]!) {
                     rememberMany(inputs: $inputs) { id namespace kind } }"""
            ),
            variable_values={
                "inputs": [
                    {
                        "text": "Checkout payments timed out after the gateway upgrade",
                        "kind": "event",
                        "occurredAt": "2025-03-01T10:00:00Z",
                        "tags": ["ops"],
                    },
                    {
                        "text": "The gateway upgrade changed the TLS cipher list",
                        "kind": "decision",
                        "occurredAt": "2025-02-28T09:00:00Z",
                    },
                    {
                        "text": "Customers complained about failed card payments",
                        "kind": "observation",
                        "occurredAt": "2025-03-01T12:00:00Z",
                    },
                ]
            },
        )["rememberMany"]
        ids = [w["id"] for w in written]
        assert {w["namespace"] for w in written} == {server.namespaces["alpha"]}
        run_gql(
            session,
            ("""mutation($inputs: [LinkInput!]!) { linkMany(inputs: $inputs) { kind } }"""),
            variable_values={
                "inputs": [
                    {"source": ids[1], "target": ids[0], "kind": "CAUSES"},
                    {"source": ids[0], "target": ids[2], "kind": "CAUSES"},
                ]
            },
        )
        memory = run_gql(
            session,
            ("query($id: UUID!) { memory(id: $id) { text links { source target kind } } }"),
            variable_values={"id": ids[0]},
        )["memory"]
        assert len(memory["links"]) == 2
        bundle = run_gql(
            session,
            (
                """query { bundle(query: "why did checkout payments time out?", budgetTokens: 200)
                     { capsules { memoryId reason occurredAt } usedTokens skipped
                       evidenceCoverage chronological } }"""
            ),
        )["bundle"]
        found = [c["memoryId"] for c in bundle["capsules"]]
        assert ids[0] in found
        if bundle["chronological"]:  # the cause and its effects, oldest first
            dates = [c["occurredAt"] for c in bundle["capsules"]]
            assert dates == sorted(dates)
        else:
            assert found[0] == ids[0]
        assert bundle["skipped"] is False
        belief = run_gql(
            session,
            (
                """mutation { reconstruct(cue: "checkout payments timed out", runId: "e2e-1")
                     { sourceIds linkedContextIds summary beliefId } }"""
            ),
        )["reconstruct"]
        assert belief["sourceIds"][0] == ids[0]
        assert set(belief["sourceIds"]) | set(belief["linkedContextIds"]) == set(ids)
        # The cause shares no word with the cue: found by meaning or reached through CAUSES.
        assert ids[1] not in belief["sourceIds"][:1]
        assert belief["beliefId"]
        events = run_gql(session, ('{ contextEvents(runId: "e2e-1") { kind } }'))
        assert events["contextEvents"] == [{"kind": "memory_recall"}]
        page = run_gql(
            session, ("{ memories(first: 2) { nodes { id } pageInfo { hasNextPage endCursor } } }")
        )["memories"]
        assert page["pageInfo"]["hasNextPage"] is True
        receipt = run_gql(
            session,
            ("mutation($id: UUID!) { forget(id: $id) { memoryId removedLinks { kind } } }"),
            variable_values={"id": ids[2]},
        )["forget"]
        assert receipt["removedLinks"] == [{"kind": "CAUSES"}]

    # another tenant sees none of it
    with gql_client(server, server.keys["beta"]) as session:
        other = run_gql(
            session,
            ("query($id: UUID!) { memory(id: $id) { id } }"),
            variable_values={"id": ids[0]},
        )
        assert other["memory"] is None
        with pytest.raises(TransportQueryError) as refused:
            run_gql(
                session,
                ("mutation($id: UUID!) { forget(id: $id) { memoryId } }"),
                variable_values={"id": ids[0]},
            )
        assert error_code(refused.value) == "NOT_FOUND"
        assert server.namespaces["alpha"] not in str(refused.value.errors)


@pytest.mark.slow
def test_e2e_error_cases(server: Server) -> None:
    with gql_client(server, server.keys["alpha"]) as session:
        cases = [
            ('{ bundle(query: "x", budgetTokens: 0) { usedTokens } }', "BAD_INPUT"),
            ('{ reconstruct(cue: "x", k: 1000) { summary } }', "LIMIT_EXCEEDED"),
            ('mutation { remember(input: {text: "x", kind: "9"}) { id } }', "BAD_INPUT"),
            ("{ " + " ".join(f"a{i}: viewer {{ role }}" for i in range(20)) + " }",
             "LIMIT_EXCEEDED"),
            ("{ memories { nodes { " + "links { sourceMemory { " * 6 + "id" + " } }" * 6
             + " } } }", "LIMIT_EXCEEDED"),
        ]  # fmt: skip
        for document, code in cases:
            with pytest.raises(TransportQueryError) as caught:
                run_gql(session, (document))
            assert error_code(caught.value) == code, document
        batch = [{"text": f"memory number {i}"} for i in range(51)]
        with pytest.raises(TransportQueryError) as caught:
            run_gql(
                session,
                ("mutation($i: [MemoryInput!]!) { rememberMany(inputs: $i) { id } }"),
                variable_values={"i": batch},
            )
        assert error_code(caught.value) == "LIMIT_EXCEEDED"
        with pytest.raises(TransportQueryError) as caught:
            run_gql(
                session,
                ("mutation($t: String!) { remember(input: {text: $t}) { id } }"),
                variable_values={"t": "x" * 70_000},
            )
        assert error_code(caught.value) == "LIMIT_EXCEEDED"  # HTTP 413, GraphQL-shaped body

    with gql_client(server, None) as session, pytest.raises(TransportQueryError) as caught:
        run_gql(session, ("{ viewer { role } }"))
    assert error_code(caught.value) == "UNAUTHENTICATED"
    with (
        gql_client(server, "an-unknown-key-123456") as session,
        pytest.raises(TransportQueryError) as caught,
    ):
        run_gql(session, ("{ viewer { role } }"))
    assert error_code(caught.value) == "UNAUTHENTICATED"
    with gql_client(server, server.keys["reader"]) as session:
        assert run_gql(session, ("{ viewer { role } }"))["viewer"]["role"] == "read"
        with pytest.raises(TransportQueryError) as caught:
            run_gql(session, ('mutation { remember(input: {text: "nope"}) { id } }'))
        assert error_code(caught.value) == "FORBIDDEN"

    # malformed GraphQL never leaves a gql client (it parses first): send it raw
    raw = httpx.post(
        server.graphql_url,
        json={"query": "{ bundle(query: "},
        headers={"Authorization": f"Bearer {server.keys['alpha']}"},
    )
    assert raw.status_code == 200
    assert raw.json()["errors"][0]["extensions"]["code"] == "BAD_INPUT"
    assert "Syntax Error" in raw.json()["errors"][0]["message"]


@pytest.mark.slow
def test_e2e_http_surface(server: Server) -> None:
    assert httpx.get(f"{server.base_url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{server.base_url}/readyz").json()
    assert ready["status"] == "ready"
    # The server says how it recalls: hybrid with the encoder (installed by the test setup).
    assert (ready["retrieval"], ready["retrievalNote"]) == ("hybrid", None)
    assert str(ready["embedModel"]).startswith(f"{DEFAULT_MODEL}@")
    page = httpx.get(server.graphql_url, headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert "graphiql" in page.text.lower()
    preflight = httpx.options(
        server.graphql_url,
        headers={"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.headers["access-control-allow-origin"] == "http://localhost:5173"
    response = httpx.post(
        server.graphql_url,
        json={"query": "query Probe { viewer { role } }"},
        headers={"Authorization": f"Bearer {server.keys['alpha']}", "X-Request-Id": "probe-1"},
    )
    assert response.headers["x-request-id"] == "probe-1"
    access = server.wait_for_log("probe-1")
    assert len(access) == 1
    assert access[0]["logger"] == "graphsvc.access"
    assert access[0]["status"] == 200
    assert access[0]["operation"] == "Probe"
    assert access[0]["namespace"] == server.namespaces["alpha"]
    assert server.keys["alpha"] not in server.log_path.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("store_kind", STORES)
def test_e2e_without_keys_serves_one_namespace_on_loopback(tmp_path: Path, store_kind: str) -> None:
    namespace = f"d{uuid.uuid4().hex[:12]}"
    running = start_server(tmp_path, store_kind, extra_env={"GRAPHSVC_NAMESPACE": namespace})
    try:
        with gql_client(running, None) as session:
            viewer = run_gql(session, ("{ viewer { namespace role } }"))["viewer"]
        assert viewer == {"namespace": namespace, "role": "write"}
        warnings = [line for line in running.log_lines() if line.get("level") == "warning"]
        assert any("no API keys configured" in str(line.get("msg")) for line in warnings)
    finally:
        assert running.stop() in GRACEFUL
