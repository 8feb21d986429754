"""GRAPHSVC_BLAS_THREADS holds numpy's BLAS to its thread count in the serving process (the vector
search is a BLAS product per request, and a BLAS thread team on a busy machine stalls)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from graphsvc.bootstrap import limit_blas_threads
from graphsvc.settings import Settings


def blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.fixture(autouse=True)
def restore_blas() -> Iterator[None]:
    assert np.ones(2) @ np.ones(2) == 2.0  # BLAS is loaded
    with threadpool_limits(limits=None):  # restores the limits on exit
        yield


@pytest.mark.parametrize("threads", [1, 2])
def test_the_setting_limits_blas(threads: int, tmp_path: Path) -> None:
    if not blas_threads():
        pytest.skip("numpy is built without a BLAS that threadpoolctl can see")
    limit_blas_threads(Settings(data_dir=tmp_path, blas_threads=threads))
    assert blas_threads() == {threads}


def test_zero_leaves_blas_alone(tmp_path: Path) -> None:
    before = blas_threads()
    limit_blas_threads(Settings(data_dir=tmp_path, blas_threads=0))
    assert blas_threads() == before
