"""What only the Neo4j store does for dense recall: a vector index per dimension (made when a model
of that dimension is first set, and again at open), vectors as float properties beside the
``vectorDimension`` marker, and ``similar`` over the approximate, shared index: re-scored exactly,
asking again for more, and scanning the namespace when the index cannot vouch for the ``k`` best.

The behaviour both stores share is tested once for both in ``test_vectors.py``. The index path is
reached here on small namespaces by lowering the store's thresholds (``EXACT_BELOW`` and the fetch
sizes), so the logic that guards large namespaces runs in seconds; every answer is compared with the
exhaustive one (:func:`graphsvc.embedding.codes.cosines` and
:func:`graphsvc.embedding.codes.top_k`). Each test uses a dimension of its own (no other suite uses
these) and erases its namespaces at the end, so the index it looks at holds only its own vectors.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import numpy as np
import pytest

from graphsvc.embedding.codes import VectorModel, cosines, quantize, to_bytes, top_k, with_given
from graphsvc.model import EraseFilter, Memory
from graphsvc.store.cypher import query
from graphsvc.store.neo4j import Neo4jStore
from graphsvc.store.neo4j import candidates as neo4j_candidates
from graphsvc.store.neo4j import queue as neo4j_queue
from graphsvc.text import analyse, estimate_tokens
from tests.neo4j_server import cypher, neo4j_store_factory, profiled_rows

BASE = datetime(2025, 1, 1, tzinfo=UTC)
CAP = 100_000


@pytest.fixture
def neo() -> Iterator[Neo4jStore]:
    """An opened Neo4j store; every namespace :func:`fill` wrote is erased afterwards."""
    store = neo4j_store_factory()()
    assert isinstance(store, Neo4jStore)
    store.open()
    written.clear()
    try:
        yield store
    finally:
        for ns in written:
            store.erase(ns, EraseFilter(everything=True), at=BASE, batch_size=1_000)
        store.close()


written: list[str] = []


def vector_indexes() -> dict[str, dict[str, Any]]:
    rows = cypher(
        "SHOW VECTOR INDEXES YIELD name, state, labelsOrTypes, properties, options "
        "RETURN name, state, labelsOrTypes, properties, options"
    )
    return {row["name"]: row for row in rows}


def memories(ns: str, count: int) -> list[Memory]:
    made = []
    for n in range(count):
        text = f"memory number {n} of a vector index test"
        item = Memory(
            id=uuid4(),
            namespace=ns,
            text=text,
            kind="note",
            recorded_at=BASE + timedelta(seconds=n),
            tokens=estimate_tokens(text),
            terms=tuple(analyse(text)),
        )
        made.append(item)
    return made


def codes_of(rows: np.ndarray[Any, Any]) -> list[bytes]:
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return [to_bytes(row) for row in quantize(unit.astype(np.float32))]


def random_codes(count: int, dimension: int, seed: int) -> list[bytes]:
    return codes_of(np.random.default_rng(seed).standard_normal((count, dimension)))


def expected(
    query: bytes, stored: Mapping[UUID, bytes], k: int, ids: Sequence[UUID] = ()
) -> list[tuple[UUID, float]]:
    """The exhaustive answer: cosines over every stored vector, top_k, plus the ids
    asked that have a vector."""
    order = list(stored)
    if not order:
        return []
    matrix = np.stack([np.frombuffer(stored[i], dtype=np.int8) for i in order])
    scores = cosines(np.frombuffer(query, dtype=np.int8), matrix)
    found = dict(top_k(order, scores, k))
    for mid in ids:
        if mid in stored:
            found.setdefault(mid, float(scores[order.index(mid)]))
    return sorted(found.items(), key=lambda pair: (-pair[1], pair[0]))


def fill(
    store: Neo4jStore, ns: str, model: VectorModel, vectors: Sequence[bytes]
) -> dict[UUID, bytes]:
    written.append(ns)
    store.set_vector_model(ns, model)
    stored = memories(ns, len(vectors))
    given = {m.id: v for m, v in zip(stored, vectors, strict=True)}
    store.upsert_memories(ns, stored, max_memories=CAP, vectors=given)
    return given


class Trace:
    """The modes and fetch sizes of the store's ``similar`` round trips."""

    def __init__(self, store: Neo4jStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, str | None, int]] = []
        original = store.boundary.read

        def traced(name: str, /, **params: Any) -> Any:
            rows = original(name, **params)
            if name == "similar":
                self.calls.append((params["mode"], rows[0]["mode"], params["fetch"]))
            return rows

        monkeypatch.setattr(store.boundary, "read", traced)

    def modes(self) -> list[str | None]:
        ran = [ran for _, ran, _ in self.calls]
        self.calls.clear()
        return ran


