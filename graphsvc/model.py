"""Domain models: pure data, no I/O.

Field names are snake_case in Python and camelCase on the wire
(``model_dump(by_alias=True)``), which
are exactly the GraphQL names of docs/design.md, so the CLI's ``--json`` and the API agree.

The GraphQL output types are derived from these models (:mod:`graphsvc.api.types`): a field's
``Field(description=...)`` is the GraphQL field's description, and the first paragraph of a
class's docstring is the GraphQL type's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated, Any, NamedTuple, TypeVar
from uuid import UUID, SafeUUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
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
#: A time that must say its zone (a naive one is refused, not guessed), converted to UTC: the
#: bounds of a validity interval and the instant of an as-of read.
AwareUtcDateTime = Annotated[AwareDatetime, AfterValidator(as_utc)]


class Model(BaseModel):
    """Base: immutable, camelCase aliases, populate by either name."""

    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid"
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The wire form: camelCase names, ISO datetimes, UUIDs as strings."""
        return self.model_dump(mode="json", by_alias=True)


_T = TypeVar("_T", bound=Model)


_UNKNOWN_SAFETY = SafeUUID.unknown  # an enum member read once (each read is a descriptor call)


def uuid_of_int(key: int) -> UUID:
    """``UUID(int=key)`` for a key known to fit in 128 bits, without ``UUID.__init__``'s
    checks (a load or a write makes one per memory)."""
    made = object.__new__(UUID)
    object.__setattr__(made, "int", key)
    object.__setattr__(made, "is_safe", _UNKNOWN_SAFETY)
    return made


def construct(cls: type[_T], values: dict[str, Any]) -> _T:
    """What ``cls.model_construct(**values)`` makes when ``values`` holds every field of ``cls``
    (a :class:`Model`: frozen, no extras allowed, no private attributes), in a tenth of the
    time, and without validation: for values already of the fields' types (a memory being
    written, one read back, the capsules of a bundle)."""
    made = cls.__new__(cls)
    setattr_ = object.__setattr__
    setattr_(made, "__dict__", values)
    setattr_(made, "__pydantic_fields_set__", set(values))
    setattr_(made, "__pydantic_extra__", None)
    setattr_(made, "__pydantic_private__", None)
    return made


def invalid_unicode_at(text: str) -> int | None:
    """The index of the first character UTF-8 cannot encode (a lone surrogate such as U+DFFF,
    which JSON can escape and Python keeps), or None when the text is valid Unicode."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def unicode_problem(text: str) -> str | None:
    """Why ``text`` is not valid Unicode (it holds an unpaired surrogate), or None."""
    at = invalid_unicode_at(text)
    if at is None:
        return None
    return (
        f"the text holds an unpaired surrogate (U+{ord(text[at]):04X}) at character {at}, which "
        "is not valid Unicode: send valid UTF-8 text"
    )


def _check_unicode(value: Any) -> None:
    if isinstance(value, str):
        problem = unicode_problem(value)
        if problem is not None:
            raise ValueError(problem)
    elif isinstance(value, tuple | list):
        for item in value:
            _check_unicode(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key)
            _check_unicode(item)


class InputModel(Model):
    """Base of what callers send: every string, at any depth, must be valid Unicode, so that no
    surface (GraphQL, MCP, the CLI, the Python API) can store text that cannot be encoded."""

    @field_validator("*", mode="after")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        _check_unicode(value)
        return value


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


class ContextCapsule(Model):
    """One memory as offered to a prompt, or as excluded from it."""

    memory_id: UUID = Field(description="The memory.")
    text: str = Field(
        description="Its text as rendered (date-prefixed when the bundle is chronological)."
    )
    kind: str = Field(description="The memory's kind.")
    score: float = Field(description="Composite score in [0, 1].")
    tokens: int = Field(description="Estimated tokens of `text`.")
    occurred_at: datetime | None = Field(default=None, description="When it happened, when known.")
    matched_terms: tuple[str, ...] = Field(
        default=(), description="Query terms the memory contains."
    )
    matched_words: tuple[str, ...] = Field(
        default=(),
        description="The question's own words for `matchedTerms`, one for each, in the same "
        "order: what to show a person (a term is an analysed stem: `melani` for `Melanie`).",
    )
    reason: str | None = Field(
        default=None,
        description="'match' for a packed capsule; for an excluded one why: abstained, "
        "duplicate, budget, max_capsules or below_floor.",
    )
    valid_from: datetime | None = Field(default=None, description=VALID_FROM_TEXT)
    valid_until: datetime | None = Field(default=None, description=VALID_UNTIL_TEXT)
    superseded_by: tuple[UUID, ...] = Field(default=(), description=SUPERSEDED_BY_TEXT)
    validity: Validity = Field(
        default=Validity.CURRENT,
        description="Whether it is true at the instant the bundle answers for (now, or asOf): "
        "CURRENT, or SUPERSEDED / EXPIRED / NOT_YET, which the rendered text marks "
        "([until 2024-06-01, superseded]).",
    )


class OrderReason(StrEnum):
    """Why a bundle's capsules are oldest first, each dated."""

    QUESTION_ASKS_ORDER = "QUESTION_ASKS_ORDER"
    EVIDENCE_SPANS_DAYS = "EVIDENCE_SPANS_DAYS"


