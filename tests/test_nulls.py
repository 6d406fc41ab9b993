"""Null controls and the joint test over the specification curve (msapod.studies.verdict.nulls):
exact enumeration counts, planted architecture and layer effects give small p, unrelated
labels give p values that are not significant (uniform under the null), the untrained
model is the training run's initialisation, and null fields are cached and verified."""

import math

import numpy as np
import pytest
import xarray as xr

from msapod.studies.verdict import nulls
from msapod.studies.verdict.nulls import (
    architecture_labelings,
    joint_test,
    layer_labelings,
    relabel_architecture,
    relabel_layers,
    shuffle_snippets,
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


def _arch_curve(values, n_specs=5, noise=0.0, seed=0):
    """A curve of ``n_specs`` specifications: spec k's effect is the t-like EGA - baseline
    difference of ``values + noise_k``; "holds" when it exceeds 2."""
    rng = np.random.default_rng(seed)
    jitter = rng.normal(0, noise, (n_specs, len(values)))

    def curve(lab):
        ega = np.asarray(lab) == "ega"
        eff = []
        for k in range(n_specs):
            x = np.asarray(values) + jitter[k]
            d = x[ega].mean() - x[~ega].mean()
            s = np.sqrt(x[ega].var(ddof=1) / ega.sum() + x[~ega].var(ddof=1) / (~ega).sum())
            eff.append(d / s)
        eff = np.asarray(eff)
        return eff > 2, eff

    return curve


def test_planted_architecture_effect_gives_the_smallest_p():
    rng = np.random.default_rng(1)
    values = rng.normal(0, 1, 8) + np.where(np.array(ARCH8) == "ega", 5.0, 0.0)
    labs, exact = architecture_labelings(ARCH8)
    res = joint_test(_arch_curve(values, noise=0.1), labs, exact=exact)
    assert res.share == 1.0 and res.median > 2
    assert res.p_share == pytest.approx(1 / 70) and res.joint_p == pytest.approx(1 / 70)
    assert res.reachable and res.min_p == pytest.approx(1 / 70)
    assert res.n_null == 70 and res.null_share.shape == (70,)


def test_two_plus_two_seeds_cannot_reach_significance():
    arch = ["baseline", "baseline", "ega", "ega"]
    values = np.array([0.0, 0.1, 10.0, 10.1])
    labs, exact = architecture_labelings(arch)
    res = joint_test(_arch_curve(values), labs, exact=exact)
    assert res.joint_p == pytest.approx(1 / 6)
    assert not res.reachable and "cannot reach" in res.note


def test_no_effect_gives_uniform_p_values():
    labs, exact = architecture_labelings(ARCH8)
    ps = []
    for seed in range(150):
        values = np.random.default_rng(100 + seed).normal(0, 1, 8)
        ps.append(joint_test(_arch_curve(values, noise=0.3, seed=seed), labs, exact=exact).p_median)
    ps = np.asarray(ps)
    # a valid test: p <= 0.05 in about 5 % of null data sets, p spread over (0, 1]
    assert np.mean(ps <= 0.05) <= 0.12
    assert 0.35 < np.median(ps) < 0.65
    assert np.mean(ps <= 0.5) == pytest.approx(0.5, abs=0.15)


def test_joint_p_is_the_larger_of_the_two():
    def curve(lab):
        # holds in every relabelling, effect only in the observed one
        e = 3.0 if list(lab) == ARCH8 else 0.0
        return np.ones(4, bool), np.full(4, e)

    labs, exact = architecture_labelings(ARCH8)
    res = joint_test(curve, labs, exact=exact)
    assert res.p_share == 1.0 and res.p_median == pytest.approx(1 / 70)
    assert res.joint_p == 1.0
    with pytest.raises(ValueError, match="labelings"):
        joint_test(curve, labs[:1])


# ---------------------------------------------------------------------------------------
# relabelling ZooData (no recomputation) and the joint tests of the rules


def _fake_data(values, arch=ARCH8, layers=6, name="energy", se="energy_se"):
    """A ZooData whose only numbers are a per-(model, layer) ``name`` and its SE ``se``."""
    from msapod.studies.verdict.multiverse import ZooData

    models = [f"{a}-{i}" for i, a in enumerate(arch)]
    ev = xr.Dataset(
        {
            name: (("model", "layer"), np.asarray(values, float)),
            se: (("model", "layer"), np.full((len(arch), layers), 0.01)),
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


def _one_spec():
    from msapod.studies.verdict.multiverse import MAIN_SPEC

    return [{"zoo": "z", **MAIN_SPEC}]


def test_joint_tests_on_the_rule_planted_architecture_effect(monkeypatch):
    """C7 through multiverse.evaluate: EGA energy planted above baseline in every layer
    gives joint p = 1/70; the same numbers with unrelated labels do not."""
    import msapod.studies.verdict.multiverse as mv

    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 0.05, (8, 6))
    planted = base + np.where(np.array(ARCH8) == "ega", 1.0, 0.0)[:, None]

    def fake_rule_call(claim, spec, d):
        return mv.RULES["C7"], (d.ev["energy"], d.ev["energy_se"]), {"where": "test"}

    monkeypatch.setattr(mv, "rule_call", fake_rule_call)
    specs = _one_spec()
    res = nulls.joint_tests({"z": _fake_data(planted)}, specs, claims=["C7"])
    r = res.sel(claim="C7")
    assert float(r["share"]) == 1.0
    assert float(r["joint_p"]) == pytest.approx(1 / 70)
    assert int(r["n_null"]) == 70 and bool(r["exact"]) and bool(r["reachable"])
    # labels unrelated to the planted groups (2 + 2 models: 6 labellings)
    mixed = ["ega", "baseline", "ega", "baseline"]
    res2 = nulls.joint_tests({"z": _fake_data(planted[2:6], arch=mixed)}, specs, claims=["C7"])
    assert float(res2.sel(claim="C7")["joint_p"]) > 0.2
    assert not bool(res2.sel(claim="C7")["reachable"])
    # no null for C10
    res3 = nulls.joint_tests({"z": _fake_data(planted)}, specs, claims=["C10"])
    assert np.isnan(float(res3["joint_p"].sel(claim="C10")))


def test_joint_tests_layer_null_on_planted_early_layers(monkeypatch):
    """C1 on planted scales: layers 1-2 at 3, the others at 30: the observed labelling is
    the only one of the 15 where C1 holds."""
    import msapod.studies.verdict.multiverse as mv

    arch = ["baseline"]
    scale = np.array([[3.0, 3.2, 30.0, 31.0, 32.0, 33.0]])
    v, se = "scale_stat_value", "scale_stat_se"
    data = {"z": _fake_data(scale, arch=arch, name=v, se=se)}

    def fake_rule_call(claim, spec, d):
        return mv.RULES["C1"], (d.ev[v], d.ev[se]), {"where": "test"}

    monkeypatch.setattr(mv, "rule_call", fake_rule_call)
    res = nulls.joint_tests(data, _one_spec(), claims=["C1"])
    r = res.sel(claim="C1")
    assert int(r["n_null"]) == 15 and bool(r["exact"])
    assert float(r["share"]) == 1.0 and float(r["p_share"]) == pytest.approx(1 / 15)
    assert float(r["joint_p"]) == max(float(r["p_share"]), float(r["p_median"]))
    assert not bool(r["reachable"])  # one model, 15 labellings: p >= 1/15
    # every layer at fine scales: C1 holds under any labelling, p = 1 (not layer-specific)
    flat = {"z": _fake_data(np.full((1, 6), 3.0), arch=arch, name=v, se=se)}
    res = nulls.joint_tests(flat, _one_spec(), claims=["C1"])
    assert float(res.sel(claim="C1")["joint_p"]) == 1.0


# ---------------------------------------------------------------------------------------
# null ensembles


def test_untrained_model_is_the_initialisation_of_training():
    import torch

    from msapod.models.gpt import GPT
    from msapod.models.zoo import ZOO_CONFIGS

    m = nulls.untrained_model("baseline-1")
    torch.manual_seed(ZOO_CONFIGS["baseline-1"].seed)
    ref = GPT(ZOO_CONFIGS["baseline-1"].model)
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(m.state_dict()[k], v, rtol=0, atol=0)
    assert m.weights_sha256 == nulls.untrained_model("baseline-1").weights_sha256
    assert m.weights_sha256 != nulls.untrained_model("baseline-2").weights_sha256
    assert m.name == "untrained:baseline-1" and not m.training
    with pytest.raises(ValueError, match="name"):
        nulls.untrained_model("nope")


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
    m.weights_sha256 = nulls.state_sha256(m)
    return m


def test_null_fields_are_cached_and_keyed_by_the_null(tmp_path, tiny_model):
    kw = {"n": 3, "length": 16, "cache_dir": tmp_path, "model": tiny_model}
    F = nulls.null_fields("baseline-1", "untrained", **kw)
    assert F.dims == ("layer", "snapshot", "query", "key") and F.shape == (2, 3, 16, 16)
    assert F.attrs["null"] == "untrained"
    again = nulls.null_fields("baseline-1", "untrained", **kw)
    assert again.encoding["source"] == F.encoding["source"]
    np.testing.assert_array_equal(again.values, F.values)
    S = nulls.null_fields("baseline-1", "shuffled", **kw)
    assert S.encoding["source"] != F.encoding["source"]
    assert not np.allclose(S.values, F.values)
    np.testing.assert_allclose(S.sum("key").values, 1.0, atol=1e-5)  # row-stochastic
    with pytest.raises(ValueError, match="null"):
        nulls.null_fields("baseline-1", "random", **kw)


def test_outcome_effect_signs_and_units():
    from msapod.studies.verdict.rules import Outcome

    def da(v):
        return xr.DataArray(
            np.asarray(v, float).reshape(1, -1),
            dims=("model", "layer"),
            coords={"model": ["m"], "layer": np.arange(1, np.size(v) + 1)},
        )

    # C1: a* = 3 in [2, 4.5] (log scale) against a <= 7: inside, interval clear of 7
    s, lo, up = da([3.0] * 6), da([2.0] * 6), da([4.5] * 6)
    e = nulls.outcome_effect(Outcome("C1", "holds", "", "", "", stat=s, lower=lo, upper=up))
    assert e == pytest.approx((np.log(7) - np.log(3)) / ((np.log(4.5) - np.log(2)) / 2))
    assert e > 1
    # C2 on the same numbers (a >= 20): negative
    e2 = nulls.outcome_effect(Outcome("C2", "", "", "", "", stat=s, lower=lo, upper=up))
    assert e2 < -1
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
    import msapod.studies.verdict.multiverse as mv

    models = ["baseline-1", "baseline-2", "ega-1", "ega-2"]
    small = {**mv.AXES, "centre": ("energy-max",), "width": (1.0,), "scale_min": (3,)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mv, "AXES", small)
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
        assert word == "" if c in nulls.NO_NULL_CLAIMS else word in VERDICTS
    ds = nulls.joint_tests(trained, specs, claims=["C9", "C6"], untrained=untrained)
    r = ds.sel(claim="C9")
    assert str(r["null"].values) == "trained vs untrained"
    assert int(r["n_null"]) == 2**4 and bool(r["exact"]) and not bool(r["reachable"])
    assert 1 / 16 <= float(r["joint_p"]) <= 1
    assert np.isnan(float(ds["joint_p"].sel(claim="C6")))


def test_joint_curve_reuses_outcomes_without_changing_them(tiny_zoos):
    """The joint test's curve (each claim's evidence only, outcomes reused when a rule
    gets the same numbers) equals the rule run afresh on the fully relabelled zoo."""
    import msapod.studies.verdict.multiverse as mv

    trained, untrained, specs = tiny_zoos
    arch = trained["z"].ev["architecture"].values.tolist()
    layers = list(range(1, 7))

    def swap_full(d, s):
        return nulls.swap_untrained(d, untrained, s)

    cases = [
        ("C1", nulls.relabel_layers, nulls.relabel_layers, "layer"),
        ("C4", nulls.relabel_layers, nulls.relabel_layers, "layer"),
        ("C7", nulls.relabel_architecture, nulls.relabel_architecture, "arch"),
        ("C9", None, swap_full, "swap"),
    ]
    for claim, relabel, reference, kind in cases:
        if kind == "layer":
            labs = nulls.layer_labelings(
                4, layers, nulls.LAYER_ROLES[claim], max_exact=0, n_random=3, seed=1
            )[0]
        elif kind == "arch":
            labs = nulls.architecture_labelings(arch)[0][:4]
        else:
            labs = nulls.swap_labelings(4)[0][[0, 5, 10, 15]]
            u_view = nulls.claim_view(untrained, claim)

            def relabel(d, s, u_view=u_view):
                return nulls.swap_untrained(d, u_view, s)

        cs = [s for s in specs if mv.applies(claim, s)]
        curve = nulls.claim_curve(claim, cs, nulls.claim_view(trained, claim), relabel)
        for lab in [*labs, labs[0]]:  # the observed labelling again: every outcome reused
            holds, effect = curve(lab)
            d = reference(trained, lab)["z"]
            outs = [mv.evaluate(claim, s, d) for s in cs]
            np.testing.assert_array_equal(holds, [o.verdict == "holds" for o in outs])
            np.testing.assert_array_equal(effect, [nulls.outcome_effect(o) for o in outs])
