"""Recall policy: every constant that shapes a ranking, as data (docs/design.md, read semantics).

A :class:`RecallPolicy` is built once from the settings (:meth:`RecallPolicy.from_settings`) and
handed to the ranking pipeline, which reads nothing else; a variant is a
:func:`dataclasses.replace` of it (:meth:`RecallPolicy.replaced`), so an evaluation can measure
one without touching the service's. Frozen: one policy can serve any number of requests at once.

The settings stay one flat object with ``GRAPHSVC_*`` names; only here are they grouped by the
stage of the pipeline that reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Literal, get_args

from graphsvc.recall.scoring import Stage
from graphsvc.settings import Settings

#: How hybrid recall puts the lexical-graph score and the cosine on one scale before weighing them
#: (:func:`graphsvc.recall.fusion.fuse`): ``relative``, each divided by its best value for the
#: query; ``raw``, as they are; ``minmax``, the cosine mapped to [0, 1] between its lowest and
#: best value, the lexical score divided by its best; ``rrf``, reciprocal ranks (each part's rank
#: among the query's memories); ``zscore``, each part standardised over the query's memories.
FusionMode = Literal["minmax", "zscore", "relative", "raw", "rrf"]
FUSION_MODES: tuple[FusionMode, ...] = get_args(FusionMode)


@dataclass(frozen=True)
class LexicalPolicy:
    """The lexical core (:mod:`graphsvc.recall.scoring`)."""

    #: BM25 length normalisation (``GRAPHSVC_BM25_B``; 0: length does not matter).
    bm25_b: float = 1.0
    #: Most candidates a query scores, rarest terms first (``GRAPHSVC_CANDIDATE_LIMIT``).
    candidate_limit: int = 1_000
    #: Most ranked memories a query keeps: the bundle's capsules and excluded
    #: (``GRAPHSVC_RANKED_LIMIT``).
    ranked_limit: int = 50
    #: Share of IDF coverage in the lexical ranking's relevance, the rest BM25 (None: the
    #: stage's own weights).
    coverage_share: float | None = None

    def stage(self, stage: Stage) -> Stage:
        """``stage`` with this policy's share of coverage, when it sets one."""
        if self.coverage_share is None:
            return stage
        return replace(stage, coverage=self.coverage_share, bm25=1.0 - self.coverage_share)


@dataclass(frozen=True)
class ConversationPolicy:
    """Answers after questions and speaker attribution (:mod:`graphsvc.recall.conversation`).
    Each value is the round one that met the quality targets of ``graphsvc eval locomo`` and
    ``graphsvc eval beam``; docs/design.md says what each bought, and ``--tune`` re-measures it."""

    #: A memory a strong hit PRECEDES inherits this share of the hit's score when that is more
    #: than its own: in a chat the question holds the words, the answer the fact. Below 1, so the
    #: follower ranks below the hit it follows; 0 turns the feature off.
    answer_share: float = 0.8
    #: The best this many direct hits are the strong hits that pass their score on ...
    answer_seeds: int = 10
    #: ... and only those that ask (text ending with "?") do, when this is true: letting every
    #: strong hit pass its score on measured worse.
    seeds_ask: bool = True
    #: A strong hit with no PRECEDES link out of it is followed by the memory recorded right after
    #: it in its namespace, as if it PRECEDES that one: a chat application that writes each turn
    #: as it comes, without links, gets the answer after its question too. False: only declared
    #: PRECEDES links pass a score on.
    next_recorded_follows: bool = True
    #: When the query names a declared speaker: what a memory by another declared speaker keeps
    #: of its score ...
    other_speaker_factor: float = 0.5
    #: ... what a question by a declared speaker keeps (asking about a thing is no evidence of
    #: owning it) ...
    question_factor: float = 0.7
    #: ... and how much the best statement by another declared speaker lowers every score (the
    #: attribution check: a question that credits X with what Y said finds Y's statement).
    competition_weight: float = 0.5


