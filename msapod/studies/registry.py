"""The claims, each defined once: the paper's words and everything the book needs to test it.

A :class:`Claim` holds every fact about one claim: what the paper says, what kind of
statement it is, the numbers it states (the **only** place a threshold, a stated size or
its tolerance lives), the layers it is about, its key statistic and direction, the
readings (axes of the specification curve) it depends on, the evidence variables its
rule reads, the null its joint test uses and why the others do not apply, and the pages
that test it. It sits below every tier of :mod:`msapod.studies`: the measurements
(:mod:`msapod.studies.measure.evidence`: where C4's lags are), the rules
(:mod:`msapod.studies.verdict.rules`), the verdict boxes and the scorecard
(:mod:`msapod.studies.verdict.claims`, :mod:`msapod.studies.verdict.scorecard`), the
specification curve (:mod:`msapod.studies.verdict.multiverse`) and the nulls
(:mod:`msapod.studies.verdict.nulls`) read :data:`REGISTRY`; the module-level tables they
export (``THRESHOLDS``, ``PAPER_LAGS``, ``CLAIM_AXES``, ...) are views of it. Changing a
threshold or adding a claim is one edit here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "EARLY",
    "KINDS",
    "LATE",
    "MIDDLE_LATE",
    "REGISTRY",
    "SCALE_AXES",
    "SOURCES",
    "Claim",
    "claim",
]

#: The depth groups the paper names: early layers, late layers, and the layers after the
#: early ones (C5's "layers 3-6").
EARLY, LATE, MIDDLE_LATE = (1, 2), (5, 6), (3, 4, 5, 6)
#: What kind of statement a claim is.
KINDS = ("empirical", "theorem", "cited")
#: What decides a claim (:attr:`Claim.source`).
SOURCES = ("fields", "pruning", "losses")
_INF = float("inf")
#: The axes of the specification curve that change the scale spectrum.
SCALE_AXES = _SCALE = ("field", "normalisation", "scale_min")


@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or the cited EGA loss claim) and how the book tests it.

    Attributes
    ----------
    id
        ``"C1"`` ... ``"C10"``, ``"L"``.
    kind
        ``"empirical"`` (the paper's measurements), ``"theorem"`` (Theorem 1: true for any
        ensemble) or ``"cited"`` (the energy-gated attention paper's loss claim).
    paper
        The claim in the paper's words (one line).
    range
        ``(low, high)``: where the claim puts its key statistic (for C3 and C5 derived
        from ``about`` and ``tolerance``); the rule tests each case against it.
    about, tolerance
        A size the paper states ("about 1.0") and the relative tolerance the book reads
        "about" with; None where the claim states no size.
    stated
        Further numbers the claim states (C4's lag ranges, C5's "more than 150", ...).
    layers
        The layers the key statistic is read on (None: every layer).
    log
        The key statistic is positive (scale, T_spec, H*, ratio): intervals and distances
        on the log scale.
    source
        What decides it: ``"fields"`` (attention fields alone), ``"pruning"`` (the head
        pruning study) or ``"losses"`` (the models' validation losses).
    symbol
        The key statistic in math (MyST).
    statistic
        The key statistic as an axis label (words and MyST math).
    bounds
        ``(low, high)``: the values the key statistic can take (a share difference lies
        in [-1, 1], a share in [0, 1], a scale, T_spec, H* or ratio above 0); intervals
        are drawn inside them.
    per_layer
        ``(math, words)`` of the per-layer statistic its rule decides over seeds or
        architectures (the curve's ``diff``); empty without one.
    axes
        The axes of the specification curve the claim's verdict depends on.
    varies_with
        ``{(axis, value): axes}``: under that reading only these axes (and ``axis``) vary,
        the others stay at the default reading (C4's windows on the paper's lags depend
        on their width only).
    evidence
        The evidence variables its rule reads (the joint test relabels only these).
    null
        The relabelling its joint test uses (``"layer labels"``, ``"architecture labels"``,
        ``"trained vs untrained"``; None: no null, see ``no_null``).
    layer_roles
        The layer groups the layer-label null permutes.
    no_null, no_shuffled, no_untrained
        Why the claim has no joint-test null / no shuffled-snippet verdict / no verdict on
        the untrained models ("" when it has).
    signs
        EGA - baseline signs the claim states per layer (``{None: s}``: every layer).
    contrast_sign, contrast_symbol
        Sign of the early/late contrast its rule reports (late - early for C1-C3,
        early - later for C5) and the contrast's symbol (MyST math); None and "" without
        one.
    pages
        The book pages that examine it.
    rule_line
        The rule in one line (MyST math), formatted from the numbers above.
    level
        The interval level and the multiplicity correction the rule tests with ("" for an
        exact check).
    """

    id: str
    kind: str
    paper: str
    range: tuple[float, float] = (-_INF, _INF)
    about: float | None = None
    tolerance: float | None = None
    stated: Mapping = field(default_factory=dict)
    layers: tuple[int, ...] | None = None
    log: bool = False
    source: str = "fields"
    symbol: str = ""
    statistic: str = ""
    bounds: tuple[float, float] = (-_INF, _INF)
    per_layer: tuple[str, str] = ("", "")
    axes: tuple[str, ...] = ()
    varies_with: Mapping = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    null: str | None = None
    layer_roles: tuple[tuple[int, ...], ...] = ()
    no_null: str = ""
    no_shuffled: str = ""
    no_untrained: str = ""
    signs: Mapping | None = None
    contrast_sign: int | None = None
    contrast_symbol: str = ""
    pages: tuple[str, ...] = ()
    rule_line: str = ""
    level: str = "95 % family-wise: Holm across cases, each interval at its step's level"

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        if self.source not in SOURCES:
            raise ValueError(f"source: expected one of {SOURCES}, got {self.source!r}")
        if self.about is not None:
            if self.tolerance is None:
                raise ValueError(f"{self.id}: a stated size needs its tolerance")
            bounds = sorted(self.about * (1 + s * self.tolerance) for s in (-1, 1))
            object.__setattr__(self, "range", (bounds[0], bounds[1]))
        for (axis, _), keep in self.varies_with.items():
            if not {axis, *keep} <= set(self.axes):
                raise ValueError(f"{self.id}: varies_with names axes outside {self.axes}")
        if (self.null is None) == (not self.no_null):
            raise ValueError(f"{self.id}: give a null or the reason it has none")
        lo, hi = self.range
        if not lo < hi:
            raise ValueError(f"{self.id}: range expected low < high, got {self.range}")

    @property
    def low(self) -> float:
        return self.range[0]

    @property
    def high(self) -> float:
        return self.range[1]


