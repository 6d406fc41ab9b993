import numpy as np
import pytest
import xarray as xr

import msapod


def planted_attention(n=40, L=96, period=12.0, centre=40.0, seed=0):
    """Softmax attention whose fluctuation is one lag pattern of a known period."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    tau = i - j
    pattern = np.cos(2 * np.pi * tau / period) * np.exp(-0.5 * ((tau - centre) / 15.0) ** 2)
    c = rng.standard_normal(n)[:, None, None]
    logits = np.where(tau >= 0, -tau / 40.0 + 0.3 * c * pattern, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return xr.DataArray(A, dims=("snapshot", "query", "key"), attrs={"model": "synthetic"})


def test_analyze_finds_planted_scale_and_low_rank():
    A = planted_attention()
    ds = msapod.analyze(A, max_peaks=2, n_modes=4, field="fluctuation")  # planted in u
    a1 = float(ds["dominant_scale"].sel(peak=0))
    period = float(msapod.fourier_period(a1))
    assert abs(period - 12.0) / 12.0 < 0.15, period
    centre = float(ds["window_centre"].sel(window="scale-1"))
    assert 25 <= centre <= 55, centre
    # one planted pattern: the scale-selective spectrum is dominated by its first mode
    lam = ds["spectrum"].sel(window="scale-1").values
    assert lam[0] / lam.sum() > 0.9
    assert int(ds["H_star"].sel(eps=0.10, window="scale-1")) == 1
    # parameters recorded
    for key in ("omega0", "window_centre_rule", "criterion", "fit_k_max", "model"):
        assert key in ds.attrs
    np.testing.assert_allclose(
        ds["total_energy"].sel(window="plain"),
        (msapod.reynolds(A)["fluctuation"] ** 2).sum(("query", "key")).mean(),
        rtol=1e-10,
    )


def test_analyze_default_scalogram_is_that_of_the_attention():
    """The default field is A, mean included: its scalogram is u's plus the mean field's,
    and it is the scalogram ``msapod.scalogram`` gives of A's lag form."""
    A = planted_attention()
    ds = msapod.analyze(A, max_peaks=2, n_modes=4)
    assert ds.attrs["scalogram_field"] == "total"
    u = msapod.analyze(A, max_peaks=2, n_modes=4, field="fluctuation")
    mean = msapod.reynolds(A)["mean"].expand_dims(snapshot=1)
    mean_energy = msapod.scalogram(msapod.to_lag(mean), scales=ds["scale"].values)["energy"]
    want = u["energy"] + mean_energy.transpose("scale", "lag").values
    np.testing.assert_allclose(ds["energy"], want, rtol=1e-9, atol=1e-12 * float(want.max()))
    direct = msapod.scalogram(msapod.to_lag(A), scales=ds["scale"].values)["spectrum"]
    np.testing.assert_allclose(ds["scale_spectrum"], direct.values, rtol=1e-9)
    # the POD decomposes u under either field; only the windows follow the scalogram
    np.testing.assert_allclose(
        ds["spectrum"].sel(window="plain"), u["spectrum"].sel(window="plain"), rtol=1e-12
    )


def test_analyze_leading_dims_match_single_runs():
    A = xr.concat(
        [planted_attention(seed=1), planted_attention(period=20.0, seed=2)], dim="layer"
    ).assign_coords(layer=[1, 2])
    ds = msapod.analyze(A, max_peaks=2, n_modes=3, coherency=True)
    for layer in [1, 2]:
        one = msapod.analyze(A.sel(layer=layer), max_peaks=2, n_modes=3)
        np.testing.assert_allclose(
            ds["spectrum"].sel(layer=layer).values,
            one["spectrum"].values,
            rtol=1e-10,
            equal_nan=True,
        )
        np.testing.assert_allclose(
            ds["T_spec"].sel(layer=layer).values, one["T_spec"].values, rtol=1e-10, equal_nan=True
        )
    g = ds["coherency"]
    assert g.dims == ("layer", "peak", "query_i", "query_j")
    vals = g.values[np.isfinite(g.values)]
    assert vals.min() >= 0 and vals.max() <= 1 + 1e-12


