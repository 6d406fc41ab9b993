"""Field statistics of the zoo: the plain summaries the method pages 01-03 show.

For one zoo model, every statistic below is computed from the head-averaged fields
:math:`A_s^l(i, j)` of :func:`msapod.studies.store.cache.cached_fields`, one layer at a
time; the book's pages read :func:`zoo_field_statistics` from ``results/fieldstats.nc``.

Per layer :math:`l` (float64 arithmetic on the float32 fields; lags :math:`\\tau = i - j`):

========================  ========================================================
variable                  definition
========================  ========================================================
``mean_lag``              :math:`\\langle\\tau\\rangle_s = \\frac1L \\sum_i \\sum_{j \\le i}
                          (i - j) A_s(i, j)` per snapshot
``median_lag``            per snapshot, the mean over rows of the row's median lag
                          (interpolated: each lag's probability spread evenly over
                          :math:`[\\tau - \\frac12, \\tau + \\frac12]`)
``row_sum_deviation``     :math:`\\max_{s,i} |\\sum_j A_s(i, j) - 1|`
``min_entry``             :math:`\\min_{s,i,j} A_s(i, j)`
``acausal_max``           :math:`\\max_{s,\\,j > i} |A_s(i, j)|` (0: causal)
``mean_field``            :math:`\\bar A(i, j) = \\frac1N \\sum_s A_s(i, j)` (float32)
``total_energy``          :math:`\\frac1N \\sum_s \\lVert A_s \\rVert^2`
``mean_energy``           :math:`\\lVert \\bar A \\rVert^2`
``fluctuation_energy``    :math:`\\mathcal{E}_u = \\frac1N \\sum_s \\lVert u_s \\rVert^2`,
                          :math:`u_s = A_s - \\bar A`
``row_energy``            :math:`\\mathcal{E}_u(i) = \\frac1N \\sum_s \\sum_j u_s(i, j)^2`
``lag_energy``            :math:`\\mathcal{E}(\\tau) = \\frac1N \\sum_s \\sum_i
                          u_s(i, i - \\tau)^2`
``split_half_gap``        :math:`\\lVert \\bar A_{(1)} - \\bar A_{(2)} \\rVert^2`, the means
                          of snapshots ``0 .. N//2 - 1`` and ``N//2 .. N - 1``
========================  ========================================================

The scalogram of :math:`A` is not here: it is :func:`msapod.analyze`'s (``energy`` and
``scale_spectrum`` of ``results/zoo_analysis.nc``).

``total_energy = mean_energy + fluctuation_energy`` (Pythagoras) holds to rounding; the
three are computed independently so that the identity is a check, not a definition.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..._io import COMPRESS
from ...fields import check_field
from ...models.data import N_SNAPSHOTS, SNIPPET_LENGTH
from ..store.cache import ModelInputs, cached_model_study, model_inputs, stack_zoo

__all__ = [
    "FIELDSTATS_FORMAT",
    "field_statistics",
    "median_lags",
    "summarise_fields",
    "zoo_field_statistics",
]

#: The bound a float32 row sum stays within: a few units of float32 round-off (eps 1.2e-7).
ROW_SUM_BOUND = 1e-6

#: Version of the output of :func:`field_statistics`; part of its cache key.
FIELDSTATS_FORMAT = 4

_DESCRIPTIONS = {
    "mean_lag": (
        "mean attention lag <tau>_s = (1/L) sum_i sum_j (i - j) A_s(i, j) of each snapshot",
        "characters",
    ),
    "median_lag": (
        "median attention lag of each snapshot: mean over query rows of the lag where the "
        "row's cumulative probability reaches 1/2, each lag's probability spread evenly "
        "over [tau - 1/2, tau + 1/2] (so the median moves continuously with A)",
        "characters",
    ),
    "row_sum_deviation": ("max over snapshots and rows of |sum_j A_s(i, j) - 1|", "1"),
    "min_entry": ("smallest entry of A_s(i, j) (negative: not a probability)", "1"),
    "acausal_max": ("largest |A_s(i, j)| with key after query, j > i (0: causal)", "1"),
    "mean_field": ("mean field Abar(i, j) = (1/N) sum_s A_s(i, j) (float32)", "1"),
    "total_energy": ("(1/N) sum_s ||A_s||^2 (Frobenius norm)", "probability^2"),
    "mean_energy": ("mean-field energy ||Abar||^2", "probability^2"),
    "fluctuation_energy": (
        "fluctuation energy E_u = (1/N) sum_s ||u_s||^2, u_s = A_s - Abar",
        "probability^2",
    ),
    "row_energy": (
        "fluctuation energy per query row E_u(i) = (1/N) sum_s sum_j u_s(i, j)^2",
        "probability^2",
    ),
    "lag_energy": (
        "fluctuation energy per lag E(tau) = (1/N) sum_s sum_i u_s(i, i - tau)^2",
        "probability^2",
    ),
    "split_half_gap": (
        "||Abar_(1) - Abar_(2)||^2, means of the first N//2 and the remaining snapshots",
        "probability^2",
    ),
}


def median_lags(a: np.ndarray) -> np.ndarray:
    r"""Median lag of every row of causal fields ``a`` ``(..., query, key)``.

    The lag :math:`\tau = i - j` of row :math:`i` has probability :math:`a(i, i - \tau)`;
    spreading it evenly over :math:`[\tau - \frac12, \tau + \frac12]` makes the
    cumulative probability piecewise linear, and the median is where it reaches 1/2:
    :math:`\tau^* - \frac12 + (\frac12 - F(\tau^* - 1)) / a(i, i - \tau^*)`, with
    :math:`\tau^*` the smallest lag with :math:`F(\tau^*) \ge \frac12`. A point mass
    at lag :math:`d` gives :math:`d`; a uniform row over lags :math:`0..i` gives
    :math:`i/2`. Unlike the integer median it moves continuously with ``a``, so float32
    rounding cannot flip it by a whole lag. Returns ``(..., query)``.
    """
    a = np.asarray(a, dtype=np.float64)
    length = a.shape[-1]
    tail = np.flip(np.cumsum(np.flip(a, -1), -1), -1)  # probability on keys >= j
    j_star = np.clip((tail >= 0.5).sum(-1) - 1, 0, length - 1)  # lag tau* = i - j*
    t_j = np.take_along_axis(tail, j_star[..., None], -1)[..., 0]  # F(tau*)
    a_j = np.take_along_axis(a, j_star[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(a_j > 0, (0.5 - (t_j - a_j)) / a_j, 0.5)
    i = np.arange(a.shape[-2])
    return i - j_star - 0.5 + np.clip(frac, 0.0, 1.0)


def _layer_statistics(a: np.ndarray) -> dict[str, tuple]:
    """Every statistic of one layer's ensemble ``a`` ``(N, L, L)`` (float64)."""
    n, length, _ = a.shape
    pos = np.arange(length)
    lag_w = np.clip(pos[:, None] - pos[None, :], 0, None).astype(np.float64)
    above = pos[None, :] > pos[:, None]

    mean_lag = np.einsum("sij,ij->s", a, lag_w) / length
    median_lag = median_lags(a).mean(-1)
    row_dev = float(np.abs(a.sum(-1) - 1.0).max())
    acausal = float(np.abs(a[:, above]).max()) if above.any() else 0.0

    mean = a.mean(0)
    half = n // 2
    gap = a[:half].mean(0) - a[half:].mean(0)
    u = a - mean
    q = (u**2).mean(0)  # (query, key): (1/N) sum_s u_s(i, j)^2
    del u
    lag_energy = np.array([np.trace(q, offset=-t) for t in range(length)])
    return {
        "mean_lag": (("snapshot",), mean_lag),
        "median_lag": (("snapshot",), median_lag),
        "row_sum_deviation": ((), row_dev),
        "min_entry": ((), float(a.min())),
        "acausal_max": ((), acausal),
        "mean_field": (("query", "key"), mean.astype(np.float32)),
        "total_energy": ((), float((a**2).sum((1, 2)).mean())),
        "mean_energy": ((), float((mean**2).sum())),
        "fluctuation_energy": ((), float(q.sum())),
        "row_energy": (("query",), q.sum(-1)),
        "lag_energy": (("lag",), lag_energy),
        "split_half_gap": ((), float((gap**2).sum())),
    }