def _band_rule_line(layers: str, op: str, bound: float) -> str:
    return (
        rf"the share of $E(a)$ at $a {op} {bound:g}$ in layers {layers} above that of the "
        "same models untrained, in every model"
    )


def _claims() -> tuple[Claim, ...]:
    c1_scale, c2_scale = 7.0, 20.0
    c4_share, c4_lags = 0.5, {2: (2, 10), 4: (10, 35), 6: (10, 40)}
    c3_about, c3_tol = 1.0, 0.25
    c5_early, c5_about, c5_tol = 150, 91.0, 0.15
    c9_margin = 0.10
    loss_size, loss_tol = -0.10, 0.25
    t1_gap = 1e-8
    # the slope of log E(a): from 4 lags (inside every grid, twice the sampling limit) to 64
    # (a quarter of the context, clear of the grid's coarse end at L/2)
    slope_range = (4.0, 64.0)
    scale_ev = ("scale_stat_value", "scale_stat_se", "scale_stat_edge", "scale_grid")
    reference = "the untrained models are the rule's reference"

    def band_ev(name: str) -> tuple[str, ...]:
        return (name, f"{name}_se", f"{name}_ref", f"{name}_ref_se")

    window_axes = (*_SCALE, "scale_stat", "centre", "width")
    return (
        Claim(
            "C1",
            "empirical",
            f"layers 1–2 put scalogram energy at fine scales, a ≤ {c1_scale:g}",
            range=(0.0, _INF),
            stated={"scale": c1_scale},
            layers=EARLY,
            symbol=r"\Delta F_\mathrm{fine}",
            statistic=r"$\Delta F_\mathrm{fine}$ (trained − untrained)",
            bounds=(-1.0, 1.0),
            axes=(*_SCALE, "scale_test"),
            evidence=(*band_ev("fine_share"), *scale_ev),
            null="layer labels",
            layer_roles=(EARLY,),
            no_untrained=reference,
            pages=("03-scalogram",),
            rule_line=_band_rule_line("1–2", r"\le", c1_scale),
        ),
        Claim(
            "C2",
            "empirical",
            f"layers 5–6 put it at coarse scales, a ≥ {c2_scale:g}",
            range=(0.0, _INF),
            stated={"scale": c2_scale, "slope_range": slope_range},
            layers=LATE,
            symbol=r"\Delta F_\mathrm{coarse}",
            statistic=r"$\Delta F_\mathrm{coarse}$ (trained − untrained)",
            bounds=(-1.0, 1.0),
            axes=(*_SCALE, "scale_test"),
            evidence=(*band_ev("coarse_share"), "scale_slope", "scale_slope_se", *scale_ev),
            null="layer labels",
            layer_roles=(EARLY, LATE),
            no_untrained=reference,
            contrast_sign=1,
            contrast_symbol=r"\beta_a(5,6) - \beta_a(1,2)",
            pages=("03-scalogram",),
            rule_line=r"the slope $\beta_a$ of $\ln E(a)$ against $\ln a$ over "
            rf"${slope_range[0]:g} \le a \le {slope_range[1]:g}$ larger in layers 5–6 than "
            "in 1–2 (the shift from fine to coarse scales), and "
            + _band_rule_line("5–6", r"\ge", c2_scale),
        ),
        Claim(
            "C3",
            "empirical",
            f"early T_spec ≈ {c3_about:.1f} (distributed); late layers more concentrated",
            about=c3_about,
            tolerance=c3_tol,
            layers=EARLY,
            log=True,
            symbol=r"T_\mathrm{spec}",
            statistic=r"$T_\mathrm{spec}$",
            bounds=(0.0, _INF),
            axes=("n", "fit"),
            evidence=("T_spec", "T_spec_se"),
            null="layer labels",
            layer_roles=(EARLY, LATE),
            no_shuffled="T_spec describes how the variance across snippets spreads over POD "
            "modes; shuffling changes what varies between snippets, not the lag structure",
            contrast_sign=-1,
            contrast_symbol=r"T_\mathrm{spec}(5,6) - T_\mathrm{spec}(1,2)",
            pages=("07-spectral-concentration", "11-uncertainty-convergence"),
            rule_line=r"$T_\mathrm{spec}(5,6) < T_\mathrm{spec}(1,2)$ in every model, and "
            rf"$T_\mathrm{{spec}}(1,2) = {c3_about:g} \pm {c3_tol:.0%}$".replace("%", r"\,\%"),
        ),
        Claim(
            "C4",
            "empirical",
            "scale-selective modes: layer 2 at lags 2–10, layer 4 at 10–35, layer 6 at 10–40",
            range=(c4_share, _INF),
            stated={"lags": c4_lags, "peaks6": 2},
            layers=tuple(c4_lags),
            symbol=r"F",
            statistic="lag-energy share",
            bounds=(0.0, 1.0),
            per_layer=(r"F - F_\mathrm{window}", "mode − window share, mean over seeds"),
            axes=(*window_axes, "c4_window"),
            varies_with={("c4_window", "range"): ("width",)},
            evidence=(
                "c4_share",
                "c4_reach",
                "c4_peaks",
                "c4_base",
                "c4_share_se",
                "c4_diff_se",
                *(f"c4_range_{v}" for v in ("share", "base", "peaks", "share_se", "diff_se")),
                "T_spec",
            ),
            null="layer labels",
            layer_roles=tuple((k,) for k in c4_lags),
            pages=("04-windows", "05-pod"),
            rule_line=rf"mode 1 of layers 2, 4, 6 in a window on the paper's lags puts "
            rf"$\ge {c4_share:.0%}$ of its lag energy in those lags, more than the window "
            "alone".replace("%", r"\,\%"),
        ),
        Claim(
            "C5",
            "empirical",
            f"H*(0.10): layers 1–2 need > {c5_early} modes; layers 3–6 about {c5_about:g}",
            about=c5_about,
            tolerance=c5_tol,
            stated={"early_above": c5_early, "eps": 0.10},
            layers=MIDDLE_LATE,
            log=True,
            symbol=r"H^*",
            statistic="$H^*(0.10)$",
            bounds=(0.0, _INF),
            axes=("n", "criterion"),
            evidence=("H_star", "H_star_se"),
            null="layer labels",
            layer_roles=(EARLY, MIDDLE_LATE),
            no_shuffled="H* counts POD modes of the variance across snippets (as C3)",
            contrast_sign=1,
            contrast_symbol=r"H^*_{1,2} - H^*_{3\text{–}6}",
            pages=("08-effective-rank", "11-uncertainty-convergence"),
            rule_line=rf"$H^*_{{1,2}} > H^*_{{3\text{{–}}6}}$ in every model, "
            rf"$H^*_{{1,2}} > {c5_early}$ (where $N > {c5_early + 1}$), "
            rf"$H^*_{{3\text{{–}}6}} = {c5_about:g} \pm {c5_tol:.0%}$".replace("%", r"\,\%"),
        ),
        Claim(
            "C6",
            "empirical",
            "uniform 8 heads over-specify deep layers, under-specify early ones",
            source="pruning",
            no_null="the pruning study gives one reading per zoo (no curve to relabel)",
            no_shuffled="head pruning needs the validation loss of the trained text",
            pages=("12-head-pruning",),
            rule_line="(a) pruning deep heads costs less than pruning early heads; (b) "
            "H*-guided pruning beats random at equal budget",
        ),
        Claim(
            "C7",
            "empirical",
            "EGA models show systematically higher scalogram energy in every layer",
            range=(0.0, _INF),
            log=True,
            symbol=r"\Delta E",
            statistic=r"$\Delta E$",
            per_layer=(r"\Delta E", "ΔE = EGA − baseline energy"),
            axes=_SCALE,
            evidence=("energy", "energy_se"),
            null="architecture labels",
            signs={None: 1},
            pages=("09-energy-gated-attention",),
            rule_line=r"$E_\mathrm{EGA} - E_\mathrm{baseline} > 0$ in every layer",
        ),
        Claim(
            "C8",
            "empirical",
            "EGA vs baseline: slightly higher T_spec in layers 3–4, lower in 5–6",
            range=(0.0, _INF),
            layers=MIDDLE_LATE,
            log=True,
            symbol=r"\Delta T_\mathrm{spec}",
            statistic=r"$\Delta T_\mathrm{spec}$",
            per_layer=(r"\Delta T_\mathrm{spec}", "ΔT_spec = EGA − baseline"),
            axes=("n", "fit"),
            evidence=("T_spec", "T_spec_se"),
            null="architecture labels",
            no_shuffled="an architecture contrast of T_spec (as C3)",
            signs={3: 1, 4: 1, 5: -1, 6: -1},
            pages=("07-spectral-concentration", "09-energy-gated-attention"),
            rule_line=r"$\Delta T_\mathrm{spec} > 0$ in layers 3–4 and $< 0$ in layers 5–6 "
            "(EGA − baseline)",
        ),
        Claim(
            "C9",
            "empirical",
            "plain POD mixes scales; scale-selective POD separates them",
            range=(-_INF, 1.0 - c9_margin),
            stated={"margin": c9_margin},
            log=True,
            symbol=r"D",
            statistic="scale spread ratio",
            bounds=(0.0, _INF),
            per_layer=(r"\bar D", "scale spread ratio D, geometric mean over seeds"),
            axes=window_axes,
            evidence=("c9_ratio", "c9_ratio_se"),
            null="trained vs untrained",
            pages=("05-pod",),
            rule_line=r"scale spread ratio of the windowed to the plain mode 1 "
            rf"$D < {1 - c9_margin:g}$ (passes below ${1 - c9_margin:g}$ by its interval, "
            "fails above it)",
        ),
        Claim(
            "C10",
            "theorem",
            "POD modes are the optimal rank-K linear basis (Theorem 1)",
            range=(-_INF, t1_gap),
            evidence=("t1_gap", "t1_beaten", "t1_trials"),
            no_null="Theorem 1 is an identity of POD on any ensemble",
            no_shuffled="Theorem 1 is an identity of POD on any ensemble",
            pages=("05-pod",),
            level="",
            rule_line=rf"rank-$K$ error $= \sum_{{k > K}} \lambda_k$ to "
            rf"$10^{{{np.log10(t1_gap):.0f}}}$; no random basis does better",
        ),
        Claim(
            "L",
            "cited",
            f"EGA lowers validation loss (EGA paper: about {loss_size:+.2f} nats/char)".replace(
                "-", "−"
            ),
            range=(-_INF, 0.0),
            stated={"size": loss_size, "size_tolerance": loss_tol},
            source="losses",
            symbol=r"\Delta\mathcal{L}",
            null="architecture labels",
            no_shuffled="the loss claim is about training, not the fields",
            signs={None: -1},
            pages=("10-training",),
            level="one 95 % interval, read for direction and size",
            rule_line=r"$\Delta \mathcal{L} = \mathcal{L}_\mathrm{EGA} - "
            rf"\mathcal{{L}}_\mathrm{{baseline}} < 0$ and within ${loss_size:g} \pm "
            rf"{loss_tol:.0%}$ nats/char (the stated size)".replace("%", r"\,\%"),
        ),
    )


#: Every claim, by id, in the scorecard's order.
REGISTRY: dict[str, Claim] = {c.id: c for c in _claims()}


def claim(claim_id: str) -> Claim:
    """The :class:`Claim` ``claim_id`` (a clear error for an unknown id)."""
    if claim_id not in REGISTRY:
        raise ValueError(f"claim: expected one of {list(REGISTRY)}, got {claim_id!r}")
    return REGISTRY[claim_id]
