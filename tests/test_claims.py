"""Per-claim rules (msapod.studies.verdict.rules) and the verdict admonitions (claims.py):
planted answers on small synthetic numbers."""

import numpy as np
import pytest
import xarray as xr

from msapod.studies.measure.evidence import interior_peak, scale_reading
from msapod.studies.verdict.claims import VERDICTS, Z95, classify, combine
from msapod.studies.verdict.rules import (
    combine_core,
    decide,
    rule_c3,
    rule_c4,
    rule_c5,
    rule_c7,
    rule_c8,
    rule_c9,
    rule_c10,
    rule_dominant_scale,
    rule_loss,
)

MODELS = ["baseline-1", "baseline-2", "ega-1", "ega-2"]
ARCH = ["baseline", "baseline", "ega", "ega"]


def per_layer(values, se=None):
    """(model, layer) DataArray from a per-layer list (same in every model) or a 4 x 6."""
    v = np.broadcast_to(np.asarray(values, float), (4, 6)).copy()
    da = xr.DataArray(
        v,
        dims=("model", "layer"),
        coords={"model": MODELS, "layer": np.arange(1, 7), "architecture": ("model", ARCH)},
    )
    return da, (None if se is None else xr.full_like(da, se))


def assert_holm_half(half, se, k, df=None):
    """Each half-width in ``half`` is ``q se`` at one of Holm's levels over ``k`` cases
    (0.05 / k, ..., 0.05): the interval a Holm step reads."""
    from scipy import stats

    tails = 1 - 0.05 / np.arange(k, 0, -1) / 2
    qs = stats.norm.ppf(tails) if df is None else stats.t.ppf(tails, df)
    for h in np.ravel(half):
        assert np.isclose(h / se, qs, rtol=1e-9).any(), (h / se, qs)


def test_interior_peak_inside_vs_edge():
    s = np.geomspace(1, 128, 48)
    inside = np.exp(-0.5 * ((np.log(s) - np.log(12.0)) / 0.4) ** 2)
    got = interior_peak(inside, s)
    assert got == pytest.approx(12.0, rel=0.03)  # refined between grid points
    rising = s**0.5  # maximum at the last scale: an edge, not a dominant scale
    falling = 1 / s  # maximum at the first scale
    assert np.isnan(interior_peak(rising, s)) and np.isnan(interior_peak(falling, s))
    both = np.stack([inside, rising])
    out = interior_peak(both, s)
    assert np.isfinite(out[0]) and np.isnan(out[1])


def test_scale_reading_interior_or_bound():
    s = np.geomspace(3, 128, 48)
    inside = np.exp(-0.5 * ((np.log(s) - np.log(12.0)) / 0.4) ** 2)
    spectra = np.stack([inside, s**0.5, 1 / s])
    for kind in ("peak", "argmax"):
        v, edge = scale_reading(spectra, s, kind)
        assert v[0] == pytest.approx(12.0, rel=0.03) and edge[0] == 0
        assert (v[1], edge[1]) == (s[-1], 1) and (v[2], edge[2]) == (s[0], -1)
    # an interior local maximum below a larger edge: "peak" keeps it, "argmax" the edge
    bump = 1 / s + 0.02 * np.exp(-0.5 * ((np.log(s) - np.log(30.0)) / 0.2) ** 2)
    assert scale_reading(bump, s, "peak")[1] == 0
    assert scale_reading(bump, s, "argmax")[1] == -1


def c1(*args, **kw):
    return rule_dominant_scale("C1", *args, **kw)


def c2(*args, **kw):
    return rule_dominant_scale("C2", *args, **kw)


