"""The recall engine: pure functions over what a store returns (docs/design.md, read semantics).

No I/O here. The service asks the store for term statistics, candidates, supersessions and walks,
and these functions turn them into a :class:`ContextBundle` or a :class:`ReconstructedBelief`.
Same inputs, same bytes out.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import numpy as np

from graphsvc.errors import BadInputError
from graphsvc.model import (
    ContextBundle,
    ContextCapsule,
    Link,
    LinkKind,
    Memory,
    ReconstructedBelief,
    construct,
)
from graphsvc.store.base import (
    Candidate,
    CandidateColumns,
    CandidatePlan,
    TermStats,
    Walk,
    WindowGuess,
    micros,
    plan_candidates,
)
from graphsvc.text import analyse, asks_about_order, estimate_tokens

# BM25 parameters (Robertson/Sparck Jones defaults, as Lucene uses them).
BM25_K1 = 1.2
BM25_B = 0.75
# Capsules whose term sets overlap this much (Jaccard) with a packed one are duplicates.
DUPLICATE_JACCARD = 0.8
# Output floats are rounded to this many places (docs/design.md, determinism).
PLACES = 6
# A summary line quotes at most this many characters of a memory.
SUMMARY_CHARS = 280


@dataclass(frozen=True)
class Stage:
    """Weights of the composite score. ``coverage`` and ``bm25`` make the relevance (they are
    normalised to sum 1); ``freshness`` and ``confidence`` are the share of the score that the
    memory's age and stored confidence can take away."""

    name: str
    coverage: float
    bm25: float
    freshness: float
    confidence: float
    half_life_days: float


STAGES: dict[str, Stage] = {
    stage.name: stage
    for stage in (
        # Balanced: mostly "does it mention what was asked", a little recency and confidence.
        Stage("default", coverage=0.6, bm25=0.4, freshness=0.1, confidence=0.1, half_life_days=365),
        # For "what is the state now" questions: recency weighs more.
        Stage("recent", coverage=0.6, bm25=0.4, freshness=0.3, confidence=0.1, half_life_days=30),
        # For exact lookups: mostly term coverage, no recency.
        Stage("exact", coverage=0.8, bm25=0.2, freshness=0.0, confidence=0.1, half_life_days=365),
    )
}


def get_stage(name: str) -> Stage:
    """The named stage, or a BadInputError listing the known ones."""
    try:
        return STAGES[name]
    except KeyError:
        known = ", ".join(sorted(STAGES))
        raise BadInputError(f"unknown stage {name!r}: use one of {known}") from None


@dataclass(frozen=True)
class Ranked:
    """A candidate with its composite score and the query terms it matched (query order)."""

    candidate: Candidate
    score: float
    matched: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    """A ranked memory: what bundles and beliefs are built from."""

    memory: Memory
    score: float
    matched: tuple[str, ...]


DAY_US = 86_400_000_000


def score_candidates(
    terms: Sequence[str],
    stats: TermStats,
    candidates: Iterable[Candidate],
    stage: Stage,
    limit: int | None = None,
    bm25_b: float = BM25_B,
) -> list[Ranked]:
    """Score and rank candidates (docs/design.md, read semantics: score).

    ``candidates`` carry the frequencies of ``terms`` in that order. score = relevance * (1 - f -
    c + f * freshness + c * confidence), with relevance the weighted mean of the memory's
    IDF-weighted coverage of the query and its BM25 relevance normalised by the BM25 of a single
    mention of every term in an average-length memory (capped at 1). Freshness halves every
    ``half_life_days`` before the newest candidate's day, so it depends on the data, not on the
    clock. Ranking: score descending, then ``recordedAt`` descending (newer first), then id;
    with ``limit``, only the first ``limit`` of that ranking. ``bm25_b`` is BM25's length
    normalisation (0: a memory's length does not matter, 1: relevance per average length).
    """
    pool = list(candidates)
    columns = CandidateColumns.of(pool, len(terms))
    ranked = _rank_columns(terms, stats, columns, stage, limit, bm25_b)
    return [Ranked(pool[i], score, matched) for i, score, matched in ranked]


def score_columns(
    terms: Sequence[str],
    stats: TermStats,
    columns: CandidateColumns,
    stage: Stage,
    limit: int | None = None,
    bm25_b: float = BM25_B,
) -> list[Ranked]:
    """:func:`score_candidates` over candidates held column-wise (:meth:`Store.recall_columns`):
    the same scores and ranking; a :class:`Candidate` is built only for what is ranked."""
    ranked = _rank_columns(terms, stats, columns, stage, limit, bm25_b)
    return [Ranked(columns.candidate(i), score, matched) for i, score, matched in ranked]


#: A ranked candidate by id: ``(id, score, matched)`` (:func:`rank_columns`).
RankedId = tuple[UUID, float, tuple[str, ...]]


def rank_columns(
    terms: Sequence[str],
    stats: TermStats,
    columns: CandidateColumns,
    stage: Stage,
    limit: int | None = None,
    bm25_b: float = BM25_B,
) -> list[RankedId]:
    """:func:`score_columns` by id: the same ranking, each entry ``(id, score, matched)``, with no
    :class:`Candidate` built (a ranking needs only the ids to read the memories back:
    :func:`attach_ranked`)."""
    ranked = _rank_columns(terms, stats, columns, stage, limit, bm25_b)
    ids = columns.ids
    return [(ids[i], score, matched) for i, score, matched in ranked]


