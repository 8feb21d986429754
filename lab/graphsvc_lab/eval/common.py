"""What every dataset evaluation shares: loading rows through the user's ingest path, the bm25s
baseline over the same memories, the run's store and namespaces, and timing.

A memory is known to the evaluation by its ``source`` (``locomo:conv-26:D1:3``,
``beam:1:42``, ``esc:doc:7``): the datasets' evidence names these keys, and the converters write
them, so a capsule or a belief maps back to the dataset through the memory it came from.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

from tqdm import tqdm

from graphsvc.bootstrap import make_store, store_label
from graphsvc.embedding.dense_recall import DenseRecall, settings_embedder
from graphsvc.embedding.encoder import Embedder
from graphsvc.embedding.registry import ModelUnavailableError
from graphsvc.ingest import ingest, parse_jsonl
from graphsvc.recall.policy import FUSION_MODES, RecallPolicy
from graphsvc.service import MemoryService
from graphsvc.settings import Settings
from graphsvc.store.base import Store
from graphsvc.store.candidates import micros
from graphsvc.text import estimate_tokens
from graphsvc_lab.eval.vectors import CachedEmbedder

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


def clear_namespace(service: MemoryService, namespace: str) -> None:
    """Erase everything in ``namespace`` (an earlier run's data under the same fixed name), to the
    end: a batched erase that stops at its time budget is called again until it is complete."""
    while not service.erase(namespace, everything=True).complete:
        pass


def load_rows(
    service: MemoryService, namespace: str, rows: Sequence[dict[str, Any]], name: str
) -> Corpus:
    """Write ingest rows exactly as ``graphsvc ingest`` does (JSON Lines, validated as a whole,
    then batches; with dense recall, the vector queue drained then, as ingest does without a
    server) and read back what the evaluation needs of the memories."""
    lines = [json.dumps(row, ensure_ascii=False) for row in rows]
    plan = parse_jsonl(lines, name=name)
    clear_namespace(service, namespace)
    ingest(service, namespace, plan, name=name, progress=False)
    if service.dense.model() is not None:
        service.embed(namespace)
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


# What ``graphsvc eval --tune NAME=VALUE`` may change for one run, each name with the recall
# policy field it sets (graphsvc/recall/policy.py): the weights of the conversation features (upper
# case, the names they had as constants), so that each is measured on and off (docs/design.md) ...
TUNABLE_FIELDS = {
    "ANSWER_SHARE": "conversation.answer_share",
    "ANSWER_SEEDS": "conversation.answer_seeds",
    "SEEDS_ASK": "conversation.seeds_ask",
    "NEXT_RECORDED_FOLLOWS": "conversation.next_recorded_follows",
    "OTHER_SPEAKER_FACTOR": "conversation.other_speaker_factor",
    "QUESTION_FACTOR": "conversation.question_factor",
    "COMPETITION_WEIGHT": "conversation.competition_weight",
    "COVERAGE_SHARE": "lexical.coverage_share",
}
TUNABLE = tuple(TUNABLE_FIELDS)
# ... and the settings the policy is built from (lower case, as the Settings fields, checked against
# their ranges): the fusion's constants and the lexical core's length prior. The deprecated
# dense_relative and dense_spread together set one field, fusion.mode, as fusion_mode does.
SETTINGS_FIELDS = {
    "fusion_mode": "fusion.mode",
    "dense_weight": "fusion.weight",
    "rrf_k": "fusion.rrf_k",
    "dense_k": "fusion.k",
    "dense_min_cosine": "fusion.min_cosine",
    "bm25_b": "lexical.bm25_b",
    "fused_length_b": "fusion.length_b",
}
SETTINGS_TUNABLE = (
    "fusion_mode",
    "dense_weight",
    "rrf_k",
    "dense_k",
    "dense_relative",
    "dense_min_cosine",
    "dense_spread",
    "bm25_b",
    "fused_length_b",
)
Value = float | int | bool | str
Tuning = dict[str, Value]


def _tuned_value(current: Value, raw: str) -> Value:
    """``raw`` as the type of ``current``; ValueError naming what that type accepts."""
    text = raw.strip().lower()
    if isinstance(current, str):
        if text not in FUSION_MODES:
            raise ValueError(f"one of {', '.join(FUSION_MODES)}")
        return text
    if current is None:
        try:
            return float(text)
        except ValueError:
            raise ValueError("a number") from None
    if isinstance(current, bool):
        if text not in ("true", "false"):
            raise ValueError("true or false")
        return text == "true"
    try:
        return int(text) if isinstance(current, int) else float(text)
    except ValueError:
        raise ValueError("a whole number" if isinstance(current, int) else "a number") from None


def _current(name: str) -> Value:
    """What ``name`` is by default: the policy's field, or the setting's default. The deprecated
    dense_spread and dense_relative are read off the default fusion mode, which decides, not off
    their own settings' defaults (read only when GRAPHSVC_FUSION_MODE is not set)."""
    if name in TUNABLE or name in ("dense_spread", "dense_relative"):
        return tuning_value(RecallPolicy(), name)
    default: Value = Settings.model_fields[name].default
    return default


def tuning_value(policy: RecallPolicy, name: str) -> Value:
    """What the ``--tune`` name ``name`` is in ``policy``."""
    mode = policy.fusion.mode
    if name == "dense_spread":
        return mode == "minmax"
    if name == "dense_relative":
        return mode != "raw"
    value = policy.value({**TUNABLE_FIELDS, **SETTINGS_FIELDS}[name])
    assert value is None or isinstance(value, float | int | str)  # bools are ints
    return value  # type: ignore[return-value]


def tuned_policy(policy: RecallPolicy, tuning: Tuning) -> RecallPolicy:
    """``policy`` with the ``--tune`` names of ``tuning`` set (:meth:`RecallPolicy.replaced`, a
    :func:`dataclasses.replace`): ``dense_spread`` true is fusion mode ``minmax``; otherwise
    ``dense_relative`` true is ``relative``, false ``raw`` (each name left out keeps what the
    policy's mode says of it)."""
    fields = {**TUNABLE_FIELDS, **SETTINGS_FIELDS}
    changes: dict[str, object] = {fields[k]: v for k, v in tuning.items() if k in fields}
    if "dense_spread" in tuning or "dense_relative" in tuning:
        spread = tuning.get("dense_spread", tuning_value(policy, "dense_spread"))
        relative = tuning.get("dense_relative", tuning_value(policy, "dense_relative"))
        changes["fusion.mode"] = "minmax" if spread else "relative" if relative else "raw"
    return policy.replaced(changes)


def _check_setting(name: str, value: Value) -> None:
    """ValueError unless ``value`` is in the range the setting ``name`` accepts."""
    for bound in Settings.model_fields[name].metadata:
        low = getattr(bound, "ge", None)
        high = getattr(bound, "le", None)
        if low is not None and value < low:
            raise ValueError(f"a value of at least {low}")
        if high is not None and value > high:
            raise ValueError(f"a value of at most {high}")


@dataclass(frozen=True)
class TuneRequest:
    """What ``--tune`` asked for: constants and settings with one value (``fixed``, for the whole
    run) and those with several (``sweep``: every combination is measured and chosen by
    leave-one-conversation-out; see :mod:`graphsvc_lab.eval.crossval`)."""

    fixed: Tuning = field(default_factory=dict)
    sweep: tuple[tuple[str, tuple[Value, ...]], ...] = ()

    def configs(self) -> list[Tuning]:
        """Every combination of the swept values, in the order given (the first name varies
        slowest); ``[]`` without a sweep."""
        if not self.sweep:
            return []
        names = [name for name, _ in self.sweep]
        return [
            dict(zip(names, combo, strict=True))
            for combo in itertools.product(*(values for _, values in self.sweep))
        ]


def parse_tune(values: Sequence[str]) -> TuneRequest:
    """``["ANSWER_SHARE=0", "dense_weight=0.1,0.2,0.3"]`` -> fixed ``{"ANSWER_SHARE": 0.0}``, sweep
    ``dense_weight`` over ``(0.1, 0.2, 0.3)``. Each value is parsed as the type of the constant or
    setting it replaces; a later setting of the same name wins; a repeated value in a list counts
    once, and a list of one value is a fixed setting.

    Raises:
        ValueError: a setting is not ``NAME=VALUE[,VALUE...]``, names no :data:`TUNABLE` constant
            or :data:`SETTINGS_TUNABLE` setting, or has a value of the wrong type or out of the
            setting's range; the message says which and what is accepted.
    """
    chosen: dict[str, tuple[Value, ...]] = {}
    known = (*TUNABLE, *SETTINGS_TUNABLE)
    for value in values:
        name, sep, raw = value.partition("=")
        name = name.strip()
        if not sep or name not in known:
            raise ValueError(
                f"{value!r}: use NAME=VALUE (or NAME=V1,V2,... to choose by cross-validation) "
                f"with NAME one of {', '.join(known)}"
            )
        current = _current(name)
        parsed: dict[Value, None] = {}
        for part in raw.split(","):
            try:
                one = _tuned_value(current, part)
                if name in SETTINGS_TUNABLE:
                    _check_setting(name, one)
            except ValueError as exc:
                raise ValueError(f"{value!r}: {name} takes {exc} (now {current!r})") from None
            parsed[one] = None
        chosen.pop(name, None)
        chosen[name] = tuple(parsed)
    fixed = {name: vs[0] for name, vs in chosen.items() if len(vs) == 1}
    sweep = tuple((name, vs) for name, vs in chosen.items() if len(vs) > 1)
    return TuneRequest(fixed, sweep)


def parse_tuning(values: Sequence[str]) -> Tuning:
    """``["ANSWER_SHARE=0", "SEEDS_ASK=false"]`` -> ``{"ANSWER_SHARE": 0.0, "SEEDS_ASK": False}``:
    each value parsed as the type of the constant it replaces (a later setting of the same name
    wins); one value per name (:func:`parse_tune` also takes lists).

    Raises:
        ValueError: as :func:`parse_tune`, or a name is given several values.
    """
    request = parse_tune(values)
    if request.sweep:
        names = ", ".join(name for name, _ in request.sweep)
        raise ValueError(f"{names}: give one value here (lists are for --tune sweeps)")
    return request.fixed


def recall_part(tuning: Tuning) -> Tuning:
    """The :data:`TUNABLE` conversation weights of ``tuning``."""
    return {k: v for k, v in tuning.items() if k in TUNABLE}


def settings_part(tuning: Tuning) -> Tuning:
    """The :data:`SETTINGS_TUNABLE` settings of ``tuning``."""
    return {k: v for k, v in tuning.items() if k in SETTINGS_TUNABLE}


def describe_tuning(tuning: Tuning) -> str:
    """``"ANSWER_SHARE=0.0, SEEDS_ASK=False"``, or ``"none"``."""
    return ", ".join(f"{k}={v!r}" for k, v in sorted(tuning.items())) or "none"


def describe_config(config: Tuning) -> str:
    """A swept combination as a label: ``"dense_weight=0.3"``, ``"a=1 b=0.5"``."""
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in config.items())


