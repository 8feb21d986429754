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
from datetime import UTC, datetime, time
from uuid import UUID

from graphsvc.model import (
    AsOf,
    AsOfMode,
    Link,
    LinkKind,
    Memory,
    MemoryValidity,
    Successor,
    Validity,
    ValidityInterval,
    construct,
)


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


def _end(memory: Memory, closed: datetime | None) -> datetime | None:
    """A memory's effective end: its own ``validUntil`` or ``closed`` (the earliest start of a
    memory that supersedes it), whichever is first."""
    own = memory.valid_until
    if closed is None:
        return own
    return closed if own is None else min(own, closed)


def _by_older(successors: Sequence[Successor]) -> dict[UUID, list[Successor]]:
    newer: dict[UUID, list[Successor]] = {}
    for row in successors:
        newer.setdefault(row.older, []).append(row)
    return newer


def ends(
    memories: Sequence[Memory], successors: Sequence[Successor]
) -> dict[UUID, datetime | None]:
    """Each memory's effective end (None: no end known), from the memories that SUPERSEDE
    them (:meth:`Store.successors`): what ``Memory.invalidatedAt`` says."""
    newer = _by_older(successors)
    return {
        m.id: _end(m, min((row.start for row in newer.get(m.id, ())), default=None))
        for m in memories
    }


def validities(
    memories: Sequence[Memory], successors: Sequence[Successor], at: datetime
) -> dict[UUID, MemoryValidity]:
    """Each memory's effective validity and whether it is true at ``at`` (the instant a read
    answers for), from the memories that SUPERSEDE them (:meth:`Store.successors`).

    A memory whose ``validFrom`` is after ``at`` is NOT_YET (one dated later by ``occurredAt``
    alone is a plan or a scheduled event, which its date already places, and one that starts
    when it was written has been written); one whose end is at or before ``at`` is SUPERSEDED
    when a successor's start closed it (at or before its own ``validUntil``), else EXPIRED; any
    other is CURRENT."""
    newer = _by_older(successors)
    found: dict[UUID, MemoryValidity] = {}
    for memory in memories:
        rows = newer.get(memory.id, [])
        start = memory.valid_start
        closed = min((row.start for row in rows), default=None)
        end = _end(memory, closed)
        if memory.valid_from is not None and start > at:
            state = Validity.NOT_YET
        elif end is None or at < end:
            state = Validity.CURRENT
        elif closed is not None and closed == end:
            state = Validity.SUPERSEDED
        else:
            state = Validity.EXPIRED
        found[memory.id] = construct(
            MemoryValidity,
            {
                "memory_id": memory.id,
                "valid_from": start,
                "valid_until": end,
                "superseded_by": tuple(sorted({row.newer for row in rows}, key=str)),
                "validity": state,
            },
        )
    return found


def moment_text(value: datetime) -> str:
    """A bound as the rendered texts show it: the UTC day at midnight (``2024-06-01``), else
    the minute (``2024-06-01T09:30Z``)."""
    utc = value.astimezone(UTC)
    if utc.time() == time(0):
        return utc.date().isoformat()
    return utc.strftime("%Y-%m-%dT%H:%MZ")


def instant_text(value: datetime) -> str:
    """An instant as the rendered texts show it: ISO 8601 in UTC, ``Z`` for the zone."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def as_of_phrase(when: AsOf) -> str:
    """How a text says the past it answers from: ``as of 2024-03-11T00:00:00Z (VALID)``."""
    return f"as of {instant_text(when.at)} ({when.mode.value})"


def mark(validity: MemoryValidity | None) -> str:
    """What a rendered line says after a memory that is not true at the read's instant
    (``[until 2024-06-01, superseded]``, ``[until 2024-01-01, expired]``, ``[from 2027-01-01,
    not yet true]``); empty for a current one."""
    if validity is None or validity.validity is Validity.CURRENT:
        return ""
    if validity.validity is Validity.NOT_YET:
        return f"[from {moment_text(validity.valid_from)}, not yet true]"
    end = validity.valid_until
    if end is None:  # never: a memory is closed only by an end
        return ""
    why = "superseded" if validity.validity is Validity.SUPERSEDED else "expired"
    return f"[until {moment_text(end)}, {why}]"


def marked(text: str, validity: MemoryValidity | None) -> str:
    """``text`` with its :func:`mark`, if any, after it."""
    suffix = mark(validity)
    return f"{text} {suffix}" if suffix else text


__all__ = [
    "as_of_phrase",
    "effective_end",
    "ends",
    "history",
    "instant_text",
    "mark",
    "marked",
    "moment_text",
    "validities",
    "visible",
]
