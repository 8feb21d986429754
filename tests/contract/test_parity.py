"""Parity on a small dataset of the service's own: the shipped demo (an incident, with causal
links) and a three-session conversation (``tests/data/conversation.jsonl``: speaker tags,
``PRECEDES`` turn links, a few ``CAUSES``) loaded into the embedded store and into Neo4j give
byte-identical bundles, beliefs and exports. The same comparison over the public datasets (LoCoMo,
EventStoryLine) is the lab's (``lab/tests/test_parity.py``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from graphsvc.ingest import ingest, parse_jsonl
from graphsvc.service import MemoryService
from tests.parity import both_stores, canonical

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

CONVERSATION = Path(__file__).resolve().parents[1] / "data" / "conversation.jsonl"
BUDGETS = (60, 150, 1_000)
MIN_SCORES = (0.0, 0.45)
# Cues a reader of the conversation and the incident would ask, a few with no answer in them.
CUES = (
    "Why did Mira's bowl crack in the kiln?",
    "What did the physiotherapist say about Tomas's knee?",
    "Which race is Tomas running in October?",
    "What is the name of Tomas's dog?",
    "When did the pottery class move to Tuesdays?",
    "Who brings Pilot to the finish line?",
    "Why did checkout fail after deploy 4812?",
    "What was the connection pool changed to?",
    "volcano eruption in Iceland",
)

Loaded = tuple[MemoryService, MemoryService, dict[str, list[str]]]


def texts(lines: list[str]) -> list[str]:
    return [row["text"] for row in map(json.loads, lines) if row["type"] == "memory"]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loaded]:
    demo = resources.files("graphsvc").joinpath("data/demo.jsonl").read_text(encoding="utf-8")
    files = {
        "demo": demo.splitlines(),
        "conversation": CONVERSATION.read_text(encoding="utf-8").splitlines(),
    }
    run = uuid.uuid4().hex[:8]
    namespaces: dict[str, list[str]] = {}
    with both_stores(tmp_path_factory.mktemp("mirror")) as services:
        for name, lines in files.items():
            ns = f"parity{run}{name}"
            plan = parse_jsonl(lines, f"{name}.jsonl")
            for service in services:
                ingest(service, ns, plan, progress=False)
            namespaces[ns] = texts(lines)
        yield services[0], services[1], namespaces


def test_term_statistics_agree(loaded: Loaded) -> None:
    mirror, neo, namespaces = loaded
    terms = ["mira", "kiln", "crack", "knee", "checkout", "deploy", "pool", "zzz"]
    for ns in namespaces:
        assert mirror.stats(ns) == neo.stats(ns)
        assert mirror.store.term_stats(ns, terms) == neo.store.term_stats(ns, terms)


def test_bundles_are_byte_identical(loaded: Loaded) -> None:
    mirror, neo, namespaces = loaded
    compared = 0
    for ns, memories in namespaces.items():
        # Every memory's own words as a cue too: each one a top hit somewhere, on both stores.
        for cue in [*CUES, *memories]:
            for budget in BUDGETS:
                for min_score in MIN_SCORES:
                    a = mirror.bundle(ns, cue, budget_tokens=budget, min_score=min_score)
                    b = neo.bundle(ns, cue, budget_tokens=budget, min_score=min_score)
                    assert canonical(a.to_json_dict()) == canonical(b.to_json_dict()), (ns, cue)
                    compared += bool(a.capsules)
    assert compared > 250, "too few bundles had capsules to compare"


def test_beliefs_are_byte_identical(loaded: Loaded) -> None:
    mirror, neo, namespaces = loaded
    walked = 0
    for ns, memories in namespaces.items():
        for cue in [*CUES, *memories]:
            for depth in (1, 2, 3):
                a = mirror.reconstruct(ns, cue, k=3, depth=depth)
                b = neo.reconstruct(ns, cue, k=3, depth=depth)
                assert canonical(a.to_json_dict()) == canonical(b.to_json_dict()), (ns, cue)
                walked += len(a.linked_context_ids)
    assert walked > 500, "the walks reached too little to compare"


def test_exports_are_identical(loaded: Loaded) -> None:
    mirror, neo, namespaces = loaded
    for ns in namespaces:
        exported = list(mirror.store.export(ns))
        assert exported == list(neo.store.export(ns))
        assert exported
