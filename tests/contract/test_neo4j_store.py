"""What only the Neo4j store's write and read paths do (issue 13): times sent as integers and made
DateTimes in Cypher, analysed terms stored as one string (``termSeq``), the walk in one round trip
per four hops, the query's statistics and candidates in one round trip, column-wise with the term
frequencies counted in Cypher (``recall_columns``), and the ranked window with its supersessions
in one. Each is checked against the slower path it replaces, against the mirror,
or against what older databases hold (memories with a ``terms`` list, links without
``createdUs``), which must keep reading the same.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest

from graphsvc.embedding.codes import VectorModel
from graphsvc.model import EraseFilter, Link, LinkKind, Memory
from graphsvc.recall import STAGES, plan_candidates, rank_columns, window_guess
from graphsvc.store import cypher as named
from graphsvc.store.base import Store
from graphsvc.store.candidates import EPOCH, Candidate, CandidateColumns, micros
from graphsvc.store.mirror import MirrorStore
from graphsvc.store.neo4j import Neo4jStore
from graphsvc.store.neo4j import counts as neo4j_counts
from graphsvc.store.neo4j.boundary import tx_query
from graphsvc.store.neo4j.candidates import RowsAhead
from graphsvc.text import analyse, estimate_tokens, query_terms
from tests.neo4j_server import cypher, neo4j_store_factory, profiled_rows

pytestmark = pytest.mark.neo4j

BASE = datetime(2025, 1, 1, tzinfo=UTC)
CAP = 100_000
WORDS = [
    "kettle",
    "boils",
    "whistles",
    "leaks",
    "rusts",
    "cracked",
    "descaled",
    "unplugged",
    "lid",
    "handle",
    "spout",
    "filter",
    "water",
    "steam",
    "switch",
    "base",
    "cord",
    "light",
]


@pytest.fixture
def neo() -> Iterator[Neo4jStore]:
    store = neo4j_store_factory()()
    assert isinstance(store, Neo4jStore)
    store.open()
    yield store
    store.close()


def memory(ns: str, n: int, text: str, *, occurred: datetime | None = None) -> Memory:
    return Memory(
        id=uuid4(),
        namespace=ns,
        text=text,
        kind="note",
        occurred_at=occurred,
        recorded_at=BASE + timedelta(seconds=n, microseconds=n),
        tokens=estimate_tokens(text),
        terms=tuple(analyse(text)),
    )


def corpus(ns: str, count: int) -> list[Memory]:
    """Texts over a small vocabulary, words repeated (term frequencies above 1), a few without
    any analysed term, some dated before 1970."""
    made = []
    for n in range(count):
        words = [WORDS[(n * 7 + i * i) % len(WORDS)] for i in range(n % 9)]
        words += [WORDS[n % len(WORDS)]] * (n % 3)
        text = " ".join(words) or "it is the"  # stop words only: no analysed term
        occurred = datetime(1960, 1, 1, tzinfo=UTC) + timedelta(days=n, microseconds=7 * n)
        made.append(memory(ns, n, f"{text} #{n}", occurred=occurred if n % 4 == 0 else None))
    return made


def chain_links(items: list[Memory]) -> list[Link]:
    kinds = list(LinkKind)
    links = []
    for i in range(len(items) - 1):
        links.append(
            Link(
                source=items[i].id,
                target=items[i + 1].id,
                kind=kinds[i % len(kinds)],
                created_at=BASE + timedelta(microseconds=i),
            )
        )
        if i % 5 == 0 and i + 7 < len(items):
            links.append(
                Link(
                    source=items[i + 7].id,
                    target=items[i].id,
                    kind=LinkKind.RELATES_TO,
                    weight=0.5,
                    note=f"jump {i}",
                    created_at=BASE,
                )
            )
    return links


def planned(store: Store, ns: str, terms: list[str], limit: int) -> tuple[Any, list[Candidate]]:
    """The two round trips ``recall_candidates`` replaces, as the service made them."""
    stats = store.term_stats(ns, terms)
    plan = plan_candidates(terms, stats, limit)
    if plan.fallback_term is not None:
        return stats, store.recent_candidates(ns, plan.fallback_term, plan.fallback_limit, terms)
    return stats, store.candidates(ns, plan.terms, terms) if plan.terms else []


def age(ns: str) -> None:
    """Make the namespace look written by an older graphsvc: terms as a list, no termSeq, links
    with only their DateTime."""
    cypher(
        "MATCH (m:Memory {namespace: $ns}) "
        "SET m.terms = CASE WHEN m.termSeq = '' THEN [] ELSE split(m.termSeq, ' ') END "
        "REMOVE m.termSeq",
        ns=ns,
    )
    cypher("MATCH (m:Memory {namespace: $ns})-[r]->(:Memory) REMOVE r.createdUs", ns=ns)


def test_times_are_stored_as_datetimes_made_from_the_microseconds(neo: Neo4jStore, ns: str) -> None:
    items = corpus(ns, 12)
    neo.upsert_memories(ns, items, max_memories=CAP)
    neo.add_links(ns, chain_links(items))
    rows = cypher(
        "MATCH (m:Memory {namespace: $ns}) RETURN m.id AS id, m.recordedAt AS recorded, "
        "m.occurredAt AS occurred, m.terms AS terms",
        ns=ns,
    )
    by_id = {UUID(row["id"]): row for row in rows}
    for item in items:
        row = by_id[item.id]
        assert row["recorded"].to_native() == item.recorded_at
        occurred = row["occurred"]
        assert (occurred.to_native() if occurred else None) == item.occurred_at
        assert row["terms"] is None  # the list is no longer written: termSeq holds the terms
    links = cypher(
        "MATCH (a:Memory {namespace: $ns})-[r]->(:Memory) RETURN r.createdAt AS at, "
        "r.createdUs AS us",
        ns=ns,
    )
    assert links and all(
        link["at"].to_native() == EPOCH + timedelta(microseconds=link["us"]) for link in links
    )
    assert neo.get_memories(ns, [m.id for m in items]) == items


@pytest.mark.parametrize("aged", [False, True], ids=["current", "older-database"])
def test_recall_candidates_is_term_stats_then_the_plan_s_candidates(
    neo: Neo4jStore, ns: str, aged: bool
) -> None:
    items = corpus(ns, 150)
    # Many words of their own: a query of over 100 rare terms takes several full-text queries.
    rare = [f"zq{n}x" for n in range(130)]
    items += [memory(ns, 1_000 + n, f"{word} kettle") for n, word in enumerate(rare)]
    neo.upsert_memories(ns, items, max_memories=CAP)
    if aged:
        age(ns)
    queries = [
        "kettle",
        "the kettle boils and whistles",
        "rusts cracked lid spout",
        "unknown words only",
        "descaled descaled water",
        " ".join(rare),
        " ".join(rare[:40] + WORDS),
        "",
    ]
    for query in queries:
        terms = query_terms(query)
        for limit in (1_000, 60, 9, 1):
            assert neo.recall_candidates(ns, terms, limit) == planned(neo, ns, terms, limit), (
                query,
                limit,
            )
    # Candidates count each query term in the memory's own terms.
    terms = query_terms("kettle boils water steam")
    _, found = neo.recall_candidates(ns, terms, 1_000)
    stored = {m.id: m for m in neo.get_memories(ns, [c.id for c in found])}
    assert found and all(c == Candidate.of(stored[c.id], terms) for c in found)


def rows_of(columns: CandidateColumns) -> dict[UUID, Candidate]:
    """The candidates of columns by id (the columns are in no order)."""
    found = {columns.ids[i]: columns.candidate(i) for i in range(len(columns))}
    assert len(found) == len(columns)
    return found


@pytest.mark.parametrize("aged", [False, True], ids=["current", "older-database"])
def test_recall_columns_hold_the_plan_s_candidates_with_their_frequencies(
    neo: Neo4jStore, ns: str, aged: bool
) -> None:
    items = corpus(ns, 90)
    # A term repeated back to back ("water water"), and terms holding another ("waterfal",
    # "underwat"): frequencies count whole terms, each occurrence once.
    items += [
        memory(ns, 500, "water water water lid waterfall"),
        memory(ns, 501, "underwater waterfall water"),
    ]
    neo.upsert_memories(ns, items, max_memories=CAP)
    if aged:
        age(ns)
    queries = [
        "water lid",
        "kettle water water",
        "the kettle boils and whistles",
        "unknown words",
        "waterfall",
        "",
    ]
    for query in queries:
        terms = query_terms(query)
        for limit in (1_000, 9, 1):  # 1: the newest memories of the rarest term stand in
            stats, columns = neo.recall_columns(ns, terms, limit)
            want_stats, want = planned(neo, ns, terms, limit)
            assert stats == want_stats, (query, limit)
            assert rows_of(columns) == {c.id: c for c in want}, (query, limit)
            assert columns.tf.shape == (len(want), len(terms))
    terms = query_terms("water lid kettle")
    _, columns = neo.recall_columns(ns, terms, 1_000)
    found = rows_of(columns)
    repeated = next(m for m in items if m.text.startswith("water water water"))
    assert found[repeated.id].tf[0] == 3
    holding = next(m for m in items if m.text.startswith("underwater"))
    assert found[holding.id].tf[0] == 1
    for item in items:
        if item.id in found:
            assert found[item.id].tf == tuple(item.terms.count(t) for t in terms)
    # Undated memories come back undated; dated ones (some before 1970) with their time.
    for item in items:
        if item.id in found:
            when = found[item.id].occurred_us
            assert when == (None if item.occurred_at is None else micros(item.occurred_at))


def test_recall_window_answers_the_namespace_s_model_in_the_same_round_trip(
    neo: Neo4jStore, ns: str
) -> None:
    neo.upsert_memories(ns, corpus(ns, 12), max_memories=CAP)
    terms = query_terms("kettle water")
    recalled = neo.recall_window(ns, terms, 1_000, None)
    assert recalled.model is None
    assert recalled.ahead is None  # no guess: nothing read ahead
    plain_stats, plain = neo.recall_columns(ns, terms, 1_000)
    assert (recalled.stats, rows_of(recalled.columns)) == (plain_stats, rows_of(plain))
    neo.set_vector_model(ns, VectorModel("three-d", 3))
    assert neo.recall_window(ns, terms, 1_000, None).model == VectorModel("three-d", 3)
    assert neo.vector_model(ns) == VectorModel("three-d", 3)


def test_the_window_is_its_memories_and_the_supersessions_among_them(
    neo: Neo4jStore, ns: str, tmp_path: Path
) -> None:
    mirror = MirrorStore(tmp_path / "mirror", fsync=False)
    mirror.open()
    try:
        items = corpus(ns, 12)
        a, b, c, d, e = (m.id for m in items[:5])
        # a > b > c chained, d > a, e > d; one link leaves the window (to items[6]).
        links = [
            Link(source=x, target=y, kind=LinkKind.SUPERSEDES, created_at=BASE)
            for x, y in ((a, b), (b, c), (d, a), (e, d), (a, items[6].id))
        ] + [Link(source=c, target=e, kind=LinkKind.CAUSES, created_at=BASE)]
        for store in (neo, mirror):
            store.upsert_memories(ns, items, max_memories=CAP)
            store.add_links(ns, links)
        windows = [[c, a, b], [e, d, a, b, c], [a], [b, uuid4(), a, b], [items[9].id, d]]
        for ids in windows:
            want = (mirror.get_memories(ns, ids), mirror.supersessions(ns, ids))
            assert neo.window(ns, ids) == want, ids
            assert neo.window(ns, ids)[1] == neo.supersessions(ns, ids), ids
        assert neo.window(ns, []) == ([], [])
    finally:
        mirror.close()


@pytest.mark.parametrize("aged", [False, True], ids=["current", "older-database"])
def test_the_walk_matches_the_mirror_at_every_depth_and_size(
    neo: Neo4jStore, ns: str, tmp_path: Path, aged: bool
) -> None:
    mirror = MirrorStore(tmp_path / "mirror", fsync=False)
    mirror.open()
    try:
        items = corpus(ns, 40)
        links = chain_links(items)
        for store in (neo, mirror):
            store.upsert_memories(ns, items, max_memories=CAP)
            store.add_links(ns, links)
        if aged:
            age(ns)
        starts = [items[0].id, items[20].id, uuid4()]
        for depth in (0, 1, 2, 4, 5, 9):
            for max_nodes in (1, 3, 8, 50):
                assert neo.walk(ns, starts, depth, max_nodes) == mirror.walk(
                    ns, starts, depth, max_nodes
                ), (depth, max_nodes)
        assert neo.links_of(ns, [items[3].id]) == mirror.links_of(ns, [items[3].id])
    finally:
        mirror.close()


def test_an_older_namespace_reads_and_erases_with_exact_statistics(
    neo: Neo4jStore, ns: str
) -> None:
    items = corpus(ns, 30)
    neo.upsert_memories(ns, items, max_memories=CAP)
    neo.add_links(ns, chain_links(items))
    age(ns)
    assert neo.get_memories(ns, [m.id for m in items]) == items
    assert list(neo.export(ns))[: len(items)] == sorted(items, key=lambda m: m.recorded_at)
    neo.forget(ns, items[0].id, at=BASE)
    neo.erase(ns, EraseFilter(until=datetime(1960, 2, 1, tzinfo=UTC)), at=BASE, batch_size=2)
    live = neo.get_memories(ns, [m.id for m in items])
    words = sorted({t for m in items for t in m.terms})
    stats = neo.term_stats(ns, words)
    assert stats.n_docs == len(live)
    assert stats.total_length == sum(len(m.terms) for m in live)
    assert stats.df == {w: sum(w in m.terms for m in live) for w in words}
    # Written again, a forgotten memory comes back in the current form beside the older ones.
    neo.upsert_memories(ns, [items[0]], max_memories=CAP)
    assert neo.get_memories(ns, [items[0].id]) == [items[0]]


def counts_of(store: Store, ns: str) -> tuple[int, int, int, int]:
    stats = store.stats(ns)
    return stats.memories, stats.links, stats.beliefs, stats.terms


def test_stats_read_the_namespace_s_counts_not_its_memories(neo: Neo4jStore, ns: str) -> None:
    items = corpus(ns, 300)
    neo.upsert_memories(ns, items, max_memories=CAP)
    links = chain_links(items)
    neo.add_links(ns, links)
    terms = len({t for m in items for t in m.terms})
    assert counts_of(neo, ns) == (300, len(links), 0, terms)
    # No operator of the query comes near the namespace's 300 memories, 350 links or its terms.
    plan = profiled_rows(named.query("namespace_stats"), {"ns": ns})
    assert max(rows for _, _, rows in plan) <= 2, plan
    neo.erase(ns, EraseFilter(everything=True), at=BASE, batch_size=1_000)


def test_counts_missing_from_an_older_database_are_counted_then_backfilled_at_open(
    neo: Neo4jStore, ns: str
) -> None:
    items = corpus(ns, 40)
    neo.upsert_memories(ns, items, max_memories=CAP)
    links = chain_links(items)
    neo.add_links(ns, links)
    kept = counts_of(neo, ns)
    # As a database written before graphsvc kept them (or a bulk import) holds it: no counts.
    cypher("MATCH (s:NamespaceStat {namespace: $ns}) REMOVE s.links, s.beliefs, s.terms", ns=ns)
    assert counts_of(neo, ns) == kept  # counted afresh meanwhile
    # A write in between changes counts nobody keeps yet; they stay missing, not wrong.
    neo.forget(ns, items[1].id, at=BASE)
    missing = cypher(
        "MATCH (s:NamespaceStat {namespace: $ns}) RETURN s.links AS links, s.terms AS terms", ns=ns
    )
    assert missing == [{"links": None, "terms": None}]
    live = [m for m in items if m.id != items[1].id]
    expected = (
        len(live),
        sum(lk.source != items[1].id and lk.target != items[1].id for lk in links),
        0,
        len({t for m in live for t in m.terms}),
    )
    assert counts_of(neo, ns) == expected
    reopened = neo4j_store_factory()()
    reopened.open()
    try:
        kept_now = cypher(
            "MATCH (s:NamespaceStat {namespace: $ns}) "
            "RETURN s.links AS links, s.beliefs AS beliefs, s.terms AS terms",
            ns=ns,
        )
        assert kept_now == [{"links": expected[1], "beliefs": 0, "terms": expected[3]}]
        assert counts_of(reopened, ns) == expected
    finally:
        reopened.erase(ns, EraseFilter(everything=True), at=BASE, batch_size=1_000)
        reopened.close()


def test_a_write_that_a_concurrent_one_overtook_still_keeps_the_cap(
    neo: Neo4jStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writer A has created its memories and counted their terms when writer B writes and
    commits. A then takes the NamespaceStat's lock and sees the count with B's batch in it, and
    evicts what it is over the cap: the oldest memories, none of its own batch. (The two batches
    share no term, so B does not wait for A's TermStats.)"""
    ns = f"t{uuid4().hex[:16]}"
    cap = 30
    old = [memory(ns, n, f"old reading {n}") for n in range(20)]
    neo.upsert_memories(ns, old, max_memories=cap)
    a_batch = [memory(ns, 100 + n, f"apple cider {n}") for n in range(8)]
    b_batch = [memory(ns, 200 + n, f"banana bread {n}") for n in range(8)]
    a_counted, b_done = threading.Event(), threading.Event()
    original = tx_query

    def pausing(tx: Any, name: str, /, **params: Any) -> Any:
        rows = original(tx, name, **params)
        # Writer A's transaction (it runs on the store's attempt thread, not writer A's own).
        if name == "bump_term_stats" and "appl" in params.get("terms", ()):
            a_counted.set()
            assert b_done.wait(30), "writer B did not finish"
        return rows

    monkeypatch.setattr(neo4j_counts, "tx_query", pausing)
    results: dict[str, Any] = {}

    def write_a() -> None:
        results["a"] = neo.upsert_memories(ns, a_batch, max_memories=cap)

    writer = threading.Thread(target=write_a, name="writer-a")
    writer.start()
    assert a_counted.wait(30)
    results["b"] = neo.upsert_memories(ns, b_batch, max_memories=cap)  # 20 + 8: no eviction
    b_done.set()
    writer.join(60)
    assert not results["b"].evicted
    assert set(results["a"].evicted) == {m.id for m in old[:6]}  # 20 + 8 + 8 - 30
    assert neo.stats(ns).memories == cap
    left = {m.id for m in neo.get_memories(ns, [m.id for m in old + a_batch + b_batch])}
    assert left == {m.id for m in old[6:] + a_batch + b_batch}
    assert neo.term_stats(ns, ["old", "appl", "banana"]).df == {"old": 14, "appl": 8, "banana": 8}


