"""The claim registry: every fact about a claim in one place, read by the rules, the nulls,
the specification curve, the scorecard and the verdict boxes."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from msapod.studies import registry
from msapod.studies.registry import REGISTRY, Claim
from msapod.studies.verdict import claims as cl
from msapod.studies.verdict import multiverse as mv
from msapod.studies.verdict import nulls, rules, scorecard

VERDICT_DIR = Path(rules.__file__).parent
REGISTRY_FILE = Path(registry.__file__)


def test_every_claim_once_with_its_kind():
    assert list(REGISTRY) == [f"C{i}" for i in range(1, 11)] + ["L"]
    assert [c.id for c in REGISTRY.values() if c.kind == "theorem"] == ["C10"]
    assert [c.id for c in REGISTRY.values() if c.kind == "cited"] == ["L"]
    assert REGISTRY["C3"].range == pytest.approx((0.75, 1.25))
    assert REGISTRY["C5"].range == pytest.approx((0.85 * 91, 1.15 * 91))
    with pytest.raises(ValueError, match="claim: expected one of"):
        registry.claim("C11")
    with pytest.raises(ValueError, match="a stated size needs its tolerance"):
        Claim("X", "empirical", "x", about=1.0, no_null="none")
    with pytest.raises(ValueError, match="give a null or the reason"):
        Claim("X", "empirical", "x")


def test_the_tables_are_views_of_the_registry():
    for c in REGISTRY.values():
        assert cl.CLAIMS["loss" if c.id == "L" else c.id] == c.paper
        assert cl.RULE_LINES[c.id] == c.rule_line
        assert cl.KINDS[c.id] == c.kind
        assert mv.CLAIM_AXES[c.id] == c.axes
        assert scorecard.PAGES[c.id] == ", ".join(c.pages)
        if c.id != "C6":
            assert rules.THRESHOLDS[c.id] == c.range
        assert nulls.DEFAULT_NULL.get(c.id) == c.null
        assert (c.id in nulls.SHUFFLED_CLAIMS) == (not c.no_shuffled)
    assert rules.PAPER_LAGS == REGISTRY["C4"].stated["lags"]
    assert rules.C8_SIGNS == REGISTRY["C8"].signs
    from msapod.studies.verdict import check, trajectory

    assert check.FIELD_CLAIMS == tuple(c for c in REGISTRY if c not in ("C6", "L"))
    assert set(nulls.NO_NULL_CLAIMS) == {"C6", "L"}
    assert "C10" not in trajectory.STEP_CLAIMS and "C6" not in trajectory.STEP_CLAIMS
    with pytest.raises(ValueError, match="source: expected one of"):
        Claim("X", "empirical", "x", source="logs", no_null="none")


def test_shipped_intervals_lie_inside_what_each_statistic_can_take():
    """Every estimate and interval of the shipped curve's default reading (the statistic
    the registry names) lies within its claim's ``bounds``: no negative rank or ratio,
    no share beyond [0, 1]."""
    from msapod.studies.store.results import load_result

    curve = load_result("multiverse")
    checked = 0
    for c in REGISTRY.values():
        lo, hi = c.bounds
        if np.isinf(lo) and np.isinf(hi):
            continue
        sub = cl.main_numbers(c.id, curve)
        for name in ("stat", "lower", "upper"):
            x = sub[name].values
            x = x[np.isfinite(x)]
            tol = 1e-12 * max(1.0, float(np.abs(x).max(initial=0.0)))
            assert (x >= lo - tol).all() and (x <= hi + tol).all(), (c.id, name)
            checked += x.size
    assert checked > 100


def _numbers(path: Path) -> set[float]:
    tree = ast.parse(path.read_text())
    return {
        float(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, int | float)
        and not isinstance(n.value, bool)
    }


def test_no_stated_number_is_written_outside_the_registry():
    """The thresholds, sizes and tolerances the claims state appear as literals only in
    registry.py: the rules, the nulls, the curve and the pages' renderer read them."""
    # 150 (also the paper's N), 20 (also a rank and a fit range), 0.1 (also a peak floor)
    # and 0.75 (also the robustness share) have other meanings; C5's "> 150" is checked
    # as 150.5 and C3's range by its upper end 1.25
    stated = {7.0, 1.25, 150.5, 91.0, 0.85, 1.15, 0.15, 0.9, 1e-8}
    assert {7.0, 20.0, 150.0, 91.0, 0.15, 0.1, 1e-8} <= _numbers(REGISTRY_FILE)
    for name in ("rules.py", "nulls.py", "multiverse.py", "claims.py", "scorecard.py"):
        found = stated & _numbers(VERDICT_DIR / name)
        assert not found, f"{name} writes stated numbers {sorted(found)}"


def _c1_case(value):
    stat = xr.DataArray(
        np.array([[value, value, 30.0, 30.0, 40.0, 40.0]]),
        dims=("model", "layer"),
        coords={"model": ["m"], "layer": np.arange(1, 7)},
    )
    return rules.rule_dominant_scale("C1", stat, stat * 0.01)


def test_the_rules_read_the_registry(monkeypatch):
    """Moving a threshold in the registry moves the decision: the rules hold no copy."""
    assert _c1_case(8.0).verdict == "does not hold"  # a* = 8 > 7
    moved = dataclasses.replace(REGISTRY["C1"], stated={"scale": 9.0})
    monkeypatch.setitem(REGISTRY, "C1", moved)
    assert _c1_case(8.0).verdict == "holds"

    ratio = xr.DataArray(
        np.full((1, 6), 0.93),
        dims=("model", "layer"),
        coords={"model": ["m"], "layer": np.arange(1, 7)},
    )
    se = ratio * 0.001
    assert rules.rule_c9(ratio, se).verdict == "does not hold"
    c9 = dataclasses.replace(REGISTRY["C9"], stated={"margin": 0.05})
    monkeypatch.setitem(REGISTRY, "C9", c9)
    assert rules.rule_c9(ratio, se).verdict == "holds"
