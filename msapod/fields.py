"""Attention fields as labelled arrays: validation, Reynolds split, lag coordinates.

An *attention field* is an ``xarray.DataArray`` with dims ``(..., "snapshot", "query",
"key")``: for every snapshot s (a document of the ensemble) the L x L matrix A_s(i, j) of
attention probabilities, query i, key j. Leading dims (``model``, ``layer``, ``head``) are
carried along by every function of the package.

Lag coordinates (PAPER.md step 3): the lag is ``tau = i - j`` (query minus key), so a
causal field has ``tau >= 0``. The lag profile of query row i is
``r_{s,i}(tau) = A_s(i, i - tau)``, zero where ``i - tau`` is not a key position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ._labels import (
    FIELD_DIMS,
    check_atol,
    check_count,
    check_flag,
    check_meta,
    lag_layout,
    lookup,
    positions,
    require_key,
)
from .backends import kernels

__all__ = ["check_field", "from_lag", "is_causal", "reynolds", "to_lag"]


def check_field(
    A,
    *,
    name: str = "A",
    dims: Sequence[str] = FIELD_DIMS,
    stochastic: bool = False,
    atol: float = 1e-3,
    min_snapshots: int | None = 2,
    snapshot_dim: str = "snapshot",
) -> xr.DataArray:
    """Validate a field and return it unchanged.

    Parameters
    ----------
    A
        The field; must be an ``xarray.DataArray``.
    name
        Argument name used in error messages.
    dims
        Dims that must be present (any leading dims are allowed besides).
    stochastic
        If true, every row must sum to one over ``key`` (within ``atol``) and hold no
        negative entry: the field is a set of attention probabilities.
    min_snapshots
        Least size of ``snapshot_dim`` (``None`` skips the check).

    Raises
    ------
    TypeError
        ``A`` is not a DataArray.
    ValueError
        A dim is missing or repeated, the data hold NaN/inf, rows are not stochastic, or
        there are too few snapshots.

    Notes
    -----
    Dask-backed data are checked chunk by chunk in one pass (``dask.compute`` of the
    NaN/inf count, the smallest entry and the worst row sum), never loaded whole.
    """
    return check_with(
        None,
        A,
        name=name,
        dims=dims,
        stochastic=stochastic,
        atol=atol,
        min_snapshots=min_snapshots,
        snapshot_dim=snapshot_dim,
        lazy=False,
    )


def check_lazy(A, *, name: str = "A", dims: Sequence[str] = FIELD_DIMS, **kw) -> xr.DataArray:
    """:func:`check_field` for in-memory data; dims and dtype only for dask data.

    The chunked kernels check the values where they reduce them (a NaN makes the mean,
    the lag moments or the Gram diagonal non-finite), so no extra pass is spent here.
    """
    return check_with(kernels(A), A, name=name, dims=dims, **kw)


def check_with(
    kern,
    A,
    *,
    name: str = "A",
    dims: Sequence[str] = FIELD_DIMS,
    stochastic: bool = False,
    atol: float = 1e-3,
    min_snapshots: int | None = 2,
    snapshot_dim: str = "snapshot",
    lazy: bool = True,
) -> xr.DataArray:
    """:func:`check_lazy` with the kernels of ``A`` already picked (one dispatch);
    ``kern=None`` picks them after the metadata check, ``lazy=False`` checks the values
    of dask data too (:func:`check_field`)."""
    check_meta(A, name, dims)
    atol = check_atol(atol)
    if min_snapshots is not None and snapshot_dim in A.dims:
        check_count(A, name, min_snapshots, snapshot_dim)
    kern = kernels(A) if kern is None else kern
    if lazy and kern.CHECKS_IN_PASS:
        return A
    band = is_band(A)
    if stochastic and not band:
        require_key(A, name)
    last = "lag" if band else "key"
    x = A.transpose(..., last).data if stochastic else A.data  # rows sum over the last axis
    kern.check_values(x, name, stochastic=stochastic, atol=atol, band=band)
    return A


def is_band(A: xr.DataArray) -> bool:
    """Whether ``A`` is a field in the lag layout (a ``lag`` dim and no ``key`` dim): the
    lag band of :func:`msapod.collect_attention`'s ``tau_max`` or :func:`to_lag`."""
    return "lag" in A.dims and "key" not in A.dims


def is_causal(A: xr.DataArray, atol: float = 0.0) -> bool:
    """True if every entry with key after query (``j > i``) is zero (within ``atol``)."""
    atol = check_atol(atol)
    check_meta(A, "A", ("query", "key"))
    q, k = positions(A, "query", "A"), positions(A, "key", "A")
    return kernels(A).is_causal(A.transpose(..., "query", "key").data, q, k, atol)


