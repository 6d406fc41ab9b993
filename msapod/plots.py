"""The figures of msapod's own outputs, in one style (matplotlib only).

What ``msapod analyze``'s report draws, and the style every figure of the project (the
book's included) shares: :data:`STYLE` (applied by :func:`style`), colour-blind-safe
colours (:data:`OKABE_ITO`; :func:`colour`, :func:`category_style`, :func:`model_style`),
log axes ticked with plain numbers (:func:`log_ticks`), at most :data:`MAX_COLS` panels
per row (:func:`panels`), legends below the panels (:func:`legend_below`) and axes
labelled in the book's symbols (:data:`LABELS`). Each function returns its figure.

The figures: per-layer curves (:func:`layer_profile`), the scalogram :math:`E(a, b)`
(:func:`scalogram`), the scale spectrum :math:`E(a)` (:func:`scale_spectrum`), mode lag
profiles :math:`\\rho_k(\\tau)` (:func:`mode_lags`); and the one way a number is printed
(:func:`number`, :func:`below`). The book's own figures are its kit's (``msapod_book.plots``).

matplotlib is imported inside the functions only, and nothing from ``msapod.models`` or
``msapod.studies`` (no torch).
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
    "black": "#000000",
    "yellow": "#F0E442",
}
#: colours of the two architectures
ARCH_COLOURS = {"baseline": OKABE_ITO["blue"], "ega": OKABE_ITO["vermillion"]}
#: colours of the model zoos (d = model width)
ZOO_COLOURS = {
    "d128": OKABE_ITO["bluish green"],
    "paper-size": OKABE_ITO["reddish purple"],
    "d64": OKABE_ITO["orange"],
}
#: the shading of the range a claim needs (forest plots), and the colour of its label
BAND_COLOUR = OKABE_ITO["yellow"]
BAND_ALPHA = 0.35
#: the colours of categories without a colour of their own (strategies, variants), in
#: order; also the colour cycle of the book's style (:func:`style`, :func:`use_style`)
CATEGORY_COLOURS = tuple(OKABE_ITO.values())
#: and their markers, so that two categories never differ by colour alone
CATEGORY_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
#: line styles and markers of the seeds 1, 2, 3, ... of one architecture
SEED_LINES = ("-", "--", "-.", ":")
SEED_MARKERS = ("o", "s", "^", "D")

#: the smallest text of a figure (tick labels and legends), in points
MIN_FONT_SIZE = 10
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
    "xtick.labelsize": MIN_FONT_SIZE,
    "ytick.labelsize": MIN_FONT_SIZE,
    "legend.fontsize": MIN_FONT_SIZE,
    "legend.title_fontsize": MIN_FONT_SIZE,
    "figure.titlesize": 11,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "lines.linewidth": 1.5,
    "lines.markersize": 5,
    "image.cmap": "viridis",
}


def _rc() -> dict:
    """:data:`STYLE` and the colour cycle :data:`CATEGORY_COLOURS` (``"C0"``, ``"C1"``, ...)."""
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
    """The colour of a model, an architecture or a zoo; dark grey for unknown names."""
    if name in ZOO_COLOURS:
        return ZOO_COLOURS[name]
    return ARCH_COLOURS.get(architecture(name), "#4d4d4d")


def category_style(n: int) -> dict:
    """Colour and marker of the ``n``-th category (0, 1, ...): :data:`CATEGORY_COLOURS`
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
    """``(fig, axes)``: ``n`` panels, at most :data:`MAX_COLS` per row, :data:`WIDTH` wide,
    ``axes`` a flat list; ``height`` is the height of one row in inches."""
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
    """A log-axis tick label as a plain number (0.01, 3, 300; :math:`10^k` beyond 1e-4..1e5)."""
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


def outer_labels(axes) -> None:
    """Keep axis labels on the outer panels of a grid only: y labels in the first column,
    x labels on the lowest panel of each column."""
    cols = {round(ax.get_position().x0, 3) for ax in axes}
    first = min(cols)
    for ax in axes:
        x0, y0 = round(ax.get_position().x0, 3), ax.get_position().y0
        if x0 != first:
            ax.set_ylabel("")
        if any(round(o.get_position().x0, 3) == x0 and o.get_position().y0 < y0 for o in axes):
            ax.set_xlabel("")


def legend_below(fig, axes, ncol: int | None = None) -> None:
    """One legend for the whole figure, below the panels (never over data); entries are
    collected from ``axes`` without repeats (labels starting with ``_`` are skipped)."""
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


def check_dims(da, name: str, dims: Sequence[str]) -> xr.DataArray:
    """``da`` if it is a DataArray with ``dims`` among its dims, else an error naming ``name``."""
    if not isinstance(da, xr.DataArray):
        raise TypeError(f"{name}: expected an xarray.DataArray, got {type(da).__name__}")
    missing = [d for d in dims if d not in da.dims]
    if missing:
        raise ValueError(f"{name}: expected dims including {tuple(dims)}, missing {missing}")
    return da


def panel_values(da: xr.DataArray, dim: str | None) -> list:
    """The values of ``dim`` that get a panel each (one panel without a dim)."""
    return [None] if dim is None else list(da[dim].values)


def panel_select(da: xr.DataArray, dim: str | None, v) -> xr.DataArray:
    """The part of ``da`` at ``dim = v`` (all of it without a dim)."""
    return da if dim is None else da.sel({dim: v})


