"""Reads of memories and links: ``get_memory``, ``get_memories``, ``history``, ``links_of``,
``list_memories``; and the validity a read gives each memory it returns (:func:`with_ends`,
:func:`validities`), which the writes and the recall read through too."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

from graphsvc import validity
from graphsvc.errors import BadInputError
from graphsvc.model import AsOf, AsOfMode, Link, Memory, MemoryValidity, ValidityInterval
from graphsvc.service.checks import known_bound
from graphsvc.service.clock import ServiceClock
from graphsvc.service.core import ServiceCore
from graphsvc.store.base import Store

#: Members of a fact's history at most (:meth:`Reads.history`).
HISTORY_MAX = 200


def with_ends(
    store: Store, namespace: str, memories: Sequence[Memory], when: AsOf | None = None
) -> list[Memory]:
    """``memories`` with ``invalidatedAt`` set to when each stops being true (its
    ``validUntil`` or the start of the earliest memory that SUPERSEDES it; ``when`` KNOWN:
    as known then): computed from the links when read, never stored (one store call)."""
    if not memories:
        return list(memories)
    successors = store.successors(namespace, [m.id for m in memories], when)
    end_of = validity.ends(memories, successors)
    return [
        m
        if end_of[m.id] == m.invalidated_at
        else m.model_copy(update={"invalidated_at": end_of[m.id]})
        for m in memories
    ]


def validities(
    store: Store,
    namespace: str,
    memories: Sequence[Memory],
    when: AsOf | None,
    clock: ServiceClock,
) -> dict[UUID, MemoryValidity]:
    """Each memory's effective validity at the instant a read answers for: ``when``, else
    now by ``clock`` (:func:`graphsvc.validity.validities`; one store call)."""
    if not memories:
        return {}
    successors = store.successors(namespace, [m.id for m in memories], when)
    return validity.validities(memories, successors, clock.instant() if when is None else when.at)


class Reads(ServiceCore):
    """The service's reads of stored memories and links, each memory with its validity."""

    def get_memory(self, namespace: str, memory_id: UUID) -> Memory | None:
        """A memory of the namespace, or None; ``invalidatedAt`` says when it stops being true."""
        found = self.get_memories(namespace, [memory_id])
        return found[0] if found else None

    def get_memories(self, namespace: str, ids: Sequence[UUID]) -> list[Memory]:
        """The namespace's memories with these ids, in the order asked; ``invalidatedAt`` says
        when each stops being true (:func:`with_ends`)."""
        self.check_namespace(namespace)
        return with_ends(self.store, namespace, self.store.get_memories(namespace, ids))

    def history(self, namespace: str, memory_id: UUID) -> list[ValidityInterval]:
        """A memory's chain of supersessions, both ways, oldest first, each member with its
        effective validity (:func:`graphsvc.validity.history`); empty when it is not stored."""
        self.check_namespace(namespace)
        memories, links = self.store.supersession_chain(namespace, memory_id, HISTORY_MAX)
        return [
            interval.model_copy(
                update={
                    "memory": interval.memory.model_copy(
                        update={"invalidated_at": interval.valid_until}
                    )
                }
            )
            for interval in validity.history(memories, links)
        ]

    def links_of(self, namespace: str, ids: Sequence[UUID]) -> list[Link]:
        """Every link touching one of ``ids`` (one store call)."""
        self.check_namespace(namespace)
        return self.store.links_of(namespace, ids)

    def list_memories(
        self,
        namespace: str,
        *,
        after: tuple[datetime, str] | None = None,
        limit: int,
        kind: str | None = None,
        tag: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        known_as_of: datetime | None = None,
    ) -> list[Memory]:
        """A page of memories, newest first (see :meth:`Store.list_memories`).

        ``known_as_of``: only memories recorded at or before that instant (the KNOWN view of
        the past: the list as memory held it then). The list is ordered by ``recordedAt``, so
        this is a bound on the page's key, and a page still costs the page.

        Raises:
            BadInputError: the page size is below 1, or ``known_as_of`` has no time zone.
        """
        self.check_namespace(namespace)
        if limit < 1:
            raise BadInputError(f"the page size must be at least 1, got {limit}")
        if known_as_of is not None:
            if known_as_of.utcoffset() is None:
                raise BadInputError(
                    f"knownAsOf {known_as_of.isoformat()} has no time zone: give one "
                    "(2024-03-11T00:00:00Z)"
                )
            bound = known_bound(known_as_of.astimezone(UTC))
            after = bound if after is None else min(after, bound)
        page = self.store.list_memories(
            namespace, after=after, limit=limit, kind=kind, tag=tag, since=since, until=until
        )
        when = None if known_as_of is None else AsOf(at=known_as_of, mode=AsOfMode.KNOWN)
        return with_ends(self.store, namespace, page, when)
