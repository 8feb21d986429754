"""The overview of a namespace (graphsvc.overview) on every store: counts by kind, tag, source and
day that every write keeps exact (Neo4j keeps FacetStats, the mirror counters), ordered the same
way, and causal components found from a bounded start. Each body compares the store's answer,
as JSON, with the truth computed here from what the namespace exports: the same bytes on both
stores."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest

from graphsvc.errors import BadInputError
from graphsvc.model import Link, LinkInput, LinkKind, Memory, MemoryInput
from graphsvc.overview import Facet, FacetCount, causal_components, overview
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from graphsvc.store.facets import facet_order, memory_facets
from tests.helpers import fixed_clock, make_settings


def exported(service: MemoryService, ns: str) -> list[Memory]:
    return [item for item in service.export(ns) if isinstance(item, Memory)]


def true_facet(memories: list[Memory], facet: str, top: int) -> Facet:
    counts = Counter(value for m in memories for f, value in memory_facets(m) if f == facet)
    if facet == "day":
        best = sorted(counts.items(), reverse=True)[:top]
    else:
        best = sorted(counts.items(), key=lambda vn: (-vn[1], facet_order(vn[0])))[:top]
    return Facet(distinct=len(counts), top=tuple(FacetCount(value=v, count=n) for v, n in best))


def check_counts(store: Store, service: MemoryService, ns: str, top: int, days: int) -> None:
    memories = exported(service, ns)
    got = overview(store, ns, top=top, days=days)
    assert got.memories == len(memories)
    for name, facet, n in (
        ("kinds", "kind", top),
        ("tags", "tag", top),
        ("sources", "source", top),
        ("days", "day", days),
    ):
        want = true_facet(memories, facet, n)
        assert getattr(got, name).model_dump_json() == want.model_dump_json(), facet


def test_counts_stay_exact_through_every_kind_of_write(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = MemoryService(
        store, make_settings(tmp_path, max_memories_per_namespace=12), clock=fixed_clock()
    )
    day = datetime(1969, 12, 31, 23, 30, tzinfo=UTC)  # before the epoch, near a day's end
    inputs = [
        MemoryInput(text="the kettle boils", kind="event", tags=("home", "home", "kitchen")),
        MemoryInput(text="a pipe leaks", kind="event", tags=("repair",), source="chat"),
        MemoryInput(text="the plumber came", kind="fact", tags=("repair",), source="chat"),
        MemoryInput(text="gulls at the harbour", tags=("sea",), occurred_at=day),
        MemoryInput(
            text="an old letter", kind="fact", source="mail", occurred_at=day + timedelta(hours=1)
        ),
        # Equal counts ordered by code point: U+FFFD before U+1F600 (in UTF-16 code units,
        # Neo4j's order of strings sent as parameters, it is after).
        MemoryInput(text="smile", kind="note", tags=("\U0001f600", "\ufffd", "Z", "z", "é")),
    ]
    first = service.remember_many(ns, inputs)
    check_counts(store, service, ns, top=3, days=2)
    check_counts(store, service, ns, top=20, days=31)
    service.forget(ns, first[1].id)
    check_counts(store, service, ns, top=20, days=31)
    # Past the cap the oldest go (eviction keeps the counts too).
    more = [MemoryInput(text=f"note {n}", kind="note", tags=("bulk",)) for n in range(9)]
    service.remember_many(ns, more)
    assert len(exported(service, ns)) == 12
    check_counts(store, service, ns, top=20, days=31)
    service.erase(ns, tag="bulk")
    check_counts(store, service, ns, top=20, days=31)
    service.erase(ns, everything=True)
    got = overview(store, ns)
    assert got.memories == 0
    assert (got.kinds.distinct, got.tags.distinct, got.days.distinct) == (0, 0, 0)


def test_an_unknown_namespace_has_an_empty_overview(store: Store, ns: str) -> None:
    got = overview(store, ns, top=5, days=5)
    assert got.memories == 0 and got.components == () and got.components_note is None
    assert got.kinds == Facet(distinct=0, top=())


def test_bounds_are_refused_with_the_range(store: Store, ns: str) -> None:
    with pytest.raises(BadInputError, match="top must be between 1 and 20, got 21"):
        overview(store, ns, top=21)
    with pytest.raises(BadInputError, match="days must be between 1 and 366, got 0"):
        overview(store, ns, days=0)
    with pytest.raises(BadInputError, match="unknown facet 'colour'"):
        store.facet_counts(ns, "colour", 3)


def ids(n: int) -> list[UUID]:
    return [UUID(int=i + 1) for i in range(n)]


def component_world(service: MemoryService, ns: str) -> list[UUID]:
    """Ten memories: a chain 1-2-3-4-5 (CAUSES and PRECEDES), a pair 6-7 (CAUSES), 8-9 joined
    only by RELATES_TO (not causal), and 10 alone."""
    made = service.remember_many(
        ns, [MemoryInput(id=mid, text=f"memory {n}") for n, mid in enumerate(ids(10), 1)]
    )
    m = [memory.id for memory in made]
    links = [
        LinkInput(source=m[0], target=m[1], kind=LinkKind.CAUSES),
        LinkInput(source=m[1], target=m[2], kind=LinkKind.PRECEDES),
        LinkInput(source=m[3], target=m[2], kind=LinkKind.CAUSES),
        LinkInput(source=m[3], target=m[4], kind=LinkKind.PRECEDES),
        LinkInput(source=m[0], target=m[4], kind=LinkKind.RELATES_TO),
        LinkInput(source=m[5], target=m[6], kind=LinkKind.CAUSES),
        LinkInput(source=m[7], target=m[8], kind=LinkKind.RELATES_TO),
    ]
    service.link_many(ns, links)
    return m


def test_components_are_the_causal_ones_largest_first(
    store: Store, ns: str, tmp_path: Path
) -> None:
    service = MemoryService(store, make_settings(tmp_path), clock=fixed_clock())
    m = component_world(service, ns)
    got = overview(store, ns, top=5)
    assert got.components_note is None
    assert [
        (c.seed_id, c.size, c.links, c.complete, c.member_ids, c.seed_text) for c in got.components
    ] == [
        (m[1], 5, 4, True, tuple(m[:5]), "memory 2"),  # 2, 3 and 4 have two links: 2 is first
        (m[5], 2, 1, True, (m[5], m[6]), "memory 6"),
    ]


def test_bounded_components_say_where_they_stopped(store: Store, ns: str, tmp_path: Path) -> None:
    service = MemoryService(store, make_settings(tmp_path), clock=fixed_clock())
    m = component_world(service, ns)
    # The 6 newest memories are 5..10: seeds 5 (one link), 6 and 7.
    found, note = causal_components(store, ns, top=5, total=10, window=6, max_depth=1)
    assert note == "started from the 6 newest of 10 memories; stopped after 1 rounds of links"
    assert [(c.seed_id, c.size, c.links, c.complete) for c in found] == [
        (m[4], 2, 1, False),  # 5 and 4 seen; 4's other links were never followed
        (m[5], 2, 1, True),  # same size and links: by seed rank (degree, then id)
    ]
    found, note = causal_components(store, ns, top=5, total=10, max_nodes=3)
    assert note == "stopped at 3 memories visited"
    assert sum(c.size for c in found) == 3


def test_overview_links_are_counted_as_exported(store: Store, ns: str, tmp_path: Path) -> None:
    service = MemoryService(store, make_settings(tmp_path), clock=fixed_clock())
    component_world(service, ns)
    causal = [
        item
        for item in service.export(ns)
        if isinstance(item, Link) and item.kind in (LinkKind.CAUSES, LinkKind.PRECEDES)
    ]
    got = overview(store, ns)
    assert sum(c.links for c in got.components) == len(causal)
