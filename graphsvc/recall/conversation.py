"""Conversation-aware ranking: answers after questions, and speaker attribution.

Two named features (docs/design.md, "Conversations: answers and speakers"). Both act only on
structure a writer declares: PRECEDES links, and speaker tags. Nothing here reads a speaker out
of a memory's text, so "Error: disk full" is content, not a speaker called Error. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from uuid import UUID

from graphsvc.model import Link, LinkKind, Memory
from graphsvc.recall.policy import ConversationPolicy
from graphsvc.recall.scoring import PLACES, Scored, matched_terms
from graphsvc.store.graph import Walk
from graphsvc.text import analyse

# The weights of both features (ConversationPolicy's fields say what each does).
DEFAULT = ConversationPolicy()

# A tag ``speaker:<name>`` declares who said a memory (a chat turn, a message). The prefix is exact
# and lower-case; the name is what follows it, surrounding spaces ignored. Tags are 1-64
# characters, so a name keeps at most SPEAKER_NAME_CHARS; :func:`speaker_tag` cuts longer ones.
SPEAKER_TAG_PREFIX = "speaker:"
SPEAKER_NAME_CHARS = 64 - len(SPEAKER_TAG_PREFIX)


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


def answer_seeds(ranked: Sequence[Scored], policy: ConversationPolicy = DEFAULT) -> list[Scored]:
    """The strong hits that pass their score on over ``PRECEDES``: the best ``answer_seeds``
    direct hits (those that ask, when ``seeds_ask``); none when ``answer_share`` is 0.
    Where :func:`expand_answers` starts."""
    if policy.answer_share <= 0.0:
        return []
    best = ranked[: policy.answer_seeds]
    return [item for item in best if not policy.seeds_ask or is_question(item.memory.text)]


def expand_answers(
    ranked: Sequence[Scored],
    seeds: Sequence[Scored],
    walk: Walk,
    terms: Sequence[str],
    next_recorded: Sequence[tuple[UUID, Memory]] = (),
    policy: ConversationPolicy = DEFAULT,
) -> list[Scored]:
    """Graph expansion scored below direct hits: a memory a seed ``PRECEDES`` (one hop, from the
    ``walk`` around the seeds) scores ``answer_share`` of the seed's score when that is more
    than its own; from several seeds, the best. ``next_recorded`` holds ``(seed id, memory)``
    pairs of the seeds that precede nothing (:func:`unlinked_seeds`): each memory follows its
    seed as a ``PRECEDES`` target would. Memories the walk or ``next_recorded`` reached join the
    ranking. Other link kinds pass nothing. The result is not sorted (see :func:`rank_order`)."""
    items: dict[UUID, Scored] = {item.memory.id: item for item in ranked}
    joinable = {memory.id: memory for memory, _ in walk.reached}
    joinable.update((memory.id, memory) for _, memory in next_recorded)
    edges = [*_precedes(walk.links), *((seed, memory.id) for seed, memory in next_recorded)]
    _inherit_over_precedes(items, seeds, edges, joinable, policy.answer_share, terms)
    return list(items.values())


def unlinked_seeds(
    seeds: Sequence[Scored], links: Iterable[Link], policy: ConversationPolicy = DEFAULT
) -> list[UUID]:
    """The seeds no ``PRECEDES`` link of ``links`` leaves, in seed order: those that the memory
    recorded right after them follows (none unless ``next_recorded_follows``)."""
    if not policy.next_recorded_follows:
        return []
    linked = {source for source, _ in _precedes(links)}
    return [item.memory.id for item in seeds if item.memory.id not in linked]


def _precedes(links: Iterable[Link]) -> list[tuple[UUID, UUID]]:
    """``(source, target)`` of the ``PRECEDES`` links among ``links``."""
    return [(lk.source, lk.target) for lk in links if lk.kind is LinkKind.PRECEDES]


def _inherit_over_precedes(
    items: dict[UUID, Scored],
    seeds: Sequence[Scored],
    edges: Iterable[tuple[UUID, UUID]],
    joinable: Mapping[UUID, Memory],
    share: float,
    terms: Sequence[str],
) -> None:
    """In place: a memory a seed precedes (``edges``: ``(source, target)``) scores ``share``
    times the seed's score when that is more than its own (from several seeds, the best), and
    likewise for its evidence; one not in ``items`` joins from ``joinable``. Its matched terms
    stay the query terms it holds."""
    by_seed = {item.memory.id: item for item in seeds}
    for source, target in edges:
        seed = by_seed.get(source)
        if seed is None:
            continue
        current = items.get(target)
        memory = current.memory if current is not None else joinable.get(target)
        if memory is None:
            continue
        inherited = round(seed.score * share, PLACES)
        evidence = round(seed.evidence * share, PLACES)
        own, own_evidence = (current.score, current.evidence) if current is not None else (0, 0)
        if inherited > own or evidence > own_evidence:
            matched = current.matched if current is not None else matched_terms(memory, terms)
            items[target] = Scored(
                memory, max(inherited, own), matched, max(evidence, own_evidence)
            )


def attribute(
    ranked: Sequence[Scored], terms: Sequence[str], policy: ConversationPolicy = DEFAULT
) -> list[Scored]:
    """Speaker attribution over declared speakers (:func:`speakers`), and the attribution check.

    A query term equal to an analysed name of a declared speaker of a ranked memory names that
    speaker. When the query names one, every score is multiplied by ``1 - competition_weight * c``,
    with ``c`` the best score of a statement (not a question) by another declared speaker; a
    question by a declared speaker also weighs ``question_factor``, and a memory by another
    declared speaker ``other_speaker_factor`` (the fields of ``policy``). A memory that declares
    no speaker is spoken by no one: it never names, competes or weighs less (but for the common
    factor). Queries that name no speaker are left as they are. Order is kept; the result is not
    sorted.
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

    competitors = [it for it in ranked if by_other(it) and not is_question(it.memory.text)]
    common = 1.0 - policy.competition_weight * max((it.score for it in competitors), default=0.0)
    # The same check on the evidence answerability reads, with its own best competitor.
    common_evidence = 1.0 - policy.competition_weight * max(
        (it.evidence for it in competitors), default=0.0
    )
    out = []
    for item in ranked:
        factor, factor_evidence = common, common_evidence
        if declared[item.memory.id.int] and is_question(item.memory.text):
            factor *= policy.question_factor
            factor_evidence *= policy.question_factor
        if by_other(item):
            factor *= policy.other_speaker_factor
            factor_evidence *= policy.other_speaker_factor
        out.append(
            Scored(
                item.memory,
                round(item.score * factor, PLACES),
                item.matched,
                round(item.evidence * factor_evidence, PLACES),
            )
        )
    return out


__all__ = [
    "SPEAKER_NAME_CHARS",
    "SPEAKER_TAG_PREFIX",
    "answer_seeds",
    "attribute",
    "expand_answers",
    "is_question",
    "speaker_tag",
    "speaker_terms",
    "speakers",
    "unlinked_seeds",
]
