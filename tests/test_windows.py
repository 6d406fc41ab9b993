import numpy as np
import pytest
import xarray as xr

import msapod


def test_lag_window_formula_and_broadcast():
    lags = np.arange(50)
    w = msapod.lag_window(lags, 10.0, 4.0)
    np.testing.assert_allclose(w.values, np.exp(-((lags - 10.0) ** 2) / 32.0))
    assert w.values.argmax() == 10 and w.attrs["centre"] == 10.0
    c = xr.DataArray([5.0, 20.0], dims="peak")
    s = xr.DataArray([2.0, 8.0], dims="peak")
    wb = msapod.lag_window(lags, c, s)
    assert wb.dims == ("peak", "lag")
    np.testing.assert_allclose(wb.sel(peak=1).values, np.exp(-((lags - 20.0) ** 2) / 128.0))


@pytest.mark.parametrize("width", [0.0, -1.0, np.nan])
def test_lag_window_bad_width(width):
    with pytest.raises(ValueError, match="width|centre"):
        msapod.lag_window(np.arange(5), 1.0, width)


def test_apply_window_multiplies_by_w_of_query_minus_key():
    rng = np.random.default_rng(0)
    u = xr.DataArray(np.tril(rng.standard_normal((3, 9, 9))), dims=("snapshot", "query", "key"))
    w = msapod.lag_window(np.arange(9), 2.0, 1.5)
    uw = msapod.apply_window(u, w)
    i, j = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    want = u.values * np.where(i >= j, np.exp(-((i - j - 2.0) ** 2) / 4.5), 0.0)
    np.testing.assert_allclose(uw.transpose(*u.dims).values, want, atol=1e-15)
    with pytest.raises(ValueError, match="window: covers lags"):
        msapod.apply_window(u, msapod.lag_window(np.arange(4), 2.0, 1.0))


def test_window_parameters_rules():
    lags = np.arange(40)
    scales = np.array([3.0, 6.0, 12.0])
    E = np.exp(-((lags[None, :] - np.array([[5.0], [17.0], [30.0]])) ** 2) / 8.0)
    energy = xr.DataArray(E, dims=("scale", "lag"), coords={"scale": scales, "lag": lags})
    peaks = xr.DataArray([6.0, np.nan], dims="peak")
    p = msapod.window_parameters(energy, peaks)
    assert p["centre"].values[0] == 17 and p["width"].values[0] == 6.0
    assert np.isnan(p["centre"].values[1]) and np.isnan(p["width"].values[1])
    c = msapod.window_parameters(energy, peaks, centre="centroid", width=0.5)
    assert abs(c["centre"].values[0] - 17) < 0.01 and c["width"].values[0] == 3.0
    assert msapod.window_parameters(energy, peaks, centre="scale")["centre"].values[0] == 6.0
    with pytest.raises(ValueError, match="centre"):
        msapod.window_parameters(energy, peaks, centre="middle")
    with pytest.raises(ValueError, match="width"):
        msapod.window_parameters(energy, peaks, width=0)