#: Candidates a store reads ahead beyond the ranked window (:func:`window_guess`): a guess
#: computed on the server with its own float arithmetic can order the window's last few
#: differently (ties, a last bit of a power), and these few keep them in what it read.
WINDOW_GUESS_MARGIN = 10


def window_guess(stage: Stage, limit: int, bm25_b: float) -> WindowGuess:
    """What :func:`rank_columns` with these arguments will rank, for a store to read the
    ``limit`` best candidates (and :data:`WINDOW_GUESS_MARGIN` more) ahead of the window.
    Coverage has no length prior (the guess's ``coverage_b`` is 0)."""
    return WindowGuess(limit + WINDOW_GUESS_MARGIN, stage, bm25_b, 0.0, BM25_K1, DAY_US)


# 0.5 ** (age / half_life) by half-life and age in days (Python's pow, the same bits every time);
# cleared past _DECAY_CACHE_SIZE ages.
_DECAY: dict[float, dict[int, float]] = {}
_DECAY_CACHE_SIZE = 200_000


def _decays(half_life_days: float, ages: list[int]) -> list[float]:
    """The freshness of each age (days before the newest candidate's day)."""
    known = _DECAY.get(half_life_days)
    if known is None or len(known) > _DECAY_CACHE_SIZE:
        known = _DECAY[half_life_days] = {}
    missing = [age for age in ages if age not in known]
    for age in missing:
        known[age] = 0.5 ** (age / half_life_days)
    return list(map(known.__getitem__, ages))


# A score rounded to PLACES differs from the unrounded one by at most half a unit of the last
# place (and a float's error): candidates this far below the limit-th best unrounded score can
# still round to its rounded score, and so tie with it.
_ROUNDING_MARGIN = 2.0 * 10.0**-PLACES


def _rank_columns(
    terms: Sequence[str],
    stats: TermStats,
    columns: CandidateColumns,
    stage: Stage,
    limit: int | None,
    bm25_b: float,
) -> list[tuple[int, float, tuple[str, ...]]]:
    """The ranking of :func:`score_candidates`: ``(position in columns, score, matched)``."""
    weights = [stats.idf(t) for t in terms]
    total_weight = sum(weights)
    n = len(columns)
    if not n or total_weight <= 0.0:
        return []
    # Vectorised over candidates, one query term at a time, with the same operations in the same
    # order as the scalar formula, so every store (and every run) gets the same bits. pow and
    # round stay in Python: numpy may vectorise pow differently, and rounds differently.
    tf = columns.tf.astype(np.float64)
    length = columns.length.astype(np.float64)
    when_days = columns.when_us // DAY_US
    confidence = columns.confidence
    avg_len = stats.avg_length or 1.0
    norm = BM25_K1 * (1.0 - bm25_b + bm25_b * length / avg_len)
    covered = np.zeros(n)
    bm25 = np.zeros(n)
    for j, weight in enumerate(weights):
        count = tf[:, j]
        hit = count > 0.0
        covered += np.where(hit, weight, 0.0)
        bm25 += np.where(hit, weight * count * (BM25_K1 + 1.0) / (count + norm), 0.0)
    rel_sum = stage.coverage + stage.bm25
    coverage = covered / total_weight
    relevance = (
        stage.coverage * coverage + stage.bm25 * np.minimum(1.0, bm25 / total_weight)
    ) / rel_sum
    ages, age_of = np.unique(int(when_days.max()) - when_days, return_inverse=True)
    freshness = np.array(_decays(stage.half_life_days, ages.tolist()), dtype=np.float64)[
        age_of.reshape(-1)
    ]
    keep = 1.0 - stage.freshness - stage.confidence
    factor = keep + stage.freshness * freshness + stage.confidence * confidence
    raw = np.clip(relevance * factor, 0.0, 1.0)

    # Rank: score descending, recordedAt descending, then id (UUIDs order as their integers do
    # as their strings: fixed-width hex). Candidates that match no scored term are dropped.
    # Rounding never reverses an order, so the first ``limit`` are among those whose unrounded
    # score is at least the limit-th best's, less the rounding margin: only those are rounded
    # and sorted.
    order = np.flatnonzero(covered > 0.0)
    if limit is not None and limit < len(order):
        best = raw[order]
        kth = float(np.partition(best, len(best) - limit)[len(best) - limit])
        order = order[best >= kth - _ROUNDING_MARGIN]
    at = order.tolist()
    scores = [round(x, PLACES) for x in raw[order].tolist()]
    recorded = columns.recorded_us[order].tolist()
    ids = columns.ids
    ranking = sorted(range(len(at)), key=lambda k: (-scores[k], -recorded[k], ids[at[k]].int))
    if limit is not None:
        ranking = ranking[:limit]
    tf_rows = columns.tf[[at[k] for k in ranking]].tolist()
    return [
        (
            at[k],
            scores[k],
            tuple([t for t, c in zip(terms, counts, strict=True) if c > 0]),
        )
        for k, counts in zip(ranking, tf_rows, strict=True)
    ]


def attach(ranked: Sequence[Ranked], memories: Mapping[UUID, Memory]) -> list[Scored]:
    """The ranked candidates with their memories, in rank order; a candidate whose memory is gone
    (forgotten since) is left out."""
    by_key = {memory_id.int: memory for memory_id, memory in memories.items()}
    found = [(by_key.get(r.candidate.id.int), r) for r in ranked]
    return [Scored(memory, r.score, r.matched) for memory, r in found if memory is not None]


