"""The GraphQL schema through ``schema.execute``: contract names, resolvers on both stores,
DataLoader batching, pagination, error codes, limits and masking."""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLObjectType,
    build_schema,
    get_introspection_query,
)

from graphsvc.api.context import Limits, RequestContext, decode_cursor, encode_cursor
from graphsvc.api.export import schema_text
from graphsvc.api.schema import make_schema, schema
from graphsvc.api.types import LinkKind
from graphsvc.errors import StoreCorruptError, StoreUnavailableError
from graphsvc.model import LinkKind as ModelLinkKind
from graphsvc.model import Memory
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.api_support import context, run
from tests.helpers import fixed_clock, make_settings

ROOT = Path(__file__).resolve().parents[2]

REMEMBER = """mutation($input: MemoryInput!, $runId: String) {
  remember(input: $input, runId: $runId) { id namespace text kind tags tokens occurredAt }
}"""
REMEMBER_MANY = """mutation($inputs: [MemoryInput!]!) {
  rememberMany(inputs: $inputs) { id text kind tags occurredAt recordedAt }
}"""
LINK = """mutation($input: LinkInput!) {
  link(input: $input) { source target kind weight note createdAt }
}"""
BUNDLE = """query($q: String!, $budget: Int, $min: Float, $stage: String, $max: Int) {
  bundle(query: $q, budgetTokens: $budget, minScore: $min, stage: $stage, maxCapsules: $max) {
    query stage budgetTokens usedTokens skipped topScore evidenceCoverage uncoveredTerms
    chronological rendered
    capsules { memoryId text kind score tokens occurredAt matchedTerms reason }
    excluded { memoryId reason }
  }
}"""
MEMORY = "query($id: UUID!) { memory(id: $id) { id } }"
RECONSTRUCT_QUERY = """query($cue: String!, $k: Int, $depth: Int) {
  reconstruct(cue: $cue, k: $k, depth: $depth) {
    cue summary sourceIds linkedContextIds confidence beliefId memories { id text }
  }
}"""
RECONSTRUCT_MUTATION = """mutation($cue: String!, $runId: String) {
  reconstruct(cue: $cue, runId: $runId) {
    cue summary sourceIds linkedContextIds confidence beliefId memories { id }
  }
}"""
PAGE = """query($first: Int, $after: String, $kind: String, $tag: String, $since: DateTime,
    $until: DateTime) {
  memories(first: $first, after: $after, kind: $kind, tag: $tag, since: $since, until: $until) {
    edges { cursor node { id text } }
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
}"""

KETTLE = [
    "The kettle whistles loudly when the water boils",
    "Descaling the kettle with vinegar removed the limescale",
    "The kettle cable frayed near the plug",
    "We bought a new toaster with a crumb tray",
    "The toaster burns bread on setting five",
]


def remember_all(ctx: RequestContext, texts: Sequence[str], **fields: Any) -> list[dict[str, Any]]:
    data = run(ctx, REMEMBER_MANY, {"inputs": [{"text": t, **fields} for t in texts]}).ok()
    rows: list[dict[str, Any]] = data["rememberMany"]
    return rows


def mirror_service(tmp_path: Path, **overrides: object) -> MemoryService:
    store = MirrorStore(tmp_path / "mirror", fsync=False)
    store.open()
    return MemoryService(store, make_settings(tmp_path, **overrides), clock=fixed_clock())


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[MemoryService]:
    """A service on the mirror, for tests of the GraphQL layer itself (limits, masking)."""
    service = mirror_service(tmp_path)
    yield service
    service.store.close()


# -- the schema as printed --------------------------------------------------------------------


def test_schema_graphql_is_current() -> None:
    current = (ROOT / "schema.graphql").read_text(encoding="utf-8")
    assert current == schema.as_str() + "\n", (
        "schema.graphql is stale: run `python -m graphsvc.api.export`"
    )
    assert schema_text() == current


