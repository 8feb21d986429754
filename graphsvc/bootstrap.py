"""Where dependencies are wired: settings -> store -> service.

The one place that chooses the store: Neo4j when ``GRAPHSVC_NEO4J_URI`` is set, the mirror
otherwise.
"""

from __future__ import annotations

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
    )


def store_label(settings: Settings) -> str:
    """A human description of where data lives (printed by the CLI and the server)."""
    if settings.neo4j_uri:
        return f"Neo4j at {settings.neo4j_uri} (database {settings.neo4j_database})"
    return f"embedded store in {settings.data_dir}"


def bootstrap(settings: Settings, *, read_only: bool = False) -> MemoryService:
    """Open the store these settings name and return a service on it. Close with ``close()``."""
    store = make_store(settings, read_only=read_only)
    store.open()
    return MemoryService(store, settings)
