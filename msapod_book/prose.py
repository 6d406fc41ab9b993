"""Sentences and tables of the book's method pages: what a page's live computation or a
shipped study shows, in words.

Each function takes what a page has computed or loaded (a live check, a shipped result
of ``results/``, the trained zoo) and returns Markdown, a sentence or a table, so that a
page cell holds a single call; a few return the numbers such a sentence reads
(:func:`coherency_of`, :func:`line_lengths`,
:func:`sink_layers`). None decides a claim: a claim's numbers and verdicts come from
the curve and the renderer (:mod:`msapod_book.pages`,
:mod:`msapod.studies.verdict.render`), and the training summary quotes claim L's
sentence from the curve (:func:`msapod_book.pages.loss_text`).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr

from msapod.studies.registry import REGISTRY
from msapod.studies.verdict.render import word

from . import plots
from .pages import loss_difference, loss_text

__all__ = [
    "EGA_PAPER",
    "architecture_overlap",
    "causality_text",
    "coherency_checks",
    "coherency_of",
    "coherency_reading",
    "coherency_table",
    "convergence_text",
    "depth_trend_text",
    "differences_text",
    "jackknife_text",
    "layer_extremes",
    "layer_order_text",
    "line_lengths",
    "llm_ensemble_facts",
    "llm_sink_facts",
    "llm_spectra_depth",
    "llm_token_lengths",
    "loss_table",
    "mean_inclusive_text",
    "mode_table",
    "nan_rows_note",
    "overhead_summary",
    "retraining_text",
    "revivals_text",
    "seeds_text",
    "separation_lines",
    "sign_pattern_lines",
    "sink_layers",
    "split_gap_text",
    "spread_summary",
    "stages_text",
    "subensemble_text",
    "theorem1_text",
    "threshold_text",
    "training_summary",
    "tspec_n_text",
    "window_sensitivity",
]


# --- the scalogram and POD pages ------------------------------------------------------


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
        f"half-ensemble lose {plots.number(np.nanmin(m_half))} "
        f"({plots.number(100 * np.nanmin(m_half / pod), 2)} % of the optimum), the best of "
        f"{rand.shape[0]} random bases loses {plots.number(m_rand.min())} "
        f"({plots.number(100 * (m_rand / pod).min(), 2)} %). Competitor errors at or below the "
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
            "lag spread φ1 plain": plots.span(ls.sel(window="plain").values),
            "lag spread φ1 scale-sel.": plots.span(ls.drop_sel(window="plain").values),
            "scale spread φ1 plain": plots.span(ss.sel(window="plain").values),
            "scale spread φ1 scale-sel.": plots.span(ss.drop_sel(window="plain").values),
        }
    n_l, n_s = int(np.isfinite(ratio_l).sum()), int(np.isfinite(ratio_s).sum())
    text = (
        f"The scale-selective modes are narrower in lag than the plain mode of the same "
        f"index in {plots.number(100 * float((ratio_l < 1).sum()) / n_l, 2)} % of {n_l} (model, "
        f"layer, window, mode) cases (median ratio {plots.number(float(ratio_l.median()))}), and "
        f"narrower in scale in {plots.number(100 * float((ratio_s < 1).sum()) / n_s, 2)} % of "
        f"{n_s} cases (median ratio {plots.number(float(ratio_s.median()))})."
    )
    return pd.DataFrame(rows).T.rename_axis("layer"), text


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
        f"models shown: row{'s' if len(rows) != 1 else ''} {plots.enumeration(rows)}. {why} "
        "NaN entries are shown grey in the matrices and left out of every average (`np.nanmean`)."
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
        "single shared key, shifted from row to row, would make it end (to within one step "
        "of the retained rows, 4 characters): the coherency there marks the same key seen "
        "from neighbouring queries, a local effect, not a pattern that recurs. "
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


# --- the energy-gated attention and training pages ------------------------------------


#: What the energy-gated attention paper states besides its loss claim (L, in the
#: registry): its parameter overhead bound and the threshold its gates converge near.
EGA_PAPER = {"overhead_pct": 0.26, "threshold": 0.35, "threshold_tolerance": 0.10}


def loss_table(models=None) -> pd.DataFrame:
    """Per model (default: the trained models of the main zoo): its architecture, the
    training steps done and planned, the validation loss over the whole split (the one
    claim L is decided on, ``val_loss_split``) and the last 20-batch estimate of the
    training curve (``log.json``, a diagnostic)."""
    from msapod.models import zoo

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
    counts = table[["standard", "EGA", "extra"]].astype(int)
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
    for col in counts:  # parameter counts with thousands separators
        table[col] = [f"{int(x):,}" for x in counts[col]]
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


def training_summary(target: float, mv, models=None) -> str:
    """The zoo's training outcome as a Markdown list: how many models reach the
    ``target`` validation loss over the whole split, the loss per architecture (mean ±
    half-range over seeds) and claim L's numbers from the curve ``mv``
    (:func:`~msapod_book.pages.loss_text`)."""
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
        f"* {loss_text(mv)} The verdict on the EGA paper's claim is drawn on the "
        "[EGA page](09-energy-gated-attention.md).",
    ]
    if len(unfinished):
        lines.append(
            f"* Still training when the results were made: {plots.enumeration(list(unfinished))}; "
            "their numbers are provisional."
        )
    return "\n".join(lines)


# --- the uncertainty and convergence page ---------------------------------------------


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
    seeds_dominate = float(spread.max()) > 2 * float(unc["scale_centroid_se"].max())
    return (
        f"The jackknife SE of the scale centroid is {plots.span(unc['scale_centroid_se'])} "
        f"characters, of $T_{{\\text{{spec}}}}$ {plots.span(se_t)}, and of the fractional "
        f"$H^*(0.10)$ {plots.span(se_h, 2)} modes. The integer $H^*$'s own jackknife SE is exactly "
        f"0 in {int((h_int == 0).sum())} of {h_int.size} layers. The spread of the centroid "
        f"between the seeds of one architecture is up to {plots.number(float(spread.max()))} "
        f"characters (layer {worst}), "
        + (
            "more than twice the largest snapshot SE: **for claims about an architecture, the "
            "seeds dominate the uncertainty**, and one seed (as in the paper) cannot show it."
            if seeds_dominate
            else "at most twice the largest snapshot SE: the seeds add about as much "
            "uncertainty as the snapshots."
        )
    )


def differences_text(diffs: pd.DataFrame, n_seeds: str, df: int) -> str:
    """How many layer-wise architecture differences (``diffs``, a boolean column
    ``"excludes 0 (layer alone)"``) exclude zero, each layer on its own, with
    ``n_seeds`` seeds per architecture and ``df`` degrees of freedom; and what the
    verdicts read instead."""
    k, n = int(diffs["excludes 0 (layer alone)"].sum()), len(diffs)
    how = "mostly not" if k < n / 4 else "partly"
    return (
        f"{k} of {n} layer-wise architecture differences have a 95 % interval that excludes "
        f"zero, each layer taken alone. With {n_seeds} seeds per architecture ({df} degrees "
        "of freedom) the t-interval is wide; the differences the paper reads from one model "
        f"pair (C7, C8) are, with these data, {how} distinguishable from seed-to-seed "
        "variation. The verdicts of C7 and C8 ask more than a difference from zero: a ratio "
        "beyond their smallest effect of interest (10 % and 5 %) by its 90 % Welch interval "
        "over the seeds, in every layer C7 names. The pages of the claims and the scorecard "
        "print those."
    )


def convergence_text(conv: xr.Dataset, eps: float = 0.10) -> str:
    """How :math:`H^*(\\varepsilon)` grows with :math:`N` (``conv``:
    ``results/convergence.nc``): the factor of the last doubling, how often it is pinned at
    the ceiling :math:`N - 1`, its share of the ceiling, and its order across layers at
    the largest :math:`N`."""
    ns = conv["n"].values
    h = conv["H_star"].sel(eps=eps)
    ratio = h.sel(n=ns[-1]) / h.sel(n=ns[-2])
    frac = h / (h["n"] - 1)  # per model, layer and N
    pinned = conv["at_rank_limit"].sel(eps=eps)
    means = h.mean("model")
    kept = all(
        list(np.argsort(means.sel(n=n).values)) == list(np.argsort(means.sel(n=ns[-1]).values))
        for n in ns
    )
    order = ", ".join(
        f"layer {int(la)}: {plots.number(float(v), whole=True)}"
        for la, v in h.sel(n=ns[-1]).mean("model").to_series().items()
    )
    return (
        f"$H^*({eps:.2f})$ keeps growing with $N$: raising $N$ from {ns[-2]} to {ns[-1]} "
        f"(×{ns[-1] / ns[-2]:.2g}) multiplies it by {plots.span(ratio)} (per model and layer). "
        "It never reaches the ceiling "
        f"$N-1$ at eps = {eps:.2f} ({int(pinned.sum())} of {pinned.size} cases pinned), but it "
        f"stays a large fraction of it: {plots.span(frac)} of $N - 1$ per model and layer "
        f"(layer means {plots.span(frac.mean('model'))}). **$H^*$ has not converged "
        f"at $N = {ns[-1]}$**: it measures the ensemble size as much as the layer. The layer "
        f"means at N = {ns[-1]}: {order}; "
        + (
            "the layers keep their order at every N."
            if kept
            else "the order of the layers changes with N, so even the ranking of the layers is "
            "not settled."
        )
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


def tspec_n_text(conv: xr.Dataset) -> str:
    """How :math:`T_\\mathrm{spec}` moves with :math:`N` with the default fit range and
    with a fixed one (``conv``: ``results/convergence.nc``, layer means)."""
    ns = conv["n"].values
    td, tf = conv["T_spec"].mean("model"), conv["T_spec_fixed"].mean("model")
    first, last = ns[0], ns[-1]
    return (
        f"With the default fit range ($k \\le N/2$), $T_{{\\text{{spec}}}}$ falls from "
        f"{plots.span(td.sel(n=first))} at N = {first} to {plots.span(td.sel(n=last))} at "
        f"N = {last} (layer means): as N grows, the range k <= N/2 reaches further down the "
        "spectrum, into its steeper tail, so the fitted decay steepens and T_spec falls; the "
        "default T_spec is an **N-dependent** number. With the fit range held fixed "
        f"(k = {conv.attrs['fixed_k']}) it moves from {plots.span(tf.sel(n=first))} to "
        f'{plots.span(tf.sel(n=last))}. The paper\'s "T_spec ≈ 1 in early layers" (C3) therefore '
        "depends on N and on the fit range; the scorecard tests it at the paper's N = 150 "
        f"and quotes N = {int(last)} beside it."
    )


def seeds_text(zoo_name: str | None = None) -> str:
    """The trained seeds per architecture of a zoo (default: the main one), from
    :func:`msapod.zoo.trained`: ``"4"``, or ``"2–4"`` when the architectures differ."""
    from msapod.models import zoo

    kw = {} if zoo_name is None else {"zoo": zoo_name}
    n = [len(zoo.trained(architecture=a, **kw)) for a in zoo.ARCHITECTURES]
    return str(min(n)) if min(n) == max(n) else f"{min(n)}–{max(n)}"


# --- the LLM page ---------------------------------------------------------------------


def llm_ensemble_facts(ds: xr.Dataset) -> str:
    """The LLM ensemble in tokens (``ds``: ``results/llm.nc``) as a Markdown list: the
    split's characters per token, the snippets' span in characters, and why the span,
    not the number of positions, matches the zoo's."""
    cpt = float(ds.attrs["ensemble_chars_per_token"])  # characters per token of the snippets
    n, L = int(ds.attrs["n_snapshots"]), ds.sizes["query"]
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
        "position. In lag coordinates it is a ridge at $\\tau = i$. The scalogram of $A$ "
        "(C1, C2, the scale centroid) contains the whole ridge; the POD (C3, C5) sees only "
        "its fluctuations (how much each snippet parks there), since the Reynolds split "
        "removes its ensemble mean. The character models show nothing like it."
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


