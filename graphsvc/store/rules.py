"""What both stores decide and say the same way (parity depends on the exact words): which
memories of a write are new, how an erase redacts context events, and the errors of writes."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from uuid import UUID

from graphsvc.errors import BadInputError, ConflictError, NotFoundError
from graphsvc.model import EraseFilter, EraseReceipt, Link, Memory


def split_upsert(
    memories: Sequence[Memory],
    stored: Callable[[UUID], Memory | None],
) -> tuple[list[Memory], list[UUID]]:
    """Which memories of a write are new (``created``) and which are already there with the same
    content (``unchanged``), in input order; a repeat inside the batch counts as unchanged.

    Ids are scoped to the namespace: the same id may name a memory in another namespace, and
    nothing here (no answer, no error) depends on whether it does.

    Args:
        stored: the namespace's memory with an id, or None.

    Raises:
        ConflictError: an id the namespace holds with other content.
    """
    created: list[Memory] = []
    unchanged: list[UUID] = []
    batch: dict[int, Memory] = {}  # by id.int: integers hash in C, UUIDs in Python
    for memory in memories:
        old = stored(memory.id) or batch.get(memory.id.int)
        if old is not None:
            if not old.same_content(memory):
                raise ConflictError(
                    f"memory {memory.id} exists with different content; forget it first or "
                    "write the new content under a new id"
                )
            unchanged.append(memory.id)
            continue
        batch[memory.id.int] = memory
        created.append(memory)
    return created, unchanged


#: What an erase leaves in a context event's detail in place of an erased memory's id.
ERASED = "[erased]"
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def uuids_in(detail: str | None) -> set[str]:
    """The UUIDs (lowercase, hyphenated: how graphsvc writes ids) a context event's detail
    names."""
    return set(_UUID_RE.findall(detail)) if detail else set()


def redact(detail: str, erased: Callable[[str], bool]) -> str:
    """A detail with every id ``erased`` says was erased replaced by :data:`ERASED`."""
    return _UUID_RE.sub(lambda found: ERASED if erased(found.group(0)) else found.group(0), detail)


def erase_started(namespace: str, spec: EraseFilter, at: datetime) -> EraseReceipt:
    """The receipt of an erase before its first batch: nothing removed, not complete."""
    return EraseReceipt(
        namespace=namespace,
        filter=spec,
        memories=0,
        links=0,
        beliefs=0,
        events=0,
        erased_at=at,
        complete=False,
    )


def nothing_to_erase() -> BadInputError:
    return BadInputError(
        "say what to erase: everything=true for the whole namespace, or a tag, a source, or a "
        "time range (since, until)"
    )


def link_end_missing(link: Link, end: UUID, namespace: str) -> NotFoundError:
    return NotFoundError(
        f"cannot link {link.source} -> {link.target}: memory {end} does not exist in namespace "
        f"{namespace!r}; write it first"
    )


def supersedes_cycle(memory_id: UUID | str) -> BadInputError:
    return BadInputError(
        f"SUPERSEDES links would form a cycle through memory {memory_id}: a newer memory cannot "
        "be superseded by one it supersedes"
    )


def memory_missing(memory_id: UUID, namespace: str) -> NotFoundError:
    return NotFoundError(f"memory {memory_id} does not exist in namespace {namespace!r}")


def belief_memory_missing(memory_id: UUID | str) -> NotFoundError:
    return NotFoundError(f"belief names memories that do not exist: {memory_id}")


def no_assembled_event(run_id: str, step: int) -> NotFoundError:
    return NotFoundError(
        f"run {run_id!r} has no 'assembled' event at step {step}: call promptBundle with this "
        "runId and step first"
    )


__all__ = [
    "ERASED",
    "belief_memory_missing",
    "erase_started",
    "link_end_missing",
    "memory_missing",
    "no_assembled_event",
    "nothing_to_erase",
    "redact",
    "split_upsert",
    "supersedes_cycle",
    "uuids_in",
]
