"""How many store calls run at once in the API: on the embedded store at most
``GRAPHSVC_EMBEDDED_THREADS`` (its calls hold the interpreter lock, so more threads only contend
for it), on Neo4j ``GRAPHSVC_API_THREADS``. Sixteen concurrent requests go through the app (its
lifespan run, a real embedded store) while the service counts the calls in progress."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from graphsvc.api.app import create_app
from graphsvc.api.auth import ApiKeys
from graphsvc.api.lifespan import store_threads
from graphsvc.bootstrap import bootstrap
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from tests.api_support import in_process

CLIENTS = 16
BUNDLE = {"query": "query($q: String!) { bundle(query: $q) { usedTokens } }"}


class CountingService(MemoryService):
    """The real service; ``bundle`` notes how many calls are in progress, and lingers so that
    calls overlap when the API lets them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.running = 0
        self.most = 0
        self._count = threading.Lock()

    def bundle(self, *args: Any, **kwargs: Any) -> Any:
        with self._count:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(0.05)
            return super().bundle(*args, **kwargs)
        finally:
            with self._count:
                self.running -= 1


def most_at_once(settings: Settings) -> int:
    opened = bootstrap(settings)
    service = CountingService(opened.store, settings)
    app = create_app(settings, ApiKeys(), open_service=lambda: service)
    body = {**BUNDLE, "variables": {"q": "what happened"}}
    with in_process(app) as client, ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(lambda _: client.post("/graphql", json=body), range(CLIENTS)))
    assert [a.status_code for a in answers] == [200] * CLIENTS
    return service.most


@pytest.mark.parametrize("threads", [1, 3])
def test_the_embedded_store_runs_at_most_its_threads_at_once(tmp_path: Path, threads: int) -> None:
    settings = Settings(
        data_dir=tmp_path, fsync=False, neo4j_uri=None, embed="off", embedded_threads=threads
    )
    assert most_at_once(settings) == threads  # before: up to GRAPHSVC_API_THREADS (16)


def test_the_thread_count_per_store() -> None:
    embedded = Settings.model_construct(neo4j_uri=None, api_threads=16, embedded_threads=2)
    assert store_threads(embedded) == 2
    assert store_threads(embedded.model_copy(update={"api_threads": 1})) == 1
    neo4j = embedded.model_copy(update={"neo4j_uri": "bolt://127.0.0.1:7687"})
    assert store_threads(neo4j) == 16
    assert Settings.model_fields["embedded_threads"].default == 2