# What names an evaluation's namespaces and salts its memory ids (``RunContext.run_id``): fixed, so
# that two runs load the same memories under the same ids and break exact score ties (by id) the
# same way. An earlier run's data under these names is erased before loading (:func:`load_rows`).
RUN_ID = "run"


@dataclass(frozen=True)
class RunContext:
    """The services of a run on one store, the store's description, and the name (:data:`RUN_ID`)
    that its namespaces and memory ids are derived from.

    ``service`` is lexical-only (``embed=off``: recall as without an embedder). ``hybrid`` is a
    service with ``embedder`` (lexical + dense), when the embedding model is available;
    ``embedder`` (cached on disk) also serves the dense-only baseline.
    ``notes`` say what was left out and why.
    """

    service: MemoryService
    store: str
    run_id: str
    hybrid: MemoryService | None = None
    embedder: CachedEmbedder | None = None
    notes: tuple[str, ...] = ()

    @property
    def default(self) -> MemoryService:
        """The service as deployed: hybrid when there is one, else lexical-only."""
        return self.hybrid or self.service

    def namespace(self, dataset: str, part: str | int = "") -> str:
        """A namespace of this run (``eval_<dataset>_<run>_<part>``): the same name in every run,
        erased before it is loaded (:func:`load_rows`)."""
        suffix = f"_{part}" if part != "" else ""
        return f"eval_{dataset}_{self.run_id}{suffix}"[:64]

    def variant(self, base: MemoryService, changes: Tuning) -> MemoryService:
        """A service on the same store as ``base``, with its embedder, and its recall policy
        with ``changes`` (``--tune`` names) made (:func:`tuned_policy`): for reading with other
        constants. Nothing is written through it.

        Raises:
            ValueError: a setting is out of its range.
        """
        for name, value in settings_part(changes).items():
            _check_setting(name, value)
        policy = tuned_policy(base.policy, changes)
        return make_service(base.store, base.settings, None, like=base, policy=policy)


