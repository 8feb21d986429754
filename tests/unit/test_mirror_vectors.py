"""The mirror's vectors on disk and in memory: every vector write is one durable log record (an
upsert's vectors in the record of its memories), the snapshot holds them compactly, old data
directories load without vectors, repair keeps vector records, a compaction writes the vectors as
they were when it started while writes go on, and the search table stays consistent through
growth, deletes and shrinking.

Mirror only: the files and the table are the embedded store's own; the behaviour both stores share
is in tests/contract/test_vectors.py.
"""

from __future__ import annotations

import base64
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import numpy as np
import pytest

from graphsvc.embedding.codes import VectorModel, cosines, quantize, squared_norms, to_bytes, top_k
from graphsvc.errors import StoreCorruptError
from graphsvc.model import EraseFilter, Memory
from graphsvc.store import datadir, journal
from graphsvc.store.mirror import MirrorStore
from graphsvc.store.mirror.vectors import MIN_CAPACITY, VectorTable
from graphsvc.store.repair import repair
from graphsvc.text import analyse, estimate_tokens

BASE = datetime(2025, 1, 1, tzinfo=UTC)
DIM = 384
MODEL = VectorModel("test-encoder-384", DIM)
SMALL = VectorModel("test-encoder-16", 16)
CAP = 100_000


def memory(ns: str, n: int, *, tag: str = "t") -> Memory:
    text = f"memory number {n} about vectors"
    return Memory(
        id=uuid4(),
        namespace=ns,
        text=text,
        kind="note",
        recorded_at=BASE + timedelta(seconds=n),
        tags=(tag,),
        tokens=estimate_tokens(text),
        terms=tuple(analyse(text)),
    )


