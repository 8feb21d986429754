"""What a LangChain document or a LangGraph item becomes in graphsvc, and back.

graphsvc keeps a memory's text, kind, tags (each 1-64 characters, at most 32), source (at most
512 characters), times and confidence; it has no free-form property map. So the adapters keep what
a memory has no field for as JSON in ``source``, after a prefix that says which adapter wrote it,
and refuse what would not come back as it was given (docs/integrations.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID, uuid5

from graphsvc.errors import BadInputError

# The source of a memory is at most this long (graphsvc's MemoryInput).
SOURCE_CHARS = 512
# A tag is 1 to this many characters.
TAG_CHARS = 64

# UUIDv5 namespaces of the ids the adapters derive (fixed: they name stored memories).
DOCUMENT_IDS = UUID("0b7e7f4e-3d1a-5c55-9a3e-7c1f4b8d2e61")
ITEM_IDS = UUID("5d2c9a10-8f3b-5e7a-b4c6-2e9f1a7d3c85")


def to_json(value: Any, what: str) -> str:
    """``value`` as compact JSON that loads back equal to it, else BadInputError naming ``what``."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise BadInputError(f"{what} is not JSON ({exc}): graphsvc keeps it as JSON") from exc
    if json.loads(text) != value:
        raise BadInputError(
            f"{what} would not come back as given from JSON (tuples come back as lists, keys "
            f"as strings): pass it as JSON types"
        )
    return text


def bounded_source(prefix: str, payload: Mapping[str, Any], what: str) -> str:
    """``prefix`` and ``payload`` as JSON, within graphsvc's source limit."""
    source = prefix + to_json(dict(payload), what)
    if len(source) > SOURCE_CHARS:
        raise BadInputError(
            f"{what} takes {len(source)} characters as JSON with its id; graphsvc keeps at most "
            f"{SOURCE_CHARS} (a memory's source): keep the large parts in the text"
        )
    return source


def read_source(prefix: str, source: str | None) -> dict[str, Any] | None:
    """The payload of a source written with ``prefix``, or None for any other source."""
    if source is None or not source.startswith(prefix):
        return None
    try:
        payload = json.loads(source[len(prefix) :])
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def document_id(collection: str, doc_id: str) -> UUID:
    """The memory id of document ``doc_id`` of ``collection``."""
    return uuid5(DOCUMENT_IDS, f"{collection}\x1f{doc_id}")


def item_id(namespace: tuple[str, ...], key: str) -> UUID:
    """The memory id of the LangGraph item at ``namespace`` and ``key``."""
    return uuid5(ITEM_IDS, json.dumps([*namespace, key], ensure_ascii=False))


def checked_tag(tag: str, what: str) -> str:
    if not 1 <= len(tag) <= TAG_CHARS:
        raise BadInputError(
            f"{what} makes the tag {tag!r} of {len(tag)} characters; graphsvc tags are 1 to "
            f"{TAG_CHARS}"
        )
    return tag