def make_service(
    store: Store,
    settings: Settings,
    embedder: Embedder | None,
    like: MemoryService | None = None,
    policy: RecallPolicy | None = None,
) -> MemoryService:
    """A service on ``store``: with ``embedder`` for dense recall, required (a model that cannot
    load is an error, as ``GRAPHSVC_EMBED=on``), else lexical-only. With ``like``, the service
    shares ``like``'s encoder and its query cache instead. ``policy``: its recall policy (none:
    the settings').
    """
    if like is not None:
        return MemoryService(store, settings, dense=like.dense, policy=policy)
    if embedder is None:
        return MemoryService(store, settings, policy=policy)
    encoder = DenseRecall(embedder, required=True, cache_size=settings.query_cache)
    return MemoryService(store, settings, dense=encoder, policy=policy)


def open_cached_embedder(
    settings: Settings, embed: str, cache: Path, progress: Callable[[int], None] | None = None
) -> tuple[CachedEmbedder | None, str]:
    """The embedder of ``settings`` behind the vector cache in ``cache``, loaded; or ``None``
    and why (``embed`` is ``off``, or ``auto`` and the model is not installed).

    Raises:
        ModelUnavailableError: ``embed`` is ``on`` and the model cannot be loaded.
    """
    if embed == "off":
        return None, "dense-only and hybrid skipped: --embed off"
    try:
        inner = settings_embedder(settings).load()
    except ModelUnavailableError as exc:
        if embed == "on":
            raise
        return None, f"dense-only and hybrid skipped: {exc}"
    return CachedEmbedder(inner, cache, progress), ""


