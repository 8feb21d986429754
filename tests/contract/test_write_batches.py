"""Batches written with several in flight (``MemoryService.write_batches``, ``graphsvc ingest
--writers``): each atomic, recorded in batch order, a failure stopping what comes after it. On
Neo4j the batches really run at once; the embedded store writes them one at a time."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from graphsvc.errors import BadInputError, ConflictError
from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from tests.helpers import make_settings

WRITERS = 3


def batch(number: int, size: int = 40) -> list[MemoryInput]:
    return [
        MemoryInput(text=f"pump {number} reading {i} at station {number * 100 + i}", kind="event")
        for i in range(size)
    ]


def newest_first(service: MemoryService, ns: str) -> list[str]:
    return [m.text for m in service.list_memories(ns, limit=1000)]


def test_batches_in_flight_are_recorded_in_batch_order(service: MemoryService, ns: str) -> None:
    batches = [batch(n) for n in range(7)]
    results = list(service.write_batches(ns, batches, writers=WRITERS))
    assert [[m.text for m in stored] for stored, _ in results] == [
        [item.text for item in b] for b in batches
    ]
    assert [len(result.created) for _, result in results] == [len(b) for b in batches]
    in_order = [item.text for b in batches for item in b]
    assert newest_first(service, ns) == in_order[::-1]
    assert service.stats(ns).memories == len(in_order)
    found = service.bundle(ns, "pump 5 reading station 503")
    assert found.capsules[0].text == "pump 5 reading 3 at station 503"


def test_writing_the_same_batches_again_changes_nothing(service: MemoryService, ns: str) -> None:
    batches = [batch(n, 10) for n in range(4)]
    list(service.write_batches(ns, batches, writers=WRITERS))
    before = newest_first(service, ns)
    again = list(service.write_batches(ns, batches, writers=WRITERS))
    assert all(not result.created and len(result.unchanged) == 10 for _, result in again)
    assert newest_first(service, ns) == before


def test_a_failing_batch_is_not_written_and_no_later_batch_starts(
    service: MemoryService, ns: str
) -> None:
    taken = uuid.uuid4()
    service.remember(ns, MemoryInput(id=taken, text="the original", kind="note"))
    batches = [batch(n, 10) for n in range(8)]
    # Batch 2 reuses an id with other content: the store refuses it inside its transaction.
    batches[2][5] = MemoryInput(id=taken, text="other content", kind="note")
    written = service.write_batches(ns, batches, writers=WRITERS)
    assert [len(result.created) for _, result in (next(written), next(written))] == [10, 10]
    with pytest.raises(ConflictError, match=str(taken)):
        next(written)
    texts = set(newest_first(service, ns))
    assert "other content" not in texts
    assert not texts & {item.text for item in batches[2]}  # all or nothing
    # Batches in flight with the failed one may have been written; none after those started.
    for later in batches[2 + WRITERS :]:
        assert not texts & {item.text for item in later}
    assert texts >= {item.text for b in batches[:2] for item in b}


def test_a_batch_that_fails_its_checks_stops_the_writes(service: MemoryService, ns: str) -> None:
    batches = [batch(0, 5), [], batch(2, 5)]
    with pytest.raises(BadInputError, match="no memories to write"):
        list(service.write_batches(ns, batches, writers=WRITERS))
    texts = set(newest_first(service, ns))
    assert texts == {item.text for item in batches[0]}


def test_writers_below_one_are_refused(service: MemoryService, ns: str) -> None:
    with pytest.raises(BadInputError, match="writers must be at least 1, got 0"):
        list(service.write_batches(ns, [batch(0, 2)], writers=0))
    assert service.stats(ns).memories == 0


def test_batches_in_flight_keep_the_memory_cap(store: Store, tmp_path: Path, ns: str) -> None:
    cap = 50
    service = MemoryService(store, make_settings(tmp_path, max_memories_per_namespace=cap))
    batches = [batch(n, 10) for n in range(9)]
    evicted = sum(
        len(result.evicted) for _, result in service.write_batches(ns, batches, writers=WRITERS)
    )
    assert evicted == 90 - cap
    assert service.stats(ns).memories == cap
    # The oldest went: what is left is the newest cap memories, in batch order.
    in_order = [item.text for b in batches for item in b]
    assert newest_first(service, ns) == in_order[::-1][:cap]
