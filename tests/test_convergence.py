"""Convergence in N: nested ensembles give exactly pod()'s spectra for every N."""

import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.studies.measure.convergence import nested_ensemble, nested_spectra
from msapod.studies.measure.uncertainty import fractional_rank


def _fields(n=90, L=24, seed=1):
    rng = np.random.default_rng(seed)
    A = rng.random((n, L, L)) ** 3 * np.tril(np.ones((L, L)))
    A /= A.sum(-1, keepdims=True)
    return xr.DataArray(A, dims=("snapshot", "query", "key"))


def test_nested_spectra_equal_pod_of_each_subensemble():
    A = _fields()
    ds = nested_spectra(A, [30, 60, 90], fixed_k=(1, 6), groups=10)
    for n in (30, 60, 90):
        u = msapod.reynolds(A.isel(snapshot=slice(0, n)))["fluctuation"]
        lam = msapod.pod(u)["spectrum"]
        np.testing.assert_allclose(ds["spectrum"].sel(n=n)[:n], lam, atol=1e-12 * float(lam[0]))
        assert np.isnan(ds["spectrum"].sel(n=n)[n:]).all()
        assert float(ds["T_spec"].sel(n=n)) == pytest.approx(
            float(msapod.spectral_concentration(lam)["T_spec"])
        )
        assert float(ds["T_spec_fixed"].sel(n=n)) == pytest.approx(
            float(msapod.spectral_concentration(lam, 1, 6)["T_spec"])
        )
        h = msapod.effective_rank(lam, 0.1, n_snapshots=n)
        assert int(ds["H_star"].sel(n=n, eps=0.1)) == int(h)
        assert bool(ds["at_rank_limit"].sel(n=n, eps=0.1)) == bool(h["at_rank_limit"])
    assert (ds["T_spec_se"] > 0).all() and (ds["H_star_se"] > 0).all()


def test_planted_rank_is_found_at_every_n():
    rng = np.random.default_rng(0)
    L, n, r = 20, 80, 5
    mask = np.tril(np.ones((L, L), bool))
    basis = np.linalg.qr(rng.standard_normal((mask.sum(), r)))[0].T
    u = np.zeros((n, L, L))
    u[:, mask] = rng.standard_normal((n, r)) @ basis
    A = xr.DataArray(u + np.tril(np.ones((L, L))), dims=("snapshot", "query", "key"))
    ds = nested_spectra(A, [20, 40, 80], eps=(1e-9,), fixed_k=(1, 4), groups=5)
    assert (ds["H_star"].sel(eps=1e-9) == r).all()


def test_nested_ensemble_is_nested_random_and_non_overlapping():
    off = nested_ensemble(100_000, 300, 256, seed=0)
    assert len(set(off)) == 300 and (np.diff(np.sort(off)) >= 256).all()
    assert not (np.diff(off) > 0).all()  # a random order, not sorted
    np.testing.assert_array_equal(off, nested_ensemble(100_000, 300, 256, seed=0))


def test_nested_spectra_errors():
    A = _fields(n=40)
    with pytest.raises(ValueError, match="ns"):
        nested_spectra(A, [30, 20], groups=5)
    with pytest.raises(ValueError, match="ns"):
        nested_spectra(A, [10, 50], groups=5)
    with pytest.raises(ValueError, match="fixed_k"):
        nested_spectra(A, [20, 40], groups=5, fixed_k=(1, 15))


def test_fractional_rank_brackets_the_integer_rank():
    rng = np.random.default_rng(3)
    lam = np.sort(rng.random((50, 30)) ** 4, -1)[:, ::-1]
    for eps in (0.05, 0.2):
        H = msapod.effective_rank(xr.DataArray(lam, dims=("s", "rank")), eps).values
        f = fractional_rank(lam, eps)
        assert ((f > H - 1) & (f <= H + 1e-12)).all()
    # exactly linear between ranks: tail goes 1, 0.5, 0 -> eps 0.25 sits half-way
    assert fractional_rank(np.array([1.0, 1.0]), 0.25) == pytest.approx(1.5)
