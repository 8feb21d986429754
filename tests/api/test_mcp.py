"""The MCP server (graphsvc.mcp) through the official SDK's own client, on both stores.

- Over stdio: a ``python -m graphsvc.mcp`` process, as an agent host starts it. Its tools are
  exactly the twelve of the contract; each is called; errors carry their codes; after the session
  the same store is opened in this process and the service answers the same bundle and the same
  belief as the tools did.
- Over streamable HTTP: a real uvicorn process serving ``/graphql`` and ``/mcp`` from one app
  (:func:`http_app`, wired as ``graphsvc serve`` will be): keys map to namespaces and roles, a read
  key cannot write, one tenant never sees the other's memories, and ``bundle``/``reconstruct``
  answer what GraphQL answers for the same key.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    TextContent,
    TextResourceContents,
)
from starlette.applications import Starlette

from graphsvc.api.auth import ApiKeys, Principal, Role, hash_key
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.errors import BadInputError
from graphsvc.mcp.server import BELIEF_URI, INSTRUCTIONS, MEMORY_URI, GraphsvcMcp
from graphsvc.mcp.stdio import configured_keys, stdio_principal
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.api_support import SERVER_START_SECONDS, Server, server_env
from tests.helpers import STORES, make_settings
from tests.neo4j_server import neo4j_store_factory

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "remember",
    "remember_many",
    "link",
    "forget",
    "bundle",
    "recall",
    "explain",
    "get_memory",
    "reconstruct",
    "memories",
    "prompt_bundle",
    "report_tokens",
}
HARNESS_TOOLS = {"prompt_bundle", "report_tokens"}
BACKUP_FAILED = "The nightly backup job failed because the disk was full"
BACKUP_FIXED = "Ops cleaned old snapshots and the backup succeeded the next night"
CAFE = "The office cafe switched to oat milk for every coffee"
QUESTION = "What happened after the nightly backup failed?"
CUE = "Why did the nightly backup fail?"
Json = dict[str, Any]


# -- the app graphsvc serve will run (/graphql and /mcp), for the uvicorn process ----------------


def http_app() -> Starlette:
    """``create_app`` with the MCP endpoint mounted and its session manager in the lifespan,
    exactly as the lead wires it into ``create_app`` (uvicorn's ``--factory`` calls this)."""
    from graphsvc.api.app import create_app
    from graphsvc.api.logs import configure_logging
    from graphsvc.mcp.http import McpHttp

    settings = Settings()
    configure_logging(settings.log_level)  # JSON lines, as graphsvc serve logs
    keys = configured_keys(settings)
    app = create_app(settings, keys)
    state = app.state.graphsvc
    endpoint = McpHttp(lambda: state.service, keys, settings, limiter_of=lambda: state.limiter)
    app.router.routes.append(endpoint.route)
    opened = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with opened(app), endpoint.run():
            yield

    app.router.lifespan_context = lifespan
    return app


def start_http(tmp_path: Path, store: str, tenants: dict[str, tuple[str, str]]) -> Server:
    """A uvicorn process on a free loopback port serving :func:`http_app`."""
    keys = {name: secrets.token_urlsafe(24) for name in tenants}
    entries = ",".join(f"{keys[name]}={ns}:{role}" for name, (ns, role) in tenants.items())
    env = server_env(
        store,
        {
            "GRAPHSVC_API_KEYS": entries,
            "GRAPHSVC_DATA_DIR": str(tmp_path / f"http-{secrets.token_hex(4)}"),
            "GRAPHSVC_MCP_TOOLS": "all",
        },
    )
    log_path = tmp_path / f"uvicorn-{secrets.token_hex(4)}.log"
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "tests.api.test_mcp:http_app",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--log-level",
        "info",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    server = Server(process, "", log_path, keys, {n: ns for n, (ns, _) in tenants.items()})
    deadline = time.monotonic() + SERVER_START_SECONDS
    while not server.base_url:
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise AssertionError(f"uvicorn did not start:\n{log_path.read_text()}")
        found = re.search(r"Uvicorn running on (http://\S+)", log_path.read_text())
        if found:
            server.base_url = found.group(1)
        else:
            time.sleep(0.05)
    return server


# -- sessions with the SDK's client ---------------------------------------------------------------


def stdio_params(
    store: str, data_dir: Path, namespace: str, extra_env: dict[str, str] | None = None
) -> StdioServerParameters:
    """``python -m graphsvc.mcp`` on ``store`` (the environment of a server test: no GRAPHSVC_
    variable of this shell, the Neo4j ones for the Neo4j store)."""
    args = ["-m", "graphsvc.mcp", "--data-dir", str(data_dir), "--create", "--namespace", namespace]
    env = server_env(store, {"GRAPHSVC_MCP_TOOLS": "all", **(extra_env or {})})
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=ROOT)


