"""Head pruning (test of C6): masks per strategy, ablation, Michel importance, verdict."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import xarray as xr

from msapod.models.gpt import GPT, GPTConfig
from msapod.models.train import evaluate, get_batch
from msapod.studies.measure import prune
from msapod_book import pages

torch.set_num_threads(1)


def tiny(seed: int = 0, dtype=torch.float32, **kw) -> GPT:
    torch.manual_seed(seed)
    cfg = GPTConfig(n_layer=2, n_head=4, n_embd=16, block_size=16, **kw)
    model = GPT(cfg).to(dtype).eval()
    with torch.no_grad():  # sharp attention, so that heads matter
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.5)
    return model


TOKENS = np.random.default_rng(0).integers(0, 65, 400).astype(np.uint8)


# ------------------------------------------------------------------------- masks


@pytest.mark.parametrize("strategy", prune.STRATEGIES)
@pytest.mark.parametrize("budget", [0, 1, 5, 12, 24])
def test_mask_shape_and_count(strategy, budget):
    scores = np.arange(24.0).reshape(6, 4)
    m = prune.prune_masks(scores, budget, strategy, rng=1)
    assert m.shape == (6, 4) and m.dtype == np.int8
    assert set(np.unique(m)) <= {0, 1}
    assert (m == 0).sum() == budget


def test_uniform_counts_per_layer():
    for draw in range(5):
        m = prune.prune_masks(np.zeros((6, 8)), 12, "uniform", rng=draw)
        np.testing.assert_array_equal((m == 0).sum(1), [2] * 6)
        counts = (prune.prune_masks(np.zeros((6, 8)), 8, "uniform", rng=draw) == 0).sum(1)
        assert sorted(counts) == [1, 1, 1, 1, 2, 2]  # 8 = 6 + 2: differ by at most one
    a = prune.prune_masks(np.zeros((6, 8)), 12, "uniform", rng=0)
    b = prune.prune_masks(np.zeros((6, 8)), 12, "uniform", rng=1)
    assert not np.array_equal(a, b)  # heads within a layer are drawn
    np.testing.assert_array_equal(a, prune.prune_masks(np.zeros((6, 8)), 12, "uniform", rng=0))


def test_low_high_pick_planted_heads():
    scores = np.full((3, 4), 50.0)
    scores[2, 1], scores[0, 3] = 3.0, 4.0  # the two lowest
    scores[1, 0], scores[1, 2] = 99.0, 98.0  # the two highest
    low = prune.prune_masks(scores, 2, "low-H*")
    assert set(zip(*np.nonzero(low == 0), strict=True)) == {(2, 1), (0, 3)}
    high = prune.prune_masks(scores, 2, "high-H*")
    assert set(zip(*np.nonzero(high == 0), strict=True)) == {(1, 0), (1, 2)}
    # ties go to the lower (layer, head) index, in both directions
    tie = prune.prune_masks(np.ones((2, 2)), 1, "low-H*")
    np.testing.assert_array_equal(tie, [[0, 1], [1, 1]])
    tie = prune.prune_masks(np.ones((2, 2)), 1, "high-H*")
    np.testing.assert_array_equal(tie, [[0, 1], [1, 1]])
    imp = prune.prune_masks(-scores, 2, "importance")  # least important removed
    np.testing.assert_array_equal(imp, high)
    da = xr.DataArray(scores.T, dims=("head", "layer"))  # dims by name, not order
    np.testing.assert_array_equal(prune.prune_masks(da, 2, "low-H*"), low)


def test_rank_score_breaks_ties_by_captured_energy():
    H = np.array([[149, 149], [80, 149]])
    captured = np.array([[0.30, 0.60], [0.10, 0.45]])
    score = H + 0.5 * (1 - captured)
    m = prune.prune_masks(score, 2, "low-H*")
    # lowest H* first (80), then among the saturated heads the most concentrated one
    np.testing.assert_array_equal(m, [[1, 0], [0, 1]])


def test_allocation_proportional_to_layer_rank():
    layer_h = np.repeat([[30.0], [10.0]], 4, axis=1)  # keep 4 heads in ratio 3:1
    for draw in range(3):
        m = prune.prune_masks(layer_h, 4, "H*-allocation", rng=draw)
        np.testing.assert_array_equal((m == 1).sum(1), [3, 1])
    # capped at n_head: the excess moves to the other layers
    m = prune.prune_masks(np.repeat([[100.0], [1.0], [1.0]], 4, axis=1), 4, "H*-allocation", 0)
    assert (m == 1).sum(1)[0] == 4 and (m == 0).sum() == 4


def test_mask_errors():
    s = np.zeros((2, 4))
    with pytest.raises(ValueError, match="strategy"):
        prune.prune_masks(s, 1, "lowest")
    with pytest.raises(ValueError, match="budget"):
        prune.prune_masks(s, 9, "random", rng=0)
    with pytest.raises(ValueError, match="budget"):
        prune.prune_masks(s, -1, "low-H*")
    with pytest.raises(ValueError, match="scores"):
        prune.prune_masks(np.zeros(8), 1, "low-H*")
    with pytest.raises(ValueError, match="scores"):
        prune.prune_masks(np.full((2, 4), np.nan), 1, "low-H*")
    with pytest.raises(ValueError, match="rng"):
        prune.prune_masks(s, 1, "random")


# ---------------------------------------------------------------------- ablation


def test_ablating_a_whole_layer_equals_zero_attention_output():
    model = tiny()
    mask = np.ones((2, 4))
    mask[1] = 0
    ref = copy.deepcopy(model)
    with torch.no_grad():  # the attention output is then c_proj's bias alone
        ref.blocks[1].attn.c_proj.weight.zero_()
    loss = prune.ablation_loss(model, mask, TOKENS, batches=2, batch_size=3)
    assert loss == pytest.approx(evaluate(ref, TOKENS, batches=2, batch_size=3), abs=1e-6)
    assert loss != pytest.approx(evaluate(model, TOKENS, batches=2, batch_size=3), abs=1e-4)


def test_loss_changes_only_where_mask_is_zero():
    model = tiny()
    base = evaluate(model, TOKENS, batches=2, batch_size=3)
    assert prune.ablation_loss(model, np.ones((2, 4)), TOKENS, batches=2, batch_size=3) == base
    one = np.ones((2, 4))
    one[0, 2] = 0
    assert prune.ablation_loss(model, one, TOKENS, batches=2, batch_size=3) != base
    # the previous mask is restored afterwards
    assert evaluate(model, TOKENS, batches=2, batch_size=3) == base
    with pytest.raises(ValueError, match="mask"):
        prune.ablation_loss(model, np.ones((4, 2)), TOKENS)
    with pytest.raises(ValueError, match="mask"):
        prune.ablation_loss(model, np.full((2, 4), 0.5), TOKENS)


def test_importance_equals_finite_difference():
    model = tiny(dtype=torch.float64)
    imp = prune.head_importance(model, TOKENS, batches=1, batch_size=2, seed=3, normalise=False)
    assert imp.dims == ("layer", "head") and imp.shape == (2, 4)
    x, y = get_batch(TOKENS, 16, 2, np.random.default_rng(3))
    h = 2.0**-14  # exact in float32 (set_head_mask stores the mask via float32)
    for layer, head in [(0, 0), (1, 3)]:
        losses = []
        for sign in (1, -1):
            m = torch.ones(2, 4, dtype=torch.float64)
            m[layer, head] += sign * h
            model.set_head_mask(m)
            with torch.no_grad():
                losses.append(model(x, y)[1].item())
        model.set_head_mask(None)
        fd = abs(losses[0] - losses[1]) / (2 * h)
        assert float(imp[layer, head]) == pytest.approx(fd, rel=1e-6)
    norm = prune.head_importance(model, TOKENS, batches=1, batch_size=2, seed=3)
    np.testing.assert_allclose(np.sqrt((norm**2).sum("head")), 1.0)
    np.testing.assert_allclose(norm, imp / np.sqrt((imp**2).sum("head")))
    with pytest.raises(ValueError, match="tokens"):
        prune.head_importance(model, TOKENS[:10])


# ------------------------------------------------------------------ head ranks


def test_head_ranks_small_ensemble():
    model = tiny()
    ids = np.random.default_rng(1).integers(0, 65, (7, 12))
    ds = prune.head_ranks(model, ids, eps=(0.1, 0.2), tie_modes=2)
    assert ds["H_star"].dims == ("layer", "head", "eps")
    assert ds["H_star"].shape == (2, 4, 2) and ds["H_star_layer"].shape == (2, 2)
    assert (ds["H_star"] <= 6).all() and (ds["H_star"] >= 1).all()  # ceiling N - 1
    assert (ds["H_star"].sel(eps=0.1) >= ds["H_star"].sel(eps=0.2)).all()
    expect = ds["H_star"].sel(eps=0.1) + 0.5 * (1 - ds["captured"])
    np.testing.assert_allclose(ds["rank_score"], expect)
    # the spectrum of a head is the POD spectrum of its own fluctuation field
    import msapod

    A = msapod.collect_attention(model, ids, layers=[2]).sel(layer=2, head=3)
    lam = msapod.pod(msapod.reynolds(A)["fluctuation"])["spectrum"]
    np.testing.assert_allclose(ds["spectrum"].sel(layer=2, head=3), lam, rtol=1e-5, atol=1e-12)
    with pytest.raises(ValueError, match="primary_eps"):
        prune.head_ranks(model, ids, eps=(0.2,))


def test_model_pruning_layout():
    model = tiny()
    from msapod.models.data import load_corpus

    corpus = load_corpus()
    ds = prune.model_pruning(
        model,
        corpus=corpus,
        budgets=(2, 4),
        n_random=2,
        n=6,
        length=16,
        eval_batches=1,
        eval_batch_size=2,
        importance_batches=1,
        importance_batch_size=2,
    )
    assert ds["loss"].dims == ("strategy", "budget", "draw")
    assert list(ds["strategy"].values) == list(prune.STRATEGIES)
    det = [s for s in prune.STRATEGIES if s not in prune.RANDOMISED]
    assert ds["loss"].sel(strategy=det, draw=1).isnull().all()
    assert (ds["mask"].sel(strategy=det, draw=1) == -1).all()
    assert ds["loss"].sel(strategy=list(prune.RANDOMISED)).notnull().all()
    removed = (ds["mask"] == 0).sum(("layer", "head"))
    valid = ds["loss"].notnull()
    expect = (ds["budget"] * valid).transpose(*valid.dims)
    np.testing.assert_array_equal(removed.where(valid, 0).transpose(*valid.dims), expect)
    np.testing.assert_allclose(ds["loss_increase"], ds["loss"] - ds["base_loss"])
    v = pages.budget_contrasts(ds)  # one model: the SE comes from the random draws alone
    assert 1 <= v["per_budget"][0]["low_H_mean_layer"] <= 2
    assert "layer" in v["measured"]
    with pytest.raises(ValueError, match="budgets"):
        prune.model_pruning(model, corpus=corpus, budgets=(9,))


def test_pruning_study_errors():
    with pytest.raises(ValueError, match="models"):
        prune.pruning_study(["gpt-5"])
    with pytest.raises(ValueError, match="budgets"):
        prune.pruning_study(budgets=(8, 49))
    with pytest.raises(ValueError, match="n_random"):
        prune.pruning_study(n_random=1)


def test_fewer_draws_are_the_first_draws():
    """Each random draw is seeded on its own: a study with fewer draws (the default
    check's) computes exactly the first draws of the shipped one."""
    L, H = 6, 8
    rng = np.random.default_rng(3)
    scores = {s: xr.DataArray(rng.random((L, H)), dims=("layer", "head")) for s in prune.STRATEGIES}
    jobs4, masks4 = prune.mask_plan(scores, [8, 16], 4, seed=0)
    jobs2, masks2 = prune.mask_plan(scores, [8, 16], 2, seed=0)
    assert set(jobs2) <= set(jobs4)
    np.testing.assert_array_equal(masks2, masks4[:, :, :2])
    deep4 = prune.depth_masks(L, H, prune.DepthConfig(n_draws=4))
    deep2 = prune.depth_masks(L, H, prune.DepthConfig(n_draws=2))
    np.testing.assert_array_equal(deep2, deep4[:, :, :2])
