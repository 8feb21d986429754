"""Queries are encoded on one thread, concurrent ones in one batch: what waits while the encoder is
busy goes into its next call, a repeated text is encoded once, failures reach every caller, and
the codes are the bits a direct call gives (checked with the real model when it is installed)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.typing import NDArray

from graphsvc.dense import VectorModel
from graphsvc.embed import ModelUnavailableError, OnnxEmbedder
from graphsvc.retrieval import DenseRecall, QueryBatcher
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
    queries = [f"when did the {w} release ship after the outage?" for w in "abcdefghij"]
    queries += ["a", "a much longer question about the billing incident and its cause " * 5]
    with ThreadPoolExecutor(8) as pool:
        batched = list(pool.map(dense.query_codes, queries * 2))
    assert batched == [dense.codes([q], query=True)[0] for q in queries * 2]
    dense.close()


class Counter:
    """An encode function that answers at once and records every batch."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, texts: list[str]) -> list[bytes]:
        self.batches.append(list(texts))
        return [text.upper().encode() for text in texts]


def test_a_prefetched_query_is_encoded_once_however_late_it_is_collected() -> None:
    encode = Counter()
    batcher = QueryBatcher(encode)
    assert batcher.submit("a", collect=False).result(10) == b"A"
    assert batcher.submit("a", collect=False).result(10) == b"A"  # prefetched twice: kept
    assert batcher.submit("a").result(10) == b"A"  # the caller collects it
    assert encode.batches == [["a"]]
    assert batcher.submit("a").result(10) == b"A"  # collected, not a cache: encoded again
    assert encode.batches == [["a"], ["a"]]
    batcher.close()


def test_uncollected_prefetches_are_kept_up_to_a_bound() -> None:
    encode = Counter()
    batcher = QueryBatcher(encode, kept=2)
    for text in "xyz":
        batcher.submit(text, collect=False).result(10)
    assert [batcher.submit(text).result(10) for text in "xyz"] == [b"X", b"Y", b"Z"]
    assert encode.batches == [["x"], ["y"], ["z"], ["x"]]  # the oldest was dropped
    batcher.close()


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


def test_a_prefetch_by_namespace_skips_namespaces_last_found_lexical() -> None:
    embedder = CountingEmbedder()
    dense = DenseRecall(embedder, required=True, cache_size=0)
    store = MirrorStore(None)
    store.open()
    try:
        store.set_vector_model("other", VectorModel("another-model", 4))
        assert dense.prefetch("first ask", "other")  # not yet known: encoded, in case
        assert dense.for_namespace(store, "other", writing=False) is None
        assert dense.for_namespace(store, "mine", writing=True) == VectorModel("counting-4", 4)
        # What prefetch says is whether codes are coming: what starts a search by meaning.
        assert not dense.prefetch("lexical there", "other")
        assert dense.prefetch("by meaning here", "mine")
        assert (
            dense.query_codes("by meaning here") == dense.codes(["by meaning here"], query=True)[0]
        )
        assert dense.query_codes("first ask")
        assert "lexical there" not in embedder.texts
        assert embedder.texts.count("first ask") == 1
        assert embedder.texts.count("by meaning here") == 2  # the prefetch, then codes() above
    finally:
        dense.close()
        store.close()


def test_without_an_encoder_no_codes_are_coming() -> None:
    assert not DenseRecall(None).prefetch("anything", "ns")


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
    assert batcher.submit("b", collect=False).result(10) == b"<B>"
    assert batcher.submit("b").result(10) == b"<B>"  # the prefetch's answer: not prepared again
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
    try:
        dense.prefetch("by meaning")
        assert dense.query_codes("by meaning") == dense.codes(["by meaning"], query=True)[0]
        assert dense.query_codes("again") == dense.codes(["again"], query=True)[0]
        assert embedder.threads == {
            "tokenize": {threading.current_thread().name},
            "embed_tokens": {"graphsvc-query-encoder"},
        }
    finally:
        dense.close()


class BrokenTokenEmbedder(TokenCountingEmbedder):
    """A splitting embedder whose model stops running after it loaded."""

    def embed_tokens(self, ids: Sequence[Sequence[int]]) -> NDArray[np.float32]:
        raise ModelUnavailableError("the model's file went away")


def test_a_splitting_embedder_that_fails_gives_its_callers_its_own_error() -> None:
    dense = DenseRecall(BrokenTokenEmbedder(), required=True, cache_size=0)
    try:
        for query in ["first", "second"]:  # the encoder's thread lives on after a failure
            with pytest.raises(ModelUnavailableError, match="the model's file went away"):
                dense.query_codes(query)
    finally:
        dense.close()
