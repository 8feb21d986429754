"""The counts a Neo4j namespace keeps, in the transaction of every write and delete: term
statistics (``:TermStat`` df per term), facet counts (``:FacetStat``) and the namespace's own
(``:NamespaceStat``: memories, total length, vectors, terms, links, beliefs), so that reads of
statistics, overviews and ``stats`` read no memory. Every write locks TermStats, then FacetStats
(in key order), before the NamespaceStat. Also the backfills that count a database written before
graphsvc kept them, once, at open."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from neo4j import Transaction

from graphsvc.store.facets import facet_deltas
from graphsvc.store.neo4j.boundary import Neo4jBoundary, tx_query
from graphsvc.store.neo4j.rows import KEY_SEP, term_deltas

logger = logging.getLogger(__name__)


def bump_counts(
    tx: Transaction,
    ns: str,
    *,
    memories: int = 0,
    length: int = 0,
    vectors: int = 0,
    terms: int = 0,
    links: int = 0,
    beliefs: int = 0,
) -> int:
    """bump_namespace_stat with these deltas (locking the NamespaceStat); the namespace's
    memories after it. Every write that changes a namespace's counts goes through here."""
    row = tx_query(
        tx,
        "bump_namespace_stat",
        ns=ns,
        memories=memories,
        length=length,
        vectors=vectors,
        terms=terms,
        links=links,
        beliefs=beliefs,
    )[0]
    return int(row["memories"])


def apply_stats(
    tx: Transaction,
    ns: str,
    added: Sequence[Sequence[str]],
    removed: Sequence[Sequence[str]],
    vectors: int = 0,
    gone: Mapping[str, Any] | None = None,
    facets: Sequence[Sequence[tuple[str, str]]] = (),
) -> None:
    """Term statistics after memories with these analysed terms were added and removed, and
    ``vectors`` more (or fewer) stored vectors (in the transaction that makes the change);
    ``gone``: what delete_memories answered for the removed ones (their links and beliefs
    leave the namespace's counts); ``facets``: the removed ones' (:func:`memory_facets`).
    TermStats, then FacetStats, are locked (in key order) before the NamespaceStat, in every
    write."""
    terms = bump_terms(tx, ns, added, removed)
    bump_facets(tx, ns, (), facets)
    links = -int(gone["links"]) if gone is not None else 0
    beliefs = -int(gone["beliefs"]) if gone is not None else 0
    bump_namespace(tx, ns, added, removed, vectors, terms, links, beliefs)


def bump_terms(
    tx: Transaction,
    ns: str,
    added: Sequence[Sequence[str]],
    removed: Sequence[Sequence[str]],
) -> int:
    """Add to the TermStats; how many more (or fewer) terms the namespace then holds."""
    terms, deltas = term_deltas(added, removed)
    if not terms:
        return 0
    rows = tx_query(tx, "bump_term_stats", ns=ns, sep=KEY_SEP, terms=terms, deltas=deltas)
    return int(rows[0]["terms"])


def bump_facets(
    tx: Transaction,
    ns: str,
    added: Sequence[Sequence[tuple[str, str]]],
    removed: Sequence[Sequence[tuple[str, str]]],
) -> None:
    """Add to the FacetStats (how many memories have each kind, tag, source and day)."""
    deltas = facet_deltas(added, removed)
    if deltas:
        facets, values, counts = (list(column) for column in zip(*deltas, strict=True))
        tx_query(
            tx,
            "bump_facet_stats",
            ns=ns,
            sep=KEY_SEP,
            facets=facets,
            values=values,
            deltas=counts,
        )


def bump_namespace(
    tx: Transaction,
    ns: str,
    added: Sequence[Sequence[str]],
    removed: Sequence[Sequence[str]],
    vectors: int,
    terms: int = 0,
    links: int = 0,
    beliefs: int = 0,
) -> int:
    """Add to the namespace's counts (locking its NamespaceStat); its memories after that,
    exact: every write changes them under this lock."""
    length = sum(len(t) for t in added) - sum(len(t) for t in removed)
    return bump_counts(
        tx,
        ns,
        memories=len(added) - len(removed),
        length=length,
        vectors=vectors,
        terms=terms,
        links=links,
        beliefs=beliefs,
    )


def count_memories(tx: Transaction, ns: str) -> int:
    """The namespace's memories, read without a lock."""
    return int(tx_query(tx, "term_stats", ns=ns, keys=[])[0]["memories"])


def backfill_counts(boundary: Neo4jBoundary) -> None:
    """Give every NamespaceStat that has no link, belief and term counts its counts, one
    namespace a transaction (a database written before graphsvc kept them, or a bulk
    import's): counted once by reading them all, then kept by every write."""
    while True:
        rows = boundary.write(lambda tx: tx_query(tx, "backfill_counts"))
        if not rows:
            return
        row = rows[0]
        logger.info(
            "namespace %r: counted %d links, %d beliefs and %d terms once; writes keep them "
            "from now on",
            row["namespace"],
            row["links"],
            row["beliefs"],
            row["terms"],
        )


def backfill_facets(boundary: Neo4jBoundary) -> None:
    """Count the facets of every namespace whose NamespaceStat does not say they are kept
    (backfill_facets.cypher), one namespace a transaction; writes keep them from then on."""
    while True:
        rows = boundary.write(lambda tx: tx_query(tx, "backfill_facets", sep=KEY_SEP))
        if not rows:
            return
        logger.info(
            "namespace %r: counted its kinds, tags, sources and days once (%d values); "
            "writes keep them from now on",
            rows[0]["namespace"],
            rows[0]["facets"],
        )