# --- the windows page -----------------------------------------------------------------


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


# --- sentences beside the per-layer figures -------------------------------------------


def _layer_counts(layers: xr.DataArray) -> str:
    """``"in layer 6 in 5 of the 8 models and in layer 2 in 3"`` from one layer per model."""
    n = layers.sizes["model"]
    counts = pd.Series(layers.values.astype(int)).value_counts().sort_index()
    counts = counts.sort_values(ascending=False, kind="stable")
    if len(counts) == 1:
        return f"in layer {counts.index[0]} in all {n} models"
    parts = [f"in layer {la} in {c}" for la, c in counts.items()]
    parts[0] += f" of the {n} models"
    return plots.enumeration(parts)


def layer_extremes(values: xr.DataArray, what: str) -> str:
    """Which layer holds each model's largest and which its smallest value, counted over
    the models (``values`` over ``model`` and ``layer``; ``what`` names the quantity):
    ``"T_spec is largest in layer 1 in all 8 models; it is smallest in layer 6 in 5 of the
    8 models and in layer 2 in 3."``"""
    v = values.transpose("model", "layer")
    return (
        f"{what} is largest {_layer_counts(v.idxmax('layer'))}; it is smallest "
        f"{_layer_counts(v.idxmin('layer'))}."
    )


def architecture_overlap(values: xr.DataArray) -> str:
    """Per layer, whether the ranges over the seeds of the two architectures overlap
    (``values`` over ``model``, with an ``architecture`` coordinate, and ``layer``), as a
    clause: ``"the seeds of the two architectures overlap in every layer"``."""
    lo = values.groupby("architecture").min("model")
    hi = values.groupby("architecture").max("model")
    if lo.sizes["architecture"] != 2:
        raise ValueError(f"values: expected two architectures, got {lo.sizes['architecture']}")
    a, b = (lo.isel(architecture=i, drop=True) for i in (0, 1))
    ha, hb = (hi.isel(architecture=i, drop=True) for i in (0, 1))
    overlap = (a <= hb) & (b <= ha)
    apart = [int(la) for la in overlap["layer"].values if not bool(overlap.sel(layer=la))]
    if not apart:
        return "the ranges over the seeds of the two architectures overlap in every layer"
    together = [int(la) for la in overlap["layer"].values if int(la) not in apart]
    head = f"overlap in layers {plots.enumeration(together)} and " if together else ""
    return (
        f"the ranges over the seeds of the two architectures {head}are apart in "
        f"layer{'s' if len(apart) > 1 else ''} {plots.enumeration(apart)}"
    )


