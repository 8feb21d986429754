"""promptBundle, reportTokens, recordContextEvent, contextEvents and drift through GraphQL (both
stores), the client, the ``graphsvc drift`` command, and the worked example of docs/agent-turn.md
against a real uvicorn process (``slow``, both stores)."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLObjectType,
    build_schema,
)

from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys, ForbiddenError
from graphsvc.api.schema import schema
from graphsvc.cli import cli
from graphsvc.client import AsyncGraphsvcClient, GraphsvcClient
from graphsvc.errors import BadInputError, NotFoundError
from graphsvc.model import ContextEventKind, MemoryInput
from graphsvc.prompt import AGENT_EVENT_KINDS, UNCHANGED_MARKER, PromptInput
from graphsvc.prompt.parts import sha256_hex
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.api_support import context, in_process, run, start_server
from tests.helpers import STORES, fixed_clock, make_settings

MEMORIES = [
    {"text": "Checkout payments started timing out after the payment gateway upgrade",
     "kind": "event", "occurredAt": "2025-03-01T10:00:00Z"},
    {"text": "The gateway upgrade removed the RSA ciphers from the TLS configuration",
     "kind": "decision", "occurredAt": "2025-02-28T09:00:00Z"},
    {"text": "The office kettle whistles loudly", "kind": "observation"},
]  # fmt: skip
REMEMBER_MANY = "mutation($m: [MemoryInput!]!) { rememberMany(inputs: $m) { id } }"

# The worked example of docs/agent-turn.md, as sent there (turn.json).
TURN_JSON = r"""
{"query": "query Turn($input: PromptInput!) { promptBundle(input: $input) { rendered messages projectContext { path contentHash visibility } memory { usedTokens evidenceCoverage uncoveredTerms } contextLedger { availableInputTokens estimatedInputTokens memoryBudgetTokens memoryTokens fits items { section name tokens visibility } } assembledEvent { seq kind estTokens } } }",
 "variables": {"input": {
   "runId": "turn-42", "step": 1,
   "fragments": [{"name": "role", "text": "You are an on-call assistant. Answer from the context; say what you do not know."}],
   "environment": {"cwd": "/srv/shop", "model": "claude-sonnet-4-5", "date": "2025-03-02"},
   "projectContext": [{"path": "AGENTS.md", "content": "Run make test before proposing a fix.\n"}],
   "toolCatalog": [{"name": "grep", "description": "Search the code base",
                    "inputSchema": {"type": "object", "properties": {"pattern": {"type": "string"}},
                                    "required": ["pattern"]}}],
   "availableSkills": [{"name": "incident-report", "description": "Write a post-incident report",
                        "path": "skills/incident-report/SKILL.md"}],
   "transcript": [
     {"role": "USER", "text": "Checkout is failing for some customers."},
     {"role": "ASSISTANT", "text": "I will look at the recent changes."},
     {"role": "TOOL", "toolName": "grep", "text": "gateway.yaml: tls_ciphers: [ECDHE-ECDSA-AES128-GCM-SHA256]"}],
   "userTurn": "Which TLS ciphers broke checkout payments after the gateway upgrade?"}}}