def attach_ranked(ranked: Sequence[RankedId], memories: Iterable[Memory]) -> list[Scored]:
    """:func:`attach` for a ranking by id (:func:`rank_columns`) and the memories read back."""
    by_key = {memory.id.int: memory for memory in memories}
    found = [(by_key.get(key.int), score, matched) for key, score, matched in ranked]
    return [Scored(m, score, matched) for m, score, matched in found if m is not None]


def apply_supersessions(
    ranked: Sequence[Scored], pairs: Iterable[tuple[UUID, UUID]]
) -> list[Scored]:
    """Make every superseded memory rank below the memories that supersede it.

    A topological order of the ``newer -> older`` edges, taking among the ready items the one of
    best original rank. A cycle (which ``link`` refuses) falls back to rank order for its members.
    """
    edges = [(newer.int, older.int) for newer, older in pairs]
    if not edges:
        return list(ranked)
    position = {item.memory.id.int: i for i, item in enumerate(ranked)}
    blockers: dict[int, set[int]] = {}
    for newer, older in edges:
        if newer in position and older in position and newer != older:
            blockers.setdefault(older, set()).add(newer)
    if not blockers:
        return list(ranked)
    placed: set[int] = set()
    order: list[Scored] = []
    remaining = list(ranked)
    none: set[int] = set()
    while remaining:
        ready = next(
            (i for i, it in enumerate(remaining) if blockers.get(it.memory.id.int, none) <= placed),
            0,  # a cycle: take the best-ranked remaining item
        )
        item = remaining.pop(ready)
        placed.add(item.memory.id.int)
        order.append(item)
    return order


# -- conversation-aware ranking: answers after questions, and attribution -----------------------
#
# Two named features (docs/design.md, "Conversations: answers and speakers"). Both act only on
# structure a writer declares: PRECEDES links, and speaker tags. Nothing here reads a speaker out
# of a memory's text, so "Error: disk full" is content, not a speaker called Error.
#
# Measured with `graphsvc eval locomo` and `graphsvc eval beam` (the README's Quality section;
# `--tune NAME=VALUE` re-runs either with a constant changed); each constant is the round value that
# met the quality targets there, and docs/design.md says what each one bought.

# A tag ``speaker:<name>`` declares who said a memory (a chat turn, a message). The prefix is exact
# and lower-case; the name is what follows it, surrounding spaces ignored. Tags are 1-64
# characters, so a name keeps at most SPEAKER_NAME_CHARS; :func:`speaker_tag` cuts longer ones.
SPEAKER_TAG_PREFIX = "speaker:"
SPEAKER_NAME_CHARS = 64 - len(SPEAKER_TAG_PREFIX)
# A memory a strong hit PRECEDES inherits this share of the hit's score, when that is more than
# its own: in a chat the question holds the words, the answer the fact. Below 1, so the follower
# ranks below the hit it follows; 0 turns the feature off. Against off: LoCoMo recall@5 0.591 ->
# 0.653, BEAM 0.255 -> 0.254 (0.9 gave 0.656 and 0.246: BEAM's evidence is mostly the asking turn).
ANSWER_SHARE = 0.8
# The best this many direct hits are the strong hits that pass their score on ...
ANSWER_SEEDS = 10
# ... and only those that ask (text ending with "?") do, when this is true. Letting every strong
# hit pass its score on measured worse: LoCoMo abstention AUROC 0.809 -> 0.788 (recall@5 0.653 ->
# 0.658), BEAM recall@5 0.254 -> 0.245.
SEEDS_ASK = True
# A strong hit with no PRECEDES link out of it is followed by the memory recorded right after it in
# its namespace (the least (recordedAt, id) above its own), as if it PRECEDES that one: a chat
# application that writes each turn as it comes, without links, gets the answer after its
# question too. False: only declared PRECEDES links pass a score on.
NEXT_RECORDED_FOLLOWS = True
# When the query names a declared speaker: what a memory by another declared speaker keeps of its
# score ...
OTHER_SPEAKER_FACTOR = 0.5
# ... what a question by a declared speaker keeps (asking about a thing is no evidence of owning
# it) ...
QUESTION_FACTOR = 0.7
# ... and how much the best statement by another declared speaker lowers every score (the
# attribution check: a question that credits X with what Y said finds Y's statement, so confidence
# drops).
COMPETITION_WEIGHT = 0.5


def speaker_tag(name: str) -> str | None:
    """The tag that declares ``name`` the speaker of a memory (``"speaker:Caroline"``), or None for
    a blank name. Surrounding spaces are dropped and a name longer than
    :data:`SPEAKER_NAME_CHARS` is cut to fit a tag (64 characters); converters use this."""
    cleaned = name.strip()[:SPEAKER_NAME_CHARS].rstrip()
    return f"{SPEAKER_TAG_PREFIX}{cleaned}" if cleaned else None


def speakers(memory: Memory) -> tuple[str, ...]:
    """The speakers a memory's tags declare, in tag order (``speaker:<name>`` tags with a
    non-blank name); empty when it declares none, whatever its text says."""
    found: dict[str, None] = {}
    for tag in memory.tags:
        if tag.startswith(SPEAKER_TAG_PREFIX):
            name = tag[len(SPEAKER_TAG_PREFIX) :].strip()
            if name:
                found[name] = None
    return tuple(found)


