"""The commands the lab adds to ``graphsvc``, in the shape of :data:`graphsvc.cli.COMMANDS`.

``graphsvc`` finds this table through the ``graphsvc.commands`` entry point (see
``lab/pyproject.toml``) and imports a command's module only when that command runs, so this module
imports nothing: ``graphsvc --help`` stays instant with the lab installed.
"""

from __future__ import annotations

# name -> (module:attribute, one-line help shown by --help without importing the module).
# lab/tests/test_lab_commands.py checks each line against the command's own help.
COMMANDS: dict[str, tuple[str, str]] = {
    "convert": (
        "graphsvc_lab.convert:convert",
        "Print a public dataset file (LoCoMo JSON, EventStoryLine JSONL, a BEAM chat.json) as "
        "ingest JSON Lines.",
    ),
    "eval": (
        "graphsvc_lab.eval.cli:eval_group",
        "Measure recall, abstention, chronology and causal reconstruction on public data, beside "
        "a bm25s baseline on the same memories (datasets from GRAPHSVC_EVAL_DATA by default).",
    ),
    "bench": (
        "graphsvc_lab.bench:bench",
        "Measure ingest, restart, bundle and reconstruct on a synthetic corpus, beside bm25s.",
    ),
    "bench-erase": (
        "graphsvc_lab.bench_erase:bench_erase",
        "Erase half of a namespace with bundles asked all the while; time both.",
    ),
    "fingerprint": (
        "graphsvc_lab.fingerprint:fingerprint",
        "Print a sha256 per section of many reads over fixed data, to compare stores or checkouts.",
    ),
    "bench-http": (
        "graphsvc_lab.bench_http:bench_http",
        "Measure bundle and reconstruct over HTTP with concurrent clients, against a fresh server.",
    ),
}

__all__ = ["COMMANDS"]
