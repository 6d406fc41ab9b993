"""What the pages print beside a claim (msapod.studies.verdict.pages): the default reading,
its numbers and the labelled comparisons, on small inputs and on the shipped results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import msapod
from msapod.studies.registry import REGISTRY
from msapod.studies.store.results import load_result
from msapod.studies.verdict import claims as cl
from msapod.studies.verdict import pages


@pytest.fixture(scope="module")
def mv():
    return load_result("multiverse")


def test_interval_text_bounds_and_missing():
    assert pages.interval_text(93.67, 91.7, 95.7) == "93.7 [91.7, 95.7]"
    assert pages.interval_text(3.0, 0.0, 3.0) == "≤ 3.00"  # a maximum at the first scale
    assert pages.interval_text(128.0, 128.0, np.inf) == "≥ 128"  # at the last scale
    assert pages.interval_text(np.nan, 1.0, 2.0) == "—"
    assert pages.interval_text(0.5, 0.5, 0.5) == "0.500"  # a point value
    assert pages.interval_text(-0.03, -0.03, -0.03) == "-0.0300"  # a point value below 0


def test_attention_scalogram_is_that_of_the_mean_plus_the_fluctuation():
    rng = np.random.default_rng(0)
    L = 24
    causal = np.tril(np.ones((L, L)))
    raw = rng.random((12, L, L)) * causal
    A = xr.DataArray(raw / raw.sum(-1, keepdims=True), dims=("snapshot", "query", "key"))
    A = A.assign_coords(query=np.arange(L), key=np.arange(L))  # rows are probabilities
    split = msapod.reynolds(A)
    scales = msapod.wavelets.log_scales(L)
    direct = msapod.scalogram(A, scales)["energy"]
    e_u = msapod.scalogram(split["fluctuation"], scales)["energy"]
    out = pages.attention_scalogram(e_u, split["mean"])
    np.testing.assert_allclose(out.values, direct.values, rtol=1e-10, atol=1e-14)
    # without the mean field's part the fluctuation alone is smaller
    assert float(e_u.sum()) < float(direct.sum())


def test_default_reading_numbers_and_comparisons(mv):
    main = pages.reading_numbers("C1", mv)
    assert main.identical(cl.main_numbers("C1", mv))
    u = pages.reading_numbers("C1", mv, field="u")
    assert not np.allclose(u["stat"], main["stat"], equal_nan=True)
    with pytest.raises(LookupError):
        pages.reading_numbers("C1", mv, field="x")
    table = pages.interval_table("C1", mv, layers=[1, 2])
    assert list(table.columns) == ["layer 1", "layer 2"]
    m0 = str(main["model"].values[0])
    s, lo, up = (float(main[k].sel(model=m0, layer=1)) for k in ("stat", "lower", "upper"))
    assert table.loc[m0, "layer 1"] == pages.interval_text(s, lo, up)


def test_readings_table_starts_with_the_default_reading(mv):
    for claim in ("C1", "C5", "C9"):
        t = pages.readings_table(claim, mv)
        assert t.index[0] == "default reading"
        assert t["verdict"].iloc[0] == cl.main_verdict(claim, mv)
        assert len(t) > 1  # at least one labelled comparison
        for label, row in t.iloc[1:].iterrows():
            assert row["verdict"] in cl.VERDICTS, label
    u = pages.readings_table("C1", mv).loc["scalogram of u"]
    assert u["verdict"] == cl.spec_outcome("C1", mv, field="u")["verdict"]


def test_reading_note_and_claim_lines(mv):
    note = pages.reading_note(mv, ["C1", "C2"])
    assert note.startswith("```{admonition}") and note.endswith("```")
    assert "scalogram of A (paper)" in note and note.count("scalogram of A") == 1
    assert "one reading" in pages.reading_note(mv, ["C10"])
    lines = pages.claim_lines(mv, ["C1", "C2"], field="u").splitlines()
    assert len(lines) == 2 and lines[0].startswith("* **C1**")
    assert cl.spec_outcome("C1", mv)["cases"].rstrip(".") in lines[0]
    assert "scalogram of u" in lines[0]
    k = pages.claim_counts("C1", mv)
    assert k["total"] == 2 * int((mv["model_zoo"] == mv.attrs["main_zoo"]).sum())
    assert 0 <= k["bounds"] <= k["total"] and 0 <= k["in_range"] <= k["total"]


def test_loss_difference_is_the_whole_split_one():
    loss, d = pages.loss_difference()
    assert loss.attrs["long_name"] == "validation loss over the whole split"
    ega = loss.where(loss["architecture"] == "ega", drop=True).mean()
    base = loss.where(loss["architecture"] == "baseline", drop=True).mean()
    assert float(d["diff"]) == pytest.approx(float(ega - base))
    assert float(d["lower"]) < float(d["diff"]) < float(d["upper"])


def test_layer_table_reads_the_rules_per_layer_statistic(mv):
    t = pages.layer_table(["C8"], mv)
    assert list(t.index) == [3, 4, 5, 6]  # the layers C8 is about
    sub, _ = cl._claim_specs("C8", mv, None)
    row = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))
    d, lo, up = (float(row[k].sel(layer=3)) for k in ("diff", "diff_lower", "diff_upper"))
    assert t.iloc[0, 0] == pages.interval_text(d, lo, up)
    both = pages.layer_table(["C4", "C9"], mv)
    assert both.shape[1] == 2 and (both == "—").any().any()  # C4 has no layer 1


def test_theorem1_text_counts_competitors_that_do_as_well():
    pod = np.array([3.0, 2.0, 1.0])
    half = np.array([3.3, 2.5, np.nan])  # the half-ensemble has too few modes at K = 3
    rand = np.array([[4.0, 3.0, 2.0], [3.5, 2.0, 1.5]])  # the 2nd equals POD at K = 2
    text = pages.theorem1_text(2e-16, [1, 2, 3], pod, half, rand)
    assert "below 1e-15" in text and "of 2 random bases" in text
    assert text.endswith("at or below the POD error: 1 of 5.")
    assert "half-ensemble lose 0.300 (" in text and "loses 0.00 (0.0 %)" in text


def test_mode_table_and_spread_summary():
    coords = {"model": ["m"], "layer": [2], "window": ["plain", "scale-1"], "mode": [1]}
    dims = ("model", "layer", "window", "mode")

    def var(v):
        return xr.DataArray(np.reshape(v, (1, 1, 2, 1)).astype(float), coords, dims)

    stats = xr.Dataset(
        {
            "mean_lag": var([np.nan, 4.0]),
            "window_centre": var([np.nan, 5.0]),
            "window_width": var([np.nan, 2.0]),
            "lag_q10": var([np.nan, 2.0]),
            "lag_q90": var([np.nan, 7.0]),
        }
    )
    t = pages.mode_table(stats, var([np.nan, 0.8]), var([0, 1]).astype(int), [2])
    assert t.index.tolist() == [("m", 2, "scale-1")]  # the plain window is not a scale window
    assert t["80% range φ1"].iloc[0] == "2–7" and t["share in paper range"].iloc[0] == 0.8
    table, text = pages.spread_summary(var([10.0, 2.0]), var([1.0, 1.2]).isel(mode=0))
    assert table.loc[2, "lag spread φ1 plain"] == "10"  # whole values as integers
    assert "narrower in lag" in text and "in 100 % of 1" in text and "in 0.0 % of 1" in text


@pytest.fixture(scope="module")
def card():
    return load_result("scorecard")


def test_assurance_and_reasons_follow_the_scorecard(card, mv):
    text = pages.assurance(card, mv)
    robust = [c for c in pages._top(card, mv) if "robust" in card.loc[c, "robust_share"]]
    assert text.startswith("Every number behind a verdict") and f"{len(robust)} of the" in text
    # the joint test's sentence follows the curve's two-sided test, direction named
    against = [c for c in pages._top(card, mv) if float(mv["joint_p"].sel(claim=c)) < 0.05]
    assert all(str(mv["joint_direction"].sel(claim=c).values) == "against" for c in against)
    assert (
        ("significant against " + cl.names(against)) in text if against else "for no claim" in text
    )
    quiet_mv = mv.assign(joint_p=mv["joint_p"] * 0 + 0.5)
    assert "significant for no claim, in either direction" in pages.joint_summary(
        quiet_mv, pages._top(card, mv)
    )
    why = pages.reasons(card, mv)
    for c in pages._top(card, mv):
        reason = str(card.loc[c, "reason"]).strip()
        if reason not in ("", "nan", "—"):
            assert f"* **{c}** ({card.loc[c, 'verdict']}): {reason}" in why
    quiet = card.assign(reason="—", paper_value_compatible="—")
    assert pages.reasons(quiet, mv) == ""


def test_other_zoos_capacity_and_their_verdicts(mv):
    others = pages.other_zoos(mv)
    assert mv.attrs["main_zoo"] not in others
    table = pages.zoo_verdicts(mv)
    if not others:
        assert table is None and "No zoo of another width" in pages.capacity(mv)
        return
    assert table.shape[1] == len(others) + 1 + 1
    changed = table.index[table["changes with capacity?"] == "yes"]
    text = pages.capacity(mv)
    for z in others:
        b, e = pages.zoo_models(mv, z)
        assert f"The {z} zoo has {b} standard-attention and {e} EGA" in text
    assert all(f"**{c}**" in text for c in changed)


def test_scorecard_markdown_and_curve_values(card, mv):
    md = pages.scorecard_markdown(card)
    for cid, r in card.iterrows():
        assert f"**{cid}: {r['verdict']}**" in md
    v = pages.curve_values("C1", mv)
    assert len(v["value"]) == len(v["verdict"]) == len(v["main"]) and v["main"].sum() == 1
    # C1's curve is the band share's (trained - untrained), against the registry's range
    assert v["band"] == pytest.approx(REGISTRY["C1"].range)
    assert pages.curve_values("C3", mv)["band"] is None


def test_scorecard_figures_draw_one_panel_per_claim(mv):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = pages.forest_panels(mv, mv.attrs["main_zoo"], ["C1", "C8"])
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [f"{c}: {cl.main_verdict(c, mv)}" for c in ("C1", "C8")]
    fig2 = pages.spec_curves(mv, ["C1", "C3"])
    assert [ax.get_title() for ax in fig2.axes if ax.get_title()] == ["C1", "C3"]
    plt.close("all")


def _coherency(curve, null_curve, scale=4.0):
    """A one-model, one-layer coherency as :func:`pages.coherency_of` returns it."""
    sep = np.arange(4, 4 * len(curve) + 1, 4)
    c = xr.DataArray(
        [curve], dims=("scale", "separation"), coords={"scale": [scale], "separation": sep}
    )
    nc = xr.DataArray([null_curve], dims=("scale", "separation"), coords=c.coords)
    return {"m": {1: {"curve": c, "null_curve": nc, "null": nc.max("separation").to_series()}}}


def test_coherency_table_lengths_and_revivals():
    dom = xr.DataArray(
        [[[4.0]]], dims=("model", "layer", "peak"), coords={"model": ["m"], "layer": [1]}
    )
    decay = [0.9, 0.5, 0.05, 0.01, 0.01, 0.01, 0.01, 0.01]
    null = [0.02] * 8
    t = pages.coherency_table(_coherency(decay, null), dom, 32)
    row = t.loc[("m", 1, 4.0)]
    assert row["coherence length (chars)"] == 16  # first separation at or below 0.02
    assert row["shift-model length"] == pytest.approx(4 * np.sqrt(2 * np.log(1 / 0.02)))
    assert row["dominant"] and row["max beyond / null"] < 2
    revive = decay[:4] + [0.2, 0.2, 0.2, 0.01]  # comes back 8 characters after the decay
    t2 = pages.coherency_table(_coherency(revive, null), dom, 32)
    assert t2.loc[("m", 1, 4.0), "max beyond / null"] == pytest.approx(0.2 / 0.02)
    summary, reading = pages.coherency_reading(t2, [10, 20, 30, 40])
    assert "A revival (more than twice the null) occurs in 1 cases" in summary
    assert reading.startswith("**Reading.**") and "revivals (1 cases" in reading
    assert (
        pages.revivals_text({"a": t, "b": t2}) == "Revivals: a: none; b: m layer 1 at $a$ = 4.00."
    )


def test_coherency_of_the_shipped_statistics():
    M = load_result("modestats")
    name = str(M["model"].values[0])
    coh = pages.coherency_of(M, name, 192)
    assert sorted(coh) == [int(x) for x in M["layer"].values]
    c = coh[1]
    assert list(c["gamma"].scale.values) == sorted(c["gamma"].scale.values)
    assert float(c["null_curve"].separation.max()) <= 192
    assert c["nan_rows"] == [0]  # row 0 attends to itself only: no fluctuation
    assert "Only row 0 is affected" in pages.nan_rows_note({name: coh})


def test_coherency_checks_and_mean_inclusive_text():
    rng = np.random.default_rng(1)
    g = xr.DataArray(rng.random((2, 12, 12)), dims=("scale", "query_i", "query_j"))
    g[:, 0, 1:3] = 1.0
    t = pages.coherency_checks(g, g * 0.5, (0.5, 1.0, 2.0), 240, 30)
    assert t.loc["identical rows (0-1, 0-2)", "min"] == 1.0
    assert t.loc["shared + noise, nu = 1.0", "expected"] == "0.500"
    assert list(t.index[-2:]) == ["independent rows, N = 30", "independent rows, N = 240"]
    med = pd.DataFrame(
        {"A (mean-inclusive)": [0.3, 0.2], "u (fluctuation)": [0.1, 0.1]}, index=["a = 4", "a = 24"]
    )
    text = pages.mean_inclusive_text(med)
    assert text.startswith("The mean-inclusive field is more coherent at both scales")
    assert "a = 4: 3.0 times" in text and "without bringing it near 1" in text


def test_loss_table_and_text_read_the_whole_split():
    loss, d = pages.loss_difference()
    t = pages.loss_table()
    np.testing.assert_allclose(t["val loss, whole split (L)"], loss.values)
    assert not np.allclose(
        t["val loss, whole split (L)"], t["val loss, 20 batches (training curve)"]
    )
    text = pages.loss_text()
    assert f"**{float(d['diff']):+.4f}".replace("-", "−") in text and "whole split" in text


def test_ega_sentences():
    tab = pd.DataFrame(
        {"max change, rows <= i0": [0.0, 1e-16], "max |row sum - 1|": [4e-16, 5e-16]}
    )
    assert "**is** causal" in pages.causality_text(
        tab
    ) and "**are** normalised" in pages.causality_text(tab)
    assert "**is not** causal" in pages.causality_text(
        tab.assign(**{"max change, rows <= i0": 0.1})
    )
    table, text = pages.overhead_summary({128: (1000, 1010), 256: (4000, 4010)})
    assert table.loc[128, "extra"] == 10 and table.loc[256, "overhead %"] == pytest.approx(0.25)
    assert "1.00 % (the bound of 0.26 % **exceeded**)" in text and "**met**" in text
    t = xr.DataArray(
        np.full((2, 1, 4), 0.36), dims=("model", "layer", "head"), coords={"model": ["e1", "e2"]}
    )
    assert "**is** reproduced" in pages.threshold_text(t)
    assert "**is not** reproduced" in pages.threshold_text(t - 0.3)
    da = xr.DataArray(
        [[2.0, 1.0], [1.0, 1.0]],
        dims=("model", "layer"),
        coords={
            "model": ["ega-1", "baseline-1"],
            "layer": [1, 2],
            "architecture": ("model", ["ega", "baseline"]),
        },
    )
    lines = pages.separation_lines({"energy": da})
    assert (
        "ratio of the seed means per layer 2.00 and 1.00" in lines
        and "exceeds every baseline model: 1 (1 of 2" in lines
    )
    pattern = pages.sign_pattern_lines(da, "ega-1", ["baseline-1"], {1: 1, 2: -1})
    assert "**does not match**" in pattern and "1 of 2 layers" in pattern


def test_uncertainty_and_convergence_sentences(mv):
    unc = load_result("uncertainty")
    assert "the seeds dominate the uncertainty" in pages.jackknife_text(unc)
    diffs = pd.DataFrame({"significant": [True, False, False, False, False]})
    assert pages.differences_text(diffs, "4", 6).startswith("1 of 5 layer-wise")
    assert "mostly not distinguishable" in pages.differences_text(diffs, "4", 6)
    conv = load_result("convergence")
    n = int(conv["n"].values[-1])
    assert f"has not converged at $N = {n}$" in pages.convergence_text(conv)
    assert "N-dependent" in pages.tspec_n_text(conv)
    cmp = pd.DataFrame({"a": [100.0, 110.0], "b": [101.0, 104.0]})
    assert "6.0 modes: not negligible" in pages.split_gap_text(cmp)
    out = cl.spec_outcome("C5", mv, n=n)
    h = conv["H_star"].sel(eps=0.10, n=n)
    text = pages.c5_large_n_text(h, out, n)
    assert f"The C5 rule at N = {n}" in text and f"**{out['verdict']}**" in text


def test_seeds_and_training_summary():
    import msapod

    n = {len(msapod.zoo.trained(architecture=a)) for a in msapod.zoo.ARCHITECTURES}
    assert pages.seeds_text() == (str(n.pop()) if len(n) == 1 else pages.seeds_text())
    summary = pages.training_summary(10.0)
    assert "Met by" in summary and pages.loss_text() in summary
    assert "Met by 0 of" in pages.training_summary(0.5)


def test_rule_parts_and_c5_lines(mv):
    parts = pages.rule_parts("C5", mv)
    assert set(parts) >= {"core", "a", "b"}
    assert all(not v.endswith(".") for v in parts.values())
    lines = pages.c5_lines(mv).splitlines()
    assert len(lines) == 2 and parts["core"] in lines[0] and parts["b"] in lines[1]
    assert "about 91" in lines[1] and "±15 %" in lines[1]  # the registry's size and tolerance
    one = pages.rule_parts("C7", mv)
    assert list(one) == [""] and "cases" in one[""]


def test_llm_sentences_read_the_llm_analysis():
    from msapod.studies.verdict import scorecard

    ds = load_result("llm")
    assert f"$N$ = {ds.attrs['n_snapshots']} snippets" in pages.llm_ensemble_facts(ds)
    assert "of tokens are a single character" in pages.llm_token_lengths(ds)
    facts = pages.llm_scale_facts(ds)
    assert "not testable" not in facts and "$a \\le 7$ characters" in facts
    sink = xr.DataArray(
        np.r_[0.1, 0.5, 0.6, 0.1, 0.7], dims="layer", coords={"layer": np.arange(1, 6)}
    )
    assert pages.sink_layers(sink) == [2, 3, 5]
    assert pages.llm_sink_facts(sink).startswith("In 3 of 5 layers, 50%–70%")
    rows = scorecard.llm_rows(ds)
    table = pages.llm_table(rows)
    assert all(f"**{r['verdict']}**" in table for r in rows)
    assert table.count("\n") == len(rows) + 1


def test_claims_markdown_has_every_claim_once(card):
    md = pages.claims_markdown(card)
    rows = md.splitlines()[2:]
    top = [c for c in card.index if not (c[-1].isalpha() and c != "L")]
    assert [r.split(" | ")[0].strip("| ") for r in rows] == top
    for c in top:
        assert f"**{card.loc[c, 'verdict']}** ({card.loc[c, 'robust_share']})" in md
    assert "[rule C5](#rule-c5)" in md and "H\\*" in md


def test_window_sensitivity_reports_moves_and_order():
    T = xr.DataArray(
        [[1.0, 2.0, 3.0], [1.1, 2.0, 3.0], [3.5, 2.0, 3.0]],
        dims=("rule", "layer"),
        coords={"rule": ["default", "kappa = 2", "centroid"], "layer": [1, 2, 3]},
    )
    sens = xr.Dataset({"T_spec": T, "H_star": (T * 10).round()})
    text = pages.window_sensitivity(sens)
    assert "* $\\kappa$ = 2: $T_\\mathrm{spec}$ moves by at most 0.10" in text
    assert "spreads by up to 2.50 (layer 1)" in text and "changes between rules" in text
    assert "is the same under all 2 rules" in pages.window_sensitivity(sens.isel(rule=[0, 1]))


def test_c3_lines_and_sign_text(mv):
    top5 = xr.DataArray(
        np.tile([0.2, 0.2, 0.1, 0.1, 0.3, 0.3], (2, 1)),
        dims=("model", "layer"),
        coords={"model": ["a", "b"], "layer": np.arange(1, 7)},
    )
    lines = pages.c3_lines(mv, top5).splitlines()
    parts = pages.rule_parts("C3", mv)
    assert parts["a"] in lines[0] and parts["core"] in lines[1] and "in 2 of 2 models" in lines[2]
    text = pages.sign_text("C8", mv)
    assert text.startswith("The differences have the paper's sign in ") and "of layers 3–6" in text
