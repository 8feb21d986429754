"""``graphsvc erase``: remove a whole namespace, or every memory of a tag, a source or a time
range, with their links and the beliefs built on them, and print the receipt.

A large erase works in batches (GRAPHSVC_ERASE_BATCH on Neo4j) and a service call stops at
GRAPHSVC_ERASE_TIME_BUDGET; the command calls again until the erase is complete and prints the
receipts added up. An interrupted command is finished by running it again.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click
from tqdm import tqdm

from graphsvc.cli.common import common_options, emit_json, opened
from graphsvc.errors import BadInputError
from graphsvc.model import EraseReceipt, as_utc


def _moment(name: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return as_utc(datetime.fromisoformat(value))
    except ValueError:
        raise BadInputError(
            f"--{name} {value!r} is not an ISO-8601 time: use e.g. 2024-05-01 or "
            "2024-05-01T14:02:00Z"
        ) from None


@click.command()
@common_options
@click.option("--everything", is_flag=True, help="The whole namespace (runs and events too).")
@click.option("--tag", default=None, help="Memories with this tag.")
@click.option("--source", default=None, help="Memories from this source.")
@click.option("--since", default=None, help="Memories at or after this ISO-8601 time.")
@click.option("--until", default=None, help="Memories before this ISO-8601 time.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print the receipt as JSON.")
def erase(
    everything: bool,
    tag: str | None,
    source: str | None,
    since: str | None,
    until: str | None,
    yes: bool,
    as_json: bool,
    data_dir: Path | None,
    namespace: str | None,
) -> None:
    """Erase the namespace, or the memories of a tag, source or time range; print a receipt.

    Filters combine with AND; the time range is on occurredAt (recordedAt for memories without
    one). Links and beliefs built on erased memories go with them, term statistics stay exact,
    and context events keep their place with the erased ids replaced by [erased]. Exit status 2
    (nothing named, a time that is not ISO-8601, no confirmation) or 3 (store unavailable).
    """
    since_at, until_at = _moment("since", since), _moment("until", until)
    if not everything and all(v is None for v in (tag, source, since_at, until_at)):
        raise BadInputError(
            "say what to erase: --everything for the whole namespace, or --tag, --source, "
            "--since/--until"
        )
    with opened(data_dir, namespace) as (service, ns):
        what = "EVERYTHING in" if everything else "the matching memories of"
        if not yes:
            if not sys.stdin.isatty():
                raise BadInputError("erase removes data for good: add --yes to confirm")
            click.confirm(f"Erase {what} namespace {ns!r}?", abort=True, err=True)
        show = sys.stderr.isatty() and not as_json
        total: EraseReceipt | None = None
        with tqdm(unit="memory", desc="erased", disable=not show, file=sys.stderr) as bar:
            done = 0

            def progress(so_far: EraseReceipt) -> None:
                nonlocal done
                bar.update(so_far.memories - done)
                done = so_far.memories

            while total is None or not total.complete:
                done = 0
                receipt = service.erase(
                    ns,
                    everything=everything,
                    tag=tag,
                    source=source,
                    since=since_at,
                    until=until_at,
                    progress=progress,
                )
                total = receipt if total is None else total.plus(receipt)
    assert total is not None  # the loop ran at least once
    if as_json:
        emit_json(total.to_json_dict())
    else:
        click.echo(
            f"erased from {ns!r}: {total.memories} memory(ies), {total.links} link(s), "
            f"{total.beliefs} belief(s); {total.events} context event(s) "
            + ("removed" if everything else "rewritten")
        )
