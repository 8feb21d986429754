"""Time in a read: the past an as-of read answers from (:class:`AsOf`), and a memory's effective
validity at the instant a read answers for. The functions that work it out are in
:mod:`graphsvc.validity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from uuid import UUID

from pydantic import Field

from graphsvc.model.base import Model
from graphsvc.model.memory import Memory


class AsOfMode(StrEnum):
    """Which past an as-of read answers from."""

    KNOWN = "KNOWN"  # what memory held then: recorded at or before the instant (the audit view)
    VALID = "VALID"  # what was true then, by event time, as memory knows it now


AS_OF_MODE_DESCRIPTIONS: Mapping[AsOfMode, str] = {
    AsOfMode.KNOWN: "What memory held then: only memories recorded at or before the instant "
    "(and links written by then). The audit view.",
    AsOfMode.VALID: "What was true then, as memory knows it now: memories whose effective "
    "validity [start, end) holds the instant (start: validFrom, else occurredAt, else "
    "recordedAt; end: validUntil, closed earlier by a newer memory that SUPERSEDES it).",
}


class AsOf(Model):
    """The moment a read was answered as of, and which view of the past it used."""

    at: datetime = Field(description="The instant (UTC).")
    mode: AsOfMode = Field(description="KNOWN (recorded by then) or VALID (true then).")

    @property
    def at_us(self) -> int:
        """The instant in microseconds since the Unix epoch."""
        return (self.at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)

    @property
    def known(self) -> bool:
        return self.mode is AsOfMode.KNOWN


#: How every answer describes a memory's effective interval (history, capsules, beliefs).
VALID_FROM_TEXT = "When it is true from: validFrom, else occurredAt, else recordedAt."
VALID_UNTIL_TEXT = (
    "When it stops being true (exclusive): its own validUntil or the start of the earliest "
    "memory that SUPERSEDES it, whichever comes first; null: no end known."
)
SUPERSEDED_BY_TEXT = "The memories that SUPERSEDE it directly, sorted by id."


class ValidityInterval(Model):
    """One member of a fact's chain of supersessions, with its effective validity."""

    memory: Memory = Field(description="The memory.")
    valid_from: datetime = Field(description=VALID_FROM_TEXT)
    valid_until: datetime | None = Field(description=VALID_UNTIL_TEXT)
    superseded_by: tuple[UUID, ...] = Field(description=SUPERSEDED_BY_TEXT)


class Validity(StrEnum):
    """Whether a memory is true at the instant a read answers for (now, or its asOf)."""

    CURRENT = "CURRENT"
    SUPERSEDED = "SUPERSEDED"
    EXPIRED = "EXPIRED"
    NOT_YET = "NOT_YET"


VALIDITY_DESCRIPTIONS: Mapping[Validity, str] = {
    Validity.CURRENT: "True at the instant: started, not ended.",
    Validity.SUPERSEDED: "No longer true: a newer memory that SUPERSEDES it started by then.",
    Validity.EXPIRED: "No longer true: its own validUntil passed by then.",
    Validity.NOT_YET: "Not true yet: it starts after the instant.",
}


class MemoryValidity(Model):
    """A memory's effective validity, and whether it is true at the instant a read answers
    for."""

    memory_id: UUID = Field(description="The memory.")
    valid_from: datetime = Field(description=VALID_FROM_TEXT)
    valid_until: datetime | None = Field(description=VALID_UNTIL_TEXT)
    superseded_by: tuple[UUID, ...] = Field(description=SUPERSEDED_BY_TEXT)
    validity: Validity = Field(
        description="At the instant the read answers for (now, or its asOf): CURRENT, "
        "SUPERSEDED, EXPIRED or NOT_YET."
    )
