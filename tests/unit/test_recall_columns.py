"""The embedded store's fast paths give what the paths they replace give: candidates read
column-wise (``recall_columns``) rank exactly as the :class:`Candidate` objects of
``recall_candidates`` do, a batch of memories added column by column is stored as one at a time,
content ids are the UUIDv5 that ``uuid.uuid5`` makes, and the duplicate test that only tries
packed term sets of nearly the same size answers as the one that tries them all.

Mirror only: ``recall_columns`` of Neo4j is the base class's conversion of its candidates; the
bundles both stores give are compared in tests/contract.
"""

from __future__ import annotations

import os
import random
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from uuid import uuid4

import orjson
import pytest

from graphsvc.model import Memory, MemoryInput
from graphsvc.recall import STAGES, rank_columns, score_candidates
from graphsvc.recall.bundle import _is_duplicate, _PackedTerms
from graphsvc.service import CONTENT_ID_NAMESPACE, content_id, content_ids
from graphsvc.store import journal
from graphsvc.store.candidates import CandidateColumns
from graphsvc.store.journal import isoformats
from graphsvc.store.mirror import MirrorStore
from graphsvc.store.mirror.rows import log_memory_row, log_memory_rows, memory_fields
from graphsvc.store.mirror.table import MemoryTable
from graphsvc.text import analyse, estimate_tokens, query_terms

BASE = datetime(2025, 1, 1, tzinfo=UTC)
# Few words, so that many memories share terms, scores tie and the limit cuts through ties.
WORDS = "kettle boiler pump valve meter filter sensor alarm backup disk cache queue".split()
NS = "alpha"


