"""The shipped results: verified loading (bytes and provenance) and the reproduction check."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from msapod._io import sha256_file
from msapod.models import zoo
from msapod.models.data import SHA256
from msapod.studies.reproduce import _open_manifest, _provenance, analysis_file
from msapod.studies.store.results import (
    RTOL,
    ResultsError,
    _close_text,
    _compare_netcdf,
    check_results,
    load_result,
    manifest,
)


def _folder(tmp_path, name="shipped"):
    root = tmp_path / name
    root.mkdir()
    ds = xr.Dataset(
        {
            "T_spec": (("model", "layer"), np.array([[1.0, 0.5], [0.9, 0.25]])),
            "verdict": (("layer",), np.array(["holds", "partly"])),
        },
        coords={"model": ["baseline-1", "ega-1"], "layer": [1, 2]},
    )
    ds.to_netcdf(root / "uncertainty.nc", engine="h5netcdf")
    card = pd.DataFrame(
        {
            "measured": ["centroid 5.2–6.9 characters", "T_spec 0.81"],
            "verdict": ["holds", "partly"],
        },
        index=pd.Index(["C1", "C3"], name="claim"),
    )
    card.to_csv(root / "scorecard.csv")
    man = {
        "files": {f: sha256_file(root / f) for f in ("uncertainty.nc", "scorecard.csv")},
        "models": ["baseline-1", "ega-1"],
        "provenance": _provenance(["baseline-1", "ega-1"]),
    }
    (root / "manifest.json").write_text(json.dumps(man))
    return root


def test_load_result_verifies_bytes(tmp_path):
    root = _folder(tmp_path)
    ds = load_result("uncertainty", root)
    assert ds["T_spec"].sel(model="ega-1", layer=2) == 0.25
    assert ds.attrs["source"].endswith("uncertainty.nc")
    card = load_result("scorecard", root)
    assert card.loc["C3", "verdict"] == "partly"
    with pytest.raises(ResultsError, match="no entry for 'pruning.nc'"):
        load_result("pruning", root)
    with open(root / "scorecard.csv", "a") as f:
        f.write("C9,x,holds\n")
    with pytest.raises(ResultsError, match="differs from the manifest"):
        load_result("scorecard", root)
    with pytest.raises(ValueError, match="name"):
        load_result("../secrets", root)


def test_provenance_is_checked(tmp_path):
    root = _folder(tmp_path)
    man = json.loads((root / "manifest.json").read_text())
    assert man["provenance"]["data_sha256"] == SHA256
    stale = json.loads(json.dumps(man))
    stale["provenance"]["weights_sha256"]["ega-1"] = "0" * 64
    (root / "manifest.json").write_text(json.dumps(stale))
    with pytest.raises(ResultsError, match="ega-1 were computed from weights 000000000000"):
        load_result("uncertainty", root)
    stale = json.loads(json.dumps(man))
    stale["provenance"]["data_sha256"] = "f" * 64
    (root / "manifest.json").write_text(json.dumps(stale))
    with pytest.raises(ResultsError, match="data sha256"):
        manifest(root)
    del man["provenance"]
    (root / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(ResultsError, match="provenance"):
        manifest(root)
    (root / "manifest.json").unlink()
    with pytest.raises(ResultsError, match="no results manifest"):
        manifest(root)


def test_provenance_reads_the_zoo():
    prov = _provenance(["baseline-1"])
    cfg = json.loads((zoo.path("baseline-1") / "config.json").read_text())
    assert prov["weights_sha256"] == {"baseline-1": cfg["weights_sha256"]}


def test_per_model_steps_keep_a_folder_of_every_zoo(tmp_path):
    """A per-model step of the main zoo's models keeps a manifest that records more models
    (the other zoos', which the evidence reads); other weights or data start afresh."""
    every = _provenance(["baseline-1", "ega-1", "baseline-2"])
    record = {"files": {"evidence.nc": "0" * 64}, "timings_s": {}, "provenance": every}
    (tmp_path / "manifest.json").write_text(json.dumps(record))
    kept = _open_manifest(tmp_path, ["baseline-1", "ega-1"], lambda line: None)
    assert kept["files"] == record["files"] and kept["provenance"] == every
    other = {**every, "data_sha256": "f" * 64}
    (tmp_path / "manifest.json").write_text(json.dumps({**record, "provenance": other}))
    lines = []
    fresh = _open_manifest(tmp_path, ["baseline-1", "ega-1"], lines.append)
    assert fresh["files"] == {} and "starting afresh" in lines[0]


def test_check_results_tolerances(tmp_path):
    shipped = _folder(tmp_path)
    new = tmp_path / "new"
    shutil.copytree(shipped, new)
    assert check_results(new, shipped) == {"scorecard.csv": [], "uncertainty.nc": []}

    def rewrite(t_spec_scale, verdicts, measured):
        ds = xr.open_dataset(shipped / "uncertainty.nc", engine="h5netcdf").load()
        ds["T_spec"] = ds["T_spec"] * t_spec_scale
        ds["verdict"] = ("layer", np.array(verdicts))
        ds.to_netcdf(new / "uncertainty.nc", engine="h5netcdf")
        card = pd.read_csv(shipped / "scorecard.csv", index_col=0)
        card.loc["C1", "measured"] = measured
        card.to_csv(new / "scorecard.csv")
        return check_results(new, shipped)

    # within tolerance: numbers a hair apart, the last printed digit rounded the other way
    ok = rewrite(1 + RTOL / 10, ["holds", "partly"], "centroid 5.3–6.9 characters")
    assert ok == {"scorecard.csv": [], "uncertainty.nc": []}
    # beyond tolerance, a verdict changed, a number two units apart
    bad = rewrite(1 + 100 * RTOL, ["holds", "holds"], "centroid 5.4–6.9 characters")
    assert any("T_spec: 4 values differ" in p for p in bad["uncertainty.nc"])
    assert any(p.startswith("verdict: differs (1 cells)") for p in bad["uncertainty.nc"])
    assert len(bad["scorecard.csv"]) == 1 and "C1/measured" in bad["scorecard.csv"][0]
    (new / "scorecard.csv").unlink()
    assert check_results(new, shipped)["scorecard.csv"] == ["not produced by the recomputation"]


def test_check_results_compares_finite_values_beside_infinite_ones(tmp_path):
    """An infinite bound in a variable (a one-sided claim's threshold) neither widens the
    tolerance of its finite values nor may change sign or place."""

    def compare(values):
        new = tmp_path / "new.nc"
        xr.Dataset({"threshold": ("claim", np.array(values))}).to_netcdf(new, engine="h5netcdf")
        return _compare_netcdf(new, old)

    old = tmp_path / "old.nc"
    xr.Dataset({"threshold": ("claim", [np.inf, 0.5, -np.inf])}).to_netcdf(old, engine="h5netcdf")
    assert compare([np.inf, 0.5 * (1 + RTOL / 10), -np.inf]) == []
    (msg,) = compare([np.inf, 0.7, -np.inf])
    assert msg.startswith("threshold: 1 values differ (largest |diff| 0.2, 0.4 of its scale 0.5")
    assert compare([np.inf, 0.5, np.inf]) == ["threshold: infinite values differ"]


def test_close_text():
    assert _close_text("a 1.23 [0.5, 2]", "a 1.24 [0.5, 2]")
    assert not _close_text("a 1.23", "a 1.25")
    assert not _close_text("holds 3 of 4", "holds 3 in 4")
    assert _close_text("SE 1.0e-08", "SE 1.0e-08")
    assert _close_text("−0.0123", "-0.0124")


def test_analysis_file_names():
    assert analysis_file({}) == "zoo_analysis.nc"
    assert analysis_file({"width": 0.5}) == "zoo_analysis-width-0.5.nc"
    assert analysis_file({"centre": "centroid"}) == "zoo_analysis-centre-centroid.nc"


def _roundoff_pair(tmp_path, change):
    """A shipped file and a recomputation of it that differs by ``change``."""
    rng = np.random.default_rng(0)
    gram = rng.normal(size=(3, 8, 8)) * 1e-3
    ratio = 1.0 + 0.05 * rng.normal(size=4)
    dev = np.array([3.0e-8, 4.7e-8])
    coords = {"layer": [1, 2, 3], "scale": np.geomspace(3, 128, 4)}
    old = xr.Dataset(
        {
            "gram": (("layer", "i", "j"), gram),
            "ratio": ("scale", ratio),
            "count": ("layer", np.array([3, 4, 5])),
            "row_sum_deviation": ("pair", dev, {"roundoff_bound": 1e-6}),
        },
        coords=coords,
    )
    new = change(old.copy(deep=True))
    old.to_netcdf(tmp_path / "old.nc", engine="h5netcdf")
    new.to_netcdf(tmp_path / "new.nc", engine="h5netcdf")
    return _compare_netcdf(tmp_path / "new.nc", tmp_path / "old.nc")


def test_check_passes_round_off_and_fails_a_real_change(tmp_path):
    """Round-off of another machine (float32 fields summed in another order: about 1e-6 of
    each variable's scale, and a round-off measurement that moves within its bound) passes;
    a real change (one value moved by 1e-2 of its variable's scale, one count changed)
    fails and names the variable with its difference relative to the variable's scale."""
    rng = np.random.default_rng(1)

    def roundoff(ds):
        for v in ("gram", "ratio"):
            scale = float(np.abs(ds[v]).max())
            ds[v] = ds[v] + 2e-6 * scale * rng.uniform(-1, 1, ds[v].shape)
        ds["row_sum_deviation"] = ds["row_sum_deviation"] * np.array([0.25, 3.0])
        return ds

    assert _roundoff_pair(tmp_path, roundoff) == []

    def real(ds):
        ds["ratio"][2] = ds["ratio"][2] + 1e-2 * float(np.abs(ds["ratio"]).max())
        return ds

    (msg,) = _roundoff_pair(tmp_path, real)
    assert msg.startswith("ratio: 1 values differ") and "of its scale" in msg

    def count(ds):
        ds["count"][0] = 4
        return ds

    assert _roundoff_pair(tmp_path, count) == ["count: differs (1 cells)"]

    def above_bound(ds):
        ds["row_sum_deviation"][1] = 2e-6
        return ds

    assert _roundoff_pair(tmp_path, above_bound) == [
        "row_sum_deviation: 1 values above its round-off bound 1e-06"
    ]

    def coordinate(ds):
        return ds.assign_coords(scale=ds["scale"].values * (1 + 1e-9))

    assert _roundoff_pair(tmp_path, coordinate) == ["scale: coordinate differs (4 values)"]

    # a shipped file written before the variable declared its bound: the recomputation's
    # declaration (what the code measures today) applies
    old = xr.open_dataset(tmp_path / "old.nc", engine="h5netcdf").load()
    old["row_sum_deviation"].attrs = {}
    old.to_netcdf(tmp_path / "bare.nc", engine="h5netcdf")
    new = roundoff(xr.open_dataset(tmp_path / "old.nc", engine="h5netcdf").load())
    new["gram"], new["ratio"] = old["gram"], old["ratio"]
    new.to_netcdf(tmp_path / "new2.nc", engine="h5netcdf")
    assert _compare_netcdf(tmp_path / "new2.nc", tmp_path / "bare.nc") == []


def test_machine_precision_results_are_bounds():
    from msapod.studies.verdict.render import theorem_text

    # two machines' round-off (1.5e-15 and 6.0e-16) print the same bound
    assert theorem_text(1.5e-15, 0, 30) == theorem_text(6.0e-16, 0, 30)
    assert "below 1e-14" in theorem_text(1.5e-15, 0, 30)


def test_vectors_defined_up_to_sign_compare_after_matching_it(tmp_path):
    from msapod.studies.store.results import _compare_netcdf

    rng = np.random.default_rng(0)
    modes = rng.standard_normal((3, 2, 10))  # (layer, mode, lag)
    flipped = modes.copy()
    flipped[1, 0] *= -1  # one mode returned with the other sign
    changed = flipped.copy()
    changed[2, 1, 4] += 0.5  # and a real change elsewhere

    def write(name, values, signed=True):
        attrs = {"sign_dims": "lag"} if signed else {}
        ds = xr.Dataset({"mode_lag": (("layer", "mode", "lag"), values, attrs)})
        ds.to_netcdf(tmp_path / name, engine="h5netcdf")
        return tmp_path / name

    old = write("old.nc", modes)
    assert _compare_netcdf(write("flip.nc", flipped), old) == []
    assert _compare_netcdf(write("real.nc", changed), old)
    bare = write("bare_old.nc", modes, signed=False)
    assert _compare_netcdf(write("bare_flip.nc", flipped, signed=False), bare)


def test_results_files_store_text_as_compressed_characters(tmp_path):
    """Text arrays (data and coordinates, non-ASCII included) come back equal, stored as
    gzip-compressed fixed-width characters rather than HDF5's raw variable-length strings."""
    import h5py

    from msapod.studies.reproduce import _save

    words = np.array(["holds", "does not hold", "H* ≤ N − 1", ""] * 50)
    ds = xr.Dataset(
        {"reason": ("spec", words), "value": ("spec", np.arange(words.size, dtype=float))},
        coords={"spec": np.arange(words.size), "zoo": ("spec", np.array(["d256", "d128"] * 100))},
    )
    _save(ds, tmp_path / "r.nc")
    with xr.open_dataset(tmp_path / "r.nc", engine="h5netcdf") as back:
        back = back.load()
    for name in ("reason", "zoo"):
        assert back[name].values.astype(str).tolist() == ds[name].values.tolist()
    with h5py.File(tmp_path / "r.nc") as f:
        for name in ("reason", "zoo"):
            assert f[name].dtype.kind == "S" and f[name].compression == "gzip", name


def test_reading_shipped_results_needs_no_torch():
    """The provenance check reads the zoo's configs and identities, which need no torch:
    a page or script that only reads results/ does not pay for importing it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from msapod.studies.store.results import load_result\n"
        "load_result('scorecard')\n"
        "from msapod.models import zoo\n"
        "zoo.identity(zoo.MODELS[0])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


def test_check_results_compares_the_recomputed_part(tmp_path):
    """A recomputation of some models and draws is compared with those slices of the
    shipped file; a part the shipped file lacks is named."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    loss = np.arange(12.0).reshape(2, 3, 2)
    ds = xr.Dataset(
        {"loss": (("model", "draw", "layer"), loss)},
        coords={"model": ["baseline-1", "ega-1"], "draw": [0, 1, 2], "layer": [1, 2]},
    )
    ds.to_netcdf(shipped / "pruning.nc", engine="h5netcdf")
    man = {
        "files": {"pruning.nc": sha256_file(shipped / "pruning.nc")},
        "models": ["baseline-1", "ega-1"],
        "provenance": _provenance(["baseline-1", "ega-1"]),
    }
    (shipped / "manifest.json").write_text(json.dumps(man))
    new = tmp_path / "new"
    new.mkdir()
    part = ds.sel(model=["baseline-1"], draw=[0, 1])
    part.to_netcdf(new / "pruning.nc", engine="h5netcdf")
    which = {"model": ["baseline-1"], "draw": [0, 1]}
    assert check_results(new, shipped, files={"pruning.nc": which}) == {"pruning.nc": []}
    # the same values compared with the whole file, or with another model's slice, differ
    assert check_results(new, shipped)["pruning.nc"][0].startswith("sizes differ")
    other = {"model": ["ega-1"], "draw": [0, 1]}
    assert (
        "loss: 4 values differ"
        in check_results(new, shipped, files={"pruning.nc": other})["pruning.nc"][0]
    )
    missing = check_results(new, shipped, files={"pruning.nc": {"draw": [0, 5]}})
    assert missing == {"pruning.nc": ["draw [5] are not in the shipped file"]}
