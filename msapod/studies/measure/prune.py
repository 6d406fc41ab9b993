"""Head pruning: an experimental test of claim C6.

C6 says that a uniform 8 heads per layer over-specify the layers whose attention fields
have a low effective rank H* and under-specify those with a high one. If that is so,
removing heads where H* is low should cost less validation loss than removing the same
number of heads anywhere else. This module measures it from the per-head H* and T_spec
(:func:`head_ranks`), Michel, Levy & Neubig's (2019) head importance
(:func:`head_importance`), the masks of each strategy (:func:`prune_masks`) and the
validation loss with heads zeroed (:func:`ablation_losses`), and tests C6's depth statement
directly (:func:`model_depth_ablation`); :func:`pruning_study` and :func:`depth_study` run
it on the zoo models, cached (the verdicts on C6 are :mod:`msapod.studies.verdict`'s).

Strategies (``budget`` heads removed out of ``n_layer * n_head``):

``"low-H*"`` / ``"high-H*"``
    the heads with the lowest / highest per-head H* at the primary eps (0.10). H* is an
    integer and saturates at N - 1 = 149, so ties are broken by the fraction of the
    head's fluctuation energy captured by its first ``tie_modes`` (10) POD modes: a
    larger captured fraction counts as a lower rank. Both are folded into one score,
    ``rank_score = H* + 0.5 (1 - captured)``; remaining exact ties go to the lower
    (layer, head) index (stable sort).
``"H*-allocation"``
    the literal reading of C6: the heads kept per layer are proportional to the layer's
    H* (of the head-averaged field, as in the paper), rounded by largest remainders
    (ties to the lower layer) and capped at n_head; which heads go within a layer is
    drawn at random.
``"uniform"``
    ``budget // n_layer`` heads per layer, plus one more in ``budget % n_layer`` layers
    drawn at random (the counts differ by at most one, and are equal when n_layer
    divides the budget); heads within a layer at random.
``"random"``
    ``budget`` heads drawn at random from all heads.
``"importance"``
    the heads with the lowest Michel importance (one shot, not their iterative
    re-estimation).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import xarray as xr
from tqdm import tqdm

from ..._io import check_int
from ..._labels import check_eps
from ...lagstats import LagStats, gram_pod
from ...models.data import N_SNAPSHOTS, SNIPPET_LENGTH, ensemble_ids, load_corpus
from ...spectra import CRITERIA, EPS, PAPER_EPS, effective_rank, spectral_concentration
from ..registry import EARLY, LATE
from ..store.cache import cached_model_study, iter_attention, model_inputs, stack_zoo, zoo_models

__all__ = [
    "DEPTH_GROUPS",
    "DepthConfig",
    "PRUNE_FORMAT",
    "PruneConfig",
    "RANDOMISED",
    "STRATEGIES",
    "ablation_loss",
    "ablation_losses",
    "depth_masks",
    "depth_study",
    "head_importance",
    "head_ranks",
    "mask_plan",
    "model_depth_ablation",
    "model_pruning",
    "prune_masks",
    "pruning_study",
]

#: Version of this module's results; part of every cache key.
PRUNE_FORMAT = 1
#: Strategies understood by :func:`prune_masks`, in display order.
STRATEGIES = ("low-H*", "high-H*", "H*-allocation", "uniform", "random", "importance")
#: Strategies that draw at random (several draws in :func:`pruning_study`).
RANDOMISED = ("H*-allocation", "uniform", "random")


def _eps_tuple(eps, primary: float) -> tuple[float, ...]:
    """The tolerances of H*, checked, sorted and distinct; ``primary`` one of them."""
    eps = tuple(sorted({check_eps(e) for e in np.atleast_1d(np.asarray(eps, dtype=object))}))
    if not eps:
        raise ValueError("eps: expected at least one number in (0, 1)")
    if not any(np.isclose(primary, e) for e in eps):
        raise ValueError(f"primary_eps: expected one of eps {eps}, got {primary!r}")
    return eps


# ----------------------------------------------------------------------- per-head H*


def _spectrum(A) -> np.ndarray:
    """All N POD eigenvalues (descending) of the plain fluctuation ``u = A - Abar`` of ``A``
    (snapshot, query, key): ``msapod.pod``'s spectrum without its per-lag Grams and modes."""
    X = np.asarray(A.values if isinstance(A, xr.DataArray) else A)
    stats = LagStats.of_ensemble(X, np.arange(X.shape[1]), np.arange(X.shape[2]))
    K = stats.plain_gram()
    if not np.isfinite(np.trace(K)):
        raise ValueError("attention: expected finite values, found NaN/inf entries")
    return gram_pod(K).eigenvalues


