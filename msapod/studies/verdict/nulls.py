"""Null controls and a joint test over the specification curve.

Two questions the specification curve (:mod:`msapod.studies.verdict.multiverse`) cannot answer
by itself: *which structure did training create?* and *does the curve as a whole lean
for or against a claim more than chance would give?*

**Null ensembles** (measured by :mod:`msapod.studies.measure.nullfields`: the same
extraction, cache keying and evidence as for a trained zoo model), on

* ``"untrained"``: the zoo configuration's architecture with its weights at
  initialisation (:func:`~msapod.studies.measure.nullfields.untrained_model`:
  ``torch.manual_seed(cfg.seed); GPT(cfg.model)``, exactly what
  :func:`msapod.models.train.train` does before its first step), never shipped, keyed by
  the sha256 of its state dict. A claim that also holds here is not specific to
  training: an untrained causal attention, close to uniform over the past (``A(i, j) ~ 1
  / (i + 1)``), has a lag structure of its own;
* ``"shuffled"``: the *trained* model on the same snippets with the characters of each
  snippet permuted (:func:`~msapod.studies.measure.nullfields.shuffle_snippets`, seeded
  per snippet). The shuffle keeps the weights, the positions and each snippet's
  characters but destroys the order of the text (words, lines, speaker turns), so the
  lag structure that remains is what the model's positional machinery (position
  embeddings, causal normalisation, recency) makes of any input. It is the null for the
  claims about lag structure (C1, C2, C4, C7, C9: :data:`SHUFFLED_CLAIMS`): structure
  present in the text-driven fields but not here is driven by the text. The others get
  no shuffled verdict (``"—"``, :data:`SHUFFLED_NOT_APPLICABLE` says why). Its evidence
  is computed at the default reading only (:data:`MAIN_AXES`): the scorecard's
  ``shuffled`` column, not a curve;
* ``"words"``: the trained model on the same snippets with the *words* of each snippet
  permuted (:func:`msapod.models.data.shuffle_words`: spaces and line breaks stay in
  their order, every word stays whole). It keeps what the character shuffle destroys
  below the word (spelling, character n-grams, word lengths) and destroys what lies
  above it (word order, phrases, the content of lines), so a claim about lag structure
  that survives the character shuffle but not this one is driven by word-level text, one
  that survives both by the model's positional machinery. Same claims, same reading, the
  scorecard's ``words`` column.

**Joint test** (Simonsohn, Simmons & Nelson 2020, "Specification curve analysis"), on
one zoo's curve (:func:`joint_tests`; the study tests the main zoo, whose models are
relabelled among themselves). For a claim with specifications ``s = 1..S``, each
specification's effect ``e_s`` (:func:`outcome_effect`) is a signed distance of its
measured value from the claim's boundary in units of its 95 % interval half-width,
positive where it supports the claim; ``e_s > 1`` means the interval excludes the boundary
on the supporting side, ``e_s < -1`` on the other. The curve has three statistics
(:func:`curve_statistics`):

* the **median effect** ``median_s e_s``;
* the **shares** of specifications significant *for* the claim, ``#{e_s > 1} / S``, and
  *against* it, ``#{e_s < -1} / S`` (a bound at the grid's edge counts +-1, so neither;
  a specification without an effect -- not testable, or point values without an
  interval -- counts in neither share);
* **Stouffer's Z**, ``sum_s z_s / sqrt(S')`` over the ``S'`` finite effects with
  ``z_s = Z95 e_s`` (an effect in 95 % half-widths as a z value; the scale does not change
  a permutation p-value).

Their null distributions come from re-evaluating the whole curve under relabellings that
are exchangeable under the null hypothesis:

* **architecture labels** (C7, C8, L): every balanced assignment of the labels
  ``baseline``/``ega`` to the zoo's models (:func:`architecture_labelings`; 4 + 4 models
  give ``C(8, 4) = 70`` labellings, 2 + 2 give 6);
* **layer labels** (C1-C5): each model's layers relabelled independently
  (:func:`layer_labelings`), keeping only assignments the claim can distinguish (for C1,
  which 2 of 6 layers play "layers 1-2": 15 per model, 15^8 for 8 models: a seeded
  random draw of 99);
* **trained vs untrained** (C9): per model, which of the trained model and its untrained
  copy plays "trained" (:func:`swap_labelings`, ``2^M`` labellings: 256 for 8 models).

Every relabelling is enumerated when there are at most :data:`MAX_EXACT`; otherwise the
observed one and :data:`NUM_RANDOM` seeded random ones. With ``T_0`` the observed
statistic and ``T_1..T_B`` the curve's statistic under the ``B`` relabellings (the
observed one included, as row 0), each statistic gets two p-values: "for",
``#{b : T_b >= T_0} / B``, and "against", ``#{b : T_b <= T_0} / B`` (for the shares: the
share against the claim, ``#{b : A_b >= A_0} / B``). A curve consistently against the
claim gets a small p "against". Exact when every labelling is enumerated, otherwise
``(1 + #{b >= 1 : T_b >= T_0}) / (1 + B')`` (the same formula) with ``B'`` random draws.
``p_for`` (``p_against``) is the largest of the three p-values of its direction, an
intersection-union test: significant at ``alpha`` only when all three statistics are.
``joint_p`` is the two-sided p-value, twice the smaller of the two (the two directions
are two tests, and the direction is named after seeing the curve), with its
``direction``. The smallest attainable two-sided p is ``2 / B`` (ties aside), stored as
``min_p`` with ``n_null``: a design with ``2 / B > alpha`` *cannot* reach significance,
and the note says so.

Relabelling never recomputes fields or Grams: it permutes or swaps the per-model,
per-layer evidence already held in :class:`~msapod.studies.verdict.multiverse.ZooData` and
calls the claim's rule again -- where the rule reads each model (or each layer) on its own,
once per specification on every relabelling's inputs stacked along that dim
(:func:`claim_effects`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ...models.data import N_SNAPSHOTS
from ..measure.nullfields import NULLS, TEXT_NULLS, check_null, null_evidence
from ..registry import REGISTRY

__all__ = [
    "NULLS",
    "SHUFFLED_CLAIMS",
    "TEXT_NULLS",
    "JointTest",
    "architecture_labelings",
    "claim_curve",
    "claim_effects",
    "curve_statistics",
    "joint_test",
    "joint_tests",
    "layer_labelings",
    "main_axes",
    "null_verdicts",
    "null_zoo_data",
    "outcome_effect",
    "relabel_architecture",
    "relabel_layers",
    "swap_labelings",
    "swap_untrained",
]

#: The claims the shuffled-snippet null addresses: the lag structure of the fields.
SHUFFLED_CLAIMS = tuple(c.id for c in REGISTRY.values() if not c.no_shuffled)
#: Why the other claims get no shuffled verdict.
SHUFFLED_NOT_APPLICABLE = {c.id: c.no_shuffled for c in REGISTRY.values() if c.no_shuffled}


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
    reference: xr.Dataset | None = None,
):
    """A :class:`~msapod.studies.verdict.multiverse.ZooData` of ``models`` under ``null``.

    The model names are the trained ones (so the ``architecture`` coordinate and
    :func:`~msapod.studies.verdict.multiverse.evaluate` work unchanged); ``ev.attrs["null"]``
    names the null. No convergence ensembles (N = 400), no pruning study and no losses:
    those specifications and C6, L are not testable on a null. ``evidence``: per-model
    evidence to use instead of :func:`null_evidence` (tests), or the models' evidence
    already stacked along ``model`` (the shipped ``results/evidence-<null>.nc``);
    ``axes``: the readings (:func:`null_evidence`); ``reference``: C1's and C2's
    reference (the untrained models' evidence, for the shuffled null).
    """
    from ..store.cache import stack_models
    from .multiverse import ZooData, needs_window_se

    check_null(null)
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
    return ZooData(models, ev, None, None, None, reference=reference)


#: Claims a null ensemble cannot address: those not decided from fields alone (pruning,
#: C6, and the loss difference, L, need trained models).
NO_NULL_CLAIMS = tuple(c.id for c in REGISTRY.values() if c.source != "fields")


def null_verdicts(
    data, name: str = "untrained_verdict", claims: Sequence[str] | None = None
) -> xr.DataArray:
    """The default reading's verdict of every claim on a null ZooData
    (:func:`null_zoo_data`), by :func:`~msapod.studies.verdict.multiverse.evaluate` under
    :data:`~msapod.studies.verdict.multiverse.MAIN_SPEC`, the rules the trained zoo uses; ``""``
    for :data:`NO_NULL_CLAIMS`, for the claims not in ``claims`` (default: every
    other claim; the shuffled null: :data:`SHUFFLED_CLAIMS`) and, on the untrained
    models, for the claims whose reference they are (the registry's ``no_untrained``).

    Returns
    -------
    xarray.DataArray
        str, dim ``claim`` (:data:`~msapod.studies.verdict.multiverse.CLAIM_IDS`), named ``name``.
    """
    from .multiverse import CLAIM_IDS, MAIN_SPEC, evaluate

    null = str(data.ev.attrs.get("null", ""))
    keep = [
        c
        for c in CLAIM_IDS
        if c not in NO_NULL_CLAIMS
        and (claims is None or c in claims)
        and not (null == "untrained" and REGISTRY[c].no_untrained)
    ]
    spec = {"zoo": "", **MAIN_SPEC}
    words = [evaluate(c, spec, data).verdict if c in keep else "" for c in CLAIM_IDS]
    return xr.DataArray(
        np.asarray(words, dtype=str),
        dims="claim",
        coords={"claim": list(CLAIM_IDS)},
        name=name,
        attrs={"null": null, "reading": "default reading"},
    )


# ---------------------------------------------------------------------------------------
# relabellings


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
# effects

#: Signs of the stated architecture differences (EGA - baseline) per claim; ``None``:
#: the same sign in every layer.
DIFF_SIGN = {c.id: dict(c.signs) for c in REGISTRY.values() if c.signs}
#: Signs of the stated early/late contrasts (the rule's ``contrast``): C3 late - early
#: T_spec < 0, C5 early - later H* > 0; C1/C2 (late - early scale) > 0.
CONTRAST_SIGN = {c.id: c.contrast_sign for c in REGISTRY.values() if c.contrast_sign}
#: Claims on positive quantities (scales, T_spec, H*): distances on the log scale.
LOG_CLAIMS = {c.id for c in REGISTRY.values() if c.log}


def _standardised(value, lower, upper, low=-np.inf, high=np.inf, log=False):
    """:func:`msapod.studies.verdict.rules.standardised`, NaN for a point value (an
    interval of zero width: no effect without an interval)."""
    from .rules import standardised

    z = standardised(value, lower, upper, low, high, log)
    with np.errstate(invalid="ignore"):
        point = np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float) == 0
    return np.where(point, np.nan, z)


def _case_effects(claim, diff=None, contrast=None, stat=None, stat_range=None) -> np.ndarray:
    """The per-case effects of one outcome from plain arrays (:func:`_outcome_arrays`):
    ``diff`` ``(value, lower, upper, layers)`` per layer (``layers`` None for a single
    difference), ``contrast`` ``(value, lower, upper, models)`` per model, ``stat``
    ``(value, lower, upper, layers, models)`` per ``(model, layer)``; ``stat_range``
    ``(low, high, log)`` where the rule read ``stat`` against another range than the
    claim's (C1 and C2's dominant-scale reading). See :func:`outcome_effect`."""
    from .rules import THRESHOLDS

    if claim == "C9":  # the ratio's intervals as its rule reads them (per layer over seeds)
        cases = diff if diff is not None else stat
        if cases is None:
            return np.array([])
        low, high = THRESHOLDS[claim]
        return np.ravel(_standardised(*cases[:3], low, high, log=claim in LOG_CLAIMS))
    vals = []
    if diff is not None and claim in DIFF_SIGN:
        signs = DIFF_SIGN[claim]
        value, lower, upper, layers = (np.atleast_1d(x) if x is not None else x for x in diff)
        sign = np.full(value.shape, float(signs.get(None, np.nan)))
        if layers is not None:
            sign = np.array([signs.get(int(v), signs.get(None, np.nan)) for v in layers], float)
        vals.append(sign * _standardised(value, lower, upper, low=0.0))
    if diff is None and contrast is not None and claim in CONTRAST_SIGN:
        value, lower, upper = contrast[:3]
        vals.append(CONTRAST_SIGN[claim] * _standardised(value, lower, upper, low=0.0))
    if diff is None and stat is not None and claim in THRESHOLDS:
        low, high, log = stat_range or (*THRESHOLDS[claim], claim in LOG_CLAIMS)
        layers = REGISTRY[claim].layers if claim in REGISTRY else None
        value, lower, upper, labels = stat[:4]
        if layers is not None and labels is not None:
            cols = np.isin(labels, layers)
            value, lower, upper = value[..., cols], lower[..., cols], upper[..., cols]
        vals.append(_standardised(value, lower, upper, low, high, log=log))
    return np.concatenate([np.ravel(v) for v in vals]) if vals else np.array([])


def _median(z) -> float:
    z = np.asarray(z, dtype=float).ravel()
    z = z[np.isfinite(z)]
    return float(np.median(z)) if z.size else float("nan")


def _outcome_arrays(outcome) -> dict:
    """The per-case numbers of an outcome as plain arrays (:func:`_case_effects`), with
    the layers and models they belong to (None without that dim); ``stat`` with its
    models first and its layers last."""
    out = {}

    def coord(x, name):
        return x[name].values if name in x.dims else None

    if outcome.diff is not None:
        d = outcome.diff
        values = (np.ravel(d[k].values) for k in ("value", "lower", "upper"))
        out["diff"] = (*values, coord(d["value"], "layer"))
    if outcome.contrast is not None:
        c = outcome.contrast
        values = (np.ravel(c[k].values) for k in ("value", "lower", "upper"))
        out["contrast"] = (*values, coord(c["value"], "model"))
    if outcome.stat is not None:
        s = outcome.stat
        rest = [d for d in s.dims if d not in ("model", "layer")]
        dims = ["model"] * ("model" in s.dims) + rest + ["layer"] * ("layer" in s.dims)
        values = (x.variable.transpose(*dims).values for x in (s, outcome.lower, outcome.upper))
        out["stat"] = (*values, coord(s, "layer"), coord(s, "model"))
        if "range" in s.attrs:
            out["stat_range"] = (*s.attrs["range"], bool(s.attrs.get("log", False)))
    return out


def outcome_effect(outcome) -> float:
    """The signed, unit-free effect of one specification's outcome (positive supports
    the claim); NaN when the outcome has none.

    ``outcome.extra["effect"]`` if the rule sets one (C4, C9); otherwise the median over
    the claim's cases of: the architecture difference times its stated sign over its
    interval half-width (C7, C8, L); otherwise both the early/late contrast likewise (C1,
    C2, C3, C5, when the rule reports one) and the distance of the key statistic from the
    claim's threshold (:data:`~msapod.studies.verdict.rules.THRESHOLDS`) over its
    half-width (log scale for positive quantities), in the layers the claim names; for C9
    as its rule reads it, the ratio's interval (per layer over seeds, else per model and
    layer) against the threshold on the log scale. A case with an interval of zero
    width (a point value) has no effect; a bound (a maximum at the grid's edge, a
    half-line) counts +-1. An interval that excludes the claim's boundary gives
    ``|effect| > 1``.
    """
    if "effect" in outcome.extra:
        return float(outcome.extra["effect"])
    return _median(_case_effects(outcome.claim, **_outcome_arrays(outcome)))


# ---------------------------------------------------------------------------------------
# the joint test

#: A specification is significant for the claim when its effect exceeds this, against it
#: below minus this: the 95 % interval excludes the claim's boundary.
SIGNIFICANT = 1.0
#: The statistics of a curve (:func:`curve_statistics`).
STATISTICS = ("median_effect", "share_for", "share_against", "stouffer_z")
#: The permutation p-values: name, statistic and whether larger values are more extreme.
P_VALUES = {
    "p_median_for": ("median_effect", True),
    "p_median_against": ("median_effect", False),
    "p_share_for": ("share_for", True),
    "p_share_against": ("share_against", True),
    "p_stouffer_for": ("stouffer_z", True),
    "p_stouffer_against": ("stouffer_z", False),
}
#: The quantiles of each statistic's null in :func:`joint_tests`.
QUANTILES = (0.05, 0.5, 0.95)
#: Random relabellings where the exact count exceeds ``max_exact``: each direction's
#: p >= 1 / 100 = 0.01, the two-sided p >= 0.02.
NUM_RANDOM = 99
#: The largest number of relabellings enumerated exactly (the 256 trained/untrained
#: swaps of 8 models; not the 15^8 per-model layer relabellings).
MAX_EXACT = 1000


def curve_statistics(effects) -> dict[str, np.ndarray]:
    """The joint test's statistics of specification curves ``effects (..., S)``.

    ``median_effect``: the median finite effect; ``share_for`` / ``share_against``: the
    share of the ``S`` specifications with effect ``> SIGNIFICANT`` / ``< -SIGNIFICANT``
    (a NaN effect counts in neither); ``stouffer_z``: ``sum_s z_s / sqrt(S')`` over the
    ``S'`` finite effects, ``z_s = Z95 * effect_s`` (an effect in half-widths of a 95 %
    interval, as a z value). Each is NaN for a curve without a finite effect (the
    shares: 0).
    """
    from .claims import Z95

    e = np.asarray(effects, dtype=float)
    if e.shape[-1] < 1:
        raise ValueError(f"effects: expected >= 1 specification, got shape {e.shape}")
    finite = np.isfinite(e)
    n = finite.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a curve without a finite effect
        median = np.nanmedian(np.where(finite, e, np.nan), -1)
        stouffer = np.where(n > 0, np.where(finite, Z95 * e, 0.0).sum(-1) / np.sqrt(n), np.nan)
    return {
        "median_effect": median,
        "share_for": (e > SIGNIFICANT).sum(-1) / e.shape[-1],
        "share_against": (e < -SIGNIFICANT).sum(-1) / e.shape[-1],
        "stouffer_z": stouffer,
    }


def _perm_p(null: np.ndarray, observed: float, larger: bool) -> float:
    """``#{b : T_b >= T_0} / B`` (``larger``; else ``<=``), row 0 the observed labelling;
    NaN rows never reach the observed; NaN when the observed statistic is."""
    if not np.isfinite(observed):
        return float("nan")
    with np.errstate(invalid="ignore"):
        hit = null >= observed - 1e-12 if larger else null <= observed + 1e-12
    hit = np.where(np.isfinite(null), hit, False)
    hit[0] = True
    return float(hit.mean())


def _largest(ps) -> float:
    ps = [p for p in ps if np.isfinite(p)]
    return max(ps) if ps else float("nan")


@dataclass
class JointTest:
    """A claim's specification curve against its null (:func:`joint_test`).

    Attributes
    ----------
    observed
        :func:`curve_statistics` of the observed curve (floats, :data:`STATISTICS`).
    null
        The same statistics under every relabelling, row 0 the observed one.
    p
        The permutation p-values of :data:`P_VALUES` ("for": the null at least as large
        as observed; "against": the median and Stouffer's Z at least as small, the
        share against at least as large).
    p_for, p_against
        Intersection-union summaries: the largest of the three p-values of a direction
        (significant at ``alpha`` only when all three statistics are).
    direction, joint_p
        The direction with the smaller summary (a tie: the sign of the median effect)
        and the two-sided p-value, ``min(1, 2 min(p_for, p_against))``.
    n_null, exact, min_p, reachable
        Relabellings used (the observed included), whether they are every one, the
        smallest attainable two-sided p (``2 / n_null``) and whether it is ``<= alpha``.
    n_effects
        Specifications of the observed curve with a finite effect.
    note
        The design and its limit in plain words.
    """

    observed: dict
    null: dict
    p: dict
    p_for: float
    p_against: float
    direction: str
    joint_p: float
    n_null: int
    exact: bool
    min_p: float
    reachable: bool
    n_effects: int
    note: str = ""
    extra: dict = field(default_factory=dict)


def joint_test(
    effects, *, exact: bool = True, alpha: float = 0.05, what: str = "relabellings"
) -> JointTest:
    """Test a specification curve against the curves under relabellings.

    Parameters
    ----------
    effects
        ``(n_labelings, n_specs)``: per relabelling (row 0 the observed labelling) the
        effect of every specification (:func:`outcome_effect`; :func:`claim_effects`).
    exact
        Whether the rows are every relabelling (else the observed one and seeded random
        draws: ``p = (1 + #{b >= 1 : T_b >= T_0}) / (1 + B')``, the same formula).
    alpha
        Level for ``reachable`` and the note.
    what
        The relabellings in words (for the note).
    """
    e = np.asarray(effects, dtype=float)
    if e.ndim != 2 or e.shape[0] < 2:
        raise ValueError(
            f"effects: expected (the observed and >= 1 more labelling, spec), got {e.shape}"
        )
    null = curve_statistics(e)
    observed = {k: float(v[0]) for k, v in null.items()}
    p = {k: _perm_p(null[s], observed[s], larger) for k, (s, larger) in P_VALUES.items()}
    p_for = _largest(v for k, v in p.items() if k.endswith("_for"))
    p_against = _largest(v for k, v in p.items() if k.endswith("_against"))
    n_effects = int(np.isfinite(e[0]).sum())
    if n_effects == 0:
        direction = ""
    elif p_for != p_against:
        direction = "for" if p_for < p_against else "against"
    else:
        direction = "against" if observed["median_effect"] < 0 else "for"
    B = e.shape[0]
    min_p = min(1.0, 2.0 / B)
    kind = "every one of the" if exact else "the observed and"
    note = (
        f"{kind} {B if exact else B - 1} {what}: the smallest attainable two-sided p is "
        f"2/{B} = {min_p:.2g}"
    )
    if min_p > alpha:
        note += f"; this design cannot reach p <= {alpha:g}"
    return JointTest(
        observed=observed,
        null=null,
        p=p,
        p_for=p_for,
        p_against=p_against,
        direction=direction,
        joint_p=min(1.0, 2.0 * min(p_for, p_against)) if direction else float("nan"),
        n_null=B,
        exact=bool(exact),
        min_p=min_p,
        reachable=bool(min_p <= alpha),
        n_effects=n_effects,
        note=note,
    )


# ---------------------------------------------------------------------------------------
# the curve under relabellings


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
) -> Callable[[object], np.ndarray]:
    """``curve(labelling)``: the effect (:func:`outcome_effect`) of each of ``specs`` (the
    claim's applicable specifications) on ``relabel(data, labelling)``, by
    :func:`~msapod.studies.verdict.multiverse.evaluate`: one relabelling at a time, the
    reference :func:`claim_effects` checks its stacked evaluation against.

    A rule is a function of the numbers it reads: the curve keeps the effect per digest of
    those numbers (:func:`~msapod.studies.verdict.multiverse.rule_call`), so a
    specification or relabelling that hands the rule the same numbers as an earlier one
    (two readings finding the same window, a relabelling that leaves a claim's layers in
    place) reuses that effect instead of running the rule again."""
    from .multiverse import rule_call

    specs = list(specs)
    memo: dict[str, float] = {}

    def one(s, d) -> float:
        got = rule_call(claim, s, d[s["zoo"]])
        if not isinstance(got, tuple):  # an Outcome: not testable under this reading
            return outcome_effect(got)
        rule, args, kwargs = got
        key = _digest(args, kwargs)
        if key is None:
            return outcome_effect(rule(*args, **kwargs))
        if key not in memo:
            memo[key] = outcome_effect(rule(*args, **kwargs))
        return memo[key]

    def curve(labelling):
        d = relabel(data, labelling)
        return np.array([one(s, d) for s in specs], dtype=float)

    return curve


#: The evidence variables each claim's rule reads (:func:`joint_tests` relabels only
#: these; the others never reach the rule).
CLAIM_EVIDENCE = {c.id: c.evidence for c in REGISTRY.values() if c.evidence or c.null}


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
LAYER_ROLES = {c.id: [list(g) for g in c.layer_roles] for c in REGISTRY.values() if c.layer_roles}
#: The null each claim's joint test uses by default.
DEFAULT_NULL = {c.id: c.null for c in REGISTRY.values() if c.null}
NULL_KINDS = ("architecture labels", "layer labels", "trained vs untrained")
#: The dims along which :func:`claim_effects` tries to stack relabelled copies of a
#: rule's inputs into one call.
STACK_DIMS = ("model", "layer")


class _NotStackable(Exception):
    """Relabelled copies of a rule's inputs or outcome cannot be stacked along a dim."""


def _arch_order(observed: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The model order that puts, in the slots of each observed label, the models
    ``labels`` gives that label: permuting the values by it is relabelling the models."""
    order = np.empty(observed.size, dtype=int)
    for lab in set(observed.tolist()):
        order[observed == lab] = np.flatnonzero(labels == lab)
    return order


def _relabelled(kind: str, v: np.ndarray, u, lab, arch: np.ndarray, has_layer: bool):
    """One relabelling's values of a rule input ``v`` (model first, then layer where it
    has one; ``u``: the untrained copy's values, for the swap)."""
    if kind == "layer labels":
        return v[np.arange(v.shape[0])[:, None], np.asarray(lab)] if has_layer else v
    if kind == "architecture labels":
        return v[_arch_order(arch, np.asarray(lab).astype(arch.dtype))]
    mask = np.asarray(lab, dtype=bool).reshape((-1,) + (1,) * (v.ndim - 1))
    return np.where(mask, u, v)


def _stack_input(x, u, kind: str, labelings, dim: str, layers: list, arch: np.ndarray):
    """Rule input ``x`` under each of ``labelings``, stacked along ``dim`` into one
    DataArray (model names ``"<model>|<b>"``, or layers ``1..B * n_layers``); ``x``
    itself where it carries no model (a number, a text)."""
    if x is None or isinstance(x, bool | int | float | str | tuple):
        return x
    if not isinstance(x, xr.DataArray) or "model" not in x.dims:
        raise _NotStackable(f"an input of type {type(x).__name__} without a model dim")
    has_layer = "layer" in x.dims
    if has_layer and [int(v) for v in x["layer"].values] != layers:
        raise _NotStackable("an input whose layers are not the zoo's")
    rest = [d for d in x.dims if d not in ("model", "layer")]
    order = ["model", *(["layer"] if has_layer else []), *rest]
    v = x.variable.transpose(*order).values
    uv = None
    if kind == "trained vs untrained":
        if not isinstance(u, xr.DataArray) or set(u.dims) != set(x.dims):
            raise _NotStackable("an input the untrained copy does not have alike")
        uv = u.variable.transpose(*order).values
    blocks = [_relabelled(kind, v, uv, lab, arch, has_layer) for lab in labelings]
    coords = {d: x[d].values for d in rest if d in x.coords}
    models = x["model"].values
    if dim == "model":
        data = np.concatenate(blocks, axis=0)
        coords["model"] = [f"{m}|{b}" for b in range(len(blocks)) for m in models]
        if has_layer:
            coords["layer"] = x["layer"].values
        if "architecture" in x.coords:
            coords["architecture"] = ("model", np.tile(x["architecture"].values, len(blocks)))
    else:
        if not has_layer:
            raise _NotStackable("an input without a layer dim")
        data = np.concatenate(blocks, axis=1)
        coords["model"] = models
        coords["layer"] = np.arange(1, data.shape[1] + 1)
        if "architecture" in x.coords:
            coords["architecture"] = ("model", x["architecture"].values)
    return xr.DataArray(data, dims=order, coords=coords)


def _block_effects(claim: str, out, dim: str, n_blocks: int, layers: list) -> np.ndarray:
    """Per relabelling, the effect of its cases in ``out``, the outcome of the stacked
    call (:func:`_case_effects`: cases never mix relabellings when the rule reads each
    model, or each layer, on its own)."""
    a = _outcome_arrays(out)
    L = len(layers)
    if dim == "model":
        if "diff" in a:
            raise _NotStackable("the outcome aggregates over the models")

        def block_of(models):
            return np.array([int(str(m).rsplit("|", 1)[1]) for m in models])

        c = a.get("contrast")
        s = a.get("stat")
        if (c is not None and c[3] is None) or (s is not None and s[4] is None):
            raise _NotStackable("the outcome has no models")
        cb = block_of(c[3]) if c is not None else None
        sb = block_of(s[4]) if s is not None else None
        effects = []
        for b in range(n_blocks):
            kw = {"stat_range": a.get("stat_range")}
            if c is not None:
                kw["contrast"] = (*(x[cb == b] for x in c[:3]), None)
            if s is not None:
                kw["stat"] = (*(x[sb == b] for x in s[:3]), s[3], None)
            effects.append(_median(_case_effects(claim, **kw)))
        return np.asarray(effects)
    if "contrast" in a:
        raise _NotStackable("the outcome aggregates over the layers")
    d, s = a.get("diff"), a.get("stat")
    if (d is not None and d[3] is None) or (s is not None and s[3] is None):
        raise _NotStackable("the outcome has no layers")
    pos = {k: (np.asarray(x[3], dtype=int) - 1) for k, x in (("diff", d), ("stat", s)) if x}
    label = {k: np.asarray(layers)[p % L] for k, p in pos.items()}
    effects = []
    for b in range(n_blocks):
        kw = {"stat_range": a.get("stat_range")}
        if d is not None:
            m = pos["diff"] // L == b
            kw["diff"] = (*(x[m] for x in d[:3]), label["diff"][m])
        if s is not None:
            m = pos["stat"] // L == b
            kw["stat"] = (*(x[..., m] for x in s[:3]), label["stat"][m], s[4])
        effects.append(_median(_case_effects(claim, **kw)))
    return np.asarray(effects)


def _stacked_curve(claim, spec, view, u_view, kind, labelings, dim) -> np.ndarray:
    """The effect of one specification under each of ``labelings`` from one call of the
    rule on its inputs relabelled and stacked along ``dim``."""
    from .multiverse import rule_call

    d = view[spec["zoo"]]
    got = rule_call(claim, spec, d)
    if not isinstance(got, tuple):  # not testable under this reading, whatever the labels
        return np.full(len(labelings), outcome_effect(got))
    rule, args, kwargs = got
    u_args, u_kwargs = [None] * len(args), {}
    if kind == "trained vs untrained":
        u_got = rule_call(claim, spec, u_view[spec["zoo"]])
        if not isinstance(u_got, tuple):
            raise _NotStackable("the untrained copy is not testable under this reading")
        _, u_args, u_kwargs = u_got
    layers = [int(v) for v in d.ev["layer"].values]
    arch = np.asarray(d.ev["architecture"].values) if "architecture" in d.ev.coords else None

    def stack(x, u):
        return _stack_input(x, u, kind, labelings, dim, layers, arch)

    out = rule(
        *(stack(x, u) for x, u in zip(args, u_args, strict=True)),
        **{k: stack(v, u_kwargs.get(k)) for k, v in kwargs.items()},
    )
    return _block_effects(claim, out, dim, len(labelings), layers)


def _relabel_function(kind: str, u_view):
    """The function that applies one relabelling of ``kind`` to ``{zoo: ZooData}``."""
    if kind == "architecture labels":
        return relabel_architecture
    if kind == "layer labels":
        return relabel_layers

    def swap(d, s, u_view=u_view):
        return swap_untrained(d, u_view, s)

    return swap


def _c4_seed_curve(specs, view, labelings, relabel) -> np.ndarray:
    """C4's effects over seeds under every relabelling at once: the rule's own steps
    (:func:`~msapod.studies.verdict.rules.rule_c4` over seeds: its grid of cases, the means
    over seeds with their intervals and the cases' effects) on the inputs of every
    relabelling side by side, each relabelling's layers 2, 4, 6 as three more layers; each
    relabelling's effect the median of its own layers'."""
    from . import rules
    from .multiverse import CLAIM_AXES

    axes = list(CLAIM_AXES["C4"])
    names = ("c4_share", "c4_reach", "c4_base")
    lags = sorted(rules.PAPER_LAGS)
    blocks, c4 = [], None
    for lab in labelings:  # each relabelling's inputs, (model, layer 2/4/6, reading...)
        c4 = relabel(view, lab)[specs[0]["zoo"]].c4()
        pos = [int(np.flatnonzero(c4["layer"].values == L)[0]) for L in lags]
        blocks.append({n: c4[n].transpose("model", "layer", *axes).values[:, pos] for n in names})
    coords = {a: c4[a].values.tolist() for a in axes}
    n, k = len(blocks), len(lags)
    block_of = np.repeat(np.arange(n), k)
    out = np.empty((n, len(specs)))
    for j, spec in enumerate(specs):
        ix = (slice(None), slice(None), *(coords[a].index(spec[a]) for a in axes))
        share, reach, base = (
            xr.DataArray(
                np.concatenate([b[name][ix] for b in blocks], axis=1),
                dims=("model", "layer"),
                coords={"layer": np.arange(1, n * k + 1)},
            )
            for name in names
        )
        g = rules._c4_grid(share, reach, base, None, list(range(1, n * k + 1)))
        cases = rules._c4_seed_cases(g, share)
        z = rules._c4_cells(cases, True)[3]
        kept = block_of[cases.keep]
        out[:, j] = [_median(z[kept == b]) for b in range(n)]
    return out


def _evaluations(claim, view, u_view, kind, relabel) -> dict:
    """The evaluations of a curve under every relabelling at once that
    :func:`claim_effects` tries, in order: ``{how: f(specs, labelings) -> (B, S)}``."""
    out = {
        f"stacked along {dim}": lambda specs, labs, dim=dim: np.stack(
            [_stacked_curve(claim, s, view, u_view, kind, labs, dim) for s in specs], axis=1
        )
        for dim in STACK_DIMS
    }
    if claim == "C4":  # read at layers 2, 4, 6 against each layer's own range
        out["its rule's steps over seeds, side by side"] = lambda specs, labs: _c4_seed_curve(
            specs, view, labs, relabel
        )
    return out


def _checked(evaluations: dict, claim, specs, view, labelings, relabel) -> str | None:
    """The first of ``evaluations`` that gives the effects of one relabelling at a time
    (:func:`claim_curve`, the rule's own outcome) on the first and last specifications
    under the observed, the next and the last relabelling; None if none does or there is
    no finite effect to compare."""
    probe = [specs[0]] + ([specs[-1]] if len(specs) > 1 else [])
    check = [labelings[r] for r in sorted({0, 1, len(labelings) - 1})]
    curve = claim_curve(claim, probe, view, relabel)
    want = np.array([curve(lab) for lab in check])
    if not np.isfinite(want).any():
        return None
    for how, evaluate in evaluations.items():
        try:
            got = evaluate(probe, check)
        except (_NotStackable, AttributeError, KeyError, ValueError, IndexError):
            continue  # not this rule's form
        if np.allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True):
            return how
    return None


def claim_effects(
    claim: str,
    specs: Sequence[dict],
    data: Mapping,
    kind: str,
    labelings: Sequence,
    untrained: Mapping | None = None,
    *,
    stack: bool = True,
) -> tuple[np.ndarray, str]:
    """The effect of every specification of ``claim``'s curve under every relabelling.

    A rule that reads each model on its own (C1, C2, C3, C5: per-model intervals and
    contrasts) or each layer on its own (C7, C8: architecture differences per layer; C9:
    ratios per layer over seeds) is called once per specification, on its inputs under
    every relabelling stacked along that dim (:data:`STACK_DIMS`), and each relabelling's
    effect is the median of its own cases (:func:`outcome_effect`). C4, read at layers 2,
    4 and 6 against each layer's own range, runs its rule's steps over seeds once per
    specification on every relabelling's layers side by side. None of this is assumed: an
    evaluation is used only when it reproduces the effects of :func:`claim_curve` (one
    relabelling at a time, the rule's own outcome) on a few relabellings; otherwise (L)
    every relabelling is evaluated on its own.

    Parameters
    ----------
    claim, specs
        The claim and its applicable specifications.
    data, untrained
        ``{zoo: ZooData}`` of the trained zoo and (for "trained vs untrained") its
        untrained copies.
    kind, labelings
        The null (:data:`NULL_KINDS`) and its relabellings, row 0 the observed one.
    stack
        False: one relabelling at a time (the reference).

    Returns
    -------
    effects : numpy.ndarray
        ``(n_labelings, n_specs)``.
    how : str
        "stacked along model", "stacked along layer", "its rule's steps over seeds, side
        by side" or "one relabelling at a time".
    """
    if kind not in NULL_KINDS:
        raise ValueError(f"kind: expected one of {NULL_KINDS}, got {kind!r}")
    specs = list(specs)
    view = claim_view(data, claim)
    u_view = claim_view(untrained, claim) if kind == "trained vs untrained" else None
    relabel = _relabel_function(kind, u_view)
    if stack:
        evaluations = _evaluations(claim, view, u_view, kind, relabel)
        how = _checked(evaluations, claim, specs, view, labelings, relabel)
        if how is not None:
            return evaluations[how](specs, labelings), how
    curve = claim_curve(claim, specs, view, relabel)
    return np.array([curve(lab) for lab in labelings]), "one relabelling at a time"


# ---------------------------------------------------------------------------------------
# the joint test of every claim


def _labelings(claim, kind, d, max_exact, n_random, seed):
    """The relabellings of one null kind on one zoo's ZooData ``d``, whether they are
    every one, and their name in words."""
    n = len(d.models)
    kw = dict(max_exact=max_exact, n_random=n_random, seed=seed)
    if kind == "architecture labels":
        labs, exact = architecture_labelings(d.ev["architecture"].values.tolist(), **kw)
        return labs, exact, "balanced architecture labellings"
    if kind == "layer labels":
        layers = [int(v) for v in d.ev["layer"].values]
        labs, exact = layer_labelings(n, layers, LAYER_ROLES[claim], **kw)
        return labs, exact, f"{'' if exact else 'random '}per-model layer relabellings"
    labs, exact = swap_labelings(n, **kw)
    return labs, exact, "trained/untrained swaps"


def _result_row(base: dict, res: JointTest) -> dict:
    """One claim's row from its joint test: the statistics with their p-values, the
    summaries, and the 5/50/95 % quantiles of each statistic's null."""
    row = {**base, "joint_p": res.joint_p, "direction": res.direction}
    row.update(p_for=res.p_for, p_against=res.p_against, **res.p, **res.observed)
    for name, null in res.null.items():
        finite = null[np.isfinite(null)]
        qs = np.quantile(finite, QUANTILES) if finite.size else [np.nan] * len(QUANTILES)
        row.update(
            {
                f"null_{name}_q{round(100 * q):02d}": float(v)
                for q, v in zip(QUANTILES, qs, strict=True)
            }
        )
    row.update(
        n_null=res.n_null,
        exact=res.exact,
        min_p=res.min_p,
        reachable=res.reachable,
        n_effects=res.n_effects,
        note=f"zoo {base['zoo']}: {res.note}"
        + ("" if res.n_effects else "; no specification has an effect"),
    )
    return row


def _claim_row(
    claim, kind, zoo, data, specs, untrained, *, alpha, max_exact, n_random, seed, stack
):
    """One claim's row of :func:`joint_tests`: why there is no test, or the joint test of
    its specification curve on zoo ``zoo`` against its null."""
    from .multiverse import CLAIM_AXES
    from .multiverse import applies as _applies

    cs = [s for s in specs if s["zoo"] == zoo and _applies(claim, s)]
    base = {"claim": claim, "null": kind, "zoo": zoo, "n_specs": len(cs)}
    if kind == "none" or not cs:
        return {**base, "note": "no null for this claim" if kind == "none" else "no specification"}
    if kind == "trained vs untrained":
        if untrained is None:
            return {**base, "note": "untrained models not given"}
        # the untrained copies have no convergence ensembles (N = 400)
        if "n" in CLAIM_AXES.get(claim, ()):
            n_ev = int(data[zoo].ev.attrs.get("n_snapshots", N_SNAPSHOTS))
            cs = [s for s in cs if s["n"] == n_ev]
        base["n_specs"] = len(cs)
        if not cs:
            return {**base, "note": "no specification at the untrained ensembles' N"}
    n_rand = int(n_random.get(claim, NUM_RANDOM) if isinstance(n_random, Mapping) else n_random)
    labs, exact, what = _labelings(claim, kind, data[zoo], max_exact, n_rand, seed)
    effects, how = claim_effects(claim, cs, data, kind, labs, untrained, stack=stack)
    res = joint_test(effects, exact=exact, alpha=alpha, what=what)
    res.extra["how"] = how
    return _result_row(base, res)


def joint_tests(
    data: Mapping,
    specs: Sequence[dict],
    *,
    zoo: str | None = None,
    claims: Sequence[str] | None = None,
    nulls: Mapping[str, str] | None = None,
    untrained: Mapping | None = None,
    alpha: float = 0.05,
    max_exact: int = MAX_EXACT,
    n_random: int | Mapping[str, int] = NUM_RANDOM,
    seed: int = 0,
    stack: bool = True,
) -> xr.Dataset:
    """The joint test of every claim's specification curve on one zoo (one row per claim).

    Parameters
    ----------
    data
        ``{zoo: ZooData}`` of the trained zoos (as the specification curve uses).
    specs
        :func:`~msapod.studies.verdict.multiverse.specifications` of those zoos; each claim
        uses the ones of ``zoo`` it applies to.
    zoo
        The zoo whose curve is tested and whose models are relabelled (default: the first
        of ``data``, the main zoo).
    claims
        Default: every claim (those without a null, C6 and C10, say why).
    nulls
        ``{claim: kind}`` (:data:`NULL_KINDS`); default :data:`DEFAULT_NULL`.
    untrained
        ``{zoo: ZooData}`` of the untrained copies (:func:`null_zoo_data`), needed by
        "trained vs untrained".
    alpha
        Level for ``reachable``.
    max_exact, n_random, seed
        Every relabelling is enumerated when there are at most ``max_exact`` (the 70
        architecture labellings of 4 + 4 models, the 256 swaps of 8 models); otherwise the
        observed one and ``n_random`` seeded random ones (an int, or ``{claim: int}``;
        99 by default: two-sided p >= 0.02).
    stack
        Stack the relabellings into one call of the rule where that reproduces the rule
        (:func:`claim_effects`); False: one relabelling at a time.

    Returns
    -------
    xarray.Dataset
        dim ``claim``: ``joint_p`` (the smaller of ``p_for`` and ``p_against``) and
        ``direction`` ("for", "against"; "" without a test); ``p_for``, ``p_against``
        (the intersection-union summaries); the statistics :data:`STATISTICS` of the
        observed curve with their p-values :data:`P_VALUES`; ``null_<statistic>_q05/q50/
        q95``; ``n_null``, ``exact``, ``min_p``, ``reachable``, ``n_specs``,
        ``n_effects``; ``null``, ``zoo`` and ``note`` (str). NaN and "" where a claim has
        no test (the note says why).
    """
    from .multiverse import CLAIM_IDS

    zoo = next(iter(data)) if zoo is None else zoo
    if zoo not in data:
        raise ValueError(f"zoo: expected one of {list(data)}, got {zoo!r}")
    nulls = dict(DEFAULT_NULL if nulls is None else nulls)
    one = {zoo: data[zoo]}
    u_one = {zoo: untrained[zoo]} if untrained and zoo in untrained else None
    kw = dict(alpha=alpha, max_exact=max_exact, n_random=n_random, seed=seed, stack=stack)
    rows = [
        _claim_row(claim, nulls.get(claim, "none"), zoo, one, specs, u_one, **kw)
        for claim in (CLAIM_IDS if claims is None else claims)
    ]
    ds = _rows_dataset(rows)
    ds.attrs["zoo"] = zoo
    return ds


#: The float variables of :func:`joint_tests`.
_FLOAT_VARS = (
    "joint_p",
    "p_for",
    "p_against",
    *P_VALUES,
    *STATISTICS,
    *(f"null_{s}_q{round(100 * q):02d}" for s in STATISTICS for q in QUANTILES),
    "min_p",
)


def _rows_dataset(rows: list[dict]) -> xr.Dataset:
    out = {k: ("claim", [float(r.get(k, np.nan)) for r in rows]) for k in _FLOAT_VARS}
    for k in ("n_null", "n_specs", "n_effects"):
        out[k] = ("claim", [int(r.get(k, 0)) for r in rows])
    for k in ("exact", "reachable"):
        out[k] = ("claim", [bool(r.get(k, False)) for r in rows])
    for k, default in (("direction", ""), ("null", "none"), ("zoo", ""), ("note", "")):
        out[k] = ("claim", [str(r.get(k, default)) for r in rows])
    ds = xr.Dataset(out, coords={"claim": [r["claim"] for r in rows]})
    ds.attrs["test"] = JOINT_TEST
    return ds


#: The joint test in one sentence (the datasets' attribute).
JOINT_TEST = (
    "joint test over one zoo's specification curve (Simonsohn, Simmons & Nelson 2020): the "
    "median effect, the shares of specifications significant for and against the claim and "
    "Stouffer's Z, each against its permutation null in both directions; p_for and "
    "p_against the largest p of a direction (intersection-union), joint_p the smaller of "
    "the two, in the direction named"
)
