import numpy as np
import pytest
import xarray as xr

import msapod


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.3])
def test_power_law_recovered(beta):
    k = np.arange(1, 151)
    lam = xr.DataArray(3.0 * k**-beta, dims="rank")
    fit = msapod.spectral_concentration(lam)
    np.testing.assert_allclose(float(fit["beta"]), beta, rtol=1e-10)
    np.testing.assert_allclose(float(fit["T_spec"]), 1 / beta, rtol=1e-10)
    assert float(fit["r2"]) > 1 - 1e-12
    assert fit.attrs["k_max"] == 75 and int(fit["n_fit"]) == 75


def test_fit_range_matters_for_broken_power_law():
    k = np.arange(1, 101)
    lam = np.where(k <= 20, k**-1.0, 20.0 * k**-2.0)  # continuous at k = 20
    da = xr.DataArray(lam, dims="mode")
    head = msapod.spectral_concentration(da, 1, 20)
    tail = msapod.spectral_concentration(da, 20, 100)
    np.testing.assert_allclose([float(head["beta"]), float(tail["beta"])], [1.0, 2.0], rtol=1e-9)
    mixed = msapod.spectral_concentration(da, 1, 100)
    assert float(mixed["r2"]) < 0.99 and float(mixed["beta_stderr"]) > 0


def test_effective_rank_energy_and_l2():
    lam = xr.DataArray([5.0, 3.0, 1.0, 0.5, 0.5, 0.0], dims="rank")
    # tails after K: 5,2,1,0.5,0,0 of 10
    assert int(msapod.effective_rank(lam, 0.10)) == 3
    assert int(msapod.effective_rank(lam, 0.5)) == 1
    # l2: sqrt(tail) <= eps -> tail <= eps^2
    assert int(msapod.effective_rank(lam, 0.3, "l2")) == 4  # 0.05 <= 0.09
    assert int(msapod.effective_rank(lam, 0.3, "energy")) == 2


def test_effective_rank_flags_rank_limit():
    lam = xr.DataArray(np.r_[np.ones(9), 0.0], dims="rank", attrs={"n_snapshots": 10})
    H = msapod.effective_rank(lam, 0.05)
    assert int(H) == 9 and bool(H["at_rank_limit"])
    H = msapod.effective_rank(lam, 0.5)
    assert int(H) == 5 and not bool(H["at_rank_limit"])


@pytest.mark.parametrize("eps", [0.0, 1.0, -0.1, 2])
def test_bad_eps(eps):
    with pytest.raises(ValueError, match="eps"):
        msapod.effective_rank(xr.DataArray([1.0, 0.5], dims="rank"), eps)


def test_bad_spectra():
    with pytest.raises(ValueError, match="non-increasing"):
        msapod.spectral_concentration(xr.DataArray(np.arange(1.0, 20.0), dims="rank"))
    with pytest.raises(ValueError, match="finite"):
        msapod.effective_rank(xr.DataArray([1.0, np.nan], dims="rank"))
    with pytest.raises(ValueError, match="criterion"):
        msapod.effective_rank(xr.DataArray([1.0, 0.5], dims="rank"), criterion="l1")
    with pytest.raises(ValueError, match="k_min"):
        msapod.spectral_concentration(xr.DataArray([3.0, 2.0, 1.0], dims="rank"), 2, 9)


def test_bootstrap_spectrum_matches_direct_resampling():
    rng = np.random.default_rng(7)
    u = xr.DataArray(np.tril(rng.standard_normal((12, 6, 6))), dims=("snapshot", "query", "key"))
    u = u - u.mean("snapshot")
    res = msapod.pod(u)
    boot = msapod.bootstrap_spectrum(res["gram"], n_boot=3, seed=1, method="resample")
    assert boot.dims == ("boot", "rank")
    idx = np.random.default_rng(1).integers(0, 12, size=(3, 12))
    for r in range(3):
        ur = u.isel(snapshot=idx[r])
        ur = ur - ur.mean("snapshot")
        direct = msapod.pod(ur.assign_coords(snapshot=np.arange(12)))["spectrum"].values
        np.testing.assert_allclose(boot.values[r], direct, rtol=1e-9, atol=1e-13)
    with pytest.raises(ValueError, match="n_boot"):
        msapod.bootstrap_spectrum(res["gram"], n_boot=0)


def test_scale_centroid_of_concentrated_and_flat_spectra():
    s = np.geomspace(3, 96, 11)
    one = xr.DataArray(np.where(np.arange(11) == 4, 2.0, 0.0), dims="scale", coords={"scale": s})
    np.testing.assert_allclose(float(msapod.scale_centroid(one)), s[4])
    flat = xr.DataArray(np.ones(11), dims="scale", coords={"scale": s})
    np.testing.assert_allclose(float(msapod.scale_centroid(flat)), np.sqrt(3 * 96))
    with pytest.raises(ValueError, match="non-negative"):
        msapod.scale_centroid(-flat)


def test_bayesian_bootstrap_matches_weighted_ensemble():
    rng = np.random.default_rng(8)
    u = xr.DataArray(np.tril(rng.standard_normal((10, 5, 5))), dims=("snapshot", "query", "key"))
    u = u - u.mean("snapshot")
    res = msapod.pod(u)
    boot = msapod.bootstrap_spectrum(res["gram"], n_boot=2, seed=3)
    w = np.random.default_rng(3).dirichlet(np.ones(10), size=2) * 10
    for r in range(2):
        wr = xr.DataArray(w[r], dims="snapshot")
        uc = u - (u * wr).sum("snapshot") / 10
        X = (uc * np.sqrt(wr)).values.reshape(10, -1)
        ref = np.sort(np.linalg.eigvalsh(X @ X.T / 10))[::-1]
        np.testing.assert_allclose(boot.values[r], np.clip(ref, 0, None), rtol=1e-9, atol=1e-13)
    # the rank is kept: N - 1 non-zero eigenvalues in every replicate
    assert (boot.values[:, 8] > 1e-10 * boot.values[:, 0]).all()
    with pytest.raises(ValueError, match="method"):
        msapod.bootstrap_spectrum(res["gram"], method="subsample")


def test_jackknife_replicates_and_standard_error():
    rng = np.random.default_rng(9)
    u = xr.DataArray(np.tril(rng.standard_normal((8, 5, 5))), dims=("snapshot", "query", "key"))
    u = u - u.mean("snapshot")
    res = msapod.pod(u)
    jk = msapod.bootstrap_spectrum(res["gram"], method="jackknife")
    assert jk.sizes["boot"] == 8
    for i in (0, 5):
        ui = u.drop_isel(snapshot=i)
        ui = ui - ui.mean("snapshot")
        ref = msapod.pod(ui)["spectrum"].values
        np.testing.assert_allclose(jk.values[i, :7], ref, rtol=1e-9, atol=1e-13)
    # the jackknife SE of the mean of x is the usual standard error
    x = xr.DataArray(rng.standard_normal(30), dims="i")
    reps = xr.DataArray([(x.sum() - x[i]) / 29 for i in range(30)], dims="boot")
    np.testing.assert_allclose(float(msapod.jackknife_se(reps)), float(x.std(ddof=1)) / np.sqrt(30))
