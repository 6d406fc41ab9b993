"""Jackknife uncertainty: exact leave-one-out scalogram, POD jackknife, seed intervals."""

import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.studies.measure.uncertainty import pod_jackknife, scale_jackknife


def _fields(n=10, L=36, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.random((n, L, L)) ** 3 * np.tril(np.ones((L, L)))
    A /= A.sum(-1, keepdims=True)
    return xr.DataArray(A, dims=("snapshot", "query", "key"))


def _of(A, field):
    """The field whose scalogram ``scale_jackknife(A, field=field)`` takes."""
    return A if field == "total" else msapod.reynolds(A)["fluctuation"]


@pytest.mark.parametrize("field", ["total", "fluctuation"])
def test_scale_jackknife_full_ensemble_matches_scalogram(field):
    A = _fields()
    sj = scale_jackknife(A, field=field)
    sc = msapod.scalogram(_of(A, field))
    np.testing.assert_allclose(sj["scale_spectrum"], sc["spectrum"], rtol=1e-10)
    assert float(sj["scale_centroid"]) == pytest.approx(
        float(msapod.scale_centroid(sc["spectrum"])), rel=1e-12
    )
    assert float(sj["energy"]) == pytest.approx(float(sc["energy"].sum()), rel=1e-10)
    assert sj.attrs["scalogram_field"] == field


def test_scale_jackknife_default_is_the_analysis_default():
    A = _fields()
    want = msapod.analyze(A, n_modes=2)
    sj = scale_jackknife(A)
    assert sj.attrs["scalogram_field"] == want.attrs["scalogram_field"] == "total"
    np.testing.assert_allclose(sj["scale_spectrum"], want["scale_spectrum"], rtol=1e-9)


@pytest.mark.parametrize("field", ["total", "fluctuation"])
@pytest.mark.parametrize("i", [0, 4, 9])
def test_scale_jackknife_replicates_equal_brute_force_leave_one_out(i, field):
    A = _fields()
    sj = scale_jackknife(A, field=field)
    sci = msapod.scalogram(_of(A.drop_isel(snapshot=i), field))  # u: mean re-estimated
    assert float(sj["scale_centroid_jack"][i]) == pytest.approx(
        float(msapod.scale_centroid(sci["spectrum"])), rel=1e-10
    )
    assert float(sj["energy_jack"][i]) == pytest.approx(float(sci["energy"].sum()), rel=1e-10)


def test_scale_jackknife_se_formula():
    A = _fields()
    sj = scale_jackknife(A, field="fluctuation")
    rep = sj["scale_centroid_jack"].values
    n = rep.size
    want = np.sqrt((n - 1) / n * ((rep - rep.mean()) ** 2).sum())
    assert float(sj["scale_centroid_se"]) == pytest.approx(want)


def test_scale_jackknife_errors():
    A = _fields()
    with pytest.raises(ValueError, match="field"):
        scale_jackknife(A, field="mean")
    with pytest.raises(ValueError, match="A"):
        scale_jackknife(A.expand_dims(layer=[1]))
    with pytest.raises(ValueError, match="snapshot"):
        scale_jackknife(A.isel(snapshot=slice(0, 2)))


def test_pod_jackknife_matches_manual_and_keeps_nan_windows():
    A = _fields(n=14)
    u = msapod.reynolds(A)["fluctuation"]
    g = msapod.pod(u)["gram"]
    stack = xr.concat([g, g * np.nan], dim=xr.DataArray(["plain", "missing"], dims="window"))
    pj = pod_jackknife(stack, eps=(0.1,))
    jk = msapod.bootstrap_spectrum(g, method="jackknife")
    T = msapod.spectral_concentration(jk)["T_spec"]
    assert float(pj["T_spec_se"].sel(window="plain")) == pytest.approx(
        float(msapod.jackknife_se(T)), rel=1e-12
    )
    H = msapod.effective_rank(jk, 0.1, n_snapshots=13)
    assert float(pj["H_star_se"].sel(window="plain", eps=0.1)) == pytest.approx(
        float(msapod.jackknife_se(H))
    )
    assert np.isnan(pj["T_spec_se"].sel(window="missing"))
    with pytest.raises(ValueError, match="gram"):
        pod_jackknife(g.rename(snapshot_="other"))
