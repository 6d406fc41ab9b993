"""The method pages' sentences and tables (msapod_book.prose), on small and shipped data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import msapod
from msapod.studies.store.results import load_result
from msapod_book import pages, plots, prose


def test_theorem1_text_counts_competitors_that_do_as_well():
    pod = np.array([3.0, 2.0, 1.0])
    half = np.array([3.3, 2.5, np.nan])  # the half-ensemble has too few modes at K = 3
    rand = np.array([[4.0, 3.0, 2.0], [3.5, 2.0, 1.5]])  # the 2nd equals POD at K = 2
    text = prose.theorem1_text(2e-16, [1, 2, 3], pod, half, rand)
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
    t = prose.mode_table(stats, var([np.nan, 0.8]), var([0, 1]).astype(int), [2])
    assert t.index.tolist() == [("m", 2, "scale-1")]  # the plain window is not a scale window
    assert t["80% range φ1"].iloc[0] == "2–7" and t["share in paper range"].iloc[0] == 0.8
    table, text = prose.spread_summary(var([10.0, 2.0]), var([1.0, 1.2]).isel(mode=0))
    assert table.loc[2, "lag spread φ1 plain"] == "10"  # whole values as integers
    assert "narrower in lag" in text and "in 100 % of 1" in text and "in 0.0 % of 1" in text


def _coherency(curve, null_curve, scale=4.0):
    """A one-model, one-layer coherency as :func:`prose.coherency_of` returns it."""
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
    t = prose.coherency_table(_coherency(decay, null), dom, 32)
    row = t.loc[("m", 1, 4.0)]
    assert row["coherence length (chars)"] == 16  # first separation at or below 0.02
    assert row["shift-model length"] == pytest.approx(4 * np.sqrt(2 * np.log(1 / 0.02)))
    assert row["dominant"] and row["max beyond / null"] < 2
    revive = decay[:4] + [0.2, 0.2, 0.2, 0.01]  # comes back 8 characters after the decay
    t2 = prose.coherency_table(_coherency(revive, null), dom, 32)
    assert t2.loc[("m", 1, 4.0), "max beyond / null"] == pytest.approx(0.2 / 0.02)
    summary, reading = prose.coherency_reading(t2, [10, 20, 30, 40])
    assert "A revival (more than twice the null) occurs in 1 cases" in summary
    assert reading.startswith("**Reading.**") and "revivals (1 cases" in reading
    assert (
        prose.revivals_text({"a": t, "b": t2}) == "Revivals: a: none; b: m layer 1 at $a$ = 4.00."
    )


def test_coherency_of_the_shipped_statistics():
    M = load_result("modestats")
    name = str(M["model"].values[0])
    coh = prose.coherency_of(M, name, 192)
    assert sorted(coh) == [int(x) for x in M["layer"].values]
    c = coh[1]
    assert list(c["gamma"].scale.values) == sorted(c["gamma"].scale.values)
    assert float(c["null_curve"].separation.max()) <= 192
    assert c["nan_rows"] == [0]  # row 0 attends to itself only: no fluctuation
    assert "Only row 0 is affected" in prose.nan_rows_note({name: coh})


def test_coherency_checks_and_mean_inclusive_text():
    rng = np.random.default_rng(1)
    g = xr.DataArray(rng.random((2, 12, 12)), dims=("scale", "query_i", "query_j"))
    g[:, 0, 1:3] = 1.0
    t = prose.coherency_checks(g, g * 0.5, (0.5, 1.0, 2.0), 240, 30)
    assert t.loc["identical rows (0-1, 0-2)", "min"] == 1.0
    assert t.loc["shared + noise, nu = 1.0", "expected"] == "0.500"
    assert list(t.index[-2:]) == ["independent rows, N = 30", "independent rows, N = 240"]
    med = pd.DataFrame(
        {"A (mean-inclusive)": [0.3, 0.2], "u (fluctuation)": [0.1, 0.1]}, index=["a = 4", "a = 24"]
    )
    text = prose.mean_inclusive_text(med)
    assert text.startswith("The mean-inclusive field is more coherent at both scales")
    assert "a = 4: 3.0 times" in text and "without bringing it near 1" in text


def test_loss_table_reads_the_whole_split():
    loss, d = pages.loss_difference()
    t = prose.loss_table()
    np.testing.assert_allclose(t["val loss, whole split (L)"], loss.values)
    assert not np.allclose(
        t["val loss, whole split (L)"], t["val loss, 20 batches (training curve)"]
    )


def test_ega_sentences():
    tab = pd.DataFrame(
        {"max change, rows <= i0": [0.0, 1e-16], "max |row sum - 1|": [4e-16, 5e-16]}
    )
    assert "**is** causal" in prose.causality_text(
        tab
    ) and "**are** normalised" in prose.causality_text(tab)
    assert "**is not** causal" in prose.causality_text(
        tab.assign(**{"max change, rows <= i0": 0.1})
    )
    table, text = prose.overhead_summary({128: (1000, 1010), 256: (4000, 4010)})
    assert table.loc[128, "extra"] == "10" and table.loc[256, "standard"] == "4,000"
    assert table.loc[256, "overhead %"] == pytest.approx(0.25)
    assert "1.00 % (the bound of 0.26 % **exceeded**)" in text and "**met**" in text
    t = xr.DataArray(
        np.full((2, 1, 4), 0.36), dims=("model", "layer", "head"), coords={"model": ["e1", "e2"]}
    )
    assert "**is** reproduced" in prose.threshold_text(t)
    assert "**is not** reproduced" in prose.threshold_text(t - 0.3)
    da = xr.DataArray(
        [[2.0, 1.0], [1.0, 1.0]],
        dims=("model", "layer"),
        coords={
            "model": ["ega-1", "baseline-1"],
            "layer": [1, 2],
            "architecture": ("model", ["ega", "baseline"]),
        },
    )
    lines = prose.separation_lines({"energy": da})
    assert (
        "ratio of the seed means per layer 2.00 and 1.00" in lines
        and "exceeds every baseline model: 1 (1 of 2" in lines
    )
    pattern = prose.sign_pattern_lines(da, "ega-1", ["baseline-1"], {1: 1, 2: -1})
    assert "**does not match**" in pattern and "1 of 2 layers" in pattern


def test_uncertainty_and_convergence_sentences():
    unc = load_result("uncertainty")
    assert "the seeds dominate the uncertainty" in prose.jackknife_text(unc)
    wide = unc.assign(scale_centroid_se=unc["scale_centroid_se"] * 1e3)  # snapshots dominate
    assert "about as much uncertainty as the snapshots" in prose.jackknife_text(wide)
    diffs = pd.DataFrame({"excludes 0 (layer alone)": [True, False, False, False, False]})
    assert prose.differences_text(diffs, "4", 6).startswith("1 of 5 layer-wise")
    assert "mostly not distinguishable" in prose.differences_text(diffs, "4", 6)
    assert "smallest effect of interest" in prose.differences_text(diffs, "4", 6)
    conv = load_result("convergence")
    n = int(conv["n"].values[-1])
    text = prose.convergence_text(conv)
    assert f"has not converged at $N = {n}$" in text
    each = conv["H_star"].sel(eps=0.10) / (conv["n"] - 1)  # every model, layer and N
    assert f"{plots.span(each)} of $N - 1$ per model and layer" in text
    assert "N-dependent" in prose.tspec_n_text(conv)
    cmp = pd.DataFrame({"a": [100.0, 110.0], "b": [101.0, 104.0]})
    assert "6.0 modes: not negligible" in prose.split_gap_text(cmp)


def test_seeds_and_training_summary():

    n = {len(msapod.zoo.trained(architecture=a)) for a in msapod.zoo.ARCHITECTURES}
    assert prose.seeds_text() == (str(n.pop()) if len(n) == 1 else prose.seeds_text())
    mv = load_result("multiverse")
    summary = prose.training_summary(10.0, mv)
    assert "Met by" in summary and pages.loss_text(mv) in summary
    assert "Met by 0 of" in prose.training_summary(0.5, mv)


def test_llm_sentences_read_the_llm_analysis():
    ds = load_result("llm")
    assert f"$N$ = {ds.attrs['n_snapshots']} snippets" in prose.llm_ensemble_facts(ds)
    assert "of tokens are a single character" in prose.llm_token_lengths(ds)
    sink = xr.DataArray(
        np.r_[0.1, 0.5, 0.6, 0.1, 0.7], dims="layer", coords={"layer": np.arange(1, 6)}
    )
    assert prose.sink_layers(sink) == [2, 3, 5]
    assert prose.llm_sink_facts(sink).startswith("In 3 of 5 layers, 50%–70%")


def test_window_sensitivity_reports_moves_and_order():
    T = xr.DataArray(
        [[1.0, 2.0, 3.0], [1.1, 2.0, 3.0], [3.5, 2.0, 3.0]],
        dims=("rule", "layer"),
        coords={"rule": ["default", "kappa = 2", "centroid"], "layer": [1, 2, 3]},
    )
    sens = xr.Dataset({"T_spec": T, "H_star": (T * 10).round()})
    text = prose.window_sensitivity(sens)
    assert "* $\\kappa$ = 2: $T_\\mathrm{spec}$ moves by at most 0.10" in text
    assert "spreads by up to 2.50 (layer 1)" in text and "changes between rules" in text
    assert "is the same under all 2 rules" in prose.window_sensitivity(sens.isel(rule=[0, 1]))


def _per_layer(values, archs=("baseline", "baseline", "ega", "ega")):
    """A (model, layer) array with an architecture coordinate, layers numbered from 1."""
    values = np.asarray(values, float)
    return xr.DataArray(
        values,
        dims=("model", "layer"),
        coords={
            "model": [f"m{i}" for i in range(values.shape[0])],
            "layer": np.arange(1, values.shape[1] + 1),
            "architecture": ("model", list(archs)[: values.shape[0]]),
        },
    )


def test_layer_extremes_counts_each_models_largest_and_smallest_layer():
    v = _per_layer([[5, 1, 3], [5, 2, 1], [6, 3, 2], [4, 5, 1]])
    text = prose.layer_extremes(v, "T")
    assert text.startswith("T is largest in layer 1 in 3 of the 4 models and in layer 2 in 1;")
    assert text.endswith("smallest in layer 3 in 3 of the 4 models and in layer 2 in 1.")
    same = _per_layer([[3, 1, 2], [4, 0, 1]])
    assert prose.layer_extremes(same, "T") == (
        "T is largest in layer 1 in all 2 models; it is smallest in layer 2 in all 2 models."
    )


def test_architecture_overlap_names_the_layers_where_the_seeds_are_apart():
    v = _per_layer([[1, 1, 1], [2, 2, 2], [1.5, 3, 1.8], [3, 4, 5]])
    assert prose.architecture_overlap(v) == (
        "the ranges over the seeds of the two architectures overlap in layers 1 and 3 and "
        "are apart in layer 2"
    )
    assert prose.architecture_overlap(v.sel(layer=[1])).endswith("overlap in every layer")
    with pytest.raises(ValueError, match="two architectures"):
        prose.architecture_overlap(v.assign_coords(architecture=("model", ["a"] * 4)))


def test_depth_trend_text_separates_c6s_premise_from_c5s_comparison():
    dip = _per_layer([[120, 115, 110, 112, 118, 121], [119, 116, 111, 113, 117, 117]])
    text = prose.depth_trend_text(dip)
    assert "layers 5–6 need fewer modes than layers 1–2 in 1 of 2 models" in text
    assert "(deep minus early: -0.5 to +2.0 modes)" in text
    assert "the lowest mean rank is in layer 3" in text
    assert "does not fall with depth" in text and "dips in layer 3" in text
    falling = _per_layer([[130, 128, 125, 120, 115, 110], [129, 127, 124, 121, 116, 111]])
    assert prose.depth_trend_text(falling).endswith(
        "The rank falls with depth, as the argument needs."
    )


def test_layer_order_text_says_whether_the_order_survives():
    h = xr.DataArray(
        [[10.0, 9.0, 8.0], [20.0, 19.0, 18.0], [30.0, 31.0, 25.0]],
        dims=("n", "layer"),
        coords={"n": [50, 100, 400], "layer": [1, 2, 3]},
    )
    text = prose.layer_order_text(h)
    assert text.startswith("even the order of the layers changes with N (1 of the 2 steps")
    assert "layers 1, 2 and 3 at N = 50; layers 2, 1 and 3 at N = 400" in text
    kept = prose.layer_order_text(h.isel(n=[0, 1]))
    assert (
        kept
        == "only the order of the layers is the same at every N: layers 1, 2 and 3, largest first"
    )


def test_subensemble_text_reads_random_and_consecutive_groups():
    ratio = pd.DataFrame({"consecutive": [1.6, 2.1], "random": [0.81, 0.78]}, index=[15, 30])
    text = prose.subensemble_text(ratio, 150)
    assert "With 10 groups of 15 and 5 groups of 30" in text
    assert "1.6 and 2.1 times the jackknife" in text and "±24 % and ±35 %" in text
    assert "consecutive ones do not, and their excess grows with the group size" in text
    both = prose.subensemble_text(ratio.assign(consecutive=[1.1, 0.9]), 150)
    assert both.endswith("Both agree with the jackknife within that uncertainty.")
    neither = prose.subensemble_text(ratio.assign(random=[2.0, 2.0]), 150)
    assert "Both kinds of groups disagree" in neither and "does not hold" in neither
    only = prose.subensemble_text(ratio.assign(consecutive=[1.1, 0.9], random=[0.73, 0.55]), 150)
    assert "Consecutive groups agree with the jackknife within that, random ones do not" in only
    assert "at most 1.3 times that uncertainty" in only and "no clear disagreement" in only


def test_retraining_text_says_what_reproduces():
    final = pd.DataFrame(
        {"identical": ["no", "yes"], "difference": [-0.0074, 0.0]}, index=["b-1", "e-1"]
    )
    losses = pd.DataFrame(
        {
            "architecture": ["baseline", "baseline", "ega", "ega"],
            "val loss, whole split (L)": [1.50, 1.52, 1.51, 1.512],
        },
        index=["b-1", "b-2", "e-1", "e-2"],
    )
    text, takeaway = prose.retraining_text(final, {"b-1": True, "e-1": True}, losses)
    assert "step-0 weights of b-1 and e-1 are identical, bit for bit" in text
    assert "**The final weights** of e-1 are identical" in text
    assert "differ by 0.0074 nats/char (b-1; its architecture's seeds span 0.020)" in text
    assert text.endswith("less than the seeds of one architecture differ.")
    assert takeaway.startswith("A second run of the same recipe starts from the same weights")
    same = final.assign(identical=["yes", "yes"])
    assert prose.retraining_text(same, {"b-1": True, "e-1": True}, losses)[1] == (
        "A second run of the recipe reproduces the trained weights bit for bit."
    )
