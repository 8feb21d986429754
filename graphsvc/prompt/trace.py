"""Prompt assembly's trace, summarised: the one-line ``detail`` of an ``assembled`` event, and
the drift report that sets graphsvc's token estimates beside the provider's counts.

Pure functions over a :class:`~graphsvc.prompt.models.PromptBundle` and a run's recorded
:class:`~graphsvc.model.ContextEvent` list; :class:`graphsvc.service.MemoryService` records the
events and reads them back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from graphsvc.model import ContextEvent, ContextEventKind
from graphsvc.prompt.models import DriftReport, DriftStep, HistoryReuse, PromptBundle, Visibility
from graphsvc.prompt.parts import plural
from graphsvc.recall import PLACES

QUOTE_CHARS = 80  # how much of a query the assembled event's detail quotes


def _quote(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…")


def assembled_detail(bundle: PromptBundle) -> str:
    """The ``detail`` of an ``assembled`` event: what was carried, recalled, reused and dropped,
    one line, deterministic."""
    ledger = bundle.context_ledger
    files = bundle.project_context
    tail = bundle.transcript_tail
    kept = [e for e in tail if e.visibility is not Visibility.DROPPED]
    carried = [
        plural(len(bundle.fragments), "fragment", "fragments"),
        f"environment ({bundle.environment.date.isoformat()})",
        plural(len(files), "context file", "context files"),
        plural(len(bundle.tool_catalog), "tool", "tools"),
        plural(len(bundle.available_skills), "skill", "skills"),
        plural(len(kept), "transcript entry", "transcript entries"),
        "user turn",
    ]
    memory = bundle.memory
    if memory is None:
        recalled = bundle.memory_note.removeprefix("Memory was ").rstrip(".")
    else:
        reasons = Counter(c.reason for c in memory.excluded)
        excluded = ", ".join(
            f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda x: str(x[0]))
        )
        recalled = (
            f"{plural(len(memory.capsules), 'capsule', 'capsules')} for {_quote(memory.query)} "
            f"({memory.used_tokens}/{memory.budget_tokens} tokens, coverage "
            f"{memory.evidence_coverage:.3f}"
            + (", skipped" if memory.skipped else "")
            + (f"; excluded: {excluded}" if excluded else "")
            + ")"
        )
    reused_files = [f.path for f in files if f.visibility is Visibility.UNCHANGED]
    if reused_files:
        reused = "unchanged, text omitted: " + ", ".join(reused_files)
    elif bundle.history_reuse is HistoryReuse.AVAILABLE and (
        bundle.prev_context_hash or bundle.prev_context_hashes
    ):
        reused = "none (no context file matches prevContextHash)"
    else:
        reused = "none"
    dropped: list[str] = []
    to_fit = len(tail) - len(kept)
    before = bundle.omitted_transcript_entries - to_fit
    if before:
        dropped.append(
            f"{plural(before, 'transcript entry', 'transcript entries')} before the tail"
        )
    if to_fit:
        dropped.append(f"{plural(to_fit, 'transcript entry', 'transcript entries')} to fit")
    truncated = [f.path for f in files if f.truncated]
    if truncated:
        dropped.append("truncated: " + ", ".join(truncated))
    fit = "fits" if ledger.fits else f"over by {ledger.overflow_tokens}"
    return (
        f"carried: {', '.join(carried)}; recalled: {recalled}; reused: {reused}; "
        f"dropped: {', '.join(dropped) or 'none'}; estimate {ledger.estimated_input_tokens} of "
        f"{ledger.available_input_tokens} input tokens ({fit})"
    )


def drift_report(run_id: str, events: Sequence[ContextEvent]) -> DriftReport:
    """Estimated against reported tokens over a run's ``assembled`` events.

    Per step, the latest ``assembled`` event counts (the one ``reportTokens`` fills; an earlier
    assembly of the same step was superseded). ``ratio`` is reported / estimated; the overall
    ratio sums over the reported steps only, and steps without a report are listed in
    ``unreportedSteps``.
    """
    latest: dict[int, ContextEvent] = {}
    for event in events:
        if event.kind is ContextEventKind.ASSEMBLED:
            latest[event.step] = event
    steps = []
    for step in sorted(latest):
        event = latest[step]
        ratio = None
        if event.reported_tokens is not None and event.est_tokens:
            ratio = round(event.reported_tokens / event.est_tokens, PLACES)
        steps.append(
            DriftStep(
                step=step,
                seq=event.seq,
                est_tokens=event.est_tokens,
                reported_tokens=event.reported_tokens,
                ratio=ratio,
            )
        )
    reported = [s for s in steps if s.reported_tokens is not None and s.est_tokens]
    estimated_total = sum(s.est_tokens or 0 for s in reported)
    reported_total = sum(s.reported_tokens or 0 for s in reported)
    return DriftReport(
        run_id=run_id,
        steps=tuple(steps),
        reported_steps=tuple(s.step for s in reported),
        unreported_steps=tuple(s.step for s in steps if s not in reported),
        estimated_tokens=estimated_total,
        reported_tokens=reported_total,
        ratio=round(reported_total / estimated_total, PLACES) if estimated_total else None,
    )


__all__ = ["QUOTE_CHARS", "assembled_detail", "drift_report"]
