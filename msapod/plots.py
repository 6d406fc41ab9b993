"""Figures and tables of the book, in one style (matplotlib only).

Every figure the pages share is drawn here, so that a page shows a 3-10-line call and
every figure of the book looks the same:

* one style (:data:`STYLE`, applied by :func:`style`): a figure is at most
  :data:`WIDTH` inches wide at :data:`DPI` dots per inch, i.e. at most about 780 pixels,
  the width at which the book displays it on a desktop (a narrower screen scales it down
  to its width); text is drawn at the size it is read at there (tick labels
  :data:`MIN_FONT_SIZE` points, the rest 10.5);
* each function returns its figure; in a notebook end the call with ``;`` (the figure is
  shown once, by the inline backend);
* colour-blind-safe colours (:data:`OKABE_ITO`), never a red/green pair: one colour
  per architecture (:data:`ARCH_COLOURS`: baseline, ega) and per zoo
  (:data:`ZOO_COLOURS`); a colour and a marker or hatch per verdict
  (:data:`VERDICT_STYLE`) and per category (:func:`category_style`); seeds of one
  architecture differ by line style and marker (:func:`model_style`);
* log axes ticked with plain numbers (:func:`log_ticks`); points with intervals on an
  axis that one degenerate interval cannot wreck (:func:`interval_limits`,
  :func:`draw_intervals`: a cut interval ends in an arrow);
* at most three panels per row (:func:`panels`); legends sit outside the data (below the
  panels or in an empty corner);
* axes labelled in the book's symbols (the notation page) with their units.

The figures: attention fields (:func:`fields`), per-layer curves (:func:`layer_profile`),
profiles along one dim (:func:`lines`), the scalogram :math:`E(a, b)`
(:func:`scalogram`), the scale spectrum :math:`E(a)` with its dominant scales
:math:`a^*_m` (:func:`scale_spectrum`), POD spectra :math:`\\lambda_k`
(:func:`pod_spectra`), mode lag profiles :math:`\\rho_k(\\tau)` (:func:`mode_lags`), POD
modes as images over query and lag (:func:`mode_maps`), forest plots with claim bands
(:func:`forest`, :func:`claim_band`), specification curves
(:func:`specification_curve`), the verdict shares of every claim (:func:`verdict_bars`)
and pruning curves (:func:`pruning_curve`); and, for tables and printed values,
:func:`table` (a table shown whole, numbers formatted), :func:`number`, :func:`below` (a
round-off check as a bound), :func:`enumeration`, :func:`span` (a range of values) and
:func:`sizes`.

matplotlib is imported inside the functions only: ``import msapod`` stays light, and the
module imports nothing from ``msapod.models`` or ``msapod.studies`` (no torch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
import xarray as xr

#: figure width in inches and resolution: WIDTH * DPI = 760 px, plus the tight-bbox padding
#: about 780 px, the width at which the book shows a figure unscaled
WIDTH = 7.3
DPI = 104
#: at most this many panels per row
MAX_COLS = 3

#: the Okabe-Ito colours, distinguishable with every common colour-vision deficiency
OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "black": "#000000",
}
#: colours of the two architectures
ARCH_COLOURS = {"baseline": OKABE_ITO["blue"], "ega": OKABE_ITO["vermillion"]}
#: colours of the model zoos (d = model width)
ZOO_COLOURS = {
    "d128": OKABE_ITO["bluish green"],
    "paper-size": OKABE_ITO["reddish purple"],
    "d64": OKABE_ITO["orange"],
}
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
#: the shading of the range a claim needs (forest plots), and the colour of its label
BAND_COLOUR = OKABE_ITO["yellow"]
BAND_ALPHA = 0.35
BAND_TEXT = "#5c5300"
#: the colours of categories without a colour of their own (strategies, variants), in
#: order; also the colour cycle of the book's style (:func:`style`, :func:`use_style`)
CATEGORY_COLOURS = tuple(
    OKABE_ITO[c]
    for c in (
        "blue",
        "orange",
        "sky blue",
        "vermillion",
        "reddish purple",
        "bluish green",
        "black",
        "yellow",
    )
)
#: and their markers, so that two categories never differ by colour alone
CATEGORY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: line styles and markers of the seeds 1, 2, 3, ... of one architecture
SEED_LINES = ("-", "--", "-.", ":")
SEED_MARKERS = ("o", "s", "^", "D")

#: the rcParams of every figure of the book: the text is drawn at the size it is shown at
#: (tick labels 10 pt = 14.4 px at :data:`DPI`, at least 80 % of the book's 16 px body
#: text in a content column of 720 px or more)
STYLE = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "font.size": 10.5,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10.5,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "legend.title_fontsize": 10,
    "figure.titlesize": 11,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "lines.linewidth": 1.5,
    "lines.markersize": 5,
    "image.cmap": "viridis",
}
#: the smallest text of a figure (tick labels), in points
MIN_FONT_SIZE = 10


def _rc() -> dict:
    """:data:`STYLE` and the colour cycle (:data:`CATEGORY_COLOURS`, so that ``"C0"``,
    ``"C1"``, ... of a page's own figure are colour-blind safe too)."""
    from cycler import cycler

    return {**STYLE, "axes.prop_cycle": cycler(color=list(CATEGORY_COLOURS))}


#: axis labels in the book's symbols, with units
LABELS = {
    "query": "query $i$ (characters)",
    "key": "key $j$ (characters)",
    "query_i": "query $i$ (characters)",
    "query_j": "query $j$ (characters)",
    "separation": "$|i - j|$ (characters)",
    "lag": r"lag $\tau$ (characters)",
    "b": "lag $b$ (characters)",
    "scale": "scale $a$ (characters)",
    "layer": "layer $l$",
    "mode": "mode $k$",
    "lambda": r"$\lambda_k$ (probability$^2$)",
    "rho": r"$\rho_k(\tau)$ (share of mode energy)",
    "E_ab": r"$\log_{10} E(a,b)/\max$",
    "E_a": r"$E(a)/\max$",
}


@contextmanager
def style():
    """The book's figure style as a matplotlib ``rc_context`` (:data:`STYLE`).

    Every function of this module draws inside it; a page may use it for its own figures::

        with msapod.plots.style():
            fig, ax = plt.subplots()
    """
    import matplotlib as mpl

    # only the style's keys are restored on exit: a backend that the first figure selects
    # inside the context (and the interactive mode it switches on) must stay selected
    rc = _rc()
    saved = {k: mpl.rcParams[k] for k in rc}
    mpl.rcParams.update(rc)
    try:
        yield
    finally:
        mpl.rcParams.update(saved)


def use_style() -> None:
    """Apply the book's figure style (:data:`STYLE` and its colour cycle) to matplotlib's
    global rcParams, for the figures a page draws itself (a page preamble calls it once)."""
    import matplotlib as mpl

    mpl.rcParams.update(_rc())


def architecture(model: str) -> str:
    """The architecture of a zoo model name: ``"ega-2"`` -> ``"ega"``,
    ``"baseline-d256-1"`` -> ``"baseline"``; a bare architecture is returned as is."""
    if not isinstance(model, str) or not model:
        raise ValueError(f"model: expected a model or architecture name, got {model!r}")
    return model.split("-", 1)[0]


def colour(name: str) -> str:
    """The colour of a model, an architecture or a zoo (one colour each, everywhere).

    Unknown names get dark grey."""
    if name in ZOO_COLOURS:
        return ZOO_COLOURS[name]
    return ARCH_COLOURS.get(architecture(name), "#4d4d4d")


def category_style(n: int) -> dict:
    """Colour and marker of the ``n``-th category (0, 1, ...) of a figure whose categories
    have no colour of their own (pruning strategies, variants): :data:`CATEGORY_COLOURS`
    and :data:`CATEGORY_MARKERS`, both cyclic."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"n: expected a category number >= 0, got {n!r}")
    return {
        "color": CATEGORY_COLOURS[n % len(CATEGORY_COLOURS)],
        "marker": CATEGORY_MARKERS[n % len(CATEGORY_MARKERS)],
    }


def model_style(model: str) -> dict:
    """Line keywords of a model: its architecture's colour, and a line style and marker
    per seed (the number after the last ``-``)."""
    seed = model.rsplit("-", 1)[-1]
    k = (int(seed) - 1) % len(SEED_LINES) if seed.isdigit() else 0
    return {"color": colour(model), "ls": SEED_LINES[k], "marker": SEED_MARKERS[k]}


def panels(n: int, *, height: float = 2.4, ncols: int | None = None, sharex=False, sharey=False):
    """A figure with ``n`` panels, at most :data:`MAX_COLS` per row, :data:`WIDTH` wide.

    Returns ``(fig, axes)`` with ``axes`` a flat list of the ``n`` axes (empty grid cells
    are removed). ``height`` is the height of one row in inches.
    """
    import matplotlib.pyplot as plt

    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: expected a number of panels >= 1, got {n!r}")
    ncols = min(n, ncols or (2 if n == 4 else MAX_COLS))
    if ncols > MAX_COLS:
        raise ValueError(f"ncols: at most {MAX_COLS} panels per row, got {ncols}")
    nrows = math.ceil(n / ncols)
    with style():
        fig, axes = plt.subplots(
            nrows,
            ncols,
            figsize=(WIDTH, height * nrows + 0.5),
            squeeze=False,
            sharex=sharex,
            sharey=sharey,
            layout="constrained",
        )
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.remove()
    return fig, flat[:n]


def _lag_axis(ax, max_lag: float) -> None:
    """A symmetric-log lag axis from 0 with plain tick labels (0, 1, 10, 100)."""
    ax.set_xscale("symlog", linthresh=1.0, linscale=0.5)
    ticks = [t for t in (0, 1, 10, 100, 1000) if t <= max_lag]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlim(0, max_lag)


def _plain_number(v: float, _pos=None) -> str:
    """A log-axis tick label as a plain number: 0.01, 0.3, 3, 30, 300 (a power of ten
    outside 0.0001 to 10^5 as :math:`10^k`)."""
    if v <= 0 or not np.isfinite(v):
        return ""
    if 1e-4 <= v < 1e5:
        return f"{v:g}"
    k = math.log10(v)
    return f"$10^{{{round(k)}}}$" if abs(k - round(k)) < 1e-9 else f"{v:.0e}"


def log_ticks(ax, axis: str = "both") -> None:
    """Tick labels of the log axes of ``ax`` as plain numbers (3, 10, 30, 100), never
    :math:`3 \\times 10^0`: within one decade at 1, 2 and 5 of each decade, up to four
    decades at 1 and 3, beyond at the decades only; minor ticks unlabelled.

    Call it after the axis limits are set (the functions of this module do); a linear
    axis is left as it is.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    if axis not in ("x", "y", "both"):
        raise ValueError(f"axis: expected 'x', 'y' or 'both', got {axis!r}")
    for name in ("x", "y") if axis == "both" else (axis,):
        a = ax.xaxis if name == "x" else ax.yaxis
        if a.get_scale() != "log":
            continue
        lo, hi = sorted(ax.get_xlim() if name == "x" else ax.get_ylim())
        decades = math.log10(hi / lo) if lo > 0 else 10.0
        subs = (1.0, 2.0, 5.0) if decades <= 1 else (1.0, 3.0) if decades <= 4 else (1.0,)
        a.set_major_locator(LogLocator(base=10, subs=subs))
        a.set_major_formatter(FuncFormatter(_plain_number))
        a.set_minor_formatter(NullFormatter())


def _outer(axes) -> None:
    """Axis labels on the outer panels only: y labels in the first column, x labels on
    the lowest panel of each column (a panel with no panel below keeps its x label)."""
    cols = {round(ax.get_position().x0, 3) for ax in axes}
    first = min(cols)
    for ax in axes:
        x0, y0 = round(ax.get_position().x0, 3), ax.get_position().y0
        if x0 != first:
            ax.set_ylabel("")
        if any(round(o.get_position().x0, 3) == x0 and o.get_position().y0 < y0 for o in axes):
            ax.set_xlabel("")


def _legend_below(fig, axes, ncol: int | None = None) -> None:
    """One legend for the figure, below the panels (never over data)."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    if handles:
        with style():
            fig.legend(
                handles, labels, loc="outside lower center", ncol=ncol or min(4, len(labels))
            )


def outer_labels(axes) -> None:
    """Keep axis labels on the outer panels of a grid only (see :func:`panels`): y labels
    in the first column, x labels on the lowest panel of each column."""
    _outer(axes)


def legend_below(fig, axes, ncol: int | None = None) -> None:
    """One legend for the whole figure, below the panels (never over data); entries are
    collected from ``axes`` without repeats (labels starting with ``_`` are skipped)."""
    _legend_below(fig, axes, ncol)


def _check_dims(da, name: str, dims: Sequence[str]) -> xr.DataArray:
    if not isinstance(da, xr.DataArray):
        raise TypeError(f"{name}: expected an xarray.DataArray, got {type(da).__name__}")
    missing = [d for d in dims if d not in da.dims]
    if missing:
        raise ValueError(f"{name}: expected dims including {tuple(dims)}, missing {missing}")
    return da


def _panel_values(da: xr.DataArray, dim: str | None) -> list:
    return [None] if dim is None else list(da[dim].values)


def _sel(da: xr.DataArray, dim: str | None, v) -> xr.DataArray:
    return da if dim is None else da.sel({dim: v})


def _title(dim: str | None, v, da: xr.DataArray | None = None) -> str:
    """A panel title: ``"layer 3"``; a stacked dim gives ``"layer 1, snapshot 0"``."""
    if dim is None:
        return ""
    if da is not None and isinstance(da.indexes.get(dim), pd.MultiIndex):
        names = da.indexes[dim].names
        return ", ".join(f"{n} {x}" for n, x in zip(names, v, strict=True))
    return f"{dim} {v}" if dim in ("layer", "head", "snapshot", "mode") else str(v)


# --------------------------------------------------------------------------------------
# fields and per-layer curves


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

    _check_dims(A, "A", tuple(dims) + ((by,) if by else ()))
    rows, cols = dims
    values = _panel_values(A, by)
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
            f = _sel(A, by, v).transpose(rows, cols)
            img = f if signed or linear is not None else f.where(f > 0)
            im = ax.imshow(img.values, extent=extent, interpolation="nearest", **kw)
            ax.set_title(_title(by, v, A))
            ax.set_xlabel(LABELS.get(cols, cols))
            ax.set_ylabel(LABELS.get(rows, rows))
        _outer(axes)
        fig.colorbar(im, ax=axes, shrink=0.8, label=label)
        if title:
            fig.suptitle(title)
    return fig


def layer_profile(
    value: xr.DataArray,
    err: xr.DataArray | None = None,
    *,
    ylabel: str,
    reference: float | None = None,
    reference_label: str = "reference",
    log: bool = False,
    title: str | None = None,
    ax=None,
):
    """One curve per model over the layers, coloured by architecture.

    Parameters
    ----------
    value : xarray.DataArray
        dims ``("model", "layer")`` (or ``("layer",)`` for one curve). Zoo models are
        coloured by architecture (:func:`model_style`); other names (heads, variants)
        get one categorical colour each.
    err : xarray.DataArray, optional
        same dims: half-length of an error bar (e.g. a standard deviation).
    ylabel : str
        the quantity in the book's symbols, with its unit.
    reference : float, optional
        a horizontal reference line (e.g. uniform causal attention).
    """
    import matplotlib.pyplot as plt

    _check_dims(value, "value", ("layer",))
    if "model" not in value.dims:
        value = value.expand_dims(model=[value.name or "value"])
        err = None if err is None else err.expand_dims(model=value["model"].values)
    with style():
        if ax is None:
            fig, ax = plt.subplots(figsize=(WIDTH, 3.0), layout="constrained")
        fig = ax.figure
        models = list(value["model"].values)
        for n, m in enumerate(models):
            x = value["layer"].values + 0.06 * (n - (len(models) - 1) / 2)
            y = value.sel(model=m).values
            e = None if err is None else err.sel(model=m).values
            if architecture(str(m)) in ARCH_COLOURS:
                st = model_style(str(m))
            else:  # not a zoo model (e.g. heads): one categorical colour each, no lines
                st = {**category_style(n), "ls": "none"}
            ax.errorbar(x, y, yerr=e, capsize=2 if e is not None else 0, label=str(m), **st)
        if reference is not None:
            ax.axhline(reference, color="0.5", ls=":", lw=1, label=reference_label)
        layers = value["layer"].values
        ax.set_xticks(layers if len(layers) <= 12 else layers[(layers % 5 == 0) | (layers == 1)])
        ax.set_xlabel(LABELS["layer"])
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
            log_ticks(ax, "y")
        if title:
            ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
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

    _check_dims(value, "value", (x, hue))
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


# --------------------------------------------------------------------------------------
# scalogram, scale spectrum, POD spectra, mode lags


def scalogram(energy: xr.DataArray, *, by: str = "layer", floor: float = -4.0, title=None):
    """The scalogram :math:`E(a, b)` on log axes, one panel per ``by`` (layers).

    Parameters
    ----------
    energy : xarray.DataArray
        dims ``("scale", "lag")`` and ``by``; the colour is
        :math:`\\log_{10} E(a,b)/\\max_{a,b} E` of each panel, from ``floor`` to 0.
    """
    _check_dims(energy, "energy", ("scale", "lag", by))
    values = _panel_values(energy, by)
    fig, axes = panels(len(values), height=2.2, sharey=True)
    with style():
        for ax, v in zip(axes, values, strict=True):
            e = _sel(energy, by, v).transpose("scale", "lag")
            with np.errstate(divide="ignore"):
                z = np.log10(e.values / np.nanmax(e.values))
            im = ax.pcolormesh(
                e["lag"].values,
                e["scale"].values,
                z,
                vmin=floor,
                vmax=0,
                cmap="magma",
                shading="auto",
            )
            ax.set(yscale="log", title=_title(by, v))
            log_ticks(ax, "y")
            _lag_axis(ax, float(e["lag"].values[-1]))
            ax.set_xlabel(LABELS["b"])
            ax.set_ylabel(LABELS["scale"])
        _outer(axes)
        fig.colorbar(im, ax=axes, shrink=0.8, label=LABELS["E_ab"])
        if title:
            fig.suptitle(title)
    return fig


def scale_spectrum(
    spectrum: xr.DataArray,
    dominant: xr.DataArray | None = None,
    *,
    by: str = "layer",
    band: tuple[float, float] | None = None,
    title: str | None = None,
):
    """The scale spectrum :math:`E(a)/\\max` per panel (``by``), one line per model, with
    the dominant scales :math:`a^*_m` marked.

    Parameters
    ----------
    spectrum : xarray.DataArray
        dims ``("scale", by)`` and optionally ``"model"``.
    dominant : xarray.DataArray, optional
        the dominant scales, dims ``(by, "peak")`` (and ``"model"`` if ``spectrum`` has
        it); NaN peaks are skipped.
    band : (float, float), optional
        a range of scales to shade (e.g. a claim's :math:`a \\le 7`).
    """
    _check_dims(spectrum, "spectrum", ("scale", by))
    if "model" not in spectrum.dims:
        spectrum = spectrum.expand_dims(model=["spectrum"])
        dominant = None if dominant is None else dominant.expand_dims(model=["spectrum"])
    values = _panel_values(spectrum, by)
    fig, axes = panels(len(values), height=2.2, sharey=True)
    with style():
        for ax, v in zip(axes, values, strict=True):
            if band is not None:
                ax.axvspan(*band, color=BAND_COLOUR, alpha=BAND_ALPHA, lw=0)
            for m in spectrum["model"].values:
                s = _sel(spectrum.sel(model=m), by, v)
                st = model_style(str(m))
                y = s.values / np.nanmax(s.values)
                ax.plot(s["scale"].values, y, color=st["color"], ls=st["ls"], label=str(m))
                if dominant is not None:
                    a = np.asarray(_sel(dominant.sel(model=m), by, v).values, dtype=float)
                    a = a[np.isfinite(a)]
                    ya = np.interp(np.log(a), np.log(s["scale"].values), y)
                    ax.plot(
                        a,
                        ya,
                        ls="none",
                        marker=st["marker"],
                        color=st["color"],
                        mfc="white",
                        label="_",
                    )
            ax.set(xscale="log", yscale="log", ylim=(1e-3, 1.6), title=_title(by, v))
            log_ticks(ax)
            ax.set_xlabel(LABELS["scale"])
            ax.set_ylabel(LABELS["E_a"])
        _outer(axes)
        _legend_below(fig, axes)
        if title:
            fig.suptitle(title)
    return fig


def pod_spectra(
    spectrum: xr.DataArray,
    *,
    by: str = "layer",
    mode_dim: str = "rank",
    fit: tuple[int, int] | None = None,
    title: str | None = None,
):
    """POD eigenvalues :math:`\\lambda_k` against :math:`k` on log-log axes, one panel
    per ``by``, one line per model.

    Parameters
    ----------
    spectrum : xarray.DataArray
        dims ``(mode_dim, by)`` and optionally ``"model"``; zero and negative eigenvalues
        are not drawn.
    fit : (int, int), optional
        the range of :math:`k` of the power-law fit, shaded.
    """
    _check_dims(spectrum, "spectrum", (mode_dim, by))
    if "model" not in spectrum.dims:
        spectrum = spectrum.expand_dims(model=["spectrum"])
    values = _panel_values(spectrum, by)
    fig, axes = panels(len(values), height=2.2, sharey=True)
    with style():
        for ax, v in zip(axes, values, strict=True):
            if fit is not None:
                ax.axvspan(*fit, color="0.92", lw=0, zorder=0)
            for m in spectrum["model"].values:
                s = _sel(spectrum.sel(model=m), by, v)
                y = s.values.astype(float)
                ok = y > 0
                st = model_style(str(m))
                ax.plot(s[mode_dim].values[ok], y[ok], color=st["color"], ls=st["ls"], label=str(m))
            ax.set(xscale="log", yscale="log", title=_title(by, v))
            log_ticks(ax)
            ax.set_xlabel(LABELS["mode"])
            ax.set_ylabel(LABELS["lambda"])
        _outer(axes)
        _legend_below(fig, axes)
        if title:
            fig.suptitle(title)
    return fig


def mode_lags(
    rho: xr.DataArray,
    *,
    by: str | None = "layer",
    band: tuple[float, float] | None = None,
    band_label: str = "claimed range",
    max_lag: float | None = None,
    title: str | None = None,
):
    """Lag energy :math:`\\rho_k(\\tau)` of the first POD modes, one line per mode.

    Parameters
    ----------
    rho : xarray.DataArray
        dims ``("mode", "lag")`` and ``by`` (if not None).
    band : (float, float), optional
        a lag range to shade (e.g. the paper's lags of a layer).
    max_lag : float, optional
        right end of the lag axis (default: the last lag).
    """
    _check_dims(rho, "rho", ("mode", "lag") + ((by,) if by else ()))
    values = _panel_values(rho, by)
    fig, axes = panels(len(values), height=2.2, sharey=True)
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"]
    n_modes = rho.sizes["mode"]
    with style():
        for ax, v in zip(axes, values, strict=True):
            if band is not None:
                ax.axvspan(*band, color="0.88", lw=0, label=band_label)
            r = _sel(rho, by, v)
            for n, k in enumerate(r["mode"].values):
                ax.plot(
                    r["lag"].values,
                    r.sel(mode=k).values,
                    label=f"$k = {k}$",
                    color=cmap(n / max(n_modes - 1, 1) * 0.85),
                )
            ax.set_title(_title(by, v))
            _lag_axis(ax, max_lag or float(r["lag"].values[-1]))
            ax.set_xlabel(LABELS["lag"])
            ax.set_ylabel(LABELS["rho"])
        _outer(axes)
        _legend_below(fig, axes, ncol=min(6, n_modes + (band is not None)))
        if title:
            fig.suptitle(title)
    return fig


def lag_extent(energy: xr.DataArray, share: float = 0.99, *, min_lag: int = 8) -> int:
    """The number of lags, from lag 0, that hold ``share`` of ``energy`` (summed over
    every other dim), and at least ``min_lag``: the lags a figure needs to show where a
    lag profile or a mode sits (:func:`mode_maps`).

    ``energy`` has a ``"lag"`` dim with lags 0, 1, 2, ...; NaN counts as 0.
    """
    _check_dims(energy, "energy", ("lag",))
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

    _check_dims(modes, "modes", ("query", "lag", by))
    modes = modes.fillna(0.0).transpose(by, "query", "lag")
    n_lag = lag_extent(modes**2, share)
    values = _panel_values(modes, by)
    fig, axes = panels(len(values), height=2.0, sharex=True, sharey=True)
    with style():
        for ax, v in zip(axes, values, strict=True):
            img = _sel(modes, by, v).isel(lag=slice(0, n_lag))
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
            ax.set_title(_title(by, v, modes))
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlabel(LABELS["lag"])
            ax.set_ylabel(LABELS["query"])
        _outer(axes)
        fig.colorbar(im, ax=axes, shrink=0.8, label=label, ticks=[-1, -0.5, 0, 0.5, 1])
        if title:
            fig.suptitle(title)
    return fig


# --------------------------------------------------------------------------------------
# forest plots, specification curves, pruning curves


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

    _check_dims(increase, "increase", (strategy_dim, budget_dim))
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
    architecture,
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
    architecture, :data:`ARCH_COLOURS`; with its interval ``[lower, upper]`` where given)
    and, at the right, the zoo-level ``estimate`` ``(value, lower, upper)`` with the side
    of the ``boundary`` ``(low, high)`` where the test holds shaded (:func:`claim_band`),
    for ``direction`` ``"greater"`` (above ``low``), ``"less"`` (below ``high``) or
    ``"within"`` (between them). Without ``estimate`` (a contrast of the architectures,
    whose estimate is not on the models' scale) each architecture's mean is drawn as a
    line of its colour instead, and no boundary.

    Returns the figure.
    """
    import matplotlib.pyplot as plt

    v = np.asarray(values, float)
    arch = [str(a) for a in architecture]
    if len(arch) != len(v):
        raise ValueError(f"architecture: expected {len(v)} labels, got {len(arch)}")
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


# --------------------------------------------------------------------------------------
# tables


#: the text of a missing value in a table or a sentence
MISSING = "—"


def number(v, sig: int = 3, *, na: str = MISSING, whole: bool | None = None) -> str:
    """One number as a reader reads it: ``sig`` significant digits, an exponent only
    outside :math:`10^{-4}` to :math:`10^5` (``0.000879``, ``1.2e-05``), integers as
    integers.

    Parameters
    ----------
    v : int, float, bool, numpy scalar or None
        the value; None and NaN give ``na``, infinities ``∞``/``−∞``, booleans
        ``yes``/``no``.
    sig : int
        significant digits, 1 to 6.
    na : str
        the text of a missing value.
    whole : bool, optional
        write ``v`` as an integer (rounded); default: when ``v`` is an integer type.
    """
    if isinstance(sig, bool) or not isinstance(sig, int) or not 1 <= sig <= 6:
        raise ValueError(f"sig: expected an integer from 1 to 6, got {sig!r}")
    if v is None or v is pd.NA:
        return na
    if isinstance(v, bool | np.bool_):
        return "yes" if v else "no"
    if not isinstance(v, int | float | np.integer | np.floating):
        raise TypeError(f"v: expected a number, got {type(v).__name__} {v!r}")
    if whole is None:
        whole = isinstance(v, int | np.integer)
    v = float(v)
    if np.isnan(v):
        return na
    if np.isinf(v):
        return "∞" if v > 0 else "−∞"
    if whole and abs(v) < 1e15:
        return f"{int(round(v))}"
    if v != 0 and not 1e-4 <= abs(v) < 1e5:
        return f"{v:.{sig - 1}e}"
    digits = max(sig - 1 - math.floor(math.log10(abs(v))), 0) if v else sig - 1
    out = f"{v:.{digits}f}"
    return out.lstrip("-") if float(out) == 0 else out  # a value that prints as 0 has no sign


def below(x: float) -> str:
    """A round-off measurement as the bound it shows: ``3.2e-15`` -> ``"below 1e-14"``
    (the next power of ten above ``x``), 0 -> ``"exactly 0"``.

    For a printed check of machine precision, whose digits mean nothing beyond their
    order of magnitude.
    """
    x = float(x)
    if not np.isfinite(x) or x < 0:
        raise ValueError(f"x: expected a finite non-negative difference, got {x!r}")
    if x == 0:
        return "exactly 0"
    return f"below 1e{math.floor(math.log10(x)) + 1}"


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


__all__ = [
    "ARCH_COLOURS",
    "BAND_ALPHA",
    "BAND_COLOUR",
    "BAND_TEXT",
    "CATEGORY_COLOURS",
    "CATEGORY_MARKERS",
    "DPI",
    "LABELS",
    "MAX_COLS",
    "MIN_FONT_SIZE",
    "MISSING",
    "OKABE_ITO",
    "REACH",
    "STYLE",
    "VERDICT_COLOURS",
    "VERDICT_STYLE",
    "WIDTH",
    "ZOO_COLOURS",
    "Table",
    "architecture",
    "below",
    "category_style",
    "claim_band",
    "colour",
    "draw_intervals",
    "enumeration",
    "fields",
    "format_table",
    "replicates",
    "interval_limits",
    "lag_extent",
    "layer_profile",
    "legend_below",
    "lines",
    "log_ticks",
    "mode_lags",
    "mode_maps",
    "model_style",
    "number",
    "outer_labels",
    "panels",
    "pod_spectra",
    "pruning_curve",
    "scale_spectrum",
    "scalogram",
    "sizes",
    "specification_curve",
    "style",
    "table",
    "test_distances",
    "use_style",
    "verdict_bars",
    "verdict_handles",
]


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
    _check_dims(value, "value", ("step", hue))
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
