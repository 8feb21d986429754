"""Links and erasure: ``link``, ``link_many``, ``add_links``; ``forget`` (one memory) and
``erase`` (a namespace, or what filters match)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from uuid import UUID

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import EraseFilter, EraseReceipt, ForgetReceipt, Link, LinkInput
from graphsvc.service.checks import restored_times
from graphsvc.service.core import ServiceCore
from graphsvc.store.rules import nothing_to_erase


class LinksAndErase(ServiceCore):
    """The service's links between memories, and the removal of memories with their links."""

    def link(self, namespace: str, item: LinkInput) -> Link:
        """Link two existing memories of the namespace."""
        return self.link_many(namespace, [item])[0]

    def link_many(self, namespace: str, items: Sequence[LinkInput]) -> list[Link]:
        """Create links, all or nothing: both ends must exist, no self-link, no SUPERSEDES cycle.
        Returns them as stored (a link that existed keeps its ``createdAt``)."""
        links = self.add_links(namespace, items)
        stored = {
            (lk.source, lk.target, lk.kind): lk
            for lk in self.store.links_of(namespace, sorted({i.source for i in items}, key=str))
        }
        return [stored[(lk.source, lk.target, lk.kind)] for lk in links]

    def add_links(
        self,
        namespace: str,
        items: Sequence[LinkInput],
        created: Sequence[datetime | None] | None = None,
    ) -> list[Link]:
        """As :meth:`link_many`, without reading the links back (for bulk loads). ``created``:
        a ``createdAt`` to restore per link (None: the write's time), for an import of what an
        export recorded."""
        self.check_namespace(namespace)
        if len(items) > self.settings.max_batch:
            raise LimitExceededError(
                f"{len(items)} links in one write; the limit is {self.settings.max_batch}"
            )
        for item in items:
            if item.source == item.target:
                raise BadInputError(f"cannot link memory {item.source} to itself")
        now = self.clock.now()
        times = [now] * len(items)
        if created is not None:
            times = restored_times(times, created, "createdAt")
        links = [
            Link(
                source=i.source,
                target=i.target,
                kind=i.kind,
                weight=i.weight,
                note=i.note,
                created_at=at,
            )
            for i, at in zip(items, times, strict=True)
        ]
        self.store.add_links(namespace, links)
        return links

    def forget(self, namespace: str, memory_id: UUID) -> ForgetReceipt:
        """Remove a memory, its links and the beliefs built on it; say what was removed."""
        self.check_namespace(namespace)
        return self.store.forget(namespace, memory_id, at=self.clock.now())

    def erase(
        self,
        namespace: str,
        *,
        everything: bool = False,
        tag: str | None = None,
        source: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        progress: Callable[[EraseReceipt], None] | None = None,
    ) -> EraseReceipt:
        """Erase the whole namespace, or every memory matching all the filters given (a tag, a
        source, a time range ``since <= when < until`` with ``when`` = occurredAt, else
        recordedAt), with their links and the beliefs built on them; say what was removed.

        Term statistics stay exact. Context events are kept, but every id of an erased memory
        in their detail becomes ``[erased]``; ``everything`` also removes the namespace's runs,
        context events and statistics. Large erases work in batches of GRAPHSVC_ERASE_BATCH
        (Neo4j), each atomic: an erase that was interrupted, or that answered ``complete=False``
        at GRAPHSVC_ERASE_TIME_BUDGET, is finished by calling it again with the same input.

        Args:
            progress: called with the receipt so far after each durable batch.

        Raises:
            BadInputError: nothing to erase was named, ``everything`` was combined with a
                filter, a blank tag or source, or an empty time range.
        """
        self.check_namespace(namespace)
        spec = EraseFilter(everything=everything, tag=tag, source=source, since=since, until=until)
        if spec.is_empty:
            raise nothing_to_erase()
        if everything and any(v is not None for v in (tag, source, since, until)):
            raise BadInputError(
                "everything=true erases the whole namespace: send it without tag, source, since "
                "or until (or drop everything to erase only what the filters match)"
            )
        for name, value in (("tag", tag), ("source", source)):
            if value is not None and not value.strip():
                raise BadInputError(f"{name} is empty: name the {name} to erase, or leave it out")
        if spec.since is not None and spec.until is not None and spec.since >= spec.until:
            raise BadInputError(
                f"since ({spec.since.isoformat()}) must be before until ({spec.until.isoformat()})"
            )
        s = self.settings
        return self.store.erase(
            namespace,
            spec,
            at=self.clock.now(),
            batch_size=s.erase_batch,
            time_budget=s.erase_time_budget,
            progress=progress,
        )