# What each order reason means (the GraphQL enum values' descriptions).
ORDER_REASON_DESCRIPTIONS: Mapping[OrderReason, str] = {
    OrderReason.QUESTION_ASKS_ORDER: "The question holds a chronology marker word (before, "
    "after, first, last, when, ...).",
    OrderReason.EVIDENCE_SPANS_DAYS: "The question does not ask about order, but the ranked "
    "memories carry `occurredAt` dates on two or more days.",
}


class AnswerEvidence(Model):
    """The evidence that memory holds the answer, which `topScore` is made of (a logistic model
    per encoder, docs/design.md): each value in [0, 1]."""

    coverage: float = Field(
        default=0.0,
        description="Best IDF-weighted share of the query one ranked memory covers, a word no "
        "memory holds weighing the most, after answers and speaker attribution.",
    )
    unseen: float = Field(
        default=0.0,
        description="Share of the query's IDF weight on words no memory of the namespace holds.",
    )
    bm25: float = Field(
        default=0.0, description="Best lexical-graph ranking score (BM25, before fusion)."
    )
    cosine: float = Field(
        default=0.0,
        description="Best cosine of a memory found by meaning, above the encoder's cosine for "
        "unrelated texts (0 there and with lexical recall).",
    )
    agreement: float = Field(
        default=0.0,
        description="1 / r for the least r at which the first r of the lexical-graph ranking and "
        "of the ranking by meaning share a memory (0: none, or lexical recall).",
    )
    attribution: float = Field(
        default=1.0,
        description="Share of the best coverage that survives speaker attribution (1 when the "
        "query names no declared speaker): low when the best match is another speaker's.",
    )
    margin: float = Field(
        default=0.0,
        description="How far the best cosine stands above the tenth best (cosines as in "
        "`cosine`; 0 with lexical recall): a match by meaning that stands out.",
    )