CONTRACT_TYPES = {
    "ContextCapsule": "memoryId text kind score tokens occurredAt matchedTerms matchedWords reason",
    "ContextBundle": "stage budgetTokens usedTokens capsules excluded skipped topScore "
    "evidenceCoverage uncoveredTerms uncoveredWords chronological orderReason rendered",
    "ReconstructedBelief": "cue summary sourceIds linkedContextIds confidence memories",
    "ContextEvent": "step kind detail estTokens reportedTokens",
    "Memory": "id text kind occurredAt recordedAt tags source confidence links",
    "Link": "source target kind weight createdAt note",
    "ForgetReceipt": "memoryId removedLinks removedBeliefIds forgottenAt",
    "Query": "memory bundle reconstruct contextEvents memories",
    "Mutation": "remember rememberMany link forget reconstruct",
}
CONTRACT_ARGS = {
    ("Query", "memory"): "id",
    ("Query", "bundle"): "query budgetTokens stage minScore maxCapsules",
    ("Query", "reconstruct"): "cue k depth",
    ("Query", "contextEvents"): "runId",
    ("Mutation", "remember"): "input",
    ("Mutation", "rememberMany"): "inputs",
    ("Mutation", "link"): "input",
    ("Mutation", "forget"): "id",
    ("Mutation", "reconstruct"): "cue k depth runId",
}
CONTRACT_TYPE_STRINGS = {
    ("ContextCapsule", "memoryId"): "UUID!",
    ("ContextCapsule", "occurredAt"): "DateTime",
    ("ContextBundle", "capsules"): "[ContextCapsule!]!",
    ("ReconstructedBelief", "sourceIds"): "[UUID!]!",
    ("ReconstructedBelief", "memories"): "[Memory!]!",
    ("Query", "memory"): "Memory",
    ("Query", "bundle"): "ContextBundle!",
    ("Query", "contextEvents"): "[ContextEvent!]!",
    ("Mutation", "rememberMany"): "[Memory!]!",
    ("Mutation", "forget"): "ForgetReceipt!",
    ("Mutation", "link"): "Link!",
}


def test_every_contract_name_is_in_the_schema() -> None:
    built = build_schema(schema.as_str())
    for type_name, fields in CONTRACT_TYPES.items():
        graphql_type = built.get_type(type_name)
        assert isinstance(graphql_type, GraphQLObjectType), type_name
        assert set(fields.split()) <= set(graphql_type.fields), type_name
        for name, field in graphql_type.fields.items():
            assert field.description, f"{type_name}.{name} has no description"
        assert graphql_type.description, type_name
    for (type_name, field_name), args in CONTRACT_ARGS.items():
        graphql_type = built.get_type(type_name)
        assert isinstance(graphql_type, GraphQLObjectType)
        assert set(args.split()) <= set(graphql_type.fields[field_name].args), field_name
    for (type_name, field_name), type_string in CONTRACT_TYPE_STRINGS.items():
        graphql_type = built.get_type(type_name)
        assert isinstance(graphql_type, GraphQLObjectType)
        assert str(graphql_type.fields[field_name].type) == type_string, field_name
    memory_input = built.get_type("MemoryInput")
    assert isinstance(memory_input, GraphQLInputObjectType)
    assert {"text", "kind", "occurredAt", "tags", "source", "id"} <= set(memory_input.fields)
    link_input = built.get_type("LinkInput")
    assert isinstance(link_input, GraphQLInputObjectType)
    assert {"source", "target", "kind", "weight", "note"} <= set(link_input.fields)
    kinds = built.get_type("LinkKind")
    assert isinstance(kinds, GraphQLEnumType)
    assert set(kinds.values) == {"CAUSES", "PRECEDES", "RELATES_TO", "SUPERSEDES"}
    # The rest of DESIGN.md's contract, and the namespace is never an argument.
    query_type = built.get_type("Query")
    mutation_type = built.get_type("Mutation")
    assert isinstance(query_type, GraphQLObjectType)
    assert isinstance(mutation_type, GraphQLObjectType)
    assert {"contextEvents", "promptBundle"} <= set(query_type.fields)
    assert {"reportTokens", "recordContextEvent"} <= set(mutation_type.fields)
    for type_name in ("Query", "Mutation"):
        graphql_type = built.get_type(type_name)
        assert isinstance(graphql_type, GraphQLObjectType)
        for field in graphql_type.fields.values():
            assert "namespace" not in field.args


def test_link_kinds_match_the_model() -> None:
    assert [k.name for k in LinkKind] == [k.value for k in ModelLinkKind]


