"""``graphsvc embed`` and how the command line reports the recall mode (real encoder, embedded
store): memories written with dense recall off are encoded afterwards, resumably."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from graphsvc.cli import cli

TEXTS = [
    "My puppy keeps chewing the sofa cushions whenever I leave the flat.",
    "The quarterly tax return is due at the end of April.",
    "We planted tomatoes and basil in the back garden on Sunday.",
]


def run(data_dir: Path, *args: str, embed: str) -> Result:
    env = {"GRAPHSVC_EMBED": embed, "GRAPHSVC_FSYNC": "false", "GRAPHSVC_NEO4J_URI": ""}
    return CliRunner().invoke(cli, [*args, "--data-dir", str(data_dir)], env=env)


def stats(data_dir: Path, embed: str) -> dict[str, object]:
    result = run(data_dir, "stats", "--json", embed=embed)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_embed_encodes_what_was_written_lexically(tmp_path: Path) -> None:
    for text in TEXTS:
        assert run(tmp_path, "remember", text, embed="off").exit_code == 0
    before = stats(tmp_path, "on")
    assert (before["vectors"], before["retrieval"]) == (0, "hybrid")
    assert "graphsvc embed" in str(before["retrievalNote"])

    result = run(tmp_path, "embed", embed="on")
    assert result.exit_code == 0, result.output
    assert "encoded 3 memory(ies)" in result.output
    assert "encoded 0 memory(ies)" in run(tmp_path, "embed", embed="on").output  # nothing left

    after = stats(tmp_path, "on")
    assert (after["vectors"], after["retrievalNote"]) == (3, None)
    # By meaning alone (no shared word): lexical topScore 0, so abstention is turned off.
    bundle = run(
        tmp_path, "bundle", "dog destroying furniture", "--json", "--min-score", "0", embed="on"
    )
    data = json.loads(bundle.output)
    assert data["retrieval"] == "hybrid"
    assert "puppy" in data["capsules"][0]["text"]


def test_embed_with_dense_recall_off_says_so(tmp_path: Path) -> None:
    assert run(tmp_path, "remember", TEXTS[0], embed="off").exit_code == 0
    result = run(tmp_path, "embed", embed="off")
    assert result.exit_code == 2
    assert "GRAPHSVC_EMBED=off" in result.output
    assert stats(tmp_path, "off")["retrieval"] == "lexical"