@dataclass(frozen=True)
class FusionPolicy:
    """Hybrid recall: the search by meaning and its fusion with the lexical-graph score
    (:mod:`graphsvc.recall.fusion`)."""

    #: Share of the cosine in the fused score (``GRAPHSVC_DENSE_WEIGHT``).
    weight: float = 0.6
    #: Memories of highest cosine that join a query's candidates (``GRAPHSVC_DENSE_K``).
    k: int = 10
    #: Least cosine for a memory to join on meaning alone (``GRAPHSVC_DENSE_MIN_COSINE``).
    min_cosine: float = 0.2
    #: How the two parts are put on one scale (``GRAPHSVC_FUSION_MODE``). Min-max needs a
    #: baseline of unrelated cosines, the ``k`` nearest of a namespace that holds at least that
    #: many vectors; a smaller namespace is fused ``relative``.
    mode: FusionMode = "minmax"
    #: Length prior on the lexical part, for ranking only (``GRAPHSVC_FUSED_LENGTH_B``; 0: off).
    length_b: float = 0.25
    #: The constant of reciprocal-rank fusion (``rrf``): a part's rank r counts 1 / (k + r)
    #: (``GRAPHSVC_RRF_K``).
    rrf_k: int = 60


@dataclass(frozen=True)
class BundlePolicy:
    """The bundle (:mod:`graphsvc.recall.bundle`)."""

    #: Capsules scoring below this fraction of the top score are ``below_floor``
    #: (``GRAPHSVC_RELATIVE_FLOOR``).
    relative_floor: float = 0.3


@dataclass(frozen=True)
class WalkPolicy:
    """The graph walks of recall: a reconstruct's, and the one hop from questions to answers."""

    #: Most nodes a walk adds (``GRAPHSVC_WALK_MAX_NODES``).
    max_nodes: int = 50


@dataclass(frozen=True)
class RecallPolicy:
    """Every constant of the ranking pipeline, grouped by stage. The defaults are the settings'
    defaults (a unit test holds them equal)."""

    lexical: LexicalPolicy = field(default_factory=LexicalPolicy)
    conversation: ConversationPolicy = field(default_factory=ConversationPolicy)
    fusion: FusionPolicy = field(default_factory=FusionPolicy)
    bundle: BundlePolicy = field(default_factory=BundlePolicy)
    walk: WalkPolicy = field(default_factory=WalkPolicy)

    @classmethod
    def from_settings(cls, settings: Settings) -> RecallPolicy:
        """The policy the settings describe (the conversation features keep their defaults:
        they are no settings)."""
        s = settings
        return cls(
            lexical=LexicalPolicy(
                bm25_b=s.bm25_b, candidate_limit=s.candidate_limit, ranked_limit=s.ranked_limit
            ),
            fusion=FusionPolicy(
                weight=s.dense_weight,
                k=s.dense_k,
                min_cosine=s.dense_min_cosine,
                mode=s.fusion_mode,
                length_b=s.fused_length_b,
                rrf_k=s.rrf_k,
            ),
            bundle=BundlePolicy(relative_floor=s.relative_floor),
            walk=WalkPolicy(max_nodes=s.walk_max_nodes),
        )

    def replaced(self, changes: Mapping[str, object]) -> RecallPolicy:
        """This policy with ``changes`` made: ``{"fusion.weight": 0.3, "conversation.seeds_ask":
        False}`` (``part.field`` names), by :func:`dataclasses.replace`.

        Raises:
            ValueError: a name is not ``part.field`` of this policy, or a fusion mode is unknown.
        """
        by_part: dict[str, dict[str, object]] = {}
        for name, value in changes.items():
            part, _, leaf = name.partition(".")
            if part not in POLICY_FIELDS or leaf not in POLICY_FIELDS[part]:
                known = ", ".join(f"{p}.{f}" for p, fs in POLICY_FIELDS.items() for f in fs)
                raise ValueError(f"unknown recall policy field {name!r}: use one of {known}")
            if name == "fusion.mode" and value not in FUSION_MODES:
                raise ValueError(f"fusion.mode {value!r}: use one of {', '.join(FUSION_MODES)}")
            by_part.setdefault(part, {})[leaf] = value
        return replace(
            self,
            **{part: replace(getattr(self, part), **leaves) for part, leaves in by_part.items()},
        )

    def value(self, name: str) -> object:
        """The value of a ``part.field`` name (:meth:`replaced`)."""
        part, _, leaf = name.partition(".")
        return getattr(getattr(self, part), leaf)


#: The ``part.field`` names of a policy, by part.
POLICY_FIELDS: dict[str, tuple[str, ...]] = {
    part: tuple(f.name for f in fields(getattr(RecallPolicy(), part)))
    for part in (f.name for f in fields(RecallPolicy))
}


__all__ = [
    "FUSION_MODES",
    "POLICY_FIELDS",
    "BundlePolicy",
    "ConversationPolicy",
    "FusionMode",
    "FusionPolicy",
    "LexicalPolicy",
    "RecallPolicy",
    "WalkPolicy",
]
