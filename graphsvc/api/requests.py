"""GraphQL arguments made from the request models of :mod:`graphsvc.requests`.

A read's resolver is declared with :func:`takes`: its GraphQL arguments are the fields of the
read's model (names, types, defaults and descriptions), and the resolver is called with the
model, validated, instead of the arguments one by one. So the parameters of ``bundle`` and
``reconstruct`` are written once, in the model, and a field added there is an argument here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypeVar

import strawberry
from pydantic.fields import FieldInfo

from graphsvc import model as m
from graphsvc.api.inputs import to_domain
from graphsvc.api.types import AsOfMode
from graphsvc.requests import ReadRequest, base_type

R = TypeVar("R", bound=ReadRequest)
T = TypeVar("T")

#: The GraphQL type of a model's type where the two differ: an enum with described values.
GRAPHQL_TYPES: dict[type, object] = {m.AsOfMode: AsOfMode}
#: The fields every read takes last (:class:`ReadRequest`): a resolver's own extra arguments
#: (the run to record) come before them.
TIME_FIELDS = ("as_of", "as_of_mode")


def graphql_annotation(field: FieldInfo) -> object:
    """The annotation strawberry reads for a model field: its :func:`base_type`, mapped by
    :data:`GRAPHQL_TYPES`, nullable unless the field is required."""
    base = base_type(field)
    annotation: Any = GRAPHQL_TYPES.get(base, base)
    return annotation if field.is_required() else annotation | None


def argument(name: str, field: FieldInfo) -> inspect.Parameter:
    """The resolver parameter (a GraphQL argument) of a model field."""
    kind = graphql_annotation(field)
    described = Annotated[kind, strawberry.argument(description=field.description)]  # type: ignore[valid-type]
    default = inspect.Parameter.empty if field.is_required() else None
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=described
    )


def takes(
    model: type[R], *extra: inspect.Parameter
) -> Callable[[Callable[..., Awaitable[T]]], Callable[..., Awaitable[T]]]:
    """Declare a resolver ``fn(self, info, request, **extra)`` whose GraphQL arguments are the
    fields of ``model``, with the ``extra`` parameters (the run to record an event for) before
    the time fields; it is called with ``request``: the model, validated (a field pydantic
    refuses is ``BAD_INPUT`` naming the argument)."""

    def decorate(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        fields = [argument(name, field) for name, field in model.model_fields.items()]
        own = [p for p in fields if p.name not in TIME_FIELDS]
        timed = [p for p in fields if p.name in TIME_FIELDS]
        extra_names = [p.name for p in extra]
        signature = inspect.signature(fn)
        head = [signature.parameters["self"], signature.parameters["info"]]

        @functools.wraps(fn)
        async def resolve(self: object, info: Any, **arguments: Any) -> T:
            values = {name: arguments.pop(name) for name in model.model_fields}
            request = to_domain(model, values, "", aliases=True)
            return await fn(self, info, request, **arguments)

        resolve.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*head, *own, *extra, *timed]
        )
        del resolve.__wrapped__  # strawberry reads __signature__, not the wrapped function's
        if set(extra_names) & set(model.model_fields):
            raise TypeError(f"{fn.__name__}: {extra_names} repeat fields of {model.__name__}")
        return resolve

    return decorate


def parameter(name: str, annotation: object, default: object) -> inspect.Parameter:
    """An extra resolver parameter for :func:`takes` (an ``Annotated`` type with its
    ``strawberry.argument``)."""
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def run_parameters(run_id: object, step: object) -> Sequence[inspect.Parameter]:
    """The ``runId`` and ``step`` arguments of a read that records an event."""
    return (parameter("run_id", run_id, None), parameter("step", step, 0))


__all__ = ["GRAPHQL_TYPES", "argument", "graphql_annotation", "run_parameters", "takes"]
