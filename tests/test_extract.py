"""Attention extraction: probabilities, labels, agreement with the forward pass."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import msapod
from msapod.models.data import SHA256, ensemble_offsets, load_corpus
from msapod.models.extract import collect_attention, ensemble_ids, iter_attention
from msapod.models.gpt import GPT, GPTConfig

torch.set_num_threads(1)


def tiny_gpt(attention="standard", dtype=torch.float32, seed=0) -> GPT:
    torch.manual_seed(seed)
    model = GPT(GPTConfig(n_layer=3, n_head=2, n_embd=16, block_size=32, attention=attention))
    with torch.no_grad():  # sharper than the init, so heads and layers differ visibly
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.3)
    model.name = f"tiny-{attention}"
    model.weights_sha256 = "ab" * 32
    return model.to(dtype).eval()


@pytest.fixture(scope="module")
def ens():
    return ensemble_ids(n=5, length=24, seed=1)


def test_ensemble_ids(ens):
    ids, offsets = ens
    corpus = load_corpus()
    assert ids.shape == (5, 24) and ids.dtype == np.int64
    np.testing.assert_array_equal(offsets, ensemble_offsets(len(corpus.val), 5, 24, seed=1))
    for row, o in zip(ids, offsets, strict=True):
        np.testing.assert_array_equal(row, corpus.val[o : o + 24])
    again, _ = ensemble_ids(corpus, n=5, length=24, seed=1)
    np.testing.assert_array_equal(ids, again)
    train_ids, _ = ensemble_ids(corpus, n=5, length=24, seed=1, split="train")
    assert not np.array_equal(ids, train_ids)
    with pytest.raises(ValueError, match="split"):
        ensemble_ids(corpus, n=5, length=24, split="test")
    with pytest.raises(ValueError, match="n:"):
        ensemble_ids(corpus, n=10**6, length=24)


@pytest.mark.parametrize("attention", ["standard", "ega"])
def test_collect_attention_fields(ens, attention):
    ids, offsets = ens
    model = tiny_gpt(attention)
    A = collect_attention(
        model, ids, offsets=offsets, data_sha256=SHA256, batch_size=2, progress=False
    )
    assert A.dims == ("layer", "head", "snapshot", "query", "key")
    assert A.shape == (3, 2, 5, 24, 24) and A.dtype == np.float32
    np.testing.assert_array_equal(A["layer"], [1, 2, 3])
    np.testing.assert_array_equal(A["head"], [1, 2])
    np.testing.assert_array_equal(A["snapshot"], np.arange(5))
    np.testing.assert_array_equal(A["query"], np.arange(24))
    np.testing.assert_array_equal(A["key"], np.arange(24))
    np.testing.assert_array_equal(A["offset"], offsets)
    assert A["offset"].dims == ("snapshot",)
    v = A.values
    np.testing.assert_allclose(v.sum(-1), 1.0, rtol=0, atol=1e-5)
    assert np.all(v >= 0)
    assert np.all(np.triu(v, 1) == 0)  # causal: nothing above the diagonal
    assert v[..., 1:, 0].max() < 1  # not trivially one-hot
    attrs = A.attrs
    assert attrs["model"] == f"tiny-{attention}" and attrs["attention"] == attention
    assert attrs["weights_sha256"] == "ab" * 32 and attrs["data_sha256"] == SHA256
    assert attrs["n_snapshots"] == 5 and attrs["length"] == 24
    assert attrs["source"] == "msapod.collect_attention" and attrs["msapod_version"]
    np.testing.assert_array_equal(attrs["offsets"], offsets)
    assert len(attrs["ids_sha256"]) == 64
    # layers and heads really differ
    assert np.abs(v[0] - v[2]).max() > 1e-3 and np.abs(v[:, 0] - v[:, 1]).max() > 1e-3


def test_average_heads_and_layer_subset(ens):
    ids, _ = ens
    model = tiny_gpt("ega")
    full = collect_attention(model, ids, progress=False, dtype=np.float64)
    avg = collect_attention(model, ids, average_heads=True, progress=False, dtype=np.float64)
    assert avg.dims == ("layer", "snapshot", "query", "key")
    np.testing.assert_allclose(avg.values, full.mean("head").values, rtol=0, atol=1e-14)
    sub = collect_attention(
        model, ids, layers=[3, 2], progress=False, dtype=np.float64, batch_size=3
    )
    np.testing.assert_array_equal(sub.layer, [2, 3])
    np.testing.assert_array_equal(sub.values, full.sel(layer=[2, 3]).values)
    one = collect_attention(model, ids, layers=2, average_heads=True, progress=False)
    assert one.sizes["layer"] == 1 and one.dtype == np.float32
    np.testing.assert_allclose(one.sel(layer=2).values, avg.sel(layer=2).values, atol=1e-7)


def test_iter_attention_streams_layers(ens):
    ids, _ = ens
    model = tiny_gpt("ega")
    it = iter_attention(model, torch.as_tensor(ids), layers=[1, 3], average_heads=True)
    model.train()
    first = next(it)
    assert first.dims == ("snapshot", "query", "key") and int(first.layer) == 1
    # between layers the caller's state is untouched: grad mode on, training mode kept
    assert torch.is_grad_enabled() and model.training
    last = next(it)
    assert int(last.layer) == 3
    with pytest.raises(StopIteration):
        next(it)
    per_head = next(iter(iter_attention(model, ids, layers=[2], dtype=np.float64)))
    assert per_head.dims == ("head", "snapshot", "query", "key")
    # identical to the model's public per-layer API (the hidden-state cache changes nothing)
    ref = dict(model.attention(torch.as_tensor(ids), layers=[1]))[1]
    assert torch.equal(torch.as_tensor(per_head.values).transpose(0, 1), ref)
    for part in iter_attention(model, ids, dtype=np.float64, batch_size=2):
        li = int(part.layer) - 1
        ref = dict(model.attention(torch.as_tensor(ids[:2]), layers=[li]))[li]
        assert torch.equal(torch.as_tensor(part.values[:, :2]).transpose(0, 1), ref)


@pytest.mark.parametrize("attention", ["standard", "ega"])
def test_extracted_attention_reproduces_forward(ens, attention):
    """Each layer's attention output recomputed from the extracted probabilities and the
    values V equals the output of the model's ordinary forward pass."""
    ids, _ = ens
    model = tiny_gpt(attention, dtype=torch.float64)
    A = collect_attention(model, ids, dtype=np.float64, progress=False)
    seen = {}

    def hook(module, inputs, output, li):
        seen[li] = (inputs[0], output[0])

    handles = [
        b.attn.register_forward_hook(lambda m, i, o, li=li: hook(m, i, o, li))
        for li, b in enumerate(model.blocks)
    ]
    with torch.no_grad():
        model(torch.as_tensor(ids))
        for h in handles:
            h.remove()
        for li, block in enumerate(model.blocks):
            x, out = seen[li]
            _, _, v = block.attn.qkv(x)  # (B, H, T, hd)
            P = torch.as_tensor(A.sel(layer=li + 1).values).transpose(0, 1)  # (B, H, T, T)
            y = (P @ v).transpose(1, 2).reshape(x.shape)
            torch.testing.assert_close(block.attn.c_proj(y), out, rtol=0, atol=1e-10)


