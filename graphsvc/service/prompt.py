"""The runs of an agent and its prompt: ``record_event``, ``events``, ``record_agent_event``,
``report_tokens``, ``drift`` (the trace of a run); ``prompt_defaults``, ``prompt_bundle`` (prompt
assembly, :mod:`graphsvc.prompt`)."""

from __future__ import annotations

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import ContextEvent, ContextEventKind, unicode_problem
from graphsvc.prompt import (
    AGENT_EVENT_KINDS,
    DriftReport,
    PromptBundle,
    PromptDefaults,
    PromptInput,
)
from graphsvc.prompt.assembly import finish_prompt, plan_prompt, resolve_window
from graphsvc.prompt.trace import assembled_detail, drift_report
from graphsvc.requests import BundleQuery
from graphsvc.service.recall import Recall


class RunsAndPrompt(Recall):
    """The service's record of a run's context decisions, and the prompts it assembles. A
    prompt's memory is a bundle, so this room stands on :class:`Recall`."""

    def record_event(
        self,
        namespace: str,
        run_id: str,
        step: int,
        kind: str,
        detail: str | None = None,
        est_tokens: int | None = None,
    ) -> ContextEvent:
        """Record a context decision of an agent harness."""
        self.check_namespace(namespace)
        self.check_run_id(run_id)
        known = [k.value for k in ContextEventKind]
        if kind not in known:
            raise BadInputError(f"unknown event kind {kind!r}: use one of {', '.join(known)}")
        if step < 0:
            raise BadInputError(f"step must be at least 0, got {step}")
        return self.store.append_event(
            namespace,
            run_id,
            step=step,
            kind=kind,
            detail=detail,
            est_tokens=est_tokens,
            at=self.clock.now(),
        )

    def events(self, namespace: str, run_id: str) -> list[ContextEvent]:
        self.check_namespace(namespace)
        self.check_run_id(run_id)
        return self.store.events(namespace, run_id)

    # -- prompt assembly (graphsvc/prompt/) ------------------------------------------------------

    def prompt_defaults(self) -> PromptDefaults:
        """The window settings a promptBundle request leaves out, from the settings."""
        s = self.settings
        return PromptDefaults(
            context_window=s.prompt_context_window,
            reserved_completion_tokens=s.prompt_reserved_completion_tokens,
            memory_budget_share=s.prompt_memory_budget_share,
            max_transcript_entries=s.prompt_transcript_tail,
            max_context_file_tokens=s.prompt_context_file_max_tokens,
        )

    def prompt_bundle(self, namespace: str, request: PromptInput) -> PromptBundle:
        """Assemble a prompt (:mod:`graphsvc.prompt`): the caller's parts, memory for the user
        turn under the ledger's budget, the system prompt and the messages. With a ``run_id``,
        the recall records a ``memory_recall`` event and the assembly an ``assembled`` one whose
        ``est_tokens`` is the ledger's estimate.

        Raises:
            BadInputError: an invalid namespace, run id, window or memory setting.
            LimitExceededError: a setting above a service limit, or a memory query too long.
        """
        s = self.settings
        self.check_namespace(namespace)
        if request.run_id is not None:
            self.check_run_id(request.run_id)
        window = resolve_window(
            request,
            self.prompt_defaults(),
            max_budget_tokens=s.max_budget_tokens,
            default_max_capsules=s.default_max_capsules,
            max_capsules_limit=s.max_capsules_limit,
        )
        today = self.clock.today()
        plan = plan_prompt(request, window, today, max_query_chars=s.max_text_chars)
        memory = None
        if plan.bundle_budget > 0:
            ask = BundleQuery(
                query=plan.memory_query,
                budget_tokens=plan.bundle_budget,
                stage=request.memory_stage,
                min_score=request.memory_min_score,
                max_capsules=window.max_capsules,
                as_of=request.memory_as_of,
                as_of_mode=request.memory_as_of_mode,
            )
            memory = self.bundle(namespace, ask, run_id=request.run_id, step=request.step)
        result = finish_prompt(plan, memory)
        if request.run_id is None:
            return result
        event = self.store.append_event(
            namespace,
            request.run_id,
            step=request.step,
            kind=ContextEventKind.ASSEMBLED,
            detail=assembled_detail(result),
            est_tokens=result.context_ledger.estimated_input_tokens,
            at=self.clock.now(),
        )
        return result.model_copy(update={"assembled_event": event})

    def report_tokens(
        self, namespace: str, run_id: str, step: int, reported_tokens: int
    ) -> ContextEvent:
        """Put the provider's count of input tokens on the step's (latest) ``assembled`` event.

        Raises:
            NotFoundError: the step has no ``assembled`` event (call promptBundle with this runId
                and step first).
            BadInputError: an invalid run id, a negative step or count.
        """
        self.check_namespace(namespace)
        self.check_run_id(run_id)
        if step < 0:
            raise BadInputError(f"step must be at least 0, got {step}")
        if reported_tokens < 0:
            raise BadInputError(f"reportedTokens must be at least 0, got {reported_tokens}")
        return self.store.set_reported_tokens(namespace, run_id, step, reported_tokens)

    def record_agent_event(
        self,
        namespace: str,
        run_id: str,
        step: int,
        kind: str,
        detail: str | None = None,
        est_tokens: int | None = None,
    ) -> ContextEvent:
        """Record a decision of an agent harness: reread, reread_refused, served, replan or
        stalled (graphsvc records the other kinds itself).

        Raises:
            BadInputError: another kind (the message lists these), a negative count.
            LimitExceededError: a detail longer than GRAPHSVC_MAX_TEXT_CHARS.
        """
        known = [k.value for k in AGENT_EVENT_KINDS]
        if kind not in known:
            raise BadInputError(
                f"unknown event kind {kind!r}: use one of {', '.join(known)} (graphsvc records "
                "memory_write, memory_recall, memory_evict and assembled itself)"
            )
        limit = self.settings.max_text_chars
        if detail is not None and len(detail) > limit:
            raise LimitExceededError(
                f"detail has {len(detail)} characters; the limit is {limit} "
                "(GRAPHSVC_MAX_TEXT_CHARS)"
            )
        if detail is not None and (problem := unicode_problem(detail)) is not None:
            raise BadInputError(f"detail: {problem}")
        if est_tokens is not None and est_tokens < 0:
            raise BadInputError(f"estTokens must be at least 0, got {est_tokens}")
        return self.record_event(namespace, run_id, step, kind, detail, est_tokens)

    def drift(self, namespace: str, run_id: str) -> DriftReport:
        """A run's estimated against reported tokens, per step and overall."""
        return drift_report(run_id, self.events(namespace, run_id))
