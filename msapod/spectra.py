"""Spectral concentration T_spec and effective rank H* of a POD spectrum (steps 9-10).

* ``spectral_concentration``: least-squares fit of ``log lambda_k = c - beta log k`` over a
  stated range of k; ``T_spec = 1 / beta``. A steeper decay (larger beta, smaller T_spec)
  means energy concentrated in fewer modes; beta about 1 (T_spec about 1) is a
  distributed, 1/k spectrum.
* ``effective_rank``: ``H*(eps)`` = least K with relative residual <= eps, under either
  the energy criterion ``sum_{k>K} lambda_k / sum_k lambda_k <= eps`` (the paper's "90 %
  of the energy" for eps = 0.10) or the relative-L2 criterion
  ``sqrt(sum_{k>K} lambda_k / sum_k lambda_k) <= eps``. With N mean-removed snapshots
  H* can never exceed N - 1; the ``at_rank_limit`` flag marks when it reaches it.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._io import check_int
from ._labels import check_eps, lead_coords, stack_leading
from .lagstats import RTOL

__all__ = [
    "CRITERIA",
    "EPS",
    "PAPER_EPS",
    "effective_rank",
    "rank_tolerance",
    "spectral_concentration",
    "tail_fraction",
    "tail_rank",
]

#: The criteria of H*: the energy tail, or its square root (the relative L2 error).
CRITERIA = ("energy", "l2")

#: The paper's tolerance of H* ("H*(0.10)", the rank that holds 90 % of the energy).
PAPER_EPS = 0.10
#: The tolerances eps of H*(eps) reported unless others are given: the paper's and one on
#: either side.
EPS = (0.05, PAPER_EPS, 0.20)


def _spectra(eigenvalues: xr.DataArray, dim: str | None) -> tuple[np.ndarray, tuple, tuple]:
    """The checked spectra along ``dim`` (None: ``rank`` or ``mode``) as float64 rows, with
    the leading dims and their sizes (:func:`msapod._labels.stack_leading`)."""
    if not isinstance(eigenvalues, xr.DataArray):
        raise ValueError(f"eigenvalues: expected a DataArray, got {type(eigenvalues).__name__}")
    if dim is None:
        dim = next((d for d in ("rank", "mode") if d in eigenvalues.dims), None)
        if dim is None:
            raise ValueError(
                f"eigenvalues: expected a 'rank' or 'mode' dim, got {eigenvalues.dims}"
            )
    elif dim not in eigenvalues.dims:
        raise ValueError(f"dim: {dim!r} is not a dim of eigenvalues {eigenvalues.dims}")
    lam, lead, shape = stack_leading(eigenvalues, (dim,))
    lam = lam.astype(np.float64)
    if not np.isfinite(lam).all():
        raise ValueError("eigenvalues: expected finite values (no NaN/inf)")
    if (lam < 0).any():
        raise ValueError("eigenvalues: expected non-negative values")
    if lam.shape[-1] >= 2 and (np.diff(lam, axis=-1) > 1e-12 * np.abs(lam).max()).any():
        raise ValueError("eigenvalues: expected a non-increasing sequence")
    return lam, lead, shape


def spectral_concentration(
    eigenvalues: xr.DataArray,
    k_min: int = 1,
    k_max: int | None = None,
    *,
    dim: str | None = None,
) -> xr.Dataset:
    """Power-law fit ``lambda_k ~ k^(-beta)`` and ``T_spec = 1 / beta``.

    Parameters
    ----------
    eigenvalues
        Non-increasing, non-negative spectrum along ``dim`` (``rank`` or ``mode``;
        k = 1, 2, ... by position).
    k_min, k_max
        Fit range, inclusive (1-based). Default ``k_max = n // 2`` with n the spectrum's
        length: this leaves out the finite-ensemble tail, where mean-removed spectra fall
        to zero at k = N. Eigenvalues beyond the numerical rank (at or below
        :data:`msapod.lagstats.RTOL` lambda_1) inside the range are excluded.

    Returns
    -------
    xarray.Dataset
        ``beta``, ``T_spec``, ``r2`` (of the log-log fit), ``beta_stderr`` (OLS standard
        error of the slope; residuals of a spectrum are correlated, so prefer a bootstrap
        over snapshots for a confidence interval), ``k_min``, ``k_max``, ``n_fit``.
    """
    lam_all, lead, shape = _spectra(eigenvalues, dim)
    n = lam_all.shape[-1]
    k_min = check_int(k_min, "k_min", 1)
    k_max = n // 2 if k_max is None else check_int(k_max, "k_max", 2)
    if not 1 <= k_min < k_max <= n:
        raise ValueError(f"k_min, k_max: expected 1 <= k_min < k_max <= {n}, got {k_min}, {k_max}")
    k = np.arange(1, n + 1, dtype=np.float64)
    out = {name: np.full(lam_all.shape[0], np.nan) for name in ("beta", "r2", "beta_stderr")}
    n_fit = np.zeros(lam_all.shape[0], dtype=np.int64)
    for b, lam in enumerate(lam_all):
        sel = (k >= k_min) & (k <= k_max) & (lam > RTOL * max(lam[0], np.finfo(float).tiny))
        n_fit[b] = sel.sum()
        if n_fit[b] < 3:
            continue
        x, y = np.log(k[sel]), np.log(lam[sel])
        xm, ym = x.mean(), y.mean()
        sxx = ((x - xm) ** 2).sum()
        slope = ((x - xm) * (y - ym)).sum() / sxx
        resid = y - (ym + slope * (x - xm))
        sst = ((y - ym) ** 2).sum()
        out["beta"][b] = -slope
        out["r2"][b] = 1 - (resid**2).sum() / sst if sst > 0 else 1.0
        out["beta_stderr"][b] = np.sqrt((resid**2).sum() / max(n_fit[b] - 2, 1) / sxx)
    coords = lead_coords(eigenvalues, lead)

    def da(v, **attrs):
        return xr.DataArray(v.reshape(shape), dims=lead, coords=coords, attrs=attrs)

    beta = da(out["beta"], long_name="power-law exponent beta of lambda_k ~ k^-beta")
    with np.errstate(divide="ignore"):
        tspec = da(1.0 / out["beta"], long_name="spectral concentration index T_spec = 1/beta")
    ds = xr.Dataset(
        {
            "beta": beta,
            "T_spec": tspec,
            "r2": da(out["r2"], long_name="R^2 of the log-log fit"),
            "beta_stderr": da(out["beta_stderr"], long_name="OLS standard error of beta"),
            "n_fit": da(n_fit, long_name="eigenvalues in the fit"),
        }
    )
    ds.attrs = {"k_min": k_min, "k_max": k_max, "fit": "OLS of log lambda_k on log k"}
    return ds


def tail_fraction(lam: np.ndarray) -> np.ndarray:
    """``t(K) = sum_{k>K} lambda_k / sum_k lambda_k`` for ``K = 0..n`` along the last axis.

    ``lam`` is a non-increasing spectrum ``(..., n)``; returns ``(..., n + 1)`` (0 for a
    zero spectrum). The energy criterion of H* is ``t(K) <= eps``.
    """
    lam = np.asarray(lam, dtype=np.float64)
    total = lam.sum(-1, keepdims=True)
    cums = np.concatenate([np.zeros(lam.shape[:-1] + (1,)), np.cumsum(lam, -1)], -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (total - cums) / total, 0.0)


def rank_tolerance(eps: float, criterion: str = "energy") -> float:
    """The bound on the tail fraction ``t(K)`` (:func:`tail_fraction`) that H*(eps) asks
    for: ``eps`` under the energy criterion, ``eps**2`` under the relative-L2 one
    (``sqrt(t(K)) <= eps``).

    Raises
    ------
    ValueError
        ``criterion`` is not one of :data:`CRITERIA`.
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion: expected one of {CRITERIA}, got {criterion!r}")
    return eps if criterion == "energy" else eps**2


