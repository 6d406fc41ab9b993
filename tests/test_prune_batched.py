"""Batched head ablation and the direct per-head spectra of ``msapod.studies.measure.prune``.

``ablation_losses`` scores many masks per forward batch (shared prefixes, stacked
masks); the reference is the plain loop of ``ablation_loss``, one ``evaluate`` per mask.
``_spectrum`` computes the POD spectrum from the N x N Gram matrix directly; the
reference is ``msapod.pod`` of the Reynolds fluctuation. Both must agree to float
round-off: losses to RTOL relative (they agree bit for bit on this machine), spectra
to SPEC_TOL of the leading eigenvalue.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import xarray as xr

from msapod.models.gpt import GPT, GPTConfig
from msapod.studies.measure import prune

torch.set_num_threads(1)

#: Agreement required of the batched losses with the per-mask loop (relative).
RTOL = 1e-5
#: Agreement required of the spectra, as a fraction of the leading eigenvalue.
SPEC_TOL = 1e-10

TOKENS = np.random.default_rng(0).integers(0, 65, 400).astype(np.uint8)


def tiny(seed: int = 0, dtype=torch.float32, **kw) -> GPT:
    torch.manual_seed(seed)
    cfg = GPTConfig(n_layer=3, n_head=4, n_embd=16, block_size=16, **kw)
    model = GPT(cfg).to(dtype).eval()
    with torch.no_grad():  # sharp attention, so that heads matter
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.5)
    return model


def some_masks(L: int, H: int, n: int = 14, seed: int = 0) -> np.ndarray:
    """Random masks plus the edge cases: all kept, a duplicate, a shared prefix, a
    whole layer removed, everything removed."""
    rng = np.random.default_rng(seed)
    masks = (rng.random((n, L, H)) > 0.35).astype(np.int8)
    masks[0] = 1
    masks[1] = masks[2]
    masks[3, : L - 1] = 1  # shares all but the last layer with masks[0]
    masks[4, 1] = 0
    masks[5] = 0
    return masks


@pytest.mark.parametrize(
    "kw",
    [{}, {"attention": "ega"}, {"attention": "ega", "standardize": "none"}],
    ids=["standard", "ega", "ega-none"],
)
@pytest.mark.parametrize("max_batch", [1, 5, 64])
def test_batched_losses_equal_per_mask_loop(kw, max_batch):
    model = tiny(**kw)
    masks = some_masks(3, 4)
    ev = dict(batches=3, batch_size=5)
    ref = np.array([prune.ablation_loss(model, m, TOKENS, **ev) for m in masks])
    new = prune.ablation_losses(model, masks, TOKENS, max_batch=max_batch, **ev)
    assert new.shape == (len(masks),) and new.dtype == np.float64
    np.testing.assert_allclose(new, ref, rtol=RTOL, atol=0)
    assert new[1] == new[2]  # identical masks share everything
    assert len(np.unique(ref)) > len(masks) - 3  # the masks do change the loss


def test_batched_losses_float64_and_state_restored():
    model = tiny(seed=1, dtype=torch.float64)
    masks = some_masks(3, 4, n=7, seed=1)
    model.train()
    keep = torch.ones(3, 4)
    keep[0, 1] = 0
    model.set_head_mask(keep)
    ev = dict(batches=2, batch_size=4)
    new = prune.ablation_losses(model, masks, TOKENS, **ev)
    assert model.training  # mode restored; the installed mask is ignored and kept
    installed = torch.stack([b.attn.head_mask for b in model.blocks])
    np.testing.assert_array_equal(installed.numpy(), keep.numpy())
    ref = np.array([prune.ablation_loss(model, m, TOKENS, **ev) for m in masks])
    np.testing.assert_allclose(new, ref, rtol=1e-12, atol=0)


def test_batched_losses_errors():
    model = tiny()
    with pytest.raises(ValueError, match="masks"):
        prune.ablation_losses(model, np.ones((3, 4)), TOKENS)
    with pytest.raises(ValueError, match="masks"):
        prune.ablation_losses(model, np.ones((2, 4, 3)), TOKENS)
    with pytest.raises(ValueError, match="masks"):
        prune.ablation_losses(model, np.full((1, 3, 4), 0.5), TOKENS)
    with pytest.raises(ValueError, match="masks"):
        prune.ablation_losses(model, np.ones((0, 3, 4)), TOKENS)
    with pytest.raises(ValueError, match="max_batch"):
        prune.ablation_losses(model, np.ones((1, 3, 4)), TOKENS, max_batch=0)


def test_head_outputs_are_what_forward_masks():
    model = tiny(attention="ega")
    attn = model.blocks[1].attn
    x = torch.randn(2, 16, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        mask = torch.tensor([1.0, 0.0, 1.0, 1.0])
        attn.head_mask.copy_(mask)
        out, _ = attn(x)
        y = attn.head_outputs(x) * mask[None, :, None, None]
        again = attn.c_proj(y.transpose(1, 2).contiguous().view(2, 16, 16))
        attn.head_mask.fill_(1.0)
    assert torch.equal(out, again)


def test_model_pruning_losses_are_ablation_losses():
    from msapod.models.data import load_corpus

    model = tiny()
    corpus = load_corpus()
    ev = dict(eval_batches=2, eval_batch_size=3)
    ds = prune.model_pruning(
        model,
        corpus=corpus,
        budgets=(2, 5),
        n_random=2,
        n=6,
        length=16,
        importance_batches=1,
        importance_batch_size=2,
        **ev,
    )
    ab = dict(batches=2, batch_size=3)
    base = prune.ablation_loss(model, np.ones((3, 4)), corpus.val, **ab)
    assert float(ds["base_loss"]) == pytest.approx(base, rel=RTOL)
    for st in ("low-H*", "random"):
        for b in (2, 5):
            cell = ds.sel(strategy=st, budget=b, draw=0)
            ref = prune.ablation_loss(model, cell["mask"].values, corpus.val, **ab)
            assert float(cell["loss"]) == pytest.approx(ref, rel=RTOL)


def test_spectrum_equals_pod_of_fluctuation():
    import msapod

    rng = np.random.default_rng(2)
    n, L = 9, 12
    logits = rng.standard_normal((n, L, L)) * 2
    logits[:, *np.triu_indices(L, 1)] = -np.inf
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    A = xr.DataArray(A.astype(np.float32), dims=("snapshot", "query", "key"))
    ref = msapod.pod(msapod.reynolds(A)["fluctuation"], n_modes=1)["spectrum"].values
    for arg in (A, A.values):
        lam = prune._spectrum(arg)
        assert lam.shape == (n,) and (np.diff(lam) <= 0).all() and (lam >= 0).all()
        np.testing.assert_allclose(lam, ref, rtol=0, atol=SPEC_TOL * ref[0])
    with pytest.raises(ValueError, match="finite"):
        prune._spectrum(np.where(np.arange(L) == 3, np.nan, A.values))
