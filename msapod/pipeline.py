"""The multiscale POD pipeline in one call (PAPER.md steps 2-10).

``analyze(A)`` runs, for every field set along the leading dims (``model``, ``layer``,
``head``): Reynolds split -> Morlet scalogram of the lag profiles -> dominant scales ->
one Gaussian lag window per dominant scale -> plain and scale-selective POD (all from one
per-lag Gram tensor) -> T_spec and H*. Every parameter is recorded in the attrs.

The field is checked once and its kernels picked once (:func:`msapod.backends.kernels`);
the steps then run as private kernels, not through the checked public step functions.
In memory they share the lag statistics of :mod:`msapod.lagstats`: the lag form
``X (N, lag, query)`` of u is gathered once (snapshot-major, so no transposed copy; a
strided view for a causal square field), its lag moments C give the scalogram
``E(a, b)`` and its per-lag Gram tensor ``G(tau)`` every window's Gram
``K^(w) = sum_tau w(tau)^2 G(tau) / N`` in one product; one more product projects every
window's leading eigenvectors onto X. The output Dataset is assembled from numpy arrays
in one constructor. Dask data take the chunked kernels' passes.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd
import xarray as xr
from numpy.lib.stride_tricks import as_strided

from . import lagstats, wavelets
from ._labels import check_eps, check_omega0, lag_layout, lookup, positions
from .backends import kernels
from .backends.memory import eigensolve
from .decomposition import Layout, check_n_modes, decompose, finish_modes, pod_dataset
from .fields import check_with, is_causal, lag_form, split_from_mean
from .spectra import CRITERIA, spectral_concentration, tail_fraction, tail_rank
from .wavelets import (
    check_scales,
    default_scales,
    dominant_scales,
    fourier_period,
    peak_indices,
    scale_centroid,
    scalogram,
    warn_unresolved,
)
from .wavelets import coherency as coherency_of
from .windows import CENTRE_RULES, lag_window, window_centres, window_parameters

__all__ = ["ANALYZE_DEFAULTS", "analyze", "check_options"]


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
    kern = kernels(A)
    check_with(kern, A, dims=(dim, "query", "key"), stochastic=check_stochastic, snapshot_dim=dim)
    params = check_options(
        A.sizes[dim],
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
    )
    if params["n_modes"] is None:
        params["n_modes"] = min(DEFAULT_N_MODES, A.sizes[dim])
    lead = [d for d in A.dims if d not in (dim, "query", "key")]
    if lead:
        return _analyze_sets(A, lead, kern, params)
    return _analyze_one(A, kern=kern, **params)


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
    o["max_peaks"] = _check_int(o["max_peaks"], "max_peaks", 1)
    for flag in ("include_edges", "coherency", "check_stochastic"):
        if not isinstance(o[flag], bool | np.bool_):
            raise ValueError(f"{flag}: expected True or False, got {o[flag]!r}")
        o[flag] = bool(o[flag])
    if o["field"] not in SCALOGRAM_FIELDS:
        raise ValueError(f"field: expected one of {SCALOGRAM_FIELDS}, got {o['field']!r}")
    o["centre"] = _check_centre(o["centre"])
    if not _is_real(o["width"]) or not (np.isfinite(o["width"]) and o["width"] > 0):
        raise ValueError(
            f"width: expected a finite factor kappa > 0 (sigma = kappa a*), got {o['width']!r}"
        )
    o["width"] = float(o["width"])
    if o["n_modes"] is not None:
        o["n_modes"] = check_n_modes(o["n_modes"], n_snapshots)
    o["eps"] = _eps_list(o["eps"])
    if o["criterion"] not in CRITERIA:
        raise ValueError(f"criterion: expected one of {CRITERIA}, got {o['criterion']!r}")
    o["k_min"] = _check_int(o["k_min"], "k_min", 1)
    if o["k_max"] is not None:
        o["k_max"] = _check_int(o["k_max"], "k_max", 2)
    return o


def _is_real(x) -> bool:
    """A real number (not a bool)."""
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(
        x, bool | np.bool_
    )


def _check_int(x, name: str, least: int) -> int:
    """``x`` as an int if it is an integer (not a bool) of at least ``least``."""
    if not isinstance(x, int | np.integer) or isinstance(x, bool | np.bool_) or x < least:
        raise ValueError(f"{name}: expected an integer >= {least}, got {x!r}")
    return int(x)


def _check_centre(centre) -> str | float:
    """A window centre rule of :func:`msapod.window_parameters` or a finite lag."""
    if isinstance(centre, str) and centre in CENTRE_RULES:
        return centre
    if _is_real(centre) and np.isfinite(centre):
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


def _analyze_sets(A: xr.DataArray, lead: list, kern, params: dict) -> xr.Dataset:
    """analyze() of every field set along the leading dims ``lead``, one set at a time
    (memory bounded by one ensemble), stacked back onto those dims with their coords."""
    shape = [A.sizes[d] for d in lead]
    parts = []
    for ix in np.ndindex(*shape):
        one = A.isel(dict(zip(lead, ix, strict=True)), drop=True)
        parts.append(_analyze_one(one, kern=kern, **params))
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


def _analyze_one(A: xr.DataArray, *, kern, **params) -> xr.Dataset:
    """analyze() of a single field set (no leading dims), already checked."""
    if kern.CHECKS_IN_PASS:
        parts = _steps_chunked(A, kern, **params)
    else:
        parts = _steps_memory(A, **params)
    return _assemble(A, *parts, **params)


def _steps_chunked(
    A,
    kern,
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
    check_stochastic,
    **_,
):
    """The steps on dask data, through the chunked kernels (values checked in the pass
    that forms the mean)."""
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
    wp = window_parameters(sc["energy"], peaks, centre=centre, width=width)
    windows = _window_array(sc["lag"].values, wp, peaks, max_peaks)
    operand, center = kern.pod_operand(A, R, mean)
    res = decompose(operand, dim, n_modes, windows, 1e-12, center=center, causal=causal_u)
    return rey["mean"], sc, peaks, wp, windows, res, R


def _steps_memory(
    A, *, dim, scales, omega0, max_peaks, include_edges, field, centre, width, n_modes, **_
):
    """The steps in memory on the lag statistics (:mod:`msapod.lagstats`): the lag form
    ``X (N, lag, query)`` of u is gathered once; its lag moments give the scalogram, its
    per-lag Gram tensor every window's Gram, and one product every window's modes."""
    vals = A.transpose(dim, "query", "key").values
    q, k = positions(A, "query", "A"), positions(A, "key", "A")
    mean = vals.mean(0, dtype=np.float64)
    causal_A, causal_u = _causality(vals, mean, q, k)
    lags, X = _lag_ensemble(vals, mean, q, k, causal_u)
    square = _is_square(lags, q)
    if field == "fluctuation":
        lags_t, C = lags, lagstats._moments_snapmajor(X, square)
    else:
        lags_t, XA = _lag_ensemble(vals, None, q, k, causal_A)
        C = lagstats._moments_snapmajor(XA, _is_square(lags_t, q))
        del XA
    s = check_scales(default_scales(len(lags_t)) if scales is None else scales, len(lags_t))
    warn_unresolved(s, omega0)
    E = wavelets.scalogram_energy(C, s, lags_t, omega0)
    spec = E.sum(-1) / s
    idx = peak_indices(spec, max_peaks, include_edges)
    a = np.full(max_peaks, np.nan)
    a[: len(idx)] = s[idx]
    c = window_centres(E, s, lags_t, a, centre)
    sigma = width * a
    W = _window_weights(lags, c, sigma, a, max_peaks)
    out = _window_pod(X, W, lags, q, k, n_modes, square)
    del X
    labels = _labels(max_peaks)
    windows = xr.DataArray(W, dims=("window", "lag"), coords={"window": labels, "lag": lags})
    lay = Layout(False, q, k, lags, None, None, (dim, "query", "key"), (), ())
    res = pod_dataset(out, A, dim, lay, windows, ("window",), n_modes, 1e-12)
    res = res.assign_coords(window=labels)
    # labelled intermediates
    keep = {c: A.coords[c] for c in A.coords if dim not in A.coords[c].dims}
    mean_da = xr.DataArray(mean, dims=("query", "key"), coords=keep)
    mean_da.attrs = {"long_name": "mean field Abar(i, j)", "averaged_over": dim}
    sc = _scalogram_dataset(E, spec, s, lags_t, omega0, dim, keep)
    pk = _peaks_array(a, idx, spec, len(s), omega0)
    wp = xr.Dataset({"centre": ("peak", c), "width": ("peak", sigma)})
    R = None
    return mean_da, sc, pk, wp, windows, res, R


def _is_square(lags, q) -> bool:
    """Whether the lag form is square: lags ``0..Q-1`` over the queries ``0..Q-1``."""
    Q = len(q)
    return bool(lags[0] == 0 and len(lags) == Q and np.array_equal(q, np.arange(Q)))


def _window_weights(lags, c, sigma, a, max_peaks) -> np.ndarray:
    """The lag windows ``(window, lag)``: "plain" (1), then one Gaussian per dominant
    scale ``a`` (centre ``c``, width ``sigma``; 0 where the peak is missing)."""
    W = np.zeros((1 + max_peaks, len(lags)))
    W[0] = 1.0
    ok = np.isfinite(a)
    W[1:][ok] = lagstats.gaussian_windows(lags, c[ok], sigma[ok])
    return W


def _window_pod(X, W, lags, q, k, n_modes, square) -> dict:
    """Plain and windowed POD of the lag form ``X (N, lag, query)``: every window's Gram
    from the per-lag Gram tensor, its leading eigenpairs, and every window's modes from
    one product; the arrays :func:`msapod.decomposition.pod_dataset` labels."""
    n, n_lag, Q = X.shape
    G = lagstats._lag_gram_snapmajor(X, square)
    K = lagstats.window_grams(G, W)
    del G
    n_w = len(W)
    spectrum = np.zeros((n_w, n))
    V = np.zeros((n_w, n, n_modes))
    for w in range(n_w):
        if not W[w].any():  # zero window: zero Gram, no mode
            V[w] = np.eye(n, n_modes)
            continue
        spectrum[w], V[w] = eigensolve(K[w], n_modes)
    # every window's leading modes from one product: (window * mode, lag * query)
    P = V.transpose(0, 2, 1).reshape(n_w * n_modes, n) @ X.reshape(n, n_lag * Q)
    P = P.reshape(n_w, n_modes, n_lag, Q)
    P *= W[:, None, :, None]
    kidx, kvalid = lookup(lags, q[:, None] - k[None, :])
    modes = np.empty((n_w, n_modes, Q, len(k)))
    coef = np.empty((n_w, n, n_modes))
    for w in range(n_w):
        phi = np.ascontiguousarray(P[w].transpose(0, 2, 1)).reshape(n_modes, -1)
        modes[w], coef[w] = finish_modes(phi, V[w], spectrum[w], n, 1e-12, kidx, kvalid)
    return {
        "spectrum": spectrum[None],
        "gram": K[None],
        "eigenvalues": spectrum[None, :, :n_modes],
        "modes": modes[None],
        "coefficients": coef[None],
    }


def _peaks_array(a, idx, spec, n_scales, omega0) -> xr.DataArray:
    """The dominant scales ``a`` (NaN-padded to ``max_peaks``) labelled with their period,
    energy and whether they sit at an edge of the scale grid (``idx``: their indices)."""
    max_peaks = len(a)
    pk = xr.DataArray(a, dims="peak", coords={"peak": np.arange(max_peaks)}, name="dominant_scale")
    e_pk = np.full(max_peaks, np.nan)
    e_pk[: len(idx)] = spec[idx]
    edge = np.zeros(max_peaks, dtype=bool)
    edge[: len(idx)] = (idx == 0) | (idx == n_scales - 1)
    ratio = float(fourier_period(1.0, omega0))
    return pk.assign_coords(
        period=("peak", a * ratio), peak_energy=("peak", e_pk), edge=("peak", edge)
    )


def _causality(vals, mean, q, k) -> tuple[bool, bool]:
    """Whether A and u = A - mean are zero above the diagonal (key after query)."""
    upper = k[None, :] > q[:, None]
    if not upper.any():
        return True, True
    # every A_s (finite, checked) is zero there iff the extreme A_s are; |A_s - m| is
    # largest at the extreme A_s (float subtraction is monotone)
    hi, lo, m = vals.max(0)[upper], vals.min(0)[upper], mean[upper]
    causal_A = bool(((hi == 0) & (lo == 0)).all())
    causal_u = bool(((hi - m == 0) & (lo - m == 0)).all())
    return causal_A, causal_u


def _lag_ensemble(vals, mean, q, k, causal):
    """Lags and the snapshot-major lag form ``X (N, lag, query)`` of ``vals - mean``
    (float64), gathered a few snapshots at a time (no full-size float32 intermediate)."""
    lags, idx, valid = lag_layout(q, k, causal)
    n, Q, Kk = vals.shape
    if causal and len(lags) == Q == Kk and np.array_equal(q, lags) and np.array_equal(k, lags):
        return lags, _lag_ensemble_causal(vals, mean)
    flat = (np.arange(len(q))[None, :] * Kk + idx.T).ravel()  # (lag, query) -> entry
    keep = valid.T.ravel()
    m = None if mean is None else mean.ravel()[flat]
    src = vals.reshape(n, -1)
    X = np.empty((n, len(flat)))
    step = max(1, _GATHER // len(flat))
    for lo in range(0, n, step):
        taken = np.take(src[lo : lo + step], flat, axis=1)
        out = X[lo : lo + step]
        if m is None:
            out[...] = taken
        else:
            np.subtract(taken, m, out=out)
        out *= keep
    return lags, X.reshape(n, len(lags), len(q))


#: Entries gathered per block of snapshots in :func:`_lag_ensemble`.
_GATHER = 1 << 20


def _lag_ensemble_causal(vals, mean):
    """:func:`_lag_ensemble` of a causal square field (queries and keys ``0..L-1``, zero
    above the diagonal): ``X[s, tau, i] = u_s[i, i - tau]`` is a strided view of the
    flattened snapshot after ``L`` zeros (stride ``L + 1`` along the query, ``-1`` along the
    lag), whose entries for ``i < tau`` fall on the zeros above the diagonal or the
    padding."""
    n, L, _ = vals.shape
    step = max(1, _GATHER // (L * L))
    buf = np.zeros((min(step, n), L + L * L))
    X = np.empty((n, L, L))
    m = None if mean is None else mean.ravel()
    for lo in range(0, n, step):
        b = min(step, n - lo)
        if m is None:
            buf[:b, L:] = vals[lo : lo + b].reshape(b, -1)
        else:
            np.subtract(vals[lo : lo + b].reshape(b, -1), m, out=buf[:b, L:])
        row, item = buf.strides
        X[lo : lo + b] = as_strided(
            buf[:b, L:], shape=(b, L, L), strides=(row, -item, (L + 1) * item), writeable=False
        )
    return X


def _scalogram_dataset(E, spec, s, lags, omega0, dim, coords) -> xr.Dataset:
    """The scalogram's labelled Dataset (as :func:`msapod.scalogram` returns it)."""
    scalars = {c: v for c, v in coords.items() if not v.dims}
    sc = xr.Dataset(
        {
            "energy": xr.DataArray(
                E, dims=("scale", "lag"), coords={**scalars, "scale": s, "lag": lags}
            ),
            "spectrum": xr.DataArray(spec, dims="scale", coords={**scalars, "scale": s}),
        }
    )
    sc = sc.assign_coords(period=("scale", fourier_period(s, omega0)))
    sc["energy"].attrs = {"long_name": "scalogram E(a, b) = <|W(a, b)|^2>", "omega0": omega0}
    sc["spectrum"].attrs = {
        "long_name": "scale spectrum E(a) = sum_b E(a, b) / a",
        "omega0": omega0,
    }
    return sc


