"""The evidence every claim is decided on: per model and layer, every reading's numbers.

:func:`layer_evidence` measures one layer's ensemble under every reading of the
specification curve (:data:`AXES`), :func:`model_evidence` every layer of a zoo model
(cached); :mod:`msapod.studies.verdict` only decides and renders.

Speed: per model and layer the lag profiles are formed once; from them the per-snapshot
lag second-moment matrices ``S_s = sum_i r_{s,i} r_{s,i}^T`` (of u and of A) and the
per-lag Gram tensor ``G(tau)[s, s'] = sum_i u_s(i, i - tau) u_s'(i, i - tau)``. Every scale
grid and normalisation is a quadratic form of the moments with the Morlet operator
(:func:`msapod.wavelets.scale_spectrum_operator`; its leave-one-out replicates give the
jackknife), every window's Gram matrix is ``sum_tau w(tau)^2 G(tau) / N`` (eigenvalues:
T_spec and H*; mode k's lag energy ``w(tau)^2 xihat_k^T G(tau) xihat_k / (N lambda_k)``). One
model and layer is held in memory at a time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ... import lagstats
from ...decomposition import pod, reconstruction_error
from ...fields import check_field, to_lag
from ...lagstats import gram_pod, one_blas_thread
from ...models.data import N_SNAPSHOTS
from ...resampling import double_centre, jackknife, jackknife_error, leave_one_out_means
from ...spectra import effective_rank, rank_tolerance, spectral_concentration
from ...wavelets import (
    DEFAULT_MIN_SCALE,
    DEFAULT_NUM_SCALES,
    OMEGA0,
    fourier_period,
    local_maxima,
    log_scales,
    scale_spectrum_operator,
    scalogram_energy,
)
from ..registry import REGISTRY, WINDOW_AXES
from ..store.cache import cached_dataset, cached_fields
from .convergence import FIXED_K, NS
from .uncertainty import fractional_rank

__all__ = [
    "AXES",
    "EPS",
    "EVIDENCE_FORMAT",
    "JACKKNIFE_GROUPS",
    "BAND_VARS",
    "COARSE_MIN",
    "FINE_MAX",
    "SLOPE_RANGE",
    "STATED",
    "WINDOW_SE_VARS",
    "band_shares",
    "evidence_parts",
    "fields_evidence",
    "global_peak",
    "interior_peak",
    "layer_evidence",
    "model_evidence",
    "needs_window_se",
    "scale_reading",
    "spectrum_slope",
    "theorem1_check",
    "with_window_se",
]

#: C4: the paper's lag range (characters) of the scale-selective modes of layers 2, 4, 6.
PAPER_LAGS = dict(REGISTRY["C4"].stated["lags"])

#: C1's fine band (a <= FINE_MAX) and C2's coarse band (a >= COARSE_MIN) of the scale
#: spectrum, and the range of scales (lags) its log-log slope is fitted over.
FINE_MAX = REGISTRY["C1"].stated["scale"]
COARSE_MIN = REGISTRY["C2"].stated["scale"]
SLOPE_RANGE = tuple(REGISTRY["C2"].stated["slope_range"])
#: The band statistics of the scale spectrum (C1, C2), each with its ``<name>_se``.
BAND_VARS = ("fine_share", "coarse_share", "scale_slope")

#: The numbers of the registry the evidence measures against (part of its cache key: an
#: edited claim scale or lag range is a new key).
STATED = {
    "fine_max": FINE_MAX,
    "coarse_min": COARSE_MIN,
    "slope_range": list(SLOPE_RANGE),
    "paper_lags": {str(k): list(v) for k, v in PAPER_LAGS.items()},
}

#: Version of :func:`model_evidence`'s output; part of its cache key.
EVIDENCE_FORMAT = 3
#: Groups of the delete-group jackknife of C4's shares and C9's ratios (15 snapshots
#: each at N = 150); intervals from it use Student-t with ``JACKKNIFE_GROUPS - 1`` df.
JACKKNIFE_GROUPS = 10
#: The H* tolerance the paper states (C5's "H*(0.10)").
EPS = REGISTRY["C5"].stated["eps"]

#: Readings per axis (the main specification's value first).
AXES: dict[str, tuple] = {
    "field": ("A", "u"),
    "normalisation": ("rectified", "raw"),
    "scale_min": (int(DEFAULT_MIN_SCALE), 2, 4),
    "scale_stat": ("peak", "argmax", "centroid"),
    "c4_window": ("range", "dominant scale"),
    "centre": ("energy-max", "period"),
    "width": (1.0, 0.5, 2.0),
    "criterion": ("energy", "l2"),
    "n": (N_SNAPSHOTS, NS[-1]),
    "fit": ("default", "fixed"),
}


# ---------------------------------------------------------------------------------------
# the dominant scale of a scale spectrum


def interior_peak(spectrum: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Strongest interior local maximum of ``spectrum(..., scale)``, NaN if none.

    A maximum at the first or last scale is an edge, not a peak. The location is refined
    by a parabola through the three points around it in ``log a`` (so it moves
    continuously, which its jackknife standard error needs).
    """
    E = np.asarray(spectrum, dtype=np.float64)
    s = np.log(np.asarray(scales, dtype=np.float64))
    score = np.where(local_maxima(E), E, -np.inf)[..., 1:-1]
    k = np.argmax(score, axis=-1)
    has = np.isfinite(np.take_along_axis(score, k[..., None], -1)[..., 0])
    i = k + 1
    y0, y1, y2 = (np.take_along_axis(E, (i + d)[..., None], -1)[..., 0] for d in (-1, 0, 1))
    h = s[1] - s[0] if s.size > 1 else 1.0
    den = y0 - 2 * y1 + y2
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = np.where(den < 0, 0.5 * (y0 - y2) / den, 0.0)
    # uniform log grid assumed for the refinement (the grids here are log-spaced)
    loga = s[np.clip(i, 0, s.size - 1)] + np.clip(shift, -0.5, 0.5) * h
    return np.where(has, np.exp(loga), np.nan)


