"""Domain models: pure data, no I/O, one module per part of the domain.

- :mod:`graphsvc.model.base`: :class:`Model` and :class:`InputModel`, the UTC datetime types,
  the name patterns and the fast :func:`construct`;
- :mod:`graphsvc.model.memory`: memories and links as written and as stored, a stored belief,
  what a write did;
- :mod:`graphsvc.model.validity`: the past an as-of read answers from, a memory's effective
  validity;
- :mod:`graphsvc.model.reads`: what a read answers: a bundle and its capsules, a reconstructed
  belief, a namespace's counts;
- :mod:`graphsvc.model.runs`: a run's context events;
- :mod:`graphsvc.model.erase`: what forget and erase take and remove.

The package exports every public name of its modules, so ``from graphsvc.model import X`` works
whichever module ``X`` lives in (as :mod:`graphsvc.recall` and :mod:`graphsvc.prompt` do). The
modules import one another, never this package.

Field names are snake_case in Python and camelCase on the wire
(``model_dump(by_alias=True)``), which
are exactly the GraphQL names of docs/design.md, so the CLI's ``--json`` and the API agree.

The GraphQL output types are derived from these models (:mod:`graphsvc.api.types`): a field's
``Field(description=...)`` is the GraphQL field's description, and the first paragraph of a
class's docstring is the GraphQL type's.
"""

from graphsvc.model.base import (
    KIND_PATTERN,
    NAMESPACE_PATTERN,
    NAMESPACE_RE,
    AwareUtcDateTime,
    InputModel,
    Model,
    UtcDateTime,
    as_utc,
    construct,
    invalid_unicode_at,
    unicode_problem,
    utcnow,
    uuid_of_int,
)
from graphsvc.model.erase import (
    EraseFilter,
    EraseReceipt,
    ForgetReceipt,
    LinkRef,
)
from graphsvc.model.memory import (
    LINK_KIND_DESCRIPTIONS,
    Belief,
    Link,
    LinkInput,
    LinkKind,
    Memory,
    MemoryInput,
    Successor,
    WriteResult,
)
from graphsvc.model.reads import (
    ORDER_REASON_DESCRIPTIONS,
    AnswerEvidence,
    ContextBundle,
    ContextCapsule,
    NamespaceStats,
    OrderReason,
    ReconstructedBelief,
)
from graphsvc.model.runs import (
    ContextEvent,
    ContextEventKind,
)
from graphsvc.model.validity import (
    AS_OF_MODE_DESCRIPTIONS,
    SUPERSEDED_BY_TEXT,
    VALID_FROM_TEXT,
    VALID_UNTIL_TEXT,
    VALIDITY_DESCRIPTIONS,
    AsOf,
    AsOfMode,
    MemoryValidity,
    Validity,
    ValidityInterval,
)

__all__ = [
    "AS_OF_MODE_DESCRIPTIONS",
    "KIND_PATTERN",
    "LINK_KIND_DESCRIPTIONS",
    "NAMESPACE_PATTERN",
    "NAMESPACE_RE",
    "ORDER_REASON_DESCRIPTIONS",
    "SUPERSEDED_BY_TEXT",
    "VALIDITY_DESCRIPTIONS",
    "VALID_FROM_TEXT",
    "VALID_UNTIL_TEXT",
    "AnswerEvidence",
    "AsOf",
    "AsOfMode",
    "AwareUtcDateTime",
    "Belief",
    "ContextBundle",
    "ContextCapsule",
    "ContextEvent",
    "ContextEventKind",
    "EraseFilter",
    "EraseReceipt",
    "ForgetReceipt",
    "InputModel",
    "Link",
    "LinkInput",
    "LinkKind",
    "LinkRef",
    "Memory",
    "MemoryInput",
    "MemoryValidity",
    "Model",
    "NamespaceStats",
    "OrderReason",
    "ReconstructedBelief",
    "Successor",
    "UtcDateTime",
    "Validity",
    "ValidityInterval",
    "WriteResult",
    "as_utc",
    "construct",
    "invalid_unicode_at",
    "unicode_problem",
    "utcnow",
    "uuid_of_int",
]