# -- resolvers, on both stores -----------------------------------------------------------------

WORDS_BUNDLE = """query($q: String!) { bundle(query: $q) {
  uncoveredTerms uncoveredWords rendered chronological orderReason
  capsules { matchedTerms matchedWords } excluded { matchedTerms matchedWords } } }"""


def test_a_bundle_shows_the_question_s_own_words(service: MemoryService, ns: str) -> None:
    # Stems were shown as words: "Not covered by memory: iguana, mar", "matched: melani".
    ctx = context(service, ns)
    remember_all(
        ctx,
        ["Melanie has a pet cat named Luna", "Caroline painted a sunrise", "The kettle whistles"],
    )
    question = "What is the name of Melanie's pet iguana on Mars?"
    bundle = run(ctx, WORDS_BUNDLE, {"q": question}).ok()["bundle"]
    assert bundle["uncoveredTerms"] == ["iguana", "mar"]  # the analysed terms stay
    assert bundle["uncoveredWords"] == ["iguana", "Mars"]
    assert "mar" not in bundle["uncoveredWords"]
    assert bundle["rendered"].endswith("Not covered by memory: iguana, Mars.")
    (capsule,) = bundle["capsules"]
    assert capsule["matchedTerms"] == ["name", "melani", "pet"]
    assert capsule["matchedWords"] == ["name", "Melanie", "pet"]
    assert (bundle["chronological"], bundle["orderReason"]) == (False, None)
    assert service.bundle(ns, question).to_json_dict()["uncoveredWords"] == ["iguana", "Mars"]


def test_remember_read_bundle_and_forget(service: MemoryService, ns: str) -> None:
    ctx = context(service, ns)
    made = run(
        ctx,
        REMEMBER,
        {
            "input": {
                "text": KETTLE[0],
                "kind": "event",
                "tags": ["home"],
                "occurredAt": "2025-03-01T10:00:00",
            }
        },
    ).ok()["remember"]
    assert made["namespace"] == ns
    assert made["tags"] == ["home"]
    assert made["occurredAt"] == "2025-03-01T10:00:00+00:00"  # naive input is UTC
    remember_all(ctx, KETTLE[1:])

    again = run(
        ctx,
        REMEMBER,
        {
            "input": {
                "text": KETTLE[0],
                "kind": "event",
                "tags": ["home"],
                "occurredAt": "2025-03-01T10:00:00Z",
            }
        },
    ).ok()
    assert again["remember"]["id"] == made["id"]  # same content, same id: a no-op

    got = run(ctx, "query($id: UUID!) { memory(id: $id) { id text } }", {"id": made["id"]}).ok()
    assert got["memory"] == {"id": made["id"], "text": KETTLE[0]}

    bundle = run(ctx, BUNDLE, {"q": "why does the kettle whistle?"}).ok()["bundle"]
    assert bundle["query"] == "why does the kettle whistle?"
    assert bundle["capsules"][0]["memoryId"] == made["id"]
    assert bundle["skipped"] is False
    assert {c["reason"] for c in bundle["capsules"]} == {"match"}
    expected = service.bundle(ns, "why does the kettle whistle?")
    assert bundle["usedTokens"] == expected.used_tokens
    assert bundle["topScore"] == expected.top_score
    assert bundle["rendered"] == expected.rendered

    abstained = run(ctx, BUNDLE, {"q": "kettle whistles", "min": 1.0}).ok()["bundle"]
    if abstained["skipped"]:
        assert abstained["capsules"] == []
        assert {c["reason"] for c in abstained["excluded"]} <= {"abstained"}

    receipt = run(
        ctx,
        "mutation($id: UUID!) { forget(id: $id) { memoryId namespace removedLinks { kind } "
        "removedBeliefIds forgottenAt } }",
        {"id": made["id"]},
    ).ok()["forget"]
    assert receipt["memoryId"] == made["id"]
    assert receipt["namespace"] == ns
    gone = run(ctx, "query($id: UUID!) { memory(id: $id) { id } }", {"id": made["id"]}).ok()
    assert gone["memory"] is None
    again_forget = run(
        ctx, "mutation($id: UUID!) { forget(id: $id) { memoryId } }", {"id": made["id"]}
    )
    assert again_forget.codes == ["NOT_FOUND"]


