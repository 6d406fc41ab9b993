"""What the book's pages print beside a claim, built from the shipped results.

A page states its reading once (:func:`reading_note`), shows the numbers of the book's
default reading next to each verdict (:func:`interval_table`, :func:`claim_lines`) and
other readings only as labelled comparisons (:func:`readings_table`); a loss difference
is always the whole-split one (:func:`loss_difference`). Each function reads the
specification curve (:func:`msapod.studies.verdict.curve.multiverse_study`), the scorecard
or the zoo and returns Markdown or a table of strings, so that a page cell holds a single
call and no page restates a number the results hold.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import xarray as xr

from ... import plots
from . import claims as cl
from .multiverse import AXES, MAIN_SPEC
from .registry import REGISTRY

__all__ = [
    "attention_scalogram",
    "claim_counts",
    "claim_lines",
    "interval_table",
    "interval_text",
    "layer_table",
    "loss_difference",
    "mode_table",
    "reading_note",
    "reading_numbers",
    "readings_table",
    "spread_summary",
    "theorem1_text",
]

#: How one changed axis of a reading reads in a table row (the values of
#: :data:`~msapod.studies.verdict.multiverse.AXES`).
_AXIS_WORDS = {
    "field": lambda v: f"scalogram of {v}",
    "normalisation": lambda v: "E(a)/a" if v == "rectified" else "raw E(a)",
    "scale_min": lambda v: f"scales from {v}",
    "scale_stat": lambda v: {
        "peak": "local maximum",
        "argmax": "global maximum",
        "centroid": "scale centroid",
    }.get(v, str(v)),
    "centre": lambda v: f"window centre {v}",
    "width": lambda v: f"window width {v:g} a*",
    "criterion": lambda v: f"{v} criterion",
    "n": lambda v: f"N = {v}",
    "fit": lambda v: "fit k = 1..N/2" if v == "default" else "fit k = 1..20",
}


def _words(v, sig: int = 3) -> str:
    return plots.number(float(v), sig)


def reading_note(mv, claims) -> str:
    """The page's reading, stated once (a MyST admonition with the CSS class ``reading``):
    the book's default reading of every axis the ``claims`` depend on, each tagged
    *paper* (the paper states it) or *book* (the book's choice).

    Parameters
    ----------
    mv
        :func:`~msapod.studies.verdict.curve.multiverse_study` result.
    claims
        The claim ids the page tests.
    """
    parts: list[str] = []
    for c in claims:
        words = cl._reading_words(c, mv)
        for p in re.split(r"(?:(?<=\(paper\))|(?<=\(book\))), ", words) if words else []:
            if p not in parts:
                parts.append(p)
    ids = cl.names(list(claims))
    what = (
        f"the book's default reading of the paper: {', '.join(parts)}"
        if parts
        else "the one reading the paper allows"
    )
    return (
        "```{admonition} The reading of this page\n:class: note reading\n"
        f"Every number printed beside {ids} and every verdict box on this page is {what}. "
        "Any other reading appears only as a labelled comparison; the "
        "[scorecard](14-scorecard.md) runs them all.\n```"
    )


def reading_numbers(claim: str, mv, zoo: str | None = None, **axes) -> xr.Dataset:
    """The key statistic of ``claim`` per ``(model, layer)`` with its 95 % interval
    (``stat``, ``lower``, ``upper``) under the specification that differs from the
    default reading only in ``axes`` (none: the default reading,
    :func:`~msapod.studies.verdict.claims.main_numbers`)."""
    if not axes:
        return cl.main_numbers(claim, mv, zoo)
    sub, z = cl._claim_specs(claim, mv, zoo)
    want = {**json.loads(str(mv.attrs.get("main_specification", "{}")) or "{}"), **axes}
    keep = np.ones(sub.sizes["spec"], bool)
    for a, v in want.items():
        if a in sub.coords:
            keep &= sub[a].values == np.asarray(v, dtype=sub[a].dtype)
    if keep.sum() != 1:
        raise LookupError(f"axes: no single specification of {claim} with {axes}")
    row = sub.isel(spec=int(np.flatnonzero(keep)[0]))
    models = [
        m for m, mz in zip(mv["model"].values, mv["model_zoo"].values, strict=True) if mz == z
    ]
    return row[["stat", "lower", "upper"]].sel(model=models).reset_coords(drop=True)


def interval_text(stat: float, lower: float, upper: float, sig: int = 3) -> str:
    """One estimate with its 95 % interval: ``"93.7 [91.7, 95.7]"``; a bound (an interval
    open at 0 or at infinity that ends at the estimate, a maximum at the grid's edge)
    reads ``"≤ 3.00"`` / ``"≥ 128"``; a missing estimate ``"—"``."""
    if not np.isfinite(stat):
        return plots.MISSING
    if lower <= 0 and np.isclose(upper, stat):
        return f"≤ {_words(stat, sig)}"
    if np.isinf(upper) and np.isclose(lower, stat):
        return f"≥ {_words(stat, sig)}"
    if not (np.isfinite(lower) and np.isfinite(upper)) or lower == upper == stat:
        return _words(stat, sig)
    return f"{_words(stat, sig)} [{_words(lower, sig)}, {_words(upper, sig)}]"


def interval_table(
    claim: str, mv, zoo: str | None = None, layers=None, sig: int = 3, **axes
) -> pd.DataFrame:
    """The key statistic of ``claim`` with its 95 % interval (:func:`interval_text`), one
    row per model and one column per layer (default: every layer), under the default
    reading or the one that differs from it in ``axes`` (:func:`reading_numbers`)."""
    n = reading_numbers(claim, mv, zoo, **axes)
    if layers is not None:
        n = n.sel(layer=list(layers))
    rows = {
        str(m): {
            f"layer {int(la)}": interval_text(
                *(float(n[k].sel(model=m, layer=la)) for k in ("stat", "lower", "upper")), sig
            )
            for la in n["layer"].values
        }
        for m in n["model"].values
    }
    return pd.DataFrame(rows).T.rename_axis("model")


def _reading_label(axes: dict) -> str:
    if not axes:
        return "default reading"
    return ", ".join(_AXIS_WORDS[a](v) for a, v in axes.items())


def _span(values, sig: int = 3) -> str:
    """``"3.00–93.7"`` of the finite values (one value once, ``"—"`` for none)."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if not v.size:
        return plots.MISSING
    lo, hi = _words(v.min(), sig), _words(v.max(), sig)
    return lo if lo == hi else f"{lo}–{hi}"


def claim_counts(claim: str, mv, zoo: str | None = None, **axes) -> dict:
    """The key statistic of ``claim`` over the claim's layers and the zoo's models under
    the default reading (or the one that differs in ``axes``): ``span`` (its range, text),
    ``in_range`` (point values inside the claim's range, without their intervals: the
    rule's own cases are in :func:`~msapod.studies.verdict.claims.spec_outcome`),
    ``bounds`` (values that are a bound: a maximum at the grid's edge,
    :func:`interval_text`) and ``total``."""
    c = REGISTRY[claim]
    n = reading_numbers(claim, mv, zoo, **axes)
    if c.layers is not None:
        n = n.sel(layer=[la for la in c.layers if la in n["layer"].values])
    st, lo, up = (n[k].values.ravel() for k in ("stat", "lower", "upper"))
    ok = np.isfinite(st)
    bound = ok & (((lo <= 0) & np.isclose(up, st)) | (np.isinf(up) & np.isclose(lo, st)))
    return {
        "span": _span(st),
        "in_range": int(((st >= c.low) & (st <= c.high) & ok).sum()),
        "bounds": int(bound.sum()),
        "total": int(ok.sum()),
    }


def readings_table(claim: str, mv, zoo: str | None = None) -> pd.DataFrame:
    """The claim under the default reading and under each reading that changes one axis
    of it (a labelled comparison): per reading, the verdict of the claim's rule, the range
    of its key statistic over the claim's layers (column ``layers``) and models, and the
    rule's cases."""
    c = REGISTRY[claim]
    rows = {}
    variants = [{}] + [{a: v} for a in c.axes for v in AXES[a] if v != MAIN_SPEC[a]]
    layers = "every layer" if c.layers is None else cl.layer_span(list(c.layers))
    for axes in variants:
        try:
            out = cl.spec_outcome(claim, mv, zoo, **axes)
            k = claim_counts(claim, mv, zoo, **axes)
        except LookupError:
            continue
        rows[_reading_label(axes)] = {
            "verdict": out["verdict"],
            "layers": layers,
            "statistic": k["span"],
            "cases (the rule)": out["cases"],
        }
    return pd.DataFrame(rows).T.rename_axis("reading")


def claim_lines(mv, claims, zoo: str | None = None, **compare) -> str:
    """A Markdown list, one item per claim: the claim in the paper's words, the range of
    its key statistic over the claim's layers and models under the default reading and
    the rule's cases; with ``compare`` (axes, e.g. ``field="u"``) the same under that
    reading, labelled a comparison, with the verdict its rule would give."""
    lines = []
    for claim in claims:
        c = REGISTRY[claim]
        k, out = claim_counts(claim, mv, zoo), cl.spec_outcome(claim, mv, zoo)
        text = (
            f"* **{claim}** ({c.paper}): ${c.symbol}$ = {k['span']} under the default "
            f"reading; the rule counts {out['cases'].rstrip('.')}"
        )
        if compare:
            k2, other = (
                claim_counts(claim, mv, zoo, **compare),
                cl.spec_outcome(claim, mv, zoo, **compare),
            )
            text += (
                f". For comparison, with the {_reading_label(compare)}: {k2['span']}; the "
                f"rule counts {other['cases'].rstrip('.')} and would read *{other['verdict']}*"
            )
        lines.append(text + ".")
    return "\n".join(lines)


def attention_scalogram(energy_u: xr.DataArray, mean_field: xr.DataArray) -> xr.DataArray:
    """The scalogram :math:`E(a, b)` of the attention :math:`A` from that of its
    fluctuation :math:`u` and the mean field :math:`\\bar A`.

    :math:`A_s = \\bar A + u_s` with :math:`\\sum_s u_s = 0`, so the cross term of
    :math:`\\langle |W[A_s]|^2 \\rangle_s` vanishes and :math:`E_A = E_u + E_{\\bar A}`:
    the scalogram of the mean field (one snapshot) added to the shipped one of :math:`u`
    on the same scales.

    Parameters
    ----------
    energy_u
        :math:`E(a, b)` of the fluctuation, dims ``(..., scale, lag)`` (``energy`` of
        ``results/zoo_analysis.nc``).
    mean_field
        :math:`\\bar A`, dims ``(..., query, key)`` matching ``energy_u``'s other dims
        (``mean_field`` of ``results/fieldstats.nc``).
    """
    from ...wavelets import scalogram

    field = mean_field.astype(np.float64).expand_dims(snapshot=1)
    mean_e = scalogram(field, energy_u["scale"].values)["energy"]
    mean_e = mean_e.assign_coords(scale=energy_u["scale"].values)
    out = energy_u + mean_e.transpose(*energy_u.dims)
    return out.assign_attrs(long_name="scalogram energy of A")


def loss_difference(models=None) -> tuple[xr.DataArray, xr.Dataset]:
    """The whole-split validation losses of ``models`` (default: the trained models of
    the main zoo) and EGA − baseline with its 95 % Student-t interval over seeds
    (:func:`~msapod.studies.measure.uncertainty.arch_difference` of
    :func:`~msapod.studies.verdict.multiverse.zoo_losses`): the numbers claim L is
    decided on."""
    from ...models import zoo
    from ..measure.uncertainty import arch_difference
    from .multiverse import zoo_losses

    models = list(zoo.trained()) if models is None else list(models)
    loss, _ = zoo_losses(models)
    return loss, arch_difference(loss)


#: What the per-layer statistic of each claim decided over seeds or architectures is
#: (the ``diff`` of the specification curve), in words for a table header.
_LAYER_STAT = {
    "C4": "mode − window share, mean over seeds",
    "C7": "ΔE = EGA − baseline energy",
    "C8": "ΔT_spec = EGA − baseline",
    "C9": "scale spread ratio ρ, geometric mean over seeds",
}


def layer_table(claims, mv, zoo: str | None = None, sig: int = 3) -> pd.DataFrame:
    """The per-layer statistic the rule of each claim decides (C4 and C9 over seeds,
    C7 and C8 EGA − baseline) with its 95 % interval, under the default reading: one row
    per layer the claim is about, one column per claim (``"—"`` where the reading gives
    no value)."""
    cols = {}
    for claim in claims:
        sub, _ = cl._claim_specs(claim, mv, zoo)
        row = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))
        d, lo, up = (row[k] for k in ("diff", "diff_lower", "diff_upper"))
        layers = REGISTRY[claim].layers or d["layer"].values
        cols[f"{claim}: {_LAYER_STAT.get(claim, 'statistic')}"] = {
            int(la): interval_text(
                float(d.sel(layer=la)), float(lo.sel(layer=la)), float(up.sel(layer=la)), sig
            )
            for la in layers
        }
    return pd.DataFrame(cols).rename_axis("layer").sort_index().fillna(plots.MISSING)