def small_thresholds(monkeypatch: pytest.MonkeyPatch, **values: float) -> None:
    """Let namespaces of tens of vectors take the index path (every value is a store constant)."""
    settings: dict[str, float] = {
        "EXACT_BELOW": 20,
        "OVERFETCH": 2,
        "MIN_FETCH": 10,
        "MAX_FETCH": 400,
    }
    settings |= values
    for name, value in settings.items():
        monkeypatch.setattr(neo4j_candidates, name, value)


# -- schema ---------------------------------------------------------------------------------------


@pytest.mark.neo4j
def test_each_dimension_gets_its_own_cosine_index_when_a_model_first_needs_it(
    neo: Neo4jStore, ns: str
) -> None:
    five, six = f"{ns}-five", f"{ns}-six"
    fill(neo, five, VectorModel("five-d", 5), random_codes(6, 5, 1))
    sixes = fill(neo, six, VectorModel("six-d", 6), random_codes(6, 6, 2))
    indexes = vector_indexes()
    for dimension in (5, 6):
        index = indexes[f"memory_vector_{dimension}"]
        assert index["state"] == "ONLINE"
        assert (index["labelsOrTypes"], index["properties"]) == (
            ["Memory"],
            [f"vector_{dimension}"],
        )
        config = index["options"]["indexConfig"]
        assert config["vector.dimensions"] == dimension
        assert config["vector.similarity_function"] == "COSINE"
        assert config["vector.quantization.enabled"] is False
    # The codes are the property the index reads: a float list of the integer codes.
    rows = cypher(
        "MATCH (m:Memory {namespace: $ns}) RETURN m.vectorDimension AS d, m.vector_5 AS v, "
        "m.vector_6 AS other",
        ns=five,
    )
    assert len(rows) == 6
    assert all(row["d"] == 5 and row["other"] is None for row in rows)
    assert all(len(row["v"]) == 5 and all(float(x).is_integer() for x in row["v"]) for row in rows)
    query = random_codes(1, 6, 3)[0]
    assert neo.similar(six, query, 10, []) == expected(query, sixes, 10)


@pytest.mark.neo4j
def test_open_makes_missing_vector_indexes_again_and_migrating_twice_changes_nothing(
    neo: Neo4jStore, ns: str
) -> None:
    given = fill(neo, ns, VectorModel("seven-d", 7), random_codes(12, 7, 4))
    cypher("DROP INDEX memory_vector_7 IF EXISTS")
    assert "memory_vector_7" not in vector_indexes()
    for _ in range(2):  # the second open finds everything in place
        reopened = neo4j_store_factory()()
        reopened.open()
        try:
            assert vector_indexes()["memory_vector_7"]["state"] == "ONLINE"
            query = random_codes(1, 7, 5)[0]
            assert reopened.similar(ns, query, 4, []) == expected(query, given, 4)
        finally:
            reopened.close()


