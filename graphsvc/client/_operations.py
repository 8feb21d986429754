"""What both clients share: the GraphQL documents, one builder per operation, and the boundary
where an HTTP response or a transport failure becomes a graphsvc error.

An :class:`Operation` is a document, its variables and the parser of ``data.result``; the clients
(:mod:`graphsvc.client._async`, and :mod:`graphsvc.client._sync` generated from it) only send it
and parse the answer, so every method is written once here and once in the async source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from uuid import UUID

import httpx
from pydantic import ValidationError

from graphsvc.errors import (
    BadInputError,
    ForbiddenError,
    GraphsvcError,
    LimitExceededError,
    NotFoundError,
    StoreUnavailableError,
    UnauthenticatedError,
    validation_message,
)
from graphsvc.model import (
    AsOfMode,
    ContextBundle,
    ContextEvent,
    EraseFilter,
    EraseReceipt,
    ForgetReceipt,
    Link,
    LinkInput,
    LinkKind,
    Memory,
    MemoryInput,
    ReconstructedBelief,
    ValidityInterval,
)
from graphsvc.prompt import DriftReport, PromptBundle, PromptInput
from graphsvc.requests import BundleQuery, ReadRequest, ReconstructQuery, base_type

R = TypeVar("R")

DEFAULT_URL = "http://127.0.0.1:8000/graphql"
DEFAULT_TIMEOUT = 30.0

ERRORS: dict[str, type[GraphsvcError]] = {
    "BAD_INPUT": BadInputError,
    "NOT_FOUND": NotFoundError,
    "LIMIT_EXCEEDED": LimitExceededError,
    "UNAVAILABLE": StoreUnavailableError,
    "UNAUTHENTICATED": UnauthenticatedError,
    "FORBIDDEN": ForbiddenError,
}

# -- documents: every field of the models, so model_validate gets all it needs --------------------

MEMORY_FIELDS = (
    "id namespace text kind occurredAt recordedAt invalidatedAt tags source confidence tokens "
    "terms validFrom validUntil"
)
LINK_FIELDS = "source target kind weight createdAt note"
CAPSULE_FIELDS = (
    "memoryId text kind score tokens occurredAt matchedTerms matchedWords reason validFrom "
    "validUntil supersededBy validity"
)
ANSWER_EVIDENCE_FIELDS = "coverage unseen bm25 cosine agreement attribution margin"
BUNDLE_FIELDS = (
    "query stage budgetTokens minScore usedTokens skipped topScore evidenceCoverage "
    f"answerEvidence {{ {ANSWER_EVIDENCE_FIELDS} }} "
    "uncoveredTerms uncoveredWords chronological orderReason rendered retrieval "
    "pendingVectors retrievalNote "
    f"capsules {{ {CAPSULE_FIELDS} }} "
    f"excluded {{ {CAPSULE_FIELDS} }}"
)
AS_OF_FIELDS = "asOf { at mode }"
BUNDLE_FIELDS += f" retrieval {AS_OF_FIELDS}"
VALIDITY_FIELDS = "memoryId validFrom validUntil supersededBy validity"
BELIEF_FIELDS = (
    f"cue summary sourceIds linkedContextIds confidence beliefId memories {{ {MEMORY_FIELDS} }} "
    f"{AS_OF_FIELDS} validity {{ {VALIDITY_FIELDS} }}"
)
HISTORY_FIELDS = f"validFrom validUntil supersededBy memory {{ {MEMORY_FIELDS} }}"
EVENT_FIELDS = "runId seq step kind detail estTokens reportedTokens recordedAt"
PROMPT_FIELDS = (
    "fragments { name text tokens } environment { cwd model searchMode date } "
    "projectContext { path scope content contentHash truncated visibility tokens originalTokens } "
    "toolCatalog { name description inputSchema tokens } "
    "availableSkills { name description path tokens } "
    "transcriptTail { index role text toolName tokens visibility } omittedTranscriptEntries "
    f"userTurn memory {{ {BUNDLE_FIELDS} }} memoryNote historyReuse prevContextHash "
    "prevContextHashes contextLedger { contextWindow reservedCompletionTokens "
    "availableInputTokens estimatedInputTokens remainingTokens overflowTokens fits systemTokens "
    "messageTokens toolTokens memoryBudgetTokens memoryTokens "
    "items { section name tokens visibility } } "
    f"rendered renderedHash messages runId step assembledEvent {{ {EVENT_FIELDS} }}"
)
DRIFT_FIELDS = (
    "runId steps { step seq estTokens reportedTokens ratio } reportedSteps unreportedSteps "
    "estimatedTokens reportedTokens ratio"
)
RECEIPT_FIELDS = (
    "memoryId namespace removedBeliefIds forgottenAt removedLinks { source target kind }"
)

ERASE_FIELDS = (
    "namespace memories links beliefs events erasedAt complete "
    "filter { everything tag source since until }"
)

REMEMBER = f"""mutation Remember($input: MemoryInput!, $runId: String, $step: Int! = 0) {{
  result: remember(input: $input, runId: $runId, step: $step) {{ {MEMORY_FIELDS} }}
}}"""
REMEMBER_MANY = f"""mutation RememberMany($inputs: [MemoryInput!]!, $runId: String,
    $step: Int! = 0, $waitForVectors: Boolean) {{
  result: rememberMany(inputs: $inputs, runId: $runId, step: $step,
    waitForVectors: $waitForVectors) {{ {MEMORY_FIELDS} }}
}}"""
LINK = f"""mutation Link($input: LinkInput!) {{
  result: link(input: $input) {{ {LINK_FIELDS} }}
}}"""
LINK_MANY = f"""mutation LinkMany($inputs: [LinkInput!]!) {{
  result: linkMany(inputs: $inputs) {{ {LINK_FIELDS} }}
}}"""
FORGET = f"""mutation Forget($id: UUID!) {{
  result: forget(id: $id) {{ {RECEIPT_FIELDS} }}
}}"""
ERASE = f"""mutation Erase($input: EraseInput!) {{
  result: erase(input: $input) {{ {ERASE_FIELDS} }}
}}"""
PROMPT_BUNDLE = f"""query PromptBundle($input: PromptInput!) {{
  result: promptBundle(input: $input) {{ {PROMPT_FIELDS} }}
}}"""
REPORT_TOKENS = f"""mutation ReportTokens($runId: String!, $step: Int!, $reportedTokens: Int!) {{
  result: reportTokens(runId: $runId, step: $step, reportedTokens: $reportedTokens) {{
    {EVENT_FIELDS}
  }}
}}"""
RECORD_EVENT = f"""mutation RecordContextEvent($runId: String!, $step: Int!, $kind: String!,
    $detail: String, $estTokens: Int) {{
  result: recordContextEvent(runId: $runId, step: $step, kind: $kind, detail: $detail,
      estTokens: $estTokens) {{ {EVENT_FIELDS} }}
}}"""
DRIFT = f"""query Drift($runId: String!) {{
  result: drift(runId: $runId) {{ {DRIFT_FIELDS} }}
}}"""
MEMORY = f"""query Memory($id: UUID!) {{
  result: memory(id: $id) {{ {MEMORY_FIELDS} }}
}}"""
HISTORY = f"""query History($id: UUID!) {{
  result: memory(id: $id) {{ history {{ {HISTORY_FIELDS} }} }}
}}"""
EVENTS = f"""query ContextEvents($runId: String!) {{
  result: contextEvents(runId: $runId) {{ {EVENT_FIELDS} }}
}}"""


#: The GraphQL type of a request field's type (:func:`graphsvc.requests.base_type`).
GRAPHQL_TYPE_NAMES: dict[type, str] = {
    str: "String",
    int: "Int",
    float: "Float",
    bool: "Boolean",
    datetime: "DateTime",
    AsOfMode: "AsOfMode",
}
#: The run to record a read's event for, after the read's own variables.
RUN_VARIABLES = (("runId", "String"), ("step", "Int! = 0"))


def read_document(
    kind: str,
    field: str,
    model: type[ReadRequest],
    selection: str,
    extra: Sequence[tuple[str, str]] = (),
) -> str:
    """The document of a read whose arguments are the fields of ``model`` (camelCase, as the
    server makes its arguments from the same model) and the ``extra`` variables: a ``kind``
    (``query``, ``mutation``) named after the field, selecting ``selection`` as ``result``."""
    names = [
        (field_info.alias or name, base_type(field_info), field_info.is_required())
        for name, field_info in model.model_fields.items()
    ]
    variables = [
        (camel, GRAPHQL_TYPE_NAMES[kind_of] + ("!" if required else ""))
        for camel, kind_of, required in names
    ]
    variables += list(extra)
    declared = ", ".join(f"${name}: {graphql}" for name, graphql in variables)
    arguments = ", ".join(f"{name}: ${name}" for name, _ in variables)
    operation = field[:1].upper() + field[1:]
    return (
        f"{kind} {operation}({declared}) {{\n  result: {field}({arguments}) {{ {selection} }}\n}}"
    )


BUNDLE = read_document("query", "bundle", BundleQuery, BUNDLE_FIELDS, RUN_VARIABLES)
EXPLAIN = read_document("query", "reconstruct", ReconstructQuery, BELIEF_FIELDS)
RECONSTRUCT = read_document(
    "mutation", "reconstruct", ReconstructQuery, BELIEF_FIELDS, RUN_VARIABLES
)


def read_variables(request: ReadRequest, **extra: Any) -> dict[str, Any]:
    """A read request as the variables of its document: every field, camelCase, as JSON."""
    return {**request.to_json_dict(), **extra}


@dataclass(frozen=True)
class Operation(Generic[R]):
    """A document, its variables, and how to turn ``data.result`` into the return value."""

    document: str
    variables: dict[str, Any]
    parse: Callable[[Any], R]


def _memory_input(item: MemoryInput) -> dict[str, Any]:
    return item.to_json_dict()


def _build_memory(**fields: Any) -> MemoryInput:
    try:
        return MemoryInput(**fields)
    except ValidationError as exc:
        raise BadInputError(validation_message(exc)) from exc


def _build_link(**fields: Any) -> LinkInput:
    try:
        return LinkInput(**fields)
    except ValidationError as exc:
        raise BadInputError(validation_message(exc)) from exc


def _parse_list(model: Callable[[Any], R]) -> Callable[[Any], list[R]]:
    return lambda rows: [model(row) for row in rows]


def _parse_optional(model: Callable[[Any], R]) -> Callable[[Any], R | None]:
    return lambda row: None if row is None else model(row)


# -- the operations, one per client method ------------------------------------------------------
# Builders that validate arguments client-side (remember_op, link_op) raise BadInputError before
# anything is sent.


def remember_op(
    text: str,
    *,
    kind: str = "observation",
    occurred_at: datetime | None = None,
    tags: Sequence[str] = (),
    source: str | None = None,
    id: UUID | None = None,
    confidence: float = 1.0,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
    run_id: str | None = None,
    step: int = 0,
) -> Operation[Memory]:
    item = _build_memory(
        text=text,
        kind=kind,
        occurred_at=occurred_at,
        tags=tuple(tags),
        source=source,
        id=id,
        confidence=confidence,
        valid_from=valid_from,
        valid_until=valid_until,
    )
    return Operation(
        REMEMBER,
        {"input": _memory_input(item), "runId": run_id, "step": step},
        Memory.model_validate,
    )


def remember_many_op(
    items: Sequence[MemoryInput],
    *,
    run_id: str | None = None,
    step: int = 0,
    wait_for_vectors: bool | None = None,
) -> Operation[list[Memory]]:
    return Operation(
        REMEMBER_MANY,
        {
            "inputs": [_memory_input(i) for i in items],
            "runId": run_id,
            "step": step,
            "waitForVectors": wait_for_vectors,
        },
        _parse_list(Memory.model_validate),
    )


def link_op(
    source: UUID,
    target: UUID,
    kind: LinkKind | str,
    *,
    weight: float = 1.0,
    note: str | None = None,
) -> Operation[Link]:
    item = _build_link(source=source, target=target, kind=kind, weight=weight, note=note)
    return Operation(LINK, {"input": item.to_json_dict()}, Link.model_validate)


def link_many_op(items: Sequence[LinkInput]) -> Operation[list[Link]]:
    return Operation(
        LINK_MANY, {"inputs": [i.to_json_dict() for i in items]}, _parse_list(Link.model_validate)
    )


def forget_op(memory_id: UUID) -> Operation[ForgetReceipt]:
    return Operation(FORGET, {"id": str(memory_id)}, ForgetReceipt.model_validate)


def erase_op(
    *,
    everything: bool = False,
    tag: str | None = None,
    source: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Operation[EraseReceipt]:
    try:
        spec = EraseFilter(everything=everything, tag=tag, source=source, since=since, until=until)
    except ValidationError as exc:
        raise BadInputError(validation_message(exc)) from exc
    return Operation(ERASE, {"input": spec.to_json_dict()}, EraseReceipt.model_validate)


def reconstruct_op(
    request: ReconstructQuery, *, run_id: str | None = None, step: int = 0
) -> Operation[ReconstructedBelief]:
    variables = read_variables(request, runId=run_id, step=step)
    return Operation(RECONSTRUCT, variables, ReconstructedBelief.model_validate)


def explain_op(request: ReconstructQuery) -> Operation[ReconstructedBelief]:
    return Operation(EXPLAIN, read_variables(request), ReconstructedBelief.model_validate)


def bundle_op(
    request: BundleQuery, *, run_id: str | None = None, step: int = 0
) -> Operation[ContextBundle]:
    variables = read_variables(request, runId=run_id, step=step)
    return Operation(BUNDLE, variables, ContextBundle.model_validate)


def history_op(memory_id: UUID) -> Operation[list[ValidityInterval]]:
    def parse(row: Any) -> list[ValidityInterval]:
        if row is None:
            return []
        return [ValidityInterval.model_validate(item) for item in row["history"]]

    return Operation(HISTORY, {"id": str(memory_id)}, parse)


def prompt_bundle_op(request: PromptInput) -> Operation[PromptBundle]:
    variables = {"input": request.model_dump(mode="json", by_alias=True, exclude_none=True)}
    return Operation(PROMPT_BUNDLE, variables, PromptBundle.model_validate)


def report_tokens_op(run_id: str, step: int, reported_tokens: int) -> Operation[ContextEvent]:
    variables = {"runId": run_id, "step": step, "reportedTokens": reported_tokens}
    return Operation(REPORT_TOKENS, variables, ContextEvent.model_validate)


def record_event_op(
    run_id: str, step: int, kind: str, detail: str | None = None, est_tokens: int | None = None
) -> Operation[ContextEvent]:
    variables = {
        "runId": run_id,
        "step": step,
        "kind": kind,
        "detail": detail,
        "estTokens": est_tokens,
    }
    return Operation(RECORD_EVENT, variables, ContextEvent.model_validate)


def drift_op(run_id: str) -> Operation[DriftReport]:
    return Operation(DRIFT, {"runId": run_id}, DriftReport.model_validate)


def memory_op(memory_id: UUID) -> Operation[Memory | None]:
    return Operation(MEMORY, {"id": str(memory_id)}, _parse_optional(Memory.model_validate))


def events_op(run_id: str) -> Operation[list[ContextEvent]]:
    return Operation(EVENTS, {"runId": run_id}, _parse_list(ContextEvent.model_validate))


# -- the HTTP boundary: responses and transport errors become graphsvc errors --------------------


def error_from_payload(errors: Sequence[Any]) -> GraphsvcError:
    """The graphsvc error for a GraphQL ``errors`` list (the first error's code decides)."""
    first = errors[0] if errors and isinstance(errors[0], dict) else {}
    extensions = first.get("extensions") or {}
    code = extensions.get("code") if isinstance(extensions, dict) else None
    messages = [str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors]
    return ERRORS.get(str(code), GraphsvcError)("; ".join(messages) or "unknown error")


def result_data(response: httpx.Response) -> dict[str, Any]:
    """``data`` of a GraphQL response, or the graphsvc error it reports.

    Raises:
        GraphsvcError: the error the response's ``errors`` name (see :data:`ERRORS`); a
            StoreUnavailableError for HTTP 502-504; a plain GraphsvcError for any other answer
            that is not a GraphQL result.
    """
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("errors"):
        raise error_from_payload(payload["errors"])
    if response.status_code in (502, 503, 504):
        raise StoreUnavailableError(
            f"graphsvc at {response.url} answered HTTP {response.status_code}: retry later"
        )
    if response.status_code != 200 or not isinstance(payload, dict):
        raise GraphsvcError(
            f"graphsvc at {response.url} answered HTTP {response.status_code} without a GraphQL "
            f"result: {response.text[:200]!r}"
        )
    data = payload.get("data")
    if not isinstance(data, dict):
        raise GraphsvcError(f"graphsvc at {response.url} answered without data")
    return data


def unreachable(url: str, exc: httpx.TransportError) -> StoreUnavailableError:
    """The error for a request that never got an answer (refused, timed out, reset)."""
    return StoreUnavailableError(
        f"cannot reach graphsvc at {url} ({type(exc).__name__}: {exc}): check the URL and that "
        "the server runs, then retry"
    )


def request_headers(api_key: str | None) -> dict[str, str]:
    """The headers of every request: JSON, and the API key as a bearer token when there is one."""
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers
