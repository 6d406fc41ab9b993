"""The specification curve: every claim under every reasonable reading of the paper.

The paper leaves many choices open (the book's page "The paper and its open choices").
Following the specification-curve analysis of Simonsohn, Simmons & Nelson (2020) and the
multiverse analysis of Steegen et al. (2016), each claim is decided by its rule
(:mod:`msapod.studies.verdict.rules`) under every combination of the readings that affect it, and
the share of specifications giving each verdict is reported next to the verdict of the
**book's default reading**.

Axes (readings; the default first) and the claims each affects:

* ``zoo``: every trained zoo of :data:`msapod.models.zoo.ZOOS` -- all claims;
* ``field``: ``A`` (the attention, as the paper writes the scalogram), ``u`` (the
  fluctuation) -- C1, C2, C4, C7, C9;
* ``normalisation``: ``rectified`` (E(a) / a), ``raw`` (sum_b E(a, b)) -- same;
* ``scale_min``: 3, 2, 4 (lower end of the log-spaced scale grid, top L/2; every value
  at or above :func:`msapod.wavelets.min_valid_scale`, 1.94 at omega0 = 6) -- same;
* ``scale_stat``: ``peak`` (the strongest interior maximum, else a bound at the edge),
  ``argmax`` (the global maximum, edges included), ``centroid`` -- C4, C9 (where the
  windows sit);
* ``scale_test``: ``share`` (the shares of E(a) at a <= 7 and a >= 20 against the same
  models untrained; C2 also the slope of log E(a)), or ``peak`` (the dominant scale a*,
  edges as bounds, read against 7 and 20) -- C1, C2;
* ``centre``: ``energy-max`` (argmax_b E(a*, b)), ``period`` (lambda(a*)) -- C4, C9;
* ``width``: 1, 0.5, 2 (sigma = k a*) -- C4, C9;
* ``criterion``: ``energy``, ``l2`` (H* criterion) -- C5;
* ``n``: 150, 400 (N; 400 from the convergence study's nested ensembles of held-out
  text) -- C3, C5, C8;
* ``fit``: ``default`` (T_spec fit k = 1..N/2), ``fixed`` (k = 1..20) -- C3, C8.

C6, C10 and L have one reading per zoo. The scale claims are evaluated at N = 150 only
(the N = 400 ensembles are reduced to POD spectra by the convergence study).

**The book's default reading** takes the paper's stated choice wherever the paper states
one and the book's own choice elsewhere, each tagged in :data:`READING_TAGS` (and in the
attrs of :func:`.curve.multiverse_study`): the scalogram of the attention A (*paper*), the 1/a
rectified scale spectrum (*book*), scales log-spaced from 3 to L/2 (*book*: the paper
gives no grid), C1 and C2 on the band shares of E(a) against the untrained models
(*book*: most spectra have no interior maximum), the dominant scale as a local maximum with
edge maxima read as bounds (*paper*), the window centred where the energy of a* sits
with sigma = a* (*book*), H* by the energy criterion at eps = 0.10 (*paper*), N = 150
(*paper*) and the T_spec fit over k = 1..N/2 (*book*). Each claim is evaluated on its
sub-grid: the axes that affect it vary, the others stay at the default; so a claim's
specifications are the rows of ``spec`` where ``applicable`` is true.

It reads the evidence of :mod:`msapod.studies.measure.evidence`, whose docstring says how
it is measured and how fast.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence

import numpy as np
import xarray as xr

from ...models.data import N_SNAPSHOTS
from ..measure.evidence import (
    AXES,
    BAND_VARS,
    EPS,
    EVIDENCE_FORMAT,
    JACKKNIFE_GROUPS,
    fields_evidence,
    lag_gram_tensor,
    layer_evidence,
    mode_lag_energy,
    model_evidence,
    needs_window_se,
    theorem1_check,
    two_seeds_each,
    window_gram,
)
from ..registry import REGISTRY, SCALE_AXES
from .claims import CLAIMS, reading_axes, reading_words
from .rules import PAPER_LAGS, RULES, THRESHOLDS, Outcome, rule_dominant_scale

__all__ = [
    "AXES",
    "CLAIM_AXES",
    "MAIN_SPEC",
    "READING_TAGS",
    "ZooData",
    "assemble_study",
    "evaluate",
    "fields_evidence",
    "lag_gram_tensor",
    "layer_evidence",
    "main_outcomes",
    "mode_lag_energy",
    "needs_window_se",
    "stacked_evidence",
    "model_evidence",
    "rule_call",
    "specifications",
    "theorem1_check",
    "trained_zoos",
    "two_seeds_each",
    "window_gram",
    "zoo_data",
    "zoo_losses",
]

#: The book's default reading (see the module docstring and :data:`READING_TAGS`).
MAIN_SPEC = {axis: values[0] for axis, values in AXES.items()}
#: Per axis: whether the default reading is the paper's stated choice ("paper") or the
#: book's own ("book"), and why.
READING_TAGS: dict[str, tuple[str, str]] = {
    "field": ("paper", "the paper writes the scalogram of the attention, |W_psi[A](a, b)|^2"),
    "normalisation": (
        "book",
        "the paper gives no normalisation; E(a)/a (the rectified spectrum) puts a sinusoid's peak "
        "at its period",
    ),
    "scale_min": (
        "book",
        "the paper gives no grid; 3 lags is about 1.5 times the sampling limit "
        "(period >= 2 lags from a = 1.94 at omega0 = 6), log-spaced to L/2",
    ),
    "scale_stat": (
        "paper",
        "the paper reads local maxima a*_m of the scale spectrum; a maximum at the grid's "
        "edge is read as a bound (a* <= a_min or a* >= a_max)",
    ),
    "scale_test": (
        "book",
        "most measured scale spectra fall from the grid's first scale without an interior "
        "maximum, so a* is a bound there (the scalogram page counts them); "
        "the paper's a <= 7 and a >= 20 are read as the shares of E(a) in those bands against "
        "the same models untrained (the causal window's own shares), the fine-to-coarse shift "
        "as the slope of log E(a); the dominant scale a* (the strongest interior maximum, "
        "edges as bounds) is one reading",
    ),
    "c4_window": (
        "book",
        "C4 names lags (2-10, 10-35, 10-40); a window of the dominant scale cannot reach "
        "lags that far from a* (a* at or below the grid's first scale, 3, leaves layer 4's "
        "10-35 out of reach, and a spectrum without an interior maximum gives no window): "
        "the window sits on the "
        "paper's lags, sigma = width x half the range; the dominant scale's window is one "
        "reading",
    ),
    "centre": ("book", "the paper gives no window formula; centred where the energy of a* sits"),
    "width": (
        "book",
        "the paper gives no window width; sigma = a*, the wavelet's own width (C4's windows "
        "on the paper's lags: the same multiples of half the range)",
    ),
    "criterion": ("paper", "the paper's eps = 0.10 with 90 % of the energy"),
    "n": ("paper", "the paper's ensemble of N = 150 snippets"),
    "fit": ("book", "the paper gives no fit range; k = 1..N/2"),
}
_SCALE = SCALE_AXES
#: The axes that affect each claim (the registry's ``axes``).
CLAIM_AXES: dict[str, tuple[str, ...]] = {c.id: c.axes for c in REGISTRY.values()}
CLAIM_IDS = tuple(CLAIM_AXES)


# ---------------------------------------------------------------------------------------
# specifications and the study


def trained_zoos(zoos: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """``(trained, not_trained)`` among ``zoos`` (default: every zoo, main first).

    A zoo is analysed when it has at least one trained model of each architecture; it is
    then used with its trained models (:func:`msapod.models.zoo.trained`), for what they
    can decide (the architecture contrasts need two seeds of each and say so otherwise).
    """
    from ...models import zoo

    names = list(zoo.ZOOS) if zoos is None else list(zoos)
    for z in names:
        if z not in zoo.ZOOS:
            raise ValueError(f"zoos: expected names from {list(zoo.ZOOS)}, got {z!r}")
    names = sorted(names, key=lambda z: z != zoo.MAIN)
    ok = [z for z in names if all(zoo.trained(z, a) for a in zoo.ARCHITECTURES)]
    return ok, [z for z in names if z not in ok]


def specifications(zoos: Sequence[str]) -> list[dict]:
    """The union of every claim's sub-grid, per zoo (main specification first)."""
    specs: list[dict] = []
    seen = set()
    for z in zoos:
        for claim in CLAIM_IDS:
            axes = CLAIM_AXES[claim]
            for values in itertools.product(*(AXES[a] for a in axes)):
                spec = {"zoo": z, **MAIN_SPEC, **dict(zip(axes, values, strict=True))}
                if not _in_subgrid(claim, spec):
                    continue
                key = tuple(spec.values())
                if key not in seen:
                    seen.add(key)
                    specs.append(spec)
    return specs