def test_strings_are_encoded(ens):
    ids, _ = ens
    corpus = load_corpus()
    texts = [corpus.decode(r) for r in ids]
    model = tiny_gpt()
    a = collect_attention(model, texts, progress=False, layers=[1])
    b = collect_attention(model, ids, progress=False, layers=[1])
    np.testing.assert_array_equal(a.values, b.values)
    assert a.attrs["ids_sha256"] == b.attrs["ids_sha256"]


def test_mode_restored_and_name_argument(ens):
    ids, _ = ens
    model = tiny_gpt().train()
    A = collect_attention(model, ids, progress=False, layers=[1], name="custom")
    assert model.training and A.attrs["model"] == "custom"


@pytest.mark.parametrize(
    "bad, kw, match",
    [
        (np.zeros(24, dtype=np.int64), {}, "2-D"),
        (np.zeros((1, 24), dtype=np.int64), {}, "at least 2 snapshots"),
        (np.zeros((3, 33), dtype=np.int64), {}, "exceeds"),
        (np.full((3, 8), 65), {}, "token ids"),
        (np.full((3, 8), -1), {}, "token ids"),
        (np.zeros((3, 8), dtype=np.float32), {}, "integer"),
        (["abc", "abcd"], {}, "equal"),
        (["abc"], {}, "at least 2"),
        ("abc", {}, "one string"),
        (np.zeros((3, 8), dtype=np.int64), {"layers": [0]}, "layers"),
        (np.zeros((3, 8), dtype=np.int64), {"layers": [4]}, "layers"),
        (np.zeros((3, 8), dtype=np.int64), {"layers": [1, 1]}, "unique"),
        (np.zeros((3, 8), dtype=np.int64), {"batch_size": 0}, "batch_size"),
        (np.zeros((3, 8), dtype=np.int64), {"dtype": np.int32}, "dtype"),
        (np.zeros((3, 8), dtype=np.int64), {"offsets": [1, 2]}, "offsets"),
    ],
)
def test_bad_input_raises(bad, kw, match):
    with pytest.raises(ValueError, match=match):
        collect_attention(tiny_gpt(), bad, progress=False, **kw)


