"""Morlet scalogram along the lag axis, dominant scales and cross-coherency.

Conventions (Torrence & Compo 1998, with unit lag step):

* Morlet mother wavelet ``psi0(eta) = pi^(-1/4) exp(i omega0 eta) exp(-eta^2 / 2)``.
* Transform of a lag profile r(tau) at scale a and position b (both in lags)::

      W(a, b) = sum_tau r(tau) a^(-1/2) conj(psi0((tau - b) / a))

  a direct sum over the lags that exist: the profile is zero-padded, never wrapped.
* Equivalent Fourier period ``lambda = 4 pi a / (omega0 + sqrt(2 + omega0^2))``
  (about 1.033 a for omega0 = 6).
* Scalogram ``E(a, b) = <|W_{s,i}(a, b)|^2>``, the mean over snapshots s and query rows i.
* Scale spectrum ``E(a) = (1/a) sum_b E(a, b)``: the 1/a rectification of Liu, Liang &
  Weisberg (2007) that removes the bias of the T&C normalisation towards large scales, so
  that a sinusoid of period P peaks at ``lambda = P`` (``bias_correction=False`` gives the
  plain sum).

Because ``|W|^2`` is a quadratic form in the profile, the ensemble mean only needs the
second-moment matrix of the lag profiles, ``C = <r r^T>`` (lag x lag, accumulated in
float64): ``E(a, b) = psi_ab^H C psi_ab``. No per-row transform is ever materialised.
The cross-coherency likewise uses ``sum_b W_i conj(W_j) = r_i^T M_a r_j`` with
``M_a = Phi_a^T conj(Phi_a)``, a low-rank Hermitian matrix per scale.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import xarray as xr

from ._io import check_int
from ._labels import check_omega0, check_scale_values, lead_coords, stack_leading
from .backends import kernels
from .fields import check_field, check_lazy, to_lag
from .lagstats import eig_desc, one_blas_thread

__all__ = [
    "DEFAULT_MIN_SCALE",
    "DEFAULT_NUM_SCALES",
    "OMEGA0",
    "coherency",
    "scale_centroid",
    "cwt",
    "dominant_scales",
    "fourier_period",
    "lag_moments",
    "local_maxima",
    "log_scales",
    "min_valid_scale",
    "morlet",
    "scalogram",
    "scalogram_energy",
    "wavelet_matrix",
]

#: The Morlet centre frequency omega0 of every transform unless one is given (Torrence &
#: Compo's choice: the wavelet's mean, about exp(-omega0^2 / 2) = 1.5e-8, is negligible).
OMEGA0 = 6.0

#: The default lower end of a scale grid (lags): about 1.5 times the sampling limit
#: :func:`min_valid_scale` at omega0 = 6 (1.94), so the finest scale spans three lags per
#: period and its spectrum is not shaped by the discrete sampling (the book's choice).
DEFAULT_MIN_SCALE = 3.0
#: Log-spaced scales of the default grid.
DEFAULT_NUM_SCALES = 48


def morlet(eta: np.ndarray, omega0: float = OMEGA0) -> np.ndarray:
    """Morlet mother wavelet ``pi^(-1/4) exp(i omega0 eta - eta^2 / 2)``."""
    omega0 = check_omega0(omega0)
    eta = np.asarray(eta, dtype=np.float64)
    return np.pi**-0.25 * np.exp(1j * omega0 * eta - 0.5 * eta**2)


def fourier_period(scale, omega0: float = OMEGA0):
    """Equivalent Fourier period ``4 pi a / (omega0 + sqrt(2 + omega0^2))`` of scale ``a``."""
    omega0 = check_omega0(omega0)
    return 4 * np.pi * check_scale_values(scale) / (omega0 + np.sqrt(2 + omega0**2))


def min_valid_scale(omega0: float = OMEGA0) -> float:
    """Smallest Morlet scale that the unit lag step resolves: ``a_min = 2 / (lambda / a)``.

    A scale whose equivalent Fourier period ``lambda(a)`` (:func:`fourier_period`) is
    shorter than two lags oscillates faster than the Nyquist limit of a unit lag step: its
    wavelet coefficients alias finer and coarser structure alike and carry no information
    about the scale. ``lambda(a) >= 2`` gives ``a >= 2 (omega0 + sqrt(2 + omega0^2)) /
    (4 pi)``, about 1.94 lags at omega0 = 6.
    """
    return float(2.0 / fourier_period(1.0, omega0))


def log_scales(
    n_lag: int,
    smin: float = DEFAULT_MIN_SCALE,
    smax: float | None = None,
    num: int = DEFAULT_NUM_SCALES,
) -> np.ndarray:
    """``num`` log-spaced scales from ``smin`` to ``smax`` (default n_lag / 2); scales
    below :func:`min_valid_scale` resolve nothing (:func:`scalogram` warns about them)."""
    num = check_int(num, "num", 2)
    note = ""
    if smax is None:
        if isinstance(n_lag, bool) or not isinstance(n_lag, int | np.integer) or n_lag < 1:
            raise ValueError(f"n_lag: expected a positive integer (lags), got {n_lag!r}")
        smax, note = n_lag / 2, f" (smax = n_lag / 2, n_lag = {n_lag})"
    if not 0 < smin < smax:
        raise ValueError(f"smin, smax: expected 0 < smin < smax, got {smin}, {smax}{note}")
    return np.geomspace(smin, smax, num)


def default_scales(n_lag: int) -> np.ndarray:
    """The default grid of a field with ``n_lag`` lags, with an error about the field (not
    about ``smin``/``smax``) when it is too short for the default lower scale."""
    if n_lag / 2 <= DEFAULT_MIN_SCALE:
        raise ValueError(
            f"field: {n_lag} lags are too few for the default scales (from "
            f"{DEFAULT_MIN_SCALE:g} to n_lag / 2 = {n_lag / 2:g}); use a field of more than "
            f"{int(2 * DEFAULT_MIN_SCALE)} lags or pass scales= explicitly"
        )
    return log_scales(n_lag)


def check_scales(scales, n_lag: int) -> np.ndarray:
    s = np.atleast_1d(np.asarray(scales, dtype=np.float64))
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scales: expected a non-empty 1-D sequence, got shape {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scales: expected finite values")
    if (s < 1).any() or (s > n_lag / 2).any():
        raise ValueError(
            f"scales: expected values in [1, {n_lag / 2:g}] (at least one lag, at most half "
            f"the {n_lag} lags so the wavelet fits the length), got {s.min():g}..{s.max():g}"
        )
    if (np.diff(s) <= 0).any():
        raise ValueError("scales: expected strictly increasing values")
    return s


def warn_unresolved(scales, omega0: float = OMEGA0) -> None:
    """``UserWarning`` if any scale is below :func:`min_valid_scale` (``omega0``)."""
    a_min = min_valid_scale(omega0)
    s = np.asarray(scales, dtype=np.float64)
    if (s < a_min - 1e-12).any():
        n_bad = int((s < a_min - 1e-12).sum())
        warnings.warn(
            f"scales: {n_bad} scale(s) below {a_min:.3g} lags (from {s.min():g}), whose Morlet "
            f"period at omega0 = {omega0:g} is under two lags: they resolve nothing at a unit "
            "lag step (see msapod.wavelets.min_valid_scale)",
            UserWarning,
            stacklevel=3,
        )


def wavelet_matrix(scales, lags, omega0: float = OMEGA0) -> np.ndarray:
    """``Phi[a, b, tau] = a^(-1/2) conj(psi0((tau - b) / a))``, shape (scale, b, tau).

    ``W = Phi @ r`` is then the direct-sum transform at positions ``b = lags``. The result
    is cached (read-only) for repeated calls with the same grid.
    """
    s = np.atleast_1d(check_scale_values(scales, "scales"))
    if not np.isfinite(s).all():
        raise ValueError("scales: expected finite values")
    lag = tuple(float(v) for v in np.atleast_1d(lags))
    return _wavelet_matrix(tuple(float(v) for v in s), lag, check_omega0(omega0))


@lru_cache(maxsize=8)
def _wavelet_matrix(scales: tuple, lags: tuple, omega0: float) -> np.ndarray:
    s = np.asarray(scales)
    lag = np.asarray(lags)
    eta = (lag[None, None, :] - lag[None, :, None]) / s[:, None, None]
    Phi = np.conj(morlet(eta, omega0)) / np.sqrt(s)[:, None, None]
    Phi.setflags(write=False)
    return Phi


@lru_cache(maxsize=8)
def wavelet_parts(scales: tuple, lags: tuple, omega0: float):
    """Real and imaginary parts of Phi flattened to (scale * b, tau), cached."""
    Phi = _wavelet_matrix(scales, lags, omega0).reshape(len(scales) * len(lags), len(lags))
    Pr, Pi = np.ascontiguousarray(Phi.real), np.ascontiguousarray(Phi.imag)
    Pr.setflags(write=False)
    Pi.setflags(write=False)
    return Pr, Pi


def scalogram_energy(C: np.ndarray, scales, lags, omega0: float = OMEGA0) -> np.ndarray:
    """Scalogram ``E(a, b) = psi_ab^H C psi_ab`` (scale, lag) of lag moments ``C``, at the
    positions ``b = lags`` (negative rounding clipped at 0)."""
    s = tuple(float(v) for v in np.atleast_1d(scales))
    lag = tuple(float(v) for v in np.atleast_1d(lags))
    Pr, Pi = wavelet_parts(s, lag, float(omega0))
    e = np.einsum("kt,kt->k", Pr @ C, Pr) + np.einsum("kt,kt->k", Pi @ C, Pi)
    return np.maximum(e, 0.0).reshape(len(s), len(lag))


def scale_spectrum_operator(scales, lags, omega0: float = OMEGA0) -> np.ndarray:
    """``M[a] = sum_b (Pr_ab Pr_ab^T + Pi_ab Pi_ab^T)`` flattened to (scale, lag * lag).

    The scale spectrum (before the bias correction) is the quadratic form
    ``sum_b E(a, b) = M[a] . vec(C)`` of the lag moments ``C = <r r^T>``: one matrix
    product per ensemble, or per jackknife replicate.
    """
    s = tuple(float(v) for v in np.atleast_1d(scales))
    lag = tuple(float(v) for v in np.atleast_1d(lags))
    Pr, Pi = wavelet_parts(s, lag, float(omega0))
    n_lag = len(lag)
    Pr3 = Pr.reshape(len(s), n_lag, n_lag)
    Pi3 = Pi.reshape(len(s), n_lag, n_lag)
    M = np.matmul(Pr3.transpose(0, 2, 1), Pr3) + np.matmul(Pi3.transpose(0, 2, 1), Pi3)
    return M.reshape(len(s), -1)


def _lag_field(A: xr.DataArray, name: str) -> xr.DataArray:
    """Accept either a (query, key) field or a (query, lag) field; return the lag form."""
    if not isinstance(A, xr.DataArray):
        raise TypeError(f"{name}: expected an xarray.DataArray, got {type(A).__name__}")
    if "lag" in A.dims:
        return check_lazy(A, name=name, dims=("query", "lag"), min_snapshots=None)
    return to_lag(check_lazy(A, name=name, dims=("query", "key"), min_snapshots=None))


def lag_moments(R: xr.DataArray, dims: Sequence[str] = ("snapshot", "query")) -> xr.DataArray:
    """Second-moment matrix of the lag profiles, ``C(tau, tau') = <r(tau) r(tau')>``.

    The mean runs over ``dims`` (default: snapshots and query rows); float64.
    Returns dims ``(..., "lag", "lag_")``, in memory. For dask-backed ``R`` the sum is
    accumulated chunk by chunk (one pass; ``lag`` is merged into one chunk).
    """
    check_lazy(R, name="R", dims=(*dims, "lag"), min_snapshots=None)
    lead = tuple(d for d in R.dims if d not in (*dims, "lag"))
    shape = tuple(R.sizes[d] for d in lead)
    C = kernels(R).lag_moments(R.transpose(*lead, *dims, "lag").data, len(dims))
    n_lag = C.shape[-1]
    lags = R["lag"].values
    out = xr.DataArray(
        C.reshape(shape + (n_lag, n_lag)),
        dims=(*lead, "lag", "lag_"),
        coords={**lead_coords(R, lead), "lag": lags, "lag_": lags},
    )
    out.attrs["averaged_over"] = list(dims)
    return out


def cwt(r: xr.DataArray, scales=None, omega0: float = OMEGA0) -> xr.DataArray:
    """Morlet transform ``W(..., scale, lag)`` (complex) of every lag profile in ``r``.

    ``r`` has a ``lag`` dim (e.g. from :func:`~msapod.fields.to_lag`); the transform is the
    exact direct sum over the existing lags. It holds one complex value per profile, scale
    and lag: use it on a few profiles; :func:`scalogram` needs no per-profile transform.
    For dask-backed ``r`` the result is lazy, chunked like ``r`` (``lag`` whole).
    """
    check_lazy(r, name="r", dims=("lag",), min_snapshots=None)
    lags = r["lag"].values
    omega0 = check_omega0(omega0)
    s = check_scales(default_scales(len(lags)) if scales is None else scales, len(lags))
    Phi = wavelet_matrix(s, lags, omega0)  # (S, B, T)
    rt = r.transpose(..., "lag")
    W, lead = kernels(r).cwt(rt.data, Phi), rt.dims[:-1]
    out = xr.DataArray(
        W,
        dims=(*lead, "scale", "lag"),
        coords={**lead_coords(r, lead), "scale": s, "lag": lags},
        attrs={"omega0": omega0, "long_name": "Morlet transform W(a, b)"},
    )
    return out.assign_coords(period=("scale", fourier_period(s, omega0)))


def scalogram(
    A: xr.DataArray,
    scales=None,
    omega0: float = OMEGA0,
    *,
    dims: Sequence[str] = ("snapshot", "query"),
    bias_correction: bool = True,
) -> xr.Dataset:
    """Ensemble-mean Morlet scalogram of the lag profiles (PAPER.md step 4).

    Parameters
    ----------
    A
        Field with dims ``(..., "snapshot", "query", "key")`` (converted with
        :func:`~msapod.fields.to_lag`) or already ``(..., "snapshot", "query", "lag")``.
        The attention ``A`` (as the paper writes the scalogram) or its fluctuation ``u``.
    scales
        Scales ``a`` in lags; default :func:`log_scales` of the lags. Scales below
        :func:`min_valid_scale` (period under two lags) are computed but raise a
        ``UserWarning``: their energy is aliased, so a maximum there means nothing.
    omega0
        Morlet centre frequency (:data:`OMEGA0`).
    dims
        Dims averaged over (snapshots and query rows).
    bias_correction
        Divide the scale spectrum by ``a`` (Liu et al. 2007).

    Returns
    -------
    xarray.Dataset
        ``energy(..., scale, lag)`` = E(a, b), ``spectrum(..., scale)`` = E(a), and
        ``period(scale)``.

    Notes
    -----
    Dask-backed ``A`` costs one pass over its chunks for the lag moments (plus one to
    detect causality for a ``(query, key)`` field; none for the lag form).
    """
    R = _lag_field(A, "A")
    for d in dims:
        if d not in R.dims:
            raise ValueError(f"dims: {d!r} is not a dim of A {R.dims}")
    lags = R["lag"].values
    n_lag = len(lags)
    omega0 = check_omega0(omega0)
    s = check_scales(default_scales(n_lag) if scales is None else scales, n_lag)
    warn_unresolved(s, omega0)
    C = lag_moments(R, dims)
    Cv, lead, shape = stack_leading(C, ("lag", "lag_"))
    E = np.stack([scalogram_energy(Cb, s, lags, omega0) for Cb in Cv])
    spec = E.sum(-1)
    if bias_correction:
        spec = spec / s
    spec_name = "scale spectrum E(a) = sum_b E(a, b)" + (" / a" if bias_correction else "")
    ds = xr.Dataset(
        {
            "energy": (
                (*lead, "scale", "lag"),
                E.reshape(shape + E.shape[1:]),
                {"long_name": "scalogram E(a, b) = <|W(a, b)|^2>", "omega0": omega0},
            ),
            "spectrum": (
                (*lead, "scale"),
                spec.reshape(shape + spec.shape[1:]),
                {"long_name": spec_name, "omega0": omega0},
            ),
        },
        coords={**lead_coords(R, lead), "scale": s, "lag": lags},
        attrs={
            "omega0": omega0,
            "averaged_over": list(dims),
            "bias_correction": int(bias_correction),
            "wavelet": "morlet",
            "normalisation": "Torrence & Compo 1998, unit lag step, direct sum (zero padding)",
        },
    )
    ds = ds.assign_coords(period=("scale", fourier_period(s, omega0)))
    ds["scale"].attrs = {"units": "lag (characters or tokens)", "long_name": "Morlet scale a"}
    ds["period"].attrs = {"units": "lag", "long_name": "equivalent Fourier period lambda"}
    return ds


def dominant_scales(
    spectrum: xr.DataArray, max_count: int = 3, *, include_edges: bool = True
) -> xr.DataArray:
    """Local maxima of the scale spectrum E(a), strongest first (PAPER.md step 4).

    Parameters
    ----------
    spectrum
        ``E(a)`` with a ``scale`` dim (leading dims are broadcast over).
    max_count
        At most this many maxima (the paper uses three).
    include_edges
        Count a maximum at the smallest or largest scale (a spectrum still rising at the
        end of the scale range); such peaks are flagged by the ``edge`` coordinate.

    Returns
    -------
    xarray.DataArray
        Dominant scales a*_m along a new dim ``peak`` (0 = strongest), with coords
        ``period``, ``peak_energy`` and ``edge``; NaN where fewer maxima exist.
    """
    if not isinstance(spectrum, xr.DataArray) or "scale" not in spectrum.dims:
        raise ValueError("spectrum: expected a DataArray with a 'scale' dim")
    max_count = check_int(max_count, "max_count", 1)
    check_field(spectrum, name="spectrum", dims=("scale",), min_snapshots=None)
    E, lead, shape = stack_leading(spectrum, ("scale",))
    s = spectrum["scale"].values.astype(np.float64)
    if "period" in spectrum.coords and spectrum["period"].dims == ("scale",) and s[0] > 0:
        # the spectrum's own period coordinate knows its omega0 (lambda / a is a constant)
        ratio = float(spectrum["period"].values[0]) / s[0]
    else:
        ratio = float(fourier_period(1.0, spectrum.attrs.get("omega0", OMEGA0)))
    out = np.full((E.shape[0], max_count), np.nan)
    energy = np.full_like(out, np.nan)
    edge = np.zeros(out.shape, dtype=bool)
    for b, e in enumerate(E):
        idx = peak_indices(e, max_count, include_edges)
        out[b, : len(idx)] = s[idx]
        energy[b, : len(idx)] = e[idx]
        edge[b, : len(idx)] = (idx == 0) | (idx == len(e) - 1)
    dims, full = (*lead, "peak"), shape + (max_count,)
    return xr.DataArray(
        out.reshape(full),
        dims=dims,
        coords={
            **lead_coords(spectrum, lead),
            "peak": np.arange(max_count),
            "period": (dims, (out * ratio).reshape(full)),
            "peak_energy": (dims, energy.reshape(full)),
            "edge": (dims, edge.reshape(full)),
        },
        name="dominant_scale",
        attrs={
            "units": "lag",
            "long_name": "dominant scale a*",
            "max_count": max_count,
            "include_edges": int(include_edges),
        },
    )


def local_maxima(e: np.ndarray, include_edges: bool = False) -> np.ndarray:
    """Where ``e (..., n)`` has a local maximum along its last axis: a boolean mask.

    Entry i is a maximum when ``e[i - 1] < e[i] >= e[i + 1]`` (a plateau counts once, at
    its first entry). With ``include_edges`` the ends count against a missing neighbour
    (``e[0] >= e[1]``, ``e[n - 1] > e[n - 2]``); otherwise they are never maxima. NaN
    entries are never maxima.
    """
    e = np.asarray(e, dtype=np.float64)
    pad = np.full(e.shape[:-1] + (1,), -np.inf)
    left = np.concatenate([pad, e[..., :-1]], axis=-1)
    right = np.concatenate([e[..., 1:], pad], axis=-1)
    peak = (e > left) & (e >= right)
    if not include_edges:
        peak[..., [0, -1]] = False
    return peak


def peak_indices(e: np.ndarray, max_count: int, include_edges: bool) -> np.ndarray:
    """Indices of the local maxima of one scale spectrum ``e`` (:func:`local_maxima`),
    strongest first, at most ``max_count`` (the kernel of :func:`dominant_scales`)."""
    peak = local_maxima(e, include_edges)
    if not np.ptp(e) > 0:  # a flat spectrum (e.g. no energy at all): no dominant scale
        peak[:] = False
    idx = np.flatnonzero(peak)
    return idx[np.argsort(-e[idx], kind="stable")][:max_count]


def coherency(
    A: xr.DataArray,
    scales,
    omega0: float = OMEGA0,
    *,
    dim: str = "snapshot",
    rtol: float = 1e-12,
) -> xr.DataArray:
    """Ensemble cross-coherency between query rows at each scale (PAPER.md step 8).

    ``gamma_ij(a) = |sum_s sum_b W_{s,i}(a,b) conj(W_{s,j}(a,b))|^2 /
    (sum_{s,b} |W_{s,i}|^2 sum_{s,b} |W_{s,j}|^2)``, in [0, 1] by Cauchy-Schwarz: 1 when
    rows i and j carry the same pattern at scale a (up to a factor), near 0 for
    independent ones. Rows without energy at that scale (e.g. the first query row of a
    causal fluctuation field, which is identically zero) give NaN.

    Parameters
    ----------
    A
        Field ``(..., dim, "query", "key")`` or ``(..., dim, "query", "lag")``.
    scales
        The scales a (lags) at which to evaluate; usually the dominant scales.
    rtol
        Eigenvalues of ``M_a`` below ``rtol * max`` are dropped (exactness to ~rtol).

    Returns
    -------
    xarray.DataArray
        ``gamma(..., scale, query_i, query_j)``. For dask-backed ``A`` the sums over
        snapshots are accumulated chunk by chunk.
    """
    if isinstance(rtol, bool) or not isinstance(rtol, int | float | np.number) or not 0 <= rtol < 1:
        raise ValueError(f"rtol: expected a number in [0, 1), got {rtol!r}")
    R = _lag_field(A, "A")
    if dim not in R.dims:
        raise ValueError(f"dim: {dim!r} is not a dim of A {R.dims}")
    # a NaN would only show as a NaN coherency, which also means "no energy": check first
    kernels(R).check_values(R.data, "A", stochastic=False, atol=0.0)
    lags = R["lag"].values
    s = check_scales(np.sort(np.atleast_1d(scales)), len(lags))
    q = R["query"].values
    Phi = wavelet_matrix(s, lags, omega0)
    lead = tuple(d for d in R.dims if d not in (dim, "query", "lag"))
    shape = tuple(R.sizes[d] for d in lead)
    with one_blas_thread():  # small eigenproblems: threads contend
        Bs = [_coherency_factor(Phi[k], rtol) for k in range(len(s))]
    gamma = np.empty((int(np.prod(shape, dtype=np.int64)), len(s), len(q), len(q)))
    kern = kernels(R)
    for b, ix in enumerate(np.ndindex(*shape)):
        one = R.isel(dict(zip(lead, ix, strict=True)))
        x = one.transpose(dim, "query", "lag").data
        for k, G in enumerate(kern.coherency_sums(x, Bs)):
            gamma[b, k] = _gamma(G)
    res = xr.DataArray(
        gamma.reshape(shape + gamma.shape[1:]),
        dims=(*lead, "scale", "query_i", "query_j"),
        coords={**lead_coords(R, lead), "scale": s, "query_i": q, "query_j": q},
        name="coherency",
        attrs={"omega0": omega0, "averaged_over": dim, "long_name": "cross-coherency gamma_ij(a)"},
    )
    return res.assign_coords(period=("scale", fourier_period(s, omega0)))


def scale_centroid(spectrum: xr.DataArray) -> xr.DataArray:
    """Energy-weighted geometric mean scale ``exp(sum_a E(a) log a / sum_a E(a))``.

    A robust "where the energy sits" summary of a scale spectrum: unlike the dominant
    scale it is defined when the spectrum has no interior maximum, and it moves
    continuously as energy shifts between fine and coarse scales. On log-spaced scales
    each scale bin carries equal weight in log a.
    """
    if not isinstance(spectrum, xr.DataArray) or "scale" not in spectrum.dims:
        raise ValueError("spectrum: expected a DataArray with a 'scale' dim")
    check_field(spectrum, name="spectrum", dims=("scale",), min_snapshots=None)
    if (spectrum < 0).any():
        raise ValueError("spectrum: expected non-negative energies")
    loga = np.log(spectrum["scale"])
    c = np.exp((spectrum * loga).sum("scale") / spectrum.sum("scale"))
    c.name = "scale_centroid"
    c.attrs = {"units": "lag", "long_name": "energy-weighted geometric mean scale"}
    return c


def _coherency_factor(Phi_k: np.ndarray, rtol: float) -> np.ndarray:
    """``B`` with ``M_a = Phi_a^T conj(Phi_a) = B B^H`` (eigenvalues below rtol dropped)."""
    M = Phi_k.T @ np.conj(Phi_k)  # (tau, tau') Hermitian PSD
    w, V = eig_desc(M)
    keep = w > rtol * w[0]
    return V[:, keep] * np.sqrt(w[keep])


def _gamma(G: np.ndarray) -> np.ndarray:
    """Coherency ``|G_ij|^2 / (G_ii G_jj)`` in [0, 1], NaN for rows without energy."""
    d = np.real(np.diag(G)).copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.abs(G) ** 2 / (d[:, None] * d[None, :])
    g[(d <= 0)[:, None] | (d <= 0)[None, :]] = np.nan
    return np.clip(g, 0.0, 1.0)
