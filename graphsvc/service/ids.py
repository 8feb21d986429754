"""Ids derived from content: a memory written without an id gets a UUIDv5 of its namespace and
content, so that writing the same memory again (re-ingesting a file) is a no-op."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from uuid import UUID

from graphsvc.model import MemoryInput, uuid_of_int
from graphsvc.store.journal import isoformats

# Ids derived from content live in this UUIDv5 namespace, so that re-ingesting a file is a no-op.
CONTENT_ID_NAMESPACE = UUID("6f1c1e0e-5b7a-4d0e-9a53-9b8f3f2c6a10")

_CONTENT_ID_PREFIX = CONTENT_ID_NAMESPACE.bytes
# UUID(bytes=..., version=5): clear the variant and version bits, then set RFC 4122's variant
# and version 5 (what uuid.uuid5 does through UUID.__init__).
_VERSION_MASK = ~((0xC000 << 48) | (0xF000 << 64))
_VERSION_BITS = (0x8000 << 48) | (5 << 76)


def content_id(namespace: str, item: MemoryInput) -> UUID:
    """The id of a memory written without one: a UUIDv5 of its namespace and content (the
    item's own ``id``, if any, plays no part).

    Fields are length-prefixed (``len:value``; a missing value is ``-``), so no two different
    contents share a name whatever characters they hold. The same UUID as
    ``uuid.uuid5(CONTENT_ID_NAMESPACE, name)``, without its checks (one per memory written).
    """
    occurred = item.occurred_at
    return _derived_id(_head(namespace), item, None if occurred is None else occurred.isoformat())


def content_ids(namespace: str, items: Sequence[MemoryInput]) -> list[UUID]:
    """Each item's id: its own, or :func:`content_id` (a write's batch at once: the times'
    ISO forms from one call)."""
    head = _head(namespace)
    times = iter(isoformats([t for item in items if (t := item.occurred_at) is not None]))
    ids: list[UUID] = []
    for item in items:
        iso = None if item.occurred_at is None else next(times)  # one per timed item, id or not
        ids.append(item.id or _derived_id(head, item, iso))
    return ids


def _head(namespace: str) -> str:
    return f"{len(namespace)}:{namespace}"


def _derived_id(head: str, item: MemoryInput, occurred: str | None) -> UUID:
    """:func:`content_id` of ``item`` in the namespace whose prefix is ``head``, given its
    ``occurredAt`` in ISO form."""
    kind, text, source = item.kind, item.text, item.source
    name = (
        f"{head}{len(kind)}:{kind}{len(text)}:{text}"
        f"{'-' if occurred is None else f'{len(occurred)}:{occurred}'}"
        f"{'-' if source is None else f'{len(source)}:{source}'}"
    )
    if tags := item.tags:
        name += "".join([f"{len(tag)}:{tag}" for tag in tags])
    if item.valid_from is not None or item.valid_until is not None:
        # Only a memory with a validity names it (after a marker no tag list can end with), so
        # the ids of memories without one are those graphsvc always derived.
        name += "\x1fvalid" + "".join(
            "-" if t is None else f"{len(iso := t.isoformat())}:{iso}"
            for t in (item.valid_from, item.valid_until)
        )
    digest = hashlib.sha1(_CONTENT_ID_PREFIX + name.encode("utf-8"), usedforsecurity=False)
    return uuid_of_int((int.from_bytes(digest.digest()[:16]) & _VERSION_MASK) | _VERSION_BITS)
