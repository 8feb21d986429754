"""The bundle: abstention, de-duplication, packing under a token budget, evidence coverage and
the rendered text (docs/design.md, the bundle). Pure functions.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from graphsvc.model import (
    AnswerEvidence,
    AsOf,
    ContextBundle,
    ContextCapsule,
    Memory,
    MemoryValidity,
    OrderReason,
    Validity,
    construct,
)
from graphsvc.recall.query import Query
from graphsvc.recall.scoring import PLACES, Scored, Stage
from graphsvc.store.candidates import TermStats
from graphsvc.text import asks_about_order, estimate_tokens
from graphsvc.validity import as_of_phrase, marked

# Capsules whose term sets overlap this much (Jaccard) with a packed one are duplicates.
DUPLICATE_JACCARD = 0.8


def _capsule_text(
    memory: Memory, chronological: bool, validity: MemoryValidity | None = None
) -> str:
    """A capsule's text: the memory's, dated when the bundle is chronological (``occurredAt``,
    else ``validFrom``), and marked when it is not true at the read's instant."""
    text = marked(memory.text, validity)
    if not chronological:
        return text
    dated = memory.dated_at
    if dated is None:
        return f"[undated] {text}"
    return f"[{dated.date().isoformat()}] {text}"


def _capsule(
    item: Scored,
    chronological: bool,
    reason: str | None,
    words: Mapping[str, str],
    validity: MemoryValidity | None,
) -> ContextCapsule:
    return _capsule_of(
        item, _capsule_text(item.memory, chronological, validity), reason, words, validity
    )


def _capsule_of(
    item: Scored,
    text: str,
    reason: str | None,
    words: Mapping[str, str],
    validity: MemoryValidity | None,
) -> ContextCapsule:
    """The capsule of a ranked memory rendered as ``text``, its matched terms named by the
    query's ``words``, with its validity: its fields are of their types already, so it is built
    without validation (a bundle makes one per ranked memory)."""
    memory = item.memory
    matched = tuple(item.matched)
    return construct(
        ContextCapsule,
        {
            "memory_id": memory.id,
            "text": text,
            "kind": memory.kind,
            "score": float(item.score),
            "tokens": estimate_tokens(text),
            "occurred_at": memory.occurred_at,
            "matched_terms": matched,
            "matched_words": tuple(words.get(t, t) for t in matched),
            "reason": reason,
            "valid_from": memory.valid_start if validity is None else validity.valid_from,
            "valid_until": memory.valid_until if validity is None else validity.valid_until,
            "superseded_by": () if validity is None else validity.superseded_by,
            "validity": Validity.CURRENT if validity is None else validity.validity,
        },
    )


def _is_duplicate(terms: frozenset[str], packed: Sequence[frozenset[str]]) -> bool:
    """True when ``terms`` overlaps some packed term set by Jaccard >= DUPLICATE_JACCARD.

    Jaccard is at most min(|a|, |b|) / max(|a|, |b|), so sets of too different sizes are passed
    over without building their intersection.
    """
    size = len(terms)
    for seen in packed:
        other = len(seen)
        small, large = (size, other) if size <= other else (other, size)
        if large == 0:
            return True  # two empty sets are the same
        if small / large < DUPLICATE_JACCARD:
            continue
        common = len(terms & seen)
        if common / (size + other - common) >= DUPLICATE_JACCARD:
            return True
    return False


class _PackedTerms:
    """The term sets of the packed capsules, in packing order and by size: a set can be a
    duplicate (:func:`_is_duplicate`) only of one of nearly its size, so only those are tried."""

    def __init__(self) -> None:
        self.in_order: list[frozenset[str]] = []
        self._sizes: list[int] = []
        self._by_size: list[frozenset[str]] = []

    def add(self, terms: frozenset[str]) -> None:
        self.in_order.append(terms)
        at = bisect_right(self._sizes, len(terms))
        self._sizes.insert(at, len(terms))
        self._by_size.insert(at, terms)

    def is_duplicate(self, terms: frozenset[str]) -> bool:
        """:func:`_is_duplicate` against every packed set: the sets it passes over for their
        size (a ratio under DUPLICATE_JACCARD, with a margin of one either way) are skipped, and
        the others are counted term by term, stopping at the first miss that rules the set out
        (:func:`_misses_to_rule_out`): most packed sets share few terms with another memory, so
        a few lookups settle them without building an intersection."""
        size = len(terms)
        sizes = self._sizes
        low = bisect_left(sizes, math.floor(size * DUPLICATE_JACCARD) - 1)
        high = bisect_right(sizes, math.ceil(size / DUPLICATE_JACCARD) + 1)
        by_size = self._by_size
        for at in range(low, high):
            other = sizes[at]
            small, large = (size, other) if size <= other else (other, size)
            if large == 0:
                return True  # two empty sets are the same
            if small / large < DUPLICATE_JACCARD:
                continue
            seen = by_size[at]
            enough = _RULE_OUT.get((size, other))
            if enough is None:
                enough = _misses_to_rule_out(size, other)
            misses = 0
            for term in terms:
                if term not in seen:
                    misses += 1
                    if misses == enough:
                        break
            else:  # every term was looked up: the count is exact
                common = size - misses
                if common / (size + other - common) >= DUPLICATE_JACCARD:
                    return True
        return False


