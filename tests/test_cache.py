"""Cache of head-averaged attention fields: hits, misses, verification, rebuilds."""

from __future__ import annotations

import warnings
from pathlib import Path

import h5netcdf
import numpy as np
import pytest
import torch

import msapod.studies.store.cache as cache_mod
from msapod.backends import is_dask
from msapod.cli import main
from msapod.models.data import SHA256
from msapod.models.extract import collect_attention, ensemble_ids
from msapod.models.gpt import GPT, GPTConfig
from msapod.models.train import TrainConfig, load_checkpoint, save_checkpoint
from msapod.studies.store.cache import CacheWarning, cache_dir, cached_fields

torch.set_num_threads(1)

N, LENGTH = 4, 16


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny EGA model saved and reloaded like a zoo checkpoint (has weights_sha256)."""
    torch.manual_seed(0)
    cfg = TrainConfig(
        name="tiny",
        model=GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=32, attention="ega"),
    )
    gpt = GPT(cfg.model)
    with torch.no_grad():
        for p in gpt.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.3)
    run = tmp_path_factory.mktemp("zoo") / "tiny"
    save_checkpoint(run, gpt, cfg)
    return load_checkpoint(run)


@pytest.fixture
def counter(monkeypatch):
    """Counts extractions (calls of record_fields made by the cache)."""
    calls = []
    real = cache_mod.record_fields

    def counting(*args, **kw):
        calls.append(args[3])  # the layers
        return real(*args, **kw)

    monkeypatch.setattr(cache_mod, "record_fields", counting)
    return calls


def get(model, folder, **kw):
    kw = {"n": N, "length": LENGTH, "model": model, "cache_dir": folder, "progress": False, **kw}
    return cached_fields("tiny", **kw)


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("MSAPOD_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("MSAPOD_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "msapod"


def test_write_then_hit(model, tmp_path, counter):
    A = get(model, tmp_path)
    assert len(counter) == 1
    path = Path(A.encoding["source"])
    assert path.is_file() and path.parent == tmp_path / "fields" and path.suffix == ".nc"
    assert path.name.startswith(f"tiny-n{N}-L{LENGTH}-s0-")
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp files left
    assert A.dims == ("layer", "snapshot", "query", "key")
    assert A.shape == (2, N, LENGTH, LENGTH) and A.dtype == np.float32
    ids, offsets = ensemble_ids(n=N, length=LENGTH, seed=0)
    np.testing.assert_array_equal(A["offset"], offsets)
    np.testing.assert_array_equal(A["layer"], [1, 2])
    ref = collect_attention(model, ids, average_heads=True, progress=False)
    np.testing.assert_array_equal(A.values, ref.values)
    for k, v in {
        "weights_sha256": model.weights_sha256,
        "data_sha256": SHA256,
        "n_snapshots": N,
        "length": LENGTH,
        "seed": 0,
        "layers": "1,2",
        "attention": "ega",
        "model": "tiny",
    }.items():
        assert A.attrs[k] == v, k
    assert A.attrs["msapod_version"]
    with h5netcdf.File(path, "r") as f:  # one sha256 per layer, the file's own
        assert [len(d) for d in f.attrs["layer_sha256"]] == [64, 64]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a valid hit warns about nothing
        B = get(model, tmp_path)
        C = get(model, tmp_path, layers=[1, 2])  # explicit all layers: the same key
    assert len(counter) == 1  # no extraction
    np.testing.assert_array_equal(A.values, B.values)
    assert B.attrs.keys() == A.attrs.keys()
    assert all(np.array_equal(B.attrs[k], A.attrs[k]) for k in A.attrs)
    assert C.encoding["source"] == str(path)


def test_default_folder_from_env(model, tmp_path, monkeypatch, counter):
    monkeypatch.setenv("MSAPOD_CACHE", str(tmp_path / "env"))
    A = cached_fields("tiny", n=N, length=LENGTH, model=model, progress=False)
    assert Path(A.encoding["source"]).parent == tmp_path / "env" / "fields"


def test_changed_key_misses(model, tmp_path, counter):
    a = get(model, tmp_path)
    b = get(model, tmp_path, seed=1)
    c = get(model, tmp_path, layers=[2])
    assert len(counter) == 3
    paths = {x.encoding["source"] for x in (a, b, c)}
    assert len(paths) == 3
    assert not np.array_equal(a["offset"], b["offset"])
    np.testing.assert_array_equal(c.values[0], a.values[1])
    assert c.attrs["layers"] == "2"


@pytest.mark.parametrize("damage", ["header", "truncate", "garbage"])
def test_corrupt_file_is_rebuilt(model, tmp_path, counter, damage):
    A = get(model, tmp_path)
    path = Path(A.encoding["source"])
    raw = path.read_bytes()
    if damage == "header":
        path.write_bytes(b"\0" * 64 + raw[64:])
    elif damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    else:
        path.write_bytes(b"not a netCDF file")
    with pytest.warns(CacheWarning, match="unreadable"):
        B = get(model, tmp_path)
    assert len(counter) == 2
    np.testing.assert_array_equal(A.values, B.values)
    assert path.read_bytes() != b"not a netCDF file"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        get(model, tmp_path)  # the rebuilt file is valid
    assert len(counter) == 2


def test_tampered_values_are_rebuilt(model, tmp_path, counter):
    A = get(model, tmp_path)
    path = Path(A.encoding["source"])
    with h5netcdf.File(path, "r+") as f:
        f.variables["attention"][0, 0, 5, 2] = 0.5
    with pytest.warns(CacheWarning, match="values sha256"):
        B = get(model, tmp_path)
    assert len(counter) == 2
    np.testing.assert_array_equal(A.values, B.values)


def test_tampered_attrs_are_rebuilt(model, tmp_path, counter):
    A = get(model, tmp_path)
    path = Path(A.encoding["source"])
    with h5netcdf.File(path, "r+") as f:
        f.variables["attention"].attrs["weights_sha256"] = "0" * 64
    with pytest.warns(CacheWarning, match="weights_sha256"):
        get(model, tmp_path)
    assert len(counter) == 2


def test_file_of_another_layout_is_rebuilt(model, tmp_path, counter):
    """A field file of another layout (e.g. an earlier msapod's, under the same key) is
    never read as this one: it is rebuilt."""
    A = get(model, tmp_path)
    path = Path(A.encoding["source"])
    with h5netcdf.File(path, "r+") as f:
        f.attrs["msapod_fields"] = 0
    with pytest.warns(CacheWarning, match="layout 0, expected 1"):
        B = get(model, tmp_path)
    assert len(counter) == 2
    np.testing.assert_array_equal(A.values, B.values)


def test_failed_write_leaves_no_file_and_resumes(model, tmp_path, monkeypatch):
    import msapod.models.extract as extract

    real = extract.record_batch
    calls = []

    def failing_second(*args, **kw):  # one forward pass per batch
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("extraction died")
        return real(*args, **kw)

    monkeypatch.setattr(extract, "record_batch", failing_second)
    with pytest.raises(RuntimeError, match="extraction died"):
        get(model, tmp_path, batch_size=2)  # the second of two batches dies
    names = [p.name for p in (tmp_path / "fields").iterdir()]
    assert len(names) == 1 and names[0].endswith(".nc.partial")  # nothing under the final name
    A = get(model, tmp_path, batch_size=2)  # resumes: only the batch that died is redone
    assert len(calls) == 3
    ids, _ = ensemble_ids(n=N, length=LENGTH, seed=0)
    ref = collect_attention(model, ids, average_heads=True, progress=False)
    np.testing.assert_array_equal(A.values, ref.values)


def test_bad_arguments(model, tmp_path):
    with pytest.raises(ValueError, match="n:"):
        get(model, tmp_path, n=1)
    with pytest.raises(ValueError, match="length"):
        get(model, tmp_path, length=64)
    with pytest.raises(ValueError, match="seed"):
        get(model, tmp_path, seed=-1)
    with pytest.raises(ValueError, match="layers"):
        get(model, tmp_path, layers=[3])
    bare = GPT(model.config)
    with pytest.raises(ValueError, match="weights_sha256"):
        get(bare, tmp_path)
    with pytest.raises(ValueError, match="name"):
        cached_fields("no-such-model", n=N, length=LENGTH, cache_dir=tmp_path, progress=False)


def test_zoo_load_and_cli_extract(model, tmp_path, monkeypatch, counter, capsys):
    import msapod.models.zoo as zoo

    loaded = []
    monkeypatch.setattr(zoo, "load", lambda name: loaded.append(name) or model)
    A = cached_fields("ega-1", n=N, length=LENGTH, cache_dir=tmp_path, progress=False)
    assert loaded == ["ega-1"] and Path(A.encoding["source"]).name.startswith("ega-1-")
    argv = ["extract", "ega-1", "--n", str(N), "--length", str(LENGTH), "--quiet"]
    assert main([*argv, "--cache-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == A.encoding["source"]
    assert len(counter) == 1  # the CLI found the cached file
    assert main([*argv, "--seed", "2", "--layers", "2", "--threads", "1"]) == 0
    printed = Path(capsys.readouterr().out.strip())
    assert printed.is_file() and printed.parent.parent == cache_dir()
    assert len(counter) == 2
    assert main(["extract", "ega-1", "--n", "1", "--quiet"]) == 2
    assert "n:" in capsys.readouterr().err


def test_cached_dataset_roundtrip_tamper_and_key_change(tmp_path):
    import xarray as xr

    from msapod.studies.store.cache import CacheWarning, cached_dataset

    calls = []

    def compute():
        calls.append(1)
        return xr.Dataset({"x": ("i", np.arange(5.0))}, attrs={"flag": True})

    parts = {"a": 1, "b": [1, 2]}
    ds = cached_dataset("things", "lab el", parts, compute, cache_dir=tmp_path)
    path = Path(ds.encoding["source"])
    assert path.parent.name == "things" and path.name.startswith("lab_el-")
    np.testing.assert_array_equal(ds["x"], np.arange(5.0))
    again = cached_dataset("things", "lab el", parts, compute, cache_dir=tmp_path)
    assert len(calls) == 1 and again.encoding["source"] == str(path)
    # tamper with the stored values: detected, warned, recomputed
    with xr.open_dataset(path, engine="h5netcdf") as f:
        bad = f.load()
    bad["x"][0] = 99.0
    bad.to_netcdf(path, engine="h5netcdf")
    with pytest.warns(CacheWarning, match="sha256"):
        fixed = cached_dataset("things", "lab el", parts, compute, cache_dir=tmp_path)
    assert len(calls) == 2 and float(fixed["x"][0]) == 0.0
    # another key: another file
    other = cached_dataset("things", "lab el", {"a": 2}, compute, cache_dir=tmp_path)
    assert other.encoding["source"] != str(path) and len(calls) == 3
    with pytest.raises(ValueError, match="kind"):
        cached_dataset("../up", "x", parts, compute, cache_dir=tmp_path)
    with pytest.raises(TypeError, match="compute"):
        cached_dataset("things", "y", {"c": 1}, lambda: 3, cache_dir=tmp_path)


# ------------------------------------------------------------------------- FieldFile


def test_field_file_resumes_verifies_and_records_the_ensemble(tmp_path):
    from msapod.studies.store.cache import FieldFile

    rng = np.random.default_rng(0)
    full = rng.random((2, 3, 6, 4, 4)).astype(np.float32)  # (layer, head, snapshot, q, k)
    plan = [(0, 2), (2, 4), (4, 6)]
    calls = []

    def extract(a, b, arrays, write):
        calls.append((a, b))
        np.testing.assert_array_equal(arrays["ids"], np.arange(12).reshape(6, 2))
        write(1, full[1, :, a:b])  # layers in any order, each as soon as it is computed
        if len(calls) == 2:
            raise KeyboardInterrupt  # after one layer of the batch: the batch is redone
        write(0, full[0, :, a:b])

    def ensemble():
        return {"ids": np.arange(12).reshape(6, 2)}, {"unit": "token"}

    store = FieldFile(tmp_path / "f.nc", "key-1")
    with pytest.raises(KeyboardInterrupt):
        store.build(plan, full.shape, extract, ensemble=ensemble)
    assert not store.complete() and store.partial.exists()
    store.build(plan, full.shape, extract, ensemble=lambda: pytest.fail("restarted"))
    assert calls == [(0, 2), (2, 4), (2, 4), (4, 6)]  # the interrupted batch again, then on
    assert store.complete() and not store.partial.exists()
    np.testing.assert_array_equal(store.layer(1), full[1])
    assert store.ensemble()["unit"] == "token"
    assert not FieldFile(store.path, "key-2").complete()  # another key: not this file
    lazy = store.open(chunks={"snapshot": 4})  # verified, then dask-backed
    assert is_dask(lazy) and lazy.chunks[lazy.dims.index("snapshot")] == (4, 2)
    assert lazy.dims == ("layer", "head", "snapshot", "query", "key")
    np.testing.assert_array_equal(lazy.values, full)
    np.testing.assert_array_equal(lazy["head"], [1, 2, 3])
    lazy.close()

    with h5netcdf.File(store.path, "a") as f:
        f.variables["attention"][0, 0, 0, 0, 0] = 7.0
    with pytest.raises(OSError, match="sha256"):
        store.layer(0)
    with pytest.raises(OSError, match="values sha256"):
        store.open()


def test_field_file_redoes_a_stale_partial_file_and_checks_batch_shapes(tmp_path):
    from msapod.studies.store.cache import CacheWarning, FieldFile

    store = FieldFile(tmp_path / "f.nc", "k")
    store.partial.write_bytes(b"not netCDF")
    with pytest.warns(CacheWarning, match="stale"):
        store.build(
            [(0, 2)], (1, 2, 3, 3), lambda a, b, arrays, write: write(0, np.zeros((2, 3, 3)))
        )
    np.testing.assert_array_equal(store.layer(0), np.zeros((2, 3, 3), np.float32))
    other = FieldFile(tmp_path / "g.nc", "k")
    with pytest.raises(ValueError, match="shape"):
        other.build(
            [(0, 2)], (1, 2, 3, 3), lambda a, b, arrays, write: write(0, np.zeros((1, 3, 3)))
        )
    with pytest.raises(ValueError, match="layer index 1"):
        other.build(
            [(0, 2)], (1, 2, 3, 3), lambda a, b, arrays, write: write(1, np.zeros((2, 3, 3)))
        )
    with pytest.raises(ValueError, match=r"wrote layer indices \[0\], expected all 2"):
        FieldFile(tmp_path / "h.nc", "k").build(
            [(0, 2)], (2, 2, 3, 3), lambda a, b, arrays, write: write(0, np.zeros((2, 3, 3)))
        )


def test_state_sha256_sees_tensors_and_optionally_the_config():
    torch = pytest.importorskip("torch")
    from msapod.studies.store.cache import state_sha256

    class Config:
        def __init__(self, text):
            self.text = text

        def to_json_string(self, use_diff=False):
            return self.text

    m = torch.nn.Linear(3, 2)
    m.config = Config("a")
    plain = state_sha256(m)
    assert state_sha256(m, with_config=True) != plain
    m.config = Config("b")
    assert state_sha256(m) == plain
    with torch.no_grad():
        m.weight[0, 0] += 1
    assert state_sha256(m) != plain