class ContextBundle(Model):
    """What memory offers a prompt under a token budget, and what it does not cover."""

    query: str = Field(description="The question asked.")
    stage: str = Field(description="The scoring stage used.")
    retrieval: str = Field(
        default="lexical",
        description="How memories were found: `hybrid` (words, graph and meaning: capsule scores "
        "fuse the lexical-graph score with the cosine) or `lexical` (no encoder, or the "
        "namespace's vectors are not this model's: see `stats`).",
    )
    budget_tokens: int = Field(description="The token budget.")
    min_score: float = Field(description="Abstention threshold on topScore.")
    used_tokens: int = Field(description="Tokens of the packed capsules.")
    capsules: tuple[ContextCapsule, ...] = Field(description="Packed capsules.")
    excluded: tuple[ContextCapsule, ...] = Field(
        description="Ranked candidates left out, each with its reason."
    )
    skipped: bool = Field(description="True when topScore is below minScore: memory abstains.")
    top_score: float = Field(
        description="The probability that memory holds the answer, from `answerEvidence`: what "
        "minScore is compared with (capsule scores rank; they are not probabilities)."
    )
    answer_evidence: AnswerEvidence = Field(
        default_factory=AnswerEvidence,
        description="The evidence topScore is made of.",
    )
    evidence_coverage: float = Field(
        description="IDF-weighted share of the discriminating query terms the capsules cover."
    )
    uncovered_terms: tuple[str, ...] = Field(
        description="Discriminating query terms no capsule mentions, highest IDF first."
    )
    uncovered_words: tuple[str, ...] = Field(
        default=(),
        description="The question's own words for `uncoveredTerms`, one for each, in the same "
        "order: what to show a person (a term is an analysed stem: `mar` for `Mars`).",
    )
    chronological: bool = Field(
        description="True when the capsules are oldest first, each dated: the question asks "
        "about order, or the evidence spans days (`orderReason` says which)."
    )
    order_reason: OrderReason | None = Field(
        default=None,
        description="Why the capsules are oldest first: QUESTION_ASKS_ORDER (checked first) or "
        "EVIDENCE_SPANS_DAYS; null when they are best match first (`chronological` false).",
    )
    rendered: str = Field(description="The capsules as text for a prompt.")
    as_of: AsOf | None = Field(
        default=None, description="The past this bundle was answered as of; null: now."
    )
    pending_vectors: int = Field(
        default=0,
        description="Memories of the namespace that still wait for their vector (the vector "
        "queue: writes are acknowledged before their vectors). They can be found by words, but "
        "not by meaning, until they are encoded: recall by meaning is incomplete while this is "
        "above 0.",
    )
    retrieval_note: str | None = Field(
        default=None,
        description="Why recall by meaning was incomplete or off for this bundle (memories "
        "waiting for their vector, vectors of another model, no encoder) and what fixes it; "
        "null when it was complete.",
    )


class ReconstructedBelief(Model):
    """The top hits for a cue plus the graph context around them, summarised by rules."""

    cue: str = Field(description="The cue asked about.")
    summary: str = Field(
        description="Deterministic text: the cue, direct evidence, causal chains, linked context."
    )
    source_ids: tuple[UUID, ...] = Field(description="Direct hits, in rank order.")
    linked_context_ids: tuple[UUID, ...] = Field(
        description="Memories the graph walk added (never a source)."
    )
    confidence: float = Field(description="Mean score of the sources, in [0, 1].")
    memories: tuple[Memory, ...] = Field(description="The sources, then the linked context.")
    belief_id: UUID | None = Field(
        default=None,
        description="Id of the stored :Belief (the mutation, when there were sources); else null.",
    )
    as_of: AsOf | None = Field(
        default=None, description="The past this belief was answered as of; null: now."
    )
    validity: tuple[MemoryValidity, ...] = Field(
        default=(),
        description="The effective validity of each of `memories`, in the same order, at the "
        "instant the belief answers for (now, or asOf).",
    )


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
    """One context decision of a run.

    Stored as ``(:Run)-[:HAD_EVENT]->(:ContextEvent)``.
    """

    run_id: str = Field(description="The run it belongs to.")
    seq: int = Field(description="Order of recording within the run, from 0.")
    step: int = Field(description="The agent's step number.")
    kind: ContextEventKind = Field(
        description="memory_write, memory_recall, memory_evict, assembled, ..."
    )
    detail: str | None = Field(default=None, description="What happened, in words.")
    est_tokens: int | None = Field(default=None, description="graphsvc's token estimate.")
    reported_tokens: int | None = Field(
        default=None, description="What the provider reported (recorded later), when known."
    )
    recorded_at: datetime = Field(description="When it was recorded.")


class LinkRef(Model):
    """A removed link, as a forget receipt lists it."""

    source: UUID = Field(description="Id of the memory the link started at.")
    target: UUID = Field(description="Id of the memory the link pointed to.")
    kind: LinkKind = Field(description="The relationship type.")


