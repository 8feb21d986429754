"""Sentence vectors for the evaluation: an on-disk cache in front of the embedder, and the
dense-only baseline (the embedder's cosine over every memory, computed as the stores compute it).

Embedding LoCoMo's dev turns takes about half a minute on one thread and BEAM's messages about a
minute, so :class:`CachedEmbedder` keeps every vector it has made in the evaluation's output
folder (never in the repository: ``eval-out/`` is git-ignored), keyed by the model id and the
sha256 of the text. A cached vector is the embedder's own float32 bits, so a rerun gives the same
figures as a cold run; a new model id starts a new file.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import numpy as np
from numpy.typing import NDArray

from graphsvc.embedding.codes import Codes, cosines, quantize, squared_norms, top_k
from graphsvc.embedding.encoder import Embedder, Vectors
from graphsvc.errors import BadInputError

MAGIC = b"graphsvc-eval-vectors 1\n"
DIGEST = 32  # sha256
# Texts per call to the wrapped embedder: the cache file grows as they finish, so an interrupted
# run keeps what it has embedded.
CHUNK = 256


def text_key(text: str, *, query: bool = False) -> bytes:
    """The cache key of a text: the sha256 of its UTF-8 bytes (after a NUL-framed mark for a
    query, which an encoder with instructions encodes otherwise than the same memory text)."""
    mark = b"\0query\0" if query else b""
    return hashlib.sha256(mark + text.encode("utf-8")).digest()


def cache_file(folder: Path, model_id: str) -> Path:
    """Where the vectors of ``model_id`` live in ``folder`` (one file per model)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)[:80]
    return folder / f"{safe}-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}.vec"


class CachedEmbedder:
    """An :class:`~graphsvc.embedding.encoder.Embedder` that remembers every vector on disk.

    The file is a header (magic, model id, dimension) and then records of ``sha256(text)``
    followed by the vector as little-endian float32. It is read on first use and appended to as
    new texts are embedded; a torn last record (an interrupted run) is cut off. Nothing is read
    or written in the constructor.
    """

    def __init__(
        self,
        inner: Embedder,
        folder: Path,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Wrap ``inner``; vectors go to a file in ``folder``.

        Args:
            inner: the embedder that makes vectors the cache lacks.
            folder: the cache folder (created on first write).
            progress: called with the number of texts after each chunk is embedded.
        """
        self.inner = inner
        self.folder = folder
        self.progress = progress
        self.hits = 0
        self.misses = 0
        self._vectors: dict[bytes, bytes] | None = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """The wrapped embedder's dimension."""
        return self.inner.dimension

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id: cached vectors are its vectors."""
        return self.inner.model_id

    @property
    def path(self) -> Path:
        """The cache file of the wrapped model."""
        return cache_file(self.folder, self.model_id)

    def _header(self) -> bytes:
        return MAGIC + f"{self.model_id}\n{self.dimension}\n".encode()

    def _load(self) -> dict[bytes, bytes]:
        if self._vectors is not None:
            return self._vectors
        vectors: dict[bytes, bytes] = {}
        path = self.path
        header = self._header()
        width = self.dimension * 4
        if path.is_file():
            data = path.read_bytes()
            if data.startswith(header):
                body = len(data) - len(header)
                whole = body - body % (DIGEST + width)
                for start in range(len(header), len(header) + whole, DIGEST + width):
                    vectors[data[start : start + DIGEST]] = data[
                        start + DIGEST : start + DIGEST + width
                    ]
                if whole != body:  # a torn record: cut it so appends stay aligned
                    with path.open("r+b") as handle:
                        handle.truncate(len(header) + whole)
            else:  # another format or model under this name: start again
                path.unlink()
        self._vectors = vectors
        return vectors

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        """The vectors of ``texts`` (queries, with ``query``): cached ones read back, the others
        embedded (in chunks) and appended to the cache.

        Raises:
            BadInputError: ``texts`` is one string rather than a sequence of them.
            ModelUnavailableError: the wrapped embedder cannot run.
        """
        if isinstance(texts, str):
            raise BadInputError("embed takes a sequence of texts, not one string: wrap it in [ ]")
        with self._lock:
            vectors = self._load()
            keys = [text_key(t, query=query) for t in texts]
            missing: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in vectors and key not in missing:
                    missing[key] = text
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
            pending = list(missing.items())
            for start in range(0, len(pending), CHUNK):
                chunk = pending[start : start + CHUNK]
                made = np.ascontiguousarray(
                    self.inner.embed([t for _, t in chunk], query=query), np.float32
                )
                records = []
                for (key, _), row in zip(chunk, made, strict=True):
                    raw = row.astype("<f4").tobytes()
                    vectors[key] = raw
                    records.append(key + raw)
                self._append(b"".join(records))
                if self.progress is not None:
                    self.progress(len(chunk))
            out = np.empty((len(texts), self.dimension), dtype=np.float32)
            for row, key in enumerate(keys):
                out[row] = np.frombuffer(vectors[key], dtype="<f4")
            return out

    def _append(self, records: bytes) -> None:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not path.exists()
        with path.open("ab") as handle:
            if fresh:
                handle.write(self._header())
            handle.write(records)

    def missing(self, texts: Sequence[str]) -> int:
        """How many distinct texts of ``texts`` the cache lacks (reads the cache file)."""
        with self._lock:
            vectors = self._load()
            return len({k for k in map(text_key, texts) if k not in vectors})


@dataclass(frozen=True)
class DenseIndex:
    """The dense-only baseline over one namespace's memories: the embedder's vectors quantised to
    the stores' int8 codes (:func:`graphsvc.embedding.codes.quantize`), exact cosines
    (:func:`graphsvc.embedding.codes.cosines`) with every memory, the best first
    (:func:`graphsvc.embedding.codes.top_k`): what a store's ``similar`` computes, without a store.
    Ties break by position (a store breaks them by memory id): two runs give the same ranking, as
    the bm25s baseline does."""

    embedder: Embedder
    codes: Codes
    norms: NDArray[np.float64]
    keys: tuple[UUID, ...]

    @classmethod
    def build(cls, embedder: Embedder, texts: Sequence[str]) -> DenseIndex:
        """Embed ``texts`` (the memories, in row order) and keep their codes."""
        codes = quantize(embedder.embed(list(texts)))
        # Position as the tie-break key: UUIDs order as their integers do.
        keys = tuple(UUID(int=i) for i in range(len(texts)))
        return cls(embedder, codes, squared_norms(codes), keys)

    def search(self, query: str, limit: int) -> list[tuple[int, float]]:
        """The ``limit`` memories most similar to ``query``: ``(position, cosine)``, best first
        (cosines may be 0 or negative: every memory is a candidate)."""
        if not self.keys:
            return []
        query_codes = quantize(self.embedder.embed([query], query=True))[0]
        scores = cosines(query_codes, self.codes, self.norms)
        return [(key.int, s) for key, s in top_k(self.keys, scores, limit)]


__all__ = ["CachedEmbedder", "DenseIndex", "cache_file", "text_key"]
