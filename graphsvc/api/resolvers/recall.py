"""Recall: ``bundle``, ``reconstruct`` (the query, and the mutation that stores the belief).

Their arguments are the fields of the read's request model (:mod:`graphsvc.requests`, through
:func:`graphsvc.api.requests.takes`), plus the run to record an event for.
"""

from __future__ import annotations

from typing import Annotated

import strawberry

from graphsvc import model as m
from graphsvc.api.context import Info
from graphsvc.api.requests import run_parameters, takes
from graphsvc.api.resolvers.common import OptionalRunId, Step
from graphsvc.api.types import ContextBundle, ReconstructedBelief, arg, mutation, resolver
from graphsvc.requests import BundleQuery, ReconstructQuery

BundleRunId = Annotated[
    str | None, arg("Record a memory_recall event for this run (needs a write key).")
]


@strawberry.type
class RecallQuery:
    @resolver(
        "What memory offers a prompt for `query` under a token budget: capsules, exclusions "
        "with reasons, abstention, coverage and uncovered terms. With `runId`, a memory_recall "
        "event is recorded at `step`.",
        ContextBundle,
    )
    @takes(BundleQuery, *run_parameters(BundleRunId, Step))
    async def bundle(
        self, info: Info, request: BundleQuery, run_id: str | None, step: int
    ) -> m.ContextBundle:
        ctx = info.context
        if run_id is not None:
            ctx.caller.require_write("bundle with runId (it records a memory_recall event)")
        return await ctx.run(ctx.service.bundle, ctx.namespace, request, run_id=run_id, step=step)

    @resolver(
        "The belief memory supports about `cue`: the top-k hits and the graph context within "
        "`depth` hops. Reads only (the mutation also stores the belief).",
        ReconstructedBelief,
    )
    @takes(ReconstructQuery)
    async def reconstruct(self, info: Info, request: ReconstructQuery) -> m.ReconstructedBelief:
        ctx = info.context
        return await ctx.run(ctx.service.reconstruct, ctx.namespace, request)


@strawberry.type
class RecallMutation:
    @mutation(
        "As Query.reconstruct, and store the belief (DERIVED_FROM its sources, USED_CONTEXT the "
        "linked memories); with `runId`, record a memory_recall event.",
        ReconstructedBelief,
    )
    @takes(ReconstructQuery, *run_parameters(OptionalRunId, Step))
    async def reconstruct(
        self, info: Info, request: ReconstructQuery, run_id: str | None, step: int
    ) -> m.ReconstructedBelief:
        ctx = info.context
        ctx.caller.require_write("reconstruct (mutation)")
        return await ctx.run(
            ctx.service.reconstruct_and_store, ctx.namespace, request, run_id=run_id, step=step
        )


__all__ = ["RecallMutation", "RecallQuery"]
