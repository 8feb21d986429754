"""The lab's tests (``lab/tests``) run in the same pytest session as the service's (``testpaths``
in the root pyproject.toml) or on their own (``python -m pytest lab/tests`` from the checkout's
root). They take the service's both-stores fixtures from its suite, whose helpers they import."""

from __future__ import annotations

from tests.conftest import ns, service, settings, store

__all__ = ["ns", "service", "settings", "store"]
