"""C1's and C2's statistics of the scale spectrum: the band shares and the log-log slope on
spectra whose answer is known."""

import numpy as np
import pytest
import xarray as xr

from msapod.studies.measure.evidence import (
    band_shares,
    fields_evidence,
    spectrum_slope,
)
from msapod.studies.verdict.curve import MAIN_READING as MAIN_SPEC
from msapod.wavelets import log_scales


@pytest.mark.parametrize("p", [-1.5, 0.0, 0.7, 2.0])
def test_slope_of_a_power_law(p):
    s = log_scales(256, 3.0, 128.0, 48)
    got = spectrum_slope(3.0 * s**p, s)
    assert got == pytest.approx(p, abs=1e-9 * max(1.0, abs(p)))


def test_slope_reads_only_its_range():
    # a broken power law: a^-2 below 10, a^+1 above; the fit over [12, 100] sees +1 only
    s = log_scales(256, 3.0, 128.0, 48)
    E = np.where(s < 10, 10.0**3 * s**-2.0, s**1.0)
    assert spectrum_slope(E, s, (12.0, 100.0)) == pytest.approx(1.0, abs=1e-9)
    assert not spectrum_slope(E, s, (3.0, 128.0)) == pytest.approx(1.0, abs=0.1)
    # too few scales in the range, or no energy there: no slope
    assert np.isnan(spectrum_slope(E, s, (200.0, 300.0)))
    assert np.isnan(spectrum_slope(np.zeros_like(s), s))
    with pytest.raises(ValueError, match="scale_range"):
        spectrum_slope(E, s, (10.0, 5.0))


@pytest.mark.parametrize("p", [-1.0, 0.5, 1.0])
def test_band_shares_of_a_power_law_equal_the_integral(p):
    """On a dense log grid the shares are the integrals of a^p over d ln a:
    (7^p - a0^p) / (a1^p - a0^p) below 7 and (a1^p - 20^p) / (a1^p - a0^p) above 20."""
    a0, a1 = 3.0, 128.0
    s = log_scales(256, a0, a1, 2000)
    fine, coarse = band_shares(s**p, s)
    den = a1**p - a0**p
    assert fine == pytest.approx((7.0**p - a0**p) / den, abs=2e-3)
    assert coarse == pytest.approx((a1**p - 20.0**p) / den, abs=2e-3)


def test_band_shares_edge_cases():
    s = log_scales(256, 3.0, 128.0, 48)
    spike_fine = np.where(np.arange(s.size) == 2, 1.0, 0.0)
    spike_coarse = np.where(np.arange(s.size) == s.size - 3, 1.0, 0.0)
    assert band_shares(spike_fine, s) == (1.0, 0.0)
    assert band_shares(spike_coarse, s) == (0.0, 1.0)
    fine, coarse = band_shares(np.zeros_like(s), s)
    assert np.isnan(fine) and np.isnan(coarse)
    with pytest.raises(ValueError, match="scales"):
        band_shares(np.ones(5), s)


def _lag_field(profile, n=40, length=64, seed=0, layers=6, noise=0.05):
    """``layers`` layers of n snapshots whose lag profile is ``profile(lag)`` (the same in
    every layer) plus independent noise per layer and snapshot, causal."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    lag = i - j
    causal = lag >= 0
    mean = np.where(causal, profile(np.maximum(lag, 0)), 0.0)
    noise = noise * rng.standard_normal((layers, n, length, length)) * mean.max()
    F = np.where(causal, mean + noise, 0.0)
    return xr.DataArray(
        F,
        dims=("layer", "snapshot", "query", "key"),
        coords={
            "layer": np.arange(1, layers + 1),
            "query": np.arange(length),
            "key": np.arange(length),
        },
    )


def test_band_statistics_of_fine_and_coarse_oscillations():
    """A lag profile oscillating with period 4 puts most of E(a) at a <= 7; one with
    period 40 most at a >= 20 (the rectified spectrum of the attention, scales from 3)."""
    main = {a: (MAIN_SPEC[a],) for a in ("field", "normalisation", "scale_min")}
    fine, coarse = (
        fields_evidence(_lag_field(profile, layers=1), axes=main, window_se=False)
        for profile in (
            lambda t: 1 + np.cos(2 * np.pi * t / 4),
            lambda t: 1 + np.cos(2 * np.pi * t / 40),
        )
    )
    assert float(fine["fine_share"].squeeze()) > 0.5 > float(coarse["fine_share"].squeeze())
    assert float(coarse["coarse_share"].squeeze()) > 0.5 > float(fine["coarse_share"].squeeze())
    assert float(coarse["scale_slope"].squeeze()) > float(fine["scale_slope"].squeeze())
    assert (fine["fine_share_se"] > 0).all()  # the noise gives the jackknife something
