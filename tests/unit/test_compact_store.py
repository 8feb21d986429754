"""The mirror's compact forms on disk and in memory: a store answers the same after a reopen from
the log alone, from a version-3 snapshot (binary columns) and from a version-2 snapshot (JSON rows,
what graphsvc wrote before), with holes left by forgets, evictions and erases; a damaged column
record is refused with the snapshot's hint; and a compaction written while writes go on holds the
state of its start.

Mirror only: the files and the columns are the embedded store's own; the behaviour both stores
share is in tests/contract.
"""

from __future__ import annotations

import base64
import gc
import random
import weakref
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import orjson
import pytest

from graphsvc.errors import StoreCorruptError
from graphsvc.model import EraseFilter, Link, LinkKind, Memory
from graphsvc.store import datadir, journal
from graphsvc.store.mirror import MirrorStore, loader
from graphsvc.store.mirror.links import (
    LinkGraph,
    LinkTuple,
    link_tuple_from_row,
    link_tuples_from_rows,
)
from graphsvc.store.mirror.rows import log_memory_row
from graphsvc.store.mirror.table import MemoryTable
from graphsvc.text import analyse, estimate_tokens

BASE = datetime(2025, 1, 1, tzinfo=UTC)
WORDS = "kettle boiler pump valve meter filter sensor alarm backup disk cache queue".split()
NS = "alpha"
OTHER = "beta"


def open_store(path: Path, **kwargs: Any) -> MirrorStore:
    store = MirrorStore(path, fsync=False, **kwargs)
    store.open()
    return store


def make_memory(ns: str, n: int, rng: random.Random) -> Memory:
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))) + f" item{n % 7}"
    return Memory(
        id=uuid4(),
        namespace=ns,
        text=text,
        kind=rng.choice(["note", "event", "fact"]),
        recorded_at=BASE + timedelta(seconds=n, microseconds=n * 7),
        occurred_at=None if n % 3 else BASE - timedelta(days=n, microseconds=3),
        invalidated_at=BASE + timedelta(days=400) if n % 11 == 0 else None,
        tags=tuple(rng.sample(["ops", "home", "x", "y"], rng.randint(0, 3))),
        source=None if n % 2 else f"src{n % 4}",
        confidence=rng.choice([1.0, 0.5, 0.123456789]),
        tokens=estimate_tokens(text),
        terms=tuple(analyse(text)),
    )


def populate(store: MirrorStore, count: int = 120, seed: int = 3) -> list[Memory]:
    """Memories in two namespaces, links of every kind (a self-link, notes, a replaced link),
    then holes: forgets, evictions past a cap and an erase by filter."""
    rng = random.Random(seed)
    kept: list[Memory] = []
    for ns in (NS, OTHER):
        memories = [make_memory(ns, n, rng) for n in range(count)]
        step = 40 if ns == NS else 100  # postings built row by row, and in bulk
        for first in range(0, count, step):
            store.upsert_memories(ns, memories[first : first + step], max_memories=10_000)
        links = [
            Link(
                source=memories[i].id,
                target=memories[(i * 7 + 1) % count].id,
                kind=list(LinkKind)[i % 3],
                weight=0.5 + i,
                created_at=BASE + timedelta(hours=i),
                note=f"note {i}" if i % 5 == 0 else None,
            )
            for i in range(count)
        ]
        links.append(
            Link(
                source=memories[5].id,
                target=memories[5].id,
                kind=LinkKind.RELATES_TO,
                created_at=BASE,
            )
        )
        links.append(
            Link(
                source=memories[9].id,
                target=memories[4].id,
                kind=LinkKind.SUPERSEDES,
                created_at=BASE,
            )
        )
        store.add_links(ns, links)
        store.add_links(ns, [links[1].model_copy(update={"weight": 9.0, "note": "again"})])
        for victim in memories[10:14]:
            store.forget(ns, victim.id, at=BASE)
        kept = memories
    store.upsert_memories(
        OTHER, [make_memory(OTHER, count + n, rng) for n in range(5)], max_memories=count - 10
    )
    store.erase(NS, EraseFilter(tag="home"), at=BASE, batch_size=100)
    return kept