def _applies(claim: str, spec: dict) -> bool:
    others = all(spec[a] == MAIN_SPEC[a] for a in AXES if a not in CLAIM_AXES[claim])
    return others and _in_subgrid(claim, spec)


def _in_subgrid(claim: str, spec: dict) -> bool:
    """Whether ``spec`` is one of the claim's readings: under a reading of the registry's
    ``varies_with`` only its axes vary (the others at the default reading)."""
    used = reading_axes(claim, spec)
    return all(spec[a] == MAIN_SPEC[a] for a in CLAIM_AXES[claim] if a not in used)


def _where(claim: str, spec: dict) -> str:
    return reading_words(spec, reading_axes(claim, spec)) or "one reading"


#: The evidence of C4 (``(..., layer, paper_layer)``); the ``*_se`` are optional. In the
#: windows placed on the paper's lags each has its ``c4_range_*`` (``width, paper_layer``).
C4_VARS = ("c4_share", "c4_reach", "c4_peaks", "c4_base", "c4_share_se", "c4_diff_se")


class ZooData:
    """Everything the rules read for one zoo (models stacked along ``model``)."""

    def __init__(
        self,
        models,
        evidence,
        convergence=None,
        c6=None,
        losses=None,
        *,
        groups: dict | None = None,
        treatment: str = "ega",
        control: str = "baseline",
        reference: xr.Dataset | None = None,
    ):
        self.models = list(models)
        self.ev = evidence
        #: Whether C1's and C2's reference (the same models untrained) was given: its band
        #: statistics are then in the evidence as ``<name>_ref`` and ``<name>_ref_se`` (so
        #: a relabelling of the evidence carries them along).
        self.has_reference = reference is not None
        if reference is not None:
            lacking = sorted(set(self.models) - set(map(str, reference["model"].values)))
            if lacking:
                raise ValueError(f"reference: expected every model of the zoo, lacks {lacking}")
            shared = {d: evidence[d].values for d in reference.dims if d in evidence.coords}

            def aligned(name: str) -> xr.DataArray:  # the reference on the evidence's coords
                var = reference[name]
                return var.sel({d: v for d, v in shared.items() if d in var.dims})

            ref = {
                f"{v}_ref{end}": aligned(f"{v}{end}")
                for v in BAND_VARS
                for end in ("", "_se")
                if f"{v}{end}" in reference
            }
            self.ev = evidence.assign(ref)
        self.conv = convergence
        self.c6 = c6
        self.losses = losses
        #: ``{"early", "late", "rest"}`` layer groups (None: the paper's 1-2, 5-6, 3-6)
        self.groups = groups
        self.treatment, self.control = treatment, control
        self._c4 = None

    def over_seeds(self) -> bool:
        """Whether every architecture has at least two models (:func:`two_seeds_each` of
        the evidence's ``architecture`` coordinate): the layer claims C4 and C9 then take
        their intervals over the seeds (the cases are the layers); otherwise over the
        snapshots of each model (the delete-group jackknife, the cases are the models x
        layers)."""
        if "architecture" not in self.ev.coords:
            return len(self.models) >= 2
        return two_seeds_each(self.ev["architecture"].values)

    def six_layers(self) -> bool:
        """Whether the models have the paper's six layers 1..6 (C4 and C8 name them)."""
        return sorted(int(v) for v in self.ev["layer"].values) == [1, 2, 3, 4, 5, 6]

    def c4(self) -> xr.Dataset:
        """C4's numbers of layer L measured against layer L's own paper range: ``c4_share``
        (s), ``c4_reach``, ``c4_peaks``, ``c4_base`` (b) and, where the evidence has them,
        the jackknife standard errors ``c4_share_se`` and ``c4_diff_se`` (of s - b); dims
        ``model``, ``layer`` (every layer of the zoo, NaN outside 2, 4, 6) first, then the
        readings, with ``c4_window`` ("range": the windows on the paper's lags, the same
        for every reading but the width; "dominant scale") where the evidence has both.
        Formed once per ZooData: each specification only selects its reading."""
        if self._c4 is None:
            ev = self.ev
            names = [n for n in C4_VARS if n in ev]
            layer = xr.DataArray(list(PAPER_LAGS), dims="layer", name="layer")
            diag = [ev[names].sel(layer=L, paper_layer=L, drop=True) for L in PAPER_LAGS]
            c4 = xr.concat(diag, dim=layer)
            c4["c4_reach"] = c4["c4_reach"].astype(bool)
            on = {n: f"c4_range_{n.removeprefix('c4_')}" for n in names if n != "c4_reach"}
            if all(v in ev for v in on.values()):
                r = xr.concat(
                    [
                        ev[list(on.values())].sel(layer=L, paper_layer=L, drop=True)
                        for L in PAPER_LAGS
                    ],
                    dim=layer,
                ).rename({v: k for k, v in on.items()})
                r["c4_reach"] = r["c4_share"].notnull()
                window = xr.DataArray(list(AXES["c4_window"]), dims="c4_window")
                kinds = {"range": r.broadcast_like(c4), "dominant scale": c4}
                c4 = xr.concat([kinds[w] for w in AXES["c4_window"]], dim=window)
            c4 = c4.reindex(layer=ev["layer"].values, fill_value={"c4_reach": False})
            self._c4 = c4.transpose("model", "layer", ...)
        return self._c4

    def pod(self, n: int, quantity: str, which: str):
        """``(value, se)`` per (model, layer) of T_spec (``which`` = fit) or H*
        (``which`` = criterion) at ensemble size ``n``; None if unavailable."""
        if n == int(self.ev.attrs.get("n_snapshots", N_SNAPSHOTS)):
            sel = {"fit": which} if quantity == "T_spec" else {"criterion": which}
            return self.ev[quantity].sel(sel), self.ev[f"{quantity}_se"].sel(sel)
        conv = self.conv
        if conv is None or n not in conv["n"].values:
            return None
        c = conv.sel(n=n)
        if quantity == "T_spec":
            name = "T_spec" if which == "default" else "T_spec_fixed"
            return c[name], c[f"{name}_se"]
        if which == "energy":
            return c["H_star"].sel(eps=EPS), c["H_star_se"].sel(eps=EPS)
        from ...spectra import effective_rank

        lam = c["spectrum"].sel(rank=slice(1, n))
        H = effective_rank(lam.fillna(0.0), EPS, "l2", n_snapshots=n).reset_coords(drop=True)
        return H.astype(float), None  # no interval for the L2 criterion at this N


