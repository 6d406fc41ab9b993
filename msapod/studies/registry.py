"""The claims, each defined once: the paper's words and the tests that decide it.

A :class:`Claim` holds every fact about one claim: what the paper says, what kind of
statement it is, the numbers it states, the readings (axes of the specification curve) it
depends on and the book pages that examine it. Its :class:`ClaimTest` entries say how it is
decided: a statistic computed per model, the direction the claim gives it, the reference
value and the **smallest effect of interest** with the reason for its size, all stated
here before any data is read. The verdict tier (:mod:`msapod.studies.verdict`) decides
every claim from these entries and nothing else; the measurement tier reads the numbers
the claims state (:attr:`Claim.stated`). Changing a threshold or adding a claim is one
edit here.

A test's boundary is where its smallest effect of interest ends:
``reference + sesoi`` (direction ``"greater"``), ``reference - sesoi`` (``"less"``), or
``[reference - sesoi, reference + sesoi]`` (``"within"``: a size the paper states, the
sesoi its tolerance); with ``relative`` the sesoi is a fraction of the reference
(``reference * (1 +- sesoi)``), which is how a positive quantity (a ratio, T_spec, H*)
is read.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

__all__ = [
    "DESIGNS",
    "DIRECTIONS",
    "EARLY",
    "JOINT_STATISTIC",
    "KINDS",
    "LATE",
    "MIDDLE_LATE",
    "REGISTRY",
    "SCALE_AXES",
    "SOURCES",
    "WINDOW_AXES",
    "Claim",
    "ClaimTest",
    "qualified_id",
    "registry_hash",
]

#: The depth groups the paper names: early layers, late layers, and the layers after the
#: early ones (C5's "layers 3-6").
EARLY, LATE, MIDDLE_LATE = (1, 2), (5, 6), (3, 4, 5, 6)
#: What kind of statement a claim is.
KINDS = ("empirical", "theorem", "cited")
#: What decides a claim (:attr:`Claim.source`).
SOURCES = ("fields", "pruning", "losses")
#: The direction a test gives its statistic.
DIRECTIONS = ("greater", "less", "within")
#: How a test's replicates are compared: one sample of models (the mean over the zoo's
#: models) or two (EGA minus standard attention).
DESIGNS = ("models", "architecture")
#: The axes of the specification curve that change the scale spectrum, and those that
#: change the windows (the scale spectrum's, its dominant scale's and the window rule's).
SCALE_AXES = ("field", "normalisation", "scale_min")
WINDOW_AXES = (*SCALE_AXES, "scale_stat", "centre", "width")

#: The statistic of the joint test over the specification curve that its sentence reads,
#: chosen before the data, and why (the other statistics are reported beside it).
JOINT_STATISTIC = (
    "stouffer_z",
    "Stouffer's Z combines every specification's evidence, its size as well as its sign",
)
#: Smallest effects of interest, each with its reason (used by several tests below).
SHARE_SESOI = (
    0.05,
    "a share of the scale spectrum's energy that moves by less than 0.05 (a twentieth of the "
    "energy) leaves where the energy sits unchanged",
)
RATIO_SESOI = (
    0.10,
    "the paper states no size for its contrasts; the book reads a ratio of T_spec, H* or "
    "energy within 10 % of one as no contrast (a tenth of the value, the smallest change "
    "its wording, 'more concentrated', 'more modes', 'higher energy', would notice)",
)
SLIGHT_SESOI = (
    0.05,
    "the claim says 'slightly': half the 10 % used for the other T_spec contrasts",
)
LOSS_SESOI = (
    0.02,
    "0.02 nats per character, a 2 % change of per-character perplexity and a fifth of the "
    "cited improvement of 0.10",
)


@dataclass(frozen=True)
class ClaimTest:
    """One decided statement of a claim.

    Attributes
    ----------
    part
        The claim's named part it belongs to ("" for a claim without parts).
    case
        Its case within the part ("" when the part is one test; else e.g. ``"layer 3"``,
        ``"8 heads"``); a part holds only when every case does.
    statistic
        The per-model statistic (a name of :data:`msapod.studies.verdict.statistics.STATISTICS`).
    args
        The statistic's arguments (layers, band, budget, ...).
    direction
        ``"greater"``, ``"less"`` or ``"within"`` (:data:`DIRECTIONS`).
    reference
        The value of no effect (``greater``/``less``) or the stated size (``within``).
    sesoi, sesoi_reason
        The smallest effect of interest (in the statistic's units, or a fraction of the
        reference with ``relative``) and why it has that size.
    relative
        The sesoi is a fraction of the reference.
    log
        The statistic is positive: its replicates are averaged and compared on the log
        scale (a geometric mean; a ratio's interval never crosses zero).
    design
        ``"models"`` (the mean over the zoo's models) or ``"architecture"`` (EGA minus
        standard attention, :data:`DESIGNS`).
    symbol, words
        The statistic in math (MyST) and in words (an axis label).
    """

    part: str
    case: str
    statistic: str
    args: Mapping
    direction: str
    reference: float
    sesoi: float
    sesoi_reason: str
    relative: bool = False
    log: bool = False
    design: str = "models"
    symbol: str = ""
    words: str = ""

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction: expected one of {DIRECTIONS}, got {self.direction!r}")
        if self.design not in DESIGNS:
            raise ValueError(f"design: expected one of {DESIGNS}, got {self.design!r}")
        if not self.sesoi >= 0:
            raise ValueError(f"sesoi: expected a number >= 0, got {self.sesoi!r}")
        if self.log and not self.reference > 0:
            raise ValueError(f"reference: a log-scale test needs > 0, got {self.reference!r}")

    def boundary(self, sesoi: float | None = None) -> tuple[float, float]:
        """``(low, high)``: where the smallest effect of interest ends (``sesoi``: another
        size than the registry's, e.g. an axis of the curve). ``greater`` needs the
        statistic above ``low`` (``high`` is inf), ``less`` below ``high``, ``within``
        inside both."""
        s = self.sesoi if sesoi is None else float(sesoi)
        ref = self.reference
        lo, hi = sorted((ref * (1 - s), ref * (1 + s)) if self.relative else (ref - s, ref + s))
        inf = float("inf")
        if self.direction == "greater":
            return hi, inf
        if self.direction == "less":
            return -inf, lo
        return lo, hi


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
    tests
        The tests that decide it (:class:`ClaimTest`); parts in order, cases in order.
    stated
        Numbers the claim states that the measurements read (C1's and C2's scales, C4's
        lag ranges, C6's budgets).
    source
        What decides it: ``"fields"``, ``"pruning"`` or ``"losses"``.
    axes
        The axes of the specification curve its verdict depends on (besides the zoo and
        the unit of inference, which every claim has).
    varies_with
        ``{(axis, value): axes}``: under that reading only these axes (and ``axis``) vary,
        the others stay at the default reading (C4's windows on the paper's lags depend
        on their width only).
    no_joint, no_shuffled, no_untrained
        Why the claim has no joint test over the curve / no shuffled-snippet column / no
        column on the untrained models ("" when it has).
    pages
        The book pages that examine it.
    """

    id: str
    kind: str
    paper: str
    tests: tuple[ClaimTest, ...] = ()
    stated: Mapping = field(default_factory=dict)
    source: str = "fields"
    axes: tuple[str, ...] = ()
    varies_with: Mapping = field(default_factory=dict)
    no_joint: str = ""
    no_shuffled: str = ""
    no_untrained: str = ""
    pages: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        if self.source not in SOURCES:
            raise ValueError(f"source: expected one of {SOURCES}, got {self.source!r}")
        for (axis, _), keep in self.varies_with.items():
            if not {axis, *keep} <= set(self.axes):
                raise ValueError(f"{self.id}: varies_with names axes outside {self.axes}")
        designs = {t.design for t in self.tests}
        if len(designs) > 1:
            raise ValueError(f"{self.id}: expected one design for every test, got {designs}")
        ids = [(t.part, t.case) for t in self.tests]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.id}: expected distinct (part, case) per test")

    @property
    def parts(self) -> tuple[str, ...]:
        """The named parts, in order ("" for a claim without parts)."""
        return tuple(dict.fromkeys(t.part for t in self.tests))

    def test(self, part: str, case: str = "") -> ClaimTest:
        """The test of ``part`` (and ``case``); a clear error for an unknown one."""
        for t in self.tests:
            if (t.part, t.case) == (part, case):
                return t
        have = [(t.part, t.case) for t in self.tests]
        raise ValueError(f"{self.id}: expected a part and case of {have}, got {(part, case)}")

    @property
    def design(self) -> str:
        """``"models"`` or ``"architecture"`` (every test of a claim has the same)."""
        return self.tests[0].design if self.tests else "models"


def qualified_id(claim_id: str, t: ClaimTest) -> str:
    """``"C2:shift"``, ``"C7:layer 3"``, ``"C6:depth:4 heads"``: a test's id."""
    return ":".join(x for x in (claim_id, t.part, t.case) if x)


#: A test of a positive statistic (T_spec, H*, the energy, a ratio): its sesoi a fraction
#: of the reference, its replicates compared on the log scale.
_positive = functools.partial(ClaimTest, relative=True, log=True)


def _claims() -> tuple[Claim, ...]:
    c1_scale, c2_scale = 7.0, 20.0
    c4_lags = {2: (2, 10), 4: (10, 35), 6: (10, 40)}
    depth_budgets, guide_budgets = (4, 8), (8, 16, 24)
    # the slope of log E(a): from 4 lags (inside every grid, twice the sampling limit) to 64
    # (a quarter of the context, clear of the grid's coarse end at L/2)
    slope_range = (4.0, 64.0)
    share_words = "{band} share of E(a), layers {layers}"
    majority = (
        "a band holds the energy when more than half of E(a) lies in it (the energy's median "
        "scale is inside the band); "
    )
    return (
        Claim(
            "C1",
            "empirical",
            f"layers 1–2 put scalogram energy at fine scales, a ≤ {c1_scale:g}",
            tests=(
                ClaimTest(
                    "",
                    "",
                    "band_share",
                    {"band": "fine", "layers": EARLY},
                    "greater",
                    0.5,
                    SHARE_SESOI[0],
                    majority + SHARE_SESOI[1],
                    symbol=r"F_\mathrm{fine}(1,2)",
                    words=share_words.format(band=f"fine (a ≤ {c1_scale:g})", layers="1–2"),
                ),
            ),
            stated={"scale": c1_scale},
            axes=SCALE_AXES,
            pages=("03-scalogram",),
        ),
        Claim(
            "C2",
            "empirical",
            f"layers 5–6 put it at coarse scales, a ≥ {c2_scale:g}",
            tests=(
                ClaimTest(
                    "location",
                    "",
                    "band_share",
                    {"band": "coarse", "layers": LATE},
                    "greater",
                    0.5,
                    SHARE_SESOI[0],
                    majority + SHARE_SESOI[1],
                    symbol=r"F_\mathrm{coarse}(5,6)",
                    words=share_words.format(band=f"coarse (a ≥ {c2_scale:g})", layers="5–6"),
                ),
                ClaimTest(
                    "shift",
                    "",
                    "band_change",
                    {"band": "fine"},
                    "less",
                    0.0,
                    SHARE_SESOI[0],
                    "C1 and C2 together say the energy moves from fine to coarse scales with "
                    "depth: the fine share falls from the first layer to the last (its "
                    "least-squares line over every layer); " + SHARE_SESOI[1],
                    symbol=r"\Delta_\mathrm{depth} F_\mathrm{fine}",
                    words="change of the fine share from the first layer to the last",
                ),
            ),
            stated={"scale": c2_scale, "slope_range": slope_range},
            axes=SCALE_AXES,
            pages=("03-scalogram",),
        ),
        Claim(
            "C3",
            "empirical",
            "early T_spec ≈ 1.0 (distributed); late layers more concentrated",
            tests=(
                _positive(
                    "size",
                    "",
                    "level",
                    {"quantity": "T_spec", "layers": EARLY},
                    "within",
                    1.0,
                    0.25,
                    "the paper says 'about 1.0': read as within 25 %",
                    symbol=r"T_\mathrm{spec}(1,2)",
                    words="T_spec, layers 1–2 (geometric mean)",
                ),
                _positive(
                    "contrast",
                    "",
                    "ratio",
                    {"quantity": "T_spec", "numerator": LATE, "denominator": EARLY},
                    "less",
                    1.0,
                    *RATIO_SESOI,
                    symbol=r"T_\mathrm{spec}(5,6) / T_\mathrm{spec}(1,2)",
                    words="T_spec ratio, layers 5–6 to 1–2",
                ),
            ),
            axes=("n", "fit"),
            no_shuffled="T_spec describes how the variance across snippets spreads over POD "
            "modes; shuffling changes what varies between snippets, not the lag structure",
            pages=("07-spectral-concentration", "11-uncertainty-convergence"),
        ),
        Claim(
            "C4",
            "empirical",
            "scale-selective modes: layer 2 at lags 2–10, layer 4 at 10–35, layer 6 at 10–40",
            tests=tuple(
                ClaimTest(
                    f"layer {layer}",
                    "",
                    "lag_enrichment",
                    {"layer": layer},
                    "greater",
                    0.0,
                    SHARE_SESOI[0],
                    "mode 1 shows structure at the paper's lags when it puts more of its lag "
                    "energy there than the window alone does; a surplus below 0.05 of the "
                    "energy is the window's shape, not the mode's",
                    symbol=rf"F - F_\mathrm{{window}}\ (\text{{layer {layer}}})",
                    words=f"mode 1's lag-energy share in lags {lo}–{hi} minus the window's",
                )
                for layer, (lo, hi) in c4_lags.items()
            ),
            stated={"lags": c4_lags, "peaks6": 2},
            axes=(*WINDOW_AXES, "c4_window"),
            varies_with={("c4_window", "range"): ("width",)},
            pages=("04-windows", "05-pod"),
        ),
        Claim(
            "C5",
            "empirical",
            "H*(0.10): layers 1–2 need > 150 modes; layers 3–6 about 91",
            tests=(
                _positive(
                    "early",
                    "",
                    "level",
                    {"quantity": "H_star", "layers": EARLY},
                    "greater",
                    150.0,
                    0.0,
                    "the paper states the bound itself (testable only where N − 1 > 150)",
                    symbol=r"H^*_{1,2}",
                    words="H*(0.10), layers 1–2 (geometric mean)",
                ),
                _positive(
                    "size",
                    "",
                    "level",
                    {"quantity": "H_star", "layers": MIDDLE_LATE},
                    "within",
                    91.0,
                    0.15,
                    "the paper says 'about 91': read as within 15 %",
                    symbol=r"H^*_{3\text{–}6}",
                    words="H*(0.10), layers 3–6 (geometric mean)",
                ),
                _positive(
                    "contrast",
                    "",
                    "ratio",
                    {"quantity": "H_star", "numerator": EARLY, "denominator": MIDDLE_LATE},
                    "greater",
                    1.0,
                    *RATIO_SESOI,
                    symbol=r"H^*_{1,2} / H^*_{3\text{–}6}",
                    words="H* ratio, layers 1–2 to 3–6",
                ),
            ),
            stated={"eps": 0.10},
            axes=("n", "criterion"),
            no_shuffled="H* counts POD modes of the variance across snippets (as C3)",
            pages=("08-effective-rank", "11-uncertainty-convergence"),
        ),
        Claim(
            "C6",
            "empirical",
            "uniform 8 heads over-specify deep layers, under-specify early ones",
            tests=(
                *(
                    ClaimTest(
                        "depth",
                        f"{b} heads",
                        "depth_pruning",
                        {"budget": b},
                        "greater",
                        0.0,
                        LOSS_SESOI[0],
                        "removing heads of over-specified layers costs less: " + LOSS_SESOI[1],
                        symbol=r"\Delta\mathcal{L}_{1,2} - \Delta\mathcal{L}_{5,6}",
                        words=f"loss increase, {b} heads removed at random in layers 1–2 "
                        "minus in layers 5–6 (nats/char)",
                    )
                    for b in depth_budgets
                ),
                *(
                    ClaimTest(
                        "guide",
                        f"{guide} {b} heads",
                        "guided_pruning",
                        {"budget": b, "strategy": strategy},
                        "greater",
                        0.0,
                        LOSS_SESOI[0],
                        "H* guides the removal when it costs less than random removal of "
                        "as many heads: " + LOSS_SESOI[1],
                        symbol=r"\Delta\mathcal{L}_\mathrm{random} - \Delta\mathcal{L}_{H^*}",
                        words=f"loss increase, random minus {guide} removal of {b} heads "
                        "(nats/char)",
                    )
                    for guide, strategy in (("low-H*", "low-H*"), ("allocation", "H*-allocation"))
                    for b in guide_budgets
                ),
            ),
            stated={"depth_budgets": depth_budgets, "guide_budgets": guide_budgets},
            source="pruning",
            no_shuffled="head pruning needs the validation loss of the trained text",
            no_untrained="head pruning measures what training put into the heads",
            pages=("12-head-pruning",),
        ),
        Claim(
            "C7",
            "empirical",
            "EGA models show systematically higher scalogram energy in every layer",
            tests=tuple(
                _positive(
                    "",
                    f"layer {layer}",
                    "level",
                    {"quantity": "energy", "layers": (layer,)},
                    "greater",
                    1.0,
                    RATIO_SESOI[0],
                    "'systematically higher' read as at least 10 % higher: " + RATIO_SESOI[1],
                    design="architecture",
                    symbol=r"E_\mathrm{EGA} / E_\mathrm{baseline}",
                    words=f"scalogram energy, EGA / baseline, layer {layer}",
                )
                for layer in range(1, 7)
            ),
            axes=SCALE_AXES,
            pages=("09-energy-gated-attention",),
        ),
        Claim(
            "C8",
            "empirical",
            "EGA vs baseline: slightly higher T_spec in layers 3–4, lower in 5–6",
            tests=tuple(
                _positive(
                    f"layers {a}–{b}",
                    "",
                    "level",
                    {"quantity": "T_spec", "layers": (a, b)},
                    direction,
                    1.0,
                    *SLIGHT_SESOI,
                    design="architecture",
                    symbol=r"T_\mathrm{spec,EGA} / T_\mathrm{spec,baseline}",
                    words=f"T_spec, EGA / baseline, layers {a}–{b}",
                )
                for (a, b), direction in (((3, 4), "greater"), ((5, 6), "less"))
            ),
            axes=("n", "fit"),
            no_shuffled="an architecture contrast of T_spec (as C3)",
            pages=("07-spectral-concentration", "09-energy-gated-attention"),
        ),
        Claim(
            "C9",
            "empirical",
            "plain POD mixes scales; scale-selective POD separates them",
            tests=(
                _positive(
                    "",
                    "",
                    "spread_ratio",
                    {},
                    "less",
                    1.0,
                    0.10,
                    "the windowed mode separates scales when its scale spread is at least 10 % "
                    "narrower than the plain mode's (ratio below 0.9)",
                    symbol=r"D",
                    words="scale spread of windowed / plain mode 1 (geometric mean over the "
                    "windowed layers)",
                ),
            ),
            axes=(*WINDOW_AXES, "c9_margin"),
            pages=("05-pod",),
        ),
        Claim(
            "C10",
            "theorem",
            "POD modes are the optimal rank-K linear basis (Theorem 1)",
            stated={"gap": 1e-8},
            no_joint="Theorem 1 is an identity of POD on any ensemble: an exact check",
            no_shuffled="Theorem 1 is an identity of POD on any ensemble",
            pages=("05-pod",),
        ),
        Claim(
            "L",
            "cited",
            "EGA lowers validation loss (EGA paper: about −0.10 nats/char)",
            tests=(
                ClaimTest(
                    "direction",
                    "",
                    "loss",
                    {},
                    "less",
                    0.0,
                    *LOSS_SESOI,
                    design="architecture",
                    symbol=r"\Delta\mathcal{L}",
                    words="validation loss, EGA − baseline (nats/char)",
                ),
                ClaimTest(
                    "size",
                    "",
                    "loss",
                    {},
                    "within",
                    -0.10,
                    0.25,
                    "the cited paper says 'about 0.10 nats': read as within 25 %",
                    relative=True,
                    design="architecture",
                    symbol=r"\Delta\mathcal{L}",
                    words="validation loss, EGA − baseline (nats/char)",
                ),
            ),
            source="losses",
            no_shuffled="the loss claim is about training, not the fields",
            no_untrained="the loss claim is about training",
            pages=("10-training",),
        ),
    )


#: Every claim, by id, in the scorecard's order.
REGISTRY: dict[str, Claim] = {c.id: c for c in _claims()}


def registry_hash() -> str:
    """sha256 of every claim's facts (a cache-key part: an edited threshold, smallest
    effect or reading is a new key)."""
    blob = repr([asdict(c) for c in REGISTRY.values()])
    return hashlib.sha256(blob.encode()).hexdigest()
