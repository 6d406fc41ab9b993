"""The book's figures and tables, in msapod's style (:mod:`msapod.plots`).

Every figure the pages share and that ``msapod`` itself does not draw: attention fields
(:func:`fields`), profiles along one dim (:func:`lines`), POD modes as images
(:func:`mode_maps`), claim bands and intervals (:func:`claim_band`,
:func:`interval_limits`, :func:`draw_intervals`), the replicates behind a verdict
(:func:`replicates`), every test at a glance (:func:`test_distances`), specification
curves (:func:`specification_curve`), the verdict shares of every claim
(:func:`verdict_bars`), pruning curves (:func:`pruning_curve`) and curves along training
(:func:`along_training`); and, for tables and printed values, :func:`table` (a table shown
whole, numbers formatted), :func:`enumeration`, :func:`span` and :func:`sizes`. A
verdict is drawn by its code (:data:`VERDICT_STYLE`, a colour and a marker or hatch each,
never a colour alone); its word is the renderer's (:mod:`msapod.studies.verdict.render`).

The style, the colours and :func:`msapod.plots.number` are msapod's, re-exported here so a
page imports one module for its figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from msapod.plots import (  # noqa: F401  (msapod's style, re-exported: a page imports one module)
    ARCH_COLOURS,
    BAND_ALPHA,
    BAND_COLOUR,
    CATEGORY_COLOURS,
    LABELS,
    MAX_COLS,
    MIN_FONT_SIZE,
    MISSING,
    OKABE_ITO,
    SEED_LINES,
    STYLE,
    WIDTH,
    ZOO_COLOURS,
    architecture,
    below,
    category_style,
    check_dims,
    colour,
    layer_profile,
    legend_below,
    log_ticks,
    mode_lags,
    model_style,
    number,
    outer_labels,
    panel_select,
    panel_title,
    panel_values,
    panels,
    scale_spectrum,
    scalogram,
    style,
    use_style,
)

#: The kit's own figures and tables (msapod's style functions are re-exported above).
__all__ = [
    "BAND_TEXT",
    "REACH",
    "Table",
    "VERDICT_COLOURS",
    "VERDICT_STYLE",
    "along_training",
    "claim_band",
    "draw_intervals",
    "enumeration",
    "fields",
    "format_table",
    "interval_limits",
    "lag_extent",
    "lines",
    "mode_maps",
    "pruning_curve",
    "replicates",
    "sizes",
    "span",
    "specification_curve",
    "table",
    "test_distances",
    "verdict_bars",
    "verdict_handles",
]


#: colour, marker and bar hatch of each verdict code (the codes of
#: :mod:`msapod.studies.verdict.inference`; their words are the caller's ``labels``): no two
#: differ by colour alone (the marker and the hatch are the second cue)
VERDICT_STYLE = {
    "holds": {"color": OKABE_ITO["blue"], "marker": "o", "hatch": ""},
    "partly": {"color": OKABE_ITO["sky blue"], "marker": "D", "hatch": "//"},
    "undecided": {"color": "#9e9e9e", "marker": "s", "hatch": ".."},
    "refuted": {"color": OKABE_ITO["vermillion"], "marker": "X", "hatch": "xx"},
    "untestable": {"color": OKABE_ITO["reddish purple"], "marker": "P", "hatch": "++"},
}


#: the colour of each verdict code (:data:`VERDICT_STYLE`)
VERDICT_COLOURS = {w: st["color"] for w, st in VERDICT_STYLE.items()}


BAND_TEXT = "#5c5300"


def fields(
    A: xr.DataArray,
    by: str | None = None,
    *,
    signed: bool = False,
    vmin: float = 1e-4,
    linear: tuple[float, float] | None = None,
    dims: tuple[str, str] = ("query", "key"),
    label: str = r"$\bar A(i,j)$ (probability)",
    title: str | None = None,
):
    """Attention fields ``A(query, key)`` as images, one panel per value of ``by``.

    Parameters
    ----------
    A : xarray.DataArray
        dims ``("query", "key")`` and, if ``by`` is given, ``by``.
    by : str, optional
        the dim that makes the panels (at most 3 per row), e.g. ``"layer"``.
    signed : bool
        a signed field (a fluctuation :math:`u_s`): diverging colours symmetric about 0,
        clipped at the 99.9 % quantile of :math:`|u|`; otherwise a logarithmic scale from
        ``vmin`` to 1 with zeros blank.
    linear : (float, float), optional
        a linear colour scale over this range instead (e.g. a coherency, 0 to 1); NaN
        entries are grey.
    dims : (str, str)
        the row and column dims of each image (e.g. ``("query_i", "query_j")``).
    label, title : str
        colour-bar label and figure title.
    """
    from matplotlib.colors import LogNorm

    check_dims(A, "A", tuple(dims) + ((by,) if by else ()))
    rows, cols = dims
    values = panel_values(A, by)
    fig, axes = panels(len(values), height=2.3)
    q, k = A[rows].values, A[cols].values
    extent = (k[0] - 0.5, k[-1] + 0.5, q[-1] + 0.5, q[0] - 0.5)
    if linear is not None:
        import matplotlib as mpl

        cmap = mpl.colormaps["viridis"].with_extremes(bad="0.75")
        kw = {"cmap": cmap, "vmin": linear[0], "vmax": linear[1]}
    elif signed:
        vmax = float(np.nanquantile(np.abs(A.values), 0.999)) or 1.0
        kw = {"cmap": "RdBu_r", "vmin": -vmax, "vmax": vmax}
    else:
        kw = {"cmap": "viridis", "norm": LogNorm(vmin, 1)}
    with style():
        for ax, v in zip(axes, values, strict=True):
            f = panel_select(A, by, v).transpose(rows, cols)
            img = f if signed or linear is not None else f.where(f > 0)
            im = ax.imshow(img.values, extent=extent, interpolation="nearest", **kw)
            ax.set_title(panel_title(by, v, A))
            ax.set_xlabel(LABELS.get(cols, cols))
            ax.set_ylabel(LABELS.get(rows, rows))
        outer_labels(axes)
        fig.colorbar(im, ax=axes, shrink=0.8, label=label)
        if title:
            fig.suptitle(title)
    return fig


def lines(
    value: xr.DataArray,
    x: str,
    hue: str,
    *,
    xlabel: str | None = None,
    ylabel: str,
    yscale: str = "linear",
    xscale: str = "linear",
    title: str | None = None,
    ax=None,
):
    """One line per value of ``hue`` along ``x`` (e.g. a per-query or per-lag profile of
    every layer).

    Parameters
    ----------
    value : xarray.DataArray
        dims ``(hue, x)``.
    x, hue : str
        the dim along the horizontal axis and the dim that makes the lines. Layers and
        other numbered dims get a sequential colour map (dark early, light late); zoo
        models their architecture's colour (:func:`model_style`); named categories a
        colour and a line style each (:func:`category_style`).
    xlabel, ylabel : str
        axis labels in the book's symbols with units (``xlabel`` defaults to
        :data:`LABELS` of ``x``).
    yscale, xscale : str
        matplotlib scales (``"log"``, ``"symlog"``, ...).
    """
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    check_dims(value, "value", (x, hue))
    keys = list(value[hue].values)
    cmap = mpl.colormaps["viridis"]
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(WIDTH, 3.0), layout="constrained")
        for n, k in enumerate(keys):
            y = value.sel({hue: k})
            if hue == "model":
                st = model_style(str(k))
                kw = {"color": st["color"], "ls": st["ls"]}
            elif isinstance(k, str | np.str_):
                kw = {"color": category_style(n)["color"], "ls": SEED_LINES[n % len(SEED_LINES)]}
            else:
                kw = {"color": cmap(0.85 * n / max(len(keys) - 1, 1))}
            if hue in ("layer", "head", "mode"):
                label = f"{hue} {k}"
            else:
                label = f"$a = {float(k):g}$" if hue == "scale" else str(k)
            ax.plot(y[x].values, y.values, label=label, **kw)
        ax.set_yscale(yscale)  # "log" leaves out zeros (e.g. row 0 of a fluctuation)
        ax.set_xscale(xscale)
        log_ticks(ax)
        ax.set_xlabel(xlabel or LABELS.get(x, x))
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax.figure


def lag_extent(energy: xr.DataArray, share: float = 0.99, *, min_lag: int = 8) -> int:
    """The number of lags, from lag 0, that hold ``share`` of ``energy`` (summed over
    every other dim), and at least ``min_lag``: the lags a figure needs to show where a
    lag profile or a mode sits (:func:`mode_maps`).

    ``energy`` has a ``"lag"`` dim with lags 0, 1, 2, ...; NaN counts as 0.
    """
    check_dims(energy, "energy", ("lag",))
    if not 0 < share <= 1:
        raise ValueError(f"share: expected a share in (0, 1], got {share!r}")
    e = energy.fillna(0).sum([d for d in energy.dims if d != "lag"]).values.astype(float)
    if e.sum() <= 0:
        return min(min_lag, e.size)
    reach = int(np.searchsorted(np.cumsum(e) / e.sum(), share - 1e-12)) + 1
    return min(max(reach, min_lag), e.size)


def mode_maps(
    modes: xr.DataArray,
    by: str,
    *,
    share: float = 0.95,
    clip: float = 0.99,
    label: str = r"$\phi_k(i, i - \tau)$, scaled",
    title: str | None = None,
):
    """POD modes in lag form, :math:`\\phi_k(i, i - \\tau)`, as images over query and lag,
    one panel per value of ``by``, cropped to the lags where they sit.

    Each panel is divided by the ``clip`` quantile of its non-zero :math:`|\\phi_k|` and
    clipped at :math:`\\pm 1` (a mode's sign and scale are arbitrary, and a few large
    entries would leave the rest blank), so one diverging colour bar from -1 to 1 serves
    every panel; the lag axis ends where the panels hold ``share`` of their energy
    :math:`\\phi_k^2` (:func:`lag_extent`).

    Parameters
    ----------
    modes : xarray.DataArray
        dims ``("query", "lag")`` and ``by`` (lags 0, 1, 2, ...); NaN is drawn as 0.
    by : str
        the dim of the panels (at most 3 per row); its values title the panels.
    share : float
        the share of the energy the lag axis must show.
    clip : float
        the quantile of :math:`|\\phi_k|` that is drawn at full colour.
    """
    from matplotlib.ticker import MaxNLocator

    check_dims(modes, "modes", ("query", "lag", by))
    modes = modes.fillna(0.0).transpose(by, "query", "lag")
    n_lag = lag_extent(modes**2, share)
    values = panel_values(modes, by)
    fig, axes = panels(len(values), height=2.0, sharex=True, sharey=True)
    with style():
        for ax, v in zip(axes, values, strict=True):
            img = panel_select(modes, by, v).isel(lag=slice(0, n_lag))
            mag = np.abs(img.values[img.values != 0])
            scale = float(np.quantile(mag, clip)) if mag.size else 1.0
            im = ax.pcolormesh(
                img["lag"].values,
                img["query"].values,
                np.clip(img.values / scale, -1, 1),
                cmap="RdBu_r",
                vmin=-1,
                vmax=1,
                shading="nearest",
                rasterized=True,
            )
            ax.set_title(panel_title(by, v, modes))
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel(LABELS["lag"])
            ax.set_ylabel(LABELS["query"])
        outer_labels(axes)
        fig.colorbar(im, ax=axes, shrink=0.8, label=label, ticks=[-1, -0.5, 0, 0.5, 1])
        if title:
            fig.suptitle(title)
    return fig


def claim_band(ax, low: float = -np.inf, high: float = np.inf, *, label: str | None = None):
    """Shade the range ``[low, high]`` a claim needs on ``ax``'s y axis.

    Call it after the data are drawn: the y limits are kept. Where the band lies wholly
    above or below the axis, an arrow at that edge points to it, labelled with the bound
    (so a claim band is never silently off the axis). Returns ``"in"``, ``"above"`` or
    ``"below"``.
    """
    low = -np.inf if low is None else float(low)
    high = np.inf if high is None else float(high)
    if not low <= high:
        raise ValueError(f"low, high: expected low <= high, got {low}, {high}")
    y0, y1 = ax.get_ylim()
    text = label or (
        f"claim: $\\geq {low:.3g}$"
        if np.isinf(high)
        else f"claim: $\\leq {high:.3g}$"
        if np.isinf(low)
        else f"claim: {low:.3g} to {high:.3g}"
    )
    with style():
        if low > y1 or high < y0:
            where = "above" if low > y1 else "below"
            y, va, arrow = (0.97, "top", "↑") if where == "above" else (0.03, "bottom", "↓")
            ax.annotate(
                f"{arrow} {text}",
                xy=(0.98, y),
                xycoords="axes fraction",
                ha="right",
                va=va,
                color=BAND_TEXT,
                bbox={"fc": "white", "ec": BAND_TEXT, "lw": 0.8, "pad": 2},
            )
            return where
        ax.axhspan(max(low, y0), min(high, y1), color=BAND_COLOUR, alpha=BAND_ALPHA, lw=0, zorder=0)
        ax.set_ylim(y0, y1)
    return "in"


#: an interval end further from the points than this many times their spread is cut at
#: the axis (and marked), so that one degenerate interval cannot squash the others
REACH = 3.0


def interval_limits(
    value, lower=None, upper=None, *, clip: tuple[float | None, float | None] | None = None
) -> tuple[float, float]:
    """The y range of a plot of points with intervals that no degenerate value can wreck.

    The range holds every finite point and every interval end no further from the points
    than :data:`REACH` times their spread (the range of the points, or the median
    interval length where the points coincide), plus 5 % padding, and never goes beyond
    ``clip`` (the quantity's own range, e.g. ``(0, None)`` for a length, ``(0, 1)`` for
    a share: an end beyond it counts as the bound). Infinite and NaN ends are left out.
    Ends outside the range are drawn cut, with an arrow (:func:`draw_intervals`).

    Parameters
    ----------
    value, lower, upper : array-like of float
        the points and their interval ends (same shape; ``lower``/``upper`` may be None).
    clip : (float or None, float or None), optional
        the bounds of the quantity (None: unbounded).
    """
    v = np.asarray(value, dtype=float).ravel()
    lo = np.full_like(v, np.nan) if lower is None else np.asarray(lower, dtype=float).ravel()
    up = np.full_like(v, np.nan) if upper is None else np.asarray(upper, dtype=float).ravel()
    if not lo.shape == up.shape == v.shape:
        raise ValueError(f"lower, upper: expected {v.shape[0]} entries like value")
    c0, c1 = (None, None) if clip is None else clip
    c0 = -np.inf if c0 is None else float(c0)
    c1 = np.inf if c1 is None else float(c1)
    pts = v[np.isfinite(v)]
    if not pts.size:
        return (0.0, 1.0) if clip is None else (max(c0, 0.0), min(c1, 1.0))
    length = (up - lo)[np.isfinite(up - lo)]
    spread = float(np.ptp(pts)) or (float(np.median(length)) if length.size else 0.0)
    spread = spread or abs(float(pts[0])) or 1.0
    reach0, reach1 = pts.min() - REACH * spread, pts.max() + REACH * spread
    ends = np.concatenate([pts, lo[np.isfinite(lo)], up[np.isfinite(up)]])
    ends = np.clip(ends, c0, c1)  # an end beyond the quantity's range reaches its bound
    ends = ends[(ends >= reach0) & (ends <= reach1)]
    y0, y1 = float(min(ends.min(), pts.min())), float(max(ends.max(), pts.max()))
    pad = 0.05 * ((y1 - y0) or spread)
    return max(y0 - pad, c0), min(y1 + pad, c1)


def draw_intervals(ax, x, lower, upper, *, color, lw: float = 1.2, cap: bool = True) -> int:
    """Vertical intervals ``[lower, upper]`` at ``x``, cut at ``ax``'s y limits: a cut
    (or infinite) end is drawn as an arrowhead at the axis edge, a kept end as a cap.
    NaN intervals are skipped. Returns the number of cut ends.

    Set the y limits first (e.g. from :func:`interval_limits`).
    """
    y0, y1 = ax.get_ylim()
    x = np.atleast_1d(np.asarray(x, dtype=float))
    lower = np.atleast_1d(np.asarray(lower, dtype=float))
    upper = np.atleast_1d(np.asarray(upper, dtype=float))
    cut = 0
    for xi, lo, up in zip(x, lower, upper, strict=True):
        if np.isnan(lo) or np.isnan(up) or up < y0 or lo > y1:
            continue
        a, b = max(lo, y0), min(up, y1)
        ax.plot([xi, xi], [a, b], color=color, lw=lw, zorder=2)
        for end, edge, kept, marker in ((lo, y0, a, "v"), (up, y1, b, "^")):
            if end < y0 or end > y1:
                ax.plot(xi, edge, marker=marker, color=color, ms=6, ls="none", clip_on=False)
                cut += 1
            elif cap:
                ax.plot(xi, kept, marker="_", color=color, ms=5, mew=lw, ls="none")
    return cut


def verdict_handles(codes, *, main: bool = False, labels=None) -> tuple[list, list[str]]:
    """Legend handles and labels of the verdict ``codes`` (in the order of
    :data:`VERDICT_STYLE`; unknown codes are skipped), each its colour and marker, labelled
    by ``labels[code]`` (default the code), and a black ring for the default reading when
    ``main``."""
    from matplotlib.lines import Line2D

    present = [w for w in VERDICT_STYLE if w in set(map(str, codes))]
    handles = [
        Line2D([], [], ls="none", **{k: VERDICT_STYLE[w][k] for k in ("color", "marker")})
        for w in present
    ]
    names = [(labels or {}).get(w, w) for w in present]
    if main:
        handles.append(Line2D([], [], color="white", marker="o", mec="k", mew=1.2, ls="none"))
        names.append("default reading")
    return handles, names


def specification_curve(
    value: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    verdict: Sequence[str],
    *,
    main: Sequence[bool] | None = None,
    ylabel: str,
    band: tuple[float, float] | None = None,
    clip: tuple[float | None, float | None] | None = None,
    title: str | None = None,
    ax=None,
    labels=None,
):
    """A specification curve: one point per specification, sorted by its value, with
    its interval, coloured and marked by its verdict code (:data:`VERDICT_STYLE`, legend
    words from ``labels``); the main specification ringed in black.

    Parameters
    ----------
    value, lower, upper : sequences of float
        one entry per specification; NaN values are drawn as crosses at the bottom.
    verdict : sequence of str
        the verdict code of each specification (:data:`VERDICT_STYLE`).
    main : sequence of bool, optional
        which specification is the main one.
    band : (float, float), optional
        the range the claim needs (:func:`claim_band`).
    clip : (float or None, float or None), optional
        the statistic's own range; intervals reaching far beyond the points are cut
        with an arrow (:func:`interval_limits`).
    """
    import matplotlib.pyplot as plt

    value = np.asarray(value, dtype=float)
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    verdict = np.asarray(verdict, dtype=object)
    main = np.zeros(len(value), bool) if main is None else np.asarray(main, dtype=bool)
    for name, a in (("lower", lower), ("upper", upper), ("verdict", verdict), ("main", main)):
        if len(a) != len(value):
            raise ValueError(
                f"{name}: expected {len(value)} entries (one per specification), got {len(a)}"
            )
    order = np.argsort(np.where(np.isfinite(value), value, np.inf), kind="stable")
    x = np.arange(len(order))
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(WIDTH, 3.0), layout="constrained")
        y0, y1 = interval_limits(value, lower, upper, clip=clip)
        ax.set_ylim(y0, y1)
        for xi, j in zip(x, order, strict=True):
            st = VERDICT_STYLE.get(str(verdict[j]), {"color": "0.3", "marker": "o"})
            if np.isfinite(value[j]):
                draw_intervals(ax, xi, lower[j], upper[j], color=st["color"], lw=2, cap=False)
                ax.plot(
                    xi,
                    value[j],
                    st["marker"],
                    color=st["color"],
                    ms=6 if main[j] else 4.5,
                    mec="k" if main[j] else st["color"],
                    mew=1.2 if main[j] else 0.5,
                )
            else:
                ax.plot(xi, y0, "x", color=st["color"], clip_on=False)
        ax.set_xlabel("specifications, sorted by the statistic")
        ax.set_ylabel(ylabel)
        ax.set_xticks([])
        if title:
            ax.set_title(title)
        if band is not None:
            claim_band(ax, *band)
        handles, names = verdict_handles(verdict, main=bool(main.any()), labels=labels)
        ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax.figure


def pruning_curve(
    increase: xr.DataArray,
    *,
    budget_dim: str = "budget",
    strategy_dim: str = "strategy",
    n_heads: int | None = None,
    ylabel: str = r"$\Delta\mathcal{L}$ (nats per character)",
    title: str | None = None,
    ax=None,
):
    """Loss increase against the number of heads removed, one line per strategy: mean
    over models (and draws), error bar one standard deviation over models.

    Parameters
    ----------
    increase : xarray.DataArray
        dims ``(strategy_dim, budget_dim)`` and optionally ``"model"``, ``"draw"`` (the
        draws are averaged first, NaN draws skipped).
    n_heads : int, optional
        total number of heads, for the x label.
    """
    import matplotlib.pyplot as plt

    check_dims(increase, "increase", (strategy_dim, budget_dim))
    if "draw" in increase.dims:
        increase = increase.mean("draw", skipna=True)
    strategies = list(increase[strategy_dim].values)
    budgets = increase[budget_dim].values.astype(float)
    width = 0.5 * (np.diff(budgets).min() if len(budgets) > 1 else 1.0) / len(strategies)
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(WIDTH, 3.2), layout="constrained")
        for n, st in enumerate(strategies):
            y = increase.sel({strategy_dim: st})
            mean = y.mean("model") if "model" in y.dims else y
            sd = y.std("model", ddof=1) if "model" in y.dims and y.sizes["model"] > 1 else None
            x = budgets + (n - (len(strategies) - 1) / 2) * width
            ax.errorbar(
                x,
                mean.values,
                yerr=None if sd is None else sd.values,
                capsize=3,
                label=str(st),
                **category_style(n),
            )
        ax.set_xticks(budgets)
        ax.set_xlabel("heads removed" + (f" (of {n_heads})" if n_heads else ""))
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax.figure


def _verdict_bar(ax, y: int, row: pd.Series, main_word, labels) -> None:
    """One claim's stacked bar of verdict shares at ``y`` (each code its colour and
    hatch), the default verdict marked in its segment and written at the right
    (``main_word`` None: none)."""
    left = 0.0
    for word, share in row.items():
        if share > 0:
            st = VERDICT_STYLE[word]
            ax.barh(y, share, left=left, color=st["color"], hatch=st["hatch"], edgecolor="white")
            if main_word is not None and word == main_word:
                ax.plot(left + share / 2, y, "D", color="k", mfc="white", mew=1.5, ms=6)
        left += share
    if isinstance(main_word, str):
        ax.text(1.02, y, labels.get(main_word, main_word), va="center", color="0.15")


def _verdict_legend(ax, counts: pd.DataFrame, with_main: bool, labels) -> None:
    """The figure legend: the verdict words present (colour and hatch), and the main
    specification's mark."""
    from matplotlib.patches import Patch

    present = [w for w in VERDICT_STYLE if counts[w].sum() > 0]
    handles = [
        Patch(facecolor=VERDICT_STYLE[w]["color"], hatch=VERDICT_STYLE[w]["hatch"], ec="white")
        for w in present
    ]
    names = [labels.get(w, w) for w in present]
    if with_main:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="k", marker="D", mfc="white", mew=1.5, ls="none"))
        names.append("default reading")
    ax.figure.legend(handles, names, loc="outside lower center", ncol=3)