class ForgetReceipt(Model):
    """What a forget removed."""

    memory_id: UUID = Field(description="The forgotten memory.")
    namespace: str = Field(description="Its namespace (the caller's).")
    removed_links: tuple[LinkRef, ...] = Field(description="Links removed with it.")
    removed_belief_ids: tuple[UUID, ...] = Field(
        description="Beliefs removed because they derived from or used it."
    )
    forgotten_at: datetime = Field(description="When it was forgotten.")


class EraseFilter(InputModel):
    """What an erase removes: the whole namespace (`everything`), or every memory matching all
    of the filters given (`tag`, `source`, and a time range [`since`, `until`) on occurredAt,
    recordedAt for memories without one)."""

    everything: bool = Field(
        default=False,
        description="The whole namespace: memories, links, beliefs, runs, context events and "
        "statistics. Not combined with the filters.",
    )
    tag: str | None = Field(default=None, description="Memories with this tag.")
    source: str | None = Field(default=None, description="Memories from this source.")
    since: UtcDateTime | None = Field(
        default=None, description="Memories at or after this time (occurredAt, else recordedAt)."
    )
    until: UtcDateTime | None = Field(
        default=None, description="Memories before this time (occurredAt, else recordedAt)."
    )

    @property
    def is_empty(self) -> bool:
        """True when it names nothing to erase."""
        return not self.everything and all(
            value is None for value in (self.tag, self.source, self.since, self.until)
        )

    def matches(self, memory: Memory) -> bool:
        """Whether an erase with this filter removes ``memory``."""
        if self.everything:
            return True
        when = memory.when
        return (
            (self.tag is None or self.tag in memory.tags)
            and (self.source is None or memory.source == self.source)
            and (self.since is None or when >= self.since)
            and (self.until is None or when < self.until)
        )


class EraseReceipt(Model):
    """What an erase removed (counts), and whether it finished."""

    namespace: str = Field(description="The namespace erased from (the caller's).")
    filter: EraseFilter = Field(description="What was asked to be erased, as given.")
    memories: int = Field(description="Memories removed.")
    links: int = Field(description="Links removed with them.")
    beliefs: int = Field(description="Beliefs removed because they derived from or used them.")
    events: int = Field(
        description="Context events: removed (everything), or rewritten to drop the ids of "
        "erased memories from their detail (a filtered erase)."
    )
    erased_at: datetime = Field(description="When the erase ran.")
    complete: bool = Field(
        description="True when nothing the filter names is left; false when the call stopped at "
        "its time budget (GRAPHSVC_ERASE_TIME_BUDGET): call erase again with the same input to "
        "finish (it resumes where this one stopped)."
    )

    def plus(self, other: EraseReceipt) -> EraseReceipt:
        """Two receipts of the same erase, added up (``other``'s time and completeness)."""
        return self.model_copy(
            update={
                "memories": self.memories + other.memories,
                "links": self.links + other.links,
                "beliefs": self.beliefs + other.beliefs,
                "events": self.events + other.events,
                "erased_at": other.erased_at,
                "complete": other.complete,
            }
        )


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
    """Counts for the caller's namespace."""

    namespace: str = Field(description="The namespace.")
    memories: int = Field(description="Live memories.")
    links: int = Field(description="Links between them.")
    beliefs: int = Field(description="Stored beliefs.")
    terms: int = Field(description="Distinct analysed terms.")
    events: int = Field(description="Recorded context events.")
    vectors: int = Field(default=0, description="Memories with a vector (dense recall).")
    pending_vectors: int = Field(
        default=0,
        description="Memories that wait for their vector in the vector queue (the backlog a "
        "server encodes in the background, or `graphsvc embed` offline); 0 when recall is "
        "lexical or the vectors are another model's.",
    )
    retrieval: str = Field(
        default="lexical", description="How bundles are answered here: `hybrid` or `lexical`."
    )
    embed_model: str | None = Field(
        default=None, description="The encoder of this service (null: dense recall is off)."
    )
    retrieval_note: str | None = Field(
        default=None,
        description="Why recall is lexical, or what is missing (memories without a vector), and "
        "the command that fixes it.",
    )


def utcnow() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)
