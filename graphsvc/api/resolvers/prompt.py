"""Prompt assembly and the trace of a run: ``contextEvents``, ``promptBundle``, ``drift``;
``reportTokens``, ``recordContextEvent``."""

from __future__ import annotations

from typing import Annotated

import strawberry

from graphsvc import model as m
from graphsvc import prompt as p
from graphsvc.api.context import Info
from graphsvc.api.inputs import PromptInput, to_domain
from graphsvc.api.resolvers.common import RunId
from graphsvc.api.types import ContextEvent, DriftReport, PromptBundle, arg, mutation, resolver


@strawberry.type
class PromptQuery:
    @resolver("The context events of a run, in the order recorded.", list[ContextEvent])
    async def context_events(self, info: Info, run_id: RunId) -> list[m.ContextEvent]:
        ctx = info.context
        return await ctx.run(ctx.service.events, ctx.namespace, run_id)

    @resolver(
        "Assemble a prompt for the user turn: the caller's fragments, environment, project "
        "context (sha256, size cap, history reuse), tools, skills and transcript tail, plus "
        "memory for the turn under the ledger's budget; rendered as a system prompt and as "
        "Anthropic messages. With `input.runId` (write key), the recall and an 'assembled' "
        "event (estTokens = the estimate) are recorded at `input.step`.",
        PromptBundle,
    )
    async def prompt_bundle(
        self, info: Info, input: Annotated[PromptInput, arg("What to assemble the prompt from.")]
    ) -> p.PromptBundle:
        ctx = info.context
        caller = ctx.caller
        request = to_domain(p.PromptInput, input, "input", aliases=True)
        if request.run_id is not None:
            caller.require_write("promptBundle with runId (it records events)")
        return await ctx.run(ctx.service.prompt_bundle, ctx.namespace, request)

    @resolver(
        "Estimated against reported tokens over a run: per step (the latest assembled event of "
        "each) and overall. Steps without reportTokens are listed as unreported and left out of "
        "the ratio.",
        DriftReport,
    )
    async def drift(self, info: Info, run_id: RunId) -> p.DriftReport:
        ctx = info.context
        return await ctx.run(ctx.service.drift, ctx.namespace, run_id)


@strawberry.type
class PromptMutation:
    @mutation(
        "Put the provider's count of input tokens on the step's 'assembled' event (the latest, "
        "when the step was assembled more than once), beside graphsvc's estimate. NOT_FOUND when "
        "the step has no 'assembled' event: call promptBundle with this runId and step first.",
        ContextEvent,
    )
    async def report_tokens(
        self,
        info: Info,
        run_id: RunId,
        step: Annotated[int, arg("The step promptBundle was called with.")],
        reported_tokens: Annotated[
            int,
            arg(
                "Every input token the provider counted (Anthropic: usage.input_tokens + "
                "cache_creation_input_tokens + cache_read_input_tokens)."
            ),
        ],
    ) -> m.ContextEvent:
        ctx = info.context
        ctx.caller.require_write("reportTokens")
        return await ctx.run(
            ctx.service.report_tokens, ctx.namespace, run_id, step, reported_tokens
        )

    @mutation(
        "Record a decision of the agent harness: kind reread, reread_refused, served, replan or "
        "stalled (graphsvc records the other kinds itself; any other kind is BAD_INPUT, listing "
        "these).",
        ContextEvent,
    )
    async def record_context_event(
        self,
        info: Info,
        run_id: RunId,
        step: Annotated[int, arg("The agent's step number (>= 0).")],
        kind: Annotated[str, arg("reread, reread_refused, served, replan or stalled.")],
        detail: Annotated[str | None, arg("What happened and why, in words.")] = None,
        est_tokens: Annotated[int | None, arg("Tokens involved, when it matters.")] = None,
    ) -> m.ContextEvent:
        ctx = info.context
        ctx.caller.require_write("recordContextEvent")
        return await ctx.run(
            ctx.service.record_agent_event,
            ctx.namespace,
            run_id,
            step,
            kind,
            detail,
            est_tokens,
        )


__all__ = ["PromptMutation", "PromptQuery"]
