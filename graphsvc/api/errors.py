"""The error policy of the GraphQL layer.

A :class:`~graphsvc.errors.GraphsvcError` reaches the client with its message and
``extensions.code``; parse, validation and limit errors get ``BAD_INPUT`` or ``LIMIT_EXCEEDED``
with a message that says what to do; anything else is masked as ``Unexpected error; request id
X`` (``code: INTERNAL``) and logged with its traceback and the request id (:class:`ErrorPolicy`,
:meth:`GraphsvcSchema.process_errors`).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import strawberry
from graphql import GraphQLError
from pydantic import ValidationError
from strawberry.extensions import MaskErrors, SchemaExtension
from strawberry.types import ExecutionContext

from graphsvc.api.context import RequestContext
from graphsvc.errors import GraphsvcError, StoreUnavailableError, validation_message

if TYPE_CHECKING:
    from graphsvc.api.limits import PreparedCache

logger = logging.getLogger("graphsvc.api")

# Codes a client may see on a graphsvc error; any other (INTERNAL) is masked like a crash.
PUBLIC_CODES = frozenset(
    {"BAD_INPUT", "NOT_FOUND", "LIMIT_EXCEEDED", "UNAVAILABLE", "UNAUTHENTICATED", "FORBIDDEN"}
)
MASKED_CODE = "INTERNAL"

# graphql-core's own messages for limits and aborted validation, and what we tell the client
# instead: (pattern, code, message). The depth, alias, spread and length limits are graphsvc's
# own (graphsvc.api.limits) and carry their code. tests/api/test_api_schema.py and
# tests/api/test_attacks.py trigger each one, so a change of wording upstream fails a test.
_REWORDED: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"Document contains more than (\d+) tokens"),
        "LIMIT_EXCEEDED",
        "the query document has more than {0} tokens: pass large inputs as variables, or split "
        "the request",
    ),
    (
        re.compile(r"Document is nested too deeply"),
        "LIMIT_EXCEEDED",
        "the query document nests selections, lists or objects too deeply to parse: flatten it, "
        "or pass nested inputs as variables",
    ),
    (
        re.compile(r"^Variable values are nested too deeply"),
        "LIMIT_EXCEEDED",
        "the variables nest lists or objects too deeply: flatten them",
    ),
    (
        re.compile(r"^Too many validation errors"),
        "BAD_INPUT",
        "the document has too many errors to list them all (the first ones are above): fix "
        "those and send it again",
    ),
    (
        re.compile(r"^Validation aborted\.$"),
        "BAD_INPUT",
        "the document is too complex to validate (fields repeated many times, or fragments "
        "nested too deeply): ask for each field once, or split it into several requests",
    ),
)


def _root_cause(error: GraphQLError) -> BaseException | None:
    original: BaseException | None = error.original_error
    while isinstance(original, GraphQLError) and original.original_error is not None:
        original = original.original_error
    return original


def classify(error: GraphQLError) -> tuple[str, str] | None:
    """``(code, message)`` for an error the caller caused or may see; ``None`` for an unexpected
    one (to be masked)."""
    cause = _root_cause(error)
    if isinstance(cause, GraphsvcError):
        return (cause.code, str(cause)) if cause.code in PUBLIC_CODES else None
    if isinstance(cause, ValidationError):
        return "BAD_INPUT", validation_message(cause)
    if error.path is not None:
        return None  # a resolver failed in a way graphsvc did not expect
    if cause is not None and not error.message.startswith("Variable '$"):
        return None  # not a variable coercion error: something broke before execution
    for pattern, code, template in _REWORDED:
        found = pattern.search(error.message)
        if found:
            return code, template.format(*found.groups())
    return "BAD_INPUT", error.message  # parse, validation or variable errors


def retry_after_of(errors: Iterable[GraphQLError]) -> float | None:
    """The longest ``retry_after`` among the errors caused by an unavailable store (seconds),
    ``None`` when none of them says when to retry."""
    waits = [
        cause.retry_after
        for cause in (_root_cause(error) for error in errors)
        if isinstance(cause, StoreUnavailableError) and cause.retry_after is not None
    ]
    return max(waits) if waits else None


def is_unexpected(error: GraphQLError) -> bool:
    """True for errors to mask: anything but graphsvc, request and limit errors."""
    return classify(error) is None


def _request_id(context: object) -> str:
    return context.request_id if isinstance(context, RequestContext) else "-"


class ErrorPolicy(MaskErrors):
    """Masks unexpected errors (``Unexpected error; request id X``) and gives every other error an
    ``extensions.code`` and a message that says what to do."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=is_unexpected)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        request_id = _request_id(self.execution_context.context)
        return GraphQLError(
            message=f"Unexpected error; request id {request_id}",
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": MASKED_CODE, "requestId": request_id},
        )

    def on_operation(self) -> Iterator[None]:
        yield from super().on_operation()
        result = self.execution_context.result
        errors = getattr(result, "errors", None)
        if result is None or not errors:
            return
        coded = [_with_code(error) for error in errors]
        result.errors = coded
        context = self.execution_context.context
        if isinstance(context, RequestContext):
            context.log["errors"] = sorted({str((e.extensions or {}).get("code")) for e in coded})


def _with_code(error: GraphQLError) -> GraphQLError:
    if error.extensions and "code" in error.extensions:
        return error
    found = classify(error)
    code, message = found if found is not None else (MASKED_CODE, error.message)
    return GraphQLError(
        message=message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions={**(error.extensions or {}), "code": code},
    )


class OperationLog(SchemaExtension):
    """Puts the operation's name and type into the request's access log line."""

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context.context
        if isinstance(context, RequestContext):
            context.log["operation"] = self.execution_context.operation_name
            with contextlib.suppress(RuntimeError):  # no operation in the document
                context.log["operation_type"] = self.execution_context.operation_type.value
        yield


class GraphsvcSchema(strawberry.Schema):
    """A schema that logs only unexpected errors, with the request id and the traceback; the
    errors a caller causes are answered, not logged as failures.

    Attributes:
        documents: the prepared-document cache :func:`~graphsvc.api.schema.make_schema` gave
            it (its ``hits`` and ``misses`` show the cache working).
    """

    documents: PreparedCache | None = None

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        request_id = _request_id(execution_context.context if execution_context else None)
        for error in errors:
            if is_unexpected(error):
                cause = _root_cause(error) or error
                logger.error(
                    "unexpected error: %s",
                    error.message,
                    exc_info=(type(cause), cause, cause.__traceback__),
                    extra={"fields": {"request_id": request_id, "path": error.path}},
                )
            else:
                logger.debug(
                    "request error: %s",
                    error.message,
                    extra={"fields": {"request_id": request_id}},
                )


__all__ = [
    "MASKED_CODE",
    "PUBLIC_CODES",
    "ErrorPolicy",
    "GraphsvcSchema",
    "OperationLog",
    "classify",
    "is_unexpected",
    "retry_after_of",
]
