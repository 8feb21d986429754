"""Sentence embeddings for recall by meaning: the :class:`Embedder` seam, an ONNX encoder.

An embedder turns texts into L2-normalised float32 rows; the dot product of two rows is their
cosine similarity. The default implementation, :class:`OnnxEmbedder`, runs a BERT-style encoder
with onnxruntime and a Hugging Face ``tokenizer.json`` with ``tokenizers`` (no torch), pools the
token vectors as the model was trained (mean under the attention mask, or the first token) and
normalises the result. Queries and memories may carry the model's own instructions
(``query: `` / ``passage: `` for e5).

The packaged models and where their files are: :mod:`graphsvc.embedding.registry`.

Nothing is read at import or in a constructor: the files are opened on the first :meth:`embed`
(or ``dimension``/``model_id``), or by an explicit :meth:`OnnxEmbedder.load`.

Determinism: the session runs sequentially on ``threads`` intra-op threads (default 1) with
onnxruntime's deterministic-compute flag. The same text gives the same bits, alone or in any batch
(padding is masked and each row is pooled over its own tokens only; the unit tests check it). A
model that quantises its activations per call (dynamic int8) would break that, so each text goes
in a call of its own there (:attr:`PackagedModel.alone`; a folder of unknown files is probed).
Two threads gave the same bits as one on every LoCoMo turn, but onnxruntime does not promise that,
so vectors meant to be compared bit for bit are made on one thread. Throughput scales with cores
another way: ``workers`` runs several of those one-thread calls at once, on as many Python threads
(onnxruntime releases the GIL and ``InferenceSession.run`` may be called concurrently), each call
computed exactly as it would be alone, so the bits do not depend on ``workers``. Another
onnxruntime version may change the last bits (1.20.1 against 1.32.0: at most 2.5e-7 per
component, cosine 1.0 to 7 places): ``model_id`` names the weights, not the runtime.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import numpy as np
from numpy.typing import NDArray

from graphsvc.embedding.registry import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_MODEL,
    INSTALL_HINT,
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelUnavailableError,
    PackagedModel,
    Pooling,
    file_sha256,
    known_model,
    locate,
    packaged_model,
)
from graphsvc.errors import BadInputError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Texts per onnxruntime call. On one thread small batches were fastest (LoCoMo turns, about 40
# tokens: 4-8 texts about 90-100 sentences/s, 32 about 73, 64 about 50; larger activations fall out
# of cache), and a text's vector does not depend on the batch.
DEFAULT_BATCH_SIZE = 8


Vectors = NDArray[np.float32]


class Embedder(Protocol):
    """What recall needs from a sentence encoder.

    ``embed`` returns a C-contiguous float32 matrix of shape ``(len(texts), dimension)`` whose
    rows have unit L2 norm, so ``a @ b`` is a cosine similarity. The same text gives the same row
    whatever it is batched with. ``model_id`` names the weights: it changes whenever they (or
    anything else that changes the vectors) change, so stored vectors can be told stale.
    """

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        ...

    @property
    def model_id(self) -> str:
        """Stable name of the weights and settings that produced the vectors."""
        ...

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """The unit vectors of ``texts``, one row each, in order: memories' texts, or queries
        with ``query`` (a model trained with instructions puts another before each)."""
        ...


class TokenEmbedder(Embedder, Protocol):
    """An :class:`Embedder` whose work splits in two: :meth:`tokenize` (Python, under the GIL)
    and :meth:`embed_tokens` (mostly native code, without it), so a caller can tokenise a text
    itself and hand the rest to another thread. ``embed_tokens(tokenize(texts))`` is the same
    bits as ``embed(texts)``, and ``embed_tokens(tokenize(texts, query=True))`` as
    ``embed(texts, query=True)``."""

    def tokenize(self, texts: Sequence[str], *, query: bool = False) -> Sequence[Sequence[int]]:
        """The token ids of each text (of each query, with ``query``)."""
        ...

    def embed_tokens(self, ids: Sequence[Sequence[int]]) -> Vectors:
        """The unit vectors of the texts whose token ids are ``ids``."""
        ...


def _not_one_string(texts: Sequence[str]) -> None:
    """Refuse one string where a sequence of texts belongs (a str is a sequence of characters).

    Raises:
        BadInputError: ``texts`` is a single string.
    """
    if isinstance(texts, str):
        raise BadInputError("embed takes a sequence of texts, not one string: wrap it in [ ]")


def tokenizes_apart(embedder: Embedder | None) -> TypeGuard[TokenEmbedder]:
    """Whether ``embedder`` is a :class:`TokenEmbedder` (looked up on its class, so that
    nothing is loaded: an embedder's properties may load its model)."""
    kind = type(embedder)
    return callable(getattr(kind, "tokenize", None)) and callable(
        getattr(kind, "embed_tokens", None)
    )


@dataclass(frozen=True)
class _Loaded:
    session: Any
    tokenizer: Tokenizer
    dimension: int
    model_id: str
    input_names: frozenset[str]
    pooling: Pooling
    query_prefix: str
    passage_prefix: str
    #: The same tokenizer without truncation (for windows), when ``chunks`` is above 1.
    whole: Tokenizer | None
    #: Each text is encoded in a call of its own (:attr:`PackagedModel.alone`).
    alone: bool = False


class OnnxEmbedder:
    """A BERT-style sentence encoder on onnxruntime and ``tokenizers``: the model's pooling
    (mean or first token), L2 norm.

    ``source`` is a :class:`PackagedModel` or a folder holding ``model.onnx`` (inputs
    ``input_ids``, ``attention_mask`` and optionally ``token_type_ids``; first output the token
    vectors) and ``tokenizer.json``. A folder whose files are a packaged model's (by sha256) runs
    as that model (its pooling and instructions); any other folder is mean-pooled without
    instructions. Building one touches nothing on disk: the files are located,
    checked and opened by :meth:`load` or the first use. Safe to share between threads (loading
    happens once, under a lock; onnxruntime sessions may run concurrently).

    With ``workers`` above 1, one :meth:`embed` call runs its batches on that many threads at
    once, each an ordinary one-thread onnxruntime call: a text's vector is the same bits whatever
    ``workers`` is (the unit tests check it on the real model). The threads start on the first
    call that has more than one batch, and stay for later calls until :meth:`close`.
    """

    def __init__(
        self,
        source: PackagedModel | Path,
        *,
        max_length: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int = 1,
        workers: int = 1,
        home: Path | None = None,
        chunks: int = 1,
    ) -> None:
        """Describe the encoder; nothing is read until :meth:`load` or the first use.

        Args:
            source: the packaged model or the model folder.
            home: where Maven models are unpacked (default :func:`default_model_home`).
            chunks: a memory's text is encoded as up to this many windows of ``max_length``
                tokens and its vector is their normalised mean (1: the text is cut to one
                window). Queries are always one window.
            max_length: tokens kept per text (the rest is cut); default the packaged model's,
                else 256.
            batch_size: texts per onnxruntime call.
            threads: onnxruntime intra-op threads (1 keeps vectors bit-identical everywhere).
            workers: batches of one call encoded at once, on as many threads (more than the
                machine's cores only adds switching); does not change the vectors.

        Raises:
            BadInputError: ``max_length``, ``batch_size``, ``threads`` or ``workers`` is below 1.
        """
        if max_length is None:
            max_length = (
                source.max_length if isinstance(source, PackagedModel) else DEFAULT_MAX_LENGTH
            )
        for label, value in (
            ("max_length", max_length),
            ("batch_size", batch_size),
            ("threads", threads),
            ("workers", workers),
            ("chunks", chunks),
        ):
            if value < 1:
                raise BadInputError(f"embedding {label} must be at least 1, got {value}")
        self.source = source
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads
        self.workers = workers
        self.home = home
        self.chunks = chunks
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_package(
        cls,
        name: str = DEFAULT_MODEL,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int = 1,
        workers: int = 1,
        home: Path | None = None,
        chunks: int = 1,
        max_length: int | None = None,
    ) -> OnnxEmbedder:
        """The packaged model ``name`` (see :data:`PACKAGED_MODELS`); nothing is read here.

        Raises:
            BadInputError: ``name`` is not a packaged model.
        """
        return cls(
            packaged_model(name),
            max_length=max_length,
            batch_size=batch_size,
            threads=threads,
            workers=workers,
            home=home,
            chunks=chunks,
        )

    @classmethod
    def from_folder(
        cls,
        folder: Path,
        *,
        max_length: int = DEFAULT_MAX_LENGTH,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int = 1,
        workers: int = 1,
    ) -> OnnxEmbedder:
        """The model in ``folder`` (``model.onnx`` and ``tokenizer.json``); nothing is read here:
        a missing file is reported by :meth:`load` or the first use."""
        return cls(
            folder, max_length=max_length, batch_size=batch_size, threads=threads, workers=workers
        )

    @property
    def dimension(self) -> int:
        """Length of each vector (loads the model).

        Raises:
            ModelUnavailableError: as :meth:`load`.
        """
        return self._ensure().dimension

    @property
    def model_id(self) -> str:
        """``name@digest``: the packaged model's name (``onnx`` for a folder whose files match
        no packaged model) and the first 16 hex digits of a sha256 over the model file's and the
        tokenizer's sha256, the maximum length, the pooling and the instructions (loads the
        model).

        Raises:
            ModelUnavailableError: as :meth:`load`.
        """
        return self._ensure().model_id

    def load(self) -> OnnxEmbedder:
        """Read, check and open the model files (once); returns ``self``.

        Raises:
            ModelUnavailableError: a file is missing, does not match its pinned sha256, or
                onnxruntime/tokenizers cannot open it (or are not installed).
        """
        self._ensure()
        return self

    def _ensure(self) -> _Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._open()
                loaded = self._loaded
        return loaded

    def _open(self) -> _Loaded:
        files = locate(self.source, self.home)
        for path in (files.model, files.tokenizer):
            if not path.is_file():
                raise ModelUnavailableError(
                    f"embedding model file {path} does not exist: point GRAPHSVC_EMBED_MODEL_DIR "
                    f"at a folder holding {MODEL_FILE} and {TOKENIZER_FILE}, or {INSTALL_HINT}"
                )
        model_sha = file_sha256(files.model)
        tokenizer_sha = file_sha256(files.tokenizer)
        for path, got, want in (
            (files.model, model_sha, files.model_sha256),
            (files.tokenizer, tokenizer_sha, files.tokenizer_sha256),
        ):
            if want is not None and got != want:
                raise ModelUnavailableError(
                    f"embedding model file {path} has sha256 {got}, not the pinned {want}: "
                    f"the installed weights are damaged or of another version; reinstall "
                    f"them with: bash scripts/install_model.sh"
                )
        spec = (
            self.source
            if isinstance(self.source, PackagedModel)
            else known_model(model_sha, tokenizer_sha)
        )
        name = spec.name if spec is not None else "onnx"
        pooling: Pooling = spec.pooling if spec is not None else "mean"
        query_prefix = spec.query_prefix if spec is not None else ""
        passage_prefix = spec.passage_prefix if spec is not None else ""
        fingerprint = f"{model_sha}\n{tokenizer_sha}\n{self.max_length}\n{pooling}\n"
        if query_prefix or passage_prefix:
            fingerprint += f"{query_prefix}\n{passage_prefix}\n"
        if self.chunks > 1:
            fingerprint += f"chunks {self.chunks}\n"
        model_id = f"{name}@{hashlib.sha256(fingerprint.encode()).hexdigest()[:16]}"
        session = self._session(files.model)
        tokenizer = self._tokenizer(files.tokenizer)
        whole = None
        if self.chunks > 1:
            whole = self._tokenizer(files.tokenizer)
            whole.no_truncation()
        inputs = frozenset(i.name for i in session.get_inputs())
        missing = {"input_ids", "attention_mask"} - inputs
        shape = session.get_outputs()[0].shape
        width = shape[-1] if shape else None
        if missing or not isinstance(width, int) or len(shape) != 3:
            raise ModelUnavailableError(
                f"{files.model} is not a sentence encoder graphsvc can run: it needs inputs "
                f"input_ids and attention_mask and a first output of shape (batch, tokens, width) "
                f"with a fixed width, got inputs {sorted(inputs)} and output shape {shape}"
            )
        if spec is not None and width != spec.dimension:
            raise ModelUnavailableError(
                f"{files.model} gives {width}-d vectors, but {spec.name} is {spec.dimension}-d"
            )
        loaded = _Loaded(
            session,
            tokenizer,
            width,
            model_id,
            inputs,
            pooling,
            query_prefix,
            passage_prefix,
            whole,
        )
        if spec is not None:
            return replace(loaded, alone=spec.alone)
        # A model graphsvc does not know: whether a call's other texts change a text's vector.
        probe: list[Sequence[int]] = [
            tokenizer.encode(text).ids for text in ("graphsvc", "a longer second text " * 8)
        ]
        if not np.array_equal(_encode(loaded, probe[:1])[0], _encode(loaded, probe)[0]):
            return replace(loaded, alone=True)
        return loaded

    def _session(self, path: Path) -> Any:
        try:
            import onnxruntime as ort  # type: ignore[import-untyped,unused-ignore]
        except ImportError as exc:
            raise ModelUnavailableError(
                "onnxruntime is not installed: pip install 'onnxruntime>=1.20'"
            ) from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.use_deterministic_compute = True
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise ModelUnavailableError(
                f"onnxruntime cannot load {path} ({exc}); reinstall the weights: {INSTALL_HINT}"
            ) from exc

    def _tokenizer(self, path: Path) -> Tokenizer:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelUnavailableError(
                "tokenizers is not installed: pip install 'tokenizers>=0.20'"
            ) from exc
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises plain Exception on a bad file
            raise ModelUnavailableError(
                f"cannot read the tokenizer {path} ({exc}); reinstall the weights: {INSTALL_HINT}"
            ) from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.max_length)
        return tokenizer

    def embed(
        self, texts: Sequence[str], *, query: bool = False, workers: int | None = None
    ) -> Vectors:
        """The unit vectors of ``texts`` (see :class:`Embedder`), in batches of ``batch_size``
        texts of similar length; each text is cut to the maximum length in tokens.
        ``workers``: as :meth:`embed_tokens`.

        Raises:
            BadInputError: ``texts`` is a single string rather than a sequence of them.
            ModelUnavailableError: as :meth:`load`.
        """
        if query or self.chunks == 1:
            return self.embed_tokens(self.tokenize(texts, query=query), workers=workers)
        groups = self.embed_windows(texts, workers=workers)
        out = np.empty((len(groups), self._ensure().dimension), dtype=np.float32)
        for row, vectors in enumerate(groups):
            if len(vectors) == 1:  # one window: its vector, as without chunks
                out[row] = vectors[0]
                continue
            total = vectors[0].astype(np.float64)
            for vector in vectors[1:]:
                total += vector
            out[row] = total / max(float(np.linalg.norm(total)), 1e-12)
        return out

    def windows(self, texts: Sequence[str]) -> list[list[list[int]]]:
        """Each memory text's token ids as up to ``chunks`` windows of ``max_length`` tokens,
        each with the model's markers and the memory instruction, in text order.

        Raises:
            BadInputError: ``texts`` is a single string rather than a sequence of them.
            ModelUnavailableError: as :meth:`load`.
        """
        _not_one_string(texts)
        loaded = self._ensure()
        whole = loaded.whole or loaded.tokenizer
        prefix = loaded.passage_prefix
        lead = len(whole.encode(prefix).ids) - 1 if prefix else 1  # the first marker, the prefix
        width = max(self.max_length - lead - 1, 1)
        out = []
        for text in texts:
            ids = whole.encode(prefix + text).ids
            head, body, tail = ids[:lead], ids[lead:-1], ids[-1:]
            starts = range(0, max(len(body), 1), width)
            out.append([head + body[i : i + width] + tail for i in starts][: self.chunks])
        return out

    def embed_windows(self, texts: Sequence[str], *, workers: int | None = None) -> list[Vectors]:
        """The unit vector of every window (:meth:`windows`) of each memory text.
        ``workers``: as :meth:`embed_tokens`.

        Raises:
            BadInputError: ``texts`` is a single string rather than a sequence of them.
            ModelUnavailableError: as :meth:`load`.
        """
        groups = self.windows(texts)
        flat = self.embed_tokens([window for group in groups for window in group], workers=workers)
        out, start = [], 0
        for group in groups:
            out.append(flat[start : start + len(group)])
            start += len(group)
        return out

    def tokenize(self, texts: Sequence[str], *, query: bool = False) -> list[list[int]]:
        """The token ids of each text, after the model's instruction for queries (``query``)
        or memories, cut to the maximum length: the first half of :meth:`embed` (Python work,
        under the GIL), which :meth:`embed_tokens` finishes.

        Raises:
            BadInputError: ``texts`` is a single string rather than a sequence of them.
            ModelUnavailableError: as :meth:`load`.
        """
        _not_one_string(texts)
        loaded = self._ensure()
        prefix = loaded.query_prefix if query else loaded.passage_prefix
        encode = loaded.tokenizer.encode
        return [encode(prefix + text).ids for text in texts]

    def embed_tokens(self, ids: Sequence[Sequence[int]], *, workers: int | None = None) -> Vectors:
        """The unit vectors of texts tokenised by :meth:`tokenize`: the same bits as
        :meth:`embed` of the texts. Nearly all of it runs in onnxruntime, without the GIL.
        ``workers``: how many of the encoder's worker threads this call may use (default
        ``self.workers``); 1 runs it on the calling thread alone (a caller that runs encoder
        calls on threads of its own, such as the vector queue). The bits are the same either way.

        Raises:
            ModelUnavailableError: as :meth:`load`.
        """
        loaded = self._ensure()
        out = np.zeros((len(ids), loaded.dimension), dtype=np.float32)
        if not ids:
            return out
        # Similar lengths together waste less on padding; padding never changes a row's bits.
        order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
        workers = self.workers if workers is None else max(1, min(workers, self.workers))
        size = 1 if loaded.alone else self.batch_size
        if workers > 1 and len(order) < workers * size:
            size = -(-len(order) // workers)  # a few texts: one batch per worker
        chunks = [order[start : start + size] for start in range(0, len(order), size)]
        if workers == 1 or len(chunks) == 1:
            for chunk in chunks:
                out[chunk] = _encode(loaded, [ids[i] for i in chunk])
            return out
        pool = self._workers(workers)
        batches = pool.map(lambda chunk: _encode(loaded, [ids[i] for i in chunk]), chunks)
        for chunk, rows in zip(chunks, batches, strict=True):
            out[chunk] = rows
        return out

    def _workers(self, count: int) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(count, thread_name_prefix="graphsvc-encoder")
                pool = self._pool
        return pool

    def close(self) -> None:
        """Stop the worker threads, if any were started (a later call starts them again)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def _encode(loaded: _Loaded, batch: list[Sequence[int]]) -> Vectors:
    lengths = [len(row) for row in batch]
    input_ids = np.zeros((len(batch), max(lengths)), dtype=np.int64)
    mask = np.zeros_like(input_ids)
    for row, (tokens, length) in enumerate(zip(batch, lengths, strict=True)):
        input_ids[row, :length] = tokens
        mask[row, :length] = 1
    feeds = {"input_ids": input_ids, "attention_mask": mask}
    if "token_type_ids" in loaded.input_names:
        feeds["token_type_ids"] = np.zeros_like(input_ids)
    try:
        hidden: NDArray[np.float32] = np.asarray(
            loaded.session.run(None, feeds)[0], dtype=np.float32
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise ModelUnavailableError(f"the embedding model failed to run: {exc}") from exc
    if loaded.pooling == "cls":
        pooled = hidden[:, 0].astype(np.float64)
    else:
        pooled = mean_pool(hidden, lengths)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: NDArray[np.float64] = pooled / np.maximum(norms, 1e-12)
    return unit.astype(np.float32)


def mean_pool(hidden: NDArray[np.float32], lengths: list[int]) -> NDArray[np.float64]:
    """The mean of each row's first ``lengths[row]`` token vectors, in float64.

    The tokens are added one after the other, in order (:func:`_sum_tokens`), and each row only
    over its own tokens, so a row's bits are the same alone or in any batch, padded or not: a
    batch whose rows all have the same length is summed at once, a padded one row by row."""
    if len(lengths) == 1 or min(lengths) == hidden.shape[1]:
        sums = _sum_tokens(hidden[:, : max(lengths)])
        pooled: NDArray[np.float64] = sums / np.asarray(lengths, dtype=np.float64)[:, None]
        return pooled
    pooled = np.empty((len(lengths), hidden.shape[2]), dtype=np.float64)
    for row, length in enumerate(lengths):
        pooled[row] = _sum_tokens(hidden[row : row + 1, :length])[0] / length
    return pooled


def _sum_tokens(hidden: NDArray[np.float32]) -> NDArray[np.float64]:
    """The float64 sum over axis 1 (tokens) of a ``(rows, tokens, dimension)`` array, adding the
    tokens strictly in order: a fixed order of additions, whatever order numpy's own reductions
    would choose."""
    total = hidden[:, 0].astype(np.float64)
    for token in range(1, hidden.shape[1]):
        total += hidden[:, token]
    return total


def open_embedder(
    model_dir: Path | None = None,
    model: str = DEFAULT_MODEL,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    threads: int = 1,
    workers: int = 1,
    home: Path | None = None,
    chunks: int = 1,
) -> OnnxEmbedder:
    """The embedder the settings name: the folder ``model_dir`` when given
    (``GRAPHSVC_EMBED_MODEL_DIR``), else the installed packaged model ``model``
    (``GRAPHSVC_EMBED_MODEL``; a Maven model unpacked in ``home``,
    ``GRAPHSVC_EMBED_MODEL_HOME``). Reads nothing: call ``load()`` to fail fast at start.

    Raises:
        BadInputError: ``model`` is not a packaged model, or a size is below 1.
    """
    if model_dir is not None:
        return OnnxEmbedder(
            model_dir, batch_size=batch_size, threads=threads, workers=workers, chunks=chunks
        )
    return OnnxEmbedder.from_package(
        model, batch_size=batch_size, threads=threads, workers=workers, home=home, chunks=chunks
    )


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "Embedder",
    "OnnxEmbedder",
    "TokenEmbedder",
    "Vectors",
    "mean_pool",
    "open_embedder",
    "tokenizes_apart",
]