def evaluate(claim: str, spec: dict, data: ZooData) -> Outcome:
    """The claim's :data:`~msapod.studies.verdict.rules.RULES` function under ``spec``."""
    got = rule_call(claim, spec, data)
    if isinstance(got, Outcome):
        return got
    rule, args, kwargs = got
    return rule(*args, **kwargs)


def rule_call(claim: str, spec: dict, data: ZooData):
    """What :func:`evaluate` computes, before the rule runs: ``(rule, args, kwargs)``,
    the rule function and the numbers it reads under ``spec`` (small arrays per model and
    layer); or the :class:`~msapod.studies.verdict.rules.Outcome` itself where the claim cannot
    be evaluated (not testable as stated). The joint test
    (:func:`msapod.studies.verdict.nulls.claim_curve`) reuses an outcome when the same numbers
    come back."""
    if claim not in _CALLS:
        raise ValueError(f"claim: expected one of {CLAIM_IDS}, got {claim!r}")
    if spec["n"] == MAIN_SPEC["n"]:  # the default: the ensemble's own N (150 for the zoo)
        spec = {**spec, "n": int(data.ev.attrs.get("n_snapshots", MAIN_SPEC["n"]))}
    if claim in ("C4", "C8") and not data.six_layers():
        layers = "2, 4 and 6" if claim == "C4" else "3–6"
        return _not_testable(
            claim,
            f"{data.ev.sizes['layer']} layers",
            f"the claim names layers {layers} of the paper's 6-layer model",
        )
    g = data.groups or {}
    kw = {k: {k: g[k]} if k in g else {} for k in ("early", "late", "rest")}
    kw["arch"] = {"treatment": data.treatment, "control": data.control}
    return _CALLS[claim](claim, spec, data, _where(claim, spec), kw)


