"""The vector queue's handling of what the stores cannot show: an encoder that fails on one text
(it is skipped and left waiting, the rest are encoded) or on every text (a failure, raised), and
the lower priority of its encoder threads.

The encoder is the real one; the failure is a wrapper that refuses marked texts, since no text
makes the real model fail on demand.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import OnnxEmbedder, Vectors
from graphsvc.embedding.registry import MINILM_INT8, ModelUnavailableError
from graphsvc.errors import GraphsvcError
from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.service.vector_queue import lower_priority, process_name
from graphsvc.store.mirror import MirrorStore
from tests.helpers import WrappedEncoder, fixed_clock, make_settings

NS = "queue"


class Refusing(WrappedEncoder):
    """The real encoder, refusing every text that contains ``marker``."""

    def __init__(self, inner: OnnxEmbedder, marker: str) -> None:
        super().__init__(inner)
        self.marker = marker

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if any(self.marker in text for text in texts):
            raise ModelUnavailableError(f"the encoder refused a text with {self.marker!r}")
        return self.inner.embed(texts, query=query)


@pytest.fixture(scope="module")
def encoder() -> OnnxEmbedder:
    try:
        return OnnxEmbedder(MINILM_INT8).load()
    except ModelUnavailableError as exc:  # pragma: no cover - the weights are a CI install step
        pytest.fail(f"the embedding model is not installed ({exc}): bash scripts/install_model.sh")


def service_with(tmp_path: Path, embedder: Refusing) -> MemoryService:
    store = MirrorStore(None)
    store.open()
    settings = make_settings(tmp_path, embed_queue_batch=4)
    return MemoryService(store, settings, clock=fixed_clock(), dense=DenseRecall(embedder))


def test_a_text_the_encoder_fails_on_is_skipped_and_left_waiting(
    tmp_path: Path, encoder: OnnxEmbedder
) -> None:
    service = service_with(tmp_path, Refusing(encoder, "POISON"))
    texts = [f"note {n} about the garden" for n in range(6)]
    texts.insert(2, "a POISON text the encoder refuses")
    made = service.remember_many(NS, [MemoryInput(text=t) for t in texts])
    assert service.embed(NS) == 6
    waiting = service.store.pending_vectors(NS, 10)
    assert [p.id for p in waiting] == [made[2].id]  # still in the store's queue
    assert service.vector_queue.status().skipped == 1
    assert service.embed(NS) == 0  # skipped by this process from now on, no loop
    service.close()


def test_an_encoder_that_fails_on_everything_is_a_failure_not_a_skip(
    tmp_path: Path, encoder: OnnxEmbedder
) -> None:
    service = service_with(tmp_path, Refusing(encoder, "note"))
    service.remember_many(NS, [MemoryInput(text=f"note {n}") for n in range(5)])
    with pytest.raises(GraphsvcError, match="refused"):
        service.embed(NS)
    assert len(service.store.pending_vectors(NS, 10)) == 5
    assert service.vector_queue.status().skipped == 0
    service.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_the_queue_threads_give_up_priority_and_the_caller_keeps_its_own() -> None:
    seen: dict[str, int] = {}

    def lowered() -> None:
        lower_priority(5)
        seen["thread"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    worker = threading.Thread(target=lowered)
    worker.start()
    worker.join()
    assert seen["thread"] == min(19, before + 5)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before


def test_queue_names_say_who_holds_a_store() -> None:
    assert process_name("graphsvc serve").startswith(f"graphsvc serve (pid {os.getpid()} on ")
    assert process_name("graphsvc serve", 3).endswith(", queue 3)")
