"""The memory graph: memories and links as a caller writes them and as they are stored, a
stored belief, and what a write did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Annotated, NamedTuple
from uuid import UUID

from pydantic import Field, field_validator, model_validator

from graphsvc.model.base import (
    KIND_PATTERN,
    AwareUtcDateTime,
    InputModel,
    Model,
    UtcDateTime,
)


class LinkKind(StrEnum):
    """How two memories are related."""

    CAUSES = "CAUSES"  # cause -> effect
    PRECEDES = "PRECEDES"  # earlier -> later
    RELATES_TO = "RELATES_TO"  # association
    SUPERSEDES = "SUPERSEDES"  # newer -> older (knowledge update)


# What each link kind means (the GraphQL enum values' descriptions).
LINK_KIND_DESCRIPTIONS: Mapping[LinkKind, str] = {
    LinkKind.CAUSES: "The source caused the target.",
    LinkKind.PRECEDES: "The source happened before.",
    LinkKind.RELATES_TO: "An association.",
    LinkKind.SUPERSEDES: "The source (newer) updates the target (older).",
}


class MemoryInput(InputModel):
    """What a caller writes. Length limits that depend on settings are checked by the service."""

    id: UUID | None = None
    text: str
    kind: str = Field(default="observation", pattern=KIND_PATTERN)
    occurred_at: UtcDateTime | None = None
    tags: tuple[Annotated[str, Field(min_length=1, max_length=64)], ...] = Field(
        default=(), max_length=32
    )
    source: str | None = Field(default=None, max_length=512)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    valid_from: AwareUtcDateTime | None = None
    valid_until: AwareUtcDateTime | None = None

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is empty: a memory needs some text")
        return value

    @model_validator(mode="after")
    def _interval(self) -> MemoryInput:
        start, end = self.valid_from, self.valid_until
        if start is not None and end is not None and end <= start:
            raise ValueError(
                f"validUntil ({end.isoformat()}) must be after validFrom ({start.isoformat()}): "
                "a validity interval is [validFrom, validUntil)"
            )
        return self


class Memory(Model):
    """A stored memory (a :Memory node) of the caller's namespace."""

    id: UUID = Field(description="Unique id (UUID).")
    namespace: str = Field(description="The namespace it belongs to (the caller's).")
    text: str = Field(description="What is remembered.")
    kind: str = Field(description="Its kind: observation, event, decision, fact, ...")
    occurred_at: datetime | None = Field(
        default=None, description="When the thing happened, when known."
    )
    recorded_at: datetime = Field(description="When it was written.")
    invalidated_at: datetime | None = Field(
        default=None,
        description="When it stops (or stopped) being true: its validUntil or the start of the "
        "earliest memory that SUPERSEDES it, whichever comes first; null: no end known.",
    )
    tags: tuple[str, ...] = Field(default=(), description="Tags, in the order written.")
    source: str | None = Field(default=None, description="Where it came from.")
    confidence: float = Field(default=1.0, description="Stored confidence, in [0, 1].")
    tokens: int = Field(description="Estimated tokens of the text.")
    terms: tuple[str, ...] = Field(default=(), description="The analysed text (repeats kept).")
    valid_from: datetime | None = Field(
        default=None,
        description="When it became true (event time), when given; else it is true from "
        "occurredAt, else from recordedAt.",
    )
    valid_until: datetime | None = Field(
        default=None,
        description="When it stopped being true (event time, exclusive), as written; a newer "
        "memory that SUPERSEDES it may close it earlier (see `history`).",
    )

    def same_content(self, other: Memory) -> bool:
        """True when a rewrite of ``other`` with this content is a no-op (retry-safe writes)."""
        return (
            self.text == other.text
            and self.kind == other.kind
            and self.occurred_at == other.occurred_at
            and self.tags == other.tags
            and self.source == other.source
            and self.confidence == other.confidence
            and self.valid_from == other.valid_from
            and self.valid_until == other.valid_until
        )

    @property
    def valid_start(self) -> datetime:
        """When it is true from: ``validFrom``, else ``occurredAt``, else ``recordedAt``."""
        return self.valid_from or self.occurred_at or self.recorded_at

    @property
    def when(self) -> datetime:
        """The time a memory is about: ``occurredAt`` when known, else ``recordedAt``."""
        return self.occurred_at or self.recorded_at

    @property
    def dated_at(self) -> datetime | None:
        """The time its text is dated by where dates are shown: ``occurredAt``, else
        ``validFrom``; None: undated (only ``recordedAt``, which is when it was written)."""
        return self.occurred_at or self.valid_from


class LinkInput(InputModel):
    """A link to write between two memories of the caller's namespace."""

    source: UUID = Field(description="Id of the memory the link starts at.")
    target: UUID = Field(description="Id of the memory the link points to.")
    kind: LinkKind = Field(description="The relationship type.")
    weight: float = Field(
        default=1.0, ge=0.0, le=1_000_000.0, description="Strength, 0 to 1,000,000."
    )
    note: str | None = Field(
        default=None, max_length=2_000, description="Free text (up to 2,000 characters)."
    )

    @field_validator("weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("weight must be a finite number")
        return value


class Link(Model):
    """A relationship between two memories of one namespace."""

    source: UUID = Field(description="Id of the memory the link starts at.")
    target: UUID = Field(description="Id of the memory the link points to.")
    kind: LinkKind = Field(description="The relationship type.")
    weight: float = Field(default=1.0, description="Strength of the relationship.")
    created_at: datetime = Field(description="When the link was written.")
    note: str | None = Field(default=None, description="Free text about the link.")


class Successor(NamedTuple):
    """A memory that SUPERSEDES another, and when it is true from (its start: validFrom, else
    occurredAt, else recordedAt): what closes the older one's validity."""

    older: UUID
    newer: UUID
    start: datetime


class Belief(Model):
    """A stored belief (``:Belief``), written by the reconstruct mutation."""

    id: UUID
    namespace: str
    cue: str
    summary: str
    confidence: float
    created_at: datetime
    source_ids: tuple[UUID, ...]
    linked_context_ids: tuple[UUID, ...]


class WriteResult(Model):
    """What a write did: ids created, ids already there with the same content, ids evicted."""

    created: tuple[UUID, ...] = ()
    unchanged: tuple[UUID, ...] = ()
    evicted: tuple[UUID, ...] = ()