def reynolds(A: xr.DataArray, dim: str = "snapshot", *, check_stochastic: bool = True):
    """Reynolds split of an attention ensemble (PAPER.md step 2).

    ``Abar = mean_s A_s`` and ``u_s = A_s - Abar``; the fluctuations have zero ensemble
    mean by construction.

    Parameters
    ----------
    A
        Attention field with dims ``(..., dim, "query", "key")``.
    dim
        The ensemble dim averaged over.
    check_stochastic
        Check that ``A`` holds attention probabilities (rows summing to one).

    Returns
    -------
    xarray.Dataset
        ``mean`` (the field without ``dim``) and ``fluctuation`` (same shape as ``A``),
        both float64.

    Notes
    -----
    For dask-backed ``A`` one pass over the chunks computes the checks and the mean (held
    in memory: one field per leading index); the fluctuation stays lazy, chunked like
    ``A``.
    """
    check_stochastic = check_flag(check_stochastic, "check_stochastic")
    check_lazy(A, dims=(dim, "query", "key"), stochastic=check_stochastic, snapshot_dim=dim)
    # the keys last: the chunked kernel checks the rows in the pass that forms the mean
    core = [d for d in A.dims if d not in (dim, "key")] + ["key"]
    m = kernels(A).ensemble_mean(A.transpose(dim, *core).data, "A", stochastic=check_stochastic)
    coords = {c: A.coords[c] for c in A.coords if dim not in A.coords[c].dims}
    mean = xr.DataArray(m, dims=core, coords=coords).transpose(*[d for d in A.dims if d != dim])
    fluct = (A.astype(np.float64) - mean).transpose(*A.dims)
    ds = xr.Dataset({"mean": mean, "fluctuation": fluct}, attrs=dict(A.attrs))
    ds["mean"].attrs = {"long_name": "mean field Abar(i, j)", "averaged_over": dim}
    ds["fluctuation"].attrs = {"long_name": "fluctuation u_s(i, j) = A_s - Abar"}
    ds.attrs["reynolds_dim"] = dim
    return ds


def to_lag(A: xr.DataArray, *, causal: bool | None = None) -> xr.DataArray:
    """Re-index a field from ``(query, key)`` to ``(query, lag)``, lag = query - key.

    ``R(i, tau) = A(i, i - tau)``, zero where ``i - tau`` is not a key position (zero
    padding, never wrapped around).

    Parameters
    ----------
    A
        Field with dims ``(..., "query", "key")`` and integer positions on both.
    causal
        ``True``: lags ``0 .. max(query) - min(key)`` and entries above the diagonal must be
        zero; ``False``: all lags from ``min(query) - max(key)`` (negative) upwards;
        ``None`` (default): detect.

    Returns
    -------
    xarray.DataArray
        Dims ``(..., "query", "lag")``; attrs record the key positions so that
        :func:`from_lag` inverts it exactly.

    Notes
    -----
    Dask-backed ``A`` gives a lazy result chunked like ``A`` (``query`` and ``key`` merged
    into one chunk each, since every row needs its whole profile). Detecting or verifying
    causality then costs one pass over the chunks; ``causal=False`` costs none.
    """
    check_lazy(A, dims=("query", "key"), min_snapshots=None)
    q = positions(A, "query", "A")
    k = positions(A, "key", "A")
    if causal is None or causal:
        detected = is_causal(A)
        if causal is None:
            causal = detected
        elif not detected:
            raise ValueError("causal: True, but A has non-zero entries with key after query")
    lags, idx, valid = lag_layout(q, k, causal)
    attrs = {**A.attrs, "key_positions": k, "lag_definition": "tau = query - key"}
    return _regather(A, "key", "lag", lags, idx, valid, attrs)


def from_lag(R: xr.DataArray, *, keys: Sequence[int] | None = None) -> xr.DataArray:
    """Inverse of :func:`to_lag`: ``(query, lag)`` back to ``(query, key)``.

    ``keys`` are the key positions; default: those recorded by :func:`to_lag`, else the
    query positions (a square field).
    """
    check_lazy(R, name="R", dims=("query", "lag"), min_snapshots=None)
    q = positions(R, "query", "R")
    lags = positions(R, "lag", "R")
    if keys is None:
        keys = R.attrs.get("key_positions", q)
    k = np.asarray(keys, dtype=np.int64)
    idx, valid = lookup(lags, q[:, None] - k[None, :])
    attrs = {a: v for a, v in R.attrs.items() if a not in ("key_positions", "lag_definition")}
    return _regather(R, "lag", "key", k, idx, valid, attrs)


def _regather(A, old: str, new: str, values, idx, valid, attrs: dict) -> xr.DataArray:
    """``A (..., query, old)`` as ``(..., query, new)``, ``new`` at ``values``: entry
    ``(i, m)`` is ``A[..., i, idx[i, m]]`` where ``valid``, else 0."""
    At = A.transpose(..., "query", old)
    coords = {c: At.coords[c] for c in At.coords if old not in At.coords[c].dims}
    return xr.DataArray(
        kernels(At).gather(At.data, idx, valid),
        dims=(*At.dims[:-2], "query", new),
        coords={**coords, new: values},
        attrs=attrs,
    )