def depth_trend_text(H: xr.DataArray, early=(1, 2), deep=(5, 6)) -> str:
    """Whether the effective rank ``H`` (over ``model`` and ``layer``) falls with depth,
    the premise of C6, measured two ways: the least-squares slope over all layers and
    models, and per model the mean of the ``deep`` layers against that of the ``early``
    ones; and the layer of the lowest model-mean rank. Says how this differs from C5's
    comparison (the early layers against the mean of all the others)."""
    Hm = H.transpose("model", "layer")
    layers = Hm["layer"].values
    slope = float(np.polyfit(np.tile(layers, Hm.sizes["model"]), Hm.values.ravel(), 1)[0])
    gap = Hm.sel(layer=list(deep)).mean("layer") - Hm.sel(layer=list(early)).mean("layer")
    fewer = int((gap < 0).sum())
    n = Hm.sizes["model"]
    low = int(Hm.mean("model").idxmin("layer"))
    e, d = (f"{s[0]}–{s[-1]}" if len(s) > 1 else str(s[0]) for s in (early, deep))
    falls = slope < 0 and fewer > n / 2
    text = (
        f"C6's argument needs the effective rank to fall with depth, so that the deep layers "
        f"need the fewest modes. C5's test above asks something narrower: whether layers {e} "
        f"need more modes than the other layers on average. Over all {len(layers)} layers, "
        f"$H^*(0.10)$ changes by {slope:+.1f} modes per layer (least-squares slope over all "
        f"models); layers {d} need fewer modes than layers {e} in {fewer} of {n} models "
        f"(deep minus early: {float(gap.min()):+.1f} to {float(gap.max()):+.1f} modes); "
        f"the lowest mean rank is in layer {low}. "
    )
    if falls:
        return text + "The rank falls with depth, as the argument needs."
    where = (
        f" The early layers can exceed the average of the others (C5) because the rank dips "
        f"in layer {low}, not because it falls towards the deep layers."
        if layers[0] < low < layers[-1]
        else ""
    )
    return text + "The rank does not fall with depth, so the premise of the argument fails." + where