def make_memory(n: int, rng: random.Random) -> Memory:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
    return Memory(
        id=uuid4(),
        namespace=NS,
        text=text,
        kind="note",
        recorded_at=BASE + timedelta(seconds=n // 3),  # ties of recordedAt too
        occurred_at=None if n % 3 else BASE - timedelta(days=rng.randint(0, 900)),
        tags=(),
        source=None,
        confidence=rng.choice([1.0, 0.5, 0.25]),
        tokens=estimate_tokens(text),
        terms=tuple(analyse(text)),
    )


@pytest.fixture(scope="module")
def store() -> MirrorStore:
    rng = random.Random(5)
    opened = MirrorStore(None)
    opened.open()
    memories = [make_memory(n, rng) for n in range(1500)]
    for first in range(0, len(memories), 500):  # bulk-indexed batches
        opened.upsert_memories(NS, memories[first : first + 500], max_memories=10_000)
    for memory in memories[:40]:  # then rows one at a time, and holes
        opened.forget(NS, memory.id, at=BASE)
    opened.upsert_memories(NS, [make_memory(2000 + n, rng) for n in range(5)], max_memories=10_000)
    return opened


QUERIES = [
    "kettle",
    "pump valve",
    "alarm backup disk",
    "sensor sensor filter queue unknownword",
    "cache meter boiler kettle pump",
    "unknownword",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [1_000, 300, 40])  # 40 and 300: the newest-postings fallback
@pytest.mark.parametrize("ranked", [None, 1, 7, 50, 10_000])
def test_columns_rank_as_candidates(
    store: MirrorStore, query: str, limit: int, ranked: int | None
) -> None:
    terms = query_terms(query)
    stats, candidates = store.recall_candidates(NS, terms, limit)
    stats_c, columns = store.recall_columns(NS, terms, limit)
    assert stats_c == stats
    # The same candidates (the columns come in row order, the candidates by id or by recency).
    assert sorted(columns.ids, key=lambda i: i.int) == sorted(
        (c.id for c in candidates), key=lambda i: i.int
    )
    for stage in STAGES.values():
        for b in (0.75, 0.3):
            expected = score_candidates(terms, stats, candidates, stage, ranked, b)
            found = rank_columns(terms, stats, columns, stage, ranked, b)
            assert found == expected


def test_columns_of_candidates_round_trip(store: MirrorStore) -> None:
    terms = query_terms("pump valve alarm")
    _, candidates = store.recall_candidates(NS, terms, 1_000)
    columns = CandidateColumns.of(candidates, len(terms))
    assert [columns.candidate(i) for i in range(len(columns))] == candidates
    assert any(c.occurred_us is None for c in candidates)
    assert any(c.occurred_us is not None for c in candidates)


def test_the_limit_cuts_through_rounded_ties_as_a_full_sort_does() -> None:
    # Scores that differ below the sixth decimal round to the same value: the ranking among them
    # is by recordedAt then id, whichever unrounded score is larger, so the first ``limit`` of a
    # full sort may hold memories of a lower unrounded score than the limit-th best's.
    rng = random.Random(11)
    opened = MirrorStore(None)
    opened.open()
    text = "kettle pump"

    def tied(n: int) -> Memory:
        return Memory(
            id=uuid4(),
            namespace=NS,
            text=text,
            kind="note",
            recorded_at=BASE + timedelta(microseconds=rng.randint(0, 3)),
            occurred_at=None,
            tags=(),
            source=None,
            confidence=0.5 + rng.choice([0.0, 1e-9, 2e-9, 4e-7, 6e-7]),
            tokens=estimate_tokens(text),
            terms=tuple(analyse(text)),
        )

    memories = [tied(n) for n in range(200)]
    opened.upsert_memories(NS, memories, max_memories=10_000)
    terms = query_terms(text)
    stats, candidates = opened.recall_candidates(NS, terms, 1_000)
    _, columns = opened.recall_columns(NS, terms, 1_000)
    everything = rank_columns(terms, stats, columns, STAGES["default"])  # a full sort
    assert len(everything) == len(memories)
    for limit in (1, 5, 30, 99, 150):
        expected = everything[:limit]
        assert score_candidates(terms, stats, candidates, STAGES["default"], limit) == expected
        assert rank_columns(terms, stats, columns, STAGES["default"], limit) == expected
        if limit > 1:
            assert len({r.score for r in expected}) < len(expected)  # the cut is among ties


def test_add_columns_stores_what_add_stores() -> None:
    rng = random.Random(2)
    memories = [make_memory(n, rng) for n in range(300)]
    one, many = MemoryTable(NS), MemoryTable(NS)
    for memory in memories[:10]:
        one.add(memory)
        many.add(memory)
    for memory in memories[10:]:
        one.add(memory)
    columns = list(zip(*map(memory_fields, memories[10:]), strict=True))
    assert list(many.add_columns(columns)) == list(range(10, 300))
    for name in (
        "row_of",
        "ids",
        "keys",
        "texts",
        "kinds",
        "sources",
        "tags",
        "term_names",
        "term_numbers",
        "recorded",
        "occurred",
        "invalidated",
        "confidence",
        "tokens",
        "lengths",
        "term_start",
        "term_data",
    ):
        assert getattr(many, name) == getattr(one, name), name
    assert [many.memory(row) for row in many.rows()] == memories


def _reference_content_id(namespace: str, item: MemoryInput) -> uuid.UUID:
    occurred = item.occurred_at.isoformat() if item.occurred_at else None
    fields = (namespace, item.kind, item.text, occurred, item.source, *item.tags)
    name = "".join("-" if f is None else f"{len(f)}:{f}" for f in fields)
    return uuid.uuid5(CONTENT_ID_NAMESPACE, name)


def test_content_id_is_uuid5_of_the_length_prefixed_fields() -> None:
    rng = random.Random(4)
    alphabet = "ab -:é😀İ1"
    for _ in range(2_000):
        item = MemoryInput(
            text="".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) + "x",
            kind=rng.choice(["observation", "a:b", "k-1"]),
            occurred_at=rng.choice(
                [None, BASE + timedelta(microseconds=rng.randint(-(10**15), 10**15))]
            ),
            tags=tuple(rng.choice(["a", "b:c", "é"]) for _ in range(rng.randint(0, 3))),
            source=rng.choice([None, "", "s", "ü-x"]),
        )
        namespace = rng.choice(["n", "ns_1"])
        found, expected = content_id(namespace, item), _reference_content_id(namespace, item)
        assert found == expected
        assert (str(found), hash(found), found.version) == (str(expected), hash(expected), 5)
        # the item's own id plays no part in the id derived from its content
        assert content_id(namespace, item.model_copy(update={"id": uuid4()})) == expected


def test_duplicates_among_sets_of_near_size_are_all_duplicates() -> None:
    rng = random.Random(9)
    vocabulary = [f"t{n}" for n in range(14)]
    for _ in range(3_000):
        packed = _PackedTerms()
        sets = []
        for _ in range(rng.randint(0, 12)):
            terms = frozenset(rng.sample(vocabulary, rng.randint(0, 12)))
            sets.append(terms)
            packed.add(terms)
        probe = frozenset(rng.sample(vocabulary, rng.randint(0, 12)))
        assert packed.is_duplicate(probe) == _is_duplicate(probe, sets)
        assert packed.in_order == sets