def speaker_terms(memory: Memory) -> frozenset[str]:
    """The analysed terms of a memory's declared speakers (``speaker:Caroline`` -> ``{"carolin"}``);
    empty when it declares none."""
    return frozenset(term for name in speakers(memory) for term in analyse(name))


def is_question(text: str) -> bool:
    """A memory that ends with a question mark asks rather than tells."""
    return text.rstrip().endswith("?")


def answer_seeds(ranked: Sequence[Scored]) -> list[Scored]:
    """The strong hits that pass their score on over ``PRECEDES``: the best :data:`ANSWER_SEEDS`
    direct hits (those that ask, when :data:`SEEDS_ASK`); none when :data:`ANSWER_SHARE` is 0.
    Where :func:`expand_answers` starts."""
    if ANSWER_SHARE <= 0.0:
        return []
    best = ranked[:ANSWER_SEEDS]
    return [item for item in best if not SEEDS_ASK or is_question(item.memory.text)]


def expand_answers(
    ranked: Sequence[Scored],
    seeds: Sequence[Scored],
    walk: Walk,
    terms: Sequence[str],
    next_recorded: Sequence[tuple[UUID, Memory]] = (),
) -> list[Scored]:
    """Graph expansion scored below direct hits: a memory a seed ``PRECEDES`` (one hop, from the
    ``walk`` around the seeds) scores :data:`ANSWER_SHARE` of the seed's score when that is more
    than its own; from several seeds, the best. ``next_recorded`` holds ``(seed id, memory)``
    pairs of the seeds that precede nothing (:func:`unlinked_seeds`): each memory follows its
    seed as a ``PRECEDES`` target would. Memories the walk or ``next_recorded`` reached join the
    ranking. Other link kinds pass nothing. The result is not sorted (see :func:`rank_order`)."""
    items: dict[UUID, Scored] = {item.memory.id: item for item in ranked}
    joinable = {memory.id: memory for memory, _ in walk.reached}
    joinable.update((memory.id, memory) for _, memory in next_recorded)
    edges = [*_precedes(walk.links), *((seed, memory.id) for seed, memory in next_recorded)]
    _inherit_over_precedes(items, seeds, edges, joinable, ANSWER_SHARE, terms)
    return list(items.values())


def unlinked_seeds(seeds: Sequence[Scored], links: Iterable[Link]) -> list[UUID]:
    """The seeds no ``PRECEDES`` link of ``links`` leaves, in seed order: those that the memory
    recorded right after them follows (none unless :data:`NEXT_RECORDED_FOLLOWS`)."""
    if not NEXT_RECORDED_FOLLOWS:
        return []
    linked = {source for source, _ in _precedes(links)}
    return [item.memory.id for item in seeds if item.memory.id not in linked]


def _precedes(links: Iterable[Link]) -> list[tuple[UUID, UUID]]:
    """``(source, target)`` of the ``PRECEDES`` links among ``links``."""
    return [(lk.source, lk.target) for lk in links if lk.kind is LinkKind.PRECEDES]


def _matched(memory: Memory, terms: Sequence[str]) -> tuple[str, ...]:
    """The query ``terms`` that ``memory`` holds, in query order."""
    present = set(memory.terms)
    return tuple(t for t in terms if t in present)


def _inherit_over_precedes(
    items: dict[UUID, Scored],
    seeds: Sequence[Scored],
    edges: Iterable[tuple[UUID, UUID]],
    joinable: Mapping[UUID, Memory],
    share: float,
    terms: Sequence[str],
) -> None:
    """In place: a memory a seed precedes (``edges``: ``(source, target)``) scores ``share``
    times the seed's score when that is more than its own (from several seeds, the best); one
    not in ``items`` joins from ``joinable``. Its matched terms stay the query terms it holds."""
    seed_score = {item.memory.id: item.score for item in seeds}
    for source, target in edges:
        if source not in seed_score:
            continue
        current = items.get(target)
        memory = current.memory if current is not None else joinable.get(target)
        if memory is None:
            continue
        inherited = round(seed_score[source] * share, PLACES)
        if inherited > (current.score if current is not None else 0.0):
            matched = current.matched if current is not None else _matched(memory, terms)
            items[target] = Scored(memory, inherited, matched)


def attribute(ranked: Sequence[Scored], terms: Sequence[str]) -> list[Scored]:
    """Speaker attribution over declared speakers (:func:`speakers`), and the attribution check.

    A query term equal to an analysed name of a declared speaker of a ranked memory names that
    speaker. When the query names one, every score is multiplied by ``1 - COMPETITION_WEIGHT * c``,
    with ``c`` the best score of a statement (not a question) by another declared speaker; a
    question by a declared speaker also weighs :data:`QUESTION_FACTOR`, and a memory by another
    declared speaker :data:`OTHER_SPEAKER_FACTOR`. A memory that declares no speaker is spoken by
    no one: it never names, competes or weighs less (but for the common factor). Queries that
    name no speaker are left as they are. Order is kept; the result is not sorted.
    """
    declared = {item.memory.id.int: speakers(item.memory) for item in ranked}
    names = {  # (of the memories that declare a speaker: by_other reads no other)
        key: frozenset(term for name in found for term in analyse(name))
        for key, found in declared.items()
        if found
    }
    known: set[str] = set()
    for found in names.values():
        known |= found
    named = {t for t in terms if t in known}
    if not named:
        return list(ranked)

    def by_other(item: Scored) -> bool:
        key = item.memory.id.int
        return bool(declared[key]) and not names[key] & named

    competitor = max(
        (it.score for it in ranked if by_other(it) and not is_question(it.memory.text)),
        default=0.0,
    )
    common = 1.0 - COMPETITION_WEIGHT * competitor
    out = []
    for item in ranked:
        factor = common
        if declared[item.memory.id.int] and is_question(item.memory.text):
            factor *= QUESTION_FACTOR
        if by_other(item):
            factor *= OTHER_SPEAKER_FACTOR
        out.append(Scored(item.memory, round(item.score * factor, PLACES), item.matched))
    return out


