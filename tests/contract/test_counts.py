"""A namespace's counts (``stats``) stay exact through every write that changes them, on every
store: links written twice in one batch or again later, beliefs, events, forgetting, eviction
at the cap and erasing by a filter. Neo4j keeps them on the namespace's NamespaceStat (so that
``stats`` reads no memory); the mirror counts what it holds; both must give the truth, which is
computed here from what the namespace exports."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from graphsvc.model import Link, LinkInput, LinkKind, Memory, MemoryInput
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from tests.helpers import fixed_clock, make_settings


def truth(service: MemoryService, ns: str, beliefs: list[UUID]) -> dict[str, int]:
    """The counts as they must be: from the exported memories and links, and the beliefs of
    ``beliefs`` still there."""
    items = list(service.export(ns))
    memories = [item for item in items if isinstance(item, Memory)]
    return {
        "memories": len(memories),
        "links": sum(isinstance(item, Link) for item in items),
        "terms": len({term for memory in memories for term in memory.terms}),
        "beliefs": sum(service.get_belief(ns, b) is not None for b in beliefs),
    }


def counted(service: MemoryService, ns: str) -> dict[str, int]:
    stats = service.stats(ns)
    return {
        "memories": stats.memories,
        "links": stats.links,
        "terms": stats.terms,
        "beliefs": stats.beliefs,
    }


def test_counts_stay_exact_through_every_kind_of_write(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = MemoryService(
        store, make_settings(tmp_path, max_memories_per_namespace=9), clock=fixed_clock()
    )
    texts = [
        "The kettle boils at dawn",
        "The kettle whistles loudly",
        "A pipe leaks under the sink",
        "The plumber fixed the leaking pipe",
        "Dawn light on the harbour",
        "Gulls over the harbour wall",
    ]
    tags = [("home",), ("home",), ("repair",), ("repair",), ("sea",), ("sea",)]
    a, b, c, d, e, f = service.remember_many(
        ns, [MemoryInput(text=t, tags=tg) for t, tg in zip(texts, tags, strict=True)]
    )
    beliefs: list[UUID] = []
    assert counted(service, ns) == truth(service, ns, beliefs)

    # One batch that names a link twice, then the same link again with another weight: one link.
    service.link_many(
        ns,
        [
            LinkInput(source=a.id, target=b.id, kind=LinkKind.CAUSES),
            LinkInput(source=a.id, target=b.id, kind=LinkKind.CAUSES, weight=0.5),
            LinkInput(source=b.id, target=c.id, kind=LinkKind.PRECEDES),
            LinkInput(source=c.id, target=d.id, kind=LinkKind.RELATES_TO),
            LinkInput(source=d.id, target=c.id, kind=LinkKind.CAUSES),
            LinkInput(source=e.id, target=f.id, kind=LinkKind.PRECEDES),
        ],
    )
    service.link(ns, LinkInput(source=a.id, target=b.id, kind=LinkKind.CAUSES, weight=0.25))
    service.link(ns, LinkInput(source=a.id, target=b.id, kind=LinkKind.RELATES_TO))
    assert counted(service, ns) == truth(service, ns, beliefs)
    assert counted(service, ns)["links"] == 6

    for cue, depth in (("kettle boils", 1), ("pipe leaks", 0), ("harbour gulls", 1)):
        belief = service.reconstruct_and_store(ns, cue, depth=depth)
        assert belief.belief_id is not None
        beliefs.append(belief.belief_id)
    for step in range(3):
        service.record_event(ns, "run-1", step, "memory_recall")
    service.record_event(ns, "run-2", 0, "memory_recall")
    assert counted(service, ns) == truth(service, ns, beliefs)
    assert service.stats(ns).beliefs == 3
    assert service.stats(ns).events == 4

    # Forgetting takes the memory's links and the beliefs built on it.
    service.forget(ns, b.id)
    assert counted(service, ns) == truth(service, ns, beliefs)

    # Past the cap of 9, the oldest memories go with their links and beliefs.
    fresh = service.remember_many(
        ns, [MemoryInput(text=f"Tide table number {n} for the harbour") for n in range(5)]
    )
    service.link(ns, LinkInput(source=fresh[0].id, target=f.id, kind=LinkKind.RELATES_TO))
    assert service.get_memory(ns, a.id) is None  # evicted
    assert counted(service, ns) == truth(service, ns, beliefs)

    # Erasing by a filter takes what it matches, with their links and beliefs.
    service.erase(ns, tag="sea")
    after = counted(service, ns)
    assert after == truth(service, ns, beliefs)
    assert after["memories"] == 7 and after["links"] == 2  # c -> d and d -> c
    assert service.stats(ns).events == 4

    service.erase(ns, everything=True)
    assert counted(service, ns) == {"memories": 0, "links": 0, "terms": 0, "beliefs": 0}
    assert service.stats(ns).events == 0
