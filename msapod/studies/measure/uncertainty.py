"""Uncertainty of the headline numbers: the jackknife over snapshots.

The paper reports single-seed point values. Here every per-layer number gets a standard
error from a **leave-one-snapshot-out jackknife** (:func:`t_quantile` gives the Student-t
intervals over seeds).

Why the jackknife (and not the bootstrap): T_spec and H* depend on the effective number
of snapshots, and a resample with replacement keeps only about 0.63 N distinct ones,
which biases both downwards (page 07 shows it). Leaving one snapshot out changes N by
one. The Reynolds mean is re-estimated in every replicate.

Exact leave-one-out scalogram
-----------------------------
The scale spectrum is linear in the lag second-moment matrix ``C = sum_i S_i / (N Q)``,
``S_i = sum_q r_iq r_iq^T`` (snapshot i's lag profiles). Of the attention itself
(``r_iq(tau) = A_i(q, q - tau)``, the default, as :func:`msapod.analyze`) leaving snapshot
i out gives ``C^(-i) = (sum_j S_j - S_i) / ((N - 1) Q)``. Of the fluctuation
(``r_iq(tau) = u_i(q, q - tau)``) leaving snapshot i out and re-estimating the mean shifts
every other fluctuation by ``u_i / (N - 1)``; because the fluctuations sum to zero the
left-out moment matrix is

    C^(-i) = (sum_j S_j - N / (N - 1) S_i) / ((N - 1) Q).

Either way one per-snapshot spectrum ``P_i(a) = <M_a, S_i>`` (``M_a`` = the scale's
quadratic form summed over b) gives all N replicates without recomputing a scalogram.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import xarray as xr
from scipy.stats import t as student_t

from ...fields import check_field, is_band, reynolds, to_lag
from ...lagstats import GATHER, snapshot_moments, upper_operator
from ...models.data import N_SNAPSHOTS, SNIPPET_LENGTH
from ...pipeline import ANALYZE_DEFAULTS, FIELD_SYMBOLS, check_options
from ...resampling import bootstrap_spectrum, jackknife_error, jackknife_se, leave_one_out_means
from ...spectra import (
    EPS,
    effective_rank,
    rank_tolerance,
    spectral_concentration,
    tail_fraction,
    tail_rank,
)
from ...wavelets import (
    OMEGA0,
    check_scales,
    fourier_period,
    log_scales,
    scale_centroid,
    scale_spectrum_operator,
)
from ..store.cache import ModelInputs, cached_analysis, cached_model_study, model_inputs, stack_zoo

__all__ = [
    "fractional_rank",
    "pod_jackknife",
    "scale_jackknife",
    "t_quantile",
    "zoo_uncertainty",
]

#: Version of :func:`zoo_uncertainty`'s output; part of its cache key.
UNCERTAINTY_FORMAT = 3


def fractional_rank(lam: np.ndarray, eps: float) -> np.ndarray:
    """H*(eps) (energy criterion) interpolated linearly between integer ranks.

    With the tail fraction ``t(K) = sum_{k>K} lambda_k / sum lambda_k`` and the integer
    ``H = min{K : t(K) <= eps}``, returns ``H - 1 + (t(H-1) - eps) / (t(H-1) - t(H))``,
    a number in ``(H - 1, H]`` that moves continuously with the spectrum. Its jackknife
    standard error is meaningful where the integer H*'s is not (resampling rarely moves
    an integer, so its jackknife SE is often exactly zero). ``lam``: ``(..., rank)``,
    non-increasing.
    """
    tail = tail_fraction(lam)
    H = tail_rank(tail, eps)
    Hm = np.maximum(H - 1, 0)
    t0 = np.take_along_axis(tail, Hm[..., None], -1)[..., 0]
    t1 = np.take_along_axis(tail, H[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(t0 > t1, (t0 - eps) / (t0 - t1), 1.0)
    return np.where(H > 0, Hm + np.clip(frac, 0.0, 1.0), 0.0)


def scale_jackknife(
    A: xr.DataArray,
    *,
    dim: str = "snapshot",
    scales=None,
    omega0: float = OMEGA0,
    bias_correction: bool = True,
    field: str = ANALYZE_DEFAULTS["field"],
) -> xr.Dataset:
    """Leave-one-snapshot-out jackknife of the scale spectrum, centroid and energy.

    Parameters
    ----------
    A
        One field set ``(dim, "query", "key")``, or a lag band ``(dim, "query", "lag")``
        of attention fields (see :func:`msapod.analyze`).
    dim
        Snapshot dim (N >= 3).
    scales, omega0, bias_correction
        As in :func:`msapod.scalogram`.
    field
        Whose scalogram: ``"total"`` (the attention A, mean included; the default, as
        :func:`msapod.analyze`) or ``"fluctuation"`` (u = A - Abar, the mean
        re-estimated in every replicate).

    Returns
    -------
    xarray.Dataset
        ``scale_spectrum(scale)`` (:func:`msapod.scalogram`'s ``spectrum`` of the field),
        ``scale_centroid`` and ``energy`` (sum of E(a, b) over scale and lag, no 1/a)
        with their jackknife standard errors ``*_se`` and leave-one-out replicates
        ``*_jack(jack)``.
    """
    last = "lag" if is_band(A) else "key"
    check_field(A, name="A", dims=(dim, "query", last), snapshot_dim=dim, min_snapshots=3)
    extra = [d for d in A.dims if d not in (dim, "query", last)]
    if extra:
        raise ValueError(
            f"A: expected one field set (dims {dim}, query, {last}), got extra {extra}"
        )
    check_options(field=field)  # analyze's own check of the option
    if field == "total":
        R = A
    elif last == "lag":  # a lag band: its own mean, in the lag layout
        R = A.astype(np.float64) - A.mean(dim, dtype=np.float64)
    else:
        R = reynolds(A, dim, check_stochastic=False)["fluctuation"]
    R = (R if last == "lag" else to_lag(R)).transpose(dim, "query", "lag")
    X = np.asarray(R.values, dtype=np.float64)
    n, q, n_lag = X.shape
    s = check_scales(log_scales(n_lag) if scales is None else scales, n_lag)
    # every snapshot's lag moments S_s through the scale-spectrum operator, a block of
    # snapshots at a time: (N, scale)
    M_up = upper_operator(scale_spectrum_operator(s, R["lag"].values, omega0), n_lag)
    step = max(1, GATHER // (n_lag * n_lag))
    P = np.concatenate(
        [snapshot_moments(X[i : i + step], upper=True) @ M_up.T for i in range(0, n, step)]
    )
    full = P.sum(0) / (n * q)  # sum_b E(a, b) of the whole ensemble
    rep = leave_one_out_means(P, q, mean_removed=field == "fluctuation")  # (N, scale)
    w = 1.0 / s if bias_correction else np.ones_like(s)

    def centroid(spec):
        dims = ("jack", "scale")[-spec.ndim :]
        return scale_centroid(xr.DataArray(spec, dims=dims, coords={"scale": s})).values

    spec_full = full * w
    c_rep = centroid(rep * w)
    e_rep = rep.sum(-1)
    ds = xr.Dataset(
        {
            "scale_spectrum": ("scale", spec_full),
            "scale_centroid": ((), centroid(spec_full)),
            "scale_centroid_se": ((), jackknife_error(c_rep)),
            "scale_centroid_jack": ("jack", c_rep),
            "energy": ((), full.sum()),
            "energy_se": ((), jackknife_error(e_rep)),
            "energy_jack": ("jack", e_rep),
        },
        coords={"scale": s, "jack": np.arange(n), "period": ("scale", fourier_period(s, omega0))},
    )
    sym = FIELD_SYMBOLS[field]
    ds["scale_centroid"].attrs = {"units": "lag", "long_name": f"scale centroid of {sym}"}
    ds["energy"].attrs = {"long_name": f"scalogram energy sum_(a,b) E(a, b) of {sym}"}
    ds.attrs = {
        "scalogram_field": field,
        "method": "leave-one-snapshot-out jackknife, exact"
        + (" (mean re-estimated)" if field == "fluctuation" else ""),
        "n_snapshots": n,
        "omega0": omega0,
        "bias_correction": int(bias_correction),
    }
    return ds


def pod_jackknife(
    gram: xr.DataArray,
    *,
    dim: str = "snapshot",
    eps: float | Sequence[float] = EPS,
    criterion: str = "energy",
    k_min: int = 1,
    k_max: int | None = None,
) -> xr.Dataset:
    """Jackknife standard errors of T_spec and H*(eps) from a POD Gram matrix.

    Parameters
    ----------
    gram
        ``K = X X^T / N`` of mean-removed snapshots, dims ``(..., dim, dim + "_")``
        (``pod(...)["gram"]`` or the ``gram`` of :func:`msapod.analyze`). Leading dims
        with NaN Gram matrices (missing windows) give NaN.
    eps, criterion
        Tolerances and criterion of :func:`msapod.effective_rank`.
    k_min, k_max
        Fit range of :func:`msapod.spectral_concentration` applied to each replicate
        (default k_max = N // 2: the replicates' spectra of N - 1 snapshots are padded
        with a zero to N, :func:`msapod.bootstrap_spectrum`).

    Returns
    -------
    xarray.Dataset
        ``T_spec_se(...)``, ``H_star_se(..., eps)`` (of the integer H*, often exactly
        zero), ``H_star_frac_se`` (of :func:`fractional_rank`, the useful one) and the
        replicate means ``T_spec_jack_mean``, ``H_star_jack_mean``.
    """
    eps_list = [float(e) for e in np.atleast_1d(eps)]
    other = f"{dim}_"
    if not isinstance(gram, xr.DataArray) or not {dim, other} <= set(gram.dims):
        raise ValueError(f"gram: expected a DataArray with dims {dim!r} and {other!r}")
    n = gram.sizes[dim]
    lead = [d for d in gram.dims if d not in (dim, other)]
    stacked = gram.stack(_set=lead) if lead else gram.expand_dims(_set=[0])
    finite = np.isfinite(stacked).all((dim, other)).values
    t_se, t_mean = np.full((2, stacked.sizes["_set"]), np.nan)
    h_se, h_mean, hf_se = np.full((3, stacked.sizes["_set"], len(eps_list)), np.nan)
    ok = np.flatnonzero(finite)
    if ok.size:
        sub = stacked.isel(_set=ok).transpose("_set", dim, other)
        sub = sub.drop_vars([c for c in sub.coords if c not in (dim, other)])
        jk = bootstrap_spectrum(sub, method="jackknife", dim=dim)
        T = spectral_concentration(jk, k_min, k_max)["T_spec"]
        t_se[ok] = jackknife_se(T).values
        t_mean[ok] = T.mean("boot").values
        for k, e in enumerate(eps_list):
            H = effective_rank(jk, e, criterion, n_snapshots=n - 1)
            h_se[ok, k] = jackknife_se(H).values
            h_mean[ok, k] = H.mean("boot").values
            hf = fractional_rank(jk.values, rank_tolerance(e, criterion))
            hf_se[ok, k] = jackknife_error(hf, jk.get_axis_num("boot"))
    ds = xr.Dataset(
        {
            "T_spec_se": ("_set", t_se),
            "T_spec_jack_mean": ("_set", t_mean),
            "H_star_se": (("_set", "eps"), h_se),
            "H_star_jack_mean": (("_set", "eps"), h_mean),
            "H_star_frac_se": (("_set", "eps"), hf_se),
        },
        coords={"eps": eps_list, "_set": stacked["_set"]},
    )
    ds = ds.unstack("_set").transpose(*lead, ...) if lead else ds.isel(_set=0, drop=True)
    ds.attrs = {"method": "leave-one-snapshot-out jackknife of the Gram matrix", "n": n}
    return ds


def t_quantile(df: float, level: float = 0.95) -> float:
    """Two-sided Student-t quantile ``t_{(1+level)/2, df}``."""
    if not (df > 0 and 0 < level < 1):
        raise ValueError(f"df, level: expected df > 0 and 0 < level < 1, got {df}, {level}")
    return float(student_t.ppf(0.5 + level / 2, df))


def zoo_uncertainty(
    models: Sequence[str] | None = None,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    eps: Sequence[float] = EPS,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """Jackknife standard errors of the zoo's per-layer numbers (cached).

    For every zoo model and layer (head-averaged fields of
    :func:`msapod.studies.store.cache.cached_fields`, default analysis of
    :func:`msapod.studies.store.cache.cached_analysis`): the scale centroid and scalogram
    energy of the analysis' scalogram field (``scalogram_field``, A by default;
    :func:`scale_jackknife`), and T_spec and H*(eps) of every window
    (:func:`pod_jackknife`). One model is processed at a time.

    Returns
    -------
    xarray.Dataset
        dims ``model``, ``layer`` (``window``, ``eps``); coord ``architecture``.
    """
    eps = [float(e) for e in eps]
    kw = dict(n=n, length=length, seed=seed, cache_dir=cache_dir, progress=progress)

    def one(name: str) -> xr.Dataset:
        inputs = model_inputs(name, **kw)
        ana = cached_analysis(name, model=inputs.model, **kw)
        parts = {
            "analysis_key": ana.attrs["analysis_key"],
            "eps": eps,
            "format": UNCERTAINTY_FORMAT,
        }
        return cached_model_study(
            "uncertainty",
            inputs,
            parts,
            lambda inp: _model_uncertainty(inp, ana, eps),
            keyed_by_fields=False,  # the analysis key covers the fields'
        )

    return stack_zoo(one, models, desc="uncertainty", progress=progress)


def _model_uncertainty(inputs: ModelInputs, ana: xr.Dataset, eps: list[float]) -> xr.Dataset:
    """Scale centroid and energy per layer (fields) and T_spec, H* (Gram matrices), jackknifed."""
    F = inputs.fields()
    layers = []
    for layer in F["layer"].values:
        sj = scale_jackknife(
            F.sel(layer=layer).astype(np.float64), field=ana.attrs["scalogram_field"]
        )
        layers.append(sj[["scale_centroid", "scale_centroid_se", "energy", "energy_se"]])
    out = xr.concat(layers, dim=F["layer"])
    pj = pod_jackknife(ana["gram"], eps=eps)
    out = xr.merge([out, pj], compat="override", join="outer")
    out.attrs = {"model": inputs.name, "scalogram_field": ana.attrs["scalogram_field"]}
    return out
