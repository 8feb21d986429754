"""Prompt assembly (graphsvc.prompt): the models and the pure functions, with hypothesis
properties. No store: the service glue, on both stores, is in
tests/contract/test_prompt_service.py."""

from __future__ import annotations

import dataclasses
import itertools
import json
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic import ValidationError

from graphsvc.errors import BadInputError, LimitExceededError
from graphsvc.model import (
    ContextBundle,
    ContextCapsule,
    ContextEvent,
    ContextEventKind,
    OrderReason,
)
from graphsvc.prompt import (
    UNCHANGED_MARKER,
    HistoryReuse,
    PromptBundle,
    PromptDefaults,
    PromptInput,
    TranscriptRole,
    Visibility,
)
from graphsvc.prompt.assembly import PromptPlan, Window, finish_prompt, plan_prompt, resolve_window
from graphsvc.prompt.memory_section import memory_reserve, render_memory
from graphsvc.prompt.parts import sha256_hex
from graphsvc.prompt.trace import assembled_detail, drift_report
from graphsvc.text import asks_about_order, estimate_tokens, query_terms, query_words

FAST = hsettings(max_examples=150, deadline=None)
DAY = date(2025, 3, 2)
QUERY_CHARS = 20_000
AGENTS_MD = "# Agents\nRun `make test` before proposing a fix.\n"


def window(**overrides: Any) -> Window:
    values: dict[str, Any] = {
        "context_window": 200_000,
        "reserved_completion_tokens": 8_192,
        "memory_budget_share": 0.1,
        "max_memory_tokens": 100_000,
        "max_transcript_entries": 20,
        "max_context_file_tokens": 8_000,
        "max_capsules": 20,
    }
    values.update(overrides)
    return Window(**values)


def request(**fields: Any) -> PromptInput:
    return PromptInput.model_validate({"userTurn": "Why did checkout time out?", **fields})


def capsule(n: int, text: str, reason: str = "match") -> ContextCapsule:
    return ContextCapsule(
        memory_id=uuid.UUID(int=n),
        text=text,
        kind="event",
        score=0.5,
        tokens=estimate_tokens(text),
        reason=reason,
    )


def fake_bundle(
    plan: PromptPlan,
    texts: list[str],
    *,
    uncovered: list[bool] | None = None,
    skipped: bool = False,
    coverage: float = 0.5,
    spans_days: bool = False,
) -> ContextBundle:
    """A bundle as the service could return it for the plan: packed under ``bundle_budget`` and
    ``max_capsules``, uncovered terms among the query's, chronological when the query asks or
    (``spans_days``) the evidence is dated on several days."""
    packed: list[ContextCapsule] = []
    excluded: list[ContextCapsule] = []
    used = 0
    for i, text in enumerate(texts):
        item = capsule(i, text)
        fits = used + item.tokens <= plan.bundle_budget
        if skipped:
            excluded.append(item.model_copy(update={"reason": "abstained"}))
        elif fits and len(packed) < plan.window.max_capsules:
            packed.append(item)
            used += item.tokens
        else:
            excluded.append(item.model_copy(update={"reason": "budget"}))
    pairs = query_words(plan.memory_query)
    mask = uncovered if uncovered is not None else [True] * len(pairs)
    left = [pair for pair, m in zip(pairs, mask, strict=False) if m]
    reason = (
        OrderReason.QUESTION_ASKS_ORDER
        if asks_about_order(plan.memory_query)
        else OrderReason.EVIDENCE_SPANS_DAYS
        if spans_days
        else None
    )
    return ContextBundle(
        query=plan.memory_query,
        stage="default",
        budget_tokens=plan.bundle_budget,
        min_score=0.25,
        used_tokens=used,
        capsules=tuple(packed),
        excluded=tuple(excluded),
        skipped=skipped,
        top_score=0.123456,
        evidence_coverage=0.0 if skipped else coverage,
        uncovered_terms=tuple(term for term, _ in left),
        uncovered_words=tuple(word for _, word in left),
        chronological=reason is not None,
        order_reason=reason,
        rendered="",
    )


def assemble(
    req: PromptInput, win: Window | None = None, memory_texts: list[str] | None = None
) -> PromptBundle:
    """Plan, fake a recall, finish; the window from the request and the default limits."""
    if win is None:
        win = resolve_window(
            req,
            PromptDefaults(),
            max_budget_tokens=100_000,
            default_max_capsules=20,
            max_capsules_limit=200,
        )
    plan = plan_prompt(req, win, DAY, max_query_chars=QUERY_CHARS)
    memory = None if plan.bundle_budget < 1 else fake_bundle(plan, memory_texts or [])
    return finish_prompt(plan, memory)


