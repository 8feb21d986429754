"""Recall: ``bundle`` and ``recall`` (memory for a question), ``explain`` and ``reconstruct`` (the
belief memory supports about a cue; ``reconstruct`` stores it).

Their arguments are the fields of the read's request model (:mod:`graphsvc.requests`), plus the
run to record an event for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from graphsvc.mcp.tools.answers import to_json
from graphsvc.mcp.tools.common import WRITES, Call, Reply, ToolSpec, hints
from graphsvc.model import ContextBundle, ReconstructedBelief
from graphsvc.recall import default_thresholds
from graphsvc.requests import BundleQuery, ReconstructQuery

# -- arguments ------------------------------------------------------------------------------------


class RecallArgs(BundleQuery):
    """A question, and how much memory may offer for it (a bundle that records nothing)."""


class BundleArgs(BundleQuery):
    """A question, and how much memory may offer for it."""

    run_id: str | None = None
    step: int = 0


class ExplainArgs(ReconstructQuery):
    """A cue, how many direct hits and how far to walk the graph (a belief that is not stored)."""


class ReconstructArgs(ReconstructQuery):
    """A cue, how many direct hits and how far to walk the graph from them."""

    run_id: str | None = None
    step: int = 0


# -- their answers as text ------------------------------------------------------------------------


def bundle_text(bundle: ContextBundle) -> str:
    """A bundle's ``rendered`` text (its header says what is offered, its last line what memory
    does not cover), then the abstention figures."""
    status = "skipped: memory abstains" if bundle.skipped else "offered"
    return (
        f"{bundle.rendered}\n(topScore {bundle.top_score:.3f}, minScore {bundle.min_score:.3f}: "
        f"{status})"
    )


def belief_text(belief: ReconstructedBelief) -> str:
    """A belief's summary and whether it was stored."""
    if belief.belief_id is None:
        stored = "no memory matches the cue, so no belief was stored"
    else:
        stored = (
            f"stored as belief {belief.belief_id} (graphsvc://belief/{belief.belief_id}); "
            f"confidence {belief.confidence:.3f}"
        )
    return f"{belief.summary}\n\n({stored})"


# -- what they do ---------------------------------------------------------------------------------


async def bundle(call: Call, args: BundleArgs) -> Reply:
    if args.run_id is not None:
        call.principal.require_write("bundle with runId (it records a memory_recall event)")
    return await _bundle(call, args, args.run_id, args.step)


async def recall(call: Call, args: RecallArgs) -> Reply:
    return await _bundle(call, args, None, 0)


async def _bundle(call: Call, args: BundleQuery, run_id: str | None, step: int) -> Reply:
    """The bundle ``args`` ask for, recorded as a memory_recall event of ``run_id`` if given."""
    result = await call.run(call.service.bundle, call.namespace, args, run_id=run_id, step=step)
    return Reply(result.to_json_dict(), bundle_text(result))


async def explain(call: Call, args: ExplainArgs) -> Reply:
    return await _belief(call, args, call.service.reconstruct)


async def reconstruct(call: Call, args: ReconstructArgs) -> Reply:
    call.principal.require_write("reconstruct (it stores the belief)")
    store = functools.partial(
        call.service.reconstruct_and_store, run_id=args.run_id, step=args.step
    )
    return await _belief(call, args, store)


async def _belief(
    call: Call, args: ReconstructQuery, build: Callable[..., ReconstructedBelief]
) -> Reply:
    """The belief ``args`` ask for, made by ``build`` (reconstruct, or reconstruct and store)."""
    belief = await call.run(build, call.namespace, args)
    return Reply(to_json(belief), belief_text(belief))


# -- the tools ------------------------------------------------------------------------------------

_ABSTENTION = (
    "Read the honesty fields first: `skipped` true means memory abstains (`topScore`, the "
    "probability that memory holds the answer, made of `answerEvidence`, is below `minScore`): "
    "answer without memory or say it does not know. "
    f"`minScore` defaults to the stage's threshold ({default_thresholds()}); 0 turns "
    "abstention off. `evidenceCoverage` (0-1) and `uncoveredWords` (the question's words no "
    "capsule mentions) say what may be missing. A capsule whose `validity` is not CURRENT is "
    "no longer (or not yet) true, and `rendered` marks it ([until 2024-06-01, superseded]). "
    "`asOf` answers as of a past instant (`asOfMode` VALID: true then; KNOWN: recorded then). "
    "`pendingVectors` above 0: that many memories wait for their vector, found by words but "
    "not yet by meaning (`retrievalNote` says why recall by meaning was incomplete or off)."
)

BUNDLE = ToolSpec(
    name="bundle",
    description="Memory for a question, under a token budget: put `rendered` into your "
    f"context. {_ABSTENTION} With `runId` it records a memory_recall event (write key); "
    "without it, use recall.",
    args=BundleArgs,
    result=ContextBundle,
    graphql=("Query", "bundle"),
    annotations=hints("Memory for a question"),
    handler=bundle,
)
RECALL = ToolSpec(
    name="recall",
    description="Memory for a question, under a token budget (read only): call it before "
    "answering anything that may depend on what was remembered, and put `rendered` into "
    f"your context. {_ABSTENTION}",
    args=RecallArgs,
    result=ContextBundle,
    graphql=("Query", "bundle"),
    annotations=hints("Recall for a question", read_only=True, idempotent=True),
    handler=recall,
)
EXPLAIN = ToolSpec(
    name="explain",
    description="What memory supports about a cue, and why (read only): the top `k` memories "
    "(`sourceIds`) and the causes, effects and related memories within `depth` links, "
    "summarised in `summary`; `confidence` is the sources' mean score. For 'why' and "
    "'what led to' questions.",
    args=ExplainArgs,
    result=ReconstructedBelief,
    graphql=("Query", "reconstruct"),
    annotations=hints("Explain a belief", read_only=True, idempotent=True),
    handler=explain,
)
RECONSTRUCT = ToolSpec(
    name="reconstruct",
    description="As explain, and store the belief (`beliefId`; removed when a memory it "
    f"used is forgotten). {WRITES}",
    args=ReconstructArgs,
    result=ReconstructedBelief,
    graphql=("Mutation", "reconstruct"),
    annotations=hints("Reconstruct a belief", idempotent=False),
    handler=reconstruct,
)

__all__ = [
    "BUNDLE",
    "EXPLAIN",
    "RECALL",
    "RECONSTRUCT",
    "BundleArgs",
    "ExplainArgs",
    "RecallArgs",
    "ReconstructArgs",
]
