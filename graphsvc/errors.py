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


def validation_message(exc: ValidationError, where: str | None = None) -> str:
    """pydantic's errors as graphsvc phrases them: one ``field: problem`` per error, joined by
    ``; ``. With ``where`` (``input``, ``inputs.3``), every field is prefixed with it."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        path = ".".join(part for part in (where, field) if part) or "input"
        parts.append(f"{path}: {err['msg']}")
    return "; ".join(parts)


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
