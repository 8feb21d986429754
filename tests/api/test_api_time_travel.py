"""Time-travel reads through GraphQL and MCP: validity on writes, asOf on bundle, reconstruct
and promptBundle, a memory's history (issue 32). One body over both stores."""

from __future__ import annotations

from typing import Any

from graphsvc.service import MemoryService
from tests.api_support import context, run

REMEMBER_MANY = """
mutation($m: [MemoryInput!]!) { rememberMany(inputs: $m) { id validFrom validUntil } }
"""
LINK = """
mutation($s: UUID!, $t: UUID!) { link(input: {source: $s, target: $t, kind: SUPERSEDES}) { kind } }
"""
BUNDLE = """
query($q: String!, $at: DateTime, $mode: AsOfMode) {
  bundle(query: $q, asOf: $at, asOfMode: $mode) { capsules { memoryId } asOf { at mode } }
}
"""
RECONSTRUCT = """
query($c: String!, $at: DateTime, $mode: AsOfMode) {
  reconstruct(cue: $c, asOf: $at, asOfMode: $mode) { sourceIds asOf { at mode } }
}
"""
STORE_BELIEF = """
mutation($c: String!, $at: DateTime) {
  reconstruct(cue: $c, asOf: $at) { sourceIds beliefId asOf { mode } }
}
"""
HISTORY = """
query($id: UUID!) {
  memory(id: $id) { history { memory { id text } validFrom validUntil supersededBy } }
}
"""
PROMPT = """
query($input: PromptInput!) {
  promptBundle(input: $input) { memory { capsules { memoryId } asOf { at mode } } }
}
"""

LEADS: list[dict[str, Any]] = [
    {"text": "The team lead is Alice", "validFrom": "2024-01-01T00:00:00Z"},
    {"text": "The team lead is Bob", "validFrom": "2024-06-01T00:00:00+02:00"},
]


def write_leads(service: MemoryService, ns: str) -> tuple[str, str]:
    ctx = context(service, ns)
    alice, bob = run(ctx, REMEMBER_MANY, {"m": LEADS}).ok()["rememberMany"]
    run(ctx, LINK, {"s": bob["id"], "t": alice["id"]}).ok()
    assert bob["validFrom"] == "2024-05-31T22:00:00+00:00"
    return alice["id"], bob["id"]


def test_bundle_and_reconstruct_answer_as_of_and_echo_the_view(
    service: MemoryService, ns: str
) -> None:
    alice, bob = write_leads(service, ns)
    ctx = context(service, ns, role="read")
    then = run(ctx, BUNDLE, {"q": "team lead", "at": "2024-03-11T00:00:00Z", "mode": "VALID"})
    data = then.ok()["bundle"]
    assert [c["memoryId"] for c in data["capsules"]] == [alice]
    assert data["asOf"] == {"at": "2024-03-11T00:00:00+00:00", "mode": "VALID"}
    at_switch = run(ctx, BUNDLE, {"q": "team lead", "at": "2024-05-31T22:00:00Z"}).ok()
    assert [c["memoryId"] for c in at_switch["bundle"]["capsules"]] == [bob]
    now = run(ctx, BUNDLE, {"q": "team lead"}).ok()["bundle"]
    assert now["asOf"] is None and {c["memoryId"] for c in now["capsules"]} == {alice, bob}
    belief = run(ctx, RECONSTRUCT, {"c": "team lead", "at": "2024-03-11T00:00:00Z"}).ok()
    assert belief["reconstruct"]["sourceIds"] == [alice]
    assert belief["reconstruct"]["asOf"]["mode"] == "VALID"
    stored = run(context(service, ns), STORE_BELIEF, {"c": "lead", "at": "2024-07-01T00:00:00Z"})
    assert stored.ok()["reconstruct"]["sourceIds"] == [bob]
    before = run(
        ctx, BUNDLE, {"q": "team lead", "at": "2020-01-01T00:00:00Z", "mode": "KNOWN"}
    ).ok()
    assert before["bundle"]["capsules"] == [] and before["bundle"]["asOf"]["mode"] == "KNOWN"


