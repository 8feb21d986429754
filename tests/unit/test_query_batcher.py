"""Queries are encoded on one thread, concurrent ones in one batch: what waits while the encoder is
busy goes into its next call, a repeated text is encoded once, failures reach every caller, and
the codes are the bits a direct call gives (checked with the real model when it is installed)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from graphsvc.embed import ModelUnavailableError, open_embedder
from graphsvc.retrieval import DenseRecall, QueryBatcher


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
    embedder = open_embedder()
    try:
        embedder.load()
    except ModelUnavailableError as exc:
        message = f"!!! embedding model not installed, batched encoding not checked: {exc}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI=true: CI must install the weights)")
        pytest.skip(message)
    dense = DenseRecall(embedder, required=True, cache_size=0)
    assert dense.model() is not None
    queries = [f"when did the {w} release ship after the outage?" for w in "abcdefghij"]
    queries += ["a", "a much longer question about the billing incident and its cause " * 5]
    with ThreadPoolExecutor(8) as pool:
        batched = list(pool.map(dense.query_codes, queries * 2))
    assert batched == [dense.codes([q])[0] for q in queries * 2]
    dense.close()
