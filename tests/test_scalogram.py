import numpy as np
import pytest
import xarray as xr

import msapod


def direct_cwt(r, scales, omega0=6.0):
    """Exact float64 direct-sum Morlet transform, written independently of msapod."""
    L = len(r)
    tau = np.arange(L, dtype=np.float64)
    W = np.zeros((len(scales), L), dtype=np.complex128)
    for ia, a in enumerate(scales):
        for b in range(L):
            eta = (tau - b) / a
            psi = np.pi**-0.25 * np.exp(1j * omega0 * eta) * np.exp(-0.5 * eta**2)
            W[ia, b] = np.sum(r * np.conj(psi)) / np.sqrt(a)
    return W


@pytest.fixture
def noise_field():
    rng = np.random.default_rng(0)
    u = np.tril(rng.standard_normal((4, 20, 20)))
    return xr.DataArray(u, dims=("snapshot", "query", "key"))


def test_scalogram_matches_direct_sum(noise_field):
    scales = np.geomspace(2.0, 10, 7)
    ds = msapod.scalogram(noise_field, scales)
    R = msapod.to_lag(noise_field).values
    E = np.zeros((len(scales), R.shape[-1]))
    for s in range(R.shape[0]):
        for i in range(R.shape[1]):
            E += np.abs(direct_cwt(R[s, i], scales)) ** 2
    E /= R.shape[0] * R.shape[1]
    np.testing.assert_allclose(ds["energy"].values, E, rtol=1e-10, atol=1e-14 * E.max())
    np.testing.assert_allclose(ds["spectrum"].values, E.sum(1) / scales, rtol=1e-10)
    raw = msapod.scalogram(noise_field, scales, bias_correction=False)
    np.testing.assert_allclose(raw["spectrum"].values, E.sum(1), rtol=1e-10)


