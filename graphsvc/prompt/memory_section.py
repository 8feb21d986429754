"""The ``<memory>`` section of a prompt: what memory offers the turn (or why it offers nothing),
the coverage, chronology and validity notes, and the reserve its frame takes out of the memory
budget (:func:`memory_reserve`). Pure functions.
"""

from __future__ import annotations

from graphsvc.model import AsOf, ContextBundle, OrderReason, Validity
from graphsvc.prompt.parts import CHARS_PER_TOKEN, plural, section
from graphsvc.text import asks_about_order, query_words
from graphsvc.validity import as_of_phrase


def coverage_note(bundle: ContextBundle) -> str:
    """What memory does not cover, for the model, in the question's words (its terms for a
    bundle that carries no words)."""
    uncovered = bundle.uncovered_words or bundle.uncovered_terms
    if uncovered:
        return (
            f"Coverage note: evidence coverage {bundle.evidence_coverage:.3f}; not covered by "
            f"memory: {', '.join(uncovered)}. Do not guess what memory does not cover."
        )
    return (
        f"Coverage note: evidence coverage {bundle.evidence_coverage:.3f}; memory mentions every "
        "discriminating term of this turn."
    )


# Why the items are oldest first, as the chronology note says it (None: a bundle that does not
# say why, such as one an older server built).
_ORDER_BECAUSE: dict[OrderReason | None, str] = {
    OrderReason.QUESTION_ASKS_ORDER: "this turn asks about order, so ",
    OrderReason.EVIDENCE_SPANS_DAYS: "the evidence spans several days, so ",
    None: "",
}


def chronology_note(bundle: ContextBundle) -> str:
    """How the items are ordered, and why, for the model."""
    if bundle.chronological:
        return (
            f"Chronology note: {_ORDER_BECAUSE[bundle.order_reason]}the items are oldest first, "
            "each prefixed with its date ([YYYY-MM-DD], or [undated])."
        )
    return (
        "Chronology note: the items are in order of relevance, not time; do not infer order "
        "from their position."
    )


def _memory(as_of: AsOf | None) -> str:
    """How the memory section names memory: with the past it answers from, if any."""
    return "Memory" if as_of is None else f"Memory {as_of_phrase(as_of)}"


def _nothing_header(as_of: AsOf | None) -> str:
    return f"{_memory(as_of)} holds nothing that matches this turn."


def _skipped_header(top_score: float, min_score: float, as_of: AsOf | None = None) -> str:
    return (
        f"{_memory(as_of)} has no confident answer for this turn (top score {top_score:.3f} is "
        f"below the minimum {min_score:.3f}); it offers nothing."
    )


def _offer_header(
    count: int, chronological: bool, used: int, budget: int, as_of: AsOf | None = None
) -> str:
    order = "oldest first" if chronological else "best match first"
    return (
        f"{_memory(as_of)} offers {plural(count, 'item', 'items')} for this turn ({order}; "
        f"{used} of {budget} tokens)."
    )


def memory_header(bundle: ContextBundle) -> str:
    """The first line of the memory section (it says the past memory answers from, if any)."""
    if not bundle.capsules and not bundle.excluded:
        return _nothing_header(bundle.as_of)
    if bundle.skipped:
        return _skipped_header(bundle.top_score, bundle.min_score, bundle.as_of)
    return _offer_header(
        len(bundle.capsules),
        bundle.chronological,
        bundle.used_tokens,
        bundle.budget_tokens,
        bundle.as_of,
    )


VALIDITY_NOTE = (
    "Validity note: an item marked [until <date>, superseded] or [until <date>, expired] was "
    "true only until then, and one marked [from <date>, not yet true] is not true yet; the "
    "unmarked items are true {when}."
)


