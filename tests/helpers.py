"""Helpers the suites import: the store parameter list, a deterministic clock, test settings."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphsvc.embedding.encoder import OnnxEmbedder, Vectors, open_embedder
from graphsvc.embedding.registry import ModelUnavailableError
from graphsvc.settings import Settings

STORES = ["mirror", pytest.param("neo4j", marks=pytest.mark.neo4j)]


def fixed_clock(start: datetime | None = None) -> Callable[[], datetime]:
    """A clock that ticks one second per call, from 2025-01-01 UTC: same input, same timestamps."""
    base = start or datetime(2025, 1, 1, tzinfo=UTC)
    counter = itertools.count()
    return lambda: base + timedelta(seconds=next(counter))


class WrappedEncoder:
    """The real encoder behind a subclass that changes what one call does (the encoder's own
    failures and timing cannot be had on demand)."""

    def __init__(self, inner: OnnxEmbedder) -> None:
        self.inner = inner

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        return self.inner.embed(texts, query=query)


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"data_dir": tmp_path / "data", "fsync": False}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def installed_model(what: str) -> OnnxEmbedder:
    """The default packaged embedding model, loaded; else a loud skip saying ``what`` was not run
    (a failure under ``CI=true``: CI installs the weights)."""
    try:
        return open_embedder().load()
    except ModelUnavailableError as exc:
        message = f"!!! embedding model not installed, {what} not run: {exc}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message} (CI=true: CI must install the weights)")
        pytest.skip(message)
