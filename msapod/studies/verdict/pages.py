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
from ..registry import REGISTRY
from . import claims as cl
from .multiverse import AXES, MAIN_SPEC

__all__ = [
    "EGA_PAPER",
    "PAGE_NAMES",
    "assurance",
    "attention_scalogram",
    "c3_lines",
    "c5_large_n_text",
    "c5_lines",
    "capacity",
    "causality_text",
    "claim_counts",
    "claim_lines",
    "claims_markdown",
    "coherency_checks",
    "coherency_of",
    "coherency_reading",
    "coherency_table",
    "convergence_text",
    "curve_values",
    "differences_text",
    "forest_note",
    "forest_panels",
    "interval_table",
    "interval_text",
    "jackknife_text",
    "layer_table",
    "line_lengths",
    "llm_ensemble_facts",
    "llm_scale_depth",
    "llm_scale_facts",
    "llm_sink_facts",
    "llm_spectra_depth",
    "llm_table",
    "llm_token_lengths",
    "loss_difference",
    "loss_table",
    "loss_text",
    "mean_inclusive_text",
    "mode_table",
    "nan_rows_note",
    "other_zoos",
    "overhead_summary",
    "page_links",
    "reading_note",
    "reading_numbers",
    "readings_table",
    "reasons",
    "revivals_text",
    "rule_parts",
    "scorecard_markdown",
    "seeds_each",
    "seeds_text",
    "separation_lines",
    "sign_pattern_lines",
    "sign_text",
    "sink_layers",
    "spec_curves",
    "split_gap_text",
    "spread_summary",
    "theorem1_text",
    "threshold_text",
    "training_summary",
    "tspec_n_text",
    "window_sensitivity",
    "zoo_models",
    "zoo_verdicts",
    "zoo_width",
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
    "scale_test": lambda v: {
        "share": "band shares against the untrained models",
        "peak": "dominant scale a* (local maximum)",
    }[v],
    "c4_window": lambda v: {"range": "window on the paper's lags"}.get(v, f"window of the {v}"),
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
    if lower == upper == stat:  # a point value (no interval)
        return _words(stat, sig)
    if lower <= 0 and np.isclose(upper, stat):
        return f"≤ {_words(stat, sig)}"
    if np.isinf(upper) and np.isclose(lower, stat):
        return f"≥ {_words(stat, sig)}"
    if not (np.isfinite(lower) and np.isfinite(upper)):
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
    whole = bool(np.all(v == np.round(v)))
    lo, hi = (plots.number(float(x), sig, whole=whole) for x in (v.min(), v.max()))
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
    decided on; ``unfinished`` in the losses' attributes is 1 when a model stopped
    before its planned steps."""
    from ...models import zoo
    from ..measure.uncertainty import arch_difference
    from .multiverse import zoo_losses

    models = list(zoo.trained()) if models is None else list(models)
    loss, unfinished = zoo_losses(models)
    loss.attrs["unfinished"] = int(unfinished)
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


# --- the scorecard page -------------------------------------------------------------


def zoo_models(mv, zoo: str) -> tuple[int, int]:
    """(standard-attention, EGA) models of ``zoo`` in the specification curve."""
    arch = mv["architecture"].values[mv["model_zoo"].values == zoo]
    return int((arch == "baseline").sum()), int((arch == "ega").sum())


def zoo_width(mv, zoo: str) -> int:
    """:math:`d_\\mathrm{model}` of ``zoo``'s models (from their training configs)."""
    from ...models.zoo import ZOO_CONFIGS

    first = str(mv["model"].values[mv["model_zoo"].values == zoo][0])
    return int(ZOO_CONFIGS[first].model.n_embd)


def other_zoos(mv) -> list[str]:
    """The trained zoos of the curve other than the main one."""
    zoos = [z for z in str(mv.attrs.get("zoos", "")).split(",") if z]
    return [z for z in zoos if z != str(mv.attrs.get("main_zoo", zoos[0] if zoos else ""))]


def _top(card, mv) -> list[str]:
    """The scorecard's rows that are claims of the curve (C6a, C6b are parts of C6)."""
    ids = [str(c) for c in mv["claim"].values]
    return [c for c in card.index if c in ids]


def joint_summary(mv, claims) -> str:
    """The two-sided joint test over the specification curve in one sentence: the claims
    whose curve is significant (p < 0.05) for or against them, or that none is (the
    curve's ``joint_p`` and ``joint_direction``)."""
    if "joint_p" not in mv:
        return ""
    tested = [c for c in claims if np.isfinite(float(mv["joint_p"].sel(claim=c)))]
    if not tested:
        return ""
    p = {c: float(mv["joint_p"].sel(claim=c)) for c in tested}
    way = {c: str(mv["joint_direction"].sel(claim=c).values) for c in tested}
    groups = {w: [c for c in tested if p[c] < 0.05 and way[c] == w] for w in ("for", "against")}
    if not any(groups.values()):
        return (
            "Over the whole specification curve the two-sided permutation test (joint test) "
            "is significant for no claim, in either direction. "
        )
    parts = [
        f"{w} {cl.names(ids)} (p = {', '.join(f'{p[c]:.2g}' for c in ids)})"
        for w, ids in groups.items()
        if ids
    ]
    return (
        "Over the whole specification curve the two-sided permutation test (joint test) is "
        f"significant {' and '.join(parts)}. "
    )


def assurance(card, mv) -> str:
    """How sure the verdicts are, in one paragraph from the scorecard ``card`` (a
    :func:`~msapod.studies.verdict.scorecard.zoo_scorecard` table): the intervals, how
    many verdicts are robust or fragile over the readings, the joint permutation test,
    and which verdicts the untrained and the shuffled controls repeat."""
    top = _top(card, mv)
    robust = [c for c in top if "robust" in str(card.loc[c, "robust_share"])]
    fragile = [c for c in top if "fragile" in str(card.loc[c, "robust_share"])]
    single = [c for c in top if c not in robust + fragile]
    text = (
        "Every number behind a verdict has a 95 % interval (jackknife over snippets per "
        "model and layer; Student-$t$ over seeds for the EGA contrasts, C4 and C9), "
        f"Holm-corrected across the cases of a claim. {len(robust)} of the {len(top)} "
        f"verdicts are *robust* (at least {cl.ROBUST_SHARE:.0%} of the readings of the "
        "paper agree)"
    )
    if single:
        text += f", {cl.names(single)} {'has' if len(single) == 1 else 'have'} one reading only"
    if fragile:
        verb = "is" if len(fragile) == 1 else "are"
        text += f"; {cl.names(fragile)} {verb} *fragile*, decided by a choice the paper leaves open"
    text += ". "
    text += joint_summary(mv, top)
    for col, what, why in (
        (
            "untrained",
            "on untrained copies of the models (random weights)",
            ": there the verdict describes the architecture or the method, not what "
            "training learned",
        ),
        (
            "shuffled",
            "with the characters of each snippet shuffled",
            ": that structure is the model's positional machinery, not the text",
        ),
        (
            "words",
            "with the words of each snippet shuffled",
            ": that structure does not need the order of the words",
        ),
    ):
        if col not in card.columns:
            continue
        same = [
            c
            for c in top
            if card.loc[c, "verdict"] != "does not hold"
            and str(card.loc[c, col]).startswith(str(card.loc[c, "verdict"]))
        ]
        if same:
            text += f"The same rules {what} give the same verdict for {cl.names(same)}{why}. "
    return text.strip()


def reasons(card, mv) -> str:
    """Why each claim's verdict is what it is where a number or the setting decides it
    (the scorecard's ``reason``, and the paper's own number where our interval excludes
    it): a Markdown list headed by a sentence, ``""`` when no claim has one."""
    items = []
    for c in _top(card, mv):
        parts = [str(card.loc[c, "reason"]).strip()]
        compat = str(card.loc[c, "paper_value_compatible"])
        if compat.startswith("not compatible"):
            parts.append(
                "the paper's own number is outside our interval ("
                + compat.split(":", 1)[-1].strip()
                + ")"
            )
        parts = [x for x in parts if x not in ("", "nan", "—")]
        if parts:
            items.append(f"* **{c}** ({card.loc[c, 'verdict']}): " + "; ".join(parts) + ".")
    if not items:
        return ""
    return "Why, where a number or the setting decides it:\n\n" + "\n".join(items)


def capacity(mv) -> str:
    """What the other trained zoos (another model width) change, in words: per zoo its
    models, their width and the claims whose verdict differs from the main zoo's; or
    that no other zoo is trained."""
    main = str(mv.attrs["main_zoo"])
    ids = [str(c) for c in mv["claim"].values]
    others = other_zoos(mv)
    if not others:
        untrained = [z for z in str(mv.attrs.get("not_trained", "")).split(",") if z]
        return (
            "No zoo of another width is trained ("
            + (", ".join(untrained) or "none")
            + "), so no verdict on this page can say whether it changes with the model's "
            "width."
        )
    parts = []
    for z in others:
        b, e = zoo_models(mv, z)
        changed = [c for c in ids if cl.main_verdict(c, mv, z) != cl.main_verdict(c, mv, main)]
        parts.append(
            f"The {z} zoo has {b} standard-attention and {e} EGA model{'s' if e != 1 else ''} "
            f"of width $d_\\mathrm{{model}} = {zoo_width(mv, z)}$; "
            + (
                f"with it the verdict of {cl.names(changed)} changes (table below)"
                if changed
                else "no verdict changes with it (table below)"
            )
        )
    return "; ".join(parts) + "."


def zoo_verdicts(mv) -> pd.DataFrame | None:
    """The main verdict of every claim on every trained zoo, one column per zoo (its
    numbers of models in the header) and whether it changes with capacity; None with one
    zoo."""
    others = other_zoos(mv)
    if not others:
        return None
    main = str(mv.attrs["main_zoo"])
    rows = {}
    for c in (str(x) for x in mv["claim"].values):
        rows[c] = {
            f"{z} ({' + '.join(map(str, zoo_models(mv, z)))} models)": cl.main_verdict(c, mv, z)
            for z in [main, *others]
        }
    table = pd.DataFrame(rows).T.rename_axis("claim")
    table["changes with capacity?"] = np.where(table.nunique(axis=1) > 1, "yes", "no")
    return table


def seeds_each(mv, zoo: str) -> bool:
    """Whether ``zoo`` has at least two seeds of each architecture: then its C4 and C9
    intervals are over its seeds and its EGA contrasts are decided
    (:func:`~msapod.studies.verdict.multiverse.two_seeds_each`)."""
    from .multiverse import two_seeds_each

    return bool(two_seeds_each(mv["architecture"].values[mv["model_zoo"].values == zoo]))


def forest_note(mv) -> str:
    """What the forest plots of the other zoos show, from their numbers of models
    (``"No other zoo is trained."`` without one)."""
    texts = []
    for z in other_zoos(mv):
        b, e = zoo_models(mv, z)
        n = f"{b} standard-attention and {e} EGA model{'s' if e != 1 else ''}"
        if seeds_each(mv, z):
            texts.append(
                f"The {z} zoo ({n}): the layer claims, then the EGA contrasts, with C4 and "
                "C9 as point values per model (their intervals are over its seeds)."
            )
        else:
            texts.append(
                f"The {z} zoo ({n}): the layer claims, C4 and C9 with their jackknife "
                "interval over the snippets of each model; with fewer than two seeds of an "
                "architecture the EGA contrasts are not drawn."
            )
    return " ".join(texts) or "No other zoo is trained."


def curve_values(claim: str, mv, zoo: str | None = None) -> dict:
    """Per applicable specification of ``claim``: the median statistic over models and
    the claim's layers (C3: the late − early contrast), the range of its 95 % intervals,
    the verdict and whether it is the main specification, and the claim's range (None for
    a contrast), for :func:`msapod.plots.specification_curve`."""
    sub, _ = cl._claim_specs(claim, mv, zoo)
    if "scale_test" in sub.coords and "scale_test" in REGISTRY[claim].axes:
        # one kind of statistic per curve: C1's and C2's band shares
        sub = sub.isel(spec=np.flatnonzero((sub["scale_test"] == "share").values))
    if claim == "C3":
        val = sub["contrast"].median("model")
        lo, up = sub["contrast_lower"].min("model"), sub["contrast_upper"].max("model")
        band = None
    else:
        lay = list(REGISTRY[claim].layers)
        val = sub["stat"].sel(layer=lay).median(("model", "layer"))
        lo = sub["lower"].sel(layer=lay).min(("model", "layer"))
        up = sub["upper"].sel(layer=lay).max(("model", "layer"))
        band = (float(sub["threshold_low"]), float(sub["threshold_high"]))
    return {
        "value": val.values,
        "lower": lo.values,
        "upper": up.values,
        "verdict": sub["verdict"].values,
        "main": sub["main"].values,
        "band": band,
    }


#: The short name of each page in the scorecard table's links.
PAGE_NAMES = {
    "03-scalogram": "scalogram",
    "04-windows": "lag windows",
    "05-pod": "POD",
    "07-spectral-concentration": "T-spec",
    "08-effective-rank": "H*",
    "09-energy-gated-attention": "EGA",
    "10-training": "training",
    "11-uncertainty-convergence": "uncertainty",
    "12-head-pruning": "head pruning",
    "13-llm": "SmolLM2",
}


def page_links(pages: str) -> str:
    """Links to the pages a scorecard row names (``"03-scalogram, 05-pod"``), by their
    short names (:data:`PAGE_NAMES`)."""
    return ", ".join(
        f"[{PAGE_NAMES.get(p.strip(), p.strip())}]({p.strip()}.md)" for p in str(pages).split(",")
    )


def claims_markdown(card) -> str:
    """The claims with their verdicts as a three-column Markdown table (it fits a phone):
    per claim of the scorecard ``card`` (its parts C6a, C6b left out) the paper's words
    with the pages that test it and a link to its rule, and the verdict (bold) with the
    share of readings that agree."""
    lines = [
        "| claim | the paper's claim (tested on; rule) | verdict (readings that agree) |",
        "|---|---|---|",
    ]
    for c in card.index:
        if c[-1].isalpha() and c != "L":  # C6a, C6b: parts of C6
            continue
        r = card.loc[c]
        claim = str(r["paper"]).replace("*", r"\*")  # H* would start emphasis in Markdown
        lines.append(
            f"| {c} | {claim} ({page_links(r['page'])}; [rule {c}](#rule-{c.lower()})) "
            f"| **{r['verdict']}** ({r['robust_share']}) |"
        )
    return "\n".join(lines)


def scorecard_markdown(card) -> str:
    """The scorecard ``card`` claim by claim, as a Markdown definition list (fits any
    screen): per claim and part its verdict (bold) and pages, then one line per column:
    the paper's words, the measurement, the cases, robustness, the controls, the joint
    test and every other zoo's verdict (the intervals of every case are the forest
    plots)."""
    fields = {
        "paper": "the paper says",
        "measured": "we measure (main specification)",
        "cases": "cases",
        "robust_share": "robust?",
        "untrained": "untrained",
        "shuffled": "characters shuffled",
        "words": "words shuffled",
        "joint_p": "joint p",
    }
    fields.update(
        {c: c.removeprefix("verdict_") + " zoo" for c in card.columns if c.startswith("verdict_")}
    )
    lines = []
    for cid, r in card.iterrows():
        lines.append(f"**{cid}: {r['verdict']}** ({page_links(r['page'])})")
        lines += [
            f": *{label}:* " + str(r[c]).replace("*", r"\*")
            for c, label in fields.items()
            if c in card.columns
        ]
        lines.append("")
    return "\n".join(lines)


# --- the scorecard page's figures -----------------------------------------------------

#: The axis label of each claim's statistic in the forest plots.
_FOREST_LABEL = {
    "C1": r"$\Delta s_\mathrm{fine}$ (trained − untrained)",
    "C2": r"$\Delta s_\mathrm{coarse}$ (trained − untrained)",
    "C3": r"$T_\mathrm{spec}$",
    "C4": "lag-energy share",
    "C5": "$H^*(0.10)$",
    "C9": "scale spread ratio",
    "C7": r"$\Delta E$",
    "C8": r"$\Delta T_\mathrm{spec}$",
}
#: The range of each statistic: an interval beyond it is cut (an arrow marks it).
_FOREST_RANGE = {
    "C1": (-1, 1),
    "C2": (-1, 1),
    "C3": (0, None),
    "C4": (0, 1),
    "C5": (0, None),
    "C9": (0, None),
}


def forest_panels(mv, zoo: str, claims):
    """Forest plots of the main specification of ``zoo``, one panel per claim
    (:func:`msapod.plots.forest`): per model and layer the claim's statistic with its
    95 % interval against the claim's range; for C7 and C8 the EGA − baseline
    difference per layer (C8 with its claimed sign per layer shaded). Each panel's title
    is the claim and its verdict."""
    from .rules import C8_SIGNS

    sub = mv.isel(spec=np.flatnonzero((mv["main"] & (mv["zoo"] == zoo)).values)).isel(spec=0)
    models = [
        m for m, z in zip(mv["model"].values, mv["model_zoo"].values, strict=True) if z == zoo
    ]
    fig, axes = plots.panels(len(claims), height=2.3)
    for ax, c in zip(axes, claims, strict=False):
        m = sub.sel(claim=c)
        band = (float(m["threshold_low"]), float(m["threshold_high"]))
        if c in ("C7", "C8"):
            plots.forest(
                m["diff"],
                m["diff_lower"],
                m["diff_upper"],
                ylabel=_FOREST_LABEL[c],
                zero=True,
                band=band if c == "C7" else None,
                ax=ax,
            )
        else:
            plots.forest(
                m["stat"].sel(model=models),
                m["lower"].sel(model=models),
                m["upper"].sel(model=models),
                ylabel=_FOREST_LABEL[c],
                band=band,
                clip=_FOREST_RANGE[c],
                ax=ax,
            )
        if c == "C8":  # the claimed sign differs by layer (the rule's own table)
            for layer, sign in C8_SIGNS.items():
                ax.axvspan(
                    layer - 0.5,
                    layer + 0.5,
                    ymin=0.5 if sign > 0 else 0,
                    ymax=1 if sign > 0 else 0.5,
                    color=plots.BAND_COLOUR,
                    alpha=plots.BAND_ALPHA,
                    lw=0,
                )
            y = max(np.abs(ax.get_ylim()))
            ax.set_ylim(-y, y)
        ax.set_title(f"{c}: {cl.main_verdict(c, mv, zoo)}")
    handles, labels = axes[0].get_legend_handles_labels()
    if len(labels) > 1:
        fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)))
    return fig