def rank_order(items: Sequence[Scored], direct: Sequence[Scored]) -> list[Scored]:
    """Score descending; ties keep the order of the direct ranking (``direct``, as
    :func:`score_candidates` ranked it), and memories the walk added come after direct hits of
    the same score, newest ``recordedAt`` first, then id."""
    position = {item.memory.id.int: i for i, item in enumerate(direct)}
    after = len(position)

    def key(it: Scored) -> tuple[float, int, int, int]:
        at = position.get(it.memory.id.int)
        if at is not None:  # a direct hit's position is its own: nothing further is compared
            return (-it.score, at, 0, 0)
        return (-it.score, after, -micros(it.memory.recorded_at), it.memory.id.int)

    return sorted(items, key=key)


def fuse(
    ranked: Sequence[Scored],
    cosine: Mapping[UUID, float],
    dense_only: Sequence[Memory],
    weight: float,
    terms: Sequence[str],
    relative: bool = False,
    spread: bool = False,
    length_b: float = 0.0,
    avg_length: float = 0.0,
) -> list[Scored]:
    """Lexical-graph scores and dense cosines in one score (docs/design.md, hybrid recall).

    With ``length_b`` (a length prior on the lexical part, for ranking only), a ranked memory
    longer than ``avg_length`` (the namespace's mean analysed length) first keeps
    ``1 / (1 - length_b + length_b * length / avg_length)`` of its lexical-graph score
    (:func:`length_prior`): a long message that mentions many query words among many others no
    longer outranks a short one that states the answer. The lexical ``topScore`` that abstention
    reads is taken before fusion, so the prior never moves it.

    With ``relative``, each part is first divided by its best value among this query's
    memories (the best lexical-graph score, the best positive cosine), so the weight shares
    out two parts on the same scale whatever a corpus' typical scores are. With ``spread``
    (min-max), the cosine is instead mapped to [0, 1] between its lowest and its best value among
    the memories being fused (all the same: divided by that value, so a lone memory found by
    meaning keeps its cosine's weight), because an encoder's cosines may sit in a narrow band far
    from 0; the lexical part stays divided by its best, since a lexical score of 0 already means
    no match, so a memory that matches the query never falls to 0 for being the window's
    weakest.

    Each ranked memory scores ``(1 - weight) * score + weight * max(cosine, 0)``, with cosine 0
    for a memory without a vector; ``dense_only`` memories (the nearest by meaning that no query
    term reached) join with score 0 for the first part. Order: fused score descending; ties keep
    the lexical ranking's order, then dense-only memories by cosine descending, newest
    ``recordedAt`` first, then id. ``matched`` stays the query terms a memory holds.
    """
    keep = 1.0 - weight
    if length_b > 0.0 and avg_length > 0.0:
        ranked = [
            Scored(
                it.memory,
                it.score * length_prior(len(it.memory.terms), avg_length, length_b),
                it.matched,
            )
            for it in ranked
        ]
    lexical_low = cosine_low = 0.0
    lexical_scale = cosine_scale = 1.0
    if spread:
        lexical_scale = max((it.score for it in ranked), default=0.0) or 1.0
        similar = [
            max(cosine.get(m_id, 0.0), 0.0)
            for m_id in [it.memory.id for it in ranked] + [m.id for m in dense_only]
        ]
        cosine_low, cosine_scale = _spread(similar)
    elif relative:
        lexical_scale = max((it.score for it in ranked), default=0.0) or 1.0
        cosine_scale = max((max(c, 0.0) for c in cosine.values()), default=0.0) or 1.0

    def fused(score: float, memory_id: UUID) -> float:
        similarity = (max(cosine.get(memory_id, 0.0), 0.0) - cosine_low) / cosine_scale
        lexical_part = (score - lexical_low) / lexical_scale
        return round(keep * lexical_part + weight * similarity, PLACES)

    items = [Scored(it.memory, fused(it.score, it.memory.id), it.matched) for it in ranked]
    for memory in dense_only:
        items.append(Scored(memory, fused(0.0, memory.id), _matched(memory, terms)))
    position = {it.memory.id: i for i, it in enumerate(ranked)}
    return sorted(
        items,
        key=lambda it: (
            -it.score,
            position.get(it.memory.id, len(position)),
            -cosine.get(it.memory.id, 0.0),
            -micros(it.memory.recorded_at),
            it.memory.id.int,
        ),
    )


