"""Resampling of a POD spectrum over snapshots: bootstrap and jackknife (uncertainty).

* ``bootstrap_spectrum``: spectra of snapshot resamples from the N x N Gram matrix alone
  (each resample's own mean removed by double centring, :func:`double_centre`);
* ``jackknife_se``: the jackknife standard error of any statistic of the replicates.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._io import check_int
from ._labels import lead_coords, stack_leading
from .lagstats import LagStats, one_blas_thread

__all__ = ["bootstrap_spectrum", "double_centre", "jackknife_se"]


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
    with one_blas_thread():
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
    lam = LagStats.spectrum(Kr)
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
