"""A claim decided under one reading: numbers in, numbers and a verdict code out.

:func:`evaluate` computes every test of a claim on a :class:`~.statistics.Zoo` under one
reading: the statistic per model (:func:`~.statistics.per_model`), the zoo-level interval
for the reading's unit of inference (:func:`interval_of`) and the decision
(:func:`~.inference.decide`). An :class:`Outcome` holds only numbers and codes; its words
are the renderer's (:mod:`.render`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..registry import REGISTRY, ClaimTest, qualified_id
from .inference import Interval, combine_cases, combine_parts, decide, fixed_effect, one_sample
from .inference import welch as welch_interval
from .statistics import Stat, Zoo, per_model

__all__ = ["UNITS", "Outcome", "TestResult", "evaluate", "interval_of", "theorem1"]

#: The units of inference: the models as replicates (the rule) or the models as they are,
#: with only their snippet uncertainty (a comparison reading).
UNITS = ("seeds", "snippets")


@dataclass
class TestResult:
    """One test under one reading.

    Attributes
    ----------
    id, test
        ``"C2:shift"`` and the registry's :class:`~msapod.studies.registry.ClaimTest`.
    stat
        The statistic per model with its snippet standard error (decision scale).
    estimate, se, df, lower, upper
        The zoo-level estimate, its standard error and df, and the 90 % interval the
        decision reads (decision scale: the log for a positive statistic).
    low, high
        The boundary of the smallest effect of interest (decision scale).
    p_holds, p_refuted
        The one-sided p-values of the decision.
    code, reason
        :data:`~.inference.CODES` and, for ``"untestable"``, why.
    """

    id: str
    test: ClaimTest
    stat: Stat
    estimate: float = np.nan
    se: float = np.nan
    df: float = np.nan
    lower: float = np.nan
    upper: float = np.nan
    low: float = np.nan
    high: float = np.nan
    p_holds: float = np.nan
    p_refuted: float = np.nan
    code: str = "untestable"
    reason: str = ""


@dataclass
class Outcome:
    """A claim under one reading: its code, each part's code, each test's numbers.

    ``extra`` holds the numbers of an exact check (Theorem 1: ``gap``, ``beaten``,
    ``trials``)."""

    claim: str
    code: str
    parts: dict[str, str]
    tests: list[TestResult]
    reason: str = ""
    extra: dict = field(default_factory=dict)


def interval_of(stat: Stat, zoo: Zoo, test: ClaimTest, unit: str) -> Interval:
    """The zoo-level :class:`~.inference.Interval` of ``stat`` for ``unit``."""
    if unit not in UNITS:
        raise ValueError(f"unit: expected one of {UNITS}, got {unit!r}")
    treated = zoo.treated() if test.design == "architecture" else None
    if unit == "snippets":
        return fixed_effect(stat.value, stat.se, treated)
    if treated is None:
        return one_sample(stat.value)
    return welch_interval(stat.value, treated)


def _scale(test: ClaimTest, low: float, high: float) -> tuple[float, float]:
    if not test.log:
        return low, high
    with np.errstate(divide="ignore"):
        return float(np.log(low)) if low > 0 else -np.inf, float(np.log(high))


def _why(stat: Stat, unit: str, zoo: Zoo, test: ClaimTest) -> str:
    """Why a test could not be decided, in words."""
    if stat.reason:
        return stat.reason
    if test.design == "architecture":
        t = zoo.treated()
        n1, n0 = int(t.sum()), int((~t).sum())
        need = 2 if unit == "seeds" else 1
        if min(n1, n0) < need:
            which = "at least 2 models of each" if need == 2 else "a model of each"
            return (
                f"an architecture contrast needs {which} architecture ({zoo.treatment}: "
                f"{n1}, {zoo.control}: {n0})"
            )
    elif unit == "seeds" and np.isfinite(stat.value).sum() < 2:
        return "an interval over the models needs at least 2 models"
    return "no snippet standard error of this statistic"


def evaluate_test(zoo: Zoo, reading: Mapping, test: ClaimTest, claim_id: str) -> TestResult:
    """One test of claim ``claim_id`` on ``zoo`` under ``reading`` (with ``unit`` and,
    for C9, ``c9_margin`` the smallest effect)."""
    values = {k: v for k, v in reading.items() if k not in ("unit", "c9_margin", "zoo")}
    stat = per_model(zoo, values, test)
    res = TestResult(qualified_id(claim_id, test), test, stat)
    sesoi = reading.get("c9_margin") if claim_id == "C9" else None
    res.low, res.high = _scale(test, *test.boundary(sesoi))
    unit = reading.get("unit", UNITS[0])
    iv = interval_of(stat, zoo, test, unit)
    res.estimate, res.se, res.df = float(iv.estimate), float(iv.se), float(iv.df)
    d = decide(iv, res.low, res.high, test.direction)
    res.code = str(d["code"])
    res.lower, res.upper = float(d["lower"]), float(d["upper"])
    res.p_holds, res.p_refuted = float(d["p_holds"]), float(d["p_refuted"])
    if res.code == "untestable":
        res.reason = _why(stat, unit, zoo, test)
    return res


def theorem1(zoo: Zoo) -> Outcome:
    """C10, an exact check of Theorem 1 on the evidence's check (rank-K error equals the
    tail sum to the registry's gap; no random orthonormal basis beats POD)."""
    ev = zoo.evidence
    if "t1_gap" not in ev or not np.isfinite(ev["t1_gap"].values).any():
        return Outcome("C10", "untestable", {"": "untestable"}, [], reason="no check run")
    gap = float(np.nanmax(ev["t1_gap"].values))
    beaten, trials = int(np.nansum(ev["t1_beaten"].values)), int(np.nansum(ev["t1_trials"].values))
    code = "holds" if gap <= REGISTRY["C10"].stated["gap"] and beaten == 0 else "refuted"
    where = np.argwhere(np.isfinite(ev["t1_gap"].transpose("model", "layer").values))[0]
    extra = {
        "gap": gap,
        "beaten": beaten,
        "trials": trials,
        "model": zoo.models[where[0]],
        "layer": int(ev["layer"].values[where[1]]),
    }
    return Outcome("C10", code, {"": code}, [], extra=extra)


def evaluate(claim_id: str, zoo: Zoo, reading: Mapping) -> Outcome:
    """Claim ``claim_id`` decided on ``zoo`` under ``reading``: every test, each part
    from its cases (:func:`~.inference.combine_cases`), the claim from its parts
    (:func:`~.inference.combine_parts`)."""
    c = REGISTRY[claim_id]
    if c.kind == "theorem":
        return theorem1(zoo)
    results = [evaluate_test(zoo, reading, t, claim_id) for t in c.tests]
    parts = {}
    for part in c.parts:
        rs = [r for r in results if r.test.part == part]
        parts[part] = str(
            combine_cases(np.array([r.code for r in rs]), np.array([r.p_refuted for r in rs]))
        )
    code = str(combine_parts(np.array(list(parts.values()))))
    reason = next((r.reason for r in results if r.reason), "") if code == "untestable" else ""
    return Outcome(claim_id, code, parts, results, reason)
