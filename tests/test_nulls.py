"""Null controls and the joint test over the specification curve (msapod.studies.verdict.nulls):
exact enumeration counts, a curve planted for a claim gets a small p "for", against it a
small p "against", effects unrelated to the labels give p values that are not small, the
stacked evaluation equals the rules run relabelling by relabelling, the untrained model is
the training run's initialisation, and null fields are cached and verified."""

import math

import numpy as np
import pytest
import xarray as xr

from msapod.studies.measure import nullfields
from msapod.studies.measure.nullfields import shuffle_snippets
from msapod.studies.registry import REGISTRY
from msapod.studies.store.cache import state_sha256
from msapod.studies.verdict import nulls
from msapod.studies.verdict.nulls import (
    architecture_labelings,
    joint_test,
    layer_labelings,
    relabel_architecture,
    relabel_layers,
    swap_labelings,
    swap_untrained,
)

ARCH8 = ["baseline"] * 4 + ["ega"] * 4


# ---------------------------------------------------------------------------------------
# enumeration


def test_architecture_labelings_are_every_balanced_relabelling():
    labs, exact = architecture_labelings(ARCH8)
    assert exact and labs.shape == (70, 8)
    assert list(labs[0]) == ARCH8
    assert len({tuple(r) for r in labs}) == 70
    assert all((r == "ega").sum() == 4 for r in labs)
    # 35 up to the swap that exchanges the two labels
    swapped = {tuple(np.where(r == "ega", "baseline", "ega")) for r in labs}
    assert swapped == {tuple(r) for r in labs}
    labs4, _ = architecture_labelings(["baseline", "baseline", "ega", "ega"])
    assert labs4.shape == (6, 4)
    # within blocks: 2 zoos of 2 + 2 -> 6 x 6
    labs_b, exact = architecture_labelings(
        ARCH8[:2] + ARCH8[4:6] + ARCH8[2:4] + ARCH8[6:], groups=[0] * 4 + [1] * 4
    )
    assert exact and labs_b.shape == (36, 8)
    assert all((r[:4] == "ega").sum() == 2 for r in labs_b)


def test_labelings_sample_when_the_count_exceeds_the_budget():
    labs, exact = architecture_labelings(ARCH8, max_exact=50, n_random=99, seed=3)
    assert not exact and labs.shape == (100, 8) and list(labs[0]) == ARCH8
    again, _ = architecture_labelings(ARCH8, max_exact=50, n_random=99, seed=3)
    np.testing.assert_array_equal(labs, again)
    with pytest.raises(ValueError, match="architecture"):
        architecture_labelings(["ega"])


def test_layer_labelings_counts_and_permutations():
    layers = [1, 2, 3, 4, 5, 6]
    perms, exact = layer_labelings(1, layers, [[1, 2]])
    assert exact and perms.shape == (15, 1, 6)
    np.testing.assert_array_equal(perms[0, 0], np.arange(6))
    for p in perms[:, 0]:
        assert sorted(p) == list(range(6))
    # the set of layers playing "1-2" is distinct in every row
    assert len({tuple(sorted(p[:2])) for p in perms[:, 0]}) == 15
    perms3, _ = layer_labelings(1, layers, [[1, 2], [5, 6]])
    assert len(perms3) == math.factorial(6) // (2 * 2 * 2)  # 90
    perms4, _ = layer_labelings(1, layers, [[2], [4], [6]])
    assert len(perms4) == 6 * 5 * 4
    two, exact = layer_labelings(2, layers, [[1, 2]])
    assert exact and two.shape == (225, 2, 6)
    with pytest.raises(ValueError, match="roles"):
        layer_labelings(1, layers, [[1, 7]])


def test_swap_labelings():
    s, exact = swap_labelings(3)
    assert exact and s.shape == (8, 3) and not s[0].any()
    assert len({tuple(r) for r in s}) == 8


# ---------------------------------------------------------------------------------------
# the joint test on planted curves (pure numpy)


def _arch_curve(values, n_specs=5, noise=0.0, seed=0, unit=3.0):
    """A curve of ``n_specs`` specifications: spec k's effect is the EGA - baseline
    difference of ``values + noise_k`` in units of ``unit`` (a half-width)."""
    rng = np.random.default_rng(seed)
    jitter = rng.normal(0, noise, (n_specs, len(values)))

    def curve(lab):
        ega = np.asarray(lab) == "ega"
        x = np.asarray(values) + jitter
        return (x[:, ega].mean(1) - x[:, ~ega].mean(1)) / unit

    return curve


