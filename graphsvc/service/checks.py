"""The service's checks of input: names, text, ranges, a memory's interval and restored times.

Every surface refuses the same things with the same messages because every room of
:class:`~graphsvc.service.MemoryService` checks through these functions. They are pure: the limits
they compare against are passed in (from the settings), so nothing here reads a store or a clock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from uuid import UUID

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import NAMESPACE_RE, MemoryInput, as_utc, unicode_problem

_RUN_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")

_NIL_ID = str(UUID(int=0))


def check_namespace(namespace: str) -> str:
    if not NAMESPACE_RE.match(namespace):
        raise BadInputError(
            f"invalid namespace {namespace!r}: use 1-64 letters, digits, '_' or '-'"
        )
    return namespace


def check_run_id(run_id: str) -> str:
    if not _RUN_ID_RE.match(run_id):
        raise BadInputError(
            f"invalid run id {run_id!r}: use 1-128 letters, digits, '_', '.', ':' or '-'"
        )
    return run_id


def check_text(text: str, what: str, limit: int) -> None:
    """Refuse a text that is blank, not valid Unicode, or longer than ``limit`` characters
    (``GRAPHSVC_MAX_TEXT_CHARS``); ``what`` names it in the message."""
    if not text or text.isspace():  # as `not text.strip()`, without the copy
        raise BadInputError(f"{what} is empty: send some text")
    problem = unicode_problem(text)
    if problem is not None:
        raise BadInputError(f"{what}: {problem}")
    if len(text) > limit:
        raise LimitExceededError(
            f"{what} has {len(text)} characters; the limit is {limit} "
            "(GRAPHSVC_MAX_TEXT_CHARS): split it into several memories"
        )


def in_range(name: str, value: int | float, low: int | float, high: int | float) -> None:
    """Refuse ``value`` below ``low`` (bad input) or above ``high`` (a limit)."""
    if value < low:
        raise BadInputError(f"{name} must be at least {low}, got {value}")
    if value > high:
        raise LimitExceededError(f"{name} must be at most {high}, got {value}")


def check_interval(item: MemoryInput, recorded_at: datetime, position: int | None = None) -> None:
    """Refuse a memory that would never be true: a ``validUntil`` at or before its start, which
    is its ``validFrom``, else its ``occurredAt``, else when it is written (``recorded_at``).
    (``validFrom`` against ``validUntil`` is checked by :class:`MemoryInput` itself.)

    Raises:
        BadInputError: the message names the field, the start it was checked against and, for
            a memory of a batch (``position``), which one.
    """
    end = item.valid_until
    if end is None:
        return
    if item.valid_from is not None:
        start, what = item.valid_from, "its validFrom"
    elif item.occurred_at is not None:
        start, what = item.occurred_at, "its occurredAt"
    else:
        start, what = recorded_at, "when it is written, as it has no validFrom or occurredAt"
    if end > start:
        return
    where = "" if position is None else f"memory {position} of the write: "
    raise BadInputError(
        f"{where}validUntil ({end.isoformat()}) must be after the memory's start, {what} "
        f"({start.isoformat()}): such a memory would never be true. Give validFrom (when it "
        "became true) or a later validUntil; nothing was written"
    )


def restored_times(
    now: Sequence[datetime], restored: Sequence[datetime | None], field: str
) -> list[datetime]:
    """The times of a write whose items may carry the time an export recorded (``restored``,
    None: the write's own time, ``now``).

    Raises:
        BadInputError: the lengths differ, or a restored time is later than the write (a time
            that has not come cannot have been recorded).
    """
    if len(restored) != len(now):
        raise BadInputError(f"{len(restored)} {field} times for {len(now)} items")
    times: list[datetime] = []
    for at, (mine, theirs) in enumerate(zip(now, restored, strict=True)):
        if theirs is None:
            times.append(mine)
            continue
        theirs = as_utc(theirs)
        if theirs > mine:
            raise BadInputError(
                f"item {at}: {field} ({theirs.isoformat()}) is later than now "
                f"({mine.isoformat()}): an import restores times that were recorded, never "
                "future ones"
            )
        times.append(theirs)
    return times


def known_bound(at: datetime) -> tuple[datetime, str]:
    """The page key (:meth:`Store.list_memories` ``after``) below which exactly the memories
    recorded at or before ``at`` lie: one microsecond later (the stores' precision) with the
    least id, which no memory's id is below."""
    return at + timedelta(microseconds=1), _NIL_ID
