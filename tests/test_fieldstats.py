"""Field statistics (msapod.studies.measure.fieldstats): planted answers on synthetic fields."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import xarray as xr

import msapod.studies.measure.fieldstats as fs
from msapod.studies.measure.fieldstats import (
    field_statistics,
    summarise_fields,
    zoo_field_statistics,
)
from msapod.studies.store.cache import cached_fields

torch.set_num_threads(1)

L = 24


def field(values: np.ndarray) -> xr.DataArray:
    """``(layer, snapshot, query, key)`` array with the cache's labels."""
    n_layer, n, length, _ = values.shape
    pos = np.arange(length)
    return xr.DataArray(
        values.astype(np.float32),
        dims=("layer", "snapshot", "query", "key"),
        coords={
            "layer": np.arange(1, n_layer + 1),
            "snapshot": np.arange(n),
            "query": pos,
            "key": pos,
            "offset": ("snapshot", 100 * np.arange(n)),
        },
    )


def uniform(n: int = 4, length: int = L) -> np.ndarray:
    """Every row i attends uniformly to keys 0..i."""
    tri = np.tri(length)
    return np.broadcast_to(tri / tri.sum(-1, keepdims=True), (1, n, length, length)).copy()


def random_fields(n_layer: int = 2, n: int = 6, length: int = L, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.gamma(0.5, size=(n_layer, n, length, length)) * np.tri(length)
    return a / a.sum(-1, keepdims=True)


def test_uniform_causal_field():
    ds = summarise_fields(field(uniform()))
    i = np.arange(L)
    # row i: lags 0..i equally likely -> mean i/2 and (interpolated) median i/2
    np.testing.assert_allclose(ds["mean_lag"], (L - 1) / 4, rtol=1e-6)
    np.testing.assert_allclose(ds["median_lag"], (L - 1) / 4, rtol=1e-6)
    np.testing.assert_allclose(fs.median_lags(uniform()[0, 0]), i / 2, rtol=1e-6, atol=1e-6)
    assert float(ds["acausal_max"].max()) == 0.0 and float(ds["min_entry"].min()) == 0.0
    assert float(ds["row_sum_deviation"].max()) < 1e-6
    # identical snapshots: no fluctuation at all
    for var in ("fluctuation_energy", "row_energy", "lag_energy", "split_half_gap"):
        assert float(abs(ds[var]).max()) < 1e-12, var
    np.testing.assert_allclose(ds["total_energy"], np.sum(1 / (i + 1)), rtol=1e-6)
    np.testing.assert_allclose(ds["mean_energy"], ds["total_energy"], rtol=1e-12)


def test_point_mass_lag():
    """All weight at lag min(i, d): mean and median lag of row i are min(i, d)."""
    d, n = 5, 3
    a = np.zeros((1, n, L, L))
    i = np.arange(L)
    a[:, :, i, np.maximum(i - d, 0)] = 1.0
    ds = summarise_fields(field(a))
    want = np.minimum(i, d).mean()
    np.testing.assert_allclose(ds["mean_lag"], want, rtol=1e-12)
    np.testing.assert_allclose(ds["median_lag"], want, rtol=1e-12)


def test_median_is_continuous():
    """Row 7 puts 0.45, 0.05, 0.05, 0.45 on lags 0..3: its cumulative probability reaches
    1/2 exactly at the end of lag 1, so the median is 1.5. Moving 1e-9 from lag 1 to lag 2
    flips the integer median from 1 to 2 but moves this one by about 1e-8."""
    full = np.tri(8)[:7] / np.tri(8)[:7].sum(-1, keepdims=True)
    row = np.zeros((1, 8))
    row[0, [7, 6, 5, 4]] = [0.45, 0.05, 0.05, 0.45]  # lags 0, 1, 2, 3 of query 7
    a = np.concatenate([full, row])
    assert fs.median_lags(a)[-1] == pytest.approx(1.5, abs=1e-12)
    b = a.copy()
    b[-1, 6] -= 1e-9
    b[-1, 5] += 1e-9
    assert fs.median_lags(b)[-1] == pytest.approx(1.5, abs=1e-6)


def test_energies_match_numpy():
    a32 = field(random_fields()).values
    ds = summarise_fields(field(random_fields()))
    assert ds["mean_field"].dtype == np.float32
    for k in range(a32.shape[0]):
        a = a32[k].astype(np.float64)
        n = a.shape[0]
        mean = a.mean(0)
        u = a - mean
        sel = ds.isel(layer=k)
        np.testing.assert_allclose(sel["mean_field"], mean, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(sel["total_energy"], (a**2).sum((1, 2)).mean(), rtol=1e-12)
        np.testing.assert_allclose(sel["mean_energy"], (mean**2).sum(), rtol=1e-12)
        e_u = (u**2).sum((1, 2)).mean()
        np.testing.assert_allclose(sel["fluctuation_energy"], e_u, rtol=1e-12)
        np.testing.assert_allclose(sel["row_energy"], (u**2).sum(-1).mean(0), rtol=1e-12)
        lag = [(np.diagonal(u, -t, 1, 2) ** 2).sum(-1).mean() for t in range(L)]
        np.testing.assert_allclose(sel["lag_energy"], lag, rtol=1e-10, atol=1e-15)
        gap = a[: n // 2].mean(0) - a[n // 2 :].mean(0)
        np.testing.assert_allclose(sel["split_half_gap"], (gap**2).sum(), rtol=1e-12)
        mean_lag = [(np.clip(np.subtract.outer(range(L), range(L)), 0, None) * s).sum() / L
                    for s in a]  # fmt: skip
        np.testing.assert_allclose(sel["mean_lag"], mean_lag, rtol=1e-12)
    # Pythagoras holds although the three energies are computed independently
    np.testing.assert_allclose(
        ds["total_energy"], ds["mean_energy"] + ds["fluctuation_energy"], rtol=1e-12
    )
    np.testing.assert_allclose(ds["row_energy"].sum("query"), ds["fluctuation_energy"])
    np.testing.assert_allclose(ds["lag_energy"].sum("lag"), ds["fluctuation_energy"])
    assert np.array_equal(ds["offset"].values, 100 * np.arange(6))


def test_rejects_non_square():
    A = field(random_fields()).isel(key=slice(0, L - 1))
    with pytest.raises(ValueError, match="square"):
        summarise_fields(A)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny GPT saved and reloaded like a zoo checkpoint (has weights_sha256)."""
    from msapod.models.gpt import GPT, GPTConfig
    from msapod.models.train import TrainConfig, load_checkpoint, save_checkpoint

    torch.manual_seed(0)
    cfg = TrainConfig(name="tiny", model=GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=32))
    run = tmp_path_factory.mktemp("zoo") / "tiny"
    save_checkpoint(run, GPT(cfg.model), cfg)
    return load_checkpoint(run)


def test_field_statistics_cached(tiny, tmp_path, monkeypatch):
    kw = {"n": 4, "length": 16, "model": tiny, "cache_dir": tmp_path}
    ds = field_statistics("tiny", **kw)
    assert ds.attrs["model"] == "tiny" and ds.attrs["weights_sha256"] == tiny.weights_sha256
    F = cached_fields("tiny", progress=False, **kw)
    assert ds.attrs["fields_key"] == F.attrs["key"]
    want = summarise_fields(F)
    for var in want.data_vars:
        np.testing.assert_allclose(ds[var], want[var], rtol=1e-12, err_msg=var)
    # a second call reads the cache: no fields needed
    monkeypatch.setattr(fs, "summarise_fields", lambda *a, **k: pytest.fail("recomputed"))
    again = field_statistics("tiny", **kw)
    assert again.encoding["source"] == ds.encoding["source"]


def test_zoo_stacks_models(monkeypatch, tmp_path):
    def fake(name, **kw):
        out = summarise_fields(field(random_fields(seed=len(name))))
        out.attrs.update(model=name, fields_key=f"key-{name}", weights_sha256=f"sha-{name}")
        return out

    monkeypatch.setattr(fs, "field_statistics", fake)
    ds = zoo_field_statistics(["baseline-1", "ega-2"])
    for dim in ("model", "layer", "snapshot", "query", "key", "lag"):
        assert dim in ds.dims, dim
    assert ds["mean_lag"].dims == ("model", "layer", "snapshot")
    assert ds["mean_field"].dims == ("model", "layer", "query", "key")
    assert list(ds["architecture"].values) == ["baseline", "ega"]
    assert list(ds["fields_key"].values) == ["key-baseline-1", "key-ega-2"]
    assert ds["mean_field"].encoding.get("zlib") is True
    path = tmp_path / "fieldstats.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    back = xr.load_dataset(path, engine="h5netcdf")
    xr.testing.assert_allclose(back["lag_energy"], ds["lag_energy"])


def test_field_statistics_rejects_bad_ensemble(tiny, tmp_path):
    for bad in ({"n": 1}, {"length": True}, {"seed": -1}):
        with pytest.raises(ValueError):
            field_statistics("tiny", model=tiny, cache_dir=tmp_path, **bad)
