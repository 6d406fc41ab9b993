"""Null controls and a joint test over the specification curve.

Two questions the specification curve (:mod:`msapod.studies.verdict.multiverse`) cannot answer
by itself: *which structure did training create?* and *is the share of specifications
that hold larger than chance would give?*

**Null ensembles.** The same extraction, the same cache keying and the same evidence
(:func:`msapod.studies.verdict.multiverse.fields_evidence`) as for a trained zoo model, on

* ``"untrained"``: the zoo configuration's architecture with its weights at
  initialisation (:func:`untrained_model`: ``torch.manual_seed(cfg.seed); GPT(cfg.model)``,
  exactly what :func:`msapod.models.train.train` does before its first step), never
  shipped, keyed by the sha256 of its state dict. A claim that also holds here is not
  specific to training: an untrained causal attention, close to uniform over the past
  (``A(i, j) ~ 1 / (i + 1)``), has a lag structure of its own;
* ``"shuffled"``: the *trained* model on the same snippets with the characters of each
  snippet permuted (:func:`shuffle_snippets`, seeded per snippet). The shuffle keeps the
  weights, the positions and each snippet's characters but destroys the order of the
  text (words, lines, speaker turns), so the lag structure that remains is what the
  model's positional machinery (position embeddings, causal normalisation, recency) makes
  of any input. It is the null for the claims about lag structure (C1, C2, C4, C7, C9:
  :data:`SHUFFLED_CLAIMS`): structure present in the text-driven fields but not here is
  driven by the text. The others get no shuffled verdict (``"—"``,
  :data:`SHUFFLED_NOT_APPLICABLE` says why). Its evidence is computed at the default
  reading only (:data:`MAIN_AXES`): the scorecard's ``shuffled`` column, not a curve.

**Joint test** (Simonsohn, Simmons & Nelson 2020, "Specification curve analysis"). For a
claim with specifications ``s = 1..S`` the curve has two summaries: the share of
specifications whose verdict is "holds", ``h = mean_s 1[holds_s]``, and the median
effect ``m = median_s e_s`` (:func:`outcome_effect`: a signed distance of the measured
value from the claim's threshold, in units of its interval half-width, positive where it
supports the claim). Their null distributions come from re-evaluating the whole curve
under relabellings that are exchangeable under the null hypothesis:

* **architecture labels** (C7, C8, L): every balanced assignment of the labels
  ``baseline``/``ega`` to the models (:func:`architecture_labelings`; 4 + 4 models give
  ``C(8, 4) = 70`` labellings, 35 up to the swap that negates every difference; 2 + 2 give
  6); the claims are directional, so both members of a swapped pair are kept and the test
  is one-sided;
* **layer labels** (C1-C5): each model's layers relabelled independently
  (:func:`layer_labelings`), keeping only assignments the claim can distinguish (for C1,
  which 2 of 6 layers play "layers 1-2": 15 per model);
* **trained vs untrained** (every field-based claim): per model, which of the trained
  model and its untrained copy plays "trained" (:func:`swap_labelings`, ``2^M``
  labellings).

With ``T_0`` the observed statistic and ``T_1..T_B`` the curve's statistic under the
``B`` relabellings (the observed one included, as row 0), ``p = #{b : T_b >= T_0} / B``:
exact when every labelling is enumerated, ``(1 + #{b >= 1 : T_b >= T_0}) / (1 + B')``
(the same formula) with ``B'`` seeded random draws otherwise. ``joint_p = max(p_share,
p_median)``: an intersection-union test, significant at ``alpha`` only when both the share
and the median effect are. The smallest attainable p is ``1 / B`` (ties aside): a design
with ``1 / B > alpha`` *cannot* reach significance, and :class:`JointTest` says so.

Relabelling never recomputes fields or Grams: it permutes the per-model, per-layer
evidence already held in :class:`~msapod.studies.verdict.multiverse.ZooData` and calls
:func:`~msapod.studies.verdict.multiverse.evaluate` again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ..store.cache import state_sha256

__all__ = [
    "NULLS",
    "JointTest",
    "architecture_labelings",
    "claim_curve",
    "joint_test",
    "joint_tests",
    "layer_labelings",
    "main_axes",
    "null_evidence",
    "null_fields",
    "null_verdicts",
    "null_zoo_data",
    "outcome_effect",
    "relabel_architecture",
    "relabel_layers",
    "shuffle_snippets",
    "state_sha256",
    "swap_labelings",
    "swap_untrained",
    "untrained_model",
]

#: The null ensembles.
NULLS = ("untrained", "shuffled")
#: The claims the shuffled-snippet null addresses: the lag structure of the fields.
SHUFFLED_CLAIMS = ("C1", "C2", "C4", "C7", "C9")
#: Why the other claims get no shuffled verdict.
SHUFFLED_NOT_APPLICABLE = {
    "C3": "T_spec describes how the variance across snippets spreads over POD modes; "
    "shuffling changes what varies between snippets, not the lag structure",
    "C5": "H* counts POD modes of the variance across snippets (as C3)",
    "C6": "head pruning needs the validation loss of the trained text",
    "C8": "an architecture contrast of T_spec (as C3)",
    "C10": "Theorem 1 is an identity of POD on any ensemble",
    "L": "the loss claim is about training, not the fields",
}
#: Version of the null fields' and evidence's layout; part of their cache keys.
NULL_FORMAT = 1


# ---------------------------------------------------------------------------------------
# null ensembles


def _check_null(null: str) -> str:
    if null not in NULLS:
        raise ValueError(f"null: expected one of {NULLS}, got {null!r}")
    return null


def untrained_model(name: str):
    """Zoo model ``name``'s architecture with its weights at initialisation.

    Made deterministically from the zoo configuration as
    :func:`msapod.models.train.train` makes it before the first step
    (``torch.manual_seed(cfg.seed); GPT(cfg.model)``), rounded to the configuration's
    storage dtype (what a checkpoint of step 0 would hold), in eval mode. Never written
    to disk.

    Returns
    -------
    msapod.models.gpt.GPT
        With ``weights_sha256`` (:func:`state_sha256`, so field caches are keyed by it)
        and ``name = "untrained:<name>"``.
    """
    import torch

    from ...models.gpt import GPT
    from ...models.train import STORAGE
    from ...models.zoo import ZOO_CONFIGS

    if name not in ZOO_CONFIGS:
        raise ValueError(f"name: expected one of {list(ZOO_CONFIGS)}, got {name!r}")
    cfg = ZOO_CONFIGS[name]
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(cfg.seed)
        model = GPT(cfg.model)
    finally:
        torch.random.set_rng_state(state)
    dtype = STORAGE[cfg.storage]
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(dtype).float())
    model.eval()
    model.weights_sha256 = "untrained-" + state_sha256(model)
    model.name = f"untrained:{name}"
    return model


def shuffle_snippets(ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """Permute the characters within each snippet (row) of ``ids (N, L)``; snippet ``i``
    uses ``numpy.random.default_rng([seed, i])`` (independent of N)."""
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError(f"ids: expected (snippet, position) token ids, got shape {ids.shape}")
    out = np.empty_like(ids)
    for i, row in enumerate(ids):
        out[i] = row[np.random.default_rng([int(seed), i]).permutation(row.size)]
    return out


def _label(name: str, null: str) -> str:
    return f"{null}-{name}"


def null_fields(
    name: str,
    null: str = "untrained",
    *,
    n: int = 150,
    length: int = 256,
    seed: int = 0,
    layers: Sequence[int] | None = None,
    shuffle_seed: int = 0,
    cache_dir=None,
    progress: bool = False,
    model=None,
    batch_size: int = 16,
) -> xr.DataArray:
    """Head-averaged attention fields of zoo model ``name`` under a null, cached.

    The same extraction and the same verified cache file format as
    :func:`msapod.studies.store.cache.cached_fields` (``<cache>/fields/``), keyed by the
    weights' sha256, the data's sha256, the ensemble and the null.

    Parameters
    ----------
    name
        Zoo model name.
    null
        ``"untrained"`` (:func:`untrained_model` on the usual ensemble) or ``"shuffled"``
        (the trained model on the ensemble shuffled by :func:`shuffle_snippets`).
    n, length, seed, layers
        The ensemble and layers, as for :func:`~msapod.studies.store.cache.cached_fields`.
    shuffle_seed
        Seed of the within-snippet shuffle (``"shuffled"`` only).
    model
        The model to use instead of the one ``null`` implies (tests: a tiny GPT carrying
        ``weights_sha256``).

    Returns
    -------
    xarray.DataArray
        float32 ``(layer, snapshot, query, key)``; attrs as ``cached_fields``' plus
        ``null``.
    """
    from ..._io import check_int
    from ..store.cache import field_store

    _check_null(null)
    shuffle_seed = check_int(shuffle_seed, "shuffle_seed", 0)
    extra = {"null": null, "null_format": NULL_FORMAT}
    if null == "shuffled":
        extra["shuffle_seed"] = shuffle_seed

    def transform(ids: np.ndarray) -> np.ndarray:
        return shuffle_snippets(ids, shuffle_seed) if null == "shuffled" else ids

    if model is None and null == "untrained":
        model = untrained_model(name)
    return field_store(
        name,
        model,
        n=n,
        length=length,
        seed=seed,
        layers=layers,
        cache_dir=cache_dir,
        progress=progress,
        batch_size=batch_size,
        extra=extra,
        label=_label(name, null),
        ids_transform=transform,
    )


def null_evidence(
    name: str,
    null: str = "untrained",
    *,
    cache_dir=None,
    progress: bool = False,
    theorem1_layer: int = 0,
    fields: xr.DataArray | None = None,
    axes: dict | None = None,
    window_se: bool = False,
) -> xr.Dataset:
    """:func:`~msapod.studies.verdict.multiverse.fields_evidence` of :func:`null_fields` (cached).

    The same Dataset :func:`~msapod.studies.verdict.multiverse.model_evidence` returns for the
    trained model, keyed like it (the null fields' key, the multiverse axes and format)
    under ``<cache>/multiverse-evidence/<null>-<name>-*.nc``. ``fields``: use these null
    fields instead of :func:`null_fields` (tests). ``axes``: the readings to compute
    (default every one of :data:`~msapod.studies.verdict.multiverse.AXES`; :data:`MAIN_AXES`:
    the default reading only). ``window_se``: C4's and C9's jackknife
    (:func:`~msapod.studies.verdict.multiverse.needs_window_se`).
    """
    from ..store.cache import cached_dataset
    from . import multiverse as mv

    _check_null(null)
    F = (
        fields
        if fields is not None
        else null_fields(name, null, cache_dir=cache_dir, progress=progress)
    )
    AX = mv.AXES if axes is None else {**mv.AXES, **axes}
    parts = {
        "fields_key": F.attrs.get("key"),
        "weights_sha256": F.attrs.get("weights_sha256"),
        "null": null,
        "axes": json.dumps({k: list(v) for k, v in AX.items()}, default=str),
        "num_scales": mv.NUM_SCALES,
        "fixed_k": list(mv.FIXED_K),
        "theorem1_layer": theorem1_layer,
        "format": mv.EVIDENCE_FORMAT,
        "null_format": NULL_FORMAT,
        **({"window_se": True} if window_se else {}),
    }

    def compute():
        out = mv.fields_evidence(F, theorem1_layer=theorem1_layer, axes=axes, window_se=window_se)
        out.attrs = {"model": name, "null": null}
        return out

    label = _label(name, null) + ("" if axes is None else "-default")
    ev = cached_dataset("multiverse-evidence", label, parts, compute, cache_dir=cache_dir)
    return mv.with_window_se(ev)


def main_axes() -> dict:
    """The window readings cut to the default reading (what the shuffled null computes):
    ``{axis: (default,)}`` for the axes of the scale spectrum and the windows."""
    from .multiverse import MAIN_SPEC

    window = ("field", "normalisation", "scale_min", "scale_stat", "centre", "width")
    return {a: (MAIN_SPEC[a],) for a in window}


def null_zoo_data(
    models: Sequence[str],
    null: str = "untrained",
    *,
    cache_dir=None,
    progress: bool = False,
    evidence: Sequence[xr.Dataset] | xr.Dataset | None = None,
    axes: dict | None = None,
):
    """A :class:`~msapod.studies.verdict.multiverse.ZooData` of ``models`` under ``null``.

    The model names are the trained ones (so the ``architecture`` coordinate and
    :func:`~msapod.studies.verdict.multiverse.evaluate` work unchanged); ``ev.attrs["null"]``
    names the null. No convergence ensembles (N = 600), no pruning study and no losses:
    those specifications and C6, L are not testable on a null. ``evidence``: per-model
    evidence to use instead of :func:`null_evidence` (tests), or the models' evidence
    already stacked along ``model`` (the shipped ``results/evidence-<null>.nc``);
    ``axes``: the readings (:func:`null_evidence`).
    """
    from ..store.cache import stack_models
    from .multiverse import ZooData, needs_window_se

    _check_null(null)
    models = list(models)
    if evidence is None:
        kw = dict(cache_dir=cache_dir, progress=progress, axes=axes)
        kw["window_se"] = needs_window_se(models)
        evidence = [
            null_evidence(m, null, theorem1_layer=4 if i == 0 else 0, **kw)
            for i, m in enumerate(models)
        ]
    if isinstance(evidence, xr.Dataset):
        ev = evidence.sel(model=models)
    else:
        ev = stack_models(list(evidence), models)
    ev.attrs["n_snapshots"] = int(ev.sizes["rank"])
    ev.attrs["null"] = null
    return ZooData(models, ev, None, None, None)


#: Claims a null ensemble cannot address: pruning (C6) and the loss difference (L) need
#: trained models.
NO_NULL_CLAIMS = ("C6", "L")


def null_verdicts(
    data, name: str = "untrained_verdict", claims: Sequence[str] | None = None
) -> xr.DataArray:
    """The default reading's verdict of every claim on a null ZooData
    (:func:`null_zoo_data`), by :func:`~msapod.studies.verdict.multiverse.evaluate` under
    :data:`~msapod.studies.verdict.multiverse.MAIN_SPEC`, the rules the trained zoo uses; ``""``
    for :data:`NO_NULL_CLAIMS` and for the claims not in ``claims`` (default: every
    other claim; the shuffled null: :data:`SHUFFLED_CLAIMS`).

    Returns
    -------
    xarray.DataArray
        str, dim ``claim`` (:data:`~msapod.studies.verdict.multiverse.CLAIM_IDS`), named ``name``.
    """
    from .multiverse import CLAIM_IDS, MAIN_SPEC, evaluate

    keep = [c for c in CLAIM_IDS if c not in NO_NULL_CLAIMS and (claims is None or c in claims)]
    spec = {"zoo": "", **MAIN_SPEC}
    words = [evaluate(c, spec, data).verdict if c in keep else "" for c in CLAIM_IDS]
    null = str(data.ev.attrs.get("null", ""))
    return xr.DataArray(
        np.asarray(words, dtype=str),
        dims="claim",
        coords={"claim": list(CLAIM_IDS)},
        name=name,
        attrs={"null": null, "reading": "default reading"},
    )


# ---------------------------------------------------------------------------------------
# relabellings


def _n_choose(sizes: Sequence[int], total: int) -> int:
    out, left = 1, total
    for k in sizes:
        out *= math.comb(left, k)
        left -= k
    return out


def _product_or_sample(choices: list[list], max_exact: int, n_random: int, seed: int):
    """Rows of the product of per-unit ``choices`` (row 0: every unit's first choice):
    all of them if at most ``max_exact``, else row 0 and ``n_random`` seeded draws.
    Returns ``(rows, exact)``."""
    count = math.prod(len(c) for c in choices)
    if count <= max_exact:
        rows = list(itertools.product(*choices))
        return rows, True
    rng = np.random.default_rng(seed)
    rows = [tuple(c[0] for c in choices)]
    for _ in range(n_random):
        rows.append(tuple(c[int(rng.integers(len(c)))] for c in choices))
    return rows, False


def architecture_labelings(
    architecture: Sequence[str],
    *,
    groups: Sequence | None = None,
    max_exact: int = 20000,
    n_random: int = 999,
    seed: int = 0,
) -> tuple[np.ndarray, bool]:
    """Every relabelling of the models' architectures with the group sizes kept.

    Parameters
    ----------
    architecture
        Observed label per model (e.g. ``["baseline", "baseline", "ega", "ega"]``).
    groups
        Optional block per model (e.g. its zoo): labels are permuted within each block
        only; the labellings are the product over blocks.
    max_exact, n_random, seed
        Enumerate exactly when the count is at most ``max_exact``; else the observed
        labelling and ``n_random`` seeded random ones.

    Returns
    -------
    labels : numpy.ndarray
        ``(n_labelings, n_models)`` of str; row 0 is the observed labelling. Every distinct
        labelling appears once when exact (``C(8, 4) = 70`` rows for 4 + 4 models).
    exact : bool
    """
    arch = np.asarray(architecture, dtype=str)
    if arch.ndim != 1 or arch.size < 2:
        raise ValueError(f"architecture: expected a label per model (>= 2), got {arch!r}")
    blocks = np.zeros(arch.size, int) if groups is None else np.asarray(groups)
    if blocks.shape != arch.shape:
        raise ValueError(f"groups: expected one block per model ({arch.size}), got {blocks.shape}")
    units, choices = [], []
    for b in dict.fromkeys(blocks.tolist()):
        idx = np.flatnonzero(blocks == b)
        obs = tuple(arch[idx])
        labels = sorted(set(obs))
        sizes = [obs.count(lbl) for lbl in labels]
        opts = []
        for assign in _assignments(len(idx), sizes):
            row = np.empty(len(idx), dtype=object)
            for lbl, where in zip(labels, assign, strict=True):
                row[list(where)] = lbl
            opts.append(tuple(row))
        opts.remove(obs)
        opts.insert(0, obs)
        units.append(idx)
        choices.append(opts)
    rows, exact = _product_or_sample(choices, max_exact, n_random, seed)
    out = np.empty((len(rows), arch.size), dtype=arch.dtype)
    for r, row in enumerate(rows):
        for idx, part in zip(units, row, strict=True):
            out[r, idx] = part
    return out, exact


def _assignments(n: int, sizes: Sequence[int]):
    """Every way to split ``range(n)`` into ordered sets of the given ``sizes`` (the
    remainder, if any, unassigned): a list of tuples of index tuples."""
    if not sizes:
        return [()]
    out = []
    for first in itertools.combinations(range(n), sizes[0]):
        rest = [i for i in range(n) if i not in first]
        for tail in _assignments(len(rest), sizes[1:]):
            out.append((first, *(tuple(rest[i] for i in t) for t in tail)))
    return out


def layer_labelings(
    n_models: int,
    layers: Sequence[int],
    roles: Sequence[Sequence[int]],
    *,
    max_exact: int = 20000,
    n_random: int = 199,
    seed: int = 0,
) -> tuple[np.ndarray, bool]:
    """Relabellings of each model's layers that a claim can distinguish.

    A claim reads its layers in ``roles`` (groups of layer labels read alike, e.g.
    ``[[1, 2]]`` for C1, ``[[1, 2], [5, 6]]`` for C3, ``[[2], [4], [6]]`` for C4). A
    relabelling assigns to each group a set of physical layers of the same size; the other
    layers keep their order. Models are relabelled independently.

    Returns
    -------
    perms : numpy.ndarray
        ``(n, n_models, n_layers)`` int: ``perms[r, m, j]`` is the index (into ``layers``)
        of the physical layer that plays label ``layers[j]`` in model ``m``; row 0 is the
        identity.
    exact : bool
        Whether every combination was enumerated (per model
        ``n_layers! / (prod |g|! (n_layers - sum |g|)!)`` assignments, to the power
        ``n_models``).
    """
    layers = [int(v) for v in layers]
    pos = {v: i for i, v in enumerate(layers)}
    flat = [int(v) for g in roles for v in g]
    if len(set(flat)) != len(flat) or any(v not in pos for v in flat):
        raise ValueError(f"roles: expected disjoint groups of layers from {layers}, got {roles}")
    if n_models < 1:
        raise ValueError(f"n_models: expected >= 1, got {n_models}")
    L = len(layers)
    groups = [sorted(pos[int(v)] for v in g) for g in roles]
    others = [j for j in range(L) if j not in {i for g in groups for i in g}]
    per_model = []
    for assign in _assignments(L, [len(g) for g in groups]):
        perm = np.empty(L, dtype=int)
        used = set()
        for g, phys in zip(groups, assign, strict=True):
            perm[g] = sorted(phys)
            used.update(phys)
        perm[others] = [j for j in range(L) if j not in used]
        per_model.append(tuple(perm))
    ident = tuple(range(L))
    per_model.remove(ident)
    per_model.insert(0, ident)
    rows, exact = _product_or_sample([per_model] * n_models, max_exact, n_random, seed)
    return np.asarray(rows, dtype=int).reshape(len(rows), n_models, L), exact


def swap_labelings(
    n_models: int, *, max_exact: int = 20000, n_random: int = 999, seed: int = 0
) -> tuple[np.ndarray, bool]:
    """Per model, whether its untrained copy plays "trained": ``(n, n_models)`` bool,
    row 0 all False (the observed assignment); ``2^n_models`` rows when exact."""
    rows, exact = _product_or_sample([[False, True]] * n_models, max_exact, n_random, seed)
    return np.asarray(rows, dtype=bool).reshape(len(rows), n_models), exact


def _with_model_coord(obj, name, values):
    if obj is None or "model" not in getattr(obj, "dims", ()):
        return obj
    return obj.assign_coords({name: ("model", list(values))})


def _clone(data, ev, conv=None, losses=None):
    """A shallow copy of ``data`` (a ZooData) with new evidence, convergence and losses;
    its memoised views (private attributes) are reset."""
    import copy

    new = copy.copy(data)
    for k in list(vars(new)):
        if k.startswith("_"):
            setattr(new, k, None)
    new.ev, new.conv, new.losses = ev, conv, losses
    return new


def relabel_architecture(data: Mapping, labels: Sequence[str]) -> dict:
    """``{zoo: ZooData}`` with the ``architecture`` coordinate replaced by ``labels``
    (one per model, in the order of the zoos and their models); the evidence is shared,
    not copied."""
    labels = list(labels)
    total = sum(len(d.models) for d in data.values())
    if len(labels) != total:
        raise ValueError(f"labels: expected one per model ({total}), got {len(labels)}")
    out, k = {}, 0
    for z, d in data.items():
        lab = labels[k : k + len(d.models)]
        k += len(d.models)
        losses = d.losses
        if losses is not None:
            losses = (_with_model_coord(losses[0], "architecture", lab), losses[1])
        out[z] = _clone(
            d,
            _with_model_coord(d.ev, "architecture", lab),
            _with_model_coord(d.conv, "architecture", lab),
            losses,
        )
    return out


def _permute_layers(ds, perm: np.ndarray):
    """``ds`` with, per model ``m``, label ``j``'s values taken from layer ``perm[m, j]``."""
    if ds is None or "model" not in ds.dims or "layer" not in ds.dims:
        return ds
    new = {}
    rows = np.arange(perm.shape[0])[:, None]
    for name, var in ds.data_vars.items():
        if "model" in var.dims and "layer" in var.dims:
            other = [d for d in var.dims if d not in ("model", "layer")]
            v = var.transpose("model", "layer", *other)
            new[name] = (v.dims, v.values[rows, perm])
    return ds.assign(new)


def relabel_layers(data: Mapping, perms: np.ndarray) -> dict:
    """``{zoo: ZooData}`` with each model's layers relabelled by ``perms (n_models,
    n_layers)`` (:func:`layer_labelings`' rows; models in the order of the zoos), in the
    evidence and in the convergence ensembles."""
    perms = np.asarray(perms, dtype=int)
    total = sum(len(d.models) for d in data.values())
    if perms.ndim != 2 or perms.shape[0] != total:
        raise ValueError(f"perms: expected (n_models = {total}, n_layers), got {perms.shape}")
    out, k = {}, 0
    for z, d in data.items():
        p = perms[k : k + len(d.models)]
        k += len(d.models)
        out[z] = _clone(d, _permute_layers(d.ev, p), _permute_layers(d.conv, p), d.losses)
    return out


def swap_untrained(data: Mapping, untrained: Mapping, swap: Sequence[bool]) -> dict:
    """``{zoo: ZooData}`` whose model ``m``'s evidence is the untrained copy's where
    ``swap[m]`` (models in the order of the zoos). Only the evidence is swapped: the
    specifications the swap is to test must not read convergence ensembles or losses."""
    swap = np.asarray(swap, dtype=bool)
    total = sum(len(d.models) for d in data.values())
    if swap.shape != (total,):
        raise ValueError(f"swap: expected one flag per model ({total}), got {swap.shape}")
    out, k = {}, 0
    for z, d in data.items():
        s = swap[k : k + len(d.models)]
        k += len(d.models)
        if not s.any():
            out[z] = d
            continue
        u = untrained[z].ev
        new = {}
        for name, var in d.ev.data_vars.items():
            if "model" in var.dims and name in u:
                a = var.transpose("model", ...)
                b = u[name].transpose(*a.dims)
                mask = s.reshape((-1,) + (1,) * (a.ndim - 1))
                new[name] = (a.dims, np.where(mask, b.values, a.values))
        out[z] = _clone(d, d.ev.assign(new), d.conv, d.losses)
    return out


# ---------------------------------------------------------------------------------------
# effects and the joint test

#: Signs of the stated architecture differences (EGA - baseline) per claim; ``None``:
#: the same sign in every layer.
DIFF_SIGN = {"C7": {None: 1}, "C8": {3: 1, 4: 1, 5: -1, 6: -1}, "L": {None: -1}}
#: Signs of the stated early/late contrasts (the rule's ``contrast``): C3 late - early
#: T_spec < 0, C5 early - later H* > 0; C1/C2 (late - early scale) > 0.
CONTRAST_SIGN = {"C1": 1, "C2": 1, "C3": -1, "C5": 1}
#: Claims on positive quantities (scales, T_spec, H*): distances on the log scale.
LOG_CLAIMS = {"C1", "C2", "C3", "C5"}


def _standardised(value, lower, upper, low=-np.inf, high=np.inf, log=False):
    """:func:`msapod.studies.verdict.rules.standardised` (the rules' own effects use it too)."""
    from .rules import standardised

    return standardised(value, lower, upper, low, high, log)


def outcome_effect(outcome) -> float:
    """The signed, unit-free effect of one specification's outcome (positive supports
    the claim); NaN when the outcome has none.

    ``outcome.extra["effect"]`` if the rule sets one; otherwise the median over the
    claim's cases of: the architecture difference times its stated sign over its interval
    half-width (C7, C8, L); otherwise both the early/late contrast likewise (C1, C2, C3,
    C5, when the rule reports one) and the distance of the key statistic from the claim's
    threshold (:data:`~msapod.studies.verdict.rules.THRESHOLDS`) over its half-width (log scale
    for positive quantities, raw for point values: C4, C9), in the layers the claim names.
    An interval that excludes the claim's boundary gives ``|effect| > 1``.
    """
    from .rules import EARLY, LATE, MIDDLE_LATE, PAPER_LAGS, THRESHOLDS

    claim = outcome.claim
    if "effect" in outcome.extra:
        return float(outcome.extra["effect"])
    vals = []
    if outcome.diff is not None and claim in DIFF_SIGN:
        signs = DIFF_SIGN[claim]
        d = outcome.diff
        if "layer" in d["value"].dims:
            for layer in d["layer"].values:
                sign = signs.get(int(layer), signs.get(None))
                if sign is None:
                    continue
                x = d.sel(layer=layer)
                vals.append(sign * _standardised(x["value"], x["lower"], x["upper"], low=0.0))
        else:
            sign = signs[None]
            vals.append(sign * _standardised(d["value"], d["lower"], d["upper"], low=0.0))
    if outcome.diff is None and outcome.contrast is not None and claim in CONTRAST_SIGN:
        c = outcome.contrast
        z = _standardised(c["value"], c["lower"], c["upper"], low=0.0)
        vals.extend(CONTRAST_SIGN[claim] * np.ravel(z))
    if outcome.diff is None and outcome.stat is not None and claim in THRESHOLDS:
        low, high = THRESHOLDS[claim]
        layers = {
            "C1": EARLY,
            "C2": LATE,
            "C3": EARLY,
            "C4": sorted(PAPER_LAGS),
            "C5": MIDDLE_LATE,
        }.get(claim)
        s, lo, up = outcome.stat, outcome.lower, outcome.upper
        if layers is not None and "layer" in s.dims:
            keep = [v for v in layers if v in s["layer"].values]
            s, lo, up = s.sel(layer=keep), lo.sel(layer=keep), up.sel(layer=keep)
        z = _standardised(s.values, lo.values, up.values, low, high, log=claim in LOG_CLAIMS)
        vals.extend(np.ravel(z))
    v = np.asarray(vals, dtype=float).ravel()
    v = v[np.isfinite(v)]
    return float(np.median(v)) if v.size else float("nan")


@dataclass
class JointTest:
    """A claim's specification curve against its null (:func:`joint_test`).

    Attributes
    ----------
    share, median
        Observed share of specifications that hold and median effect.
    null_share, null_median
        The same statistics under every relabelling (row 0: the observed labelling).
    p_share, p_median, joint_p
        Permutation p values (``#{T_b >= T_0} / B``) and their maximum (the
        intersection-union test); NaN ``p_median`` when no specification has an effect,
        then ``joint_p = p_share``.
    n_null, exact, min_p, reachable
        Relabellings used (the observed included), whether they are every one, the
        smallest attainable p (``1 / n_null``) and whether it is ``<= alpha``.
    note
        The design's limit in plain words.
    """

    share: float
    median: float
    null_share: np.ndarray
    null_median: np.ndarray
    p_share: float
    p_median: float
    joint_p: float
    n_null: int
    exact: bool
    min_p: float
    reachable: bool
    note: str = ""
    extra: dict = field(default_factory=dict)


def curve_statistics(holds, effect) -> tuple[float, float]:
    """``(share of specifications that hold, median finite effect)`` of one curve."""
    h = np.asarray(holds, dtype=bool).ravel()
    e = np.asarray(effect, dtype=float).ravel()
    share = float(h.mean()) if h.size else float("nan")
    e = e[np.isfinite(e)]
    return share, float(np.median(e)) if e.size else float("nan")


def _perm_p(null: np.ndarray, observed: float) -> float:
    if not np.isfinite(observed):
        return float("nan")
    # row 0 (the observed labelling) always counts; NaN rows never reach the observed
    ge = np.where(np.isfinite(null), null >= observed - 1e-12, False)
    ge[0] = True
    return float(ge.mean())


def joint_test(
    curve: Callable[[object], tuple[np.ndarray, np.ndarray]],
    labelings: Sequence,
    *,
    exact: bool = True,
    alpha: float = 0.05,
    what: str = "relabellings",
) -> JointTest:
    """Test a specification curve against the curves under relabellings.

    Parameters
    ----------
    curve
        ``curve(labelling) -> (holds, effect)``: per specification, whether the claim
        holds and its effect (:func:`outcome_effect`), under one relabelling.
    labelings
        The relabellings, row 0 the observed one (:func:`architecture_labelings`,
        :func:`layer_labelings`, :func:`swap_labelings`).
    exact
        Whether ``labelings`` is every relabelling (else a random draw, row 0 observed).
    alpha
        Level for ``reachable`` and the note.
    what
        The relabellings in words (for the note).
    """
    rows = list(labelings)
    if len(rows) < 2:
        raise ValueError(f"labelings: expected the observed one and >= 1 more, got {len(rows)}")
    stats = np.array([curve_statistics(*curve(r)) for r in rows], dtype=float)
    share, median = stats[0]
    p_share = _perm_p(stats[:, 0], share)
    p_median = _perm_p(stats[:, 1], median)
    joint = p_share if not np.isfinite(p_median) else max(p_share, p_median)
    B = len(rows)
    min_p = 1.0 / B
    reachable = min_p <= alpha
    kind = "every one of the" if exact else "the observed and"
    note = f"{kind} {B if exact else B - 1} {what}"
    note += f": the smallest attainable p is 1/{B} = {min_p:.3g}"
    if not reachable:
        note += f"; this design cannot reach p <= {alpha:g}"
    return JointTest(
        share=float(share),
        median=float(median),
        null_share=stats[:, 0],
        null_median=stats[:, 1],
        p_share=p_share,
        p_median=p_median,
        joint_p=float(joint),
        n_null=B,
        exact=bool(exact),
        min_p=min_p,
        reachable=bool(reachable),
        note=note,
    )


def _digest(args, kwargs) -> str | None:
    """sha1 of the numbers a rule reads (:func:`~msapod.studies.verdict.multiverse.rule_call`'s
    ``args`` and ``kwargs``, the text-only ``where`` left out): array values with their
    dtype and shape, and the coordinates along their dims (model names, layer numbers,
    architecture labels); None when an argument is of a kind not hashed here."""
    h = hashlib.sha1()

    def add(x) -> bool:
        if x is None or isinstance(x, bool | int | float | str):
            h.update(repr(x).encode())
        elif isinstance(x, list | tuple):
            h.update(b"[")
            if not all(add(v) for v in x):
                return False
            h.update(b"]")
        elif isinstance(x, xr.DataArray) and x.dtype.kind in "biuf":
            h.update(repr((x.dims, x.dtype.str, x.shape)).encode())
            h.update(np.ascontiguousarray(x.values).tobytes())
            for name, c in x.coords.variables.items():
                if c.ndim:  # coordinates along dims; scalar ones name the reading only
                    h.update(repr((name, c.dims, c.values.tolist())).encode())
        elif isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
            h.update(repr((x.dtype.str, x.shape)).encode())
            h.update(np.ascontiguousarray(x).tobytes())
        else:
            return False
        return True

    if not add(list(args)):
        return None
    if not add(sorted((k, v) for k, v in kwargs.items() if k != "where")):
        return None
    return h.hexdigest()


def claim_curve(
    claim: str,
    specs: Sequence[dict],
    data: Mapping,
    relabel: Callable[[Mapping, object], Mapping],
) -> Callable[[object], tuple[np.ndarray, np.ndarray]]:
    """``curve(labelling)`` for :func:`joint_test`: the claim's verdict and effect under
    each of ``specs`` (its applicable specifications) on ``relabel(data, labelling)``,
    by :func:`~msapod.studies.verdict.multiverse.evaluate`.

    A rule is a function of the numbers it reads: the curve keeps ``(holds, effect)`` per
    digest of those numbers (:func:`~msapod.studies.verdict.multiverse.rule_call`), so a
    specification or relabelling that hands the rule the same numbers as an earlier one
    (two readings finding the same window, a relabelling that leaves a claim's layers in
    place) reuses that outcome instead of running the rule again."""
    from .multiverse import rule_call

    specs = list(specs)
    memo: dict[str, tuple[bool, float]] = {}

    def one(s, d):
        got = rule_call(claim, s, d[s["zoo"]])
        if not isinstance(got, tuple):  # an Outcome: not testable under this reading
            return got.verdict == "holds", outcome_effect(got)
        rule, args, kwargs = got
        key = _digest(args, kwargs)
        if key is None or key not in memo:
            out = rule(*args, **kwargs)
            value = (out.verdict == "holds", outcome_effect(out))
            if key is None:
                return value
            memo[key] = value
        return memo[key]

    def curve(labelling):
        d = relabel(data, labelling)
        rows = [one(s, d) for s in specs]
        return (
            np.array([h for h, _ in rows], dtype=bool),
            np.array([e for _, e in rows], dtype=float),
        )

    return curve


#: The evidence variables each claim's rule reads (:func:`joint_tests` relabels only
#: these; the others never reach the rule).
CLAIM_EVIDENCE = {
    "C1": ("scale_stat_value", "scale_stat_se", "scale_stat_edge", "scale_grid"),
    "C2": ("scale_stat_value", "scale_stat_se", "scale_stat_edge", "scale_grid"),
    "C3": ("T_spec", "T_spec_se"),
    "C4": (
        "c4_share",
        "c4_reach",
        "c4_peaks",
        "c4_base",
        "c4_share_se",
        "c4_diff_se",
        "T_spec",
    ),
    "C5": ("H_star", "H_star_se"),
    "C7": ("energy", "energy_se"),
    "C8": ("T_spec", "T_spec_se"),
    "C9": ("c9_ratio", "c9_ratio_se"),
    "C10": ("t1_gap", "t1_beaten", "t1_trials"),
    "L": (),
}


def claim_view(data: Mapping | None, claim: str) -> dict | None:
    """``{zoo: ZooData}`` whose evidence holds only what ``claim``'s rule reads
    (:data:`CLAIM_EVIDENCE`; coordinates and attrs kept), so a relabelling permutes or
    swaps that and nothing else."""
    if data is None or claim not in CLAIM_EVIDENCE:
        return None if data is None else dict(data)
    out = {}
    for z, d in data.items():
        names = [n for n in CLAIM_EVIDENCE[claim] if n in d.ev]
        out[z] = _clone(d, d.ev[names], d.conv, d.losses)
    return out


#: Layer groups each layer claim reads (for the layer-label null).
LAYER_ROLES = {
    "C1": [[1, 2]],
    "C2": [[5, 6]],
    "C3": [[1, 2], [5, 6]],
    "C4": [[2], [4], [6]],
    "C5": [[1, 2], [3, 4, 5, 6]],
}
#: The null each claim's joint test uses by default.
DEFAULT_NULL = {
    "C1": "layer labels",
    "C2": "layer labels",
    "C3": "layer labels",
    "C4": "layer labels",
    "C5": "layer labels",
    "C7": "architecture labels",
    "C8": "architecture labels",
    "L": "architecture labels",
    "C9": "trained vs untrained",
}
NULL_KINDS = ("architecture labels", "layer labels", "trained vs untrained")
#: Random relabellings per claim when the exact count exceeds ``max_exact`` (others: 19,
#: the fewest with which p = 1 / 20 = 0.05 is attainable). Cost per relabelling: one
#: evaluation of every specification of the claim's curve (about 10-70 ms each on 2
#: cores; C4 and C9 have 216 specifications, C1 and C2 36, C3 and C5 4).
N_RANDOM = {"C3": 99, "C5": 99}


def _n_random(claim: str, n_random) -> int:
    """The number of random relabellings for ``claim`` (:data:`N_RANDOM` by default)."""
    if n_random is None:
        return N_RANDOM.get(claim, 19)
    if isinstance(n_random, Mapping):
        return int(n_random.get(claim, N_RANDOM.get(claim, 19)))
    return int(n_random)


def _null_labelings(claim, kind, data, untrained, labels, max_exact, n_rand, seed):
    """The relabellings of one null kind, whether they are all of them, the function that
    applies one to a zoo, and their name in words."""
    models, arch, zoo_of = labels
    if kind == "architecture labels":
        labs, exact = architecture_labelings(
            arch, groups=zoo_of, max_exact=max_exact, n_random=n_rand, seed=seed
        )

        def relabel(d, lab):
            return relabel_architecture(d, lab)

        what = "balanced architecture labellings"
    elif kind == "layer labels":
        layers = [int(v) for v in next(iter(data.values())).ev["layer"].values]
        labs, exact = layer_labelings(
            len(models),
            layers,
            LAYER_ROLES[claim],
            max_exact=max_exact,
            n_random=n_rand,
            seed=seed,
        )

        def relabel(d, p):
            return relabel_layers(d, p)

        what = "per-model layer relabellings"
    elif kind == "trained vs untrained":
        labs, exact = swap_labelings(len(models), max_exact=max_exact, n_random=n_rand, seed=seed)

        u_view = claim_view(untrained, claim)

        def relabel(d, s, u_view=u_view):
            return swap_untrained(d, u_view, s)

        what = "trained/untrained swaps"
    else:
        raise ValueError(f"nulls: expected kinds from {NULL_KINDS}, got {kind!r} for {claim}")
    return labs, exact, relabel, what


def _result_row(base: dict, res) -> dict:
    """One claim's row from its joint test: the p-values, the observed share and median
    effect, and the 5/50/95 % quantiles of their nulls."""
    q = [0.05, 0.5, 0.95]
    with np.errstate(all="ignore"):
        qs = np.nanquantile(res.null_share, q)
        qm = (
            np.nanquantile(res.null_median, q)
            if np.isfinite(res.null_median).any()
            else [np.nan] * 3
        )
    return {
        **base,
        "joint_p": res.joint_p,
        "p_share": res.p_share,
        "p_median": res.p_median,
        "share": res.share,
        "median_effect": res.median,
        **{f"null_share_q{int(100 * x):02d}": v for x, v in zip(q, qs, strict=True)},
        **{f"null_median_q{int(100 * x):02d}": v for x, v in zip(q, qm, strict=True)},
        "n_null": res.n_null,
        "exact": res.exact,
        "min_p": res.min_p,
        "reachable": res.reachable,
        "note": res.note,
    }


def _claim_row(
    claim, kind, data, specs, untrained, labels, *, alpha, max_exact, n_random, seed
) -> dict:
    """One claim's row of :func:`joint_tests`: why there is no test, or the joint test of
    its specification curve against its null."""
    from .multiverse import CLAIM_AXES
    from .multiverse import applies as _applies

    cs = [s for s in specs if s["zoo"] in data and _applies(claim, s)]
    base = {"claim": claim, "null": kind, "n_specs": len(cs)}
    if kind == "none" or not cs:
        why = "no null for this claim" if kind == "none" else "no specification"
        return {**base, "note": why}
    if kind == "trained vs untrained":
        if untrained is None:
            return {**base, "note": "untrained models not given"}
        n_ev = {z: int(d.ev.attrs.get("n_snapshots", 150)) for z, d in data.items()}
        # the untrained copies have no convergence ensembles (N = 600)
        if "n" in CLAIM_AXES.get(claim, ()):
            cs = [s for s in cs if s["n"] == n_ev[s["zoo"]]]
        base["n_specs"] = len(cs)
        if not cs:
            return {**base, "note": "no specification at the untrained ensembles' N"}
    n_rand = _n_random(claim, n_random)
    labs, exact, relabel, what = _null_labelings(
        claim, kind, data, untrained, labels, max_exact, n_rand, seed
    )
    view = claim_view(data, claim)
    res = joint_test(
        claim_curve(claim, cs, view, relabel), labs, exact=exact, alpha=alpha, what=what
    )
    return _result_row(base, res)


def joint_tests(
    data: Mapping,
    specs: Sequence[dict],
    *,
    claims: Sequence[str] | None = None,
    nulls: Mapping[str, str] | None = None,
    untrained: Mapping | None = None,
    alpha: float = 0.05,
    max_exact: int = 100,
    n_random: int | Mapping[str, int] | None = None,
    seed: int = 0,
) -> xr.Dataset:
    """The joint test of every claim's specification curve (one row per claim).

    Parameters
    ----------
    data
        ``{zoo: ZooData}`` of the trained zoos (as the specification curve uses).
    specs
        :func:`~msapod.studies.verdict.multiverse.specifications` of those zoos; each claim uses
        the ones it applies to.
    claims
        Default: every claim with a null in ``nulls``.
    nulls
        ``{claim: kind}`` (:data:`NULL_KINDS`); default :data:`DEFAULT_NULL`. Claims
        without a null (C6, C10) get ``joint_p`` NaN and say why.
    untrained
        ``{zoo: ZooData}`` of the untrained copies (:func:`null_zoo_data`), needed by
        "trained vs untrained".
    max_exact, n_random
        Every relabelling is enumerated when there are at most ``max_exact`` (4 + 4
        models: the 70 architecture labellings); otherwise the observed one and
        ``n_random`` seeded random ones (an int, or ``{claim: int}``; default
        :data:`N_RANDOM`: 19, the fewest that can reach p = 0.05, for the claims whose
        curve is expensive to re-evaluate, 99 for C3 and C5).

    Returns
    -------
    xarray.Dataset
        dim ``claim``: ``joint_p``, ``p_share``, ``p_median``, ``share``,
        ``median_effect``, ``null_share_q05/q50/q95``, ``null_median_q05/q50/q95``,
        ``n_null``, ``n_specs``, ``exact``, ``min_p``, ``reachable``, ``null`` (str),
        ``note`` (str).
    """
    from .multiverse import CLAIM_IDS

    nulls = dict(DEFAULT_NULL if nulls is None else nulls)
    claims = list(CLAIM_IDS if claims is None else claims)
    labels = (
        [m for d in data.values() for m in d.models],
        [a for d in data.values() for a in d.ev["architecture"].values.tolist()],
        [z for z, d in data.items() for _ in d.models],
    )
    rows = [
        _claim_row(
            claim,
            nulls.get(claim, "none"),
            data,
            specs,
            untrained,
            labels,
            alpha=alpha,
            max_exact=max_exact,
            n_random=n_random,
            seed=seed,
        )
        for claim in claims
    ]
    return _rows_dataset(rows)


_FLOAT_VARS = (
    "joint_p",
    "p_share",
    "p_median",
    "share",
    "median_effect",
    "null_share_q05",
    "null_share_q50",
    "null_share_q95",
    "null_median_q05",
    "null_median_q50",
    "null_median_q95",
    "min_p",
)


def _rows_dataset(rows: list[dict]) -> xr.Dataset:
    claims = [r["claim"] for r in rows]
    out = {k: ("claim", [float(r.get(k, np.nan)) for r in rows]) for k in _FLOAT_VARS}
    out["n_null"] = ("claim", [int(r.get("n_null", 0)) for r in rows])
    out["n_specs"] = ("claim", [int(r.get("n_specs", 0)) for r in rows])
    out["exact"] = ("claim", [bool(r.get("exact", False)) for r in rows])
    out["reachable"] = ("claim", [bool(r.get("reachable", False)) for r in rows])
    out["null"] = ("claim", [str(r.get("null", "none")) for r in rows])
    out["note"] = ("claim", [str(r.get("note", "")) for r in rows])
    ds = xr.Dataset(out, coords={"claim": claims})
    ds.attrs["test"] = (
        "joint test over the specification curve (Simonsohn, Simmons & Nelson 2020): share "
        "of specifications that hold and median effect against their permutation null; "
        "joint_p = max(p_share, p_median)"
    )
    return ds
