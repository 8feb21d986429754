"""The store's own lexical top k, without graphsvc's scoring: the raw query a bundle is built on,
and the baseline ``graphsvc bench`` measures bundles against.

- Neo4j: the full-text index's own top k (Lucene's BM25), run through a driver of the lab's own;
  graphsvc's store has no such query, since recall never needs it.
- The embedded store: a plain BM25 over the store's postings, read through the store's domain
  interface (:meth:`Store.term_stats`, :meth:`Store.candidates`) and scored here.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from uuid import UUID

from neo4j import Driver, GraphDatabase

from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.neo4j.candidates import TERMS_PER_QUERY

# BM25 parameters of the plain baseline (Lucene's defaults).
BM25_K1 = 1.2
BM25_B = 0.75

# The full-text index graphsvc's schema creates on memories (cypher/schema.cypher), queried with
# Lucene syntax over its namespace and termText fields, as graphsvc's own candidates query does.
FULLTEXT_TOP_K = """
CALL db.index.fulltext.queryNodes('memory_terms', $query, {limit: $k}) YIELD node, score
RETURN node.id AS id, score
"""

TopK = Callable[[str, Sequence[str], int], list[UUID]]


def plain_bm25_top_k(store: Store, namespace: str, terms: Sequence[str], k: int) -> list[UUID]:
    """A plain BM25 top ``k`` for analysed ``terms`` (k1 1.2, b 0.75, BM25's IDF
    ``ln(1 + (N - df + 0.5) / (df + 0.5))``; each distinct term counted once), ties by
    ``str(id)``, over the memories of ``namespace`` in ``store``."""
    distinct = list(dict.fromkeys(terms))
    if k <= 0 or not distinct:
        return []
    stats = store.term_stats(namespace, distinct)
    present = [term for term in distinct if stats.df.get(term)]
    if not stats.n_docs or not present:
        return []
    avg_length = stats.avg_length or 1.0
    idf = [
        math.log(1.0 + (stats.n_docs - stats.df[t] + 0.5) / (stats.df[t] + 0.5)) for t in present
    ]
    scored = []
    for found in store.candidates(namespace, present, present):
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * found.length / avg_length)
        score = sum(
            weight * tf * (BM25_K1 + 1.0) / (tf + norm)
            for weight, tf in zip(idf, found.tf, strict=True)
            if tf
        )
        scored.append((-score, str(found.id), found.id))
    return [memory_id for _, _, memory_id in heapq.nsmallest(k, scored)]


def fulltext_top_k(
    driver: Driver, database: str, namespace: str, terms: Sequence[str], k: int
) -> list[UUID]:
    """Neo4j's full-text index's own top ``k`` for analysed ``terms`` (Lucene's BM25). Namespaces
    are ``[A-Za-z0-9_-]`` and analysed terms letters and digits, so nothing needs escaping."""
    distinct = list(dict.fromkeys(terms))[:TERMS_PER_QUERY]
    if k <= 0 or not distinct:
        return []
    query = f'+namespace:"{namespace}" +termText:({" ".join(distinct)})'
    records, _, _ = driver.execute_query(
        FULLTEXT_TOP_K, query=query, k=k, database_=database, routing_="r"
    )
    return [UUID(record["id"]) for record in records]


@contextmanager
def native_top_k(store: Store, settings: Settings) -> Iterator[TopK]:
    """The store's own top k as ``top_k(namespace, terms, k)``: on Neo4j through a driver opened
    here and closed on exit, on the embedded store through ``store`` itself."""
    if store.kind != "neo4j":
        yield lambda namespace, terms, k: plain_bm25_top_k(store, namespace, terms, k)
        return
    if not settings.neo4j_uri:
        raise ValueError("the store is Neo4j but the settings name no neo4j_uri")
    secret = settings.neo4j_password.get_secret_value()
    auth = (settings.neo4j_user, secret) if secret else None
    with GraphDatabase.driver(settings.neo4j_uri, auth=auth) as driver:
        database = settings.neo4j_database
        yield lambda namespace, terms, k: fulltext_top_k(driver, database, namespace, terms, k)


__all__ = [
    "BM25_B",
    "BM25_K1",
    "FULLTEXT_TOP_K",
    "TopK",
    "fulltext_top_k",
    "native_top_k",
    "plain_bm25_top_k",
]
