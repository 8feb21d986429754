"""Answerability through the service, one body over both stores, on the shipped demo incident
(graphsvc/data/demo.jsonl) with the default encoder and lexically.

``topScore`` is the probability that memory holds the answer (recall.answerability): a question
whose rare words no memory holds is skipped although common words of it match well, and a
question that shares no content word with the memory that answers it, found by meaning alone,
is answered at the default threshold.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphsvc.cli.commands import demo_lines
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import OnnxEmbedder
from graphsvc.ingest import ingest, parse_jsonl
from graphsvc.recall import STAGES
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from graphsvc.text import query_terms
from tests.helpers import fixed_clock, installed_model, make_settings

IGUANA = "What did the payments team name their pet iguana on Mars?"
# "Customers started seeing payment timeouts on the checkout page." in other words.
PARAPHRASE = "Did shoppers get errors while paying?"
ANSWER = "Customers started seeing payment timeouts on the checkout page."


@pytest.fixture(scope="session")
def default_encoder() -> OnnxEmbedder:
    return installed_model("the answerability tests on the demo")


def load_demo(service: MemoryService, ns: str) -> None:
    ingest(service, ns, parse_jsonl(demo_lines(), name="demo"), name="demo", progress=False)


@pytest.fixture
def demo(store: Store, tmp_path: Path, default_encoder: OnnxEmbedder, ns: str) -> MemoryService:
    hybrid = MemoryService(
        store, make_settings(tmp_path), clock=fixed_clock(), dense=DenseRecall(default_encoder)
    )
    load_demo(hybrid, ns)
    hybrid.embed(ns)  # the vector queue drained, as `graphsvc ingest` does with no server running
    assert hybrid.bundle(ns, ANSWER).pending_vectors == 0
    return hybrid


def test_the_paraphrase_shares_no_content_word_with_its_memory() -> None:
    assert not set(query_terms(PARAPHRASE)) & set(query_terms(ANSWER))


def test_a_question_about_what_no_memory_holds_is_skipped(demo: MemoryService, ns: str) -> None:
    result = demo.bundle(ns, IGUANA)
    # "payments team" matches three memories well; iguana and Mars are in none.
    assert result.answer_evidence.bm25 > 0.3
    assert {"iguana", "Mars"} <= set(result.uncovered_words)
    assert result.top_score < STAGES["default"].min_score
    assert result.skipped and result.capsules == ()


def test_a_paraphrase_found_by_meaning_alone_is_answered(demo: MemoryService, ns: str) -> None:
    result = demo.bundle(ns, PARAPHRASE)
    assert result.retrieval == "hybrid"
    assert result.answer_evidence.coverage == 0.0  # no word of it in memory
    assert result.top_score >= STAGES["default"].min_score
    assert not result.skipped
    assert result.capsules[0].text == ANSWER


def test_the_same_demo_read_lexically_skips_both(store: Store, tmp_path: Path, ns: str) -> None:
    lexical = MemoryService(store, make_settings(tmp_path, embed="off"), clock=fixed_clock())
    load_demo(lexical, ns)
    iguana = lexical.bundle(ns, IGUANA)
    assert iguana.retrieval == "lexical" and iguana.skipped
    assert lexical.bundle(ns, PARAPHRASE).skipped  # nothing to find without meaning
    answered = lexical.bundle(ns, "Who owns the search service?")
    assert not answered.skipped and "discovery team" in answered.capsules[0].text
