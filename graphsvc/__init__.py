"""graphsvc: a graph-backed memory service for LLM agents.

The names below are imported on first use (PEP 562), so that ``import graphsvc.client`` or
``graphsvc --help`` does not load the service, the stores and their dependencies.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphsvc.errors import (
        BadInputError,
        ConflictError,
        GraphsvcError,
        LimitExceededError,
        NotFoundError,
        StoreUnavailableError,
    )
    from graphsvc.model import (
        ContextBundle,
        ContextCapsule,
        ContextEvent,
        ForgetReceipt,
        Link,
        LinkInput,
        LinkKind,
        Memory,
        MemoryInput,
        OrderReason,
        ReconstructedBelief,
    )
    from graphsvc.service import MemoryService
    from graphsvc.settings import Settings

__version__ = "0.1.0"

# Public name -> the module that defines it.
_EXPORTS = {
    "BadInputError": "graphsvc.errors",
    "ConflictError": "graphsvc.errors",
    "GraphsvcError": "graphsvc.errors",
    "LimitExceededError": "graphsvc.errors",
    "NotFoundError": "graphsvc.errors",
    "StoreUnavailableError": "graphsvc.errors",
    "ContextBundle": "graphsvc.model",
    "ContextCapsule": "graphsvc.model",
    "ContextEvent": "graphsvc.model",
    "ForgetReceipt": "graphsvc.model",
    "Link": "graphsvc.model",
    "LinkInput": "graphsvc.model",
    "LinkKind": "graphsvc.model",
    "Memory": "graphsvc.model",
    "MemoryInput": "graphsvc.model",
    "OrderReason": "graphsvc.model",
    "ReconstructedBelief": "graphsvc.model",
    "MemoryService": "graphsvc.service",
    "Settings": "graphsvc.settings",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphsvc' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "BadInputError",
    "ConflictError",
    "ContextBundle",
    "ContextCapsule",
    "ContextEvent",
    "ForgetReceipt",
    "GraphsvcError",
    "LimitExceededError",
    "Link",
    "LinkInput",
    "LinkKind",
    "Memory",
    "MemoryInput",
    "MemoryService",
    "NotFoundError",
    "OrderReason",
    "ReconstructedBelief",
    "Settings",
    "StoreUnavailableError",
    "__version__",
]