def _effects(curve, labs):
    return np.array([curve(lab) for lab in labs])


def _planted(shift):
    """8 models: baseline values 0..0.3, EGA the same shifted by ``shift``."""
    base = np.linspace(0.0, 0.3, 4)
    return np.concatenate([base, base + shift])


def test_curve_statistics_of_a_known_curve():
    from msapod.studies.verdict.claims import Z95

    # 1.0 is a bound (+-1): significant in neither direction; NaN: no effect
    e = np.array([[1.5, -2.0, 1.0, np.nan, 0.5], [np.nan] * 5])
    st = nulls.curve_statistics(e)
    assert st["share_for"][0] == pytest.approx(1 / 5)  # of all 5 specifications
    assert st["share_against"][0] == pytest.approx(1 / 5)
    assert st["median_effect"][0] == pytest.approx(0.75)
    assert st["stouffer_z"][0] == pytest.approx(Z95 * 1.0 / np.sqrt(4))
    assert st["share_for"][1] == 0 and np.isnan(st["median_effect"][1])
    assert np.isnan(st["stouffer_z"][1])


def test_a_curve_consistently_for_the_claim_gets_the_smallest_p_for():
    labs, exact = architecture_labelings(ARCH8)
    res = joint_test(_effects(_arch_curve(_planted(5.0), noise=0.1), labs), exact=exact)
    assert res.observed["share_for"] == 1.0 and res.observed["share_against"] == 0.0
    assert res.observed["median_effect"] > 1 and res.observed["stouffer_z"] > 1.96
    for name in ("p_median_for", "p_share_for", "p_stouffer_for"):
        assert res.p[name] == pytest.approx(1 / 70)
    assert res.p_for == pytest.approx(1 / 70) and res.p_against == 1.0
    assert res.direction == "for" and res.joint_p == pytest.approx(2 / 70)  # two-sided
    assert res.n_null == 70 and res.exact and res.min_p == pytest.approx(2 / res.n_null)
    assert res.reachable and res.null["median_effect"].shape == (70,)


def test_a_curve_consistently_against_the_claim_gets_the_smallest_p_against():
    labs, exact = architecture_labelings(ARCH8)
    res = joint_test(_effects(_arch_curve(_planted(-5.0), noise=0.1), labs), exact=exact)
    assert res.observed["share_against"] == 1.0 and res.observed["share_for"] == 0.0
    for name in ("p_median_against", "p_share_against", "p_stouffer_against"):
        assert res.p[name] == pytest.approx(1 / 70)
    assert res.p_against == pytest.approx(1 / 70) and res.p_for == 1.0
    assert res.direction == "against" and res.joint_p == pytest.approx(2 / 70)


def test_a_curve_under_the_null_gets_p_values_that_are_not_small():
    """Effects independent of the labels: each p-value is at most alpha in about alpha
    of the data sets and spread over (0, 1]; so are the two summaries."""
    labs, exact = architecture_labelings(ARCH8)
    ps = {k: [] for k in (*nulls.P_VALUES, "p_for", "p_against")}
    for seed in range(150):
        values = np.random.default_rng(100 + seed).normal(0, 1, 8)
        res = joint_test(_effects(_arch_curve(values, noise=0.3, seed=seed), labs), exact=exact)
        for k in ps:
            ps[k].append(res.p[k] if k in res.p else getattr(res, k))
    for k, p in ps.items():
        p = np.asarray(p)
        assert np.mean(p <= 0.05) <= 0.12, k
        if k.startswith(("p_median", "p_stouffer")):  # the shares are mostly 0: p = 1
            assert 0.3 < np.median(p) < 0.75, k


def test_summaries_are_the_largest_p_of_each_direction():
    def curve(lab):
        # the observed curve has the largest effects, none beyond its interval
        return np.full(4, 0.9 if list(lab) == ARCH8 else 0.1)

    labs, exact = architecture_labelings(ARCH8)
    res = joint_test(_effects(curve, labs), exact=exact)
    assert res.p["p_median_for"] == pytest.approx(1 / 70)
    assert res.p["p_stouffer_for"] == pytest.approx(1 / 70)
    assert res.p["p_share_for"] == 1.0  # no specification significant: no evidence
    assert res.p_for == 1.0
    with pytest.raises(ValueError, match="effects"):
        joint_test(_effects(curve, labs[:1]))