def spec_curves(mv, claims, zoo: str | None = None):
    """One specification curve per claim (:func:`msapod.plots.specification_curve` of
    :func:`curve_values`), one legend for all."""
    fig, axes = plots.panels(len(claims), height=2.6)
    seen = {}
    for ax, c in zip(axes, claims, strict=False):
        ylabel = r"late − early $T_\mathrm{spec}$" if c == "C3" else _FOREST_LABEL[c]
        plots.specification_curve(
            **curve_values(c, mv, zoo), ylabel=ylabel, title=c, ax=ax, clip=_FOREST_RANGE.get(c)
        )
        ax.set_xlabel("specifications, sorted")
        leg = ax.get_legend()
        for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True):
            seen.setdefault(t.get_text(), h)
        leg.remove()
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncol=3)
    return fig


# --- the coherency page ---------------------------------------------------------------


def coherency_checks(g, g_small, nus, n: int, n_small: int) -> pd.DataFrame:
    """The calibration of the coherency on synthetic rows with a known answer: rows 0-2
    identical, 3-5 row 0 plus noise of relative amplitude ``nus`` (expected
    :math:`1/(1+\nu^2)`), 6-11 independent (expected near 0; ``g`` over ``n`` snapshots,
    ``g_small`` over the first ``n_small``): min, mean and max of every case over its
    pairs and both scales (``g``, ``g_small``: :func:`msapod.coherency`, dims
    ``(scale, query_i, query_j)``)."""
    indep = ~np.eye(6, dtype=bool)
    checks = [("identical rows (0-1, 0-2)", "1", g.isel(query_i=0, query_j=[1, 2]).values)]
    checks += [
        (
            f"shared + noise, nu = {nu}",
            plots.number(1 / (1 + nu**2)),
            g.isel(query_i=0, query_j=3 + k).values,
        )
        for k, nu in enumerate(nus)
    ]
    checks += [
        (f"independent rows, N = {m}", "~0", gg.values[:, 6:, 6:][:, indep])
        for m, gg in ((n_small, g_small), (n, g))
    ]
    rows = [(name, exp, v.min(), v.mean(), v.max()) for name, exp, v in checks]
    return pd.DataFrame(rows, columns=["input", "expected", "min", "mean", "max"]).set_index(
        "input"
    )


