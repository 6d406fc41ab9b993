"""Mode and coherency statistics of the zoo: what the method pages 04-06 show.

For one zoo model, everything below is computed from the default analysis
(:func:`msapod.studies.store.cache.cached_analysis`, ``centre="peak"``), the analysis with
``centre="centroid"`` and, for the coherency, the head-averaged fields
(:func:`msapod.studies.store.cache.cached_fields`); the book's pages read
:func:`zoo_mode_statistics` from ``results/modestats.nc``.

Lag summaries of the POD modes :math:`\\phi_k(i, j)` (modes 1 and 2 of every window,
both centre rules; lags :math:`\\tau = i - j`):

========================  ========================================================
variable                  definition
========================  ========================================================
``lag_energy``            :math:`\\rho_k(\\tau) = \\sum_i \\phi_k(i, i - \\tau)^2 /
                          \\sum_{i,\\tau} \\phi_k(i, i-\\tau)^2`, a distribution over lags
``mean_lag``              :math:`\\langle\\tau\\rangle_k = \\sum_\\tau \\tau\\,\\rho_k(\\tau)`
``lag_spread``            :math:`\\Delta\\tau_k`, the standard deviation of :math:`\\rho_k`
``lag_q10``, ``lag_q90``  smallest lag at which the cumulative :math:`\\rho_k` reaches
                          0.1 (0.9): 80 % of the mode's energy lies between them
``scale_spread``          energy-weighted standard deviation of :math:`\\log_2 a` in the
                          Morlet scale spectrum of the mode itself (octaves; default
                          centre rule only)
``mode_lag``              :math:`\\phi_k(i, i - \\tau)` for the shown layers
                          (:data:`SHOW_LAYERS`) and lags below :data:`LAG_MAX`, float32
``window_centre``,        the windows' centre and width (copied from the analyses)
``window_width``
========================  ========================================================

Cross-coherency :math:`\\gamma_{ij}(a)` of the fluctuation field (default analysis's
dominant scales plus the fixed scales :data:`FIXED_SCALES`; every
:data:`QUERY_STEP`-th query row, on the full lag grid, which gives the exact pairwise
values of the retained rows):

===========================  =====================================================
variable                     definition
===========================  =====================================================
``probe_scale``              the scale of each probe (NaN: no such dominant scale)
``coherency_matrix``         :math:`\\gamma_{ij}(a)` of the retained rows (float32)
``coherency_curve``          mean off-diagonal :math:`\\gamma_{ij}(a)` at every
                             separation :math:`|i - j|` (NaN pairs ignored)
``coherency_null_curve``     the same for a null ensemble: every row's snapshots
                             shuffled independently (seed = layer number)
``subsample_gap``            largest difference between a pair computed from its two
                             rows alone and the same pair in the subsampled matrix
===========================  =====================================================
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..._io import COMPRESS
from ...fields import is_band, reynolds, to_lag
from ...models.data import N_SNAPSHOTS, SNIPPET_LENGTH
from ...wavelets import coherency, log_scales, scalogram
from ..store.cache import ModelInputs, cached_analysis, cached_model_study, model_inputs, stack_zoo

__all__ = [
    "FIXED_SCALES",
    "LAG_MAX",
    "MODESTATS_FORMAT",
    "QUERY_STEP",
    "SHOW_LAYERS",
    "by_separation",
    "coherency_summary",
    "lag_energy",
    "lag_statistics",
    "mode_statistics",
    "permute_rows",
    "scale_spread",
    "summarise_modes",
    "zoo_mode_statistics",
]

#: Version of the output of :func:`mode_statistics`; part of its cache key.
MODESTATS_FORMAT = 3
#: POD modes summarised (1-based, as in the analysis).
MODES = (1, 2)
#: Layers whose leading modes are stored in lag form (``mode_lag``).
SHOW_LAYERS = (2, 4, 6)
#: ``mode_lag`` keeps lags ``0 .. LAG_MAX - 1``.
LAG_MAX = 64
#: Number of log-spaced Morlet scales (3 to 128 characters) of ``scale_spread``.
N_SPREAD_SCALES = 16
#: Fixed coherency scales (characters), the same for every layer.
FIXED_SCALES = (4.0, 24.0)
#: Every ``QUERY_STEP``-th query row enters the coherency.
QUERY_STEP = 4
#: Query rows of the pair that checks the subsampling (layer 1).
CHECK_PAIR = (100, 140)
#: Names of the coherency probes: up to three dominant scales, then the fixed scales.
PROBES = ("dominant-1", "dominant-2", "dominant-3", "fixed-4", "fixed-24")


def lag_energy(modes: xr.DataArray) -> xr.DataArray:
    """Normalised lag energy :math:`\\rho_k(\\tau)` of modes ``(..., query, key)``.

    Parameters
    ----------
    modes
        Causal fields with dims ``query`` and ``key`` (NaN for a missing window), or the
        modes of a lag band, dims ``query`` and ``lag``.

    Returns
    -------
    xarray.DataArray
        ``(..., lag)``, summing to 1 over ``lag``; NaN where a mode is missing or zero.
    """
    last = "lag" if is_band(modes) else "key"
    missing = modes.isnull().any(("query", last))
    R = modes.fillna(0.0).astype(np.float64)
    p = ((R if last == "lag" else to_lag(R)) ** 2).sum("query")
    tot = p.sum("lag")
    return (p / tot.where(tot > 0)).where(~missing)


def lag_statistics(p: xr.DataArray) -> xr.Dataset:
    """Mean lag, lag spread and 10 % / 90 % lag quantiles of distributions ``p(..., lag)``.

    Parameters
    ----------
    p
        Non-negative, summing to 1 over ``lag`` (as from :func:`lag_energy`); NaN rows
        give NaN statistics.

    Returns
    -------
    xarray.Dataset
        ``mean_lag``, ``lag_spread`` (standard deviation), ``lag_q10`` and ``lag_q90``
        (smallest lag whose cumulative ``p`` reaches 0.1 and 0.9), in lag units.
    """
    lag = p["lag"].astype(np.float64)
    mean = (p * lag).sum("lag", skipna=False)
    spread = np.sqrt((p * (lag - mean) ** 2).sum("lag", skipna=False))
    c = p.cumsum("lag").values
    out = {"mean_lag": mean, "lag_spread": spread}
    for q in (10, 90):
        # tolerance: a cumulative sum of floats may end a hair below an exact quantile
        idx = np.clip((c < q / 100 - 1e-12).sum(-1), 0, lag.size - 1)
        val = np.where(np.isfinite(mean.values), lag.values[idx], np.nan)
        out[f"lag_q{q}"] = mean.copy(data=val)
    return xr.Dataset(out)


def scale_spread(modes: xr.DataArray, scales: Sequence[float] | None = None) -> xr.DataArray:
    """Spread in scale (octaves) of modes ``(..., query, key)``.

    The Morlet scale spectrum :math:`E(a)` of each mode (:func:`msapod.scalogram` over the
    mode's query rows, ``dims=("query",)``) weighs :math:`\\log_2 a`; the result is the
    weighted standard deviation. A mode that lives at one scale gives a small value.

    Parameters
    ----------
    modes
        Causal fields; entries that are NaN mark a missing mode (result NaN).
    scales
        Morlet scales; default :data:`N_SPREAD_SCALES` log-spaced scales.

    Returns
    -------
    xarray.DataArray
        Dims of ``modes`` less ``query`` and ``key``.
    """
    if scales is None:
        scales = log_scales(modes.sizes["key"], num=N_SPREAD_SCALES)
    lead = [d for d in modes.dims if d not in ("query", "key")]
    shape = [modes.sizes[d] for d in lead]
    flat = modes.transpose(*lead, "query", "key").values.reshape(
        (-1, modes.sizes["query"], modes.sizes["key"])
    )
    ok = np.isfinite(flat).all((1, 2))
    out = np.full(flat.shape[0], np.nan)
    if ok.any():
        sub = xr.DataArray(
            flat[ok].astype(np.float64),
            dims=("_m", "query", "key"),
            coords={"query": modes["query"].values, "key": modes["key"].values},
        )
        spec = scalogram(sub, scales, dims=("query",))["spectrum"].transpose("_m", "scale")
        w = spec / spec.sum("scale")
        la = np.log2(spec["scale"])
        mu = (w * la).sum("scale")
        out[ok] = np.sqrt((w * (la - mu) ** 2).sum("scale")).values
    coords = {d: modes[d] for d in lead if d in modes.coords}
    return xr.DataArray(out.reshape(shape), dims=lead, coords=coords)


def summarise_modes(analyses: dict[str, xr.Dataset]) -> xr.Dataset:
    """Lag and scale summaries of the leading POD modes of several analyses.

    Parameters
    ----------
    analyses
        Centre rule (``"peak"``, ``"centroid"``, ...) -> an :func:`msapod.analyze` Dataset
        (``modes(layer, window, mode, query, key)``, ``window_centre``, ``window_width``).
        The first entry also gives ``scale_spread`` and ``mode_lag``.

    Returns
    -------
    xarray.Dataset
        See the module docs; dims ``centre``, ``layer``, ``window``, ``mode``, ``lag``
        (and ``shown_layer``, ``query``, ``lag_shown`` for ``mode_lag``).
    """
    parts = []
    for rule, ana in analyses.items():
        m = ana["modes"].sel(mode=list(MODES)).load()
        p = lag_energy(m)
        d = lag_statistics(p)
        d["lag_energy"] = p
        d["window_centre"] = ana["window_centre"].load()
        d["window_width"] = ana["window_width"].load()
        if not parts:
            first = m
        parts.append(d.expand_dims(centre=[rule]))
    out = xr.concat(parts, dim="centre", coords="minimal", compat="override")
    out["scale_spread"] = scale_spread(first)
    show = [layer for layer in SHOW_LAYERS if layer in first["layer"].values]
    lagf = to_lag(first.sel(layer=show).fillna(0.0)).isel(lag=slice(0, LAG_MAX))
    lagf = lagf.where(first.sel(layer=show).notnull().all(("query", "key")))
    lagf = lagf.rename(layer="shown_layer", lag="lag_shown").astype(np.float32)
    out["mode_lag"] = lagf.transpose("shown_layer", "window", "mode", "query", "lag_shown")
    out["mode_lag"].encoding.update(COMPRESS)
    out = out.drop_vars([c for c in ("key",) if c in out.coords])
    attrs = {
        "lag_energy": "rho_k(tau) = sum_i phi_k(i, i - tau)^2, normalised to sum 1 over lag",
        "mean_lag": "sum_tau tau rho_k(tau) (characters)",
        "lag_spread": "standard deviation of rho_k over lag (characters)",
        "lag_q10": "smallest lag whose cumulative rho_k reaches 0.1",
        "lag_q90": "smallest lag whose cumulative rho_k reaches 0.9",
        "scale_spread": (
            "energy-weighted standard deviation of log2 a in the Morlet scale spectrum "
            f"of the mode (msapod.scalogram over query rows, {N_SPREAD_SCALES} log-spaced "
            f"scales 3-128, omega0 = 6); centre rule {next(iter(analyses))!r} (octaves)"
        ),
        "mode_lag": (
            f"phi_k(i, i - tau) for lags 0..{LAG_MAX - 1}, centre rule "
            f"{next(iter(analyses))!r}, float32 (NaN: no such window)"
        ),
        "window_centre": "window centre c_m of the analysis (lag)",
        "window_width": "window width sigma_m of the analysis (lags)",
    }
    for k, v in attrs.items():
        out[k].attrs["description"] = v
    out["mode_lag"].attrs["sign_dims"] = "query lag_shown"  # a POD mode is defined up to sign
    return out


def permute_rows(R: xr.DataArray, seed: int) -> xr.DataArray:
    """Shuffle the snapshots of every query row independently (a null ensemble).

    Keeps every row's statistics and breaks any relation between rows.

    Parameters
    ----------
    R
        ``(snapshot, query, lag)`` (any order; returned in this order).
    seed
        Seed of :func:`numpy.random.default_rng`.
    """
    r = np.random.default_rng(seed)
    RR = R.transpose("snapshot", "query", "lag")
    idx = np.argsort(r.random((RR.sizes["snapshot"], RR.sizes["query"])), axis=0)
    return RR.copy(data=np.take_along_axis(RR.values, idx[:, :, None], axis=0))


def by_separation(g: xr.DataArray) -> xr.DataArray:
    """Mean off-diagonal coherency at every row separation ``|i - j|``.

    Parameters
    ----------
    g
        ``(..., query_i, query_j)`` with numeric query coordinates; NaN pairs are ignored.

    Returns
    -------
    xarray.DataArray
        ``(..., separation)``, separations in the units of the query coordinate (NaN
        where every pair at that separation is NaN).
    """
    q = np.asarray(g["query_i"].values)
    d = np.abs(q[:, None] - q[None, :])
    seps = np.unique(d[d > 0])
    lead = [x for x in g.dims if x not in ("query_i", "query_j")]
    vals = g.transpose(*lead, "query_i", "query_j").values
    out = np.full(vals.shape[:-2] + (len(seps),), np.nan)
    for m, s in enumerate(seps):
        v = vals[..., d == s]
        n = np.isfinite(v).sum(-1)
        with np.errstate(invalid="ignore"):
            out[..., m] = np.where(n > 0, np.nansum(v, -1) / np.maximum(n, 1), np.nan)
    coords = {k: g[k] for k in lead if k in g.coords}
    return xr.DataArray(out, dims=(*lead, "separation"), coords={**coords, "separation": seps})


def coherency_summary(
    R: xr.DataArray,
    dominant: Sequence[float],
    *,
    fixed: Sequence[float] = FIXED_SCALES,
    seed: int = 0,
) -> xr.Dataset:
    """Coherency matrix, separation curve and null curve of one layer, per probe.

    Parameters
    ----------
    R
        Fluctuation field in lag form ``(snapshot, query, lag)``, rows already subsampled
        (the full lag grid kept).
    dominant
        Up to three dominant scales (NaN: none); probes ``dominant-1..3``.
    fixed
        Two fixed scales; probes ``fixed-<a>``.
    seed
        Seed of the null ensemble (:func:`permute_rows`).

    Returns
    -------
    xarray.Dataset
        ``probe_scale(probe)``, ``coherency_matrix(probe, query_i, query_j)`` (float64),
        ``coherency_curve(probe, separation)``, ``coherency_null_curve(probe, separation)``.
    """
    dom = list(np.asarray(dominant, dtype=float))[:3]
    dom += [np.nan] * (3 - len(dom))
    probe_a = np.array(dom + [float(a) for a in fixed])
    names = [f"dominant-{k + 1}" for k in range(3)] + [f"fixed-{a:g}" for a in fixed]
    scales = np.unique(probe_a[np.isfinite(probe_a)])
    both = xr.concat(
        [R.transpose("snapshot", "query", "lag"), permute_rows(R, seed)],
        dim=xr.DataArray(["field", "null"], dims="ensemble"),
    )
    G = coherency(both, list(scales))
    q = G["query_i"].values
    mat = np.full((len(names), len(q), len(q)), np.nan)
    field_curve = by_separation(G.sel(ensemble="field"))
    null_curve = by_separation(G.sel(ensemble="null"))
    seps = field_curve["separation"].values
    curve = np.full((len(names), len(seps)), np.nan)
    null = np.full_like(curve, np.nan)
    for k, a in enumerate(probe_a):
        if not np.isfinite(a):
            continue
        s = int(np.flatnonzero(scales == a)[0])
        mat[k] = G.sel(ensemble="field").isel(scale=s).values
        curve[k] = field_curve.isel(scale=s).values
        null[k] = null_curve.isel(scale=s).values
    return xr.Dataset(
        {
            "probe_scale": ("probe", probe_a),
            "coherency_matrix": (("probe", "query_i", "query_j"), mat),
            "coherency_curve": (("probe", "separation"), curve),
            "coherency_null_curve": (("probe", "separation"), null),
        },
        coords={"probe": names, "query_i": q, "query_j": q, "separation": seps},
    )


def _coherency_of_fields(F: xr.DataArray, dominant: xr.DataArray) -> xr.Dataset:
    """:func:`coherency_summary` of every layer of fields ``F(layer, snapshot, query, key)``."""
    layers = []
    gap = np.nan
    for layer in F["layer"].values:
        R_full = to_lag(reynolds(F.sel(layer=layer))["fluctuation"])
        R = R_full.isel(query=slice(0, None, QUERY_STEP))
        d = coherency_summary(R, dominant.sel(layer=layer).values, seed=int(layer))
        if layer == F["layer"].values[0]:
            i, j = CHECK_PAIR
            pair = coherency(R_full.sel(query=[i, j]), list(FIXED_SCALES))
            sub = d["coherency_matrix"].sel(
                probe=[f"fixed-{a:g}" for a in FIXED_SCALES], query_i=i, query_j=j
            )
            gap = float(np.abs(pair.sel(query_i=i, query_j=j).values - sub.values).max())
        layers.append(d)
        del R_full, R
    out = xr.concat(layers, dim=F["layer"], coords="minimal", compat="override")
    out["coherency_matrix"] = out["coherency_matrix"].astype(np.float32)  # after the check
    out["subsample_gap"] = xr.DataArray(gap)
    out["coherency_matrix"].encoding.update(COMPRESS)
    desc = {
        "probe_scale": "Morlet scale a of each probe (NaN: the layer has no such dominant scale)",
        "coherency_matrix": (
            f"gamma_ij(a) of the fluctuation field between query rows i, j = 0, "
            f"{QUERY_STEP}, 2*{QUERY_STEP}, ... (msapod.coherency on the lag form, full lag "
            "grid), float32; NaN where a row has no energy at that scale"
        ),
        "coherency_curve": "mean off-diagonal gamma_ij(a) at each separation |i - j|",
        "coherency_null_curve": (
            "coherency_curve of the null ensemble: every query row's snapshots shuffled "
            "independently (numpy default_rng, seed = layer number)"
        ),
        "subsample_gap": (
            f"max |gamma| difference, layer {int(F['layer'].values[0])}, rows {CHECK_PAIR} at "
            f"the fixed scales: computed from the two rows alone vs the subsampled matrix"
        ),
    }
    for k, v in desc.items():
        out[k].attrs["description"] = v
    return out


def mode_statistics(
    name: str,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """Mode and coherency statistics of one zoo model (cached).

    Parameters
    ----------
    name
        Zoo model name.
    n, length, seed, cache_dir, progress
        As in :func:`msapod.studies.store.cache.cached_fields`.

    Returns
    -------
    xarray.Dataset
        The variables of the module docs; dims ``centre`` (``"peak"``, ``"centroid"``),
        ``layer``, ``window``, ``mode``, ``lag``, ``shown_layer``, ``query``,
        ``lag_shown``, ``probe``, ``query_i``, ``query_j``, ``separation``.
    """
    kw = dict(n=n, length=length, seed=seed, cache_dir=cache_dir, progress=progress)
    inputs = model_inputs(name, **kw)
    analyses = {
        rule: cached_analysis(name, model=inputs.model, **kw, **params)
        for rule, params in (("peak", {}), ("centroid", {"centre": "centroid"}))
    }
    parts = {
        "analysis_key": analyses["peak"].attrs["analysis_key"],
        "centroid_analysis_key": analyses["centroid"].attrs["analysis_key"],
        "modes": list(MODES),
        "show_layers": list(SHOW_LAYERS),
        "lag_max": LAG_MAX,
        "fixed_scales": list(FIXED_SCALES),
        "query_step": QUERY_STEP,
        "format": MODESTATS_FORMAT,
    }
    try:
        return cached_model_study(
            "modestats",
            inputs,
            parts,
            lambda inp: _model_summary(inp, analyses),
            keyed_by_fields=False,  # the analyses' keys cover the fields'
        )
    finally:
        for ana in analyses.values():
            ana.close()


def _model_summary(inputs: ModelInputs, analyses: dict[str, xr.Dataset]) -> xr.Dataset:
    """:func:`summarise_modes` of the analyses and the coherency of the model's fields."""
    out = summarise_modes(analyses)
    coh = _coherency_of_fields(inputs.fields(), analyses["peak"]["dominant_scale"].load())
    # "override" keeps every variable's description (the dataset attrs are set below)
    out = xr.merge([out, coh], compat="override", join="outer", combine_attrs="override")
    out.attrs = {
        "model": inputs.name,
        "source": "msapod.studies.measure.modestats.mode_statistics",
        "analysis_key": analyses["peak"].attrs["analysis_key"],
        "centroid_analysis_key": analyses["centroid"].attrs["analysis_key"],
        "description": (
            "lag and scale summaries of POD modes 1-2 of every window (default and "
            "centroid-centred analyses), the leading modes in lag form for the shown "
            "layers, and the cross-coherency of the fluctuation field with a "
            "row-shuffled null"
        ),
    }
    return out


def zoo_mode_statistics(
    models: Sequence[str] | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """:func:`mode_statistics` of several zoo models stacked along ``model``.

    Parameters
    ----------
    models
        Zoo model names; default the trained models of the main zoo.
    cache_dir, progress
        As in :func:`mode_statistics`.

    Returns
    -------
    xarray.Dataset
        The per-model variables with a leading ``model`` dim and an ``architecture``
        coord; the large float32 variables are stored gzip-compressed.
    """
    out = stack_zoo(
        lambda m: mode_statistics(m, cache_dir=cache_dir, progress=progress),
        models,
        desc="modestats",
        progress=progress,
        compressed=["mode_lag", "coherency_matrix", "lag_energy"],
    )
    out.attrs["source"] = "msapod.studies.measure.modestats.zoo_mode_statistics"
    out.attrs["format"] = MODESTATS_FORMAT
    return out