def test_two_plus_two_seeds_cannot_reach_significance():
    arch = ["baseline", "baseline", "ega", "ega"]
    labs, exact = architecture_labelings(arch)
    res = joint_test(_effects(_arch_curve(np.array([0.0, 0.1, 10.0, 10.1])), labs), exact=exact)
    assert res.n_null == 6 and res.min_p == pytest.approx(2 / 6)
    assert res.p_for == pytest.approx(1 / 6) and res.direction == "for"
    assert not res.reachable and "cannot reach" in res.note


# ---------------------------------------------------------------------------------------
# relabelling ZooData (no recomputation) and the joint tests of the rules


def _fake_data(values, arch=ARCH8, layers=6, name="energy", se="energy_se", se_value=0.01):
    """A ZooData whose only numbers are a per-(model, layer) ``name`` and its SE ``se``."""
    from msapod.studies.verdict.multiverse import ZooData

    models = [f"{a}-{i}" for i, a in enumerate(arch)]
    values = np.asarray(values, float)
    ev = xr.Dataset(
        {
            name: (("model", "layer"), values),
            se: (("model", "layer"), np.full(values.shape, se_value)),
        },
        coords={
            "model": models,
            "layer": np.arange(1, layers + 1),
            "architecture": ("model", list(arch)),
        },
    )
    return ZooData(models, ev)


def test_relabel_architecture_and_layers_share_the_evidence():
    vals = np.arange(48, dtype=float).reshape(8, 6)
    data = {"z": _fake_data(vals)}
    lab = ARCH8[::-1]
    out = relabel_architecture(data, lab)
    assert list(out["z"].ev["architecture"].values) == lab
    np.testing.assert_array_equal(out["z"].ev["energy"].values, vals)
    perms, _ = layer_labelings(8, range(1, 7), [[1, 2]], max_exact=10, n_random=3, seed=0)
    p = perms[1]
    got = relabel_layers(data, p)["z"].ev["energy"].values
    for m in range(8):
        np.testing.assert_array_equal(got[m], vals[m, p[m]])
    # trained vs untrained: model m's numbers from the untrained copy where swapped
    un = {"z": _fake_data(-vals)}
    mask = np.array([True, False] * 4)
    sw = swap_untrained(data, un, mask)["z"].ev["energy"].values
    np.testing.assert_array_equal(sw[mask], -vals[mask])
    np.testing.assert_array_equal(sw[~mask], vals[~mask])
    with pytest.raises(ValueError, match="labels"):
        relabel_architecture(data, lab[:3])


def _one_spec(zoo="z"):
    from msapod.studies.verdict.multiverse import MAIN_SPEC

    return [{"zoo": zoo, **MAIN_SPEC}]


@pytest.fixture
def energy_rule(monkeypatch):
    """C7's rule on the fake data's energy (every other input of the curve left out)."""
    import msapod.studies.verdict.multiverse as mv

    def fake_rule_call(claim, spec, d):
        return mv.RULES["C7"], (d.ev["energy"], d.ev["energy_se"]), {"where": "test"}

    monkeypatch.setattr(mv, "rule_call", fake_rule_call)


@pytest.mark.parametrize("shift, direction", [(1.0, "for"), (-1.0, "against")])
def test_joint_tests_on_a_planted_architecture_effect(energy_rule, shift, direction):
    """C7 through its rule: EGA energy planted above baseline in every layer gets p "for"
    = 1/70, below it p "against" = 1/70 (two-sided: 2/70); the 70 labellings enumerated
    exactly."""
    rng = np.random.default_rng(0)
    planted = (
        rng.normal(1.0, 0.05, (8, 6)) + np.where(np.array(ARCH8) == "ega", shift, 0.0)[:, None]
    )
    r = nulls.joint_tests({"z": _fake_data(planted)}, _one_spec(), claims=["C7"]).sel(claim="C7")
    assert str(r["direction"].values) == direction
    assert float(r["joint_p"]) == pytest.approx(2 / 70)
    assert float(r[f"p_{direction}"]) == pytest.approx(1 / 70)
    other = "against" if direction == "for" else "for"
    assert float(r[f"p_{other}"]) == 1.0
    assert float(r[f"share_{direction}"]) == 1.0
    assert int(r["n_null"]) == 70 and bool(r["exact"]) and bool(r["reachable"])
    assert float(r["min_p"]) == pytest.approx(2 / 70) and str(r["zoo"].values) == "z"
    assert "70 balanced architecture labellings" in str(r["note"].values)


