"""The report of ``msapod analyze``: one self-contained HTML page of an analysis.

:func:`write_report` writes the page; the figure functions (``fig_*``) draw its figures
in a notebook. The module imports matplotlib only when a figure is drawn.
"""

from __future__ import annotations

import base64
import io
import json
import os
from collections.abc import Sequence
from html import escape
from pathlib import Path

import numpy as np
import xarray as xr

from .. import plots
from .._io import atomic_path
from ..pipeline import FIELD_SYMBOLS
from .verdict.render import MEANING, WORDS

__all__ = [
    "fig_mode_lags",
    "fig_pod",
    "fig_scale_spectrum",
    "fig_scalogram",
    "fig_trends",
    "write_report",
]


def _png(fig, alt: str) -> str:
    """A matplotlib figure as a base64 PNG ``<img>`` with the text ``alt`` (closed afterwards);
    one with a layout engine saved as laid out (a tight crop would draw it twice)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    tight = None if fig.get_layout_engine() is not None else "tight"
    fig.savefig(buf, format="png", bbox_inches=tight)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{data}">'


def _head_mean(da: xr.DataArray) -> xr.DataArray:
    """Heads kept: the figures show the mean over heads of each per-head quantity."""
    return da.mean("head") if "head" in da.dims else da


def _in_unit(fig, ds: xr.Dataset, model: str):
    """Axis labels in ``model``'s lag unit (the shared figures say characters)."""
    unit = str(ds["lag_unit"].sel(model=model).values)
    if unit != "character":
        for ax in fig.axes:
            for get, put in ((ax.get_xlabel, ax.set_xlabel), (ax.get_ylabel, ax.set_ylabel)):
                label = get()
                if "characters" in label:
                    put(label.replace("characters", f"{unit}s"))
    return fig


def fig_trends(ds: xr.Dataset, name: str, ylabel: str):
    """Layer trend of ``name`` (plain window, H* at eps 0.10) of every model with its
    95 % jackknife interval (error bar: half the interval)."""
    value = ds[name]
    lower, upper = ds[f"{name}_lower"], ds[f"{name}_upper"]
    if "window" in value.dims:
        value, lower, upper = (v.sel(window="plain") for v in (value, lower, upper))
    if "eps" in value.dims:
        value, lower, upper = (v.sel(eps=0.1, method="nearest") for v in (value, lower, upper))
    value, half = _head_mean(value), _head_mean((upper - lower) / 2)
    fig = plots.layer_profile(value.drop_vars("eps", errors="ignore"), half, ylabel=ylabel)
    return _in_unit(fig, ds, str(ds["model"].values[0]))


def fig_scalogram(ds: xr.Dataset, model: str):
    """The scalogram E(a, b) of every layer of ``model`` (:func:`msapod.plots.scalogram`)."""
    E = _head_mean(ds["energy"].sel(model=model)).dropna("lag", how="all")
    E = E.dropna("scale", how="all")
    fig = plots.scalogram(E, by="layer")
    lags = E["lag"].values
    if lags.min() < 0:  # bidirectional: show the negative lags too
        for ax in fig.axes[:-1]:
            ax.set_xlim(lags.min(), lags.max())
    return _in_unit(fig, ds, model)


def fig_scale_spectrum(ds: xr.Dataset, model: str):
    """The scale spectrum E(a) per layer with the dominant scales a*_m."""
    one = ds.sel(model=[model])
    spec = _head_mean(one["scale_spectrum"]).dropna("scale", how="all")
    dom = _head_mean(one["dominant_scale"])
    return _in_unit(plots.scale_spectrum(spec, dom, by="layer"), ds, model)


