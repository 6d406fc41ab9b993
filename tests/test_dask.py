"""Dask-backed fields: the chunked path equals the in-memory path."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.backends import is_dask


def planted_u(rank=3, n=48, L=12, seed=0, noise=1e-3):
    """Causal fluctuation fields of planted rank (orthonormal causal patterns) plus noise."""
    rng = np.random.default_rng(seed)
    mask = np.tril(np.ones((L, L), dtype=bool))
    F = np.linalg.qr(rng.standard_normal((mask.sum(), rank)))[0].T
    C = rng.standard_normal((n, rank)) * 2.0 ** -np.arange(rank)
    C -= C.mean(0)
    U = np.zeros((n, L, L))
    U[:, mask] = C @ F + noise * rng.standard_normal((n, mask.sum()))
    return xr.DataArray(U, dims=("snapshot", "query", "key"))


def attention(n=40, L=48, period=10.0, seed=0, dtype=np.float64):
    """Causal softmax attention whose fluctuation carries one lag pattern of known period."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    tau = i - j
    pattern = np.cos(2 * np.pi * tau / period) * np.exp(-0.5 * ((tau - 18) / 8.0) ** 2)
    c = rng.standard_normal((n, 1, 1))
    logits = -tau / 20.0 + 0.4 * c * pattern + 0.05 * rng.standard_normal((n, L, L))
    logits = np.where(tau >= 0, logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return xr.DataArray(A.astype(dtype), dims=("snapshot", "query", "key"), attrs={"model": "syn"})


def close(a, b, rtol=1e-10):
    """Equal to ``rtol`` relative to the largest magnitude (NaN where the other is NaN)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    scale = np.nanmax(np.abs(a)) if np.isfinite(a).any() else 1.0
    np.testing.assert_allclose(b, a, rtol=0, atol=rtol * max(scale, 1e-300), equal_nan=True)


def close_up_to_sign(a, b, axis_len, rtol=1e-8):
    """Rows (first axis) equal up to a sign each."""
    a = np.asarray(a).reshape(axis_len, -1)
    b = np.asarray(b).reshape(axis_len, -1)
    s = np.sign((a * b).sum(1))
    close(a, b * s[:, None], rtol)


def test_check_field_chunkwise():
    A = attention(n=12, L=16).chunk(snapshot=5)
    assert msapod.check_field(A, stochastic=True) is A
    bad = A.values.copy()
    bad[7, 3, 2] = np.nan
    with pytest.raises(ValueError, match="A: expected finite values, found 1 NaN"):
        msapod.check_field(xr.DataArray(da.from_array(bad, chunks=(5, 16, 16)), dims=A.dims))
    with pytest.raises(ValueError, match="rows summing to 1"):
        msapod.check_field(A * 1.1, stochastic=True)
    with pytest.raises(ValueError, match="found negatives"):
        msapod.check_field(A - 0.5, stochastic=True)
    with pytest.raises(ValueError, match="missing"):
        msapod.check_field(A.rename(key="k"))
    with pytest.raises(ValueError, match="at least 2 snapshots"):
        msapod.check_field(A.isel(snapshot=[0]))
    # analyze checks each chunked set in its first pass, with the in-memory messages
    with pytest.raises(ValueError, match="rows summing to 1"):
        msapod.analyze(A * 1.1)
    with pytest.raises(ValueError, match="finite"):
        msapod.analyze(
            xr.DataArray(da.from_array(bad, chunks=(5, 16, 16)), dims=A.dims),
            check_stochastic=False,
        )


def test_reynolds_and_lag_form_stay_lazy():
    A = attention(n=20, L=16, dtype=np.float32)
    Ad = A.chunk(snapshot=6, query=8)  # query chunks are merged where rows are needed
    ref, rey = msapod.reynolds(A), msapod.reynolds(Ad)
    assert not is_dask(rey["mean"]) and is_dask(rey["fluctuation"])
    close(ref["mean"], rey["mean"], 1e-14)
    close(ref["fluctuation"], rey["fluctuation"].values, 1e-12)
    R = msapod.to_lag(rey["fluctuation"])
    assert is_dask(R) and R.chunks[R.dims.index("snapshot")] == (6, 6, 6, 2)
    close(msapod.to_lag(ref["fluctuation"]), R.values, 1e-12)
    assert R.attrs["key_positions"].tolist() == list(range(16))
    back = msapod.from_lag(R)
    assert is_dask(back)
    close(ref["fluctuation"], back.values, 1e-12)
    assert msapod.is_causal(Ad) and not msapod.is_causal(Ad.rename(query="key", key="query"))
    R2 = msapod.to_lag(Ad.rename(query="key", key="query").transpose(*Ad.dims), causal=False)
    close(msapod.to_lag(A.rename(query="key", key="query").transpose(*A.dims)), R2.values, 0)


def test_lag_moments_and_scalogram():
    u = msapod.reynolds(attention(n=30, L=40))["fluctuation"]
    ud = u.chunk(snapshot=7)
    R, Rd = msapod.to_lag(u), msapod.to_lag(ud)
    for dims in (("snapshot", "query"), ("snapshot",)):
        close(msapod.lag_moments(R, dims), msapod.lag_moments(Rd, dims))
    s1, s2 = msapod.scalogram(u), msapod.scalogram(ud)
    close(s1["energy"], s2["energy"])
    close(s1["spectrum"], s2["spectrum"])
    g1 = msapod.coherency(u, [4.0, 8.0])
    close(g1, msapod.coherency(ud, [4.0, 8.0]), 1e-10)
    w1 = msapod.cwt(R.isel(snapshot=slice(0, 4)), [3.0, 6.0])
    w2 = msapod.cwt(Rd.isel(snapshot=slice(0, 4)), [3.0, 6.0])
    assert is_dask(w2)
    close(np.abs(w1), np.abs(w2.values))


def test_pod_planted_rank_plain_and_windowed():
    u = planted_u(rank=3, n=48, L=12)
    ud = u.chunk(snapshot=10)  # uneven chunks: 10, 10, 10, 10, 8
    lags = np.arange(12)
    win = msapod.lag_window(
        lags, xr.DataArray([1.0, 5.0], dims="peak"), xr.DataArray([2.0, 3.0], dims="peak")
    )
    zero = xr.concat([win, 0.0 * win.isel(peak=0)], "peak")  # a missing peak: zero window
    for kw in ({"n_modes": 4}, {"window": win, "n_modes": 3}, {"window": zero, "n_modes": 2}):
        a, b = msapod.pod(u, **kw), msapod.pod(ud, **kw)
        close(a["spectrum"], b["spectrum"])
        close(a["gram"], b["gram"])
        close(a["total_energy"], b["total_energy"])
        for w in np.ndindex(*a["eigenvalues"].shape[:-1]):
            n_modes = a.sizes["mode"]
            close_up_to_sign(a["modes"].values[w], b["modes"].values[w], n_modes)
            close_up_to_sign(a["coefficients"].values[w].T, b["coefficients"].values[w].T, n_modes)
    lam = msapod.pod(ud, n_modes=4)["spectrum"].values
    assert lam[2] > 1e3 * lam[3]  # planted rank 3 recovered on the chunked path
    # the lag form and the per-lag Gram tensor
    R, Rd = msapod.to_lag(u), msapod.to_lag(ud)
    close(msapod.pod(R, n_modes=2)["modes"], msapod.pod(Rd, n_modes=2)["modes"], 1e-8)
    close(msapod.lag_gram(u), msapod.lag_gram(ud))
    res = msapod.pod(u, n_modes=4)
    for K in (1, 3):
        close(msapod.reconstruction_error(u, res, K), msapod.reconstruction_error(ud, res, K))
    close(msapod.basis_error(u, res["modes"][:2]), msapod.basis_error(ud, res["modes"][:2]))
    close(msapod.apply_window(u, win), msapod.apply_window(ud, win).values, 0)


def test_pod_leading_dims_chunked_and_errors():
    u = xr.concat([planted_u(seed=1), planted_u(seed=2)], dim="layer")
    ud = u.chunk(layer=1, snapshot=16)
    a, b = msapod.pod(u, n_modes=3), msapod.pod(ud, n_modes=3)
    close(a["spectrum"], b["spectrum"])
    close(a["gram"], b["gram"])
    with pytest.raises(ValueError, match="n_modes"):
        msapod.pod(ud, n_modes=0)
    bad = u.values.copy()
    bad[1, 30, 5, 2] = np.inf
    with pytest.raises(ValueError, match="u: expected finite"):
        msapod.pod(xr.DataArray(da.from_array(bad, chunks=(1, 16, 12, 12)), dims=u.dims))


def _compare_analyses(a: xr.Dataset, b: xr.Dataset) -> None:
    assert set(a.data_vars) == set(b.data_vars) and a.attrs == b.attrs
    assert not any(is_dask(b[v]) for v in b.data_vars)
    for v in ("mean", "energy", "scale_spectrum", "spectrum", "gram", "total_energy"):
        close(a[v], b[v])
    for v in ("dominant_scale", "window_centre", "window_width", "H_star"):
        close(a[v], b[v], 0)
    close(a["modes"], b["modes"], 1e-5)  # stored as float32
    close(a["T_spec"], b["T_spec"], 1e-6)  # a log-log fit: tail eigenvalues enter the log


def test_analyze_chunked_equals_in_memory():
    A = attention(n=30, L=40, dtype=np.float32)
    Al = xr.concat([A, attention(n=30, L=40, period=6.0, seed=3, dtype=np.float32)], "layer")
    Al = Al.assign_coords(layer=[1, 2])
    kw = {"max_peaks": 2, "n_modes": 4}
    ref = msapod.analyze(Al, coherency=True, **kw)
    got = msapod.analyze(Al.chunk(layer=1, snapshot=9), coherency=True, **kw)
    _compare_analyses(ref, got)
    close(ref["coherency"], got["coherency"])
    tot = msapod.analyze(A, field="total", **kw)
    _compare_analyses(tot, msapod.analyze(A.chunk(snapshot=16), field="total", **kw))


def test_analyze_on_a_distributed_cluster():
    distributed = pytest.importorskip("distributed")
    A = attention(n=30, L=32, seed=5)
    ref = msapod.analyze(A, max_peaks=2, n_modes=3)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert len(client.scheduler_info()["workers"]) == 2
        got = msapod.analyze(A.chunk(snapshot=8), max_peaks=2, n_modes=3)
    _compare_analyses(ref, got)


def test_chunked_passes_are_bounded_by_chunks():
    """No task of the Gram pass ever holds more than two snapshot chunks."""
    u = planted_u(n=40, L=10).chunk(snapshot=8)
    seen = []

    class Spy(dask.callbacks.Callback):
        def _posttask(self, key, result, dsk, state, id):
            if isinstance(result, np.ndarray):
                seen.append(result.nbytes)

    with Spy():
        msapod.pod(u, n_modes=2)
    chunk = 8 * 10 * 10 * 8
    whole = 40 * 10 * 10 * 8
    assert seen and max(seen) < whole and max(seen) <= 40 * 40 * 8 + chunk