def test_analyze_rejects_bad_input():
    A = planted_attention(n=5, L=20)
    with pytest.raises(ValueError, match="rows summing to 1"):
        msapod.analyze(A * 2)
    with pytest.raises(ValueError, match="field"):
        msapod.analyze(A, field="mean")
    with pytest.raises(ValueError, match="eps"):
        msapod.analyze(A, eps=1.5)
    with pytest.raises(ValueError, match="scales"):
        msapod.analyze(A, scales=[3.0, 50.0])


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("n_modes", 9, r"n_modes: expected an integer 1\.\.8 \(at most the number of snapshots"),
        ("n_modes", 2.5, r"n_modes: expected an integer 1\.\.8 or None, got 2\.5"),
        ("n_modes", True, r"n_modes: expected an integer 1\.\.8 or None, got True"),
        ("n_modes", 0, r"n_modes: expected an integer 1\.\.8 .*got 0"),
        ("n_modes", "3", r"n_modes: expected an integer"),
        ("max_peaks", 0, r"max_peaks: expected an integer >= 1, got 0"),
        ("max_peaks", 2.5, r"max_peaks: expected an integer >= 1"),
        ("width", 0.0, r"width: expected a finite factor kappa > 0"),
        ("width", float("nan"), r"width: expected a finite factor kappa > 0"),
        ("width", -1.0, r"width: expected a finite factor kappa > 0"),
        ("centre", "middle", r"centre: expected one of \('peak', 'centroid', 'scale'\)"),
        ("centre", float("nan"), r"centre: expected one of .* a finite number"),
        ("omega0", "6", r"omega0: expected a positive number"),
        ("criterion", "rank", r"criterion: expected one of \('energy', 'l2'\)"),
        ("k_min", 1.5, r"k_min: expected an integer >= 1"),
        ("k_max", 2.5, r"k_max: expected an integer >= 2"),
        ("include_edges", "yes", r"include_edges: expected True or False"),
        ("coherency", 1, r"coherency: expected True or False"),
        ("check_stochastic", "no", r"check_stochastic: expected True or False"),
        ("scales", "x", r"scales: expected a sequence of numbers"),
    ],
)
def test_analyze_names_the_bad_option(option, value, message):
    A = planted_attention(n=8, L=20)
    with pytest.raises(ValueError, match=message):
        msapod.analyze(A, **{option: value})


@pytest.mark.parametrize(
    "options, message",
    [
        ({"k_min": 5, "k_max": 3}, r"k_min, k_max: expected 1 <= k_min < k_max <= 8, got 5, 3"),
        ({"k_max": 100}, r"k_min, k_max: expected 1 <= k_min < k_max <= 8, got 1, 100"),
        ({"scales": [2.0, np.nan]}, r"scales: expected finite values"),
        ({"scales": [0.5, 2.0]}, r"scales: expected values in \[1, 10\]"),
        ({"scales": [2.0, 11.0]}, r"scales: expected values in \[1, 10\]"),
        ({"dim": "doc"}, r"A: expected dims including \('doc', 'query', 'key'\)"),
        ({"dim": 3}, r"dim: expected the name of the snapshot dim"),
        ({"eps": []}, r"eps: expected one number or a non-empty sequence"),
        ({"eps": [0.1, 0.0]}, r"eps: expected a number in \(0, 1\)"),
        ({"omega0": -6.0}, r"omega0: expected a finite number > 0"),
    ],
)
def test_analyze_names_the_bad_options(options, message):
    A = planted_attention(n=8, L=20)
    with pytest.raises(ValueError, match=message):
        msapod.analyze(A, **options)