def fig_pod(ds: xr.Dataset, model: str):
    """POD spectra lambda_k per layer, plain and per scale window, with T_spec and
    H*(0.10) of each window in the legend of its panel."""
    import matplotlib as mpl

    one = ds.sel(model=model)
    layers = list(one["layer"].values)
    fig, axes = plots.panels(len(layers), height=2.3, sharey=True)
    cmap = mpl.colormaps["viridis"]
    windows = list(one["window"].values)
    with plots.style():
        for ax, layer in zip(axes, layers, strict=True):
            sel = one.sel(layer=layer)
            for j, w in enumerate(windows):
                lam = _head_mean(sel["spectrum"].sel(window=w))
                if not np.isfinite(lam.values).any():
                    continue
                lam = lam.where(lam > 1e-10 * lam.sum()).dropna("rank")  # the null ranks
                T = float(_head_mean(sel["T_spec"].sel(window=w)))
                H = float(_head_mean(sel["H_star"].sel(window=w).sel(eps=0.1, method="nearest")))
                ax.plot(
                    lam["rank"], lam, color=cmap(0.85 * j / max(len(windows) - 1, 1)),
                    label=f"{w}: {T:.2f}, {H:.0f}",
                )  # fmt: skip
            ax.set(xscale="log", yscale="log", title=f"layer {layer}")
            plots.log_ticks(ax)
            ax.set_xlabel(plots.LABELS["mode"])
            ax.set_ylabel(plots.LABELS["lambda"])
            # inside the panel, outside the layout (so the panels keep their size)
            legend = ax.legend(loc="lower left", title="$T_{spec}$, $H^*$", borderaxespad=0.2)
            legend.set_in_layout(False)
        plots.outer_labels(axes)
    return fig


def fig_mode_lags(ds: xr.Dataset, model: str):
    """Lag energy rho_k(tau) of the leading plain-window POD modes per layer."""
    rho = _head_mean(ds["mode_lag_energy"].sel(model=model, window="plain"))
    rho = rho.dropna("lag", how="all")
    fig = plots.mode_lags(rho.dropna("mode", how="all"), by="layer", max_lag=_lag_extent(rho))
    return _in_unit(fig, ds, model)


def _lag_extent(rho: xr.DataArray, share: float = 0.99) -> float:
    """Smallest lag holding ``share`` of the profiles' energy (times 1.5, at least 16)."""
    p = rho.fillna(0.0).sum([d for d in rho.dims if d != "lag"])
    lag = np.abs(p["lag"].values)
    order = np.argsort(lag, kind="stable")
    c = np.cumsum(p.values[order])
    if c[-1] <= 0:
        return float(lag.max())
    at = lag[order][min(np.searchsorted(c, share * c[-1]), len(c) - 1)]
    return float(min(lag.max(), max(16.0, 1.5 * at)))


_CSS = """
body { font-family: sans-serif; max-width: 1250px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; }
th { background: #eee; }
img { max-width: 100%; }
.note { background: #f4f4e8; border-left: 4px solid #aa8; padding: 0.4em 0.8em; }
code { background: #f2f2f2; padding: 0 0.2em; }
"""


def _table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(str(h))}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>")
    return "\n".join(out) + "</table>"


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if not np.isfinite(x) else f"{x:.{digits}f}"


def _interval(s: xr.Dataset, name: str, digits: int = 2, bounds: int = 2) -> str:
    """``value [lower, upper]`` of ``name`` in ``s``."""
    value, lower, upper = (float(s[name + end]) for end in ("", "_lower", "_upper"))
    return f"{_fmt(value, digits)} [{_fmt(lower, bounds)}, {_fmt(upper, bounds)}]"


def _summary_rows(ds: xr.Dataset, model) -> list[list[str]]:
    """Per layer (and head): the scale centroid, the dominant scales (those at the grid's
    edge marked as bounds), T_spec and H*(0.10) of the plain window with their intervals."""
    rows = []
    one = ds.sel(model=model)
    for h in list(ds["head"].values) if "head" in ds.dims else [None]:
        sel = one if h is None else one.sel(head=h)
        for layer in ds["layer"].values:
            s = sel.sel(layer=layer)
            p = s.sel(window="plain")
            first = float(s["scale"].min())
            peaks = [
                (f"{'≤' if a <= first else '≥'} {a:.1f} (grid edge)" if edge else f"{a:.1f}")
                for a, edge in zip(
                    np.atleast_1d(s["dominant_scale"].values),
                    np.atleast_1d(s["dominant_edge"].values),
                    strict=True,
                )
                if np.isfinite(a)
            ]
            rows.append(
                [str(layer)]
                + ([] if h is None else [str(h)])
                + [
                    _interval(s, "scale_centroid"),
                    ", ".join(peaks) or "-",
                    _interval(p, "T_spec"),
                    _interval(p.sel(eps=0.1, method="nearest"), "H_star", 0, 1),
                ]
            )
    return rows


#: The cells of the report's claims table, with their headers.
REPORT_COLUMNS = {
    "claim": "claim",
    "paper": "the paper says",
    "verdict": "verdict",
    "measured": "measured (90 % intervals)",
    "reason": "why not testable",
}


