"""Domain models: pure data, no I/O.

Field names are snake_case in Python and camelCase on the wire
(``model_dump(by_alias=True)``), which
are exactly the GraphQL names of DESIGN.md, so the CLI's ``--json`` and the API agree.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

KIND_PATTERN = r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$"
NAMESPACE_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# Every namespace is checked against this one pattern (settings, API keys, the service).
NAMESPACE_RE = re.compile(NAMESPACE_PATTERN)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UtcDateTime = Annotated[datetime, AfterValidator(as_utc)]


class Model(BaseModel):
    """Base: immutable, camelCase aliases, populate by either name."""

    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid"
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The wire form: camelCase names, ISO datetimes, UUIDs as strings."""
        return self.model_dump(mode="json", by_alias=True)


class LinkKind(StrEnum):
    """Relationship types between memories."""

    CAUSES = "CAUSES"  # cause -> effect
    PRECEDES = "PRECEDES"  # earlier -> later
    RELATES_TO = "RELATES_TO"  # association
    SUPERSEDES = "SUPERSEDES"  # newer -> older (knowledge update)


class MemoryInput(Model):
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

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is empty: a memory needs some text")
        return value


class Memory(Model):
    """A stored memory (a ``:Memory`` node)."""

    id: UUID
    namespace: str
    text: str
    kind: str
    occurred_at: datetime | None = None
    recorded_at: datetime
    invalidated_at: datetime | None = None
    tags: tuple[str, ...] = ()
    source: str | None = None
    confidence: float = 1.0
    tokens: int
    terms: tuple[str, ...] = Field(default=(), description="Analysed text, repeats kept.")

    def same_content(self, other: Memory) -> bool:
        """True when a rewrite of ``other`` with this content is a no-op (retry-safe writes)."""
        return (
            self.text == other.text
            and self.kind == other.kind
            and self.occurred_at == other.occurred_at
            and self.tags == other.tags
            and self.source == other.source
            and self.confidence == other.confidence
        )

    @property
    def when(self) -> datetime:
        """The time a memory is about: ``occurredAt`` when known, else ``recordedAt``."""
        return self.occurred_at or self.recorded_at


class LinkInput(Model):
    """What a caller sends to link two memories."""

    source: UUID
    target: UUID
    kind: LinkKind
    weight: float = Field(default=1.0, ge=0.0, le=1_000_000.0)
    note: str | None = Field(default=None, max_length=2_000)

    @field_validator("weight")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("weight must be a finite number")
        return value


class Link(Model):
    """A stored relationship between two memories of one namespace."""

    source: UUID
    target: UUID
    kind: LinkKind
    weight: float = 1.0
    created_at: datetime
    note: str | None = None


class ContextCapsule(Model):
    """One memory as offered to a prompt, or as excluded from it (``reason`` says why)."""

    memory_id: UUID
    text: str
    kind: str
    score: float
    tokens: int
    occurred_at: datetime | None = None
    matched_terms: tuple[str, ...] = ()
    reason: str | None = None


class ContextBundle(Model):
    """What memory offers a prompt under a token budget, and what it does not cover."""

    query: str
    stage: str
    budget_tokens: int
    min_score: float
    used_tokens: int
    capsules: tuple[ContextCapsule, ...]
    excluded: tuple[ContextCapsule, ...]
    skipped: bool
    top_score: float
    evidence_coverage: float
    uncovered_terms: tuple[str, ...]
    chronological: bool
    rendered: str


class ReconstructedBelief(Model):
    """The top hits for a cue plus the graph context around them, summarised by rules."""

    cue: str
    summary: str
    source_ids: tuple[UUID, ...]
    linked_context_ids: tuple[UUID, ...]
    confidence: float
    memories: tuple[Memory, ...]
    belief_id: UUID | None = None


class ContextEventKind(StrEnum):
    """Kinds of context decisions graphsvc and agent harnesses record."""

    MEMORY_WRITE = "memory_write"
    MEMORY_RECALL = "memory_recall"
    MEMORY_EVICT = "memory_evict"
    ASSEMBLED = "assembled"
    REREAD = "reread"
    REREAD_REFUSED = "reread_refused"
    SERVED = "served"
    REPLAN = "replan"
    STALLED = "stalled"


class ContextEvent(Model):
    """One context decision of a run (``(:Run)-[:HAD_EVENT]->(:ContextEvent)``)."""

    run_id: str
    seq: int = Field(description="Order of recording within the run, from 0.")
    step: int
    kind: ContextEventKind
    detail: str | None = None
    est_tokens: int | None = None
    reported_tokens: int | None = None
    recorded_at: datetime


class LinkRef(Model):
    """A removed relationship, as a forget receipt lists it."""

    source: UUID
    target: UUID
    kind: LinkKind


class ForgetReceipt(Model):
    """What a forget removed."""

    memory_id: UUID
    namespace: str
    removed_links: tuple[LinkRef, ...]
    removed_belief_ids: tuple[UUID, ...]
    forgotten_at: datetime


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


class NamespaceStats(Model):
    """Counts for one namespace."""

    namespace: str
    memories: int
    links: int
    beliefs: int
    terms: int
    events: int


def utcnow() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)