def verdict_bars(
    shares: pd.DataFrame,
    main: pd.Series | None = None,
    *,
    title: str | None = None,
    ax=None,
    labels=None,
):
    """Per claim, the share of its specifications that give each verdict, as one
    stacked bar; the main specification's verdict is written at the right of the bar.

    Parameters
    ----------
    shares : pandas.DataFrame
        index: the claims (top to bottom); columns: verdict codes of
        :data:`VERDICT_COLOURS` (others are not allowed); values: numbers of
        specifications (each row is normalised to shares).
    main : pandas.Series, optional
        the main specification's verdict code per claim (same index), written at the right
        of each bar and marked by a black diamond in its segment.
    labels : dict, optional
        the word of each code (default the codes).
    """
    labels = labels or {}
    import matplotlib.pyplot as plt

    if not isinstance(shares, pd.DataFrame) or shares.empty:
        raise ValueError("shares: expected a non-empty DataFrame (claims x verdict words)")
    unknown = [c for c in shares.columns if c not in VERDICT_COLOURS]
    if unknown:
        raise ValueError(f"shares: unknown verdict columns {unknown}")
    counts = shares.reindex(columns=list(VERDICT_COLOURS), fill_value=0).astype(float)
    totals = counts.sum(axis=1)
    if (totals <= 0).any():
        raise ValueError(f"shares: claims without specifications {list(totals.index[totals <= 0])}")
    frac = counts.div(totals, axis=0)
    if main is not None:
        main = main.reindex(frac.index)
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(WIDTH, 0.3 * len(frac) + 1.2), layout="constrained")
        for y, (claim, row) in enumerate(frac.iterrows()):
            _verdict_bar(ax, y, row, None if main is None else main[claim], labels)
        ax.set_yticks(range(len(frac)), [str(c) for c in frac.index])
        ax.set_ylim(len(frac) - 0.5, -0.5)
        ax.set_xlim(0, 1)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", "25 %", "50 %", "75 %", "100 %"])
        ax.set_xlabel("share of the claim's specifications (readings of the paper)")
        ax.spines["left"].set_visible(False)
        ax.tick_params(axis="y", length=0)
        _verdict_legend(ax, counts, main is not None, labels)
        if title:
            ax.set_title(title)
    return ax.figure


