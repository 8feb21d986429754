"""graphsvc: a graph-backed memory service for LLM agents."""

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
    ReconstructedBelief,
)
from graphsvc.service import MemoryService
from graphsvc.settings import Settings

__version__ = "0.1.0"

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
    "ReconstructedBelief",
    "Settings",
    "StoreUnavailableError",
    "__version__",
]
