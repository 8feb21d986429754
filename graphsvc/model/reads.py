"""What a read answers: a bundle for a prompt (its capsules, the evidence behind its top score,
why it is in time order), a reconstructed belief, and a namespace's counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from uuid import UUID

from pydantic import Field

from graphsvc.model.base import Model
from graphsvc.model.memory import Memory
from graphsvc.model.validity import (
    SUPERSEDED_BY_TEXT,
    VALID_FROM_TEXT,
    VALID_UNTIL_TEXT,
    AsOf,
    MemoryValidity,
    Validity,
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