def test_joint_tests_without_a_null_or_a_design_that_can_reach_alpha(energy_rule):
    rng = np.random.default_rng(0)
    planted = rng.normal(1.0, 0.05, (8, 6)) + np.where(np.array(ARCH8) == "ega", 1.0, 0.0)[:, None]
    # labels unrelated to the planted groups (2 + 2 models: 6 labellings)
    mixed = ["ega", "baseline", "ega", "baseline"]
    res = nulls.joint_tests({"z": _fake_data(planted[2:6], arch=mixed)}, _one_spec(), claims=["C7"])
    r = res.sel(claim="C7")
    assert int(r["n_null"]) == 6 and float(r["min_p"]) == pytest.approx(2 / 6)
    assert float(r["joint_p"]) > 0.2 and not bool(r["reachable"])
    # no null for C10: NaN, no direction, the reason in the note
    r = nulls.joint_tests({"z": _fake_data(planted)}, _one_spec(), claims=["C10"]).sel(claim="C10")
    assert np.isnan(float(r["joint_p"])) and str(r["direction"].values) == ""
    assert str(r["note"].values) == "no null for this claim"


@pytest.fixture
def scale_rule(monkeypatch):
    """C1's rule on the fake data's scale statistic (no edges, no grid)."""
    import msapod.studies.verdict.multiverse as mv

    v, se = "scale_stat_value", "scale_stat_se"

    def fake_rule_call(claim, spec, d):
        return mv.rule_dominant_scale, ("C1", d.ev[v], d.ev[se]), {"where": "test"}

    monkeypatch.setattr(mv, "rule_call", fake_rule_call)
    return lambda scale: {"z": _fake_data(scale, arch=ARCH8, name=v, se=se, se_value=0.2)}


def test_layer_null_on_planted_early_layers(scale_rule):
    """C1 on 8 models: layers 1-2 at fine scales and the others coarse gets the smallest
    p "for" (0.01: 99 random per-model relabellings of 15^8) of the median effect and of
    Stouffer's Z; the reverse, the smallest p "against"; every layer alike, p = 1 both
    ways (every relabelling gives the observed curve)."""
    rng = np.random.default_rng(2)
    fine, coarse = rng.uniform(2.5, 3.5, (8, 2)), rng.uniform(30, 40, (8, 4))
    for scale, direction in (
        (np.hstack([fine, coarse]), "for"),
        (np.hstack([coarse[:, :2], coarse[:, 2:] / 10, fine]), "against"),
    ):
        r = nulls.joint_tests(scale_rule(scale), _one_spec(), claims=["C1"]).sel(claim="C1")
        assert int(r["n_null"]) == 100 and not bool(r["exact"])
        assert float(r["min_p"]) == pytest.approx(0.02) and bool(r["reachable"])
        assert str(r["direction"].values) == direction
        assert float(r[f"p_median_{direction}"]) == pytest.approx(0.01)
        assert float(r[f"p_stouffer_{direction}"]) == pytest.approx(0.01)
        # one specification: the share is 0 or 1, as often 1 as a relabelling is significant
        parts = [float(r[f"p_{s}_{direction}"]) for s in ("median", "share", "stouffer")]
        assert float(r[f"p_{direction}"]) == max(parts)
    flat = scale_rule(np.full((8, 6), 3.0))
    r = nulls.joint_tests(flat, _one_spec(), claims=["C1"]).sel(claim="C1")
    assert float(r["p_for"]) == 1.0 and float(r["p_against"]) == 1.0