def layer_order_text(values: xr.DataArray, dim: str = "n") -> str:
    """Whether the layers keep their order (largest first) along ``dim`` (``values`` over
    ``dim`` and ``layer``), as a clause: the order at every ``dim``, or how often it changes
    and the orders at the first and the last."""
    ns = [int(x) for x in values[dim].values]
    orders = {
        n: [int(la) for la in values.sel({dim: n}).to_pandas().sort_values(ascending=False).index]
        for n in ns
    }
    changes = sum(orders[a] != orders[b] for a, b in zip(ns, ns[1:], strict=False))
    if not changes:
        return (
            f"only the order of the layers is the same at every {dim.upper()}: layers "
            f"{plots.enumeration(orders[ns[0]])}, largest first"
        )
    return (
        f"even the order of the layers changes with {dim.upper()} ({changes} of the "
        f"{len(ns) - 1} steps in {dim.upper()} change it); largest first, layers "
        f"{plots.enumeration(orders[ns[0]])} at {dim.upper()} = {ns[0]}; layers "
        f"{plots.enumeration(orders[ns[-1]])} at {dim.upper()} = {ns[-1]}"
    )


def subensemble_text(ratio: pd.DataFrame, n: int) -> str:
    """What the sub-ensemble check of the jackknife shows (``ratio``: one row per group
    size, columns ``"consecutive"`` and ``"random"``: the sub-ensemble estimate of the
    standard error over the jackknife's, for groups of consecutive snippets and of
    randomly drawn ones; ``n`` snippets in all). A spread of ``g`` group values is itself
    uncertain by about :math:`1/\\sqrt{2(g-1)}`; the sentence says which estimates agree
    with the jackknife within that, and what a difference between the two kinds of
    groups means."""
    sizes = [int(s) for s in ratio.index]
    tol = pd.Series({s: 1 / np.sqrt(2 * (n // s - 1)) for s in sizes})
    ok = {c: bool((abs(ratio[c] - 1) <= tol).all()) for c in ("consecutive", "random")}

    def times(c):
        return plots.enumeration([plots.number(float(ratio.loc[s, c]), 2) for s in sizes])

    groups = plots.enumeration([f"{n // s} groups of {s}" for s in sizes])
    bounds = plots.enumeration([f"±{100 * float(tol[s]):.0f} %" for s in sizes])
    text = (
        f"With {groups}, the sub-ensemble estimate is {times('consecutive')} times the "
        f"jackknife for groups of consecutive snippets and {times('random')} times for "
        f"groups drawn at random; the spread of so few groups is itself uncertain by about "
        f"{bounds}. "
    )
    grows = bool(np.all(np.diff(ratio.loc[sizes, "consecutive"].to_numpy()) > 0))
    if ok["random"] and not ok["consecutive"]:
        return text + (
            "Random groups agree with the jackknife within that; consecutive ones do not"
            + (", and their excess grows with the group size" if grows else "")
            + ". So the excess is not a small-sample effect of the groups (that would "
            "shrink as the groups grow, and would show in random groups too): "
            "the ensemble's snippets are sorted by their place in the text, so a group of "
            "consecutive snippets covers one stretch of the play, and stretches differ "
            "more than random draws do. The jackknife treats the "
            "snippets as independent draws from the whole split, as the random groups do, "
            "and agrees with them."
        )
    if ok["random"] and ok["consecutive"]:
        return text + "Both agree with the jackknife within that uncertainty."
    off = [c for c in ("consecutive", "random") if not ok[c]]
    excess = max(float((abs(ratio[c] - 1) / tol).max()) for c in off)  # in units of tol
    which = (
        f"{'Consecutive' if ok['consecutive'] else 'Random'} groups agree with the jackknife "
        f"within that, {off[0]} ones do not"
        if len(off) == 1
        else "Both kinds of groups disagree with the jackknife by more than that"
    )
    if excess < 1.5:
        return text + (
            f"{which}, but by at most {excess:.1f} times that uncertainty: with so few "
            "groups, no clear disagreement with the jackknife."
        )
    return text + (
        f"{which}, by up to {excess:.1f} times that uncertainty: the scaling by the square "
        "root of the group size does not hold for the centroid at these sizes (it is a "
        "ratio of sums over the ensemble, biased in small groups)."
    )


def stages_text(table: pd.DataFrame) -> str:
    """Per claim, the verdict at each stage of training, consecutive steps with the same
    verdict merged (``table``: :func:`msapod.studies.verdict.trajectory.step_verdicts`,
    codes), as Markdown bullets."""
    steps = [int(s) for s in table.columns]
    lines = []
    for claim, row in table.iterrows():
        runs, start = [], 0
        words = list(row.values)
        for i in range(1, len(words) + 1):
            if i == len(words) or words[i] != words[start]:
                a, b = steps[start], steps[i - 1]
                where = f"step {a}" if a == b else f"steps {a}–{b}"
                runs.append(f"{word(words[start])} at {where}")
                start = i
        text = "; ".join(runs) if len(runs) > 1 else f"{word(words[0])} at every step"
        lines.append(f"* **{claim}** ({REGISTRY[claim].paper}): {text}.")
    return "\n".join(lines)


def retraining_text(
    final: pd.DataFrame, init_identical: dict, losses: pd.DataFrame | None = None
) -> tuple[str, str]:
    """What a second run of the training recipe reproduces: the initialisation
    (``init_identical``: per model, whether the retraining's step-0 weights have the sha256
    of the weights the seed gives) and the final weights (``final``:
    :func:`msapod.studies.measure.trajectory.final_comparison`), with the loss difference
    against the range of the whole-split loss over the seeds of the model's architecture
    (``losses``: :func:`loss_table` of the models' zoo; default: read from the zoo that
    holds the first model). Returns a Markdown list and a one-sentence takeaway."""
    models = list(final.index)
    if losses is None:
        from msapod.models import zoo

        name = next(z for z, members in zoo.ZOOS.items() if models[0] in members)
        losses = loss_table(zoo.trained(zoo=name))
    same_init = [m for m in models if init_identical[m]]
    same_end = [m for m in models if final.loc[m, "identical"] == "yes"]
    other_end = [m for m in models if m not in same_end]
    split = "val loss, whole split (L)"
    spread = losses.groupby("architecture")[split].agg(lambda x: x.max() - x.min())
    rng = {m: float(spread[losses.loc[m, "architecture"]]) for m in models}
    lines = [
        "* **The initialisation**: the step-0 weights of "
        + (
            f"{plots.enumeration(same_init)} are identical, bit for bit (sha256), to the "
            "weights their seed gives, made again here."
            if same_init == models
            else f"{plots.enumeration([m for m in models if m not in same_init])} differ "
            "from the weights their seed gives (sha256)."
        )
    ]
    if same_end:
        lines.append(
            f"* **The final weights** of {plots.enumeration(same_end)} are identical, bit "
            "for bit, to the shipped ones."
        )
    if other_end:
        gaps = plots.enumeration(
            [
                f"{plots.number(abs(float(final.loc[m, 'difference'])), 2)} nats/char ({m}; "
                f"its architecture's seeds span {plots.number(rng[m], 2)})"
                for m in other_end
            ]
        )
        smaller = all(abs(float(final.loc[m, "difference"])) < rng[m] for m in other_end)
        lines.append(
            f"* **The final weights** of {plots.enumeration(other_end)} differ from the "
            f"shipped ones (sha256). Their whole-split validation losses differ by {gaps}: "
            + (
                "less than the seeds of one architecture differ."
                if smaller
                else "not less than the seeds of one architecture differ."
            )
        )
    if not other_end:
        takeaway = "A second run of the recipe reproduces the trained weights bit for bit."
    else:
        start = (
            "starts from the same weights, bit for bit, but ends" if same_init == models else "ends"
        )
        takeaway = f"A second run of the same recipe {start} in other weights (sha256)" + (
            ", with a validation loss that differs from the first run's by less than the "
            "span of its architecture's seeds (largest minus smallest): the recipe "
            "reproduces the loss to within the seed spread, not the bits."
            if all(abs(float(final.loc[m, "difference"])) < rng[m] for m in other_end)
            else "."
        )
    return "\n".join(lines), takeaway
