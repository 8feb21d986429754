"""A reconstructed belief: the hits for a cue and the graph walked around them, summarised by
rules (docs/design.md, reconstruct). Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from uuid import UUID

from graphsvc.model import AsOf, LinkKind, Memory, MemoryValidity, ReconstructedBelief
from graphsvc.recall.bundle import fmt_score
from graphsvc.recall.scoring import PLACES, Scored
from graphsvc.store.graph import Walk
from graphsvc.validity import as_of_phrase, marked

# A summary line quotes at most this many characters of a memory.
SUMMARY_CHARS = 280


def _quote(memory: Memory, validity: MemoryValidity | None = None) -> str:
    """A memory in a summary: its date (``occurredAt``, else ``validFrom``), its text on one
    line cut to :data:`SUMMARY_CHARS`, and its mark when it is not true at the read's instant."""
    text = " ".join(memory.text.split())
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 1] + "…"
    dated = memory.dated_at
    date = dated.date().isoformat() if dated is not None else "undated"
    return f"[{date}] {marked(text, validity)}"


def _when_key(memory: Memory) -> tuple[bool, datetime, str]:
    """Oldest first by the date a summary shows (``occurredAt``, else ``validFrom``), undated
    ones after by ``recordedAt``; ties by id."""
    dated = memory.dated_at
    return (dated is None, dated or memory.recorded_at, str(memory.id))


def build_belief(
    cue: str,
    hits: Sequence[Scored],
    walk: Walk,
    validity: Mapping[UUID, MemoryValidity] | None = None,
    as_of: AsOf | None = None,
) -> ReconstructedBelief:
    """Summarise hits and the walk around them by rules (docs/design.md, reconstruct).
    ``validity`` holds each memory's validity at the instant the belief answers for
    (:func:`graphsvc.validity.validities`): the belief carries it, and the summary marks a
    memory that is not true then. With ``as_of``, the summary says which past it answers from.
    """
    valid = validity or {}
    about = f'"{cue}"' if as_of is None else f'"{cue}" {as_of_phrase(as_of)}'
    if not hits:
        return ReconstructedBelief(
            cue=cue,
            summary=f"Memory holds nothing that matches {about}.",
            source_ids=(),
            linked_context_ids=(),
            confidence=0.0,
            memories=(),
            as_of=as_of,
        )
    source_ids = tuple(item.memory.id for item in hits)
    sources = set(source_ids)
    reached = [memory for memory, _ in walk.reached if memory.id not in sources]
    by_id = {item.memory.id: item.memory for item in hits}
    by_id.update((memory.id, memory) for memory in reached)
    confidence = round(sum(item.score for item in hits) / len(hits), PLACES)

    lines = [
        f"Belief about {about}: {len(hits)} direct source(s), {len(reached)} linked "
        f"memory(ies), confidence {fmt_score(confidence)}.",
        "Direct evidence:",
    ]
    lines += [
        f"{rank}. {_quote(item.memory, valid.get(item.memory.id))} (score {fmt_score(item.score)})"
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
            source, target = by_id[lk.source], by_id[lk.target]
            lines.append(
                f"- {_quote(source, valid.get(source.id))} -> "
                f"{_quote(target, valid.get(target.id))}"
            )
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
            lines.append(f"- {_quote(memory, valid.get(memory.id))} ({kinds})")
    memories = tuple(item.memory for item in hits) + tuple(reached)
    return ReconstructedBelief(
        cue=cue,
        summary="\n".join(lines),
        source_ids=source_ids,
        linked_context_ids=tuple(memory.id for memory in reached),
        confidence=confidence,
        memories=memories,
        as_of=as_of,
        validity=tuple(valid[m.id] for m in memories if m.id in valid),
    )


__all__ = ["SUMMARY_CHARS", "build_belief"]
