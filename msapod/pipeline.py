"""The multiscale POD pipeline in one call (PAPER.md steps 2-10).

``analyze(A)`` runs, for every field set along the leading dims (``model``, ``layer``,
``head``): Reynolds split -> Morlet scalogram of the lag profiles -> dominant scales ->
one Gaussian lag window per dominant scale -> plain and scale-selective POD (all from one
per-lag Gram tensor) -> T_spec and H*. Every parameter is recorded in the attrs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from ._labels import check_eps, positions
from .backends import kernels
from .decomposition import decompose
from .fields import check_lazy, lag_form, split_from_mean
from .spectra import effective_rank, spectral_concentration
from .wavelets import coherency as coherency_of
from .wavelets import dominant_scales, scale_centroid, scalogram
from .windows import lag_window, window_parameters

__all__ = ["analyze"]


def analyze(
    A: xr.DataArray,
    *,
    dim: str = "snapshot",
    scales=None,
    omega0: float = 6.0,
    max_peaks: int = 3,
    include_edges: bool = True,
    field: str = "fluctuation",
    centre: str | float = "peak",
    width: float = 1.0,
    n_modes: int | None = None,
    eps: float | Sequence[float] = (0.05, 0.10, 0.20),
    criterion: str = "energy",
    k_min: int = 1,
    k_max: int | None = None,
    coherency: bool = False,
    check_stochastic: bool = True,
) -> xr.Dataset:
    """Multiscale POD of attention fields.

    Parameters
    ----------
    A
        Attention fields ``(..., dim, "query", "key")``, rows summing to one.
    scales, omega0
        Scales (lags) and Morlet centre frequency of the scalogram (see
        :func:`msapod.scalogram`).
    max_peaks, include_edges
        Dominant scales kept (see :func:`msapod.dominant_scales`).
    field
        ``"fluctuation"`` (default: u = A - Abar, the field the POD decomposes) or
        ``"total"`` (A itself, mean included) for the scalogram and dominant scales.
    centre, width
        Window rules (see :func:`msapod.window_parameters`).
    n_modes
        Leading modes and coefficients kept (stored as float32; default min(10, N)); the
        full spectra are always kept.
    eps, criterion
        Tolerances and criterion of H* (see :func:`msapod.effective_rank`).
    k_min, k_max
        Fit range of T_spec (see :func:`msapod.spectral_concentration`).
    coherency
        Also compute gamma(peak, query_i, query_j) at the dominant scales (slower).

    Returns
    -------
    xarray.Dataset
        ``mean``, ``energy(scale, lag)``, ``scale_spectrum(scale)``, ``scale_centroid``,
        ``dominant_scale(peak)`` with ``dominant_period``, ``dominant_energy`` and
        ``dominant_edge``; per ``window`` ("plain", "scale-1", ...): ``window_centre``,
        ``window_width``, ``window_scale``, ``spectrum(rank)``, ``eigenvalues(mode)``,
        ``modes(mode, query, key)``, ``coefficients(dim, mode)``, ``gram(dim, dim_)``,
        ``total_energy``, ``beta``, ``T_spec``, ``r2``, ``beta_stderr``, ``H_star(eps)``
        and ``at_rank_limit(eps)``; optionally ``coherency``. Windows of missing
        peaks (fewer maxima than ``max_peaks``) are NaN.

    Notes
    -----
    ``A`` may be dask-backed (e.g. from ``collect_attention(..., store=...)`` or
    ``xarray.open_zarr``), chunked over ``dim`` and the leading dims. Each field set is
    then analysed in four passes over its chunks (checks and mean; lag moments; the
    windowed Gram matrices, block by block over pairs of chunks; the leading modes), with
    memory bounded by a few chunks plus the ``(window, N, N)`` Grams, and the result
    equals the in-memory one to rounding (see :mod:`msapod.backends.chunked`). It runs unchanged
    on a ``dask.distributed`` cluster when a ``Client`` is active.
    """
    if field not in ("fluctuation", "total"):
        raise ValueError(f"field: expected 'fluctuation' or 'total', got {field!r}")
    eps_arr = np.atleast_1d(np.asarray(eps, dtype=object))
    if eps_arr.ndim != 1 or eps_arr.size == 0:
        raise ValueError(f"eps: expected one number or a non-empty sequence in (0, 1), got {eps!r}")
    eps_list = [check_eps(e) for e in eps_arr]
    # dask data: values are checked set by set, in the pass that forms the mean
    check_lazy(A, dims=(dim, "query", "key"), stochastic=check_stochastic, snapshot_dim=dim)
    if n_modes is None:
        n_modes = min(10, A.sizes[dim])
    params = dict(
        dim=dim,
        scales=scales,
        omega0=omega0,
        max_peaks=max_peaks,
        include_edges=include_edges,
        field=field,
        centre=centre,
        width=width,
        n_modes=n_modes,
        eps=eps_list,
        criterion=criterion,
        k_min=k_min,
        k_max=k_max,
        coherency=coherency,
        check_stochastic=check_stochastic,
    )
    lead = [d for d in A.dims if d not in (dim, "query", "key")]
    if lead:
        # stream: one field set (e.g. one layer) at a time bounds memory by one ensemble
        shape = [A.sizes[d] for d in lead]
        parts = []
        for ix in np.ndindex(*shape):
            one = A.isel(dict(zip(lead, ix, strict=True)), drop=True)
            parts.append(_analyze_one(one, **params))
        out = xr.concat(
            parts, dim="_set", coords="minimal", compat="override", combine_attrs="override"
        )
        index = pd.MultiIndex.from_product([A[d].values for d in lead], names=lead)
        out = out.assign_coords(xr.Coordinates.from_pandas_multiindex(index, "_set"))
        out = out.unstack("_set").transpose(*lead, ...)
        lead_coords = {
            c: A.coords[c] for c in A.coords if c not in lead and set(A.coords[c].dims) <= set(lead)
        }
        out = out.assign_coords(lead_coords)
        for name in ("window", "peak"):
            if name in out.coords and out[name].dtype == object:
                out = out.assign_coords({name: out[name].values.astype(str)})
        return out
    return _analyze_one(A, **params)


def _analyze_one(
    A: xr.DataArray,
    *,
    dim,
    scales,
    omega0,
    max_peaks,
    include_edges,
    field,
    centre,
    width,
    n_modes,
    eps,
    criterion,
    k_min,
    k_max,
    coherency,
    check_stochastic=False,
) -> xr.Dataset:
    """analyze() of a single field set (no leading dims)."""
    eps_list = eps
    kern = kernels(A)
    # one pass (for dask data): checks, mean and causality; the lag form of the
    # fluctuation is shared by the scalogram, the POD and the coherency
    A64, mean, causal_A, causal_u = kern.field_stats(A, dim, stochastic=check_stochastic)
    rey = split_from_mean(A, A64, mean, dim)
    u = rey["fluctuation"]
    q, k = positions(A, "query", "A"), positions(A, "key", "A")
    R = lag_form(u, q, k, causal_u)
    At = R if field == "fluctuation" else lag_form(A, q, k, causal_A)
    sc = scalogram(At, scales, omega0, dims=(dim, "query"))
    peaks = dominant_scales(
        sc["spectrum"].assign_attrs(omega0=omega0), max_peaks, include_edges=include_edges
    )
    wp, windows, labels = _windows(sc, peaks, centre, width, max_peaks)
    valid = np.isfinite(peaks)
    operand, center = kern.pod_operand(A, R, mean)
    res = decompose(operand, dim, n_modes, windows, 1e-12, center=center, causal=causal_u)
    win_valid = _by_window(valid, True, labels)
    conc = spectral_concentration(res["spectrum"], k_min, k_max)
    H, at_limit = _ranks(res["spectrum"], eps_list, criterion, u.sizes[dim])
    out = xr.Dataset(
        {
            "mean": rey["mean"],
            "energy": sc["energy"],
            "scale_spectrum": sc["spectrum"],
            "dominant_scale": peaks.reset_coords(drop=True),
            "dominant_period": peaks["period"].reset_coords(drop=True),
            "dominant_energy": peaks["peak_energy"].reset_coords(drop=True),
            "dominant_edge": peaks["edge"].reset_coords(drop=True),
            "spectrum": res["spectrum"],
            "eigenvalues": res["eigenvalues"],
            "modes": res["modes"].astype(np.float32),
            "coefficients": res["coefficients"],
            "total_energy": res["total_energy"],
            "gram": res["gram"],
            "beta": conc["beta"],
            "T_spec": conc["T_spec"],
            "r2": conc["r2"],
            "beta_stderr": conc["beta_stderr"],
            "H_star": H,
            "at_rank_limit": at_limit,
        }
    )
    out["window_centre"] = _by_window(wp["centre"], np.nan, labels)
    out["window_width"] = _by_window(wp["width"], np.nan, labels)
    out["window_scale"] = _by_window(peaks, np.nan, labels)
    out["scale_centroid"] = scale_centroid(sc["spectrum"])
    per_window = [
        "gram",
        "spectrum",
        "eigenvalues",
        "modes",
        "coefficients",
        "total_energy",
        "beta",
        "T_spec",
        "r2",
        "beta_stderr",
        "H_star",
    ]
    for name in per_window:
        if name == "gram":  # N x N per window: NaN the missing windows in place, no copy
            g = out["gram"].data
            missing = np.flatnonzero(~win_valid.values)
            np.moveaxis(g, out["gram"].dims.index("window"), 0)[missing] = np.nan
            continue
        out[name] = out[name].where(win_valid)
    if coherency:
        out["coherency"] = _coherency_at_peaks(R, peaks, omega0, dim, max_peaks)
    for name, da in (
        ("mean", rey["mean"]),
        ("energy", sc["energy"]),
        ("scale_spectrum", sc["spectrum"]),
        ("spectrum", res["spectrum"]),
    ):
        out[name].attrs = dict(da.attrs)
    out["H_star"].attrs = {"criterion": criterion, "long_name": "effective rank H*(eps)"}
    out.attrs = {
        **{k: v for k, v in A.attrs.items() if isinstance(v, str | int | float)},
        "msapod_step": "analyze",
        "snapshot_dim": dim,
        "n_snapshots": u.sizes[dim],
        "omega0": omega0,
        "scalogram_field": field,
        "bias_correction": 1,
        "max_peaks": max_peaks,
        "include_edges": int(include_edges),
        "window_centre_rule": str(centre),
        "window_width_rule": f"sigma = {width:g} * a*",
        "n_modes": n_modes,
        "criterion": criterion,
        "fit_k_min": k_min,
        "fit_k_max": conc.attrs["k_max"],
        "pod_normalisation": res.attrs["normalisation"],
    }
    return out


def _coherency_at_peaks(R, peaks, omega0, dim, max_peaks) -> xr.DataArray:
    """gamma(peak, query_i, query_j) at the dominant scales (NaN for missing peaks)."""
    ok = np.isfinite(peaks.values)
    q = R["query"].values
    g = np.full((max_peaks, len(q), len(q)), np.nan)
    if ok.any():
        order = np.argsort(peaks.values[ok])
        gam = coherency_of(R, peaks.values[ok][order], omega0, dim=dim).values
        g[np.flatnonzero(ok)[order]] = gam
    return xr.DataArray(g, dims=("peak", "query_i", "query_j"), coords={"query_i": q, "query_j": q})


def _ranks(spectrum, eps_list, criterion, n) -> tuple[xr.DataArray, xr.DataArray]:
    """H*(eps) and its at_rank_limit flag along a new ``eps`` dim."""
    eps_da = xr.DataArray(eps_list, dims="eps", name="eps")
    Hs = [effective_rank(spectrum, e, criterion, n_snapshots=n) for e in eps_list]
    H = xr.concat([h.reset_coords(drop=True) for h in Hs], dim=eps_da)
    at_limit = xr.concat([h["at_rank_limit"].reset_coords(drop=True) for h in Hs], dim=eps_da)
    return H, at_limit


def _windows(sc, peaks, centre, width, max_peaks):
    """Window parameters, the windows ("plain" = 1, then one per peak; zero where a peak
    is missing) and their labels."""
    wp = window_parameters(sc["energy"], peaks, centre=centre, width=width)
    w_scale = lag_window(sc["lag"].values, wp["centre"].fillna(0.0), wp["width"].fillna(1.0))
    w_scale = w_scale.where(np.isfinite(peaks), 0.0)
    labels = ["plain"] + [f"scale-{m + 1}" for m in range(max_peaks)]
    return wp, _by_window(w_scale, 1.0, labels), labels


def _by_window(da: xr.DataArray, plain, labels: list[str]) -> xr.DataArray:
    """Turn a per-``peak`` array into a per-``window`` one with "plain" first."""
    da = da.reset_coords(drop=True)
    first = xr.full_like(da.isel(peak=0, drop=True), plain).expand_dims(window=labels[:1])
    rest = da.rename(peak="window").assign_coords(window=labels[1:])
    return xr.concat([first, rest], dim="window")