def _not_testable(claim: str, measured: str, reason: str) -> Outcome:
    """The outcome of a claim that cannot be evaluated on this zoo or reading."""
    from .rules import NOT_TESTABLE

    return Outcome(claim, NOT_TESTABLE, measured, "", "0 cases", reason=reason)


#: The command that makes the evidence of the current format (every trained zoo, trained
#: and untrained models) and decides again.
REMAKE_EVIDENCE = "msapod reproduce --steps evidence multiverse scorecard"


def _missing(name: str, what: str) -> ValueError:
    """The error for evidence made before the variable ``name`` (``what`` it holds)."""
    return ValueError(
        f"evidence: no variable {name!r} ({what}; evidence format {EVIDENCE_FORMAT}); make "
        f"it with `{REMAKE_EVIDENCE}`"
    )


def _band_vars(claim: str, data: ZooData) -> list[str] | Outcome:
    """The evidence variables C1's or C2's band rule reads, or the outcome "not testable"
    without a reference; a clear error where the evidence predates them."""
    names = [n for n in REGISTRY[claim].evidence if n.startswith(BAND_VARS)]
    if not data.has_reference:
        return _not_testable(
            claim,
            "no reference",
            "C1 and C2 compare each model with the same model untrained: give the untrained "
            "models' evidence (ZooData(reference=...))",
        )
    missing = [n for n in names if n not in data.ev]
    if missing:
        raise _missing(missing[0], "C1 and C2's band statistics, trained and untrained")
    return names


