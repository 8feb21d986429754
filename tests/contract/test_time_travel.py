"""Validity intervals and as-of reads (issue 32), on every store with one body.

A memory is true over [start, end): start is validFrom, else occurredAt, else recordedAt; end is
validUntil, or the start of the earliest memory that SUPERSEDES it. A read as of an instant sees,
KNOWN, what was recorded by then; VALID, what was true then.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import pytest
from pydantic import ValidationError

from graphsvc.errors import BadInputError
from graphsvc.ingest import export_lines, ingest, parse_jsonl
from graphsvc.model import AsOf, AsOfMode, LinkInput, LinkKind, Memory, MemoryInput
from graphsvc.service import MemoryService

CLOCK_START = datetime(2025, 1, 1, tzinfo=UTC)  # tests.helpers.fixed_clock's first reading


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def remember(service: MemoryService, ns: str, text: str, **fields: object) -> Memory:
    return service.remember(ns, MemoryInput(text=text, **fields))  # type: ignore[arg-type]


def supersede(service: MemoryService, ns: str, newer: Memory, older: Memory) -> None:
    service.link(ns, LinkInput(source=newer.id, target=older.id, kind=LinkKind.SUPERSEDES))


def ids(bundle: object) -> list[UUID]:
    return [c.memory_id for c in bundle.capsules]  # type: ignore[attr-defined]


# -- writes ----------------------------------------------------------------------------------------


def test_a_validity_interval_is_stored_read_back_and_idempotent(
    service: MemoryService, ns: str
) -> None:
    item = MemoryInput(
        text="The team lead is Alice",
        valid_from=datetime(2024, 3, 1, 9, 0, tzinfo=timezone(timedelta(hours=2))),
        valid_until=day(2024, 6, 1),
    )
    stored = service.remember(ns, item)
    assert stored.valid_from == datetime(2024, 3, 1, 7, 0, tzinfo=UTC)  # converted to UTC
    assert stored.valid_until == day(2024, 6, 1)
    (read,) = service.get_memories(ns, [stored.id])
    assert read == stored
    assert service.remember(ns, item) == stored  # a retry is a no-op
    other = service.remember(ns, item.model_copy(update={"valid_until": day(2024, 7, 1)}))
    assert other.id != stored.id  # another interval is other content
    assert service.stats(ns).memories == 2
    plain = remember(service, ns, "The team lead is Alice")
    assert plain.valid_from is None and plain.valid_until is None and plain.id != stored.id


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"valid_from": day(2024, 6, 1), "valid_until": day(2024, 3, 1)}, "validUntil"),
        ({"valid_from": day(2024, 6, 1), "valid_until": day(2024, 6, 1)}, "validUntil"),
        ({"valid_from": datetime(2024, 6, 1)}, "valid_from"),  # naive
        ({"valid_until": datetime(2024, 6, 1)}, "valid_until"),  # naive
        ({"valid_from": "yesterday-ish"}, "valid_from"),  # unparseable
    ],
)
def test_a_bad_interval_is_refused_naming_the_field_and_nothing_is_written(
    service: MemoryService, ns: str, fields: dict[str, object], named: str
) -> None:
    def write() -> None:
        raw = [{"text": "A good memory first"}, {"text": "A bad interval", **fields}]
        service.remember_many(ns, [MemoryInput.model_validate(item) for item in raw])

    with pytest.raises(ValidationError) as refused:
        write()
    assert named in str(refused.value)
    assert service.stats(ns).memories == 0


# -- as-of reads -----------------------------------------------------------------------------------


def test_known_sees_only_what_was_recorded_by_then(service: MemoryService, ns: str) -> None:
    first = remember(service, ns, "The deploy key rotates monthly")
    second = remember(service, ns, "The deploy key is stored in the vault")
    query = "deploy key"
    at_first = service.bundle(ns, query, as_of=first.recorded_at, as_of_mode="KNOWN")
    assert ids(at_first) == [first.id]  # exactly at recordedAt: included
    assert at_first.as_of == AsOf(at=first.recorded_at, mode=AsOfMode.KNOWN)
    before = service.bundle(
        ns, query, as_of=first.recorded_at - timedelta(microseconds=1), as_of_mode="KNOWN"
    )
    assert before.skipped and not before.capsules
    now = service.bundle(ns, query)
    assert set(ids(now)) == {first.id, second.id} and now.as_of is None


def test_valid_uses_event_time_with_an_exclusive_end(service: MemoryService, ns: str) -> None:
    alice = remember(
        service,
        ns,
        "The team lead is Alice",
        valid_from=day(2024, 1, 1),
        valid_until=day(2024, 6, 1),
    )
    bob = remember(service, ns, "The team lead is Bob", valid_from=day(2024, 6, 1))
    dated = remember(service, ns, "The team lead role was discussed", occurred_at=day(2023, 5, 1))
    undated = remember(service, ns, "The team lead wiki page exists")  # from recordedAt
    query = "team lead"

    def valid_at(at: datetime) -> set[UUID]:
        bundle = service.bundle(ns, query, as_of=at, as_of_mode=AsOfMode.VALID, min_score=0)
        assert bundle.as_of is not None and bundle.as_of.mode is AsOfMode.VALID
        return {c.memory_id for c in (*bundle.capsules, *bundle.excluded)}

    assert valid_at(day(2023, 4, 30)) == set()
    assert valid_at(day(2023, 5, 1)) == {dated.id}
    assert valid_at(day(2024, 1, 1)) == {dated.id, alice.id}
    assert valid_at(day(2024, 6, 1) - timedelta(microseconds=1)) == {dated.id, alice.id}
    assert valid_at(day(2024, 6, 1)) == {dated.id, bob.id}  # Alice's end is exclusive
    assert valid_at(CLOCK_START + timedelta(days=1)) == {dated.id, bob.id, undated.id}


def test_a_time_zone_names_the_same_instant(service: MemoryService, ns: str) -> None:
    remember(service, ns, "The office moved to Berlin", valid_from=day(2024, 3, 11))
    tokyo = timezone(timedelta(hours=9))
    seen = service.bundle(ns, "office", as_of=datetime(2024, 3, 11, 9, 0, tzinfo=tokyo))
    assert len(seen.capsules) == 1 and seen.as_of is not None
    assert seen.as_of.at == day(2024, 3, 11)
    missed = service.bundle(
        ns, "office", as_of=datetime(2024, 3, 11, 8, 59, 59, 999999, tzinfo=tokyo)
    )
    assert not missed.capsules


def test_supersession_closes_the_older_memory_at_the_newer_start(
    service: MemoryService, ns: str
) -> None:
    v1 = remember(service, ns, "The release branch is named main", occurred_at=day(2023, 1, 1))
    v2 = remember(service, ns, "The release branch is named trunk", occurred_at=day(2024, 1, 1))
    v3 = remember(service, ns, "The release branch is named stable", valid_from=day(2025, 1, 1))
    supersede(service, ns, v2, v1)
    supersede(service, ns, v3, v2)
    query = "release branch named"

    def valid_at(at: datetime) -> list[UUID]:
        return ids(service.bundle(ns, query, as_of=at, as_of_mode="VALID"))

    assert valid_at(day(2023, 6, 1)) == [v1.id]
    assert valid_at(day(2024, 1, 1) - timedelta(microseconds=1)) == [v1.id]
    assert valid_at(day(2024, 1, 1)) == [v2.id]  # closed exactly at the newer one's start
    assert valid_at(day(2025, 1, 1)) == [v3.id]
    # Nothing was deleted: the audit view still holds all three.
    known = service.bundle(ns, query, as_of=CLOCK_START + timedelta(days=1), as_of_mode="KNOWN")
    assert {c.memory_id for c in (*known.capsules, *known.excluded)} == {v1.id, v2.id, v3.id}
    # Forgetting the successor reopens the older memory (the end is computed when read).
    service.forget(ns, v3.id)
    assert valid_at(day(2025, 1, 1)) == [v2.id]


def test_known_applies_only_the_links_written_by_then(service: MemoryService, ns: str) -> None:
    old = remember(service, ns, "office wifi password hunter2", occurred_at=day(2024, 1, 1))
    new = remember(
        service,
        ns,
        "The office wifi password was changed again today to correct-horse-battery-staple "
        "by the IT team after the audit",
        occurred_at=day(2024, 1, 1),
    )
    before_link = new.recorded_at
    supersede(service, ns, new, old)  # written a tick of the clock later
    query = "office wifi password"
    order = [c.memory_id for c in service.bundle(ns, query).capsules]
    assert order.index(new.id) < order.index(old.id)
    then = service.bundle(ns, query, as_of=before_link, as_of_mode="KNOWN")
    order = [c.memory_id for c in then.capsules]
    assert order.index(old.id) < order.index(new.id)  # the link was not known yet


def test_reconstruct_as_of_walks_only_what_was_visible(service: MemoryService, ns: str) -> None:
    cause = remember(service, ns, "The boiler pressure dropped", occurred_at=day(2024, 2, 1))
    early = remember(service, ns, "The radiators went cold", occurred_at=day(2024, 2, 2))
    late = remember(service, ns, "The plumber replaced the valve", occurred_at=day(2024, 4, 1))
    for effect in (early, late):
        service.link(ns, LinkInput(source=cause.id, target=effect.id, kind=LinkKind.CAUSES))
    belief = service.reconstruct(ns, "boiler pressure", as_of=day(2024, 3, 1), depth=2)
    assert belief.source_ids == (cause.id,)
    assert belief.linked_context_ids == (early.id,)
    assert belief.as_of == AsOf(at=day(2024, 3, 1), mode=AsOfMode.VALID)
    now = service.reconstruct(ns, "boiler pressure", depth=2)
    assert set(now.linked_context_ids) == {early.id, late.id} and now.as_of is None
    stored = service.reconstruct_and_store(
        ns, "boiler pressure", as_of=day(2024, 3, 1), as_of_mode="VALID"
    )
    assert stored.linked_context_ids == (early.id,) and stored.belief_id is not None


def test_the_list_known_as_of_holds_what_was_recorded_by_then(
    service: MemoryService, ns: str
) -> None:
    # One write records its memories a microsecond apart: the bound is exact at the stores'
    # precision.
    batch = service.remember_many(ns, [MemoryInput(text=f"Batch note {n}") for n in range(3)])
    later = remember(service, ns, "A later note")
    remember(service, ns, "The latest note")
    assert batch[1].recorded_at - batch[0].recorded_at == timedelta(microseconds=1)

    def listed(**fields: object) -> list[UUID]:
        page = service.list_memories(ns, limit=10, **fields)  # type: ignore[arg-type]
        return [m.id for m in page]

    at = batch[1].recorded_at
    assert listed(known_as_of=at) == [batch[1].id, batch[0].id]  # recorded then: included
    assert listed(known_as_of=batch[0].recorded_at - timedelta(microseconds=1)) == []
    newest_first = [later.id, *(m.id for m in reversed(batch))]
    assert listed(known_as_of=later.recorded_at) == newest_first
    # The same instant in another time zone.
    assert listed(known_as_of=at.astimezone(timezone(timedelta(hours=-5)))) == listed(
        known_as_of=at
    )
    # Pages: an `after` below the bound goes on from there; one above it starts at the bound.
    first = service.list_memories(ns, limit=2, known_as_of=later.recorded_at)
    assert [m.id for m in first] == newest_first[:2]
    key = (first[-1].recorded_at, str(first[-1].id))
    assert listed(known_as_of=later.recorded_at, after=key) == newest_first[2:]
    newest = (later.recorded_at + timedelta(days=1), str(later.id))
    assert listed(known_as_of=at, after=newest) == [batch[1].id, batch[0].id]
    # Filters still apply.
    assert listed(known_as_of=later.recorded_at, kind="decision") == []
    with pytest.raises(BadInputError, match=r"knownAsOf .* has no time zone"):
        service.list_memories(ns, limit=1, known_as_of=datetime(2025, 1, 1))


def test_as_of_arguments_are_checked(service: MemoryService, ns: str) -> None:
    remember(service, ns, "Anything at all")
    with pytest.raises(BadInputError, match="time zone"):
        service.bundle(ns, "anything", as_of=datetime(2024, 1, 1))
    with pytest.raises(BadInputError, match="asOfMode needs asOf"):
        service.bundle(ns, "anything", as_of_mode="KNOWN")
    with pytest.raises(BadInputError, match="asOfMode: Input should be 'KNOWN' or 'VALID'"):
        service.reconstruct(ns, "anything", as_of=day(2024, 1, 1), as_of_mode="THEN")


def test_store_visible_and_supersession_chain(service: MemoryService, ns: str) -> None:
    store = service.store
    v1 = remember(service, ns, "Rate limit is 10 per second", valid_from=day(2023, 1, 1))
    v2 = remember(service, ns, "Rate limit is 20 per second", valid_from=day(2023, 6, 1))
    v3 = remember(
        service,
        ns,
        "Rate limit is 50 per second",
        valid_from=day(2024, 1, 1),
        valid_until=day(2024, 2, 1),
    )
    alone = remember(service, ns, "Rate limit docs live in the wiki")
    supersede(service, ns, v2, v1)
    supersede(service, ns, v3, v2)
    when = AsOf(at=day(2023, 7, 1), mode=AsOfMode.VALID)
    assert store.visible(ns, [v1.id, v2.id, v3.id, alone.id], when) == {v2.id}
    for start in (v1, v2, v3):
        chain = service.history(ns, start.id)
        assert [h.memory.id for h in chain] == [v1.id, v2.id, v3.id]
        assert [(h.valid_from, h.valid_until) for h in chain] == [
            (day(2023, 1, 1), day(2023, 6, 1)),
            (day(2023, 6, 1), day(2024, 1, 1)),
            (day(2024, 1, 1), day(2024, 2, 1)),
        ]
        assert [h.superseded_by for h in chain] == [(v2.id,), (v3.id,), ()]
    (single,) = service.history(ns, alone.id)
    assert single.valid_from == alone.recorded_at and single.valid_until is None
    assert service.history(ns, UUID(int=7)) == []


def test_export_and_import_carry_the_validity(service: MemoryService, ns: str) -> None:
    older = remember(
        service, ns, "Lead is Alice", valid_from=day(2024, 1, 1), valid_until=day(2024, 6, 1)
    )
    newer = remember(service, ns, "Lead is Bob", valid_from=day(2024, 6, 1))
    supersede(service, ns, newer, older)
    lines = list(export_lines(service, ns))
    assert '"validFrom": "2024-01-01T00:00:00+00:00"' in lines[0]
    target = f"{ns}copy"
    ingest(service, target, parse_jsonl(lines))
    copied = service.get_memories(target, [older.id, newer.id])
    assert [(m.valid_from, m.valid_until) for m in copied] == [
        (older.valid_from, older.valid_until),
        (newer.valid_from, None),
    ]
    assert [h.valid_until for h in service.history(target, older.id)] == [day(2024, 6, 1), None]