def calibrate(cosine: float, unrelated: float) -> float:
    """A cosine read above an encoder's typical unrelated cosine ``unrelated`` (in [0, 1)):
    ``(cosine - unrelated) / (1 - unrelated)``, 0 at or below it and 1 at 1. Two encoders'
    cosines then mean alike: 0 for a pair about different things, whether the encoder puts such
    pairs at 0.07 or at 0.75."""
    if cosine <= unrelated:
        return 0.0
    return (cosine - unrelated) / (1.0 - unrelated)


def _spread(values: Sequence[float]) -> tuple[float, float]:
    """The low end and the width that map ``values`` onto [0, 1] (min-max); for values that are
    all the same, 0 and that value (or 1 for 0): each of them then counts 1."""
    low, high = min(values, default=0.0), max(values, default=0.0)
    if high > low:
        return low, high - low
    return 0.0, high or 1.0


def length_prior(length: int, avg_length: float, b: float) -> float:
    """The share of its lexical score a memory of ``length`` analysed terms keeps under a length
    prior of strength ``b`` (BM25's pivoted length normalisation, one-sided): 1 up to the
    average length ``avg_length``, then ``1 / (1 - b + b * length / avg_length)``; 1 when ``b``
    is 0."""
    if b <= 0.0 or avg_length <= 0.0 or length <= avg_length:
        return 1.0
    return 1.0 / (1.0 - b + b * length / avg_length)


def _capsule_text(memory: Memory, chronological: bool) -> str:
    if not chronological:
        return memory.text
    if memory.occurred_at is None:
        return f"[undated] {memory.text}"
    return f"[{memory.occurred_at.date().isoformat()}] {memory.text}"


def _capsule(item: Scored, chronological: bool, reason: str | None) -> ContextCapsule:
    return _capsule_of(item, _capsule_text(item.memory, chronological), reason)


def _capsule_of(item: Scored, text: str, reason: str | None) -> ContextCapsule:
    """The capsule of a ranked memory rendered as ``text``: its fields are of their types
    already, so it is built without validation (a bundle makes one per ranked memory)."""
    memory = item.memory
    return construct(ContextCapsule, {
        "memory_id": memory.id, "text": text, "kind": memory.kind, "score": float(item.score),
        "tokens": estimate_tokens(text), "occurred_at": memory.occurred_at,
        "matched_terms": tuple(item.matched), "reason": reason,
    })  # fmt: skip


def _is_duplicate(terms: frozenset[str], packed: Sequence[frozenset[str]]) -> bool:
    """True when ``terms`` overlaps some packed term set by Jaccard >= DUPLICATE_JACCARD.

    Jaccard is at most min(|a|, |b|) / max(|a|, |b|), so sets of too different sizes are passed
    over without building their intersection.
    """
    size = len(terms)
    for seen in packed:
        other = len(seen)
        small, large = (size, other) if size <= other else (other, size)
        if large == 0:
            return True  # two empty sets are the same
        if small / large < DUPLICATE_JACCARD:
            continue
        common = len(terms & seen)
        if common / (size + other - common) >= DUPLICATE_JACCARD:
            return True
    return False


class _PackedTerms:
    """The term sets of the packed capsules, in packing order and by size: a set can be a
    duplicate (:func:`_is_duplicate`) only of one of nearly its size, so only those are tried."""

    def __init__(self) -> None:
        self.in_order: list[frozenset[str]] = []
        self._sizes: list[int] = []
        self._by_size: list[frozenset[str]] = []

    def add(self, terms: frozenset[str]) -> None:
        self.in_order.append(terms)
        at = bisect_right(self._sizes, len(terms))
        self._sizes.insert(at, len(terms))
        self._by_size.insert(at, terms)

    def is_duplicate(self, terms: frozenset[str]) -> bool:
        """:func:`_is_duplicate` against every packed set: the sets it passes over for their
        size (a ratio under DUPLICATE_JACCARD, with a margin of one either way) are skipped, and
        the others are counted term by term, stopping at the first miss that rules the set out
        (:func:`_misses_to_rule_out`): most packed sets share few terms with another memory, so
        a few lookups settle them without building an intersection."""
        size = len(terms)
        sizes = self._sizes
        low = bisect_left(sizes, math.floor(size * DUPLICATE_JACCARD) - 1)
        high = bisect_right(sizes, math.ceil(size / DUPLICATE_JACCARD) + 1)
        by_size = self._by_size
        for at in range(low, high):
            other = sizes[at]
            small, large = (size, other) if size <= other else (other, size)
            if large == 0:
                return True  # two empty sets are the same
            if small / large < DUPLICATE_JACCARD:
                continue
            seen = by_size[at]
            enough = _RULE_OUT.get((size, other))
            if enough is None:
                enough = _misses_to_rule_out(size, other)
            misses = 0
            for term in terms:
                if term not in seen:
                    misses += 1
                    if misses == enough:
                        break
            else:  # every term was looked up: the count is exact
                common = size - misses
                if common / (size + other - common) >= DUPLICATE_JACCARD:
                    return True
        return False


_RULE_OUT: dict[tuple[int, int], int] = {}