def _call_scale(claim, spec, data, where, kw):
    """C1, C2: the band shares against the reference (and C2's slope), or under a
    dominant-scale reading the scale statistic with its SE and edge side, per model and
    layer."""
    ev = data.ev
    sel = {a: spec[a] for a in _SCALE}
    if spec["scale_test"] != "share":
        stat = {**sel, "scale_stat": spec["scale_test"]}
        grid = ev["scale_grid"].sel(scale_min=spec["scale_min"])
        kwargs = dict(
            statistic=spec["scale_test"],
            where=where,
            edge=ev["scale_stat_edge"].sel(stat),
            grid=(float(grid.sel(grid_end="min").min()), float(grid.sel(grid_end="max").max())),
        )
        args = (claim, ev["scale_stat_value"].sel(stat), ev["scale_stat_se"].sel(stat))
        return rule_dominant_scale, args, {**kwargs, **kw["early"], **kw["late"]}
    names = _band_vars(claim, data)
    if isinstance(names, Outcome):
        return names
    args = tuple(ev[n].sel(sel) for n in names)
    groups = {**kw["early"], **(kw["late"] if claim == "C2" else {})}
    return RULES[claim], args, dict(where=where, **groups)


def _call_energy(claim, spec, data, where, kw):
    """C7: the scalogram energy with its SE per model and layer."""
    sel = {a: spec[a] for a in _SCALE}
    args = (data.ev["energy"].sel(sel), data.ev["energy_se"].sel(sel))
    return RULES[claim], args, dict(where=where, **kw["arch"])


def _call_pod(claim, spec, data, where, kw):
    """C3, C5, C8: T_spec or H* of the plain POD at the specification's N."""
    quantity, which = ("H_star", spec["criterion"]) if claim == "C5" else ("T_spec", spec["fit"])
    got = data.pod(spec["n"], quantity, which)
    if got is None:
        return _not_testable(
            claim,
            f"no ensemble of N = {spec['n']}",
            f"the convergence study (N = {spec['n']}) is not available",
        )
    rule, n = RULES[claim], spec["n"]
    if claim == "C3":
        return rule, got, dict(n=n, where=where, **kw["early"], **kw["late"])
    if claim == "C5":
        crit = spec["criterion"]
        return rule, got, dict(n=n, criterion=crit, where=where, **kw["early"], **kw["rest"])
    return rule, got, dict(where=where, **kw["arch"])