"""  # noqa: E501
TURN: dict[str, Any] = json.loads(TURN_JSON)
PROMPT = TURN["query"]
EVENTS = """query($r: String!) {
  contextEvents(runId: $r) { runId seq step kind detail estTokens reportedTokens recordedAt }
}"""
REPORT = """mutation($r: String!, $s: Int!, $n: Int!) {
  reportTokens(runId: $r, step: $s, reportedTokens: $n) { seq step kind estTokens reportedTokens }
}"""
RECORD = """mutation($r: String!, $s: Int!, $k: String!, $d: String, $e: Int) {
  recordContextEvent(runId: $r, step: $s, kind: $k, detail: $d, estTokens: $e) { seq kind }
}"""
DRIFT = """query($r: String!) {
  drift(runId: $r) { runId ratio estimatedTokens reportedTokens reportedSteps unreportedSteps
                     steps { step seq estTokens reportedTokens ratio } }
}"""


def turn_input(**changes: Any) -> dict[str, Any]:
    values: dict[str, Any] = {**TURN["variables"]["input"], **changes}
    return values


# -- the schema ------------------------------------------------------------------------------------

PROMPT_INPUT_FIELDS = (
    "fragments environment projectContext toolCatalog availableSkills transcript userTurn "
    "historyReuse prevContextHash runId step contextWindow reservedCompletionTokens "
    "memoryBudgetShare"
)
PROMPT_BUNDLE_FIELDS = (
    "fragments environment projectContext toolCatalog availableSkills transcriptTail userTurn "
    "memory historyReuse prevContextHash contextLedger rendered messages"
)


def test_the_schema_has_the_issue_names_and_describes_everything() -> None:
    built = build_schema(schema.as_str())
    query = built.get_type("Query")
    mutation = built.get_type("Mutation")
    assert isinstance(query, GraphQLObjectType)
    assert isinstance(mutation, GraphQLObjectType)
    assert str(query.fields["promptBundle"].type) == "PromptBundle!"
    assert str(query.fields["promptBundle"].args["input"].type) == "PromptInput!"
    assert str(query.fields["contextEvents"].type) == "[ContextEvent!]!"
    assert set(query.fields["drift"].args) == {"runId"}
    assert {"runId", "step"} <= set(query.fields["bundle"].args)
    assert str(mutation.fields["reportTokens"].type) == "ContextEvent!"
    assert set(mutation.fields["reportTokens"].args) == {"runId", "step", "reportedTokens"}
    assert {"runId", "step", "kind", "detail"} <= set(mutation.fields["recordContextEvent"].args)
    prompt_input = built.get_type("PromptInput")
    assert isinstance(prompt_input, GraphQLInputObjectType)
    assert set(PROMPT_INPUT_FIELDS.split()) <= set(prompt_input.fields)
    required = [
        name
        for name, field in prompt_input.fields.items()
        if str(field.type).endswith("!") and field.ast_node and not field.ast_node.default_value
    ]
    assert required == ["userTurn"]
    bundle = built.get_type("PromptBundle")
    assert isinstance(bundle, GraphQLObjectType)
    assert set(PROMPT_BUNDLE_FIELDS.split()) <= set(bundle.fields)
    assert str(bundle.fields["memory"].type) == "ContextBundle"
    ledger = built.get_type("ContextLedger")
    assert isinstance(ledger, GraphQLObjectType)
    assert {
        "contextWindow",
        "reservedCompletionTokens",
        "availableInputTokens",
        "estimatedInputTokens",
        "items",
    } <= set(ledger.fields)
    reuse = built.get_type("HistoryReuse")
    assert isinstance(reuse, GraphQLEnumType)
    assert set(reuse.values) == {"AVAILABLE", "UNAVAILABLE"}
    new_types = [
        "PromptInput",
        "FragmentInput",
        "EnvironmentInput",
        "ContextFileInput",
        "ToolInput",
        "SkillInput",
        "TranscriptEntryInput",
        "PromptBundle",
        "PromptFragment",
        "PromptEnvironment",
        "ContextFile",
        "Tool",
        "Skill",
        "TranscriptEntry",
        "LedgerItem",
        "ContextLedger",
        "DriftReport",
        "DriftStep",
        "HistoryReuse",
        "TranscriptRole",
        "Visibility",
    ]
    for name in new_types:
        graphql_type = built.get_type(name)
        assert graphql_type is not None and graphql_type.description, name
        if isinstance(graphql_type, GraphQLObjectType | GraphQLInputObjectType):
            for field_name, field in graphql_type.fields.items():
                assert field.description, f"{name}.{field_name}"
    for type_ in (query, mutation):
        for name in ("promptBundle", "drift", "reportTokens", "recordContextEvent"):
            if name in type_.fields:
                assert type_.fields[name].description
                assert all(a.description for a in type_.fields[name].args.values()), name


def test_graphql_enums_match_the_model() -> None:
    from graphsvc import prompt
    from graphsvc.api import schema as api

    pairs = [
        (api.HistoryReuse, prompt.HistoryReuse),
        (api.TranscriptRole, prompt.TranscriptRole),
        (api.Visibility, prompt.Visibility),
    ]
    for graphql_enum, model_enum in pairs:
        assert [k.name for k in graphql_enum] == [k.value for k in model_enum]


# -- resolvers, on both stores ------------------------------------------------------------------


def test_prompt_bundle_through_graphql_is_the_service_result(
    service: MemoryService, ns: str
) -> None:
    ctx = context(service, ns)
    run(ctx, REMEMBER_MANY, {"m": MEMORIES}).ok()
    variables = {"input": turn_input(runId=None)}
    data = run(ctx, PROMPT, variables).ok()["promptBundle"]
    expected = service.prompt_bundle(ns, PromptInput.model_validate(turn_input(runId=None)))
    assert data["rendered"] == expected.rendered
    assert data["messages"] == expected.messages
    assert data["messages"]["system"] == data["rendered"]
    assert data["contextLedger"]["estimatedInputTokens"] == (
        expected.context_ledger.estimated_input_tokens
    )
    assert data["assembledEvent"] is None  # no run, no event
    assert data["projectContext"] == [
        {
            "path": "AGENTS.md",
            "contentHash": sha256_hex("Run make test before proposing a fix.\n"),
            "visibility": "FULL",
        }
    ]
    assert data["memory"]["uncoveredTerms"] == ["broke"]
    again = run(ctx, PROMPT, variables).ok()["promptBundle"]
    assert json.dumps(again, sort_keys=True) == json.dumps(data, sort_keys=True)
    assert service.stats(ns).events == 0


def test_every_event_kind_round_trips(tmp_path: Path, store: Store, ns: str) -> None:
    service = MemoryService(
        store, make_settings(tmp_path, max_memories_per_namespace=3), clock=fixed_clock()
    )
    ctx = context(service, ns)
    r = "every-kind"
    run(
        ctx,
        "mutation($m: MemoryInput!, $r: String) { remember(input: $m, runId: $r) { id } }",
        {"m": MEMORIES[0], "r": r},
    ).ok()
    fourth = {"text": "A fourth memory evicts the oldest"}
    many = """mutation($m: [MemoryInput!]!, $r: String) {
                rememberMany(inputs: $m, runId: $r, step: 1) { id } }"""
    run(ctx, many, {"m": [*MEMORIES[1:], fourth], "r": r}).ok()
    run(ctx, '{ bundle(query: "gateway", runId: "every-kind", step: 2) { usedTokens } }').ok()
    run(ctx, 'mutation { reconstruct(cue: "gateway", runId: "every-kind", step: 2) { cue } }').ok()
    assembled = run(ctx, PROMPT, {"input": turn_input(runId=r, step=3)}).ok()["promptBundle"]
    estimate = assembled["contextLedger"]["estimatedInputTokens"]
    assert assembled["assembledEvent"] == {"seq": 6, "kind": "assembled", "estTokens": estimate}
    reported = run(ctx, REPORT, {"r": r, "s": 3, "n": estimate + 7}).ok()["reportTokens"]
    assert reported == {
        "seq": 6,
        "step": 3,
        "kind": "assembled",
        "estTokens": estimate,
        "reportedTokens": estimate + 7,
    }
    for i, kind in enumerate(AGENT_EVENT_KINDS):
        made = run(ctx, RECORD, {"r": r, "s": 4, "k": kind.value, "d": f"because {i}", "e": i})
        assert made.ok()["recordContextEvent"] == {"seq": 7 + i, "kind": kind.value}

    events = run(ctx, EVENTS, {"r": r}).ok()["contextEvents"]
    assert [(e["seq"], e["step"], e["kind"]) for e in events] == [
        (0, 0, "memory_write"),
        (1, 1, "memory_write"),
        (2, 1, "memory_evict"),
        (3, 2, "memory_recall"),
        (4, 2, "memory_recall"),
        (5, 3, "memory_recall"),
        (6, 3, "assembled"),
        (7, 4, "reread"),
        (8, 4, "reread_refused"),
        (9, 4, "served"),
        (10, 4, "replan"),
        (11, 4, "stalled"),
    ]
    assert {e["kind"] for e in events} == {k.value for k in ContextEventKind}
    assert all(e["runId"] == r for e in events)
    assert events[6]["reportedTokens"] == estimate + 7
    assert events[6]["detail"].startswith("carried: 1 fragment")
    assert [(e["detail"], e["estTokens"]) for e in events[7:]] == [
        (f"because {i}", i) for i in range(5)
    ]
    recorded = [e["recordedAt"] for e in events]
    assert recorded == sorted(recorded)
    assert [e.kind.value for e in service.events(ns, r)] == [e["kind"] for e in events]


def test_report_tokens_without_an_assembled_step_is_not_found(
    service: MemoryService, ns: str
) -> None:
    ctx = context(service, ns)
    outcome = run(ctx, REPORT, {"r": "nothing-yet", "s": 1, "n": 10})
    assert outcome.codes == ["NOT_FOUND"]
    assert "no 'assembled' event at step 1: call promptBundle" in outcome.messages[0]
    run(ctx, PROMPT, {"input": turn_input(runId="r", step=1)}).ok()
    wrong_step = run(ctx, REPORT, {"r": "r", "s": 2, "n": 10})
    assert wrong_step.codes == ["NOT_FOUND"]
    run(ctx, RECORD, {"r": "r", "s": 2, "k": "served"}).ok()  # another kind does not count
    assert run(ctx, REPORT, {"r": "r", "s": 2, "n": 10}).codes == ["NOT_FOUND"]
    assert run(ctx, REPORT, {"r": "r", "s": 1, "n": -5}).codes == ["BAD_INPUT"]
    assert run(ctx, REPORT, {"r": "bad run", "s": 1, "n": 5}).codes == ["BAD_INPUT"]


def test_unknown_event_kinds_are_refused_with_the_known_ones(
    service: MemoryService, ns: str
) -> None:
    ctx = context(service, ns)
    for kind in ("teleported", "assembled", "memory_write", ""):
        outcome = run(ctx, RECORD, {"r": "r", "s": 0, "k": kind})
        assert outcome.codes == ["BAD_INPUT"], kind
        assert "use one of reread, reread_refused, served, replan, stalled" in outcome.messages[0]
    assert run(ctx, RECORD, {"r": "r", "s": -1, "k": "served"}).codes == ["BAD_INPUT"]
    assert service.events(ns, "r") == []


def test_drift_through_graphql(service: MemoryService, ns: str) -> None:
    ctx = context(service, ns)
    for step in (1, 2):
        run(ctx, PROMPT, {"input": turn_input(runId="d", step=step)}).ok()
    empty = run(ctx, DRIFT, {"r": "d"}).ok()["drift"]
    assert empty["ratio"] is None
    assert empty["unreportedSteps"] == [1, 2]
    estimate = empty["steps"][0]["estTokens"]
    run(ctx, REPORT, {"r": "d", "s": 1, "n": estimate * 2}).ok()
    report = run(ctx, DRIFT, {"r": "d"}).ok()["drift"]
    assert report["ratio"] == 2.0
    assert report["reportedSteps"] == [1]
    assert report["unreportedSteps"] == [2]
    assert (report["estimatedTokens"], report["reportedTokens"]) == (estimate, 2 * estimate)
    assert run(ctx, DRIFT, {"r": "never"}).ok()["drift"]["steps"] == []


def test_history_reuse_through_graphql(service: MemoryService, ns: str) -> None:
    ctx = context(service, ns)
    files = [{"path": "AGENTS.md", "content": "rules"}, {"path": "README.md", "content": "hi"}]
    first = run(ctx, PROMPT, {"input": turn_input(runId=None, projectContext=files)}).ok()
    hashes = [f["contentHash"] for f in first["promptBundle"]["projectContext"]]
    files[1]["content"] = "hello"
    second = run(
        ctx,
        PROMPT,
        {
            "input": turn_input(
                runId=None,
                projectContext=files,
                historyReuse="AVAILABLE",
                prevContextHashes=hashes,
            )
        },
    ).ok()["promptBundle"]
    assert [f["visibility"] for f in second["projectContext"]] == ["UNCHANGED", "FULL"]
    assert second["rendered"].count(UNCHANGED_MARKER) == 1


@pytest.mark.parametrize(
    ("changes", "code", "fragment"),
    [
        ({"userTurn": "  "}, "BAD_INPUT", "input.userTurn"),
        ({"prevContextHash": "nope"}, "BAD_INPUT", "not a sha256 digest"),
        ({"contextWindow": 100, "reservedCompletionTokens": 100}, "BAD_INPUT", "must be below"),
        ({"contextWindow": 0}, "BAD_INPUT", "input.contextWindow"),
        ({"maxMemoryTokens": 10**6}, "LIMIT_EXCEEDED", "GRAPHSVC_MAX_BUDGET_TOKENS"),
        ({"memoryStage": "nope"}, "BAD_INPUT", "unknown stage"),
        ({"runId": "has space"}, "BAD_INPUT", "invalid run id"),
        ({"step": -1}, "BAD_INPUT", "input.step"),
        ({"transcript": [{"role": "ROBOT", "text": "x"}]}, "BAD_INPUT", "TranscriptRole"),
        ({"toolCatalog": [{"name": "a b"}]}, "BAD_INPUT", "input.toolCatalog.0.name"),
        ({"environment": {"date": "yesterday"}}, "BAD_INPUT", "Date"),
    ],
)
def test_bad_prompt_input_says_what_to_fix(
    service: MemoryService, ns: str, changes: dict[str, Any], code: str, fragment: str
) -> None:
    outcome = run(context(service, ns), PROMPT, {"input": turn_input(**changes)})
    assert outcome.codes == [code], outcome.errors
    assert fragment in outcome.messages[0]
    assert service.stats(ns).events == 0


def test_a_read_key_assembles_but_records_nothing(service: MemoryService, ns: str) -> None:
    reader = context(service, ns, role="read")
    assert run(reader, PROMPT, {"input": turn_input(runId=None)}).ok()["promptBundle"]["rendered"]
    writes: list[tuple[str, dict[str, Any] | None]] = [
        (PROMPT, {"input": turn_input()}),
        (REPORT, {"r": "turn-42", "s": 1, "n": 5}),
        (RECORD, {"r": "turn-42", "s": 1, "k": "served"}),
        ('{ bundle(query: "gateway", runId: "turn-42") { usedTokens } }', None),
    ]
    for document, variables in writes:
        outcome = run(reader, document, variables)
        assert outcome.codes == ["FORBIDDEN"], document
        assert "role 'write'" in outcome.messages[0]
    assert run(reader, DRIFT, {"r": "turn-42"}).ok()["drift"]["steps"] == []
    assert service.stats(ns).events == 0


# -- the client and the CLI ------------------------------------------------------------------------

WRITER = "prompt-writer-key-0001"
READER = "prompt-reader-key-0001"
URL = "http://testserver/graphql"


def test_the_clients_speak_prompt(service: MemoryService, ns: str) -> None:
    keys = ApiKeys.parse(f"{WRITER}={ns}:write,{READER}={ns}:read")
    app = create_app(service.settings, keys, open_service=lambda: service, owns_store=False)
    request = PromptInput.model_validate(turn_input(runId="client-run", step=1))
    with in_process(app) as http:
        client = GraphsvcClient(URL, api_key=WRITER, http=http)
        client.remember_many([MemoryInput.model_validate(m) for m in MEMORIES])
        bundle = client.prompt_bundle(request)
        expected = service.prompt_bundle(ns, request.model_copy(update={"run_id": None}))
        assert bundle.model_copy(update={"assembled_event": None, "run_id": None}) == expected
        assert bundle.assembled_event is not None
        event = client.report_tokens("client-run", 1, 500)
        assert event.reported_tokens == 500
        assert client.record_event("client-run", 1, "replan", detail="new plan").seq == 2
        with pytest.raises(NotFoundError):
            client.report_tokens("client-run", 9, 500)
        with pytest.raises(BadInputError, match="use one of"):
            client.record_event("client-run", 1, "nope")
        assert client.drift("client-run").reported_steps == (1,)
        assert client.bundle("gateway upgrade", run_id="client-run", step=2).capsules
        kinds = [e.kind for e in client.events("client-run")]
        assert kinds[-1] is ContextEventKind.MEMORY_RECALL
        with pytest.raises(ForbiddenError):
            GraphsvcClient(URL, api_key=READER, http=http).report_tokens("client-run", 1, 1)

    async def scenario() -> None:
        async with (
            app.router.lifespan_context(app),
            httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http,
            AsyncGraphsvcClient(URL, api_key=WRITER, http=http) as client,
        ):
            again = await client.prompt_bundle(request.model_copy(update={"step": 2}))
            assert again.rendered == bundle.rendered
            assert (await client.drift("client-run")).unreported_steps == (2,)

    asyncio.run(scenario())


def test_the_drift_command(
    service: MemoryService, ns: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if isinstance(service.store, MirrorStore):
        monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    for step in (1, 2):
        service.prompt_bundle(ns, PromptInput.model_validate(turn_input(runId="cli", step=step)))
    estimate = service.drift(ns, "cli").steps[0].est_tokens or 0
    service.report_tokens(ns, "cli", 1, estimate + estimate // 2)
    group = cli
    args = ["--data-dir", str(tmp_path / "data"), "--namespace", ns]
    runner = CliRunner()

    shown = runner.invoke(group, ["drift", "cli", *args])
    assert shown.exit_code == 0, shown.output
    assert f"Token drift for run 'cli' in namespace {ns!r}" in shown.output
    assert "unreported" in shown.output
    assert "(graphsvc underestimates)" in shown.output
    as_json = runner.invoke(group, ["drift", "cli", "--json", *args])
    report = json.loads(as_json.output)
    assert report == service.drift(ns, "cli").to_json_dict()
    assert report["unreportedSteps"] == [2]
    none = runner.invoke(group, ["drift", "other", *args])
    assert "no 'assembled' events" in none.output
    bad = runner.invoke(group, ["drift", "bad run", *args])
    assert bad.exit_code == 2
    assert "invalid run id" in bad.output


# -- the worked example of docs/agent-turn.md against a real server ---------------------------


@pytest.mark.slow
@pytest.mark.parametrize("store_kind", STORES)
def test_the_readme_worked_example(tmp_path: Path, store_kind: str) -> None:
    namespace = f"readme{uuid.uuid4().hex[:10]}"
    server = start_server(tmp_path, store_kind, extra_env={"GRAPHSVC_NAMESPACE": namespace})
    try:
        with httpx.Client(timeout=30) as http:

            def post(body: dict[str, Any]) -> dict[str, Any]:
                response = http.post(server.graphql_url, json=body)
                assert response.status_code == 200, response.text
                payload: dict[str, Any] = response.json()
                return payload

            written = post({"query": REMEMBER_MANY, "variables": {"m": MEMORIES}})
            assert len(written["data"]["rememberMany"]) == 3

            # 1. assemble
            bundle = post(TURN)["data"]["promptBundle"]
            rendered = bundle["rendered"]
            for tag in (
                "<fragments>",
                "<environment>",
                "<project_context>",
                "<skills>",
                "<memory>",
            ):
                assert tag in rendered
            assert "date: 2025-03-02" in rendered
            assert "oldest first" in rendered
            assert "not covered by memory: broke." in rendered
            assert [m["role"] for m in bundle["messages"]["messages"]] == [
                "user",
                "assistant",
                "user",
            ]
            assert bundle["messages"]["tools"][0]["name"] == "grep"
            ledger = bundle["contextLedger"]
            assert ledger["fits"] and ledger["availableInputTokens"] == 191_808
            assert ledger["memoryTokens"] <= ledger["memoryBudgetTokens"]
            estimate = ledger["estimatedInputTokens"]
            assert bundle["assembledEvent"] == {
                "seq": 1,
                "kind": "assembled",
                "estTokens": estimate,
            }

            # 2. report
            reported = post(
                {
                    "query": 'mutation { reportTokens(runId: "turn-42", step: 1, '
                    "reportedTokens: 400) { seq kind estTokens reportedTokens } }"
                }
            )
            assert reported["data"]["reportTokens"] == {
                "seq": 1,
                "kind": "assembled",
                "estTokens": estimate,
                "reportedTokens": 400,
            }
            missing = post(
                {
                    "query": 'mutation { reportTokens(runId: "turn-42", step: 7, '
                    "reportedTokens: 100) { seq } }"
                }
            )
            assert missing["errors"][0]["extensions"]["code"] == "NOT_FOUND"

            # 3. the trace
            served = post(
                {
                    "query": 'mutation { recordContextEvent(runId: "turn-42", step: 1, '
                    'kind: "served", detail: "answered from memory without a '
                    'tool call") { seq kind } }'
                }
            )
            assert served["data"]["recordContextEvent"] == {"seq": 2, "kind": "served"}
            events = post(
                {
                    "query": '{ contextEvents(runId: "turn-42") { seq step kind estTokens '
                    "reportedTokens detail } }"
                }
            )["data"]["contextEvents"]
            assert [(e["seq"], e["kind"], e["reportedTokens"]) for e in events] == [
                (0, "memory_recall", None),
                (1, "assembled", 400),
                (2, "served", None),
            ]

            # 4. the next turn reuses the history
            next_turn = json.loads(TURN_JSON)
            next_turn["variables"]["input"].update(
                step=2,
                historyReuse="AVAILABLE",
                prevContextHash=bundle["projectContext"][0]["contentHash"],
                userTurn="Which ciphers does the gateway accept now?",
            )
            reused = post(next_turn)["data"]["promptBundle"]
            assert UNCHANGED_MARKER in reused["rendered"]
            assert "Run make test" not in reused["rendered"]

            # 5. drift
            report = post({"query": '{ drift(runId: "turn-42") { ratio unreportedSteps } }'})
            assert report["data"]["drift"] == {
                "ratio": round(400 / estimate, 6),
                "unreportedSteps": [2],
            }
    finally:
        server.stop()