def panel_title(dim: str | None, v, da: xr.DataArray | None = None) -> str:
    """A panel title: ``"layer 3"``; a stacked dim gives ``"layer 1, snapshot 0"``."""
    if dim is None:
        return ""
    if da is not None and isinstance(da.indexes.get(dim), pd.MultiIndex):
        names = da.indexes[dim].names
        return ", ".join(f"{n} {x}" for n, x in zip(names, v, strict=True))
    return f"{dim} {v}" if dim in ("layer", "head", "snapshot", "mode") else str(v)


# ---------------------------------------------------------------------- per-layer curves


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

    check_dims(value, "value", ("layer",))
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


# ------------------------------------------------- scalogram, scale spectrum, mode lags


def scalogram(energy: xr.DataArray, *, by: str = "layer", floor: float = -4.0, title=None):
    """The scalogram :math:`E(a, b)` on log axes, one panel per ``by`` (layers).

    Parameters
    ----------
    energy : xarray.DataArray
        dims ``("scale", "lag")`` and ``by``; the colour is
        :math:`\\log_{10} E(a,b)/\\max_{a,b} E` of each panel, from ``floor`` to 0.
    """
    check_dims(energy, "energy", ("scale", "lag", by))
    values = panel_values(energy, by)
    fig, axes = panels(len(values), height=2.2, sharey=True)
    with style():
        for ax, v in zip(axes, values, strict=True):
            e = panel_select(energy, by, v).transpose("scale", "lag")
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
            ax.set(yscale="log", title=panel_title(by, v))
            log_ticks(ax, "y")
            _lag_axis(ax, float(e["lag"].values[-1]))
            ax.set_xlabel(LABELS["b"])
            ax.set_ylabel(LABELS["scale"])
        outer_labels(axes)
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
    check_dims(spectrum, "spectrum", ("scale", by))
    if "model" not in spectrum.dims:
        spectrum = spectrum.expand_dims(model=["spectrum"])
        dominant = None if dominant is None else dominant.expand_dims(model=["spectrum"])
    values = panel_values(spectrum, by)
    fig, axes = panels(len(values), height=2.2, sharey=True)
    with style():
        for ax, v in zip(axes, values, strict=True):
            if band is not None:
                ax.axvspan(*band, color=BAND_COLOUR, alpha=BAND_ALPHA, lw=0)
            for m in spectrum["model"].values:
                s = panel_select(spectrum.sel(model=m), by, v)
                st = model_style(str(m))
                y = s.values / np.nanmax(s.values)
                ax.plot(s["scale"].values, y, color=st["color"], ls=st["ls"], label=str(m))
                if dominant is not None:
                    a = np.asarray(panel_select(dominant.sel(model=m), by, v).values, dtype=float)
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
            ax.set(xscale="log", yscale="log", ylim=(1e-3, 1.6), title=panel_title(by, v))
            log_ticks(ax)
            ax.set_xlabel(LABELS["scale"])
            ax.set_ylabel(LABELS["E_a"])
        outer_labels(axes)
        legend_below(fig, axes)
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
    check_dims(rho, "rho", ("mode", "lag") + ((by,) if by else ()))
    values = panel_values(rho, by)
    fig, axes = panels(len(values), height=2.2, sharey=True)
    import matplotlib as mpl

    cmap = mpl.colormaps["viridis"]
    n_modes = rho.sizes["mode"]
    with style():
        for ax, v in zip(axes, values, strict=True):
            if band is not None:
                ax.axvspan(*band, color="0.88", lw=0, label=band_label)
            r = panel_select(rho, by, v)
            for n, k in enumerate(r["mode"].values):
                ax.plot(
                    r["lag"].values,
                    r.sel(mode=k).values,
                    label=f"$k = {k}$",
                    color=cmap(n / max(n_modes - 1, 1) * 0.85),
                )
            ax.set_title(panel_title(by, v))
            _lag_axis(ax, max_lag or float(r["lag"].values[-1]))
            ax.set_xlabel(LABELS["lag"])
            ax.set_ylabel(LABELS["rho"])
        outer_labels(axes)
        legend_below(fig, axes, ncol=min(6, n_modes + (band is not None)))
        if title:
            fig.suptitle(title)
    return fig


# ------------------------------------------------------------------------------- numbers


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
    (the next power of ten above ``x``), 0 -> ``"exactly 0"``."""
    x = float(x)
    if not np.isfinite(x) or x < 0:
        raise ValueError(f"x: expected a finite non-negative difference, got {x!r}")
    if x == 0:
        return "exactly 0"
    return f"below 1e{math.floor(math.log10(x)) + 1}"


__all__ = [
    "ARCH_COLOURS",
    "BAND_ALPHA",
    "BAND_COLOUR",
    "CATEGORY_COLOURS",
    "CATEGORY_MARKERS",
    "DPI",
    "LABELS",
    "MAX_COLS",
    "MIN_FONT_SIZE",
    "MISSING",
    "OKABE_ITO",
    "SEED_LINES",
    "STYLE",
    "WIDTH",
    "ZOO_COLOURS",
    "architecture",
    "below",
    "category_style",
    "check_dims",
    "colour",
    "layer_profile",
    "legend_below",
    "log_ticks",
    "mode_lags",
    "model_style",
    "number",
    "outer_labels",
    "panel_select",
    "panel_title",
    "panel_values",
    "panels",
    "scale_spectrum",
    "scalogram",
    "style",
    "use_style",
]