def state(store: MirrorStore) -> dict[str, Any]:
    """Everything the reads say about both namespaces."""
    out: dict[str, Any] = {"namespaces": store.namespaces()}
    terms = sorted({t for w in [*WORDS, "item1", "item3"] for t in analyse(w)})
    for ns in (NS, OTHER):
        exported = list(store.export(ns))
        memories = [m for m in exported if isinstance(m, Memory)]
        ids = [m.id for m in memories]
        out[ns] = {
            "export": [item.to_json_dict() for item in exported],
            "stats": store.stats(ns).to_json_dict(),
            "term_stats": store.term_stats(ns, terms),
            "candidates": store.candidates(ns, terms[:3], terms),
            "recent": [store.recent_candidates(ns, t, 5, terms[:2]) for t in terms],
            "pages": [
                store.list_memories(
                    ns, after=None, limit=50, kind=kind, tag=tag, since=since, until=None
                )
                for kind in (None, "note")
                for tag in (None, "ops")
                for since in (None, BASE - timedelta(days=30))
            ],
            "walk": store.walk(ns, ids[:5], 2, 40),
            "links_of": store.links_of(ns, ids[:20]),
            "supersessions": store.supersessions(ns, ids),
            "get": store.get_memories(ns, list(reversed(ids))),
            "pending_vectors": store.pending_vectors(ns, 1000),
        }
    return out


@pytest.mark.parametrize("version", [None, 2, 3], ids=["log-only", "v2-rows", "v3-columns"])
def test_a_reopened_store_answers_the_same(tmp_path: Path, version: int | None) -> None:
    store = open_store(tmp_path)
    populate(store)
    if version is not None:
        store.snapshot(version=version)
    expected = state(store)
    store.close()
    if version is not None:
        snapshot = datadir.read_snapshot(tmp_path / journal.SNAPSHOT_NAME)
        assert snapshot.head.version == version
    reopened = open_store(tmp_path)
    try:
        assert state(reopened) == expected
        more = [make_memory(NS, 1000 + n, random.Random(n)) for n in range(3)]
        reopened.upsert_memories(NS, more, max_memories=10_000)
        reopened.forget(NS, more[0].id, at=BASE)
        expected = state(reopened)
    finally:
        reopened.close()
    again = open_store(tmp_path)
    try:
        assert state(again) == expected
    finally:
        again.close()


def test_a_version_2_snapshot_is_read_and_the_next_one_is_version_3(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    populate(store)
    store.snapshot(version=2)  # the format graphsvc wrote before the columns
    expected = state(store)
    store.close()
    store = open_store(tmp_path)
    try:
        assert state(store) == expected
        store.snapshot()
    finally:
        store.close()
    assert datadir.read_snapshot(tmp_path / journal.SNAPSHOT_NAME).head.version == 3
    store = open_store(tmp_path, read_only=True)
    try:
        assert state(store) == expected
    finally:
        store.close()


def _rewrite_record(path: Path, op: str, change: Any) -> None:
    """Change the first snapshot record with this ``op`` and give it a valid checksum again."""
    lines = path.read_bytes().split(b"\n")
    for index, line in enumerate(lines):
        if line and orjson.loads(line[18:]).get("op") == op:
            value = orjson.loads(line[18:])
            change(value)
            payload = orjson.dumps(value)
            lines[index] = b"%08x %08x %b" % (len(payload), zlib.crc32(payload), payload)
            path.write_bytes(b"\n".join(lines))
            return
    raise AssertionError(f"no {op} record")


def test_a_flipped_byte_in_a_column_record_is_refused_with_the_snapshot_hint(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path)
    populate(store)
    store.snapshot()
    store.close()
    path = tmp_path / journal.SNAPSHOT_NAME
    data = bytearray(path.read_bytes())
    at = data.index(b'"op":"columns"') + 60
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match=r"snapshot\.json:\d+.*checksum.*restore"):
        open_store(tmp_path)


def _row_out_of_range(value: dict[str, Any]) -> None:
    rows = bytearray(base64.b64decode(value["rows"]))
    rows[0:4] = (10**6).to_bytes(4, "little")
    value["rows"] = base64.b64encode(bytes(rows)).decode("ascii")


def _short_texts(value: dict[str, Any]) -> None:
    value["texts"] = value["texts"][1:]


def _unknown_kind(value: dict[str, Any]) -> None:
    value["kinds"] = base64.b64encode(b"\x09" * value["count"]).decode("ascii")