# -- pure functions --------------------------------------------------------------------------------


def test_sections_are_delimited_and_ordered_most_stable_first() -> None:
    req = request(
        fragments=[
            {"name": "role", "text": "You are careful."},
            {"name": "format", "text": "Be brief."},
        ],
        environment={"cwd": "/srv/shop", "model": "claude-x", "searchMode": "off"},
        projectContext=[{"path": "AGENTS.md", "content": AGENTS_MD}],
        availableSkills=[{"name": "pdf", "description": "Read PDFs", "path": "skills/pdf"}],
    )
    bundle = assemble(req, memory_texts=["The checkout timed out after the upgrade"])
    text = bundle.rendered
    tags = ["<fragments>", "<environment>", "<project_context>", "<skills>", "<memory>"]
    positions = [text.index(tag) for tag in tags]
    assert positions == sorted(positions)
    for tag in tags:
        assert text.count(tag) == 1
        assert text.count(tag.replace("<", "</")) == 1
    assert text.index('name="role"') < text.index('name="format"')  # the caller's order
    assert "date: 2025-03-02\ncwd: /srv/shop\nmodel: claude-x\nsearch mode: off" in text
    assert f'sha256="{sha256_hex(AGENTS_MD)}"' in text
    assert "- pdf: Read PDFs (skills/pdf)" in text
    assert "Coverage note:" in text
    assert "Chronology note:" in text
    assert bundle.rendered_hash == sha256_hex(text)
    assert bundle.messages["system"] == text


def test_empty_sections_are_left_out_but_memory_always_speaks() -> None:
    bundle = assemble(request(memoryBudgetShare=0))
    assert bundle.rendered.startswith("<environment>\ndate: 2025-03-02\n</environment>")
    for tag in ("<fragments>", "<project_context>", "<skills>"):
        assert tag not in bundle.rendered
    assert bundle.memory is None
    assert "Memory was not consulted for this turn: memoryBudgetShare is 0." in bundle.rendered
    assert bundle.context_ledger.memory_budget_tokens == 0


def test_memory_notes_name_what_memory_does_not_cover_and_the_order() -> None:
    plan = plan_prompt(
        request(userTurn="What happened before the pager alarm?"),
        window(),
        DAY,
        max_query_chars=QUERY_CHARS,
    )
    bundle = fake_bundle(plan, ["[2025-01-01] The deploy froze"], uncovered=[False, False, True])
    section = render_memory(bundle, "")
    assert "oldest first" in section
    assert "Not covered" not in section
    assert "not covered by memory: alarm. Do not guess" in section
    assert "Chronology note: this turn asks about order" in section
    skipped = render_memory(fake_bundle(plan, ["x"], skipped=True), "")
    assert "no confident answer" in skipped
    assert "top score 0.123 is below the minimum 0.250" in skipped
    nothing = render_memory(fake_bundle(plan, [], skipped=True), "")
    assert "Memory holds nothing that matches this turn." in nothing


def test_the_coverage_note_names_the_question_s_own_words() -> None:
    # It named stems: "not covered by memory: iguana, mar".
    plan = plan_prompt(
        request(userTurn="Which iguana lives on Mars?"), window(), DAY, max_query_chars=QUERY_CHARS
    )
    bundle = fake_bundle(plan, ["A cat lives here"], uncovered=[True, False, True])
    assert bundle.uncovered_terms == ("iguana", "mar")
    assert "not covered by memory: iguana, Mars. Do not guess" in render_memory(bundle, "")


def test_the_chronology_note_gives_the_true_reason_of_the_order() -> None:
    # It said "this turn asks about order" also when the order came from dated evidence.
    plan = plan_prompt(
        request(userTurn="What did the pager alarm say?"),
        window(),
        DAY,
        max_query_chars=QUERY_CHARS,
    )
    spans = render_memory(fake_bundle(plan, ["[2025-01-01] The deploy froze"], spans_days=True), "")
    assert "oldest first" in spans
    assert "Chronology note: the evidence spans several days, so the items are oldest" in spans
    assert "asks about order" not in spans
    plain = render_memory(fake_bundle(plan, ["The deploy froze"]), "")
    assert "Chronology note: the items are in order of relevance, not time" in plain


