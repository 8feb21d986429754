"""Fixtures shared by the suites.

``service`` and ``store`` are parametrized over both stores: every behaviour test runs on the mirror
and on Neo4j with the same body. The Neo4j side uses ``GRAPHSVC_NEO4J_URI`` when it is set, else a
testcontainers Neo4j when a Docker engine answers, else it is skipped with a loud reason.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.helpers import STORES, fixed_clock, make_settings
from tests.neo4j_server import neo4j_store_factory

# No deadline on any example: tests assert behaviour, never speed, and on a busy machine a
# Hypothesis example can take several times its usual time (a 465 ms example failed the default
# 200 ms deadline at load 5).
hypothesis_settings.register_profile("graphsvc", deadline=None)
hypothesis_settings.load_profile("graphsvc")


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
# Skips because no Neo4j server was there (their reasons start "NEO4J"), as opposed to a test of
# the suite that skips for another stated reason (the public datasets are absent, say).
_neo4j_server_skips: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "neo4j" not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        _neo4j_outcomes[outcome] = _neo4j_outcomes.get(outcome, 0) + 1
        if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
            reason = str(report.longrepr[2])
            _neo4j_skip_reasons.add(reason)
            if reason.removeprefix("Skipped: ").startswith("NEO4J"):
                _neo4j_server_skips.append(report.nodeid)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(_neo4j_outcomes.items()))
    terminalreporter.section("Neo4j suite")
    terminalreporter.write_line(f"Neo4j tests: {counts or 'none collected'}")
    for reason in sorted(_neo4j_skip_reasons):
        terminalreporter.write_line(f"!!! {reason}", red=True, bold=True)
    if _neo4j_must_run() and _neo4j_server_skips:
        terminalreporter.write_line(
            f"!!! CI=true: {len(_neo4j_server_skips)} Neo4j test(s) skipped for want of a server: "
            "that fails the run (CI always runs the Neo4j suite)",
            red=True,
            bold=True,
        )


def _neo4j_must_run() -> bool:
    """Under CI (``CI=true``) the Neo4j suite must run: a skip is a failure, not a banner."""
    return os.environ.get("CI", "").lower() == "true"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _neo4j_must_run() and _neo4j_server_skips and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