def test_links_reconstruct_and_events(service: MemoryService, ns: str) -> None:
    ctx = context(service, ns)
    rows = remember_all(ctx, KETTLE)
    ids = [r["id"] for r in rows]
    made = run(
        ctx,
        LINK,
        {"input": {"source": ids[2], "target": ids[0], "kind": "CAUSES", "note": "frayed cable"}},
    ).ok()["link"]
    assert made["kind"] == "CAUSES"
    assert made["note"] == "frayed cable"
    many = run(
        ctx,
        "mutation($inputs: [LinkInput!]!) { linkMany(inputs: $inputs) { source target kind } }",
        {"inputs": [{"source": ids[1], "target": ids[0], "kind": "RELATES_TO", "weight": 0.5}]},
    ).ok()["linkMany"]
    assert many == [{"source": ids[1], "target": ids[0], "kind": "RELATES_TO"}]

    links = run(
        ctx,
        """query($id: UUID!) { memory(id: $id) {
             links { source target kind sourceMemory { id text } }
             causes: links(kind: CAUSES) { source } } }""",
        {"id": ids[0]},
    ).ok()["memory"]
    assert sorted((lk["source"], lk["kind"]) for lk in links["links"]) == sorted(
        [(ids[2], "CAUSES"), (ids[1], "RELATES_TO")]
    )
    assert {lk["sourceMemory"]["id"] for lk in links["links"]} == {ids[1], ids[2]}
    assert links["causes"] == [{"source": ids[2]}]

    query = run(ctx, RECONSTRUCT_QUERY, {"cue": "kettle whistles when water boils"}).ok()
    belief = query["reconstruct"]
    assert belief["sourceIds"][0] == ids[0]
    assert belief["beliefId"] is None  # the query does not store
    expected = service.reconstruct(ns, "kettle whistles when water boils")
    assert belief["summary"] == expected.summary
    assert belief["linkedContextIds"] == [str(i) for i in expected.linked_context_ids]
    assert [m["id"] for m in belief["memories"]] == [str(m.id) for m in expected.memories]

    stored = run(ctx, RECONSTRUCT_MUTATION, {"cue": "kettle whistles", "runId": "run-1"}).ok()
    assert stored["reconstruct"]["beliefId"] is not None
    events = run(
        ctx,
        "query($r: String!) { contextEvents(runId: $r) { runId seq step kind detail estTokens "
        "reportedTokens recordedAt } }",
        {"r": "run-1"},
    ).ok()["contextEvents"]
    assert [e["kind"] for e in events] == ["memory_recall"]
    assert events[0]["runId"] == "run-1"

    stats = run(ctx, "{ stats { namespace memories links beliefs } viewer { namespace role } }")
    data = stats.ok()
    assert data["stats"] == {"namespace": ns, "memories": 5, "links": 2, "beliefs": 1}
    assert data["viewer"] == {"namespace": ns, "role": "write"}


def test_remember_with_a_run_records_a_write_event(service: MemoryService, ns: str) -> None:
    ctx = context(service, ns)
    run(ctx, REMEMBER, {"input": {"text": KETTLE[0]}, "runId": "agent-7"}).ok()
    events = run(ctx, '{ contextEvents(runId: "agent-7") { kind estTokens } }').ok()
    assert [e["kind"] for e in events["contextEvents"]] == ["memory_write"]


