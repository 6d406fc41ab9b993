"""Gaussian lag windows that isolate one dominant scale (step 5 of the method).

``w_m(tau) = exp(-(tau - c_m)^2 / (2 sigma_m^2))`` and the scale-filtered fluctuation
``u^(m)(i, j) = w_m(i - j) u(i, j)``.

The paper gives no formula for the centre c_m and width sigma_m. Our defaults: the
centre is the lag b at which the scalogram ``E(a*_m, b)`` is largest (where the energy of
that scale sits); the width ``sigma_m = kappa a*_m`` with ``kappa = 1`` makes the window the
Gaussian envelope of the analysing Morlet wavelet at that scale (``exp(-eta^2/2)``, ``eta =
tau / a``), so it keeps the lags the wavelet itself sees. The alternatives are options of
:func:`window_parameters` and :func:`msapod.analyze`; the book shows how much the results
move under them.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._labels import positions
from .fields import check_lazy, from_lag, to_lag

__all__ = ["apply_window", "lag_window", "window_parameters"]

CENTRE_RULES = ("peak", "centroid", "scale")


def lag_window(lag, centre, width) -> xr.DataArray:
    """Gaussian window ``w(tau) = exp(-(tau - c)^2 / (2 sigma^2))``.

    Parameters
    ----------
    lag
        Lags at which to evaluate (array or a DataArray/coordinate named ``lag``).
    centre, width
        c and sigma in lags; scalars or DataArrays (their dims are broadcast, e.g. one
        window per ``peak``). ``width`` must be positive.

    Returns
    -------
    xarray.DataArray
        ``w(..., lag)`` with attrs ``centre`` and ``width`` for scalar parameters.
    """
    lag = xr.DataArray(np.asarray(lag, dtype=np.float64), dims="lag", name="lag")
    lag = lag.assign_coords(lag=lag.values)
    c = centre if isinstance(centre, xr.DataArray) else xr.DataArray(float(centre))
    s = width if isinstance(width, xr.DataArray) else xr.DataArray(float(width))
    if not (np.isfinite(c.values).all() and np.isfinite(s.values).all()):
        raise ValueError("centre, width: expected finite values")
    if (s.values <= 0).any():
        raise ValueError(f"width: expected sigma > 0 lags, got {s.values}")
    w = np.exp(-((lag - c) ** 2) / (2 * s**2)).transpose(..., "lag")
    w.name = "window"
    w.attrs = {
        "long_name": "Gaussian lag window w(tau)",
        "formula": "exp(-(tau - centre)^2 / (2 width^2))",
    }
    if c.ndim == 0 and s.ndim == 0:
        w.attrs.update(centre=float(c), width=float(s))
    return w


def window_parameters(
    energy: xr.DataArray,
    scales: xr.DataArray,
    *,
    centre: str | float = "peak",
    width: float = 1.0,
) -> xr.Dataset:
    """Centre c_m and width sigma_m of the window of each dominant scale a*_m.

    Parameters
    ----------
    energy
        Scalogram ``E(..., scale, lag)`` (from :func:`msapod.scalogram`).
    scales
        Dominant scales a*_m (from :func:`msapod.dominant_scales`); NaN entries give NaN
        parameters (no window).
    centre
        ``"peak"`` (argmax_b E(a*, b)), ``"centroid"`` (energy-weighted mean lag at a*),
        ``"scale"`` (c = a*) or a number of lags.
    width
        the width factor kappa in ``sigma = kappa a*`` (> 0).

    Returns
    -------
    xarray.Dataset
        ``centre`` and ``width`` with the dims of ``scales``.
    """
    if not isinstance(energy, xr.DataArray) or not {"scale", "lag"} <= set(energy.dims):
        raise ValueError("energy: expected a DataArray with dims 'scale' and 'lag'")
    if not isinstance(scales, xr.DataArray):
        raise ValueError("scales: expected a DataArray of dominant scales")
    if isinstance(width, bool) or not isinstance(width, int | float | np.number):
        raise ValueError(f"width: expected a factor kappa > 0 (sigma = kappa a*), got {width!r}")
    if not (np.isfinite(width) and width > 0):
        raise ValueError(f"width: expected a factor kappa > 0 (sigma = kappa a*), got {width}")
    grid = energy["scale"].values
    given = scales.values[np.isfinite(scales.values)]
    if given.size and (
        given.min() < grid.min() * (1 - 1e-9) or given.max() > grid.max() * (1 + 1e-9)
    ):
        raise ValueError(
            f"scales: expected dominant scales on the energy's scale grid "
            f"[{grid.min():g}, {grid.max():g}], got {given.min():g}..{given.max():g}"
        )
    if isinstance(centre, str) and centre not in CENTRE_RULES:
        raise ValueError(f"centre: expected one of {CENTRE_RULES} or a number, got {centre!r}")
    valid = np.isfinite(scales)
    a = scales.fillna(energy["scale"][0])
    E_a = energy.sel(scale=a, method="nearest").drop_vars(["scale", "period"], errors="ignore")
    lags = energy["lag"]
    if centre == "peak":
        c = lags[E_a.argmax("lag")].drop_vars("lag")
    elif centre == "centroid":
        c = (E_a * lags).sum("lag") / E_a.sum("lag")
    elif centre == "scale":
        c = a
    else:
        c = xr.full_like(a, float(centre), dtype=np.float64)
    c = c.astype(np.float64).where(valid)
    sigma = (width * a).astype(np.float64).where(valid)
    drop = [k for k in ("period", "peak_energy", "edge") if k in c.coords]
    ds = xr.Dataset(
        {
            "centre": c.drop_vars(drop, errors="ignore"),
            "width": sigma.drop_vars(drop, errors="ignore"),
        }
    )
    ds["centre"].attrs = {"units": "lag", "rule": str(centre)}
    ds["width"].attrs = {"units": "lag", "rule": f"sigma = {width:g} * a*"}
    return ds


def window_centres(E: np.ndarray, scales: np.ndarray, lags: np.ndarray, a, centre) -> np.ndarray:
    """Centres c_m of one scalogram ``E (scale, lag)`` for dominant scales ``a`` (NaN: no
    window) under a ``centre`` rule of :func:`window_parameters` (the kernel of its rules)."""
    a = np.asarray(a, dtype=np.float64)
    c = np.full(a.shape, np.nan)
    for m, am in enumerate(a):
        if not np.isfinite(am):
            continue
        e = E[int(np.abs(scales - am).argmin())]
        if centre == "peak":
            c[m] = lags[int(e.argmax())]
        elif centre == "centroid":
            c[m] = (e * lags).sum() / e.sum()
        elif centre == "scale":
            c[m] = am
        else:
            c[m] = float(centre)
    return c


def apply_window(u: xr.DataArray, window: xr.DataArray) -> xr.DataArray:
    """Scale-filtered field ``u^(m)(i, j) = w(i - j) u(i, j)``.

    ``window`` is a ``w(..., lag)`` from :func:`lag_window`; it must cover every lag
    ``query - key`` of ``u``. Extra window dims (e.g. ``peak``) broadcast. Dask-backed
    ``u`` gives a lazy result (after one pass that detects causality, see
    :func:`msapod.to_lag`).
    """
    check_lazy(u, name="u", dims=("query", "key"), min_snapshots=None)
    if not isinstance(window, xr.DataArray) or "lag" not in window.dims:
        raise ValueError("window: expected a DataArray with a 'lag' dim (see lag_window)")
    R = to_lag(u)
    need = R["lag"].values
    have = np.round(window["lag"].values).astype(np.int64)
    if not np.isin(need, have).all():
        raise ValueError(
            f"window: covers lags {have.min()}..{have.max()}, but u needs "
            f"{need.min()}..{need.max()}"
        )
    w = window.assign_coords(lag=have).sel(lag=need)
    out = from_lag(R * w, keys=positions(u, "key", "u"))
    out = out.assign_coords(key=u["key"]) if "key" in u.coords else out
    out = out.transpose(*[d for d in w.dims if d not in u.dims and d != "lag"], *u.dims)
    out.attrs = dict(u.attrs, window=str(window.attrs.get("formula", "gaussian")))
    return out
