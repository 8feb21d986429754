"""``graphsvc export`` and ``graphsvc import`` move a namespace between the stores, both ways."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphsvc.cli import cli
from tests.neo4j_server import neo4j_store_factory

pytestmark = pytest.mark.neo4j


def rows(scope: str) -> list[dict[str, object]]:
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"{scope}/{i}")) for i in range(4)]
    memories: list[dict[str, object]] = [
        {
            "type": "memory",
            "id": ids[i],
            "text": text,
            "kind": "event",
            "occurredAt": f"2024-06-0{i + 1}T08:00:00Z",
            "tags": ["plant"],
            "source": "test",
        }
        for i, text in enumerate(
            [
                "The cooling pump tripped",
                "Reactor temperature rose",
                "Operators started the backup pump",
                "The old pump runbook is wrong",
            ]
        )
    ]
    links: list[dict[str, object]] = [
        {"type": "link", "source": ids[0], "target": ids[1], "kind": "CAUSES", "weight": 1.0},
        {"type": "link", "source": ids[1], "target": ids[2], "kind": "CAUSES", "weight": 0.5,
         "note": "manual"},
        {"type": "link", "source": ids[3], "target": ids[2], "kind": "RELATES_TO", "weight": 1.0},
    ]  # fmt: skip
    return memories + links


def test_mirror_to_neo4j_and_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    neo4j_store_factory()  # skips loudly when there is no server
    uri = os.environ["GRAPHSVC_NEO4J_URI"]
    ns = f"move{uuid.uuid4().hex[:8]}"
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows(ns)), encoding="utf-8")
    runner = CliRunner()

    def on_mirror(*args: str) -> str:
        monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
        result = runner.invoke(cli, [*args, "--data-dir", str(tmp_path / "m"), "--namespace", ns])
        assert result.exit_code == 0, result.output
        return result.stdout

    def on_neo4j(*args: str) -> str:
        monkeypatch.setenv("GRAPHSVC_NEO4J_URI", uri)
        result = runner.invoke(cli, [*args, "--namespace", ns])
        assert result.exit_code == 0, result.output
        return result.stdout

    on_mirror("ingest", str(source))
    from_mirror = on_mirror("export")
    pushed = tmp_path / "pushed.jsonl"
    pushed.write_text(from_mirror, encoding="utf-8")
    on_neo4j("import", str(pushed))
    from_neo4j = on_neo4j("export")
    assert from_neo4j == from_mirror
    assert len(from_neo4j.splitlines()) == 7

    # Back again into a fresh mirror: the same rows, and the same bundle on all three.
    back = tmp_path / "back.jsonl"
    back.write_text(from_neo4j, encoding="utf-8")
    monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    result = runner.invoke(
        cli, ["import", str(back), "--data-dir", str(tmp_path / "m2"), "--namespace", ns]
    )
    assert result.exit_code == 0, result.output
    again = runner.invoke(cli, ["export", "--data-dir", str(tmp_path / "m2"), "--namespace", ns])
    assert again.stdout == from_mirror
    query = ["bundle", "Why did the reactor temperature rise?", "--json"]
    mirror_bundle = json.loads(on_mirror(*query))
    neo4j_bundle = json.loads(on_neo4j(*query))
    assert mirror_bundle["capsules"] == neo4j_bundle["capsules"]