def replicates(
    values,
    architectures,
    lower=None,
    upper=None,
    *,
    estimate: tuple[float, float, float] | None,
    boundary: tuple[float, float] | None,
    direction: str,
    ylabel: str,
    ax=None,
    log: bool = False,
):
    """The replicates behind one test: each model's value (coloured and marked by its
    entry of ``architectures``, :data:`ARCH_COLOURS`; with its interval ``[lower, upper]``
    where given) and, at the right, the zoo-level ``estimate`` ``(value, lower, upper)``
    with the side of the ``boundary`` ``(low, high)`` where the test holds shaded
    (:func:`claim_band`), for ``direction`` ``"greater"`` (above ``low``), ``"less"``
    (below ``high``) or ``"within"`` (between them). Without ``estimate`` (a contrast of
    the architectures, whose estimate is not on the models' scale) each architecture's
    mean is drawn as a line of its colour instead, and no boundary.

    Returns the figure.
    """
    import matplotlib.pyplot as plt

    v = np.asarray(values, float)
    arch = [str(a) for a in architectures]
    if len(arch) != len(v):
        raise ValueError(f"architectures: expected {len(v)} labels, got {len(arch)}")
    lo = np.full_like(v, np.nan) if lower is None else np.asarray(lower, float)
    hi = np.full_like(v, np.nan) if upper is None else np.asarray(upper, float)
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(WIDTH / 2, 2.6), layout="constrained")
        pts, los, his = v, lo, hi
        if estimate is not None:
            est, e_lo, e_hi = (float(x) for x in estimate)
            pts, los, his = np.r_[v, est], np.r_[lo, e_lo], np.r_[hi, e_hi]
        ax.set_ylim(*interval_limits(pts, los, his))
        if log:
            ax.set_yscale("log")
        x = np.arange(len(v))
        for a in dict.fromkeys(arch):
            idx = np.flatnonzero(np.array(arch) == a)
            st = {"color": ARCH_COLOURS.get(a, "0.3"), "marker": "o" if a != "ega" else "s"}
            draw_intervals(ax, x[idx], lo[idx], hi[idx], color=st["color"], lw=1.0)
            ax.plot(x[idx], v[idx], ls="none", ms=5, label=a, **st)
            if estimate is None:
                mean = np.exp(np.nanmean(np.log(v[idx]))) if log else np.nanmean(v[idx])
                ax.plot([idx.min() - 0.3, idx.max() + 0.3], [mean, mean], color=st["color"])
        ticks, names = list(x), [str(i + 1) for i in x]
        if estimate is not None:
            xe = len(v) + 0.6
            draw_intervals(ax, [xe], [e_lo], [e_hi], color="k", lw=2.2)
            ax.plot([xe], [est], "D", color="k", ms=6, label="mean (90 % interval)")
            ticks, names = [*ticks, xe], [*names, "mean"]
        ax.set_xticks(ticks, names)
        ax.set_xlabel("model")
        ax.set_ylabel(ylabel)
        if log:
            log_ticks(ax, "y")
        if boundary is not None:
            low, high = (float(b) for b in boundary)
            if direction == "greater":
                claim_band(ax, low, np.inf, label=f"holds above {low:.3g}")
            elif direction == "less":
                claim_band(ax, -np.inf, high, label=f"holds below {high:.3g}")
            else:
                claim_band(ax, low, high, label=f"holds in {low:.3g} to {high:.3g}")
    return ax.figure


