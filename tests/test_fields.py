import numpy as np
import pytest
import xarray as xr

import msapod


def causal_field(n=5, L=12, seed=0, lead=None):
    rng = np.random.default_rng(seed)
    shape = (*(lead or ()), n, L, L)
    A = np.tril(rng.random(shape) + 0.01)
    A /= A.sum(-1, keepdims=True)
    dims = tuple(f"d{i}" for i in range(len(lead or ()))) + ("snapshot", "query", "key")
    return xr.DataArray(A, dims=dims)


def test_reynolds_split_zero_mean_and_reconstructs():
    A = causal_field()
    ds = msapod.reynolds(A)
    np.testing.assert_allclose(ds["fluctuation"].mean("snapshot"), 0.0, atol=1e-15)
    np.testing.assert_allclose((ds["mean"] + ds["fluctuation"]).transpose(*A.dims), A, atol=1e-15)
    assert ds["fluctuation"].dims == A.dims


def test_to_lag_definition_and_roundtrip_causal():
    A = causal_field(n=2, L=7)
    R = msapod.to_lag(A)
    assert R.dims == ("snapshot", "query", "lag")
    np.testing.assert_array_equal(R["lag"], np.arange(7))
    for i in range(7):
        for tau in range(7):
            want = A.values[1, i, i - tau] if tau <= i else 0.0
            assert R.values[1, i, tau] == want
    np.testing.assert_array_equal(msapod.from_lag(R).values, A.values)


def test_to_lag_noncausal_has_negative_lags_and_roundtrips():
    rng = np.random.default_rng(1)
    U = xr.DataArray(rng.standard_normal((3, 4, 6)), dims=("snapshot", "query", "key"))
    R = msapod.to_lag(U)
    np.testing.assert_array_equal(R["lag"], np.arange(-5, 4))
    assert R.sel(lag=-2).values[0, 1] == U.values[0, 1, 3]
    np.testing.assert_array_equal(msapod.from_lag(R).values, U.values)
    with pytest.raises(ValueError, match="causal"):
        msapod.to_lag(U, causal=True)


def test_leading_dims_broadcast():
    A = causal_field(lead=(2, 3))
    R = msapod.to_lag(A)
    assert R.dims == ("d0", "d1", "snapshot", "query", "lag")
    ds = msapod.reynolds(A)
    assert ds["mean"].dims == ("d0", "d1", "query", "key")


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda A: A.rename(key="k"), "missing"),
        (lambda A: A.where(np.arange(12) != 3), "NaN"),
        (lambda A: A * 1.5, "rows summing to 1"),
        (lambda A: A.isel(snapshot=[0]), "at least 2 snapshots"),
        (lambda A: A.values, "DataArray"),
    ],
)
def test_bad_input_raises_clear_error(bad, match):
    A = causal_field()
    with pytest.raises((ValueError, TypeError), match=match):
        msapod.reynolds(bad(A))


def test_infinite_values_rejected():
    A = causal_field().copy()
    A[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="A: expected finite"):
        msapod.check_field(A)


@pytest.mark.parametrize("dim", ["query", "key"])
def test_non_numeric_positions_are_named_by_the_one_check(dim):
    A = xr.DataArray(np.full((3, 4, 4), 0.25), dims=("snapshot", "query", "key"))
    bad = A.assign_coords({dim: ["a", "b", "c", "d"]})
    with pytest.raises(ValueError, match=f"coordinate '{dim}' must hold integer positions"):
        msapod.check_field(bad)
    with pytest.raises(ValueError, match=f"A: coordinate '{dim}' must hold integer positions"):
        msapod.analyze(bad)
    with pytest.raises(ValueError, match=f"coordinate '{dim}' must hold integer positions"):
        msapod.analyze(A.assign_coords({dim: [0.0, 0.5, 1.0, 1.5]}))
