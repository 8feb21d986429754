"""What graph reads answer: a bounded walk's reach (:class:`Walk`), how far a fact's history
reaches, and the one order of links both stores give."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from graphsvc.model import Link, Memory


@dataclass(frozen=True)
class Walk:
    """What a bounded graph walk reached.

    ``reached`` are the memories at hop distance 1..depth from the start set (never a start), sorted
    by ``(distance, str(id))`` and cut to ``max_nodes``; ``links`` are every link whose both ends
    are in the start set or ``reached``, sorted by ``(source, target, kind)`` as strings.
    """

    reached: tuple[tuple[Memory, int], ...] = ()
    links: tuple[Link, ...] = field(default=())


#: How far a fact's history reaches (:meth:`Store.supersession_chain`), in SUPERSEDES hops.
HISTORY_HOPS = 16


def sort_links(links: Sequence[Link]) -> tuple[Link, ...]:
    """The total order both stores use for links."""
    return tuple(sorted(links, key=lambda lk: (str(lk.source), str(lk.target), lk.kind.value)))


__all__ = [
    "HISTORY_HOPS",
    "Walk",
    "sort_links",
]
