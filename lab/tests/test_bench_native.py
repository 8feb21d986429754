"""The baseline of ``graphsvc bench`` (graphsvc_lab/native.py), the store's own lexical top 10
without graphsvc's scoring: a plain BM25 over any store's postings, read through the store's domain
interface, and on Neo4j the full-text index's own top k, run through the lab's own driver."""

from __future__ import annotations

import math
import os
from collections import Counter

import pytest

from graphsvc.model import Memory, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.text import query_terms
from graphsvc_lab.native import native_top_k, plain_bm25_top_k

TEXTS = [
    "the kettle broke in the kitchen",
    "kettle kettle kettle descaled",
    "the boiler broke",
    "a long note about the garden, the fence, the shed and also the kettle once",
    "nothing relevant here at all",
]


def remember(service: MemoryService, ns: str) -> list[Memory]:
    memories = service.remember_many(ns, [MemoryInput(text=t) for t in TEXTS])
    service.remember(f"{ns}x", MemoryInput(text="kettle in another namespace"))
    return memories


def test_plain_bm25_is_bm25(service: MemoryService, store: Store, ns: str) -> None:
    memories = remember(service, ns)
    terms = query_terms("kettle broke")
    n = len(memories)
    avg = sum(len(m.terms) for m in memories) / n

    def bm25(memory: Memory) -> float:
        counts = Counter(memory.terms)
        score = 0.0
        for term in terms:
            df = sum(term in m.terms for m in memories)
            tf = counts[term]
            if tf:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                norm = 1.2 * (1 - 0.75 + 0.75 * len(memory.terms) / avg)
                score += idf * tf * 2.2 / (tf + norm)
        return score

    ranked = sorted((m for m in memories if bm25(m) > 0), key=lambda m: (-bm25(m), str(m.id)))
    assert plain_bm25_top_k(store, ns, terms, 10) == [m.id for m in ranked]
    assert plain_bm25_top_k(store, ns, [*terms, *terms], 2) == [m.id for m in ranked[:2]]
    assert plain_bm25_top_k(store, ns, ["zebra"], 3) == []
    assert plain_bm25_top_k(store, ns, terms, 0) == []
    assert plain_bm25_top_k(store, f"{ns}empty", terms, 3) == []


def test_the_store_own_top_k_finds_what_plain_bm25_finds(
    service: MemoryService, store: Store, ns: str
) -> None:
    """On the embedded store it is the plain BM25; on Neo4j the full-text index's top k (Lucene
    encodes lengths lossily, so only the set is compared)."""
    if store.kind == "neo4j" and not os.environ.get("GRAPHSVC_NEO4J_URI"):
        pytest.skip("the lab's driver reads GRAPHSVC_NEO4J_URI: export it to run this on Neo4j")
    memories = remember(service, ns)
    terms = query_terms("kettle broke")
    with native_top_k(store, Settings()) as top_k:
        found = top_k(ns, terms, 10)
        assert top_k(ns, ["zebra"], 3) == []
        assert top_k(ns, terms, 0) == []
        assert len(top_k(ns, terms, 2)) == 2
    plain = plain_bm25_top_k(store, ns, terms, 10)
    assert sorted(found, key=str) == sorted(plain, key=str)
    assert set(found) <= {m.id for m in memories}
    if store.kind != "neo4j":
        assert found == plain