@contextmanager
def run_context(
    data_dir: Path | None,
    *,
    embed: str | None = "off",
    vector_cache: Path | None = None,
    tuning: Tuning | None = None,
    **overrides: Any,
) -> Iterator[RunContext]:
    """Services on the configured store (Neo4j when ``GRAPHSVC_NEO4J_URI`` is set, else the
    embedded store in ``data_dir`` or a temporary folder deleted afterwards) and the fixed
    :data:`RUN_ID`.

    ``embed`` (``auto``, ``on``, ``off``; ``None``: the settings' ``GRAPHSVC_EMBED``) says whether
    to open the embedding model (behind a vector cache in ``vector_cache``, default a
    ``vector-cache`` folder beside the store) for the dense baseline and the hybrid service;
    ``off`` gives the lexical-only service alone. ``tuning`` (``--tune`` names with one value)
    changes both services' recall policy (:func:`tuned_policy`).

    Datasets are loaded into namespaces named with :data:`RUN_ID`, and memory ids are derived from
    it and each item's key, so two runs load the same memories under the same ids (and break
    exact score ties alike). Each namespace is erased before it is loaded, so a run never meets
    an earlier run's data; two runs at once on one store (Neo4j) would meet each other's.

    Raises:
        ModelUnavailableError: ``embed`` is ``on`` and the model cannot be loaded.
    """
    temporary = data_dir is None
    root = Path(tempfile.mkdtemp(prefix="graphsvc-eval-")) if data_dir is None else data_dir
    try:
        settings = Settings(data_dir=root, fsync=False, **overrides)
        store = make_store(settings)
        store.open()
        try:
            notes: list[str] = []
            embedder, why = open_cached_embedder(
                settings, embed or settings.embed, vector_cache or root / "vector-cache"
            )
            if why:
                notes.append(why)
            for name, value in settings_part(tuning or {}).items():
                _check_setting(name, value)
            policy = tuned_policy(RecallPolicy.from_settings(settings), tuning or {})
            off, on = ({"embed": value} for value in ("off", "on"))
            lexical = make_service(store, settings.model_copy(update=off), None, policy=policy)
            hybrid = None
            if embedder is not None:
                hybrid = make_service(
                    store, settings.model_copy(update=on), embedder, policy=policy
                )
            yield RunContext(lexical, store_label(settings), RUN_ID, hybrid, embedder, tuple(notes))
        finally:
            store.close()
    finally:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)


__all__ = [
    "RUN_ID",
    "SETTINGS_FIELDS",
    "SETTINGS_TUNABLE",
    "TUNABLE",
    "TUNABLE_FIELDS",
    "Bm25Baseline",
    "Corpus",
    "RunContext",
    "TuneRequest",
    "Tuning",
    "clear_namespace",
    "describe_config",
    "describe_tuning",
    "load_rows",
    "make_service",
    "open_cached_embedder",
    "pack_greedy",
    "parse_tune",
    "parse_tuning",
    "progress",
    "recall_part",
    "run_context",
    "settings_part",
    "timed",
    "tuned_policy",
    "tuning_value",
]
