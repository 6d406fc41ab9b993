"""Bad input, corrupt files and odd coordinates: each case gives a clear error
naming the argument or file, or the correct result; never a silent wrong answer."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.cli import main


def _field(n=8, length=12, seed=0):
    rng = np.random.default_rng(seed)
    logits = np.where(
        np.tril(np.ones((length, length), bool)), rng.standard_normal((n, length, length)), -np.inf
    )
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return xr.DataArray(A, dims=("snapshot", "query", "key"))


def _u(n=8, length=12):
    return msapod.reynolds(_field(n, length))["fluctuation"]


# --- silent wrong results -------------------------------------------------------------


def test_cached_coordinates_are_verified(tmp_path):
    from msapod.studies.store.cache import CacheWarning, cached_dataset

    calls = []

    def compute():
        calls.append(1)
        return xr.Dataset(
            {"x": (("scale",), np.arange(4.0))},
            coords={"scale": [3.0, 4.0, 6.0, 9.0]},
            attrs={"provenance": "made here"},
        )

    ds = cached_dataset("things", "c", {"a": 1}, compute, cache_dir=tmp_path)
    path = ds.encoding["source"]
    with xr.open_dataset(path, engine="h5netcdf") as f:
        bad = f.load()
    bad = bad.assign_coords(scale=[3.0, 4.0, 6.0, 10.0])  # a flipped coordinate
    bad.to_netcdf(path, engine="h5netcdf")
    with pytest.warns(CacheWarning, match="sha256"):
        fixed = cached_dataset("things", "c", {"a": 1}, compute, cache_dir=tmp_path)
    assert len(calls) == 2 and fixed["scale"].values.tolist() == [3.0, 4.0, 6.0, 9.0]
    # a provenance attr edited: also caught
    with xr.open_dataset(path, engine="h5netcdf") as f:
        bad = f.load()
    bad.attrs["provenance"] = "made elsewhere"
    bad.to_netcdf(path, engine="h5netcdf")
    with pytest.warns(CacheWarning):
        cached_dataset("things", "c", {"a": 1}, compute, cache_dir=tmp_path)
    assert len(calls) == 3


def test_dask_input_with_nan_raises_like_numpy():
    pytest.importorskip("dask")
    u = _u()
    bad = u.copy()
    bad[2, 5, 3] = np.nan
    for f in (msapod.lag_gram, lambda x: msapod.coherency(x, scales=[2.0, 3.0])):
        with pytest.raises(ValueError, match="NaN|finite"):
            f(bad)
        with pytest.raises(ValueError, match="NaN|finite"):
            np.asarray(f(bad.chunk({"snapshot": 3})))


@pytest.mark.parametrize("dim", ["key", "query", "snapshot"])
def test_duplicated_coordinates_raise(dim):
    A = _field()
    labels = np.arange(A.sizes[dim])
    labels[1] = labels[0]
    A = A.assign_coords({dim: labels})
    with pytest.raises(ValueError, match=f"{dim}.*(duplicate|unique)"):
        msapod.reynolds(A)
    with pytest.raises(ValueError, match=f"{dim}.*(duplicate|unique)"):
        msapod.to_lag(A)


@pytest.mark.parametrize("omega0", [0.0, -6.0, np.nan])
def test_bad_omega0_raises(omega0):
    with pytest.raises(ValueError, match="omega0"):
        msapod.scalogram(_u(), scales=[2.0, 3.0], omega0=omega0)
    with pytest.raises(ValueError, match="omega0"):
        msapod.fourier_period(3.0, omega0=omega0)


@pytest.mark.parametrize("n_modes", [2.5, 0, -1, "3", True])
def test_bad_n_modes_raises(n_modes):
    with pytest.raises(ValueError, match="n_modes"):
        msapod.pod(_u(), n_modes=n_modes)


@pytest.mark.parametrize(
    "rank, message", [(1.5, "an integer 0..3, got 1.5"), (4, "0..3"), (-1, "0..3")]
)
def test_bad_rank_names_rank(rank, message):
    u = _u()
    res = msapod.pod(u, n_modes=3)
    with pytest.raises(ValueError, match=f"rank: expected {message}"):
        msapod.reconstruct(res, rank)
    with pytest.raises(ValueError, match=f"rank: expected {message}"):
        msapod.reconstruction_error(u, res, rank)


@pytest.mark.parametrize(
    "args, message",
    [
        ((0,), r"n_lag: expected a positive integer \(lags\), got 0"),
        ((64.0,), r"n_lag: expected a positive integer \(lags\), got 64.0"),
        ((4,), r"smin, smax: expected 0 < smin < smax, got 3.0, 2.0 \(smax = n_lag / 2"),
        ((64, 3.0, 2.0), r"smin, smax: expected 0 < smin < smax, got 3.0, 2.0$"),
        ((64, 3.0, None, 1), r"num: expected an integer >= 2, got 1"),
        ((64, 3.0, None, 2.5), r"num: expected an integer >= 2, got 2.5"),
    ],
)
def test_bad_log_scales_name_the_argument(args, message):
    with pytest.raises(ValueError, match=message):
        msapod.log_scales(*args)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda A, u: msapod.reynolds(A, check_stochastic="no"), ValueError,
         r"check_stochastic: expected True or False, got 'no'"),
        (lambda A, u: msapod.check_field(A, stochastic=True, atol=-1), ValueError,
         r"atol: expected a finite number >= 0, got -1"),
        (lambda A, u: msapod.is_causal(A, atol=float("nan")), ValueError,
         r"atol: expected a finite number >= 0, got nan"),
        (lambda A, u: msapod.is_causal(A.values), TypeError, r"A: expected an xarray.DataArray"),
        (lambda A, u: msapod.scalogram(msapod.to_lag(u).values), TypeError,
         r"A: expected an xarray.DataArray, got ndarray"),
        (lambda A, u: msapod.morlet(np.arange(3.0), omega0=-1.0), ValueError,
         r"omega0: expected a finite number > 0"),
        (lambda A, u: msapod.fourier_period(-1.0), ValueError, r"scale: expected scales > 0"),
        (lambda A, u: msapod.fourier_period(np.inf), ValueError, r"scale: expected scales > 0"),
        (lambda A, u: msapod.wavelet_matrix([0.0, 2.0], np.arange(4)), ValueError,
         r"scales: expected scales > 0"),
        (lambda A, u: msapod.wavelet_matrix([np.nan], np.arange(4)), ValueError,
         r"scales: expected finite values"),
        (lambda A, u: msapod.effective_rank(msapod.pod(u)["spectrum"], 0.1, n_snapshots=0),
         ValueError, r"n_snapshots: expected an integer >= 2 \(N\), got 0"),
    ],
)  # fmt: skip
def test_public_functions_name_the_bad_argument(call, error, message):
    A = _field(8, 12)
    with pytest.raises(error, match=message):
        call(A, msapod.reynolds(A)["fluctuation"])


def _scalogram_and_pod():
    u = _u(8, 32)
    return u, msapod.scalogram(msapod.to_lag(u)), msapod.pod(u, n_modes=3)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda u, sc, res: msapod.dominant_scales(sc["spectrum"], 1.5),
         r"max_count: expected an integer >= 1, got 1.5"),
        (lambda u, sc, res: msapod.window_parameters(
            sc["energy"], xr.DataArray([400.0], dims="peak")),
         r"scales: expected dominant scales on the energy's scale grid \[3, 16\], got 400"),
        (lambda u, sc, res: msapod.window_parameters(
            sc["energy"], xr.DataArray([4.0], dims="peak"), width="1"),
         r"width: expected a factor kappa > 0"),
        (lambda u, sc, res: msapod.bootstrap_spectrum(res["gram"], seed="x"),
         r"seed: expected an integer >= 0, got 'x'"),
        (lambda u, sc, res: msapod.bootstrap_spectrum(res["gram"], n_boot=2.5),
         r"n_boot: expected an integer >= 1, got 2.5"),
        (lambda u, sc, res: msapod.bootstrap_spectrum(
            res["gram"] + xr.DataArray(np.triu(np.ones((8, 8))), dims=res["gram"].dims)),
         r"gram: expected a symmetric Gram matrix"),
        (lambda u, sc, res: msapod.coherency(u, [4.0], rtol=-1),
         r"rtol: expected a number in \[0, 1\), got -1"),
        (lambda u, sc, res: msapod.spectral_concentration(res["spectrum"], 1.5),
         r"k_min: expected an integer >= 1, got 1.5"),
        (lambda u, sc, res: msapod.spectral_concentration(res["spectrum"], 1, 2.5),
         r"k_max: expected an integer >= 2, got 2.5"),
    ],
)  # fmt: skip
def test_scale_window_and_resampling_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call(*_scalogram_and_pod())


def test_fourier_period_keeps_missing_scales_missing():
    p = msapod.fourier_period(np.array([np.nan, 1.0]))
    assert np.isnan(p[0]) and p[1] == pytest.approx(4 * np.pi / (6 + np.sqrt(38)))


def test_reconstruction_error_with_nan_raises():
    u = _u()
    res = msapod.pod(u)
    bad = u.copy()
    bad[0, 4, 2] = np.nan
    with pytest.raises(ValueError, match="u.*(NaN|finite)"):
        msapod.reconstruction_error(bad, res, 2)


def test_all_zero_fluctuation_has_no_dominant_scale():
    u = xr.zeros_like(_field())  # a fluctuation without energy
    sg = msapod.scalogram(u, scales=[2.0, 2.5, 3.0, 4.0])
    dom = msapod.dominant_scales(sg["spectrum"])
    assert np.isnan(dom.values).all()


# --- errors that say what is wrong ----------------------------------------------------


def test_zero_length_field_raises():
    A = xr.DataArray(np.zeros((4, 0, 0)), dims=("snapshot", "query", "key"))
    with pytest.raises(ValueError, match="A.*(query|key|length)"):
        msapod.reynolds(A)


@pytest.mark.parametrize("eps", [[], (), np.array([])])
def test_empty_eps_raises(eps):
    with pytest.raises(ValueError, match="eps"):
        msapod.analyze(_field(), scales=[2.0, 3.0], eps=eps)


def test_numpy_scalar_eps_is_accepted():
    spectrum = msapod.pod(_u())["spectrum"]
    assert int(msapod.effective_rank(spectrum, eps=np.float32(0.1))) == int(
        msapod.effective_rank(spectrum, eps=0.1)
    )
    ds = msapod.analyze(_field(), scales=[2.0, 3.0], eps=np.float64(0.1))
    assert "H_star" in ds


def test_duplicated_or_string_layer_coordinates():
    A = xr.concat([_field(seed=1), _field(seed=2)], "layer")
    named = A.assign_coords(layer=["early", "late"])  # labels are labels: fine
    ds = msapod.analyze(named, scales=[2.0, 3.0])
    assert ds["layer"].values.tolist() == ["early", "late"]
    with pytest.raises(ValueError, match="layer.*(duplicate|unique)"):
        msapod.analyze(A.assign_coords(layer=[2, 2]), scales=[2.0, 3.0])


def test_bootstrap_needs_a_square_gram():
    G = xr.DataArray(np.ones((4, 5)), dims=("snapshot", "snapshot_"))
    with pytest.raises(ValueError, match="gram.*square"):
        msapod.bootstrap_spectrum(G, n_boot=3)


def test_pod_given_a_numpy_array_says_so():
    with pytest.raises(TypeError, match="u.*DataArray"):
        msapod.pod(_u().values)


def test_reconstruction_error_with_another_ensemble_size_raises():
    u = _u(n=8)
    res = msapod.pod(u)
    with pytest.raises(ValueError, match="snapshot"):
        msapod.reconstruction_error(u.isel(snapshot=slice(0, 5)), res, 2)


def test_short_field_names_the_field_not_smin():
    u = _u(n=6, length=5)
    with pytest.raises(ValueError, match="lag") as err:
        msapod.scalogram(u)
    assert "smin" not in str(err.value)


# --- command line ---------------------------------------------------------------------


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert err.startswith("msapod: error:") and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    return err


def test_cli_reproduce_results_is_a_file(tmp_path, capsys):
    f = tmp_path / "results"
    f.write_text("x")
    assert main(["reproduce", "--results", str(f), "--steps", "scorecard"]) == 2
    assert "--results" in _one_line_error(capsys)


def test_cli_extract_cache_dir_is_a_file(tmp_path, capsys):
    f = tmp_path / "cache"
    f.write_text("x")
    assert main(["extract", "ega-1", "--n", "2", "--cache-dir", str(f), "--quiet"]) == 2
    assert "--cache-dir" in _one_line_error(capsys)


@pytest.mark.parametrize("content", ["{broken", "[1, 2]", '"text"'])
def test_cli_reproduce_bad_manifest(tmp_path, capsys, content):
    (tmp_path / "manifest.json").write_text(content)
    assert main(["reproduce", "--results", str(tmp_path), "--steps", "scorecard"]) == 2
    assert "manifest.json" in _one_line_error(capsys)


def test_cli_train_config_with_bad_types(tmp_path, capsys):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"name": "x", "steps": "ten"}))
    assert main(["train", "--config", str(cfg), "--out", str(tmp_path / "run")]) == 2
    err = _one_line_error(capsys)
    assert "cfg.json" in err and "steps" in err


def test_cli_debug_shows_the_traceback(tmp_path, capsys):
    f = tmp_path / "results"
    f.write_text("x")
    with pytest.raises(ValueError):
        main(["--debug", "reproduce", "--results", str(f), "--steps", "scorecard"])
