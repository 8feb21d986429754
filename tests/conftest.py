"""Fixtures shared by the suites.

``service`` and ``store`` are parametrized over both stores: every behaviour test runs on the mirror
and on Neo4j with the same body. The Neo4j side uses ``GRAPHSVC_NEO4J_URI`` when it is set, else a
testcontainers Neo4j when a Docker engine answers, else it is skipped with a loud reason.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.neo4j_server import neo4j_store_factory

STORES = ["mirror", pytest.param("neo4j", marks=pytest.mark.neo4j)]


def fixed_clock(start: datetime | None = None) -> Callable[[], datetime]:
    """A clock that ticks one second per call, from 2025-01-01 UTC: same input, same timestamps."""
    base = start or datetime(2025, 1, 1, tzinfo=UTC)
    counter = itertools.count()
    return lambda: base + timedelta(seconds=next(counter))


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"data_dir": tmp_path / "data", "fsync": False}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An opened store of each kind."""
    if request.param == "mirror":
        mirror = MirrorStore(tmp_path / "data", fsync=False)
        mirror.open()
        yield mirror
        mirror.close()
    else:
        factory = neo4j_store_factory()
        neo = factory()
        neo.open()
        yield neo
        neo.close()


@pytest.fixture
def ns() -> str:
    """A fresh namespace per test, so tests never see each other's data on a shared server."""
    return f"t{uuid.uuid4().hex[:16]}"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def service(store: Store, settings: Settings) -> MemoryService:
    """A service on each store, with a deterministic clock."""
    return MemoryService(store, settings, clock=fixed_clock())


# -- say loudly how much of the Neo4j suite ran --------------------------------------------------

_neo4j_outcomes: dict[str, int] = {}
_neo4j_skip_reasons: set[str] = set()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "neo4j" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        _neo4j_outcomes[outcome] = _neo4j_outcomes.get(outcome, 0) + 1
        if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
            _neo4j_skip_reasons.add(str(report.longrepr[2]))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(_neo4j_outcomes.items()))
    terminalreporter.section("Neo4j suite")
    terminalreporter.write_line(f"Neo4j tests: {counts or 'none collected'}")
    for reason in sorted(_neo4j_skip_reasons):
        terminalreporter.write_line(f"!!! {reason}", red=True, bold=True)
