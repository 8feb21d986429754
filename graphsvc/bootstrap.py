"""Where dependencies are wired: settings -> store -> service.

The one place that chooses the store: Neo4j when ``GRAPHSVC_NEO4J_URI`` is set, the embedded store
otherwise.
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits

from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.mirror import MirrorStore


def make_store(settings: Settings, *, read_only: bool = False) -> Store:
    """An unopened store for these settings."""
    if settings.neo4j_uri:
        from graphsvc.store.neo4j import Neo4jStore

        return Neo4jStore(
            settings.neo4j_uri,
            user=settings.neo4j_user,
            password=settings.neo4j_password,
            database=settings.neo4j_database,
            timeout=settings.store_timeout,
        )
    return MirrorStore(
        settings.data_dir,
        fsync=settings.fsync,
        snapshot_bytes=settings.snapshot_bytes,
        read_only=read_only,
        search_threads=settings.search_threads,
    )


def store_label(settings: Settings) -> str:
    """A human description of where data lives (printed by the CLI and the server)."""
    if settings.neo4j_uri:
        return f"Neo4j at {settings.neo4j_uri} (database {settings.neo4j_database})"
    return f"embedded store in {settings.data_dir}"


def limit_blas_threads(settings: Settings) -> None:
    """Hold numpy's BLAS to GRAPHSVC_BLAS_THREADS threads in this process (0: leave it)."""
    if settings.blas_threads > 0:
        threadpool_limits(limits=settings.blas_threads, user_api="blas")


def bootstrap(settings: Settings, *, read_only: bool = False, warm: bool = False) -> MemoryService:
    """Open the store these settings name and return a service on it, with the encoder the
    settings name for dense recall (GRAPHSVC_EMBED). Close with ``close()``.

    BLAS is held to ``settings.blas_threads`` threads (:func:`limit_blas_threads`).

    ``warm`` loads the encoder now (servers: the first query does not pay for it, and
    GRAPHSVC_EMBED=on fails at start when the model is missing); otherwise it loads on first use.

    Raises:
        StoreUnavailableError: the store cannot be opened.
        ModelUnavailableError: ``warm`` and GRAPHSVC_EMBED=on, and the model cannot be loaded.
    """
    limit_blas_threads(settings)
    dense = DenseRecall.from_settings(settings)
    store = make_store(settings, read_only=read_only)
    store.open()
    if warm:
        try:
            dense.prepare()
        except BaseException:
            store.close()
            raise
    return MemoryService(store, settings, dense=dense)
