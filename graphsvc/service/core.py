"""What every room of the service stands on: the store, the settings, the recall policy and
pipeline, the vector queue, the clock and the checks of input.

Each room (:mod:`.writes`, :mod:`.links`, :mod:`.reads`, :mod:`.recall`, :mod:`.prompt`,
:mod:`.admin`) is a :class:`ServiceCore` with the operations of one capability;
:class:`~graphsvc.service.MemoryService` combines them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from graphsvc.embedding.dense_recall import DenseRecall
from graphsvc.model import MemoryInput, utcnow
from graphsvc.recall.pipeline import ReadAheadPool, RecallPipeline
from graphsvc.recall.policy import RecallPolicy
from graphsvc.service.checks import check_namespace, check_run_id, check_text
from graphsvc.service.clock import ServiceClock
from graphsvc.service.vector_queue import VectorQueue
from graphsvc.settings import Settings
from graphsvc.store.base import Store


class ServiceCore:
    """graphsvc's parts for one store, shared by the rooms of the service.

    Args:
        store: an opened store.
        settings: limits and defaults.
        clock: the time source (tests pass a fixed one). ``recordedAt`` never goes backwards
            within one service, so recorded order is write order (:class:`ServiceClock`).
        dense: the encoder for recall by meaning (:class:`DenseRecall`); none: lexical-only.
        policy: the recall policy; none: the one the settings describe
            (:meth:`RecallPolicy.from_settings`).
    """

    def __init__(
        self,
        store: Store,
        settings: Settings,
        clock: Callable[[], datetime] = utcnow,
        dense: DenseRecall | None = None,
        policy: RecallPolicy | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.dense = dense if dense is not None else DenseRecall(None)
        #: The times the service records and the instant its reads answer for.
        self.clock = ServiceClock(clock)
        self.policy = policy if policy is not None else RecallPolicy.from_settings(settings)
        self._read_ahead = ReadAheadPool(2 * settings.api_threads)
        #: The ranking pipeline: every bundle and reconstruct ranks through it.
        self.recall = RecallPipeline(store, self.dense, self.policy, self._read_ahead)
        #: The vector queue's drainer (:mod:`graphsvc.service.vector_queue`): a server starts it
        #: (:meth:`VectorQueue.start`); :meth:`embed` drains with it offline.
        self.vector_queue = VectorQueue(store, self.dense, settings)

    # The checks that need no settings, as every surface calls them on the service.
    check_namespace = staticmethod(check_namespace)
    check_run_id = staticmethod(check_run_id)

    def check_input(self, item: MemoryInput) -> None:
        """Check a memory input against the limits of the settings."""
        check_text(item.text, "memory text", self.settings.max_text_chars)