def validity_note(bundle: ContextBundle) -> str | None:
    """What the marks on items that are not true at the bundle's instant mean, for the model;
    None when every item is true then."""
    if all(c.validity is Validity.CURRENT for c in bundle.capsules):
        return None
    when = "now" if bundle.as_of is None else as_of_phrase(bundle.as_of)
    return VALIDITY_NOTE.format(when=when)


def render_memory(bundle: ContextBundle | None, note: str) -> str:
    """The ``<memory>`` section: a header, one line per capsule, the coverage note, the
    chronology note and, when an item is marked as not true then, the validity note; or, when
    memory was not consulted, ``note`` saying why."""
    if bundle is None:
        return section("memory", note)
    lines = [memory_header(bundle)]
    lines += [f"- {capsule.text}" for capsule in bundle.capsules]
    lines += [coverage_note(bundle), chronology_note(bundle)]
    if (validity := validity_note(bundle)) is not None:
        lines.append(validity)
    return section("memory", "\n".join(lines))


def memory_reserve(query: str, max_capsules: int, budget: int, as_of: AsOf | None = None) -> int:
    """The most tokens the memory section can take beyond its capsules' own tokens, for a bundle
    of at most ``max_capsules`` capsules and at most ``budget`` tokens recalled for ``query``
    (as of ``as_of``, which its header names).

    The section is its frame (tags, header, coverage, chronology and validity notes) plus one
    line per capsule. The frame is measured at its longest: the widest header, the coverage note
    naming every word of the query or none (the uncovered words are some of the query's words),
    every order the bundle may take (oldest first because the question asks about order when it
    does, else best match first or oldest first because the evidence spans days, which depends
    on the memories found), and the validity note (present when an item is not true then). A
    capsule line adds 3 characters ("- " and a newline) to the capsule's text, at most one
    token, and a capsule's ``tokens`` are at least its text's. Since
    ``ceil((a + b) / 4) <= ceil(a / 4) + ceil(b / 4)``, a section whose capsules fit
    ``budget - reserve`` never costs more than ``budget``.
    """
    pairs = query_words(query)
    if asks_about_order(query):
        orders: tuple[OrderReason | None, ...] = (OrderReason.QUESTION_ASKS_ORDER, None)
    else:
        orders = (None, OrderReason.EVIDENCE_SPANS_DAYS)
    bundle = ContextBundle(
        query=query,
        stage="default",
        budget_tokens=budget,
        min_score=1.0,
        used_tokens=budget,
        capsules=(),
        excluded=(),
        skipped=False,
        top_score=1.0,
        evidence_coverage=1.0,
        uncovered_terms=tuple(term for term, _ in pairs),
        uncovered_words=tuple(word for _, word in pairs),
        chronological=False,
        rendered="",
        as_of=as_of,
    )
    variants = [
        bundle.model_copy(update={"chronological": reason is not None, "order_reason": reason})
        for reason in orders
    ]
    variants += [
        variant.model_copy(update={"uncovered_terms": (), "uncovered_words": ()})
        for variant in variants
    ]
    header = max(
        *(
            len(_offer_header(count, reason is not None, budget, budget, as_of))
            for reason in orders
            for count in (max_capsules, 0)
        ),
        len(_skipped_header(1.0, 1.0, as_of)),
        len(_nothing_header(as_of)),
    )
    when = "now" if as_of is None else as_of_phrase(as_of)
    note = len(VALIDITY_NOTE.format(when=when)) + 1  # and its newline
    frame = (
        header
        + note
        + max(len(render_memory(variant, "")) - len(memory_header(variant)) for variant in variants)
    )
    return -(-frame // CHARS_PER_TOKEN) + max_capsules


def not_consulted_note(reason: str) -> str:
    """The memory section when memory was not consulted."""
    return f"Memory was not consulted for this turn: {reason}."


__all__ = [
    "VALIDITY_NOTE",
    "chronology_note",
    "coverage_note",
    "memory_header",
    "memory_reserve",
    "not_consulted_note",
    "render_memory",
    "validity_note",
]
