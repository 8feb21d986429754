"""Public benchmark data as graphsvc ingest rows (the JSON Lines format of :mod:`graphsvc.ingest`).

The data is never bundled: it is read from the folder the lab's ``GRAPHSVC_EVAL_DATA`` setting
names (:func:`eval_data_root`), or from a path the caller gives. These converters are the same path
users take: they produce ingest rows, and ``graphsvc ingest`` or :func:`graphsvc.ingest.ingest`
writes them.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from graphsvc.recall import speaker_tag
from graphsvc_lab.settings import LabSettings

# Where the datasets are found when GRAPHSVC_EVAL_DATA is unset: a ``shared/data`` folder beside
# the working directory or beside the checkout (the layout the project's CI machines have).
FALLBACK_EVAL_DATA = Path("..") / "shared" / "data"


def eval_data_root(settings: LabSettings | None = None) -> Path:
    """The folder of the evaluation datasets (``locomo/``, ``beam/``, ``esc/``).

    ``GRAPHSVC_EVAL_DATA`` when set; otherwise the documented fallback, ``../shared/data`` beside
    the working directory or beside this checkout, when one exists. When nothing is found, the
    setting's path (or the fallback beside the working directory) is returned, so the caller's
    "missing" message names a real place.
    """
    chosen = (settings or LabSettings()).eval_data
    if chosen is not None:
        return chosen
    checkout = Path(__file__).resolve().parents[2]
    for base in (Path.cwd(), checkout):
        candidate = (base / FALLBACK_EVAL_DATA).resolve()
        if candidate.is_dir():
            return candidate
    return (Path.cwd() / FALLBACK_EVAL_DATA).resolve()


DATASET_ID_NAMESPACE = uuid.UUID("2b0f8a4c-91d3-4c55-8f7e-1f0d6c3b9a21")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


def dataset_id(*parts: str) -> str:
    """A stable memory id for a dataset item (so links can name it before it is written)."""
    return str(uuid.uuid5(DATASET_ID_NAMESPACE, "\x1f".join(parts)))


def parse_locomo_time(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def declared_speaker(name: str) -> list[str]:
    """The tags that declare ``name`` the speaker of a memory: ``["speaker:<name>"]`` (the name cut
    to fit a tag, see :func:`graphsvc.recall.speaker_tag`), or none for a blank name."""
    tag = speaker_tag(name)
    return [tag] if tag is not None else []


def locomo_rows(
    conversation: dict[str, Any], sample_id: str, scope: str = ""
) -> Iterator[dict[str, Any]]:
    """One memory per LoCoMo turn: ``"Speaker: text"`` (plus a shared image's caption), kind
    ``turn``, tags ``session-<n>`` and the declared speaker ``speaker:<name>``
    (:func:`graphsvc.recall.speaker_tag`: what speaker attribution reads; the name in the text is
    only words), source the turn's ``dia_id``, dated at its session's time plus one second per turn
    so that order within a session survives; then a ``PRECEDES`` link from each turn to the next one
    of its session (a question to its answer). Memory ids are globally unique: give a ``scope`` to
    load the same data a second time (into another namespace)."""
    conv = conversation["conversation"]
    sessions = sorted(
        (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key)) and conv[key]
    )
    links: list[dict[str, Any]] = []
    for number, key in sessions:
        start = parse_locomo_time(conv[f"{key}_date_time"])
        ids = [dataset_id(scope, "locomo", sample_id, turn["dia_id"]) for turn in conv[key]]
        links += [
            {"type": "link", "source": a, "target": b, "kind": "PRECEDES", "note": "next turn"}
            for a, b in itertools.pairwise(ids)
            if a != b
        ]
        for index, turn in enumerate(conv[key]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shared an image: {turn['blip_caption']}]"
            yield {
                "type": "memory",
                "id": dataset_id(scope, "locomo", sample_id, turn["dia_id"]),
                "text": text,
                "kind": "turn",
                "occurredAt": (start + timedelta(seconds=index)).isoformat(),
                "tags": [f"session-{number}", *declared_speaker(str(turn["speaker"]))],
                "source": f"locomo:{sample_id}:{turn['dia_id']}",
            }
    yield from links


def load_locomo(path: Path) -> list[dict[str, Any]]:
    """The LoCoMo conversations of a ``locomo*.json`` file."""
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


_TIMEX_DATE = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?")


def esc_day(*values: str | None) -> str | None:
    """The first value with day precision as ``YYYY-MM-DD``; else the first partial date (a year
    or a month, taken at its first day); else None. TIMEX values such as ``2012-07-07TNI`` or
    ``2013-W22`` are cut to what they say of the day."""
    partial: str | None = None
    for value in values:
        match = _TIMEX_DATE.match(value or "")
        if not match:
            continue
        year, month, day = match.groups()
        if day is not None:
            return f"{year}-{month}-{day}"
        if partial is None:
            partial = f"{year}-{month or '01'}-01"
    return partial


def esc_rows(document: dict[str, Any], scope: str = "") -> Iterator[dict[str, Any]]:
    """One memory per EventStoryLine event (its sentence, dated at the event's date or the
    document's), then a ``CAUSES`` link per causal pair (cause -> effect). ``scope`` as for
    :func:`locomo_rows`."""
    doc = document["doc"]
    dct = document["dct"]
    for event_id, event in sorted(document["events"].items(), key=lambda kv: int(kv[0])):
        day = esc_day(event.get("date"), dct)
        yield {
            "type": "memory",
            "id": dataset_id(scope, "esc", doc, event_id),
            "text": f"{event['text']}: {event['sentence']}",
            "kind": "event",
            "occurredAt": f"{day}T00:00:00+00:00" if day else None,
            "tags": [f"topic-{document['topic']}", event["type"]],
            "source": f"esc:{doc}:{event_id}",
        }
    seen: set[tuple[str, str]] = set()
    for link in document["causal_links"]:
        pair = (link["cause"], link["effect"])
        # One pair in v1.5 names an event its document does not list: a link to nothing is skipped.
        known = pair[0] in document["events"] and pair[1] in document["events"]
        if pair in seen or pair[0] == pair[1] or not known:
            continue
        seen.add(pair)
        yield {
            "type": "link",
            "source": dataset_id(scope, "esc", doc, link["cause"]),
            "target": dataset_id(scope, "esc", doc, link["effect"]),
            "kind": "CAUSES",
            "note": link["relType"],
        }


def load_esc(path: Path) -> list[dict[str, Any]]:
    """The EventStoryLine documents of a ``.jsonl`` file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


__all__ = ["dataset_id", "declared_speaker", "esc_rows", "load_esc", "load_locomo", "locomo_rows"]