def global_peak(spectrum: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Global maximum of ``spectrum(..., scale)``, edges included; refined like
    :func:`interior_peak` when interior, the grid's end scale when at an edge."""
    E = np.asarray(spectrum, dtype=np.float64)
    s = np.asarray(scales, dtype=np.float64)
    k = np.argmax(E, axis=-1)
    inner = (k > 0) & (k < s.size - 1)
    one = np.where(
        np.abs(np.arange(s.size) - k[..., None]) <= 1, E, np.min(E, axis=-1, keepdims=True)
    )
    refined = interior_peak(one, s) if s.size > 2 else np.full(k.shape, np.nan)
    return np.where(inner & np.isfinite(refined), refined, s[k])


def scale_reading(
    spectrum: np.ndarray, scales: np.ndarray, kind: str = "peak"
) -> tuple[np.ndarray, np.ndarray]:
    """The dominant scale of ``spectrum(..., scale)`` under one reading, with its edge side.

    Parameters
    ----------
    kind
        ``"peak"``: the strongest interior local maximum a* when there is one, otherwise a
        bound at the edge where the spectrum is largest; ``"argmax"``: the global maximum,
        edges included (a bound when at an edge).

    Returns
    -------
    value, edge
        The scale (lags) and ``edge``: 0 interior, -1 below the grid (a* <= a_min, the
        value is a_min), +1 above it (a* >= a_max, the value is a_max).
    """
    E = np.asarray(spectrum, dtype=np.float64)
    s = np.asarray(scales, dtype=np.float64)
    if kind not in ("peak", "argmax"):
        raise ValueError(f"kind: expected 'peak' or 'argmax', got {kind!r}")
    k = np.argmax(E, axis=-1)
    side = np.where(k == 0, -1, np.where(k == s.size - 1, 1, 0))
    if kind == "argmax":
        return global_peak(E, s), side
    v = interior_peak(E, s)
    inner = np.isfinite(v)
    # no interior maximum: the spectrum is monotone, its maximum at one edge
    edge = np.where(inner, 0, np.where(side == 0, np.where(E[..., 0] >= E[..., -1], -1, 1), side))
    bound = np.where(edge < 0, s[0], s[-1])
    return np.where(inner, v, bound), edge


def band_shares(
    spectrum: np.ndarray,
    scales: np.ndarray,
    fine_max: float = FINE_MAX,
    coarse_min: float = COARSE_MIN,
) -> tuple[np.ndarray, np.ndarray]:
    """The shares of a scale spectrum's energy at fine and at coarse scales.

    On the log-spaced grid a sum over scales is (up to the constant step) the integral
    :math:`\\int E(a)\\, d\\ln a`, so the shares do not depend on the grid's density.

    Parameters
    ----------
    spectrum
        :math:`E(a)` along the last axis (non-negative).
    scales
        The scales :math:`a` (lags) of that axis.
    fine_max, coarse_min
        The bands :math:`a \\le` ``fine_max`` (C1) and :math:`a \\ge` ``coarse_min`` (C2).

    Returns
    -------
    fine, coarse
        :math:`\\sum_{a \\le a_f} E(a) / \\sum_a E(a)` and likewise for
        :math:`a \\ge a_c`, in [0, 1]; NaN where the spectrum has no energy.
    """
    E = np.maximum(np.asarray(spectrum, dtype=np.float64), 0.0)
    s = np.asarray(scales, dtype=np.float64)
    if s.ndim != 1 or s.size != E.shape[-1]:
        raise ValueError(f"scales: expected one scale per spectrum value, got {s.shape}")
    total = E.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fine = np.where(total > 0, E[..., s <= fine_max].sum(-1) / total, np.nan)
        coarse = np.where(total > 0, E[..., s >= coarse_min].sum(-1) / total, np.nan)
    return fine, coarse


def spectrum_slope(
    spectrum: np.ndarray,
    scales: np.ndarray,
    scale_range: tuple[float, float] = SLOPE_RANGE,
    min_points: int = 3,
) -> np.ndarray:
    """Least-squares slope :math:`p` of :math:`\\ln E(a) = p \\ln a + c` over the scales
    of the grid inside ``scale_range`` (a power law :math:`E(a) \\propto a^p` has slope
    :math:`p`; a larger slope puts more energy at coarse scales).

    Returns NaN where fewer than ``min_points`` scales fall in the range or the spectrum
    is not positive there.
    """
    E = np.asarray(spectrum, dtype=np.float64)
    s = np.asarray(scales, dtype=np.float64)
    lo, hi = scale_range
    if not 0 < lo < hi:
        raise ValueError(f"scale_range: expected 0 < low < high, got {scale_range}")
    inside = (s >= lo * (1 - 1e-9)) & (s <= hi * (1 + 1e-9))
    if inside.sum() < min_points:
        return np.full(E.shape[:-1], np.nan)
    x = np.log(s[inside])
    x = x - x.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.log(np.where(E[..., inside] > 0, E[..., inside], np.nan))
    return (y * x).sum(-1) / (x**2).sum()


# ---------------------------------------------------------------------------------------
# per layer: moments, Gram tensor, everything derived from them


def _grid(scale_min: float, n_lag: int) -> np.ndarray:
    """The scale grid from ``scale_min`` to half the lags."""
    return log_scales(n_lag, float(scale_min), n_lag / 2, DEFAULT_NUM_SCALES)


_OPERATORS: dict = {}


def _operator(scale_min: float, lags: np.ndarray, omega0: float) -> np.ndarray:
    """Morlet scale-spectrum operator ``M (scale, lag * lag)`` of one grid (memoised)."""
    key = (float(scale_min), len(lags), float(lags[0]), float(omega0))
    if key not in _OPERATORS:
        if len(_OPERATORS) > 6:
            _OPERATORS.clear()
        _OPERATORS[key] = scale_spectrum_operator(_grid(scale_min, len(lags)), lags, omega0)
    return _OPERATORS[key]


def _centroid(spec: np.ndarray, s: np.ndarray) -> np.ndarray:
    w = np.maximum(spec, 0.0)
    return np.exp((w * np.log(s)).sum(-1) / w.sum(-1))


def _interior_peaks(spec: np.ndarray, s: np.ndarray, k: int = 3) -> list[float]:
    """Up to ``k`` interior local maxima of one spectrum, strongest first (refined)."""
    idx = np.flatnonzero(local_maxima(spec))
    idx = idx[np.argsort(-spec[idx], kind="stable")][:k]
    near = np.abs(np.arange(spec.size) - idx[:, None]) <= 1  # (peak, scale): its 3 points
    return [float(v) for v in interior_peak(np.where(near, spec, 0.0), s)]


def _spread(spec: np.ndarray, s: np.ndarray) -> float:
    """Standard deviation of log a under a (non-negative) scale spectrum."""
    w = np.maximum(spec, 0.0)
    if not w.sum() > 0:
        return np.nan
    la = np.log(s)
    m = (w * la).sum() / w.sum()
    return float(np.sqrt((w * (la - m) ** 2).sum() / w.sum()))


def _on_grid(spec: np.ndarray, gi: int, s: np.ndarray, rectified: bool) -> np.ndarray:
    """Grid ``gi``'s part (scales ``s``) of a spectrum over every grid (the rows of
    ``M_up``), times 1/a when ``rectified``."""
    part = spec[..., gi * DEFAULT_NUM_SCALES : (gi + 1) * DEFAULT_NUM_SCALES]
    return part * (1.0 / s) if rectified else part


def _c9_ratio(window_spec, plain_spec, gi: int, s: np.ndarray, rectified: bool) -> float:
    """C9's ratio: the scale spread of a window's mode 1 over the plain mode 1's."""
    window, plain = (_on_grid(x, gi, s, rectified) for x in (window_spec, plain_spec))
    return _spread(window, s) / _spread(plain, s)


def _count_peaks(e: np.ndarray, lags: np.ndarray, lo: float, hi: float) -> int:
    """Local maxima of a lag-energy profile inside ``[lo, hi]`` above 10 % of its top."""
    inside = (lags >= lo) & (lags <= hi)
    x = e[inside]
    if x.size < 3 or not x.max() > 0:
        return 0
    return int((local_maxima(x) & (x >= 0.1 * x.max())).sum())


def _window_modes(G, Xu, lags, keys, need, M_up) -> dict:
    """Leading mode of every window ``(centre, sigma)`` in ``keys``, batched: one product
    with the Gram tensor gives every windowed Gram matrix, one more every mode's lag
    energy; C9 reads the scale spectra of the windows in ``need``."""
    W = lagstats.gaussian_windows(lags, [k[0] for k in keys], [k[1] for k in keys])
    with one_blas_thread():  # small eigenproblems: threads contend
        V = gram_pod(lagstats.window_grams(G, W), 1).vectors[..., 0].T
    E = lagstats.mode_lag_energy(G, W, V)
    return {"energy": E, "spectra": _mode_spectra(V, Xu, W, need, M_up)}


def _mode_spectra(V, X, W, cols, M_up) -> dict:
    """Per column ``c`` of ``cols``, the scale spectrum (``M_up`` on the upper triangle of
    ``phi^T phi``) of the windowed mode ``phi = W[c] sum_s V[s, c] X_s``."""
    n, q, n_lag = X.shape
    Phi = V[:, cols].T @ X.reshape(n, -1)  # (k, Q * L)
    return {
        c: M_up @ lagstats.snapshot_moments(Phi[t].reshape(1, q, n_lag) * W[c], upper=True)[0]
        for t, c in enumerate(cols)
    }


def _window_jackknife(G, Xu, lags, keys, c4_key, c9_key, M_up, grids, rectified):
    """Delete-group jackknife SEs ``(share_se, diff_se, ratio_se)`` of C4's share s, of
    s - b and of C9's ratio D, shaped like ``c4_key`` and ``c9_key`` (NaN where a case has
    no window, key -1), each window held at its full-ensemble choice; without each of the
    :data:`JACKKNIFE_GROUPS` contiguous groups the Reynolds mean is re-estimated (``J G J``).
    """
    n_lag, n, _ = G.shape
    groups = JACKKNIFE_GROUPS
    used = sorted({int(j) for key in (c4_key, c9_key) for j in key.ravel() if j >= 0})
    s_rep, d_rep = (np.full((groups, *c4_key.shape), np.nan) for _ in range(2))
    r_rep = np.full((groups, *c9_key.shape), np.nan)
    if not used or n < 2 * groups:
        return jackknife_error(s_rep), jackknife_error(d_rep), jackknife_error(r_rep)
    pos = {j: i for i, j in enumerate(used)}
    W = lagstats.gaussian_windows(lags, [keys[j][0] for j in used], [keys[j][1] for j in used])
    Wp = np.vstack([W, np.ones(n_lag)])  # the last: no window (C9's plain mode)
    inside = np.array([(lags >= lo) & (lags <= hi) for lo, hi in PAPER_LAGS.values()]).T
    has4 = c4_key >= 0
    k4 = np.vectorize(lambda j: pos.get(int(j), 0))(c4_key)
    r4 = np.broadcast_to(np.arange(c4_key.shape[-1]), c4_key.shape)
    c9_cases = [(ix, pos[int(j)]) for ix, j in np.ndenumerate(c9_key) if j >= 0]
    c9_cols = sorted({c for _, c in c9_cases})
    for b, drop in enumerate(np.array_split(np.arange(n), groups)):
        keep = np.setdiff1d(np.arange(n), drop)
        Gk = double_centre(G[:, keep][:, :, keep])  # the kept fluctuations: J G(tau) J
        with one_blas_thread():
            V = gram_pod(lagstats.window_grams(Gk, Wp), 1).vectors[..., 0].T
        E = lagstats.mode_lag_energy(Gk, Wp[:-1], V[:, :-1])
        share = E @ inside  # (window, range)
        w2e = W**2 * np.einsum("tss->t", Gk)[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            base = (w2e @ inside) / w2e.sum(1, keepdims=True)
        s_rep[b] = np.where(has4, share[k4, r4], np.nan)
        d_rep[b] = np.where(has4, share[k4, r4] - base[k4, r4], np.nan)
        if c9_cases:
            Xc = Xu[keep] - Xu[keep].mean(0, keepdims=True)
            spec = _mode_spectra(V, Xc, Wp, [*c9_cols, len(W)], M_up)
            del Xc
            for ix, c in c9_cases:
                gi, ni = ix[2], ix[1]
                r_rep[b][ix] = _c9_ratio(spec[c], spec[len(W)], gi, grids[gi], rectified[ni])
    return jackknife_error(s_rep), jackknife_error(d_rep), jackknife_error(r_rep)


def layer_evidence(
    A: xr.DataArray,
    *,
    dim: str = "snapshot",
    omega0: float = OMEGA0,
    theorem1: bool = False,
    axes: dict | None = None,
    window_se: bool = True,
) -> xr.Dataset:
    """Every number the claims need from one layer's ensemble, under every reading.

    Parameters
    ----------
    A
        Attention fields of one layer ``(dim, "query", "key")``, causal, N >= 3.
    omega0
        Morlet centre frequency.
    theorem1
        Also run the Theorem 1 check (C10) on this layer's fluctuations.
    axes
        The readings to compute, per axis (default :data:`AXES`); the curve's text nulls
        pass ``verdict.study.MAIN_AXES``, the default reading of the window axes.
    window_se
        Also the delete-group jackknife of C4 and C9 (the costliest part); False leaves
        the variables of :data:`WINDOW_SE_VARS` NaN.

    Returns
    -------
    xarray.Dataset
        With dims ``field``, ``normalisation``, ``scale_min``, ``scale_stat``,
        ``centre``, ``width``, ``fit``, ``criterion``, ``peak``: ``scale_stat_value`` and
        ``scale_stat_se`` (the dominant-scale reading of C1, C2); ``fine_share``,
        ``coarse_share``, ``scale_slope`` with their ``_se`` (C1, C2:
        :func:`band_shares`, :func:`spectrum_slope`); ``energy``, ``energy_se`` (C7); ``T_spec``,
        ``T_spec_se`` (fit), ``H_star``, ``H_star_se`` (criterion) of the plain POD at
        this N (C3, C5, C8); ``a_star(..., peak)``, ``c4_share``, ``c4_reach``,
        ``c4_peaks`` (C4 in the windows of the dominant scales); ``c4_range_share``,
        ``c4_range_base``, ``c4_range_peaks`` (``width``, ``paper_layer``: C4 in windows
        placed on the paper's lags, :func:`_range_windows`); ``c9_ratio`` (C9);
        ``spectrum`` (plain POD); optionally
        ``t1_gap``, ``t1_beaten``.
    """
    check_field(A, name="A", dims=(dim, "query", "key"), snapshot_dim=dim, min_snapshots=3)
    AX = AXES if axes is None else {**AXES, **axes}
    extra = [d for d in A.dims if d not in (dim, "query", "key")]
    if extra:
        raise ValueError(f"A: expected one layer (dims {dim}, query, key), got extra {extra}")
    A = A.transpose(dim, "query", "key").astype(np.float64)
    RA = to_lag(A)
    XA = np.ascontiguousarray(RA.values)  # (N, Q, L)
    ctx = _layer_context(A, RA["lag"].values, AX, omega0)
    Xu = XA - XA.mean(0, keepdims=True)
    scale = _scale_readings(ctx, XA, Xu)
    del XA
    G = lagstats.lag_gram_tensor(Xu, causal_rows=ctx.square)  # (L, N, N): per-lag Gram tensor of u
    plain = _plain_pod(ctx, G)
    win = _window_readings(ctx, G, Xu, scale, plain["V"][:, 0])
    se = {k: np.full(np.shape(win[like]), np.nan) for k, like in WINDOW_SE_VARS.items()}
    if window_se:
        rectified = [n == "rectified" for n in AX["normalisation"]]
        grids = [ctx.grids[g] for g in AX["scale_min"]]
        args = (ctx.M_up, grids, rectified)
        got = _window_jackknife(G, Xu, ctx.lags, win["keys"], win["c4_key"], win["c9_key"], *args)
        se.update(zip(("c4_share_se", "c4_diff_se", "c9_ratio_se"), got, strict=True))
        no_c9 = np.full(1, -1)
        got = _window_jackknife(G, Xu, ctx.lags, win["keys"], win["c4_range_key"], no_c9, *args)
        se.update(c4_range_share_se=got[0], c4_range_diff_se=got[1])
    ds = _evidence_dataset(ctx, scale, plain, win, se)
    t1 = theorem1_check(A - A.mean(dim), dim=dim) if theorem1 else (np.nan,) * 3
    for name, value in zip(("t1_gap", "t1_beaten", "t1_trials"), t1, strict=True):
        ds[name] = float(value)
    ds.attrs = {
        "n_snapshots": ctx.n,
        "omega0": omega0,
        "n_windows": len(win["keys"]),
        "jackknife_groups": JACKKNIFE_GROUPS,
    }
    return ds


@dataclass(frozen=True)
class _LayerContext:
    """What every part of :func:`layer_evidence` shares: the readings ``AX``, the lags,
    the scale grids and the Morlet operator on the upper triangle of the lag moments
    (``M_up``, rows: every grid's scales in turn), ``n`` snapshots of ``q`` queries, and
    whether the fields are square causal (``square``: query i has lags 0..i)."""

    AX: dict
    lags: np.ndarray
    grids: dict
    M_up: np.ndarray
    n: int
    q: int
    square: bool
    omega0: float


def _layer_context(A: xr.DataArray, lags: np.ndarray, AX: dict, omega0: float) -> _LayerContext:
    """The :class:`_LayerContext` of one layer ``A (snapshot, query, key)`` in lag form."""
    n, q = A.shape[0], A.shape[1]
    n_lag = len(lags)
    grids = {g: _grid(g, n_lag) for g in AX["scale_min"]}
    okey = ("up", tuple(AX["scale_min"]), n_lag, float(lags[0]), float(omega0))
    if okey not in _OPERATORS:
        M_all = np.concatenate([_operator(g, lags, omega0) for g in AX["scale_min"]])
        _OPERATORS[okey] = lagstats.upper_operator(M_all, n_lag)
    M_up = _OPERATORS[okey]
    qpos, kpos = A["query"].values, A["key"].values
    square = bool(
        lags[0] == 0
        and len(lags) == q
        and np.array_equal(qpos, kpos)
        and np.array_equal(qpos, np.arange(q))
    )
    return _LayerContext(AX, lags, grids, M_up, n, q, square, omega0)


def _scale_readings(ctx: _LayerContext, XA: np.ndarray, Xu: np.ndarray) -> dict:
    """C1, C2 and C7's numbers: per field (A, u), grid and normalisation the scale
    spectrum, its statistics and energy with their delete-one jackknife; also the lag
    moments ``C`` and spectra each field's windows start from."""
    AX, n, q = ctx.AX, ctx.n, ctx.q
    shape = tuple(len(AX[a]) for a in ("field", "normalisation", "scale_min", "scale_stat"))
    out = {
        "value": np.full(shape, np.nan),
        "se": np.full(shape, np.nan),
        "edge": np.zeros(shape, dtype=np.int8),
        **{k: np.full(shape[:3], np.nan) for v in ("energy", *BAND_VARS) for k in (v, f"{v}_se")},
        "C": {},
        "spectra": {},
    }
    for fi, f in enumerate(AX["field"]):
        X = Xu if f == "u" else XA
        S = lagstats.snapshot_moments(X, upper=True, causal_rows=ctx.square)
        P = S @ ctx.M_up.T  # (N, grids * scales)
        out["C"][f] = lagstats.from_upper(S.sum(0) / (n * q), len(ctx.lags))
        del S
        full = P.sum(0) / (n * q)
        rep = leave_one_out_means(P, q, mean_removed=f == "u")  # u: the mean re-estimated
        for gi, g in enumerate(AX["scale_min"]):
            s = ctx.grids[g]
            for ni, norm in enumerate(AX["normalisation"]):
                sp, sp_rep = (_on_grid(x, gi, s, norm == "rectified") for x in (full, rep))
                out["spectra"][f, norm, g] = sp
                _scale_statistics(out, (fi, ni, gi), sp, sp_rep, s, AX["scale_stat"])
                _band_statistics(out, (fi, ni, gi), sp, sp_rep, s)
                out["energy"][fi, ni, gi] = sp.sum()
                out["energy_se"][fi, ni, gi] = jackknife_error(sp_rep.sum(-1))
    return out


def _scale_statistics(out: dict, ix: tuple, sp, sp_rep, s, stats) -> None:
    """Each scale statistic of one spectrum ``sp`` (replicates ``sp_rep``) into ``out``
    at ``ix``: value, edge side and jackknife SE (NaN at an edge)."""
    for ti, st in enumerate(stats):
        if st == "centroid":
            v, vr, side = _centroid(sp, s), _centroid(sp_rep, s), 0
        else:
            v, side = scale_reading(sp, s, st)
            vr, side_r = scale_reading(sp_rep, s, st)
            vr = np.where(side_r == 0, vr, np.nan)  # an edge replicate: no value
        out["value"][ix + (ti,)] = v
        out["edge"][ix + (ti,)] = side
        out["se"][ix + (ti,)] = jackknife_error(vr) if side == 0 else np.nan


def _band_statistics(out: dict, ix: tuple, sp, sp_rep, s) -> None:
    """C1's and C2's :data:`BAND_VARS` of one spectrum ``sp`` (delete-one replicates
    ``sp_rep``) with their jackknife SEs into ``out`` at ``ix``."""
    fine, coarse = band_shares(np.vstack([sp, sp_rep]), s)
    slope = spectrum_slope(np.vstack([sp, sp_rep]), s)
    for name, v in zip(BAND_VARS, (fine, coarse, slope), strict=True):
        out[name][ix] = v[0]
        out[f"{name}_se"][ix] = jackknife_error(v[1:])


def _plain_pod(ctx: _LayerContext, G: np.ndarray) -> dict:
    """C3, C5 and C8's numbers: the plain POD (eigenvalues ``lam``, temporal vectors
    ``V``) of the Gram tensor ``G``, T_spec per fit and H* per criterion with their
    delete-one jackknife SEs (of the fractional H*, :func:`fractional_rank`; every
    replicate's T_spec fit up to the whole ensemble's N/2)."""
    n = ctx.n
    K = lagstats.window_grams(G, np.ones(len(ctx.lags)))
    got = gram_pod(K, 1)
    spec_da = xr.DataArray(got.eigenvalues, dims="rank")
    fixed = (FIXED_K[0], min(FIXED_K[1], (n - 1) // 2))  # small test ensembles: clipped
    fits = ((1, n // 2), fixed)
    T = np.array([float(spectral_concentration(spec_da, *k)["T_spec"]) for k in fits])
    H = np.array(
        [float(effective_rank(spec_da, EPS, c, n_snapshots=n)) for c in ctx.AX["criterion"]]
    )
    tols = [rank_tolerance(EPS, c) for c in ctx.AX["criterion"]]

    def statistics(lam):
        da = xr.DataArray(lam, dims=("boot", "rank"))
        T_rep = [spectral_concentration(da, *k)["T_spec"].values for k in fits]
        return np.column_stack([*T_rep, *(fractional_rank(lam, t) for t in tols)])

    _, se = jackknife(K, statistics)
    lam, V = got.eigenvalues, got.vectors
    return {"lam": lam, "V": V, "T": T, "T_se": se[:2], "H": H, "H_se": se[2:]}


def _window_plan(ctx: _LayerContext, scale: dict) -> tuple[list, np.ndarray]:
    """Every window of every reading: ``[(ix, m, a, c, key)]`` with ``ix`` the reading's
    index along :data:`WINDOW_AXES`, ``m`` the peak's rank, ``a`` the dominant scale,
    ``c`` the window centre and ``key`` = (centre, sigma) rounded; and ``a_star``
    (field, normalisation, scale_min, scale_stat, peak)."""
    AX, lags = ctx.AX, ctx.lags

    def energy_max_lag(f: str, a: float) -> float:
        E_b = scalogram_energy(scale["C"][f], [a], lags, ctx.omega0)[0]
        return float(lags[int(np.argmax(E_b))])

    a_star = np.full(scale["value"].shape + (3,), np.nan)
    plan = []
    for fi, f in enumerate(AX["field"]):
        for ni, norm in enumerate(AX["normalisation"]):
            for gi, g in enumerate(AX["scale_min"]):
                s, sp = ctx.grids[g], scale["spectra"][f, norm, g]
                for ti, st in enumerate(AX["scale_stat"]):
                    if st == "centroid":
                        stars = [float(_centroid(sp, s))]
                    elif st == "argmax":
                        stars = [float(global_peak(sp, s))]
                    else:
                        stars = _interior_peaks(sp, s)
                    a_star[fi, ni, gi, ti, : len(stars)] = stars
                    for ci, cr in enumerate(AX["centre"]):
                        cs = [
                            energy_max_lag(f, a)
                            if cr == "energy-max"
                            else float(fourier_period(a, ctx.omega0))
                            for a in stars
                        ]
                        for wi, k in enumerate(AX["width"]):
                            for m, (a, c) in enumerate(zip(stars, cs, strict=True)):
                                key = (round(c, 9), round(k * a, 9))
                                plan.append(((fi, ni, gi, ti, ci, wi), m, a, c, key))
    return plan, a_star


def _window_readings(ctx, G, Xu, scale: dict, v_plain: np.ndarray) -> dict:
    """C4 and C9's numbers: every window's mode 1 (batched, :func:`_window_modes`), per
    reading and paper range the best window's share ``c4_share`` (one that reaches the
    range first, then the largest share), the window alone's ``c4_base``, ``c4_reach``,
    ``c4_peaks``, the window index ``c4_key``; per reading C9's ratio ``c9_ratio`` of
    the first peak's window (index ``c9_key``); ``a_star`` and the window ``keys``."""
    AX, lags = ctx.AX, ctx.lags
    plan, a_star = _window_plan(ctx, scale)
    on_range = _range_windows(AX["width"])
    keys = list(dict.fromkeys([*(p[-1] for p in plan), *(w[-1] for w in on_range)]))
    index = {key: i for i, key in enumerate(keys)}
    need = sorted({index[p[-1]] for p in plan if p[1] == 0})
    modes = _window_modes(G, Xu, lags, keys, need, ctx.M_up)
    phi = np.tensordot(v_plain, Xu, axes=(0, 0))  # plain mode 1 (Q, L)
    plain_spec = ctx.M_up @ lagstats.snapshot_moments(phi[None], upper=True)[0]
    shape_w = tuple(len(AX[a]) for a in WINDOW_AXES)
    shape_r = (len(AX["width"]), len(PAPER_LAGS))
    out = {
        **{k: np.full(shape_w + (3,), np.nan) for k in ("c4_share", "c4_base", "c4_peaks")},
        "c4_reach": np.zeros(shape_w + (3,), dtype=bool),
        "c4_key": np.full(shape_w + (3,), -1),
        "c9_ratio": np.full(shape_w, np.nan),
        "c9_key": np.full(shape_w, -1),
        **{f"c4_range_{k}": np.full(shape_r, np.nan) for k in ("share", "base", "peaks")},
        "c4_range_key": np.full(shape_r, -1),
        "a_star": a_star,
        "keys": keys,
    }
    lag_e = np.einsum("tss->t", G)  # per-lag energy of u: the window alone's lag profile
    for ix, m, _a, c, key in plan:
        fi, ni, gi, ti, ci, wi = ix
        j = index[key]
        if m == 0:
            s, rectified = ctx.grids[AX["scale_min"][gi]], AX["normalisation"][ni] == "rectified"
            out["c9_ratio"][ix] = _c9_ratio(modes["spectra"][j], plain_spec, gi, s, rectified)
            out["c9_key"][ix] = j
        _c4_cases(out, ix, j, c, key[1], modes["energy"][j], lags, lag_e)
    for wi, r, (c, sigma) in on_range:
        lo, hi = list(PAPER_LAGS.values())[r]
        inside = (lags >= lo) & (lags <= hi)
        e = modes["energy"][index[(c, sigma)]]
        out["c4_range_share"][wi, r] = float(e[inside].sum())
        out["c4_range_base"][wi, r] = _window_alone_share(c, sigma, lags, lag_e, inside)
        out["c4_range_peaks"][wi, r] = _count_peaks(e, lags, lo, hi)
        out["c4_range_key"][wi, r] = index[(c, sigma)]
    return out


def _range_windows(widths) -> list[tuple]:
    """C4's windows placed on the paper's lags: per width factor ``k`` and paper range
    ``[lo, hi]`` the window centred at ``(lo + hi) / 2`` with ``sigma = k (hi - lo) / 2``,
    as ``(width index, range index, (centre, sigma))`` (the key rounded as the plan's)."""
    return [
        (wi, r, (round((lo + hi) / 2, 9), round(k * (hi - lo) / 2, 9)))
        for wi, k in enumerate(widths)
        for r, (lo, hi) in enumerate(PAPER_LAGS.values())
    ]


def _window_alone_share(c: float, sigma: float, lags, lag_e, inside) -> float:
    """The share of the windowed fluctuation's lag energy ``w(tau)^2 E_u(tau)`` inside
    the range (``inside``): what the window ``(c, sigma)`` puts there by itself."""
    w2e = np.exp(-((lags - c) ** 2) / sigma**2) * lag_e
    return float(w2e[inside].sum() / w2e.sum()) if w2e.sum() > 0 else np.nan


def _c4_cases(out: dict, ix: tuple, j: int, c: float, sigma: float, e, lags, lag_e) -> None:
    """Window ``j`` (centre ``c``, width ``sigma``, mode lag energy ``e``) against each
    paper range of reading ``ix``: kept in ``out`` where it beats the window held so far
    (reaching the range first, then the larger share)."""
    for r, (lo, hi) in enumerate(PAPER_LAGS.values()):
        at = ix + (r,)
        inside = (lags >= lo) & (lags <= hi)
        sh = float(e[inside].sum())
        ok = np.exp(-((lags[inside] - c) ** 2) / (2 * sigma**2)).max() >= np.exp(-2.0)
        held = out["c4_reach"][at]
        better = (ok and not held) or (
            ok == held and not (np.nan_to_num(out["c4_share"][at], nan=-1) >= sh)
        )
        if better:
            out["c4_share"][at] = sh
            out["c4_base"][at] = _window_alone_share(c, sigma, lags, lag_e, inside)
            out["c4_reach"][at] = ok
            out["c4_peaks"][at] = _count_peaks(e, lags, lo, hi)
            out["c4_key"][at] = j


def _evidence_dataset(ctx: _LayerContext, scale: dict, pod: dict, win: dict, se: dict):
    """The Dataset of :func:`layer_evidence` from its parts."""
    AX, dims_w = ctx.AX, WINDOW_AXES
    coords = {a: list(AX[a]) for a in (*dims_w, "criterion", "fit")}
    coords |= {"paper_layer": sorted(PAPER_LAGS), "peak": [0, 1, 2], "grid_end": ["min", "max"]}
    c4 = (*dims_w, "paper_layer")
    grid_ends = [[ctx.grids[g][0], ctx.grids[g][-1]] for g in AX["scale_min"]]
    return xr.Dataset(
        {
            "scale_stat_value": (dims_w[:4], scale["value"]),
            "scale_stat_se": (dims_w[:4], scale["se"]),
            "scale_stat_edge": (dims_w[:4], scale["edge"]),
            "scale_grid": (("scale_min", "grid_end"), grid_ends),
            "energy": (dims_w[:3], scale["energy"]),
            "energy_se": (dims_w[:3], scale["energy_se"]),
            **{k: (dims_w[:3], scale[k]) for v in BAND_VARS for k in (v, f"{v}_se")},
            "a_star": ((*dims_w[:4], "peak"), win["a_star"]),
            "T_spec": ("fit", pod["T"]),
            "T_spec_se": ("fit", pod["T_se"]),
            "H_star": ("criterion", pod["H"]),
            "H_star_se": ("criterion", pod["H_se"]),
            **{k: (c4, win[k]) for k in ("c4_share", "c4_reach", "c4_base", "c4_peaks")},
            "c4_share_se": (c4, se["c4_share_se"]),
            "c4_diff_se": (c4, se["c4_diff_se"]),
            **{
                k: (("width", "paper_layer"), v)
                for k, v in {**win, **se}.items()
                if k.startswith("c4_range_") and k != "c4_range_key"
            },
            "c9_ratio": (dims_w, win["c9_ratio"]),
            "c9_ratio_se": (dims_w, se["c9_ratio_se"]),
            "spectrum": ("rank", pod["lam"]),
        },
        coords={k: np.asarray(v) for k, v in coords.items()} | {"rank": np.arange(1, ctx.n + 1)},
    )


def theorem1_check(u: xr.DataArray, *, dim: str = "snapshot", seed: int = 0):
    """Theorem 1 on one ensemble: ``(max relative gap between the rank-K error and the
    eigenvalue tail for K = 1, 5, 20, random orthonormal bases beating POD, trials)``.

    The rank-K error is :func:`msapod.reconstruction_error` of :func:`msapod.pod`; a
    random basis' error is ``mean_s ||u_s||^2 - mean_s ||Q^T u_s||^2`` for an orthonormal
    ``Q`` drawn on the causal entries (the quantity :func:`msapod.basis_error` computes).
    """
    n = u.sizes[dim]
    ranks = [k for k in (1, 5, 20) if k < n - 1] or [1]
    res = pod(u, dim, n_modes=max(ranks))
    lam = res["spectrum"].values
    worst, beaten, trials = 0.0, 0, 0
    rng = np.random.default_rng(seed)
    nq, nk = u.sizes["query"], u.sizes["key"]
    mask = np.tril(np.ones((nq, nk), bool))
    U = u.transpose(dim, "query", "key").values[:, mask].astype(np.float64)  # (N, P)
    total = float((U**2).sum(1).mean())
    for K in ranks:
        err = float(reconstruction_error(u, res, K))
        worst = max(worst, abs(err - lam[K:].sum()) / lam[K:].sum())
        for _ in range(5):
            Q = np.linalg.qr(rng.standard_normal((mask.sum(), K)))[0]  # (P, K) orthonormal
            beaten += total - float(((U @ Q) ** 2).sum(1).mean()) < err
            trials += 1
    return float(worst), int(beaten), int(trials)


def fields_evidence(
    F: xr.DataArray,
    *,
    theorem1_layer: int = 0,
    dim: str = "snapshot",
    omega0: float = OMEGA0,
    axes: dict | None = None,
    window_se: bool = True,
) -> xr.Dataset:
    """:func:`layer_evidence` of every layer of ``F (layer, dim, query, key)``, one
    layer in memory at a time (``axes``: the readings to compute, default all;
    ``window_se``: C4's and C9's jackknife, see :func:`layer_evidence`)."""
    kw = dict(dim=dim, omega0=omega0, axes=axes, window_se=window_se)
    layers = [
        layer_evidence(F.sel(layer=layer).load(), theorem1=int(layer) == theorem1_layer, **kw)
        for layer in F["layer"].values
    ]
    return xr.concat(layers, dim=xr.DataArray(F["layer"].values, dims="layer", name="layer"))


#: C4's and C9's window jackknife standard errors and the variable each is shaped like.
WINDOW_SE_VARS = {
    "c4_share_se": "c4_share",
    "c4_diff_se": "c4_share",
    "c9_ratio_se": "c9_ratio",
    "c4_range_share_se": "c4_range_share",
    "c4_range_diff_se": "c4_range_share",
}


def with_window_se(ev: xr.Dataset) -> xr.Dataset:
    """``ev`` with every variable of :data:`WINDOW_SE_VARS`, NaN where it was not computed
    (``window_se=False``: the evidence is otherwise the same, so its cache key leaves the
    flag out)."""
    for name, like in WINDOW_SE_VARS.items():
        if name not in ev and like in ev:
            ev[name] = xr.full_like(ev[like], np.nan, dtype=np.float64)
    return ev


def evidence_parts(
    F: xr.DataArray, *, theorem1_layer: int, window_se: bool, axes: dict | None = None
) -> dict:
    """The cache key of :func:`fields_evidence` of fields ``F``: the fields' key, the
    weights' sha256, the readings, the numbers of the registry and the format."""
    AX = AXES if axes is None else {**AXES, **axes}
    return {
        "fields_key": F.attrs.get("key"),
        "weights_sha256": F.attrs.get("weights_sha256"),
        "axes": json.dumps({k: list(v) for k, v in AX.items()}, default=str),
        "num_scales": DEFAULT_NUM_SCALES,
        "fixed_k": list(FIXED_K),
        "theorem1_layer": theorem1_layer,
        "format": EVIDENCE_FORMAT,
        "stated": STATED,
        **({"window_se": True} if window_se else {}),
    }


def model_evidence(
    name: str,
    *,
    cache_dir=None,
    progress: bool = False,
    theorem1_layer: int = 0,
    window_se: bool = False,
) -> xr.Dataset:
    """:func:`layer_evidence` of every layer of zoo model ``name``, one layer of
    :func:`msapod.studies.store.cache.cached_fields` at a time, cached (key:
    :func:`evidence_parts`; ``window_se``: :func:`needs_window_se`)."""
    F = cached_fields(name, progress=progress, cache_dir=cache_dir)
    parts = evidence_parts(F, theorem1_layer=theorem1_layer, window_se=window_se)

    def compute():
        out = fields_evidence(F, theorem1_layer=theorem1_layer, window_se=window_se)
        out.attrs = {"model": name}
        return out

    ev = cached_dataset("multiverse-evidence", name, parts, compute, cache_dir=cache_dir)
    return with_window_se(ev)


def needs_window_se(models: Sequence[str]) -> bool:
    """Whether a zoo of these models measures C4's and C9's jackknife over snapshots: only
    when some architecture among them has fewer than two models (otherwise the seeds are
    the replicates of every claim, architecture contrasts included)."""
    from ...models.zoo import architecture

    labels = [str(architecture(m)) for m in models]
    return not (bool(labels) and min(labels.count(a) for a in set(labels)) >= 2)
