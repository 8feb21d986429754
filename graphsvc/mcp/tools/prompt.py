"""Prompt assembly and the trace of a run, for the harness that drives an agent:
``prompt_bundle`` and ``report_tokens``."""

from __future__ import annotations

from graphsvc.mcp.tools.common import WRITES, Call, Reply, ToolSpec, hints
from graphsvc.model import ContextEvent, Model
from graphsvc.prompt import PromptBundle, PromptInput
from graphsvc.validity import as_of_phrase


class ReportTokensArgs(Model):
    """The provider's count of input tokens for one assembled step of a run."""

    run_id: str
    step: int
    reported_tokens: int


def prompt_text(bundle: PromptBundle) -> str:
    """Where a prompt's tokens go, and what memory offered it."""
    ledger = bundle.context_ledger
    fit = "fits" if ledger.fits else f"over by {ledger.overflow_tokens}"
    past = (
        ""
        if bundle.memory is None or bundle.memory.as_of is None
        else (f" {as_of_phrase(bundle.memory.as_of)}")
    )
    if bundle.memory is None:
        memory = f"memory not consulted: {bundle.memory_note}"
    elif bundle.memory.skipped:
        memory = f"memory{past} abstained (skipped)"
    else:
        # The capsules' figure is the one the run's events record (memory_recall's estTokens,
        # the assembled event's detail); the section's adds the header and notes around them.
        memory = (
            f"memory{past}: {len(bundle.memory.capsules)} capsule(s), {bundle.memory.used_tokens}/"
            f"{bundle.memory.budget_tokens} capsule tokens (the memory section, with its header "
            f"and notes: {ledger.memory_tokens}/{ledger.memory_budget_tokens}), coverage "
            f"{bundle.memory.evidence_coverage:.3f}"
        )
    return (
        f"Prompt assembled: {ledger.estimated_input_tokens}/{ledger.available_input_tokens} "
        f"estimated input tokens ({fit}); {memory}; {len(bundle.messages.get('messages', []))} "
        f"message(s); rendered sha256 {bundle.rendered_hash}. The system prompt is `rendered`, "
        "the request body `messages`."
    )


async def prompt_bundle(call: Call, args: PromptInput) -> Reply:
    if args.run_id is not None:
        call.principal.require_write("prompt_bundle with runId (it records events)")
    result = await call.run(call.service.prompt_bundle, call.namespace, args)
    return Reply(result.to_json_dict(), prompt_text(result))


async def report_tokens(call: Call, args: ReportTokensArgs) -> Reply:
    call.principal.require_write("report_tokens")
    event = await call.run(
        call.service.report_tokens, call.namespace, args.run_id, args.step, args.reported_tokens
    )
    text = (
        f"Step {event.step} of run {event.run_id}: estimated {event.est_tokens} input tokens, "
        f"the provider reported {event.reported_tokens}."
    )
    return Reply(event.to_json_dict(), text)


PROMPT_BUNDLE = ToolSpec(
    name="prompt_bundle",
    description="Assemble a whole prompt for the user's turn: your system prompt "
    "fragments, environment, project context files (sha256, size cap, an 'unchanged' "
    "marker for files the provider already has), tools, skills and the transcript tail, "
    "plus memory recalled for the turn, under a token ledger. Returns `rendered` (the "
    "system prompt), `messages` (an Anthropic Messages request body), `contextLedger` "
    "(where every token goes, and whether it `fits`), and `memory`: a bundle with the same "
    "abstention (`skipped`, `topScore` vs `minScore`) and coverage (`evidenceCoverage`, "
    "`uncoveredTerms`) fields as the bundle tool, or null when memory was not consulted "
    "(`memoryNote` says why). With `runId` (write key) it records the recall and an "
    "'assembled' event for `step`; after the provider answers, call report_tokens.",
    args=PromptInput,
    result=PromptBundle,
    graphql=("Query", "promptBundle"),
    annotations=hints("Assemble a prompt"),
    handler=prompt_bundle,
    harness=True,
)
REPORT_TOKENS = ToolSpec(
    name="report_tokens",
    description="After sending a prompt that prompt_bundle assembled with `runId` and "
    "`step`, report the input tokens the provider counted for it (Anthropic: "
    "usage.input_tokens + cache_creation_input_tokens + cache_read_input_tokens). graphsvc "
    "keeps it beside its own estimate, to measure how far its estimates drift. NOT_FOUND "
    "when that step has no assembled event: call prompt_bundle with this runId and step "
    f"first. {WRITES}",
    args=ReportTokensArgs,
    result=ContextEvent,
    graphql=("Mutation", "reportTokens"),
    annotations=hints("Report provider tokens", idempotent=True),
    handler=report_tokens,
    harness=True,
)

__all__ = ["PROMPT_BUNDLE", "REPORT_TOKENS", "ReportTokensArgs", "prompt_text"]