def _assemble(A, mean, sc, peaks, wp, windows, res, R, **params) -> xr.Dataset:
    """The Dataset of :func:`analyze` for one field set from its steps' results."""
    dim, max_peaks, criterion = params["dim"], params["max_peaks"], params["criterion"]
    conc = spectral_concentration(res["spectrum"], params["k_min"], params["k_max"])
    n = A.sizes[dim]
    H, at_limit = _ranks(res["spectrum"], params["eps"], criterion, n)
    out = _dataset(_variables(mean, sc, peaks, wp, res, conc, H, at_limit, max_peaks))
    if params["coherency"]:
        if R is None:
            R = _lag_fluctuation(A, dim, mean)
        out["coherency"] = _coherency_at_peaks(R, peaks, params["omega0"], dim, max_peaks)
    for name, da in (
        ("mean", mean),
        ("energy", sc["energy"]),
        ("scale_spectrum", sc["spectrum"]),
        ("spectrum", res["spectrum"]),
    ):
        out[name].attrs = dict(da.attrs)
    out["H_star"].attrs = {"criterion": criterion, "long_name": "effective rank H*(eps)"}
    out.attrs = {
        **{k: v for k, v in A.attrs.items() if isinstance(v, str | int | float)},
        **_analysis_attrs(params, n, conc.attrs["k_max"], res.attrs["normalisation"]),
    }
    return out


