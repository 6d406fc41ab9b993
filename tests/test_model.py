"""GPT with standard and energy-gated attention: causality, gate algebra, fast path."""

from __future__ import annotations

import copy

import pytest
import torch

from msapod.models.gpt import GPT, GPTConfig

torch.set_num_threads(1)

VARIANTS = [
    dict(attention="standard"),
    dict(attention="ega", standardize="causal"),
    dict(attention="ega", standardize="none"),
]


def sharp_model(seed: int = 0, dtype=torch.float64, **kw) -> GPT:
    """A tiny random GPT with large weights, so attention is far from uniform."""
    torch.manual_seed(seed)
    cfg = GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=32, **kw)
    model = GPT(cfg).to(dtype).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.5)
            elif name.endswith("gate_alpha"):
                p.uniform_(1.0, 3.0)
            elif name.endswith("gate_threshold"):
                p.normal_(0.0, 0.5)
    return model


def probs(model: GPT, idx: torch.Tensor) -> list[torch.Tensor]:
    return [p for _, p in model.attention(idx)]


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(kw.values()))
def test_attention_is_causal(kw):
    model = sharp_model(**kw)
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, 65, (3, 24), generator=g)
    i = 11
    other = idx.clone()
    other[:, i + 1 :] = torch.randint(0, 65, (3, 24 - i - 1), generator=g)
    assert not torch.equal(other[:, i + 1 :], idx[:, i + 1 :])
    for a, b in zip(probs(model, idx), probs(model, other), strict=True):
        assert a.dtype == torch.float64
        torch.testing.assert_close(a[..., : i + 1, :], b[..., : i + 1, :], rtol=0, atol=1e-12)
        assert torch.all(a.triu(1) == 0)
        # the test can fail: later rows do see the perturbation
        assert (a[..., i + 1 :, :] - b[..., i + 1 :, :]).abs().max() > 1e-3


def test_global_standardisation_would_break_causality():
    """Guard for the causality test above: a gate using future tokens is detected."""
    model = sharp_model(attention="ega", standardize="causal")
    attn = model.blocks[0].attn
    x = torch.randn(1, 20, 16, dtype=torch.float64)
    y = x.clone()
    y[:, 15:] += 1.0
    e_x = attn.energy(x).transpose(1, 2)
    e_y = attn.energy(y).transpose(1, 2)
    z_global = lambda e: (e - e.mean(-1, keepdim=True)) / e.std(-1, keepdim=True)  # noqa: E731
    assert (z_global(e_x)[..., :10] - z_global(e_y)[..., :10]).abs().max() > 1e-3
    torch.testing.assert_close(attn.log_gate(x)[..., :15], attn.log_gate(y)[..., :15])


@pytest.mark.parametrize("standardize", ["causal", "none"])
def test_gated_attention_is_renormalised_product(standardize):
    model = sharp_model(attention="ega", standardize=standardize)
    attn = model.blocks[1].attn
    x = torch.randn(2, 20, 16, dtype=torch.float64)
    with torch.no_grad():
        p_gated = attn.probabilities(x)
        plain = copy.deepcopy(attn)
        plain.ega = False  # the same logits without log g
        a = plain.probabilities(x)
        g = attn.log_gate(x).exp()  # (B, H, T)
    torch.testing.assert_close(p_gated.sum(-1), torch.ones(2, 2, 20, dtype=torch.float64))
    expected = a * g[..., None, :]
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(p_gated, expected, rtol=0, atol=1e-12)
    assert (p_gated - a).abs().max() > 1e-3  # the gate does something
    assert torch.all((g > 0) & (g < 1))


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(kw.values()))
def test_fast_path_equals_exact_probabilities(kw):
    model = sharp_model(**kw)
    idx = torch.randint(0, 65, (3, 32), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        fast, _ = model(idx)
        x = model.wte(idx) + model.wpe(torch.arange(32))
        for block in model.blocks:
            x, att = block(x, return_attention=True)
            assert att is not None
        exact = model.lm_head(model.ln_f(x))
    assert fast.dtype == torch.float64
    torch.testing.assert_close(fast, exact, rtol=0, atol=1e-10)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(attention="linear"), "attention"),
        (dict(standardize="global"), "standardize"),
        (dict(n_embd=30, n_head=4), "n_embd"),
        (dict(n_layer=0), "n_layer"),
        (dict(vocab_size=0), "vocab_size"),
    ],
)
def test_bad_config_raises(kw, match):
    with pytest.raises(ValueError, match=match):
        GPTConfig(**kw)


def test_config_round_trip_and_unknown_keys():
    cfg = GPTConfig(n_layer=3, attention="ega")
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown keys"):
        GPTConfig.from_dict({**cfg.to_dict(), "n_heads": 4})


def test_bad_idx_raises():
    model = sharp_model()
    with pytest.raises(ValueError, match="block_size"):
        model(torch.zeros(1, 33, dtype=torch.long))
    with pytest.raises(ValueError, match="idx"):
        model(torch.zeros(33, dtype=torch.long))


def test_head_mask():
    model = sharp_model(attention="ega")
    idx = torch.randint(0, 65, (2, 16), generator=torch.Generator().manual_seed(3))
    with pytest.raises(ValueError, match="mask"):
        model.set_head_mask(torch.ones(2, 3))
    with pytest.raises(ValueError, match="mask"):
        model.set_head_mask(torch.ones(4))
    with torch.no_grad():
        base, _ = model(idx)
        mask = torch.ones(2, 2)
        mask[1, 0] = 0
        model.set_head_mask(mask)
        ablated, _ = model(idx)
        model.set_head_mask(None)
        restored, _ = model(idx)
    assert (base - ablated).abs().max() > 1e-3
    assert torch.equal(base, restored)


def test_differentiable_head_mask():
    model = sharp_model()
    idx = torch.randint(0, 65, (2, 16), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        base, base_loss = model(idx, idx)
    with model.differentiable_head_mask() as xi:
        assert xi.shape == (2, 2) and xi.requires_grad
        _, loss = model(idx, idx)
        loss.backward()
    torch.testing.assert_close(loss.detach(), base_loss, rtol=0, atol=0)
    assert xi.grad is not None and xi.grad.abs().min() > 0
    # the buffers are restored: a plain forward is unchanged and needs no grad
    with torch.no_grad():
        again, _ = model(idx, idx)
    assert torch.equal(again, base)
    assert all(not b.attn.head_mask.requires_grad for b in model.blocks)
    with pytest.raises(ValueError, match="mask"), model.differentiable_head_mask(torch.ones(3)):
        pass


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: "-".join(kw.values()))
def test_qkv_gives_the_scores_of_probabilities(kw):
    model = sharp_model(**kw)
    attn = model.blocks[0].attn
    x = torch.randn(2, 12, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        q, k, v = attn.qkv(x)
        assert q.shape == k.shape == v.shape == (2, attn.n_head, 12, attn.head_dim)
        # the value of head 1, position 5 is its slice of the c_attn projection
        v_ref = attn.c_attn(x)[:, 5, 2 * 16 + attn.head_dim : 2 * 16 + 2 * attn.head_dim]
        torch.testing.assert_close(v[:, 1, 5], v_ref, rtol=0, atol=0)
        s = q @ k.transpose(-2, -1) / attn.head_dim**0.5
        if attn.ega:
            s = s + attn.log_gate(x)[..., None, :]
        s = s.masked_fill(~torch.ones(12, 12, dtype=torch.bool).tril(), float("-inf"))
        torch.testing.assert_close(attn.probabilities(x), torch.softmax(s, -1), rtol=0, atol=1e-12)
