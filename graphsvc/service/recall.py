"""Recall: ``bundle`` (what memory offers a prompt), ``reconstruct`` and
``reconstruct_and_store`` (a belief about a cue), and the ``memory_recall`` events of a run.

The ranking itself is the pipeline's (:class:`~graphsvc.recall.pipeline.RecallPipeline`); this
room checks the request against the settings, asks the pipeline and packs its answer."""

from __future__ import annotations

import json
import uuid
from typing import Any
from uuid import UUID

from graphsvc.errors import BadInputError
from graphsvc.model import Belief, ContextBundle, ContextEventKind, ReconstructedBelief
from graphsvc.recall import BundleRequest, Stage, build_belief, build_bundle, get_stage
from graphsvc.requests import BundleQuery, ReconstructQuery
from graphsvc.service.checks import check_text, in_range
from graphsvc.service.core import ServiceCore
from graphsvc.service.ids import CONTENT_ID_NAMESPACE
from graphsvc.service.reads import validities
from graphsvc.text import estimate_tokens


class Recall(ServiceCore):
    """The service's reads by meaning and words: bundles and beliefs."""

    def min_score_for(self, stage: Stage) -> float:
        """The abstention threshold of a bundle at ``stage`` whose request gives none:
        ``GRAPHSVC_DEFAULT_MIN_SCORE`` when set, else the stage's own."""
        chosen = self.settings.default_min_score
        return stage.min_score if chosen is None else chosen

    def bundle(
        self,
        namespace: str,
        request: BundleQuery | str,
        *,
        run_id: str | None = None,
        step: int = 0,
        **options: Any,
    ) -> ContextBundle:
        """What memory offers a prompt for a question under a token budget (docs/design.md):
        ``request`` is a :class:`~graphsvc.requests.BundleQuery`, or the question with the
        query's other fields as ``options`` (``budget_tokens=500``). With ``as_of``, as memory
        would have answered then (``as_of_mode`` KNOWN: what was recorded by then; VALID, the
        default: what was true then). With ``run_id``, a memory_recall event is recorded at
        ``step``.

        Raises:
            BadInputError: an invalid field, or one below its bound.
            LimitExceededError: a field above the settings' limit.
        """
        ask = BundleQuery.of(request, options)
        s = self.settings
        self.check_namespace(namespace)
        check_text(ask.query, "query", s.max_text_chars)
        budget = s.default_budget_tokens if ask.budget_tokens is None else ask.budget_tokens
        in_range("budgetTokens", budget, 1, s.max_budget_tokens)
        stage_name = ask.stage or "default"
        chosen = get_stage(stage_name)
        floor = self.min_score_for(chosen) if ask.min_score is None else ask.min_score
        if not 0.0 <= floor <= 1.0:
            raise BadInputError(f"minScore must be between 0 and 1, got {floor}")
        cap = s.default_max_capsules if ask.max_capsules is None else ask.max_capsules
        in_range("maxCapsules", cap, 1, s.max_capsules_limit)
        when = ask.when
        ranking = self.recall.rank(namespace, ask.query, stage_name, as_of=when)
        spec = BundleRequest(
            ask.query,
            budget,
            floor,
            cap,
            chosen,
            self.policy.bundle.relative_floor,
            ranking.retrieval,
            when,
        )
        ranked = [item.memory for item in ranking.ranked]
        valid = validities(self.store, namespace, ranked, when, self.clock)
        result = build_bundle(
            spec,
            ranking.terms,
            ranking.stats,
            ranking.ranked,
            ranking.top_score,
            ranking.evidence,
            valid,
        )
        if ranking.pending_vectors or ranking.retrieval_note is not None:
            result = result.model_copy(
                update={
                    "pending_vectors": ranking.pending_vectors,
                    "retrieval_note": ranking.retrieval_note,
                }
            )
        if run_id is not None:
            self._recall_event(namespace, run_id, step, result)
        return result

    def _recall_event(self, namespace: str, run_id: str, step: int, result: ContextBundle) -> None:
        self.check_run_id(run_id)
        detail = (
            f"bundle for {result.query!r}: {len(result.capsules)} capsule(s), "
            f"{len(result.excluded)} excluded, skipped={str(result.skipped).lower()}, "
            f"coverage {result.evidence_coverage:.3f}"
        )
        self.store.append_event(
            namespace,
            run_id,
            step=step,
            kind=ContextEventKind.MEMORY_RECALL,
            detail=detail,
            est_tokens=result.used_tokens,
            at=self.clock.now(),
        )

    def reconstruct(
        self, namespace: str, request: ReconstructQuery | str, **options: Any
    ) -> ReconstructedBelief:
        """The top-k hits for a cue and the graph around them, summarised (docs/design.md):
        ``request`` is a :class:`~graphsvc.requests.ReconstructQuery`, or the cue with the
        query's other fields as ``options``; ``as_of``/``as_of_mode`` as for :meth:`bundle` (the
        walk too sees only what was visible then).

        Raises:
            BadInputError: an invalid field, or one below its bound.
            LimitExceededError: a field above the settings' limit.
        """
        ask = ReconstructQuery.of(request, options)
        s = self.settings
        self.check_namespace(namespace)
        check_text(ask.cue, "cue", s.max_text_chars)
        k = s.default_k if ask.k is None else ask.k
        in_range("k", k, 1, s.max_k)
        depth = s.default_depth if ask.depth is None else ask.depth
        in_range("depth", depth, 0, s.max_depth)
        when = ask.when
        hits, walk = self.recall.hits_and_walk(namespace, ask.cue, k, depth, when)
        memories = [item.memory for item in hits] + [memory for memory, _ in walk.reached]
        valid = validities(self.store, namespace, memories, when, self.clock)
        belief = build_belief(ask.cue, hits, walk, valid, when)
        ends = {v.memory_id: v.valid_until for v in belief.validity}
        return belief.model_copy(
            update={
                "memories": tuple(
                    m.model_copy(update={"invalidated_at": ends.get(m.id)}) for m in belief.memories
                )
            }
        )

    def reconstruct_and_store(
        self,
        namespace: str,
        request: ReconstructQuery | str,
        *,
        run_id: str | None = None,
        step: int = 0,
        **options: Any,
    ) -> ReconstructedBelief:
        """As :meth:`reconstruct`, and store the belief (linked to its sources) and, for a run, a
        ``memory_recall`` event."""
        if run_id is not None:
            self.check_run_id(run_id)
        ask = ReconstructQuery.of(request, options)
        belief = self.reconstruct(namespace, ask)
        cue = ask.cue
        now = self.clock.now()
        belief_id = uuid.uuid5(
            CONTENT_ID_NAMESPACE,
            json.dumps([namespace, cue, now.isoformat(), [str(i) for i in belief.source_ids]]),
        )
        stored_id: UUID | None = None
        if belief.source_ids:
            stored_id = belief_id
            self.store.save_belief(
                Belief(
                    id=belief_id,
                    namespace=namespace,
                    cue=cue,
                    summary=belief.summary,
                    confidence=belief.confidence,
                    created_at=now,
                    source_ids=belief.source_ids,
                    linked_context_ids=belief.linked_context_ids,
                )
            )
        if run_id is not None:
            self.store.append_event(
                namespace,
                run_id,
                step=step,
                kind=ContextEventKind.MEMORY_RECALL,
                detail=f"reconstruct {cue!r}: {len(belief.source_ids)} source(s), "
                f"{len(belief.linked_context_ids)} linked, confidence {belief.confidence:.3f}",
                est_tokens=estimate_tokens(belief.summary),
                at=now,
            )
        return belief.model_copy(update={"belief_id": stored_id})