def test_edges_are_bounds_that_decide_c1_and_c2():
    # every maximum at the fine edge of a grid from 3: a* <= 3 supports C1 (<= 7) and
    # contradicts C2 (>= 20); C2's shift contrast cannot be decided (ns)
    stat, se = per_layer([3.0] * 6, 0.0)
    edge = xr.full_like(stat, -1, dtype=int)
    assert c1(stat, se, edge=edge).verdict == "holds"
    assert c2(stat, se, edge=edge).verdict == "does not hold"
    # early at the fine edge, late at the coarse edge (64): both hold, C2's shift too
    stat, se = per_layer([3.0, 3.0, 10, 10, 64.0, 64.0], 0.1)
    edge = xr.zeros_like(stat, dtype=int)
    edge[:, :2], edge[:, 4:] = -1, 1
    for rule in (c1, c2):
        out = rule(stat, se, edge=edge)
        assert out.verdict == "holds" and "bounds" in out.reason
        # a bound reads as the bound, never as a number interval
        assert "[0.0" not in out.interval and ("≤ 3" in out.interval or "≥ 64" in out.interval)
    assert (c2(stat, se, edge=edge).contrast["lower"] > 0).all()
    assert c1(stat, se, edge=edge).contrast is None  # the shift is stated once, in C2
    # nothing measured at all: not testable, said why
    stat, se = per_layer([np.nan] * 6, 0.1)
    out = c1(stat, se)
    assert out.verdict == "not testable as stated" and out.reason


def test_intervals_of_scales_are_on_the_log_scale():
    stat, se = per_layer([26.0] * 6, 19.5)  # symmetric: 26 - 1.96 * 19.5 < 0
    out = c2(stat, se)
    assert (out.lower > 0).all() and (out.upper > out.stat).all()
    ratio = out.upper / out.stat
    np.testing.assert_allclose(ratio, out.stat / out.lower)


def test_shift_contrast_reversed_does_not_hold():
    # early coarse, late fine in every model: the shift is reversed beyond its interval
    stat, se = per_layer([30, 30, 20, 15, 5, 5], 0.5)
    assert c1(stat, se).verdict == "does not hold"
    assert c2(stat, se).verdict == "does not hold"


def test_holm_across_cases():
    # one case two SEs inside: decided; ten such cases: Holm needs more than 1.96 SE
    assert decide([5.0], [1.0], high=7.0).tolist() == ["yes"]
    assert set(decide([5.0] * 10, [1.0] * 10, high=7.0)) == {"ns"}
    assert set(decide([3.0] * 10, [1.0] * 10, high=7.0)) == {"yes"}
    # one case: the 95 % interval read against the range
    for v in np.linspace(4, 10, 25):
        assert decide([v], [1.0], high=7.0)[0] == classify(v - Z95, v + Z95, high=7.0).item()
    # Student-t with few degrees of freedom is wider than the normal
    assert decide([2.5], [1.0], low=0.0).item() == "yes"
    assert decide([2.5], [1.0], low=0.0, df=2).item() == "ns"


@pytest.mark.parametrize(
    ("values", "verdict"),
    [([3, 4, 10, 20, 25, 30], "holds"), ([9, 10, 10, 20, 25, 30], "does not hold")],
)
def test_c1_c2_thresholds(values, verdict):
    stat, se = per_layer(values, 0.2)
    assert c1(stat, se, statistic="centroid").verdict == verdict
    assert c2(stat, se, statistic="centroid").verdict == "holds"
    wide, se_wide = per_layer(values, 5.0)  # an interval across 7: not significant
    assert c1(wide, se_wide).verdict == "not significant"


def test_c3_contrast_and_level():
    T, se = per_layer([1.0, 1.05, 0.9, 0.8, 0.5, 0.45], 0.02)
    assert rule_c3(T, se).verdict == "holds"
    # late layers LESS concentrated (larger T_spec) in every model: reversed contrast
    T, se = per_layer([1.0, 1.05, 1.2, 1.3, 1.6, 1.7], 0.02)
    out = rule_c3(T, se)
    assert out.verdict == "does not hold"
    assert (out.contrast["lower"] > 0).all()
    # contrast right, early T_spec far from 1: partly
    T, se = per_layer([2.0, 2.1, 1.5, 1.4, 0.5, 0.45], 0.02)
    assert rule_c3(T, se).verdict == "partly"