@pytest.mark.parametrize(
    ("op", "change"),
    [("postings", _row_out_of_range), ("columns", _short_texts), ("linkColumns", _unknown_kind)],
    ids=["posting-row", "texts", "link-kind"],
)
def test_a_column_record_that_verifies_but_does_not_fit_is_refused(
    tmp_path: Path, op: str, change: Any
) -> None:
    store = open_store(tmp_path)
    populate(store)
    store.snapshot()
    store.close()
    _rewrite_record(tmp_path / journal.SNAPSHOT_NAME, op, change)
    with pytest.raises(StoreCorruptError, match=r"snapshot\.json:\d+.*not a valid snapshot"):
        open_store(tmp_path)


def test_a_background_compaction_holds_the_state_of_its_start(tmp_path: Path) -> None:
    store = open_store(tmp_path, snapshot_bytes=1 << 40)
    memories = populate(store)
    before = state(store)
    store._log.snapshot_bytes = 1  # the next write starts a background compaction
    extra = make_memory(NS, 5000, random.Random(1))
    store.upsert_memories(NS, [extra], max_memories=10_000)
    assert store.compacting or store.wait_for_compaction()
    # Writes while it runs: removals clear columns in place, additions grow them.
    store._log.snapshot_bytes = 1 << 40
    store.forget(OTHER, memories[60].id, at=BASE)  # populate returns the memories of OTHER
    store.upsert_memories(NS, [make_memory(NS, 5001, random.Random(2))], max_memories=10_000)
    assert store.wait_for_compaction(60)
    expected = state(store)
    store.close()
    snapshot = datadir.read_snapshot(tmp_path / journal.SNAPSHOT_NAME)
    assert snapshot.head.version == 3
    reopened = open_store(tmp_path)
    try:
        assert state(reopened) == expected
        assert expected != before
    finally:
        reopened.close()


