"""An overview of a namespace: how many memories it has by kind, tag, source and day, and its
largest causal components (memories joined by CAUSES and PRECEDES links).

No part of it reads every memory. The counts are what the stores keep at write time
(:meth:`~graphsvc.store.base.Store.facet_counts`: the cost is a facet's distinct values). The
components are found from a bounded start: the :data:`SEED_WINDOW` newest memories, the most
causally linked of them first, walked breadth-first over causal links for at most
:data:`MAX_DEPTH` rounds and :data:`MAX_NODES` memories; an overview says when a bound cut it
short, and each component says whether it was seen whole.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from pydantic import Field

from graphsvc.errors import BadInputError
from graphsvc.model import Link, LinkKind, Model
from graphsvc.store.base import Store
from graphsvc.store.facets import FacetCounts

#: The most values of each facet an overview may list.
MAX_TOP = 20
#: The most days an overview may list.
MAX_DAYS = 366
#: Where the components start: the newest memories of the namespace.
SEED_WINDOW = 500
#: The most memories a component search visits, and its rounds of links.
MAX_NODES = 2_000
MAX_DEPTH = 64
#: Member ids a component lists, and characters of its seed's text.
SAMPLE_IDS = 10
SEED_TEXT = 160
#: The link kinds that make a causal component.
CAUSAL = frozenset({LinkKind.CAUSES, LinkKind.PRECEDES})


class FacetCount(Model):
    """One value of a facet and how many memories have it."""

    value: str = Field(description="The kind, tag, source or day (YYYY-MM-DD, UTC).")
    count: int = Field(description="Memories with it.")


class Facet(Model):
    """The most frequent values of one facet of the namespace (kept at write time, never counted
    by reading the memories)."""

    distinct: int = Field(description="How many distinct values the namespace has.")
    top: tuple[FacetCount, ...] = Field(
        description="The values with the most memories, most first (ties by value); for days, "
        "the latest days that have memories, newest first."
    )


class CausalComponent(Model):
    """Memories joined by CAUSES and PRECEDES links (in either direction)."""

    seed_id: UUID = Field(description="Its most linked memory among the newest ones.")
    seed_text: str = Field(description="The start of that memory's text.")
    size: int = Field(description="Memories in it (as far as it was seen).")
    links: int = Field(description="CAUSES and PRECEDES links between them.")
    complete: bool = Field(
        description="Whether it was seen whole (false: a bound stopped the walk inside it)."
    )
    member_ids: tuple[UUID, ...] = Field(description=f"Up to {SAMPLE_IDS} of its memories, by id.")


class Overview(Model):
    """A namespace at a glance: counts by kind, tag, source and day, and the largest causal
    components."""

    namespace: str = Field(description="The namespace (the caller's).")
    memories: int = Field(description="Live memories.")
    kinds: Facet = Field(description="Memories by kind.")
    tags: Facet = Field(description="Memories by tag (a memory counts once for each tag).")
    sources: Facet = Field(description="Memories by source (those without one are not counted).")
    days: Facet = Field(description="Memories by day of occurredAt (recordedAt without one).")
    components: tuple[CausalComponent, ...] = Field(
        description="The largest causal components found, largest first."
    )
    components_note: str | None = Field(
        default=None,
        description="How the component search was bounded, when a bound applied (null: every "
        "memory was a possible start and no walk was cut short).",
    )


def overview(store: Store, namespace: str, top: int = 10, days: int = 31) -> Overview:
    """The overview of a namespace.

    Raises:
        BadInputError: ``top`` not in 1..:data:`MAX_TOP` or ``days`` not in 1..:data:`MAX_DAYS`.
    """
    if not 1 <= top <= MAX_TOP:
        raise BadInputError(f"top must be between 1 and {MAX_TOP}, got {top}")
    if not 1 <= days <= MAX_DAYS:
        raise BadInputError(f"days must be between 1 and {MAX_DAYS}, got {days}")
    total = store.stats(namespace).memories
    components, note = causal_components(store, namespace, top=top, total=total)
    return Overview(
        namespace=namespace,
        memories=total,
        kinds=_facet(store.facet_counts(namespace, "kind", top)),
        tags=_facet(store.facet_counts(namespace, "tag", top)),
        sources=_facet(store.facet_counts(namespace, "source", top)),
        days=_facet(store.facet_counts(namespace, "day", days)),
        components=tuple(components),
        components_note=note,
    )


def as_of_days(store: Store, namespace: str, mode: str, days: int = MAX_DAYS) -> list[str]:
    """The latest ``days`` days on which the ``mode`` view of the past changes, oldest first:
    VALID, the days validity starts or ends (the ``valid`` facet); KNOWN, the days memories
    were recorded (``recorded``). Read from the kept counts: the cost is the days, never the
    memories.

    Raises:
        BadInputError: ``days`` not in 1..:data:`MAX_DAYS`, or an unknown mode.
    """
    if not 1 <= days <= MAX_DAYS:
        raise BadInputError(f"days must be between 1 and {MAX_DAYS}, got {days}")
    facet = {"VALID": "valid", "KNOWN": "recorded"}.get(mode)
    if facet is None:
        raise BadInputError(f"mode must be KNOWN or VALID, got {mode!r}")
    return sorted(value for value, _ in store.facet_counts(namespace, facet, days).top)


def _facet(counts: FacetCounts) -> Facet:
    return Facet(
        distinct=counts.distinct,
        top=tuple(FacetCount(value=value, count=count) for value, count in counts.top),
    )


def causal_components(
    store: Store,
    namespace: str,
    *,
    top: int,
    total: int,
    window: int = SEED_WINDOW,
    max_nodes: int = MAX_NODES,
    max_depth: int = MAX_DEPTH,
) -> tuple[list[CausalComponent], str | None]:
    """The ``top`` largest causal components reached from the ``window`` newest memories, and a
    note on the bounds that applied (None: none did). ``total``: the namespace's memories.

    Deterministic on every store: seeds are taken by causal degree (descending) then id, each
    round expands its frontier in id order, and a frontier past ``max_nodes`` is cut in id
    order. One :meth:`~graphsvc.store.base.Store.links_of` call per round."""
    recent = store.list_memories(
        namespace, after=None, limit=window, kind=None, tag=None, since=None, until=None
    )
    texts = {memory.id: memory.text for memory in recent}
    first = _causal(store.links_of(namespace, list(texts)))
    seeds = _by_degree(first, texts)
    rank = {mid: n for n, mid in enumerate(seeds)}
    notes: list[str] = []
    if total > len(recent):
        notes.append(f"started from the {len(recent)} newest of {total} memories")
    walk = _Walk.from_seeds(store, namespace, seeds, first, max_nodes, max_depth)
    members, counted = _union(walk.visited, walk.links)
    made = []
    for head, group in members.items():
        seed = min((mid for mid in group if mid in rank), key=rank.__getitem__)
        made.append(
            CausalComponent(
                seed_id=seed,
                seed_text=texts[seed][:SEED_TEXT],
                size=len(group),
                links=counted[head],
                complete=all(mid in walk.expanded for mid in group),
                member_ids=tuple(sorted(group, key=str)[:SAMPLE_IDS]),
            )
        )
    made.sort(key=lambda c: (-c.size, -c.links, rank[c.seed_id]))
    return made[:top], "; ".join(dict.fromkeys([*notes, *walk.notes])) or None


def _by_degree(links: Sequence[Link], texts: Mapping[UUID, str]) -> list[UUID]:
    """The memories of ``texts`` that ``links`` touch, most touched first (ties by id)."""
    degree: Counter[UUID] = Counter()
    for link in links:
        for end in {link.source, link.target}:
            if end in texts:
                degree[end] += 1
    return sorted(degree, key=lambda mid: (-degree[mid], str(mid)))


@dataclass
class _Walk:
    """A breadth-first walk over causal links: the memories it reached, those whose links it
    read, the links between reached memories, and the bounds that stopped it."""

    visited: set[UUID]
    expanded: set[UUID] = field(default_factory=set)
    links: dict[tuple[UUID, UUID, LinkKind], None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_seeds(
        cls,
        store: Store,
        namespace: str,
        seeds: Sequence[UUID],
        first: list[Link],
        max_nodes: int,
        max_depth: int,
    ) -> _Walk:
        """Walk from ``seeds`` (whose causal links are ``first``), at most ``max_depth`` rounds
        and ``max_nodes`` memories."""
        walk = cls(visited=set(seeds[:max_nodes]))
        if len(seeds) > max_nodes:
            walk.notes.append(f"stopped at {max_nodes} memories visited")
        frontier = sorted(walk.visited, key=str)
        found = first
        depth = 0
        while frontier:
            if depth == max_depth:
                walk.notes.append(f"stopped after {max_depth} rounds of links")
                break
            if depth:
                found = _causal(store.links_of(namespace, frontier))
            frontier = walk.round(frontier, found, max_nodes)
            depth += 1
        return walk

    def round(self, frontier: list[UUID], found: list[Link], max_nodes: int) -> list[UUID]:
        """Expand ``frontier`` over its causal links ``found``; the next frontier, in id order
        and cut at ``max_nodes`` memories visited."""
        self.expanded.update(frontier)
        fresh: set[UUID] = set()
        for link in found:
            if link.source in self.expanded or link.target in self.expanded:
                fresh.update(end for end in (link.source, link.target) if end not in self.visited)
        room = max_nodes - len(self.visited)
        new = sorted(fresh, key=str)
        if len(new) > room:
            new = new[:room]
            self.notes.append(f"stopped at {max_nodes} memories visited")
        self.visited.update(new)
        for link in found:
            if link.source in self.visited and link.target in self.visited:
                self.links[(link.source, link.target, link.kind)] = None
        return new


def _union(
    visited: set[UUID], links: Collection[tuple[UUID, UUID, LinkKind]]
) -> tuple[dict[UUID, list[UUID]], Counter[UUID]]:
    """The components of ``visited`` joined by ``links`` (union-find, the smallest id as text
    for a root): the members of each by its root, and the links within each."""
    parent = {mid: mid for mid in visited}

    def root(mid: UUID) -> UUID:
        while parent[mid] != mid:
            parent[mid] = parent[parent[mid]]
            mid = parent[mid]
        return mid

    for source, target, _ in links:
        a, b = root(source), root(target)
        if a != b:
            parent[max(a, b, key=str)] = min(a, b, key=str)
    members: dict[UUID, list[UUID]] = {}
    for mid in visited:
        members.setdefault(root(mid), []).append(mid)
    counted: Counter[UUID] = Counter(root(source) for source, _, _ in links)
    return members, counted


def _causal(links: Sequence[Link]) -> list[Link]:
    return [link for link in links if link.kind in CAUSAL]


__all__ = [
    "MAX_DAYS",
    "MAX_TOP",
    "CausalComponent",
    "Facet",
    "FacetCount",
    "Overview",
    "as_of_days",
    "causal_components",
    "overview",
]
