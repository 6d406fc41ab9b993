"""The specification curve (msapod.studies.verdict.multiverse) on small synthetic fields: the
moment/Gram shortcuts equal the library's direct computations, and the main
specification's verdicts equal the scorecard's."""

import re

import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.fields import reynolds, to_lag
from msapod.studies.measure.convergence import NS
from msapod.studies.measure.evidence import (
    AXES,
    _grid,
    fields_evidence,
    lag_gram_tensor,
    layer_evidence,
    mode_lag_energy,
    window_gram,
)
from msapod.studies.verdict.claims import VERDICTS, main_verdict, verdict_markdown, verdict_shares
from msapod.studies.verdict.curve import multiverse_study
from msapod.studies.verdict.multiverse import (
    CLAIM_AXES,
    MAIN_SPEC,
    ZooData,
    _applies,
    main_outcomes,
    needs_window_se,
    specifications,
    two_seeds_each,
)
from msapod.studies.verdict.scorecard import scorecard_from_outcomes

MODELS = ["baseline-1", "baseline-2", "ega-1", "ega-2"]


def attention(n=10, length=24, seed=0, scale=3.0, layers=None):
    """Causal row-stochastic fields with a lag preference of width ``scale``."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    lag = i - j
    shape = (n, length, length) if layers is None else (layers, n, length, length)
    logits = rng.normal(0, 1.0, shape) - lag / scale
    logits = np.where(lag >= 0, logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    dims = ("snapshot", "query", "key") if layers is None else ("layer", "snapshot", "query", "key")
    coords = {"query": np.arange(length), "key": np.arange(length)}
    if layers is not None:
        coords["layer"] = np.arange(1, layers + 1)
    return xr.DataArray(A, dims=dims, coords=coords)


@pytest.fixture(scope="module")
def field():
    return attention()


@pytest.fixture(scope="module")
def evidence(field):
    return layer_evidence(field, theorem1=False)


def test_windowed_gram_eigenvalues_equal_pod(field):
    u = reynolds(field)["fluctuation"]
    R = to_lag(u)
    G = lag_gram_tensor(R.transpose("snapshot", "query", "lag").values)
    lags = R["lag"].values
    for c, sigma in ((0.0, 1.0), (5.0, 2.5), (12.0, 6.0)):
        w = msapod.lag_window(lags, c, sigma)
        lam = np.linalg.eigvalsh(window_gram(G, w.values))[::-1]
        ref = msapod.pod(u, window=w)["spectrum"].values
        np.testing.assert_allclose(lam, ref, rtol=0, atol=1e-10 * ref[0])
        # the mode's lag energy from G equals the lag energy of the POD mode itself
        vals, vecs = np.linalg.eigh(window_gram(G, w.values))
        e = mode_lag_energy(G, w.values, vecs[:, -1])
        mode = msapod.pod(u, n_modes=1, window=w)["modes"].isel(mode=0)
        e_ref = (to_lag(mode**2)).sum("query").values
        np.testing.assert_allclose(e, e_ref / e_ref.sum(), atol=1e-10)
    # plain POD (w = 1) as stored in the evidence
    ev = layer_evidence(field)
    np.testing.assert_allclose(ev["spectrum"].values, msapod.pod(u)["spectrum"].values, atol=1e-12)


def test_scale_statistics_equal_the_scalogram(field, evidence):
    u = reynolds(field)["fluctuation"]
    for field_name, data in (("u", u), ("A", field)):
        for smin in (2, 3):
            s = _grid(smin, 24)
            for norm in ("rectified", "raw"):
                spec = msapod.scalogram(data, scales=s, bias_correction=norm == "rectified")
                cent = float(msapod.scale_centroid(spec["spectrum"]))
                got = evidence["scale_stat_value"].sel(
                    field=field_name, normalisation=norm, scale_min=smin, scale_stat="centroid"
                )
                assert float(got) == pytest.approx(cent, rel=1e-9)
    # energy (raw) equals the sum of the scalogram of u
    spec = msapod.scalogram(u, scales=_grid(2, 24), bias_correction=False)
    e = evidence["energy"].sel(field="u", normalisation="raw", scale_min=2)
    assert float(e) == pytest.approx(float(spec["spectrum"].sum()), rel=1e-9)


@pytest.mark.parametrize("which", [("A", "total"), ("u", "fluctuation")])
def test_scale_jackknife_matches_the_uncertainty_study(field, evidence, which):
    from msapod.studies.measure.uncertainty import scale_jackknife

    sj = scale_jackknife(field, scales=_grid(3, 24), field=which[1])
    se = evidence["scale_stat_se"].sel(
        field=which[0], normalisation="rectified", scale_min=3, scale_stat="centroid"
    )
    assert float(se) == pytest.approx(float(sj["scale_centroid_se"]), rel=1e-6)


def test_specifications_cover_every_claims_subgrid():
    specs = specifications(["z"])
    assert len(specs) >= 64
    assert specs[0] == {"zoo": "z", **MAIN_SPEC}
    for claim, axes in CLAIM_AXES.items():
        n = int(np.prod([len(AXES[a]) for a in axes])) if axes else 1
        if claim == "C4":  # the windows on the paper's lags vary with their width only
            n = n // len(AXES["c4_window"]) + len(AXES["width"])
        got = [s for s in specs if _applies(claim, s)]
        assert len(got) == n, claim
    on_lags = [s for s in specs if _applies("C4", s) and s["c4_window"] == "range"]
    assert sorted(s["width"] for s in on_lags) == sorted(AXES["width"])
    assert all(
        s["field"] == MAIN_SPEC["field"] and s["centre"] == MAIN_SPEC["centre"] for s in on_lags
    )


@pytest.fixture(scope="module")
def zoo():
    """Four synthetic "models" of 6 layers; the window axes are cut to one reading each
    (the full grid is exercised on the zoo by the benchmark) so the test stays fast."""
    import msapod.studies.measure.evidence as evmod
    import msapod.studies.verdict.multiverse as mvmod

    small = {**mvmod.AXES, "centre": ("energy-max",), "width": (1.0,), "scale_min": (3, 2)}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(evmod, "AXES", small)  # the readings measured
        mp.setattr(mvmod, "AXES", small)  # and the specifications
        ev = xr.concat(
            [
                fields_evidence(
                    attention(n=6, length=12, seed=k, scale=2 + k, layers=6),
                    theorem1_layer=4 if k == 0 else 0,
                )
                for k in range(4)
            ],
            dim=xr.DataArray(MODELS, dims="model", name="model"),
        )
        ev = ev.assign_coords(architecture=("model", ["baseline", "baseline", "ega", "ega"]))
        ev.attrs["n_snapshots"] = 6
        loss = xr.DataArray(
            [1.5, 1.52, 1.45, 1.46],
            dims="model",
            coords={"model": MODELS, "architecture": ("model", ["baseline"] * 2 + ["ega"] * 2)},
        )
        data = ZooData(MODELS, ev, None, None, (loss, False))
        mv = multiverse_study(data={"d128": data})
        yield data, mv


def test_main_specification_equals_scorecard(zoo):
    zoo, mv = zoo
    assert set(mv.dims) >= {"claim", "spec", "model", "layer"}
    assert mv["main"].sum() == 1 and "zoo" in mv.coords
    assert set(np.unique(mv["verdict"].values)) <= {*VERDICTS, ""}
    card = scorecard_from_outcomes(main_outcomes(zoo), llm=False)
    for claim in mv["claim"].values:
        assert main_verdict(str(claim), mv, "d128") == card.loc[str(claim), "verdict"], claim
    # every applicable spec has a verdict; the large N without the convergence study is
    # "not testable as stated", never an error
    assert (mv["verdict"].values[mv["applicable"].values] != "").all()
    c5 = mv.sel(claim="C5")
    big = c5["verdict"].values[(c5["n"] == NS[-1]).values & c5["applicable"].values]
    assert set(big) == {"not testable as stated"}
    shares = verdict_shares("C1", mv, "d128")
    # field, normalisation, 2 grids, C1's statistic (the band share or a*)
    assert sum(shares.values()) == 2 * 2 * 2 * 2


def test_verdict_markdown_starts_with_the_main_verdict(zoo):
    _, mv = zoo
    text = verdict_markdown("C4", mv, "d128")
    lines = text.splitlines()
    assert lines[0].startswith("```{admonition} C4:")
    assert lines[1] == ":class: verdict claim-C4"
    assert lines[2].startswith(f"**{main_verdict('C4', mv, 'd128')}**")
    assert text.endswith("```")
    # two sentences, then the numbers as a list
    assert len(re.findall(r"[.](?:\s|$)", lines[2])) == 2
    assert lines[3] == "" and all(x.startswith("* ") for x in lines[4:-1])
    other = verdict_markdown("C1", mv, "paper-size")
    assert "not in this study" in other or "not trained" in other


def test_flips_and_robustness(zoo):
    from msapod.studies.verdict.claims import ROBUST_SHARE, axis_flips, robustness

    _, mv = zoo
    for claim in ("C1", "C4", "C10"):
        flips = axis_flips(claim, mv, "d128")
        assert list(flips) == list(CLAIM_AXES[claim])
        assert all(0.0 <= v <= 1.0 for v in flips.values())
        label, share = robustness(claim, mv, "d128")
        total = sum(verdict_shares(claim, mv, "d128").values())
        if total == 1:
            assert label == "single"
        else:
            assert label == ("robust" if share >= ROBUST_SHARE else "fragile")


def test_theorem1_check_matches_basis_error(field):
    from msapod.studies.measure.evidence import theorem1_check

    u = reynolds(field)["fluctuation"]
    gap, beaten, trials = theorem1_check(u)
    assert gap < 1e-10 and beaten == 0 and trials == 10  # ranks 1 and 5 (N = 10)
    rng = np.random.default_rng(3)
    mask = np.tril(np.ones((24, 24), bool))
    Q = np.linalg.qr(rng.standard_normal((mask.sum(), 2)))[0]
    B = np.zeros((2, 24, 24))
    B[:, mask] = Q.T
    U = u.values[:, mask]
    mine = (U**2).sum(1).mean() - ((U @ Q) ** 2).sum(1).mean()
    ref = float(msapod.basis_error(u, xr.DataArray(B, dims=("mode", "query", "key"))))
    assert mine == pytest.approx(ref, rel=1e-12)


def test_null_controls_join_the_curve(zoo):
    """The untrained verdict and the joint test land in the study, one value per claim
    (the synthetic zoo stands in for its own untrained copy: the plumbing, not the
    numbers, is tested here; the null's statistics are tested in test_nulls)."""
    from msapod.studies.verdict.curve import add_nulls

    data, mv = zoo
    out = add_nulls(mv.copy(), {"d128": data}, {"d128": data})
    assert set(out["untrained_verdict"].values) <= {*VERDICTS, "not applicable"}
    assert out["untrained_verdict"].sel(claim="C6") == "not applicable"
    p = out["joint_p"].values
    assert ((p[np.isfinite(p)] > 0) & (p[np.isfinite(p)] <= 1)).all()
    assert np.isnan(float(out["joint_p"].sel(claim="C10")))  # no null for Theorem 1


def test_shuffled_column_holds_the_lag_claims_verdicts(zoo):
    """The shuffled-snippet null's verdicts: the rule at the default reading on the
    shuffled fields for the lag-structure claims, "—" for the others, and the scorecard
    column right after "untrained" (a zoo with its layers reversed plays the shuffled
    fields, so the verdicts are the reversed zoo's own)."""
    from msapod.studies.verdict.curve import null_verdict_columns
    from msapod.studies.verdict.multiverse import evaluate
    from msapod.studies.verdict.nulls import SHUFFLED_CLAIMS, SHUFFLED_NOT_APPLICABLE, _clone
    from msapod.studies.verdict.scorecard import _curve_columns

    data, mv = zoo
    rev = data.ev.isel(layer=slice(None, None, -1)).assign_coords(layer=data.ev["layer"].values)
    other = _clone(data, rev, None, None)
    out = null_verdict_columns(mv.copy(), {"d128": data}, {"d128": other})
    got = out["shuffled_verdict"]
    spec = {"zoo": "d128", **MAIN_SPEC}
    for claim in out["claim"].values:
        word = str(got.sel(claim=claim).values)
        if claim in SHUFFLED_CLAIMS:
            assert word == evaluate(str(claim), spec, other).verdict, claim
        else:
            assert word == "—" and claim in SHUFFLED_NOT_APPLICABLE, claim
    card = scorecard_from_outcomes(main_outcomes(data), llm=False)
    cols = list(card.columns)
    assert cols.index("shuffled") == cols.index("untrained") + 1
    assert set(card["shuffled"]) == {"not computed"}
    _curve_columns(card, out)
    for claim in SHUFFLED_CLAIMS:
        assert card.loc[claim, "shuffled"].startswith(str(got.sel(claim=claim).values))
    assert card.loc["C10", "shuffled"] == "—"
    assert set(card["words"]) == {"not computed"}  # no word-shuffled fields given


def test_words_column_is_the_rule_on_the_word_shuffled_fields(zoo):
    """The word-order null's column: the same rule at the default reading on the fields
    given for it, independent of the character-shuffled ones."""
    from msapod.studies.verdict.curve import null_verdict_columns
    from msapod.studies.verdict.multiverse import evaluate
    from msapod.studies.verdict.nulls import SHUFFLED_CLAIMS, TEXT_NULLS, _clone

    assert TEXT_NULLS == ("shuffled", "words")
    data, mv = zoo
    rev = data.ev.isel(layer=slice(None, None, -1)).assign_coords(layer=data.ev["layer"].values)
    other = _clone(data, rev, None, None)
    out = null_verdict_columns(mv.copy(), {"d128": data}, {"d128": data}, {"d128": other})
    spec = {"zoo": "d128", **MAIN_SPEC}
    for claim in SHUFFLED_CLAIMS:
        assert str(out["words_verdict"].sel(claim=claim).values) == (
            evaluate(claim, spec, other).verdict
        )
        assert str(out["shuffled_verdict"].sel(claim=claim).values) == (
            evaluate(claim, spec, data).verdict
        )
    assert str(out["words_verdict"].sel(claim="C10").values) == "—"


def test_window_jackknife_equals_refits_without_each_group():
    """C4's and C9's delete-group jackknife (the Gram tensor re-centred without a group)
    equals recomputing the Reynolds split, the Gram tensor and each window's mode 1 from
    the kept snapshots alone."""
    from msapod.lagstats import snapshot_moments
    from msapod.studies.measure import evidence as mv

    A = attention(n=2 * mv.JACKKNIFE_GROUPS + 3, length=20, seed=4)
    R = to_lag(A).transpose("snapshot", "query", "lag")
    X, lags = R.values, R["lag"].values
    Xu = X - X.mean(0)
    grids = [mv._grid(g, len(lags)) for g in (3, 2)]
    M_up, iu = mv._upper_operator(
        np.concatenate([mv._operator(g, lags, 6.0) for g in (3, 2)]), len(lags)
    )
    keys = [(2.0, 1.5), (6.0, 3.0), (9.0, 4.0)]
    c4_key = np.array([[0, 1, 2], [2, -1, 1]])  # two readings x three paper ranges
    c9_key = np.full((2, 2, 2), -1)  # (reading, normalisation, grid)
    c9_key[0, 0, 0], c9_key[1, 1, 1], c9_key[1, 0, 1] = 1, 2, 0
    got = mv._window_jackknife(
        mv.lag_gram_tensor(Xu), Xu, lags, keys, c4_key, c9_key, M_up, grids, [True, False]
    )
    inside = np.array([(lags >= lo) & (lags <= hi) for lo, hi in mv.PAPER_LAGS.values()])
    s_rep, d_rep, r_rep = [], [], []
    nS = mv.NUM_SCALES
    for drop in np.array_split(np.arange(X.shape[0]), mv.JACKKNIFE_GROUPS):
        Xk = np.delete(X, drop, axis=0)
        Uk = Xk - Xk.mean(0)
        G = mv.lag_gram_tensor(Uk)
        modes = mv._window_modes(G, Uk, lags, keys, [0, 1, 2], M_up, iu)
        lag_e = np.einsum("tss->t", G)
        share = modes["energy"] @ inside.T
        w2e = msapod.lagstats.gaussian_windows(lags, *zip(*keys, strict=True)) ** 2 * lag_e
        base = (w2e @ inside.T) / w2e.sum(1, keepdims=True)
        r = np.arange(3)[None, :]
        s_rep.append(np.where(c4_key >= 0, share[c4_key, r], np.nan))
        d_rep.append(np.where(c4_key >= 0, share[c4_key, r] - base[c4_key, r], np.nan))
        K0 = mv.window_gram(G, np.ones(len(lags)))
        v0 = np.linalg.eigh(K0)[1][:, -1]
        phi0 = np.tensordot(v0, Uk, axes=(0, 0))
        plain = M_up @ snapshot_moments(phi0[None], upper=True)[0]
        rr = np.full(c9_key.shape, np.nan)
        for ix, j in np.ndenumerate(c9_key):
            if j < 0:
                continue
            s, gi = grids[ix[2]], ix[2]
            wgt = 1 / s if ix[1] == 0 else np.ones_like(s)
            sl = slice(gi * nS, (gi + 1) * nS)
            rr[ix] = mv._spread(modes["spectra"][j][sl] * wgt, s) / mv._spread(plain[sl] * wgt, s)
        r_rep.append(rr)
    for g, rep in zip(got, (s_rep, d_rep, r_rep), strict=True):
        want = mv._jack_se(np.array(rep))
        np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-12)
        assert np.isfinite(want[np.isfinite(g) | np.isfinite(want)]).all()
    assert np.isnan(got[0][1, 1]) and np.isfinite(got[0][0, 0]) and got[2][0, 0, 0] > 0


