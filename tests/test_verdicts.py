"""How the claims are decided (msapod.studies.verdict): the decision rule against independent
references (scipy's t tests), planted zoos whose answers are known, the joint test's exact
permutation p-values, robustness, cache keys that follow the registry, and the renderer."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from msapod.studies import registry
from msapod.studies.registry import REGISTRY, ClaimTest
from msapod.studies.verdict import curve, inference, joint, render
from msapod.studies.verdict.curve import MAIN_READING
from msapod.studies.verdict.outcome import evaluate
from msapod.studies.verdict.statistics import Zoo
from msapod.studies.verdict.study import decided
from msapod_book import pages

ARCH8 = ["baseline"] * 4 + ["ega"] * 4
MODELS8 = [f"m{i}" for i in range(8)]


# ---------------------------------------------------------------------------------------
# the decision rule


def test_one_sample_interval_is_scipys_t_interval():
    x = np.array([0.31, 0.35, 0.29, 0.4, 0.33, 0.37])
    iv = inference.one_sample(x)
    lo, hi = iv.bounds(0.9)
    ref = stats.ttest_1samp(x, 0.0).confidence_interval(0.9)
    assert (lo, hi) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert float(iv.p_above(0.3)) == pytest.approx(
        stats.ttest_1samp(x, 0.3, alternative="greater").pvalue, rel=1e-12
    )


def test_welch_interval_is_scipys():
    rng = np.random.default_rng(1)
    x = rng.normal(0, 1, 8) + np.r_[np.zeros(4), np.full(4, 0.7)]
    treated = np.r_[np.zeros(4, bool), np.ones(4, bool)]
    iv = inference.welch(x, treated)
    ref = stats.ttest_ind(x[treated], x[~treated], equal_var=False)
    lo, hi = iv.bounds(0.95)
    got = ref.confidence_interval(0.95)
    assert (lo, hi) == pytest.approx((got.low, got.high), rel=1e-10)
    assert float(iv.df) == pytest.approx(ref.df, rel=1e-12)


def test_fixed_effect_carries_only_the_snippet_errors():
    iv = inference.fixed_effect(np.array([1.0, 2.0, 3.0, 4.0]), np.full(4, 0.2))
    assert float(iv.estimate) == 2.5 and float(iv.se) == pytest.approx(0.1)
    assert np.isinf(iv.df)
    assert np.isnan(inference.fixed_effect(np.ones(3), np.array([0.1, np.nan, 0.1])).se)


@pytest.mark.parametrize(
    ("values", "direction", "bounds", "code"),
    [
        ([0.80, 0.82, 0.81, 0.79], "greater", (0.55, np.inf), "holds"),
        ([0.30, 0.32, 0.31, 0.29], "greater", (0.55, np.inf), "refuted"),
        ([0.50, 0.60, 0.52, 0.58], "greater", (0.55, np.inf), "undecided"),
        ([0.51, 0.50, 0.52, 0.51], "greater", (0.55, np.inf), "refuted"),  # negligible
        ([-0.2, -0.21, -0.19, -0.2], "less", (-np.inf, -0.05), "holds"),
        ([1.0, 1.02, 0.99, 1.01], "within", (0.75, 1.25), "holds"),
        ([3.0, 3.2, 2.9, 3.1], "within", (0.75, 1.25), "refuted"),
        ([0.7, 1.3, 0.8, 1.2], "within", (0.75, 1.25), "undecided"),
    ],
)
def test_decide_against_the_boundary_of_the_smallest_effect(values, direction, bounds, code):
    got = inference.decide(inference.one_sample(np.array(values)), *bounds, direction)
    assert str(got["code"]) == code
    lo, hi = float(got["lower"]), float(got["upper"])
    if code == "holds" and direction == "greater":
        assert lo > bounds[0]
    if code == "refuted" and direction == "greater":
        assert hi < bounds[0]


def test_decide_needs_replicates():
    got = inference.decide(inference.one_sample(np.array([0.9])), 0.55, np.inf, "greater")
    assert str(got["code"]) == "untestable"


@pytest.mark.parametrize(
    ("codes", "code"),
    [
        (["holds", "holds"], "holds"),
        (["holds", "refuted"], "partly"),
        (["holds", "refuted", "refuted"], "refuted"),  # more refuted than holds
        (["holds", "undecided"], "undecided"),
        (["refuted", "undecided"], "refuted"),
        (["untestable", "holds"], "holds"),
        (["untestable", "untestable"], "untestable"),
        (["undecided", "undecided"], "undecided"),
    ],
)
def test_parts_combine(codes, code):
    assert str(inference.combine_parts(np.array(codes))) == code


def test_cases_refute_at_the_bonferroni_level():
    codes = np.array(["undecided", "undecided", "undecided"])
    assert str(inference.combine_cases(codes, np.array([0.02, 0.5, 0.5]))) == "undecided"
    assert str(inference.combine_cases(codes, np.array([0.01, 0.5, 0.5]))) == "refuted"
    assert str(inference.combine_cases(np.array(["holds", "holds"]), np.ones(2))) == "holds"


def test_log_interval_is_the_delta_method():
    lo, hi = inference.log_interval(2.0, 0.2, 1.96)
    assert lo * hi == pytest.approx(4.0) and lo > 0
    assert hi == pytest.approx(2.0 * np.exp(1.96 * 0.1))


# ---------------------------------------------------------------------------------------
# planted zoos


def _evidence(fine, coarse=None, energy=None, T=None, H=None, arch=ARCH8):
    """A stacked evidence Dataset of per-model, per-layer numbers (dims model, layer) at
    the default reading only; ``fine`` etc. ``(models, 6)``; standard errors 1e-3."""
    models = [f"m{i}" for i in range(len(arch))]
    fine = np.asarray(fine, float)
    M, L = fine.shape
    one = {
        "field": [MAIN_READING["field"]],
        "normalisation": [MAIN_READING["normalisation"]],
        "scale_min": [MAIN_READING["scale_min"]],
    }
    dims = ("model", "layer", *one)

    def scale(x):
        return (dims, np.asarray(x, float)[..., None, None, None])

    coarse = 1 - fine if coarse is None else coarse
    energy = np.ones((M, L)) if energy is None else energy
    T = np.ones((M, L)) if T is None else T
    H = np.full((M, L), 100.0) if H is None else H
    se = np.full((M, L), 1e-3)
    ev = xr.Dataset(
        {
            "fine_share": scale(fine),
            "fine_share_se": scale(se),
            "coarse_share": scale(coarse),
            "coarse_share_se": scale(se),
            "energy": scale(energy),
            "energy_se": scale(se),
            "T_spec": (("model", "layer", "fit"), np.asarray(T, float)[..., None]),
            "T_spec_se": (("model", "layer", "fit"), se[..., None]),
            "H_star": (("model", "layer", "criterion"), np.asarray(H, float)[..., None]),
            "H_star_se": (("model", "layer", "criterion"), se[..., None]),
        },
        coords={
            "model": models,
            "layer": np.arange(1, L + 1),
            **one,
            "fit": ["default"],
            "criterion": ["energy"],
            "architecture": ("model", list(arch)),
        },
        attrs={"n_snapshots": 150},
    )
    return ev


def _code(claim, ev, **reading):
    return evaluate(claim, Zoo(ev), {**MAIN_READING, **reading}).code


def test_a_strong_planted_pattern_holds():
    rng = np.random.default_rng(0)
    depth = np.linspace(0.8, 0.2, 6)  # fine share falls with depth
    fine = depth + rng.normal(0, 0.01, (8, 6))
    ev = _evidence(fine, coarse=1 - fine)
    assert _code("C1", ev) == "holds"
    assert _code("C2", ev) == "holds"  # coarse share 0.75 late, and the shift


def test_one_model_with_the_pattern_and_the_rest_reversed_neither_holds_nor_partly():
    rng = np.random.default_rng(1)
    fine = np.tile(np.linspace(0.2, 0.8, 6), (8, 1)) + rng.normal(0, 0.01, (8, 6))
    fine[0] = np.linspace(0.9, 0.1, 6)  # only model 0 is fine early and coarse late
    ev = _evidence(fine)
    for claim in ("C1", "C2"):
        assert _code(claim, ev) not in ("holds", "partly"), claim


def test_an_effect_far_below_the_smallest_effect_neither_holds_nor_partly():
    """Every model shows the claimed direction, consistently but tinily: EGA energy 1 %
    above baseline in every layer (C7 needs 10 %), the fine share falling by 0.01 over
    depth (C2's shift needs 0.05), T_spec of EGA 0.5 % higher in layers 3-4 (C8)."""
    rng = np.random.default_rng(2)
    energy = np.ones((8, 6)) * np.r_[np.ones(4), np.full(4, 1.01)][:, None]
    energy *= np.exp(rng.normal(0, 1e-3, (8, 6)))
    fine = np.tile(np.linspace(0.60, 0.59, 6), (8, 1)) + rng.normal(0, 1e-4, (8, 6))
    ev = _evidence(fine, coarse=np.full((8, 6), 0.51), energy=energy)
    for claim in ("C7", "C2"):
        assert _code(claim, ev) not in ("holds", "partly"), claim
    # a large coarse share beside the tiny shift: one named part holds, one is refuted
    out = evaluate("C2", Zoo(ev.assign(coarse_share=ev["coarse_share"] + 0.2)), MAIN_READING)
    assert out.parts == {"location": "holds", "shift": "refuted"} and out.code == "partly"


def test_architecture_contrast_holds_when_planted_and_not_under_swapped_labels():
    rng = np.random.default_rng(3)
    energy = np.exp(rng.normal(0, 0.02, (8, 6))) * np.r_[np.ones(4), np.full(4, 1.5)][:, None]
    ev = _evidence(np.full((8, 6), 0.5), energy=energy)
    assert _code("C7", ev) == "holds"
    mixed = ev.assign_coords(architecture=("model", ["baseline", "ega"] * 4))
    assert _code("C7", mixed) in ("undecided", "refuted")


def test_c3_and_c5_decide_their_sizes_and_contrasts_as_parts():
    rng = np.random.default_rng(4)
    T = np.exp(rng.normal(0, 0.01, (8, 6))) * np.array([1.0, 1.0, 0.9, 0.8, 0.6, 0.6])
    H = np.exp(rng.normal(0, 0.01, (8, 6))) * np.array([140, 140, 91, 91, 91, 91])
    ev = _evidence(np.full((8, 6), 0.5), T=T, H=H)
    out = evaluate("C3", Zoo(ev), MAIN_READING)
    assert out.parts == {"size": "holds", "contrast": "holds"} and out.code == "holds"
    out = evaluate("C5", Zoo(ev), MAIN_READING)
    assert out.parts["early"] == "untestable"  # H* <= N - 1 = 149 < 150
    assert "N − 1 = 149" in out.tests[0].reason
    assert out.parts["size"] == "holds" and out.parts["contrast"] == "holds"


def test_c6_reads_the_direct_depth_test_and_the_guide():
    rng = np.random.default_rng(5)
    group, budgets, draws = ["early", "late"], [4, 8], 4
    inc = np.empty((8, 2, 2, draws))
    inc[:, 0] = 0.8 + rng.normal(0, 0.05, (8, 2, draws))  # early heads cost a lot
    inc[:, 1] = 0.01 + rng.normal(0, 0.005, (8, 2, draws))
    strategies = ["low-H*", "H*-allocation", "random"]
    li = np.full((8, 3, 3, 4), np.nan)
    li[:, 0, :, 0] = 2.0  # low-H* costs more than random: the guide fails
    li[:, 1] = 0.5 + rng.normal(0, 0.01, (8, 3, 4))
    li[:, 2] = 0.5 + rng.normal(0, 0.01, (8, 3, 4))
    prune = xr.Dataset(
        {
            "depth_loss_increase": (("model", "group", "depth_budget", "depth_draw"), inc),
            "loss_increase": (("model", "strategy", "budget", "draw"), li),
        },
        coords={
            "model": MODELS8,
            "group": group,
            "depth_budget": budgets,
            "strategy": strategies,
            "budget": [8, 16, 24],
        },
    )
    ev = _evidence(np.full((8, 6), 0.5))
    out = evaluate("C6", Zoo(ev, pruning=prune), MAIN_READING)
    assert out.parts["depth"] == "holds" and out.parts["guide"] == "refuted"
    assert out.code == "partly"


def test_the_snippet_unit_reads_the_models_as_they_are():
    fine = np.full((2, 6), 0.8) + np.array([[0.0], [0.01]])
    ev = _evidence(fine, arch=["baseline", "ega"])
    assert _code("C1", ev) == "holds"  # two models: t with 1 df, still clear here
    assert _code("C1", ev, unit="snippets") == "holds"
    one = _evidence(fine[:1], arch=["baseline"])
    assert _code("C1", one) == "untestable"
    assert _code("C1", one, unit="snippets") == "holds"


# ---------------------------------------------------------------------------------------
# the joint test


def test_relabellings_are_every_sign_flip_and_every_balanced_labelling():
    rows, exact = joint.relabellings("models", np.zeros(8, bool))
    assert exact and rows.shape == (256, 8) and (rows[0] == 1).all()
    assert len({tuple(r) for r in rows}) == 256
    treated = np.array(ARCH8) == "ega"
    rows, exact = joint.relabellings("architecture", treated)
    assert exact and rows.shape == (70, 8) and (rows[0] == treated).all()
    assert (rows.sum(1) == 4).all() and len({tuple(r) for r in rows}) == 70


def _curve_ds(values, claim="C1", arch=ARCH8):
    """A curve Dataset with one test of ``claim`` under ``values.shape[0]`` readings."""
    t = REGISTRY[claim].tests[0]
    tid = registry.qualified_id(claim, t)
    S, M = values.shape
    return xr.Dataset(
        {
            "value": (("test", "spec", "model"), values[None]),
            "applicable": (("claim", "spec"), np.ones((1, S), bool)),
        },
        coords={
            "claim": [claim],
            "test": [tid],
            "test_claim": ("test", [claim]),
            "test_direction": ("test", [t.direction]),
            "test_reference": ("test", [t.reference]),
            "test_log": ("test", [t.log]),
            "spec": np.arange(S),
            "zoo": ("spec", ["z"] * S),
            "unit": ("spec", ["seeds"] * S),
            "model": [f"m{i}" for i in range(M)],
            "model_zoo": ("model", ["z"] * M),
            "architecture": ("model", arch),
        },
        attrs={"main_zoo": "z", "zoos": "z"},
    )


def test_a_curve_for_the_claim_gets_the_smallest_attainable_p():
    rng = np.random.default_rng(6)
    values = 0.8 + rng.normal(0, 0.02, (5, 8))  # C1: far above the reference 0.5
    jt = joint.joint_tests(_curve_ds(values)).sel(claim="C1")
    p = jt["joint_p"].sel(statistic="stouffer_z")
    assert float(p) == pytest.approx(2 / 256)
    assert float(jt["joint"].sel(statistic="stouffer_z")) > 0
    assert int(jt["joint_relabellings"]) == 256 and str(jt["joint_null"].values) == "sign flips"


def test_a_statistic_no_relabelling_moves_is_uninformative():
    values = np.full((3, 8), 0.5)  # exactly the reference: every flip gives the same curve
    jt = joint.joint_tests(_curve_ds(values)).sel(claim="C1")
    assert not bool(jt["joint_informative"].sel(statistic="share_for"))
    assert "uninformative" in render.joint_sentence(
        _curve_ds(values).merge(joint.joint_tests(_curve_ds(values))), "C1"
    ) or not bool(jt["joint_informative"].sel(statistic="stouffer_z"))


def test_a_curve_under_the_null_gets_no_small_p():
    rng = np.random.default_rng(7)
    values = 0.5 + rng.normal(0, 0.05, (1, 8)) + rng.normal(0, 0.001, (6, 8))
    jt = joint.joint_tests(_curve_ds(values)).sel(claim="C1")
    assert float(jt["joint_p"].sel(statistic="stouffer_z")) > 0.05


# ---------------------------------------------------------------------------------------
# the curve, robustness and the cache keys


def test_readings_cover_each_claims_subgrid_only():
    specs = curve.specifications(["z"])
    assert specs[0] == {"zoo": "z", **MAIN_READING}
    for claim in REGISTRY:
        axes = set(curve.claim_axes(claim))
        for r in curve.readings(claim):
            moved = {a for a in curve.CURVE_AXES if r[a] != MAIN_READING[a]}
            assert moved <= axes, (claim, moved)
    c4 = [r for r in curve.readings("C4") if r["c4_window"] == "range"]
    assert {r["centre"] for r in c4} == {MAIN_READING["centre"]}  # only the width varies


def test_robust_means_no_single_axis_changes_the_verdict():
    specs = [
        {"zoo": "a", **MAIN_READING},
        {"zoo": "a", **MAIN_READING, "field": "u"},
        {"zoo": "b", **MAIN_READING},
    ]
    ds = xr.Dataset(
        {
            "verdict": (("claim", "spec"), [["holds", "refuted", "holds"]]),
            "applicable": (("claim", "spec"), [[True, True, True]]),
            "main": ("spec", [True, False, False]),
        },
        coords={
            "claim": ["C1"],
            **{a: ("spec", [s[a] for s in specs]) for a in ("zoo", *curve.CURVE_AXES)},
        },
    )
    r = curve.robustness(ds).sel(claim="C1")
    assert not bool(r["robust"]) and str(r["flips"].values) == "field=u"
    assert float(r["robust_share"]) == pytest.approx(2 / 3)


def test_an_edited_smallest_effect_is_a_new_cache_key(monkeypatch):
    before = curve.source_hash()
    c1 = REGISTRY["C1"]
    edited = dataclasses.replace(c1, tests=(dataclasses.replace(c1.tests[0], sesoi=0.07),))
    monkeypatch.setitem(REGISTRY, "C1", edited)
    assert curve.source_hash() != before
    assert registry.registry_hash() != before


def test_the_curve_study_misses_its_cache_when_the_registry_changes(tmp_path, monkeypatch):
    from msapod.studies.store.cache import cached_dataset

    calls = []

    def compute():
        calls.append(1)
        return xr.Dataset({"x": ("claim", [1.0])}, coords={"claim": ["C1"]})

    def run():
        return cached_dataset(
            "multiverse", "t", {"source": curve.source_hash()}, compute, cache_dir=tmp_path
        )

    run(), run()
    assert len(calls) == 1
    c1 = REGISTRY["C1"]
    edited = dataclasses.replace(c1, tests=(dataclasses.replace(c1.tests[0], reference=0.6),))
    monkeypatch.setitem(REGISTRY, "C1", edited)
    run()
    assert len(calls) == 2


def test_every_decided_claim_states_its_smallest_effect_and_why():
    for c in REGISTRY.values():
        if c.kind == "theorem":
            assert not c.tests
            continue
        assert c.tests, c.id
        for t in c.tests:
            assert isinstance(t, ClaimTest) and t.sesoi_reason and t.symbol and t.words
            lo, hi = t.boundary()
            assert lo < hi


def test_boundaries_read_the_sesoi():
    t = REGISTRY["C9"].tests[0]
    assert t.boundary() == (-np.inf, pytest.approx(0.9))
    assert t.boundary(0.0)[1] == pytest.approx(1.0)
    assert REGISTRY["C3"].tests[0].boundary() == pytest.approx((0.75, 1.25))
    assert REGISTRY["L"].tests[1].boundary() == pytest.approx((-0.125, -0.075))
    with pytest.raises(ValueError, match="direction"):
        dataclasses.replace(t, direction="above")


# ---------------------------------------------------------------------------------------
# the whole path on planted evidence, and the words


@pytest.fixture(scope="module")
def tiny_curve():
    rng = np.random.default_rng(8)
    fine = np.linspace(0.8, 0.2, 6) + rng.normal(0, 0.01, (8, 6))
    energy = np.exp(rng.normal(0, 0.02, (8, 6))) * np.r_[np.ones(4), np.full(4, 1.5)][:, None]
    ev = _evidence(fine, energy=energy)
    nulls = {"untrained": Zoo(_evidence(np.full((8, 6), 0.23)))}
    return decided({"main": Zoo(ev, name="main")}, nulls)


def test_decided_curve_holds_codes_numbers_and_nulls(tiny_curve):
    mv = tiny_curve
    assert render.main_code(mv, "C1") == "holds" and render.main_code(mv, "C7") == "holds"
    assert str(mv["null_verdict"].sel(claim="C1", null="untrained").values) == "refuted"
    assert str(mv["null_reason"].sel(claim="C1", null="shuffled").values) == "not computed"
    views = render.claim_views(mv, "C1")
    assert views[0].estimate == pytest.approx(float(mv["value"].sel(test="C1").isel(spec=0).mean()))
    assert mv["verdict"].dtype.kind == "U" and mv["estimate"].dtype.kind == "f"


def test_verdict_box_comes_from_the_numbers(tiny_curve):
    box = pages.verdict_markdown(tiny_curve, "C1")
    assert box.startswith('<div class="admonition verdict claim-c1">')
    assert "**holds** on the main zoo" in box and box.endswith("</div>")
    v = render.claim_views(tiny_curve, "C1")[0]
    assert render.fmt_num(v.estimate) in box and "needs > 0.55" in box


def test_fmt_num_is_the_books_number():
    assert render.fmt_num(-0.0) == "0.00"
    assert render.fmt_num(0.12345) == "0.123"
    assert render.fmt_num(np.inf) == "∞"


def test_the_shipped_curve_never_reads_partly_where_more_is_refuted_than_holds():
    from msapod.studies.store.results import load_result

    mv = load_result("multiverse")
    for c in mv["claim"].values:
        parts = mv["part_code"].values[mv["part_claim"].values == c]  # (parts, spec)
        v = mv["verdict"].sel(claim=c).values
        partly = v == "partly"
        h, r = (parts == "holds").sum(0), (parts == "refuted").sum(0)
        assert ((h >= r) & (r >= 1))[partly].all(), c
        refuted = v == "refuted"
        assert (r > h)[refuted].all() or not refuted.any(), c
    # every joint-test statistic carries its own p-value (or is marked uninformative)
    tested = mv["joint_null"].values != ""
    p = mv["joint_p"].values[tested]
    informative = mv["joint_informative"].values[tested]
    assert np.isfinite(p[informative]).all()
    assert set(mv["statistic"].values) == set(joint.STATISTICS)
