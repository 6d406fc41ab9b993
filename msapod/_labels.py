"""Labelled-array helpers and validation messages shared by the method modules (private).

Positions of a dim, the lag layout of a field, leading-dim stacking and the checks that
every public function applies to its inputs, each written once. Imports nothing from the
rest of the package, so every module (core and backends) may use it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import xarray as xr

FIELD_DIMS = ("snapshot", "query", "key")


def check_meta(A, name: str, dims: Sequence[str]) -> None:
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
    for d in dims:
        if A.sizes[d] == 0:
            raise ValueError(f"{name}: dim {d!r} has length 0; expected a non-empty field")
    for d in POSITION_DIMS:
        if d in dims and d in A.coords:
            check_positions(A[d].values, name, d)
    check_unique(A, name)


#: Dims whose coordinates are integer positions (the lag is ``query - key``).
POSITION_DIMS = ("query", "key", "lag")


def check_positions(pos: np.ndarray, name: str, dim: str) -> None:
    """A ``query``/``key``/``lag`` coordinate holds integer positions: real numbers with
    whole values (e.g. 0, 1, 2 or 0.0, 1.0, 2.0)."""
    pos = np.asarray(pos)
    if pos.dtype == bool or not (
        np.issubdtype(pos.dtype, np.integer) or np.issubdtype(pos.dtype, np.floating)
    ):
        raise ValueError(
            f"{name}: coordinate {dim!r} must hold integer positions (token indices, "
            f"numbers), got dtype {pos.dtype} ({pos[:3].tolist()}...)"
        )
    whole = np.isfinite(pos) & np.isclose(pos, np.round(pos))
    if not whole.all():
        raise ValueError(
            f"{name}: coordinate {dim!r} must hold integer positions (whole numbers), "
            f"got {pos[~whole][:3].tolist()}"
        )


def check_unique(A: xr.DataArray, name: str) -> None:
    """Every dim coordinate labels its positions once (a repeated label would silently
    drop or merge rows, columns or snapshots)."""
    for d in A.dims:
        if d in A.indexes and not A.indexes[d].is_unique:
            values = np.asarray(A[d].values)
            uniq, counts = np.unique(values, return_counts=True)
            raise ValueError(
                f"{name}: coordinate {d!r} has duplicate labels {uniq[counts > 1][:5].tolist()}; "
                "expected unique labels"
            )


def check_omega0(omega0) -> float:
    """The Morlet centre frequency: a finite number > 0 (6 by convention)."""
    if isinstance(omega0, bool) or not isinstance(omega0, int | float | np.number):
        raise ValueError(f"omega0: expected a positive number, got {omega0!r}")
    if not np.isfinite(omega0) or omega0 <= 0:
        raise ValueError(f"omega0: expected a finite number > 0 (6 by convention), got {omega0}")
    return float(omega0)


def check_flag(value, name: str) -> bool:
    """A flag: True or False (numpy's too); nothing else is read as one."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def is_real(x) -> bool:
    """A real number (not a bool)."""
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(
        x, bool | np.bool_
    )


def check_atol(atol, name: str = "atol") -> float:
    """An absolute tolerance: a finite number >= 0."""
    if not is_real(atol) or not (np.isfinite(atol) and atol >= 0):
        raise ValueError(f"{name}: expected a finite number >= 0, got {atol!r}")
    return float(atol)


def check_tau_max(tau_max, n_lags: int | None = None, name: str = "tau_max") -> int | None:
    """The largest lag of a lag band: None (no band) or an integer >= 1, below ``n_lags``
    (the lags of the field) where known."""
    if tau_max is None:
        return None
    if isinstance(tau_max, bool) or not isinstance(tau_max, int | np.integer) or tau_max < 1:
        raise ValueError(f"{name}: expected None or an integer >= 1 (a lag), got {tau_max!r}")
    if n_lags is not None and tau_max >= n_lags:
        raise ValueError(
            f"{name}: expected a lag below the field's {n_lags} lags (0..{n_lags - 1}), "
            f"got {int(tau_max)}"
        )
    return int(tau_max)


def check_scale_values(scale, name: str = "scale") -> np.ndarray:
    """Morlet scales (lags) as a float array: each > 0 and finite, or NaN (none)."""
    a = np.asarray(scale, dtype=np.float64)
    bad = np.isinf(a) | (a <= 0)
    if bad.any():
        raise ValueError(f"{name}: expected scales > 0 (lags; NaN for none), got {a[bad][:5]}")
    return a


def check_eps(eps) -> float:
    """One tolerance in (0, 1); numpy scalars are accepted."""
    if not is_real(eps) or not 0 < float(eps) < 1:
        raise ValueError(f"eps: expected a number in (0, 1), got {eps!r}")
    return float(eps)


def check_count(A: xr.DataArray, name: str, min_snapshots: int, snapshot_dim: str) -> None:
    n = A.sizes[snapshot_dim]
    if n < min_snapshots:
        raise ValueError(
            f"{name}: expected at least {min_snapshots} snapshots along {snapshot_dim!r}, got {n}"
        )


def raise_values(name: str, res: dict, stochastic: bool, atol: float, band: bool = False) -> None:
    """The value checks' messages from counts: ``bad`` (NaN/inf entries), ``neg`` (any entry
    below ``-atol``) and ``worst`` (the least and the largest row sum - 1), the last two
    if present; the message names the row sum that deviates most. The rows of a lag band
    (``band``) hold part of the keys: they sum to at most one."""
    if int(res["bad"]):
        raise ValueError(f"{name}: expected finite values, found {int(res['bad'])} NaN/inf entries")
    if stochastic and "neg" in res:
        if bool(res["neg"]):
            raise ValueError(f"{name}: expected attention probabilities >= 0, found negatives")
        if band:
            dev = float(np.max(res["worst"]))
            if dev > atol:
                raise ValueError(
                    f"{name}: expected the rows of a lag band to sum to at most 1 (attention "
                    f"probabilities), worst row sums to {1.0 + dev:.6g} (> 1 + atol {atol})"
                )
            return
        dev = max(np.ravel(res["worst"]).astype(float), key=abs)
        if abs(dev) > atol:
            raise ValueError(
                f"{name}: expected rows summing to 1 over 'key' (attention probabilities), "
                f"worst row sums to {1.0 + dev:.6g} (|deviation| {abs(dev):.3g} > atol {atol})"
            )


def require_key(A: xr.DataArray, name: str) -> None:
    """Row-stochasticity is a statement about the ``key`` dim."""
    if "key" not in A.dims:
        raise ValueError(f"{name}: row-stochasticity needs a 'key' dim, got {A.dims}")


def positions(A: xr.DataArray, dim: str, name: str) -> np.ndarray:
    """Integer positions of ``dim`` (its coordinate, or 0..n-1 without one)."""
    if dim in A.coords:
        pos = np.asarray(A[dim].values)
        if not np.issubdtype(pos.dtype, np.integer):
            if not np.allclose(pos, np.round(pos)):
                raise ValueError(f"{name}: expected integer positions on {dim!r}, got {pos[:5]}")
            pos = np.round(pos).astype(np.int64)
        return pos.astype(np.int64)
    return np.arange(A.sizes[dim], dtype=np.int64)


def lag_layout(q: np.ndarray, k: np.ndarray, causal: bool):
    """Lags of a field and, per (query, lag), the key index and a found-mask."""
    lo = 0 if causal else int(q.min() - k.max())
    hi = int(q.max() - k.min())
    lags = np.arange(lo, hi + 1)
    idx, valid = lookup(k, q[:, None] - lags[None, :])
    return lags, idx, valid


def lookup(positions: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each ``want`` value in ``positions`` (0 where absent) and a found-mask."""
    order = np.argsort(positions, kind="stable")
    srt = positions[order]
    at = np.clip(np.searchsorted(srt, want), 0, len(srt) - 1)
    valid = srt[at] == want
    return np.where(valid, order[at], 0), valid


def stack_leading(A: xr.DataArray, core: tuple[Hashable, ...]):
    """Move ``core`` dims last and flatten the others: returns (array (B, *core), lead)."""
    lead = tuple(d for d in A.dims if d not in core)
    At = A.transpose(*lead, *core)
    shape = tuple(A.sizes[d] for d in lead)
    arr = At.values.reshape((int(np.prod(shape, dtype=np.int64)),) + At.shape[len(lead) :])
    return arr, lead, shape


def lead_coords(A: xr.DataArray, lead: tuple[Hashable, ...]) -> dict:
    """Coords of ``A`` that live only on the leading dims (scalars included)."""
    return {c: A.coords[c] for c in A.coords if set(A.coords[c].dims) <= set(lead)}