def head_ranks(
    model,
    ids,
    *,
    eps: float | Sequence[float] = EPS,
    primary_eps: float = PAPER_EPS,
    criterion: str = "energy",
    tie_modes: int = 10,
    batch_size: int = 16,
    progress: bool = False,
    name: str | None = None,
) -> xr.Dataset:
    """Effective rank H* and spectral concentration T_spec of every attention head: of the
    full POD spectrum of each head's and each layer's head-averaged plain fluctuation
    (one layer extracted at a time), by :func:`msapod.effective_rank` and
    :func:`msapod.spectral_concentration` (default fit range).

    Parameters
    ----------
    model
        An :class:`msapod.models.gpt.GPT` (or a model :func:`msapod.models.extract.iter_attention`
        accepts).
    ids
        ``(N, L)`` token ids of the ensemble, e.g. ``msapod.models.data.ensemble_ids()[0]``.
    eps
        Tolerances of H*; ``primary_eps`` (one of them) defines ``rank_score``.
    criterion
        ``"energy"`` (the paper's pairing of eps = 0.10 with 90 % of the energy) or
        ``"l2"``.
    tie_modes
        Modes whose captured energy fraction breaks ties of H* (see ``rank_score``).
    batch_size, progress, name
        Passed to :func:`msapod.models.extract.iter_attention`.

    Returns
    -------
    xarray.Dataset
        ``H_star(layer, head, eps)`` with ``at_rank_limit``; ``T_spec``, ``beta``,
        ``r2`` and ``captured(layer, head)`` (energy fraction of the first
        ``tie_modes`` modes); ``rank_score(layer, head) = H*(primary_eps) + 0.5 (1 -
        captured)``, which orders heads by H* and then by captured energy (larger =
        lower rank); ``spectrum(layer, head, rank)``; and the same for the
        head-averaged field: ``H_star_layer(layer, eps)``, ``T_spec_layer(layer)``,
        ``spectrum_layer(layer, rank)``. Layers and heads are numbered from 1.
    """
    eps = _eps_tuple(eps, primary_eps)
    if criterion not in CRITERIA:
        raise ValueError(f"criterion: expected one of {CRITERIA}, got {criterion!r}")
    tie_modes = check_int(tie_modes, "tie_modes", 1)
    spec, lspec = _head_spectra(model, ids, batch_size=batch_size, progress=progress, name=name)
    n = spec.sizes["rank"]

    def ranks(s: xr.DataArray) -> xr.DataArray:
        hs = [effective_rank(s, e, criterion, n_snapshots=n) for e in eps]
        return xr.concat(hs, dim=xr.DataArray(list(eps), dims="eps", name="eps"))

    Hh, Hl = ranks(spec), ranks(lspec)
    total = spec.sum("rank")
    k = min(tie_modes, n)
    captured = (spec.isel(rank=slice(0, k)).sum("rank") / total.where(total > 0)).fillna(0.0)
    primary = Hh.sel(eps=primary_eps, method="nearest").drop_vars(["eps", "at_rank_limit"])
    sc, scl = spectral_concentration(spec), spectral_concentration(lspec)
    ds = xr.Dataset(
        {
            "H_star": Hh.reset_coords("at_rank_limit", drop=True).transpose("layer", "head", "eps"),
            "at_rank_limit": (Hh >= n - 1)
            .transpose("layer", "head", "eps")
            .reset_coords(drop=True),
            "T_spec": sc["T_spec"],
            "beta": sc["beta"],
            "r2": sc["r2"],
            "captured": captured,
            "rank_score": primary + 0.5 * (1.0 - captured),
            "spectrum": spec,
            "H_star_layer": Hl.reset_coords("at_rank_limit", drop=True).transpose("layer", "eps"),
            "T_spec_layer": scl["T_spec"],
            "spectrum_layer": lspec,
        }
    )
    ds["H_star"].attrs = {"long_name": f"per-head effective rank H*, {criterion} criterion"}
    ds["captured"].attrs = {"long_name": f"energy fraction of the first {k} POD modes"}
    ds["rank_score"].attrs = {
        "long_name": f"H*({primary_eps:g}) + 0.5 (1 - captured): H* with ties broken by "
        f"the energy captured by the first {k} modes (more captured = lower rank)"
    }
    ds["H_star_layer"].attrs = {"long_name": "effective rank H* of the head-averaged field"}
    ds.attrs = {
        "n_snapshots": n,
        "criterion": criterion,
        "primary_eps": primary_eps,
        "tie_modes": k,
        "field": "plain (unwindowed) fluctuation u = A - Abar, one POD per head",
        "T_spec_fit": f"k = {sc.attrs['k_min']}..{sc.attrs['k_max']}",
    }
    return ds


def _head_spectra(model, ids, **kw) -> tuple[xr.DataArray, xr.DataArray]:
    """``spectrum(layer, head, rank)`` and ``spectrum_layer(layer, rank)`` of
    :func:`head_ranks` (``kw``: passed to :func:`iter_attention`)."""
    layers, heads, layer_specs = [], [], []
    for field in iter_attention(model, ids, average_heads=False, dtype=np.float32, **kw):
        n = field.sizes["snapshot"]
        layers.append(int(field["layer"]))
        values = field.transpose("head", "snapshot", "query", "key").values
        heads.append(np.stack([_spectrum(v) for v in values]))
        layer_specs.append(_spectrum(field.mean("head")))
        del field
    H = heads[0].shape[0]
    coords = {"layer": layers, "head": np.arange(1, H + 1), "rank": np.arange(1, n + 1)}
    spec = xr.DataArray(np.stack(heads), dims=("layer", "head", "rank"), coords=coords)
    spec.attrs = {"n_snapshots": n, "long_name": "POD eigenvalues of the head's fluctuations"}
    lspec = xr.DataArray(
        np.stack(layer_specs),
        dims=("layer", "rank"),
        coords={"layer": layers, "rank": coords["rank"]},
        attrs={"n_snapshots": n, "long_name": "POD eigenvalues, head-averaged field"},
    )
    return spec, lspec


# ---------------------------------------------------------------- Michel importance


