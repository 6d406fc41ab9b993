"""Shared test setup: local data only, no network, no writes outside tmp folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The verified TinyShakespeare copy shipped next to the repository (``../shared/data``).
DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"

if not os.environ.get("MSAPOD_DATA"):
    os.environ["MSAPOD_DATA"] = str(DATA_DIR)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Point ``$MSAPOD_CACHE`` at a per-test temporary folder (never ~/.cache)."""
    monkeypatch.setenv("MSAPOD_CACHE", str(tmp_path_factory.mktemp("msapod-cache")))


@pytest.fixture
def data_dir() -> Path:
    """Folder of the verified local TinyShakespeare copy."""
    return DATA_DIR