def test_exact_enumeration_counts_of_the_joint_tests(energy_rule):
    """4 + 4 models: the 70 architecture labellings; 2 + 2: 6; trained vs untrained of 8
    models: the 256 swaps; each with the smallest two-sided p, min_p = 2 / n_null."""
    assert swap_labelings(8)[0].shape == (256, 8) and swap_labelings(8)[1]
    data = {"z": _fake_data(np.random.default_rng(0).normal(1, 0.1, (8, 6)))}
    specs = _one_spec()
    for d, n in ((data, 70), ({"z": _fake_data(np.ones((4, 6)), arch=ARCH8[2:6])}, 6)):
        r = nulls.joint_tests(d, specs, claims=["C7"]).sel(claim="C7")
        assert int(r["n_null"]) == n and bool(r["exact"])
        assert float(r["min_p"]) == pytest.approx(2 / n)
    r = nulls.joint_tests(
        data, specs, claims=["C7"], nulls={"C7": "trained vs untrained"}, untrained=data
    ).sel(claim="C7")
    assert int(r["n_null"]) == 256 and bool(r["exact"]) and float(r["min_p"]) == 2 / 256
    assert float(r["p_for"]) == 1.0  # the untrained copy is the trained model: all ties


# ---------------------------------------------------------------------------------------
# null ensembles


def test_untrained_model_is_the_initialisation_of_training():
    import torch

    from msapod.models.gpt import GPT
    from msapod.models.zoo import ZOO_CONFIGS

    m = nullfields.untrained_model("baseline-1")
    torch.manual_seed(ZOO_CONFIGS["baseline-1"].seed)
    ref = GPT(ZOO_CONFIGS["baseline-1"].model)
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(m.state_dict()[k], v, rtol=0, atol=0)
    assert m.weights_sha256 == nullfields.untrained_model("baseline-1").weights_sha256
    assert m.weights_sha256 != nullfields.untrained_model("baseline-2").weights_sha256
    assert m.name == "untrained:baseline-1" and not m.training
    with pytest.raises(ValueError, match="name"):
        nullfields.untrained_model("nope")


def test_shuffle_snippets_permutes_each_row_deterministically():
    ids = np.arange(40).reshape(4, 10)
    s = shuffle_snippets(ids, seed=1)
    assert not np.array_equal(s, ids)
    for a, b in zip(s, ids, strict=True):
        assert sorted(a) == sorted(b)
    np.testing.assert_array_equal(s, shuffle_snippets(ids, seed=1))
    np.testing.assert_array_equal(s[:2], shuffle_snippets(ids[:2], seed=1))
    with pytest.raises(ValueError, match="ids"):
        shuffle_snippets(np.arange(5))


@pytest.fixture
def tiny_model():
    import torch

    from msapod.models.data import load_corpus
    from msapod.models.gpt import GPT, GPTConfig

    torch.manual_seed(0)
    cfg = GPTConfig(
        vocab_size=load_corpus().vocab_size, n_layer=2, n_head=2, n_embd=16, block_size=32
    )
    m = GPT(cfg).eval()
    m.weights_sha256 = state_sha256(m)
    return m


def test_null_fields_are_cached_and_keyed_by_the_null(tmp_path, tiny_model):
    kw = {"n": 3, "length": 16, "cache_dir": tmp_path, "model": tiny_model}
    F = nullfields.null_fields("baseline-1", "untrained", **kw)
    assert F.dims == ("layer", "snapshot", "query", "key") and F.shape == (2, 3, 16, 16)
    assert F.attrs["null"] == "untrained"
    again = nullfields.null_fields("baseline-1", "untrained", **kw)
    assert again.encoding["source"] == F.encoding["source"]
    np.testing.assert_array_equal(again.values, F.values)
    S = nullfields.null_fields("baseline-1", "shuffled", **kw)
    assert S.encoding["source"] != F.encoding["source"]
    assert not np.allclose(S.values, F.values)
    np.testing.assert_allclose(S.sum("key").values, 1.0, atol=1e-5)  # row-stochastic
    W = nullfields.null_fields("baseline-1", "words", **kw)
    assert W.attrs["null"] == "words"
    assert len({W.encoding["source"], S.encoding["source"], F.encoding["source"]}) == 3
    assert not np.allclose(W.values, S.values) and not np.allclose(W.values, F.values)
    with pytest.raises(ValueError, match="null"):
        nullfields.null_fields("baseline-1", "random", **kw)


