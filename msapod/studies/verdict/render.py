"""The one place a decided claim becomes words.

Every verdict word, a test's line, a claim's verdict box and the joint test's sentence
are made here from the numbers of an :class:`~.outcome.Outcome` or of the curve
(``multiverse.nc``). The pages, the scorecard and the report of ``msapod analyze`` read
a claim only through these functions, so none can disagree with another.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from ... import plots
from ..measure.convergence import FIXED_K
from ..registry import JOINT_STATISTIC, REGISTRY, ClaimTest, qualified_id
from .curve import CURVE_AXES, MAIN_READING, claim_axes
from .inference import ALPHA
from .outcome import Outcome, TestResult

__all__ = [
    "AXIS_NAMES",
    "MEANING",
    "STATISTIC_WORDS",
    "TestView",
    "WORDS",
    "claim_views",
    "flip_words",
    "fmt_num",
    "joint_sentence",
    "main_code",
    "needs_text",
    "outcome_rows",
    "reading_words",
    "robustness_sentence",
    "spec_index",
    "test_line",
    "theorem_text",
    "word",
]

#: The verdict word of each code (the vocabulary, stated once).
WORDS = {
    "holds": "holds",
    "partly": "partly",
    "refuted": "does not hold",
    "undecided": "not significant",
    "untestable": "not testable as stated",
}
#: What each verdict word means, in one sentence.
MEANING = {
    "holds": "every part of the claim is beyond its smallest effect of interest in the "
    "claimed direction by its 90 % interval (two one-sided tests at 95 %)",
    "partly": "some named parts of the claim hold and at least as many as are refuted",
    "refuted": "the interval excludes effects of the smallest interesting size in the claimed "
    "direction (the effect is negligible or reversed) for more parts than hold",
    "undecided": "the interval includes the boundary of the smallest effect of interest: the "
    "data decide neither way",
    "untestable": "the data or the setting cannot decide the claim (the reason is given)",
}
#: The joint test's statistics in words.
STATISTIC_WORDS = {
    "median_effect": "median effect",
    "share_for": "share significant for",
    "share_against": "share significant against",
    "stouffer_z": "Stouffer's Z",
}
#: Each axis of the specification curve by name, in words.
AXIS_NAMES = {
    "zoo": "zoo",
    "field": "field",
    "normalisation": "scale-spectrum normalisation",
    "scale_min": "smallest scale",
    "scale_stat": "scale statistic",
    "c4_window": "C4's windows",
    "centre": "window centre",
    "width": "window width",
    "criterion": "H* criterion",
    "n": "ensemble size N",
    "fit": "T_spec fit range",
    "unit": "unit of inference",
    "c9_margin": "C9's smallest effect",
}
_READING = {
    "field": lambda v, r: f"scalogram of {v}",
    "normalisation": lambda v, r: "E(a)/a" if v == "rectified" else "raw E(a)",
    "scale_min": lambda v, r: f"scales from {v:g} to L/2",
    "scale_stat": lambda v, r: {
        "peak": "a* at the strongest interior maximum",
        "argmax": "a* at the global maximum",
        "centroid": "a* as the scale centroid",
    }[v],
    "c4_window": lambda v, r: {
        "range": "window on the paper's lags",
        "dominant scale": "window at the dominant scale",
    }[v],
    "centre": lambda v, r: {
        "energy-max": "window centre at the energy maximum",
        "period": "window centre at the period of a*",
    }[v],
    "width": lambda v, r: (
        f"σ = {v:g} × half the range" if r.get("c4_window") == "range" else f"σ = {v:g} a*"
    ),
    "criterion": lambda v, r: f"{v} criterion",
    "n": lambda v, r: f"N = {v}",
    "fit": lambda v, r: "fit k = 1..N/2" if v == "default" else "fit k = {}..{}".format(*FIXED_K),
    "unit": lambda v, r: {"seeds": "seeds as replicates", "snippets": "snippets only"}[v],
    "c9_margin": lambda v, r: f"D below {1 - v:g}",
}


def word(code: str) -> str:
    """The verdict word of ``code``."""
    if code not in WORDS:
        raise ValueError(f"code: expected one of {list(WORDS)}, got {code!r}")
    return WORDS[code]


def fmt_num(x: float, sig: int = 3) -> str:
    """``x`` as every page prints a number (:func:`msapod.plots.number`)."""
    return plots.number(float(x), sig)


def reading_words(
    reading: Mapping, axes: Sequence[str], tags: Mapping | None = None, *, claim: str = ""
) -> str:
    """The reading of ``axes`` in words, each tagged "paper" or "book" where ``tags``
    gives one. Windows sit on the paper's lags only for a claim that has the axis
    ``c4_window`` (``claim``, or ``axes`` holding it); elsewhere they sit at a*, and their
    width reads in units of a*."""
    if "c4_window" not in (claim_axes(claim) if claim else axes):
        reading = {**reading, "c4_window": "dominant scale"}
    parts = []
    for a in axes:
        if a in reading and a in _READING:
            tag = (tags or {}).get(a)
            parts.append(_READING[a](reading[a], reading) + (f" ({tag})" if tag else ""))
    return ", ".join(parts)


@dataclass
class TestView:
    """One test's numbers on the statistic's own scale (a ratio as a ratio), as every
    sentence reads them: ``estimate``, the 90 % interval ``lower``/``upper``, the
    boundary ``low``/``high``, the code and the replicates per model."""

    id: str
    test: ClaimTest
    code: str
    estimate: float
    lower: float
    upper: float
    low: float
    high: float
    n_models: int
    values: np.ndarray
    reason: str = ""

    @classmethod
    def scaled(cls, tid: str, t: ClaimTest, code: str, numbers, values, reason: str = ""):
        """The view of numbers on the decision scale: ``numbers`` the estimate, lower,
        upper, low and high, ``values`` the replicates."""
        f = np.exp if t.log else (lambda x: x)
        v = np.asarray(values, float)
        nums = (float(f(float(x))) for x in numbers)
        return cls(tid, t, code, *nums, int(np.isfinite(v).sum()), f(v), reason)

    @classmethod
    def of(cls, r: TestResult) -> TestView:
        nums = (r.estimate, r.lower, r.upper, r.low, r.high)
        return cls.scaled(r.id, r.test, r.code, nums, r.stat.value, r.reason)


def test_line(v: TestView, math: bool = True) -> str:
    """One test in a line: the statistic, its estimate with the 90 % interval over the
    replicates, what the claim needs (the boundary of the smallest effect) and its word."""
    t = v.test
    sym = f"${t.symbol}$" if math and t.symbol else t.words
    name = " ".join(x for x in (t.part, t.case) if x)
    head = f"({name}) " if name else ""
    if v.code == "untestable":
        point = f" = {fmt_num(v.estimate)} (point value)" if np.isfinite(v.estimate) else ""
        return f"{head}{sym}{point}: **{word(v.code)}** ({v.reason})"
    over = "EGA − baseline, " if t.design == "architecture" and not t.log else ""
    est = f"{fmt_num(v.estimate)} [{fmt_num(v.lower)}, {fmt_num(v.upper)}]"
    needs = needs_text(t, v)
    return f"{head}{sym} = {est} ({over}{v.n_models} models); needs {needs}: **{word(v.code)}**"


def _stated(x: float) -> str:
    """A number the registry states, in its shortest form ("0.55", "−0.125", "1.1")."""
    return f"{float(x):.3g}"


def needs_text(t: ClaimTest, v: TestView) -> str:
    """What the claim needs of a test's statistic, in words: the boundary of its smallest
    effect of interest and where it comes from."""
    s = f"{100 * t.sesoi:g} %" if t.relative else _stated(t.sesoi)
    ref = _stated(t.reference)
    if t.direction == "within":
        return f"{_stated(v.low)} to {_stated(v.high)} ({ref} ± {s})"
    op, b = (">", v.low) if t.direction == "greater" else ("<", v.high)
    if t.sesoi == 0:
        return f"{op} {_stated(b)}"
    return f"{op} {_stated(b)} ({ref} {'+' if op == '>' else '−'} {s})"


#: A relative gap of float64 round-off for Theorem 1's sums: any gap below it prints as
#: this bound, so the words are the same on any machine.
ROUNDOFF = 1e-14


def theorem_text(gap: float, beaten: int, trials: int) -> str:
    """Theorem 1's exact check in words: the relative gap between the rank-K error and the
    eigenvalue tail as the round-off bound it shows (:data:`ROUNDOFF`), and how many random
    orthonormal bases beat POD."""
    bound = plots.below(max(float(gap), ROUNDOFF / 2)) if np.isfinite(gap) else "not finite"
    return (
        f"Measured: the rank-$K$ error equals the tail sum to a relative gap {bound}; "
        f"{int(beaten)} of {int(trials)} random orthonormal bases beat POD"
    )


# ---------------------------------------------------------------------------------------
# the curve


def _zoo(mv: xr.Dataset, zoo: str | None) -> str:
    zoos = [z for z in str(mv.attrs.get("zoos", "")).split(",") if z]
    zoo = zoo or str(mv.attrs["main_zoo"])
    if zoo not in zoos:
        raise LookupError(f"zoo: {zoo!r} is not in this curve (zoos: {zoos})")
    return zoo


def spec_index(mv: xr.Dataset, claim: str, zoo: str | None = None, **axes) -> int:
    """The index along ``spec`` of ``claim``'s reading that differs from the default only
    in ``axes`` (e.g. ``field="u"``), on ``zoo`` (default the main zoo): the one
    selection of a curve row."""
    z = _zoo(mv, zoo)
    bad = [a for a in axes if a not in CURVE_AXES]
    if bad:
        raise ValueError(f"axes: expected names from {list(CURVE_AXES)}, got {bad}")
    want = {**MAIN_READING, **axes}
    keep = mv["applicable"].sel(claim=claim).values & (mv["zoo"].values == z)
    for a, v in want.items():
        keep &= mv[a].values == v
    idx = np.flatnonzero(keep)
    if len(idx) != 1:
        raise LookupError(f"{claim}: no single reading {axes} on zoo {z!r} ({len(idx)} match)")
    return int(idx[0])


def main_code(mv: xr.Dataset, claim: str, zoo: str | None = None, **axes) -> str:
    """The code of ``claim`` under the default reading (or the one differing in ``axes``)."""
    return str(mv["verdict"].sel(claim=claim).values[spec_index(mv, claim, zoo, **axes)])


def claim_views(mv: xr.Dataset, claim: str, zoo: str | None = None, **axes) -> list[TestView]:
    """The :class:`TestView` of every test of ``claim`` under one reading of the curve."""
    j = spec_index(mv, claim, zoo, **axes)
    z = _zoo(mv, zoo)
    models = mv["model_zoo"].values == z
    out = []
    for t in REGISTRY[claim].tests:
        tid = qualified_id(claim, t)
        row = mv.sel(test=tid).isel(spec=j)
        nums = (row[k].values for k in ("estimate", "lower", "upper", "low", "high"))
        code, why = str(row["code"].values), str(row["reason"].values)
        out.append(TestView.scaled(tid, t, code, nums, row["value"].values[models], why))
    return out


def robustness_sentence(mv: xr.Dataset, claim: str) -> str:
    """Whether the claim's verdict is robust to every axis the book varies and the share
    of its readings that agree."""
    c = mv[["robust_share", "robust", "flips", "applicable", "verdict"]].sel(claim=claim)
    n = int((c["applicable"] & (c["verdict"] != "untestable")).sum())
    if n <= 1:
        return "one reading only"
    head = f"{float(c['robust_share']):.0%} of its {n} decided readings agree"
    if bool(c["robust"]):
        return f"**robust**: no single choice the book varies changes it ({head})"
    named = "; ".join(flip_words(f, claim) for f in str(c["flips"].values).split("; ") if f)
    return f"**fragile**: {named} changes it ({head})"


def flip_words(flip: str, claim: str = "") -> str:
    """One departure from the default reading (``"axis=value"`` of the curve's ``flips``)
    in words, for ``claim``'s reading."""
    axis, value = flip.split("=", 1)
    if axis == "zoo":
        return f"the {value} zoo"
    try:
        v = json.loads(value)
    except ValueError:
        v = value
    if axis not in _READING:
        return f"{AXIS_NAMES[axis]} {value}"
    return reading_words({**MAIN_READING, axis: v}, [axis], claim=claim)


def joint_sentence(mv: xr.Dataset, claim: str) -> str:
    """The joint test over the claim's curve in words: the statistic chosen in advance
    (:data:`~msapod.studies.registry.JOINT_STATISTIC`) with its two-sided p-value and the
    relabellings; an uninformative statistic says so."""
    if "joint" not in mv or not str(mv["joint_null"].sel(claim=claim).values):
        return "no joint test (" + (REGISTRY[claim].no_joint or "one reading") + ")"
    s = JOINT_STATISTIC[0]
    row = mv.sel(claim=claim, statistic=s)
    B = int(mv["joint_relabellings"].sel(claim=claim))
    null = str(mv["joint_null"].sel(claim=claim).values)
    if not bool(row["joint_informative"]):
        return (
            f"joint test over the curve: {STATISTIC_WORDS[s]} is uninformative (no {null} moves it)"
        )
    p, value = float(row["joint_p"]), float(row["joint"])
    way = ("towards" if value > 0 else "away from") if p < ALPHA else ""
    verdict = (
        f": the curve leans {way} the claimed direction beyond chance (against no effect, "
        "not against the smallest effect of interest)"
        if way
        else ", neither direction"
    )
    return (
        f"joint test over the curve: {STATISTIC_WORDS[s]} {fmt_num(value)}, two-sided p = "
        f"{fmt_num(p, 2)} over {B} {null}{verdict}"
    )


# ---------------------------------------------------------------------------------------
# outcomes outside the curve (check_claims, msapod analyze)


def outcome_rows(outcomes: Mapping[str, Outcome]) -> pd.DataFrame:
    """``{claim: Outcome}`` as a table: index ``claim``; columns ``paper``, ``verdict``
    (the word), ``code`` and ``measured`` (each test's line, plain text), ``reason``."""
    rows = {}
    for claim, out in outcomes.items():
        if out.claim == "C10" and out.extra:
            e = out.extra
            measured = theorem_text(e["gap"], e["beaten"], e["trials"]).replace("$", "")
        else:
            measured = "; ".join(
                test_line(TestView.of(r), math=False).replace("**", "") for r in out.tests
            )
        rows[claim] = {
            "paper": REGISTRY[claim].paper,
            "verdict": word(out.code),
            "code": out.code,
            "measured": measured,
            "reason": out.reason,
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("claim")