def _claims_html(ds: xr.Dataset) -> str:
    """The claims section: what these models decide, by the book's tests (each row's
    words by :mod:`msapod.studies.verdict.render` through ``check_claims``)."""
    units = {str(u) for u in ds["lag_unit"].values}
    unit = str(ds["claim_unit"].values[0]) if "claim_unit" in ds else "seeds"
    replicates = (
        "the models are the replicates (an interval over them)"
        if unit == "seeds"
        else "with fewer than two models of each architecture there are no replicates: the "
        "intervals hold the snippet uncertainty of these models only"
    )
    legend = "; ".join(f"<b>{escape(WORDS[c])}</b>: {escape(m)}" for c, m in MEANING.items())
    out = [
        "<p>Decided on "
        f"{escape(str(ds.attrs.get('claims_models', '')))} by the book's tests (the default "
        "reading of <code>msapod.studies.verdict</code>, the same code as the book's "
        f"scorecard, through <code>msapod.studies.check_claims</code>); {escape(replicates)}. "
        f"Verdicts: {legend}.</p>"
    ]
    if units != {"character"}:
        out.append(
            '<p class="note">Lags and scales of token models are in tokens; the claims\' '
            "thresholds (e.g. C1's a &le; 7) are stated for the paper's character-level "
            "models.</p>"
        )
    rows = [
        [str(c)] + [str(ds[f"claim_{k}"].sel(claim=c).values) for k in list(REPORT_COLUMNS)[1:]]
        for c in ds["claim"].values
    ]
    out.append(_table(list(REPORT_COLUMNS.values()), rows))
    return "\n".join(out)


def _report_notes(ds: xr.Dataset, models: list[str], notes: Sequence[str]) -> list[str]:
    """The report's notes: the caller's, then one per bidirectional model."""
    body = [f'<p class="note">{escape(line)}</p>' for line in notes]
    for m in models:
        if not int(ds["causal"].sel(model=m)):
            body.append(
                f'<p class="note">{escape(m)}: bidirectional attention; lags run over both '
                "signs (negative: keys after the query).</p>"
            )
    return body


def _report_provenance(ds: xr.Dataset, models: list[str]) -> list[str]:
    """The report's provenance and parameter tables."""
    body = ["<h2>Provenance and parameters</h2>"]
    header = ["model", "architecture", "attention", "source", "kind", "source sha256"]
    header += ["text", "text sha256", "lag unit"]
    rows = []
    for m in models:
        at = {k: str(v.values) for k, v in ds.sel(model=m).coords.items()}
        rows.append(
            [m, at["model_type"], _attention(ds, m), at["source"], at["source_kind"]]
            + [at["source_sha256"][:16] + "...", at["text_source"]]
            + [at["text_sha256"][:16] + "...", at["lag_unit"]]
        )
    body.append(_table(header, rows))
    given = json.loads(ds.attrs["params"])
    params = [
        [k.removeprefix("param_"), _param_text(v, given.get(k.removeprefix("param_"), v))]
        for k, v in ds.attrs.items()
        if k.startswith("param_")
    ]
    params = [[k, f"{v} ({_FIELD_WORDS[v.split()[0]]})" if k == "field" else v] for k, v in params]
    params += [
        [k, str(ds.attrs[k])] for k in ("n_snapshots", "length", "seed", "average_heads", "tau_max")
    ]
    body.append(
        "<p>The value each option took (where it was left to the default, the value the "
        "default came to).</p>"
    )
    body.append(_table(["parameter", "value"], params))
    return body


#: The report's words for each scalogram field of :func:`msapod.analyze`.
_FIELD_WORDS = {"total": "the attention A", "fluctuation": "the fluctuation u = A - mean"}


def _field_symbol(ds: xr.Dataset) -> str:
    """The paper's symbol of the field the scalogram was taken of: ``u`` or ``A``."""
    return FIELD_SYMBOLS[ds.attrs["scalogram_field"]]


def _attention(ds: xr.Dataset, model: str) -> str:
    """``"standard, causal"``, ``"energy-gated, causal"``, ``"standard, bidirectional"``."""
    kind = (
        "energy-gated" if str(ds["architecture"].sel(model=model).values) == "ega" else "standard"
    )
    return f"{kind}, {'causal' if int(ds['causal'].sel(model=model)) else 'bidirectional'}"


