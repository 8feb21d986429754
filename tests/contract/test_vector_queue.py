"""The vector queue, one body over both stores, with the real encoder.

A write is acknowledged before its vectors (GRAPHSVC_EMBED_WRITES=queue, the default): its
memories wait in the store's queue, which stats and every bundle report, until a drainer (a
server's background thread, or ``graphsvc embed``) stores their vectors. The queue is the stores'
own: it survives a restart, forgetting or erasing a memory takes it out, clearing vectors (a
rebuild) puts memories back, and a drainer never stores a vector twice or a stale one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID, uuid4

import numpy as np
import pytest

from graphsvc.embedding.codes import VectorModel, cosines, quantize, to_bytes
from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.embedding.encoder import OnnxEmbedder, Vectors
from graphsvc.embedding.registry import MINILM_INT8, ModelUnavailableError
from graphsvc.errors import BadInputError
from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.service.vector_queue import VectorQueue
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from graphsvc.store.vectors import PendingVector
from tests.helpers import WrappedEncoder, fixed_clock, make_settings
from tests.neo4j_server import neo4j_store_factory

PETS = [
    "My puppy keeps chewing the sofa cushions whenever I leave the flat.",
    "The quarterly tax return is due at the end of April.",
    "We planted tomatoes and basil in the back garden on Sunday.",
    "The train to Lyon was cancelled because of the strike.",
]
MORE = [
    f"Note {n}: the boiler in flat {n} was serviced on a {day}."
    for n, day in enumerate(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"])
]


@pytest.fixture(scope="session")
def encoder() -> OnnxEmbedder:
    try:
        return OnnxEmbedder(MINILM_INT8).load()
    except ModelUnavailableError as exc:  # pragma: no cover - the weights are a CI install step
        pytest.fail(f"the embedding model is not installed ({exc}): bash scripts/install_model.sh")


def queued(store: Store, tmp_path: Path, encoder: OnnxEmbedder, **changes: object) -> MemoryService:
    """A service whose writes leave their vectors to the queue (the default), unless
    ``changes`` say otherwise."""
    # The queue's threads at the tests' own priority: on a machine shared with other work, at
    # the default nice 10 they get little CPU (the priority is not what these tests are about).
    settings = make_settings(tmp_path, **{"embed_queue_batch": 3, "embed_queue_nice": 0, **changes})
    return MemoryService(store, settings, clock=fixed_clock(), dense=DenseRecall(encoder))


@pytest.fixture
def service(store: Store, tmp_path: Path, encoder: OnnxEmbedder) -> Iterator[MemoryService]:
    made = queued(store, tmp_path, encoder)
    assert made.settings.embed_writes == "queue"  # the default
    yield made
    made.vector_queue.close()


def remember(service: MemoryService, ns: str, texts: list[str]) -> list[UUID]:
    return [m.id for m in service.remember_many(ns, [MemoryInput(text=t) for t in texts])]


def exact_codes(encoder: OnnxEmbedder, texts: list[str]) -> list[bytes]:
    return [to_bytes(row) for row in quantize(encoder.embed(texts))]


def test_a_write_is_acknowledged_before_its_vectors_which_the_queue_brings(
    service: MemoryService, ns: str
) -> None:
    remember(service, ns, PETS)
    stats = service.stats(ns)
    assert (stats.memories, stats.vectors, stats.pending_vectors) == (4, 0, 4)
    assert stats.retrieval_note is not None and "4 memory(ies) wait for their vector" in (
        stats.retrieval_note
    )
    assert "graphsvc embed" in stats.retrieval_note  # no server drains it here
    # Words find the memories at once; meaning does not yet, and the bundle says so.
    before = service.bundle(ns, "dog destroying furniture", min_score=0.0)
    assert before.pending_vectors == 4 and before.capsules == ()
    assert before.retrieval_note is not None and "wait for their vector" in before.retrieval_note
    assert service.bundle(ns, "tax return", min_score=0.0).capsules

    read: list[int] = []
    assert service.embed(ns, progress=read.append) == 4
    assert read == [3, 1]  # embed_queue_batch memories a durable step
    stats = service.stats(ns)
    assert (stats.vectors, stats.pending_vectors, stats.retrieval_note) == (4, 0, None)
    after = service.bundle(ns, "dog destroying furniture", min_score=0.0)
    assert (after.pending_vectors, after.retrieval_note, after.retrieval) == (0, None, "hybrid")
    assert "puppy" in after.capsules[0].text
    assert service.embed(ns) == 0  # nothing waits


def test_a_write_may_wait_for_its_vectors_and_another_may_not(
    service: MemoryService, ns: str
) -> None:
    # A caller that searches by meaning right after writing (a vector store) asks the write to
    # store its vectors; the server's setting still decides for everyone else.
    items = [MemoryInput(text=t) for t in PETS]
    service.remember_many(ns, items, wait_for_vectors=True)
    stats = service.stats(ns)
    assert (stats.vectors, stats.pending_vectors) == (4, 0)
    found = service.bundle(ns, "dog destroying furniture", min_score=0.0)
    assert found.pending_vectors == 0 and "puppy" in found.capsules[0].text
    ids = remember(service, ns, MORE)  # the server's default: the queue
    assert service.stats(ns).pending_vectors == len(ids)
    service.remember_many(ns, [MemoryInput(text="a third write")], wait_for_vectors=False)
    assert service.stats(ns).pending_vectors == len(ids) + 1


def test_the_vectors_the_queue_stores_are_the_encoders_own(
    service: MemoryService, store: Store, encoder: OnnxEmbedder, ns: str
) -> None:
    ids = remember(service, ns, PETS + MORE)
    service.embed(ns)
    model = store.vector_model(ns)
    assert model is not None
    query = exact_codes(encoder, ["anything at all"])[0]
    found = dict(store.similar(ns, query, 0, ids))
    expected = exact_codes(encoder, PETS + MORE)
    matrix = np.stack([np.frombuffer(c, dtype=np.int8) for c in expected])
    scores = cosines(np.frombuffer(query, dtype=np.int8), matrix)
    assert [found[i] for i in ids] == pytest.approx([float(s) for s in scores], abs=0)


def test_inline_writes_store_their_vectors_in_the_write(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, ns: str
) -> None:
    inline = queued(store, tmp_path, encoder, embed_writes="inline")
    remember(inline, ns, PETS)
    stats = inline.stats(ns)
    assert (stats.vectors, stats.pending_vectors) == (4, 0)
    assert store.pending_vectors(ns, 10) == []
    assert "puppy" in inline.bundle(ns, "dog destroying furniture", min_score=0.0).capsules[0].text


def test_forget_and_erase_take_a_waiting_memory_out_of_the_queue(
    service: MemoryService, store: Store, ns: str
) -> None:
    tagged = service.remember(ns, MemoryInput(text="A tagged note about the garden.", tags=("x",)))
    ids = remember(service, ns, PETS)
    assert [p.id for p in store.pending_vectors(ns, 10)] == [tagged.id, *ids]
    service.forget(ns, ids[1])
    service.erase(ns, tag="x")
    assert [p.id for p in store.pending_vectors(ns, 10)] == [ids[0], ids[2], ids[3]]
    assert service.stats(ns).pending_vectors == 3
    assert service.embed(ns) == 3
    assert store.vector_count(ns) == 3
    assert [b.namespace for b in store.vector_backlogs()].count(ns) == 0


def test_a_model_change_puts_every_memory_back_in_the_queue(
    service: MemoryService, store: Store, tmp_path: Path, ns: str
) -> None:
    remember(service, ns, PETS)
    service.embed(ns)
    # The same weights cut at another length are another model (another model_id).
    changed = queued(store, tmp_path, OnnxEmbedder(MINILM_INT8, max_length=64))
    assert changed.stats(ns).pending_vectors == 0  # the vectors are another model's: lexical
    with pytest.raises(BadInputError, match="pass --rebuild"):
        changed.embed_model(ns)
    model = changed.embed_model(ns, rebuild=True)  # cleared: every memory waits again
    assert len(store.pending_vectors(ns, 10)) == 4
    assert changed.stats(ns).pending_vectors == 4
    assert service.stats(ns).pending_vectors == 0  # for the first model, they are another's
    assert changed.vector_queue.drain(ns, model) == 4
    assert (store.vector_model(ns), store.vector_count(ns)) == (model, 4)


def test_a_drainer_never_stores_a_vector_twice_nor_onto_another_memory(
    service: MemoryService, store: Store, encoder: OnnxEmbedder, ns: str
) -> None:
    mine = service.embed_model(ns)
    given = uuid4()
    service.remember_many(ns, [MemoryInput(text=PETS[0], id=given), MemoryInput(text=PETS[1])])
    head = store.pending_vectors(ns, 10)
    codes = exact_codes(encoder, [p.text for p in head])
    # Two drainers read the same head: the first stores, the second stores nothing.
    assert store.fill_vectors(ns, mine, list(zip(head, codes, strict=True))) == 2
    assert store.fill_vectors(ns, mine, list(zip(head, codes, strict=True))) == 0
    assert store.vector_count(ns) == 2
    # Forgotten and written again under the same id with another text: the codes read for
    # the old text are refused; the new memory waits for its own.
    service.forget(ns, given)
    service.remember(ns, MemoryInput(text=PETS[2], id=given))
    again = [p for p in head if p.id == given]
    assert store.fill_vectors(ns, mine, [(again[0], codes[0])]) == 0
    (waiting,) = store.pending_vectors(ns, 10)
    assert (waiting.id, waiting.text) == (given, PETS[2])
    # Codes of another model (the namespace's changed meanwhile) are refused whole.
    other = VectorModel("another-encoder", mine.dimension)
    assert store.fill_vectors(ns, other, [(waiting, codes[0])]) == 0
    with pytest.raises(BadInputError, match="codes"):
        store.fill_vectors(ns, mine, [(waiting, codes[0][:10])])
    assert store.fill_vectors(ns, mine, [(waiting, exact_codes(encoder, [PETS[2]])[0])]) == 1
    assert store.pending_vectors(ns, 10) == []


def test_the_backlog_of_each_namespace_is_counted(
    service: MemoryService, store: Store, ns: str
) -> None:
    remember(service, ns, PETS)
    remember(service, f"{ns}b", PETS[:2])
    mine = service.dense.model()
    found = {b.namespace: b for b in store.vector_backlogs() if b.namespace.startswith(ns)}
    assert {n: (b.pending, b.vectors, b.model) for n, b in found.items()} == {
        ns: (4, 0, mine),  # the first write with an encoder declared its model
        f"{ns}b": (2, 0, mine),
    }
    service.vector_queue.step(ns, service.embed_model(ns))
    found = {b.namespace: b for b in store.vector_backlogs() if b.namespace.startswith(ns)}
    assert (found[ns].pending, found[ns].vectors) == (1, 3)


def reopen(store: Store) -> Store:
    """The same store, closed and opened again (a restart)."""
    store.close()
    if isinstance(store, MirrorStore):
        again: Store = MirrorStore(store._dir, fsync=False)  # its own folder
    else:
        again = neo4j_store_factory()()
    again.open()
    return again


def test_the_queue_survives_a_restart_and_resumes(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, ns: str
) -> None:
    first = queued(store, tmp_path, encoder)
    ids = remember(first, ns, PETS + MORE)
    model = first.embed_model(ns)
    assert first.vector_queue.step(ns, model) == (3, 3)
    store = reopen(store)
    try:
        second = queued(store, tmp_path, encoder)
        assert [p.id for p in store.pending_vectors(ns, 20)] == ids[3:]
        assert second.stats(ns).pending_vectors == 7
        assert second.embed(ns) == 7
        assert store.vector_count(ns) == 10
        found = dict(store.similar(ns, exact_codes(encoder, ["garden"])[0], 0, ids))
        assert len(found) == 10  # every memory once
    finally:
        store.close()


def wait_until(check: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_background_queue_drains_what_is_written_and_stops_cleanly(
    service: MemoryService, store: Store, ns: str
) -> None:
    queue = service.vector_queue
    queue.start("test")
    try:
        remember(service, ns, PETS)  # wakes the queue
        wait_until(lambda: service.stats(ns).pending_vectors == 0)
        assert store.vector_count(ns) == 4
        status = queue.status()
        assert status.state in ("idle", "draining") and status.stored >= 4
        assert status.owner == queue.owner
        lease = store.vector_queue_lease()
        assert lease is not None and lease.owner == queue.owner
        note = service.stats(ns).retrieval_note
        assert note is None
        remember(service, ns, MORE)
        wait_until(lambda: service.stats(ns).pending_vectors == 0)
    finally:
        queue.close(timeout=60)
    assert queue.status().state == "stopped"
    assert store.vector_queue_lease() is None  # given up on a clean stop
    assert store.vector_count(ns) == 10


def test_one_drainer_holds_a_store_and_another_takes_over_when_it_stops(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, ns: str
) -> None:
    settings = make_settings(
        tmp_path, embed_queue_batch=2, embed_queue_poll=0.05, embed_queue_nice=0
    )
    # Leases of the default length: renewed every 10 s, they do not lapse on a busy machine; the
    # takeover here is the one after a clean stop, which gives the lease up.
    first = VectorQueue(store, DenseRecall(encoder), settings, role="one")
    second = VectorQueue(store, DenseRecall(encoder), settings, role="two")
    writer = MemoryService(store, settings, clock=fixed_clock(), dense=DenseRecall(encoder))
    first.start()
    wait_until(lambda: first.status().state != "starting")  # it has looked, and holds the lease
    second.start()
    try:
        wait_until(lambda: second.status().state == "standby")
        assert second.status().owner == first.owner
        remember(writer, ns, PETS)
        first.notify()
        wait_until(lambda: writer.stats(ns).pending_vectors == 0)
        assert second.status().stored == 0  # a store is drained by one process at a time
        first.close(timeout=60)  # gives the lease up: the other takes it at its next look
        remember(writer, ns, MORE)
        wait_until(lambda: writer.stats(ns).pending_vectors == 0)
        assert second.status().stored >= 6  # (a shared server's other namespaces may add)
        assert store.vector_count(ns) == 10
    finally:
        first.close(timeout=60)
        second.close(timeout=60)


def test_a_lease_that_is_not_renewed_lapses(store: Store) -> None:
    owner = f"lapsing {uuid4()}"
    other = f"waiting {uuid4()}"
    assert store.take_vector_queue(owner, 0.3)
    try:
        assert not store.take_vector_queue(other, 10.0)
        lease = store.vector_queue_lease()
        assert lease is not None and lease.owner == owner and 0 < lease.seconds_left <= 0.3
        time.sleep(0.4)
        assert store.vector_queue_lease() is None
        assert store.take_vector_queue(other, 10.0)  # lapsed: free for the next
        assert not store.take_vector_queue(owner, 10.0)
    finally:
        store.release_vector_queue(other)
        store.release_vector_queue(owner)
    assert store.vector_queue_lease() is None


def test_a_namespace_of_another_model_is_left_to_its_rebuild(
    service: MemoryService, store: Store, tmp_path: Path, ns: str
) -> None:
    remember(service, ns, PETS)
    service.embed(ns)
    changed = queued(store, tmp_path, OnnxEmbedder(MINILM_INT8, max_length=64))
    remember(changed, ns, MORE)  # written under the other model: they wait, lexical
    changed.vector_queue.start("test")
    try:
        time.sleep(0.5)
        assert store.vector_count(ns) == 4  # never mixed in
        assert changed.stats(ns).pending_vectors == 0
        assert service.stats(ns).pending_vectors == 6  # the namespace's own model's backlog
    finally:
        changed.vector_queue.close(timeout=60)


def test_pending_vectors_are_named_by_their_recording(store: Store, ns: str) -> None:
    """The queue names each memory with its recordedAt in microseconds (what fill_vectors
    checks), exactly."""
    base = datetime(2025, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    settings = Settings(data_dir=Path("unused"), embed="off")
    service = MemoryService(store, settings, clock=lambda: base)
    made = service.remember(ns, MemoryInput(text="a memory recorded at a known instant"))
    (item,) = store.pending_vectors(ns, 5)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert item == PendingVector(made.id, (base - epoch) // timedelta(microseconds=1), made.text)


def test_a_stop_mid_step_leaves_every_memory_encoded_or_queued(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, ns: str
) -> None:
    service = queued(store, tmp_path, encoder, embed_queue_batch=200)
    texts = [f"Shift note {n}: the {n % 7} pumps were checked twice." for n in range(400)]
    service.remember_many(ns, [MemoryInput(text=t) for t in texts])
    queue = service.vector_queue
    queue.start("test")
    try:
        wait_until(lambda: queue.status().state == "draining")
    finally:
        queue.close(timeout=120)  # the step under way is given up after its encoder call
    assert not queue.running and queue.status().state == "stopped"
    assert store.vector_queue_lease() is None
    vectors = store.vector_count(ns)
    waiting = store.pending_vectors(ns, 1_000)
    assert vectors + len(waiting) == 400 and vectors < 400
    assert vectors % 200 == 0  # whole steps or nothing of one
    assert service.embed(ns) == 400 - vectors  # the next drainer resumes


def test_a_namespace_written_without_an_encoder_waits_for_graphsvc_embed(
    service: MemoryService, store: Store, tmp_path: Path, ns: str
) -> None:
    lexical = MemoryService(store, make_settings(tmp_path, embed="off"), clock=fixed_clock())
    remember(lexical, ns, PETS)  # no encoder: no model declared
    assert store.vector_model(ns) is None
    stats = service.stats(ns)
    assert stats.pending_vectors == 4
    assert stats.retrieval_note is not None and "written without an encoder" in (
        stats.retrieval_note
    )
    # A namespace of this model, written beside it, needs two steps of 3 and so two rounds of
    # the queue; each round steps every namespace it drains, so by the time this one is done
    # the other has had a round too, had the queue adopted it.
    remember(service, f"{ns}b", PETS)
    service.vector_queue.start("test")
    try:
        wait_until(lambda: store.vector_count(f"{ns}b") == 4)
        assert store.vector_count(ns) == 0  # the server does not adopt it
        assert store.vector_model(ns) is None
    finally:
        service.vector_queue.close(timeout=60)
    assert service.embed(ns) == 4  # asked: it declares the model and encodes
    assert store.vector_model(ns) == service.dense.model()


class StopsAfterFirstCall(WrappedEncoder):
    """The real encoder, setting ``stop`` once it has answered its first call for memories (a
    stop that arrives while the queue's step is being encoded)."""

    def __init__(self, inner: OnnxEmbedder, stop: threading.Event) -> None:
        super().__init__(inner)
        self.stop = stop
        self.calls = 0

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        vectors = self.inner.embed(texts, query=query)
        if not query:
            self.calls += 1
            self.stop.set()
        return vectors


def test_a_stop_during_a_step_gives_the_step_up_after_the_encoder_call(
    store: Store, tmp_path: Path, encoder: OnnxEmbedder, ns: str
) -> None:
    """A drain told to stop while it encodes a step gives the step up after the encoder call
    under way: nothing of the step is stored, every memory still waits, and the next drainer
    encodes them all."""
    stop = threading.Event()
    stopping = StopsAfterFirstCall(encoder, stop)
    settings = make_settings(tmp_path, embed_queue_batch=200, embed_queue_nice=0)
    service = MemoryService(store, settings, clock=fixed_clock(), dense=DenseRecall(stopping))
    texts = [f"Shift note {n}: the {n % 7} pumps were checked twice." for n in range(200)]
    service.remember_many(ns, [MemoryInput(text=t) for t in texts])
    model = service.embed_model(ns)
    assert service.vector_queue.drain(ns, model, stop=stop) == 0
    # One call of ENCODE_CHUNK texts on each encoder thread, not the step's 200 texts.
    assert stopping.calls <= settings.embed_workers
    assert store.vector_count(ns) == 0
    assert len(store.pending_vectors(ns, 1_000)) == 200
    assert service.embed(ns) == 200  # the next drainer resumes from the same queue
    assert store.vector_count(ns) == 200
