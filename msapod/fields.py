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

from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr

from . import chunked

__all__ = ["check_field", "from_lag", "is_causal", "reynolds", "to_lag"]

FIELD_DIMS = ("snapshot", "query", "key")


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
    _check_meta(A, name, dims)
    if chunked.is_dask(A):
        if min_snapshots is not None and snapshot_dim in A.dims:
            _check_count(A, name, min_snapshots, snapshot_dim)
        if stochastic and "key" not in A.dims:
            raise ValueError(f"{name}: row-stochasticity needs a 'key' dim, got {A.dims}")
        chunked.check_values(A, name, stochastic=stochastic, atol=atol)
        return A
    values = A.values
    # a sum is finite iff no NaN/inf entry (barring overflow, which the full check catches)
    if not np.isfinite(values.sum(dtype=np.float64)) and not np.isfinite(values).all():
        bad = int((~np.isfinite(values)).sum())
        raise ValueError(f"{name}: expected finite values, found {bad} NaN/inf entries")
    if min_snapshots is not None and snapshot_dim in A.dims:
        _check_count(A, name, min_snapshots, snapshot_dim)
    if stochastic:
        if "key" not in A.dims:
            raise ValueError(f"{name}: row-stochasticity needs a 'key' dim, got {A.dims}")
        if (values < -atol).any():
            raise ValueError(f"{name}: expected attention probabilities >= 0, found negatives")
        sums = A.sum("key").values
        worst = float(np.abs(sums - 1.0).max()) if sums.size else 0.0
        if worst > atol:
            raise ValueError(
                f"{name}: expected rows summing to 1 over 'key' (attention probabilities), "
                f"worst row sums to {1.0 + worst:.6g} (|deviation| {worst:.3g} > atol {atol})"
            )
    return A


def _check_meta(A, name: str, dims: Sequence[str]) -> None:
    """Type, dims and dtype checks (no values read)."""
    if not isinstance(A, xr.DataArray):
        raise TypeError(f"{name}: expected an xarray.DataArray, got {type(A).__name__}")
    missing = [d for d in dims if d not in A.dims]
    if missing:
        raise ValueError(
            f"{name}: expected dims including {tuple(dims)}, missing {missing}; got {A.dims}"
        )
    if not np.issubdtype(A.dtype, np.number) or np.issubdtype(A.dtype, np.complexfloating):
        raise ValueError(f"{name}: expected real numbers, got dtype {A.dtype}")


def _check_count(A: xr.DataArray, name: str, min_snapshots: int, snapshot_dim: str) -> None:
    n = A.sizes[snapshot_dim]
    if n < min_snapshots:
        raise ValueError(
            f"{name}: expected at least {min_snapshots} snapshots along {snapshot_dim!r}, got {n}"
        )


def _check(A, *, name: str = "A", dims: Sequence[str] = FIELD_DIMS, **kw) -> xr.DataArray:
    """:func:`check_field` for in-memory data; dims and dtype only for dask data.

    The chunked kernels check the values where they reduce them (a NaN makes the mean,
    the lag moments or the Gram diagonal non-finite), so no extra pass is spent here.
    """
    if chunked.is_dask(A):
        _check_meta(A, name, dims)
        n_min = kw.get("min_snapshots", 2)
        snap = kw.get("snapshot_dim", "snapshot")
        if n_min is not None and snap in A.dims:
            _check_count(A, name, n_min, snap)
        return A
    return check_field(A, name=name, dims=dims, **kw)


def _positions(A: xr.DataArray, dim: str, name: str) -> np.ndarray:
    """Integer positions of ``dim`` (its coordinate, or 0..n-1 without one)."""
    if dim in A.coords:
        pos = np.asarray(A[dim].values)
        if not np.issubdtype(pos.dtype, np.integer):
            if not np.allclose(pos, np.round(pos)):
                raise ValueError(f"{name}: expected integer positions on {dim!r}, got {pos[:5]}")
            pos = np.round(pos).astype(np.int64)
        return pos.astype(np.int64)
    return np.arange(A.sizes[dim], dtype=np.int64)


def is_causal(A: xr.DataArray, atol: float = 0.0) -> bool:
    """True if every entry with key after query (``j > i``) is zero (within ``atol``)."""
    q = _positions(A, "query", "A")
    k = _positions(A, "key", "A")
    if chunked.is_dask(A):
        return chunked.is_causal_chunked(A, atol)
    upper = k[None, :] > q[:, None]
    if not upper.any():
        return True
    vals = A.transpose(..., "query", "key").values
    return bool((np.abs(vals[..., upper]) <= atol).all())


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
    if chunked.is_dask(A):
        _check_meta(A, "A", (dim, "query", "key"))
        mean, _, _ = chunked.field_stats(A, dim, stochastic=check_stochastic)
        return _reynolds_dataset(A, A.astype(np.float64), mean, dim)
    check_field(A, dims=(dim, "query", "key"), stochastic=check_stochastic, snapshot_dim=dim)
    A64 = A.astype(np.float64)
    mean = A64.mean(dim)
    return _reynolds_dataset(A, A64, mean, dim)


