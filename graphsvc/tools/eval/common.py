"""What every dataset evaluation shares: loading rows through the user's ingest path, the bm25s
baseline over the same memories, the run's store and namespaces, and timing.

A memory is known to the evaluation by its ``source`` (``locomo:conv-26:D1:3``,
``beam:1:42``, ``esc:doc:7``): the datasets' evidence names these keys, and the converters write
them, so a capsule or a belief maps back to the dataset through the memory it came from.
"""

from __future__ import annotations

import json
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

from tqdm import tqdm

from graphsvc import recall
from graphsvc.bootstrap import bootstrap, store_label
from graphsvc.ingest import ingest, parse_jsonl
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import micros
from graphsvc.text import estimate_tokens

R = TypeVar("R")
P = ParamSpec("P")


@dataclass(frozen=True)
class Corpus:
    """Memories of one namespace as loaded: ids, keys and texts in row (time) order."""

    namespace: str
    ids: tuple[UUID, ...]
    keys: tuple[str, ...]
    texts: tuple[str, ...]
    key_of: dict[UUID, str]
    recorded_us: dict[UUID, int]

    @property
    def position(self) -> dict[str, int]:
        """Key -> row position (the true order of the dataset)."""
        return {key: i for i, key in enumerate(self.keys)}


def load_rows(
    service: MemoryService, namespace: str, rows: Sequence[dict[str, Any]], name: str
) -> Corpus:
    """Write ingest rows exactly as ``graphsvc ingest`` does (JSON Lines, validated as a whole,
    then batches) and read back what the evaluation needs of the memories."""
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    plan = parse_jsonl(lines, name=name)
    ingest(service, namespace, plan, name=name, progress=False)
    memory_rows = [row for row in rows if row["type"] == "memory"]
    ids = tuple(UUID(row["id"]) for row in memory_rows)
    keys = tuple(str(row["source"]) for row in memory_rows)
    stored = service.get_memories(namespace, ids)
    if len(stored) != len(ids):
        raise RuntimeError(f"{name}: {len(ids)} memories written, {len(stored)} read back")
    return Corpus(
        namespace=namespace,
        ids=ids,
        keys=keys,
        texts=tuple(m.text for m in stored),
        key_of=dict(zip(ids, keys, strict=True)),
        recorded_us={m.id: micros(m.recorded_at) for m in stored},
    )


class Bm25Baseline:
    """bm25s over the texts of one namespace, tokenised as ``graphsvc bench`` does (Snowball
    English stems, English stop words). Every document is scored, and ties break by position, so
    the ranking is deterministic."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        tokens = bm25s.tokenize(
            list(texts), stopwords="en", stemmer=self._stemmer, show_progress=False
        )
        self._retriever = bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)
        self._size = len(texts)

    def search(self, query: str, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` best documents with a positive score: ``(position, score)``, best
        first."""
        tokens = self._bm25s.tokenize(
            query, stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )[0]
        if not tokens:
            return []
        scores = self._retriever.get_scores(tokens)
        order = sorted(
            (i for i in range(self._size) if scores[i] > 0.0), key=lambda i: (-float(scores[i]), i)
        )
        return [(i, float(scores[i])) for i in order[:limit]]


def pack_greedy(
    texts: Sequence[str], order: Sequence[int], budget: int, max_items: int
) -> tuple[list[int], int]:
    """The baseline's packing: take items in rank order while they fit ``budget`` (graphsvc's token
    estimator) and ``max_items``, skipping one that does not fit and continuing, as graphsvc
    packs. Returns the positions packed (in rank order) and the tokens used."""
    packed: list[int] = []
    spent = 0
    for position in order:
        if len(packed) >= max_items:
            break
        cost = estimate_tokens(texts[position])
        if spent + cost > budget:
            continue
        packed.append(position)
        spent += cost
    return packed, spent