def test_distances(tests, distance, half_width, codes, *, labels=None, ax=None):
    """Every test on one axis: its interval as the distance from the boundary of its
    smallest effect in standard errors (``distance`` the estimate's, ``half_width`` the
    interval's half width in standard errors), the claimed side to the right (shaded),
    coloured and marked by its verdict code; a test holds when its interval lies right of
    zero. The axis is linear within two standard errors of the boundary and logarithmic
    beyond (a test tens of standard errors away stays on it).

    Returns the figure.
    """
    import matplotlib.pyplot as plt

    tests = [str(t) for t in tests]
    d = np.asarray(distance, float)
    q = np.asarray(half_width, float)
    codes = [str(c) for c in codes]
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(WIDTH, 0.26 * len(tests) + 1.4), layout="constrained")
        lo, hi = d - q, d + q
        ends = np.r_[lo, hi][np.isfinite(np.r_[lo, hi])]
        lim = 1.3 * max(float(np.max(np.abs(ends))) if ends.size else 1.0, 3.0)
        ax.set_xscale("symlog", linthresh=2.0)
        ax.set_xlim(-lim, lim)
        for y, (a, b, c, m) in enumerate(zip(lo, hi, codes, d, strict=True)):
            st = VERDICT_STYLE.get(c, {"color": "0.3", "marker": "o"})
            if not np.isfinite(m):
                ax.plot(0, y, "x", color=st["color"])
                continue
            ax.plot([a, b], [y, y], color=st["color"], lw=2)
            ax.plot(m, y, st["marker"], color=st["color"], ms=5)
        ax.axvline(0, color="0.2", lw=1)
        ax.axvspan(0, lim, color=BAND_COLOUR, alpha=BAND_ALPHA, lw=0, zorder=0)
        ax.set_yticks(range(len(tests)), tests)
        ax.set_ylim(len(tests) - 0.5, -0.5)
        ax.set_xlabel("estimate − boundary (standard errors; claimed side right)")
        handles, names = verdict_handles(codes, labels=labels)
        ax.figure.legend(handles, names, loc="outside lower center", ncol=3)
    return ax.figure