def _call_window(claim, spec, data, where, kw):
    """C4, C9: the window readings; their jackknife SEs only where the zoo cannot take
    the intervals over seeds (:meth:`ZooData.over_seeds`)."""
    ev, rule = data.ev, RULES[claim]
    sel = {a: spec[a] for a in CLAIM_AXES["C9"]}
    jack = not data.over_seeds()
    se_df = JACKKNIFE_GROUPS - 1
    if claim == "C9":
        se = ev["c9_ratio_se"].sel(sel) if jack and "c9_ratio_se" in ev else None
        return rule, (ev["c9_ratio"].sel(sel), se), dict(se_df=se_df, where=where)
    d4 = data.c4().sel(sel)
    if "c4_window" in d4.dims:
        d4 = d4.sel(c4_window=spec["c4_window"])
    elif spec["c4_window"] == "range":  # evidence made before the windows on the lags
        raise _missing("c4_range_share", "C4 in windows on the paper's lags")

    def per_layer(name):
        return d4[name] if name in d4 else None

    args = (per_layer("c4_share"), d4["c4_reach"], d4["c4_peaks"].sel(layer=6).values)
    kwargs = dict(
        base=per_layer("c4_base"),
        share_se=per_layer("c4_share_se") if jack else None,
        diff_se=per_layer("c4_diff_se") if jack else None,
        se_df=se_df,
        where=where,
        placement=spec["c4_window"],
    )
    return rule, args, kwargs


def _call_once(claim, spec, data, where, kw):
    """C6, C10, L: one reading per zoo (the pruning study, Theorem 1, the losses)."""
    ev, rule = data.ev, RULES[claim]
    if claim == "C6":
        return rule, (data.c6,), {}
    if claim == "C10":
        if "t1_gap" not in ev:
            return _not_testable("C10", "not run", "no check run")
        gap = ev["t1_gap"].max()
        args = (float(gap), int(ev["t1_beaten"].sum()), int(ev["t1_trials"].sum()))
        return rule, args, dict(label=_t1_label(ev, data.models))
    if data.losses is None:
        return _not_testable("L", "no losses", "no losses")
    loss, unfinished = data.losses
    return rule, (loss,), dict(unfinished=unfinished, **kw["arch"])


#: :func:`rule_call`'s reader of each claim's numbers.
_CALLS = {
    "C1": _call_scale,
    "C2": _call_scale,
    "C3": _call_pod,
    "C4": _call_window,
    "C5": _call_pod,
    "C6": _call_once,
    "C7": _call_energy,
    "C8": _call_pod,
    "C9": _call_window,
    "C10": _call_once,
    "L": _call_once,
}


def _t1_label(ev: xr.Dataset, models) -> str:
    """``"layer L of model: "`` where the Theorem 1 check ran."""
    gap = ev["t1_gap"]
    where = (
        np.argwhere(np.isfinite(gap.transpose("model", "layer").values))
        if "model" in gap.dims
        else []
    )
    if len(where) == 0:
        return ""
    m, layer = where[0]
    return f"layer {int(ev['layer'].values[layer])} of {models[m]}: "


def zoo_losses(models) -> tuple[xr.DataArray, bool]:
    """Whole-split validation losses of ``models`` (``val_loss_split`` of their
    ``config.json``: :func:`msapod.models.train.validation_loss` of the stored model) and
    whether any model stopped before its planned steps (its loss is then the last
    20-batch estimate, and the rule says the models are unfinished)."""
    from ...models.zoo import ZOO_CONFIGS, identity

    ids = [identity(m) for m in models]
    cfg = [i.meta for i in ids]
    loss = xr.DataArray(
        [c.get("val_loss_split", c["val_loss"]) for c in cfg],
        dims="model",
        coords={"model": models, "architecture": ("model", [i.architecture for i in ids])},
        attrs={"long_name": "validation loss over the whole split", "units": "nats/char"},
    )
    unfinished = any(c["step"] < ZOO_CONFIGS[m].steps for c, m in zip(cfg, models, strict=True))
    return loss, unfinished


