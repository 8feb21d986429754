"""Two services over one data: one on the embedded store, one on Neo4j, each with a fixed clock,
for the tests that load the same rows into both and compare the answers byte for byte (the
contract suite's ``test_parity.py``, and the lab's over the public datasets)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore
from tests.helpers import fixed_clock
from tests.neo4j_server import neo4j_store_factory


@contextmanager
def both_stores(data_dir: Path, **options: Any) -> Iterator[tuple[MemoryService, MemoryService]]:
    """(embedded, Neo4j) services with the same settings and ``options`` (``dense=``, as
    :class:`~graphsvc.service.MemoryService` takes them), closed on exit."""
    settings = Settings(data_dir=data_dir, fsync=False)
    neo: Store = neo4j_store_factory()()
    neo.open()
    mirror = MirrorStore(None)
    mirror.open()
    try:
        yield (
            MemoryService(mirror, settings, clock=fixed_clock(), **options),
            MemoryService(neo, settings, clock=fixed_clock(), **options),
        )
    finally:
        neo.close()
        mirror.close()


def canonical(data: dict[str, Any]) -> str:
    """An answer's JSON as compared across the stores: its own order, no escaping."""
    return json.dumps(data, ensure_ascii=False, sort_keys=False)