def test_rows_are_keyed_by_id_and_a_removed_row_is_a_hole(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    try:
        rng = random.Random(5)
        memories = [make_memory(NS, n, rng) for n in range(6)]
        store.upsert_memories(NS, memories, max_memories=100)
        store.forget(NS, memories[2].id, at=BASE)
        table = store._state.spaces[NS].memories
        assert len(table) == 5 and memories[2].id.int not in table
        assert table.ids[2] is None and len(table.ids) == 6
        assert store.get_memories(NS, [memories[2].id, memories[3].id, UUID(int=1)]) == [
            memories[3]
        ]
        for posting in store._state.spaces[NS].postings.values():
            assert 2 not in posting.rows and list(posting.rows) == sorted(posting.rows)
    finally:
        store.close()


def test_postings_built_in_bulk_equal_those_built_row_by_row() -> None:
    rng = random.Random(11)
    memories = [make_memory(NS, n, rng) for n in range(300)]
    one_by_one, bulk = MirrorStore(None), MirrorStore(None)
    for store in (one_by_one, bulk):
        store.open()
    for memory in memories:
        one_by_one.upsert_memories(NS, [memory], max_memories=10_000)
    bulk.upsert_memories(NS, memories, max_memories=10_000)

    def postings(store: MirrorStore) -> dict[str, tuple[list[int], list[int]]]:
        found = store._state.spaces[NS].postings
        return {term: (list(p.rows), list(p.tfs)) for term, p in found.items()}

    assert postings(bulk) == postings(one_by_one)
    assert any(max(tfs) > 1 for _, tfs in postings(bulk).values())
    for store in (one_by_one, bulk):
        store.close()


def test_links_added_in_a_batch_equal_those_added_one_by_one() -> None:
    """What a load does with a record's links (:meth:`LinkGraph.add_many`) is what adding them
    one by one does: the same lists in the same order, repeats in one batch and across batches
    replaced in place, self-links, the same count."""
    rng = random.Random(5)
    keys = [rng.getrandbits(128) for _ in range(30)]
    kinds = [kind.value for kind in LinkKind]
    batches: list[list[LinkTuple]] = [
        [
            (rng.choice(keys), rng.choice(keys[:8]), rng.choice(kinds), float(n), n, None)
            for n in range(size)
        ]
        for size in (1, 200, 60, 3)
    ]
    batches[1].append((keys[0], keys[0], kinds[0], 1.0, 1, "self"))
    batches[2].append((*batches[1][7][:3], 42.0, 9, "again"))
    one_by_one, batched = LinkGraph(), LinkGraph()
    for batch in batches:
        for link in batch:
            one_by_one.add(link)
        batched.add_many(batch)
    assert batched.out == one_by_one.out and batched.inn == one_by_one.inn
    assert list(batched.out) == list(one_by_one.out) and list(batched.inn) == list(one_by_one.inn)
    assert batched.count == one_by_one.count == sum(map(len, one_by_one.out.values()))
    assert batched.count < sum(map(len, batches))  # some were replaced

    def superseded(graph: LinkGraph) -> dict[int, int]:
        counts = {
            key: sum(lk[2] == "SUPERSEDES" for lk in links) for key, links in graph.inn.items()
        }
        return {key: n for key, n in counts.items() if n}

    assert batched.superseded == one_by_one.superseded == superseded(one_by_one)
    assert batched.superseded  # the batches hold SUPERSEDES links
    for key in (keys[0], keys[3], *keys[10:20]):  # a self-link's end, targets, sources
        batched.remove_node(key)
        assert batched.superseded == superseded(batched)


def test_link_rows_read_in_a_batch_equal_those_read_one_by_one() -> None:
    rows: list[list[Any]] = [
        [
            str(uuid4()),
            str(uuid4()),
            kind.value,
            0.5 * n,
            (BASE + timedelta(hours=n % 3)).isoformat(),
            None if n % 2 else f"note {n}",
        ]
        for n, kind in enumerate(list(LinkKind) * 4)
    ]
    rows.append([rows[0][1], rows[0][0].upper(), "RELATES_TO", 1, BASE.isoformat(), None])
    assert link_tuples_from_rows(rows) == [link_tuple_from_row(row) for row in rows]
    with pytest.raises(ValueError, match="not a link row"):
        link_tuples_from_rows([*rows, [rows[0][0], rows[0][1], "NOT_A_KIND", 1.0, "x", None]])


def test_a_large_load_freezes_its_objects_and_a_dropped_store_is_still_freed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``FREEZE_AFTER`` objects a load freezes them (the collector's later passes skip
    them); a small load does not. A frozen store that is closed and dropped is still freed by
    reference counting: its tables hold no reference cycle."""
    store = open_store(tmp_path)
    populate(store)
    store.snapshot()
    expected = state(store)
    store.close()
    del store
    gc.collect()
    frozen = gc.get_freeze_count()
    small = open_store(tmp_path)
    assert gc.get_freeze_count() == frozen  # a hundred memories stay with the collector
    small.close()
    del small
    monkeypatch.setattr(loader, "FREEZE_AFTER", 100)
    try:
        large = open_store(tmp_path)
        assert gc.get_freeze_count() > frozen + 100
        assert state(large) == expected
        large.close()
        table = weakref.ref(large._state.spaces[NS].memories)
        del large
        assert table() is None  # freed without a collection
    finally:
        gc.unfreeze()


def test_memory_rows_added_in_a_batch_equal_those_added_one_by_one() -> None:
    """A log record's memories replayed as one batch (``add_rows``) give the columns and term
    numbers that adding its rows one by one gives."""
    rng = random.Random(9)
    rows = [log_memory_row(make_memory(NS, n, rng)) for n in range(80)]
    one_by_one, batched = MemoryTable(NS), MemoryTable(NS)
    for first in (0, 30):
        chunk = rows[first : first + 30] if first == 0 else rows[first:]
        for row in chunk:
            one_by_one.add_row(row)
        assert batched.add_rows(chunk) == range(first, first + len(chunk))
    assert batched.add_rows([]) == range(len(rows), len(rows))
    for name in (
        "row_of",
        "ids",
        "keys",
        "texts",
        "kinds",
        "sources",
        "tags",
        "recorded",
        "occurred",
        "invalidated",
        "confidence",
        "tokens",
        "lengths",
        "term_start",
        "term_data",
        "term_names",
        "term_numbers",
    ):
        assert getattr(batched, name) == getattr(one_by_one, name), name
    assert [batched.row_form(r) for r in range(len(rows))] == rows
    bad = [*rows[:2], [*rows[2][:1], None, *rows[2][2:]]]
    with pytest.raises(TypeError, match="not a memory row"):
        MemoryTable(NS).add_rows(bad)