def test_cwt_matches_direct_sum(noise_field):
    scales = [2.0, 5.0]
    R = msapod.to_lag(noise_field)
    W = msapod.cwt(R.isel(snapshot=0, query=15), scales)
    np.testing.assert_allclose(
        W.values, direct_cwt(R.values[0, 15], scales), rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("period", [4.0, 7.5, 12.0, 25.0, 40.0])
def test_planted_period_found_within_one_scale_bin(period):
    rng = np.random.default_rng(3)
    tau = np.arange(256)
    env = np.exp(-0.5 * ((tau - 128) / (2.5 * period + 10)) ** 2)
    prof = np.cos(2 * np.pi * tau / period + rng.uniform(0, 2 * np.pi, (30, 1, 1))) * env
    X = xr.DataArray(prof, dims=("snapshot", "query", "lag"), coords={"lag": tau})
    ds = msapod.scalogram(X)
    peaks = msapod.dominant_scales(ds["spectrum"])
    periods = ds["period"].values
    best = np.argmin(np.abs(periods - period))
    found = np.flatnonzero(np.isclose(ds["scale"].values, peaks.values[0]))[0]
    assert abs(found - best) <= 1, (period, peaks["period"].values)
    assert not bool(peaks["edge"][0])


def test_fourier_period_formula():
    a = np.array([1.0, 10.0])
    lam = msapod.fourier_period(a, 6.0)
    np.testing.assert_allclose(lam, 4 * np.pi * a / (6 + np.sqrt(38)))
    assert 1.03 < lam[0] < 1.04


def test_dominant_scales_orders_and_pads():
    s = np.geomspace(3, 100, 30)
    spec = np.exp(-((np.log(s) - np.log(5)) ** 2) / 0.05) + 2 * np.exp(
        -((np.log(s) - np.log(40)) ** 2) / 0.05
    )
    da = xr.DataArray(np.stack([spec, -s]), dims=("layer", "scale"), coords={"scale": s})
    peaks = msapod.dominant_scales(da, max_count=3)
    assert peaks.dims == ("layer", "peak")
    assert abs(peaks.values[0, 0] - 40) / 40 < 0.1 and abs(peaks.values[0, 1] - 5) / 5 < 0.1
    assert np.isnan(peaks.values[0, 2])
    # monotone decreasing spectrum: the only maximum is the smallest scale, an edge
    assert peaks.values[1, 0] == s[0] and bool(peaks["edge"].values[1, 0])
    none = msapod.dominant_scales(da, include_edges=False)
    assert np.isnan(none.values[1, 0])


def test_coherency_identical_rows_one_and_noise_near_zero():
    rng = np.random.default_rng(5)
    L, n = 64, 40
    base = rng.standard_normal((n, 1, L))
    same = np.repeat(base, 3, axis=1) * np.array([1.0, 2.0, -0.5])[None, :, None]
    X = xr.DataArray(same, dims=("snapshot", "query", "lag"), coords={"lag": np.arange(L)})
    g = msapod.coherency(X, [4.0, 10.0])
    np.testing.assert_allclose(g.values, 1.0, atol=1e-10)
    noise = xr.DataArray(
        rng.standard_normal((200, 3, L)),
        dims=("snapshot", "query", "lag"),
        coords={"lag": np.arange(L)},
    )
    g = msapod.coherency(noise, [4.0, 10.0])
    off = g.values[:, ~np.eye(3, dtype=bool)]
    assert off.max() < 0.05
    np.testing.assert_allclose(np.diagonal(g.values, axis1=1, axis2=2), 1.0)


def test_coherency_matches_explicit_transform():
    rng = np.random.default_rng(6)
    X = xr.DataArray(
        rng.standard_normal((5, 4, 24)),
        dims=("snapshot", "query", "lag"),
        coords={"lag": np.arange(24)},
    )
    g = msapod.coherency(X, [3.0])
    W = np.stack([[direct_cwt(X.values[s, i], [3.0])[0] for i in range(4)] for s in range(5)])
    G = np.einsum("sib,sjb->ij", W, W.conj())
    d = np.real(np.diag(G))
    np.testing.assert_allclose(g.values[0], np.abs(G) ** 2 / np.outer(d, d), rtol=1e-8)


@pytest.mark.parametrize("scales", [[0.5, 2.0], [3.0, 11.0], [np.nan], [5.0, 3.0]])
def test_bad_scales_raise(noise_field, scales):
    with pytest.raises(ValueError, match="scales"):
        msapod.scalogram(noise_field, scales)


def test_scalogram_broadcasts_leading_dims(noise_field):
    stacked = xr.concat([noise_field, 2 * noise_field], dim="layer")
    ds = msapod.scalogram(stacked, [2.0, 4.0])
    assert ds["energy"].dims == ("layer", "scale", "lag")
    np.testing.assert_allclose(ds["energy"][1], 4 * ds["energy"][0], rtol=1e-12)


def test_dominant_period_follows_the_spectrum_omega0():
    """The period of a dominant scale uses the scalogram's omega0 (not a default of 6)."""
    from msapod.wavelets import fourier_period

    rng = np.random.default_rng(0)
    lag = np.arange(64)
    x = np.sin(2 * np.pi * lag / 12)[None, None, :] + 0.1 * rng.standard_normal((20, 4, 64))
    r = xr.DataArray(x, dims=("snapshot", "query", "lag"), coords={"lag": lag})
    for omega0 in (6.0, 10.0):
        spec = msapod.scalogram(r, omega0=omega0)["spectrum"]
        assert spec.attrs["omega0"] == omega0
        d = msapod.dominant_scales(spec, 1)
        a = float(d.isel(peak=0))
        np.testing.assert_allclose(float(d["period"].isel(peak=0)), fourier_period(a, omega0))
        # without the period coordinate the attrs still carry omega0
        d2 = msapod.dominant_scales(spec.drop_vars("period"), 1)
        np.testing.assert_allclose(float(d2["period"].isel(peak=0)), fourier_period(a, omega0))


@pytest.mark.parametrize("omega0", [4.0, 6.0, 10.0])
def test_min_valid_scale_has_a_period_of_two_lags(omega0):
    a = msapod.min_valid_scale(omega0)
    assert msapod.fourier_period(a, omega0) == pytest.approx(2.0, rel=1e-12)
    if omega0 == 6.0:
        assert a == pytest.approx(1.936, abs=1e-3)


def test_scalogram_warns_below_the_sampling_limit(noise_field):
    with pytest.warns(UserWarning, match="under two lags"):
        msapod.scalogram(noise_field, [1.5, 3.0])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        msapod.scalogram(noise_field, [msapod.min_valid_scale(), 3.0])
        msapod.scalogram(noise_field)  # the default grid starts at a valid scale
