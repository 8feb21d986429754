"""The embedded store's erase: a whole namespace in one logged step, a filter in slices that
let go of the store's lock between them."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from graphsvc.model import (
    EraseFilter,
    EraseReceipt,
)
from graphsvc.store.mirror.state import MirrorNamespace, MirrorState
from graphsvc.store.mirror.table import MemoryTable, row_matcher
from graphsvc.store.mirror.writer import LogWriter
from graphsvc.store.rules import erase_started

#: Most memories one slice of an erase examines before it lets go of the store's lock, matching
#: or not (a filter that matches few of a million memories is erased in that many slices).
EXAMINE_PER_SLICE = 20_000
#: Seconds an erase lets go between slices, so that the reads waiting for the lock get it (a
#: thread that lets a lock go and takes it again at once keeps it from waiting threads).
SLICE_PAUSE = 0.001


class MirrorErase:
    """Erasing memories by filter or a whole namespace: a part of
    :class:`~graphsvc.store.mirror.MirrorStore`."""

    def __init__(self, state: MirrorState, log: LogWriter) -> None:
        self._state = state
        self._log = log
        self._lock = log.lock

    def erase(
        self,
        namespace: str,
        spec: EraseFilter,
        *,
        at: datetime,
        batch_size: int,
        time_budget: float | None = None,
        progress: Callable[[EraseReceipt], None] | None = None,
    ) -> EraseReceipt:
        """As :meth:`Store.erase`. The whole namespace goes in one logged step (a ``drop``
        record). A filter is erased in slices of ``batch_size`` memories, oldest first, each one
        logged record applied under the store's lock, which is let go between slices so that
        reads (and writes) are served meanwhile; past ``time_budget`` seconds the call stops
        with ``complete=False``, and calling it again with the same filter finishes it. A slice
        examines at most :data:`EXAMINE_PER_SLICE` memories, so a filter that matches few of
        many never holds the lock long either."""
        receipt = erase_started(namespace, spec, at)
        if spec.everything:
            return self._drop(namespace, receipt, progress)
        began = time.monotonic()
        match = row_matcher(spec)
        after: tuple[int, int] | None = None  # the last (recordedAt, key) examined
        rewritten: set[tuple[str, int]] = set()  # events, counted once however many slices
        while True:
            with self._lock:
                space = self._state.spaces.get(namespace)
                if space is None:
                    return receipt.model_copy(update={"complete": True})
                keys, after, done = self._erase_slice(space, match, after, batch_size)
                if keys:
                    links, beliefs, events = self._erase_logged(space, namespace, keys)
                    receipt = receipt.model_copy(
                        update={
                            "memories": receipt.memories + len(keys),
                            "links": receipt.links + links,
                            "beliefs": receipt.beliefs + beliefs,
                            "events": receipt.events + len(events - rewritten),
                        }
                    )
                    rewritten |= events
            if keys and progress is not None:
                progress(receipt)
            if done:
                return receipt.model_copy(update={"complete": True})
            if time_budget is not None and time.monotonic() - began >= time_budget:
                return receipt
            # The lock is not fair: let the reads waiting for it take it before the next slice.
            time.sleep(SLICE_PAUSE)

    def _erase_logged(
        self, space: MirrorNamespace, namespace: str, keys: list[int]
    ) -> tuple[int, int, set[tuple[str, int]]]:
        """Erase memories in one logged record (oldest first, as the log names them); the links
        and beliefs removed with them and the events rewritten. Lock held."""
        record = {"op": "erase", "ns": namespace, "ids": [str(UUID(int=k)) for k in keys]}
        removed: list[tuple[int, int, set[tuple[str, int]]]] = []

        def apply() -> None:
            removed.append(space.erase_memories(keys))

        self._log.write(record, apply)
        return removed[0]

    @staticmethod
    def _erase_slice(
        space: MirrorNamespace,
        match: Callable[[MemoryTable, int], bool],
        after: tuple[int, int] | None,
        batch_size: int,
    ) -> tuple[list[int], tuple[int, int] | None, bool]:
        """The next slice: up to ``batch_size`` keys of memories the filter matches, oldest
        first, from after ``after``; the last position examined; whether the namespace was
        examined to its end. Lock held."""
        table = space.memories
        row_of = table.row_of
        keys: list[int] = []
        items = space.order.irange(minimum=after, inclusive=(False, True)) if after else space.order
        last = after
        for examined, item in enumerate(items, 1):
            last = item
            if match(table, row_of[item[1]]):
                keys.append(item[1])
                if len(keys) >= batch_size:
                    return keys, last, False
            if examined >= EXAMINE_PER_SLICE:
                return keys, last, False
        return keys, last, True

    def _drop(
        self,
        namespace: str,
        receipt: EraseReceipt,
        progress: Callable[[EraseReceipt], None] | None,
    ) -> EraseReceipt:
        """Erase the whole namespace in one logged step."""
        with self._lock:
            space = self._state.spaces.get(namespace)
            if space is None or not (space.memories or space.beliefs or space.events):
                return receipt.model_copy(update={"complete": True})
            counts = {
                "memories": len(space.memories),
                "links": space.graph.count,
                "beliefs": len(space.beliefs),
                "events": sum(len(events) for events in space.events.values()),
            }
            self._log.write({"op": "drop", "ns": namespace})
            receipt = receipt.model_copy(update=counts)
        if progress is not None:
            progress(receipt)
        return receipt.model_copy(update={"complete": True})