def test_outcome_effect_signs_and_units():
    from msapod.studies.verdict.rules import Outcome

    def da(v):
        return xr.DataArray(
            np.asarray(v, float).reshape(1, -1),
            dims=("model", "layer"),
            coords={"model": ["m"], "layer": np.arange(1, np.size(v) + 1)},
        )

    # C1 on the band share: trained - untrained 0.1 in [0.05, 0.15] against > 0
    d, dlo, dup = da([0.1] * 6), da([0.05] * 6), da([0.15] * 6)
    e = nulls.outcome_effect(Outcome("C1", "holds", "", "", "", stat=d, lower=dlo, upper=dup))
    assert e == pytest.approx(2.0)
    # C1's dominant-scale reading: a* = 3 in [2, 4.5] (log scale) against the range its
    # rule read (a <= 7, in the stat's attrs): inside, interval clear of 7
    s, lo, up = da([3.0] * 6), da([2.0] * 6), da([4.5] * 6)
    s.attrs = {"range": (-np.inf, 7.0), "log": True}
    e = nulls.outcome_effect(Outcome("C1", "holds", "", "", "", stat=s, lower=lo, upper=up))
    assert e == pytest.approx((np.log(7) - np.log(3)) / ((np.log(4.5) - np.log(2)) / 2))
    # C2's reading on the same numbers (a >= 20): negative
    s2 = s.copy()
    s2.attrs = {"range": (20.0, np.inf), "log": True}
    e2 = nulls.outcome_effect(Outcome("C2", "", "", "", "", stat=s2, lower=lo, upper=up))
    assert e2 < -1
    # point values (no interval): no effect
    assert np.isnan(nulls.outcome_effect(Outcome("C1", "", "", "", "", stat=s, lower=s, upper=s)))
    # C8: the stated signs per layer (+ in 3-4, - in 5-6)
    layer = np.arange(3, 7)
    diff = xr.Dataset(
        {
            "value": ("layer", [1.0, 1.0, -1.0, -1.0]),
            "lower": ("layer", [0.5, 0.5, -1.5, -1.5]),
            "upper": ("layer", [1.5, 1.5, -0.5, -0.5]),
        },
        coords={"layer": layer},
    )
    assert nulls.outcome_effect(Outcome("C8", "", "", "", "", diff=diff)) == pytest.approx(2.0)
    assert nulls.outcome_effect(Outcome("C7", "", "", "", "", diff=diff)) == pytest.approx(0.0)
    # a rule's own effect wins; no numbers -> NaN
    assert nulls.outcome_effect(Outcome("C4", "", "", "", "", extra={"effect": 0.3})) == 0.3
    assert np.isnan(nulls.outcome_effect(Outcome("C6", "", "", "", "")))


@pytest.mark.parametrize("jackknife", [False, True])
def test_outcome_effect_of_c9_from_its_intervals_is_the_rules_own(jackknife):
    """C9's effect read from the intervals its outcome reports (per layer over seeds, or
    per model and layer with a jackknife) equals the effect the rule computes."""
    from msapod.studies.verdict.rules import rule_c9

    rng = np.random.default_rng(4)
    ratio = xr.DataArray(
        rng.uniform(0.6, 1.3, (4, 6)),
        dims=("model", "layer"),
        coords={"model": list("abcd"), "layer": np.arange(1, 7)},
    )
    se = ratio.copy(data=rng.uniform(0.01, 0.1, (4, 6))) if jackknife else None
    out = rule_c9(ratio, se, se_df=9 if jackknife else None)
    own = out.extra.pop("effect")
    assert np.isfinite(own) and nulls.outcome_effect(out) == pytest.approx(own, rel=1e-12)


