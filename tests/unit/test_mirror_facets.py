"""The mirror's facet counts are not stored: they are rebuilt from the memories when a data
directory is opened, from its snapshot and from its log, and must equal what was kept live."""

from __future__ import annotations

from pathlib import Path

from graphsvc.model import MemoryInput
from graphsvc.service import MemoryService
from graphsvc.store.facets import FACETS
from graphsvc.store.mirror import MirrorStore
from tests.helpers import fixed_clock, make_settings


def counts(store: MirrorStore, ns: str) -> list[object]:
    return [store.facet_counts(ns, facet, 20) for facet in FACETS]


def test_facets_are_rebuilt_from_snapshot_and_log(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = MirrorStore(tmp_path / "data", fsync=False)
    store.open()
    service = MemoryService(store, settings, clock=fixed_clock())
    made = service.remember_many(
        "ns",
        [
            MemoryInput(
                text=f"memory {n}",
                kind=f"k{n % 3}",
                tags=(f"t{n % 4}",),
                source=None if n % 2 else "chat",
            )
            for n in range(200)
        ],
    )
    store.snapshot()
    service.forget("ns", made[0].id)
    service.remember("ns", MemoryInput(text="after the snapshot", kind="k9", tags=("t9",)))
    live = counts(store, "ns")
    store.close()
    again = MirrorStore(tmp_path / "data", fsync=False)
    again.open()
    try:
        assert counts(again, "ns") == live
    finally:
        again.close()