def enumeration(items, sig: int = 3, *, empty: str = "none") -> str:
    """Items as a reader writes them: ``[2, 3, 5]`` -> ``"2, 3 and 5"`` (numbers by
    :func:`number`, other items by ``str``; ``empty`` if there are none)."""
    words = [
        number(x, sig) if isinstance(x, int | float | np.integer | np.floating) else str(x)
        for x in items
    ]
    if not words:
        return empty
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def span(values, sig: int = 3) -> str:
    """The range of the finite ``values`` (any shape) as a reader writes it:
    ``"3.00–93.7"`` (numbers by :func:`number`, as integers when all are whole), one
    value once, :data:`MISSING` when none is finite."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if not v.size:
        return MISSING
    whole = bool(np.all(v == np.round(v)))
    lo, hi = (number(float(x), sig, whole=whole) for x in (v.min(), v.max()))
    return lo if lo == hi else f"{lo}–{hi}"


def sizes(x) -> str:
    """The dims and sizes of an xarray object as text: ``"layer 6 × snapshot 16 ×
    query 256 × key 256"`` (for a printed shape, instead of a dict)."""
    if not isinstance(x, xr.DataArray | xr.Dataset):
        raise TypeError(f"x: expected an xarray DataArray or Dataset, got {type(x).__name__}")
    return " × ".join(f"{d} {n}" for d, n in x.sizes.items())


