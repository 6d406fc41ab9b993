"""Array kernels below the labels: numpy (:mod:`.memory`) and dask (:mod:`.chunked`).

The method modules work on labelled ``xarray`` objects: they check and label, and call
one kernel per step on the bare arrays (``A.data``, numpy or dask); which kernel runs is
decided in one place, :func:`kernels` (xarray's ``duck_array_ops`` in miniature):
in-memory data take the numpy kernels, dask-backed data the chunked ones. Both modules
define the same names with the same signatures, taking and returning bare arrays:

=====================  ===================================================================
``check_values``       finite values, rows (the last axis) summing to one
``is_causal``          zero above the diagonal (query and key the last two axes)
``ensemble_mean``      the mean over the first axis (dask: with the value checks, one pass)
``gather``             ``out[..., i, m] = x[..., i, idx[i, m]]`` (the lag re-indexing)
``lag_moments``        ``C = <r r^T>`` of the lag profiles
``cwt``                the Morlet transform of every profile
``coherency_sums``     ``sum_s Y_s Y_s^H`` per scale
``LagStats``           the lag statistics of one ensemble and its POD (Grams -> eigensolve
                       -> project, :func:`msapod.lagstats.gram_pod`):
                       :class:`msapod.lagstats.LagStats` and its chunked twin
``residual``           ``(1/N) sum_s ||u_s - c_s B||^2``
=====================  ===================================================================

and give the same numbers to rounding (``tests/test_dask.py``).
"""

from __future__ import annotations

import sys
from types import ModuleType

from . import chunked, memory

__all__ = ["is_dask", "kernels"]


def is_dask(A) -> bool:
    """True if ``A`` is a DataArray (or array) whose data are a ``dask.array.Array``."""
    mod = sys.modules.get("dask.array")
    if mod is None:  # dask never imported: nothing can be a dask array
        return False
    return isinstance(getattr(A, "data", A), mod.Array)


def kernels(A) -> ModuleType:
    """The kernel module for ``A``: :mod:`.chunked` for dask-backed data, else :mod:`.memory`."""
    return chunked if is_dask(A) else memory