def random_codes(count: int, seed: int, dimension: int = DIM) -> list[bytes]:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((count, dimension)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return [to_bytes(row) for row in quantize(rows)]


def open_store(path: Path, **kwargs: Any) -> MirrorStore:
    store = MirrorStore(path, fsync=False, **kwargs)
    store.open()
    return store


def vector_state(store: MirrorStore, namespaces: tuple[str, ...]) -> dict[str, Any]:
    """Everything the vector methods say about each namespace (similar on a few queries)."""
    queries = random_codes(3, 999)
    out: dict[str, Any] = {}
    for ns in namespaces:
        model = store.vector_model(ns)
        out[ns] = {
            "model": model,
            "count": store.vector_count(ns),
            "without": [m.id for m in store.pending_vectors(ns, CAP)],
            "similar": [
                store.similar(ns, q[: model.dimension], 1000, []) if model else None
                for q in queries
            ],
            "stats": store.stats(ns),
        }
    out["namespaces"] = store.namespaces()
    return out


def log_records(data_dir: Path) -> list[dict[str, Any]]:
    scan = journal.scan_file(data_dir / journal.LOG_NAME)
    records: list[dict[str, Any]] = [frame.record() for frame in scan.frames[1:]]
    return records


def populate(store: MirrorStore) -> None:
    """Every kind of vector write, in two namespaces of two dimensions."""
    store.set_vector_model("alpha", MODEL)
    store.set_vector_model("beta", SMALL)
    alpha = [memory("alpha", n, tag="even" if n % 2 == 0 else "odd") for n in range(40)]
    codes = random_codes(60, 1)
    store.upsert_memories(
        "alpha", alpha, max_memories=CAP, vectors={m.id: codes[i] for i, m in enumerate(alpha[:30])}
    )
    store.set_vectors("alpha", {alpha[30].id: codes[30], alpha[0].id: codes[55]})
    store.forget("alpha", alpha[1].id, at=BASE)
    store.erase(
        "alpha", EraseFilter(tag="even", until=BASE + timedelta(seconds=6)), at=BASE, batch_size=10
    )
    beta = [memory("beta", n) for n in range(10)]
    small = random_codes(10, 2, dimension=16)
    store.upsert_memories(
        "beta", beta, max_memories=CAP, vectors={m.id: small[i] for i, m in enumerate(beta)}
    )
    assert store.clear_vectors("beta", 4) == 4
    store.set_vector_model("gamma", MODEL)  # a model, no memory


NAMESPACES = ("alpha", "beta", "gamma")


# -- the log -------------------------------------------------------------------------------------


def test_an_upsert_and_its_vectors_are_one_record(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = open_store(data_dir)
    store.set_vector_model("alpha", MODEL)
    batch = [memory("alpha", n) for n in range(3)]
    codes = random_codes(3, 5)
    store.upsert_memories(
        "alpha", batch, max_memories=CAP, vectors={batch[0].id: codes[0], batch[2].id: codes[2]}
    )
    store.close()
    model_record, upsert = log_records(data_dir)
    assert model_record == {
        "op": "vectorModel",
        "ns": "alpha",
        "model": {"id": MODEL.model_id, "dimension": DIM},
        "seq": 1,
    }
    assert upsert["op"] == "upsert" and len(upsert["memories"]) == 3
    assert upsert["vectors"] == [
        [str(batch[0].id), base64.b64encode(codes[0]).decode()],
        [str(batch[2].id), base64.b64encode(codes[2]).decode()],
    ]


def test_every_vector_write_survives_a_reopen(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = open_store(data_dir)
    populate(store)
    before = vector_state(store, NAMESPACES)
    store.close()
    ops = [record["op"] for record in log_records(data_dir)]
    assert {"vectorModel", "vectors", "clearVectors", "upsert", "forget", "erase"} <= set(ops)
    assert before["alpha"]["count"] == 27  # 30 + 1 set, less a forgotten one and 3 erased
    assert before["beta"]["count"] == 6
    assert before["gamma"]["model"] == MODEL and before["namespaces"] == ["alpha", "beta"]

    store = open_store(data_dir)
    try:
        assert vector_state(store, NAMESPACES) == before
    finally:
        store.close()
    reader = open_store(data_dir, read_only=True)
    try:
        assert vector_state(reader, NAMESPACES) == before
    finally:
        reader.close()


def test_the_snapshot_holds_the_vectors_compactly_and_the_log_continues_it(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    store = open_store(data_dir)
    populate(store)
    store.snapshot()
    frames = [f.record() for f in datadir.read_snapshot(data_dir / journal.SNAPSHOT_NAME).frames]
    vectors = [f for f in frames if f["op"] == "vectors"]
    assert {f["ns"] for f in vectors} == {"alpha", "beta"}
    alpha = next(f for f in vectors if f["ns"] == "alpha")
    assert len(base64.b64decode(alpha["codes"])) == 27 * DIM  # one byte per code
    assert len(base64.b64decode(alpha["ids"])) == 27 * 16
    models = {f["ns"]: f["model"] for f in frames if f["op"] == "vectorModel"}
    assert models == {
        "alpha": {"id": MODEL.model_id, "dimension": DIM},
        "beta": {"id": SMALL.model_id, "dimension": 16},
        "gamma": {"id": MODEL.model_id, "dimension": DIM},
    }
    # After the snapshot: more writes in the new log segment.
    extra = memory("alpha", 500)
    store.upsert_memories(
        "alpha", [extra], max_memories=CAP, vectors={extra.id: random_codes(1, 7)[0]}
    )
    store.set_vector_model("beta", None)
    before = vector_state(store, NAMESPACES)
    store.close()

    store = open_store(data_dir)
    try:
        assert vector_state(store, NAMESPACES) == before
        assert store.vector_model("beta") is None and store.vector_count("beta") == 6
        store.snapshot()  # a snapshot of vectors without a model (being replaced)
    finally:
        store.close()
    store = open_store(data_dir)
    try:
        assert vector_state(store, NAMESPACES) == before
    finally:
        store.close()


def test_a_snapshot_of_many_vectors_comes_in_chunks(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = open_store(data_dir)
    store.set_vector_model("alpha", SMALL)
    batch = [memory("alpha", n) for n in range(2500)]
    codes = random_codes(len(batch), 8, dimension=16)
    store.upsert_memories(
        "alpha",
        batch,
        max_memories=CAP,
        vectors=dict(zip([m.id for m in batch], codes, strict=True)),
    )
    query = codes[17]
    before = store.similar("alpha", query, 50, [batch[2000].id])
    store.snapshot()
    store.close()
    frames = [f.record() for f in datadir.read_snapshot(data_dir / journal.SNAPSHOT_NAME).frames]
    assert [len(base64.b64decode(f["ids"])) // 16 for f in frames if f["op"] == "vectors"] == [
        1000,
        1000,
        500,
    ]
    store = open_store(data_dir)
    try:
        assert store.similar("alpha", query, 50, [batch[2000].id]) == before
        assert store.vector_count("alpha") == 2500
    finally:
        store.close()


def test_data_without_vector_records_loads_without_vectors(tmp_path: Path) -> None:
    """A log and a snapshot written before vectors existed: upserts without a ``vectors`` field,
    no vector record or frame."""
    data_dir = tmp_path / "data"
    store = open_store(data_dir)
    store.upsert_memories("alpha", [memory("alpha", n) for n in range(3)], max_memories=CAP)
    store.snapshot()
    store.upsert_memories("alpha", [memory("alpha", 10)], max_memories=CAP)
    store.close()
    assert all("vectors" not in record for record in log_records(data_dir))
    snapshot = (data_dir / journal.SNAPSHOT_NAME).read_bytes()
    assert b'"op":"vector' not in snapshot
    store = open_store(data_dir)
    try:
        assert store.vector_model("alpha") is None
        assert store.vector_count("alpha") == 0
        assert len(store.pending_vectors("alpha", 10)) == 4
        assert store.similar("alpha", random_codes(1, 3)[0], 5, []) == []
    finally:
        store.close()


def test_a_vector_record_that_verifies_but_does_not_fit_is_damage(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = open_store(data_dir)
    store.set_vector_model("alpha", MODEL)
    kept = memory("alpha", 1)
    store.upsert_memories("alpha", [kept], max_memories=CAP)
    store.close()
    (data_dir / journal.CLEAN_NAME).unlink()
    short = base64.b64encode(random_codes(1, 4)[0][:100]).decode()
    record = {"op": "vectors", "ns": "alpha", "vectors": [[str(kept.id), short]], "seq": 3}
    later = {"op": "forget", "ns": "alpha", "id": str(kept.id), "seq": 4}
    with open(data_dir / journal.LOG_NAME, "ab") as log:
        log.write(journal.encode(record) + journal.encode(later))
    with pytest.raises(StoreCorruptError, match=r"log\.jsonl:4 .*100 codes.*dimension 384"):
        open_store(data_dir)
    report = repair(data_dir)
    assert report.kept_seq == (1, 2) and report.cut_records == 1
    store = open_store(data_dir)
    try:
        assert [m.id for m in store.get_memories("alpha", [kept.id])] == [kept.id]
        assert store.vector_count("alpha") == 0
    finally:
        store.close()


def test_repair_keeps_the_vector_records_before_the_damage(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = open_store(data_dir)
    populate(store)
    before = vector_state(store, NAMESPACES)
    store.set_vector_model("beta", None)
    store.close()
    log = data_dir / journal.LOG_NAME
    data = bytearray(log.read_bytes())
    at = data.rindex(b'"op":"vectorModel"')  # the last record: beta's model set to None
    data[at + 8] ^= 0x01
    log.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptError, match="checksum"):
        open_store(data_dir)
    report = repair(data_dir)
    assert report.cut_records == 0 and report.kept_records == len(log_records(data_dir))
    store = open_store(data_dir)
    try:
        assert vector_state(store, NAMESPACES) == before
    finally:
        store.close()


# -- compaction while writes go on ----------------------------------------------------------------


def test_a_compaction_writes_the_vectors_as_they_were_when_it_started(tmp_path: Path) -> None:
    store = open_store(tmp_path / "data")
    store.set_vector_model("alpha", SMALL)
    batch = [memory("alpha", n) for n in range(40)]
    codes = random_codes(50, 9, dimension=16)
    store.upsert_memories(
        "alpha", batch, max_memories=CAP, vectors={m.id: codes[i] for i, m in enumerate(batch)}
    )
    with store._log.lock:
        capture = store._log.capture()
    (share,) = [share for _, _, share in capture.vectors if share is not None]
    frozen = (list(share.ids), share.codes(0, len(share.ids)))
    assert frozen[1] == b"".join(codes[i] for i in range(40))
    # Changes of shared rows in place: a forget moves the last row into row 0, a replacement.
    store.forget("alpha", batch[0].id, at=BASE)
    store.set_vectors("alpha", {batch[5].id: codes[45]})
    store.upsert_memories("alpha", [memory("alpha", 99)], max_memories=CAP)
    assert store.clear_vectors("alpha", 3) == 3
    assert (share.ids, share.codes(0, len(share.ids))) == frozen
    # Once the snapshot is written, rows change in place again (no more copies).
    capture.release()
    table = store._state.spaces["alpha"].vectors
    assert table is not None
    matrix = table._matrix
    store.forget("alpha", batch[10].id, at=BASE)
    store.set_vectors("alpha", {batch[11].id: codes[46]})
    assert table._matrix is matrix
    store.close()


# -- the table -------------------------------------------------------------------------------------


def check_table(table: VectorTable, truth: dict[UUID, bytes]) -> None:
    assert len(table) == len(truth) == len(table.rows)
    assert table.matrix.shape == (len(truth), table.dimension)
    assert {mid.int: row for row, mid in enumerate(table.ids)} == table.rows
    codes = np.frombuffer(b"".join(truth[mid] for mid in table.ids), dtype=np.int8)
    codes = codes.reshape(len(truth), table.dimension)
    assert np.array_equal(table.matrix, codes.astype(np.float32))
    assert np.array_equal(table.norms, squared_norms(codes))
    capacity = table._matrix.shape[0]
    assert capacity >= len(truth)
    assert capacity == MIN_CAPACITY or len(truth) > capacity // 4


def test_the_table_stays_consistent_through_growth_deletes_and_shrinking() -> None:
    rng = random.Random(11)
    table = VectorTable(16)
    truth: dict[UUID, bytes] = {}
    pool = random_codes(400, 12, dimension=16)
    for step in range(400):
        if step < 150 or rng.random() < 0.45:
            count = rng.randint(1, 12)
            known = list(truth)
            ids = [
                rng.choice(known) if known and rng.random() < 0.3 else uuid4() for _ in range(count)
            ]
            ids = list(dict.fromkeys(ids))
            codes = [rng.choice(pool) for _ in ids]
            table.put(ids, np.frombuffer(b"".join(codes), dtype=np.int8).reshape(len(ids), 16))
            truth.update(zip(ids, codes, strict=True))
        elif truth:
            doomed = rng.choice(list(truth))
            assert table.remove(doomed.int)
            del truth[doomed]
            assert not table.remove(doomed.int)
        check_table(table, truth)
    for mid in list(truth):
        table.remove(mid.int)
        del truth[mid]
        check_table(table, truth)
    assert table._matrix.shape[0] == MIN_CAPACITY


def test_similar_is_one_product_over_the_namespace() -> None:
    """The mirror answers from its table with cosines' exact arithmetic, after any history
    of writes and deletes (swapped rows)."""
    store = MirrorStore(None)
    store.open()
    store.set_vector_model("alpha", MODEL)
    batch = [memory("alpha", n) for n in range(300)]
    codes = random_codes(301, 13)
    vectors = {m.id: codes[i] for i, m in enumerate(batch)}
    store.upsert_memories("alpha", batch, max_memories=CAP, vectors=vectors)
    for m in batch[::3]:
        store.forget("alpha", m.id, at=BASE)
        del vectors[m.id]
    order = sorted(vectors, key=str)
    matrix = np.stack([np.frombuffer(vectors[i], dtype=np.int8) for i in order])
    query = np.frombuffer(codes[300], dtype=np.int8)
    scores = cosines(query, matrix)
    assert store.similar("alpha", codes[300], 20, []) == top_k(order, scores, 20)
    store.close()
