"""The validated request of each read: one model per read, built once at the edge that received
it (a GraphQL resolver, an MCP tool, the command line, the Python client) and handed inward to
:class:`~graphsvc.service.MemoryService` as it is.

A read's parameters are written here and nowhere else: the GraphQL arguments of ``bundle`` and
``reconstruct`` are made from these fields (:mod:`graphsvc.api.requests`), the MCP tools take
them as their arguments, the command line makes its options from them
(:mod:`graphsvc.cli.requests`), and the Python client sends them as the GraphQL variables. A
field added here reaches every surface. Field names are snake_case in Python and camelCase on the
wire, which are the GraphQL argument names; the descriptions are the GraphQL arguments'.

What a model checks needs no settings: types, a time zone on ``asOf``, ``asOfMode`` only with
``asOf``. The limits that come from the settings (the largest budget, the most capsules, the
longest query) are checked by the service, so that every surface refuses the same things with
the same messages.

Pure data (pydantic), importing only :mod:`graphsvc.model` and :mod:`graphsvc.errors`, so that the
Python client, which sends these models, stays free of the server's dependencies.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Self, Union, get_args, get_origin

from pydantic import AwareDatetime, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo

from graphsvc.errors import BadInputError, validation_message
from graphsvc.model import AsOf, AsOfMode, AwareUtcDateTime, InputModel

AS_OF_DESCRIPTION = (
    "Answer as of this instant (a time zone is required); null: now. IDF statistics stay the "
    "namespace's now."
)
AS_OF_MODE_DESCRIPTION = (
    "With asOf: KNOWN (what was recorded by then) or VALID (what was true then; default)."
)
#: The instant a read answers as of, and its view of the past: the last two fields of every read.
AsOfAt = Annotated[AwareUtcDateTime | None, Field(description=AS_OF_DESCRIPTION)]
AsOfModeOf = Annotated[AsOfMode | None, Field(description=AS_OF_MODE_DESCRIPTION)]


class ReadRequest(InputModel):
    """What every read as of a past instant takes: the instant and the view of the past."""

    if TYPE_CHECKING:  # each read declares them after its own fields (pydantic would list
        # fields declared here first, and a read's fields keep the order its surfaces show)
        as_of: datetime | None
        as_of_mode: AsOfMode | None

    @model_validator(mode="after")
    def _mode_needs_instant(self) -> Self:
        if self.as_of is None and self.as_of_mode is not None:
            raise ValueError("asOfMode needs asOf: give the instant to read as of")
        return self

    @property
    def when(self) -> AsOf | None:
        """The past this read answers from (VALID unless KNOWN is asked); None: now."""
        if self.as_of is None:
            return None
        return AsOf(at=self.as_of, mode=self.as_of_mode or AsOfMode.VALID)

    @classmethod
    def of(cls, request: Self | str, options: Mapping[str, Any]) -> Self:
        """The request a caller gave: a model as it is, or its first field's value (the query,
        the cue) with the other fields as ``options`` (snake_case or camelCase names).

        Raises:
            BadInputError: a field is unknown or invalid (the message names it as GraphQL
                does), or a model was given together with options.
        """
        if isinstance(request, cls):
            if options:
                raise BadInputError(
                    f"pass either a {cls.__name__} or options, not both (got "
                    f"{', '.join(sorted(options))})"
                )
            return request
        first = next(iter(cls.model_fields))
        try:
            return cls.model_validate({first: request, **options})
        except ValidationError as exc:
            raise BadInputError(validation_message(exc)) from exc


class BundleQuery(ReadRequest):
    """A question, and how much memory may offer a prompt for it."""

    query: str = Field(description="The question, in words.")
    budget_tokens: int | None = Field(default=None, description="Token budget (default 1000).")
    stage: str | None = Field(default=None, description="Scoring stage: default, recent or exact.")
    min_score: float | None = Field(
        default=None,
        description="Abstain (skipped) when topScore is below this, in [0, 1]. Default: the "
        "stage's threshold; 0 turns abstention off.",
    )
    max_capsules: int | None = Field(
        default=None, description="Most capsules to pack (default 20)."
    )
    as_of: AsOfAt = None
    as_of_mode: AsOfModeOf = None


class ReconstructQuery(ReadRequest):
    """A cue, how many direct hits and how far to walk the graph from them."""

    cue: str = Field(description="What to reconstruct a belief about, in words.")
    k: int | None = Field(default=None, description="How many direct hits (default 5).")
    depth: int | None = Field(default=None, description="Walk depth in hops (default 2).")
    as_of: AsOfAt = None
    as_of_mode: AsOfModeOf = None


def base_type(field: FieldInfo) -> type:
    """A request field's type as every surface maps it (to a GraphQL type, a command-line
    option): without ``None``, without pydantic's metadata, an aware datetime as ``datetime``."""
    annotation: Any = field.annotation
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if annotation is AwareDatetime:
        return datetime
    if not isinstance(annotation, type):
        raise TypeError(f"a request field of type {annotation!r} has no surface type: add one")
    return annotation


__all__ = ["BundleQuery", "ReadRequest", "ReconstructQuery", "base_type"]
