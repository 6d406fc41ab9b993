"""Array kernels below the labels: numpy (:mod:`.memory`) and dask (:mod:`.chunked`).

The method modules work on ``xarray`` objects and call one kernel per step; which kernel
runs is decided in one place, :func:`is_dask` (xarray's ``duck_array_ops`` in miniature):
in-memory data take the numpy kernels, dask-backed data the chunked ones, and both give
the same numbers to rounding (``tests/test_dask.py``).
"""

from __future__ import annotations

import sys

__all__ = ["is_dask"]


def is_dask(A) -> bool:
    """True if ``A`` is a DataArray (or array) whose data are a ``dask.array.Array``."""
    mod = sys.modules.get("dask.array")
    if mod is None:  # dask never imported: nothing can be a dask array
        return False
    return isinstance(getattr(A, "data", A), mod.Array)