def _cell(v, sig: int, na: str) -> str:
    """One table cell of an object column (numbers formatted, sequences listed)."""
    if v is None or v is pd.NA or (isinstance(v, float | np.floating) and np.isnan(v)):
        return na
    if isinstance(v, bool | np.bool_ | int | float | np.integer | np.floating):
        return number(v, sig, na=na)
    if isinstance(v, list | tuple | np.ndarray):
        return ", ".join(_cell(x, sig, na) for x in v)
    return str(v)


def _labels(index: pd.Index, sig: int) -> pd.Index:
    """Index or column labels with their fractional numbers formatted, level by level
    (scales 3.1415 -> 3.14; a level of whole numbers as integers; integers kept)."""

    def level(values) -> list:
        if all(isinstance(v, int | np.integer) for v in values):
            return [int(v) for v in values]
        nums = [isinstance(v, int | float | np.integer | np.floating) for v in values]
        if not any(nums):
            return [v if isinstance(v, str) else str(v) for v in values]
        x = np.array([float(v) for v, n in zip(values, nums, strict=True) if n])
        whole = bool(np.all(x[np.isfinite(x)] == np.round(x[np.isfinite(x)])))
        return [
            number(v, sig, whole=whole) if n else str(v) for v, n in zip(values, nums, strict=True)
        ]

    if isinstance(index, pd.MultiIndex):
        levels = [level(list(index.get_level_values(k))) for k in range(index.nlevels)]
        return pd.MultiIndex.from_arrays(levels, names=index.names)
    return pd.Index(level(list(index)), name=index.name)