@contextlib.asynccontextmanager
async def stdio_session(
    params: StdioServerParameters, errlog: Path
) -> AsyncIterator[ClientSession]:
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def ok(session: ClientSession, tool: str, arguments: Json) -> Json:
    """Call a tool that must succeed; its structured result."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    assert text_of(result).strip()  # and a text rendering
    data: Json = result.structured_content
    return data


async def refused(session: ClientSession, tool: str, arguments: Json, code: str) -> str:
    """Call a tool that must fail with ``code``; the text of the error."""
    result = await session.call_tool(tool, arguments)
    text = text_of(result)
    assert result.is_error, text
    assert text.startswith(f"{code}: "), text
    assert result.structured_content == {
        "error": {"code": code, "message": text.removeprefix(f"{code}: ")}
    }
    return text


async def read_json(session: ClientSession, uri: str) -> Json:
    result = await session.read_resource(uri)
    (content,) = result.contents
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "application/json"
    data: Json = json.loads(content.text)
    return data


async def read_refused(session: ClientSession, uri: str, code: str) -> str:
    with pytest.raises(MCPError) as caught:
        await session.read_resource(uri)
    message = str(caught.value.error.message)
    assert message.startswith(f"{code}: "), message
    return message


def run_async(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def memory_uri(memory_id: str) -> str:
    return MEMORY_URI.replace("{id}", memory_id)


def belief_uri(belief_id: str) -> str:
    return BELIEF_URI.replace("{id}", belief_id)


# -- the same store, opened here afterwards -------------------------------------------------------


@contextlib.contextmanager
def opened_store(store: str, data_dir: Path) -> Iterator[MemoryService]:
    """A service on the store the server process used (the embedded one once it is closed)."""
    backend: Store = (
        MirrorStore(data_dir, fsync=False) if store == "mirror" else neo4j_store_factory()()
    )
    backend.open()
    try:
        # The settings' declared defaults, as the server process had (no GRAPHSVC_ limits), and
        # the same recall (hybrid when the encoder is installed, as GRAPHSVC_EMBED=auto does).
        settings = Settings.model_construct(data_dir=data_dir, fsync=False)
        yield MemoryService(backend, settings, dense=DenseRecall.from_settings(settings))
    finally:
        backend.close()


# -- stdio ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
def test_stdio_tools_resources_and_errors(store: str, tmp_path: Path, ns: str) -> None:
    data_dir = tmp_path / "mcp-data"
    params = stdio_params(store, data_dir, ns)
    seen: Json = {}

    async def main() -> None:
        async with stdio_session(params, tmp_path / "stdio.err") as session:
            await exercise(session)

    async def exercise(session: ClientSession) -> None:
        # Exactly the contract's tools, each described, with object schemas in and out.
        listed = (await session.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        for tool in listed:
            assert tool.description and len(tool.description) > 80, tool.name
            assert tool.input_schema["type"] == "object"
            assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            undescribed = [
                name
                for name, prop in tool.input_schema["properties"].items()
                if not prop.get("description")
            ]
            assert not undescribed, (tool.name, undescribed)
        bundle_tool = next(tool for tool in listed if tool.name == "bundle")
        for word in ("skipped", "topScore", "minScore", "evidenceCoverage", "uncoveredWords"):
            assert word in (bundle_tool.description or ""), word
        templates = (await session.list_resource_templates()).resource_templates
        assert {t.uri_template for t in templates} == {MEMORY_URI, BELIEF_URI}

        # Writes: content ids, idempotent rewrites, all-or-nothing batches.
        many = await ok(
            session,
            "remember_many",
            {
                "inputs": [
                    {
                        "text": BACKUP_FAILED,
                        "kind": "event",
                        "occurredAt": "2024-05-01T02:00:00Z",
                        "tags": ["ops"],
                    },
                    {
                        "text": BACKUP_FIXED,
                        "kind": "event",
                        "occurredAt": "2024-05-02T02:00:00Z",
                        "tags": ["ops"],
                    },
                ]
            },
        )
        failed, fixed = (m["id"] for m in many["memories"])
        assert [m["namespace"] for m in many["memories"]] == [ns, ns]
        cafe = await ok(session, "remember", {"text": CAFE, "kind": "fact", "runId": "run-1"})
        # No stemmed terms for the agent (graphsvc's index, noise in a context window).
        assert "terms" not in cafe and "terms" not in many["memories"][0]
        remember_tool = next(tool for tool in listed if tool.name == "remember")
        assert remember_tool.output_schema is not None
        assert "terms" not in remember_tool.output_schema["properties"]
        again = await ok(session, "remember", {"text": CAFE, "kind": "fact"})
        assert again["id"] == cafe["id"] and again["recordedAt"] == cafe["recordedAt"]
        link = await ok(
            session,
            "link",
            {
                "source": failed,
                "target": fixed,
                "kind": "CAUSES",
                "note": "cleanup after the failure",
            },
        )
        assert (link["source"], link["target"], link["kind"]) == (failed, fixed, "CAUSES")

        # Reads: a page at a time with a cursor, filters.
        first = await ok(session, "memories", {"first": 2})
        assert len(first["nodes"]) == 2 and first["pageInfo"]["hasNextPage"] is True
        assert not any("terms" in m for m in first["nodes"])
        rest = await ok(session, "memories", {"first": 2, "after": first["pageInfo"]["endCursor"]})
        assert len(rest["nodes"]) == 1 and rest["pageInfo"]["hasNextPage"] is False
        listed_ids = [m["id"] for m in first["nodes"] + rest["nodes"]]
        assert sorted(listed_ids) == sorted([failed, fixed, cafe["id"]])
        events = await ok(session, "memories", {"kind": "event", "tag": "ops"})
        assert {m["id"] for m in events["nodes"]} == {failed, fixed}
        early = await ok(session, "memories", {"until": "2024-05-02T00:00:00Z", "kind": "event"})
        assert [m["id"] for m in early["nodes"]] == [failed]

        # Resources: a memory with its links.
        resource = await read_json(session, memory_uri(failed))
        assert resource["text"] == BACKUP_FAILED and resource["namespace"] == ns
        assert "terms" not in resource
        assert [(lk["source"], lk["target"], lk["kind"]) for lk in resource["links"]] == [
            (failed, fixed, "CAUSES")
        ]

        # Reads by id: the memories found, their links, and the ids not found.
        missing = str(uuid.uuid4())
        got = await ok(session, "get_memory", {"ids": [failed, missing, failed]})
        assert [m["id"] for m in got["memories"]] == [failed]
        assert got["memories"][0]["text"] == BACKUP_FAILED
        assert "terms" not in got["memories"][0]
        assert [(lk["source"], lk["target"]) for lk in got["links"]] == [(failed, fixed)]
        assert got["notFound"] == [missing]
        await refused(session, "get_memory", {"ids": []}, "BAD_INPUT")
        await refused(session, "get_memory", {"ids": ["not-a-uuid"]}, "BAD_INPUT")
        # What a host may run without asking: the tools that only read say so.
        hints = {tool.name: tool.annotations for tool in listed}
        for name in ("recall", "explain", "get_memory", "memories"):
            hint = hints[name]
            assert hint is not None and hint.read_only_hint is True, name
        for name in ("bundle", "reconstruct", "remember"):
            hint = hints[name]
            assert hint is not None and hint.read_only_hint is False, name

        # A belief about the cafe, removed with the memory it used.
        cafe_belief = await ok(
            session, "reconstruct", {"cue": "What milk does the cafe use?", "k": 1}
        )
        assert cafe_belief["sourceIds"] == [cafe["id"]] and cafe_belief["beliefId"]
        stored = await read_json(session, belief_uri(cafe_belief["beliefId"]))
        assert stored["summary"] == cafe_belief["summary"] and stored["sourceIds"] == [cafe["id"]]
        receipt = await ok(session, "forget", {"id": cafe["id"]})
        assert receipt["memoryId"] == cafe["id"]
        assert receipt["removedBeliefIds"] == [cafe_belief["beliefId"]]
        await read_refused(session, belief_uri(cafe_belief["beliefId"]), "NOT_FOUND")
        await read_refused(session, memory_uri(cafe["id"]), "NOT_FOUND")

        # Prompt assembly and the provider's count for the step.
        assembled = await session.call_tool(
            "prompt_bundle",
            {
                "userTurn": QUESTION,
                "runId": "run-1",
                "step": 3,
                "fragments": [{"name": "persona", "text": "You are the on-call assistant."}],
            },
        )
        assert not assembled.is_error and assembled.structured_content is not None
        prompt: Json = assembled.structured_content
        # The text's token figure for memory is the one the run's events record (it was the
        # whole section's, 353/19180, beside the events' capsules, 267/19069).
        used = f"{prompt['memory']['usedTokens']}/{prompt['memory']['budgetTokens']}"
        assert f"{used} capsule tokens" in text_of(assembled)
        assert f"({used} tokens" in prompt["assembledEvent"]["detail"]
        assert prompt["memory"] is not None and not prompt["memory"]["skipped"]
        assert failed in {c["memoryId"] for c in prompt["memory"]["capsules"]}
        assert prompt["assembledEvent"]["step"] == 3
        event = await ok(
            session, "report_tokens", {"runId": "run-1", "step": 3, "reportedTokens": 1234}
        )
        assert event["reportedTokens"] == 1234
        assert event["estTokens"] == prompt["contextLedger"]["estimatedInputTokens"]

        # Typed errors: the service's codes and messages, invalid arguments as BAD_INPUT.
        text = await refused(session, "bundle", {"query": QUESTION, "budgetTokens": 0}, "BAD_INPUT")
        assert text == "BAD_INPUT: budgetTokens must be at least 1, got 0"
        await refused(
            session, "bundle", {"query": QUESTION, "budgetTokens": 10**9}, "LIMIT_EXCEEDED"
        )
        text = await refused(
            session, "bundle", {"query": QUESTION, "budgetTokens": "lots"}, "BAD_INPUT"
        )
        assert "budgetTokens" in text
        text = await refused(session, "bundle", {"query": QUESTION, "bogus": 1}, "BAD_INPUT")
        assert "bogus" in text
        await refused(session, "bundle", {}, "BAD_INPUT")
        await refused(session, "remember", {"text": "   "}, "BAD_INPUT")
        await refused(session, "remember_many", {"inputs": []}, "BAD_INPUT")
        await refused(session, "memories", {"after": "not-a-cursor"}, "BAD_INPUT")
        await refused(session, "memories", {"first": 10_000}, "LIMIT_EXCEEDED")
        await refused(session, "forget", {"id": str(uuid.uuid4())}, "NOT_FOUND")
        await refused(
            session,
            "link",
            {"source": failed, "target": str(uuid.uuid4()), "kind": "CAUSES"},
            "NOT_FOUND",
        )
        await refused(
            session, "link", {"source": failed, "target": failed, "kind": "CAUSES"}, "BAD_INPUT"
        )
        unassembled = {"runId": "run-1", "step": 9, "reportedTokens": 1}
        text = await refused(session, "report_tokens", unassembled, "NOT_FOUND")
        assert "step 9" in text
        await read_refused(session, "graphsvc://memory/not-a-uuid", "BAD_INPUT")
        await read_refused(session, "graphsvc://elsewhere/x", "BAD_INPUT")
        with pytest.raises(MCPError, match="BAD_INPUT: unknown tool"):
            await session.call_tool("stats", {})

        # Last: the answers compared with the service's below, on the same state.
        seen["bundle"] = await ok(session, "bundle", {"query": QUESTION, "budgetTokens": 200})
        seen["recall"] = await ok(session, "recall", {"query": QUESTION, "budgetTokens": 200})
        seen["belief"] = await ok(session, "reconstruct", {"cue": CUE, "k": 1, "depth": 2})
        seen["explain"] = await ok(session, "explain", {"cue": CUE, "k": 1, "depth": 2})
        seen["ids"] = (failed, fixed)

    run_async(main)

    failed, fixed = seen["ids"]
    bundle, belief = seen["bundle"], seen["belief"]
    assert not bundle["skipped"] and bundle["chronological"] is True
    assert [c["memoryId"] for c in bundle["capsules"]] == [failed, fixed]  # oldest first
    assert belief["sourceIds"] == [failed] and belief["linkedContextIds"] == [fixed]
    assert seen["recall"] == bundle  # the same answer, read only
    assert seen["explain"] == {**belief, "beliefId": None}  # the same belief, not stored
    with opened_store(store, data_dir) as service:
        assert service.bundle(ns, QUESTION, budget_tokens=200).to_json_dict() == bundle
        read_only = service.reconstruct(ns, CUE, k=1, depth=2).to_json_dict()
        for memory in read_only["memories"]:
            memory.pop("terms")  # the tools leave them out
        assert read_only == {**belief, "beliefId": None}
        kept = service.get_belief(ns, uuid.UUID(belief["beliefId"]))
        assert kept is not None and kept.summary == belief["summary"]


@pytest.mark.slow
async def remember_backup_days(session: ClientSession) -> None:
    """The backup failure and its fix, dated on two days."""
    await ok(
        session,
        "remember_many",
        {
            "inputs": [
                {"text": BACKUP_FAILED, "kind": "event", "occurredAt": "2024-05-01T02:00:00Z"},
                {"text": BACKUP_FIXED, "kind": "event", "occurredAt": "2024-05-02T02:00:00Z"},
            ]
        },
    )


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
def test_bundle_tools_give_the_true_reason_of_the_order(
    store: str, tmp_path: Path, ns: str
) -> None:
    # The tools' description said the capsules are oldest first "because the question asks about
    # order", also when the order came from evidence dated on several days.
    params = stdio_params(store, tmp_path / "mcp-data", ns)

    async def main() -> None:
        async with stdio_session(params, tmp_path / "stdio.err") as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            for name in ("bundle", "recall"):
                # The description names no reason (the rendered text says the true one).
                assert "because" not in (listed[name].description or ""), name
                schema = listed[name].output_schema or {}
                assert "orderReason" in schema["properties"], name
            await remember_backup_days(session)
            for tool in ("bundle", "recall"):
                spans = await session.call_tool(tool, {"query": CUE, "budgetTokens": 200})
                assert spans.structured_content is not None
                assert spans.structured_content["chronological"] is True
                assert spans.structured_content["orderReason"] == "EVIDENCE_SPANS_DAYS"
                assert "oldest first, as the evidence spans several days" in text_of(spans)
                assert "asks about order" not in text_of(spans)
                asks = await session.call_tool(tool, {"query": QUESTION, "budgetTokens": 200})
                assert asks.structured_content is not None
                assert asks.structured_content["orderReason"] == "QUESTION_ASKS_ORDER"
                assert "oldest first, as the question asks about order" in text_of(asks)

    run_async(main)


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
def test_bundle_tools_show_the_question_s_own_words(store: str, tmp_path: Path, ns: str) -> None:
    # The text said "Not covered by memory: iguana, mar": stems, not the user's words.
    params = stdio_params(store, tmp_path / "mcp-data", ns)
    question = "What is the name of Melanie's pet iguana on Mars?"

    async def main() -> None:
        async with stdio_session(params, tmp_path / "stdio.err") as session:
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            for name in ("bundle", "recall"):
                assert "`uncoveredWords`" in (listed[name].description or ""), name
                schema = listed[name].output_schema or {}
                assert "uncoveredWords" in schema["properties"], name
            texts = ["Melanie has a pet cat named Luna", "Caroline painted a sunrise"]
            await ok(session, "remember_many", {"inputs": [{"text": t} for t in texts]})
            for tool in ("bundle", "recall"):
                result = await session.call_tool(tool, {"query": question})
                data = result.structured_content
                assert data is not None and not result.is_error
                assert data["uncoveredTerms"] == ["iguana", "mar"]
                assert data["uncoveredWords"] == ["iguana", "Mars"]
                assert data["capsules"][0]["matchedWords"] == ["name", "Melanie", "pet"]
                assert "Not covered by memory: iguana, Mars." in text_of(result)
                assert "mar." not in text_of(result)

    run_async(main)


def test_stdio_refuses_to_start_without_the_key_of_configured_keys(tmp_path: Path) -> None:
    env = server_env("mirror", {"GRAPHSVC_API_KEYS": f"{secrets.token_urlsafe(24)}=team-a:write"})
    done = subprocess.run(
        [sys.executable, "-m", "graphsvc.mcp", "--data-dir", str(tmp_path / "d"), "--create"],
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "GRAPHSVC_MCP_API_KEY" in done.stderr
    assert done.stdout == ""  # stdout is the protocol's: nothing else is ever written there
    assert not (tmp_path / "d").exists()  # refused before the store was opened


@pytest.mark.slow
def test_stdio_works_as_the_key_it_is_given(tmp_path: Path) -> None:
    key = secrets.token_urlsafe(24)
    namespace = f"t{uuid.uuid4().hex[:12]}"
    env = {"GRAPHSVC_API_KEYS": f"{key}={namespace}:read", "GRAPHSVC_MCP_API_KEY": key}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graphsvc.mcp", "--data-dir", str(tmp_path / "d"), "--create"],
        env=server_env("mirror", env),
        cwd=ROOT,
    )

    async def main() -> None:
        async with stdio_session(params, tmp_path / "stdio.err") as session:
            text = await refused(session, "remember", {"text": "a note"}, "FORBIDDEN")
            assert "read-only" in text and namespace in text
            page = await ok(session, "memories", {})
            assert page["nodes"] == []

    run_async(main)


@pytest.mark.slow
def test_the_printed_host_config_starts_as_a_host_starts_it(tmp_path: Path) -> None:
    # The README's host config ran "graphsvc", which is not on PATH after scripts/demo.sh (it
    # installs into .venv). `graphsvc mcp --print-config` prints a config with absolute paths;
    # here it is started exactly as a host does, with the example keys file.
    keys_file = tmp_path / "keys.toml"
    keys_file.write_text((ROOT / "examples" / "keys.example.toml").read_text())
    grants = tomllib.loads(keys_file.read_text())
    key = next(k for k, g in grants.items() if g == {"namespace": "team-a", "role": "write"})
    store = tmp_path / "store"
    printed = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphsvc.cli",
            "mcp",
            "--print-config",
            "--data-dir",
            str(store),
            "--create",
            "--keys-file",
            str(keys_file),
        ],
        env=server_env("mirror", {"GRAPHSVC_MCP_API_KEY": key}),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert printed.returncode == 0, printed.stderr
    assert "namespace 'team-a' (write access)" in printed.stderr
    entry = json.loads(printed.stdout)["mcpServers"]["graphsvc"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][entry["args"].index("--data-dir") + 1] == str(store)
    assert entry["env"]["GRAPHSVC_API_KEYS_FILE"] == str(keys_file)
    assert entry["env"]["GRAPHSVC_MCP_API_KEY"] == key
    # A host starts the command with its args and env (beside its own PATH, HOME, ...). The
    # working directory is the checkout only so that this checkout's graphsvc is the one run.
    host_env = {k: v for k, v in server_env("mirror").items() if k in {"PATH", "HOME", "LANG"}}
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={**host_env, **entry["env"]}, cwd=ROOT
    )

    async def main() -> None:
        async with stdio_session(params, tmp_path / "stdio.err") as session:
            # The default profile: an agent's tools, the harness's left out.
            listed = {tool.name for tool in (await session.list_tools()).tools}
            assert listed == TOOLS - HARNESS_TOOLS
            stored = await ok(session, "remember", {"text": CAFE})
            assert stored["namespace"] == "team-a"

    run_async(main)

    # While another process holds the data dir (a running `graphsvc serve`), a printed entry
    # could not start: none is printed, and the message says what to do instead.
    holder = MirrorStore(store, fsync=False)
    holder.open()
    try:
        held = subprocess.run(
            [
                sys.executable,
                "-m",
                "graphsvc.cli",
                "mcp",
                "--print-config",
                "--data-dir",
                str(store),
                "--keys-file",
                str(keys_file),
            ],
            env=server_env("mirror", {"GRAPHSVC_MCP_API_KEY": key}),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        holder.close()
    assert held.returncode == 2 and held.stdout == "", held.stdout
    assert f"pid {os.getpid()}" in held.stderr and "/mcp over HTTP" in held.stderr

    # Without the key, no config is printed: it could not start.
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphsvc.cli",
            "mcp",
            "--print-config",
            "--data-dir",
            str(store),
            "--keys-file",
            str(keys_file),
        ],
        env=server_env("mirror"),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout
    assert "GRAPHSVC_MCP_API_KEY" in refused.stderr


def test_tool_profiles_leave_the_harness_tools_out_of_an_agents_list(tmp_path: Path) -> None:
    # Every agent's context paid for prompt_bundle and report_tokens, which only a harness calls.
    principal = Principal(namespace="solo", role=Role.WRITE, key_id="testkey0")
    store = MirrorStore(None)
    store.open()
    try:
        for profile, expected in (
            ("agent", TOOLS - HARNESS_TOOLS),
            ("harness", HARNESS_TOOLS),
            ("all", TOOLS),
        ):
            service = MemoryService(store, make_settings(tmp_path, mcp_tools=profile))
            mcp = GraphsvcMcp(functools.partial(lambda s: s, service), lambda ctx: principal)
            listed = anyio.run(mcp.list_tools, None, None)  # type: ignore[arg-type]
            assert {tool.name for tool in listed.tools} == expected, profile
            for name in TOOLS - expected:  # a tool out of the profile cannot be called either
                params = CallToolRequestParams(name=name, arguments={})
                with pytest.raises(MCPError, match="unknown tool"):
                    anyio.run(mcp.call_tool, None, params)  # type: ignore[arg-type]
        assert Settings().mcp_tools == "agent"
    finally:
        store.close()
    # The instructions name the words agents read, as every tool does, not the stems.
    assert "uncoveredWords" in INSTRUCTIONS and "uncoveredTerms" not in INSTRUCTIONS


def test_stdio_principal_follows_the_configured_keys() -> None:
    key = secrets.token_urlsafe(24)
    settings = Settings.model_construct(namespace="solo")
    keys = ApiKeys.parse(f"{key}=team-a:read")
    assert stdio_principal(settings, ApiKeys(), None).namespace == "solo"
    assert stdio_principal(settings, ApiKeys(), None).role is Role.WRITE
    principal = stdio_principal(settings, keys, key)
    assert (principal.namespace, principal.role) == ("team-a", Role.READ)
    assert principal.key_id == hash_key(key).hex()[:8]
    with pytest.raises(BadInputError, match="GRAPHSVC_MCP_API_KEY"):
        stdio_principal(settings, keys, None)
    with pytest.raises(BadInputError, match="unknown API key"):
        stdio_principal(settings, keys, secrets.token_urlsafe(24))
    with pytest.raises(BadInputError, match="no API keys are configured"):
        stdio_principal(settings, ApiKeys(), key)


# -- streamable HTTP ------------------------------------------------------------------------------

BUNDLE_QUERY = """query($q: String!, $b: Int) { bundle(query: $q, budgetTokens: $b) {
  query stage retrieval budgetTokens minScore usedTokens skipped topScore evidenceCoverage
  uncoveredTerms uncoveredWords chronological orderReason rendered asOf { at mode }
  answerEvidence { coverage unseen bm25 cosine agreement attribution margin }
  pendingVectors retrievalNote
  capsules { memoryId text kind score tokens matchedTerms matchedWords reason supersededBy
    validity }
  excluded { memoryId text kind score tokens matchedTerms matchedWords reason supersededBy
    validity } } }"""
RECONSTRUCT_QUERY = """query($c: String!) { reconstruct(cue: $c, k: 1, depth: 2) {
  cue summary sourceIds linkedContextIds confidence asOf { at mode }
  memories { id text kind } validity { memoryId supersededBy validity } } }"""
# Times GraphQL and MCP write each in their own ISO form (+00:00, Z): compared elsewhere.
TIMES = ("occurredAt", "validFrom", "validUntil")


def graphql(server: Server, key: str, query: str, variables: Json) -> Json:
    response = httpx.post(
        server.graphql_url,
        json={"query": query, "variables": variables},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    body: Json = response.json()
    assert response.status_code == 200 and not body.get("errors"), body
    data: Json = body["data"]
    return data


def without(data: Json, *fields: str) -> Json:
    """``data`` without ``fields``, also inside capsule lists."""
    out = {k: v for k, v in data.items() if k not in fields}
    for name in ("capsules", "excluded", "memories", "validity"):
        if name in out:
            out[name] = [{k: v for k, v in c.items() if k not in fields} for c in out[name]]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("store", STORES)
def test_http_keys_tenancy_and_parity_with_graphql(store: str, tmp_path: Path) -> None:
    ns_a, ns_b = (f"t{uuid.uuid4().hex[:12]}" for _ in range(2))
    server = start_http(
        tmp_path, store, {"a": (ns_a, "write"), "reader": (ns_a, "read"), "b": (ns_b, "write")}
    )
    url = f"{server.base_url}/mcp"
    try:
        # No key, a malformed or an unknown one: 401 before any MCP handling.
        for headers in (
            {},
            {"Authorization": "Basic abc"},
            {"Authorization": f"Bearer {secrets.token_urlsafe(24)}"},
        ):
            response = httpx.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream", **headers},
                timeout=30,
            )
            assert response.status_code == 401, response.text
            assert response.headers["www-authenticate"] == 'ApiKey realm="graphsvc"'
            assert response.json()["code"] == "UNAUTHENTICATED"
        # A loopback bind checks Host (DNS rebinding): a page on another name cannot call it.
        response = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Accept": "application/json, text/event-stream",
                "Host": "rebound.example",
                "Authorization": f"Bearer {server.keys['b']}",
            },
            timeout=30,
        )
        assert response.status_code == 421, response.text
        # The access log line of an /mcp request names the key's namespace.
        response = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={
                "Accept": "application/json, text/event-stream",
                "Authorization": f"Bearer {server.keys['b']}",
                "X-Request-Id": "mcp-log-1",
            },
            timeout=30,
        )
        assert response.status_code == 200, response.text
        assert {t["name"] for t in response.json()["result"]["tools"]} == TOOLS
        logged = [line for line in server.wait_for_log("mcp-log-1") if line.get("path") == "/mcp"]
        assert logged and logged[0]["namespace"] == ns_b

        seen: Json = {}

        async def main() -> None:
            async with http_session(url, server.keys["a"]) as a:
                assert {t.name for t in (await a.list_tools()).tools} == TOOLS
                many = await ok(
                    a,
                    "remember_many",
                    {
                        "inputs": [
                            {
                                "text": BACKUP_FAILED,
                                "kind": "event",
                                "occurredAt": "2024-05-01T02:00:00Z",
                            },
                            {
                                "text": BACKUP_FIXED,
                                "kind": "event",
                                "occurredAt": "2024-05-02T02:00:00Z",
                            },
                        ]
                    },
                )
                failed, fixed = (m["id"] for m in many["memories"])
                await ok(a, "link", {"source": failed, "target": fixed, "kind": "CAUSES"})
                seen["a_ids"] = {failed, fixed}
                seen["bundle"] = await ok(a, "bundle", {"query": QUESTION, "budgetTokens": 200})
                seen["belief"] = await ok(a, "reconstruct", {"cue": CUE, "k": 1, "depth": 2})
            async with http_session(url, server.keys["b"]) as b:
                mine = await ok(b, "remember", {"text": CAFE})
                page = await ok(b, "memories", {})
                assert [m["id"] for m in page["nodes"]] == [mine["id"]]
                found = await ok(b, "bundle", {"query": QUESTION})
                assert (
                    not {c["memoryId"] for c in found["capsules"] + found["excluded"]}
                    & seen["a_ids"]
                )
                belief = await ok(b, "reconstruct", {"cue": CUE})
                assert not set(belief["sourceIds"] + belief["linkedContextIds"]) & seen["a_ids"]
                theirs = sorted(seen["a_ids"])[0]
                message = await read_refused(b, memory_uri(theirs), "NOT_FOUND")
                assert ns_a not in message
                await read_refused(b, belief_uri(seen["belief"]["beliefId"]), "NOT_FOUND")
                got = await ok(b, "get_memory", {"ids": [theirs, mine["id"]]})
                assert [m["id"] for m in got["memories"]] == [mine["id"]]
                assert got["notFound"] == [theirs]
                await refused(b, "forget", {"id": theirs}, "NOT_FOUND")
                await refused(
                    b,
                    "link",
                    {"source": mine["id"], "target": theirs, "kind": "RELATES_TO"},
                    "NOT_FOUND",
                )
            async with http_session(url, server.keys["reader"]) as reader:
                text = await refused(reader, "remember", {"text": "a note"}, "FORBIDDEN")
                assert "read-only" in text
                await refused(reader, "remember_many", {"inputs": [{"text": "x"}]}, "FORBIDDEN")
                await refused(reader, "reconstruct", {"cue": CUE}, "FORBIDDEN")
                await refused(reader, "forget", {"id": sorted(seen["a_ids"])[0]}, "FORBIDDEN")
                await refused(reader, "bundle", {"query": QUESTION, "runId": "r"}, "FORBIDDEN")
                await refused(
                    reader, "prompt_bundle", {"userTurn": QUESTION, "runId": "r"}, "FORBIDDEN"
                )
                tokens = {"runId": "r", "step": 0, "reportedTokens": 1}
                await refused(reader, "report_tokens", tokens, "FORBIDDEN")
                # Reading is allowed: the reader sees namespace A.
                read = await ok(reader, "bundle", {"query": QUESTION, "budgetTokens": 200})
                assert read == seen["bundle"]
                page = await ok(reader, "memories", {})
                assert {m["id"] for m in page["nodes"]} == seen["a_ids"]
                await ok(reader, "prompt_bundle", {"userTurn": QUESTION})
                # A read key recalls, explains and reads by id: the tools declared read-only.
                recalled = await ok(reader, "recall", {"query": QUESTION, "budgetTokens": 200})
                assert recalled == seen["bundle"]
                explained = await ok(reader, "explain", {"cue": CUE, "k": 1, "depth": 2})
                assert explained == {**seen["belief"], "beliefId": None}
                got = await ok(reader, "get_memory", {"ids": sorted(seen["a_ids"])})
                assert {m["id"] for m in got["memories"]} == seen["a_ids"]

        run_async(main)

        # bundle and reconstruct answer what GraphQL answers for the same key.
        gql = graphql(server, server.keys["a"], BUNDLE_QUERY, {"q": QUESTION, "b": 200})["bundle"]
        assert without(seen["bundle"], *TIMES) == gql
        assert {c["memoryId"] for c in gql["capsules"]} == seen["a_ids"]
        gql = graphql(server, server.keys["a"], RECONSTRUCT_QUERY, {"c": CUE})["reconstruct"]
        belief = seen["belief"]
        assert belief["beliefId"] is not None
        mcp_memories = [{k: m[k] for k in ("id", "text", "kind")} for m in belief["memories"]]
        assert {**without(belief, "beliefId", "memories", *TIMES), "memories": mcp_memories} == gql
    finally:
        server.stop()


@pytest.mark.slow
def test_http_refusals_of_the_sdk_carry_a_code(tmp_path: Path) -> None:
    # The SDK's own refusals were plain text ("Invalid Host header") or JSON-RPC errors without
    # graphsvc's code; every refusal of /mcp is now a JSON-RPC error that starts with the code,
    # with "error_description" and "code" beside it.
    server = start_http(tmp_path, "mirror", {"a": (f"t{uuid.uuid4().hex[:12]}", "write")})
    url = f"{server.base_url}/mcp"
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    both = "application/json, text/event-stream"
    key = {"Authorization": f"Bearer {server.keys['a']}"}
    try:
        for method, headers, status, code, fragment in [
            ("POST", {"Accept": both, "Content-Type": "text/plain"}, 400, "BAD_INPUT",
             "Content-Type"),
            ("POST", {"Accept": both, "Content-Type": "application/json",
                      "Origin": "http://rebound.example"}, 403, "FORBIDDEN", "Origin"),
            ("POST", {"Accept": both, "Content-Type": "application/json",
                      "Host": "rebound.example"}, 421, "FORBIDDEN", "Host"),
            ("PUT", {"Accept": both, "Content-Type": "application/json"}, 405, "BAD_INPUT",
             "Method Not Allowed"),
            ("POST", {"Accept": "text/html", "Content-Type": "application/json"}, 406,
             "BAD_INPUT", "Not Acceptable"),
        ]:  # fmt: skip
            response = httpx.request(
                method, url, content=listing, headers={**key, **headers}, timeout=30
            )
            assert response.status_code == status, (method, headers, response.text)
            assert response.headers["content-type"].startswith("application/json")
            body = response.json()
            assert body["code"] == code, body
            assert fragment in body["error_description"], body
            assert body["error"]["message"] == f"{code}: {body['error_description']}"
            assert body["error"]["data"] == {"code": code, "status": status}
            assert body["jsonrpc"] == "2.0"
        plain = {**key, "Accept": both, "Content-Type": "application/json"}
        put = httpx.put(url, content=listing, timeout=30, headers=plain)
        assert put.headers["allow"] == "GET, POST, DELETE"
        ok = httpx.post(url, content=listing, timeout=30, headers=plain)
        assert ok.status_code == 200 and "result" in ok.json()  # answers pass unchanged
    finally:
        server.stop()


@pytest.mark.slow
def test_http_refusals_reach_the_sdk_client_by_name(tmp_path: Path) -> None:
    # A missing or unknown key reached the SDK's client as "Server returned an error response"
    # (-32603): the body was not a JSON-RPC error. And the 401 challenged Bearer, which sends an
    # MCP host looking for OAuth metadata graphsvc does not serve.
    server = start_http(tmp_path, "mirror", {"a": (f"t{uuid.uuid4().hex[:12]}", "write")})
    url = f"{server.base_url}/mcp"
    wrong = secrets.token_urlsafe(24)
    try:
        for key, fragment in [
            (None, "UNAUTHENTICATED: no API key: send the header 'Authorization: Bearer <key>'"),
            (wrong, "UNAUTHENTICATED: unknown API key"),
        ]:
            message = anyio.run(initialize_error, url, key)
            assert message.startswith(fragment), message
        response = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
            timeout=30,
        )
        assert response.status_code == 401
        assert not response.headers["www-authenticate"].lower().startswith("bearer")
        assert "resource_metadata" not in response.headers["www-authenticate"]
    finally:
        server.stop()


async def initialize_error(url: str, key: str | None) -> str:
    """The message of the error the SDK's client raises on ``initialize`` with ``key``."""
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        with pytest.raises(MCPError) as caught:
            await session.initialize()
    return str(caught.value.error.message)
