"""The lag band ``tau_max``: the analysis of the lags ``0..tau_max`` of causal fields.

Known answers: at every lag of the band the lag statistics (mean field, lag moments, per-lag
Grams) are the full field's; fields that have no weight beyond ``tau_max`` (a sliding
window of ``tau_max + 1`` keys) give the full analysis' POD; a band given as a lag form and
a band cut from the full field by ``tau_max`` give one result.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.lagstats import LagStats

N, L, T = 12, 40, 9
SCALES = np.geomspace(2.0, 5.0, 8)  # within half the band's 10 lags


def fields(seed: int = 0, window: int | None = None) -> xr.DataArray:
    """Causal softmax fields; ``window``: no weight at lags beyond it."""
    rng = np.random.default_rng(seed)
    logits = 2.0 * rng.standard_normal((N, L, L))
    i, j = np.indices((L, L))
    logits[:, (j > i) | ((i - j) > (window if window is not None else L))] = -np.inf
    A = np.exp(logits - logits.max(-1, keepdims=True))
    return xr.DataArray(A / A.sum(-1, keepdims=True), dims=("snapshot", "query", "key"))


def band_of(A: xr.DataArray, tau_max: int = T) -> xr.DataArray:
    return msapod.to_lag(A).sel(lag=slice(0, tau_max))


@pytest.mark.parametrize("chunked", [False, True])
def test_band_from_the_full_field_equals_the_band_given(chunked):
    A = fields()
    R = band_of(A)
    if chunked:
        A, R = A.chunk({"snapshot": 5}), R.chunk({"snapshot": 5})
    x = msapod.analyze(A, tau_max=T, scales=SCALES)
    y = msapod.analyze(R, scales=SCALES)
    ref = msapod.analyze(band_of(fields()), scales=SCALES)  # in memory
    assert x["mean"].dims == ("query", "lag") and x["modes"].dims[-2:] == ("query", "lag")
    assert x.attrs["tau_max"] == y.attrs["tau_max"] == T and "key" not in x.dims
    np.testing.assert_array_equal(x["lag"], np.arange(T + 1))
    for name in ("mean", "energy", "spectrum", "T_spec", "H_star", "modes", "gram"):
        atol = 1e-12 if chunked else 0.0
        np.testing.assert_allclose(x[name], y[name], rtol=0, atol=atol, equal_nan=True)
        np.testing.assert_allclose(x[name], ref[name], rtol=0, atol=atol, equal_nan=True)


def test_band_statistics_are_the_full_fields_at_its_lags():
    """Mean field, lag moments C(tau, tau') and per-lag Grams G(tau) at the band's lags."""
    A = fields(seed=1)
    F = A.values
    q = np.arange(L)
    full = LagStats.of_ensemble(F, q, q)
    band = LagStats.of_ensemble(F, q, q, tau_max=T)
    given = LagStats.of_band(band_of(A).values, np.arange(T + 1), q, q)
    assert band.X.shape == (N, T + 1, L)  # N L (tau_max + 1) values, not N L^2
    for stats in (band, given):
        np.testing.assert_allclose(stats.mean, band_of(A.mean("snapshot")).values, atol=1e-15)
        for field in ("fluctuation", "total"):
            lags, C = stats.moments(field)
            _, C_full = full.moments(field)
            np.testing.assert_array_equal(lags, np.arange(T + 1))
            np.testing.assert_allclose(C, C_full[: T + 1, : T + 1], rtol=1e-12, atol=1e-16)
        np.testing.assert_allclose(
            stats.gram_tensor(), full.gram_tensor()[: T + 1], rtol=1e-12, atol=1e-16
        )


def test_fields_within_the_band_give_the_full_analysis():
    """A sliding window of T + 1 keys: the band's POD is the full one, and so is the
    scalogram at the band's lags."""
    A = fields(seed=2, window=T)
    full = msapod.analyze(A, scales=SCALES)
    band = msapod.analyze(A, tau_max=T, scales=SCALES)
    for name in ("spectrum", "T_spec", "H_star", "total_energy"):
        np.testing.assert_allclose(
            band[name].sel(window="plain"), full[name].sel(window="plain"), rtol=1e-12
        )
    np.testing.assert_allclose(band["energy"], full["energy"].sel(lag=slice(0, T)), rtol=1e-12)
    modes = msapod.from_lag(band["modes"].sel(window="plain"))
    np.testing.assert_allclose(
        np.abs(modes.values), np.abs(full["modes"].sel(window="plain").values), atol=1e-6
    )


def test_bad_bands_are_refused():
    A = fields()
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="tau_max"):
            msapod.analyze(A, tau_max=bad)
    with pytest.raises(ValueError, match="tau_max: expected a lag below the field's 40 lags"):
        msapod.analyze(A, tau_max=40)
    with pytest.raises(ValueError, match="tau_max: expected a lag below the field's 10 lags"):
        msapod.analyze(band_of(A), tau_max=10)
    two_sided = A + A.transpose("snapshot", "key", "query").values
    two_sided = two_sided / two_sided.sum("key")
    with pytest.raises(ValueError, match="tau_max: .* key after query"):
        msapod.analyze(two_sided, tau_max=T)
    heavy = band_of(A) * 1.5
    with pytest.raises(ValueError, match="lag band to sum to at most 1"):
        msapod.analyze(heavy)
    with pytest.raises(ValueError, match="lags 0, 1, ..., tau_max in order"):
        msapod.analyze(band_of(A).isel(lag=slice(1, None)))