def test_bad_model_raises():
    with pytest.raises(ValueError, match="model"):
        collect_attention(torch.nn.Linear(2, 2), np.zeros((3, 8), dtype=np.int64))


def test_store_streams_and_reads_back(ens, tmp_path):
    import h5netcdf

    from msapod.backends import is_dask

    ids, offsets = ens
    model = tiny_gpt("ega")
    kw = dict(offsets=offsets, data_sha256=SHA256, batch_size=2, progress=False)
    ref = collect_attention(model, ids, **kw)
    path = tmp_path / "att.nc"
    Z = collect_attention(model, ids, store=path, **kw)
    assert is_dask(Z) and Z.dims == ref.dims and Z.dtype == ref.dtype and Z.name == "attention"
    assert Z.chunks[Z.dims.index("snapshot")] == (2, 2, 1)  # one chunk per batch
    assert Z.chunks[Z.dims.index("head")] == (1, 1)  # one head per chunk
    np.testing.assert_array_equal(Z.values, ref.values)  # bit-identical to the in-memory path
    for c in ref.coords:
        np.testing.assert_array_equal(Z[c].values, ref[c].values)
    assert set(Z.attrs) == set(ref.attrs)
    for key, value in ref.attrs.items():
        np.testing.assert_array_equal(Z.attrs[key], value)
    with h5netcdf.File(path, "r") as f:  # one sha256 per layer
        assert len(f.attrs["layer_sha256"]) == ref.sizes["layer"]
    # the same request reuses the verified file; the analysis runs on it chunk by chunk
    again = collect_attention(model, ids, store=path, **kw)
    np.testing.assert_array_equal(again.values, ref.values)
    a = msapod.analyze(ref.sel(layer=2, head=1), max_peaks=1, n_modes=2)
    b = msapod.analyze(again.sel(layer=2, head=1), max_peaks=1, n_modes=2)
    np.testing.assert_allclose(b["spectrum"], a["spectrum"], rtol=0, atol=1e-12)
    # head means, with a chunk unlike the batch
    avg = collect_attention(
        model,
        ids,
        average_heads=True,
        batch_size=2,
        snapshot_chunk=3,
        progress=False,
        store=tmp_path / "avg.nc",
    )
    assert avg.dims == ("layer", "snapshot", "query", "key") and avg.chunks[1] == (3, 2)
    np.testing.assert_array_equal(
        avg.values, collect_attention(model, ids, average_heads=True, progress=False).values
    )
    for opened in (Z, again, avg):
        opened.close()


def test_interrupted_store_resumes_only_for_a_verifiable_model(ens, tmp_path, monkeypatch):
    import msapod.models.extract as extract

    ids, _ = ens
    model = tiny_gpt()
    real, calls = extract.record_batch, []

    def dying_second(*args, **kw):  # one forward pass per batch: dies in the second
        calls.append(len(args[1]))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(extract, "record_batch", dying_second)
    path = tmp_path / "att.nc"
    kw = dict(layers=[1, 2], batch_size=2, progress=False, store=path)
    with pytest.raises(KeyboardInterrupt):
        collect_attention(model, ids, **kw)
    assert not path.exists() and path.with_name("att.nc.partial").exists()
    Z = collect_attention(model, ids, **kw)  # batches 2 and 3 of 3 only
    assert calls == [2, 2, 2, 1]
    np.testing.assert_array_equal(
        Z.values, collect_attention(model, ids, layers=[1, 2], batch_size=2, progress=False)
    )
    Z.close()
    anon = tiny_gpt()
    del anon.weights_sha256
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        collect_attention(anon, ids, **{**kw, "store": tmp_path / "anon.nc"})
    collect_attention(anon, ids, **{**kw, "store": tmp_path / "anon.nc"}).close()
    assert calls == [2, 2, 2, 2, 1]  # started again: nothing tells its partial file apart


