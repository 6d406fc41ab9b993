"""The lag statistics against their plain definitions (loops over snapshots, rows, lags)."""

import numpy as np
import pytest

import msapod
from msapod import lagstats, wavelets


@pytest.fixture
def X():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((7, 9, 9))
    # causal lag form: lag tau exists only for queries >= tau
    q, t = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
    return X * (q >= t)


def test_snapshot_moments_and_upper(X):
    S = lagstats.snapshot_moments(X)
    for s in range(len(X)):
        want = sum(np.outer(X[s, i], X[s, i]) for i in range(X.shape[1]))
        np.testing.assert_allclose(S[s], want, atol=1e-12)
    up = lagstats.snapshot_moments(X, upper=True)
    np.testing.assert_allclose(lagstats.from_upper(up, 9), S, atol=1e-12)
    M = np.random.default_rng(0).standard_normal((4, 81))
    M = (M.reshape(4, 9, 9) + M.reshape(4, 9, 9).transpose(0, 2, 1)).reshape(4, 81)
    np.testing.assert_allclose(
        up @ lagstats.upper_operator(M, 9).T, S.reshape(len(X), -1) @ M.T, rtol=1e-10
    )


def test_lag_stats_moments_are_the_mean_outer_product(X):
    stats = lagstats.LagStats.of_lag_form(X, np.arange(9), np.arange(9), np.arange(9))
    want = np.mean([np.outer(r, r) for r in X.reshape(-1, 9)], axis=0)
    lags, C = stats.moments()
    np.testing.assert_array_equal(lags, np.arange(9))
    np.testing.assert_allclose(C, want, atol=1e-12)
    np.testing.assert_allclose(stats.snapshot_moments(), lagstats.snapshot_moments(X), atol=1e-12)
    with pytest.raises(ValueError, match="total"):
        stats.moments("total")  # a lag form alone has no fields


@pytest.mark.parametrize("causal_rows", [False, True])
def test_lag_gram_tensor_definition(X, causal_rows):
    G = lagstats.lag_gram_tensor(X, causal_rows=causal_rows)
    n, q, L = X.shape
    want = np.zeros((L, n, n))
    for t in range(L):
        for s in range(n):
            for u in range(n):
                want[t, s, u] = sum(X[s, i, t] * X[u, i, t] for i in range(q))
    np.testing.assert_allclose(G, want, atol=1e-12)


def test_window_gram_is_the_gram_of_the_windowed_field(X):
    G = lagstats.lag_gram_tensor(X)
    W = lagstats.gaussian_windows(np.arange(9), [1.0, 4.0], [2.0, 0.5])
    np.testing.assert_allclose(W[1], np.exp(-((np.arange(9) - 4.0) ** 2) / 0.5))
    K = lagstats.window_grams(G, W)
    for w in range(2):
        Y = (X * W[w]).reshape(len(X), -1)
        np.testing.assert_allclose(K[w], Y @ Y.T / len(X), atol=1e-12)
    np.testing.assert_allclose(lagstats.window_grams(G, W[0]), K[0])
    # w = 1: the plain POD's Gram
    np.testing.assert_allclose(
        lagstats.window_grams(G, np.ones(9)), X.reshape(7, -1) @ X.reshape(7, -1).T / 7
    )


def test_mode_lag_energy_is_the_modes_energy_per_lag(X):
    G = lagstats.lag_gram_tensor(X)
    W = lagstats.gaussian_windows(np.arange(9), [2.0, 6.0], [3.0, 3.0])
    K = lagstats.window_grams(G, W)
    V = np.stack([np.linalg.eigh(k)[1][:, -1] for k in K], 1)
    E = lagstats.mode_lag_energy(G, W, V)
    for w in range(2):
        phi = np.tensordot(V[:, w], X * W[w], axes=(0, 0))  # (query, lag)
        e = (phi**2).sum(0)
        np.testing.assert_allclose(E[w], e / e.sum(), atol=1e-12)
    np.testing.assert_allclose(lagstats.mode_lag_energy(G, W[1], V[:, 1]), E[1])


def test_scalogram_energy_matches_the_transform():
    rng = np.random.default_rng(1)
    r = rng.standard_normal((30, 24))
    lags, scales = np.arange(24), np.array([2.0, 3.5, 6.0])
    C = r.T @ r / len(r)
    E = wavelets.scalogram_energy(C, scales, lags)
    Phi = msapod.wavelet_matrix(scales, lags)
    W = np.einsum("abt,nt->nab", Phi, r)
    np.testing.assert_allclose(E, (np.abs(W) ** 2).mean(0), rtol=1e-10, atol=1e-14)