def test_history_lists_the_chain_oldest_first_from_either_end(
    service: MemoryService, ns: str
) -> None:
    alice, bob = write_leads(service, ns)
    ctx = context(service, ns, role="read")
    for start in (alice, bob):
        chain = run(ctx, HISTORY, {"id": start}).ok()["memory"]["history"]
        assert [h["memory"]["id"] for h in chain] == [alice, bob]
        assert chain[0]["validUntil"] == "2024-05-31T22:00:00+00:00"
        assert chain[0]["supersededBy"] == [bob]
        assert chain[1]["validUntil"] is None and chain[1]["supersededBy"] == []


def test_bad_intervals_and_naive_instants_are_bad_input_and_write_nothing(
    service: MemoryService, ns: str
) -> None:
    ctx = context(service, ns)
    backwards = [
        {"text": "Fine"},
        {
            "text": "Backwards",
            "validFrom": "2024-06-01T00:00:00Z",
            "validUntil": "2024-01-01T00:00:00Z",
        },
    ]
    refused = run(ctx, REMEMBER_MANY, {"m": backwards})
    assert refused.codes == ["BAD_INPUT"] and "validUntil" in refused.messages[0]
    # Fields are named as GraphQL names them, and graphsvc's own message has no pydantic prefix.
    assert refused.messages[0].startswith("inputs.1: validUntil (2024-01-01T00:00:00+00:00)")
    assert "Value error" not in refused.messages[0]
    naive = run(
        ctx,
        REMEMBER_MANY,
        {"m": [{"text": "Fine"}, {"text": "No zone", "validFrom": "2024-06-01T00:00:00"}]},
    )
    assert naive.codes == ["BAD_INPUT"]
    assert naive.messages[0].startswith("inputs.1.validFrom: has no time zone")
    garbled = run(ctx, REMEMBER_MANY, {"m": [{"text": "x", "validUntil": "June-ish"}]})
    assert garbled.errors and "validUntil" in garbled.messages[0]
    assert service.stats(ns).memories == 0
    asked = run(ctx, BUNDLE, {"q": "fine", "at": "2024-06-01T00:00:00"})
    assert asked.codes == ["BAD_INPUT"] and "time zone" in asked.messages[0]


def test_prompt_bundle_recalls_as_of(service: MemoryService, ns: str) -> None:
    alice, _ = write_leads(service, ns)
    turn = {
        "userTurn": "Who is the team lead?",
        "memoryAsOf": "2024-03-11T00:00:00Z",
        "memoryAsOfMode": "VALID",
    }
    data = run(context(service, ns), PROMPT, {"input": turn}).ok()["promptBundle"]["memory"]
    assert [c["memoryId"] for c in data["capsules"]] == [alice]
    assert data["asOf"] == {"at": "2024-03-11T00:00:00+00:00", "mode": "VALID"}


LIST = """
query($at: DateTime) { memories(knownAsOf: $at) { nodes { id recordedAt } } }
"""


def test_memories_known_as_of_lists_what_was_recorded_by_then(
    service: MemoryService, ns: str
) -> None:
    alice, bob = write_leads(service, ns)  # one write: Alice recorded a microsecond before Bob
    ctx = context(service, ns, role="read")
    now = run(ctx, LIST, {}).ok()["memories"]["nodes"]
    assert [n["id"] for n in now] == [bob, alice]
    then = run(ctx, LIST, {"at": now[1]["recordedAt"]}).ok()["memories"]["nodes"]
    assert [n["id"] for n in then] == [alice]
    naive = run(ctx, LIST, {"at": "2024-06-01T00:00:00"})
    assert naive.codes == ["BAD_INPUT"] and "knownAsOf" in naive.messages[0]