def tail_rank(tail: np.ndarray, tol: float) -> np.ndarray:
    """``H = min{K : t(K) <= tol}`` along the last axis of tail fractions ``t``
    (:func:`tail_fraction`), with a relative slack of 1e-12 for rounding."""
    return np.argmax(tail <= tol * (1 + 1e-12), axis=-1)


def effective_rank(
    eigenvalues: xr.DataArray,
    eps: float = PAPER_EPS,
    criterion: str = "energy",
    *,
    dim: str | None = None,
    n_snapshots: int | None = None,
) -> xr.DataArray:
    """Effective rank ``H*(eps)``: the least K whose rank-K reconstruction leaves a
    relative error <= eps.

    Parameters
    ----------
    eigenvalues
        Full, non-increasing spectrum along ``dim`` (use ``pod(...)["spectrum"]``: a
        truncated spectrum underestimates the tail).
    eps
        Tolerance in (0, 1).
    criterion
        ``"energy"``: ``sum_{k>K} lambda_k / sum lambda_k <= eps``; ``"l2"``: the square
        root of that ``<= eps`` (i.e. energy tail ``<= eps^2``).
    n_snapshots
        N of the ensemble, for the ``at_rank_limit`` flag (H* >= N - 1); default: the
        ``n_snapshots`` attr of ``eigenvalues`` if present, else the spectrum's length.

    Returns
    -------
    xarray.DataArray
        Integer H* with a boolean coordinate ``at_rank_limit``; 0 for a zero spectrum.
    """
    eps = check_eps(eps)
    tol = rank_tolerance(eps, criterion)
    lam, lead, shape = _spectra(eigenvalues, dim)
    n = lam.shape[-1]
    if n_snapshots is None:
        n_snapshots = int(eigenvalues.attrs.get("n_snapshots", n))
    elif (
        isinstance(n_snapshots, bool)
        or not isinstance(n_snapshots, int | np.integer)
        or (n_snapshots < 2)
    ):
        raise ValueError(f"n_snapshots: expected an integer >= 2 (N), got {n_snapshots!r}")
    H = tail_rank(tail_fraction(lam), tol)
    res = xr.DataArray(
        H.reshape(shape), dims=lead, coords=lead_coords(eigenvalues, lead), name="H_star"
    )
    res = res.assign_coords(at_rank_limit=(lead, (H >= n_snapshots - 1).reshape(shape)))
    res.attrs = {
        "eps": eps,
        "criterion": criterion,
        "n_snapshots": n_snapshots,
        "long_name": f"effective rank H*({eps:g}), {criterion} criterion",
    }
    return res
