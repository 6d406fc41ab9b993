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


def test_ensemble_moments_is_the_mean_outer_product(X):
    want = np.mean([np.outer(r, r) for r in X.reshape(-1, 9)], axis=0)
    np.testing.assert_allclose(lagstats.ensemble_moments(X.transpose(2, 1, 0)), want, atol=1e-12)
    np.testing.assert_allclose(
        lagstats.ensemble_moments(X.transpose(2, 0, 1)),
        lagstats.snapshot_moments(X).sum(0) / (7 * 9),
        atol=1e-12,
    )


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
    Xt = np.ascontiguousarray(X.transpose(2, 1, 0))  # (lag, query, N)
    np.testing.assert_allclose(
        lagstats.ensemble_moments(Xt, causal_rows=True), lagstats.ensemble_moments(Xt), atol=1e-12
    )
    np.testing.assert_allclose(
        lagstats._lag_gram_lagmajor(Xt, True, 2), lagstats.lag_gram_tensor(X), atol=1e-11
    )
