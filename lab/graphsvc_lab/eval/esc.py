"""EventStoryLine: reconstruct's causal walk against the gold causal graph.

Every event of every selected document is a memory (its trigger and sentence, dated), every causal
pair a ``CAUSES`` link, all in one namespace (through :func:`graphsvc_lab.datasets.esc_rows`).
For each event that takes part in a causal pair, the cue is that event's memory text; the belief's
memories (sources and linked context, the queried event itself left out) are scored against the
gold ancestors (causes, causes of causes, ...) and descendants within ``depth`` hops:

- ancestor / descendant recall: the share of the gold set the belief returned (queries with at
  least one gold ancestor / descendant);
- precision: the share of what the belief returned that is a gold ancestor or descendant (and the
  same over the linked context only);
- found@1: the queried event is the first source.

The bm25s baseline gets as many memories as the belief returned (its top hits for the same cue),
so both return the same number of memories.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphsvc.text import estimate_tokens
from graphsvc_lab.datasets import esc_rows, load_esc
from graphsvc_lab.eval.common import Bm25Baseline, RunContext, load_rows, progress, timed
from graphsvc_lab.eval.metrics import mean, median, percentile, precision_of, recall_of
from graphsvc_lab.eval.report import Curve, Plot, Report, Table


def within(graph: Mapping[str, Iterable[str]], start: str, depth: int) -> dict[str, int]:
    """Nodes reachable from ``start`` in 1..``depth`` hops of ``graph`` -> their hop distance
    (cycles terminate; ``start`` itself is never included)."""
    seen = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if seen[node] >= depth:
            continue
        for nxt in sorted(graph.get(node, ())):
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    del seen[start]
    return seen


@dataclass(frozen=True)
class Gold:
    """The causal graph of the loaded documents over memory keys."""

    effects: dict[str, set[str]]
    causes: dict[str, set[str]]

    def queries(self) -> list[str]:
        return sorted(set(self.effects) | set(self.causes), key=_event_order)


def _event_order(key: str) -> tuple[str, int, str]:
    _, doc, event = key.split(":", 2)
    return (doc, int(event) if event.isdigit() else -1, event)


def gold_graph(rows: Iterable[dict[str, Any]], key_of_id: Mapping[str, str]) -> Gold:
    """The CAUSES links among the rows, as key -> effects and key -> causes."""
    effects: dict[str, set[str]] = {}
    causes: dict[str, set[str]] = {}
    for row in rows:
        if row["type"] == "link" and row["kind"] == "CAUSES":
            cause, effect = key_of_id[row["source"]], key_of_id[row["target"]]
            effects.setdefault(cause, set()).add(effect)
            causes.setdefault(effect, set()).add(cause)
    return Gold(effects, causes)


@dataclass
class EscResult:
    """One query event: gold neighbourhoods and what each system returned."""

    key: str
    ancestors: dict[str, int]
    descendants: dict[str, int]
    returned: list[str]
    linked: list[str]
    found_first: bool
    baseline: list[str]
    tokens: int
    seconds: float
    baseline_seconds: float


def run_esc(
    ctx: RunContext, path: Path, only: Sequence[str], limit: int | None, k: int, depth: int
) -> tuple[list[EscResult], int, int]:
    """Load the documents into one fresh namespace and reconstruct from every causal event.
    Returns the results, the memories and the links loaded."""
    documents = [d for d in load_esc(path) if not only or d["doc"] in only or d["topic"] in only]
    rows = [row for d in documents for row in esc_rows(d, ctx.run_id)]
    namespace = ctx.namespace("esc")
    service = ctx.default  # hybrid when the embedder is there, as deployed
    corpus = load_rows(service, namespace, rows, "esc")
    key_of_id = {str(i): key for i, key in corpus.key_of.items()}
    gold = gold_graph(rows, key_of_id)
    text_of = dict(zip(corpus.keys, corpus.texts, strict=True))
    index = Bm25Baseline(corpus.texts)
    queries = gold.queries()[:limit] if limit is not None else gold.queries()
    results: list[EscResult] = []
    with progress(len(queries), "eval esc", "q") as bar:
        for key in queries:
            cue = text_of[key]
            belief, seconds = timed(service.reconstruct, namespace, cue, k=k, depth=depth)
            sources = [corpus.key_of[i] for i in belief.source_ids]
            linked = [corpus.key_of[i] for i in belief.linked_context_ids]
            returned = [x for x in dict.fromkeys(sources + linked) if x != key]
            size = len(returned) + (1 if key in sources or key in linked else 0)
            hits, baseline_seconds = timed(index.search, cue, max(size, 1))
            baseline = [corpus.keys[p] for p, _ in hits if corpus.keys[p] != key]
            results.append(
                EscResult(
                    key=key,
                    ancestors=within(gold.causes, key, depth),
                    descendants=within(gold.effects, key, depth),
                    returned=returned,
                    linked=[x for x in linked if x != key],
                    found_first=bool(sources) and sources[0] == key,
                    baseline=baseline,
                    tokens=estimate_tokens(belief.summary),
                    seconds=seconds,
                    baseline_seconds=baseline_seconds,
                )
            )
            bar.update(1)
    links = sum(1 for row in rows if row["type"] == "link")
    return results, len(corpus.keys), links


def _recall(
    results: Sequence[EscResult], which: str, system: str, hop: int | None = None
) -> tuple[int, float]:
    values = []
    for r in results:
        gold = r.ancestors if which == "ancestors" else r.descendants
        wanted = {x for x, d in gold.items() if hop is None or d == hop}
        if wanted:
            values.append(recall_of(r.returned if system == "graphsvc" else r.baseline, wanted))
    return len(values), mean(values)


def build_esc_report(preamble: list[str], results: Sequence[EscResult], depth: int) -> Report:
    table = Table(
        f"Reconstruct against the gold causal graph ({len(results)} query events, depth {depth})",
        ["figure", "n", "graphsvc", "bm25"],
        note="Returned: the belief's sources and linked context without the queried event; "
        "bm25: as many top hits for the same cue. Precision: share of what was returned that is "
        "a gold ancestor or descendant within the depth.",
    )
    for which in ("ancestors", "descendants"):
        n, ours = _recall(results, which, "graphsvc")
        _, theirs = _recall(results, which, "bm25")
        table.rows.append([f"{which[:-1]} recall (within depth {depth})", n, ours, theirs])
        for hop in range(1, depth + 1):
            n, ours = _recall(results, which, "graphsvc", hop)
            _, theirs = _recall(results, which, "bm25", hop)
            table.rows.append([f"  {which[:-1]} recall at hop {hop}", n, ours, theirs])
    related = [set(r.ancestors) | set(r.descendants) for r in results]
    table.rows.append(
        [
            "precision (all returned)",
            len(results),
            mean(precision_of(r.returned, g) for r, g in zip(results, related, strict=True)),
            mean(precision_of(r.baseline, g) for r, g in zip(results, related, strict=True)),
        ]
    )
    table.rows.append(
        [
            "precision (linked context only)",
            len(results),
            mean(precision_of(r.linked, g) for r, g in zip(results, related, strict=True)),
            None,
        ]
    )
    table.rows.append(
        [
            "queried event is source #1",
            len(results),
            mean(float(r.found_first) for r in results),
            None,
        ]
    )
    table.rows.append(
        [
            "median memories returned",
            len(results),
            median([float(len(r.returned)) for r in results]),
            median([float(len(r.baseline)) for r in results]),
        ]
    )
    table.rows.append(
        [
            "median tokens per belief summary",
            len(results),
            median([float(r.tokens) for r in results]),
            None,
        ]
    )
    timing = Table(
        "Latency per query",
        ["figure", "graphsvc", "bm25"],
        note="graphsvc: one reconstruct call; bm25: one bm25s query.",
        key="latency",
    )
    for q in (50, 95):
        timing.rows.append(
            [
                f"p{q} (ms)",
                percentile([r.seconds * 1000 for r in results], q),
                percentile([r.baseline_seconds * 1000 for r in results], q),
            ]
        )
    hops = list(range(1, depth + 1))
    curves = [
        Curve(
            f"{system} {which}",
            [float(h) for h in hops],
            [_recall(results, which, system, h)[1] for h in hops],
            dashed=system == "bm25",
            color=0 if which == "ancestors" else 1,
        )
        for system in ("graphsvc", "bm25")
        for which in ("ancestors", "descendants")
    ]
    plot = Plot(
        "esc_recall_by_hop.png",
        "Causal recall by hop distance",
        "hops from the queried event",
        "recall",
        curves,
    )
    figures: dict[str, Any] = {"queries": len(results), "depth": depth}
    for row in table.rows:
        figures[str(row[0]).strip()] = dict(zip(table.header[1:], row[1:], strict=True))
    return Report("esc", preamble, [table], [plot], figures, [timing])


__all__ = ["EscResult", "Gold", "build_esc_report", "gold_graph", "run_esc", "within"]