@pytest.mark.parametrize("bm25_b", [0.75, 0.3])
def test_reading_ahead_scores_the_candidates_as_the_ranking_does(
    neo: Neo4jStore, ns: str, bm25_b: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """recall_columns.cypher's guess ranks as rank_columns does, in the server's arithmetic:
    with no margin, where no two scores round alike, it reads exactly the ranked window, in
    order; and the window then makes no round trip of its own, yet answers as without it."""
    items = corpus(ns, 60)
    neo.upsert_memories(ns, items, max_memories=CAP)
    neo.add_links(
        ns,
        [
            Link(source=a.id, target=b.id, kind=LinkKind.SUPERSEDES, created_at=BASE)
            for a, b in zip(items[1::7], items[::7], strict=False)
        ],
    )
    reads: list[str] = []
    real_read = neo.boundary.read

    def counted(name: str, /, **params: Any) -> Any:
        reads.append(name)
        return real_read(name, **params)

    monkeypatch.setattr(neo.boundary, "read", counted)
    checked = 0
    for text in ("kettle water", "kettle kettle steam", "spout lid handle cord", "rusts"):
        terms = query_terms(text)
        for stage in STAGES.values():
            for limit in (1, 5, 12):
                guess = replace(window_guess(stage, limit, bm25_b), size=limit)
                recalled = neo.recall_window(ns, terms, 1_000, guess)
                assert isinstance(recalled.ahead, RowsAhead)
                every = rank_columns(terms, recalled.stats, recalled.columns, stage, None, bm25_b)
                ranked = [str(memory_id) for memory_id, _, _, _ in every[:limit]]
                score = {str(memory_id): value for memory_id, value, _, _ in every}
                ahead = list(recalled.ahead.rows)
                # In the ranking's order (scores as rounded; the server orders by the unrounded
                # ones, so equal rounded scores may come in either order) ...
                assert [score[key] for key in ahead] == sorted(
                    (score[key] for key in ahead), reverse=True
                ), (text, stage.name, limit)
                # ... and the window's memories, unless its last score ties the next one.
                if len(every) <= limit or every[limit - 1][1] != every[limit][1]:
                    assert set(ahead) == set(ranked), (text, stage.name, limit)
                    checked += 1
                ids = [UUID(key) for key in ranked]
                reads.clear()
                window = neo.window(ns, ids, recalled.ahead)
                assert reads == ([] if set(ranked) <= set(recalled.ahead.rows) else ["window"])
                assert window == neo.window(ns, ids)
                more = [*ids, items[0].id, uuid4()]
                assert neo.window(ns, more, recalled.ahead) == neo.window(ns, more)
    assert checked >= 15
