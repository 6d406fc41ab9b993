"""The pages' longer figures and sentences (msapod_book.figures) on small synthetic inputs:
each sentence says what its numbers say (both branches), each figure draws what it
should, and bad input is named."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402

from msapod_book import figures  # noqa: E402

STRATEGIES = ["low-H*", "high-H*", "random"]


def _ranks(slope: float) -> xr.DataArray:
    layer = np.arange(1, 4)
    values = 50 + slope * layer[None, :, None] + np.arange(4)[None, None, :]
    return xr.DataArray(
        np.repeat(values, 2, axis=0),
        dims=("model", "layer", "head"),
        coords={"model": ["a-1", "a-2"], "layer": layer, "head": np.arange(1, 5)},
    )


def test_rank_sentence_reports_the_range_and_the_low_layers():
    text = figures.rank_sentence(_ranks(-10.0), 3, 150, 2.0, 12, -10.0)
    assert "ranges from 20 to 43 over the 24 heads of the 2 models" in text
    assert "3 of them sit at the ceiling $N - 1 = 149$" in text
    assert "**deep layers have the lower effective rank**." in text
    assert "opposite of the paper's C5 premise" not in text
    text = figures.rank_sentence(_ranks(10.0), 0, 150, 0.0, 12, 10.0)
    assert "**early layers have the lower effective rank**, the opposite" in text
    assert text.endswith("does a low $H^*$ mark heads that can go?")


def test_depth_sentence_follows_the_mean_layers_and_the_costs():
    mid = {"budget": 16, "low_H": 0.30, "high_H": 0.05, "random": 0.12, "importance": 0.08}
    mid |= {"low_H_mean_layer": 1.6, "high_H_mean_layer": 5.2}
    text = figures.depth_sentence(mid, 48)
    assert text.startswith("At 16 of 48 heads, `low-H*` removes heads from layer 1.6")
    assert "deep** layers at the **high** end" in text
    assert "costs +0.050 nats, less than random removal (+0.120) and less than" in text
    assert "*conclusion* about depth" in text and "points the wrong way" in text
    text = figures.depth_sentence(mid | {"high_H": 0.2}, 48)
    assert "more than random removal" in text and "more than pruning" in text
    assert "Neither the premise nor the conclusion" in text
    # the deep heads at the low end and cheap: premise and conclusion both hold
    flipped = mid | {"low_H_mean_layer": 5.2, "high_H_mean_layer": 1.6}
    text = figures.depth_sentence(flipped | {"low_H": 0.05, "high_H": 0.30}, 48)
    assert "at the **low** end" in text and "Both C6's premise" in text
    # mean layers 2.6 and 3.0: no depth ranking, nothing said about depth
    text = figures.depth_sentence(mid | {"low_H_mean_layer": 2.6, "high_H_mean_layer": 3.0}, 48)
    assert "not a depth ranking" in text and "deep** layers" not in text
    with pytest.raises(KeyError, match="mid: expected 'importance'"):
        figures.depth_sentence({k: v for k, v in mid.items() if k != "importance"}, 48)


def test_pruning_panels_draw_every_strategy_and_the_differences():
    rng = np.random.default_rng(0)
    inc = xr.DataArray(
        rng.uniform(0, 0.3, (3, 2, 4, 2)),
        dims=("strategy", "budget", "model", "draw"),
        coords={"strategy": STRATEGIES, "budget": [8, 16], "model": list("abcd")},
    )
    fig = figures.pruning_panels(inc, STRATEGIES, ["random"], 48)
    top, bottom = fig.axes[:2]
    assert [t.get_text() for t in top.get_legend().get_texts()] == STRATEGIES
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["low-H*", "high-H*"]
    assert top.get_xlabel() == "heads removed (of 48)"
    plt.close(fig)


def test_convergence_panels_one_panel_per_criterion_with_the_ceiling():
    n = np.array([50, 100, 150])
    H = xr.DataArray(
        np.broadcast_to(n[None, None, :, None] * 0.5, (2, 3, 3, 2)).copy(),
        dims=("model", "eps", "n", "layer"),
        coords={"eps": [0.05, 0.1, 0.2], "n": n, "layer": [1, 2]},
    )
    fig = figures.convergence_panels(xr.Dataset({"H_star": H}))
    assert [ax.get_title() for ax in fig.axes[:3]] == ["$H^*(0.05)$", "$H^*(0.1)$", "$H^*(0.2)$"]
    ceiling = [ln for ln in fig.axes[0].lines if ln.get_label() == "ceiling N − 1"]
    assert list(ceiling[0].get_ydata()) == [49, 99, 149]
    plt.close(fig)


def test_theorem1_panels_refuse_a_mis_shaped_error_table():
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match=r"random_err: expected \(bases, 2 ranks\)"):
        figures.theorem1_panels(
            [1, 2], [2, 1], [2, 1], [1, 2], np.ones((5, 3)), [1, 1], [1, 1], 4.0,
            n=10, layer=1, rng=rng, model="baseline-1",
        )  # fmt: skip
    fig = figures.theorem1_panels(
        [1, 2], [2.0, 1.0], [2.0, 1.0], [1, 2], np.ones((5, 2)), [1.5, 1.2], [1.0, 0.5], 4.0,
        n=10, layer=1, rng=rng, model="baseline-1",
    )  # fmt: skip
    assert fig.axes[0].get_title() == "baseline-1, layer 1 ($N$ = 10): Theorem 1"
    plt.close(fig)


def test_training_panels_name_a_log_without_its_losses():
    class Config:
        steps = 4

    logs = {"baseline-1": {"steps": [0, 2], "train_loss": [3.0, 2.0], "val_loss": [3.1, 2.2]}}
    fig = figures.training_panels(logs, Config(), lambda c, s: 1e-3 * s, 1.8)
    assert len(fig.axes[0].lines) == 1 and len(fig.axes[0].lines[0].get_xdata()) == 4
    plt.close(fig)
    with pytest.raises(KeyError, match="logs\\['ega-1'\\]: expected 'val_loss'"):
        figures.training_panels({"ega-1": {"steps": [], "train_loss": []}}, Config(), max, 1.8)


def _energy(reach_far: int) -> xr.DataArray:
    """Two layers on lags 0..63, scales 3 and 30: layer 1 all energy at lag 0, layer 2 the
    coarse-scale energy spread evenly up to ``reach_far``."""
    lag, scale = np.arange(64), np.array([3.0, 30.0])
    e = np.zeros((2, 2, 64))
    e[0, :, 0] = 1.0
    e[1, 1, :reach_far] = 1.0
    return xr.DataArray(
        e, dims=("layer", "scale", "lag"), coords={"layer": [1, 2], "scale": scale, "lag": lag}
    )


def test_lag_reach_sentence_reads_shares_and_reach():
    text = figures.lag_reach_sentence(_energy(40), near=16, coarse=20, level=0.9)
    # layer 1: everything at lag 0; layer 2: 16 of 40 equal lags below 16, 90 % by lag 35
    assert "layer 1: 100%" in text and "layer 2: 40%" in text
    assert "35 (layer 2)" in text and "furthest in layers 2 and 1" in text


def test_lag_reach_sentence_reads_the_c2_band_and_names_bad_input():
    from msapod.studies.registry import REGISTRY

    assert f"a \\ge {REGISTRY['C2'].stated['scale']:g}$" in figures.lag_reach_sentence(_energy(8))
    with pytest.raises(ValueError, match="energy: expected dims"):
        figures.lag_reach_sentence(_energy(8).rename(lag="key"))
    with pytest.raises(ValueError, match="level"):
        figures.lag_reach_sentence(_energy(8), level=1.5)


def test_rank_sentence_calls_a_slope_under_one_mode_per_layer_no_trend():
    text = figures.rank_sentence(_ranks(0.2), 0, 150, 0.0, 12, 0.2)
    assert "no layer trend" in text and "lower effective rank" not in text
    assert "opposite of the paper's C5 premise" not in text


def test_coherency_panels_draw_in_the_book_palette_whatever_the_colour_cycle():
    """The lines' colours are the book's colour-blind-safe palette even when the figure is
    drawn under matplotlib's default cycle (whose C2/C3 are a green/red pair)."""
    from msapod import plots

    sep = np.array([4, 8, 16])
    scales = [3.0, 4.0, 9.0, 24.0]  # dominant 3 and 9, fixed 4 and 24
    curve = xr.DataArray(
        np.linspace(0.5, 0.01, 12).reshape(4, 3),
        dims=("scale", "separation"),
        coords={"scale": scales, "separation": sep},
    )
    null = curve.isel(separation=-1).to_series()
    with matplotlib.rc_context({"axes.prop_cycle": matplotlib.rcParamsDefault["axes.prop_cycle"]}):
        fig = figures.coherency_panels({1: {"curve": curve, "null": null}}, (4.0, 24.0))
        fig.canvas.draw()
        drawn = {matplotlib.colors.to_hex(ln.get_color()) for ln in fig.axes[0].lines}
    palette = {c.lower() for c in plots.CATEGORY_COLOURS}
    assert drawn <= palette and len(drawn) == 4, drawn
    plt.close(fig)
