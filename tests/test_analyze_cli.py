"""``msapod analyze``: one command from a model and a text to a dataset and a report."""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import xarray as xr

from msapod import analyze
from msapod.cli import main
from msapod.models.data import ensemble_offsets, load_corpus, load_text
from msapod.studies import check_claims, report
from msapod.studies.measure.model_analysis import folder_label
from msapod.studies.measure.uncertainty import pod_jackknife, scale_jackknife

torch = pytest.importorskip("torch")

import msapod.models.extract as extract  # noqa: E402 - needs torch
from msapod.models import zoo  # noqa: E402
from msapod.models.extract import collect_attention, ensemble_ids  # noqa: E402
from msapod.studies import own_model as own  # noqa: E402

N, L = 12, 64  # small ensemble: the numbers are compared, not interpreted


class _Page(HTMLParser):
    """Collects the images and every URL-carrying attribute of an HTML page."""

    def __init__(self):
        super().__init__()
        self.images: list[str] = []
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.alts: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if tag == "img" and name == "src":
                self.images.append(value)
            elif tag == "img" and name == "alt":
                self.alts.append(value)
            elif name in ("src", "href", "srcset", "action", "data"):
                self.urls.append(value)


def _parse(path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["analyze", *map(str, argv), "--quiet"])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory):
    """Two zoo models (one per architecture), layers 1 and 3, small N and L."""
    trained = [m for m in zoo.models() if (zoo.path(m) / "model.safetensors").is_file()]
    base = next((m for m in trained if m.startswith("baseline")), None)
    ega = next((m for m in trained if m.startswith("ega")), None)
    if base is None or ega is None:
        pytest.skip("needs a trained baseline and EGA zoo model")
    root = tmp_path_factory.mktemp("analyze")
    argv = [
        "analyze", base, ega, "--n", str(N), "--length", str(L), "--layers", "1", "3",
        "--out", str(root / "out"), "--cache-dir", str(root / "cache"), "--quiet",
    ]  # fmt: skip
    assert main(argv) == 0
    return root, argv, base, ega


