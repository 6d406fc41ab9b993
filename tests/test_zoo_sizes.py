"""Model tests at both zoo sizes (d_model 128 and the paper-size 256), with the zoo's own
configurations: EGA causality, extraction rows and their agreement with the forward pass,
checkpoint round trip and a refused mismatch. Random weights (the paper-size models are
not trained on these machines, see `msapod zoo`), short sequences: cheap at any width."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from msapod.models import zoo
from msapod.models.extract import collect_attention
from msapod.models.gpt import GPT
from msapod.models.train import load_checkpoint, save_checkpoint

torch.set_num_threads(1)

#: one baseline and one EGA configuration of each zoo
CASES = [(z, zoo.models(z, arch)[0]) for z in zoo.ZOOS for arch in zoo.ARCHITECTURES]


@functools.cache
def _model(name: str, dtype=torch.float64) -> GPT:
    """A random model of ``name``'s configuration (built once per name and dtype)."""
    torch.manual_seed(0)
    model = GPT(zoo.ZOO_CONFIGS[name].model).to(dtype).eval()
    with torch.no_grad():  # sharper than the init, so a perturbation shows downstream
        for p in model.parameters():
            if p.dim() >= 2:
                p.mul_(4.0)
    model.name = name
    model.weights_sha256 = "cd" * 32
    return model


def test_cases_cover_both_sizes():
    widths = {zoo.ZOO_CONFIGS[n].model.n_embd for _, n in CASES}
    assert widths == {128, 256}
    assert {zoo.ZOO_CONFIGS[n].model.attention for _, n in CASES} == {"standard", "ega"}


@pytest.mark.parametrize("zoo_name,name", CASES)
def test_attention_is_causal_at_zoo_size(zoo_name, name):
    model = _model(name)
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, model.config.vocab_size, (2, 40), generator=g)
    i = 17
    other = idx.clone()
    other[:, i + 1 :] = (idx[:, i + 1 :] + 1) % model.config.vocab_size
    with torch.no_grad():
        a = [p for _, p in model.attention(idx)]
        b = [p for _, p in model.attention(other)]
    for pa, pb in zip(a, b, strict=True):
        torch.testing.assert_close(pa[..., : i + 1, :], pb[..., : i + 1, :], rtol=0, atol=1e-12)
        assert torch.all(pa.triu(1) == 0)
    # the test can fail: the last layer's later rows do see the perturbation
    assert (a[-1][..., i + 1 :, :] - b[-1][..., i + 1 :, :]).abs().max() > 1e-6


@pytest.mark.parametrize("zoo_name,name", CASES)
def test_extraction_at_zoo_size(zoo_name, name):
    model = _model(name)
    ids = np.random.default_rng(2).integers(0, model.config.vocab_size, (3, 32))
    A = collect_attention(model, ids, dtype=np.float64, progress=False)
    assert A.sizes["layer"] == model.config.n_layer and A.sizes["head"] == model.config.n_head
    np.testing.assert_allclose(A.sum("key").values, 1.0, rtol=0, atol=1e-12)
    with torch.no_grad():
        ref = [p for _, p in model.attention(torch.as_tensor(ids))]  # layers in order
    for k, p in enumerate(ref):
        got = torch.as_tensor(A.isel(layer=k).values).transpose(0, 1)  # (snapshot, head, q, k)
        torch.testing.assert_close(got, p, rtol=0, atol=1e-12)


@pytest.mark.parametrize("zoo_name,name", CASES)
def test_checkpoint_round_trip_at_zoo_size(zoo_name, name, tmp_path):
    cfg = zoo.ZOO_CONFIGS[name]
    model = _model(name, dtype=torch.float32)
    save_checkpoint(tmp_path, model, cfg)
    back = load_checkpoint(tmp_path, expect=cfg.model)
    storage = getattr(torch, cfg.storage)
    want = {k: v.to(storage).float() for k, v in model.state_dict().items()}
    for k, v in back.state_dict().items():
        assert torch.equal(v.float(), want[k]), k
    other = "d128" if zoo_name == "paper-size" else "paper-size"
    with pytest.raises(ValueError, match="config"):
        load_checkpoint(tmp_path, expect=zoo.ZOO_CONFIGS[zoo.models(other)[0]].model)