_RULE_OUT: dict[tuple[int, int], int] = {}


def _misses_to_rule_out(size: int, other: int) -> int:
    """The fewest terms of a set of ``size`` missing from one of ``other`` terms that make the
    two no duplicates: with ``m`` misses they share at most ``size - m`` terms, and the Jaccard
    test of :func:`_is_duplicate`, computed as it computes it, fails for that many shared terms
    (so for any fewer: the computed ratio grows with the count). ``size + 1`` (never reached)
    when no count of misses rules the pair out."""
    known = _RULE_OUT.get((size, other))
    if known is None:
        known = size + 1
        for misses in range(size + 1):
            common = size - misses
            total = size + other - common
            if total and common / total < DUPLICATE_JACCARD:
                known = misses
                break
        if len(_RULE_OUT) < 65_536:
            _RULE_OUT[(size, other)] = known
    return known


def chronological_key(memory: Memory) -> tuple[bool, datetime, datetime, str]:
    """Oldest first: dated memories by their date (``occurredAt``, else ``validFrom``), then
    undated ones; ties by ``recordedAt``, then id."""
    dated = memory.dated_at
    return (dated is None, dated or memory.recorded_at, memory.recorded_at, str(memory.id))


def spans_days(memories: Sequence[Memory]) -> bool:
    """True when the memories are dated (``occurredAt``, else ``validFrom``) on at least two
    different days."""
    days = {dated.date() for memory in memories if (dated := memory.dated_at) is not None}
    return len(days) >= 2


def order_reason(query: str, memories: Sequence[Memory]) -> OrderReason | None:
    """Why a bundle for ``query`` offering ``memories`` is oldest first, or None for best match
    first: the question asks about order (checked first), or the memories offered are dated on
    several days."""
    if asks_about_order(query):
        return OrderReason.QUESTION_ASKS_ORDER
    if spans_days(memories):
        return OrderReason.EVIDENCE_SPANS_DAYS
    return None


# Why the capsules are oldest first, as the rendered texts say it.
ORDER_REASON_PHRASES: dict[OrderReason, str] = {
    OrderReason.QUESTION_ASKS_ORDER: "the question asks about order",
    OrderReason.EVIDENCE_SPANS_DAYS: "the evidence spans several days",
}


def order_phrase(chronological: bool, reason: OrderReason | None) -> str:
    """How a rendered bundle names its order: best match first, or oldest first and why."""
    if not chronological:
        return "best match first"
    if reason is None:
        return "oldest first"
    return f"oldest first, as {ORDER_REASON_PHRASES[reason]}"


@dataclass(frozen=True)
class BundleRequest:
    """A validated bundle request."""

    query: str
    budget_tokens: int
    min_score: float
    max_capsules: int
    stage: Stage
    relative_floor: float = 0.0
    retrieval: str = "lexical"
    as_of: AsOf | None = None


