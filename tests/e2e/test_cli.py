"""The command line: exit statuses, messages, and ``--json`` in the GraphQL field names."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from graphsvc.cli import COMMANDS, LAB_COMMANDS, LazyGroup, cli

ROOT = Path(__file__).resolve().parents[2]

Invoke = Callable[..., Result]


# Field names of the GraphQL contract (docs/design.md) (clients depend on them).
CAPSULE_FIELDS = {"memoryId", "text", "kind", "score", "tokens", "occurredAt", "matchedTerms"}
BUNDLE_FIELDS = {
    "stage",
    "budgetTokens",
    "usedTokens",
    "capsules",
    "excluded",
    "skipped",
    "topScore",
    "evidenceCoverage",
    "uncoveredTerms",
    "chronological",
    "rendered",
}
BELIEF_FIELDS = {"cue", "summary", "sourceIds", "linkedContextIds", "confidence", "memories"}


@pytest.fixture
def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    monkeypatch.setenv("GRAPHSVC_FSYNC", "false")
    runner = CliRunner()
    data_dir = str(tmp_path / "data")

    def invoke_(*args: str, stdin: str | None = None) -> Result:
        return runner.invoke(cli, [*args, "--data-dir", data_dir], input=stdin)

    return invoke_


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


A = "11111111-1111-4111-8111-111111111111"
B = "22222222-2222-4222-8222-222222222222"
ROWS: list[dict[str, object]] = [
    {"type": "memory", "id": A, "text": "The kiln cracked during the glaze firing",
     "kind": "event", "occurredAt": "2024-05-01T10:00:00Z"},
    {"type": "memory", "id": B, "text": "Every pot in the glaze firing was ruined",
     "kind": "event", "occurredAt": "2024-05-01T12:00:00Z"},
    {"type": "memory", "text": "Lunch was tomato soup", "kind": "note"},
    {"type": "link", "source": A, "target": B, "kind": "CAUSES", "note": "heat loss"},
]  # fmt: skip


def test_ingest_then_bundle_json_uses_graphql_names(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("ingest", str(write_jsonl(tmp_path / "in.jsonl", ROWS)))
    assert result.exit_code == 0, result.output
    assert "3 memories created" in result.output and "1 links" in result.output

    out = invoke("bundle", "What happened after the kiln cracked?", "--json", "--budget", "50")
    assert out.exit_code == 0, out.output
    bundle = json.loads(out.output)
    assert BUNDLE_FIELDS <= bundle.keys()
    assert bundle["chronological"] is True
    assert bundle["capsules"][0]["memoryId"] == A
    assert CAPSULE_FIELDS <= bundle["capsules"][0].keys()
    assert bundle["capsules"][0]["text"].startswith("[2024-05-01] ")
    assert bundle["usedTokens"] <= 50


def test_reconstruct_json_walks_the_causal_link(invoke: Invoke, tmp_path: Path) -> None:
    invoke("ingest", str(write_jsonl(tmp_path / "in.jsonl", ROWS)))
    out = invoke("reconstruct", "kiln cracked", "--k", "1", "--json")
    assert out.exit_code == 0, out.output
    belief = json.loads(out.output)
    assert BELIEF_FIELDS <= belief.keys()
    assert belief["sourceIds"] == [A]
    assert belief["linkedContextIds"] == [B]
    assert "Causal chains" in belief["summary"]


def test_ingest_is_idempotent_and_reports_unchanged(invoke: Invoke, tmp_path: Path) -> None:
    path = str(write_jsonl(tmp_path / "in.jsonl", ROWS))
    assert invoke("ingest", path).exit_code == 0
    again = invoke("ingest", path)
    assert again.exit_code == 0
    assert "0 memories created, 3 unchanged" in again.output
    stats = json.loads(invoke("stats", "--json").output)
    assert stats["memories"] == 3 and stats["links"] == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "in.jsonl:2: not valid JSON"),
        ('{"type": "memory", "text": ""}', "in.jsonl:2: text: text is empty"),
        ('{"type": "memory", "id": "nope", "text": "x"}', "in.jsonl:2: id: "),
        (json.dumps({"type": "link", "source": A, "target": B, "kind": "BLAMES"}),
         "in.jsonl:2: kind: Input should be 'CAUSES'"),
        (json.dumps({"type": "link", "source": A, "kind": "CAUSES",
                     "target": "33333333-3333-4333-8333-333333333333"}),
         "in.jsonl:2: link names memory 33333333"),
        ('{"type": "thing"}', "in.jsonl:2: 'type' must be 'memory' or 'link'"),
        ('[1, 2]', "in.jsonl:2: expected a JSON object"),
    ],
)  # fmt: skip
def test_bad_jsonl_names_the_line_and_writes_nothing(
    invoke: Invoke, tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n" + line + "\n", encoding="utf-8")
    result = invoke("ingest", str(path))
    assert result.exit_code == 2
    assert message in result.output
    if (tmp_path / "data").exists():  # opened to check links against the store: still empty
        assert json.loads(invoke("stats", "--json").output)["memories"] == 0


_GOOD_LINE = json.dumps(ROWS[0]).encode() + b"\n"
# Files `ingest`, `import` and `bulk-export` must refuse with exit 2 and `file:line`: the bytes,
# the line, and what the message says.
UNREADABLE_FILES = {
    "latin-1": (
        _GOOD_LINE + '{"type": "memory", "text": "un café"}\n'.encode("latin-1"),
        2,
        "not UTF-8 text: byte 0xe9 at column 35",
    ),
    "utf-16": (_GOOD_LINE.decode().encode("utf-16"), 1, "UTF-16"),
    "binary": (gzip.compress(_GOOD_LINE * 50), 1, "not UTF-8 text"),
    "nested-100000-deep": (
        _GOOD_LINE + b"[" * 100_000 + b"]" * 100_000 + b"\n",
        2,
        "nested too deeply",
    ),
    "5000-digit-integer": (
        _GOOD_LINE + b'{"type": "memory", "text": "x", "confidence": ' + b"7" * 5000 + b"}\n",
        2,
        "5000 digits",
    ),
}


@pytest.mark.parametrize("kind", list(UNREADABLE_FILES))
def test_unreadable_files_exit_2_naming_file_and_line(tmp_path: Path, kind: str) -> None:
    content, line, message = UNREADABLE_FILES[kind]
    path = tmp_path / "in.jsonl"
    path.write_bytes(content)
    data_dir, bulk = tmp_path / "data", tmp_path / "bulk"
    env = {**os.environ, "GRAPHSVC_EMBED": "off", "GRAPHSVC_FSYNC": "false"}
    env.pop("GRAPHSVC_NEO4J_URI", None)
    for args in (
        ["ingest", str(path), "--data-dir", str(data_dir)],
        ["import", str(path), "--data-dir", str(data_dir)],
        ["bulk-export", str(path), str(bulk)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "graphsvc.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, (args[0], done.stderr[-2000:])
        assert f"error: {path}:{line}: " in done.stderr and message in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not bulk.exists() or not any(bulk.iterdir())
    assert not data_dir.exists()  # nothing written: not even a store made


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bundle", "kiln", "--budget", "0"], "budgetTokens must be at least 1"),
        (["bundle", "kiln", "--budget", "-5"], "budgetTokens must be at least 1"),
        (["bundle", "kiln", "--budget", "100000000"], "budgetTokens must be at most"),
        (["bundle", "kiln", "--stage", "bogus"], "unknown stage 'bogus'"),
        (["bundle", "kiln", "--min-score", "2"], "minScore must be between 0 and 1"),
        (["bundle", "   "], "query is empty"),
        (["reconstruct", "kiln", "--k", "0"], "k must be at least 1"),
        (["reconstruct", "kiln", "--depth", "99"], "depth must be at most"),
        (["forget", "not-a-uuid"], "invalid memory id 'not-a-uuid'"),
        (["forget", "44444444-4444-4444-8444-444444444444"], "does not exist"),
        (["link", A, "44444444-4444-4444-8444-444444444444", "CAUSES"], "does not exist"),
        (["remember", "x" * 20_001], "the limit is 20000"),
        (["stats", "--namespace", "no spaces"], "invalid settings: namespace"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(
    invoke: Invoke, tmp_path: Path, args: list[str], message: str
) -> None:
    invoke("ingest", str(write_jsonl(tmp_path / "in.jsonl", ROWS)))
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_forget_prints_a_receipt(invoke: Invoke, tmp_path: Path) -> None:
    invoke("ingest", str(write_jsonl(tmp_path / "in.jsonl", ROWS)))
    receipt = json.loads(invoke("forget", A, "--json").output)
    assert receipt["memoryId"] == A
    assert receipt["removedLinks"] == [{"source": A, "target": B, "kind": "CAUSES"}]
    assert json.loads(invoke("stats", "--json").output)["links"] == 0


def test_export_then_import_round_trips(invoke: Invoke, tmp_path: Path) -> None:
    invoke("ingest", str(write_jsonl(tmp_path / "in.jsonl", ROWS)))
    exported = invoke("export")
    assert exported.exit_code == 0
    lines = [json.loads(x) for x in exported.stdout.splitlines()]
    assert [r["type"] for r in lines] == ["memory", "memory", "memory", "link"]
    other = CliRunner().invoke(
        cli, ["import", "-", "--data-dir", str(tmp_path / "other")], input=exported.stdout
    )
    assert other.exit_code == 0, other.output
    again = CliRunner().invoke(cli, ["export", "--data-dir", str(tmp_path / "other")])
    assert again.stdout == exported.stdout


def test_remember_and_link_commands(invoke: Invoke) -> None:
    first = json.loads(invoke("remember", "The boiler failed", "--id", A, "--json").output)
    second = json.loads(invoke("remember", "The office was cold", "--id", B, "--json").output)
    assert first["id"] == A and second["id"] == B
    linked = invoke("link", A, B, "CAUSES", "--note", "no heat")
    assert linked.exit_code == 0 and "CAUSES" in linked.output
    assert invoke("link", A, A, "CAUSES").exit_code == 2


@pytest.mark.slow
def test_demo_runs_as_a_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHSVC_")}
    proc = subprocess.run(
        [sys.executable, "-m", "graphsvc.cli", "demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "chronological (oldest first)" in proc.stdout
    assert "Causal chains (cause -> effect, oldest first):" in proc.stdout
    assert "Deploy 4812" in proc.stdout


# -- lazy commands -------------------------------------------------------------------------------

HEAVY = {"strawberry", "uvicorn", "starlette", "neo4j", "numpy", "bm25s", "matplotlib"}


def test_help_imports_neither_the_server_nor_the_stores() -> None:
    code = (
        "import sys\n"
        "from graphsvc.cli import cli\n"
        "try:\n"
        "    cli(['--help'], prog_name='graphsvc')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "Commands:" in result.stdout
    loaded = set(result.stdout.split("MODULES ", 1)[1].split())
    assert sorted(loaded & HEAVY) == []


def test_every_lazy_command_loads_and_its_listed_help_is_its_own() -> None:
    ctx = click.Context(cli)
    for name, (target, listed) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None, target
        own = command.get_short_help_str(200)
        assert click.Command(name, help=listed).get_short_help_str(200) == own, name


# -- without the lab (graphsvc-lab, lab/; its own tests check the commands it brings) ------------


def test_without_the_lab_its_commands_say_how_to_install_it() -> None:
    group = LazyGroup(name="graphsvc", lazy=COMMANDS, plugins="graphsvc.commands-absent")
    for name in LAB_COMMANDS:
        result = CliRunner().invoke(group, [name, "--help"])
        assert result.exit_code == 2, name
        assert "graphsvc-lab" in result.output and "pip install -e lab" in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    listed = CliRunner().invoke(group, ["--help"])
    assert "not installed" in listed.output and "pip install -e lab" in listed.output
    assert "No such command" in CliRunner().invoke(group, ["evaluate"]).output


@pytest.mark.parametrize("command", ["mcp", "serve"])
def test_a_missing_data_dir_is_refused_unless_create(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `graphsvc mcp --data-dir /typo` opened a new, empty store there: the host's agent then
    # found no memories and nothing said why.
    monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    monkeypatch.delenv("GRAPHSVC_API_KEYS", raising=False)
    typo = tmp_path / "no-such-store"
    result = CliRunner().invoke(cli, [command, "--data-dir", str(typo)])
    assert result.exit_code == 2, result.output
    assert f"--data-dir {typo}: no such folder" in result.output
    assert "--create" in result.output
    assert not typo.exists()


@pytest.mark.parametrize("command", [["stats"], ["export"], ["bundle", "q"], ["reconstruct", "q"]])
def test_a_read_of_a_missing_data_dir_is_refused(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `graphsvc stats --data-dir /typo` printed an empty store and exited 0.
    monkeypatch.delenv("GRAPHSVC_NEO4J_URI", raising=False)
    typo = tmp_path / "no-such-store"
    result = CliRunner().invoke(cli, [*command, "--data-dir", str(typo)])
    assert result.exit_code == 2, result.output
    assert f"--data-dir {typo}: no such folder, so no store to read" in result.output
    assert "--create" not in result.output and not typo.exists()


def test_stats_prints_a_dash_for_an_absent_value(invoke: Invoke) -> None:
    # `graphsvc stats` printed "retrievalNote  None" (Python's None, for "no note").
    assert invoke("remember", "a store to read").exit_code == 0
    result = invoke("stats")
    assert result.exit_code == 0, result.output
    assert "None" not in result.output
    absent = [k for k, v in json.loads(invoke("stats", "--json").output).items() if v is None]
    for key in absent:  # retrievalNote, unless the encoder is missing here
        assert re.search(rf"^  {key} +-$", result.output, re.MULTILINE), result.output