def attention(n, length, seed, scale, layers):
    """Causal row-stochastic fields ``(layer, snapshot, query, key)`` with a lag
    preference of width ``scale``."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    lag = i - j
    logits = rng.normal(0, 1.0, (layers, n, length, length)) - lag / scale
    logits = np.where(lag >= 0, logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    coords = {
        "layer": np.arange(1, layers + 1),
        "query": np.arange(length),
        "key": np.arange(length),
    }
    return xr.DataArray(A, dims=("layer", "snapshot", "query", "key"), coords=coords)


@pytest.fixture(scope="module")
def tiny_zoos():
    """Trained-like and untrained-like synthetic evidence of 2 + 2 models (the readings
    cut to one per window axis, as in the multiverse tests)."""
    import msapod.studies.measure.evidence as evmod
    import msapod.studies.verdict.multiverse as mv

    models = ["baseline-1", "baseline-2", "ega-1", "ega-2"]
    small = {**mv.AXES, "centre": ("energy-max",), "width": (1.0,), "scale_min": (3,)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(evmod, "AXES", small)  # the readings measured
        mp.setattr(mv, "AXES", small)  # and the specifications
        trained = [
            mv.fields_evidence(attention(n=6, length=12, seed=k, scale=2 + k, layers=6))
            for k in range(4)
        ]
        flat = [
            mv.fields_evidence(attention(n=6, length=12, seed=10 + k, scale=50.0, layers=6))
            for k in range(4)
        ]
        t = nulls.null_zoo_data(models, "untrained", evidence=trained)
        t.ev.attrs.pop("null")
        u = nulls.null_zoo_data(models, "untrained", evidence=flat)
        specs = mv.specifications(["z"])
        yield {"z": t}, {"z": u}, specs


def test_null_verdicts_and_the_trained_vs_untrained_null(tiny_zoos):
    from msapod.studies.verdict.claims import VERDICTS
    from msapod.studies.verdict.multiverse import CLAIM_IDS

    trained, untrained, specs = tiny_zoos
    v = nulls.null_verdicts(untrained["z"])
    assert list(v["claim"].values) == list(CLAIM_IDS) and v.attrs["null"] == "untrained"
    for c in CLAIM_IDS:
        word = str(v.sel(claim=c).values)
        # C1 and C2: the untrained models are their rule's reference, not a null
        none = c in nulls.NO_NULL_CLAIMS or REGISTRY[c].no_untrained
        assert word == "" if none else word in VERDICTS
    ds = nulls.joint_tests(trained, specs, claims=["C9", "C6"], untrained=untrained)
    r = ds.sel(claim="C9")
    assert str(r["null"].values) == "trained vs untrained"
    assert int(r["n_null"]) == 2**4 and bool(r["exact"]) and not bool(r["reachable"])
    assert float(r["min_p"]) == pytest.approx(2 / 16)
    assert 1 / 16 <= float(r["p_for"]) <= 1 and 1 / 16 <= float(r["p_against"]) <= 1
    assert str(r["direction"].values) in ("for", "against")
    assert np.isnan(float(ds["joint_p"].sel(claim="C6")))


#: How :func:`nulls.claim_effects` evaluates each claim's curve on the tiny zoos.
HOW = {
    "C1": "stacked along model",
    "C2": "stacked along model",
    "C3": "stacked along model",
    "C5": "stacked along model",
    "C7": "stacked along layer",
    "C8": "stacked along layer",
    "C9": "stacked along layer",
    "C4": "its rule's steps over seeds, side by side",
}


@pytest.mark.parametrize("claim", list(HOW))
def test_stacked_relabellings_give_the_rules_own_effects(tiny_zoos, claim):
    """The stacked evaluation of a curve under relabellings equals the rule run afresh,
    relabelling by relabelling, on the fully relabelled zoo (every variable relabelled,
    no outcome reused)."""
    import msapod.studies.verdict.multiverse as mv

    trained, untrained, specs = tiny_zoos
    kind = nulls.DEFAULT_NULL[claim]
    d = trained["z"]
    labs = nulls._labelings(claim, kind, d, max_exact=0, n_random=4, seed=1)[0]
    cs = [s for s in specs if mv.applies(claim, s) and s["n"] == 150]
    effects, how = nulls.claim_effects(claim, cs, trained, kind, labs, untrained)
    assert how == HOW[claim] and effects.shape == (len(labs), len(cs))
    assert np.isfinite(effects).any()
    reference = {
        "layer labels": nulls.relabel_layers,
        "architecture labels": nulls.relabel_architecture,
        "trained vs untrained": lambda t, s: nulls.swap_untrained(t, untrained, s),
    }[kind]
    for lab, row in zip(labs, effects, strict=True):
        full = reference(trained, lab)["z"]
        want = [nulls.outcome_effect(mv.evaluate(claim, s, full)) for s in cs]
        np.testing.assert_allclose(row, want, rtol=1e-9, atol=1e-12)


def test_the_scorecard_names_the_direction_of_the_joint_test():
    from msapod.studies.verdict.scorecard import joint_words

    def row(p, direction):
        return xr.Dataset({"joint_p": p, "joint_direction": direction})

    assert joint_words(row(1 / 70, "against")) == "against the claim, two-sided p-value 0.014"
    assert joint_words(row(0.01, "for")) == "for the claim, two-sided p-value 0.01"
    # not significant: no direction named (the nearer side of a null is not evidence)
    assert joint_words(row(1.0, "for")) == "two-sided p-value 1, neither direction"
    assert joint_words(row(np.nan, "")) == "—"