def test_capacity_column_for_every_other_zoo(zoo):
    """A second zoo with one seed per architecture: its default-reading verdicts become
    the scorecard's ``verdict_<zoo>`` column, with C4 and C9 over snapshots."""
    data, _ = zoo
    one_each = ZooData(data.models[::2], data.ev.isel(model=[0, 2]), None, None, None)
    mv = multiverse_study(data={"d128": data, "paper-size": one_each})
    assert mv.attrs["zoos"] == "d128,paper-size"
    card = scorecard_from_outcomes(main_outcomes(data), multiverse=mv)
    for c in mv["claim"].values:
        assert card.loc[c, "verdict_paper-size"] == main_verdict(c, mv, "paper-size")
    main_ps = (mv["main"] & (mv["zoo"] == "paper-size")).values
    rules = mv["rule"].isel(spec=np.flatnonzero(main_ps)[0])
    assert "delete-group jackknife" in str(rules.sel(claim="C9").values)
    main_d = (mv["main"] & (mv["zoo"] == "d128")).values
    assert "over seeds" in str(
        mv["rule"].isel(spec=np.flatnonzero(main_d)[0]).sel(claim="C9").values
    )


def test_where_c4_and_c9_take_their_intervals_is_one_rule(zoo):
    """The jackknife is computed for exactly the zoos whose evidence is then read over
    snapshots: ``needs_window_se`` (from model names) and ``ZooData.over_seeds`` (from the
    evidence's architecture coordinate) are the same rule, ``two_seeds_each``."""
    data, _ = zoo
    assert two_seeds_each(["baseline", "ega", "ega", "baseline"])
    assert not two_seeds_each(["baseline", "ega", "ega"])
    assert not two_seeds_each([])
    assert two_seeds_each(["baseline", "baseline"])  # one architecture, two seeds
    for names in (
        ["baseline-1", "ega-1"],
        ["baseline-1", "baseline-2", "ega-1", "ega-2"],
        ["baseline-d256-1", "baseline-d256-2", "ega-d256-1"],
    ):
        want = not two_seeds_each([n.split("-")[0] for n in names])
        assert needs_window_se(names) is want
    for keep in ([0, 2], [0, 1, 2, 3]):
        sub = ZooData([data.models[i] for i in keep], data.ev.isel(model=keep), None, None, None)
        assert sub.over_seeds() is two_seeds_each(sub.ev["architecture"].values)


def test_the_untrained_column_of_c1_and_c2_says_why_it_does_not_apply(zoo):
    """C1 and C2 compare each model with itself untrained: on the untrained models they
    are not applicable, with the registry's reason; the other claims get a verdict."""
    from msapod.studies.registry import REGISTRY
    from msapod.studies.verdict.curve import null_verdict_columns

    data, mv = zoo
    ev = data.ev.copy()
    ev.attrs = {**ev.attrs, "null": "untrained"}
    untrained = ZooData(data.models, ev, None, None, None)
    col = null_verdict_columns(mv.copy(), {"d128": untrained})["untrained_verdict"]
    for c in ("C1", "C2"):
        assert str(col.sel(claim=c).values) == f"not applicable ({REGISTRY[c].no_untrained})"
    assert str(col.sel(claim="C3").values) in VERDICTS
