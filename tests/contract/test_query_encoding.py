"""A request encodes its query once: a bundle and a reconstruct on either store, with the real
encoder (MiniLM int8), counted where the model runs. The query's codes feed both the search by
meaning and the exact cosines of the ranked memories; on a store whose reads wait on a server the
search starts on a thread of its own while the lexical ranking runs, so the two must share one
encoding rather than each ask for it (with the query cache off nothing else would hide a second
one)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import OnnxEmbedder, Vectors
from graphsvc.embedding.registry import MINILM_INT8, ModelUnavailableError
from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from tests.helpers import fixed_clock, make_settings

NOTES = [
    "My puppy keeps chewing the sofa cushions whenever I leave the flat.",
    "The quarterly tax return is due at the end of April.",
    "We planted tomatoes and basil in the back garden on Sunday.",
    "The train to Lyon was cancelled because of the strike.",
]


class CountingEncoder(OnnxEmbedder):
    """The packaged encoder, unchanged, noting each query it tokenises and each query row the
    model encodes (a memory's rows are not counted)."""

    def __init__(self) -> None:
        super().__init__(MINILM_INT8)
        self.tokenised: list[str] = []
        self.encoded = 0
        self._queries: set[tuple[int, ...]] = set()

    def tokenize(self, texts: Sequence[str], *, query: bool = False) -> list[list[int]]:
        ids = super().tokenize(texts, query=query)
        if query:
            self.tokenised += texts
            self._queries.update(tuple(row) for row in ids)
        return ids

    def embed_tokens(self, ids: Sequence[Sequence[int]], *, workers: int | None = None) -> Vectors:
        self.encoded += sum(tuple(row) in self._queries for row in ids)
        return super().embed_tokens(ids, workers=workers)


@pytest.fixture
def encoder() -> CountingEncoder:
    counting = CountingEncoder()
    try:
        counting.load()
    except ModelUnavailableError as exc:  # pragma: no cover - the weights are a CI install step
        pytest.fail(f"the embedding model is not installed ({exc}): bash scripts/install_model.sh")
    return counting


@pytest.mark.parametrize("cache", [1_024, 0])
def test_a_bundle_and_a_reconstruct_encode_their_query_once(
    store: Store, tmp_path: Path, encoder: CountingEncoder, ns: str, cache: int
) -> None:
    settings = make_settings(tmp_path, embed_writes="inline")
    dense = DenseRecall(encoder, cache_size=cache)
    service = MemoryService(store, settings, clock=fixed_clock(), dense=dense)
    try:
        service.remember_many(ns, [MemoryInput(text=text) for text in NOTES])
        bundle = service.bundle(ns, "dog destroying furniture", min_score=0.0)
        assert bundle.retrieval == "hybrid" and "puppy" in bundle.capsules[0].text
        assert (encoder.encoded, encoder.tokenised) == (1, ["dog destroying furniture"])
        belief = service.reconstruct(ns, "vegetables in the garden", k=2)
        assert belief.memories
        assert encoder.encoded == 2
        assert encoder.tokenised == ["dog destroying furniture", "vegetables in the garden"]
        # Asked again: from the cache when there is one, else encoded once more.
        service.bundle(ns, "dog destroying furniture", min_score=0.0)
        assert encoder.encoded == (2 if cache else 3)
    finally:
        service.close()
