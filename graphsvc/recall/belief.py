"""A reconstructed belief: the hits for a cue and the graph walked around them, summarised by
rules (docs/design.md, reconstruct). Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from graphsvc.model import LinkKind, Memory, ReconstructedBelief
from graphsvc.recall.bundle import fmt_score
from graphsvc.recall.scoring import PLACES, Scored
from graphsvc.store.base import Walk

# A summary line quotes at most this many characters of a memory.
SUMMARY_CHARS = 280


def _quote(memory: Memory) -> str:
    text = " ".join(memory.text.split())
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 1] + "…"
    date = memory.occurred_at.date().isoformat() if memory.occurred_at else "undated"
    return f"[{date}] {text}"


def _when_key(memory: Memory) -> tuple[bool, datetime, str]:
    return (memory.occurred_at is None, memory.when, str(memory.id))


def build_belief(cue: str, hits: Sequence[Scored], walk: Walk) -> ReconstructedBelief:
    """Summarise hits and the walk around them by rules (docs/design.md, reconstruct)."""
    if not hits:
        return ReconstructedBelief(
            cue=cue,
            summary=f'Memory holds nothing that matches "{cue}".',
            source_ids=(),
            linked_context_ids=(),
            confidence=0.0,
            memories=(),
        )
    source_ids = tuple(item.memory.id for item in hits)
    sources = set(source_ids)
    reached = [memory for memory, _ in walk.reached if memory.id not in sources]
    by_id = {item.memory.id: item.memory for item in hits}
    by_id.update((memory.id, memory) for memory in reached)
    confidence = round(sum(item.score for item in hits) / len(hits), PLACES)

    lines = [
        f'Belief about "{cue}": {len(hits)} direct source(s), {len(reached)} linked memory(ies), '
        f"confidence {fmt_score(confidence)}.",
        "Direct evidence:",
    ]
    lines += [
        f"{rank}. {_quote(item.memory)} (score {fmt_score(item.score)})"
        for rank, item in enumerate(hits, start=1)
    ]
    causal = sorted(
        (
            lk
            for lk in walk.links
            if lk.kind is LinkKind.CAUSES and lk.source in by_id and lk.target in by_id
        ),
        key=lambda lk: (_when_key(by_id[lk.source]), _when_key(by_id[lk.target])),
    )
    in_chains: set[UUID] = set()
    if causal:
        lines.append("Causal chains (cause -> effect, oldest first):")
        for lk in causal:
            lines.append(f"- {_quote(by_id[lk.source])} -> {_quote(by_id[lk.target])}")
            in_chains.update((lk.source, lk.target))
    relations: dict[UUID, set[str]] = {}
    for lk in walk.links:
        for end in (lk.source, lk.target):
            relations.setdefault(end, set()).add(lk.kind.value)
    other = sorted((m for m in reached if m.id not in in_chains), key=_when_key)
    if other:
        lines.append("Linked context:")
        for memory in other:
            kinds = "/".join(sorted(relations.get(memory.id, set())))
            lines.append(f"- {_quote(memory)} ({kinds})")
    return ReconstructedBelief(
        cue=cue,
        summary="\n".join(lines),
        source_ids=source_ids,
        linked_context_ids=tuple(memory.id for memory in reached),
        confidence=confidence,
        memories=tuple(item.memory for item in hits) + tuple(reached),
    )


__all__ = ["SUMMARY_CHARS", "build_belief"]