def theorem1_text(thm_err: float, ks, pod_err, half_err, rand_err) -> str:
    """What a live check of Theorem 1 measured, in words: the largest relative gap
    between the POD reconstruction error and the eigenvalue tail (``thm_err``), and per
    competing basis (``half_err``: the other half-ensemble's modes, NaN where it has too
    few; ``rand_err``: random bases, one row each) its smallest margin over the ranks
    ``ks`` against the POD error ``pod_err``, and how many competitors did as well."""
    pod, half, rand = (np.asarray(x, float) for x in (pod_err, half_err, rand_err))
    best = rand.min(axis=0)
    m_half, m_rand = half - pod, best - pod
    beat = int((m_half <= 0).sum() + (m_rand <= 0).sum())
    n = int(np.isfinite(m_half).sum()) + m_rand.size
    return (
        f"The POD reconstruction error equals the eigenvalue tail to a relative difference "
        f"{plots.below(thm_err)} for every $K$ checked. Smallest margin over "
        f"$K \\in \\{{{', '.join(str(int(k)) for k in ks)}\\}}$: the modes of the other "
        f"half-ensemble lose {_words(np.nanmin(m_half))} "
        f"({_words(100 * np.nanmin(m_half / pod), 2)} % of the optimum), the best of "
        f"{rand.shape[0]} random bases loses {_words(m_rand.min())} "
        f"({_words(100 * (m_rand / pod).min(), 2)} %). Competitor errors at or below the "
        f"POD error: {beat} of {n}."
    )