def test_causal_row_blocks_skip_only_zeros():
    rng = np.random.default_rng(5)
    q, t = np.meshgrid(np.arange(70), np.arange(70), indexing="ij")
    X = rng.standard_normal((4, 70, 70)) * (q >= t)  # (N, query, lag), three lag blocks
    np.testing.assert_allclose(
        lagstats.snapshot_moments(X, causal_rows=True), lagstats.snapshot_moments(X), atol=1e-11
    )
    np.testing.assert_allclose(
        lagstats.snapshot_moments(X, upper=True, causal_rows=True),
        lagstats.snapshot_moments(X, upper=True),
        atol=1e-11,
    )
    np.testing.assert_allclose(
        lagstats.lag_gram_tensor(X, causal_rows=True), lagstats.lag_gram_tensor(X), atol=1e-11
    )
    # the lag statistics of the causal square field skip the same rows (bands [tau, Q))
    stats = lagstats.LagStats.of_lag_form(X, np.arange(70), np.arange(70), np.arange(70))
    np.testing.assert_array_equal(stats.rows[:, 0], np.arange(70))
    full = lagstats.snapshot_moments(X).sum(0) / (4 * 70)
    np.testing.assert_allclose(stats.moments()[1], full, atol=1e-12)


def _field(n=9, L=12, seed=0, causal=True):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((n, L, L))
    if causal:
        logits = np.where(np.tril(np.ones((L, L), bool)), logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    return A / A.sum(-1, keepdims=True)


@pytest.mark.parametrize("causal", [True, False])
def test_lag_stats_of_an_ensemble_is_the_pod_of_its_fluctuation(causal):
    import xarray as xr

    A = _field(causal=causal)
    pos = np.arange(12)
    stats = lagstats.LagStats.of_ensemble(A, pos, pos)
    assert stats.causal is causal and stats.causal_total is causal
    np.testing.assert_allclose(stats.mean, A.mean(0), atol=1e-15)
    W = np.vstack([np.ones(len(stats.lags)), lagstats.gaussian_windows(stats.lags, [2.0], [3.0])])
    out = stats.pod(W, 3)
    u = msapod.reynolds(xr.DataArray(A, dims=("snapshot", "query", "key")))["fluctuation"]
    window = xr.DataArray(W, dims=("w", "lag"), coords={"lag": stats.lags})
    want = msapod.pod(u, n_modes=3, window=window)
    for name in ("spectrum", "eigenvalues", "gram", "coefficients"):
        np.testing.assert_allclose(out[name], want[name].values, atol=1e-12)
    np.testing.assert_allclose(out["modes"], want["modes"].values, atol=1e-10)
    # the Gram of a window is the Gram of the windowed lag form; project is V^T (w X)
    Xw = stats.X * W[1][None, :, None]
    np.testing.assert_allclose(out["gram"][1], np.einsum("sti,uti->su", Xw, Xw) / 9, atol=1e-14)
    V = np.linalg.eigh(out["gram"])[1][:, :, ::-1][:, :, :2]
    P = stats.project(V, W)
    np.testing.assert_allclose(P[1], np.einsum("sm,sti->mti", V[1], Xw), atol=1e-13)
    # the total field's moments: the fields' own lag profiles
    lags_t, C = stats.moments("total")
    R = msapod.to_lag(xr.DataArray(A, dims=("snapshot", "query", "key"))).values
    np.testing.assert_array_equal(lags_t, stats.lags)
    np.testing.assert_allclose(C, np.einsum("sit,siu->tu", R, R) / (9 * 12), atol=1e-14)


def test_total_moments_of_fields_whose_fluctuation_is_causal():
    """Fields with the same weight above the diagonal in every snapshot: the fluctuation is
    causal (lags from 0), the fields are not, so their moments come from their own lags."""
    import xarray as xr

    A = _field(causal=True)
    A = A + np.triu(np.full((12, 12), 0.01), 1)[None]
    pos = np.arange(12)
    stats = lagstats.LagStats.of_ensemble(A, pos, pos)
    assert stats.causal and not stats.causal_total
    lags_t, C = stats.moments("total")
    R = msapod.to_lag(xr.DataArray(A, dims=("snapshot", "query", "key")))
    np.testing.assert_array_equal(lags_t, R["lag"].values)
    assert len(lags_t) > len(stats.lags)
    want = np.einsum("sit,siu->tu", R.values, R.values) / (9 * 12)
    np.testing.assert_allclose(C, want, atol=1e-14 * np.abs(want).max())


def test_lag_stats_zero_window_has_no_modes():
    A = _field()
    pos = np.arange(12)
    stats = lagstats.LagStats.of_ensemble(A, pos, pos)
    W = np.vstack([np.ones(12), np.zeros(12)])
    out = stats.pod(W, 2)
    assert (out["spectrum"][1] == 0).all() and (out["gram"][1] == 0).all()
    assert np.isnan(out["modes"][1]).all() and (out["coefficients"][1] == 0).all()