def coherency_of(M: xr.Dataset, name: str, max_sep: int) -> dict:
    """Per layer of model ``name`` (``M``: ``results/modestats.nc``): the coherency matrix
    ``gamma``, its mean by separation ``curve``, the row-shuffled ``null_curve`` up to
    ``max_sep`` and its maximum, the ``null`` level per scale, and the ``nan_rows`` (query
    rows without energy at some scale), each indexed by the scales probed (dominant
    scales, then the fixed ones; sorted, without duplicates)."""
    d = M.sel(model=name)
    out = {}
    for layer in d.layer.values:
        dl = d.sel(layer=layer)
        sc = dl["probe_scale"].values
        keep = np.flatnonzero(np.isfinite(sc))
        keep = keep[np.unique(sc[keep], return_index=True)[1]]  # sorted, no duplicates
        dl = dl.isel(probe=keep).assign_coords(scale=("probe", sc[keep])).swap_dims(probe="scale")
        g = dl["coherency_matrix"].astype(np.float64)
        nc = dl["coherency_null_curve"].sel(separation=slice(None, max_sep))
        diag = np.diagonal(g.values, axis1=1, axis2=2)  # (scale, row)
        out[int(layer)] = {
            "gamma": g,
            "curve": dl["coherency_curve"],
            "null_curve": nc,
            "null": nc.max("separation").to_series(),
            "nan_rows": [int(q) for q in g.query_i.values[np.isnan(diag).any(0)]],
        }
    return out


def nan_rows_note(coh: dict) -> str:
    """Which query rows have a NaN coherency (``coh``: model -> :func:`coherency_of`), and
    why: row 0 alone is the first row, whose attention is always ``(1, 0, ...)``."""
    rows = sorted(
        {q for per_model in coh.values() for c in per_model.values() for q in c["nan_rows"]}
    )
    why = (
        "Only row 0 is affected: its attention is always $(1, 0, \\dots)$, so its fluctuation "
        "is identically zero and $\\gamma_{0j}$ is $0/0$ for every $j$."
        if rows == [0]
        else "These rows carry (almost) no fluctuation energy at the scale in question."
    )
    return (
        "Query rows with NaN coherency (no energy at some scale) over all layers, scales and "
        f"models shown: {plots.enumeration(rows)}. {why} NaN entries are shown grey in the "
        "matrices and left out of every average (`np.nanmean`)."
    )


def coherency_table(coh: dict, dominant: xr.DataArray, max_sep: int) -> pd.DataFrame:
    """One row per (model, layer, scale): the coherency of neighbouring rows
    (:math:`|i-j| = 4`), the coherence length (the first separation where the mean
    coherency falls to the null level, NaN when it never does within ``max_sep``), the
    shift-model length :math:`a\\sqrt{2 \\ln(1/\\gamma_0)}` for that null level, and the
    largest coherency beyond the decay (running means over three separations, from
    8 characters after the coherence length), where it is and its ratio to the null
    curve's maximum.

    Parameters
    ----------
    coh
        model -> :func:`coherency_of`.
    dominant
        The dominant scales, dims ``(model, layer, peak)``, marked in the column
        ``dominant``.
    max_sep
        The largest separation read.
    """
    rows = []
    for name, per_layer in coh.items():
        dom = dominant.sel(model=name)
        for layer, c in per_layer.items():
            for a in c["curve"].scale.values:
                prof = c["curve"].sel(scale=a, separation=slice(None, max_sep))
                level = c["null"].loc[a]
                below = prof.separation[prof <= level]
                ell = float(below[0]) if below.size else np.nan
                smooth = prof.rolling(separation=3, center=True).mean()
                null_smooth = float(
                    c["null_curve"].sel(scale=a).rolling(separation=3, center=True).mean().max()
                )
                beyond = (
                    smooth.where(smooth.separation >= ell + 8)
                    if np.isfinite(ell)
                    else smooth * np.nan
                )
                has = bool(np.isfinite(beyond).any())
                rows.append(
                    {
                        "model": name,
                        "layer": int(layer),
                        "a": float(a),
                        "dominant": bool(np.isclose(dom.sel(layer=layer), a).any()),
                        "gamma at |i-j|=4": float(prof.isel(separation=0)),
                        "coherence length (chars)": ell,
                        "shift-model length": a * np.sqrt(2 * np.log(1 / level)),
                        "max beyond": float(beyond.max()) if has else np.nan,
                        "at |i-j|": float(beyond.idxmax()) if has else np.nan,
                        "max beyond / null": float(beyond.max()) / null_smooth if has else np.nan,
                    }
                )
    return pd.DataFrame(rows).set_index(["model", "layer", "a"]).sort_index()