def mode_table(stats: xr.Dataset, share: xr.DataArray, peaks: xr.DataArray, layers):
    """The leading scale-selective mode of every valid window, one row per model, layer
    and window: the window's centre and width, the mode's mean lag and 80 % lag range,
    its lag-energy ``share`` in the paper's range and its ``peaks`` in lags 10–40
    (``stats``: ``results/modestats.nc`` at one window centre)."""
    rows = []
    for name in stats["model"].values:
        for layer in layers:
            for w in stats["window"].values[1:]:
                s = stats.sel(model=name, layer=layer, window=w, mode=1)
                if not np.isfinite(float(s["mean_lag"])):
                    continue
                at = {"model": name, "layer": layer, "window": w, "mode": 1}
                rows.append(
                    {
                        "model": str(name),
                        "layer": int(layer),
                        "window": str(w),
                        "centre c": float(s["window_centre"]),
                        "width σ": float(s["window_width"]),
                        "mean lag φ1": float(s["mean_lag"]),
                        "80% range φ1": f"{int(s['lag_q10'])}–{int(s['lag_q90'])}",
                        "share in paper range": float(share.sel(at)),
                        "peaks in 10–40": int(peaks.sel(at)),
                    }
                )
    return pd.DataFrame(rows).set_index(["model", "layer", "window"])


