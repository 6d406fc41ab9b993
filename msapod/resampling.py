"""Resampling of a POD spectrum over snapshots: bootstrap and jackknife (uncertainty).

Every replicate's spectrum comes from the N x N Gram matrix alone, each replicate's own
mean removed by double centring (:func:`double_centre`); :func:`leave_one_out_means` gives
the exact leave-one-out replicates of an ensemble mean of per-snapshot second moments (the
scalogram's jackknife).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ._io import check_int
from ._labels import lead_coords, stack_leading
from .lagstats import gram_pod, one_blas_thread

__all__ = [
    "bootstrap_spectrum",
    "double_centre",
    "jackknife",
    "jackknife_error",
    "jackknife_se",
    "jackknife_spectra",
    "leave_one_out_means",
]


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
    if gram.sizes[dim] != gram.sizes[other]:
        raise ValueError(
            f"gram: expected a square Gram matrix over ({dim!r}, {other!r}), got "
            f"{gram.sizes[dim]} x {gram.sizes[other]}"
        )
    n_boot = check_int(n_boot, "n_boot", 1)
    seed = check_int(seed, "seed", 0)
    if method not in ("bayesian", "resample", "jackknife"):
        raise ValueError(f"method: expected 'bayesian', 'resample' or 'jackknife', got {method!r}")
    K, lead, shape = stack_leading(gram, (dim, other))
    if not np.isfinite(K).all():
        raise ValueError("gram: expected finite values")
    scale = np.abs(K).max(initial=0.0)
    if np.abs(K - K.swapaxes(-1, -2)).max(initial=0.0) > 1e-10 * scale:
        raise ValueError(f"gram: expected a symmetric Gram matrix over ({dim!r}, {other!r})")
    n = K.shape[-1]
    rng = np.random.default_rng(seed)
    idx = w = None
    if method == "resample":
        idx = rng.integers(0, n, size=(n_boot, n))
    elif method == "jackknife":
        n_boot = n
    else:
        w = rng.dirichlet(np.ones(n), size=n_boot) * n
    out = np.zeros((K.shape[0], n_boot, n))
    with one_blas_thread():
        for b in range(K.shape[0]):
            _replicates(K[b], out[b], method, n, idx, w)
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


def _replicates(Kb, out, method, n, idx, w) -> None:
    """Fill ``out[r]`` with the spectrum of replicate r of the Gram matrix ``Kb`` (zero
    beyond the replicate's own N - 1 eigenvalues for the jackknife), in one batched solve."""
    if method == "jackknife":
        out[:, : n - 1] = np.stack(jackknife_spectra(Kb))
        return
    if method == "resample":
        Kr = double_centre(Kb[idx[:, :, None], idx[:, None, :]])
    else:
        p = w / n  # (boot, N), rows sum to one
        Kp = p @ Kb  # (boot, N): p^T K
        pKp = np.einsum("rn,rn->r", Kp, p)
        Kc = Kb[None] - Kp[:, None, :] - Kp[:, :, None] + pKp[:, None, None]
        d = np.sqrt(w)
        Kr = d[:, :, None] * Kc * d[:, None, :]
    out[:] = gram_pod(Kr).eigenvalues


def double_centre(K: np.ndarray) -> np.ndarray:
    """Double centring ``H K H``, ``H = I - 1 1^T / N``, of a Gram matrix or a stack
    ``(..., N, N)`` of them, elementwise: the Gram of the snapshots with their own mean
    removed (whatever mean ``K``'s snapshots had)."""
    row = K.mean(-1, keepdims=True)
    col = K.mean(-2, keepdims=True)
    return K - row - col + row.mean(-2, keepdims=True)


def jackknife_spectra(K: np.ndarray, leave_out=None) -> list[np.ndarray]:
    """POD spectra of the ensembles without each set of snapshots, from ``K`` alone.

    Parameters
    ----------
    K
        ``X X^T / N`` of N snapshots ``(N, N)``, mean removed or not.
    leave_out
        The sets of snapshot indices left out in turn (a delete-group jackknife);
        default: every snapshot alone.

    Returns
    -------
    list of numpy.ndarray
        Per set, the ``M = N - |set|`` eigenvalues (descending) of the kept snapshots'
        Gram ``X_k X_k^T / M`` with their own mean removed (:func:`double_centre`;
        ``X_k X_k^T / M = K_kk N / M``). Replicates of one size are diagonalised in one
        batched call.
    """
    n = len(K)
    sets = [[i] for i in range(n)] if leave_out is None else leave_out
    keeps = [np.setdiff1d(np.arange(n), np.asarray(g, dtype=np.int64)) for g in sets]
    out: list = [None] * len(keeps)
    for m in sorted({len(k) for k in keeps}):
        which = [r for r, k in enumerate(keeps) if len(k) == m]
        Kr = double_centre(np.stack([K[np.ix_(keeps[r], keeps[r])] for r in which])) * n / m
        for r, lam in zip(which, gram_pod(Kr).eigenvalues, strict=True):
            out[r] = lam
    return out


def jackknife(K: np.ndarray, statistic, leave_out=None) -> tuple[np.ndarray, np.ndarray]:
    """Value and jackknife standard error of a statistic of the POD spectrum.

    Parameters
    ----------
    K
        ``X X^T / N`` of N snapshots ``(N, N)``, mean removed or not (the value is of
        the spectrum of ``double_centre(K)``, the replicates of :func:`jackknife_spectra`).
    statistic
        Maps spectra ``(r, M)`` (non-increasing, one row per replicate, ``M`` snapshots)
        to their values ``(r, ...)``.
    leave_out
        The sets left out in turn (default: every snapshot alone; see
        :func:`jackknife_spectra`).

    Returns
    -------
    value, se
        ``statistic`` of the whole ensemble and :func:`jackknife_error` of its replicates.
    """
    value = statistic(gram_pod(double_centre(K)).eigenvalues[None])[0]
    spectra = jackknife_spectra(K, leave_out)
    reps = np.empty((len(spectra), *np.shape(value)))
    for m in sorted({len(lam) for lam in spectra}):
        which = [r for r, lam in enumerate(spectra) if len(lam) == m]
        reps[which] = statistic(np.stack([spectra[r] for r in which]))
    return value, jackknife_error(reps)


def jackknife_error(replicates: np.ndarray, axis: int = 0) -> np.ndarray:
    """Jackknife standard error ``sqrt((g - 1) / g * sum_i (theta_i - mean)^2)`` over
    ``axis`` of g replicates ``theta_i`` (each without one snapshot or one of g groups);
    NaN replicates are left out (fewer than two: NaN)."""
    rep = np.asarray(replicates, dtype=np.float64)
    g = np.isfinite(rep).sum(axis)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN replicates: NaN
        dev = rep - np.nanmean(rep, axis=axis, keepdims=True)
        v = np.nansum(dev**2, axis=axis)
        return np.where(g >= 2, np.sqrt((g - 1) / np.maximum(g, 1) * v), np.nan)


def jackknife_se(replicates: xr.DataArray, dim: str = "boot") -> xr.DataArray:
    """Jackknife standard error ``sqrt((n - 1) / n * sum_i (theta_i - mean)^2)``.

    ``replicates`` are a statistic of the n leave-one-out ensembles of
    :func:`bootstrap_spectrum` with ``method="jackknife"`` (e.g. its T_spec); NaN
    replicates are left out (:func:`jackknife_error`).
    """
    if not isinstance(replicates, xr.DataArray) or dim not in replicates.dims:
        raise ValueError(f"replicates: expected a DataArray with a {dim!r} dim")
    n = replicates.sizes[dim]
    if n < 2:
        raise ValueError(f"replicates: expected at least 2 replicates along {dim!r}, got {n}")
    se = replicates.reduce(jackknife_error, dim=dim)
    se.attrs = {"long_name": "jackknife standard error", "n_replicates": n}
    return se


def leave_one_out_means(P: np.ndarray, per: int = 1, *, mean_removed: bool) -> np.ndarray:
    """Exact leave-one-out replicates of the ensemble mean of a second moment.

    With the per-snapshot sums ``P_s`` (``(N, ...)``, e.g. a snapshot's lag moments
    through the scale-spectrum operator, summed over ``per`` rows) the whole ensemble's
    mean is ``sum_s P_s / (N per)``. Without snapshot i it is ``(sum_s P_s - P_i) / ((N -
    1) per)``; of a fluctuation whose mean is re-estimated without snapshot i
    (``mean_removed``), every other fluctuation shifts by ``u_i / (N - 1)`` and, since the
    fluctuations sum to zero, ``(sum_s P_s - N / (N - 1) P_i) / ((N - 1) per)``.

    Returns
    -------
    numpy.ndarray
        ``(N, ...)``, clipped at 0 (a second moment; negatives are rounding).
    """
    n = len(P)
    drop = n / (n - 1) if mean_removed else 1.0
    return np.maximum((P.sum(0)[None] - drop * P) / ((n - 1) * per), 0.0)