def format_table(df: pd.DataFrame | pd.Series, sig: int = 3, na: str = MISSING) -> pd.DataFrame:
    """A table a reader can scan, as strings.

    A column whose numbers are all whole is written as integers (``89``, not ``89.0``);
    other numbers get ``sig`` significant digits (:func:`number`); booleans are
    ``yes``/``no``; a cell holding a sequence is listed (``1, 2``); missing values are
    ``na``; rows missing in every column are dropped. Numeric index and column labels
    are formatted the same way.

    Parameters
    ----------
    df : pandas.DataFrame or pandas.Series
    sig : int
        significant digits, 1 to 6.
    na : str
        the text of a missing value.
    """
    if isinstance(df, pd.Series):
        df = df.to_frame()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df: expected a pandas DataFrame or Series, got {type(df).__name__}")
    if isinstance(sig, bool) or not isinstance(sig, int) or not 1 <= sig <= 6:
        raise ValueError(f"sig: expected an integer from 1 to 6, got {sig!r}")
    df = df.dropna(how="all")
    out = []
    for _, col in df.items():
        if pd.api.types.is_bool_dtype(col):
            out.append([number(bool(v)) for v in col])
        elif pd.api.types.is_numeric_dtype(col):
            x = col.to_numpy(dtype=float)
            fin = x[np.isfinite(x)]
            whole = bool(fin.size) and bool(np.all(fin == np.round(fin)))
            out.append([number(v, sig, na=na, whole=whole) for v in x])
        else:
            out.append([_cell(v, sig, na) for v in col])
    return pd.DataFrame(dict(enumerate(out)), index=_labels(df.index, sig)).set_axis(
        _labels(df.columns, sig), axis=1
    )