def test_the_memory_reserve_holds_the_longest_order_note() -> None:
    # A query that does not ask about order may still get a bundle ordered by its dated evidence,
    # whose note is longer than the relevance one: the reserve must hold either. It measured the
    # relevance note only, and an abstaining bundle (the longest header) over memories dated on
    # two days took 7 tokens more than its reserve.
    query = "pager alarm"
    plan = plan_prompt(request(userTurn=query), window(), DAY, max_query_chars=QUERY_CHARS)
    for dated, skipped in itertools.product((False, True), (False, True)):
        bundle = fake_bundle(plan, ["x"], uncovered=[True, True], spans_days=dated, skipped=skipped)
        assert bundle.chronological is dated and bundle.skipped is skipped
        section = render_memory(bundle, "")
        capsules = sum(c.tokens for c in bundle.capsules)
        assert memory_reserve(query, 1, plan.bundle_budget) >= estimate_tokens(section) - capsules


def test_context_files_are_capped_hashed_and_reused() -> None:
    big = "x" * 100
    req = request(
        projectContext=[
            {"path": "AGENTS.md", "content": AGENTS_MD},
            {"path": "big.md", "scope": "docs", "content": big},
            {"path": "notes.md", "content": "changed"},
        ],
        historyReuse="AVAILABLE",
        prevContextHash="SHA256:" + sha256_hex(AGENTS_MD).upper(),
        prevContextHashes=[sha256_hex(big)],
        maxContextFileTokens=13,
    )
    bundle = assemble(req)
    files = {f.path: f for f in bundle.project_context}
    assert [f.visibility for f in bundle.project_context] == [
        Visibility.UNCHANGED,
        Visibility.UNCHANGED,
        Visibility.FULL,
    ]
    assert files["big.md"].truncated
    assert files["big.md"].content == "x" * 52
    assert files["big.md"].content_hash == sha256_hex(big)  # of the full content
    assert files["big.md"].original_tokens == 25
    assert AGENTS_MD not in bundle.rendered
    assert bundle.rendered.count(UNCHANGED_MARKER) == 2
    assert "changed" in bundle.rendered
    assert bundle.prev_context_hash == sha256_hex(AGENTS_MD)  # normalised

    without = assemble(req.model_copy(update={"history_reuse": HistoryReuse.UNAVAILABLE}))
    assert UNCHANGED_MARKER not in without.rendered
    assert AGENTS_MD.strip() in without.rendered
    assert "[truncated: the first 52 of 100 characters]" in without.rendered
    assert {f.visibility for f in without.project_context} == {
        Visibility.FULL,
        Visibility.TRUNCATED,
    }