def _cases(coh: pd.DataFrame, mask, with_revival: bool = False) -> str:
    out = []
    for m, la, a in coh.index[mask]:
        text = f"{m} layer {la} at $a$ = {plots.number(a)}"
        if with_revival:
            r = coh.loc[(m, la, a)]
            text += (
                f" ($|i-j|$ = {plots.number(r['at |i-j|'], whole=True)}, ratio "
                f"{plots.number(r['max beyond / null'], 2)})"
            )
        out.append(text)
    return ", ".join(out)


def coherency_reading(coh: pd.DataFrame, line_lengths) -> tuple[str, str]:
    """What :func:`coherency_table` shows, in two paragraphs: the counts (neighbour
    coherency above 0.5, coherence within 192 characters, longer than one shifted key
    explains, revivals above twice the null, compared with the spacing of the text's
    lines, ``line_lengths``), and their reading (local effect or recurring pattern)."""
    ell = coh["coherence length (chars)"]
    # longer than one shared, shifted key can explain: beyond the shift-model length by
    # more than one step of the retained rows (4 characters)
    longer = ell.isna() | (ell > coh["shift-model length"] + 4)
    n = len(coh)
    near_hi = coh["gamma at |i-j|=4"] > 0.5
    revival = coh["max beyond / null"] > 2
    text = (
        f"Over the {n} (model, layer, scale) cases: the coherency of neighbouring rows "
        f"($|i-j| = 4$) exceeds 0.5 in {int(near_hi.sum())}"
        + (f" ({_cases(coh, near_hi)})" if near_hi.any() else "")
        + f". The coherency falls to the null level within 192 characters in "
        f"{int(ell.notna().sum())} cases. It lasts longer than the shift-model length (by "
        f"more than 4 characters, or never ends) in {int(longer.sum())} cases"
        + (f": {_cases(coh, longer)}. " if longer.any() else ". ")
        + f"A revival (more than twice the null) occurs in {int(revival.sum())} cases"
        + (f": {_cases(coh, revival, True)}." if revival.any() else ".")
    )
    if revival.any():
        ln = np.asarray(line_lengths, float)
        q25, q75 = np.percentile(ln, [25, 75])
        seps = coh.loc[revival, "at |i-j|"]
        text += (
            " For comparison, the distance between consecutive newlines (non-empty lines) "
            f"of the validation text has a median of {plots.number(np.median(ln), whole=True)} "
            f"characters (quartiles {plots.number(q25, whole=True)}–"
            f"{plots.number(q75, whole=True)}); {int(((seps >= q25) & (seps <= q75)).sum())} "
            f"of the {int(revival.sum())} revivals lie within the quartiles."
        )
    reading = (
        f"In {n - int(longer.sum())} of the {n} cases the coherency ends no later than a "
        "single shared key, shifted from row to row, would make it end: high coherency there "
        "marks the same key seen from neighbouring queries, a local effect, not a pattern "
        "that recurs. "
    )
    if longer.any():
        reading += (
            f"The {int(longer.sum())} cases with a longer coherence ({_cases(coh, longer)}) "
            "have rows that co-vary over more than one key's reach. "
        )
    if revival.any():
        reading += (
            f"The revivals ({int(revival.sum())} cases, listed above) are candidates for "
            "structures that recur in the text at that separation: the attention fluctuation "
            "of a query comes back, at the same lags, in a query that far ahead (the "
            "comparison with the line spacing above says which could be lines of verse; "
            "ratios just above 2 at separations near 192, where few pairs enter, are weak "
            "candidates). They are where coherency marks a recurring pattern in the paper's "
            "sense."
        )
    else:
        reading += (
            "No revival rises above twice the null: beyond the shifted-key range no "
            "recurring pattern is detected at these scales."
        )
    return text, "**Reading.** " + reading


def line_lengths(corpus) -> np.ndarray:
    """Distances between consecutive newlines of the validation split, empty lines left
    out (``corpus``: :func:`msapod.models.data.load_corpus`)."""
    newline = corpus.chars.index("\n")
    ln = np.diff(np.flatnonzero(corpus.val == newline))
    return ln[ln > 1]


def revivals_text(tables: dict) -> str:
    """The revivals (more than twice the null) of each :func:`coherency_table` in
    ``tables`` (label -> table), one clause per label."""
    parts = []
    for label, t in tables.items():
        cases = t.index[t["max beyond / null"] > 2].tolist()
        listed = ", ".join(f"{m} layer {la} at $a$ = {plots.number(a)}" for m, la, a in cases)
        parts.append(f"{label}: {listed or 'none'}")
    return "Revivals: " + "; ".join(parts) + "."


def mean_inclusive_text(med: pd.DataFrame) -> str:
    """The median coherency of the mean-inclusive field against the fluctuation's
    (``med``: columns ``"A (mean-inclusive)"`` and ``"u (fluctuation)"``, one row per
    scale), in one sentence."""
    a, u = med["A (mean-inclusive)"], med["u (fluctuation)"]
    ratio = a / u
    first = (
        "The mean-inclusive field is more coherent at both scales"
        if bool((ratio > 1).all())
        else "The mean-inclusive field is not more coherent at every scale"
    )
    times = ", ".join(f"{k}: {plots.number(v, 2)} times" for k, v in ratio.items())
    last = (
        "so the shared mean adds coherency without bringing it near 1."
        if a.max() < 0.5
        else "so the shared mean alone makes many row pairs look coherent."
    )
    return (
        f"{first} (median over row pairs {times} that of the fluctuation); its largest "
        f"median is {plots.number(a.max())}, {last}"
    )


# --- the energy-gated attention and training pages -------------------------------------

#: What the energy-gated attention paper states besides its loss claim (L, in the
#: registry): its parameter overhead bound and the threshold its gates converge near.
EGA_PAPER = {"overhead_pct": 0.26, "threshold": 0.35, "threshold_tolerance": 0.10}


def loss_table(models=None) -> pd.DataFrame:
    """Per model (default: the trained models of the main zoo): its architecture, the
    training steps done and planned, the validation loss over the whole split (the one
    claim L is decided on, ``val_loss_split``) and the last 20-batch estimate of the
    training curve (``log.json``, a diagnostic)."""
    from ...models import zoo

    loss, _ = loss_difference(models)
    rows = {}
    for m in loss["model"].values:
        log = json.loads((zoo.path(str(m)) / "log.json").read_text())
        rows[str(m)] = {
            "architecture": str(loss["architecture"].sel(model=m).values),
            "steps done": int(log["steps"][-1]),
            "steps planned": int(zoo.ZOO_CONFIGS[str(m)].steps),
            "val loss, whole split (L)": float(loss.sel(model=m)),
            "val loss, 20 batches (training curve)": float(log["val_loss"][-1]),
        }
    return pd.DataFrame(rows).T.rename_axis("model").infer_objects()


def loss_text(models=None) -> str:
    """Claim L's numbers in one sentence: EGA − baseline of the whole-split validation
    loss with its 95 % interval over seeds, against the size the EGA paper states, and a
    caution when a model had not finished training."""
    loss, d = loss_difference(models)
    size = REGISTRY["L"].stated["size"]
    diff = float(d["diff"])

    def signed(x, digits=4):
        return f"{x:+.{digits}f}".replace("-", "−")

    text = (
        f"EGA − baseline, validation loss over the whole split: **{signed(diff)} "
        f"nats/char**, 95 % interval [{signed(float(d['lower']))}, "
        f"{signed(float(d['upper']))}] over the seeds (Student-$t$); the EGA paper states "
        f"about {signed(size, 2)}, so the difference is {100 * abs(diff / size):.0f} % of "
        "the stated size."
    )
    if loss.attrs.get("unfinished"):
        text += " Caution: not every model had finished its planned training steps."
    return text


