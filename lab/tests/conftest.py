"""The lab's tests (``lab/tests``) run in the same pytest session as the service's (``testpaths``
in the root pyproject.toml) or on their own (``python -m pytest lab/tests`` from the checkout's
root). They take the service's both-stores fixtures from its suite, whose helpers they import, and
its report of each Neo4j test: a hook of a conftest sees only the tests under its folder, and the
"Neo4j suite" section (and, under CI, its failing of a run whose Neo4j tests found no server) must
count the lab's Neo4j tests too."""

from __future__ import annotations

from tests.conftest import ns, pytest_runtest_logreport, service, settings, store

__all__ = ["ns", "pytest_runtest_logreport", "service", "settings", "store"]
