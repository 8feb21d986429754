"""Recall: ``bundle``, ``reconstruct`` (the query, and the mutation that stores the belief)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry

from graphsvc import model as m
from graphsvc.api.context import Info
from graphsvc.api.resolvers.common import OptionalRunId, Step
from graphsvc.api.types import (
    AsOfMode,
    ContextBundle,
    ReconstructedBelief,
    arg,
    mutation,
    resolver,
)
from graphsvc.recall import default_thresholds

Cue = Annotated[str, arg("What to reconstruct a belief about, in words.")]
TopK = Annotated[int | None, arg("How many direct hits (default 5).")]
Depth = Annotated[int | None, arg("Walk depth in hops (default 2).")]
AsOfAt = Annotated[
    datetime | None,
    arg(
        "Answer as of this instant (a time zone is required); null: now. IDF statistics stay "
        "the namespace's now."
    ),
]
AsOfModeArg = Annotated[
    AsOfMode | None,
    arg("With asOf: KNOWN (what was recorded by then) or VALID (what was true then; default)."),
]


def _mode(mode: AsOfMode | None) -> str | None:
    return None if mode is None else mode.name


@strawberry.type
class RecallQuery:
    @resolver(
        "What memory offers a prompt for `query` under a token budget: capsules, exclusions "
        "with reasons, abstention, coverage and uncovered terms. With `runId`, a memory_recall "
        "event is recorded at `step`.",
        ContextBundle,
    )
    async def bundle(
        self,
        info: Info,
        query: Annotated[str, arg("The question, in words.")],
        budget_tokens: Annotated[int | None, arg("Token budget (default 1000).")] = None,
        stage: Annotated[str | None, arg("Scoring stage: default, recent or exact.")] = None,
        min_score: Annotated[
            float | None,
            arg(
                "Abstain (skipped) when topScore is below this, in [0, 1]. Default: the stage's "
                f"threshold ({default_thresholds()}); 0 turns abstention off."
            ),
        ] = None,
        max_capsules: Annotated[int | None, arg("Most capsules to pack (default 20).")] = None,
        run_id: Annotated[
            str | None, arg("Record a memory_recall event for this run (needs a write key).")
        ] = None,
        step: Step = 0,
        as_of: AsOfAt = None,
        as_of_mode: AsOfModeArg = None,
    ) -> m.ContextBundle:
        ctx = info.context
        if run_id is not None:
            ctx.caller.require_write("bundle with runId (it records a memory_recall event)")
        return await ctx.run(
            ctx.service.bundle,
            ctx.namespace,
            query,
            budget_tokens=budget_tokens,
            stage=stage,
            min_score=min_score,
            max_capsules=max_capsules,
            run_id=run_id,
            step=step,
            as_of=as_of,
            as_of_mode=_mode(as_of_mode),
        )

    @resolver(
        "The belief memory supports about `cue`: the top-k hits and the graph context within "
        "`depth` hops. Reads only (the mutation also stores the belief).",
        ReconstructedBelief,
    )
    async def reconstruct(
        self,
        info: Info,
        cue: Cue,
        k: TopK = None,
        depth: Depth = None,
        as_of: AsOfAt = None,
        as_of_mode: AsOfModeArg = None,
    ) -> m.ReconstructedBelief:
        ctx = info.context
        return await ctx.run(
            ctx.service.reconstruct,
            ctx.namespace,
            cue,
            k=k,
            depth=depth,
            as_of=as_of,
            as_of_mode=_mode(as_of_mode),
        )


@strawberry.type
class RecallMutation:
    @mutation(
        "As Query.reconstruct, and store the belief (DERIVED_FROM its sources, USED_CONTEXT the "
        "linked memories); with `runId`, record a memory_recall event.",
        ReconstructedBelief,
    )
    async def reconstruct(
        self,
        info: Info,
        cue: Cue,
        k: TopK = None,
        depth: Depth = None,
        run_id: OptionalRunId = None,
        step: Step = 0,
        as_of: AsOfAt = None,
        as_of_mode: AsOfModeArg = None,
    ) -> m.ReconstructedBelief:
        ctx = info.context
        ctx.caller.require_write("reconstruct (mutation)")
        return await ctx.run(
            ctx.service.reconstruct_and_store,
            ctx.namespace,
            cue,
            k=k,
            depth=depth,
            run_id=run_id,
            step=step,
            as_of=as_of,
            as_of_mode=_mode(as_of_mode),
        )


__all__ = ["RecallMutation", "RecallQuery"]