def test_duplicates_of_near_copies_among_long_sets_are_those_of_the_reference() -> None:
    # Long sets (as a memory's terms are), each probe a packed set with a few terms swapped:
    # some are duplicates, most are ruled out after a few misses; the answer is the reference's.
    rng = random.Random(11)
    vocabulary = [f"w{n}" for n in range(400)]
    outcomes = set()
    for _ in range(2_000):
        packed = _PackedTerms()
        sets = []
        for _ in range(rng.randint(1, 15)):
            terms = frozenset(rng.sample(vocabulary, rng.randint(1, 40)))
            sets.append(terms)
            packed.add(terms)
        base = rng.choice(sets)
        swapped = rng.sample(sorted(base), rng.randint(0, len(base)))[: rng.randint(0, 6)]
        probe = (base - set(swapped)) | set(rng.sample(vocabulary, rng.randint(0, 6)))
        expected = _is_duplicate(frozenset(probe), sets)
        assert packed.is_duplicate(frozenset(probe)) == expected
        outcomes.add(expected)
    assert outcomes == {True, False}


def test_content_ids_of_a_batch_are_each_items_id() -> None:
    rng = random.Random(6)
    zones = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(seconds=-3725))]
    items = []
    for n in range(400):
        occurred = BASE + timedelta(microseconds=rng.randint(-(10**15), 10**15))
        items.append(
            MemoryInput(
                id=uuid4() if n % 5 == 0 else None,
                text=f"memory {n} é" if n % 2 else f"m {n}",
                occurred_at=rng.choice([None, occurred]),
                tags=("a", "b:c")[: n % 3],
                source=rng.choice([None, "", "s"]),
            )
        )
    # model_construct keeps a zone the validator would have converted to UTC
    items.append(
        MemoryInput.model_construct(
            id=None,
            text="zoned",
            kind="observation",
            tags=(),
            source=None,
            confidence=1.0,
            occurred_at=datetime(2020, 1, 1, 12, tzinfo=rng.choice(zones[1:])),
        )
    )
    for namespace in ("n", "ns_1"):
        assert content_ids(namespace, items) == [
            item.id or _reference_content_id(namespace, item) for item in items
        ]


def test_isoformats_are_isoformat_whatever_the_zone() -> None:
    rng = random.Random(7)
    for zone in (UTC, None, timezone(timedelta(hours=-3)), timezone(timedelta(seconds=4830))):
        times = [
            datetime(1, 1, 1) + timedelta(microseconds=rng.randrange(315_537_897_600_000_000))
            for _ in range(300)
        ]
        times = [
            t.replace(tzinfo=zone, microsecond=0 if n % 4 == 0 else t.microsecond)
            for n, t in enumerate(times)
        ]
        assert isoformats(times) == [t.isoformat() for t in times]
    assert isoformats([]) == []


def test_log_rows_of_a_batch_encode_as_the_row_of_each_memory() -> None:
    rng = random.Random(8)
    memories = [make_memory(n, rng) for n in range(200)]
    odd = timezone(timedelta(hours=2, seconds=30))  # orjson would round this offset
    zoned = [m.model_copy(update={"occurred_at": BASE.astimezone(odd)}) for m in memories[:3]]
    for batch in (memories, memories + zoned, zoned, []):
        fields = [memory_fields(m) for m in batch]
        rows = log_memory_rows(fields, list(zip(*fields, strict=True)))
        assert orjson.dumps(rows) == orjson.dumps([log_memory_row(m) for m in batch])


def test_a_frame_in_parts_is_the_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = {"op": "upsert", "ns": "a", "memories": [["x" * 70_000, 1]], "seq": 3}
    parts = journal.encode_parts(record)
    assert b"".join(parts) == journal.encode(record)
    writev = os.writev

    def short(fd: int, buffers: list[memoryview]) -> int:  # as a system that writes less
        return writev(fd, [bytes(b"".join(buffers)[:999])])

    monkeypatch.setattr(os, "writev", short)
    fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT)
    try:
        journal.write_all_parts(fd, parts)
    finally:
        os.close(fd)
    assert (tmp_path / "log").read_bytes() == journal.encode(record)