def test_messages_alternate_and_carry_tool_results_as_text() -> None:
    req = request(
        transcript=[
            {"role": "ASSISTANT", "text": "Hello, how can I help?"},
            {"role": "USER", "text": "Checkout fails."},
            {"role": "TOOL", "toolName": "grep", "text": ""},
            {"role": "TOOL", "text": "line 1"},
            {"role": "ASSISTANT", "text": "Looking."},
        ],
        toolCatalog=[{"name": "grep", "description": "Search", "inputSchema": {"type": "object"}}],
    )
    bundle = assemble(req)
    messages = bundle.messages["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[0]["content"][0]["text"] == "[the transcript starts with an assistant turn]"
    texts = [b["text"] for b in messages[2]["content"]]
    assert texts == [
        "Checkout fails.",
        '<tool_result tool="grep">\n(no output)\n</tool_result>',
        "<tool_result>\nline 1\n</tool_result>",
    ]
    assert messages[-1]["content"] == [{"type": "text", "text": "Why did checkout time out?"}]
    assert bundle.messages["tools"] == [
        {"name": "grep", "description": "Search", "input_schema": {"type": "object"}}
    ]
    json.dumps(bundle.messages)  # plain JSON


def test_a_tool_without_an_input_schema_is_declared_as_any_object() -> None:
    explicit = {"name": "ls", "inputSchema": {"type": "object"}}
    bundles = [
        assemble(request(toolCatalog=[tool]))
        for tool in (explicit, {"name": "ls"}, {"name": "ls", "inputSchema": None})
    ]
    for bundle in bundles:
        assert bundle.messages["tools"] == [{"name": "ls", "input_schema": {"type": "object"}}]
        assert bundle.tool_catalog == bundles[0].tool_catalog
    assert bundles[0].tool_catalog[0].tokens == estimate_tokens(
        '{"input_schema":{"type":"object"},"name":"ls"}'
    )


def test_the_tail_keeps_the_last_entries_and_says_so() -> None:
    entries = [
        {"role": "USER" if i % 2 == 0 else "ASSISTANT", "text": f"entry {i}"} for i in range(7)
    ]
    bundle = assemble(request(transcript=entries, maxTranscriptEntries=3))
    assert [e.index for e in bundle.transcript_tail] == [4, 5, 6]
    assert bundle.omitted_transcript_entries == 4
    first = bundle.messages["messages"][0]["content"][0]["text"]
    assert first == "[4 earlier transcript entries omitted]"
    none = assemble(request(transcript=entries, maxTranscriptEntries=0))
    assert none.transcript_tail == ()
    assert none.omitted_transcript_entries == 7


def test_a_tight_window_drops_the_oldest_entries_then_memory() -> None:
    entries = [{"role": "USER", "text": "word " * 200}, {"role": "ASSISTANT", "text": "ok " * 200}]
    req = request(transcript=entries, contextWindow=500, reservedCompletionTokens=100)
    bundle = assemble(req, memory_texts=["The checkout timed out"])
    tail = bundle.transcript_tail
    assert [e.visibility for e in tail] == [Visibility.DROPPED, Visibility.FULL]
    assert bundle.context_ledger.fits
    assert bundle.memory is None
    assert "no room" in bundle.memory_note
    dropped = [i for i in bundle.context_ledger.items if i.visibility is Visibility.DROPPED]
    assert [(i.section, i.name) for i in dropped] == [("transcript", "user #0")]
    assert "1 transcript entry to fit" in assembled_detail(bundle)

    hopeless = assemble(request(userTurn="x" * 4000, contextWindow=500, reservedCompletionTokens=0))
    assert not hopeless.context_ledger.fits
    assert hopeless.context_ledger.remaining_tokens == 0
    assert hopeless.context_ledger.overflow_tokens == (
        hopeless.context_ledger.estimated_input_tokens - 500
    )


def test_window_defaults_and_refusals() -> None:
    limits = {"max_budget_tokens": 100_000, "default_max_capsules": 20, "max_capsules_limit": 200}
    resolved = resolve_window(request(), PromptDefaults(), **limits)
    assert resolved.available_input_tokens == 200_000 - 8_192
    assert resolved.max_memory_tokens == 100_000
    with pytest.raises(BadInputError, match="must be below contextWindow"):
        resolve_window(
            request(contextWindow=1000, reservedCompletionTokens=1000), PromptDefaults(), **limits
        )
    with pytest.raises(LimitExceededError, match="GRAPHSVC_MAX_BUDGET_TOKENS"):
        resolve_window(request(maxMemoryTokens=100_001), PromptDefaults(), **limits)
    with pytest.raises(LimitExceededError, match="memoryMaxCapsules"):
        resolve_window(request(memoryMaxCapsules=201), PromptDefaults(), **limits)
    with pytest.raises(BadInputError, match="unknown stage"):
        resolve_window(request(memoryStage="nope"), PromptDefaults(), **limits)


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"userTurn": "  "}, "the user turn is empty"),
        ({"prevContextHash": "abc"}, "not a sha256 digest"),
        ({"toolCatalog": [{"name": "a"}, {"name": "a"}]}, "sent more than once: a"),
        ({"toolCatalog": [{"name": "has space"}]}, "toolCatalog.0.name"),
        ({"transcript": [{"role": "USER", "text": " "}]}, "a user entry needs some text"),
        ({"transcript": [{"role": "ROBOT", "text": "x"}]}, "transcript.0.role"),
        ({"memoryBudgetShare": 1.5}, "memoryBudgetShare"),
        ({"step": -1}, "step"),
        ({"fragments": [{"name": "", "text": "x"}]}, "fragments.0.name"),
        ({"memoryQuery": " "}, "memoryQuery is empty"),
        ({"toolCatalog": [{"name": "t", "inputSchema": [1]}]}, "inputSchema"),
    ],
)
def test_bad_requests_name_the_field(fields: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PromptInput.model_validate({"userTurn": "hello", **fields})
    assert fragment in str(caught.value)


def test_drift_report_uses_the_latest_assembly_per_step() -> None:
    at = datetime(2025, 1, 1, tzinfo=UTC)

    def event(
        seq: int, step: int, kind: str, est: int | None, reported: int | None
    ) -> ContextEvent:
        return ContextEvent(
            run_id="r",
            seq=seq,
            step=step,
            kind=ContextEventKind(kind),
            est_tokens=est,
            reported_tokens=reported,
            recorded_at=at + timedelta(seconds=seq),
        )

    events = [
        event(0, 1, "memory_recall", 50, None),
        event(1, 1, "assembled", 1000, None),  # superseded by seq 2
        event(2, 1, "assembled", 1000, 1100),
        event(3, 2, "assembled", 2000, 1800),
        event(4, 3, "assembled", 500, None),
        event(5, 3, "served", None, None),
    ]
    report = drift_report("r", events)
    assert [(s.step, s.seq, s.ratio) for s in report.steps] == [
        (1, 2, 1.1),
        (2, 3, 0.9),
        (3, 4, None),
    ]
    assert report.reported_steps == (1, 2)
    assert report.unreported_steps == (3,)
    assert (report.estimated_tokens, report.reported_tokens) == (3000, 2900)
    assert report.ratio == round(2900 / 3000, 6)
    empty = drift_report("r", events[:1])
    assert (empty.steps, empty.ratio, empty.estimated_tokens) == ((), None, 0)


# -- properties ------------------------------------------------------------------------------------

words = st.sampled_from(
    [
        "checkout",
        "timeout",
        "gateway",
        "before",
        "after",
        "tls",
        "payment",
        "the",
        "why",
        "é",
        "日本",
    ]
)
texts = st.lists(words, min_size=0, max_size=40).map(" ".join)
spoken = st.lists(words, min_size=1, max_size=40).map(lambda ws: " ".join(ws) + ".")


Case = tuple[PromptInput, Window, list[str], list[bool]]


@st.composite
def prompt_cases(draw: st.DrawFn) -> Case:
    files = draw(st.lists(texts, max_size=4))
    reuse = draw(st.sampled_from(list(HistoryReuse)))
    previous = [sha256_hex(c) for c in files if draw(st.booleans())]
    transcript = [
        {
            "role": draw(st.sampled_from(list(TranscriptRole))).value,
            "text": text,
            "toolName": draw(st.sampled_from([None, "grep"])),
        }
        for text in draw(st.lists(spoken, max_size=12))
    ]
    req = PromptInput.model_validate(
        {
            "userTurn": draw(spoken),
            "fragments": [
                {"name": f"f{i}", "text": t}
                for i, t in enumerate(draw(st.lists(texts, max_size=3)))
            ],
            "projectContext": [{"path": f"file{i}.md", "content": c} for i, c in enumerate(files)],
            "transcript": transcript,
            "historyReuse": reuse.value,
            "prevContextHashes": previous,
            "toolCatalog": [{"name": f"tool{i}"} for i in range(draw(st.integers(0, 3)))],
        }
    )
    win_size = draw(st.one_of(st.integers(20, 500), st.integers(500, 20_000)))
    win = window(
        context_window=win_size,
        reserved_completion_tokens=draw(st.integers(0, win_size - 1)),
        memory_budget_share=draw(st.sampled_from([0.0, 0.05, 0.1, 0.5, 1.0])),
        max_memory_tokens=draw(st.integers(1, 2_000)),
        max_transcript_entries=draw(st.integers(0, 15)),
        max_context_file_tokens=draw(st.integers(1, 50)),
        max_capsules=draw(st.integers(1, 8)),
    )
    memories = draw(st.lists(spoken, max_size=10))
    mask = draw(st.lists(st.booleans(), min_size=12, max_size=12))
    return req, win, memories, mask


@FAST
@given(prompt_cases(), st.booleans())
def test_ledger_arithmetic(case: Case, skip: bool) -> None:
    req, win, memories, mask = case
    plan = plan_prompt(req, win, DAY, max_query_chars=QUERY_CHARS)
    memory = None
    if plan.bundle_budget >= 1:
        memory = fake_bundle(plan, memories, uncovered=mask, skipped=skip)
    bundle = finish_prompt(plan, memory)
    ledger = bundle.context_ledger
    numbers = ledger.model_dump(exclude={"items", "fits"})
    assert all(value >= 0 for value in numbers.values()), numbers
    assert all(item.tokens >= 0 for item in ledger.items)
    assert ledger.available_input_tokens == win.context_window - win.reserved_completion_tokens
    assert ledger.estimated_input_tokens == (
        ledger.system_tokens + ledger.message_tokens + ledger.tool_tokens
    )
    assert ledger.system_tokens == (estimate_tokens(bundle.rendered))
    assert ledger.fits == (ledger.estimated_input_tokens <= ledger.available_input_tokens)
    if ledger.fits:
        assert ledger.remaining_tokens + ledger.estimated_input_tokens == (
            ledger.available_input_tokens
        )
    else:
        assert ledger.overflow_tokens == (
            ledger.estimated_input_tokens - ledger.available_input_tokens
        )
    # memory never costs more than its budget, and never breaks a prompt that fits without it
    if memory is not None:
        assert memory.used_tokens <= memory.budget_tokens < ledger.memory_budget_tokens
        assert ledger.memory_tokens <= ledger.memory_budget_tokens
        assert ledger.memory_budget_tokens <= win.memory_budget_share * (
            ledger.available_input_tokens
        )
    if plan.base_tokens <= ledger.available_input_tokens and memory is not None:
        assert ledger.fits
    # the tail, and what is omitted
    expected_tail = min(win.max_transcript_entries, len(req.transcript))
    assert len(bundle.transcript_tail) == expected_tail
    assert [e.index for e in bundle.transcript_tail] == list(
        range(len(req.transcript) - expected_tail, len(req.transcript))
    )
    kept = [e for e in bundle.transcript_tail if e.visibility is Visibility.FULL]
    assert len(kept) + bundle.omitted_transcript_entries == len(req.transcript)
    dropped = [e for e in bundle.transcript_tail if e.visibility is Visibility.DROPPED]
    assert dropped == list(bundle.transcript_tail[: len(dropped)])  # oldest first
    if dropped:
        assert plan.base_tokens <= ledger.available_input_tokens or not kept


@FAST
@given(prompt_cases())
def test_messages_are_well_formed(case: Case) -> None:
    req, win, memories, _ = case
    bundle = assemble(req, win, memories)
    messages = bundle.messages["messages"]
    roles = [m["role"] for m in messages]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert messages[-1]["content"][-1]["text"] == req.user_turn
    assert all(block["text"] for m in messages for block in m["content"])
    assert set(bundle.messages) == (
        {"system", "messages", "tools"} if req.tool_catalog else {"system", "messages"}
    )


@FAST
@given(prompt_cases())
def test_hashes_are_stable_and_reuse_omits_exactly_the_known_files(
    case: Case,
) -> None:
    req, win, memories, _ = case
    bundle = assemble(req, win, memories)
    again = assemble(PromptInput.model_validate(req.to_json_dict()), win, memories)
    assert again == bundle  # same input, same bytes
    assert again.rendered.encode() == bundle.rendered.encode()
    known = set(req.prev_context_hashes) if req.history_reuse is HistoryReuse.AVAILABLE else set()
    for sent, carried in zip(req.project_context, bundle.project_context, strict=True):
        assert carried.content_hash == sha256_hex(sent.content)
        assert (carried.visibility is Visibility.UNCHANGED) == (carried.content_hash in known)
    # reordering the files moves them but changes no hash
    reordered = req.model_copy(update={"project_context": tuple(reversed(req.project_context))})
    hashes = [f.content_hash for f in assemble(reordered, win).project_context]
    assert hashes == [f.content_hash for f in reversed(bundle.project_context)]


@FAST
@given(
    st.lists(words, min_size=1, max_size=60).map(" ".join),
    st.integers(1, 200),
    st.integers(0, 5_000),
    st.data(),
)
def test_memory_section_never_exceeds_its_budget(
    query: str, max_capsules: int, budget: int, data: st.DataObject
) -> None:
    reserve = memory_reserve(query, max_capsules, budget)
    capsule_budget = budget - reserve
    if capsule_budget < 1:
        return
    plan_like = plan_prompt(
        request(userTurn=query),
        window(max_capsules=max_capsules),
        DAY,
        max_query_chars=QUERY_CHARS,
    )
    fake_plan = dataclasses.replace(plan_like, bundle_budget=capsule_budget, memory_budget=budget)
    texts_ = data.draw(st.lists(st.text(min_size=0, max_size=300), max_size=2 * max_capsules))
    mask = data.draw(
        st.lists(st.booleans(), min_size=len(query_terms(query)), max_size=len(query_terms(query)))
    )
    skipped = data.draw(st.booleans())
    dated = data.draw(st.booleans())  # the evidence may span days, whatever the query
    bundle = fake_bundle(
        fake_plan, texts_, uncovered=mask, skipped=skipped, coverage=1.0, spans_days=dated
    )
    assert estimate_tokens(render_memory(bundle, "")) <= budget
