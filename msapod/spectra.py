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
from threadpoolctl import threadpool_limits

from ._labels import lead_coords, stack_leading

__all__ = ["bootstrap_spectrum", "effective_rank", "jackknife_se", "spectral_concentration"]


def _spectrum_dim(eigenvalues: xr.DataArray, dim: str | None) -> str:
    if not isinstance(eigenvalues, xr.DataArray):
        raise ValueError(f"eigenvalues: expected a DataArray, got {type(eigenvalues).__name__}")
    if dim is None:
        for d in ("rank", "mode"):
            if d in eigenvalues.dims:
                return d
        raise ValueError(f"eigenvalues: expected a 'rank' or 'mode' dim, got {eigenvalues.dims}")
    if dim not in eigenvalues.dims:
        raise ValueError(f"dim: {dim!r} is not a dim of eigenvalues {eigenvalues.dims}")
    return dim


def _check_eigs(lam: np.ndarray) -> None:
    if not np.isfinite(lam).all():
        raise ValueError("eigenvalues: expected finite values (no NaN/inf)")
    if (lam < 0).any():
        raise ValueError("eigenvalues: expected non-negative values")
    if lam.shape[-1] >= 2 and (np.diff(lam, axis=-1) > 1e-12 * np.abs(lam).max()).any():
        raise ValueError("eigenvalues: expected a non-increasing sequence")


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
        to zero at k = N. Eigenvalues <= 1e-12 lambda_1 inside the range are excluded.

    Returns
    -------
    xarray.Dataset
        ``beta``, ``T_spec``, ``r2`` (of the log-log fit), ``beta_stderr`` (OLS standard
        error of the slope; residuals of a spectrum are correlated, so prefer a bootstrap
        over snapshots for a confidence interval), ``k_min``, ``k_max``, ``n_fit``.
    """
    d = _spectrum_dim(eigenvalues, dim)
    lam_all, lead, shape = stack_leading(eigenvalues, (d,))
    lam_all = lam_all.astype(np.float64)
    _check_eigs(lam_all)
    n = lam_all.shape[-1]
    k_max = n // 2 if k_max is None else int(k_max)
    if not 1 <= k_min < k_max <= n:
        raise ValueError(f"k_min, k_max: expected 1 <= k_min < k_max <= {n}, got {k_min}, {k_max}")
    k = np.arange(1, n + 1, dtype=np.float64)
    out = {name: np.full(lam_all.shape[0], np.nan) for name in ("beta", "r2", "beta_stderr")}
    n_fit = np.zeros(lam_all.shape[0], dtype=np.int64)
    for b, lam in enumerate(lam_all):
        sel = (k >= k_min) & (k <= k_max) & (lam > 1e-12 * max(lam[0], np.finfo(float).tiny))
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


def tail_rank(tail: np.ndarray, tol: float) -> np.ndarray:
    """``H = min{K : t(K) <= tol}`` along the last axis of tail fractions ``t``
    (:func:`tail_fraction`), with a relative slack of 1e-12 for rounding."""
    return np.argmax(tail <= tol * (1 + 1e-12), axis=-1)


def effective_rank(
    eigenvalues: xr.DataArray,
    eps: float = 0.10,
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
    if not (isinstance(eps, int | float) and 0 < eps < 1):
        raise ValueError(f"eps: expected a number in (0, 1), got {eps!r}")
    if criterion not in ("energy", "l2"):
        raise ValueError(f"criterion: expected 'energy' or 'l2', got {criterion!r}")
    d = _spectrum_dim(eigenvalues, dim)
    lam, lead, shape = stack_leading(eigenvalues, (d,))
    lam = lam.astype(np.float64)
    _check_eigs(lam)
    n = lam.shape[-1]
    if n_snapshots is None:
        n_snapshots = int(eigenvalues.attrs.get("n_snapshots", n))
    tol = eps if criterion == "energy" else eps**2
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


def bootstrap_spectrum(
    gram: xr.DataArray,
    n_boot: int = 200,
    seed: int = 0,
    *,
    dim: str = "snapshot",
    method: str = "bayesian",
) -> xr.DataArray:
    """POD spectra of re-weighted or resampled ensembles, from the Gram matrix alone.

    ``method="resample"`` is the classical bootstrap: N snapshots drawn with replacement
    (indices ``idx``) have the Gram matrix ``K[idx][:, idx]``, and removing the
    resample's own mean is the double centring ``H K H``, ``H = I - 1 1^T / N``. Its
    duplicates lower the rank of the ensemble (about 0.63 N distinct snapshots), which
    biases rank-sensitive statistics such as T_spec and H* downwards.

    ``method="jackknife"`` leaves one snapshot out at a time (``n_boot`` and ``seed`` are
    ignored; N replicates of N - 1 snapshots, re-centred). It changes the ensemble size
    least, so it suits statistics that depend on N, such as T_spec and H*; turn its
    replicates into a standard error with :func:`jackknife_se`.

    ``method="bayesian"`` (default) is the Bayesian bootstrap of Rubin (1981): every
    snapshot keeps a weight ``w_s ~ N * Dirichlet(1, ..., 1)``; the weighted mean is
    removed (``C = I - 1 p^T``, ``p = w / N``) and the Gram matrix becomes
    ``D C K C^T D`` with ``D = diag(sqrt(w))``. No snapshot is dropped, so the rank stays
    N - 1. All weights equal to one reproduce the spectrum exactly.

    Parameters
    ----------
    gram
        ``K = X X^T / N`` with dims ``(..., dim, dim + "_")`` (``pod(...)["gram"]``), of
        mean-removed snapshots.
    n_boot
        Number of replicates (>= 1).
    seed
        Seed of ``numpy.random.default_rng``.
    method
        ``"bayesian"``, ``"resample"`` or ``"jackknife"``.

    Returns
    -------
    xarray.DataArray
        ``spectrum(..., boot, rank)``; apply :func:`spectral_concentration` or
        :func:`effective_rank` to it and take quantiles over ``boot``.
    """
    other = f"{dim}_"
    if not isinstance(gram, xr.DataArray) or not {dim, other} <= set(gram.dims):
        raise ValueError(f"gram: expected a DataArray with dims {dim!r} and {other!r}")
    if not (isinstance(n_boot, int) and n_boot >= 1):
        raise ValueError(f"n_boot: expected an integer >= 1, got {n_boot!r}")
    if method not in ("bayesian", "resample", "jackknife"):
        raise ValueError(f"method: expected 'bayesian', 'resample' or 'jackknife', got {method!r}")
    K, lead, shape = stack_leading(gram, (dim, other))
    if not np.isfinite(K).all():
        raise ValueError("gram: expected finite values")
    n = K.shape[-1]
    rng = np.random.default_rng(seed)
    idx = keep = w = None
    if method == "resample":
        idx = rng.integers(0, n, size=(n_boot, n))
    elif method == "jackknife":
        n_boot = n
        keep = [np.delete(np.arange(n), i) for i in range(n)]
    else:
        w = rng.dirichlet(np.ones(n), size=n_boot) * n
    out = np.zeros((K.shape[0], n_boot, n))
    # small matrices: BLAS threads only contend (measured 20x slower on busy cores)
    with threadpool_limits(1, user_api="blas"):
        for b in range(K.shape[0]):
            _replicates(K[b], out[b], method, n, idx, keep, w)
    res = xr.DataArray(
        out.reshape(shape + (n_boot, n)),
        dims=(*lead, "boot", "rank"),
        coords={**lead_coords(gram, lead), "rank": np.arange(1, n + 1)},
        name="spectrum",
    )
    res.attrs = {
        "n_boot": n_boot,
        "seed": seed,
        "method": method,
        "n_snapshots": n,
        "long_name": f"bootstrap POD spectra ({method})",
    }
    return res


def _replicates(Kb, out, method, n, idx, keep, w) -> None:
    """Fill ``out[r]`` with the spectrum of replicate r of the Gram matrix ``Kb``.

    Every replicate's Gram matrix is built with elementwise centring (no small matrix
    products), then all are diagonalised in one batched ``eigvalsh``.
    """
    if method == "resample":
        Kr = double_centre(Kb[idx[:, :, None], idx[:, None, :]])
    elif method == "jackknife":
        # K = X X^T / N; the left-out ensemble's own normalisation is 1 / (N - 1)
        Kr = double_centre(np.stack([Kb[np.ix_(k, k)] for k in keep])) * n / (n - 1)
    else:
        p = w / n  # (boot, N), rows sum to one
        Kp = p @ Kb  # (boot, N): p^T K
        pKp = np.einsum("rn,rn->r", Kp, p)
        Kc = Kb[None] - Kp[:, None, :] - Kp[:, :, None] + pKp[:, None, None]
        d = np.sqrt(w)
        Kr = d[:, :, None] * Kc * d[:, None, :]
    lam = np.clip(np.linalg.eigvalsh(Kr)[..., ::-1], 0.0, None)
    out[:, : lam.shape[-1]] = lam


def double_centre(K: np.ndarray) -> np.ndarray:
    """Double centring ``H K H`` of a stack of Gram matrices, elementwise."""
    row = K.mean(-1, keepdims=True)
    col = K.mean(-2, keepdims=True)
    return K - row - col + row.mean(-2, keepdims=True)


def jackknife_se(replicates: xr.DataArray, dim: str = "boot") -> xr.DataArray:
    """Jackknife standard error ``sqrt((n - 1) / n * sum_i (theta_i - mean)^2)``.

    ``replicates`` are a statistic of the n leave-one-out ensembles of
    :func:`bootstrap_spectrum` with ``method="jackknife"`` (e.g. its T_spec).
    """
    if not isinstance(replicates, xr.DataArray) or dim not in replicates.dims:
        raise ValueError(f"replicates: expected a DataArray with a {dim!r} dim")
    n = replicates.sizes[dim]
    if n < 2:
        raise ValueError(f"replicates: expected at least 2 replicates along {dim!r}, got {n}")
    dev = replicates - replicates.mean(dim)
    se = np.sqrt((n - 1) / n * (dev**2).sum(dim))
    se.attrs = {"long_name": "jackknife standard error", "n_replicates": n}
    return se