@pytest.mark.neo4j
def test_processes_opening_at_once_all_open_when_they_race_to_make_an_index(
    neo: Neo4jStore, ns: str
) -> None:
    """Workers of `graphsvc serve --workers` open together: each may find the index missing and
    create it; the losers of that race must wait for it, not fail."""
    fill(neo, ns, VectorModel("eight-d", 8), random_codes(4, 8, 9))
    for _ in range(3):
        cypher("DROP INDEX memory_vector_8 IF EXISTS")
        stores = [neo4j_store_factory()() for _ in range(4)]
        start = threading.Barrier(len(stores))

        def open_at_once(store: Neo4jStore, start: threading.Barrier = start) -> None:
            start.wait()
            store.open()

        try:
            with ThreadPoolExecutor(len(stores)) as pool:
                list(pool.map(open_at_once, stores))
            assert vector_indexes()["memory_vector_8"]["state"] == "ONLINE"
        finally:
            for store in stores:
                store.close()


@pytest.mark.neo4j
def test_a_namespace_written_before_vectors_existed_keeps_working(neo: Neo4jStore, ns: str) -> None:
    written.append(ns)
    stored = memories(ns, 5)
    neo.upsert_memories(ns, stored, max_memories=CAP)
    # What an older graphsvc left: no vector count on the namespace's statistics.
    cypher("MATCH (s:NamespaceStat {namespace: $ns}) REMOVE s.vectors", ns=ns)
    assert neo.vector_count(ns) == 0
    assert neo.vector_model(ns) is None
    assert neo.similar(ns, random_codes(1, 10, 6)[0], 3, []) == []
    assert [m.id for m in neo.pending_vectors(ns, 10)] == [m.id for m in stored]
    neo.set_vector_model(ns, VectorModel("ten-d", 10))
    codes = random_codes(5, 10, 7)
    assert neo.set_vectors(ns, {m.id: c for m, c in zip(stored, codes, strict=True)}) == 5
    assert neo.vector_count(ns) == 5
    neo.forget(ns, stored[0].id, at=BASE)
    assert neo.vector_count(ns) == 4
    assert neo.stats(ns).memories == 4


# -- similar on the index path --------------------------------------------------------------------