def test_zoo_dataset_equals_analyze(zoo_run):
    root, _, base, ega = zoo_run
    ds = xr.open_dataset(root / "out" / "analysis.nc")
    assert list(ds["model"].values) == [base, ega]
    assert list(ds["architecture"].values) == ["baseline", "ega"]
    assert list(ds["layer"].values) == [1, 3]
    ids, offsets = ensemble_ids(n=N, length=L, seed=0)  # the book's ensemble
    np.testing.assert_array_equal(ds["offset"].sel(model=base).values, offsets)
    F = collect_attention(zoo.load(base), ids, layers=[3], average_heads=True, progress=False)
    F = F.sel(layer=3, drop=True)
    want = analyze(F)
    got = ds.sel(model=base, layer=3)
    for name in ("scale_spectrum", "T_spec", "H_star", "dominant_scale", "window_centre"):
        np.testing.assert_allclose(got[name].values, want[name].values, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(got["spectrum"].values, want["spectrum"].values, rtol=1e-6)
    sj = scale_jackknife(F.astype(np.float64))
    pj = pod_jackknife(want["gram"])
    np.testing.assert_allclose(float(got["scale_centroid_se"]), float(sj["scale_centroid_se"]))
    np.testing.assert_allclose(got["T_spec_se"].values, pj["T_spec_se"].values, rtol=1e-6)
    t = float(ds.attrs["interval_t"])
    T, se = want["T_spec"].values, pj["T_spec_se"].values  # the log-scale interval of T_spec
    np.testing.assert_allclose(got["T_spec_upper"].values, T * np.exp(t * se / T), rtol=1e-6)
    np.testing.assert_allclose(got["T_spec_lower"].values, T / np.exp(t * se / T), rtol=1e-6)
    assert not np.allclose(
        ds["T_spec"].sel(model=base).values, ds["T_spec"].sel(model=ega).values
    )  # two different models, two different answers


def test_zoo_attrs_record_everything(zoo_run):
    root, _, base, _ = zoo_run
    ds = xr.open_dataset(root / "out" / "analysis.nc")
    one = ds.sel(model=base)
    assert str(one["source_sha256"].values) == zoo.load(base).weights_sha256
    assert re.fullmatch(r"[0-9a-f]{64}", str(one["text_sha256"].values))
    assert str(one["lag_unit"].values) == "character" and int(one["causal"]) == 1
    assert ds.attrs["n_snapshots"] == N and ds.attrs["length"] == L
    for key in ("param_omega0", "param_max_peaks", "param_centre", "param_width", "param_eps"):
        assert key in ds.attrs
    assert ds.attrs["param_eps"] == "0.05, 0.1, 0.2"


def test_report_is_self_contained(zoo_run):
    root, _, base, ega = zoo_run
    page = _parse(root / "out" / "report.html")
    # three layer trends, then per model the scalogram, scale spectrum, POD spectra and
    # mode lag profiles (one panel per layer)
    assert len(page.images) == 3 + 4 * 2
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    assert page.urls == []  # no stylesheet, script or link to fetch
    assert "script" not in page.tags and "link" not in page.tags
    text = (root / "out" / "report.html").read_text()
    assert "http://" not in text and "https://" not in text
    for model in (base, ega):
        for what in ("Scalogram", "Scale spectrum", "POD spectra", "Lag profiles"):
            assert f"{model}: {what}" in text
    assert "total (the attention A)" in text  # the default field, in words
    assert "lag profiles of A" in text


def test_rerun_reads_the_cache(zoo_run, monkeypatch, capsys):
    root, argv, _, _ = zoo_run

    def fail(*a, **k):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(extract, "record_batch", fail)
    monkeypatch.setattr(own, "analyse_field", fail)
    out = root / "again"
    argv = [*argv[: argv.index("--out")], "--out", str(out), *argv[argv.index("--out") + 2 :]]
    assert main([*argv, "--no-report"]) == 0  # the dataset is what the cache decides
    first = xr.open_dataset(root / "out" / "analysis.nc")
    second = xr.open_dataset(out / "analysis.nc")
    xr.testing.assert_identical(first, second)


def test_interrupted_extraction_resumes(tmp_path, monkeypatch):
    """A run stopped after the first batch continues from the second one."""
    src = own.resolve_source("baseline-1")
    ens = own.make_ensemble(src, n=6, length=32)
    calls = []
    real = extract.record_batch

    def flaky(model, ids, *args, **kw):  # one forward pass per batch
        calls.append(len(ids))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(model, ids, *args, **kw)

    monkeypatch.setattr(extract, "record_batch", flaky)
    with pytest.raises(KeyboardInterrupt):
        own.analyze_source(src, ens, layers=[2], batch_size=2, cache_dir=tmp_path, progress=False)
    calls.clear()
    monkeypatch.setattr(
        extract, "record_batch", lambda m, i, *a, **kw: calls.append(1) or real(m, i, *a, **kw)
    )
    ds = own.analyze_source(src, ens, layers=[2], batch_size=2, cache_dir=tmp_path, progress=False)
    assert len(calls) == 2  # batches 2 and 3 of 3
    F = extract.collect_attention(
        src.model, ens.ids, layers=[2], average_heads=True, progress=False
    )
    np.testing.assert_allclose(
        ds["T_spec"].sel(layer=2).values, analyze(F.sel(layer=2, drop=True))["T_spec"].values
    )


def test_claims_of_one_model(tmp_path, capsys):
    """Every layer of one model: the claims it can decide are decided by the book's rules,
    the architecture comparisons say they need more models; a layer subset skips them."""
    out = tmp_path / "out"
    code, _, err = _run(capsys, "baseline-1", "--n", 8, "--length", 32, "--out", out,
                        "--cache-dir", tmp_path / "c")  # fmt: skip
    assert code == 0, err
    ds = xr.open_dataset(out / "analysis.nc")
    assert {"C1", "C3", "C7", "C10"} <= set(ds["claim"].values)
    assert ds.attrs["claims_models"] == "baseline-1"
    c7 = ds.sel(claim="C7")
    assert str(c7["claim_verdict"].values) == "not testable as stated"
    assert "of each architecture" in str(c7["claim_reason"].values)
    # the verdicts are check_claims' on the same fields (one rule, everywhere)
    ids, _ = ensemble_ids(n=8, length=32)
    F = collect_attention(zoo.load("baseline-1"), ids, average_heads=True, progress=False)
    F = F.expand_dims(model=["baseline-1"]).assign_coords(architecture=("model", ["baseline"]))
    card = check_claims(F)
    assert list(ds["claim_verdict"].values) == list(card["verdict"].values)
    html = (out / "report.html").read_text()
    assert "The paper's claims on these models" in html and "not testable as stated" in html
    code, _, err = _run(capsys, "baseline-1", "--n", 8, "--length", 32, "--layers", 2,
                        "--out", tmp_path / "sub", "--cache-dir", tmp_path / "c",
                        "--no-report")  # fmt: skip
    assert code == 0 and "the paper's claims need every layer (1..6)" in err
    assert "claim" not in xr.open_dataset(tmp_path / "sub" / "analysis.nc").dims


# ----------------------------------------------------------------------------- Hugging Face


def _char_tokenizer(transformers, folder):
    """A character-level fast tokenizer over the zoo's 65 characters (built offline)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(load_corpus().chars)}
    vocab["[UNK]"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    fast.save_pretrained(folder)


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory):
    """A tiny random causal GPT-2 and a bidirectional BERT, saved with a tokenizer."""
    reason = "transformers is not installed (the hf extra: pip install -e .[hf])"
    transformers = pytest.importorskip("transformers", reason=reason)
    pytest.importorskip("tokenizers", reason=reason)
    root = tmp_path_factory.mktemp("hf")
    torch.manual_seed(0)
    small = dict(vocab_size=66, max_position_embeddings=64)
    gpt2 = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=16, vocab_size=66, n_positions=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    transformers.GPT2LMHeadModel(gpt2).save_pretrained(root / "gpt2")
    bert = transformers.BertConfig(
        num_hidden_layers=2, num_attention_heads=2, hidden_size=16, intermediate_size=32,
        **small,
    )  # fmt: skip
    transformers.BertModel(bert).save_pretrained(root / "bert")
    for name in ("gpt2", "bert"):
        _char_tokenizer(transformers, root / name)
    return root


def test_hf_causal_and_bidirectional(hf_models, tmp_path, capsys):
    import transformers

    out = tmp_path / "out"
    code, stdout, err = _run(
        capsys, hf_models / "gpt2", hf_models / "bert", "--labels", "tiny-gpt2", "tiny-bert",
        "--n", 10, "--length", 32, "--out", out, "--cache-dir", tmp_path / "cache",
    )  # fmt: skip
    assert code == 0, err
    assert "tiny-bert: bidirectional attention" in err
    assert "tiny-bert: the paper's claims are about causal attention" in err
    assert "tiny-gpt2: the paper's claims compare early layers" in err
    ds = xr.open_dataset(out / "analysis.nc")
    assert list(ds["model"].values) == ["tiny-gpt2", "tiny-bert"]
    assert list(ds["causal"].values) == [1, 0]
    assert list(ds["lag_unit"].values) == ["token", "token"]
    assert ds["lag"].min() < 0  # the bidirectional model has keys after the query
    # the causal model's numbers equal analyze() of its fields over the same ensemble
    model = transformers.AutoModel.from_pretrained(hf_models / "gpt2", attn_implementation="eager")
    val = load_corpus().val.astype(np.int64)  # character tokenizer: ids = the zoo's ids
    ids = val[ensemble_offsets(len(val), n=10, length=32)[:, None] + np.arange(32)]
    F = collect_attention(model, ids, layers=[2], average_heads=True, progress=False)
    want = analyze(F.sel(layer=2, drop=True))
    got = ds.sel(model="tiny-gpt2", layer=2)
    np.testing.assert_allclose(got["T_spec"].values, want["T_spec"].values, rtol=1e-5)
    page = _parse(out / "report.html")
    assert len(page.images) == 3 + 4 * 2 and page.urls == []
    text = (out / "report.html").read_text()
    assert "bidirectional" in text
    # the architecture from each config, the attention kind, the values the defaults took
    assert list(ds["model_type"].values) == ["gpt2", "bert"]
    assert "<td>tiny-bert</td><td>bert</td><td>standard, bidirectional</td>" in text
    assert "<td>tiny-gpt2</td><td>gpt2</td><td>standard, causal</td>" in text
    assert ds.attrs["param_scale_min"] == 3.0 and ds.attrs["param_n_modes"] == 10
    assert ds.attrs["param_scale_max"] == "tiny-gpt2: 16, tiny-bert: 31.5"  # L / 2, (2L - 1) / 2
    assert "<td>n_scales</td><td>48 (default)</td>" in text and ">None<" not in text
    assert all(alt != "figure" and len(alt) > 40 for alt in page.alts)


@pytest.mark.parametrize(
    ("parts", "want"),
    [
        (("run-7",), "run-7"),
        (("all-MiniLM-L6-v2", "model"), "all-MiniLM-L6-v2/model"),
        (("runs", "checkpoint"), "runs/checkpoint"),
        (("models--org--tiny-bert", "snapshots", "0123456789abcdef0123"), "tiny-bert"),
        (("exp", "0123456789abcdef0123"), "exp/0123456789abcdef0123"),
    ],
)
def test_folder_label(tmp_path, parts, want):
    """A model folder's label names the model, not where it is kept."""
    folder = tmp_path.joinpath(*parts)
    folder.mkdir(parents=True)
    assert folder_label(folder) == want


def test_report_flags_grid_edges(zoo_run):
    """A dominant scale at the first or last scale of the grid is marked as the grid's edge,
    and only such a scale."""
    root, _, base, _ = zoo_run
    ds = xr.open_dataset(root / "out" / "analysis.nc").load()
    ds["dominant_edge"][:] = False
    ds["dominant_scale"].loc[dict(model=base, layer=3, peak=1)] = ds["scale"].values[0]
    ds["dominant_edge"].loc[dict(model=base, layer=3, peak=1)] = True
    ds["dominant_scale"].loc[dict(model=base, layer=3, peak=2)] = ds["scale"].values[-1]
    ds["dominant_edge"].loc[dict(model=base, layer=3, peak=2)] = True
    rows = report._summary_rows(ds, base)
    flagged = [row[0] for row in rows if "(grid edge)" in row[2]]
    assert flagged == ["3"]
    assert f"≤ {ds['scale'].values[0]:.1f} (grid edge)" in rows[1][2]  # a bound, read as one
    assert f"≥ {ds['scale'].values[-1]:.1f} (grid edge)" in rows[1][2]
    assert rows[1][2].count("(grid edge)") == 2  # the first peak of layer 3 is interior


def test_heads_kept(hf_models, tmp_path, capsys):
    """--heads keep: every head analysed on its own, equal to analyze() of that head."""
    code, _, err = _run(capsys, hf_models / "gpt2", "--heads", "keep", "--n", 6, "--length", 16,
                        "--out", tmp_path / "o", "--cache-dir", tmp_path / "c")  # fmt: skip
    assert code == 0, err
    ds = xr.open_dataset(tmp_path / "o" / "analysis.nc")
    assert ds["T_spec"].dims == ("model", "layer", "head", "window")
    src = own.resolve_source(str(hf_models / "gpt2"))
    ens = own.make_ensemble(src, n=6, length=16)
    F = collect_attention(src.model, ens.ids, layers=[1], progress=False)
    want = analyze(F.sel(layer=1, head=2, drop=True))
    got = ds.sel(model="gpt2", layer=1, head=2)
    np.testing.assert_allclose(got["T_spec"].values, want["T_spec"].values, rtol=1e-5)
    assert len(_parse(tmp_path / "o" / "report.html").images) == 3 + 4


def test_hf_folder_runs_without_an_attention_option(hf_models, tmp_path, capsys):
    """A Hugging Face folder loads as transformers loads it (SDPA) and is recorded in one
    pass per batch; its fields are eager attention's to float32 round-off."""
    import transformers

    src = own.resolve_source(str(hf_models / "gpt2"))
    assert src.model.config._attn_implementation == "sdpa"
    own.probe(src)
    assert any("AttentionInterface, sdpa kernel" in note for note in src.notes)
    ens = own.make_ensemble(src, n=6, length=16)
    eager = transformers.AutoModel.from_pretrained(hf_models / "gpt2", attn_implementation="eager")
    got = collect_attention(src.model, ens.ids, progress=False)
    want = collect_attention(eager, ens.ids, progress=False)
    np.testing.assert_allclose(got.values, want.values, rtol=0, atol=1e-6)
    assert ens.char_start is not None  # a fast tokenizer: each snippet's characters
    np.testing.assert_array_equal(ens.char_end - ens.char_start, 16)  # one per token


def test_lag_band(hf_models, tmp_path, capsys):
    """--tau-max: the fields and the analysis of the lags 0..tau_max; refused for a
    bidirectional model."""
    code, _, err = _run(capsys, hf_models / "gpt2", "--tau-max", 9, "--n", 6, "--length", 32,
                        "--out", tmp_path / "o", "--cache-dir", tmp_path / "c")  # fmt: skip
    assert code == 0, err
    assert "gpt2: the paper's claims are decided on whole fields; run without --tau-max" in err
    ds = xr.open_dataset(tmp_path / "o" / "analysis.nc")
    assert ds.attrs["tau_max"] == 9 and "key" not in ds.dims
    np.testing.assert_array_equal(ds["lag"], np.arange(10))
    assert ds["mean"].dims == ("model", "layer", "query", "lag")
    src = own.resolve_source(str(hf_models / "gpt2"))
    ens = own.make_ensemble(src, n=6, length=32)
    R = collect_attention(src.model, ens.ids, layers=[2], average_heads=True, tau_max=9)
    want = analyze(R.sel(layer=2, drop=True))
    got = ds.sel(model="gpt2", layer=2)
    np.testing.assert_allclose(got["T_spec"].values, want["T_spec"].values, rtol=1e-6)
    np.testing.assert_allclose(got["energy"].values, want["energy"].values, rtol=1e-6)
    assert len(_parse(tmp_path / "o" / "report.html").images) == 3 + 4
    code, _, err = _run(capsys, hf_models / "bert", "--tau-max", 9, "--n", 6, "--length", 32,
                        "--out", tmp_path / "b", "--cache-dir", tmp_path / "c")  # fmt: skip
    assert code == 2 and "--tau-max: the lag band keeps lags 0..tau_max of causal" in err
    code, _, err = _run(capsys, hf_models / "gpt2", "--tau-max", 32, "--n", 6, "--length", 32,
                        "--out", tmp_path / "x", "--cache-dir", tmp_path / "c")  # fmt: skip
    assert code == 2 and "--tau-max: expected a lag below the field's 32 lags" in err


def test_gguf_route(tmp_path, capsys):
    reason = "the llm extra is not installed (pip install -e .[llm])"
    pytest.importorskip("transformers", reason=reason)
    pytest.importorskip("gguf", reason=reason)
    from msapod.studies.measure import llm

    try:
        llm.smollm2_path(verify=False)
    except FileNotFoundError as err:
        pytest.skip(f"the SmolLM2 weights are not installed ({err})")
    code, _, err = _run(
        capsys, "smollm2", "--n", 5, "--length", 16, "--layers", 1, 30,
        "--out", tmp_path / "out", "--cache-dir", tmp_path / "cache", "--no-report",
    )  # fmt: skip
    assert code == 0, err
    ds = xr.open_dataset(tmp_path / "out" / "analysis.nc")
    assert list(ds["layer"].values) == [1, 30]
    assert str(ds["source_kind"].values[0]) == "gguf"
    assert str(ds["lag_unit"].values[0]) == "token"
    assert np.isfinite(ds["scale_centroid"]).all()
    assert np.isfinite(ds["spectrum"].sel(window="plain")).all()


# ----------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no-such-model"], r"unknown source"),
        (["baseline-9"], r"unknown source \(no such zoo model; did you mean baseline-"),
        (["./no/such/folder"], r"unknown source \(no such folder\)"),
        (["baseline-1", "--layers", "7"], r"--layers: expected numbers in 1\.\.6"),
        (["baseline-1", "--n", "2000"], r"--text: .* N x length = 2000 x 256"),
        (["baseline-1", "--length", "300"], r"--length: 300 tokens exceed the context"),
        (["baseline-1", "--n", "2"], r"--n: expected an integer >= 5"),
        (["baseline-1", "baseline-2", "--labels", "a"], r"--labels: expected one label"),
        (["baseline-1", "--eps", "1.5"], r"--eps"),
        (["baseline-1", "--scale-max", "500", "--n", "5", "--length", "16"], r"--scale-max"),
        (["baseline-1", "--n", "5", "--n-modes", "6"], r"--n-modes: expected an integer 1\.\.5"),
        (["baseline-1", "--max-peaks", "0"], r"--max-peaks: expected an integer >= 1"),
        (["baseline-1", "--centre", "middle"], r"--centre: expected one of \('peak'"),
        (["baseline-1", "--width", "0"], r"--width: expected a finite factor kappa > 0"),
        (["baseline-1", "--n-scales", "1"], r"--n-scales: expected an integer >= 2"),
    ],
)
def test_bad_input_exit_2(argv, message, tmp_path, capsys):
    code, _, err = _run(capsys, *argv, "--out", tmp_path / "out", "--cache-dir", tmp_path / "c")
    assert code == 2
    assert re.search(message, err), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_text_file_errors(tmp_path, capsys):
    short = tmp_path / "short.txt"
    short.write_text("To be, or not to be: that is the question.\n" * 3)
    code, _, err = _run(capsys, "baseline-1", "--text", short, "--n", 5, "--length", 64,
                        "--out", tmp_path / "o")  # fmt: skip
    assert code == 2 and "has 129 characters, room for 2" in err
    odd = tmp_path / "odd.txt"
    odd.write_text("naïve " * 200)
    code, _, err = _run(capsys, "baseline-1", "--text", odd, "--n", 5, "--length", 64,
                        "--out", tmp_path / "o")  # fmt: skip
    assert code == 2 and "'ï' is not in the vocabulary" in err
    code, _, err = _run(capsys, "baseline-1", "--text", tmp_path / "none.txt",
                        "--out", tmp_path / "o")  # fmt: skip
    assert code == 2 and "is not a file" in err


def test_text_file_is_used(tmp_path, capsys):
    text = tmp_path / "play.txt"
    body = load_text()[:20000]
    text.write_text(body)
    code, _, err = _run(capsys, "baseline-1", "--text", text, "--n", 5, "--length", 32,
                        "--layers", 6, "--out", tmp_path / "o", "--cache-dir", tmp_path / "c",
                        "--no-report")  # fmt: skip
    assert code == 0, err
    ds = xr.open_dataset(tmp_path / "o" / "analysis.nc")
    assert str(ds["text_sha256"].values[0]) == hashlib.sha256(body.encode()).hexdigest()
    assert str(ds["text_source"].values[0]) == str(text.resolve())
    assert not (tmp_path / "o" / "report.html").exists()


def test_failure_exit_1(tmp_path, capsys, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(own, "analyse_field", broken)
    code, _, err = _run(capsys, "baseline-1", "--n", 5, "--length", 32, "--layers", 1,
                        "--out", tmp_path / "o", "--cache-dir", tmp_path / "c")  # fmt: skip
    assert code == 1
    assert "the analysis failed (RuntimeError: planted failure)" in err
    assert "Traceback" not in err