def _param_text(value, given) -> str:
    """A parameter's value as the report shows it, ``"(default)"`` added where not given."""
    text = f"{value:g}" if isinstance(value, float | np.floating) else str(value)
    return f"{text} (default)" if given is None else text


def _report_trends(ds: xr.Dataset, models: list[str]) -> list[str]:
    """The report's layer-trend figures and per-model tables."""
    body = ["<h2>Layer trends</h2>"]
    if "head" in ds.dims:
        body.append(
            "<p>Heads kept: the figures show the mean over heads of each per-head number; "
            "the tables list every head.</p>"
        )
    names = ", ".join(models)
    for name, ylabel, what in (
        (
            "scale_centroid",
            f"scale centroid of ${_field_symbol(ds)}$ (characters)",
            f"the scale centroid of the scalogram of {_field_symbol(ds)}",
        ),
        ("T_spec", "$T_{spec}$ (plain window)", "T_spec of the plain POD"),
        ("H_star", "$H^*(0.10)$ (plain window)", "H*(0.10) of the plain POD"),
    ):
        alt = f"Per layer, {what} of {names}, a marker per layer with its 95 % interval."
        body.append(_png(fig_trends(ds, name, ylabel), alt))
    header = ["layer", *(["head"] if "head" in ds.dims else []), "scale centroid"]
    header += ["dominant scales", "T_spec (plain)", "H*(0.10) (plain)"]
    for m in models:
        body.append(f"<h3>{escape(m)}: numbers per layer (95 % intervals)</h3>")
        body.append(_table(header, _summary_rows(ds, m)))
    return body


def _report_layers(ds: xr.Dataset, models: list[str]) -> list[str]:
    """The report's per-model, per-layer figures."""
    body = []
    for m in models:
        body.append(f"<h2>{escape(m)}: layer by layer</h2>")
        for title, draw in (
            (f"Scalogram E(a, b) of the lag profiles of {_field_symbol(ds)}", fig_scalogram),
            ("Scale spectrum E(a) with the dominant scales a*", fig_scale_spectrum),
            ("POD spectra, plain and per scale window, with T_spec and H*(0.10)", fig_pod),
            ("Lag profiles rho_k(tau) of the leading POD modes (plain window)", fig_mode_lags),
        ):
            body.append(f"<h3>{escape(m)}: {escape(title)}</h3>")
            body.append(_png(draw(ds, m), f"{m}: {title}, one panel per layer."))
    return body


def write_report(
    ds: xr.Dataset,
    path: str | os.PathLike,
    *,
    notes: Sequence[str] = (),
) -> Path:
    """One self-contained HTML page of an analysis.

    The provenance and parameters; the layer trends of every model with their 95 %
    jackknife intervals and a table of the numbers; the paper's claims where they were
    decided; then per model, one panel per layer of each ``fig_*`` figure. Figures are
    embedded as base64 PNG; the page loads nothing from the network.

    Parameters
    ----------
    ds
        The dataset of :func:`msapod.studies.own_model.analyze_sources` (``model`` dim).
    path
        The HTML file to write (atomically).
    notes
        Lines shown as notes at the top (e.g. a bidirectional model).
    """
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg", force=False)
    models = [str(m) for m in ds["model"].values]
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>msapod analyze: {escape(', '.join(models))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Multiscale POD of attention: {escape(', '.join(models))}</h1>",
        "<p>Made by <code>msapod analyze</code> (msapod "
        f"{escape(str(ds.attrs.get('msapod_version', '')))}): the ensemble of N = "
        f"{ds.attrs['n_snapshots']} snippets of L = {ds.attrs['length']} tokens, the "
        "Reynolds split, the Morlet scalogram of the lag profiles, its dominant scales, one "
        "Gaussian lag window per dominant scale, plain and windowed POD, T_spec and H*. "
        "Intervals are 95 % leave-one-snapshot-out jackknife intervals (one model: they "
        "carry the snapshot noise, not the training-seed spread).</p>",
    ]
    body += _report_notes(ds, models, notes)
    body += _report_provenance(ds, models)
    body += _report_trends(ds, models)
    if "claim_verdict" in ds:
        body += ["<h2>The paper's claims on these models</h2>", _claims_html(ds)]
    body += _report_layers(ds, models)
    body.append("</body></html>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(body), encoding="utf-8")
    return path
