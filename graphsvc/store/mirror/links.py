"""The embedded store's links: tuples in adjacency lists per memory key (:class:`LinkGraph`), their
log rows, and the :class:`~graphsvc.model.Link` built from one only when a read returns it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from graphsvc.model import Link, LinkKind, construct
from graphsvc.store.candidates import micros
from graphsvc.store.mirror.table import MemoryTable, from_micros, key_of

_KINDS = {kind.value: kind for kind in LinkKind}


#: A link as the graph holds it: (source key, target key, kind, weight, created µs, note).
LinkTuple = tuple[int, int, str, float, int, str | None]


_SUPERSEDES = "SUPERSEDES"


class LinkGraph:
    """The links of one namespace: per memory key, its outgoing and incoming links as tuples
    (only memories with links have entries). At most one link per (source, target, kind).

    ``superseded`` counts, per memory key, its incoming SUPERSEDES links (only keys that have
    one): an as-of read checks the few candidates a newer memory may have closed, not every
    candidate's incoming links."""

    def __init__(self) -> None:
        self.out: dict[int, list[LinkTuple]] = {}
        self.inn: dict[int, list[LinkTuple]] = {}
        self.superseded: dict[int, int] = {}
        self.count = 0

    def find(self, source: int, target: int, kind: str) -> LinkTuple | None:
        """The link of this kind from source to target, or None."""
        for found in self.out.get(source, ()):
            if found[1] == target and found[2] == kind:
                return found
        return None

    def add(self, link: LinkTuple) -> None:
        """Add a link, or replace the one with the same ends and kind."""
        source, target, kind = link[0], link[1], link[2]
        old = self.find(source, target, kind)
        if old is not None:
            outs, ins = self.out[source], self.inn[target]
            outs[outs.index(old)] = link
            ins[ins.index(old)] = link
            return
        self.out.setdefault(source, []).append(link)
        self.inn.setdefault(target, []).append(link)
        if kind == _SUPERSEDES:
            self.superseded[target] = self.superseded.get(target, 0) + 1
        self.count += 1

    def add_many(self, links: Iterable[LinkTuple]) -> None:
        """:meth:`add` each link in turn (the same graph, the same order in every list), with
        the lists looked up once per link: what a load does for a snapshot's or a log
        record's links."""
        out, inn, superseded = self.out, self.inn, self.superseded
        out_get, inn_get = out.get, inn.get
        added = 0
        for link in links:
            source, target = link[0], link[1]
            outs = out_get(source)
            if outs is None:
                out[source] = [link]
            else:
                kind = link[2]
                for old in outs:
                    if old[1] == target and old[2] == kind:
                        break
                else:
                    outs.append(link)
                    old = None
                if old is not None:  # the same ends and kind: replaced
                    self.count += added
                    added = 0
                    self.add(link)
                    continue
            ins = inn_get(target)
            if ins is None:
                inn[target] = [link]
            else:
                ins.append(link)
            if link[2] == _SUPERSEDES:
                superseded[target] = superseded.get(target, 0) + 1
            added += 1
        self.count += added

    def touching(self, key: int) -> list[LinkTuple]:
        """The links from and to a memory (a self-link twice)."""
        return [*self.out.get(key, ()), *self.inn.get(key, ())]

    def outgoing(self, key: int) -> list[LinkTuple]:
        """The links from a memory."""
        return self.out.get(key, [])

    def neighbours(self, key: int) -> Iterator[int]:
        """The keys of memories linked to or from ``key`` (repeats possible)."""
        for link in self.out.get(key, ()):
            yield link[1]
        for link in self.inn.get(key, ()):
            yield link[0]

    def remove_node(self, key: int) -> None:
        """Remove every link from or to a memory."""
        superseded = self.superseded
        for link in self.out.pop(key, ()):
            if link[1] != key:
                self._drop(self.inn, link[1], link)
                if link[2] == _SUPERSEDES:
                    left = superseded[link[1]] - 1
                    if left:
                        superseded[link[1]] = left
                    else:
                        del superseded[link[1]]
            self.count -= 1
        superseded.pop(key, None)
        for link in self.inn.pop(key, ()):
            if link[0] != key:
                self._drop(self.out, link[0], link)
                self.count -= 1

    @staticmethod
    def _drop(index: dict[int, list[LinkTuple]], key: int, link: LinkTuple) -> None:
        links = index[key]
        links.remove(link)
        if not links:
            del index[key]

    def links(self) -> Iterable[LinkTuple]:
        """Every link."""
        for links in self.out.values():
            yield from links

    def copy(self) -> LinkGraph:
        """A consistent copy of the outgoing lists (what a snapshot writes)."""
        other = LinkGraph()
        other.out = {key: list(links) for key, links in self.out.items()}
        other.count = self.count
        return other


def link_tuple(link: Link) -> LinkTuple:
    """A link as the graph holds it."""
    return (
        link.source.int,
        link.target.int,
        link.kind.value,
        link.weight,
        micros(link.created_at),
        link.note,
    )


def link_tuple_from_row(row: Sequence[Any]) -> LinkTuple:
    """A link from its log row (:func:`~graphsvc.store.mirror.rows.log_link_row`)."""
    src, dst, kind, weight, created, note = row
    if kind not in _KINDS or not isinstance(created, str):
        raise ValueError(f"not a link row: {row!r}"[:200])
    if note is not None and not isinstance(note, str):
        raise TypeError(f"not a link row: {row!r}"[:200])
    created_us = micros(datetime.fromisoformat(created))
    return (key_of(src), key_of(dst), kind, weight, created_us, note)


def link_tuples_from_rows(rows: Iterable[Sequence[Any]]) -> list[LinkTuple]:
    """:func:`link_tuple_from_row` of each row (a log record's links), each distinct creation
    time and id parsed once (a batch of links shares its time, and many of its ends).

    Raises:
        ValueError, TypeError: a row that is not a link row (as :func:`link_tuple_from_row`).
    """
    created_of: dict[str, int] = {}
    key_from: dict[str, int] = {}
    links: list[LinkTuple] = []
    append = links.append
    for row in rows:
        src, dst, kind, weight, created, note = row
        if kind not in _KINDS or not isinstance(created, str):
            raise ValueError(f"not a link row: {row!r}"[:200])
        if note is not None and not isinstance(note, str):
            raise TypeError(f"not a link row: {row!r}"[:200])
        created_us = created_of.get(created)
        if created_us is None:
            created_us = created_of[created] = micros(datetime.fromisoformat(created))
        source = key_from.get(src)
        if source is None:
            source = key_from[src] = key_of(src)
        target = key_from.get(dst)
        if target is None:
            target = key_from[dst] = key_of(dst)
        append((source, target, kind, weight, created_us, note))
    return links


def make_link(link: LinkTuple, table: MemoryTable) -> Link:
    """The :class:`Link` of a tuple whose ends are stored."""
    source, target, kind, weight, created, note = link
    return construct(
        Link,
        {
            "source": table.uuid(source),
            "target": table.uuid(target),
            "kind": _KINDS[kind],
            "weight": weight,
            "created_at": from_micros(created),
            "note": note,
        },
    )


def link_row(link: LinkTuple) -> list[Any]:
    """A link tuple in the log's form (:func:`~graphsvc.store.mirror.rows.log_link_row`)."""
    source, target, kind, weight, created, note = link
    return [
        str(UUID(int=source)),
        str(UUID(int=target)),
        kind,
        weight,
        from_micros(created).isoformat(),
        note,
    ]
