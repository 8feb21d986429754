"""The base of every domain model, and the helpers they share: :class:`Model` (frozen, camelCase
on the wire), :class:`InputModel` (what callers send: valid Unicode at any depth), the fast
:func:`construct` for values already checked, the UTC datetime types and the name patterns.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar
from uuid import UUID, SafeUUID

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, field_validator
from pydantic.alias_generators import to_camel

KIND_PATTERN = r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$"
NAMESPACE_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
# Every namespace is checked against this one pattern (settings, API keys, the service).
NAMESPACE_RE = re.compile(NAMESPACE_PATTERN)


def as_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


UtcDateTime = Annotated[datetime, AfterValidator(as_utc)]
#: A time that must say its zone (a naive one is refused, not guessed), converted to UTC: the
#: bounds of a validity interval and the instant of an as-of read.
AwareUtcDateTime = Annotated[AwareDatetime, AfterValidator(as_utc)]


class Model(BaseModel):
    """Base: immutable, camelCase aliases, populate by either name."""

    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid"
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The wire form: camelCase names, ISO datetimes, UUIDs as strings."""
        return self.model_dump(mode="json", by_alias=True)


_T = TypeVar("_T", bound=Model)


_UNKNOWN_SAFETY = SafeUUID.unknown  # an enum member read once (each read is a descriptor call)


def uuid_of_int(key: int) -> UUID:
    """``UUID(int=key)`` for a key known to fit in 128 bits, without ``UUID.__init__``'s
    checks (a load or a write makes one per memory)."""
    made = object.__new__(UUID)
    object.__setattr__(made, "int", key)
    object.__setattr__(made, "is_safe", _UNKNOWN_SAFETY)
    return made


def construct(cls: type[_T], values: dict[str, Any]) -> _T:
    """What ``cls.model_construct(**values)`` makes when ``values`` holds every field of ``cls``
    (a :class:`Model`: frozen, no extras allowed, no private attributes), in a tenth of the
    time, and without validation: for values already of the fields' types (a memory being
    written, one read back, the capsules of a bundle)."""
    made = cls.__new__(cls)
    setattr_ = object.__setattr__
    setattr_(made, "__dict__", values)
    setattr_(made, "__pydantic_fields_set__", set(values))
    setattr_(made, "__pydantic_extra__", None)
    setattr_(made, "__pydantic_private__", None)
    return made


def invalid_unicode_at(text: str) -> int | None:
    """The index of the first character UTF-8 cannot encode (a lone surrogate such as U+DFFF,
    which JSON can escape and Python keeps), or None when the text is valid Unicode."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def unicode_problem(text: str) -> str | None:
    """Why ``text`` is not valid Unicode (it holds an unpaired surrogate), or None."""
    at = invalid_unicode_at(text)
    if at is None:
        return None
    return (
        f"the text holds an unpaired surrogate (U+{ord(text[at]):04X}) at character {at}, which "
        "is not valid Unicode: send valid UTF-8 text"
    )


def _check_unicode(value: Any) -> None:
    if isinstance(value, str):
        problem = unicode_problem(value)
        if problem is not None:
            raise ValueError(problem)
    elif isinstance(value, tuple | list):
        for item in value:
            _check_unicode(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key)
            _check_unicode(item)


class InputModel(Model):
    """Base of what callers send: every string, at any depth, must be valid Unicode, so that no
    surface (GraphQL, MCP, the CLI, the Python API) can store text that cannot be encoded."""

    @field_validator("*", mode="after")
    @classmethod
    def _valid_unicode(cls, value: Any) -> Any:
        _check_unicode(value)
        return value


def utcnow() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)
