"""``graphsvc drift RUN_ID``: graphsvc's token estimates against the provider's counts for a run.

Each ``promptBundle`` with a run id records an ``assembled`` event whose ``estTokens`` is the
estimate; ``reportTokens`` later puts the provider's count beside it. This command lists, per step
(the latest ``assembled`` event of each), both numbers and their ratio (reported / estimated), and
the overall ratio over the reported steps. Steps without a report are listed as unreported and
left out of the totals. It only reads (the embedded store is opened without its write lock).
"""

from __future__ import annotations

from pathlib import Path

import click

from graphsvc.cli.common import common_options, emit_json, opened
from graphsvc.prompt import DriftReport


def print_drift(report: DriftReport, namespace: str) -> None:
    """A drift report, readably."""
    click.secho(
        f"Token drift for run {report.run_id!r} in namespace {namespace!r} "
        "(estimated by graphsvc, reported by the provider)",
        bold=True,
    )
    if not report.steps:
        click.echo("  no 'assembled' events: call promptBundle with this runId (and a step) first")
        return
    click.echo(f"  {'step':>5}  {'estimated':>9}  {'reported':>9}  {'ratio':>8}")
    for step in report.steps:
        est = "-" if step.est_tokens is None else str(step.est_tokens)
        if step.reported_tokens is None or step.ratio is None:
            click.echo(f"  {step.step:>5}  {est:>9}  {'-':>9}  {'-':>8}  unreported")
        else:
            click.echo(f"  {step.step:>5}  {est:>9}  {step.reported_tokens:>9}  {step.ratio:>8.3f}")
    if report.ratio is None:
        click.echo("  overall: no step has a reported count yet (mutation reportTokens)")
    else:
        click.echo(
            f"  overall: {report.reported_tokens} reported / {report.estimated_tokens} estimated "
            f"over {len(report.reported_steps)} step(s) = {report.ratio:.3f}"
            + (" (graphsvc underestimates)" if report.ratio > 1 else "")
            + (" (graphsvc overestimates)" if report.ratio < 1 else "")
        )
    if report.unreported_steps:
        steps = ", ".join(str(s) for s in report.unreported_steps)
        click.echo(f"  unreported (left out of the ratio): step(s) {steps}")


@click.command("drift")
@click.argument("run_id")
@click.option("--json", "as_json", is_flag=True, help="Print the DriftReport as JSON.")
@common_options
def drift(run_id: str, as_json: bool, data_dir: Path | None, namespace: str | None) -> None:
    """Estimated against reported prompt tokens for RUN_ID: per step and overall."""
    with opened(data_dir, namespace, read_only=True) as (service, ns):
        report = service.drift(ns, run_id)
    if as_json:
        emit_json(report.to_json_dict())
    else:
        print_drift(report, ns)


__all__ = ["drift", "print_drift"]
