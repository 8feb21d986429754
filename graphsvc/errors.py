"""graphsvc's own errors.

Every error a caller can cause or hit is one of these. Each carries a stable ``code`` (the GraphQL
``extensions.code`` and the CLI's reason) and a message that says what to do next. Errors from the
libraries below (the Neo4j driver, the file system) are translated into these at one boundary, with
``raise ... from exc``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class GraphsvcError(Exception):
    """Base class of every graphsvc error."""

    code = "INTERNAL"


class BadInputError(GraphsvcError):
    """The request is malformed or out of range; nothing was written."""

    code = "BAD_INPUT"


class ConflictError(BadInputError):
    """A write names an existing id with different content."""


class NotFoundError(GraphsvcError):
    """A memory (or other object) the request names does not exist in this namespace."""

    code = "NOT_FOUND"


class LimitExceededError(GraphsvcError):
    """The request is larger than a configured limit."""

    code = "LIMIT_EXCEEDED"


class UnauthenticatedError(GraphsvcError):
    """The request carries no API key, or one the server does not know."""

    code = "UNAUTHENTICATED"


class ForbiddenError(GraphsvcError):
    """The API key is valid but its role does not allow the operation (a read key writing)."""

    code = "FORBIDDEN"


class StoreUnavailableError(GraphsvcError):
    """The store cannot be reached or is locked; retry later. Nothing was half-applied, but a
    write may or may not have been applied: resend it with the same ids (writes are idempotent).

    Attributes:
        retry_after: seconds after which a retry may succeed (the HTTP ``Retry-After``), when the
            store can tell; ``None`` when it cannot (or when retrying will not help).
    """

    code = "UNAVAILABLE"

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StoreCorruptError(GraphsvcError):
    """The persisted data cannot be read back."""

    code = "INTERNAL"


def validation_message(
    exc: ValidationError, where: str | None = None, *, wire_names: bool = True
) -> str:
    """pydantic's errors as graphsvc phrases them: one ``field: problem`` per error, joined by
    ``; ``. Fields are named as the wire names them (camelCase: ``validFrom``, never
    ``valid_from``; ``wire_names=False`` keeps Python's names, for the settings, which are
    named after their environment variables); with ``where`` (``input``, ``inputs.3``), every
    field is prefixed with it.
    A check of the whole object (which names its fields itself) has no field, and pydantic's
    "Value error, " before a message of graphsvc's own is dropped."""
    parts = []
    for err in exc.errors():
        field = ".".join(
            _camel(p) if isinstance(p, str) and wire_names else str(p) for p in err["loc"]
        )
        path = ".".join(part for part in (where, field) if part)
        message = err["msg"]
        if err["type"] == "timezone_aware":
            message = "has no time zone: give one (2024-03-11T00:00:00Z)"
        elif err["type"] == "value_error":
            message = str(err.get("ctx", {}).get("error", message.removeprefix("Value error, ")))
        parts.append(f"{path}: {message}" if path else message)
    return "; ".join(parts)


def _camel(name: str) -> str:
    """A snake_case field name as the wire spells it (pydantic's ``to_camel``, without importing
    pydantic here)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


__all__ = [
    "BadInputError",
    "ConflictError",
    "ForbiddenError",
    "GraphsvcError",
    "LimitExceededError",
    "NotFoundError",
    "StoreCorruptError",
    "StoreUnavailableError",
    "UnauthenticatedError",
    "validation_message",
]
