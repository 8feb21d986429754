"""Validity intervals and as-of reads: pure functions over memories and their SUPERSEDES links
(docs/design.md, validity and as-of reads).

A memory is true from its *start* (``validFrom``, else ``occurredAt``, else ``recordedAt``) until
its *end*, exclusive: its own ``validUntil``, or the start of the earliest memory that SUPERSEDES
it, whichever comes first (none: still true). The end is computed when read, from the links,
never stored: forgetting or erasing a successor then reopens the older memory with no write to
it, and both stores answer from the same data.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from graphsvc.model import AsOf, AsOfMode, Link, LinkKind, Memory, ValidityInterval


def effective_end(memory: Memory, successors: Sequence[Memory]) -> datetime | None:
    """When ``memory`` stops being true: its ``validUntil`` or the earliest start of the
    memories that SUPERSEDE it (``successors``), whichever is first; None: still true."""
    ends = [s.valid_start for s in successors]
    if memory.valid_until is not None:
        ends.append(memory.valid_until)
    return min(ends, default=None)


def visible(memory: Memory, successors: Sequence[Memory], when: AsOf) -> bool:
    """Whether ``memory`` is seen by a read as of ``when`` (``successors``: the memories that
    SUPERSEDE it; read only in VALID mode)."""
    if when.mode is AsOfMode.KNOWN:
        return memory.recorded_at <= when.at
    end = effective_end(memory, successors)
    return memory.valid_start <= when.at and (end is None or when.at < end)


def history(memories: Sequence[Memory], links: Sequence[Link]) -> list[ValidityInterval]:
    """A fact's chain of supersessions (:meth:`Store.supersession_chain`), oldest first (by
    start, then ``recordedAt``, then id), each member with its effective interval."""
    by_id = {m.id: m for m in memories}
    successors: dict[UUID, list[Memory]] = {}
    for link in links:
        if link.kind is LinkKind.SUPERSEDES and link.source in by_id and link.target in by_id:
            successors.setdefault(link.target, []).append(by_id[link.source])
    ordered = sorted(memories, key=lambda m: (m.valid_start, m.recorded_at, str(m.id)))
    return [
        ValidityInterval(
            memory=m,
            valid_from=m.valid_start,
            valid_until=effective_end(m, successors.get(m.id, [])),
            superseded_by=tuple(sorted((s.id for s in successors.get(m.id, [])), key=str)),
        )
        for m in ordered
    ]


__all__ = ["effective_end", "history", "visible"]
