"""``graphsvc serve --workers N``: several API processes on one socket and one Neo4j database.

Real processes throughout: the supervisor and its workers (spawned interpreters), a real Neo4j
(``GRAPHSVC_NEO4J_URI``, a fresh namespace per test), HTTP on a new connection per request so the
kernel hands requests to either worker. Which worker answered is read from the access log, whose
lines carry the pid of the process that wrote them.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from graphsvc.api.serve import serve
from tests.api_support import start_server
from tests.e2e.workers_support import Served, log_text, start, wait_until_gone

REMEMBER = "mutation($input: MemoryInput!) { remember(input: $input) { id } }"
MEMORY = "query($id: UUID!) { memory(id: $id) { id text links { source target kind } } }"
# Rounds of concurrent write-then-read pairs, until both workers have answered and some read was
# answered by another worker than its write (the kernel decides; a few rounds are always enough).
PAIRS_PER_ROUND = 16
MAX_ROUNDS = 8


def _namespace() -> str:
    return f"wk{uuid.uuid4().hex[:14]}"


def _messages(server: Served) -> list[tuple[str, int | None]]:
    return [(str(line.get("msg")), line.get("pid")) for line in server.log_lines()]


# -- refused before anything starts ----------------------------------------------------------------


def test_more_than_one_worker_needs_neo4j(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    data_dir = tmp_path / "data"
    data_dir.mkdir()  # an existing folder: a missing one is refused earlier, for its own reason
    result = CliRunner().invoke(
        serve, ["--workers", "2", "--port", "0", "--data-dir", str(data_dir)]
    )
    assert result.exit_code == 2, result.output
    assert f"--workers 2 needs Neo4j: the embedded store in {data_dir}" in result.output
    assert "one process at a time" in result.output
    assert "GRAPHSVC_NEO4J_URI" in result.output
    assert not any(data_dir.iterdir())  # nothing was opened or created

    result = CliRunner().invoke(serve, ["--workers", "0", "--port", "0"])
    assert result.exit_code == 2
    assert "--workers" in result.output


@pytest.mark.slow
def test_a_worker_that_cannot_open_the_store_stops_the_service(tmp_path: Path) -> None:
    # Nothing listens on port 1: every worker fails to open the store, like one process does.
    with pytest.raises(AssertionError, match="exited with 3") as failed:
        start(
            tmp_path,
            "mirror",
            "--workers",
            "2",
            extra_env={"GRAPHSVC_NEO4J_URI": "bolt://127.0.0.1:1", "GRAPHSVC_STORE_TIMEOUT": "1"},
        )
    assert "before it could serve" in str(failed.value)


# -- two workers on one Neo4j ----------------------------------------------------------------------


@pytest.mark.neo4j
@pytest.mark.slow
def test_two_workers_answer_and_read_each_others_writes(tmp_path: Path) -> None:
    server = start(tmp_path, "neo4j", "--workers", "2", tenants={"w": (_namespace(), "write")})
    try:
        key = server.keys["w"]
        workers = set(server.worker_pids)
        assert len(workers) == 2
        assert server.process.pid not in workers

        def pair(n: int) -> tuple[int, str]:
            """Write one memory, then read it back on a new connection."""
            text = f"Worker note {n} about reindexing shard s{n}k"
            written = server.gql(key, REMEMBER, {"input": {"text": text}}, request_id=f"write-{n}")
            memory_id = written["remember"]["id"]
            read = server.gql(key, MEMORY, {"id": memory_id}, request_id=f"read-{n}")
            assert read["memory"] == {"id": memory_id, "text": text, "links": []}
            return n, memory_id

        written: dict[int, str] = {}
        answered: dict[str, int] = {}
        crossed: list[int] = []
        for round_ in range(MAX_ROUNDS):
            numbers = range(round_ * PAIRS_PER_ROUND, (round_ + 1) * PAIRS_PER_ROUND)
            with ThreadPoolExecutor(max_workers=8) as pool:
                written.update(pool.map(pair, numbers))
            ids = {f"{kind}-{n}" for n in numbers for kind in ("write", "read")}
            answered.update(server.answered_by(ids))
            assert set(answered) >= ids, "every request has an access-log line"
            crossed = [n for n in written if answered[f"write-{n}"] != answered[f"read-{n}"]]
            if set(answered.values()) == workers and crossed:
                break
        assert set(answered.values()) == workers, "both workers answered requests"
        assert crossed, "some read was answered by another worker than its write"

        # What was written through either worker is counted and recalled through both.
        for _ in range(4):
            stats = server.gql(key, "{ stats { memories } }")["stats"]
            assert stats["memories"] == len(written)
            query = f"reindexing s{crossed[0]}k"
            bundle = server.gql(
                key,
                "query($q: String!) { bundle(query: $q) { capsules { memoryId } } }",
                {"q": query},
            )
            assert bundle["bundle"]["capsules"][0]["memoryId"] == written[crossed[0]]
    finally:
        status = server.stop()
    assert status == 0, log_text(server)
    assert wait_until_gone(sorted(workers), timeout=5) == []
    closed = [pid for msg, pid in _messages(server) if msg == "graphsvc API stopped; store closed"]
    assert set(closed) == workers and len(closed) == 2, "each worker closed its store"
    assert ("all workers stopped", server.process.pid) in _messages(server)


@pytest.mark.neo4j
@pytest.mark.slow
def test_a_dead_worker_is_replaced_and_workers_stop_without_their_supervisor(
    tmp_path: Path,
) -> None:
    server = start(tmp_path, "neo4j", "--workers", "2", tenants={"w": (_namespace(), "write")})
    key = server.keys["w"]
    try:
        killed, kept = server.worker_pids
        os.kill(killed, signal.SIGKILL)
        assert wait_until_gone([killed], timeout=10) == []
        replacement: list[int] = []
        for _ in range(600):
            replacement = [
                int(line["worker_pid"])
                for line in server.log_lines()
                if str(line.get("msg", "")).endswith(" serving")
                and int(line["worker_pid"]) not in (killed, kept)
            ]
            if replacement or server.process.poll() is not None:
                break
            time.sleep(0.1)
        assert replacement, log_text(server)
        assert any("exited with signal SIGKILL while serving" in m for m, _ in _messages(server))
        written = server.gql(key, REMEMBER, {"input": {"text": "Still answering"}})["remember"]
        assert server.gql(key, MEMORY, {"id": written["id"]})["memory"]["text"] == "Still answering"

        # Killed outright, the supervisor cannot stop its workers: they notice and stop.
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
        left = wait_until_gone([kept, *replacement], timeout=30)
        assert left == [], log_text(server)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.base_url}/healthz", timeout=5)
    finally:
        server.stop()


# -- two server processes on one Neo4j ------------------------------------------------------------


@pytest.mark.neo4j
@pytest.mark.slow
def test_a_write_through_one_server_is_read_through_another(tmp_path: Path) -> None:
    namespace = _namespace()
    first = start_server(tmp_path, "neo4j", tenants={"w": (namespace, "write")})
    try:
        second = start_server(tmp_path, "neo4j", tenants={"w": (namespace, "write")})
        try:
            one = Served(first.process, first.base_url, first.log_path, first.keys, {})
            two = Served(second.process, second.base_url, second.log_path, second.keys, {})
            ids = [
                one.gql(one.keys["w"], REMEMBER, {"input": {"text": text}})["remember"]["id"]
                for text in ("The cache warmer stalled at dawn", "Dawn traffic hit a cold cache")
            ]
            one.gql(
                one.keys["w"],
                "mutation($input: LinkInput!) { link(input: $input) { kind } }",
                {"input": {"source": ids[0], "target": ids[1], "kind": "CAUSES"}},
            )
            seen = two.gql(two.keys["w"], MEMORY, {"id": ids[0]})["memory"]
            assert seen["text"] == "The cache warmer stalled at dawn"
            assert seen["links"] == [{"source": ids[0], "target": ids[1], "kind": "CAUSES"}]
            bundle = two.gql(
                two.keys["w"], '{ bundle(query: "cold cache at dawn") { capsules { memoryId } } }'
            )["bundle"]
            assert {c["memoryId"] for c in bundle["capsules"]} == set(ids)

            two.gql(
                two.keys["w"],
                "mutation($id: UUID!) { forget(id: $id) { memoryId } }",
                {"id": ids[1]},
            )
            assert one.gql(one.keys["w"], MEMORY, {"id": ids[1]})["memory"] is None
            assert one.gql(one.keys["w"], MEMORY, {"id": ids[0]})["memory"]["links"] == []
        finally:
            assert second.stop() == 0
    finally:
        assert first.stop() == 0