def _set(A: xr.DataArray, index, value) -> xr.DataArray:
    A = A.copy()
    A.values[index] = value
    return A


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (lambda A: _set(A, (0, 3, 1), np.nan), ValueError, r"A: expected finite values, found 1"),
        (lambda A: _set(A, (2, 5, 0), np.inf), ValueError, r"A: expected finite values, found 1"),
        (lambda A: _set(A, (1, 4), 0.0), ValueError, r"worst row sums to 0 \(\|deviation\| 1"),
        (
            lambda A: _set(A, (1, 4, 0), -0.5),
            ValueError,
            r"A: expected attention probabilities >= 0",
        ),
        (lambda A: A.astype(complex), ValueError, r"A: expected real numbers"),
        (
            lambda A: A.rename(key="k"),
            ValueError,
            r"A: expected dims including .* missing \['key'\]",
        ),
        (lambda A: A.isel(snapshot=[0]), ValueError, r"A: expected at least 2 snapshots"),
        (lambda A: A.isel(query=slice(0, 0)), ValueError, r"A: dim 'query' has length 0"),
        (
            lambda A: A.assign_coords(query=np.r_[0, 0, np.arange(2, 20)]),
            ValueError,
            r"A: coordinate 'query' has duplicate labels",
        ),
        (
            lambda A: A.assign_coords(key=np.arange(20) + 0.5),
            ValueError,
            r"A: coordinate 'key' must hold integer positions",
        ),
        (lambda A: A.values, TypeError, r"A: expected an xarray.DataArray, got ndarray"),
    ],
)
def test_analyze_names_the_bad_field(bad, error, message):
    A = planted_attention(n=8, L=20)
    with pytest.raises(error, match=message):
        msapod.analyze(bad(A))
    if error is ValueError:
        with pytest.raises(error, match=message):  # dask-backed: the same message
            msapod.analyze(bad(A).chunk({"snapshot": 4}))


def test_analyze_takes_numpy_integers_for_counts():
    A = planted_attention(n=8, L=20)
    ds = msapod.analyze(A, n_modes=np.int64(3), max_peaks=np.int32(2), scales=[2.0, 3.0, 4.0])
    assert ds.sizes["mode"] == 3 and ds.sizes["peak"] == 2
    assert ds.attrs["n_modes"] == 3 and isinstance(ds.attrs["n_modes"], int)


def test_check_options_fills_the_signature_defaults():
    from msapod.pipeline import ANALYZE_DEFAULTS, check_options

    opts = check_options(30)
    assert opts["n_modes"] is None and check_options(6, n_modes=np.int64(6))["n_modes"] == 6
    assert set(opts) == set(ANALYZE_DEFAULTS)
    assert opts["eps"] == [0.05, 0.10, 0.20]
    with pytest.raises(TypeError, match="unexpected options"):
        check_options(30, n_mode=3)


def test_lag_statistics_lag_form_matches_definition():
    from msapod.lagstats import LagStats

    A = planted_attention(n=7, L=20).values
    mean = A.mean(0)
    pos = np.arange(20)
    stats = LagStats.of_ensemble(A, pos, pos)  # the strided view of the padded rows
    want = np.zeros((7, 20, 20))
    for tau in range(20):
        for i in range(tau, 20):
            want[:, tau, i] = A[:, i, i - tau] - mean[i, i - tau]
    np.testing.assert_array_equal(stats.lags, pos)
    np.testing.assert_array_equal(stats.X, want)
    np.testing.assert_array_equal(stats.rows, np.stack([pos, np.full(20, 20)], axis=1))
    assert stats.causal and stats.causal_total
    # the general gather (keys given as a shuffled coordinate) agrees
    order = np.random.default_rng(0).permutation(20)
    shuffled = LagStats.of_ensemble(A[:, :, order], pos, pos[order])
    np.testing.assert_array_equal(shuffled.X, want)


@pytest.mark.parametrize("criterion", ["energy", "l2"])
def test_analyze_ranks_match_effective_rank(criterion):
    ds = msapod.analyze(planted_attention(n=30, L=64), n_modes=3, criterion=criterion)
    ds = ds.sel(window=np.isfinite(ds["total_energy"]).values)  # the windows of found peaks
    for e in ds["eps"].values:
        H = msapod.effective_rank(ds["spectrum"], float(e), criterion, n_snapshots=30)
        np.testing.assert_array_equal(ds["H_star"].sel(eps=e).values, H.values)
        np.testing.assert_array_equal(
            ds["at_rank_limit"].sel(eps=e).values, H["at_rank_limit"].values
        )
