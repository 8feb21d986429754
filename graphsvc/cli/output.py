"""How the command line shows results to people (``--json`` prints the models instead)."""

from __future__ import annotations

from collections import Counter

import click

from graphsvc.model import ContextBundle, ReconstructedBelief
from graphsvc.recall.bundle import ORDER_REASON_PHRASES


def _short(text: str, width: int = 88) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def print_bundle(bundle: ContextBundle) -> None:
    """A bundle, readably."""
    click.secho(f'Bundle for "{bundle.query}"', bold=True)
    flags = ["best match first"]
    if bundle.chronological:
        why = ORDER_REASON_PHRASES.get(bundle.order_reason) if bundle.order_reason else None
        flags = ["chronological (oldest first)" + (f", as {why}" if why else "")]
    if bundle.skipped:
        flags = ["SKIPPED: top score below minScore"]
    click.echo(
        f"  stage {bundle.stage} · {bundle.retrieval} recall"
        f" · top score {bundle.top_score:.3f} (min {bundle.min_score:.2f})"
        f" · coverage {bundle.evidence_coverage:.3f} · {bundle.used_tokens}/"
        f"{bundle.budget_tokens} tokens · {', '.join(flags)}"
    )
    if bundle.capsules:
        click.echo(f"  {'#':>2}  {'score':>5}  {'tok':>3}  text")
        for i, capsule in enumerate(bundle.capsules, start=1):
            click.echo(
                f"  {i:>2}  {capsule.score:.3f}  {capsule.tokens:>3}  {_short(capsule.text)}"
            )
    if bundle.excluded:
        reasons = Counter(c.reason for c in bundle.excluded)
        summary = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda x: str(x[0])))
        click.echo(f"  excluded: {len(bundle.excluded)} ({summary})")
    uncovered = bundle.uncovered_words or bundle.uncovered_terms
    if uncovered:
        click.echo(f"  not covered by memory: {', '.join(uncovered)}")
    click.secho("\n  rendered for the prompt:", dim=True)
    for line in bundle.rendered.splitlines():
        click.echo(f"  | {line}")


def print_belief(belief: ReconstructedBelief) -> None:
    """A belief, readably."""
    click.secho(f'Reconstructed belief for "{belief.cue}"', bold=True)
    click.echo(
        f"  confidence {belief.confidence:.3f} · {len(belief.source_ids)} source(s) · "
        f"{len(belief.linked_context_ids)} linked"
        + (f" · stored as belief {belief.belief_id}" if belief.belief_id else "")
    )
    for line in belief.summary.splitlines():
        click.echo(f"  | {line}")


__all__ = ["print_belief", "print_bundle"]
