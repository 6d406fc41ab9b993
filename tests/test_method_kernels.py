"""The method's shared kernels against known answers: the POD of a Gram
(``lagstats.gram_pod``) against an SVD of the snapshots and a planted rank, the jackknife
(``resampling``) against refits without each snapshot or group, the leave-one-out means
against direct means, H*'s tolerance and the local maxima against brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from msapod.lagstats import gram_pod
from msapod.resampling import (
    double_centre,
    jackknife,
    jackknife_error,
    jackknife_spectra,
    leave_one_out_means,
)
from msapod.spectra import CRITERIA, rank_tolerance, tail_fraction, tail_rank
from msapod.wavelets import local_maxima


def snapshots(n=12, p=40, rank=None, seed=0):
    """``(N, P)`` snapshots, of rank ``rank`` when given (a planted rank)."""
    rng = np.random.default_rng(seed)
    if rank is None:
        return rng.standard_normal((n, p))
    return rng.standard_normal((n, rank)) @ rng.standard_normal((rank, p))


def test_gram_pod_equals_the_svd_of_the_snapshots():
    X = snapshots()
    n = len(X)
    got = gram_pod(X @ X.T / n, 4, X)
    U, sv, Vt = np.linalg.svd(X, full_matrices=False)
    lam = sv**2 / n
    np.testing.assert_allclose(got.eigenvalues, lam, rtol=1e-12, atol=1e-14 * lam[0])
    # the modes are the right singular vectors up to sign; orthonormal
    for k in range(4):
        c = got.modes[k] @ Vt[k]
        assert abs(abs(c) - 1) < 1e-10
        # sign fixed: the largest-magnitude entry positive, and the coefficients follow
        assert got.modes[k][np.abs(got.modes[k]).argmax()] > 0
        np.testing.assert_allclose(got.coefficients[:, k], np.sign(c) * U[:, k] * sv[k], atol=1e-10)
    np.testing.assert_allclose(got.modes @ got.modes.T, np.eye(4), atol=1e-12)
    # X is its expansion in all modes
    full = gram_pod(X @ X.T / n, n, X)
    np.testing.assert_allclose(full.coefficients @ full.modes, X, atol=1e-10)


def test_gram_pod_planted_rank_nan_modes_beyond_it():
    X = snapshots(rank=3)
    got = gram_pod(X @ X.T / len(X), 5, X)
    lam = got.eigenvalues
    assert (lam[3:] <= 1e-12 * lam[0]).all() and (lam >= 0).all()
    assert np.isfinite(got.modes[:3]).all() and np.isnan(got.modes[3:]).all()
    assert (got.coefficients[:, 3:] == 0).all()


def test_gram_pod_spectrum_alone_and_stacks():
    K = np.stack([(x := snapshots(seed=s)) @ x.T / len(x) for s in range(3)])
    alone = gram_pod(K)
    assert alone.vectors.shape == (3, 12, 0) and alone.modes is None
    for b in range(3):
        ref = np.sort(np.linalg.eigvalsh(K[b]))[::-1]
        np.testing.assert_allclose(alone.eigenvalues[b], ref, rtol=1e-12, atol=1e-14 * ref[0])
        v = gram_pod(K, 2).vectors[b]
        np.testing.assert_allclose(K[b] @ v, v * alone.eigenvalues[b][:2], atol=1e-12 * ref[0])


def test_double_centre_removes_the_mean():
    X = snapshots() + 5.0
    Xc = X - X.mean(0)
    np.testing.assert_allclose(double_centre(X @ X.T), Xc @ Xc.T, atol=1e-10)


def spectrum_of(X):
    """The POD spectrum of the snapshots ``X`` with their own mean removed."""
    Xc = X - X.mean(0)
    return np.linalg.svd(Xc, compute_uv=False) ** 2 / len(X)


def test_jackknife_spectra_equal_refits_without_each_set():
    X = snapshots(n=9, p=30) + 1.0
    K = X @ X.T / len(X)
    for leave_out in (None, [[0, 1], [2, 5, 7], [8]]):
        sets = [[i] for i in range(9)] if leave_out is None else leave_out
        got = jackknife_spectra(K, leave_out)
        for lam, drop in zip(got, sets, strict=True):
            ref = spectrum_of(np.delete(X, drop, axis=0))
            assert len(lam) == 9 - len(drop)
            np.testing.assert_allclose(lam, ref, rtol=1e-10, atol=1e-12 * ref[0])


def test_jackknife_value_and_se_of_a_statistic():
    X = snapshots(n=10, p=25, seed=3)
    K = X @ X.T / len(X)

    def share(lam):  # the first eigenvalue's share of the energy
        return lam[:, 0] / lam.sum(1)

    value, se = jackknife(K, share)
    ref = spectrum_of(X)
    assert value == pytest.approx(ref[0] / ref.sum(), rel=1e-12)
    reps = np.array([(s := spectrum_of(np.delete(X, i, 0)))[0] / s.sum() for i in range(10)])
    want = np.sqrt(9 / 10 * ((reps - reps.mean()) ** 2).sum())
    assert se == pytest.approx(want, rel=1e-9)


def test_jackknife_error_formula_and_nan_replicates():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    want = np.sqrt(3 / 4 * ((x - x.mean()) ** 2).sum())
    assert jackknife_error(x) == pytest.approx(want, rel=1e-14)
    # a NaN replicate is left out; fewer than two finite: NaN
    assert jackknife_error(np.r_[x, np.nan]) == pytest.approx(want, rel=1e-14)
    assert np.isnan(jackknife_error(np.array([1.0, np.nan])))
    got = jackknife_error(np.stack([x, 2 * x], 1))
    np.testing.assert_allclose(got, [want, 2 * want], rtol=1e-14)


@pytest.mark.parametrize("mean_removed", [False, True])
def test_leave_one_out_means_equal_direct_means(mean_removed):
    rng = np.random.default_rng(1)
    n, q, lag = 7, 4, 5
    R = rng.standard_normal((n, q, lag)) + 0.5

    def moments(R):  # per-snapshot lag moments summed over the queries: (N, lag * lag)
        return np.einsum("sqa,sqb->sab", R, R).reshape(len(R), -1)

    U = R - R.mean(0) if mean_removed else R
    got = leave_one_out_means(moments(U), q, mean_removed=mean_removed)
    for i in range(n):
        keep = np.delete(R, i, axis=0)
        kept = keep - keep.mean(0) if mean_removed else keep
        want = moments(kept).sum(0) / ((n - 1) * q)
        np.testing.assert_allclose(got[i], np.maximum(want, 0), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("criterion", CRITERIA)
def test_rank_tolerance_gives_the_planted_rank(criterion):
    lam = np.r_[np.full(4, 1.0), np.full(6, 1e-3)]  # four modes hold 99.85 % of the energy
    eps = 0.05
    tol = rank_tolerance(eps, criterion)
    assert tol == (eps if criterion == "energy" else eps**2)
    assert int(tail_rank(tail_fraction(lam), tol)) == 4
    with pytest.raises(ValueError, match="criterion"):
        rank_tolerance(eps, "energy-ish")


def brute_maxima(e, include_edges):
    n = len(e)
    out = np.zeros(n, bool)
    for i in range(n):
        left = e[i - 1] if i > 0 else -np.inf
        right = e[i + 1] if i < n - 1 else -np.inf
        out[i] = e[i] > left and e[i] >= right
    if not include_edges:
        out[[0, -1]] = False
    return out


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, st.integers(2, 12), elements=st.integers(-3, 3).map(float)),
    st.booleans(),
)
def test_local_maxima_equal_brute_force(e, include_edges):
    np.testing.assert_array_equal(local_maxima(e, include_edges), brute_maxima(e, include_edges))


def test_local_maxima_along_the_last_axis():
    E = np.array([[0.0, 2.0, 1.0, 3.0, 3.0, 0.0], [5.0, 1.0, 1.0, 1.0, 2.0, 4.0]])
    np.testing.assert_array_equal(
        local_maxima(E), [[False, True, False, True, False, False], [False] * 6]
    )
    np.testing.assert_array_equal(local_maxima(E, include_edges=True)[1], [1, 0, 0, 0, 0, 1])
