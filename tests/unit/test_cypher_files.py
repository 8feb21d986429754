"""Every file in cypher/ is used by the Neo4j store, every name it uses exists, and cypher/ is the
only copy of the queries in the repository."""

from __future__ import annotations

import re
from pathlib import Path

from graphsvc.store import cypher

ROOT = Path(__file__).resolve().parents[2]
# The Neo4j store is a package: every module of it is scanned.
STORE = ROOT / "graphsvc" / "store" / "neo4j"
# read("name", ...) and tx_query(tx, "name", ...)
USE = re.compile(r'(?:\bread\(\s*|\btx_query\(\s*tx,\s*|\bquery\()"([a-z_]+)"')


def store_source() -> str:
    modules = sorted(STORE.glob("*.py"))
    assert {p.name for p in modules} >= {"__init__.py", "boundary.py", "store.py"}, modules
    return "\n".join(p.read_text(encoding="utf-8") for p in modules)


def used_names() -> set[str]:
    return set(USE.findall(store_source()))


def test_every_query_file_is_used_and_every_used_name_exists() -> None:
    names = used_names()
    assert names, "found no query names in the store: the pattern is out of date"
    files = set(cypher.queries())
    assert sorted(files - names) == [], "query files that nothing runs"
    assert sorted(names - files) == [], "names the store runs that have no file"


def test_every_query_file_has_a_header_naming_params_and_returns() -> None:
    for name, text in cypher.queries().items():
        head = text.splitlines()[:8]
        assert head[0].startswith(f"// {name}:"), name
        assert any(line.startswith("// params:") for line in head), name
        assert any(line.startswith("// returns:") for line in head), name


def test_values_are_parameters_not_string_literals_built_in_python() -> None:
    source = store_source()
    # No Cypher text is assembled in Python: no MATCH/MERGE/CREATE outside the cypher/ files.
    assert not re.search(r'"[^"\n]*\b(MATCH|MERGE|CREATE \(|DETACH DELETE)\b', source)


def test_schema_statements_are_idempotent() -> None:
    statements = cypher.schema_statements()
    assert len(statements) >= 5
    for statement in statements:  # CREATE ... IF NOT EXISTS, or a migration's DROP ... IF EXISTS
        if statement.startswith("DROP "):
            assert statement.endswith(" IF EXISTS"), statement
        else:
            assert "IF NOT EXISTS" in statement, statement
    # Memory ids are per namespace (the migration drops the old Memory.id constraint after).
    unique = [s for s in statements if "(m.namespace, m.id) IS UNIQUE" in s]
    assert len(unique) == 1
    assert statements.index("DROP CONSTRAINT memory_id IF EXISTS") > statements.index(unique[0])


def test_the_top_level_cypher_folder_is_the_only_copy() -> None:
    root = ROOT
    assert (root / "cypher" / "schema.cypher").is_file()
    copies = [
        path
        for folder in ("graphsvc", "tests", "scripts", "tools", "docs")
        for path in (root / folder).rglob("*.cypher")
        if "target" not in path.parts
    ]
    assert copies == [], "Cypher files outside cypher/: keep one source of truth"


def test_only_the_neo4j_store_imports_the_driver() -> None:
    importing = re.compile(r"^\s*(?:import neo4j\b|from neo4j\b)", re.MULTILINE)
    outside = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "graphsvc").rglob("*.py")
        if STORE not in path.parents and importing.search(path.read_text(encoding="utf-8"))
    ]
    assert outside == [], "only graphsvc/store/neo4j/ may import neo4j: translate errors there"
