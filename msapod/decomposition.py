"""Proper Orthogonal Decomposition of (scale-filtered) attention fluctuations.

Method of snapshots (Sirovich 1987). With N snapshots u_s, each a field of P entries, the
snapshot matrix X (N x P) gives the Gram matrix ``G = X X^T / N`` (N x N, accumulated in
float64). Its eigenpairs ``G xihat_k = lambda_k xihat_k``, with unit eigenvectors ``xihat_k``
over the snapshots, give

* **eigenvalues** ``lambda_1 >= lambda_2 >= ... >= 0``: the variance per mode; their sum is
  the ensemble-mean squared norm ``(1/N) sum_s ||u_s||^2`` (the total "energy"),
* **modes** ``phi_k = X^T xihat_k / sqrt(N lambda_k)``: orthonormal fields,
  ``sum_ij phi_k(i,j) phi_l(i,j) = delta_kl``,
* **coefficients** ``xi_k(s) = <u_s, phi_k> = sqrt(N lambda_k) xihat_k(s)``, with
  ``(1/N) sum_s xi_k(s)^2 = lambda_k`` (the paper writes ``a_k``; ``a`` is the Morlet scale
  here).

Theorem 1 (POD optimality; Lumley 1967, Holmes-Lumley-Berkooz ch. 3, Eckart-Young): the
first K modes minimise ``(1/N) sum_s ||u_s - P_K u_s||^2`` over all orthonormal bases of
size K, and the minimum is ``sum_{k > K} lambda_k``. :func:`reconstruction_error` checks it.

Scale-selective POD of a Gaussian lag window w (PAPER.md step 6) decomposes
``u^(w)(i, j) = w(i - j) u(i, j)``; all windows (and the plain POD, w = 1) share one per-lag
Gram tensor (:mod:`msapod.lagstats`).

Mean-removed snapshots span at most N - 1 dimensions: the last eigenvalue of a
fluctuation ensemble is zero (to rounding), and any effective rank is capped at N - 1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from ._labels import lag_layout, lead_coords, positions
from .backends import kernels
from .fields import check_field, check_lazy, is_causal
from .lagstats import RTOL

__all__ = ["basis_error", "lag_gram", "pod", "reconstruct", "reconstruction_error"]

NORMALISATION = (
    "method of snapshots; eigenvalues = variance per mode, sum = (1/N) sum_s ||u_s||^2; "
    "modes orthonormal over (query, key); coefficients xi_k(s) = <u_s, phi_k>, "
    "mean_s xi_k^2 = lambda_k"
)


def lag_gram(u: xr.DataArray, dim: str = "snapshot") -> xr.DataArray:
    """Per-lag Gram tensor ``G_tau[s, s'] = sum_{i - j = tau} u_s(i, j) u_s'(i, j)`` (float64).

    Returns dims ``(..., "lag", dim, dim + "_")``; ``sum_tau G_tau`` is N times the Gram
    matrix of the plain POD. Dask-backed ``u`` is reduced over pairs of snapshot chunks;
    the result (``8 L N^2`` bytes per field set) is in memory.
    """
    check_lazy(u, name="u", dims=(dim, "query", "key"), snapshot_dim=dim)
    lay = layout(u, dim)
    kern = kernels(u)
    G = np.stack(
        [
            set_stats(kern, u.isel(dict(zip(lay.lead, ix, strict=True))), lay).gram_tensor()
            for ix in np.ndindex(*lay.shape)
        ]
    )
    if not np.isfinite(G).all():  # dask input is checked here, in the pass that reduces it
        raise ValueError("u: expected finite values, got NaN or inf entries")
    return xr.DataArray(
        G.reshape(lay.shape + G.shape[1:]),
        dims=(*lay.lead, "lag", dim, f"{dim}_"),
        coords={
            **lead_coords(u, lay.lead),
            "lag": lay.lags,
            dim: u[dim].values if dim in u.coords else np.arange(u.sizes[dim]),
        },
        name="lag_gram",
    )


def pod(
    u: xr.DataArray,
    dim: str = "snapshot",
    n_modes: int | None = None,
    *,
    window: xr.DataArray | None = None,
    rtol: float = RTOL,
) -> xr.Dataset:
    """POD of an ensemble of fields, optionally filtered by Gaussian lag windows.

    Parameters
    ----------
    u
        Fluctuation field ``(..., dim, "query", "key")`` (any leading dims broadcast), or
        its lag form ``(..., dim, "query", "lag")`` from :func:`msapod.to_lag` (the key
        positions are then read from its ``key_positions`` attr, default: the queries).
    dim
        The ensemble dim (N snapshots, N >= 2).
    n_modes
        How many leading modes and coefficients to return (default: all N). The full
        eigenvalue spectrum is always returned as ``spectrum(rank)``.
    window
        ``w(..., lag)`` from :func:`msapod.lag_window`: decompose ``w(i - j) u(i, j)``.
        Window dims not in ``u`` (e.g. ``peak``) give one POD each, from one shared
        per-lag Gram tensor; window dims shared with ``u`` (e.g. ``layer``) align.
    rtol
        Modes with ``lambda_k <= rtol * lambda_1`` are beyond the numerical rank: their
        modes are NaN and coefficients 0.

    Returns
    -------
    xarray.Dataset
        ``spectrum(rank)`` (all eigenvalues), ``eigenvalues(mode)``,
        ``modes(mode, query, key)``, ``coefficients(dim, mode)``, ``total_energy`` and
        ``gram(dim, dim_)``, the N x N matrix K whose eigenvalues are the spectrum (for
        a bootstrap over snapshots, see :func:`msapod.bootstrap_spectrum`).

    Notes
    -----
    Dask-backed ``u`` (chunked over ``dim`` and leading dims) is never loaded whole
    (:mod:`msapod.backends.chunked`): memory holds ``8 n_w N^2`` bytes of Grams plus a few
    chunks. A key-form field costs one extra pass to detect causality (none for the lag
    form). Results equal the in-memory path to rounding.
    """
    n_modes = _check_pod_args(u, dim, n_modes, window)
    lay = layout(u, dim)
    window, wdims = _align_window(window, lay)
    wshape = tuple(window.sizes[d] for d in wdims)
    n, n_w = u.sizes[dim], int(np.prod(wshape, dtype=np.int64))
    n_sets = int(np.prod(lay.shape, dtype=np.int64))
    Q, Kk = len(lay.qpos), len(lay.kpos)
    out = {
        "spectrum": np.empty((n_sets, n_w, n)),
        "gram": np.empty((n_sets, n_w, n, n)),
        "eigenvalues": np.empty((n_sets, n_w, n_modes)),
        "modes": np.empty((n_sets, n_w, n_modes, Q, Kk)),
        "coefficients": np.empty((n_sets, n_w, n, n_modes)),
    }
    kern = kernels(u)
    for b, ix in enumerate(np.ndindex(*lay.shape)):
        pick = dict(zip(lay.lead, ix, strict=True))
        if window is None:
            Wv = np.ones((1, len(lay.lags)))
        else:
            wb = window.isel({d: i for d, i in pick.items() if d in window.dims})
            Wv = wb.transpose(*wdims, "lag").values.reshape(n_w, len(lay.lags))
        parts = set_stats(kern, u.isel(pick), lay).pod(Wv, n_modes, rtol)
        for name, value in parts.items():
            out[name][b] = value
    return pod_dataset(out, u, dim, lay, window, wdims, n_modes, rtol)


class Layout(NamedTuple):
    """Where the entries of a field sit in lag form (see :func:`layout`)."""

    lag_form: bool  # u given as (query, lag); else (query, key)
    causal: bool | None  # u zero above the diagonal (key form only)
    qpos: np.ndarray  # query positions
    kpos: np.ndarray  # key positions
    lags: np.ndarray  # the lags of the lag form
    core: tuple  # (dim, "query", "lag" | "key")
    lead: tuple  # the leading dims, one POD per index
    shape: tuple  # their sizes


def layout(u: xr.DataArray, dim: str) -> Layout:
    """The lag-form layout of ``u`` (causality of a key-form field detected)."""
    lag_form = "lag" in u.dims
    qpos = positions(u, "query", "u")
    causal = None
    if lag_form:
        kpos = np.asarray(u.attrs.get("key_positions", qpos), dtype=np.int64)
        lags = np.asarray(u["lag"].values)
    else:
        kpos = positions(u, "key", "u")
        causal = is_causal(u)
        lags = lag_layout(qpos, kpos, causal)[0]
    core = (dim, "query", "lag" if lag_form else "key")
    lead = tuple(d for d in u.dims if d not in core)
    shape = tuple(u.sizes[d] for d in lead)
    return Layout(lag_form, causal, qpos, kpos, lags, core, lead, shape)


def set_stats(kern, one: xr.DataArray, lay: Layout):
    """The lag statistics (``kern.LagStats``) of one field set ``one`` of a fluctuation
    laid out as ``lay``: its bare array, as given."""
    x = one.transpose(*lay.core).data
    if lay.lag_form:
        return kern.LagStats.of_lag_form(x, lay.lags, lay.qpos, lay.kpos)
    return kern.LagStats.of_fluctuation(x, lay.qpos, lay.kpos, causal=lay.causal)


def _check_pod_args(u, dim, n_modes, window) -> int:
    """Validate the arguments of :func:`pod`; returns ``n_modes`` as an int."""
    if not isinstance(u, xr.DataArray):
        raise TypeError(f"u: expected an xarray.DataArray, got {type(u).__name__}")
    lag_form = "lag" in u.dims
    check_lazy(u, name="u", dims=(dim, "query", "lag" if lag_form else "key"), snapshot_dim=dim)
    n = u.sizes[dim]
    n_modes = n if n_modes is None else check_n_modes(n_modes, n)
    if window is not None:
        if not isinstance(window, xr.DataArray) or "lag" not in window.dims:
            raise ValueError("window: expected a DataArray with a 'lag' dim (see lag_window)")
        if not np.isfinite(window.values).all():
            raise ValueError("window: expected finite values")
    return n_modes


def check_n_modes(n_modes, n: int | None) -> int:
    """``n_modes`` (leading modes kept) as an int in ``1..n`` (``n`` None, N not known
    yet: its type and ``>= 1`` only)."""
    bound = "" if n is None else f"..{n}"
    if isinstance(n_modes, bool | np.bool_) or not isinstance(n_modes, int | np.integer):
        raise ValueError(f"n_modes: expected an integer 1{bound} or None, got {n_modes!r}")
    if n_modes < 1 or (n is not None and n_modes > n):
        raise ValueError(
            f"n_modes: expected an integer 1{bound} (at most the number of snapshots N), "
            f"got {n_modes}"
        )
    return int(n_modes)


def _align_window(window, lay: Layout):
    """The window on the lags of ``u`` and its own dims (those not shared with ``u``)."""
    if window is None:
        return None, ()
    wdims = tuple(d for d in window.dims if d != "lag" and d not in lay.lead)
    on_lags = np.isin(lay.lags, window["lag"].values).all()
    window = window.sel(lag=lay.lags) if on_lags else window.interp(lag=lay.lags)
    if not np.isfinite(window.values).all():
        raise ValueError("window: does not cover every lag of u")
    return window, wdims


#: The ``long_name`` of each array of a POD result (:func:`pod`, :func:`msapod.analyze`).
LONG_NAMES = {
    "spectrum": "POD eigenvalues lambda_k, all N",
    "eigenvalues": "POD eigenvalues lambda_k (leading modes)",
    "modes": "orthonormal POD modes phi_k(i, j)",
    "coefficients": "temporal coefficients xi_k(s)",
    "gram": "Gram matrix K = X X^T / N of the (windowed) snapshots",
    "total_energy": "(1/N) sum_s ||u_s||^2 = sum_k lambda_k",
}


def pod_dataset(out, u, dim, lay: Layout, window, wdims, n_modes, rtol) -> xr.Dataset:
    """Label the arrays of :func:`pod`'s field sets as the Dataset it returns."""
    n = u.sizes[dim]
    full = lay.shape + tuple(window.sizes[d] for d in wdims)
    core = {
        "spectrum": ("rank",),
        "eigenvalues": ("mode",),
        "modes": ("mode", "query", "key"),
        "coefficients": (dim, "mode"),
        "gram": (dim, f"{dim}_"),
    }
    wc = {}
    if window is not None:
        wc = {
            c: window.coords[c]
            for c in window.coords
            if window.coords[c].dims and set(window.coords[c].dims) <= set(wdims)
        }
    ds = xr.Dataset(
        {
            name: (
                (*lay.lead, *wdims, *dims),
                out[name].reshape(full + out[name].shape[2:]),
                {"long_name": LONG_NAMES[name]},
            )
            for name, dims in core.items()
        },
        coords={
            **lead_coords(u, lay.lead),
            **wc,
            "rank": np.arange(1, n + 1),
            "mode": np.arange(1, n_modes + 1),
            dim: u[dim].values if dim in u.coords else np.arange(n),
            "query": lay.qpos,
            "key": lay.kpos,
        },
    )
    ds["total_energy"] = ds["spectrum"].sum("rank")
    ds["total_energy"].attrs = {"long_name": LONG_NAMES["total_energy"]}
    ds.attrs = {
        "normalisation": NORMALISATION,
        "n_snapshots": n,
        "snapshot_dim": dim,
        "windowed": int(window is not None),
        "rtol": rtol,
    }
    return ds


def reconstruct(result: xr.Dataset, rank: int) -> xr.DataArray:
    """Rank-K reconstruction ``sum_{k <= K} xi_k(s) phi_k(i, j)`` from a :func:`pod` result."""
    n_avail = result.sizes["mode"]
    _check_rank(rank, n_avail)
    sub = result.isel(mode=slice(0, rank))
    return xr.dot(sub["coefficients"], sub["modes"].fillna(0.0), dim="mode")


def _check_rank(rank, n_avail: int) -> None:
    """A rank K of :func:`reconstruct`: an integer 0..``n_avail`` (the modes kept)."""
    if isinstance(rank, bool) or not isinstance(rank, int | np.integer):
        raise ValueError(f"rank: expected an integer 0..{n_avail}, got {rank!r}")
    if not 0 <= rank <= n_avail:
        raise ValueError(f"rank: expected 0..{n_avail} (modes available), got {rank}")


def basis_error(u: xr.DataArray, basis: xr.DataArray, dim: str = "snapshot") -> xr.DataArray:
    """Ensemble-mean squared error of projecting ``u`` onto an orthonormal ``basis``.

    ``(1/N) sum_s ||u_s - sum_k <u_s, b_k> b_k||^2`` for ``basis(mode, query, key)``; the
    basis must be orthonormal (checked to 1e-8). Dask-backed ``u`` is reduced chunk by
    chunk (with leading dims the result is a lazy DataArray).
    """
    check_field(basis, name="basis", dims=("mode", "query", "key"), min_snapshots=None)
    B = basis.transpose(..., "mode", "query", "key")
    Bm = B.values.reshape(B.shape[:-2] + (-1,))
    gram = Bm @ np.swapaxes(Bm, -1, -2)
    eye = np.eye(B.sizes["mode"])
    if np.abs(gram - eye).max() > 1e-8:
        raise ValueError("basis: expected orthonormal fields over (query, key)")
    lead = [d for d in u.dims if d not in (dim, "query", "key")]
    if not lead and B.ndim == 3:  # one ensemble, one basis: plain matrix products
        U = u.transpose(dim, "query", "key").data
        return xr.DataArray(kernels(u).residual(U, Bm, None), name="error")
    coef = xr.dot(u, basis, dim=("query", "key"))
    resid = u - xr.dot(coef, basis, dim="mode")
    return (resid**2).sum(("query", "key")).mean(dim)


def reconstruction_error(
    u: xr.DataArray, result: xr.Dataset, rank: int, dim: str = "snapshot"
) -> xr.DataArray:
    """``(1/N) sum_s ||u_s - P_K u_s||^2`` with the first ``rank`` POD modes of ``result``.

    The residual is formed explicitly (no use of orthogonality), so comparing it with
    ``sum_{k > K} lambda_k`` of ``result["spectrum"]`` is a genuine check of Theorem 1.
    Dask-backed ``u`` is reduced chunk by chunk (with leading dims the result is lazy).
    """
    n_avail = result.sizes["mode"]
    _check_rank(rank, n_avail)
    check_field(u, name="u", dims=(dim, "query", "key"), snapshot_dim=dim)
    n_pod = result["coefficients"].sizes.get(dim)
    if n_pod is not None and u.sizes[dim] != n_pod:
        raise ValueError(
            f"u: has {u.sizes[dim]} snapshots along {dim!r} but the POD result was computed "
            f"from {n_pod}; pass the ensemble the POD was computed from"
        )
    lead = [d for d in u.dims if d not in (dim, "query", "key")]
    extra = [d for d in result["modes"].dims if d not in ("mode", "query", "key")]
    if not lead and not extra:
        sub = result.isel(mode=slice(0, rank))
        C = sub["coefficients"].transpose(dim, "mode").values
        Phi = sub["modes"].fillna(0.0).transpose("mode", "query", "key").values
        U = u.transpose(dim, "query", "key").data
        err = kernels(u).residual(U, Phi.reshape(rank, -1), C)
        return xr.DataArray(err, name="error")
    recon = reconstruct(result, rank)
    return ((u - recon) ** 2).sum(("query", "key")).mean(dim)