def _variables(mean, sc, peaks, wp, res, conc, H, at_limit, max_peaks) -> dict:
    """The data variables of :func:`analyze`'s Dataset; the windows of missing peaks NaN
    (set in numpy, in place where float: arrays the steps formed)."""
    labels = _labels(max_peaks)
    win_valid = _by_window_1d(np.isfinite(peaks), True, labels)
    missing = np.flatnonzero(~win_valid.values)
    window = win_valid["window"].variable

    def per_window(da: xr.DataArray) -> xr.DataArray:
        return _mask_windows(da, missing, window)

    return {
        "mean": mean,
        "energy": sc["energy"],
        "scale_spectrum": sc["spectrum"],
        "dominant_scale": peaks.reset_coords(drop=True),
        "dominant_period": peaks["period"].reset_coords(drop=True),
        "dominant_energy": peaks["peak_energy"].reset_coords(drop=True),
        "dominant_edge": peaks["edge"].reset_coords(drop=True),
        "spectrum": per_window(res["spectrum"]),
        "eigenvalues": per_window(res["eigenvalues"]),
        "modes": per_window(res["modes"].astype(np.float32)),
        "coefficients": per_window(res["coefficients"]),
        "total_energy": per_window(res["total_energy"]),
        "gram": per_window(res["gram"]),
        "beta": per_window(conc["beta"]),
        "T_spec": per_window(conc["T_spec"]),
        "r2": per_window(conc["r2"]),
        "beta_stderr": per_window(conc["beta_stderr"]),
        "H_star": per_window(H),
        "at_rank_limit": at_limit,
        "window_centre": _by_window_1d(wp["centre"], np.nan, labels),
        "window_width": _by_window_1d(wp["width"], np.nan, labels),
        "window_scale": _by_window_1d(peaks, np.nan, labels),
        "scale_centroid": scale_centroid(sc["spectrum"]),
    }


