"""The bulk path for a first load (``graphsvc bulk-export FILE DIR``, then
``scripts/neo4j.sh import DIR``: Neo4j's offline batch importer) gives exactly the store a normal
``graphsvc import`` of the same file gives.

A second Neo4j of this module (the bundled launcher, its own home and free ports; the shared server
``GRAPHSVC_NEO4J_URI`` names is never stopped) is loaded by the importer, started, opened by the
store (which makes its constraints and indexes and waits until they are online), and compared with
a normal import of the same file, with the same clock, into the shared server: the export, every
node and relationship property (with its type, and times as Neo4j prints them), a bundle and a
reconstruct, byte for byte. A bad file stops with the line named and writes nothing; an import into
a running server is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import neo4j
import pytest

from graphsvc.cli.bulk import bulk_files
from graphsvc.errors import BadInputError
from graphsvc.ingest import export_lines, ingest, parse_jsonl
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.neo4j import Neo4jStore
from graphsvc_lab.bench import make_corpus
from graphsvc_lab.own_neo4j import LAUNCHER, OwnNeo4j
from tests.helpers import fixed_clock
from tests.neo4j_server import neo4j_store_factory

QUERIES = ("why did checkout payments time out", "database pool exhausted", "payments")


def export_file(n: int = 300) -> list[str]:
    """What an export of a busy namespace looks like, with what CSV makes hard: text over two
    lines with quotes and commas, a tag holding ';', an empty source, a text with no analysed
    term, memories without tags, a repeated memory, a repeated link (the last weight and note
    win), links of every kind (a SUPERSEDES chain without a cycle)."""
    corpus = make_corpus(7, n, 1, 400, 1.5)
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"bulk/{i}")) for i in range(n)]
    rows: list[dict[str, Any]] = []
    for i in range(n):
        item = corpus.memory(i)
        row: dict[str, Any] = {"type": "memory", "id": ids[i], "text": item.text, "kind": item.kind}
        if i % 3 == 0:
            row["occurredAt"] = f"2024-0{1 + i % 9}-1{i % 10}T08:00:{i % 60:02d}.25+02:00"
        if i % 4 == 0:
            row["tags"] = ["alpha", f"t;{i % 5}"]
        if i % 5 == 0:
            row["source"] = "" if i % 10 == 0 else f"doc-{i % 7}"
        if i % 6 == 0:
            row["confidence"] = 0.1 + (i % 5) / 10
        rows.append(row)
    rows[1]["text"] = 'Checkout "payments" timed out,\nthe database pool was exhausted'
    rows[2]["text"] = "!!! ..."
    rows.append(dict(rows[7]))
    rows.append({"type": "memory", "text": "payments were retried, with no id given"})
    seen: set[tuple[int, int]] = set()
    for a, b, kind in corpus.links:
        if a != b and (a, b) not in seen and kind.value != "SUPERSEDES":
            seen.add((a, b))
            rows.append({"type": "link", "source": ids[a], "target": ids[b], "kind": kind.value})
    rows.append(
        {"type": "link", "source": ids[1], "target": ids[2], "kind": "CAUSES", "weight": 0.25}
    )
    rows.append(
        {
            "type": "link",
            "source": ids[1],
            "target": ids[2],
            "kind": "CAUSES",
            "weight": 0.75,
            "note": 'the last "line",\nwins',
        }
    )
    for i in range(6, min(60, n), 6):
        rows.append({"type": "link", "source": ids[i], "target": ids[i - 3], "kind": "SUPERSEDES"})
    return [json.dumps(row, ensure_ascii=False) + "\n" for row in rows]


class Second(OwnNeo4j):
    """The module's own Neo4j: the bulk import's target."""

    def launcher_args(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``scripts/neo4j.sh ARGS...`` for this server (``import DIR``)."""
        env = dict(os.environ)
        env.update(
            GRAPHSVC_NEO4J_HOME=str(self.home),
            GRAPHSVC_NEO4J_HOST="127.0.0.1",
            GRAPHSVC_NEO4J_BOLT_PORT=str(self.bolt_port),
            GRAPHSVC_NEO4J_HTTP_PORT=str(self.http_port),
            GRAPHSVC_NEO4J_HEAP=self.heap,
            GRAPHSVC_NEO4J_PAGECACHE="64m",
        )
        return subprocess.run(
            ["bash", str(LAUNCHER), *args],
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
            env=env,
        )


def props(session: neo4j.Session, query: str, ns: str) -> list[Any]:
    """Rows of (what, properties, their types, the times as Neo4j prints them), sorted."""
    rows = session.run(query, ns=ns).data()
    for row in rows:  # keys come in the order the store keeps them
        row["types"], row["times"] = sorted(row["types"]), sorted(row["times"])
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in rows)


def same(bulk: list[Any], normal: list[Any], what: str) -> None:
    """The rows are equal, or fail showing the first that differs, whole."""
    for a, b in zip(bulk, normal, strict=False):
        assert a == b, f"{what} differ:\n bulk:   {a}\n normal: {b}"
    assert len(bulk) == len(normal), f"{len(bulk)} {what} after the bulk import, {len(normal)}"


