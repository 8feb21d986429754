"""Parity: real public data loaded into the mirror and into Neo4j gives byte-identical bundles and
beliefs (many queries, several budgets, with and without abstention)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lab_support import eval_data

from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import OnnxEmbedder, Vectors
from graphsvc.embedding.registry import MINILM_INT8, ModelUnavailableError
from graphsvc.ingest import ingest, parse_jsonl
from graphsvc.service import MemoryService
from graphsvc_lab.datasets import esc_rows, load_esc, load_locomo, locomo_rows
from tests.parity import both_stores, canonical

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

QUESTION_STRIDE = 4  # every 4th LoCoMo question: a few hundred queries
BUDGETS = (150, 1_000)
MIN_SCORES = (0.0, 0.45)


def locomo_path() -> Path:
    return eval_data("locomo", "locomo_dev.json")


def esc_path() -> Path:
    return eval_data("esc", "eventstoryline_v1.5_normalized.jsonl")


def lines(rows: Iterator[dict[str, Any]]) -> list[str]:
    return [json.dumps(r) for r in rows]


@pytest.fixture(scope="module")
def loaded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[MemoryService, MemoryService, list[str], str]]:
    locomo, esc = locomo_path(), esc_path()
    run = uuid.uuid4().hex[:8]
    namespaces = []
    with both_stores(tmp_path_factory.mktemp("mirror")) as services:
        for index, conversation in enumerate(load_locomo(locomo)):
            ns = f"parity{run}locomo{index}"
            plan = parse_jsonl(lines(locomo_rows(conversation, str(index), run)))
            for service in services:
                ingest(service, ns, plan, progress=False)
            namespaces.append(ns)
        esc_ns = f"parity{run}esc"
        esc_plan = parse_jsonl(
            [line for doc in load_esc(esc) for line in lines(esc_rows(doc, run))], "esc.jsonl"
        )
        for service in services:
            ingest(service, esc_ns, esc_plan, progress=False)
        yield services[0], services[1], namespaces, esc_ns


def test_term_statistics_agree(loaded: tuple[MemoryService, MemoryService, list[str], str]) -> None:
    mirror, neo, namespaces, esc_ns = loaded
    for ns in [*namespaces, esc_ns]:
        assert mirror.stats(ns) == neo.stats(ns)
        terms = ["caroline", "melani", "support", "group", "paint", "kill", "earthquak", "zzz"]
        assert mirror.store.term_stats(ns, terms) == neo.store.term_stats(ns, terms)


def test_locomo_bundles_are_byte_identical(
    loaded: tuple[MemoryService, MemoryService, list[str], str],
) -> None:
    mirror, neo, namespaces, _ = loaded
    compared = 0
    for index, conversation in enumerate(load_locomo(locomo_path())):
        ns = namespaces[index]
        for qa in conversation["qa"][::QUESTION_STRIDE]:
            for budget in BUDGETS:
                for min_score in MIN_SCORES:
                    a = mirror.bundle(ns, qa["question"], budget_tokens=budget, min_score=min_score)
                    b = neo.bundle(ns, qa["question"], budget_tokens=budget, min_score=min_score)
                    assert canonical(a.to_json_dict()) == canonical(b.to_json_dict()), qa
                    compared += 1
    assert compared > 400


def test_locomo_and_esc_beliefs_are_byte_identical(
    loaded: tuple[MemoryService, MemoryService, list[str], str],
) -> None:
    mirror, neo, namespaces, esc_ns = loaded
    cues = [qa["question"] for qa in load_locomo(locomo_path())[0]["qa"][::10]]
    for cue in cues:
        a = mirror.reconstruct(namespaces[0], cue)
        b = neo.reconstruct(namespaces[0], cue)
        assert canonical(a.to_json_dict()) == canonical(b.to_json_dict()), cue
    documents = load_esc(esc_path())[::5]
    walked = 0
    for doc in documents:
        for link in doc["causal_links"][:2]:
            effect = doc["events"].get(link["effect"])
            if effect is None:
                continue
            cue = effect["sentence"]
            for depth in (1, 2, 3):
                a = mirror.reconstruct(esc_ns, cue, k=3, depth=depth)
                b = neo.reconstruct(esc_ns, cue, k=3, depth=depth)
                assert canonical(a.to_json_dict()) == canonical(b.to_json_dict()), cue
                walked += len(a.linked_context_ids)
    assert walked > 50, "the walks reached too little to compare"


def test_export_is_identical(loaded: tuple[MemoryService, MemoryService, list[str], str]) -> None:
    mirror, neo, _, esc_ns = loaded
    assert list(mirror.store.export(esc_ns)) == list(neo.store.export(esc_ns))


class RepeatFree:
    """The real encoder, asked once per distinct text (both stores get the same texts)."""

    def __init__(self, encoder: OnnxEmbedder) -> None:
        self.encoder = encoder
        self.seen: dict[str, Vectors] = {}

    @property
    def dimension(self) -> int:
        return self.encoder.dimension

    @property
    def model_id(self) -> str:
        return self.encoder.model_id

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        keys = [("q:" if query else "p:") + t for t in texts]
        todo = [k for k in dict.fromkeys(keys) if k not in self.seen]
        if todo:
            made = self.encoder.embed([k[2:] for k in todo], query=query)
            self.seen.update(zip(todo, made, strict=True))
        return np.stack([self.seen[k] for k in keys])


HYBRID_CONVERSATIONS = 2


@pytest.fixture(scope="module")
def hybrid_loaded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[MemoryService, MemoryService, list[str]]]:
    locomo = locomo_path()
    try:
        encoder = OnnxEmbedder(MINILM_INT8).load()
    except ModelUnavailableError as exc:  # pragma: no cover - the weights are a CI install step
        pytest.fail(f"the embedding model is not installed ({exc}): bash scripts/install_model.sh")
    dense = DenseRecall(RepeatFree(encoder))
    run = uuid.uuid4().hex[:8]
    namespaces = []
    with both_stores(tmp_path_factory.mktemp("mirror"), dense=dense) as services:
        for index, conversation in enumerate(load_locomo(locomo)[:HYBRID_CONVERSATIONS]):
            ns = f"hybrid{run}locomo{index}"
            plan = parse_jsonl(lines(locomo_rows(conversation, str(index), run)))
            for service in services:
                ingest(service, ns, plan, progress=False)
                service.embed(ns)  # the vector queue drained: parity holds once it is empty
            namespaces.append(ns)
        yield services[0], services[1], namespaces


def test_hybrid_bundles_and_beliefs_are_byte_identical(
    hybrid_loaded: tuple[MemoryService, MemoryService, list[str]],
) -> None:
    mirror, neo, namespaces = hybrid_loaded
    compared = 0
    found_by_meaning = 0
    for index, conversation in enumerate(load_locomo(locomo_path())[:HYBRID_CONVERSATIONS]):
        ns = namespaces[index]
        assert mirror.stats(ns) == neo.stats(ns)
        assert mirror.stats(ns).retrieval == "hybrid"
        for qa in conversation["qa"][::QUESTION_STRIDE]:
            for budget in BUDGETS:
                for min_score in MIN_SCORES:
                    a = mirror.bundle(ns, qa["question"], budget_tokens=budget, min_score=min_score)
                    b = neo.bundle(ns, qa["question"], budget_tokens=budget, min_score=min_score)
                    assert canonical(a.to_json_dict()) == canonical(b.to_json_dict()), qa
                    assert a.retrieval == "hybrid"
                    compared += 1
                    found_by_meaning += sum(not c.matched_terms for c in a.capsules)
            a_belief = mirror.reconstruct(ns, qa["question"])
            b_belief = neo.reconstruct(ns, qa["question"])
            assert canonical(a_belief.to_json_dict()) == canonical(b_belief.to_json_dict()), qa
    assert compared > 150
    assert found_by_meaning > 0, "no capsule came from meaning alone: hybrid recall did nothing"
