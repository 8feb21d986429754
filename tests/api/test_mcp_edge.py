"""The edge of ``/mcp`` in process (the ASGI app, the embedded store): the body limit answers in
MCP's shape behind the key check, a body MCP cannot read is refused without echoing it, and a
namespace's keys together hold only their share of the event streams."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.bootstrap import bootstrap
from graphsvc.mcp.http import StreamSlots, namespace_stream_cap
from graphsvc.settings import Settings
from tests.api_support import in_process

KEY = "mcp-edge-key-0123456789abcdef"
LIMIT = 4096
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[httpx.Client]:
    settings = Settings(
        data_dir=tmp_path / "d", fsync=False, embed="off", max_body_bytes=LIMIT, neo4j_uri=None
    )
    service = bootstrap(settings)
    app = create_app(settings, ApiKeys.parse(f"{KEY}=edge:write"), open_service=lambda: service)
    with in_process(app) as c:
        c.base_url = httpx.URL("http://127.0.0.1:8000")  # a Host the loopback checks accept
        yield c


def mcp_error(response: httpx.Response) -> dict[str, object]:
    body = response.json()
    assert body["jsonrpc"] == "2.0" and "errors" not in body, body  # not GraphQL-shaped
    assert body["error"]["message"] == f"{body['code']}: {body['error_description']}"
    return dict(body)


def test_an_oversized_body_is_refused_after_the_key_in_mcp_s_shape(client: httpx.Client) -> None:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "remember"}}
    big = json.dumps({**call, "pad": "x" * (2 * LIMIT)})
    # Without a key: told about the key first (before: 413 for anyone, GraphQL-shaped).
    anonymous = client.post("/mcp", content=big, headers=HEADERS)
    assert anonymous.status_code == 401, anonymous.text
    assert mcp_error(anonymous)["code"] == "UNAUTHENTICATED"
    keyed = client.post("/mcp", content=big, headers={**HEADERS, "Authorization": f"Bearer {KEY}"})
    assert keyed.status_code == 413, keyed.text
    body = mcp_error(keyed)
    assert body["code"] == "LIMIT_EXCEEDED"
    assert "GRAPHSVC_MAX_BODY_BYTES" in str(body["error_description"])
    assert "remember_many" in str(body["error_description"])
    assert "rememberMany" not in keyed.text  # a GraphQL mutation's name means nothing here
    assert keyed.headers["connection"] == "close"
    # /graphql keeps its own shape and hint
    graphql = client.post("/graphql", content=big, headers=HEADERS)
    assert graphql.status_code == 413 and "rememberMany" in graphql.text


@pytest.mark.parametrize(
    "body",
    [
        '{"jsonrpc": "2.0", "id": 1, "method": 5}',
        '{"foo": "bar", "secret": "hunter2-do-not-echo"}',
        '[1, "hunter2-do-not-echo"]',
    ],
)
def test_a_body_mcp_cannot_read_is_refused_without_echoing_it(
    client: httpx.Client, body: str
) -> None:
    response = client.post(
        "/mcp", content=body, headers={**HEADERS, "Authorization": f"Bearer {KEY}"}
    )
    assert response.status_code == 400, response.text
    error = mcp_error(response)
    assert error["code"] == "BAD_INPUT"
    text = response.text
    # Before: pydantic's whole dump, with the input values, the library's version and its URL.
    for leak in ("hunter2", "input_value", "input_type", "pydantic", "https://", "\\n"):
        assert leak not in text, (leak, text)
    assert "is not an MCP message" in str(error["error_description"])


def test_a_namespace_s_keys_hold_only_their_share_of_the_streams() -> None:
    slots = StreamSlots(per_key=4, total=100, per_namespace=25)
    taken = [slots.take(f"key{k}", "greedy") for k in range(25) for _ in range(4)]
    assert taken.count(None) == 25  # before: 100, every stream of the server
    assert set(taken) - {None} == {"GRAPHSVC_MCP_MAX_STREAMS_PER_NAMESPACE"}
    assert slots.take("other", "quiet") is None  # another tenant still gets one
    slots.give_back("key0", "greedy")
    assert slots.take("key24", "greedy") is None
    settings = Settings(data_dir=Path("unused"))
    assert namespace_stream_cap(settings, 100) == 25
    assert namespace_stream_cap(settings, 8) == 4  # never below a key's own cap