class Counting:
    """Counts calls of a store method (wraps it on the instance)."""

    def __init__(self, store: Store, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[int] = []
        original: Callable[..., Any] = getattr(store, name)

        def counted(namespace: str, ids: Sequence[UUID]) -> Any:
            self.calls.append(len(ids))
            return original(namespace, ids)

        monkeypatch.setattr(store, name, counted)


def test_links_load_in_one_store_call_per_batch(
    service: MemoryService, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = context(service, ns)
    ids = [r["id"] for r in remember_all(ctx, KETTLE)]
    for source, target in itertools.pairwise(ids):
        run(ctx, LINK, {"input": {"source": source, "target": target, "kind": "PRECEDES"}}).ok()
    links_of = Counting(service.store, "links_of", monkeypatch)
    get_memories = Counting(service.store, "get_memories", monkeypatch)

    data = run(
        context(service, ns),
        """{ memories(first: 10) { nodes { id links { source target
             targetMemory { id } sourceMemory { id } } } } }""",
    ).ok()
    nodes = data["memories"]["nodes"]
    assert len(nodes) == 5
    assert links_of.calls == [5]  # five memories, one call
    assert get_memories.calls == [5]  # every link end, one call
    by_id = {n["id"]: n for n in nodes}
    assert len(by_id[ids[0]]["links"]) == 1
    assert len(by_id[ids[2]]["links"]) == 2

    links_of.calls.clear()
    run(
        context(service, ns),
        '{ reconstruct(cue: "kettle toaster", k: 5) { memories { id links { kind } } } }',
    ).ok()
    assert len(links_of.calls) == 1


def test_memories_pages_and_filters(service: MemoryService, ns: str) -> None:
    ctx = context(service, ns)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    inputs = [
        {
            "text": f"{text} (note {i})",
            "kind": "event" if i % 2 else "fact",
            "tags": ["even"] if i % 2 == 0 else ["odd"],
            "occurredAt": (start + timedelta(days=i)).isoformat(),
        }
        for i, text in enumerate(KETTLE + KETTLE[:2])
    ]
    written = run(ctx, REMEMBER_MANY, {"inputs": inputs}).ok()["rememberMany"]
    newest_first = [r["id"] for r in reversed(written)]

    seen: list[str] = []
    after = None
    pages = 0
    while True:
        page = run(ctx, PAGE, {"first": 3, "after": after}).ok()["memories"]
        pages += 1
        seen += [e["node"]["id"] for e in page["edges"]]
        assert [n["id"] for n in page["nodes"]] == [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
        assert after == page["edges"][-1]["cursor"]
    assert pages == 3
    assert seen == newest_first

    def ids(**filters: Any) -> list[str]:
        page = run(ctx, PAGE, {"first": 100, **filters}).ok()["memories"]
        return [n["id"] for n in page["nodes"]]

    assert ids(kind="event") == [r["id"] for r in reversed(written) if r["kind"] == "event"]
    assert ids(tag="even") == [r["id"] for r in reversed(written) if r["tags"] == ["even"]]
    window = ids(
        since=(start + timedelta(days=2)).isoformat(), until=(start + timedelta(days=4)).isoformat()
    )
    assert window == [written[3]["id"], written[2]["id"]]
    assert ids(kind="nothing-like-this") == []
    empty = run(ctx, PAGE, {"kind": "nothing"}).ok()["memories"]
    assert empty["pageInfo"] == {"hasNextPage": False, "endCursor": None}

    assert run(ctx, PAGE, {"first": 0}).codes == ["BAD_INPUT"]
    too_many = run(ctx, PAGE, {"first": 101})
    assert too_many.codes == ["LIMIT_EXCEEDED"]
    assert "at most 100" in too_many.messages[0]
    bad_cursor = run(ctx, PAGE, {"after": "not-a-cursor"})
    assert bad_cursor.codes == ["BAD_INPUT"]
    assert "endCursor" in bad_cursor.messages[0]


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "variables", "code", "fragment"),
    [
        (REMEMBER, {"input": {"text": "   "}}, "BAD_INPUT", "text is empty"),
        (REMEMBER, {"input": {"text": "x", "kind": "9lives"}}, "BAD_INPUT", "input.kind"),
        (REMEMBER, {"input": {"text": "x", "confidence": 2}}, "BAD_INPUT", "input.confidence"),
        (REMEMBER, {"input": {"text": "x", "tags": [""]}}, "BAD_INPUT", "input.tags.0"),
        (REMEMBER, {"input": {"text": "x" * 20_001}}, "LIMIT_EXCEEDED", "GRAPHSVC_MAX_TEXT_CHARS"),
        (REMEMBER, {"input": {"text": "x"}, "runId": "bad run"}, "BAD_INPUT", "invalid run id"),
        (REMEMBER, {"input": {"text": "x", "id": "nope"}}, "BAD_INPUT", "UUID"),
        (REMEMBER, {"input": {}}, "BAD_INPUT", "text"),
        (BUNDLE, {"q": "kettle", "budget": 0}, "BAD_INPUT", "budgetTokens must be at least 1"),
        (BUNDLE, {"q": "kettle", "budget": 10**6}, "LIMIT_EXCEEDED", "budgetTokens"),
        (BUNDLE, {"q": "kettle", "min": 1.5}, "BAD_INPUT", "minScore"),
        (BUNDLE, {"q": "kettle", "stage": "nope"}, "BAD_INPUT", "unknown stage"),
        (BUNDLE, {"q": "kettle", "max": 1000}, "LIMIT_EXCEEDED", "maxCapsules"),
        (BUNDLE, {"q": " "}, "BAD_INPUT", "query is empty"),
        (RECONSTRUCT_QUERY, {"cue": "kettle", "k": 0}, "BAD_INPUT", "k must be at least 1"),
        (RECONSTRUCT_QUERY, {"cue": "kettle", "k": 51}, "LIMIT_EXCEEDED", "k must be at most"),
        (RECONSTRUCT_QUERY, {"cue": "kettle", "depth": 9}, "LIMIT_EXCEEDED", "depth"),
        (RECONSTRUCT_MUTATION, {"cue": "kettle", "runId": "a b"}, "BAD_INPUT", "run id"),
        ('{ contextEvents(runId: "no spaces") { kind } }', None, "BAD_INPUT", "invalid run id"),
        (
            LINK,
            {"input": {"source": str(uuid4()), "target": str(uuid4()), "kind": "CAUSES"}},
            "NOT_FOUND",
            "does not exist",
        ),
        (
            LINK,
            {"input": {"source": str(uuid4()), "target": str(uuid4()), "kind": "LIKES"}},
            "BAD_INPUT",
            "LinkKind",
        ),
        ('mutation { forget(id: "not-a-uuid") { memoryId } }', None, "BAD_INPUT", "UUID"),
    ],
)
def test_bad_input_has_a_code_and_says_what_to_do(
    service: MemoryService,
    ns: str,
    document: str,
    variables: dict[str, Any] | None,
    code: str,
    fragment: str,
) -> None:
    outcome = run(context(service, ns), document, variables)
    assert outcome.codes == [code], outcome.errors
    assert fragment in outcome.messages[0]
    assert service.stats(ns).memories == 0


def test_a_null_input_field_takes_the_models_default(mirror: MemoryService) -> None:
    ctx = context(mirror, "nulls")
    written = run(ctx, REMEMBER, {"input": {"text": "kettle", "id": None, "source": None}}).ok()
    assert UUID(written["remember"]["id"])
    document = """query($input: PromptInput!) {
      promptBundle(input: $input) { toolCatalog { name inputSchema } historyReuse }
    }"""
    tool = {"name": "grep", "inputSchema": None}
    data = run(ctx, document, {"input": {"userTurn": "hi", "toolCatalog": [tool]}}).ok()
    assert data["promptBundle"]["toolCatalog"] == [
        {"name": "grep", "inputSchema": {"type": "object"}}
    ]
    assert data["promptBundle"]["historyReuse"] == "UNAVAILABLE"


def test_a_link_to_itself_and_a_conflicting_rewrite_are_bad_input(
    service: MemoryService, ns: str
) -> None:
    ctx = context(service, ns)
    memory_id = str(uuid4())
    run(ctx, REMEMBER, {"input": {"id": memory_id, "text": KETTLE[0]}}).ok()
    self_link = run(
        ctx, LINK, {"input": {"source": memory_id, "target": memory_id, "kind": "CAUSES"}}
    )
    assert self_link.codes == ["BAD_INPUT"]
    conflict = run(ctx, REMEMBER, {"input": {"id": memory_id, "text": KETTLE[1]}})
    assert conflict.codes == ["BAD_INPUT"]
    assert "different content" in conflict.messages[0]


def test_batches_past_the_limit_are_refused(tmp_path: Path, store: Store, ns: str) -> None:
    service = MemoryService(store, make_settings(tmp_path, max_batch=3), clock=fixed_clock())
    ctx = context(service, ns)
    outcome = run(ctx, REMEMBER_MANY, {"inputs": [{"text": t} for t in KETTLE[:4]]})
    assert outcome.codes == ["LIMIT_EXCEEDED"]
    assert "GRAPHSVC_MAX_BATCH" in outcome.messages[0]
    assert run(ctx, REMEMBER_MANY, {"inputs": []}).codes == ["BAD_INPUT"]
    assert service.stats(ns).memories == 0
    assert len(remember_all(ctx, KETTLE[:3])) == 3


def test_a_read_key_cannot_write(service: MemoryService, ns: str) -> None:
    writer = context(service, ns)
    memory_id = remember_all(writer, KETTLE[:2])[0]["id"]
    reader = context(service, ns, role="read")
    assert run(reader, MEMORY, {"id": memory_id}).ok()["memory"]
    assert run(reader, BUNDLE, {"q": "kettle whistles"}).ok()["bundle"]["capsules"]
    assert run(reader, RECONSTRUCT_QUERY, {"cue": "kettle"}).ok()
    writes: list[tuple[str, dict[str, Any] | None]] = [
        (REMEMBER, {"input": {"text": "a new memory"}}),
        (REMEMBER_MANY, {"inputs": [{"text": "a new memory"}]}),
        (LINK, {"input": {"source": memory_id, "target": memory_id, "kind": "CAUSES"}}),
        ("mutation($id: UUID!) { forget(id: $id) { memoryId } }", {"id": memory_id}),
        (RECONSTRUCT_MUTATION, {"cue": "kettle"}),
        ("mutation { linkMany(inputs: []) { source } }", None),
    ]
    for document, variables in writes:
        outcome = run(reader, document, variables)
        assert outcome.codes == ["FORBIDDEN"], document
        assert "role 'write'" in outcome.messages[0]
    assert service.stats(ns).memories == 2
    assert service.stats(ns).beliefs == 0


def test_no_principal_is_unauthenticated(mirror: MemoryService) -> None:
    ctx = RequestContext(service=mirror, principal=None)
    outcome = run(ctx, '{ bundle(query: "kettle") { usedTokens } }')
    assert outcome.codes == ["UNAUTHENTICATED"]
    assert "Authorization: Bearer" in outcome.messages[0]


# -- limits ----------------------------------------------------------------------------------------


def test_depth_alias_and_token_limits(mirror: MemoryService) -> None:
    ctx = context(mirror, "limits")
    nested = "links { sourceMemory { " * 5 + "id" + " } }" * 5
    outcome = run(
        ctx, "query($id: UUID!) { memory(id: $id) { " + nested + " } }", {"id": str(uuid4())}
    )
    assert outcome.codes == ["LIMIT_EXCEEDED"]
    assert "deeper than 10 levels" in outcome.messages[0]

    outcome = run(ctx, "{ " + " ".join(f"a{i}: viewer {{ namespace }}" for i in range(16)) + " }")
    assert outcome.codes == ["LIMIT_EXCEEDED"]
    assert "16 aliases; the limit is 15" in outcome.messages[0]
    fifteen = " ".join(f"a{i}: viewer {{ namespace }}" for i in range(15))
    assert run(ctx, "{ " + fifteen + " }").ok()

    tokens = "{ " + " ".join("viewer { namespace }" for _ in range(600)) + " }"
    outcome = run(ctx, tokens)
    assert outcome.codes == ["LIMIT_EXCEEDED"]
    assert "more than 2000 tokens" in outcome.messages[0]
    assert "variables" in outcome.messages[0]


def test_limits_follow_the_settings(tmp_path: Path, mirror: MemoryService) -> None:
    settings = make_settings(tmp_path, max_query_depth=2, max_query_tokens=50, max_aliases=1)
    limits = Limits.from_settings(settings)
    assert (limits.max_depth, limits.max_tokens, limits.max_aliases) == (2, 50, 1)
    tight = make_schema(limits)
    ctx = context(mirror, "limits")
    outcome = run(ctx, "{ memories { nodes { links { source } } } }", on_schema=tight)
    assert outcome.codes == ["LIMIT_EXCEEDED"]
    outcome = run(ctx, "{ a: viewer { namespace } b: viewer { namespace } }", on_schema=tight)
    assert outcome.codes == ["LIMIT_EXCEEDED"]


def test_default_limits_are_the_settings_defaults_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GRAPHSVC_MAX_ALIASES", "3")
    assert Limits.defaults().max_aliases == Settings.model_fields["max_aliases"].default == 15
    assert Limits.from_settings(Settings()).max_aliases == 3


def test_introspection_passes_the_limits(mirror: MemoryService) -> None:
    data = run(context(mirror, "limits"), get_introspection_query(descriptions=True)).ok()
    names = {t["name"] for t in data["__schema"]["types"]}
    assert {"ContextBundle", "Memory", "MemoryConnection", "UUID", "DateTime"} <= names


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ("{ bundle(query: ", "Syntax Error"),
        ("{ nosuchfield }", "Cannot query field 'nosuchfield'"),
        ("{ bundle { usedTokens } }", "Query.bundle(query:)"),
        ('{ memory(id: "x") { id } }', "UUID"),
        ("query($q: String!) { bundle(query: $q) { usedTokens } }", "Variable '$q'"),
    ],
)
def test_malformed_graphql_is_bad_input(
    mirror: MemoryService, document: str, fragment: str
) -> None:
    outcome = run(context(mirror, "malformed"), document)
    assert outcome.codes and set(outcome.codes) == {"BAD_INPUT"}, outcome.errors
    assert fragment in outcome.messages[0]