def _mask_windows(da: xr.DataArray, missing: np.ndarray, window) -> xr.DataArray:
    """``da`` (float; other dtypes cast to float64) with the windows at the indices
    ``missing`` NaN (in place where already float) and the ``window`` coordinate given."""
    arr = da.values
    if arr.dtype.kind != "f":
        arr = arr.astype(np.float64)
    if missing.size:
        np.moveaxis(arr, da.dims.index("window"), 0)[missing] = np.nan
    coords = {c: da.coords[c].variable for c in da.coords if c != "window"}
    return xr.DataArray(arr, dims=da.dims, coords={**coords, "window": window}, attrs=da.attrs)


def _analysis_attrs(params: dict, n: int, k_max: int, normalisation: str) -> dict:
    """The attrs of :func:`analyze`'s Dataset that record its parameters (``params``:
    analyze's keyword arguments), ``n`` snapshots, the T_spec fit's upper rank and the
    POD's normalisation."""
    return {
        "msapod_step": "analyze",
        "snapshot_dim": params["dim"],
        "n_snapshots": n,
        "omega0": params["omega0"],
        "scalogram_field": params["field"],
        "bias_correction": 1,
        "max_peaks": params["max_peaks"],
        "include_edges": int(params["include_edges"]),
        "window_centre_rule": str(params["centre"]),
        "window_width_rule": f"sigma = {params['width']:g} * a*",
        "n_modes": params["n_modes"],
        "criterion": params["criterion"],
        "fit_k_min": params["k_min"],
        "fit_k_max": k_max,
        "pod_normalisation": normalisation,
    }


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
    """H*(eps) and its at_rank_limit flag along a leading ``eps`` dim (as
    :func:`msapod.effective_rank` gives them, from one tail fraction for every eps)."""
    lam = spectrum.transpose(..., "rank")
    tail = tail_fraction(lam.values)
    H = np.stack([tail_rank(tail, e if criterion == "energy" else e**2) for e in eps_list])
    dims = ("eps", *lam.dims[:-1])
    coords = {"eps": np.asarray(eps_list, dtype=np.float64)}
    coords.update({d: spectrum.indexes[d] for d in lam.dims[:-1] if d in spectrum.indexes})
    return (
        xr.DataArray(H, dims=dims, coords=coords),
        xr.DataArray(H >= n - 1, dims=dims, coords=coords),
    )


