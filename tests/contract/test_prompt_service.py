"""Prompt assembly's service glue (graphsvc.service.MemoryService.prompt_bundle, report_tokens,
drift, record_agent_event), on both stores with one body: history reuse, determinism, the memory
budget, the trace and drift. The pure functions are tested in tests/unit/test_prompt.py."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from graphsvc.errors import BadInputError, LimitExceededError, NotFoundError
from graphsvc.model import ContextEventKind
from graphsvc.model import MemoryInput as NewMemory
from graphsvc.prompt import AGENT_EVENT_KINDS, UNCHANGED_MARKER, PromptInput, Visibility
from graphsvc.prompt.memory_section import memory_reserve
from graphsvc.prompt.parts import sha256_hex
from graphsvc.service import MemoryService
from graphsvc.store.base import Store
from graphsvc.text import estimate_tokens
from tests.helpers import fixed_clock, make_settings

AGENTS_MD = "# Agents\nRun `make test` before proposing a fix.\n"


def request(**fields: Any) -> PromptInput:
    return PromptInput.model_validate({"userTurn": "Why did checkout time out?", **fields})


KETTLE = [
    "The checkout timeouts started after the payment gateway upgrade",
    "The gateway upgrade changed the TLS cipher list",
    "Customers complained about failed card payments at checkout",
    "The kettle whistles loudly when the water boils",
]


def test_history_reuse_omits_exactly_the_unchanged_files(service: MemoryService, ns: str) -> None:
    service.remember_many(ns, [NewMemory(text=t) for t in KETTLE])
    files = [
        {"path": "AGENTS.md", "content": AGENTS_MD},
        {"path": "docs/ops.md", "content": "Pager rota: alice, bob.\n"},
        {"path": "docs/gateway.md", "content": "The gateway terminates TLS.\n"},
    ]
    first = service.prompt_bundle(
        ns, request(projectContext=files, historyReuse="AVAILABLE", runId="reuse", step=1)
    )
    hashes = [f.content_hash for f in first.project_context]
    assert hashes == [sha256_hex(f["content"]) for f in files]
    assert all(f.visibility is Visibility.FULL for f in first.project_context)

    files[1] = {"path": "docs/ops.md", "content": "Pager rota: carol, dan.\n"}  # changed
    second = service.prompt_bundle(
        ns,
        request(
            projectContext=files,
            historyReuse="AVAILABLE",
            prevContextHash=hashes[0],
            prevContextHashes=[hashes[1], hashes[2]],
            runId="reuse",
            step=2,
        ),
    )
    assert [f.visibility for f in second.project_context] == [
        Visibility.UNCHANGED,
        Visibility.FULL,
        Visibility.UNCHANGED,
    ]
    assert second.rendered.count(UNCHANGED_MARKER) == 2
    for omitted in (AGENTS_MD, "The gateway terminates TLS."):
        assert omitted.strip() not in second.rendered
        assert omitted.strip() not in json.dumps(second.messages)
    assert "carol, dan" in second.rendered
    detail = service.events(ns, "reuse")[-1].detail or ""
    assert "reused: unchanged, text omitted: AGENTS.md, docs/gateway.md" in detail

    unavailable = service.prompt_bundle(ns, request(projectContext=files, prevContextHashes=hashes))
    assert UNCHANGED_MARKER not in unavailable.rendered


def test_the_rendered_prompt_is_byte_identical_for_identical_input(
    service: MemoryService, ns: str
) -> None:
    service.remember_many(ns, [NewMemory(text=t) for t in KETTLE])
    req = request(
        fragments=[{"name": "role", "text": "You are an on-call assistant."}],
        environment={"cwd": "/srv/shop", "model": "claude-x"},
        projectContext=[{"path": "AGENTS.md", "content": AGENTS_MD}],
        toolCatalog=[{"name": "grep", "inputSchema": {"type": "object", "properties": {}}}],
        transcript=[{"role": "USER", "text": "Checkout fails."}],
        userTurn="Why did checkout payments time out after the upgrade?",
    )
    first = service.prompt_bundle(ns, req)
    second = service.prompt_bundle(ns, req)
    assert first.rendered.encode() == second.rendered.encode()
    assert json.dumps(first.messages) == json.dumps(second.messages)
    assert first.to_json_dict() == second.to_json_dict()
    assert first.environment.date == date(2025, 1, 1)  # the service's (fixed) clock, as a day
    assert first.memory is not None
    assert first.memory.capsules[0].text.endswith(KETTLE[0])
    # the rendered memory is the recall the service gives for the same query and budget
    direct = service.bundle(
        ns, req.user_turn, budget_tokens=first.memory.budget_tokens, max_capsules=20
    )
    assert direct == first.memory


def test_the_memory_section_respects_its_budget(service: MemoryService, ns: str) -> None:
    service.remember_many(
        ns,
        [
            NewMemory(text=f"Checkout payment timeout number {i}: the gateway {'slow ' * i}")
            for i in range(30)
        ],
    )
    result = service.prompt_bundle(
        ns,
        # The budget is under test, not abstention: "time" and "out" are in no memory (they say
        # "timeout"), which answerability reads as a gap.
        request(
            userTurn="Why do checkout payments time out at the gateway?",
            maxMemoryTokens=200,
            memoryMinScore=0.0,
        ),
    )
    memory = result.memory
    ledger = result.context_ledger
    assert memory is not None
    assert ledger.memory_budget_tokens == 200
    assert memory.budget_tokens == 200 - memory_reserve(memory.query, 20, 200)
    assert memory.used_tokens <= memory.budget_tokens
    assert {c.reason for c in memory.excluded} & {"budget", "max_capsules"}
    start = result.rendered.index("<memory>")
    assert estimate_tokens(result.rendered[start:]) == ledger.memory_tokens <= 200
    capsule_items = [
        i for i in ledger.items if i.section == "memory" and i.name != "header and notes"
    ]
    assert [i.name for i in capsule_items] == [str(c.memory_id) for c in memory.capsules]


def test_an_assembled_event_summarises_the_turn(service: MemoryService, ns: str) -> None:
    service.remember_many(ns, [NewMemory(text=t) for t in KETTLE])
    result = service.prompt_bundle(
        ns,
        request(
            runId="run-1",
            step=4,
            transcript=[{"role": "USER", "text": "hi"}] * 3,
            maxTranscriptEntries=2,
            projectContext=[{"path": "AGENTS.md", "content": "y" * 100}],
            maxContextFileTokens=5,
        ),
    )
    events = service.events(ns, "run-1")
    assert [(e.kind, e.step) for e in events] == [
        (ContextEventKind.MEMORY_RECALL, 4),
        (ContextEventKind.ASSEMBLED, 4),
    ]
    assembled = events[1]
    assert result.assembled_event == assembled
    assert assembled.est_tokens == result.context_ledger.estimated_input_tokens
    detail = assembled.detail or ""
    for part in (
        "carried: 0 fragments, environment (2025-01-01), 1 context file",
        "recalled: ",
        "reused: none",
        "dropped: 1 transcript entry before the tail, truncated: AGENTS.md",
        "(fits)",
    ):
        assert part in detail, detail


def test_report_tokens_and_drift(service: MemoryService, ns: str) -> None:
    api = service
    for step in (1, 2, 3):
        api.prompt_bundle(ns, request(runId="drift-run", step=step))
    with pytest.raises(NotFoundError, match="no 'assembled' event at step 9"):
        api.report_tokens(ns, "drift-run", 9, 100)
    with pytest.raises(NotFoundError, match="call promptBundle"):
        api.report_tokens(ns, "never-assembled", 0, 100)
    with pytest.raises(BadInputError, match="reportedTokens"):
        api.report_tokens(ns, "drift-run", 1, -1)
    events = service.events(ns, "drift-run")
    estimates = {e.step: e.est_tokens or 0 for e in events if e.kind is ContextEventKind.ASSEMBLED}
    reported = api.report_tokens(ns, "drift-run", 1, estimates[1] * 2)
    assert reported.kind is ContextEventKind.ASSEMBLED
    assert reported.reported_tokens == estimates[1] * 2
    api.report_tokens(ns, "drift-run", 2, estimates[2])
    report = api.drift(ns, "drift-run")
    assert report.reported_steps == (1, 2)
    assert report.unreported_steps == (3,)
    total = estimates[1] + estimates[2]
    assert (report.estimated_tokens, report.reported_tokens) == (
        total,
        2 * estimates[1] + estimates[2],
    )
    assert report.ratio == round((2 * estimates[1] + estimates[2]) / total, 6)
    assert [s.ratio for s in report.steps] == [2.0, 1.0, None]


def test_agent_events_are_validated(service: MemoryService, ns: str) -> None:
    api = service
    for kind in AGENT_EVENT_KINDS:
        api.record_agent_event(ns, "agent", 1, kind.value, detail=f"{kind.value} because")
    with pytest.raises(BadInputError) as caught:
        api.record_agent_event(ns, "agent", 1, "assembled")
    assert "reread, reread_refused, served, replan, stalled" in str(caught.value)
    with pytest.raises(LimitExceededError):
        api.record_agent_event(ns, "agent", 1, "served", detail="x" * 20_001)
    kinds = [e.kind for e in service.events(ns, "agent")]
    assert kinds == list(AGENT_EVENT_KINDS)


def test_prompt_service_refuses_bad_runs_before_recalling(
    tmp_path: Path, store: Store, ns: str
) -> None:
    settings = make_settings(tmp_path, max_budget_tokens=500, default_budget_tokens=300)
    service = MemoryService(store, settings, clock=fixed_clock())
    api = service
    with pytest.raises(BadInputError, match="invalid run id"):
        api.prompt_bundle(ns, request(runId="has spaces"))
    with pytest.raises(LimitExceededError, match="at most 500"):
        api.prompt_bundle(ns, request(maxMemoryTokens=501))
    # the default cap follows GRAPHSVC_MAX_BUDGET_TOKENS
    assert api.prompt_bundle(ns, request()).context_ledger.memory_budget_tokens == 500
    assert service.stats(ns).events == 0


def test_window_defaults_come_from_the_settings(tmp_path: Path, store: Store, ns: str) -> None:
    settings = make_settings(
        tmp_path,
        prompt_context_window=50_000,
        prompt_reserved_completion_tokens=1_000,
        prompt_memory_budget_share=0.2,
        prompt_transcript_tail=2,
        prompt_context_file_max_tokens=3,
    )
    service = MemoryService(store, settings, clock=fixed_clock())
    result = service.prompt_bundle(
        ns,
        request(
            transcript=[{"role": "USER", "text": f"entry {i}"} for i in range(5)],
            projectContext=[{"path": "a.md", "content": "x" * 20}],
        ),
    )
    ledger = result.context_ledger
    assert (ledger.context_window, ledger.reserved_completion_tokens) == (50_000, 1_000)
    assert [e.index for e in result.transcript_tail] == [3, 4]
    assert result.project_context[0].truncated
    assert ledger.memory_budget_tokens == int(0.2 * 49_000)
    with pytest.raises(ValidationError, match="must be below prompt_context_window"):
        make_settings(tmp_path, prompt_context_window=100, prompt_reserved_completion_tokens=100)