def _reynolds_dataset(
    A: xr.DataArray, A64: xr.DataArray, mean: xr.DataArray, dim: str
) -> xr.Dataset:
    """The Dataset of :func:`reynolds` from ``A``, its float64 copy and mean over ``dim``."""
    fluct = A64 - mean
    attrs = dict(A.attrs)
    ds = xr.Dataset({"mean": mean, "fluctuation": fluct.transpose(*A.dims)}, attrs=attrs)
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
    _check(A, dims=("query", "key"), min_snapshots=None)
    q = _positions(A, "query", "A")
    k = _positions(A, "key", "A")
    if causal is None or causal:
        detected = is_causal(A)
        if causal is None:
            causal = detected
        elif not detected:
            raise ValueError("causal: True, but A has non-zero entries with key after query")
    return _to_lag(A, q, k, causal)


def _lag_layout(q: np.ndarray, k: np.ndarray, causal: bool):
    """Lags of a field and, per (query, lag), the key index and a found-mask."""
    lo = 0 if causal else int(q.min() - k.max())
    hi = int(q.max() - k.min())
    lags = np.arange(lo, hi + 1)
    # index of key i - tau for every (query, lag)
    idx, valid = _lookup(k, q[:, None] - lags[None, :])
    return lags, idx, valid


def _to_lag(A: xr.DataArray, q: np.ndarray, k: np.ndarray, causal: bool) -> xr.DataArray:
    """:func:`to_lag` with known causality (nothing verified)."""
    lags, idx, valid = _lag_layout(q, k, causal)
    Ak = A.transpose(..., "query", "key")
    if chunked.is_dask(Ak):
        vals = chunked.gather_last_lazy(Ak, "key", "lag", idx, valid)
    else:
        vals = _gather_last(Ak.values, idx, valid)
    dims = (*Ak.dims[:-2], "query", "lag")
    coords = {c: Ak.coords[c] for c in Ak.coords if "key" not in Ak.coords[c].dims}
    coords["lag"] = lags
    out = xr.DataArray(vals, dims=dims, coords=coords, attrs=dict(A.attrs))
    out.attrs["key_positions"] = k
    out.attrs["lag_definition"] = "tau = query - key"
    return out


def from_lag(R: xr.DataArray, *, keys: Sequence[int] | None = None) -> xr.DataArray:
    """Inverse of :func:`to_lag`: ``(query, lag)`` back to ``(query, key)``.

    ``keys`` are the key positions; default: those recorded by :func:`to_lag`, else the
    query positions (a square field).
    """
    _check(R, name="R", dims=("query", "lag"), min_snapshots=None)
    q = _positions(R, "query", "R")
    lags = _positions(R, "lag", "R")
    if keys is None:
        keys = R.attrs.get("key_positions", q)
    k = np.asarray(keys, dtype=np.int64)
    idx, valid = _lookup(lags, q[:, None] - k[None, :])
    Rl = R.transpose(..., "query", "lag")
    if chunked.is_dask(Rl):
        vals = chunked.gather_last_lazy(Rl, "lag", "key", idx, valid)
    else:
        vals = _gather_last(Rl.values, idx, valid)
    dims = (*Rl.dims[:-2], "query", "key")
    coords = {c: Rl.coords[c] for c in Rl.coords if "lag" not in Rl.coords[c].dims}
    coords["key"] = k
    attrs = {a: v for a, v in R.attrs.items() if a not in ("key_positions", "lag_definition")}
    return xr.DataArray(vals, dims=dims, coords=coords, attrs=attrs)


def _lookup(positions: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each ``want`` value in ``positions`` (0 where absent) and a found-mask."""
    order = np.argsort(positions, kind="stable")
    srt = positions[order]
    at = np.clip(np.searchsorted(srt, want), 0, len(srt) - 1)
    valid = srt[at] == want
    return np.where(valid, order[at], 0), valid


def _gather_last(x: np.ndarray, idx: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``out[..., i, m] = x[..., i, idx[i, m]]`` where ``valid``, else 0."""
    idx_b = np.broadcast_to(idx, x.shape[:-2] + idx.shape)
    out = np.take_along_axis(x, idx_b, axis=-1)
    out *= valid
    return out


def _stack_leading(A: xr.DataArray, core: tuple[Hashable, ...]):
    """Move ``core`` dims last and flatten the others: returns (array (B, *core), lead)."""
    lead = tuple(d for d in A.dims if d not in core)
    At = A.transpose(*lead, *core)
    shape = tuple(A.sizes[d] for d in lead)
    arr = At.values.reshape((int(np.prod(shape, dtype=np.int64)),) + At.shape[len(lead) :])
    return arr, lead, shape


def _lead_coords(A: xr.DataArray, lead: tuple[Hashable, ...]) -> dict:
    """Coords of ``A`` that live only on the leading dims (scalars included)."""
    return {c: A.coords[c] for c in A.coords if set(A.coords[c].dims) <= set(lead)}