def causality_text(table: pd.DataFrame, tol: float = 1e-12) -> str:
    """The causality check of a gated model in words (``table``: per model and layer the
    columns ``"max change, rows <= i0"`` and ``"max |row sum - 1|"``), against ``tol``."""
    past = float(table["max change, rows <= i0"].max())
    rows = float(table["max |row sum - 1|"].max())
    return (
        f"Largest change of any attention row $i \\le i_0$ in any layer: {plots.below(past)}; "
        f"largest deviation of a row sum from one: {plots.below(rows)}. With a tolerance of "
        f"{plots.number(tol)} the gated model **{'is' if past < tol else 'is not'}** causal "
        f"and its rows **{'are' if rows < tol else 'are not'}** normalised."
    )


def overhead_summary(sizes: dict) -> tuple[pd.DataFrame, str]:
    """The parameter overhead of energy-gated attention per model width (``sizes``:
    ``d_model`` -> (standard, EGA) parameter counts, the zoo's width first): a table and
    a sentence comparing it with the EGA paper's bound (:data:`EGA_PAPER`)."""
    bound = EGA_PAPER["overhead_pct"]
    table = pd.DataFrame(
        {
            d: {"standard": s, "EGA": e, "extra": e - s, "overhead %": 100 * (e - s) / s}
            for d, (s, e) in sizes.items()
        }
    ).T.rename_axis("d_model")
    table[["standard", "EGA", "extra"]] = table[["standard", "EGA", "extra"]].astype(int)
    parts = [
        f"$d_{{\\text{{model}}}} = {d}$: {int(r['extra']):,} extra parameters, "
        f"{plots.number(r['overhead %'])} % (the bound of {bound} % "
        f"**{'met' if r['overhead %'] < bound else 'exceeded'}**)"
        for d, r in table.iterrows()
    ]
    text = (
        "The EGA paper's bound against the models of each width: "
        + "; ".join(parts)
        + ". The gate grows like $d_{\\text{model}}$, the rest of the model like "
        "$d_{\\text{model}}^2$."
    )
    return table, text


def threshold_text(t: xr.DataArray) -> str:
    """The learned thresholds ``t`` (dims ``(model, layer, head)``) against the value the
    EGA paper reports (:data:`EGA_PAPER`): per model the median over heads, its range and
    the share of heads near it, and whether every model's median is near it."""
    stated, tol = EGA_PAPER["threshold"], EGA_PAPER["threshold_tolerance"]
    med = t.median(("layer", "head"))
    near = (abs(t - stated) <= tol).mean(("layer", "head"))
    every = bool((abs(med - stated) <= tol).all())
    per = ", ".join(
        f"{m}: {plots.number(float(med.sel(model=m)), 2)} (range "
        f"{plots.number(float(t.sel(model=m).min()), 2)} to "
        f"{plots.number(float(t.sel(model=m).max()), 2)}; "
        f"{100 * float(near.sel(model=m)):.0f} % of heads within {stated} ± {tol})"
        for m in t["model"].values
    )
    n = t.sizes["layer"] * t.sizes["head"]
    return (
        f'Median threshold over the {n} heads: {per}. With "near" read as a median within '
        f"±{tol} of {stated} for every EGA model, the paper's threshold of {stated} "
        f"**{'is' if every else 'is not'}** reproduced. The two thresholds live on different "
        "scales unless both papers standardise the same way (here: prefix z-scores), so "
        "this comparison is indicative only."
    )


def _separated(da: xr.DataArray, sign: int = 1) -> xr.DataArray:
    """Per layer: every EGA model beyond every baseline model (``sign=+1``: above)."""
    arch = da["architecture"]
    e, b = da.where(arch == "ega", drop=True), da.where(arch == "baseline", drop=True)
    if sign > 0:
        return e.min("model") > b.max("model")
    return e.max("model") < b.min("model")


def separation_lines(measures: dict) -> str:
    """Per measure (label -> values, dims ``(model, layer)`` with an ``architecture``
    coordinate): the EGA/baseline ratio of the seed means per layer and the layers where
    every EGA model exceeds every baseline model (point values), as a Markdown list."""
    lines = []
    for label, da in measures.items():
        ok = _separated(da)
        arch = da["architecture"]
        ratio = da.where(arch == "ega", drop=True).mean("model") / da.where(
            arch == "baseline", drop=True
        ).mean("model")
        lines.append(
            f"* **{label}**: EGA/baseline ratio of the seed means per layer "
            f"{plots.enumeration([float(r) for r in ratio.values])}; layers where every EGA "
            f"model exceeds every baseline model: "
            f"{plots.enumeration([int(x) for x in ok['layer'].values[ok.values]])} "
            f"({int(ok.sum())} of {ok.size} layers)."
        )
    return "\n".join(lines)


def sign_pattern_lines(values: xr.DataArray, first: str, others, signs: dict) -> str:
    """Whether ``first`` minus each of ``others`` (models of ``values``, dims
    ``(model, layer)``) has the ``signs`` claimed per layer, and in how many of those
    layers every EGA model lies beyond every baseline model in the claimed direction: a
    Markdown list."""
    rows = []
    for b in others:
        d = values.sel(model=first) - values.sel(model=b)
        ok = all(float(d.sel(layer=la)) * s > 0 for la, s in signs.items())
        rows.append(
            f"* {first} − {b}: difference per layer "
            + ", ".join(f"{float(v):+.3f}" for v in d.values)
            + f" → pattern **{'matches' if ok else 'does not match'}**."
        )
    n = sum(bool(_separated(values.sel(layer=[la]), s).all()) for la, s in signs.items())
    rows.append(
        f"* every EGA seed beyond every baseline seed in the stated direction: {n} of "
        f"{len(signs)} layers."
    )
    return "\n".join(rows)


def training_summary(target: float, models=None) -> str:
    """The zoo's training outcome as a Markdown list: how many models reach the
    ``target`` validation loss over the whole split, the loss per architecture (mean ±
    half-range over seeds) and claim L's numbers (:func:`loss_text`)."""
    table = loss_table(models)
    whole = table["val loss, whole split (L)"]
    meets = whole <= target
    by_arch = whole.groupby(table["architecture"])
    mean, half = by_arch.mean(), (by_arch.max() - by_arch.min()) / 2
    unfinished = table.index[table["steps done"] < table["steps planned"]]
    lines = [
        f"* Target: validation loss over the whole split at most {target} nats/char. Met by "
        f"{int(meets.sum())} of {len(table)} models"
        + (f" (not by {plots.enumeration(list(meets.index[~meets]))})" if not meets.all() else "")
        + ".",
        "* Per architecture (mean ± half-range over seeds): "
        + ", ".join(
            f"{a}: {mean[a]:.4f} ± {half[a]:.4f} ({int(by_arch.size()[a])} seeds)"
            for a in mean.index
        )
        + ".",
        f"* {loss_text(models)} The verdict on the EGA paper's claim is drawn on the "
        "[EGA page](09-energy-gated-attention.md).",
    ]
    if len(unfinished):
        lines.append(
            f"* Still training when the results were made: {plots.enumeration(list(unfinished))}; "
            "their numbers are provisional."
        )
    return "\n".join(lines)


# --- the uncertainty and convergence page ---------------------------------------------


def _rng(da, sig: int = 3) -> str:
    return _span(np.asarray(da, float).ravel(), sig)


def jackknife_text(unc: xr.Dataset) -> str:
    """How large the snapshot jackknife's standard errors are (``unc``:
    ``results/uncertainty.nc``) and how they compare with the spread between seeds."""
    se_t = unc["T_spec_se"].sel(window="plain")
    se_h = unc["H_star_frac_se"].sel(window="plain", eps=0.1)
    h_int = unc["H_star_se"].sel(window="plain", eps=0.1)
    spread = (
        unc["scale_centroid"].groupby("architecture").map(lambda x: x.max("model") - x.min("model"))
    )
    worst = int(spread.max("architecture").idxmax())
    return (
        f"The jackknife SE of the scale centroid is {_rng(unc['scale_centroid_se'])} "
        f"characters, of $T_{{\\text{{spec}}}}$ {_rng(se_t)}, and of the fractional "
        f"$H^*(0.10)$ {_rng(se_h, 2)} modes. The integer $H^*$'s own jackknife SE is exactly "
        f"0 in {int((h_int == 0).sum())} of {h_int.size} layers. The spread of the centroid "
        f"between the seeds of one architecture is up to {plots.number(float(spread.max()))} "
        f"characters (layer {worst}), far larger than the snapshot SE: **for claims about an "
        "architecture, the seeds dominate the uncertainty**, and one seed (as in the paper) "
        "cannot show it."
    )