@pytest.mark.neo4j
def test_the_index_path_gives_the_exhaustive_answer_in_one_round_trip(
    neo: Neo4jStore, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_thresholds(monkeypatch)
    # Clustered, as sentence embeddings are: queries near what the namespace holds.
    rng = np.random.default_rng(8)
    centres = rng.standard_normal((6, 9))
    rows = centres[rng.integers(0, 6, 120)] + 0.4 * rng.standard_normal((120, 9))
    given = fill(neo, ns, VectorModel("nine-d", 9), codes_of(rows))
    trace = Trace(neo, monkeypatch)
    ids = list(given)
    for trial in range(12):
        query = codes_of(centres[trial % 6] + 0.3 * rng.standard_normal((1, 9)))[0]
        asked = [ids[int(i)] for i in rng.choice(len(ids), 5, replace=False)] + [uuid4()]
        assert neo.similar(ns, query, 5, asked) == expected(query, given, 5, asked)
        assert trace.modes() == ["index"]
        # What a bundle asks in two calls (the k nearest beside its lexical ranking, then its
        # ranked memories' cosines) comes to what one call answers.
        two = with_given(neo.similar(ns, query, 5, []), neo.similar(ns, query, 0, asked), 5)
        assert two == expected(query, given, 5, asked)
        trace.modes()
    # k = 0: only the vectors of the ids asked are read.
    assert neo.similar(ns, query, 0, ids[:3]) == expected(query, given, 0, ids[:3])
    assert trace.modes() == ["given"]
    # Below the threshold the namespace is scanned exactly, also in one round trip.
    monkeypatch.setattr(neo4j_candidates, "EXACT_BELOW", 1_000)
    query = random_codes(1, 9, 9)[0]
    assert neo.similar(ns, query, 7, ids[:3]) == expected(query, given, 7, ids[:3])
    assert trace.modes() == ["scan"]


@pytest.mark.neo4j
def test_only_a_scan_reads_the_namespace_s_vectors(
    neo: Neo4jStore, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index and given modes of ``similar`` read only what they return: the namespace's
    vectors are read by a scan alone (a planner that seeks them before filtering on the mode
    did it in every mode, 100,000 rows a bundle at 100k)."""
    small_thresholds(monkeypatch)
    given = fill(neo, ns, VectorModel("fourteen-d", 14), random_codes(150, 14, 14))
    asked: list[dict[str, Any]] = []
    original = neo.boundary.read

    def traced(name: str, /, **params: Any) -> Any:
        if name == "similar":
            asked.append(params)
        return original(name, **params)

    monkeypatch.setattr(neo.boundary, "read", traced)
    ids = list(given)[:4]
    neo.similar(ns, random_codes(1, 14, 15)[0], 5, ids)
    neo.similar(ns, random_codes(1, 14, 16)[0], 0, ids)
    modes = {params["mode"] for params in asked}
    assert {"auto", "given"} <= modes, modes
    for params in asked:
        if params["mode"] == "scan":
            continue
        plan = profiled_rows(query("similar"), params)
        # No operator comes near the namespace's 150 vectors: the index's fetch (10), the
        # ids asked (4) and the namespace's statistics are all there is.
        busiest = max(plan, key=lambda op: op[2])
        assert busiest[2] <= 40, (params["mode"], busiest)
    # A scan does read them all, and is still asked for when the index cannot vouch.
    monkeypatch.setattr(neo4j_candidates, "EXACT_BELOW", 1_000)
    asked.clear()
    neo.similar(ns, random_codes(1, 14, 17)[0], 5, ids)
    plan = profiled_rows(query("similar"), asked[0])
    assert max(rows for _, _, rows in plan) >= len(given)


@pytest.mark.neo4j
def test_a_namespace_crowded_out_of_the_index_is_asked_again_then_scanned(
    neo: Neo4jStore, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_thresholds(monkeypatch, MAX_FETCH=80)
    crowd, mine = f"{ns}-crowd", f"{ns}-mine"
    model = VectorModel("eleven-d", 11)
    query_row = np.random.default_rng(10).standard_normal((1, 11))
    query = codes_of(query_row)[0]
    # Another namespace of the same dimension holds 300 vectors right next to the query: the
    # shared index answers with them first.
    near = query_row + 0.05 * np.random.default_rng(11).standard_normal((300, 11))
    fill(neo, crowd, model, codes_of(near))
    given = fill(neo, mine, model, random_codes(40, 11, 12))
    trace = Trace(neo, monkeypatch)
    assert neo.similar(mine, query, 5, []) == expected(query, given, 5)
    index_fetches = [fetch for _, ran, fetch in trace.calls if ran == "index"]
    assert index_fetches[0] == 10 and index_fetches == sorted(index_fetches)
    assert max(index_fetches) <= 80  # MAX_FETCH
    modes = trace.modes()
    assert modes[0] == "index" and modes[-1] == "scan" and len(modes) <= 6, modes


@pytest.mark.neo4j
def test_ties_and_vectors_of_zeros_are_exact_on_the_index_path(
    neo: Neo4jStore, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    small_thresholds(monkeypatch)
    dimension = 12
    same = np.zeros(dimension, dtype=np.int8)
    same[0], same[1] = 90, 40
    zero = np.zeros(dimension, dtype=np.int8)
    axes = quantize(np.eye(dimension, dtype=np.float32)[2:6])
    rows = [same] * 30 + [zero] * 12 + list(axes)
    given = fill(neo, ns, VectorModel("twelve-d", dimension), [to_bytes(r) for r in rows])
    trace = Trace(neo, monkeypatch)
    query = to_bytes(same)
    for k in (1, 5, 29, 30, 31, 40):  # the k-th place inside the tie, at its end, past it
        assert neo.similar(ns, query, k, []) == expected(query, given, k)
    assert "scan" in trace.modes()  # ties at the boundary: the index cannot vouch for them
    # A query orthogonal to all but four: the k best run into the zeros the index does not hold.
    axis = np.zeros(dimension, dtype=np.int8)
    axis[2] = 127
    assert neo.similar(ns, to_bytes(axis), 8, []) == expected(to_bytes(axis), given, 8)
    assert trace.modes()[-1] == "scan"
    # A query of zeros: every cosine is 0, the k smallest ids come out.
    assert neo.similar(ns, to_bytes(zero), 6, []) == expected(to_bytes(zero), given, 6)


@pytest.mark.neo4j
def test_vectors_leave_with_their_memories_and_the_count_stays_exact(
    neo: Neo4jStore, ns: str
) -> None:
    given = fill(neo, ns, VectorModel("thirteen-d", 13), random_codes(9, 13, 13))
    ids = sorted(given, key=str)
    neo.forget(ns, ids[0], at=BASE)
    neo.erase(ns, EraseFilter(until=BASE + timedelta(seconds=2)), at=BASE, batch_size=1)
    marked = cypher(
        "MATCH (m:Memory {namespace: $ns}) WHERE m.vectorDimension IS NOT NULL "
        "RETURN count(m) AS n",
        ns=ns,
    )[0]["n"]
    assert neo.vector_count(ns) == marked == len(neo.get_memories(ns, ids))
    assert neo.clear_vectors(ns, 4) == 4
    assert neo.vector_count(ns) == marked - 4
    left = cypher(
        "MATCH (m:Memory {namespace: $ns}) WHERE m.vectorDimension IS NULL "
        "RETURN count(m.vector_13) AS vectors, count(m) AS memories",
        ns=ns,
    )[0]
    assert left == {"vectors": 0, "memories": 4}


# -- what to ask next (no server) ----------------------------------------------------------------

FIRST = neo4j_candidates.Ask("index", 400)


def answer(
    mode: str = "index",
    returned: int = 400,
    mine: int = 400,
    least: float = 0.1,
    vectors: int = 100_000,
) -> neo4j_candidates.Answer:
    return neo4j_candidates.Answer(mode, returned, mine, least, vectors)


def test_the_index_is_trusted_when_its_lowest_row_is_clearly_below_the_kth() -> None:
    ask = neo4j_candidates.next_ask
    assert ask(FIRST, answer(least=0.2), k=10, kth=0.45, zero=False, first=400) is None
    # Within SLACK of the k-th: a left-out row could tie with it.
    again = ask(FIRST, answer(least=0.45 - 0.5e-4), k=10, kth=0.45, zero=False, first=400)
    assert again == neo4j_candidates.Ask("index", 3200, None, 1)
    # A flat neighbourhood (a query far from everything): clear is enough there too.
    assert ask(FIRST, answer(least=0.15), k=10, kth=0.2, zero=False, first=400) is None
    # Asked again, the answer is trusted once its lowest row is below the k-th.
    again = neo4j_candidates.Ask("index", 3200, None, 1)
    assert ask(again, answer(least=0.12), k=10, kth=0.2, zero=False, first=400) is None
    # The index held fewer vectors than asked: it answered with all of them.
    assert (
        ask(FIRST, answer(returned=30, mine=30, least=0.2), k=10, kth=0.21, zero=False, first=400)
        is None
    )


def test_a_crowded_or_exhausted_index_leads_to_a_scan() -> None:
    ask = neo4j_candidates.next_ask
    # Few of the namespace among the rows: grow by what it takes to see 2k of them.
    few = ask(FIRST, answer(mine=2), k=10, kth=None, zero=False, first=400)
    assert few == neo4j_candidates.Ask("index", 4000, None, 1)
    none = ask(FIRST, answer(mine=0), k=10, kth=None, zero=False, first=400)
    assert none == neo4j_candidates.Ask("index", 6400, None, 1)
    most = ask(none, answer(mine=0), k=10, kth=None, zero=False, first=400)
    assert most == neo4j_candidates.Ask("index", neo4j_candidates.MAX_FETCH, None, 2)
    assert ask(most, answer(mine=0), k=10, kth=None, zero=False, first=400) == (
        neo4j_candidates.Ask("scan", 400, None, 3)
    )
    # Asking for as many rows as the namespace holds: a scan costs no more.
    small = answer(mine=1, vectors=3_000)
    assert ask(FIRST, small, k=10, kth=None, zero=False, first=400) == (
        neo4j_candidates.Ask("scan", 400, None, 1)
    )
    # The k-th is not clearly positive: vectors of zeros (not in the index) may belong.
    assert ask(FIRST, answer(least=-0.5), k=10, kth=0.0, zero=False, first=400) == (
        neo4j_candidates.Ask("index", 3200, None, 1)
    )


def test_a_scan_is_complete_or_fetches_everything_that_can_reach_the_kth() -> None:
    ask = neo4j_candidates.next_ask
    scan = neo4j_candidates.Ask("scan", 400)
    assert ask(scan, answer("scan", returned=120), k=10, kth=0.3, zero=False, first=400) is None
    assert ask(scan, answer("scan", least=0.1), k=10, kth=0.3, zero=False, first=400) is None
    tied = ask(scan, answer("scan", least=0.3), k=10, kth=0.3, zero=False, first=400)
    assert tied is not None and tied.mode == "scan" and tied.fetch == neo4j_candidates.NO_LIMIT
    assert tied.floor == pytest.approx((1.0 + 0.3 - neo4j_candidates.SLACK) / 2.0)
    assert ask(tied, answer("scan", least=0.3), k=10, kth=0.3, zero=False, first=400) is None
    assert ask(scan, answer("scan", least=0.0), k=10, kth=0.0, zero=True, first=400) is None


# -- the vector queue's index ---------------------------------------------------------------------


@pytest.mark.neo4j
def test_the_head_of_the_vector_queue_reads_no_more_than_its_page(neo: Neo4jStore, ns: str) -> None:
    """The queue's work grows with the page asked, not with the backlog or the namespace: the
    index is read in order and cut at the limit (no sort of the whole backlog)."""
    written.append(ns)
    stored = memories(ns, 120)
    neo.upsert_memories(ns, stored, max_memories=CAP)
    assert [p.id for p in neo.pending_vectors(ns, 5)] == [m.id for m in stored[:5]]
    plan = profiled_rows(query("pending_vectors"), {"ns": ns, "limit": 5})
    operators = {operator for operator, _, _ in plan}
    assert any(
        "memory_vector_queue" in details or "vectorQueuedUs" in details
        for operator, details, _ in plan
        if operator.startswith("NodeIndexSeek")
    )
    assert not operators & {"Sort@neo4j", "Top@neo4j", "NodeByLabelScan@neo4j"}, plan
    assert max(rows for _, _, rows in plan) <= 5, plan


@pytest.mark.neo4j
def test_a_database_written_before_the_vector_queue_gets_its_queue_at_open(
    neo: Neo4jStore, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    written.append(ns)
    stored = memories(ns, 7)
    neo.upsert_memories(ns, stored, max_memories=CAP)
    neo.set_vector_model(ns, VectorModel("ten-d", 10))
    assert neo.set_vectors(ns, {stored[2].id: random_codes(1, 10, 5)[0]}) == 1
    # What an older graphsvc left: no memory in the queue, and no word of one on the namespace.
    cypher("MATCH (m:Memory {namespace: $ns}) REMOVE m.vectorQueuedUs", ns=ns)
    cypher("MATCH (s:NamespaceStat {namespace: $ns}) REMOVE s.vectorQueue", ns=ns)
    assert neo.pending_vectors(ns, 10) == []
    monkeypatch.setattr(neo4j_queue, "QUEUE_PAGE", 3)  # several pages
    again = neo4j_store_factory()()
    again.open()
    try:
        waiting = [m.id for m in stored if m.id != stored[2].id]
        assert [p.id for p in again.pending_vectors(ns, 10)] == waiting
        flag = cypher("MATCH (s:NamespaceStat {namespace: $ns}) RETURN s.vectorQueue AS q", ns=ns)
        assert flag == [{"q": True}]
    finally:
        again.close()
