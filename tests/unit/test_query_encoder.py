"""Queries are encoded on one thread, concurrent ones in one batch: what waits while the encoder is
busy goes into its next call, a repeated text is encoded once, failures reach every caller, and
the codes are the bits a direct call gives (checked with the real model when it is installed).
The pipeline's :class:`QueryEncoder` answers repeated queries from its cache, and encodes nothing
for a namespace last found lexical."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.typing import NDArray

from graphsvc.embedding.codes import VectorModel
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import OnnxEmbedder
from graphsvc.embedding.registry import ModelUnavailableError
from graphsvc.recall.query_encoder import QueryBatcher, QueryEncoder
from graphsvc.settings import Settings
from graphsvc.store.mirror import MirrorStore
from tests.helpers import installed_model


class Recorder:
    """An encode function whose first call blocks until released; it records every batch."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail_on = fail_on

    def __call__(self, texts: list[str]) -> list[bytes]:
        self.batches.append(list(texts))
        if len(self.batches) == 1:
            self.started.set()
            assert self.release.wait(10)
        if self.fail_on in texts:
            raise ValueError(f"cannot encode {self.fail_on}")
        return [text.upper().encode() for text in texts]


def test_queries_waiting_for_the_encoder_go_into_its_next_batch() -> None:
    encode = Recorder()
    batcher = QueryBatcher(encode, max_batch=3)
    first = batcher.submit("a")
    assert encode.started.wait(10)
    assert batcher.submit("a") is first  # being encoded: not encoded again
    waiting = [batcher.submit(text) for text in ["b", "c", "b", "d", "e"]]
    encode.release.set()
    assert first.result(10) == b"A"
    assert [f.result(10) for f in waiting] == [b"B", b"C", b"B", b"D", b"E"]
    assert encode.batches == [["a"], ["b", "c", "d"], ["e"]]  # "b" once; at most 3 a batch
    batcher.close()


def test_a_failing_query_fails_only_its_callers_and_the_encoder_goes_on() -> None:
    encode = Recorder(fail_on="bad")
    batcher = QueryBatcher(encode)
    batcher.submit("a")
    assert encode.started.wait(10)
    bad, good = batcher.submit("bad"), batcher.submit("good")
    encode.release.set()
    with pytest.raises(ValueError, match="cannot encode bad"):
        bad.result(10)
    assert good.result(10) == b"GOOD"  # same batch: retried alone
    assert encode.batches[1:] == [["bad", "good"], ["bad"], ["good"]]
    assert batcher.submit("later").result(10) == b"LATER"
    batcher.close()


def test_close_answers_what_waits_and_a_later_query_starts_again() -> None:
    encode = Recorder()
    batcher = QueryBatcher(encode)
    before = set(threading.enumerate())  # other tests' encoders may still be alive
    first = batcher.submit("a")
    assert encode.started.wait(10)
    mine = set(threading.enumerate()) - before
    assert [t.name for t in mine] == ["graphsvc-query-encoder"]
    second = batcher.submit("b")
    closer = threading.Thread(target=batcher.close)
    closer.start()
    encode.release.set()
    closer.join(10)
    assert not closer.is_alive()
    assert (first.result(0), second.result(0)) == (b"A", b"B")
    assert not any(t.is_alive() for t in mine)
    assert batcher.submit("c").result(10) == b"C"
    batcher.close()


def test_concurrent_queries_get_the_bits_of_a_direct_encoding() -> None:
    embedder = installed_model("batched encoding")
    dense = DenseRecall(embedder, required=True, cache_size=0)
    assert dense.model() is not None
    encoder = QueryEncoder(dense)
    queries = [f"when did the {w} release ship after the outage?" for w in "abcdefghij"]
    queries += ["a", "a much longer question about the billing incident and its cause " * 5]
    with ThreadPoolExecutor(8) as pool:
        batched = list(pool.map(lambda q: codes_of(encoder, q), queries * 2))
    assert batched == [dense.codes([q], query=True)[0] for q in queries * 2]
    encoder.close()
    dense.close()


def codes_of(encoder: QueryEncoder, text: str, namespace: str | None = None) -> bytes:
    """The codes :meth:`QueryEncoder.soon` promises for ``text``, which must be coming."""
    future = encoder.soon(text, namespace)
    assert future is not None
    return future.result(10)