def differences_text(diffs: pd.DataFrame, n_seeds: str, df: int) -> str:
    """How many layer-wise architecture differences (``diffs``, a column
    ``significant``) exclude zero, with ``n_seeds`` seeds per architecture and ``df``
    degrees of freedom."""
    k, n = int(diffs["significant"].sum()), len(diffs)
    how = "mostly not" if k < n / 4 else "partly"
    return (
        f"{k} of {n} layer-wise architecture differences have a 95 % interval that excludes "
        f"zero. With {n_seeds} seeds per architecture ({df} degrees of freedom) the "
        "t-interval is wide; the differences the paper reads from one model pair (C7, C8) "
        f"are, with these data, {how} distinguishable from seed-to-seed variation."
    )


def convergence_text(conv: xr.Dataset, eps: float = 0.10) -> str:
    """How :math:`H^*(\\varepsilon)` grows with :math:`N` (``conv``:
    ``results/convergence.nc``): the factor of the last doubling, how often it is pinned at
    the ceiling :math:`N - 1`, its share of the ceiling, and its order across layers at
    the largest :math:`N`."""
    ns = conv["n"].values
    h = conv["H_star"].sel(eps=eps)
    ratio = h.sel(n=ns[-1]) / h.sel(n=ns[-2])
    frac = (h / (h["n"] - 1)).mean("model")
    pinned = conv["at_rank_limit"].sel(eps=eps)
    order = ", ".join(
        f"layer {int(la)}: {plots.number(float(v), whole=True)}"
        for la, v in h.sel(n=ns[-1]).mean("model").to_series().items()
    )
    return (
        f"$H^*({eps:.2f})$ keeps growing with $N$: doubling $N$ from {ns[-2]} to {ns[-1]} "
        f"multiplies it by {_rng(ratio)} (per model and layer). It never reaches the ceiling "
        f"$N-1$ at eps = {eps:.2f} ({int(pinned.sum())} of {pinned.size} cases pinned), but it "
        f"stays a large fraction of it: {_rng(frac)} of $N - 1$. **$H^*$ has not converged "
        f"at $N = {ns[-1]}$**: it measures the ensemble size as much as the layer. Its "
        f"ordering across layers is what survives: {order} at N = {ns[-1]}."
    )


def split_gap_text(cmp: pd.DataFrame, tolerance: float = 5.0) -> str:
    """The largest layer-mean gap of :math:`H^*` between two ensembles of the same size
    drawn from the same held-out text (the first two columns of ``cmp``: the book's
    ensemble and the first snippets of the nested one), and what it means against
    ``tolerance`` modes."""
    gap = float((cmp.iloc[:, 0] - cmp.iloc[:, 1]).abs().max())
    return (
        f"At N = 150 the largest layer-mean gap in H* between the two draws is "
        f"{plots.number(gap, 2)} modes: "
        + (
            "small against the growth with N below, so the nested ensembles measure the "
            "same attention as the book's ensemble."
            if gap <= tolerance
            else "not negligible; the choice of snippets moves H* by that much at a given N."
        )
    )


def c5_large_n_text(h: xr.DataArray, outcome: dict, n: int) -> str:
    """C5 at a larger ensemble: the :math:`H^*` of the early and the later layers
    (``h``, dims ``(model, layer)``) and the verdict of the C5 rule at that ``n``
    (``outcome``: :func:`~msapod.studies.verdict.claims.spec_outcome`), labelled with
    its :math:`N`."""
    c = REGISTRY["C5"]
    early = [la for la in (1, 2) if la in h["layer"].values]
    late = list(c.layers)
    return (
        f"At N = {n}, layers 1–2 need {_rng(h.sel(layer=early), 3)} modes and layers "
        f"{cl.layer_span(late)} {_rng(h.sel(layer=late), 3)}. The C5 rule at N = {n} "
        f"([the rule](#rule-c5)) reads **{outcome['verdict']}** ({outcome['cases']}). "
        f"'About {c.about:g}' is a property of N = 150, not of the layers."
    )


def tspec_n_text(conv: xr.Dataset) -> str:
    """How :math:`T_\\mathrm{spec}` moves with :math:`N` with the default fit range and
    with a fixed one (``conv``: ``results/convergence.nc``, layer means)."""
    ns = conv["n"].values
    td, tf = conv["T_spec"].mean("model"), conv["T_spec_fixed"].mean("model")
    first, last = ns[0], ns[-1]
    return (
        f"With the default fit range ($k \\le N/2$), $T_{{\\text{{spec}}}}$ falls from "
        f"{_rng(td.sel(n=first))} at N = {first} to {_rng(td.sel(n=last))} at N = {last} "
        "(layer means): as N grows, the range k <= N/2 reaches further down the spectrum, "
        "into its steeper tail, so the fitted decay steepens and T_spec falls; the default "
        "T_spec is an **N-dependent** number. With the fit range held fixed "
        f"(k = {conv.attrs['fixed_k']}) it moves from {_rng(tf.sel(n=first))} to "
        f'{_rng(tf.sel(n=last))}. The paper\'s "T_spec ≈ 1 in early layers" (C3) therefore '
        "depends on N and on the fit range; the scorecard tests it at the paper's N = 150 "
        f"and quotes N = {int(last)} beside it."
    )


def seeds_text(zoo_name: str | None = None) -> str:
    """The trained seeds per architecture of a zoo (default: the main one), from
    :func:`msapod.zoo.trained`: ``"4"``, or ``"2–4"`` when the architectures differ."""
    from ...models import zoo

    kw = {} if zoo_name is None else {"zoo": zoo_name}
    n = [len(zoo.trained(architecture=a, **kw)) for a in zoo.ARCHITECTURES]
    return str(min(n)) if min(n) == max(n) else f"{min(n)}–{max(n)}"


def rule_parts(claim: str, mv, zoo: str | None = None, **axes) -> dict[str, str]:
    """The rule's case counts of ``claim`` per part (``"core"``, ``"a"``, ``"b"``, ...;
    ``""`` for a rule in one part), from the curve's ``cases`` under the default reading
    or the one that differs in ``axes``."""
    cases = cl.spec_outcome(claim, mv, zoo, **axes)["cases"]
    out = {}
    for part in cases.split("; "):
        m = re.match(r"\((\w+)\) (.*)", part)
        if m:
            out[m.group(1)] = m.group(2).rstrip(".")
        elif out:  # a continuation of the previous part ("left out: ...")
            last = next(reversed(out))
            out[last] += "; " + part
        else:
            out[""] = part.rstrip(".")
    return out


def c5_lines(mv, zoo: str | None = None) -> str:
    """C5 under the default reading as a Markdown list: the early layers' :math:`H^*`,
    why "more than 150" cannot be tested at the ensemble's :math:`N` and what is tested
    instead (the contrast), and the later layers' :math:`H^*` against "about 91" with
    the rule's cases and where the paper's own number lies against the intervals."""
    c = REGISTRY["C5"]
    n = reading_numbers("C5", mv, zoo)["stat"]
    early, late = n.sel(layer=[1, 2]), n.sel(layer=list(c.layers))
    parts = rule_parts("C5", mv, zoo)
    sub, _ = cl._claim_specs("C5", mv, zoo)
    main = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))
    n_snap = int(json.loads(str(mv.attrs.get("main_specification", "{}")))["n"])
    return "\n".join(
        [
            f"* Layers 1–2: $H^*(0.10)$ = {_rng(early)} over the {early.sizes['model']} "
            f"models. 'More than {c.stated['early_above']} modes' cannot occur with "
            f"$N = {n_snap}$ snapshots ($H^* \\le N - 1$): the rule leaves that part out "
            f"({parts.get('a', '—')}) and tests what can be tested, whether the early "
            f"layers need more modes than the later ones: {parts.get('core', '—')}.",
            f"* Layers {cl.layer_span(list(c.layers))}: $H^*(0.10)$ = {_rng(late)}; the "
            f"paper's 'about {c.about:g}' read as within ±{100 * c.tolerance:.0f} %, per model and "
            f"layer with its 95 % interval: {parts.get('b', '—')}. The paper's own number: "
            f"{main['paper_value'].values}.",
        ]
    )


