"""Property-based tests of the method core on small random causal fields (hypothesis).

Each property is a fact of the mathematics, independent of the implementation: the POD
eigenvalues sum to the fluctuation energy; Theorem 1 (the rank-K error is the tail sum
and no other K-dimensional basis does better); coherency lies in [0, 1]; H* does not
decrease as eps shrinks; results do not depend on the order of the snapshots; the dask
path equals the numpy path; a field's lag form round-trips.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msapod

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def attention(draw, min_n=3, max_n=9, min_len=8, max_len=14):
    """Causal row-stochastic fields A(snapshot, query, key) from random logits."""
    n = draw(st.integers(min_n, max_n))
    length = draw(st.integers(min_len, max_len))
    seed = draw(st.integers(0, 2**32 - 1))
    sharp = draw(st.floats(0.1, 4.0))
    rng = np.random.default_rng(seed)
    logits = sharp * rng.standard_normal((n, length, length))
    logits = np.where(np.tril(np.ones((length, length), bool)), logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return xr.DataArray(A, dims=("snapshot", "query", "key"))


def _u(A):
    return msapod.reynolds(A)["fluctuation"]


@SETTINGS
@given(attention())
def test_eigenvalues_sum_to_the_fluctuation_energy(A):
    u = _u(A)
    res = msapod.pod(u)
    energy = float((u**2).sum(("query", "key")).mean("snapshot"))
    np.testing.assert_allclose(float(res["spectrum"].sum()), energy, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(float(res["total_energy"]), energy, rtol=1e-9, atol=1e-14)
    assert float(res["spectrum"].min()) >= 0


@SETTINGS
@given(attention(), st.integers(0, 2**32 - 1), st.integers(1, 4))
def test_theorem1_error_is_the_tail_and_no_random_basis_is_better(A, seed, rank):
    u = _u(A)
    n = u.sizes["snapshot"]
    rank = min(rank, n - 1)
    res = msapod.pod(u)
    lam = res["spectrum"].values
    err = float(msapod.reconstruction_error(u, res, rank))
    np.testing.assert_allclose(err, lam[rank:].sum(), rtol=1e-8, atol=1e-13)
    # any orthonormal K-basis over the causal entries does no better
    length = u.sizes["query"]
    mask = np.tril(np.ones((length, length), bool))
    rng = np.random.default_rng(seed)
    Q = np.linalg.qr(rng.standard_normal((mask.sum(), rank)))[0].T
    basis = np.zeros((rank, length, length))
    basis[:, mask] = Q
    b = xr.DataArray(basis, dims=("mode", "query", "key"))
    assert float(msapod.basis_error(u, b)) >= err * (1 - 1e-9) - 1e-13


@SETTINGS
@given(attention(min_len=10, max_len=14))
def test_coherency_lies_in_the_unit_interval(A):
    gamma = msapod.coherency(_u(A), scales=[1.5, 3.0])
    vals = gamma.values[np.isfinite(gamma.values)]
    assert vals.size > 0
    assert vals.min() >= -1e-12 and vals.max() <= 1 + 1e-12


@SETTINGS
@given(attention(), st.lists(st.floats(0.01, 0.99), min_size=2, max_size=5, unique=True))
def test_effective_rank_does_not_decrease_as_eps_shrinks(A, eps):
    spectrum = msapod.pod(_u(A))["spectrum"]
    eps = sorted(eps)
    H = [int(msapod.effective_rank(spectrum, eps=e)) for e in eps]
    assert H == sorted(H, reverse=True)
    for e in eps:  # the L2 criterion is the energy one at eps^2: at least as strict
        assert int(msapod.effective_rank(spectrum, e, "l2")) >= int(
            msapod.effective_rank(spectrum, e)
        )


@settings(SETTINGS, max_examples=8)
@given(attention(min_n=6, min_len=10), st.integers(0, 2**32 - 1))
def test_results_do_not_depend_on_snapshot_order(A, seed):
    perm = np.random.default_rng(seed).permutation(A.sizes["snapshot"])
    a = msapod.analyze(A, scales=[1.5, 2.5, 4.0], eps=(0.1,))
    b = msapod.analyze(A.isel(snapshot=perm), scales=[1.5, 2.5, 4.0], eps=(0.1,))
    for name in ("spectrum", "T_spec", "H_star", "total_energy"):
        np.testing.assert_allclose(
            np.asarray(a[name].values, float),
            np.asarray(b[name].values, float),
            rtol=1e-8,
            atol=1e-12,
            err_msg=name,
        )
    for name in ("energy",):
        np.testing.assert_allclose(a[name].values, b[name].values, rtol=1e-8, atol=1e-14)


@settings(SETTINGS, max_examples=8)
@given(attention(min_n=4, max_n=9, min_len=10), st.integers(1, 3))
def test_dask_result_equals_numpy_result(A, chunk):
    pytest.importorskip("dask")
    lazy = A.chunk({"snapshot": chunk})
    u_np, u_dk = _u(A), _u(lazy)
    np.testing.assert_allclose(
        msapod.lag_gram(u_dk).values, msapod.lag_gram(u_np).values, rtol=1e-10, atol=1e-14
    )
    scales = [1.5, 3.0]
    np.testing.assert_allclose(
        msapod.scalogram(u_dk, scales)["spectrum"].values,
        msapod.scalogram(u_np, scales)["spectrum"].values,
        rtol=1e-10,
        atol=1e-16,
    )
    np.testing.assert_allclose(
        msapod.pod(u_dk)["spectrum"].values,
        msapod.pod(u_np)["spectrum"].values,
        rtol=1e-8,
        atol=1e-14,
    )


@SETTINGS
@given(attention())
def test_lag_form_round_trips(A):
    R = msapod.to_lag(A)
    assert R.dims[-1] == "lag" and R.sizes["lag"] == A.sizes["key"]
    back = msapod.from_lag(R)
    np.testing.assert_array_equal(back.transpose(*A.dims).values, A.values)