class Counter:
    """An encode function that answers at once and records every batch."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[bytes]:
        self.batches.append(list(texts))
        return [text.upper().encode() for text in texts]


class CountingEmbedder:
    """A tiny embedder (the first letter's code point as a direction) that counts its texts."""

    dimension = 4
    model_id = "counting-4"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> NDArray[np.float32]:
        self.texts.extend(texts)
        out = np.zeros((len(texts), 4), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, ord(text[:1] or " ") % 4] = 1.0
        return out


def test_repeated_queries_come_from_the_cache_up_to_its_size() -> None:
    embedder = CountingEmbedder()
    dense = DenseRecall(embedder, required=True, cache_size=2)
    encoder = QueryEncoder(dense)
    try:
        for text in ["x", "y", "x", "z", "y", "x"]:
            assert codes_of(encoder, text) == dense.codes([text], query=True)[0]
        # The second "x" is a hit (each dense.codes above adds its text once); "z" pushes out
        # "y", the least recently asked, and "y" then pushes out "x": both are encoded again.
        assert embedder.texts == ["x", "x", "y", "y", "x", "z", "z", "y", "y", "x", "x"]
    finally:
        encoder.close()


def test_without_a_cache_every_query_is_encoded() -> None:
    embedder = CountingEmbedder()
    encoder = QueryEncoder(DenseRecall(embedder, required=True, cache_size=0))
    try:
        assert codes_of(encoder, "x") == codes_of(encoder, "x")
        assert embedder.texts == ["x", "x"]
    finally:
        encoder.close()


def test_a_failed_encoding_is_not_cached() -> None:
    encoder = QueryEncoder(DenseRecall(BrokenTokenEmbedder(), required=True))
    try:
        for _ in range(2):  # asked again: encoded again, and fails again
            future = encoder.soon("q")
            assert future is not None
            with pytest.raises(ModelUnavailableError):
                future.result(10)
    finally:
        encoder.close()


def test_no_query_is_encoded_for_a_namespace_last_found_lexical() -> None:
    embedder = CountingEmbedder()
    dense = DenseRecall(embedder, required=True, cache_size=0)
    encoder = QueryEncoder(dense)
    store = MirrorStore(None)
    store.open()
    try:
        store.set_vector_model("other", VectorModel("another-model", 4))
        assert codes_of(encoder, "first ask", "other")  # not yet known: encoded, in case
        assert dense.for_namespace(store, "other", writing=False) is None
        assert dense.for_namespace(store, "mine", writing=True) == VectorModel("counting-4", 4)
        # What soon answers is whether codes are coming: what starts a search by meaning.
        assert encoder.soon("lexical there", "other") is None
        assert (
            codes_of(encoder, "by meaning here", "mine")
            == (dense.codes(["by meaning here"], query=True)[0])
        )
        assert "lexical there" not in embedder.texts
        assert embedder.texts.count("first ask") == 1
        assert embedder.texts.count("by meaning here") == 2  # soon, then codes() above
    finally:
        encoder.close()
        dense.close()
        store.close()


def test_without_an_encoder_no_codes_are_coming() -> None:
    assert QueryEncoder(DenseRecall(None)).soon("anything", "ns") is None


def test_the_encoder_workers_setting_reaches_the_encoder() -> None:
    dense = DenseRecall.from_settings(Settings(embed="auto", embed_workers=3))
    assert isinstance(dense._embedder, OnnxEmbedder)
    assert dense._embedder.workers == 3
    assert Settings(embed_workers=1).embed_workers == 1
    assert 1 <= Settings().embed_workers <= 2


def test_prepare_runs_in_the_submitting_thread_and_encode_gets_what_it_returns() -> None:
    prepared_in: list[str] = []

    def prepare(text: str) -> str:
        prepared_in.append(threading.current_thread().name)
        return f"<{text}>"

    encode = Counter()
    batcher = QueryBatcher(encode, prepare=prepare)
    assert batcher.submit("a").result(10) == b"<A>"
    assert batcher.submit("b").result(10) == b"<B>"
    assert encode.batches == [["<a>"], ["<b>"]]
    assert prepared_in == [threading.current_thread().name] * 2
    batcher.close()


def test_a_failing_prepare_fails_only_its_callers() -> None:
    def prepare(text: str) -> str:
        if text == "bad":
            raise ValueError("cannot prepare bad")
        return text

    batcher = QueryBatcher(Counter(), prepare=prepare)
    with pytest.raises(ValueError, match="cannot prepare bad"):
        batcher.submit("bad").result(10)
    assert batcher.submit("good").result(10) == b"GOOD"
    batcher.close()


class TokenCountingEmbedder(CountingEmbedder):
    """:class:`CountingEmbedder` split in two, recording the thread of each half."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[str, set[str]] = {"tokenize": set(), "embed_tokens": set()}

    def tokenize(self, texts: Sequence[str], *, query: bool = False) -> list[list[int]]:
        self.threads["tokenize"].add(threading.current_thread().name)
        return [[ord(text[:1] or " ")] for text in texts]

    def embed_tokens(self, ids: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        self.threads["embed_tokens"].add(threading.current_thread().name)
        return self.embed([chr(row[0]) for row in ids])


def test_a_splitting_embedder_tokenises_in_the_caller_and_encodes_on_the_encoder_thread() -> None:
    embedder = TokenCountingEmbedder()
    dense = DenseRecall(embedder, required=True, cache_size=0)
    encoder = QueryEncoder(dense)
    try:
        assert codes_of(encoder, "by meaning") == dense.codes(["by meaning"], query=True)[0]
        assert codes_of(encoder, "again") == dense.codes(["again"], query=True)[0]
        assert embedder.threads == {
            "tokenize": {threading.current_thread().name},
            "embed_tokens": {"graphsvc-query-encoder"},
        }
    finally:
        encoder.close()


class BrokenTokenEmbedder(TokenCountingEmbedder):
    """A splitting embedder whose model stops running after it loaded."""

    def embed_tokens(self, ids: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        raise ModelUnavailableError("the model's file went away")


def test_a_splitting_embedder_that_fails_gives_its_callers_its_own_error() -> None:
    encoder = QueryEncoder(DenseRecall(BrokenTokenEmbedder(), required=True, cache_size=0))
    try:
        for query in ["first", "second"]:  # the encoder's thread lives on after a failure
            with pytest.raises(ModelUnavailableError, match="the model's file went away"):
                codes_of(encoder, query)
    finally:
        encoder.close()