# --- the LLM page -----------------------------------------------------------------------


def _cpt(ds: xr.Dataset) -> float:
    """Characters per token of the LLM ensemble's snippets."""
    return float(ds.attrs["ensemble_chars_per_token"])


def llm_ensemble_facts(ds: xr.Dataset) -> str:
    """The LLM ensemble in tokens (``ds``: ``results/llm.nc``) as a Markdown list: the
    split's characters per token, the snippets' span in characters, and why the span,
    not the number of positions, matches the zoo's."""
    cpt, n, L = _cpt(ds), int(ds.attrs["n_snapshots"]), ds.sizes["query"]
    span = ds["char_end"] - ds["char_start"]
    return (
        f"* The validation split has {ds.attrs['n_chars_split']:,} characters and "
        f"{ds.attrs['n_tokens_split']:,} tokens: **{ds.attrs['chars_per_token']:.2f} "
        f"characters per token** (snippets: {cpt:.2f}).\n"
        f"* $N$ = {n} snippets of $L$ = {L} tokens, spanning {int(span.min())}–"
        f"{int(span.max())} characters (mean {float(span.mean()):.0f}; the zoo: 256).\n"
        f"* 256 *tokens* would be about {256 * cpt:.0f} characters, and the split holds only "
        f"{ds.attrs['n_tokens_split'] // 256} non-overlapping 256-token windows, fewer than "
        f"{n}. Matching the span keeps $N$ = {n} (so $H^*$ has the zoo's ceiling of {n - 1}) "
        f"and the same text per snapshot; the price is a smaller field ({L} × {L} positions)."
    )


def llm_token_lengths(ds: xr.Dataset) -> str:
    """How long the tokens of the split are, in one sentence."""
    lens = ds["token_length"].values
    return (
        f"Token lengths in the split: {np.mean(lens == 1):.0%} of tokens are a single "
        f"character (newlines, punctuation, word pieces), the median is "
        f"{np.median(lens):.0f} and 90 % are at most {np.percentile(lens, 90):.0f} characters."
    )


def llm_scale_facts(ds: xr.Dataset) -> str:
    """What the token scales mean for the scale claims (a Markdown list): the grid in
    characters, what it cannot resolve, and C1's and C2's thresholds (the registry's) in
    tokens."""
    cpt, finest, top = _cpt(ds), float(ds["scale"].min()), float(ds["scale"].max())
    c1, c2 = REGISTRY["C1"].stated["scale"], REGISTRY["C2"].stated["scale"]
    return (
        f"* The scalogram's scales run from {finest:g} to $L/2$ = {top:.1f} **tokens**, i.e. "
        f"about {finest * cpt:.0f} to {top * cpt:.0f} characters; the zoo's run from 3 to "
        f"128 characters. Over the coarse end the two cover the same text; at the fine end "
        f"the LLM **cannot resolve** anything below about {finest * cpt:.0f} characters: "
        f"whatever happens inside and between neighbouring tokens (the character n-grams of "
        f"C4) sits below its Nyquist limit.\n"
        f"* C1's threshold $a \\le {c1:g}$ characters is $a \\le {c1 / cpt:.2f}$ tokens, "
        f"below the finest scale: a dominant scale can meet it only as the bound "
        f"$a^* \\le {finest:g}$ tokens at the grid's first scale. C2's $a \\ge {c2:g}$ "
        f"characters is $a \\ge {c2 / cpt:.2f}$ tokens, inside the range. Below, scales in "
        f"characters are token scales times {cpt:.2f}."
    )


def sink_layers(sink: xr.DataArray, share: float = 0.3) -> list[int]:
    """The layers whose queries put more than ``share`` of their attention on the
    snippet's first token (``sink``: that share per layer)."""
    return [int(la) for la in sink["layer"].values if float(sink.sel(layer=la)) > share]


def llm_sink_facts(sink: xr.DataArray) -> str:
    """The attention sink in words (``sink``: per layer the mean share of a query's
    attention on the snippet's first token)."""
    on = sink_layers(sink)
    off = [int(la) for la in sink["layer"].values if la not in on]
    return (
        f"In {len(on)} of {sink.sizes['layer']} layers, {float(sink.sel(layer=on).min()):.0%}–"
        f"{float(sink.sel(layer=on).max()):.0%} of a query's attention goes to the first "
        f"token of the snippet, whatever that token is (layers {plots.enumeration(off)}: "
        f"{float(sink.sel(layer=off).max()):.0%} at most). This is the *attention sink* of "
        "trained LLMs: heads with nothing to attend to park their probability on the first "
        "position. In lag coordinates it is a ridge at $\\tau = i$; the Reynolds split "
        "removes its ensemble mean, but its fluctuations (how much each snippet parks there) "
        "stay in $u$. The character models show nothing like it."
    )


def llm_scale_depth(ds: xr.Dataset, zoo_centroid: xr.DataArray) -> str:
    """The LLM's scales across depth: the spread of its scale centroid (characters) and
    its rank correlation with depth, in how many layers the dominant scale is the finest
    one, against the zoo's centroids (``zoo_centroid``, characters)."""
    cpt, n = _cpt(ds), ds.sizes["layer"]
    c = ds["scale_centroid"] * cpt
    rho = float(pd.Series(c.values).corr(pd.Series(ds["layer"].values), method="spearman"))
    finest = float(ds["scale"].min())
    dom = ds["dominant_scale"].isel(peak=0)
    c1, c2 = REGISTRY["C1"].stated["scale"], REGISTRY["C2"].stated["scale"]
    return (
        f"The scale centroid of the fluctuations stays between {float(c.min()):.1f} and "
        f"{float(c.max()):.1f} characters ({float(c.min()) / cpt:.2f}–"
        f"{float(c.max()) / cpt:.2f} tokens) in all {n} layers: a spread of "
        f"{float(c.max() - c.min()):.1f} characters (rank correlation with depth {rho:+.2f}), "
        f"where C1 and C2 describe a move from at most {c1:g} to at least {c2:g}. The "
        f"dominant scale is the finest one, {finest:g} tokens, in {int((dom == finest).sum())} "
        f"of {n} layers: the spectrum falls from the finest scale on. There is **no "
        "fine-to-coarse organisation across depth** to speak of: early and late layers put "
        f"their fluctuation energy at about the same scales, {float(c.mean()) / cpt:.0f} "
        f"tokens ({float(c.mean()):.0f} characters). The zoo's centroids "
        f"({float(zoo_centroid.min()):.0f}–{float(zoo_centroid.max()):.0f} characters) are "
        f"finer, but the LLM's scale grid starts at {finest * cpt:.0f} characters, so part of "
        "that gap is the tokenisation."
    )


