"""The built wheel, installed the way users install it (not editable), into a fresh virtualenv:
it carries the Cypher queries and the demo data, and ``graphsvc demo`` runs from it."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def run(args: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), "."], ROOT)
    (built,) = out.glob("graphsvc-*.whl")
    return built


def test_the_wheel_carries_the_queries_once(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    queries = sorted(n for n in names if n.endswith(".cypher"))
    expected = sorted(
        f"graphsvc/cypher/{p.relative_to(ROOT / 'cypher').as_posix()}"
        for p in (ROOT / "cypher").rglob("*.cypher")
    )
    assert queries == expected
    assert "graphsvc/data/demo.jsonl" in names
    assert "graphsvc/py.typed" in names
    # The lab (graphsvc-lab, lab/) is a distribution of its own, never inside the product.
    assert not [n for n in names if n.startswith(("tests/", "cypher/", "lab/", "graphsvc_lab/"))]
    assert not [n for n in names if n.startswith("graphsvc/tools/")]


def test_a_plain_install_runs_the_demo_and_finds_the_queries(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", str(wheel)], tmp_path)
    # Run from a folder outside the checkout, so nothing can be found beside the sources.
    demo = run([str(env_dir / "bin" / "graphsvc"), "demo"], tmp_path)
    assert "Bundle for" in demo.stdout
    assert "Reconstructed belief for" in demo.stdout
    probe = run(
        [
            str(python),
            "-c",
            "import graphsvc.store.cypher as c; print(c.folder()); "
            "print(c.query('candidates').splitlines()[0]); print(len(c.schema_statements()))",
        ],
        tmp_path,
    )
    folder, first_line, statements = probe.stdout.splitlines()
    assert str(env_dir) in folder
    assert first_line.startswith("// candidates:")
    assert int(statements) >= 5
