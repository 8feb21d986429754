"""The service layer: validation, ids and clocks, events, and the orchestration of store and recall.

Every entry point of graphsvc (CLI, GraphQL, MCP, Python API) goes through :class:`MemoryService`.
It is the one place where input is checked against the settings' limits, so every surface refuses
the same things with the same messages.

The service is built in rooms by capability, each a module of this package over one shared core
(:mod:`.core`: store, settings, recall policy and pipeline, vector queue, clock and checks):
:mod:`.writes`, :mod:`.links` (links and erasure), :mod:`.reads`, :mod:`.recall`, :mod:`.prompt`
(runs and prompt assembly) and :mod:`.admin`; :mod:`.checks`, :mod:`.ids` and :mod:`.clock` are
what the rooms share; :mod:`.vector_queue` encodes in the background the memories written
without their vector. This module is the package's entrance: :class:`MemoryService` combines the
rooms, and the names other packages use are imported from here.
"""

from __future__ import annotations

from graphsvc.service.admin import Admin
from graphsvc.service.checks import check_interval
from graphsvc.service.ids import CONTENT_ID_NAMESPACE, content_id, content_ids
from graphsvc.service.links import LinksAndErase
from graphsvc.service.prompt import RunsAndPrompt
from graphsvc.service.reads import Reads
from graphsvc.service.recall import Recall
from graphsvc.service.writes import Writes


class MemoryService(Writes, LinksAndErase, Reads, RunsAndPrompt, Recall, Admin):
    """graphsvc's operations on one store: every room of the service over one shared core
    (:class:`~graphsvc.service.core.ServiceCore`, whose arguments it takes).

    Args:
        store: an opened store.
        settings: limits and defaults.
        clock: the time source (tests pass a fixed one). ``recordedAt`` never goes backwards
            within one service, so recorded order is write order.
        dense: the encoder for recall by meaning (:class:`DenseRecall`); none: lexical-only.
        policy: the recall policy; none: the one the settings describe
            (:meth:`RecallPolicy.from_settings`).
    """


__all__ = [
    "CONTENT_ID_NAMESPACE",
    "MemoryService",
    "check_interval",
    "content_id",
    "content_ids",
]