def summarise_fields(A: xr.DataArray) -> xr.Dataset:
    """Field statistics of an ensemble of attention fields, one layer at a time.

    Parameters
    ----------
    A
        Attention probabilities :math:`A_s^l(i, j)`, dims ``("layer", "snapshot",
        "query", "key")`` with query and key positions ``0 .. L-1`` (as returned by
        :func:`msapod.studies.store.cache.cached_fields`); at least two snapshots. Each layer
        is converted to float64 on its own, so memory peaks at a few copies of one layer.

    Returns
    -------
    xarray.Dataset
        The variables of the module table, dims ``layer``, ``snapshot``, ``query``, ``key``
        and ``lag`` (``0 .. L-1``); the ``snapshot`` coords of ``A`` are kept. Attrs
        ``long_name`` and ``units`` on every variable, ``roundoff_bound``
        (:data:`ROW_SUM_BOUND`) on ``row_sum_deviation``.
    """
    check_field(A, name="A", dims=("layer", "snapshot", "query", "key"), min_snapshots=2)
    A = A.transpose("layer", "snapshot", "query", "key")
    length = A.sizes["query"]
    if A.sizes["key"] != length:
        raise ValueError(f"A: expected square fields (query = key), got {dict(A.sizes)}")
    for dim in ("query", "key"):
        if not np.array_equal(np.asarray(A[dim].values), np.arange(length)):
            raise ValueError(f"A: expected {dim} positions 0 .. {length - 1}")
    per_layer = [
        _layer_statistics(np.asarray(A.sel(layer=layer).values, dtype=np.float64))
        for layer in A["layer"].values
    ]
    data = {
        var: (("layer", *dims), np.stack([np.asarray(stats[var][1]) for stats in per_layer]))
        for var, (dims, _) in per_layer[0].items()
    }
    snap_coords = {c: A.coords[c] for c in A.coords if A.coords[c].dims == ("snapshot",)}
    ds = xr.Dataset(
        data,
        coords={
            "layer": A["layer"].values,
            "snapshot": A["snapshot"].values,
            "query": np.arange(length),
            "key": np.arange(length),
            "lag": np.arange(length),
            **snap_coords,
        },
    )
    for var, (text, units) in _DESCRIPTIONS.items():
        ds[var].attrs = {"long_name": text, "units": units}
    ds["row_sum_deviation"].attrs["roundoff_bound"] = ROW_SUM_BOUND
    ds["mean_field"].encoding.update(COMPRESS)  # its causal zeros cost nothing
    ds["lag"].attrs = {"long_name": "lag tau = i - j", "units": "characters"}
    ds.attrs = {
        "n_snapshots": A.sizes["snapshot"],
        "length": length,
        "split_half": f"snapshots 0..{A.sizes['snapshot'] // 2 - 1} vs the rest",
        "method": (
            "msapod.studies.measure.fieldstats.summarise_fields, float64, one layer at a time"
        ),
    }
    return ds