def zoo_data(
    models: Sequence[str],
    *,
    convergence: xr.Dataset | None | bool = None,
    pruning: xr.Dataset | None | bool = None,
    progress: bool = False,
    cache_dir=None,
    evidence: xr.Dataset | None = None,
    reference: xr.Dataset | None = None,
) -> ZooData:
    """Gather the evidence of one zoo's models (computed or read from the cache).

    ``convergence`` / ``pruning``: a study result, None (compute or read it from the
    cache) or False (skip: N = 400 and C6 are then not testable). ``evidence``: the
    models' stacked evidence (:func:`stacked_evidence`, e.g. the shipped
    ``results/evidence.nc``) instead of computing or reading it. ``reference``: that of
    the same models untrained (C1's and C2's reference: ``results/evidence-untrained.nc``
    or :func:`~msapod.studies.measure.nullfields.untrained_evidence`; None: C1 and C2 are not
    testable and say why).
    """
    models = list(models)
    if evidence is None:
        ev = stacked_evidence(models, progress=progress, cache_dir=cache_dir)
    else:
        ev = evidence.sel(model=models)
    ev.attrs["n_snapshots"] = int(ev.sizes["rank"])
    if convergence is None:
        from ..measure.convergence import convergence_study

        convergence = convergence_study(models, progress=progress, cache_dir=cache_dir)
    conv = convergence.sel(model=models) if convergence is not False else None
    if pruning is None:
        from ..measure.prune import pruning_study

        pruning = pruning_study(models, progress=progress, cache_dir=cache_dir)
    c6 = pruning if pruning is not False else None
    return ZooData(models, ev, conv, c6, zoo_losses(models), reference=reference)


def stacked_evidence(models: Sequence[str], *, progress: bool = False, cache_dir=None):
    """:func:`model_evidence` of one zoo's ``models`` stacked along ``model`` (the
    Theorem 1 check on layer 4 of the first model; C4's and C9's jackknife where
    :func:`needs_window_se`)."""
    from ..store.cache import stack_models

    kw = dict(progress=progress, cache_dir=cache_dir, window_se=needs_window_se(models))
    parts = [
        model_evidence(m, theorem1_layer=4 if i == 0 else 0, **kw) for i, m in enumerate(models)
    ]
    return stack_models(parts, models)


def main_outcomes(data: ZooData) -> dict[str, Outcome]:
    """The main specification's outcome of every claim (what the scorecard shows)."""
    spec = {"zoo": "", **MAIN_SPEC}
    return {c: evaluate(c, spec, data) for c in CLAIM_IDS}


class _CurveCells:
    """The arrays of :func:`assemble_study`, filled one outcome (claim ``i``, spec ``j``)
    at a time."""

    TEXT = ("measured", "interval", "rule", "cases", "reason", "paper_value")

    def __init__(self, nc: int, ns: int, models: list, layers: list):
        nm, nl = len(models), len(layers)
        self.verdict = np.full((nc, ns), "", dtype=object)
        self.text = {k: np.full((nc, ns), "", dtype=object) for k in self.TEXT}
        self.stat = {k: np.full((nc, ns, nm, nl), np.nan) for k in ("stat", "lower", "upper")}
        self.contrast = {k: np.full((nc, ns, nm), np.nan) for k in ("value", "lower", "upper")}
        self.diff = {k: np.full((nc, ns, nl), np.nan) for k in ("value", "lower", "upper")}
        self.applicable = np.zeros((nc, ns), bool)
        self.models, self.layers = list(models), list(layers)
        self.m_index = {m: i for i, m in enumerate(models)}
        self.l_index = {v: i for i, v in enumerate(layers)}

    def put(self, i: int, j: int, out: Outcome) -> None:
        """Store outcome ``out`` of claim ``i`` under specification ``j``: its values with
        the intervals its decisions read (:meth:`Outcome.read_interval`)."""
        self.applicable[i, j] = True
        self.verdict[i, j] = out.verdict
        for k in self.text:
            self.text[k][i, j] = getattr(out, k)
        if out.stat is not None:
            lower, upper = out.read_interval("stat")
            for k, da in (("stat", out.stat), ("lower", lower), ("upper", upper)):
                da = da.transpose("model", "layer")
                mi = [self.m_index[m] for m in da["model"].values]
                li = [self.l_index[int(v)] for v in da["layer"].values]
                self.stat[k][i, j][np.ix_(mi, li)] = da.values
        if out.contrast is not None:
            lower, upper = out.read_interval("contrast")
            mi = [self.m_index[m] for m in out.contrast["model"].values]
            for k, da in (("value", out.contrast["value"]), ("lower", lower), ("upper", upper)):
                self.contrast[k][i, j, mi] = da.values
        if out.diff is not None:
            lower, upper = out.read_interval("diff")
            for k, da in (("value", out.diff["value"]), ("lower", lower), ("upper", upper)):
                if "layer" in da.dims:
                    li = [self.l_index[int(v)] for v in da["layer"].values]
                    self.diff[k][i, j, li] = da.values