def _misses_to_rule_out(size: int, other: int) -> int:
    """The fewest terms of a set of ``size`` missing from one of ``other`` terms that make the
    two no duplicates: with ``m`` misses they share at most ``size - m`` terms, and the Jaccard
    test of :func:`_is_duplicate`, computed as it computes it, fails for that many shared terms
    (so for any fewer: the computed ratio grows with the count). ``size + 1`` (never reached)
    when no count of misses rules the pair out."""
    known = _RULE_OUT.get((size, other))
    if known is None:
        known = size + 1
        for misses in range(size + 1):
            common = size - misses
            total = size + other - common
            if total and common / total < DUPLICATE_JACCARD:
                known = misses
                break
        if len(_RULE_OUT) < 65_536:
            _RULE_OUT[(size, other)] = known
    return known


def chronological_key(
    capsule: ContextCapsule, recorded: dict[UUID, datetime]
) -> tuple[bool, datetime, datetime, str]:
    """Oldest first: dated capsules by ``occurredAt``, then undated; ties by ``recordedAt``, id."""
    occurred = capsule.occurred_at or recorded[capsule.memory_id]
    return (
        capsule.occurred_at is None,
        occurred,
        recorded[capsule.memory_id],
        str(capsule.memory_id),
    )


def spans_days(ranked: Sequence[Scored]) -> bool:
    """True when the memories carry ``occurredAt`` dates on at least two different days."""
    days = {item.memory.occurred_at.date() for item in ranked if item.memory.occurred_at}
    return len(days) >= 2


@dataclass(frozen=True)
class BundleRequest:
    """A validated bundle request."""

    query: str
    budget_tokens: int
    min_score: float
    max_capsules: int
    stage: Stage
    relative_floor: float = 0.0
    retrieval: str = "lexical"


def build_bundle(
    request: BundleRequest,
    terms: Sequence[str],
    stats: TermStats,
    ranked: Sequence[Scored],
    lexical_top: float | None = None,
) -> ContextBundle:
    """Abstain, de-duplicate, pack, measure coverage and render (docs/design.md, the bundle).

    ``ranked`` is the ranked window (after :func:`apply_supersessions`); each of its items ends in
    ``capsules`` or in ``excluded`` with a reason. With hybrid recall ``ranked`` holds fused scores
    and ``lexical_top`` is the best lexical-graph score: it alone decides abstention (the lexical
    core measures best for that), and the relative floor is taken from the best fused score.
    """
    # Oldest first when the question asks about order, and whenever the ranked memories carry
    # dates on more than one day: a reader then sees evidence in the order it happened, with its
    # dates, wherever dates exist (on LoCoMo this took chronological tau from -0.083 to 1.0).
    chronological = asks_about_order(request.query) or spans_days(ranked)
    best = max((item.score for item in ranked), default=0.0)
    top_score = best if lexical_top is None else lexical_top
    skipped = top_score < request.min_score or not ranked
    # Capsules far below the best one add noise, not evidence: they are excluded as below_floor.
    # Fused scores live on another scale than minScore's, so hybrid recall floors them only
    # relative to the best fused score.
    floor = request.relative_floor * best
    if lexical_top is None:
        floor = max(request.min_score, floor)
    packed: list[ContextCapsule] = []
    excluded: list[ContextCapsule] = []
    packed_terms = _PackedTerms()
    # Packing pays for the dated form of every capsule, chronological or not, so the selection
    # does not depend on how it is presented ("ordering changes presentation only") and the
    # re-rendered capsules always fit the budget.
    spent = 0
    for item in ranked:
        if skipped:
            excluded.append(_capsule(item, chronological, "abstained"))
            continue
        if item.score < floor or item.score <= 0.0:
            excluded.append(_capsule(item, chronological, "below_floor"))
            continue
        term_set = frozenset(item.memory.terms)
        if packed_terms.is_duplicate(term_set):
            excluded.append(_capsule(item, chronological, "duplicate"))
            continue
        if len(packed) >= request.max_capsules:
            excluded.append(_capsule(item, chronological, "max_capsules"))
            continue
        dated = _capsule_text(item.memory, chronological=True)
        text = dated if chronological else item.memory.text
        cost = estimate_tokens(dated)
        if spent + cost > request.budget_tokens:
            excluded.append(_capsule_of(item, text, "budget"))
            continue
        packed.append(_capsule_of(item, text, "match"))
        packed_terms.add(term_set)
        spent += cost

    discriminating = [t for t in terms if stats.coverage_weight(t) > 0.0]
    seen_terms: set[str] = set()
    for frozen_terms in packed_terms.in_order:
        seen_terms |= frozen_terms
    covered = [t for t in discriminating if t in seen_terms]
    uncovered = sorted(
        (t for t in discriminating if t not in seen_terms),
        key=lambda t: (-stats.coverage_weight(t), t),
    )
    total = sum(stats.coverage_weight(t) for t in discriminating)
    if skipped:
        coverage = 0.0
    elif total <= 0.0:
        coverage = 1.0
    else:
        coverage = round(sum(stats.coverage_weight(t) for t in covered) / total, PLACES)

    if chronological and packed:
        recorded = {item.memory.id: item.memory.recorded_at for item in ranked}
        packed.sort(key=lambda c: chronological_key(c, recorded))

    used = sum(c.tokens for c in packed)
    capsules, uncovered_terms = tuple(packed), tuple(uncovered)
    rendered = _render(
        skipped, top_score, request.min_score, capsules, used, request.budget_tokens,
        coverage, chronological, uncovered_terms,
    )  # fmt: skip
    return ContextBundle(
        query=request.query,
        stage=request.stage.name,
        retrieval=request.retrieval,
        budget_tokens=request.budget_tokens,
        min_score=request.min_score,
        used_tokens=used,
        capsules=capsules,
        excluded=tuple(excluded),
        skipped=skipped,
        top_score=top_score,
        evidence_coverage=coverage,
        uncovered_terms=uncovered_terms,
        chronological=chronological,
        rendered=rendered,
    )