def test_store_mismatch_is_never_trusted(ens, tmp_path):
    import h5netcdf

    ids, _ = ens
    model = tiny_gpt()
    path = tmp_path / "att.nc"
    collect_attention(model, ids, layers=[1], progress=False, store=path).close()
    with pytest.raises(ValueError, match=r"store: exists .*ids_sha256.*overwrite=True"):
        collect_attention(model, ids[:4], layers=[1], progress=False, store=path)
    with pytest.raises(ValueError, match="shape"):
        collect_attention(model, ids, layers=[1, 2], progress=False, store=path)
    other = tiny_gpt(seed=1)
    other.weights_sha256 = "cd" * 32
    with pytest.raises(ValueError, match="weights_sha256"):
        collect_attention(other, ids, layers=[1], progress=False, store=path)
    # explicit rebuild
    Z = collect_attention(other, ids, layers=[1], progress=False, store=path, overwrite=True)
    assert Z.attrs["weights_sha256"] == "cd" * 32
    np.testing.assert_array_equal(
        Z.values, collect_attention(other, ids, layers=[1], progress=False).values
    )
    Z.close()
    # values changed on disk: their checksum no longer holds
    with h5netcdf.File(path, "a") as f:
        f.variables["attention"][0, 0, 0, 3, 1] = 0.5
    with pytest.raises(ValueError, match="values sha256"):
        collect_attention(other, ids, layers=[1], progress=False, store=path)
    # a model without weights_sha256 cannot be verified against a store
    anon = tiny_gpt()
    del anon.weights_sha256
    collect_attention(anon, ids, layers=[1], progress=False, store=tmp_path / "anon.nc").close()
    with pytest.raises(ValueError, match="no weights_sha256"):
        collect_attention(anon, ids, layers=[1], progress=False, store=tmp_path / "anon.nc")
    junk = tmp_path / "junk.nc"
    junk.write_text("not a field file")
    with pytest.raises(ValueError, match="not an msapod field file"):
        collect_attention(model, ids, layers=[1], progress=False, store=junk)
    with pytest.raises(ValueError, match="snapshot_chunk"):
        collect_attention(model, ids, progress=False, store=tmp_path / "x.nc", snapshot_chunk=0)
    with pytest.raises(ValueError, match="dtype"):
        collect_attention(model, ids, progress=False, store=tmp_path / "x.nc", dtype=np.float64)


def test_huggingface_gpt2():
    transformers = pytest.importorskip(
        "transformers", reason="transformers is not installed (the hf extra: pip install -e .[hf])"
    )
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=16,
        vocab_size=65,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
    )
    model = transformers.GPT2LMHeadModel(config)  # random weights, no download; train mode
    ids = np.random.default_rng(0).integers(0, 65, size=(3, 20))
    A = collect_attention(model, ids, progress=False, batch_size=2, name="gpt2-tiny")
    assert A.dims == ("layer", "head", "snapshot", "query", "key")
    assert A.shape == (2, 2, 3, 20, 20)
    np.testing.assert_allclose(A.values.sum(-1), 1.0, atol=1e-5)  # eval mode: no dropout
    assert np.all(np.triu(A.values, 1) == 0)
    assert A.attrs["framework"] == "transformers" and A.attrs["model"] == "gpt2-tiny"
    assert model.training  # mode restored
    avg = collect_attention(
        model, torch.as_tensor(ids), average_heads=True, layers=[2], progress=False
    )
    np.testing.assert_allclose(
        avg.sel(layer=2).values, A.sel(layer=2).mean("head").values, atol=1e-6
    )
    with pytest.raises(ValueError, match="tokenizer"):
        collect_attention(model, ["abc", "def"], progress=False)

    def tokenizer(text):  # stands in for a Hugging Face tokenizer (no download)
        return {"input_ids": [ord(c) % 65 for c in text]}

    texts = ["To be, or not", "that is the q"]
    by_text = collect_attention(model, texts, tokenizer=tokenizer, layers=[1], progress=False)
    by_ids = collect_attention(
        model, [tokenizer(t)["input_ids"] for t in texts], layers=[1], progress=False
    )
    np.testing.assert_array_equal(by_text.values, by_ids.values)
    with pytest.raises(ValueError, match="equal"):
        collect_attention(model, ["ab", "abc"], tokenizer=tokenizer, progress=False)
    with pytest.raises(ValueError, match="exceeds"):
        collect_attention(model, np.zeros((2, 65), dtype=np.int64), progress=False)
    # a fused kernel (SDPA) is recorded too: the same probabilities to float32 round-off
    fused = transformers.GPT2LMHeadModel(config.__class__(**{**config.to_dict()}))
    fused.set_attn_implementation("sdpa")
    fused.load_state_dict(model.state_dict())
    assert fused.config._attn_implementation == "sdpa"
    got = collect_attention(fused, ids, progress=False, batch_size=2)
    np.testing.assert_allclose(got.values, A.values, rtol=0, atol=1e-6)
    assert fused.config._attn_implementation == "sdpa"  # restored after recording
