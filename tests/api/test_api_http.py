"""The HTTP server: auth, health, CORS, body limits, request ids and logs (in process, on both
stores), the API key configuration, the ``serve`` command, and end-to-end tests against a real
uvicorn process with a real GraphQL client (``gql``), on both stores (``slow``)."""

from __future__ import annotations

import hashlib
import json
import logging
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
from graphql import GraphQLObjectType, build_schema

from graphsvc.api.app import JsonFormatter, create_app
from graphsvc.api.auth import (
    ApiKeys,
    ForbiddenError,
    Principal,
    Role,
    UnauthenticatedError,
    hash_key,
)
from graphsvc.api.schema import schema
from graphsvc.api.serve import is_loopback, serve
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


def test_health_and_readiness(client: httpx.Client) -> None:
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"


def test_readiness_says_why_the_store_is_not_ready(
    store: Store, tmp_path: Path, keys: ApiKeys, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down() -> None:
        raise StoreUnavailableError("Neo4j at bolt://db:7687 is unavailable")

    with in_process(app_on(store, tmp_path, keys)) as client:
        monkeypatch.setattr(store, "ping", down)
        ready = client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json() == {
            "status": "not ready",
            "reason": "Neo4j at bolt://db:7687 is unavailable",
        }
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
        mine = post(client, "query Who { viewer { role } }", WRITER,
                    headers={"X-Request-Id": "agent-42.step-7"})  # fmt: skip
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
        ("{not json", "not valid"),
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
    [("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("[::1]", True),
     ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.0.0.5", False),
     ("example.org", False)],
)  # fmt: skip
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


# -- a real uvicorn process, a real GraphQL client ------------------------------------------------


@pytest.fixture(scope="module", params=STORES)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    suffix = uuid.uuid4().hex[:10]
    running = start_server(
        tmp_path_factory.mktemp("server"),
        request.param,
        tenants={"alpha": (f"alpha{suffix}", "write"), "beta": (f"beta{suffix}", "write"),
                 "reader": (f"alpha{suffix}", "read")},
        extra_env={"GRAPHSVC_CORS_ORIGINS": "http://localhost:5173",
                   "GRAPHSVC_MAX_BODY_BYTES": "65536", "GRAPHSVC_MAX_BATCH": "50"},
    )  # fmt: skip
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
            ("""mutation($inputs: [MemoryInput!]!) {
                     rememberMany(inputs: $inputs) { id namespace kind } }"""),
            variable_values={"inputs": [
                {"text": "Checkout payments timed out after the gateway upgrade", "kind": "event",
                 "occurredAt": "2025-03-01T10:00:00Z", "tags": ["ops"]},
                {"text": "The gateway upgrade changed the TLS cipher list", "kind": "decision",
                 "occurredAt": "2025-02-28T09:00:00Z"},
                {"text": "Customers complained about failed card payments", "kind": "observation",
                 "occurredAt": "2025-03-01T12:00:00Z"},
            ]},
        )["rememberMany"]  # fmt: skip
        ids = [w["id"] for w in written]
        assert {w["namespace"] for w in written} == {server.namespaces["alpha"]}
        run_gql(
            session,
            ("""mutation($inputs: [LinkInput!]!) { linkMany(inputs: $inputs) { kind } }"""),
            variable_values={"inputs": [
                {"source": ids[1], "target": ids[0], "kind": "CAUSES"},
                {"source": ids[0], "target": ids[2], "kind": "CAUSES"},
            ]},
        )  # fmt: skip
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
                     { capsules { memoryId reason } usedTokens skipped evidenceCoverage } }"""
            ),
        )["bundle"]
        assert bundle["capsules"][0]["memoryId"] == ids[0]
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
        assert ids[1] in belief["linkedContextIds"]  # reached through CAUSES only
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
        other = run_gql(session, ("query($id: UUID!) { memory(id: $id) { id } }"),
                                variable_values={"id": ids[0]})  # fmt: skip
        assert other["memory"] is None
        with pytest.raises(TransportQueryError) as refused:
            run_gql(session, ("mutation($id: UUID!) { forget(id: $id) { memoryId } }"),
                            variable_values={"id": ids[0]})  # fmt: skip
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
    raw = httpx.post(server.graphql_url, json={"query": "{ bundle(query: "},
                     headers={"Authorization": f"Bearer {server.keys['alpha']}"})  # fmt: skip
    assert raw.status_code == 200
    assert raw.json()["errors"][0]["extensions"]["code"] == "BAD_INPUT"
    assert "Syntax Error" in raw.json()["errors"][0]["message"]


@pytest.mark.slow
def test_e2e_http_surface(server: Server) -> None:
    assert httpx.get(f"{server.base_url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{server.base_url}/readyz").json()["status"] == "ready"
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
