"""What the pages print beside a claim (msapod.studies.pages): the default reading,
its numbers and the labelled comparisons, on small inputs and on the shipped results."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from msapod.studies import pages
from msapod.studies.registry import REGISTRY
from msapod.studies.store.results import load_result
from msapod.studies.verdict import claims as cl


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


def test_default_reading_numbers_and_comparisons(mv):
    main = cl.main_numbers("C1", mv)
    sub, _ = cl._claim_specs("C1", mv, None)
    row = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))  # the flagged main spec
    np.testing.assert_array_equal(main["stat"], row["stat"].sel(model=main["model"]))
    u = cl.main_numbers("C1", mv, field="u")
    assert not np.allclose(u["stat"], main["stat"], equal_nan=True)
    with pytest.raises(LookupError):
        cl.main_numbers("C1", mv, field="x")
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
    with pytest.raises(ValueError, match="comparison_line"):
        pages.claim_lines(mv, ["C7"])  # decided on EGA − baseline, not on its own values
    line = pages.comparison_line("C7", mv, field="u")
    out = cl.spec_outcome("C7", mv, field="u")
    assert out["measured"] in line and f"*{out['verdict']}*" in line and out["cases"] in line
    with pytest.raises(ValueError, match="axes"):
        pages.comparison_line("C7", mv)
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
    assert table.columns[0] == "changes with capacity?"  # first: visible on a phone
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


def test_loss_text_reads_the_whole_split():
    _, d = pages.loss_difference()
    text = pages.loss_text()
    assert f"**{float(d['diff']):+.4f}".replace("-", "−") in text and "whole split" in text


def test_c5_large_n_text(mv):
    conv = load_result("convergence")
    n = int(conv["n"].values[-1])
    out = cl.spec_outcome("C5", mv, n=n)
    h = conv["H_star"].sel(eps=0.10, n=n)
    text = pages.c5_large_n_text(h, out, n)
    assert f"The C5 rule at N = {n}" in text and f"**{out['verdict']}**" in text


def test_rule_parts_and_c5_lines(mv):
    parts = pages.rule_parts("C5", mv)
    assert set(parts) >= {"core", "i", "ii"}
    assert all(not v.endswith(".") for v in parts.values())
    lines = pages.c5_lines(mv).splitlines()
    assert len(lines) == 2 and parts["core"] in lines[0] and parts["ii"] in lines[1]
    assert "about 91" in lines[1] and "±15 %" in lines[1]  # the registry's size and tolerance
    one = pages.rule_parts("C7", mv)
    assert list(one) == [""] and "cases" in one[""]


def test_llm_scale_facts_and_table_read_the_llm_analysis():
    from msapod.studies.verdict import scorecard

    ds = load_result("llm")
    facts = pages.llm_scale_facts(ds)
    assert "not testable" not in facts and "$a \\le 7$ characters" in facts
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


def test_c3_lines_and_sign_text(mv):
    top5 = xr.DataArray(
        np.tile([0.2, 0.2, 0.1, 0.1, 0.3, 0.3], (2, 1)),
        dims=("model", "layer"),
        coords={"model": ["a", "b"], "layer": np.arange(1, 7)},
    )
    lines = pages.c3_lines(mv, top5).splitlines()
    parts = pages.rule_parts("C3", mv)
    assert parts["i"] in lines[0] and parts["core"] in lines[1] and "in 2 of 2 models" in lines[2]
    text = pages.sign_text("C8", mv)
    assert text.startswith("The differences have the paper's sign in ") and "of layers 3–6" in text


def test_the_verdict_legend_is_the_vocabulary():
    from msapod.studies.verdict import claims as cl

    legend = cl.verdict_legend()
    assert legend.count("\n* **") == len(cl.VERDICTS) - 1 and legend.endswith(".")
    for word, meaning in cl.VERDICT_MEANING.items():
        assert f"* **{word}**: {meaning}" in legend


def test_null_groups_name_every_claim_once():
    text = pages.null_groups()
    for c in REGISTRY.values():
        assert text.count(f"{c.id},") + text.count(f"{c.id})") + text.endswith(c.id) == 1, c.id
    assert text.startswith("layer labels (C1, C2") and "none for C6, C10" in text


def _llm(centroids, dominant):
    layer = np.arange(1, len(centroids) + 1)
    return xr.Dataset(
        {
            "scale_centroid": ("layer", np.asarray(centroids, float)),
            "dominant_scale": (("layer", "peak"), np.asarray(dominant, float)[:, None]),
        },
        coords={"layer": layer, "scale": [3.0, 6.0, 12.0], "peak": [0]},
        attrs={"ensemble_chars_per_token": 2.0, "scalogram_field": "total"},
    )


def test_llm_scale_depth_reads_its_conclusion_from_the_numbers():
    zoo = xr.DataArray([4.0, 5.0])  # characters; the LLM's centroids in tokens, 2 chars each
    flat = pages.llm_scale_depth(_llm([4.0, 4.2, 4.1], [3.0, 3.0, 3.0]), zoo + 4.1)
    assert "no fine-to-coarse organisation" in flat and "falls from the finest scale" in flat
    assert "spread of 0.4 characters" in flat and "overlap the LLM's" in flat
    assert "scale centroid of $A$" in flat  # the field the analysis took
    assert "rises with depth" in flat  # rank correlation +0.5
    falling = pages.llm_scale_depth(_llm([6.0, 5.0, 4.0], [3.0, 3.0, 3.0]), zoo + 4.1)
    assert "no fine-to-coarse" in falling and "the reverse of C1 and C2" in falling
    moving = pages.llm_scale_depth(_llm([3.0, 10.0, 20.0], [3.0, 6.0, 12.0]), zoo)
    assert "no fine-to-coarse" not in moving and "spans at least the move" in moving
    assert "in 1 of 3 layers." in moving and "are finer" in moving


def test_edge_text_counts_bounds_per_run_of_layers(mv, monkeypatch):
    total = int((pages._bound_side(cl.main_numbers("C1", mv, scale_test="peak")) != 0).sum())
    assert f"no interior maximum in {total} of " in pages.edge_text(mv)
    # layers 1 and 3 located, layer 2 and 4 bounds at the first scale: runs stay apart
    st = np.array([[9.0, 3.0, 8.0, 3.0]])
    n = xr.Dataset(
        {
            "stat": (("model", "layer"), st),
            "lower": (("model", "layer"), np.array([[8.5, 0.0, 7.5, 0.0]])),
            "upper": (("model", "layer"), np.array([[9.5, 3.0, 8.5, 3.0]])),
        },
        coords={"model": ["m"], "layer": [1, 2, 3, 4]},
    )
    monkeypatch.setattr(cl, "main_numbers", lambda *a, **k: n)
    text = pages.edge_text(mv)
    assert "in 2 of 4 model-layers" in text and "in the other 2" in text
    assert "(layer 1: 0 of 1 models; layer 2: 1 of 1 models; layer 3: 0" in text
    assert "layers 1–3" not in text
