"""Shared test setup: local data only, no network, no writes outside tmp folders.

The text is read from ``$MSAPOD_DATA`` when it is set (as the README tells), else from the
verified copy beside the repository (``../shared/data``), else pooch downloads it once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The verified TinyShakespeare copy beside the repository (``../shared/data``), used when
#: ``$MSAPOD_DATA`` is not set.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

if not os.environ.get("MSAPOD_DATA") and SHARED_DATA.is_dir():
    os.environ["MSAPOD_DATA"] = str(SHARED_DATA)

# One BLAS thread unless the environment says otherwise (set before numpy loads BLAS):
# the tests' arrays are small, where BLAS threads cost more than they give, and on shared
# cores they spin (the test suite takes about half the CPU time with one).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


@pytest.fixture(scope="session", autouse=True)
def _process_cache(tmp_path_factory):
    """The same for module- and session-scoped fixtures, which are made before the per-test
    cache: one temporary cache per test process, so that two xdist workers running the same
    fixture (e.g. a tiny training run) never share its state file."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MSAPOD_CACHE", str(tmp_path_factory.mktemp("msapod-cache-process")))
        yield


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Point ``$MSAPOD_CACHE`` at a per-test temporary folder (never ~/.cache)."""
    monkeypatch.setenv("MSAPOD_CACHE", str(tmp_path_factory.mktemp("msapod-cache")))


@pytest.fixture
def data_dir() -> Path:
    """Folder holding a verified ``tinyshakespeare.txt`` (``$MSAPOD_DATA`` or pooch's)."""
    from msapod.models.data import data_path

    return data_path().parent