def spread_summary(lag_spread: xr.DataArray, scale_spread: xr.DataArray):
    """Lag and scale spread of the plain and the scale-selective modes (window
    ``"plain"`` against the others, NaN where a window is missing): a table of the ranges
    of mode 1 per layer (min–max over models and windows) and a sentence with the share
    of cases where the windowed mode is the narrower one and the median ratio.

    Parameters
    ----------
    lag_spread
        dims ``(model, layer, window, mode)``, in characters.
    scale_spread
        dims ``(model, layer, window)`` for mode 1, in octaves.
    """
    ratio_l = lag_spread.drop_sel(window="plain") / lag_spread.sel(window="plain")
    ratio_s = scale_spread.drop_sel(window="plain") / scale_spread.sel(window="plain")
    rows = {}
    for la in lag_spread["layer"].values:
        ls, ss = lag_spread.sel(layer=la, mode=1), scale_spread.sel(layer=la)
        rows[int(la)] = {
            "lag spread φ1 plain": _span(ls.sel(window="plain").values),
            "lag spread φ1 scale-sel.": _span(ls.drop_sel(window="plain").values),
            "scale spread φ1 plain": _span(ss.sel(window="plain").values),
            "scale spread φ1 scale-sel.": _span(ss.drop_sel(window="plain").values),
        }
    n_l, n_s = int(np.isfinite(ratio_l).sum()), int(np.isfinite(ratio_s).sum())
    text = (
        f"The scale-selective modes are narrower in lag than the plain mode of the same "
        f"index in {_words(100 * float((ratio_l < 1).sum()) / n_l, 2)} % of {n_l} (model, "
        f"layer, window, mode) cases (median ratio {_words(float(ratio_l.median()))}), and "
        f"narrower in scale in {_words(100 * float((ratio_s < 1).sum()) / n_s, 2)} % of "
        f"{n_s} cases (median ratio {_words(float(ratio_s.median()))})."
    )
    return pd.DataFrame(rows).T.rename_axis("layer"), text