def _pack(
    request: BundleRequest,
    ranked: Sequence[Scored],
    skipped: bool,
    floor: float,
    validity: Mapping[UUID, MemoryValidity],
) -> tuple[list[tuple[Scored, str]], list[Scored], _PackedTerms]:
    """Each ranked memory's fate, in rank order (``match`` or why it is excluded: abstained,
    below_floor, duplicate, max_capsules, budget), the packed ones, and their term sets.

    Packing pays for the dated form of every capsule, chronological or not, so the selection
    does not depend on how it is presented ("ordering changes presentation only") and the
    re-rendered capsules always fit the budget.
    """
    decided: list[tuple[Scored, str]] = []
    packed_items: list[Scored] = []
    packed_terms = _PackedTerms()
    spent = 0
    for item in ranked:
        if skipped:
            decided.append((item, "abstained"))
            continue
        if item.score < floor or item.score <= 0.0:
            decided.append((item, "below_floor"))
            continue
        term_set = frozenset(item.memory.terms)
        if packed_terms.is_duplicate(term_set):
            decided.append((item, "duplicate"))
            continue
        if len(packed_items) >= request.max_capsules:
            decided.append((item, "max_capsules"))
            continue
        cost = estimate_tokens(_capsule_text(item.memory, True, validity.get(item.memory.id)))
        if spent + cost > request.budget_tokens:
            decided.append((item, "budget"))
            continue
        decided.append((item, "match"))
        packed_items.append(item)
        packed_terms.add(term_set)
        spent += cost
    return decided, packed_items, packed_terms


def _coverage(
    terms: Sequence[str],
    stats: TermStats,
    packed: Sequence[frozenset[str]],
    offers_nothing: bool,
) -> tuple[float, tuple[str, ...]]:
    """The IDF-weighted share of the query's discriminating terms the ``packed`` term sets cover
    (0 for a bundle that abstains or matched nothing, 1 when no term discriminates), and the
    terms they miss, highest weight first."""
    discriminating = [t for t in terms if stats.coverage_weight(t) > 0.0]
    seen_terms: set[str] = set()
    for frozen_terms in packed:
        seen_terms |= frozen_terms
    covered = [t for t in discriminating if t in seen_terms]
    uncovered = sorted(
        (t for t in discriminating if t not in seen_terms),
        key=lambda t: (-stats.coverage_weight(t), t),
    )
    total = sum(stats.coverage_weight(t) for t in discriminating)
    if offers_nothing:
        coverage = 0.0
    elif total <= 0.0:
        coverage = 1.0
    else:
        coverage = round(sum(stats.coverage_weight(t) for t in covered) / total, PLACES)
    return coverage, tuple(uncovered)


def _capsules(
    decided: Sequence[tuple[Scored, str]],
    packed_items: Sequence[Scored],
    chronological: bool,
    words: Mapping[str, str],
    validity: Mapping[UUID, MemoryValidity],
) -> tuple[tuple[ContextCapsule, ...], tuple[ContextCapsule, ...]]:
    """The packed capsules (oldest first when ``chronological``, else in rank order) and the
    excluded ones (in rank order, each with its reason), rendered for that order."""
    packed: list[ContextCapsule] = []
    excluded: list[ContextCapsule] = []
    for item, why in decided:
        capsule = _capsule(item, chronological, why, words, validity.get(item.memory.id))
        (packed if why == "match" else excluded).append(capsule)
    if chronological and packed:
        order = {item.memory.id: chronological_key(item.memory) for item in packed_items}
        packed.sort(key=lambda c: order[c.memory_id])
    return tuple(packed), tuple(excluded)