def assemble_study(trained, untrained, data: dict) -> xr.Dataset:
    """Evaluate every claim under every specification of its sub-grid on ``data``
    (``{zoo: ZooData}``) and collect the :func:`.curve.multiverse_study` Dataset."""
    specs = specifications(trained)
    models = [m for z in trained for m in data[z].models]
    layers = sorted({int(v) for z in trained for v in data[z].ev["layer"].values})
    cells = _CurveCells(len(CLAIM_IDS), len(specs), models, layers)
    for j, spec in enumerate(specs):
        d = data[spec["zoo"]]
        for i, claim in enumerate(CLAIM_IDS):
            if _applies(claim, spec):
                cells.put(i, j, evaluate(claim, spec, d))
    return _study_dataset(cells, specs, trained, untrained, data)


def _study_dataset(cells: _CurveCells, specs, trained, untrained, data) -> xr.Dataset:
    """The Dataset of :func:`assemble_study` from its filled cells."""
    models = cells.models
    text, stat, contrast, diff = cells.text, cells.stat, cells.contrast, cells.diff
    spec_coords = {a: ("spec", np.asarray([s[a] for s in specs])) for a in ("zoo", *AXES)}
    main = [all(s[a] == MAIN_SPEC[a] for a in AXES) for s in specs]
    spec_coords["main"] = ("spec", np.asarray(main, dtype=bool))
    arch = [
        str(data[z].ev["architecture"].sel(model=m).item()) for z in trained for m in data[z].models
    ]
    model_zoo = [z for z in trained for _ in data[z].models]
    ds = xr.Dataset(
        {
            "verdict": (("claim", "spec"), cells.verdict.astype(str)),
            "applicable": (("claim", "spec"), cells.applicable),
            **{k: (("claim", "spec"), v.astype(str)) for k, v in text.items()},
            **{k: (("claim", "spec", "model", "layer"), v) for k, v in stat.items()},
            "contrast": (("claim", "spec", "model"), contrast["value"]),
            "contrast_lower": (("claim", "spec", "model"), contrast["lower"]),
            "contrast_upper": (("claim", "spec", "model"), contrast["upper"]),
            "diff": (("claim", "spec", "layer"), diff["value"]),
            "diff_lower": (("claim", "spec", "layer"), diff["lower"]),
            "diff_upper": (("claim", "spec", "layer"), diff["upper"]),
            "claim_text": ("claim", [CLAIMS["loss" if c == "L" else c] for c in CLAIM_IDS]),
            "axes": ("claim", [",".join(CLAIM_AXES[c]) for c in CLAIM_IDS]),
            "threshold_low": ("claim", [THRESHOLDS.get(c, (np.nan, np.nan))[0] for c in CLAIM_IDS]),
            "threshold_high": (
                "claim",
                [THRESHOLDS.get(c, (np.nan, np.nan))[1] for c in CLAIM_IDS],
            ),
        },
        coords={
            "claim": list(CLAIM_IDS),
            "spec": np.arange(len(specs)),
            "model": models,
            "layer": cells.layers,
            "architecture": ("model", arch),
            "model_zoo": ("model", model_zoo),
            **spec_coords,
        },
    )
    ds.attrs = {
        "title": "specification curve of the paper's claims",
        "main_specification": json.dumps(MAIN_SPEC),
        "main_reading": "the book's default reading",
        "reading_tags": json.dumps(
            {a: {"tag": t, "reason": r} for a, (t, r) in READING_TAGS.items()}
        ),
        "interval": "the interval each decision reads: 95 %, family-wise (each case at "
        "its Holm step's level) where the rule tests with Holm",
        "not_trained": ",".join(untrained),
        "zoos": ",".join(trained),
        "main_zoo": trained[0] if trained else "",
    }
    return ds


#: Whether a claim is evaluated under a specification (public name for the joint test).
applies = _applies