def _fmt(value: float) -> str:
    return f"{value:.3f}"


def render_bundle(bundle: ContextBundle) -> str:
    """The bundle as prompt text: a header, one line per capsule, and what memory does not cover."""
    return _render(
        bundle.skipped, bundle.top_score, bundle.min_score, bundle.capsules, bundle.used_tokens,
        bundle.budget_tokens, bundle.evidence_coverage, bundle.chronological,
        bundle.uncovered_terms,
    )  # fmt: skip


def _render(
    skipped: bool,
    top_score: float,
    min_score: float,
    capsules: Sequence[ContextCapsule],
    used_tokens: int,
    budget_tokens: int,
    evidence_coverage: float,
    chronological: bool,
    uncovered_terms: Sequence[str],
) -> str:
    lines: list[str] = []
    if skipped:
        lines.append(
            f"Memory has no confident answer for this request (top score "
            f"{_fmt(top_score)} is below the minimum {_fmt(min_score)})."
        )
    else:
        order = "oldest first" if chronological else "best match first"
        lines.append(
            f"Memory ({len(capsules)} item(s), {used_tokens}/"
            f"{budget_tokens} tokens, evidence coverage {_fmt(evidence_coverage)}, "
            f"{order}):"
        )
        for capsule in capsules:
            lines.append(f"- {capsule.text}")
    if uncovered_terms:
        lines.append("Not covered by memory: " + ", ".join(uncovered_terms) + ".")
    return "\n".join(lines)


def _quote(memory: Memory) -> str:
    text = " ".join(memory.text.split())
    if len(text) > SUMMARY_CHARS:
        text = text[: SUMMARY_CHARS - 1] + "…"
    date = memory.occurred_at.date().isoformat() if memory.occurred_at else "undated"
    return f"[{date}] {text}"


def _when_key(memory: Memory) -> tuple[bool, datetime, str]:
    return (memory.occurred_at is None, memory.when, str(memory.id))


def build_belief(cue: str, hits: Sequence[Scored], walk: Walk) -> ReconstructedBelief:
    """Summarise hits and the walk around them by rules (docs/design.md, reconstruct)."""
    if not hits:
        return ReconstructedBelief(
            cue=cue,
            summary=f'Memory holds nothing that matches "{cue}".',
            source_ids=(),
            linked_context_ids=(),
            confidence=0.0,
            memories=(),
        )
    source_ids = tuple(item.memory.id for item in hits)
    sources = set(source_ids)
    reached = [memory for memory, _ in walk.reached if memory.id not in sources]
    by_id = {item.memory.id: item.memory for item in hits}
    by_id.update((memory.id, memory) for memory in reached)
    confidence = round(sum(item.score for item in hits) / len(hits), PLACES)

    lines = [
        f'Belief about "{cue}": {len(hits)} direct source(s), {len(reached)} linked memory(ies), '
        f"confidence {_fmt(confidence)}.",
        "Direct evidence:",
    ]
    lines += [
        f"{rank}. {_quote(item.memory)} (score {_fmt(item.score)})"
        for rank, item in enumerate(hits, start=1)
    ]
    causal = sorted(
        (
            lk
            for lk in walk.links
            if lk.kind is LinkKind.CAUSES and lk.source in by_id and lk.target in by_id
        ),
        key=lambda lk: (_when_key(by_id[lk.source]), _when_key(by_id[lk.target])),
    )
    in_chains: set[UUID] = set()
    if causal:
        lines.append("Causal chains (cause -> effect, oldest first):")
        for lk in causal:
            lines.append(f"- {_quote(by_id[lk.source])} -> {_quote(by_id[lk.target])}")
            in_chains.update((lk.source, lk.target))
    relations: dict[UUID, set[str]] = {}
    for lk in walk.links:
        for end in (lk.source, lk.target):
            relations.setdefault(end, set()).add(lk.kind.value)
    other = sorted((m for m in reached if m.id not in in_chains), key=_when_key)
    if other:
        lines.append("Linked context:")
        for memory in other:
            kinds = "/".join(sorted(relations.get(memory.id, set())))
            lines.append(f"- {_quote(memory)} ({kinds})")
    return ReconstructedBelief(
        cue=cue,
        summary="\n".join(lines),
        source_ids=source_ids,
        linked_context_ids=tuple(memory.id for memory in reached),
        confidence=confidence,
        memories=tuple(item.memory for item in hits) + tuple(reached),
    )


__all__ = [
    "STAGES",
    "BundleRequest",
    "CandidatePlan",
    "Ranked",
    "RankedId",
    "Scored",
    "Stage",
    "answer_seeds",
    "apply_supersessions",
    "attach",
    "attach_ranked",
    "attribute",
    "build_belief",
    "build_bundle",
    "expand_answers",
    "get_stage",
    "length_prior",
    "plan_candidates",
    "rank_columns",
    "rank_order",
    "render_bundle",
    "score_candidates",
    "score_columns",
    "spans_days",
    "speaker_terms",
    "unlinked_seeds",
    "window_guess",
]
