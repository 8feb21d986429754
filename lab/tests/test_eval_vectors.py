"""The evaluation's vector cache and dense-only baseline (lab/graphsvc_lab/eval/vectors.py).

A deterministic fake embedder stands in for the model: these tests check the cache's arithmetic
and files and the baseline's ranking, not the model (tests/unit/test_embed.py does that).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from graphsvc.embedding.codes import cosines, quantize
from graphsvc.errors import BadInputError
from graphsvc_lab.eval.vectors import CachedEmbedder, DenseIndex, cache_file, text_key

DIMENSION = 16


class FakeEmbedder:
    """Hashed bag of words, L2-normalised: same text, same bits; counts its calls."""

    def __init__(self, model_id: str = "fake@1") -> None:
        self._model_id = model_id
        self.calls: list[list[str]] = []

    @property
    def dimension(self) -> int:
        return DIMENSION

    @property
    def model_id(self) -> str:
        return self._model_id

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.sha256(word.encode()).digest()
                out[row, digest[0] % DIMENSION] += 1.0 + digest[1] / 255.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out


TEXTS = ["the cat sat on the mat", "a dog in the fog", "", "the cat sat on the mat", "zebra"]


def test_cache_returns_the_embedders_bits_and_embeds_each_text_once(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    cached = CachedEmbedder(fake, tmp_path / "cache")
    first = cached.embed(TEXTS)
    assert first.dtype == np.float32
    assert first.shape == (len(TEXTS), DIMENSION)
    assert np.array_equal(first, fake.embed(TEXTS))
    # One call for the four distinct texts (the repeat is embedded once).
    assert fake.calls[0] == ["the cat sat on the mat", "a dog in the fog", "", "zebra"]
    assert (cached.hits, cached.misses) == (1, 4)
    again = cached.embed(list(reversed(TEXTS)))
    assert np.array_equal(again, first[::-1])
    assert len(fake.calls) == 2  # the second embed call above was ours, not the cache's
    assert (cached.hits, cached.misses) == (6, 4)


def test_cache_survives_a_new_process_and_keys_by_model(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    CachedEmbedder(FakeEmbedder(), folder).embed(TEXTS)
    fresh = FakeEmbedder()
    reread = CachedEmbedder(fresh, folder)
    assert reread.missing(TEXTS) == 0
    assert np.array_equal(reread.embed(TEXTS), FakeEmbedder().embed(TEXTS))
    assert fresh.calls == []
    other = FakeEmbedder("fake@2")
    assert CachedEmbedder(other, folder).missing(TEXTS) == 4
    assert cache_file(folder, "fake@1") != cache_file(folder, "fake@2")
    assert text_key("x") == hashlib.sha256(b"x").digest()


def test_a_torn_last_record_is_cut_and_the_rest_kept(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cached = CachedEmbedder(FakeEmbedder(), folder)
    cached.embed(["one", "two"])
    path = cached.path
    with path.open("ab") as handle:
        handle.write(b"\x01" * 40)  # an interrupted append
    fake = FakeEmbedder()
    reread = CachedEmbedder(fake, folder)
    assert reread.missing(["one", "two", "three"]) == 1
    reread.embed(["three"])
    assert fake.calls == [["three"]]
    assert CachedEmbedder(FakeEmbedder(), folder).missing(["one", "two", "three"]) == 0


def test_cache_refuses_one_string(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="wrap it in"):
        CachedEmbedder(FakeEmbedder(), tmp_path).embed("one text")


def test_dense_baseline_ranks_by_exact_code_cosine_then_position() -> None:
    fake = FakeEmbedder()
    texts = ["red apple pie", "green apple", "red apple pie", "blue whale", "apple"]
    index = DenseIndex.build(fake, texts)
    hits = index.search("red apple pie", 3)
    # Positions 0 and 2 hold the same text: equal cosines, so the earlier position first.
    assert [p for p, _ in hits][:2] == [0, 2]
    codes = quantize(fake.embed(texts))
    query = quantize(fake.embed(["red apple pie"]))[0]
    expected = cosines(query, codes)
    assert [s for _, s in hits] == sorted(expected.tolist(), reverse=True)[:3]
    assert [s for _, s in hits] == [expected[p] for p, _ in hits]
    assert len(index.search("red apple pie", 50)) == len(texts)  # every memory is a candidate
    assert DenseIndex.build(fake, []).search("anything", 5) == []