class Table:
    """A formatted table that a page shows whole: every row and every column (never
    pandas' ``...`` elision), in a box that scrolls sideways on a narrow screen with the
    row labels kept in view (the book's CSS class ``msapod-table``).

    Made by :func:`table`; ``data`` is the table as strings (:func:`format_table`).
    """

    def __init__(self, data: pd.DataFrame):
        self.data = data

    def _repr_html_(self) -> str:
        html = self.data.to_html(border=0, escape=True, notebook=False, max_rows=None)
        sticky = " sticky" if self.data.index.nlevels == 1 else ""  # one row label to keep
        return f'<div class="msapod-table{sticky}">{html}</div>'

    def __repr__(self) -> str:
        return self.data.to_string(max_rows=None, max_cols=None)


def table(df: pd.DataFrame | pd.Series, sig: int = 3, na: str = MISSING) -> Table:
    """A table for a page: :func:`format_table` of ``df`` shown whole (:class:`Table`).

    End a cell with it (or ``display`` it). Put the columns a reader needs first; a
    table with more columns than a phone shows scrolls sideways with its row labels
    fixed.
    """
    return Table(format_table(df, sig, na))


def along_training(
    ax,
    value: xr.DataArray,
    lower: xr.DataArray | None = None,
    upper: xr.DataArray | None = None,
    *,
    hue: str,
    ylabel: str = "",
) -> None:
    """``value`` (dims ``step`` and ``hue``) against the training step, one line per
    ``hue`` value, with vertical intervals ``[lower, upper]``.

    The steps sit at evenly spaced positions labelled with the step (the snapshot ladder
    is roughly logarithmic and starts at 0, which a log axis cannot show). Models take
    their architecture's colour and seed's marker (:func:`model_style`), other categories
    :func:`category_style`.
    """
    check_dims(value, "value", ("step", hue))
    steps = [int(s) for s in value["step"].values]
    x = np.arange(len(steps), dtype=float)
    cats = list(value[hue].values)
    offsets = (np.arange(len(cats)) - (len(cats) - 1) / 2) * 0.06
    for k, cat in enumerate(cats):
        st = model_style(str(cat)) if hue == "model" else category_style(k)
        label = str(cat) if hue == "model" else f"{hue} {cat}"
        y = value.sel({hue: cat}).transpose("step").values
        ax.plot(x + offsets[k], y, color=st["color"], marker=st["marker"], ms=4, label=label)
        if lower is not None and upper is not None:
            lo = lower.sel({hue: cat}).transpose("step").values
            up = upper.sel({hue: cat}).transpose("step").values
            for xi, a, b in zip(x + offsets[k], lo, up, strict=True):
                ax.plot([xi, xi], [a, b], color=st["color"], lw=1.0, alpha=0.8)
    # many or long step labels in a narrow panel: upright they would run together
    labels = [str(s) for s in steps]
    crowded = sum(len(t) + 1 for t in labels) > 16
    ax.set_xticks(x, labels, rotation=90 if crowded else 0)
    ax.set_xlabel("training step")
    if ylabel:
        ax.set_ylabel(ylabel)
