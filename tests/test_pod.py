import numpy as np
import pytest
import xarray as xr

import msapod


def planted(rank=4, n=60, L=16, seed=0, noise=0.0):
    """Causal fields u_s = sum_k c_k(s) f_k with f_k orthonormal over causal entries."""
    rng = np.random.default_rng(seed)
    mask = np.tril(np.ones((L, L), dtype=bool))
    F = np.linalg.qr(rng.standard_normal((mask.sum(), rank)))[0].T  # (rank, P) orthonormal
    amps = 2.0 ** -np.arange(rank)
    C = rng.standard_normal((n, rank)) * amps
    C -= C.mean(0)
    U = np.zeros((n, L, L))
    U[:, mask] = C @ F + noise * rng.standard_normal((n, mask.sum()))
    fields = np.zeros((rank, L, L))
    fields[:, mask] = F
    return xr.DataArray(U, dims=("snapshot", "query", "key")), fields


def test_pod_matches_numpy_svd():
    rng = np.random.default_rng(1)
    u = xr.DataArray(np.tril(rng.standard_normal((30, 12, 12))), dims=("snapshot", "query", "key"))
    res = msapod.pod(u)
    X = u.values.reshape(30, -1)
    sv = np.linalg.svd(X, compute_uv=False)
    np.testing.assert_allclose(res["spectrum"].values[:10], sv[:10] ** 2 / 30, rtol=1e-10)
    np.testing.assert_allclose(res["total_energy"], (X**2).sum() / 30, rtol=1e-12)
    M = res["modes"].values.reshape(30, -1)
    np.testing.assert_allclose(M @ M.T, np.eye(30), atol=1e-8)
    a = res["coefficients"].values
    np.testing.assert_allclose((a**2).mean(0), res["eigenvalues"].values, rtol=1e-8, atol=1e-14)
    np.testing.assert_allclose(a, X @ M.T, atol=1e-10)


def test_planted_rank_recovered():
    u, fields = planted(rank=4)
    res = msapod.pod(u, n_modes=6)
    lam = res["spectrum"].values
    assert lam[3] > 1e6 * max(lam[4], 1e-300) or lam[4] < 1e-20
    H = msapod.effective_rank(res["spectrum"], eps=1e-9)
    assert int(H) == 4
    # modes 1..4 span the planted subspace: projection of each planted field is complete
    M = res["modes"].values[:4].reshape(4, -1)
    Fm = fields.reshape(4, -1)
    proj = Fm @ M.T
    np.testing.assert_allclose((proj**2).sum(1), 1.0, atol=1e-10)
    assert np.isnan(res["modes"].values[5]).all()  # beyond the rank: undefined


def test_theorem1_error_equals_tail_and_beats_random_bases():
    u, _ = planted(rank=6, noise=0.05, seed=2)
    res = msapod.pod(u)
    lam = res["spectrum"].values
    rng = np.random.default_rng(3)
    for K in (1, 3, 6, 10):
        err = float(msapod.reconstruction_error(u, res, K))
        np.testing.assert_allclose(err, lam[K:].sum(), rtol=1e-9)
        P = u.sizes["query"] * u.sizes["key"]
        for _ in range(5):
            B = np.linalg.qr(rng.standard_normal((P, K)))[0].T.reshape(K, 16, 16)
            basis = xr.DataArray(B, dims=("mode", "query", "key"))
            assert float(msapod.basis_error(u, basis)) >= err - 1e-12
        pod_basis = res["modes"].isel(mode=slice(0, K))
        np.testing.assert_allclose(float(msapod.basis_error(u, pod_basis)), err, rtol=1e-9)


def test_windowed_pod_equals_pod_of_windowed_field():
    rng = np.random.default_rng(4)
    u = xr.DataArray(np.tril(rng.standard_normal((20, 14, 14))), dims=("snapshot", "query", "key"))
    w = msapod.lag_window(
        np.arange(14), xr.DataArray([2.0, 8.0], dims="peak"), xr.DataArray([1.5, 3.0], dims="peak")
    )
    res = msapod.pod(u, window=w, n_modes=5)
    assert res["spectrum"].dims == ("peak", "rank")
    for p in range(2):
        uw = msapod.apply_window(u, w.isel(peak=p)).transpose(*u.dims)
        ref = msapod.pod(uw, n_modes=5)
        np.testing.assert_allclose(
            res["spectrum"].values[p], ref["spectrum"].values, rtol=1e-10, atol=1e-14
        )
        np.testing.assert_allclose(res["modes"].values[p], ref["modes"].values, atol=1e-9)


def test_lag_gram_sums_to_gram():
    rng = np.random.default_rng(5)
    u = xr.DataArray(np.tril(rng.standard_normal((6, 8, 8))), dims=("snapshot", "query", "key"))
    G = msapod.lag_gram(u)
    X = u.values.reshape(6, -1)
    np.testing.assert_allclose(G.sum("lag").values, X @ X.T, rtol=1e-12)


def test_float32_input_accumulated_in_float64():
    # a spectrum spanning ~6 decades: a float32 Gram would lose its tail
    rng = np.random.default_rng(6)
    n, L = 60, 24
    F = np.linalg.qr(rng.standard_normal((L * L, n)))[0].T
    C = rng.standard_normal((n, n)) * np.geomspace(1.0, 1e-3, n)
    u32 = xr.DataArray(
        (C @ F).reshape(n, L, L).astype(np.float32), dims=("snapshot", "query", "key")
    )
    got = msapod.pod(u32)["spectrum"].values
    X = u32.values.astype(np.float64).reshape(n, -1)
    ref = np.linalg.svd(X, compute_uv=False) ** 2 / n
    np.testing.assert_allclose(got, ref, rtol=1e-8)
    X32 = u32.values.reshape(n, -1)
    naive = np.sort(np.linalg.eigvalsh((X32 @ X32.T).astype(np.float32) / n))[::-1]
    assert np.abs(naive[-10:] / ref[-10:] - 1).max() > 1e-3  # what float32 would cost


def test_pod_leading_dims_and_errors():
    u, _ = planted(rank=3, n=10, L=8)
    stacked = xr.concat([u, 2 * u], dim="layer")
    res = msapod.pod(stacked, n_modes=3)
    np.testing.assert_allclose(res["spectrum"][1], 4 * res["spectrum"][0], rtol=1e-10)
    with pytest.raises(ValueError, match="n_modes"):
        msapod.pod(u, n_modes=11)
    with pytest.raises(ValueError, match="at least 2 snapshots"):
        msapod.pod(u.isel(snapshot=[0]))
    with pytest.raises(ValueError, match="rank"):
        msapod.reconstruct(res, 4)