def field_statistics(
    name: str,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    progress: bool = False,
    cache_dir: str | os.PathLike | None = None,
    model=None,
) -> xr.Dataset:
    """Field statistics (:func:`summarise_fields`) of zoo model ``name``, cached.

    Parameters
    ----------
    name
        Zoo model name (:data:`msapod.zoo.MODELS`).
    n, length, seed, progress, cache_dir, model
        As in :func:`msapod.studies.store.cache.cached_fields`.

    Returns
    -------
    xarray.Dataset
        As :func:`summarise_fields`, with attrs ``model``, ``fields_key`` and
        ``weights_sha256``; cached under ``<cache>/fieldstats/``, keyed by the fields' key
        and :data:`FIELDSTATS_FORMAT`.
    """
    inputs = model_inputs(
        name, n=n, length=length, seed=seed, cache_dir=cache_dir, progress=progress, model=model
    )
    return cached_model_study(
        "fieldstats",
        inputs,
        {"fieldstats_format": FIELDSTATS_FORMAT},
        _model_summary,
        attrs=inputs.identity(),
        key_attr="fieldstats_key",
    )


def _model_summary(inputs: ModelInputs) -> xr.Dataset:
    """:func:`summarise_fields` of a model's cached fields, described."""
    ds = summarise_fields(inputs.fields())
    ds.attrs["description"] = (
        f"field statistics of {inputs.name}: head-averaged attention of {inputs.n} validation "
        f"snippets of {inputs.length} characters (seed {inputs.seed}), every layer"
    )
    return ds


def zoo_field_statistics(
    models: Sequence[str] | None = None,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
) -> xr.Dataset:
    """:func:`field_statistics` of several zoo models stacked along a ``model`` dim.

    Parameters
    ----------
    models
        Zoo model names (default :func:`msapod.zoo.models`, the main zoo).
    n, length, seed, cache_dir, progress
        As in :func:`field_statistics`.

    Returns
    -------
    xarray.Dataset
        dims ``model``, ``layer``, ``snapshot``, ``query``, ``key``, ``lag``;
        coord ``architecture`` on ``model`` (:func:`~msapod.studies.store.cache.stack_models`);
        the per-model ``fields_key`` and ``weights_sha256`` become variables on
        ``model``. ``mean_field`` is float32 and compressed on disk.
    """

    def one(name: str) -> xr.Dataset:
        ds = field_statistics(
            name, n=n, length=length, seed=seed, progress=progress, cache_dir=cache_dir
        )
        keys = {k: ds.attrs.get(k, "") for k in ("fields_key", "weights_sha256")}
        ds = ds.assign({k: ((), str(v)) for k, v in keys.items()})
        ds.attrs = {k: v for k, v in ds.attrs.items() if k not in ("model", *keys)}
        return ds

    out = stack_zoo(one, models, desc="fieldstats", progress=progress, compressed=["mean_field"])
    drop = ("fieldstats_key", "cache_key_parts", "values_sha256", "description")
    out.attrs = {k: v for k, v in out.attrs.items() if k not in drop}
    out.attrs["description"] = (
        "field statistics of the zoo (msapod.studies.measure.fieldstats): head-averaged attention "
        f"of {n} validation snippets of {length} characters (seed {seed}), every layer"
    )
    return out