def head_importance(
    model,
    tokens,
    *,
    batches: int = 16,
    batch_size: int = 8,
    seed: int = 0,
    normalise: bool = True,
    progress: bool = False,
) -> xr.DataArray:
    """Gradient-based head importance of Michel, Levy & Neubig (2019).

    ``I_h = mean over batches of |dL/dxi_h|`` at ``xi = 1``, where ``xi_h`` multiplies
    head h's output (:meth:`msapod.models.gpt.GPT.differentiable_head_mask`) and ``L`` is
    the mean next-character cross-entropy of a batch (the absolute value is taken per
    batch, as in their code). With ``normalise`` each layer's scores are divided by
    their l2 norm over the heads (their ``exponent = 2`` layer normalisation), which
    makes scores comparable across layers for global pruning.

    Parameters
    ----------
    model
        An :class:`msapod.models.gpt.GPT`; run in eval mode, its mode is restored.
    tokens
        1-D token stream to draw windows of ``block_size + 1`` tokens from. Use the
        *training* split, so that the heads are not selected on the validation batches
        the loss is measured on.
    batches, batch_size, seed
        Windows drawn as in :func:`msapod.models.train.get_batch` with
        ``numpy.random.default_rng(seed)``.
    normalise
        Divide by the per-layer l2 norm.
    progress
        Show a progress bar.

    Returns
    -------
    xarray.DataArray
        ``(layer, head)``, numbered from 1; attrs say how it was computed.
    """
    import torch

    from ...models.record import inference
    from ...models.train import get_batch

    batches = check_int(batches, "batches", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    seed = check_int(seed, "seed", 0)
    tokens = np.asarray(tokens)
    block = model.config.block_size
    if tokens.ndim != 1 or len(tokens) < block + 2:
        raise ValueError(
            f"tokens: expected a 1-D token stream longer than block_size + 1 = {block + 1}, "
            f"got shape {tokens.shape}"
        )
    rng = np.random.default_rng(seed)
    p = next(model.parameters())
    L, H = model.config.n_layer, model.config.n_head
    total = torch.zeros(L, H, dtype=torch.float64)
    with inference(model), torch.enable_grad():
        for _ in tqdm(range(batches), desc="importance", disable=not progress, mininterval=2):
            x, y = get_batch(tokens, block, batch_size, rng)
            with model.differentiable_head_mask() as xi:
                _, loss = model(x.to(p.device), y.to(p.device))
                (grad,) = torch.autograd.grad(loss, xi)
            total += grad.detach().abs().double().cpu()
    out = xr.DataArray(
        (total / batches).numpy(),
        dims=("layer", "head"),
        coords={"layer": np.arange(1, L + 1), "head": np.arange(1, H + 1)},
        name="importance",
        attrs={
            "long_name": "head importance E|dL/dxi_h| (Michel et al. 2019)",
            "normalised": "none",
            "batches": batches,
            "batch_size": batch_size,
            "seed": seed,
            "split": "the tokens given (use the training split)",
        },
    )
    return _normalise(out) if normalise else out


def _normalise(imp: xr.DataArray) -> xr.DataArray:
    """Michel et al.'s layer normalisation: divide by the l2 norm over heads."""
    out = imp / (np.sqrt((imp**2).sum("head")) + 1e-20)
    out.attrs = {**imp.attrs, "normalised": "l2 per layer"}
    return out.rename(imp.name)


# ---------------------------------------------------------------------- masks, loss


def _scores_2d(scores) -> np.ndarray:
    if isinstance(scores, xr.DataArray) and {"layer", "head"} <= set(scores.dims):
        scores = scores.transpose("layer", "head").values
    arr = np.asarray(scores, dtype=np.float64)
    if arr.ndim != 2 or 0 in arr.shape:
        raise ValueError(f"scores: expected a (n_layer, n_head) array, got shape {arr.shape}")
    return arr


def _as_rng(rng, strategy: str) -> np.random.Generator:
    """``rng`` itself if a Generator, else one seeded with it (an integer >= 0)."""
    if rng is None:
        raise ValueError(f"rng: strategy {strategy!r} draws at random and needs an rng or seed")
    seed = rng if isinstance(rng, np.random.Generator) else check_int(rng, "rng", 0)
    return np.random.default_rng(seed)  # a Generator is returned as it is


def _allocate(weights: np.ndarray, keep: int, cap: int) -> np.ndarray:
    """Integers ``k_l <= cap`` summing to ``keep``, proportional to ``weights``
    (largest remainders, ties to the lower index; capped layers pass on the excess)."""
    L = len(weights)
    k = np.zeros(L, dtype=np.int64)
    free = np.ones(L, dtype=bool)
    left = keep
    while left > 0:
        w = np.where(free, np.clip(weights, 0, None), 0.0)
        w = w if w.sum() > 0 else free.astype(float)
        quota = left * w / w.sum()
        add = np.minimum(np.floor(quota).astype(np.int64), cap - k)
        rem = np.where(free & (k + add < cap), quota - np.floor(quota), -1.0)
        k += add
        left -= int(add.sum())
        for i in np.argsort(-rem, kind="stable"):
            if left == 0 or rem[i] < 0:
                break
            k[i] += 1
            left -= 1
        free = k < cap
    return k


def prune_masks(scores, budget: int, strategy: str, rng=None) -> np.ndarray:
    """Which heads a strategy removes for a budget: a (n_layer, n_head) 0/1 mask.

    Parameters
    ----------
    scores
        ``(n_layer, n_head)`` array or DataArray with dims ``layer``, ``head``: the
        per-head ``rank_score`` for ``"low-H*"``/``"high-H*"``, the importance for
        ``"importance"``, the layer's H* (constant along ``head``; the mean over heads is
        used) for ``"H*-allocation"``; only its shape matters for ``"uniform"`` and
        ``"random"``.
    budget
        Number of heads to remove, 0..n_layer * n_head.
    strategy
        One of :data:`STRATEGIES` (see the module docstring).
    rng
        ``numpy.random.Generator`` or integer seed; needed by :data:`RANDOMISED`
        strategies.

    Returns
    -------
    numpy.ndarray
        int8 mask, 1 = keep, 0 = removed; exactly ``budget`` zeros.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy: expected one of {STRATEGIES}, got {strategy!r}")
    s = _scores_2d(scores)
    L, H = s.shape
    budget = check_int(budget, "budget", 0)
    if budget > L * H:
        raise ValueError(f"budget: expected at most the number of heads {L * H}, got {budget}")
    if strategy not in ("uniform", "random") and not np.isfinite(s).all():
        raise ValueError(f"scores: expected finite values for strategy {strategy!r}")
    gen = _as_rng(rng, strategy) if strategy in RANDOMISED else None
    flat = np.ones(L * H, dtype=np.int8)
    if strategy in ("low-H*", "importance"):
        flat[np.argsort(s.ravel(), kind="stable")[:budget]] = 0
    elif strategy == "high-H*":
        flat[np.argsort(-s.ravel(), kind="stable")[:budget]] = 0
    elif strategy == "random":
        flat[gen.choice(L * H, size=budget, replace=False)] = 0
    else:
        if strategy == "uniform":
            per = np.full(L, budget // L, dtype=np.int64)
            per[gen.choice(L, size=budget % L, replace=False)] += 1
        else:  # H*-allocation: kept heads proportional to the layer's H*
            per = H - _allocate(s.mean(axis=1), L * H - budget, H)
        mask = flat.reshape(L, H)
        for layer in range(L):
            mask[layer, gen.choice(H, size=int(per[layer]), replace=False)] = 0
    return flat.reshape(L, H)


def ablation_loss(model, mask, tokens, *, batches: int = 20, batch_size: int = 16) -> float:
    """Validation loss with the heads where ``mask == 0`` zeroed.

    Installs ``mask`` with :meth:`msapod.models.gpt.GPT.set_head_mask`, runs
    :func:`msapod.models.train.evaluate` (fixed, seeded batches: every mask sees the same
    windows, so differences between masks are paired) and restores the previous mask.

    Parameters
    ----------
    model
        An :class:`msapod.models.gpt.GPT`.
    mask
        ``(n_layer, n_head)`` of 0/1 (1 = keep).
    tokens
        1-D token stream, normally ``load_corpus().val``.
    batches, batch_size
        Passed to :func:`msapod.models.train.evaluate`.

    Returns
    -------
    float
        Mean cross-entropy in nats per character.
    """
    import torch

    from ...models.train import evaluate

    m = _checked_masks(mask, model, "mask")
    batches = check_int(batches, "batches", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    saved = torch.stack([b.attn.head_mask.detach().clone() for b in model.blocks])
    try:
        model.set_head_mask(torch.as_tensor(m, dtype=torch.float32))
        return evaluate(model, np.asarray(tokens), batches=batches, batch_size=batch_size)
    finally:
        model.set_head_mask(saved)


def _checked_masks(masks, model, name: str) -> np.ndarray:
    """``masks`` as float64: one ``(n_layer, n_head)`` head mask of ``model`` (``name``
    "mask") or a non-empty stack of them ("masks"), of 0 (remove) and 1 (keep) only."""
    L, H = model.config.n_layer, model.config.n_head
    m = np.asarray(masks, dtype=np.float64)
    shape = (L, H) if name == "mask" else ("n_masks", L, H)
    if m.shape[-2:] != (L, H) or m.ndim != len(shape) or m.size == 0:
        raise ValueError(f"{name}: expected shape ({', '.join(map(str, shape))}), got {m.shape}")
    if not np.isin(m, (0.0, 1.0)).all():
        raise ValueError(f"{name}: expected only 0 (remove) and 1 (keep)")
    return m


def ablation_losses(
    model,
    masks,
    tokens,
    *,
    batches: int = 20,
    batch_size: int = 16,
    max_batch: int = 64,
    progress: bool = False,
    name: str | None = None,
) -> np.ndarray:
    """Validation losses of many head masks at once: ``[ablation_loss(model, m, tokens,
    ...) for m in masks]`` on the same windows, up to float round-off (bit for bit on CPU).

    The work the masks share is done once: masks with the same first ``l`` layer rows share
    the residual stream entering layer ``l + 1``, each distinct prefix runs the next
    layer's attention once (a head mask acts only on its per-head outputs), and only the
    distinct (prefix, row) pairs run the output projection and the MLP.

    Parameters
    ----------
    model, tokens, batches, batch_size
        As in :func:`ablation_loss` (the model runs in eval mode, its mode restored; its
        installed ``head_mask`` is ignored, as :func:`ablation_loss` replaces it).
    masks
        ``(n_masks, n_layer, n_head)`` of 0/1 (1 = keep).
    max_batch
        Most sequences in one forward call (at least ``batch_size`` are used).
    progress, name
        Show a progress bar over the batches, labelled with ``name``.

    Returns
    -------
    numpy.ndarray
        ``(n_masks,)`` mean cross-entropy in nats per character.
    """
    from ...models.record import inference
    from ...models.train import get_batch

    m = _checked_masks(masks, model, "masks")
    batches = check_int(batches, "batches", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    per_call = max(1, check_int(max_batch, "max_batch", 1) // batch_size)
    tokens, p = np.asarray(tokens), next(model.parameters())
    losses = np.empty((len(m), batches))
    rng = np.random.default_rng(1234)  # the windows of evaluate()
    with inference(model):
        for b in tqdm(range(batches), desc=f"ablation {name or ''}".strip(), disable=not progress):
            x, y = get_batch(tokens, model.config.block_size, batch_size, rng)
            losses[:, b] = _tree_losses(model, m, x.to(p.device), y.to(p.device), per_call)
    # np.mean of each mask's per-batch losses, as evaluate() averages them
    return np.array([float(np.mean(row)) for row in losses])


def _tree_losses(model, masks: np.ndarray, x, y, per_call: int) -> np.ndarray:
    """Loss of every mask on one batch ``(x, y)``, sharing the common prefixes (the tree
    of :func:`ablation_losses`; up to ``per_call`` prefixes or children per forward call).
    The operations are those of :class:`msapod.models.gpt.GPT` in eval mode, in the same
    order (the head mask multiplies the per-head outputs before ``c_proj``)."""
    import torch

    B, T = x.shape
    C, H = model.config.n_embd, model.config.n_head
    pos = torch.arange(T, device=x.device)
    states = model.drop(model.wte(x) + model.wpe(pos))[None]  # (prefixes, B, T, C)
    groups = [np.arange(len(masks))]  # the masks behind each prefix
    for li, block in enumerate(model.blocks):
        attn = block.attn
        parents, rows, children = _children(masks, groups, li)
        rows_t = torch.as_tensor(np.array(rows), dtype=states.dtype, device=x.device)
        rows_t = rows_t[:, None, None, :, None]  # (children, 1, 1, H, 1)
        out = torch.empty((len(rows), B, T, C), dtype=states.dtype, device=x.device)
        c0 = 0
        for p0 in range(0, len(states), per_call):
            p1 = min(len(states), p0 + per_call)
            # the attention of this layer, once per prefix: (prefixes, B, H, T, hd)
            heads = attn.head_outputs(block.ln_1(states[p0:p1].reshape(-1, T, C)))
            heads = heads.view(p1 - p0, B, *heads.shape[1:])
            c_end = int(np.searchsorted(parents, p1))
            for c in range(c0, c_end, per_call):
                r = min(c_end, c + per_call) - c
                par = parents[c : c + r] - p0
                if (par == par[0]).all():  # one prefix: broadcast, no copy
                    hp, sp = heads[par[0]][None], states[p0 + par[0]][None]
                else:
                    idx = torch.as_tensor(par, device=x.device)
                    hp, sp = heads[idx], states[p0 + idx]
                # as CausalSelfAttention.forward: y * mask, (B, T, H, hd) layout, c_proj
                o = torch.empty((r, B, T, H, hp.shape[-1]), dtype=hp.dtype, device=x.device)
                torch.mul(hp.transpose(2, 3), rows_t[c : c + r], out=o)
                a = attn.resid_drop(attn.c_proj(o.view(r * B, T, C)))
                z = out[c : c + r]
                torch.add(sp, a.view(r, B, T, C), out=z)
                z += block.mlp(block.ln_2(z.view(r * B, T, C))).view(r, B, T, C)
            c0 = c_end
            del heads
        states, groups = out, children
    return _leaf_losses(model, states, groups, y, per_call, len(masks))


def _children(masks: np.ndarray, groups: list, li: int) -> tuple[np.ndarray, list, list]:
    """``(parents, rows, children)``: each group of masks split by its rows of layer index
    ``li``; per child, its group's index, its row and its masks."""
    parents, rows, children = [], [], []
    for s, g in enumerate(groups):
        uniq, inv = np.unique(masks[g, li], axis=0, return_inverse=True)
        for u, row in enumerate(uniq):
            parents.append(s)
            rows.append(row)
            children.append(g[inv.ravel() == u])
    return np.asarray(parents), rows, children


def _leaf_losses(model, states, groups: list, y, per_call: int, n_masks: int) -> np.ndarray:
    """The loss of every mask from the final residual streams ``states`` (one per group of
    masks in ``groups``), up to ``per_call`` streams per call of the output head."""
    import torch.nn.functional as F

    losses = np.empty(n_masks)
    for p0 in range(0, len(states), per_call):
        logits = model.lm_head(model.ln_f(states[p0 : p0 + per_call]))
        for s in range(len(logits)):
            loss = F.cross_entropy(logits[s].view(-1, logits.size(-1)), y.reshape(-1))
            losses[groups[p0 + s]] = loss.item()
    return losses


# ------------------------------------------------------------------ C6 by depth

#: The layer groups whose heads C6's depth test removes (the registry's early and late
#: layers), by name.
DEPTH_GROUPS: dict[str, tuple[int, ...]] = {"early": EARLY, "late": LATE}


@dataclass(frozen=True)
class DepthConfig:
    """The parameters of C6's direct depth test (all part of its cache key).

    Attributes
    ----------
    budgets
        Heads removed inside one layer group (of the group's ``len(group) * n_head``,
        16 in the zoo models: a quarter and a half).
    n_draws
        Random draws of the removed heads per group and budget.
    seed
        Seed of the draws (draw ``d`` of budget ``b`` in group ``g`` uses
        ``default_rng([seed, b, g, d, 1])``, a stream apart from :func:`mask_plan`'s).
    eval_batches, eval_batch_size
        Validation batches of :func:`ablation_losses` (as :class:`PruneConfig`).
    """

    budgets: tuple[int, ...] = (4, 8)
    n_draws: int = 4
    seed: int = 0
    eval_batches: int = 8
    eval_batch_size: int = 16

    def parts(self) -> dict:
        """Every parameter and the layer groups (the key of the cached results)."""
        return {**asdict(self), "groups": DEPTH_GROUPS}


def depth_masks(n_layer: int, n_head: int, config: DepthConfig | None = None) -> np.ndarray:
    """The masks of C6's depth test: int8 ``(group, budget, draw, layer, head)``, 1 keep,
    0 removed; in group ``g`` exactly ``budget`` heads of the group's layers removed,
    drawn uniformly without replacement, every other head kept."""
    cfg = config or DepthConfig()
    draws = check_int(cfg.n_draws, "n_draws", 2)
    groups = list(DEPTH_GROUPS.values())
    for layers in groups:
        if not set(layers) <= set(range(1, n_layer + 1)):
            raise ValueError(f"n_layer: expected at least {max(layers)} layers, got {n_layer}")
    budgets = _check_budgets(cfg.budgets, min(len(g) for g in groups) * n_head)
    masks = np.ones((len(groups), len(budgets), draws, n_layer, n_head), dtype=np.int8)
    for g, layers in enumerate(groups):
        rows = np.asarray(layers) - 1
        for j, b in enumerate(budgets):
            for d in range(draws):
                rng = np.random.default_rng([cfg.seed, b, g, d, 1])
                masks[g, j, d][rows] = prune_masks(np.zeros((len(rows), n_head)), b, "random", rng)
    return masks


def model_depth_ablation(
    model, config: DepthConfig | None = None, *, corpus=None, progress: bool = False, name=None
) -> xr.Dataset:
    """C6's depth test on one model: the validation loss with ``budget`` heads removed at
    random inside the early layers and inside the late layers (:func:`depth_masks`), the
    unpruned model and every mask on the same batches in one :func:`ablation_losses` pass.

    Returns
    -------
    xarray.Dataset
        ``depth_base_loss``; ``depth_loss_increase(group, depth_budget, depth_draw)``
        (nats/char, pruned minus unpruned); ``depth_mask(group, depth_budget, depth_draw,
        layer, head)``.
    """
    cfg = config or DepthConfig()
    L, H = model.config.n_layer, model.config.n_head
    masks = depth_masks(L, H, cfg)
    losses = _with_unpruned(model, masks.reshape(-1, L, H), cfg, corpus, progress, name)
    dims = ("group", "depth_budget", "depth_draw")
    coords = {
        "group": list(DEPTH_GROUPS),
        "depth_budget": list(_check_budgets(cfg.budgets, L * H)),
        "depth_draw": np.arange(masks.shape[2]),
        "layer": np.arange(1, L + 1),
        "head": np.arange(1, H + 1),
    }
    inc = (losses[1:] - losses[0]).reshape(masks.shape[:3])
    return xr.Dataset(
        {
            "depth_base_loss": ((), float(losses[0])),
            "depth_loss_increase": (dims, inc, {"units": "nats/char"}),
            "depth_mask": ((*dims, "layer", "head"), masks),
        },
        coords=coords,
        attrs={
            "depth_groups": str({k: list(v) for k, v in DEPTH_GROUPS.items()}),
            "depth_eval": f"val split, {cfg.eval_batches} x {cfg.eval_batch_size}",
        },
    )


# --------------------------------------------------------------------- the study


@dataclass(frozen=True)
class PruneConfig:
    """Every parameter of the pruning experiment (all of them part of its cache keys).

    Attributes
    ----------
    budgets
        Numbers of heads removed (of 48 in the zoo models).
    n_random
        Draws per randomised strategy.
    seed
        Seed of the random draws and of the importance batches.
    n, length, eps, primary_eps, tie_modes
        Ensemble and H* parameters (:func:`head_ranks`).
    eval_batches, eval_batch_size
        Validation batches of :func:`ablation_loss`.
    importance_batches, importance_batch_size
        Training batches of :func:`head_importance`.
    """

    budgets: tuple[int, ...] = (8, 16, 24)
    n_random: int = 4
    seed: int = 0
    n: int = N_SNAPSHOTS
    length: int = SNIPPET_LENGTH
    eps: tuple[float, ...] = EPS
    primary_eps: float = PAPER_EPS
    tie_modes: int = 10
    eval_batches: int = 8
    eval_batch_size: int = 16
    importance_batches: int = 16
    importance_batch_size: int = 8

    def checked(self, n_heads: int, least_random: int = 1) -> PruneConfig:
        """The config with sorted, distinct budgets (1..``n_heads``) and eps, and
        ``n_random >= least_random``; ``ValueError`` naming the first bad field."""
        return replace(
            self,
            budgets=tuple(_check_budgets(self.budgets, n_heads)),
            n_random=check_int(self.n_random, "n_random", least_random),
            eps=_eps_tuple(self.eps, self.primary_eps),
        )

    def rank_parts(self) -> dict:
        """The parameters of :func:`head_ranks` (the key of the cached ranks)."""
        names = ("n", "length", "eps", "primary_eps", "tie_modes")
        return {k: v for k, v in asdict(self).items() if k in names}

    def parts(self) -> dict:
        """Every parameter and the strategies (the key of the cached pruning results)."""
        return {**asdict(self), "strategies": STRATEGIES}

    def ranks(self, model, corpus, *, progress: bool = False, name: str | None = None):
        """:func:`head_ranks` of ``model`` on the paper ensemble of this config."""
        ids, _ = ensemble_ids(corpus, n=self.n, length=self.length, seed=0, split="val")
        return head_ranks(
            model,
            ids,
            eps=self.eps,
            primary_eps=self.primary_eps,
            tie_modes=self.tie_modes,
            progress=progress,
            name=name,
        )


def mask_plan(
    scores: dict[str, xr.DataArray], budgets, n_random: int, seed: int
) -> tuple[list[tuple[int, int, int]], np.ndarray]:
    """Every mask of the experiment: ``(jobs, masks)`` with ``jobs`` the
    ``(strategy, budget, draw)`` indices that exist (one draw for the deterministic
    strategies, ``n_random`` for :data:`RANDOMISED` ones; draw ``d`` of budget ``b`` uses
    ``default_rng([seed, b, strategy index, d])``) and ``masks`` int8 ``(strategy, budget,
    draw, layer, head)``, -1 where no such draw. ``scores``: strategy -> the scores
    :func:`prune_masks` takes."""
    L, H = _scores_2d(scores[STRATEGIES[0]]).shape
    masks = np.full((len(STRATEGIES), len(budgets), n_random, L, H), -1, dtype=np.int8)
    jobs = [
        (i, j, d)
        for i, st in enumerate(STRATEGIES)
        for j in range(len(budgets))
        for d in range(n_random if st in RANDOMISED else 1)
    ]
    for i, j, d in jobs:
        st, b = STRATEGIES[i], budgets[j]
        rng = np.random.default_rng([seed, b, i, d]) if st in RANDOMISED else None
        masks[i, j, d] = prune_masks(scores[st], b, st, rng)
    return jobs, masks


def model_pruning(
    model,
    config: PruneConfig | None = None,
    *,
    corpus=None,
    ranks: xr.Dataset | None = None,
    progress: bool = False,
    name: str | None = None,
    **params,
) -> xr.Dataset:
    """The pruning experiment for one model (uncached; see :func:`pruning_study`).

    ``config`` (default :class:`PruneConfig`), with any of its fields overridden by
    ``params``. Computes :func:`head_ranks` on the paper ensemble (``ensemble_ids(n,
    length, seed=0, split="val")``) unless ``ranks`` is given, :func:`head_importance` on
    the training split, the masks of :func:`mask_plan`, and the validation loss
    (:func:`ablation_loss` on ``corpus.val``, all masks in one :func:`ablation_losses`
    pass) of the unpruned model and of every mask.

    Returns
    -------
    xarray.Dataset
        ``base_loss``; ``loss`` and ``loss_increase`` ``(strategy, budget, draw)``, NaN
        for draws a deterministic strategy does not have; ``mask(strategy, budget,
        draw, layer, head)`` int8 (1 keep, 0 removed, -1 no such draw); ``importance``
        and ``importance_raw`` ``(layer, head)``; and the :func:`head_ranks` variables.
    """
    corpus = load_corpus() if corpus is None else corpus
    L, H = model.config.n_layer, model.config.n_head
    cfg = replace(config or PruneConfig(), **params).checked(L * H)
    if ranks is None:
        ranks = cfg.ranks(model, corpus, progress=progress, name=name)
    raw = head_importance(
        model,
        corpus.train,
        batches=cfg.importance_batches,
        batch_size=cfg.importance_batch_size,
        seed=cfg.seed,
        normalise=False,
        progress=progress,
    )
    importance = _normalise(raw)
    scores = _strategy_scores(ranks, importance, cfg.primary_eps)
    jobs, masks = mask_plan(scores, cfg.budgets, cfg.n_random, cfg.seed)
    losses = _with_unpruned(model, [masks[job] for job in jobs], cfg, corpus, progress, name)
    loss = np.full(masks.shape[:3], np.nan)
    loss[tuple(np.transpose(jobs))] = losses[1:]
    return _pruning_dataset(cfg, ranks, float(losses[0]), loss, masks, raw, importance)


def _with_unpruned(model, masks, cfg, corpus, progress: bool, name) -> np.ndarray:
    """Validation losses of the unpruned model and then of every mask, in one
    :func:`ablation_losses` pass with ``cfg``'s ``eval_batches`` and ``eval_batch_size``."""
    L, H = model.config.n_layer, model.config.n_head
    every = np.concatenate([np.ones((1, L, H), np.int8), np.reshape(masks, (-1, L, H))])
    return ablation_losses(
        model,
        every,
        (load_corpus() if corpus is None else corpus).val,
        batches=cfg.eval_batches,
        batch_size=cfg.eval_batch_size,
        progress=progress,
        name=name,
    )


def _strategy_scores(ranks: xr.Dataset, importance: xr.DataArray, eps: float) -> dict:
    """The head scores each pruning strategy of :func:`mask_plan` ranks by: the per-head
    H* score, Michel importance, or the layer's H* at ``eps`` for every head."""
    layer_h = ranks["H_star_layer"].sel(eps=eps, method="nearest")
    return {st: ranks["rank_score"] for st in STRATEGIES} | {
        "importance": importance,
        "H*-allocation": layer_h.broadcast_like(ranks["rank_score"]),
    }


def _pruning_dataset(cfg: PruneConfig, ranks, base, loss, masks, raw, importance):
    """:func:`model_pruning`'s result from its pieces."""
    coords = {
        "strategy": list(STRATEGIES),
        "budget": list(cfg.budgets),
        "draw": np.arange(cfg.n_random),
        "layer": ranks["layer"].values,
        "head": ranks["head"].values,
    }
    dims = ("strategy", "budget", "draw")
    ds = xr.Dataset(
        {
            "base_loss": ((), base, {"long_name": "validation loss, no head removed"}),
            "loss": (dims, loss, {"long_name": "validation loss, pruned"}),
            "mask": (
                (*dims, "layer", "head"),
                masks,
                {"long_name": "head mask: 1 kept, 0 removed, -1 no such draw"},
            ),
            "importance": importance.drop_vars(["layer", "head"]),
            "importance_raw": raw.drop_vars(["layer", "head"]),
        },
        coords=coords,
    )
    ds["loss_increase"] = ds["loss"] - ds["base_loss"]
    ds["loss_increase"].attrs = {"long_name": "validation loss increase (nats/char)"}
    ds = xr.merge([ds, ranks], combine_attrs="drop_conflicts")
    L, H = masks.shape[-2:]
    ds.attrs.update(
        n_heads=L * H,
        n_random=cfg.n_random,
        seed=cfg.seed,
        eval=f"msapod.train.evaluate on the val split, {cfg.eval_batches} x {cfg.eval_batch_size}",
        importance=f"Michel et al. 2019, {cfg.importance_batches} x "
        f"{cfg.importance_batch_size} training-split windows, l2-normalised per layer",
        h_star_ensemble=f"ensemble_ids(n={cfg.n}, length={cfg.length}, seed=0, split='val')",
    )
    return ds


def _check_budgets(budgets, n_heads: int) -> list[int]:
    if isinstance(budgets, int | np.integer):
        budgets = [budgets]
    out = sorted({check_int(b, "budgets", 1) for b in budgets})
    if not out:
        raise ValueError("budgets: expected at least one budget")
    if out[-1] > n_heads:
        raise ValueError(f"budgets: expected at most the number of heads {n_heads}, got {out[-1]}")
    return out


def pruning_study(
    models: Sequence[str] | None = None,
    config: PruneConfig | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    **params,
) -> xr.Dataset:
    """Head-pruning experiment (test of C6) on zoo models, cached.

    One model at a time: its per-head H* (:func:`head_ranks`, cached under
    ``<cache>/head-ranks``) and its pruning results (:func:`model_pruning`, cached
    under ``<cache>/pruning``), each keyed by the weights' and the data's sha256, every
    parameter and :data:`PRUNE_FORMAT` (see :func:`msapod.studies.store.cache.cached_dataset`).

    Parameters
    ----------
    models
        Zoo model names; default the main zoo's trained models.
    config
        The experiment's parameters (default :class:`PruneConfig`; ``n_random`` at least
        2, for a spread), any field overridden by ``params`` (e.g. ``budgets=(8, 16)``).
    cache_dir
        Cache root; default :func:`msapod.studies.store.cache.cache_dir`.
    progress
        Show progress bars (one model and one layer at a time).

    Returns
    -------
    xarray.Dataset
        The :func:`model_pruning` variables stacked along ``model``, with coords
        ``architecture`` and ``train_seed``.
    """
    from ...models.zoo import ZOO_CONFIGS

    models = _zoo_names(models)
    arch = ZOO_CONFIGS[models[0]].model
    cfg = replace(config or PruneConfig(), **params).checked(arch.n_layer * arch.n_head, 2)
    corpus = load_corpus()

    def one(name: str) -> xr.Dataset:
        inputs = model_inputs(name, cache_dir=cache_dir, progress=progress)
        ranks = _cached(
            "head-ranks",
            inputs,
            corpus,
            {"prune_format": PRUNE_FORMAT, **cfg.rank_parts(), "ensemble_seed": 0, "split": "val"},
            lambda model: cfg.ranks(model, corpus, progress=progress, name=name),
        )
        return _cached(
            "pruning",
            inputs,
            corpus,
            {"prune_format": PRUNE_FORMAT, **cfg.parts()},
            lambda model: model_pruning(
                model, cfg, corpus=corpus, ranks=ranks, progress=progress, name=name
            ),
        )

    return stack_zoo(one, models).assign_coords(
        train_seed=("model", [ZOO_CONFIGS[m].seed for m in models])
    )


def _zoo_names(models: Sequence[str] | None) -> list[str]:
    """The zoo models to run (default the main zoo's trained ones), checked distinct."""
    from ...models.zoo import MODELS

    models = zoo_models(models)
    if not models or any(m not in MODELS for m in models) or len(set(models)) != len(models):
        raise ValueError(f"models: expected distinct names from {MODELS}, got {models!r}")
    return models


def _cached(kind: str, inputs, corpus, parts: dict, run) -> xr.Dataset:
    """``run(model)`` of one zoo model (``inputs``) cached under ``<cache>/<kind>``, keyed
    by the weights' and the data's sha256 and ``parts``."""
    key = {"weights_sha256": inputs.weights_sha256, "data_sha256": corpus.sha256, **parts}
    return cached_model_study(
        kind,
        inputs,
        key,
        lambda inp: run(inp.model),
        attrs={"model": inputs.name},
        keyed_by_fields=False,
    )


def depth_study(
    models: Sequence[str] | None = None,
    config: DepthConfig | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> xr.Dataset:
    """C6's depth test (:func:`model_depth_ablation`) on zoo models (default the main
    zoo's trained models), each cached under ``<cache>/depth-pruning`` keyed by the
    weights' and the data's sha256 and every parameter; stacked along ``model`` with the
    ``architecture`` coordinate."""
    models = _zoo_names(models)
    corpus = load_corpus()
    cfg = config or DepthConfig()

    def one(name: str) -> xr.Dataset:
        return _cached(
            "depth-pruning",
            model_inputs(name, cache_dir=cache_dir, progress=progress),
            corpus,
            cfg.parts(),
            lambda model: model_depth_ablation(
                model, cfg, corpus=corpus, progress=progress, name=name
            ),
        )

    return stack_zoo(one, models)
