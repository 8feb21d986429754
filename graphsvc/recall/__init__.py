"""The recall engine (docs/design.md, read semantics): from what a store returns to a
:class:`~graphsvc.model.ContextBundle` or a :class:`~graphsvc.model.ReconstructedBelief`.

One module per concern, each pure (no I/O): :mod:`~graphsvc.recall.query` (a query analysed
once), :mod:`~graphsvc.recall.scoring` (the lexical score), :mod:`~graphsvc.recall.conversation`
(answers after questions, speakers), :mod:`~graphsvc.recall.fusion` (hybrid recall),
:mod:`~graphsvc.recall.bundle` and :mod:`~graphsvc.recall.belief`. The package re-exports their
public names, so ``from graphsvc.recall import X`` works whichever module ``X`` lives in.

Two are not pure and say so: :mod:`~graphsvc.recall.pipeline`, the one that talks to the store, and
:mod:`~graphsvc.recall.query_encoder`, which encodes the pipeline's queries on a thread of its own
(no I/O; the encoder comes from :mod:`graphsvc.embedding`).

Three types name what a ranking holds: :class:`Ranked` (a candidate's id, score and matched terms,
before its memory is read), :class:`Scored` (a ranked memory) and the service's ``Ranking`` (a
query's whole ranked window).
"""

from graphsvc.recall.belief import SUMMARY_CHARS, build_belief
from graphsvc.recall.bundle import (
    DUPLICATE_JACCARD,
    BundleRequest,
    build_bundle,
    chronological_key,
    render_bundle,
    spans_days,
)
from graphsvc.recall.conversation import (
    SPEAKER_NAME_CHARS,
    SPEAKER_TAG_PREFIX,
    answer_seeds,
    attribute,
    expand_answers,
    is_question,
    speaker_tag,
    speaker_terms,
    speakers,
    unlinked_seeds,
)
from graphsvc.recall.fusion import calibrate, fuse, length_prior
from graphsvc.recall.query import Query
from graphsvc.recall.scoring import (
    BM25_B,
    BM25_K1,
    PLACES,
    STAGES,
    Ranked,
    Scored,
    Stage,
    apply_supersessions,
    attach,
    default_thresholds,
    get_stage,
    rank_columns,
    rank_order,
    score_candidates,
    window_guess,
)
from graphsvc.store.candidates import CandidatePlan, plan_candidates

__all__ = [
    "BM25_B",
    "BM25_K1",
    "DUPLICATE_JACCARD",
    "PLACES",
    "SPEAKER_NAME_CHARS",
    "SPEAKER_TAG_PREFIX",
    "STAGES",
    "SUMMARY_CHARS",
    "BundleRequest",
    "CandidatePlan",
    "Query",
    "Ranked",
    "Scored",
    "Stage",
    "answer_seeds",
    "apply_supersessions",
    "attach",
    "attribute",
    "build_belief",
    "build_bundle",
    "calibrate",
    "chronological_key",
    "default_thresholds",
    "expand_answers",
    "fuse",
    "get_stage",
    "is_question",
    "length_prior",
    "plan_candidates",
    "rank_columns",
    "rank_order",
    "render_bundle",
    "score_candidates",
    "spans_days",
    "speaker_tag",
    "speaker_terms",
    "speakers",
    "unlinked_seeds",
    "window_guess",
]