def test_c5_reversed_contrast_does_not_hold_even_if_thresholds_pass():
    # N = 600: layers 1-2 above 150 (passes), layers 3-6 at 91 (passes) would be
    # "holds"; here layers 3-6 need MORE modes than 1-2: the claim's contrast is reversed
    H, se = per_layer([170, 223, 300, 350, 400, 436], 3.0)
    out = rule_c5(H, se, n=600)
    assert out.verdict == "does not hold"
    H, se = per_layer([170, 180, 91, 90, 92, 93], 2.0)
    assert rule_c5(H, se, n=600).verdict == "holds"
    # at N = 150 "> 150" cannot occur: left out, said why, the rest decides
    H, se = per_layer([140, 145, 91, 90, 92, 93], 2.0)
    out = rule_c5(H, se, n=150)
    assert out.verdict == "holds" and "150" in out.reason


def test_c4_unreachable_or_missing_windows_are_not_testable():
    share, _ = per_layer([np.nan] * 6)
    reach = xr.zeros_like(share, dtype=bool)
    assert rule_c4(share, reach).verdict == "not testable as stated"
    share, _ = per_layer([0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    out = rule_c4(share, reach)  # windows exist but cannot reach the paper's lags
    assert out.verdict == "not testable as stated" and "reach" in out.reason
    share, _ = per_layer([0.0, 0.8, 0.0, 0.7, 0.0, 0.6])
    reach = xr.ones_like(share, dtype=bool)
    assert rule_c4(share, reach, np.array([2, 3, 2, 2])).verdict == "holds"
    assert rule_c4(share, reach, np.array([1, 1, 1, 1])).verdict == "partly"
    # the window alone already puts more of its energy in the range: the mode adds nothing
    base, _ = per_layer([0.9] * 6)
    assert rule_c4(share, reach, np.array([2, 3, 2, 2]), base=base).verdict == "does not hold"
    base, _ = per_layer([0.3] * 6)
    assert rule_c4(share, reach, np.array([2, 3, 2, 2]), base=base).verdict == "holds"


def test_arch_rules_c7_c8_loss():
    E, se = per_layer([[1, 1, 1, 1, 1, 1], [1.01] * 6, [2] * 6, [2.01] * 6], 0.001)
    assert rule_c7(E, se).verdict == "holds"
    T, se = per_layer([[1, 1, 1, 1, 1, 1], [1.01] * 6, [1, 1, 2, 2, 0.5, 0.5], [1.01] * 6], 1e-3)
    T[3] = T[2] + 0.01
    assert rule_c8(T, se).verdict == "holds"
    T2 = T.copy()
    T2[2:] = T[:2].values[::-1] * 1.0 - [[0, 0, 0.5, 0.5, -0.5, -0.5]]
    assert rule_c8(T2, se).verdict == "does not hold"
    loss = xr.DataArray(
        [1.5, 1.5001, 1.40, 1.4001],
        dims="model",
        coords={"model": MODELS, "architecture": ("model", ARCH)},
    )
    out = rule_loss(loss)  # -0.10, tightly: the sign and the size
    assert out.verdict == "holds" and out.paper_value.startswith("compatible")
    out = rule_loss(loss.copy(data=[1.5, 1.51, 1.40, 1.41]))  # -0.10 [-0.144, -0.056]
    assert out.verdict == "partly"  # the sign; the size to ±25 % is not resolved by 2 + 2
    loss = loss.copy(data=[1.5, 1.501, 1.48, 1.481])  # -0.02: the sign, not the size
    out = rule_loss(loss)
    assert out.verdict == "partly" and out.paper_value.startswith("not compatible")
    # indistinguishable from 0 but excluding the stated -0.10: refuted as stated
    out = rule_loss(loss.copy(data=[1.50, 1.51, 1.505, 1.50]))
    assert out.verdict == "does not hold" and "(size) 1 case: 0 pass, 1 fail" in out.cases
    # an interval holding both the stated size and its negation: not significant
    out = rule_loss(loss.copy(data=[1.5, 1.7, 1.45, 1.55]))
    assert out.verdict == "not significant"
    # one model per architecture: no seed interval, not testable (said why)
    one = E.isel(model=[0, 2])
    assert rule_c7(one, se.isel(model=[0, 2])).verdict == "not testable as stated"


def test_c8_prints_the_interval_its_rule_reads():
    """Four layers, each with its own 95 % interval excluding 0 but not Holm's first
    step's: the verdict is inconclusive, and the interval printed and kept as read
    contains 0 in every layer (the 95 % one stays for the curve's effect)."""
    from scipy import stats

    T, _ = per_layer([[1.0] * 6, [1.0] * 6, [1.0] * 6, [1.0] * 6])
    T[2:, 2:] = [[1.2, 1.2, 0.8, 0.8], [1.2, 1.2, 0.8, 0.8]]  # the claimed signs, +-0.2
    sd = 0.2 / 6  # t(2): 4.30 sd = 0.14 < 0.2 < 8.86 sd = 0.30 (level 0.05 / 4)
    se = xr.full_like(T, sd)  # equal seeds: the difference's SE is the jackknife floor
    assert stats.t.ppf(0.975, 2) * sd < 0.2 < stats.t.ppf(1 - 0.05 / 8, 2) * sd
    out = rule_c8(T, se)
    lo, up = out.read_interval("diff")
    for layer in (3, 4, 5, 6):
        value, own_lo, own_up, a, b = (
            float(x.sel(layer=layer))
            for x in (out.diff["value"], out.diff["lower"], out.diff["upper"], lo, up)
        )
        assert own_lo * own_up > 0  # its own 95 % interval excludes 0 ...
        assert a < 0 < b  # ... the one its decision reads does not
        assert f"L{layer} {value:+.3g} [{a:+.3g}, {b:+.3g}]" in out.measured
    assert out.verdict == "not significant" and "Holm" in out.measured


def test_c9_c10():
    r, _ = per_layer([0.8, 0.85, 0.7, 0.6, 0.5, 0.6])
    assert rule_c9(r).verdict == "holds"
    r, _ = per_layer([0.95] * 6)  # narrower, but not by the stated margin: fails it
    assert rule_c9(r).verdict == "does not hold"
    # an interval that holds the margin's boundary 0.9 is the only undecided case
    r, _ = per_layer([[0.85] * 6, [0.95] * 6, [0.85] * 6, [0.95] * 6])
    out = rule_c9(r)
    assert out.verdict == "not significant" and "0 pass, 0 fail" in out.cases
    r, _ = per_layer([1.1] * 6)
    assert rule_c9(r).verdict == "does not hold"
    r, _ = per_layer([np.nan] * 6)
    assert rule_c9(r).verdict == "not testable as stated"
    assert rule_c10(1e-14, 0, 15).verdict == "holds"
    assert rule_c10(1e-3, 0, 15).verdict == "does not hold"


def test_combine_core_and_verdict_words():
    assert combine_core(["no", "no"], ["yes", "yes"]) == "does not hold"
    assert combine_core(["yes"], ["no"]) == "partly"
    assert combine(classify([1.0], [2.0], 0, 3)) == "holds"
    assert len(VERDICTS) == 5


def test_llm_rows_use_the_same_rules():
    """The SmolLM2 rows come from the same rule functions (depth groups, tokens ->
    characters), on any analyze() result with a layer dim."""
    import msapod
    from msapod.studies.verdict.scorecard import llm_rows

    rng = np.random.default_rng(0)
    L, n = 16, 8
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    logits = rng.normal(0, 1, (6, n, L, L)) - (i - j) / 3
    logits = np.where(i >= j, logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    A = xr.DataArray(
        A, dims=("layer", "snapshot", "query", "key"), coords={"layer": np.arange(1, 7)}
    )
    ds = msapod.analyze(A, eps=[0.10])
    ds.attrs.update(ensemble_chars_per_token=3.0, n_snapshots=n)
    rows = llm_rows(ds)
    assert [r["claim"] for r in rows] == ["C1", "C2", "C3", "C5"]
    assert all(r["verdict"] in VERDICTS for r in rows)


def _pruning(deep, early, random, guided, allocation, n_models=4):
    """A pruning study whose loss increases per (strategy, budget) are planted, with a
    small spread over models and random draws."""
    rng = np.random.default_rng(0)
    strategies = ["low-H*", "high-H*", "H*-allocation", "random"]
    means = {"low-H*": early, "high-H*": deep, "H*-allocation": allocation, "random": random}
    inc = np.full((n_models, 4, 2, 3), np.nan)
    for i, st in enumerate(strategies):
        n_draw = 3 if st in ("random", "H*-allocation") else 1
        inc[:, i, :, :n_draw] = means[st] + 0.01 * rng.standard_normal((n_models, 2, n_draw))
    if guided is not None:
        inc[:, 0] = guided + 0.01 * rng.standard_normal((n_models, 2, 3))
        inc[:, 0, :, 1:] = np.nan
    return xr.Dataset(
        {"loss_increase": (("model", "strategy", "budget", "draw"), inc)},
        coords={"model": MODELS, "strategy": strategies, "budget": [8, 16], "draw": [0, 1, 2]},
    )


def test_c6_in_two_parts():
    from msapod.studies.verdict.rules import rule_c6

    # deep heads cheap, early ones dear, H*-guided removal dearer than random: C6a holds,
    # C6b does not hold, C6 partly
    out = rule_c6(_pruning(deep=0.1, early=1.5, random=0.6, guided=None, allocation=0.8))
    parts = out.extra["parts"]
    assert parts["C6a"].verdict == "holds"
    assert parts["C6b"].verdict == "does not hold"
    assert out.verdict == "partly"
    # everything as the paper says
    out = rule_c6(_pruning(deep=0.1, early=1.5, random=0.6, guided=0.2, allocation=0.3))
    assert out.extra["parts"]["C6b"].verdict == "holds" and out.verdict == "holds"
    assert rule_c6(None).verdict == "not testable as stated"


def models_by_layer(values):
    """(model, layer) DataArray from a 4 x 6 array (models differ: training seeds)."""
    return per_layer(np.asarray(values, float))[0]


def test_c4_jackknife_intervals_decide_share_and_difference():
    share, _ = per_layer([0.0, 0.7, 0.0, 0.7, 0.0, 0.7])
    reach = xr.ones_like(share, dtype=bool)
    base, _ = per_layer([0.0, 0.6, 0.0, 0.6, 0.0, 0.6])
    s_se, _ = per_layer([0.02] * 6)
    peaks = np.array([2, 3, 2, 2])
    # mode - window = 0.1 with SE 0.01: beyond its interval in every case
    d_se, _ = per_layer([0.01] * 6)
    out = rule_c4(share, reach, peaks, base=base, share_se=s_se, diff_se=d_se)
    assert out.verdict == "holds" and out.cases.startswith("12 cases: 12 pass")
    assert "jackknife" in out.rule
    # the printed intervals are the ones the decisions read: Holm over 12 cases, each at
    # its step's level, between the 95 % interval and the Bonferroni one
    from scipy import stats

    z_bonf = stats.norm.ppf(1 - 0.05 / 24)
    lo, up = (x.sel(layer=[2, 4, 6]).values for x in out.read_interval("stat"))
    np.testing.assert_allclose(out.lower.sel(layer=2), 0.7 - Z95 * 0.02)  # 95 %: the effect's
    assert np.all(lo <= 0.7 - Z95 * 0.02 + 1e-12) and np.all(lo >= 0.7 - z_bonf * 0.02 - 1e-12)
    assert np.all(up >= 0.7 + Z95 * 0.02 - 1e-12) and np.all(up <= 0.7 + z_bonf * 0.02 + 1e-12)
    assert lo.min() < 0.7 - Z95 * 0.02 - 1e-3  # the first Holm step is wider than 95 %
    # the same difference with SE 0.1: the window alone may do as well
    d_se, _ = per_layer([0.1] * 6)
    out = rule_c4(share, reach, peaks, base=base, share_se=s_se, diff_se=d_se)
    assert out.verdict == "not significant"
    # the window alone puts more in the range than the mode, beyond the interval
    base, _ = per_layer([0.0, 0.8, 0.0, 0.8, 0.0, 0.8])
    d_se, _ = per_layer([0.01] * 6)
    out = rule_c4(share, reach, peaks, base=base, share_se=s_se, diff_se=d_se)
    assert out.verdict == "does not hold"
    # a share below one half fails whatever the difference
    low, _ = per_layer([0.0, 0.3, 0.0, 0.3, 0.0, 0.3])
    base, _ = per_layer([0.0, 0.1, 0.0, 0.1, 0.0, 0.1])
    out = rule_c4(low, reach, peaks, base=base, share_se=s_se, diff_se=d_se)
    assert out.verdict == "does not hold"


def test_c4_over_seeds_is_a_student_t_interval_per_layer():
    from scipy import stats

    s2 = np.array([0.70, 0.72, 0.69, 0.71])
    b2 = np.array([0.60, 0.61, 0.60, 0.62])
    share = models_by_layer(np.column_stack([np.zeros(4), s2, np.zeros(4), s2, np.zeros(4), s2]))
    base = models_by_layer(np.column_stack([np.zeros(4), b2, np.zeros(4), b2 + 0.2] + [b2] * 2))
    reach = xr.ones_like(share, dtype=bool)
    out = rule_c4(share, reach, np.array([2, 3, 2, 2]), base=base)
    d = s2 - b2
    se = d.std(ddof=1) / 2
    np.testing.assert_allclose(out.diff["value"].sel(layer=2), d.mean())
    lo, up = (float(x.sel(layer=2)) for x in out.read_interval("diff"))
    np.testing.assert_allclose(d.mean() - lo, up - d.mean())
    assert_holm_half(up - d.mean(), se, k=3, df=3)  # Student-t over seeds, Holm over 3
    assert up - d.mean() >= stats.t.ppf(0.975, 3) * se * (1 - 1e-9)
    # layers 2 and 6 beat the window; layer 4's window alone does better
    assert out.verdict == "partly" and out.cases.startswith("3 cases: 2 pass, 1 fail")
    assert "over seeds" in out.rule and np.isfinite(out.extra["effect"])


def test_c9_interval_against_the_margin():
    from scipy import stats

    r = np.array([0.70, 0.80, 0.75, 0.72])
    ratio = models_by_layer(np.column_stack([r] * 6))
    out = rule_c9(ratio)
    lr = np.log(r)
    se = lr.std(ddof=1) / 2
    np.testing.assert_allclose(out.diff["value"].values, np.exp(lr.mean()))
    r_lo, r_up = out.read_interval("diff")
    half_lo = lr.mean() - np.log(r_lo.values)
    np.testing.assert_allclose(np.log(r_up.values) - lr.mean(), half_lo)
    assert_holm_half(half_lo, se, k=6, df=3)  # log scale, Student-t over seeds, Holm over 6
    assert half_lo.min() >= stats.t.ppf(0.975, 3) * se * (1 - 1e-9)
    assert out.verdict == "holds" and "Student-t" in out.rule
    # narrower on average but the seeds disagree: the interval crosses 0.9
    wide = models_by_layer(np.column_stack([[0.7, 0.95, 0.8, 1.0]] * 6))
    assert rule_c9(wide).verdict == "not significant"
    # jackknife standard errors: per model and layer, log-scale intervals
    ratio, se = per_layer([0.8] * 6, 0.01)
    out = rule_c9(ratio, se)
    assert out.verdict == "holds" and "jackknife" in out.rule
    assert_holm_half(np.log(out.read_interval()[1].values / 0.8), 0.01 / 0.8, k=24)
    ratio, se = per_layer([0.88] * 6, 0.05)  # below 0.9, not beyond its interval
    assert rule_c9(ratio, se).verdict == "not significant"
    ratio, se = per_layer([1.2] * 6, 0.01)
    assert rule_c9(ratio, se).verdict == "does not hold"
    ratio, se = per_layer([0.95] * 6, 0.01)  # narrower, but not by the margin: fails it
    assert rule_c9(ratio, se).verdict == "does not hold"


def test_depth_groups_that_overlap_or_are_empty():
    """Two layers: early 1-2 and late 2 compare layer 1 with layer 2; no later layers
    leaves C5's contrast out and says so."""
    T, se = per_layer([1.0, 0.5, 1.0, 1.0, 1.0, 1.0], 0.01)
    T, se = T.sel(layer=[1, 2]), se.sel(layer=[1, 2])
    out = rule_c3(T, se, early=[1, 2], late=[2])
    assert "T_spec(layers 2) − T_spec(layers 1)" in out.rule
    np.testing.assert_allclose(out.contrast["value"], -0.5)
    H, hse = per_layer([100.0, 90.0, 1, 1, 1, 1], 1.0)
    out = rule_c5(H.sel(layer=[1, 2]), hse.sel(layer=[1, 2]), n=150, early=[1, 2], rest=[])
    assert out.verdict == "not testable as stated" and "no layers after" in out.reason
    from msapod.studies.verdict.claims import layer_span

    assert layer_span([]) == "none"


def test_grouped_jackknife_intervals_use_student_t():
    from scipy import stats

    q9 = stats.t.ppf(0.975, 9)
    share, _ = per_layer([0.0, 0.7, 0.0, 0.7, 0.0, 0.7])
    base, _ = per_layer([0.0, 0.6, 0.0, 0.6, 0.0, 0.6])
    s_se, _ = per_layer([0.02] * 6)
    # 0.1 / 0.03 = 3.3: beyond Holm over 12 cases with normal p (2.87), not with t(9) (3.83)
    d_se, _ = per_layer([0.03] * 6)
    reach = xr.ones_like(share, dtype=bool)
    peaks = np.array([2, 3, 2, 2])
    normal = rule_c4(share, reach, peaks, base=base, share_se=s_se, diff_se=d_se)
    t9 = rule_c4(share, reach, peaks, base=base, share_se=s_se, diff_se=d_se, se_df=9)
    assert normal.verdict == "holds" and t9.verdict == "not significant"
    assert "10 groups, t(9)" in t9.rule
    t9_lower = t9.read_interval()[0].sel(layer=2).values
    assert_holm_half(0.7 - t9_lower, 0.02, k=12, df=9)
    assert np.all(0.7 - t9_lower >= q9 * 0.02 - 1e-12)
    ratio, se = per_layer([0.8] * 6, 0.01)
    out = rule_c9(ratio, se, se_df=9)
    assert_holm_half(np.log(out.read_interval()[1].values / 0.8), 0.01 / 0.8, k=24, df=9)
    assert "t(9)" in out.rule


def test_one_seed_per_architecture_takes_c4_c9_intervals_over_snapshots():
    from msapod.studies.verdict.multiverse import MAIN_SPEC, ZooData, evaluate

    rng = np.random.default_rng(0)
    models = ["baseline-1", "ega-1"]
    shape = (2, 6, 2)  # model, layer, normalisation
    ev = xr.Dataset(
        {
            "c9_ratio": (("model", "layer", "normalisation"), 0.8 + 0.01 * rng.random(shape)),
            "c9_ratio_se": (("model", "layer", "normalisation"), np.full(shape, 0.01)),
        },
        coords={
            "model": models,
            "layer": np.arange(1, 7),
            "normalisation": ["rectified", "raw"],
            "architecture": ("model", ["baseline", "ega"]),
        },
    )
    spec = {"zoo": "z", **{a: v for a, v in MAIN_SPEC.items() if a != "normalisation"}}
    spec["normalisation"] = "rectified"
    ev9 = ev.expand_dims({a: [spec[a]] for a in ("field", "scale_min", "scale_stat", "centre")})
    ev9 = ev9.expand_dims(width=[spec["width"]])
    one = evaluate("C9", spec, ZooData(models, ev9))
    assert "jackknife" in one.rule and one.verdict == "holds"
    two = ev9.assign_coords(architecture=("model", ["baseline", "baseline"]))
    seeds = evaluate("C9", spec, ZooData(models, two))
    assert "over seeds" in seeds.rule


def test_headline_names_the_empirical_claims_and_sets_the_theorem_apart():
    import pandas as pd

    from msapod.studies.verdict.claims import headline

    verdicts = ["does not hold"] * 5 + ["partly"] + ["not significant"] * 3 + ["holds"] * 2
    ids = [f"C{i}" for i in range(1, 11)] + ["L"]
    card = pd.DataFrame({"verdict": verdicts}, index=pd.Index(ids, name="claim"))
    text = headline(card, "d256")
    assert text.startswith("None of the paper's 9 empirical claims (C1–C9) is reproduced")
    assert "on the d256 zoo and 5 are refuted" in text
    assert "**C1**, **C2**, **C3**, **C4** and **C5** do not hold" in text
    assert "**C6** holds partly" in text
    assert "Theorem 1 (**C10**" in text and "(**L**) holds" in text
    card.loc["C7", "verdict"] = "holds"
    assert headline(card).startswith("1 of the paper's 9 empirical claims (C1–C9) is reproduced")


@pytest.mark.parametrize(("low", "high", "log"), [(0.0, np.inf, False), (-np.inf, 7.0, True)])
def test_holm_step_intervals_agree_with_the_decisions(low, high, log):
    """Each case's interval at the level of its Holm step lies inside the range exactly
    when the case is "yes", outside exactly when it is "no"."""
    rng = np.random.default_rng(3)
    v = rng.uniform(1.0, 12.0, 40) if log else rng.normal(0.0, 1.0, 40)
    se = rng.uniform(0.05, 0.8, 40) * (v if log else 1.0)
    cells, q = decide(v, se, low, high, log=log, quantiles=True)
    assert cells.tolist() == decide(v, se, low, high, log=log).tolist()
    f = np.exp(q * se / v) if log else None
    lo, up = (v / f, v * f) if log else (v - q * se, v + q * se)
    inside = (lo >= low) & (up <= high)
    outside = (up < low) | (lo > high)
    assert ((cells == "yes") == inside).all() and ((cells == "no") == outside).all()
    assert {"yes", "ns"} <= set(cells) or {"no", "ns"} <= set(cells)  # not all alike
    assert (q >= Z95 - 1e-12).all()  # never narrower than one 95 % interval


def test_one_renderer_for_the_box_the_row_and_the_report():
    """An Outcome and the same words as a mapping render alike; the sentence carries the
    verdict's meaning, or the reason where the claim is not testable."""
    from msapod.studies.verdict.claims import REPORT_COLUMNS, ROW_COLUMNS, VERDICT_MEANING, render
    from msapod.studies.verdict.rules import Outcome

    out = Outcome("C3", "partly", "T_spec 1.1", "rule words", "4 cases", interval="[1, 2]")
    a, b = (
        render("C3", out),
        render(
            "C3",
            {
                k: getattr(out, k)
                for k in (
                    "verdict",
                    "measured",
                    "rule",
                    "cases",
                    "reason",
                    "interval",
                    "paper_value",
                )
            },
        ),
    )
    assert a == b and set(a["row"]) == set(ROW_COLUMNS) and len(a["cells"]) == len(REPORT_COLUMNS)
    assert a["sentence"] == f"**partly**: {VERDICT_MEANING['partly']}."
    assert a["row"]["paper"].startswith("early T_spec")
    nt = render("C5", {"verdict": "not testable as stated", "reason": "N too small"}, " here")
    assert nt["sentence"] == "**not testable as stated** here: N too small."
    assert render("C1", {"verdict": "holds"})["row"]["interval"] == "point value"
    with pytest.raises(ValueError, match="verdict"):
        render("C1", {"verdict": "maybe"})


def test_a_point_value_on_the_boundary_is_not_significant():
    assert decide([0.0], [0.0], low=0.0).tolist() == ["ns"]
    assert decide([0.1, -0.1], [0.0, 0.0], low=0.0).tolist() == ["yes", "no"]


def test_fmt_range_prints_one_value_when_both_ends_agree():
    from msapod.studies.verdict.claims import fmt_range

    assert fmt_range([9.31, 9.29, np.nan]) == "9.3"
    assert fmt_range([1.0, 2.0]) == "1.0–2.0"
    assert fmt_range([np.nan]) == "—"
