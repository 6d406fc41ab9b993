"""The book's figures (msapod.plots) on small fixtures: each renders, has at most three
panels per row, labelled axes in the book's symbols, text of at least 9 points at a
width that the book shows unscaled, and legends outside the data."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pandas as pd
import pytest
import xarray as xr

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import msapod  # noqa: E402
from msapod_book import plots  # noqa: E402

MODELS = ["baseline-1", "baseline-2", "ega-1", "ega-2"]
LAYERS = [1, 2, 3, 4, 5, 6]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _render(fig) -> tuple[int, int]:
    """Render to PNG as the book does; returns the pixel size."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    from PIL import Image

    buf.seek(0)
    return Image.open(buf).size


def _axes(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def _check(fig, n_panels: int, xlabel: str | None = None, ylabel: str | None = None):
    axes = _axes(fig)
    assert len(axes) == n_panels
    rows: dict[float, int] = {}
    for ax in axes:
        y = round(ax.get_position().y0, 2)
        rows[y] = rows.get(y, 0) + 1
    assert max(rows.values()) <= plots.MAX_COLS, rows
    width, _ = _render(fig)
    assert width <= 790, f"{width} px: wider than the book shows unscaled"
    for ax in axes:
        texts = [ax.xaxis.label, ax.yaxis.label, ax.title, *ax.get_xticklabels()]
        for t in texts + [*ax.get_yticklabels()]:
            if t.get_text():
                assert t.get_fontsize() >= plots.MIN_FONT_SIZE, (t.get_text(), t.get_fontsize())
    if xlabel:
        assert any(xlabel in ax.get_xlabel() for ax in axes), [a.get_xlabel() for a in axes]
    if ylabel:
        assert any(ylabel in ax.get_ylabel() for ax in axes), [a.get_ylabel() for a in axes]


def _no_legend_over_data(fig):
    """Every legend lies outside every panel's data area."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert legends
    for leg in legends:
        box = leg.get_window_extent(r)
        for ax in _axes(fig):
            assert not box.overlaps(ax.get_window_extent(r)), "legend over a panel"


def test_colours_one_per_architecture_and_zoo():
    assert plots.colour("baseline-1") == plots.colour("baseline-2") == plots.colour("baseline")
    assert plots.colour("ega-3") == plots.ARCH_COLOURS["ega"] != plots.colour("baseline-1")
    assert plots.colour("baseline-d256-1") == plots.ARCH_COLOURS["baseline"]
    assert plots.colour("d128") == plots.ZOO_COLOURS["d128"]
    assert plots.model_style("ega-1")["ls"] != plots.model_style("ega-2")["ls"]
    with pytest.raises(ValueError, match="model"):
        plots.architecture("")


def test_panels_at_most_three_per_row():
    fig, axes = plots.panels(7)
    assert len(axes) == 7 and len(fig.axes) == 7
    _check(fig, 7)
    with pytest.raises(ValueError, match="ncols"):
        plots.panels(4, ncols=4)
    with pytest.raises(ValueError, match="n:"):
        plots.panels(0)


def _field(rng, n_layer=6, L=16):
    a = np.tril(rng.random((n_layer, L, L))) + np.eye(L)
    a /= a.sum(-1, keepdims=True)
    return xr.DataArray(a, dims=("layer", "query", "key"), coords={"layer": LAYERS[:n_layer]})


def test_fields_and_signed():
    rng = np.random.default_rng(0)
    A = _field(rng)
    fig = plots.fields(A, "layer")
    _check(fig, 6, "key $j$", "query $i$")
    u = A - A.mean("layer")
    fig = plots.fields(u.isel(layer=[0, 1]), "layer", signed=True, label="$u_s$")
    _check(fig, 2)


def test_layer_profile_colours_and_reference():
    rng = np.random.default_rng(1)
    v = xr.DataArray(
        rng.random((4, 6)), dims=("model", "layer"), coords={"model": MODELS, "layer": LAYERS}
    )
    fig = plots.layer_profile(
        v,
        0.1 * v,
        ylabel=r"$\langle\tau\rangle^l$ (characters)",
        reference=0.5,
        reference_label="uniform",
    )
    _check(fig, 1, "layer $l$", r"\langle\tau\rangle")
    ax = fig.axes[0]
    lines = {lab: h for h, lab in zip(*ax.get_legend_handles_labels(), strict=True)}
    c = {m: matplotlib.colors.to_hex(lines[m].lines[0].get_color()) for m in MODELS}
    assert c["baseline-1"] == c["baseline-2"] == plots.ARCH_COLOURS["baseline"].lower()
    assert c["ega-1"] == plots.ARCH_COLOURS["ega"].lower()
    _no_legend_over_data(fig)


def test_scalogram_and_spectrum():
    rng = np.random.default_rng(2)
    L, N = 32, 12
    tau = np.arange(L)
    prof = np.cos(2 * np.pi * tau / 6 + rng.uniform(0, 6.3, (N, 1, 1)))
    X = xr.DataArray(prof, dims=("snapshot", "query", "lag"), coords={"lag": tau})
    sc = msapod.scalogram(X)
    energy = xr.concat([sc["energy"]] * 6, dim=xr.DataArray(LAYERS, dims="layer"))
    fig = plots.scalogram(energy)
    _check(fig, 6, "lag $b$", "scale $a$")
    spec = xr.concat([sc["spectrum"]] * 6, dim=xr.DataArray(LAYERS, dims="layer"))
    dom = msapod.dominant_scales(sc["spectrum"], 2)
    dom = xr.concat([dom.reset_coords(drop=True)] * 6, dim=xr.DataArray(LAYERS, dims="layer"))
    fig = plots.scale_spectrum(spec, dom, band=(3, 7))
    _check(fig, 6, "scale $a$", "E(a)")
    # the dominant scale is marked where the spectrum peaks (period ~ 6 characters)
    marks = [ln for ln in fig.axes[0].lines if ln.get_marker() not in ("None", None, "")]
    assert marks and abs(marks[0].get_xdata()[0] * 1.03 - 6) < 1.5


def test_mode_lags():
    lag = np.arange(64)
    rho = np.exp(-((lag[None, :] - np.array([[5], [20]])) ** 2) / 20)
    rho = xr.DataArray(
        rho / rho.sum(-1, keepdims=True), dims=("mode", "lag"), coords={"mode": [1, 2], "lag": lag}
    )
    fig = plots.mode_lags(rho.expand_dims(layer=[1, 6]), band=(10, 40))
    _check(fig, 2, r"lag $\tau$", r"\rho_k")


def test_replicates_band_and_the_estimate_beside_the_models():
    fig, axes = plots.panels(2)
    arch = ["baseline"] * 3 + ["ega"] * 3
    v = np.array([0.3, 0.32, 0.31, 0.29, 0.33, 0.3])
    plots.replicates(
        v,
        arch,
        v - 0.01,
        v + 0.01,
        estimate=(0.31, 0.3, 0.32),
        boundary=(0.55, np.inf),
        direction="greater",
        ylabel="$F$",
        ax=axes[0],
    )
    plots.replicates(
        v,
        arch,
        estimate=(0.31, 0.3, 0.32),
        boundary=(0.25, 0.35),
        direction="within",
        ylabel="$F$",
        ax=axes[1],
    )
    _check(fig, 2, "model", "$F$")
    # the band above 0.55 is off the axis (an arrow); the band 0.25-0.35 is shaded
    assert not axes[0].patches and "↑" in axes[0].texts[0].get_text()
    assert len(axes[1].patches) == 1
    assert axes[0].get_xticklabels()[-1].get_text() == "mean"
    assert plots.claim_band(axes[1], 0, 10) == "in"
    with pytest.raises(ValueError, match="low, high"):
        plots.claim_band(axes[1], 2, 1)
    with pytest.raises(ValueError, match="architecture"):
        plots.replicates(
            v, arch[:2], estimate=(0.3, 0.2, 0.4), boundary=(0, 1), direction="within", ylabel="x"
        )


def test_test_distances_put_holding_tests_right_of_zero():
    fig = plots.test_distances(
        ["C1", "C2:shift", "C5:early"],
        [5.0, -3.0, np.nan],
        [1.9, 1.9, np.nan],
        ["holds", "refuted", "untestable"],
        labels={"holds": "holds", "refuted": "does not hold"},
    )
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["C1", "C2:shift", "C5:early"]
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts[:2] == ["holds", "does not hold"]


def test_specification_curve_sorted_and_marked_by_verdict():
    value = [3.0, 1.0, np.nan, 2.0]
    verdict = ["holds", "refuted", "undecided", "partly"]
    fig = plots.specification_curve(
        value,
        [2.5, 0.5, np.nan, 1.5],
        [3.5, 1.5, np.nan, 2.5],
        verdict,
        main=[False, True, False, False],
        ylabel="$a^*$ (characters)",
        band=(0, 2),
    )
    _check(fig, 1, "specifications", "$a^*$")
    markers = {st["marker"]: w for w, st in plots.VERDICT_STYLE.items()}
    pts = [ln for ln in fig.axes[0].lines if ln.get_marker() in markers]
    ys = [ln.get_ydata()[0] for ln in pts]
    assert ys == sorted(ys) == [1.0, 2.0, 3.0]
    # each point has its verdict's colour and marker; the main one is ringed in black
    assert [markers[ln.get_marker()] for ln in pts] == ["refuted", "partly", "holds"]
    assert matplotlib.colors.to_hex(pts[0].get_color()) == plots.VERDICT_COLOURS["refuted"].lower()
    assert pts[0].get_markeredgecolor() == "k"
    _no_legend_over_data(fig)
    with pytest.raises(ValueError, match="verdict"):
        plots.specification_curve([1.0], [0.0], [2.0], [], ylabel="x")


def test_specification_curve_cuts_an_open_interval_with_an_arrow():
    fig = plots.specification_curve(
        [4.0, 5.0, 6.0],
        [3.0, 4.0, 0.0],
        [5.0, 6.0, 2e6],  # an edge maximum: a bound, its interval open
        ["holds"] * 3,
        ylabel="$a^*$",
        clip=(0, None),
    )
    ax = fig.axes[0]
    y0, y1 = ax.get_ylim()
    assert y0 >= 0 and y1 < 20, (y0, y1)  # the other points stay readable
    arrows = [ln for ln in ax.lines if ln.get_marker() == "^"]
    assert len(arrows) == 1 and arrows[0].get_ydata()[0] == pytest.approx(y1)


def test_interval_limits_ignore_degenerate_ends():
    lo, hi = plots.interval_limits([1.0, 2.0, 3.0], [0.5, 1.5, -np.inf], [1.5, 2.5, 1e9])
    pad = 0.05 * (3.0 - 0.5)  # the kept range 0.5 to 3, padded
    assert lo == pytest.approx(0.5 - pad) and hi == pytest.approx(3.0 + pad)
    assert plots.interval_limits([0.2, 0.9], [0.1, 0.5], [0.3, 1.4], clip=(0, 1))[1] == 1.0
    assert plots.interval_limits([np.nan], [np.nan], [np.nan], clip=(0, 1)) == (0.0, 1.0)
    with pytest.raises(ValueError, match="lower, upper"):
        plots.interval_limits([1.0, 2.0], [0.0], [3.0, 4.0])


def test_verdict_and_category_styles_never_differ_by_colour_alone():
    for table in (plots.VERDICT_STYLE,):
        assert len({st["marker"] for st in table.values()}) == len(table)
        assert len({st["hatch"] for st in table.values()}) == len(table)
    styles = [plots.category_style(n) for n in range(len(plots.CATEGORY_COLOURS))]
    assert len({s["color"] for s in styles}) == len({s["marker"] for s in styles}) == len(styles)
    assert plots.category_style(len(plots.CATEGORY_COLOURS)) == styles[0]
    # every colour is an Okabe-Ito colour or a grey: no red/green pair
    allowed = {c.lower() for c in plots.OKABE_ITO.values()}
    used = [*plots.VERDICT_COLOURS.values(), *plots.ARCH_COLOURS.values(), plots.BAND_COLOUR]
    for c in used + list(plots.CATEGORY_COLOURS):
        r, g, b = matplotlib.colors.to_rgb(c)
        assert c.lower() in allowed or r == g == b, c
    with pytest.raises(ValueError, match="n:"):
        plots.category_style(-1)


def test_log_ticks_are_plain_numbers():
    fig, ax = plt.subplots()
    ax.plot([3, 9], [1e-3, 1.0])
    ax.set(xscale="log", yscale="log", xlim=(2.5, 9.5))
    plots.log_ticks(ax)
    fig.canvas.draw()
    xlabels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert xlabels and all("10^" not in t and "times" not in t for t in xlabels), xlabels
    assert "5" in xlabels
    assert not [t.get_text() for t in ax.xaxis.get_minorticklabels() if t.get_text()]
    ylabels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert {"0.001", "0.01", "0.1", "1"} <= set(ylabels), ylabels
    fig2, ax2 = plt.subplots()  # below 1e-4 a tick reads as a power of ten
    ax2.plot([3, 9], [1e-6, 1e-4])
    ax2.set(yscale="log")
    plots.log_ticks(ax2, "y")
    fig2.canvas.draw()
    assert "$10^{-5}$" in [t.get_text() for t in ax2.get_yticklabels()]
    with pytest.raises(ValueError, match="axis"):
        plots.log_ticks(ax, "z")


def test_pruning_curve():
    rng = np.random.default_rng(3)
    inc = xr.DataArray(
        rng.random((2, 3, 3, 4)),
        dims=("model", "strategy", "budget", "draw"),
        coords={
            "model": ["baseline-1", "ega-1"],
            "strategy": ["low-H*", "random", "importance"],
            "budget": [8, 16, 24],
        },
    )
    fig = plots.pruning_curve(inc, n_heads=48)
    _check(fig, 1, "heads removed (of 48)", r"\Delta\mathcal{L}")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["low-H*", "random", "importance"]
    # each strategy its own colour and marker
    lines = [c.lines[0] for c in ax.containers]
    assert len({ln.get_marker() for ln in lines}) == len({ln.get_color() for ln in lines}) == 3
    _no_legend_over_data(fig)


def test_verdict_bars_shares_main_and_legend():
    shares = pd.DataFrame(
        {
            "holds": [3, 0, 0],
            "partly": [1, 2, 0],
            "refuted": [0, 2, 0],
            "undecided": [0, 0, 5],
        },
        index=["C1", "C2", "C10"],
    )
    main = pd.Series({"C1": "holds", "C2": "refuted", "C10": "undecided"})
    words = {"holds": "holds", "refuted": "does not hold", "undecided": "not significant"}
    fig = plots.verdict_bars(shares, main, labels=words)
    _check(fig, 1, "share of the claim's specifications")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["C1", "C2", "C10"]
    widths = {}
    for bar in ax.patches:
        y = round(bar.get_y() + bar.get_height() / 2)
        widths[y] = widths.get(y, 0) + bar.get_width()
    assert all(np.isclose(w, 1.0) for w in widths.values())  # shares of each claim sum to 1
    hatches = {bar.get_hatch() or "" for bar in ax.patches}
    assert len(hatches) == 4  # four verdict words present, each its own hatch
    assert sorted(t.get_text() for t in ax.texts) == sorted(words[c] for c in main.values)
    diamonds = [ln for ln in ax.lines if ln.get_marker() == "D"]
    assert len(diamonds) == 3 and diamonds[0].get_xdata()[0] == pytest.approx(3 / 8)
    _no_legend_over_data(fig)
    with pytest.raises(ValueError, match="unknown verdict"):
        plots.verdict_bars(pd.DataFrame({"maybe": [1]}, index=["C1"]))
    with pytest.raises(ValueError, match="without specifications"):
        plots.verdict_bars(pd.DataFrame({"holds": [0]}, index=["C1"]))


def test_legend_below_and_outer_labels_on_a_page_grid():
    fig, axes = plots.panels(4, height=2.0)
    for ax, m in zip(axes, MODELS, strict=True):
        ax.plot([1, 2], [0, 1], label=m, **plots.model_style(m))
        ax.plot([1, 2], [1, 0], label=m)  # a repeated label enters the legend once
        ax.set(xlabel="layer $l$", ylabel="value")
    plots.outer_labels(axes)
    plots.legend_below(fig, axes)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == MODELS
    assert [bool(ax.get_ylabel()) for ax in axes] == [True, False, True, False]
    assert [bool(ax.get_xlabel()) for ax in axes] == [False, False, True, True]
    _no_legend_over_data(fig)


def test_use_style_sets_the_global_rcparams():
    import matplotlib as mpl

    with mpl.rc_context():
        mpl.rcParams["font.size"] = 6
        plots.use_style()
        assert {k: mpl.rcParams[k] for k in plots.STYLE} == plots.STYLE


def test_format_table():
    df = pd.DataFrame(
        {
            "H*": [89.0, 120.0, np.nan],
            "T_spec": [1.23456, 0.000012, np.nan],
        },
        index=["a", "b", "c"],
    )
    out = plots.format_table(df)
    assert list(out.index) == ["a", "b"]  # the all-NaN row is dropped
    assert out.loc["a", "H*"] == "89" and out.loc["b", "H*"] == "120"
    assert out.loc["a", "T_spec"] == "1.23" and out.loc["b", "T_spec"] == "1.20e-05"
    assert plots.format_table(pd.Series([True, False]))[0].tolist() == ["yes", "no"]
    assert plots.format_table(pd.DataFrame({"x": [1.0, np.nan], "y": [0.5, 2.0]}))[
        "x"
    ].tolist() == ["1", plots.MISSING]
    # object columns: numbers formatted, sequences listed, numpy strings as text
    v = [np.float64(5.2468714626947754), None, (1, 2), np.str_("ega-1")]
    mixed = pd.DataFrame({"v": v, "n": [1, 2, 3, 4]})
    assert plots.format_table(mixed)["v"].tolist() == ["5.25", plots.MISSING, "1, 2", "ega-1"]
    # numeric labels are formatted level by level
    scales = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.Index([3.0, 5.2468714626947754], name="a"))
    assert list(plots.format_table(scales).index) == ["3.00", "5.25"]
    with pytest.raises(ValueError, match="sig"):
        plots.format_table(df, sig=0)


def test_number_below_and_enumeration():
    assert plots.number(5.2468714626947754) == "5.25"
    assert plots.number(np.float64(0.000012)) == "1.20e-05"
    assert plots.number(-0.000879) == "-0.000879"  # as the scorecard prints it, no exponent
    assert plots.number(np.int64(120)) == "120" and plots.number(120.0, whole=True) == "120"
    assert plots.number(np.nan) == plots.number(None) == plots.MISSING
    assert plots.number(np.inf) == "∞" and plots.number(np.bool_(True)) == "yes"
    assert plots.number(123456.0, 6) == "1.23456e+05"
    with pytest.raises(TypeError, match="number"):
        plots.number("1.0")
    assert plots.below(3.6348215251310125e-16) == "below 1e-15"
    assert plots.below(1e-14) == "below 1e-13" and plots.below(0.0) == "exactly 0"
    with pytest.raises(ValueError, match="non-negative"):
        plots.below(-1e-16)
    assert plots.enumeration([np.int64(2), 3, 5]) == "2, 3 and 5"
    assert plots.enumeration([np.str_("ega-1")]) == "ega-1"
    assert plots.enumeration([], empty="no layer") == "no layer"


def test_span_of_the_finite_values():
    assert plots.span([93.67, np.nan, 3.0]) == "3.00–93.7"
    assert plots.span(np.array([[10.0, 2.0], [4.0, np.inf]])) == "2–10"  # whole values
    assert plots.span(xr.DataArray([0.5, 0.5])) == "0.500"  # one value once
    assert plots.span([np.nan]) == plots.span([]) == plots.MISSING
    assert plots.span([0.123456, 0.2], 2) == "0.12–0.20"


def test_table_is_shown_whole():
    wide = pd.DataFrame(
        np.arange(70 * 40, dtype=float).reshape(70, 40) / 7,
        columns=pd.MultiIndex.from_product([["T_spec", "H*"], range(20)]),
    )
    t = plots.table(wide)
    html = t._repr_html_()
    assert html.count("<tr>") >= 70 + 1 and "..." not in html and "×" not in html
    assert "..." not in repr(t) and len(repr(t).splitlines()) >= 70
    assert t.data.shape == (70, 40)
    assert "msapod-table sticky" in html  # one row label, kept in view
    rows = pd.DataFrame({"x": [1.0, 2.0]}, index=pd.MultiIndex.from_tuples([("a", 1), ("a", 2)]))
    assert 'class="msapod-table"' in plots.table(rows)._repr_html_()  # two: none kept
    assert "&lt;b&gt;" in plots.table(pd.DataFrame({"x": ["<b>"]}))._repr_html_()


def test_plots_is_lazy_and_torch_free():
    import subprocess
    import sys

    code = (
        "import sys, msapod; assert 'matplotlib' not in sys.modules;"
        "import msapod.plots; assert 'matplotlib' not in sys.modules;"
        "assert 'torch' not in sys.modules; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_mode_maps_crop_to_the_lags_that_hold_the_mode():
    rng = np.random.default_rng(4)
    lag = np.arange(64)
    phi = rng.standard_normal((3, 32, 64)) * np.exp(-lag / 8.0)  # energy ~ exp(-lag / 4)
    modes = xr.DataArray(
        phi, dims=("panel", "query", "lag"), coords={"panel": ["a", "b", "c"], "lag": lag}
    )
    n = plots.lag_extent(modes**2, 0.95)
    assert 9 <= n <= 16, n  # 95 % of exp(-lag / 4) lies below lag 12
    assert plots.lag_extent(modes**2, 0.5) == 8  # at least min_lag lags
    assert plots.lag_extent(modes**2, 0.95, min_lag=20) == 20
    fig = plots.mode_maps(modes, "panel")
    _check(fig, 3, r"lag $\tau$", "query $i$")
    ax = _axes(fig)[0]
    assert ax.get_xlim()[1] < n + 1  # cropped, not the 64 lags stored
    (bar,) = [a for a in fig.axes if a.get_label() == "<colorbar>"]
    assert bar.get_ylim() == (-1.0, 1.0)  # one scale for every panel
    assert [a.get_title() for a in _axes(fig)] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="share"):
        plots.lag_extent(modes**2, 0)


def test_along_training_places_steps_evenly_with_intervals():
    import matplotlib.pyplot as plt

    v = xr.DataArray(
        [[1.0, 2.0], [1.5, 2.5], [1.2, 2.2]],
        dims=("step", "model"),
        coords={"step": [0, 30, 3000], "model": ["baseline-1", "ega-1"]},
    )
    fig, ax = plt.subplots()
    plots.along_training(ax, v, v - 0.1, v + 0.1, hue="model", ylabel="x")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "30", "3000"]
    assert len(ax.lines) == 2 + 2 * 3  # one line per model, one interval per point
    assert ax.lines[0].get_color() == plots.colour("baseline-1")
    with pytest.raises(ValueError, match="value"):
        plots.along_training(ax, v.rename(step="time"), hue="model")
    plt.close(fig)