def build_bundle(
    request: BundleRequest,
    query: Query,
    stats: TermStats,
    ranked: Sequence[Scored],
    top_score: float,
    evidence: AnswerEvidence | None = None,
    validity: Mapping[UUID, MemoryValidity] | None = None,
) -> ContextBundle:
    """Abstain, de-duplicate, pack, measure coverage and render (docs/design.md, the bundle).

    ``query`` is the request's query analysed once (its terms and the user's words for them).
    ``ranked`` is the ranked window (after :func:`apply_supersessions`); each of its items ends in
    ``capsules`` or in ``excluded`` with a reason. ``top_score`` is the probability that memory
    holds the answer (:mod:`graphsvc.recall.answerability`), made of ``evidence``: it alone
    decides abstention against ``minScore``. Capsules are floored relative to the best ranking
    score, which lives on another scale. ``validity`` holds each ranked memory's validity at the
    instant the bundle answers for (:func:`graphsvc.validity.validities`): capsules carry it, and
    a memory that is not true then is marked in its text (``[until 2024-06-01, superseded]``).
    """
    valid = validity or {}
    # The user's own word for each term ("Mars" for "mar"): what the frontends show.
    words = query.words
    best = max((item.score for item in ranked), default=0.0)
    # Nothing ranked abstains too, unless abstention is off (minScore 0): then the bundle is
    # simply empty, and says that nothing matched.
    skipped = top_score < request.min_score or (not ranked and request.min_score > 0.0)
    # Capsules far below the best one add noise, not evidence: they are excluded as below_floor.
    # Ranking scores live on another scale than minScore's (a probability), so they are floored
    # only relative to the best one.
    floor = request.relative_floor * best
    decided, packed_items, packed_terms = _pack(request, ranked, skipped, floor, valid)

    # Oldest first when the question asks about order, and whenever the memories offered carry
    # dates on more than one day: a reader then sees evidence in the order it happened, with its
    # dates, wherever dates exist (on LoCoMo this took chronological tau from -0.083 to 1.0). The
    # order is about what is offered: an abstention or an empty bundle has none.
    offered = [item.memory for item in packed_items]
    reason = order_reason(request.query, offered) if offered else None
    chronological = reason is not None
    capsules, excluded = _capsules(decided, packed_items, chronological, words, valid)
    coverage, uncovered_terms = _coverage(
        query.terms, stats, packed_terms.in_order, skipped or not ranked
    )
    used = sum(c.tokens for c in capsules)
    uncovered_words = tuple(words.get(t, t) for t in uncovered_terms)
    rendered = _render(
        skipped,
        top_score,
        request.min_score,
        capsules,
        used,
        request.budget_tokens,
        coverage,
        chronological,
        reason,
        uncovered_words,
        request.as_of,
        bool(ranked),
    )
    return ContextBundle(
        query=request.query,
        stage=request.stage.name,
        retrieval=request.retrieval,
        budget_tokens=request.budget_tokens,
        min_score=request.min_score,
        used_tokens=used,
        capsules=capsules,
        excluded=excluded,
        skipped=skipped,
        top_score=top_score,
        answer_evidence=evidence if evidence is not None else AnswerEvidence(),
        evidence_coverage=coverage,
        uncovered_terms=uncovered_terms,
        uncovered_words=uncovered_words,
        chronological=chronological,
        order_reason=reason,
        rendered=rendered,
        as_of=request.as_of,
    )


def fmt_score(value: float) -> str:
    """A score as the rendered texts show it (three decimals)."""
    return f"{value:.3f}"


def render_bundle(bundle: ContextBundle) -> str:
    """The bundle as prompt text: a header, one line per capsule, and what memory does not cover
    (in the question's words; its terms for a bundle that carries no words)."""
    return _render(
        bundle.skipped,
        bundle.top_score,
        bundle.min_score,
        bundle.capsules,
        bundle.used_tokens,
        bundle.budget_tokens,
        bundle.evidence_coverage,
        bundle.chronological,
        bundle.order_reason,
        bundle.uncovered_words or bundle.uncovered_terms,
        bundle.as_of,
        bool(bundle.capsules or bundle.excluded),
    )


def _render(
    skipped: bool,
    top_score: float,
    min_score: float,
    capsules: Sequence[ContextCapsule],
    used_tokens: int,
    budget_tokens: int,
    evidence_coverage: float,
    chronological: bool,
    reason: OrderReason | None,
    uncovered_words: Sequence[str],
    as_of: AsOf | None = None,
    matched: bool = True,
) -> str:
    memory = "Memory" if as_of is None else f"Memory {as_of_phrase(as_of)}"
    lines: list[str] = []
    if not matched:
        lines.append(f"{memory} holds nothing that matches this request.")
    elif skipped:
        lines.append(
            f"{memory} has no confident answer for this request (top score "
            f"{fmt_score(top_score)} is below the minimum {fmt_score(min_score)})."
        )
    else:
        order = order_phrase(chronological, reason)
        lines.append(
            f"{memory} ({len(capsules)} item(s), {used_tokens}/"
            f"{budget_tokens} tokens, evidence coverage {fmt_score(evidence_coverage)}, "
            f"{order}):"
        )
        for capsule in capsules:
            lines.append(f"- {capsule.text}")
    if uncovered_words:
        lines.append("Not covered by memory: " + ", ".join(uncovered_words) + ".")
    return "\n".join(lines)


__all__ = [
    "DUPLICATE_JACCARD",
    "ORDER_REASON_PHRASES",
    "BundleRequest",
    "build_bundle",
    "chronological_key",
    "fmt_score",
    "order_phrase",
    "order_reason",
    "render_bundle",
    "spans_days",
]