def timed(call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> tuple[R, float]:
    """The result of ``call(*args, **kwargs)`` and the seconds it took."""
    start = time.perf_counter()
    result = call(*args, **kwargs)
    return result, time.perf_counter() - start


def progress(total: int, desc: str, unit: str) -> Any:
    """A tqdm bar on stderr (shown on a terminal only)."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty())


@dataclass(frozen=True)
class RunContext:
    """The service of a run, its store's description, and the run's salt for namespaces and ids."""

    service: MemoryService
    store: str
    run_id: str

    def namespace(self, dataset: str, part: str | int = "") -> str:
        """A fresh namespace of this run (``eval_<dataset>_<run>_<part>``)."""
        suffix = f"_{part}" if part != "" else ""
        return f"eval_{dataset}_{self.run_id}{suffix}"[:64]


# Constants of graphsvc.recall that ``graphsvc eval --tune NAME=VALUE`` may change for one run: the
# weights of the conversation features, so that each is measured on and off (docs/design.md).
TUNABLE = (
    "ANSWER_SHARE",
    "ANSWER_SEEDS",
    "SEEDS_ASK",
    "OTHER_SPEAKER_FACTOR",
    "QUESTION_FACTOR",
    "COMPETITION_WEIGHT",
)
Tuning = dict[str, float | int | bool]


def _tuned_value(current: float | int | bool, raw: str) -> float | int | bool:
    """``raw`` as the type of ``current``; ValueError naming what that type accepts."""
    text = raw.strip().lower()
    if isinstance(current, bool):
        if text not in ("true", "false"):
            raise ValueError("true or false")
        return text == "true"
    try:
        return int(text) if isinstance(current, int) else float(text)
    except ValueError:
        raise ValueError("a whole number" if isinstance(current, int) else "a number") from None


def parse_tuning(values: Sequence[str]) -> Tuning:
    """``["ANSWER_SHARE=0", "SEEDS_ASK=false"]`` -> ``{"ANSWER_SHARE": 0.0, "SEEDS_ASK": False}``:
    each value parsed as the type of the constant it replaces (a later setting of the same name
    wins).

    Raises:
        ValueError: a setting is not ``NAME=VALUE``, names no :data:`TUNABLE` constant, or has a
            value of the wrong type; the message says which and what is accepted.
    """
    out: Tuning = {}
    for value in values:
        name, sep, raw = value.partition("=")
        name = name.strip()
        if not sep or name not in TUNABLE:
            raise ValueError(f"{value!r}: use NAME=VALUE with NAME one of {', '.join(TUNABLE)}")
        current = getattr(recall, name)
        try:
            out[name] = _tuned_value(current, raw)
        except ValueError as exc:
            raise ValueError(f"{value!r}: {name} takes {exc} (now {current!r})") from None
    return out


@contextmanager
def tuned(tuning: Tuning) -> Iterator[None]:
    """Run with these :mod:`graphsvc.recall` constants changed, and put them back afterwards
    (evaluation only: the service reads them at every query)."""
    saved = {name: getattr(recall, name) for name in tuning}
    try:
        for name, value in tuning.items():
            setattr(recall, name, value)
        yield
    finally:
        for name, value in saved.items():
            setattr(recall, name, value)


def describe_tuning(tuning: Tuning) -> str:
    """``"ANSWER_SHARE=0.0, SEEDS_ASK=False"``, or ``"none"``."""
    return ", ".join(f"{k}={v!r}" for k, v in sorted(tuning.items())) or "none"


@contextmanager
def run_context(data_dir: Path | None, **overrides: Any) -> Iterator[RunContext]:
    """A service on the configured store (Neo4j when ``GRAPHSVC_NEO4J_URI`` is set, else the
    embedded store in ``data_dir`` or a temporary folder deleted afterwards) and a fresh salt.

    Datasets are loaded into fresh namespaces named with the salt, and memory ids are salted with
    it too (ids are unique across namespaces), so a run never meets an earlier run's data.
    """
    temporary = data_dir is None
    root = Path(tempfile.mkdtemp(prefix="graphsvc-eval-")) if data_dir is None else data_dir
    try:
        settings = Settings(data_dir=root, fsync=False, **overrides)
        service = bootstrap(settings)
        try:
            yield RunContext(service, store_label(settings), secrets.token_hex(4))
        finally:
            service.close()
    finally:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)


__all__ = [
    "TUNABLE",
    "Bm25Baseline",
    "Corpus",
    "RunContext",
    "Tuning",
    "describe_tuning",
    "load_rows",
    "pack_greedy",
    "parse_tuning",
    "progress",
    "run_context",
    "timed",
    "tuned",
]