def llm_spectra_depth(ds: xr.Dataset, zoo_plain: xr.Dataset, sink: xr.DataArray) -> str:
    """The LLM's POD spectra across depth as a Markdown list: :math:`T_\\mathrm{spec}` and
    :math:`H^*(0.10)` against the zoo's (``zoo_plain``: the zoo's plain-window
    analysis), the share of the first five modes, and how both relate to the attention
    sink (``sink``, per layer)."""
    plain = ds.sel(window="plain")
    T, T_se, H = plain["T_spec"], ds["T_spec_se"], plain["H_star"].sel(eps=0.10)
    top5 = plain["spectrum"].sel(rank=slice(1, 5)).sum("rank") / plain["spectrum"].sum("rank")
    zT, zH = zoo_plain["T_spec"], zoo_plain["H_star"].sel(eps=0.10)
    n = int(ds.attrs["n_snapshots"])

    def at(da, f):
        return int(da["layer"][int(getattr(np, f)(da.values))])

    on = sink_layers(sink)
    first = [on[0]]
    while first[-1] + 1 in on:
        first.append(first[-1] + 1)
    later = [la for la in on if la > first[-1]]
    r_H, r_T = (float(np.corrcoef(sink, x)[0, 1]) for x in (H, T))
    rho = float(pd.Series(T.values).corr(pd.Series(ds["layer"].values), method="spearman"))
    return (
        f"* $T_{{spec}}$ (fit over ranks {ds.attrs['fit_k_min']}–{ds.attrs['fit_k_max']}, "
        f"jackknife SE {float(T_se.min()):.2f}–{float(T_se.max()):.2f}): layers 1–2 "
        f"{float(T.sel(layer=1)):.2f} and {float(T.sel(layer=2)):.2f}, lowest "
        f"{float(T.min()):.2f} (layer {at(T, 'argmin')}), highest {float(T.max()):.2f} "
        f"(layer {at(T, 'argmax')}); the zoo's run from {float(zT.min()):.1f} to "
        f"{float(zT.max()):.1f}. The LLM's spectra are steeper (more concentrated) in every "
        f"layer; the rank correlation of $T_{{spec}}$ with depth is {rho:+.2f}.\n"
        f"* The first five modes carry {float(top5.min()):.0%}–{float(top5.max()):.0%} of "
        f"the fluctuation energy (most in layer {at(top5, 'argmax')}).\n"
        f"* $H^*(0.10)$ = {int(H.min())}–{int(H.max())} modes, far below the ceiling "
        f"{n - 1} in every layer (lowest in layer {at(H, 'argmin')}); the zoo needs "
        f"{int(zH.min())}–{int(zH.max())}.\n"
        f"* The first run of sink layers, {first[0]}–{first[-1]}, has $H^*$ "
        f"{int(H.sel(layer=first).min())}–{int(H.sel(layer=first).max())} and "
        f"$T_{{spec}}$ {float(T.sel(layer=first).min()):.2f}–"
        f"{float(T.sel(layer=first).max()):.2f}; the later layers with a similar sink share "
        f"have $H^*$ {int(H.sel(layer=later).min())}–{int(H.sel(layer=later).max())} and "
        f"$T_{{spec}}$ {float(T.sel(layer=later).min()):.2f}–"
        f"{float(T.sel(layer=later).max()):.2f}, so across all layers the correlation with "
        f"the sink share is only {r_H:+.2f} ($H^*$) and {r_T:+.2f} ($T_{{spec}}$). Whatever "
        "organises these spectra over depth, it is not the early-distributed / "
        "late-concentrated pattern of C3."
    )


def llm_table(rows) -> str:
    """The LLM's scorecard rows (:func:`~msapod.studies.verdict.scorecard.llm_rows`) as a
    Markdown table: claim, the paper's words, the measurement, the verdict (bold) and the
    rule."""
    lines = [
        "| claim | the paper says | we measure (SmolLM2) | verdict (SmolLM2) | rule |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['claim']} | {r['paper']} | {r['measured']} | **{r['verdict']}** | {r['rule']} |"
        for r in rows
    ]
    return "\n".join(lines)


# --- the windows page -------------------------------------------------------------------


def window_sensitivity(sens: xr.Dataset) -> str:
    """How the window rules move the scale-1 :math:`T_\\mathrm{spec}` and
    :math:`H^*(0.10)` (``sens``: one analysis per rule along ``rule``, the first the
    default, each with ``T_spec`` and ``H_star`` per layer), as a Markdown list and a
    closing sentence: the largest move per rule, the spread over rules against the spread
    between layers, and whether the layers keep their order."""
    rules = [str(r) for r in sens["rule"].values]
    base = sens.sel(rule=rules[0])
    lines = []
    for label in rules[1:]:
        dT = abs(sens["T_spec"].sel(rule=label) - base["T_spec"]).to_pandas()
        dH = abs(sens["H_star"].sel(rule=label) - base["H_star"]).to_pandas()
        rel = (dT / base["T_spec"].to_pandas()).max()
        sym = label.replace("kappa", "$\\kappa$")
        lines.append(
            f"* {sym}: $T_\\mathrm{{spec}}$ moves by at most {dT.max():.2f} (at most "
            f"{100 * rel:.0f} % relative) and $H^*(0.10)$ by at most {int(dH.max())} modes "
            f"(layer {int(dH.idxmax())})."
        )
    spread = (sens["T_spec"].max("rule") - sens["T_spec"].min("rule")).to_pandas()
    inter = float(base["T_spec"].max() - base["T_spec"].min())
    orders = {
        r: tuple(int(x) for x in sens["T_spec"].sel(rule=r).to_pandas().sort_values().index)
        for r in rules
    }
    text = (
        f"\nAcross the {len(rules)} rules, the scale-1 $T_\\mathrm{{spec}}$ of a single layer "
        f"spreads by up to {spread.max():.2f} (layer {int(spread.idxmax())}), while under the "
        f"default rules it differs between layers by up to {inter:.2f}. "
    )
    if len(set(orders.values())) == 1:
        text += (
            f"The ordering of the layers by scale-1 $T_\\mathrm{{spec}}$ is the same under all "
            f"{len(rules)} rules."
        )
    else:
        text += (
            "The ordering of the layers by scale-1 $T_\\mathrm{spec}$ changes between rules: "
            + "; ".join(f"{k}: layers {plots.enumeration(v)}" for k, v in orders.items())
            + "."
        )
    return "\n".join([*lines, text])


# --- the spectral concentration page --------------------------------------------------


def c3_lines(mv, top5: xr.DataArray, zoo: str | None = None) -> str:
    """C3 under the default reading as a Markdown list: :math:`T_\\mathrm{spec}` of the
    early and the late layers, the paper's "about 1.0" with the rule's cases, the
    late − early contrast with the rule's cases, and, as a comparison reading of
    "concentrated", the share of the energy in the first five modes (``top5``, dims
    ``(model, layer)``)."""
    c = REGISTRY["C3"]
    n = reading_numbers("C3", mv, zoo)["stat"]
    early, late = n.sel(layer=list(c.layers)), n.sel(layer=[5, 6])
    parts = rule_parts("C3", mv, zoo)
    conc = top5.sel(layer=[5, 6]).mean("layer") > top5.sel(layer=list(c.layers)).mean("layer")
    return "\n".join(
        [
            f"* $T_\\mathrm{{spec}}$ of layers {cl.layer_span(list(c.layers))}: {_rng(early)} "
            f"over models and layers; the paper's 'about {c.about:.1f}', read as within "
            f"±{100 * c.tolerance:.0f} %, per model and layer with its 95 % interval: "
            f"{parts.get('a', '—')}.",
            f"* $T_\\mathrm{{spec}}$ of layers 5–6: {_rng(late)}. Late minus early, per model "
            f"with its interval (the rule asks for late < early): {parts.get('core', '—')}. "
            "A larger $T_\\mathrm{spec}$ is a *flatter* power law, i.e. a less concentrated "
            "spectrum by this index.",
            "* A comparison reading of 'concentrated', the share of the energy in the first "
            f"five modes (point values): layers 1–2 {_rng(top5.sel(layer=[1, 2]))}, layers 5–6 "
            f"{_rng(top5.sel(layer=[5, 6]))}; late layers concentrate more energy in their "
            f"first five modes than early layers in {int(conc.sum())} of {conc.size} models.",
        ]
    )


def sign_text(claim: str, mv, zoo: str | None = None) -> str:
    """Where the per-layer EGA − baseline difference of ``claim`` (the default reading's)
    has the sign the claim states, and where its 95 % interval excludes zero."""
    sub, _ = cl._claim_specs(claim, mv, zoo)
    row = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))
    signs = REGISTRY[claim].signs
    layers = [int(la) for la in row["layer"].values] if None in signs else list(signs)
    want = {la: signs.get(la, signs.get(None)) for la in layers}
    d, lo, up = (row[k] for k in ("diff", "diff_lower", "diff_upper"))
    same = [la for la, s in want.items() if np.sign(float(d.sel(layer=la))) == s]
    sig = [la for la in want if float(lo.sel(layer=la)) > 0 or float(up.sel(layer=la)) < 0]

    def where(ls):
        return f"layers {plots.enumeration(ls)}" if ls else "no layer"

    return (
        f"The differences have the paper's sign in {where(same)} of layers "
        f"{cl.layer_span(layers)}; the 95 % interval excludes zero in {where(sig)}."
    )