# -- unexpected errors -------------------------------------------------------------------------


def test_unexpected_errors_are_masked_and_logged(
    mirror: MemoryService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret detail from deep inside")

    monkeypatch.setattr(mirror, "bundle", broken)
    ctx = context(mirror, "masked", request_id="req-1234")
    with caplog.at_level(logging.ERROR, logger="graphsvc.api"):
        outcome = run(ctx, '{ bundle(query: "kettle") { usedTokens } }')
    assert outcome.codes == ["INTERNAL"]
    assert outcome.messages == ["Unexpected error; request id req-1234"]
    assert outcome.errors[0]["extensions"]["requestId"] == "req-1234"
    assert "secret" not in str(outcome.errors)
    records = [r for r in caplog.records if r.name == "graphsvc.api"]
    assert len(records) == 1
    assert records[0].fields["request_id"] == "req-1234"  # type: ignore[attr-defined]
    assert records[0].exc_info is not None
    assert "secret detail" in str(records[0].exc_info[1])


@pytest.mark.parametrize(
    ("error", "code", "masked"),
    [
        (StoreUnavailableError("Neo4j is down: retry later"), "UNAVAILABLE", False),
        (StoreCorruptError("snapshot checksum mismatch in /var/lib/x"), "INTERNAL", True),
    ],
)
def test_store_errors(
    mirror: MemoryService,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    code: str,
    masked: bool,
) -> None:
    def failing(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(mirror, "get_memory", failing)
    outcome = run(context(mirror, "store-errors"), MEMORY, {"id": str(uuid4())})
    assert outcome.codes == [code]
    assert (outcome.messages[0].startswith("Unexpected error")) is masked
    if not masked:
        assert outcome.messages == [str(error)]


def test_store_calls_run_in_worker_threads(
    mirror: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[threading.Thread] = []
    original = mirror.bundle

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(mirror, "bundle", recording)
    run(context(mirror, "threads"), '{ bundle(query: "kettle") { usedTokens } }').ok()
    assert threads
    assert threads[0] is not threading.main_thread()


def test_memory_ids_of_the_page_helper_round_trip() -> None:
    memory = Memory(
        id=uuid4(),
        namespace="ns",
        text="t",
        kind="fact",
        tokens=1,
        recorded_at=datetime(2025, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    )
    assert decode_cursor(encode_cursor(memory)) == (memory.recorded_at, str(memory.id))


def test_the_export_command_writes_and_checks(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from graphsvc.api.export import export_schema

    target = tmp_path / "schema.graphql"
    runner = CliRunner()
    assert runner.invoke(export_schema, [str(target)]).exit_code == 0
    assert target.read_text(encoding="utf-8") == schema.as_str() + "\n"
    assert runner.invoke(export_schema, [str(target), "--check"]).exit_code == 0
    target.write_text("type Query { stale: String }\n", encoding="utf-8")
    stale = runner.invoke(export_schema, [str(target), "--check"])
    assert stale.exit_code == 1
    assert "python -m graphsvc.api.export" in stale.output
    printed = runner.invoke(export_schema, ["-"])
    assert printed.output == schema.as_str() + "\n"
