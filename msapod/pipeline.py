"""The multiscale POD pipeline in one call (PAPER.md steps 2-10).

``analyze(A)`` runs, for every field set along the leading dims (``model``, ``layer``,
``head``): Reynolds split -> Morlet scalogram of the lag profiles -> dominant scales ->
one Gaussian lag window per dominant scale -> plain and scale-selective POD (all from one
per-lag Gram tensor) -> T_spec and H*. Every parameter is recorded in the attrs.

Each field set takes one path, whatever its backend: its lag statistics
(:class:`msapod.lagstats.LagStats`, or the chunked twin for dask data) give the scalogram
``E(a, b)`` from their lag moments and every window's POD (:meth:`~msapod.lagstats.LagStats.pod`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import partial
from types import MappingProxyType

import numpy as np
import pandas as pd
import xarray as xr

from ._io import check_int
from ._labels import check_eps, check_flag, check_omega0, check_tau_max, is_real, positions
from .backends import kernels
from .decomposition import LONG_NAMES, NORMALISATION, check_n_modes
from .fields import check_with, is_band
from .lagstats import RTOL, gaussian_windows
from .spectra import CRITERIA, EPS, rank_tolerance, spectral_concentration, tail_fraction, tail_rank
from .wavelets import (
    OMEGA0,
    check_scales,
    default_scales,
    dominant_scales,
    fourier_period,
    scale_centroid,
    scalogram_energy,
    warn_unresolved,
)
from .wavelets import coherency as coherency_of
from .windows import CENTRE_RULES, window_centres

__all__ = ["ANALYZE_DEFAULTS", "analyze", "check_options"]


def analyze(
    A: xr.DataArray,
    *,
    dim: str = "snapshot",
    scales=None,
    omega0: float = OMEGA0,
    max_peaks: int = 3,
    include_edges: bool = True,
    field: str = "total",
    centre: str | float = "peak",
    width: float = 1.0,
    n_modes: int | None = None,
    eps: float | Sequence[float] = EPS,
    criterion: str = "energy",
    k_min: int = 1,
    k_max: int | None = None,
    coherency: bool = False,
    check_stochastic: bool = True,
    tau_max: int | None = None,
) -> xr.Dataset:
    """Multiscale POD of attention fields.

    Parameters
    ----------
    A
        Attention fields ``(..., dim, "query", "key")``, rows summing to one; or a lag
        band ``(..., dim, "query", "lag")``, ``R(i, tau) = A(i, i - tau)`` at the lags
        ``tau = 0..tau_max`` (``collect_attention(..., tau_max=...)``, or
        :func:`msapod.to_lag` of a causal field cut at a lag), rows summing to at most
        one.
    scales, omega0
        Scales (lags) and Morlet centre frequency of the scalogram (see
        :func:`msapod.scalogram`).
    max_peaks, include_edges
        Dominant scales kept (see :func:`msapod.dominant_scales`).
    field
        The field whose scalogram gives the dominant scales and the windows: ``"total"``
        (default: the attention A itself, mean included, as the paper writes the
        scalogram and as the book's default reading takes it) or ``"fluctuation"``
        (u = A - Abar, the field the POD decomposes). The POD always decomposes u.
    centre, width
        Window rules (see :func:`msapod.window_parameters`).
    n_modes
        Leading modes and coefficients kept (stored as float32; default
        ``min(DEFAULT_N_MODES, N)``); the full spectra are always kept.
    eps, criterion
        Tolerances and criterion of H* (see :func:`msapod.effective_rank`).
    k_min, k_max
        Fit range of T_spec (see :func:`msapod.spectral_concentration`).
    coherency
        Also compute gamma(peak, query_i, query_j) at the dominant scales (slower).
    tau_max
        Analyse only the lags ``tau = query - key`` in ``0..tau_max`` of causal fields
        (default None: every lag; a lag band ``A``: all of its lags): the lag form, the
        per-lag Gram tensor and the modes hold ``tau_max + 1`` lags instead of L. At each
        lag of the band the mean field, the lag moments and the per-lag Grams are the full
        computation's; the scalogram, the windows and the POD are those of the band (the
        full analysis's where the fields have no weight beyond ``tau_max``).

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
        peaks (fewer maxima than ``max_peaks``) are NaN. For a lag band, ``mean`` and
        ``modes`` are in the lag layout (``lag`` for ``key``) and attr ``tau_max`` says
        the band.

    Notes
    -----
    ``A`` may be dask-backed (e.g. from ``collect_attention(..., store=...)`` or
    ``xarray.open_zarr``), chunked over ``dim`` and the leading dims: each field set then
    takes four passes over its chunks (checks and mean; lag moments; the windowed Grams;
    the leading modes), memory bounded by a few chunks plus the ``(window, N, N)`` Grams,
    and the result equals the in-memory one to rounding (:mod:`msapod.backends.chunked`,
    which also runs on a ``dask.distributed`` cluster).
    """
    # the options first (N, for n_modes, where A has the dim), then the field, once
    known = isinstance(A, xr.DataArray) and isinstance(dim, str) and dim in A.sizes
    opts = check_options(
        A.sizes[dim] if known else None,
        dim=dim,
        scales=scales,
        omega0=omega0,
        max_peaks=max_peaks,
        include_edges=include_edges,
        field=field,
        centre=centre,
        width=width,
        n_modes=n_modes,
        eps=eps,
        criterion=criterion,
        k_min=k_min,
        k_max=k_max,
        coherency=coherency,
        check_stochastic=check_stochastic,
        tau_max=tau_max,
    )
    kern = kernels(A)
    last = "lag" if isinstance(A, xr.DataArray) and is_band(A) else "key"
    check_with(kern, A, dims=(dim, "query", last), stochastic=check_stochastic, snapshot_dim=dim)
    if opts["n_modes"] is None:
        opts["n_modes"] = min(DEFAULT_N_MODES, A.sizes[dim])
    one = partial(_analyze_one, kern=kern, **opts)
    lead = [d for d in A.dims if d not in (dim, "query", last)]
    return _analyze_sets(A, lead, one) if lead else one(A)


#: The defaults of :func:`analyze`'s options, read from its signature (the one place
#: they are stated): ``msapod analyze`` and :mod:`msapod.studies.own_model` read them here.
ANALYZE_DEFAULTS = MappingProxyType(
    {
        name: p.default
        for name, p in inspect.signature(analyze).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
)

#: Leading modes and coefficients :func:`analyze` keeps by default (at most N).
DEFAULT_N_MODES = 10

#: The fields whose lag moments give the scalogram: the fluctuation u or A itself.
SCALOGRAM_FIELDS = ("fluctuation", "total")
#: The paper's symbol of each of :data:`SCALOGRAM_FIELDS`.
FIELD_SYMBOLS = {"fluctuation": "u", "total": "A"}


def check_options(n_snapshots: int | None = None, **options) -> dict:
    """The options of :func:`analyze` checked and completed with its defaults.

    The one check of them: :func:`analyze` calls it, and so does a caller that wants bad
    options refused before it gathers the fields (``msapod analyze``).

    Parameters
    ----------
    n_snapshots
        N when known: ``n_modes`` is checked against it.
    **options
        Keyword arguments of :func:`analyze` (any subset; the others take the defaults of
        its signature, :data:`ANALYZE_DEFAULTS`).

    Returns
    -------
    dict
        Every option of :func:`analyze`, normalised: numbers as ``float``/``int``, flags
        as ``bool``, ``eps`` as a list of floats, ``scales`` as a float array or None.

    Raises
    ------
    TypeError
        An option :func:`analyze` does not take.
    ValueError
        A bad value, naming the option and what was expected (the scales are checked
        against the lags of the field later, by :func:`msapod.scalogram`'s rule).
    """
    unknown = sorted(set(options) - set(ANALYZE_DEFAULTS))
    if unknown:
        raise TypeError(f"analyze: unexpected options {unknown}")
    o = {**ANALYZE_DEFAULTS, **options}
    if not isinstance(o["dim"], str):
        raise ValueError(f"dim: expected the name of the snapshot dim, got {o['dim']!r}")
    if o["scales"] is not None:
        o["scales"] = _scale_values(o["scales"])
    o["omega0"] = check_omega0(o["omega0"])
    o["max_peaks"] = check_int(o["max_peaks"], "max_peaks", 1)
    for flag in ("include_edges", "coherency", "check_stochastic"):
        o[flag] = check_flag(o[flag], flag)
    if o["field"] not in SCALOGRAM_FIELDS:
        raise ValueError(f"field: expected one of {SCALOGRAM_FIELDS}, got {o['field']!r}")
    o["centre"] = _check_centre(o["centre"])
    if not is_real(o["width"]) or not (np.isfinite(o["width"]) and o["width"] > 0):
        raise ValueError(
            f"width: expected a finite factor kappa > 0 (sigma = kappa a*), got {o['width']!r}"
        )
    o["width"] = float(o["width"])
    if o["n_modes"] is not None:
        o["n_modes"] = check_n_modes(o["n_modes"], n_snapshots)
    o["eps"] = _eps_list(o["eps"])
    if o["criterion"] not in CRITERIA:
        raise ValueError(f"criterion: expected one of {CRITERIA}, got {o['criterion']!r}")
    o["k_min"] = check_int(o["k_min"], "k_min", 1)
    if o["k_max"] is not None:
        o["k_max"] = check_int(o["k_max"], "k_max", 2)
    o["tau_max"] = check_tau_max(o["tau_max"])
    return o


def _check_centre(centre) -> str | float:
    """A window centre rule of :func:`msapod.window_parameters` or a finite lag."""
    if isinstance(centre, str) and centre in CENTRE_RULES:
        return centre
    if is_real(centre) and np.isfinite(centre):
        return float(centre)
    raise ValueError(
        f"centre: expected one of {CENTRE_RULES} or a finite number of lags, got {centre!r}"
    )


def _scale_values(scales) -> np.ndarray:
    """The scales as a float array (their range and order are checked against the lags)."""
    try:
        return np.atleast_1d(np.asarray(scales, dtype=np.float64))
    except (TypeError, ValueError):
        raise ValueError(f"scales: expected a sequence of numbers (lags), got {scales!r}") from None


def _eps_list(eps) -> list[float]:
    """The tolerances of H* as a checked list (one number or a non-empty sequence)."""
    eps_arr = np.atleast_1d(np.asarray(eps, dtype=object))
    if eps_arr.ndim != 1 or eps_arr.size == 0:
        raise ValueError(f"eps: expected one number or a non-empty sequence in (0, 1), got {eps!r}")
    return [check_eps(e) for e in eps_arr]


def _analyze_sets(A: xr.DataArray, lead: list, one: Callable) -> xr.Dataset:
    """``one`` (:func:`_analyze_one` with the options) of every field set along the
    leading dims ``lead``, one set at a time (memory bounded by one ensemble), stacked
    back onto those dims with their coords."""
    shape = [A.sizes[d] for d in lead]
    parts = []
    for ix in np.ndindex(*shape):
        parts.append(one(A.isel(dict(zip(lead, ix, strict=True)), drop=True)))
    out = xr.concat(
        parts, dim="_set", coords="minimal", compat="override", combine_attrs="override"
    )
    index = pd.MultiIndex.from_product([A[d].values for d in lead], names=lead)
    out = out.assign_coords(xr.Coordinates.from_pandas_multiindex(index, "_set"))
    out = out.unstack("_set").transpose(*lead, ...)
    lead_coords = {
        c: A.coords[c] for c in A.coords if c not in lead and set(A.coords[c].dims) <= set(lead)
    }
    return text_coords(out.assign_coords(lead_coords))


def text_coords(ds: xr.Dataset, names: Sequence[str] = ("window", "peak")) -> xr.Dataset:
    """``ds`` with its object-dtype label coordinates ``names`` as fixed-width strings
    (what ``xr.concat`` of analyses leaves as objects, and netCDF cannot store)."""
    for name in names:
        if name in ds.coords and ds[name].dtype == object:
            ds = ds.assign_coords({name: ds[name].values.astype(str)})
    return ds


def _analyze_one(
    A: xr.DataArray,
    *,
    kern,
    dim: str,
    scales: np.ndarray | None,
    omega0: float,
    max_peaks: int,
    include_edges: bool,
    field: str,
    centre: str | float,
    width: float,
    n_modes: int,
    eps: list[float],
    criterion: str,
    k_min: int,
    k_max: int | None,
    coherency: bool,
    check_stochastic: bool,
    tau_max: int | None,
) -> xr.Dataset:
    """analyze() of one checked field set (no leading dims) with checked options: the lag
    statistics of its fluctuation (:class:`msapod.lagstats.LagStats` or its chunked twin,
    the kernels ``kern`` picked), the steps on their bare arrays, then one Dataset."""
    stats, q, k = _lag_statistics(A, kern, dim, tau_max, check_stochastic)
    # the scalogram of the lag moments and its dominant scales (steps 3-4)
    lags_t, C = stats.moments(field)
    s = check_scales(default_scales(len(lags_t)) if scales is None else scales, len(lags_t))
    warn_unresolved(s, omega0)
    E = scalogram_energy(C, s, lags_t, omega0)
    spec = E.sum(-1) / s
    spectrum = xr.DataArray(spec, dims="scale", coords={"scale": s}, attrs={"omega0": omega0})
    dominant = dominant_scales(spectrum, max_peaks, include_edges=include_edges)
    a = dominant.values
    # the windows: "plain" (1), then one Gaussian per dominant scale, zero where a peak
    # is missing (step 5)
    c = window_centres(E, s, lags_t, a, centre)
    sigma = width * a
    found = np.isfinite(a)
    W = np.zeros((1 + max_peaks, len(stats.lags)))
    W[0] = 1.0
    W[1:][found] = gaussian_windows(stats.lags, c[found], sigma[found])
    # plain and scale-selective POD of every window (steps 6-8), T_spec and H* (9-10)
    pod = stats.pod(W, n_modes, RTOL)
    n, mean, lags, band = stats.n, stats.mean, stats.lags, stats.band
    last = "lag" if band else "key"
    R = stats.lag_form() if coherency else None
    del stats  # the lag form (8 N L^2 bytes) is not needed for the Dataset
    window = np.empty(1 + max_peaks, dtype=object)
    window[:] = ["plain"] + [f"scale-{m + 1}" for m in range(max_peaks)]
    conc = spectral_concentration(
        xr.DataArray(pod["spectrum"], dims=("window", "rank")), k_min, k_max
    )
    tail = tail_fraction(pod["spectrum"])
    H = np.stack([tail_rank(tail, rank_tolerance(e, criterion)) for e in eps])
    missing = np.flatnonzero(~np.r_[True, found])

    def per_window(x: np.ndarray, axis: int = 0) -> np.ndarray:
        """``x`` (float) with the windows of missing peaks NaN."""
        x = np.array(x, dtype=np.result_type(x.dtype, np.float32))
        np.moveaxis(x, axis, 0)[missing] = np.nan
        return x

    centroid = scale_centroid(spectrum)
    pod["modes"] = pod["modes"].astype(np.float32)
    pod["total_energy"] = pod["spectrum"].sum(-1)
    pod_dims = {
        "spectrum": ("rank",),
        "eigenvalues": ("mode",),
        "modes": ("mode", "query", last),
        "coefficients": (dim, "mode"),
        "total_energy": (),
        "gram": (dim, f"{dim}_"),
    }
    v = {
        "mean": (("query", last), mean, {"long_name": "mean field Abar(i, j)",
                                             "averaged_over": dim}),
        "energy": (("scale", "lag"), E, {"long_name": "scalogram E(a, b) = <|W(a, b)|^2>",
                                         "omega0": omega0}),
        "scale_spectrum": ("scale", spec, {"long_name": "scale spectrum E(a) = sum_b E(a, b) / a",
                                           "omega0": omega0}),
        "dominant_scale": ("peak", a, {}),
        "dominant_period": ("peak", dominant["period"].values, {}),
        "dominant_energy": ("peak", dominant["peak_energy"].values, {}),
        "dominant_edge": ("peak", dominant["edge"].values, {}),
        **{name: (("window", *d), per_window(pod[name]), {"long_name": LONG_NAMES[name]})
           for name, d in pod_dims.items()},
        **{name: ("window", per_window(conc[name].values), dict(conc[name].attrs))
           for name in ("beta", "T_spec", "r2", "beta_stderr")},
        "H_star": (("eps", "window"), per_window(H, 1),
                   {"criterion": criterion, "long_name": "effective rank H*(eps)"}),
        "at_rank_limit": (("eps", "window"), H >= n - 1, {}),
        "window_centre": ("window", np.r_[np.nan, c], {}),
        "window_width": ("window", np.r_[np.nan, sigma], {}),
        "window_scale": ("window", np.r_[np.nan, a], {}),
        "scale_centroid": ((), centroid.values, dict(centroid.attrs)),
    }  # fmt: skip
    coords = {c: A.coords[c].variable for c in A.coords if dim not in A.coords[c].dims}
    layout = {"query": coords.pop("query", q), "lag": lags_t}
    if not band:
        layout["key"] = coords.pop("key", k)
    coords.pop("lag", None)
    coords = {
        **layout,
        "scale": s,
        "period": ("scale", fourier_period(s, omega0)),
        "peak": np.arange(max_peaks),
        "rank": np.arange(1, n + 1),
        "window": window,
        "mode": np.arange(1, n_modes + 1),
        dim: A[dim].values if dim in A.coords else np.arange(n),
        "eps": np.asarray(eps, dtype=np.float64),
        **coords,
    }
    out = xr.Dataset({name: xr.Variable(*spec_) for name, spec_ in v.items()}, coords=coords)
    if R is not None:
        R = xr.DataArray(R, dims=(dim, "query", "lag"), coords={"query": q, "lag": lags})
        out["coherency"] = _coherency_at_peaks(R, a, omega0, dim)
    out.attrs = {
        **{key: val for key, val in A.attrs.items() if isinstance(val, str | int | float)},
        "msapod_step": "analyze",
        "snapshot_dim": dim,
        "n_snapshots": n,
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
        "pod_normalisation": NORMALISATION,
    }
    if band:
        out.attrs["tau_max"] = int(lags[-1])
    return out


def _lag_statistics(A: xr.DataArray, kern, dim: str, tau_max: int | None, stochastic: bool):
    """``(stats, query positions, key positions)`` of one field set: its fluctuation's lag
    statistics, of the lags ``0..tau_max`` where ``A`` is a lag band or ``tau_max`` is
    given (``stochastic``: the rows are checked to sum to one)."""
    q = positions(A, "query", "A")
    if not is_band(A):
        k = positions(A, "key", "A")
        check_tau_max(tau_max, int(q.max() - k.min()) + 1)
        F = A.transpose(dim, "query", "key").data
        stats = kern.LagStats.of_ensemble(F, q, k, name="A", stochastic=stochastic, tau_max=tau_max)
        return stats, q, k
    lags = positions(A, "lag", "A")
    if not np.array_equal(lags, np.arange(len(lags))):
        raise ValueError(
            f"A: a lag band holds the lags 0, 1, ..., tau_max in order, got lags "
            f"{lags[:3].tolist()}...{lags[-1:].tolist()}"
        )
    k = np.asarray(A.attrs.get("key_positions", q), dtype=np.int64)
    if tau_max is not None:
        check_tau_max(tau_max, len(lags))
        A = A.isel(lag=slice(0, tau_max + 1))
    R = A.transpose(dim, "query", "lag").data
    lags = np.arange(A.sizes["lag"])
    stats = kern.LagStats.of_band(R, lags, q, k, name="A", stochastic=stochastic)
    return stats, q, k


def _coherency_at_peaks(R: xr.DataArray, a: np.ndarray, omega0: float, dim: str):
    """gamma(peak, query_i, query_j) at the dominant scales ``a`` (NaN for missing peaks)."""
    ok = np.isfinite(a)
    q = R["query"].values
    g = np.full((len(a), len(q), len(q)), np.nan)
    if ok.any():
        order = np.argsort(a[ok])
        gam = coherency_of(R, a[ok][order], omega0, dim=dim).values
        g[np.flatnonzero(ok)[order]] = gam
    return xr.DataArray(g, dims=("peak", "query_i", "query_j"), coords={"query_i": q, "query_j": q})