def _labels(max_peaks: int) -> list[str]:
    return ["plain"] + [f"scale-{m + 1}" for m in range(max_peaks)]


def _window_array(lags, wp, peaks, max_peaks) -> xr.DataArray:
    """The windows: "plain" = 1, then one per peak (zero where a peak is missing)."""
    w_scale = lag_window(lags, wp["centre"].fillna(0.0), wp["width"].fillna(1.0))
    w_scale = w_scale.where(np.isfinite(peaks), 0.0)
    return _by_window(w_scale, 1.0, _labels(max_peaks))


def _lag_fluctuation(A, dim, mean) -> xr.DataArray:
    """The lag form of u = A - mean (for the coherency)."""
    u = A.astype(np.float64) - mean
    q, k = positions(A, "query", "A"), positions(A, "key", "A")
    return lag_form(u.transpose(dim, "query", "key"), q, k, is_causal(u))


def _by_window(da: xr.DataArray, plain, labels: list[str]) -> xr.DataArray:
    """Turn a per-``peak`` array into a per-``window`` one with "plain" first."""
    da = da.reset_coords(drop=True)
    first = xr.full_like(da.isel(peak=0, drop=True), plain).expand_dims(window=labels[:1])
    rest = da.rename(peak="window").assign_coords(window=labels[1:])
    return xr.concat([first, rest], dim="window")


def _by_window_1d(da: xr.DataArray, plain, labels: list[str]) -> xr.DataArray:
    """:func:`_by_window` of a 1-D per-``peak`` array, in numpy."""
    vals = np.asarray(da.values)
    arr = np.concatenate([np.full(1, plain, dtype=vals.dtype), vals])
    window = np.empty(len(labels), dtype=object)
    window[:] = labels
    return xr.DataArray(arr, dims="window", coords={"window": window})


def _dataset(arrays: dict[str, xr.DataArray]) -> xr.Dataset:
    """One Dataset of DataArrays that agree on their coordinates (each coordinate taken
    from the first array that has it, in the order the Dataset constructor gives
    DataArrays): no alignment."""
    pool = {}
    for da in arrays.values():
        for c in da.coords:
            pool.setdefault(c, da.coords[c].variable)
    coords = {}
    for da in arrays.values():
        for c in (*da.coords, *da.dims):
            if c in pool and c not in coords:
                coords[c] = pool[c]
    return xr.Dataset({k: da.variable for k, da in arrays.items()}, coords=coords)