NODES = """
MATCH (n) WHERE n.namespace = $ns
RETURN labels(n) AS labels, properties(n) AS props,
       [k IN keys(n) | [k, valueType(n[k])]] AS types,
       [k IN keys(n) WHERE valueType(n[k]) STARTS WITH 'ZONED' | [k, toString(n[k])]] AS times
"""
RELATIONSHIPS = """
MATCH (a:Memory)-[r]->(b:Memory) WHERE a.namespace = $ns
RETURN a.id AS source, b.id AS target, type(r) AS type, properties(r) AS props,
       [k IN keys(r) | [k, valueType(r[k])]] AS types,
       [k IN keys(r) WHERE valueType(r[k]) STARTS WITH 'ZONED' | [k, toString(r[k])]] AS times
"""


@pytest.fixture
def shared() -> Iterator[MemoryService]:
    """A service on the shared server (GRAPHSVC_NEO4J_URI), with the tests' clock."""
    store = neo4j_store_factory()()
    store.open()
    service = MemoryService(store, Settings(fsync=False), clock=fixed_clock())
    yield service
    service.close()


@pytest.mark.neo4j
def test_a_bulk_import_gives_the_store_a_normal_import_gives(
    shared: MemoryService, tmp_path: Path
) -> None:
    ns = f"bulk{uuid.uuid4().hex[:12]}"
    lines = export_file()
    files = bulk_files(lines, ns, tmp_path / "files", Settings(fsync=False), clock=fixed_clock())
    assert (files.memories, files.multiline) == (301, ("memories.csv", "links.csv"))
    ingest(shared, ns, parse_jsonl(lines), progress=False)
    second = Second(tmp_path / "home", heap="512m", timeout=300)
    try:
        done = second.launcher_args("import", str(files.directory))
        assert done.returncode == 0, f"the bulk import failed:\n{done.stdout}\n{done.stderr}"
        started = second.launcher("start")
        if started.returncode != 0:  # loud: under CI=true this must run
            pytest.fail(f"the second Neo4j did not start:\n{started.stdout}\n{started.stderr}")
        refused = second.launcher_args("import", str(files.directory))
        assert refused.returncode == 3
        assert "refused: the server of" in refused.stderr and "is running" in refused.stderr

        store = Neo4jStore(second.uri)
        store.open()  # makes the constraints and indexes, and waits until they are online
        bulk = MemoryService(store, Settings(fsync=False), clock=fixed_clock())
        try:
            with neo4j.GraphDatabase.driver(second.uri) as driver, driver.session() as session:
                indexes = session.run(
                    "SHOW INDEXES YIELD name, state, populationPercent RETURN *"
                ).data()
                assert {"memory_terms", "memory_namespace_id"} <= {i["name"] for i in indexes}
                assert all(i["state"] == "ONLINE" for i in indexes), indexes
                assert all(i["populationPercent"] == 100.0 for i in indexes), indexes
                theirs = (props(session, NODES, ns), props(session, RELATIONSHIPS, ns))
            assert (
                isinstance(shared.store, Neo4jStore) and shared.store.boundary._driver is not None
            )
            with shared.store.boundary._driver.session() as session:
                ours = (props(session, NODES, ns), props(session, RELATIONSHIPS, ns))
            assert len(theirs[0]) > 301 and len(theirs[1]) > 100
            same(theirs[0], ours[0], "nodes")
            same(theirs[1], ours[1], "relationships")
            assert list(export_lines(bulk, ns)) == list(export_lines(shared, ns))
            for query in QUERIES:
                a = json.dumps(bulk.bundle(ns, query).to_json_dict(), sort_keys=True)
                b = json.dumps(shared.bundle(ns, query).to_json_dict(), sort_keys=True)
                assert a == b
                a = json.dumps(bulk.reconstruct(ns, query).to_json_dict(), sort_keys=True)
                b = json.dumps(shared.reconstruct(ns, query).to_json_dict(), sort_keys=True)
                assert a == b
        finally:
            bulk.close()
    finally:
        if second.running():
            second.kill()  # its data is thrown away
        shared.erase(ns, everything=True)


def test_a_bad_file_names_the_line_and_writes_nothing(tmp_path: Path) -> None:
    good = export_file(20)
    settings = Settings(fsync=False)
    malformed = [*good[:3], '{"type": "memory", "text": \n', *good[3:]]
    with pytest.raises(BadInputError, match=r"^export\.jsonl:4: not valid JSON"):
        bulk_files(malformed, "ns", tmp_path / "out", settings, name="export.jsonl")
    dangling = [
        *good,
        json.dumps(
            {
                "type": "link",
                "source": str(uuid.uuid4()),
                "target": str(uuid.uuid4()),
                "kind": "CAUSES",
            }
        ),
    ]
    with pytest.raises(BadInputError, match=rf"^export\.jsonl:{len(dangling)}: link names memory"):
        bulk_files(dangling, "ns", tmp_path / "out", settings, name="export.jsonl")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep").write_text("x")
    with pytest.raises(BadInputError, match="is not an empty directory"):
        bulk_files(good, "ns", tmp_path / "out", settings)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep"]
