"""What the book's pages print beside a claim, read from the shipped curve.

A page states its reading once (:func:`reading_note`), shows a claim's verdict box
(:func:`show_verdict`) with the replicates behind it (:func:`forest`,
:func:`model_table`), and other readings only as labelled comparisons
(:func:`comparison_line`). Every number comes from the curve (``multiverse.nc``,
:mod:`msapod.studies.verdict.curve`), the scorecard or the zoo; every sentence about a
verdict from :mod:`msapod.studies.verdict.render`. A page cell holds a single call.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr

from msapod.studies.measure.uncertainty import t_quantile
from msapod.studies.registry import JOINT_STATISTIC, REGISTRY, qualified_id
from msapod.studies.verdict import render
from msapod.studies.verdict.curve import (
    CURVE_AXES,
    MAIN_READING,
    NULL_COLUMNS,
    READING_TAGS,
    claim_axes,
)
from msapod.studies.verdict.joint import STATISTICS

from . import plots

__all__ = [
    "PAGE_NAMES",
    "arch_difference",
    "assurance",
    "axes_markdown",
    "budget_contrasts",
    "capacity",
    "claimed_signs",
    "claims_markdown",
    "comparison_line",
    "departures_table",
    "dominant_scale_table",
    "edge_text",
    "flips_table",
    "forest",
    "headline",
    "joint_table",
    "llm_scale_depth",
    "llm_scale_facts",
    "llm_table",
    "loss_difference",
    "loss_text",
    "model_table",
    "null_table",
    "other_zoos",
    "page_links",
    "reading_note",
    "rule_lines",
    "rules_markdown",
    "scorecard_markdown",
    "show_verdict",
    "spec_curves",
    "tests_overview",
    "tests_table",
    "verdict_legend",
    "verdict_markdown",
    "verdict_shares",
    "zoo_models",
    "zoo_verdicts",
    "zoo_width",
]


def _tags(mv) -> dict:
    return {a: v["tag"] for a, v in json.loads(str(mv.attrs.get("reading_tags", "{}"))).items()}


def reading_note(mv, claims) -> str:
    """The page's reading, stated once (a MyST admonition with the CSS class ``reading``):
    the book's default reading of every axis the ``claims`` depend on, each tagged *paper*
    or *book*, and the unit of inference."""
    axes = [a for a in CURVE_AXES if any(a in claim_axes(c) for c in claims) and a != "unit"]
    words = render.reading_words(MAIN_READING, axes, _tags(mv))
    ids = plots.enumeration(claims)
    what = f"the book's default reading of the paper: {words}" if words else "one reading"
    return (
        "```{admonition} The reading of this page\n:class: note reading\n"
        f"Every number printed beside {ids} and every verdict box on this page is {what}; "
        "the training seeds are the replicates (an interval over the models of the main "
        "zoo). Any other reading appears only as a labelled comparison; the "
        "[scorecard](14-scorecard.md) runs them all.\n```"
    )


def _null_line(mv: xr.Dataset, claim: str) -> str:
    parts = []
    for null in NULL_COLUMNS:
        code = str(mv["null_verdict"].sel(claim=claim, null=null).values)
        if code:
            parts.append(f"{null} {render.word(code)}")
    return "; ".join(parts)


def verdict_markdown(mv: xr.Dataset, claim: str, zoo: str | None = None) -> str:
    """The claim's verdict box: the verdict of the book's default reading and what it
    means, each test's line, the robustness, the joint test, the null columns and the
    reading. Written as CommonMark inside an HTML ``<div class="admonition verdict
    claim-<id>">`` (the id in lower case, as docutils writes a class; the title as
    ``admonition-title``), so that it renders as the same box on the site (MyST) and in a
    notebook run in Jupyter or Colab (CommonMark)."""
    import html

    c = REGISTRY[claim]
    z = zoo or str(mv.attrs["main_zoo"])
    code = render.main_code(mv, claim, z)
    j = render.spec_index(mv, claim, z)
    why = str(mv["claim_reason"].sel(claim=claim).values[j]) if code == "untestable" else ""
    first = (
        f"**{render.word(code)}** on the {z} zoo (the book's default reading): "
        f"{why or render.MEANING[code]}."
    )
    items = []
    if c.kind == "theorem":
        g = {k: float(mv[f"theorem_{k}"].values[j]) for k in ("gap", "beaten", "trials")}
        items.append(render.theorem_text(g["gap"], g["beaten"], g["trials"]))
    else:
        items += [render.test_line(v) for v in render.claim_views(mv, claim, z)]
    items.append("Robustness: " + render.robustness_sentence(mv, claim))
    joint = render.joint_sentence(mv, claim)
    items.append(joint[0].upper() + joint[1:])
    nulls = _null_line(mv, claim)
    if nulls:
        items.append(f"Null columns: {nulls}")
    others = [o for o in str(mv.attrs.get("zoos", "")).split(",") if o and o != z]
    for o in others:
        items.append(f"On the {o} zoo: {render.word(render.main_code(mv, claim, o))}")
    axes = [a for a in claim_axes(claim) if a != "unit"]
    reading = render.reading_words(MAIN_READING, axes, _tags(mv))
    if reading:
        items.append(f"Reading: {reading}")
    items.append(f"[The rule in full](#rule-{claim.lower()})")
    title = html.escape(f"{claim}: {c.paper}")
    return (
        f'<div class="admonition verdict claim-{claim.lower()}">\n'
        f'<p class="admonition-title">{title}</p>\n\n'
        + first
        + "\n\n"
        + "\n".join(f"* {x}" for x in items)
        + "\n\n</div>"
    )


def show_verdict(mv: xr.Dataset, claim: str, zoo: str | None = None):
    """:func:`verdict_markdown` as an ``IPython.display.Markdown``."""
    from IPython.display import Markdown

    return Markdown(verdict_markdown(mv, claim, zoo))


def tests_table(mv, claims, zoo: str | None = None, **axes) -> pd.DataFrame:
    """One row per test of ``claims`` under the default reading (or the one differing
    in ``axes``): the statistic, its estimate with the 90 % interval over the models,
    what the claim needs (the boundary of the smallest effect) and the test's verdict."""
    rows = []
    for c in claims:
        for v in render.claim_views(mv, c, zoo, **axes):
            t = v.test
            rows.append(
                {
                    "claim": v.id,
                    "statistic": t.words,
                    "estimate [90 % interval]": (
                        f"{plots.number(v.estimate)} [{plots.number(v.lower)}, "
                        f"{plots.number(v.upper)}]"
                        if v.code != "untestable"
                        else plots.MISSING
                    ),
                    "the claim needs": render.needs_text(t, v),
                    "verdict": render.word(v.code),
                }
            )
    return pd.DataFrame(rows).set_index("claim")


def model_table(mv, claim: str, zoo: str | None = None, **axes) -> pd.DataFrame:
    """The replicates of each test of ``claim``: one row per model of ``zoo`` (its
    architecture), one column per test, the statistic on its own scale."""
    z = zoo or str(mv.attrs["main_zoo"])
    models = mv["model"].values[mv["model_zoo"].values == z]
    arch = mv["architecture"].values[mv["model_zoo"].values == z]
    cols = {}
    for v in render.claim_views(mv, claim, z, **axes):
        label = " ".join(x for x in (v.test.part, v.test.case) if x) or claim
        cols[label] = [plots.number(float(x)) for x in v.values]
    table = pd.DataFrame(cols, index=pd.Index([str(m) for m in models], name="model"))
    table.insert(0, "architecture", [str(a) for a in arch])
    return table


def comparison_line(mv, claim: str, zoo: str | None = None, **axes) -> str:
    """The claim under the reading that differs from the default one in ``axes`` (e.g.
    ``field="u"``), labelled a comparison: its verdict and each test's line."""
    if not axes:
        raise ValueError("axes: expected the reading to compare with (e.g. field='u')")
    code = render.main_code(mv, claim, zoo, **axes)
    lines = "; ".join(render.test_line(v) for v in render.claim_views(mv, claim, zoo, **axes))
    label = render.reading_words({**MAIN_READING, **axes}, list(axes), claim=claim)
    return (
        f"For comparison, with the {label}, {claim} would read *{render.word(code)}*: "
        f"{lines}. The verdict above is the default reading's."
    )


def forest(mv, claims, zoo: str | None = None, **axes):
    """The replicates behind verdicts: one panel per test of ``claims`` (a claim id or a
    list), each model's statistic (:func:`msapod.plots.replicates`; with its 90 % snippet
    interval where it has one) beside the zoo-level estimate and its 90 % interval over
    the models, against the boundary of the smallest effect of interest (the side where
    the test holds shaded); the panel title is the test and its verdict. For a contrast of
    the architectures the models' values are drawn with each architecture's mean, and the
    contrast with its interval is in the title."""
    z = zoo or str(mv.attrs["main_zoo"])
    claims = [claims] if isinstance(claims, str) else list(claims)
    views = [  # a test without values (not testable here) has nothing to draw
        (c, v)
        for c in claims
        for v in render.claim_views(mv, c, z, **axes)
        if np.isfinite(v.values).any()
    ]
    keep = mv["model_zoo"].values == z
    arch = [str(a) for a in mv["architecture"].values[keep]]
    q = 1.6448536269514722  # the 90 % normal quantile of a snippet interval
    wide = any(v.test.design == "architecture" for _, v in views)  # a third title line
    fig, axs = plots.panels(len(views), height=2.3, ncols=min(2 if wide else 3, len(views)))
    for ax, (c, v) in zip(axs, views, strict=False):
        j = render.spec_index(mv, c, z, **axes)
        raw = mv["value"].sel(test=v.id).isel(spec=j).values[keep]
        se = mv["value_se"].sel(test=v.id).isel(spec=j).values[keep]
        lo, hi = raw - q * se, raw + q * se
        if v.test.log:
            lo, hi = np.exp(lo), np.exp(hi)
        contrast = v.test.design == "architecture"
        plots.replicates(
            v.values,
            arch,
            lo,
            hi,
            estimate=None if contrast else (v.estimate, v.lower, v.upper),
            boundary=None if contrast else (v.low, v.high),
            direction=v.test.direction,
            ylabel=v.test.words.split(",")[0] if contrast else f"${v.test.symbol}$",
            ax=ax,
            log=v.test.log,
        )
        name = " ".join(x for x in (v.test.part, v.test.case) if x)
        title = f"{name if len(claims) == 1 and name else v.id}\n{render.word(v.code)}"
        if contrast and v.code != "untestable":  # the estimate is EGA against baseline
            op = "/" if v.test.log else "−"
            title += (
                f"\nEGA {op} base {plots.number(v.estimate)} "
                f"[{plots.number(v.lower)}, {plots.number(v.upper)}]"
            )
        ax.set_title(title, fontsize="medium")
    plots.legend_below(fig, axs[:1])
    return fig


def verdict_shares(mv, zoo: str | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """Per claim, how many of its decided readings (every zoo, or ``zoo``) give each
    code, and its default verdict: the inputs of :func:`msapod.plots.verdict_bars`."""
    rows, main = {}, {}
    for c in mv["claim"].values:
        v = mv["verdict"].sel(claim=c).values
        ok = mv["applicable"].sel(claim=c).values & (v != "")
        if zoo is not None:
            ok &= mv["zoo"].values == zoo
        rows[str(c)] = pd.Series(v[ok]).value_counts()
        main[str(c)] = render.main_code(mv, str(c))
    return pd.DataFrame(rows).T.fillna(0).astype(int), pd.Series(main)


def tests_overview(mv, zoo: str | None = None):
    """Every test of every claim under the default reading on one axis: its 90 % interval
    as the distance from the boundary of its smallest effect, in standard errors, the
    claimed side to the right (:func:`msapod.plots.test_distances`)."""
    rows = []
    for c in mv["claim"].values:
        if not REGISTRY[str(c)].tests:
            continue
        j = render.spec_index(mv, str(c), zoo)
        for t in REGISTRY[str(c)].tests:
            tid = qualified_id(str(c), t)
            r = mv.sel(test=tid).isel(spec=j)
            est, se = float(r["estimate"]), float(r["se"])
            lo, hi = float(r["low"]), float(r["high"])
            q = (float(r["upper"]) - est) / se if se > 0 else np.nan
            if t.direction == "greater":
                d = (est - lo) / se
            elif t.direction == "less":
                d = (hi - est) / se
            else:
                d = min(est - lo, hi - est) / se
            rows.append({"test": tid, "distance": d, "q": q, "code": str(r["code"].values)})
    table = pd.DataFrame(rows)
    return plots.test_distances(
        table["test"], table["distance"], table["q"], table["code"], labels=render.WORDS
    )


def spec_curves(mv, claims, zoo: str | None = None):
    """One specification curve per claim (:func:`msapod.plots.specification_curve`): its
    first directional test's estimate with the 90 % interval under every reading of
    ``zoo`` (default the main zoo; the seeds as replicates), sorted, coloured by the test's
    code, with the boundary of its smallest effect."""
    z = zoo or str(mv.attrs["main_zoo"])
    fig, axes = plots.panels(len(claims), height=2.6)
    for ax, c in zip(axes, claims, strict=False):
        t = next(t for t in REGISTRY[c].tests if t.direction != "within")
        tid = qualified_id(c, t)
        keep = (
            mv["applicable"].sel(claim=c).values
            & (mv["zoo"].values == z)
            & (mv["unit"].values == "seeds")
        )
        r = mv.sel(test=tid).isel(spec=np.flatnonzero(keep))
        f = np.exp if t.log else (lambda x: x)
        lo, hi = float(f(r["low"].values[0])), float(f(r["high"].values[0]))
        plots.specification_curve(
            f(r["estimate"].values),
            f(r["lower"].values),
            f(r["upper"].values),
            r["code"].values,
            main=r["main"].values,
            ylabel=f"${t.symbol}$",
            band=(lo, hi),
            title=tid,
            ax=ax,
            labels=render.WORDS,
        )
        ax.set_xlabel("readings, sorted")
        ax.get_legend().remove()
    handles, labels = plots.verdict_handles(list(render.WORDS), main=True, labels=render.WORDS)
    fig.legend(handles, labels, loc="outside lower center", ncol=3)
    return fig


def departures_table(mv, claim: str, zoo: str | None = None) -> pd.DataFrame:
    """The claim under the default reading and under each reading that changes one axis
    of it (labelled comparisons): per reading its verdict and each test's estimate with
    the 90 % interval over the models."""
    axes = [a for a in claim_axes(claim) if a != "unit"]
    variants = [{}] + [{a: v} for a in axes for v in CURVE_AXES[a] if v != MAIN_READING[a]]
    rows = {}
    for ax in variants:
        try:
            views = render.claim_views(mv, claim, zoo, **ax)
        except LookupError:  # outside the claim's sub-grid (e.g. C4's windows on the lags)
            continue
        label = (
            render.reading_words({**MAIN_READING, **ax}, list(ax), claim=claim) or "default reading"
        )
        row = {"verdict": render.word(render.main_code(mv, claim, zoo, **ax))}
        for v in views:
            name = " ".join(x for x in (v.test.part, v.test.case) if x) or "estimate"
            row[name] = (
                f"{plots.number(v.estimate)} [{plots.number(v.lower)}, {plots.number(v.upper)}]"
                if v.code != "untestable"
                else plots.MISSING
            )
        rows[label] = row
    return pd.DataFrame(rows).T.rename_axis("reading")


def dominant_scale_table(ev: xr.Dataset, models) -> pd.DataFrame:
    """The dominant scale a* of the default reading (``ev``: the trained models'
    evidence), one row per model of ``models``, one column per layer: located values with
    their 95 % jackknife interval over snippets (log scale), a maximum at the grid's edge
    as the bound it is (``≤ 3.00``, ``≥ 128``)."""
    from msapod.studies.verdict.inference import log_interval

    sel = {a: MAIN_READING[a] for a in ("field", "normalisation", "scale_min", "scale_stat")}
    d = (
        ev[["scale_stat_value", "scale_stat_se", "scale_stat_edge"]]
        .sel(sel)
        .sel(model=list(models))
    )
    q = 1.959963984540054
    rows = {}
    for m in d["model"].values:
        row = {}
        for la in d["layer"].values:
            x = d.sel(model=m, layer=la)
            v, edge = float(x["scale_stat_value"]), int(x["scale_stat_edge"])
            if edge:
                row[f"layer {int(la)}"] = f"{'≤' if edge < 0 else '≥'} {plots.number(v)}"
            else:
                lo, hi = log_interval(v, float(x["scale_stat_se"]), q)  # floats
                row[f"layer {int(la)}"] = (
                    f"{plots.number(v)} [{plots.number(float(lo))}, {plots.number(float(hi))}]"
                )
        rows[str(m)] = row
    return pd.DataFrame(rows).T.rename_axis("model")


def flips_table(mv) -> pd.DataFrame:
    """Per claim: its default verdict, whether it is robust to every axis the book varies,
    the share of its decided readings that agree, and the single choices that change it."""
    rows = {}
    for c in mv["claim"].values:
        flips = str(mv["flips"].sel(claim=c).values)
        rows[str(c)] = {
            "verdict": render.word(render.main_code(mv, str(c))),
            "robust?": "yes" if bool(mv["robust"].sel(claim=c)) else "no",
            "readings that agree": plots.number(100 * float(mv["robust_share"].sel(claim=c)), 2)
            + " %",
            "changed by": "; ".join(render.flip_words(f, str(c)) for f in flips.split("; ") if f)
            or "—",
        }
    return pd.DataFrame(rows).T.rename_axis("claim")


def joint_table(mv) -> pd.DataFrame:
    """The joint test of every claim that has one: each statistic with its two-sided
    permutation p-value (or "uninformative"), the relabelling and their number; the
    statistic the sentences read is marked."""
    rows = {}
    for c in mv["claim"].values:
        null = str(mv["joint_null"].sel(claim=c).values)
        if not null:
            continue
        row = {}
        for s in STATISTICS:
            r = mv.sel(claim=c, statistic=s)
            label = render.STATISTIC_WORDS[s] + (" (read)" if s == JOINT_STATISTIC[0] else "")
            row[label] = (
                f"{plots.number(float(r['joint']))} (p {plots.number(float(r['joint_p']), 2)})"
                if bool(r["joint_informative"])
                else "uninformative"
            )
        row["relabellings"] = f"{int(mv['joint_relabellings'].sel(claim=c))} {null}"
        rows[str(c)] = row
    return pd.DataFrame(rows).T.rename_axis("claim")


def null_table(mv) -> pd.DataFrame:
    """The null columns: per claim its default verdict and the same tests on the untrained
    models and on shuffled snippets ("—" where a null does not address the claim)."""
    rows = {}
    for c in mv["claim"].values:
        row = {"verdict": render.word(render.main_code(mv, str(c)))}
        for null in NULL_COLUMNS:
            code = str(mv["null_verdict"].sel(claim=c, null=null).values)
            row[null] = render.word(code) if code else "—"
        rows[str(c)] = row
    return pd.DataFrame(rows).T.rename_axis("claim")


def axes_markdown() -> str:
    """The axes of the specification curve as a Markdown definition list (it reads on a
    phone): per axis its readings in words (the default first, tagged *paper* or *book*),
    why the default, and the claims it can change."""
    out = []
    for a, values in CURVE_AXES.items():
        tag, why = READING_TAGS[a]
        words = [render.reading_words({**MAIN_READING, a: v}, [a]) for v in values]
        claims = ", ".join(c for c in REGISTRY if a in claim_axes(c))
        out += [
            f"**{render.AXIS_NAMES[a]}** ({claims})",
            f": *{words[0]}* (default, {tag}); " + "; ".join(words[1:]),
            f": {why}",
            "",
        ]
    return "\n".join(out)


def verdict_legend() -> str:
    """The verdict vocabulary as a Markdown list, each word with what it means."""
    return ";\n".join(f"* **{render.WORDS[c]}**: {m}" for c, m in render.MEANING.items()) + "."


def rule_lines(claim: str) -> list[str]:
    """The claim's tests as the rules page states them: the statistic, the direction and
    the boundary with its smallest effect of interest and the reason for its size."""
    c = REGISTRY[claim]
    if c.kind == "theorem":
        return [
            f"rank-$K$ error $= \\sum_{{k > K}} \\lambda_k$ to {c.stated['gap']:g} and no "
            "random orthonormal basis does better (an exact check)"
        ]
    out = []
    for t in c.tests:
        lo, hi = t.boundary()
        view = render.TestView(
            qualified_id(claim, t), t, "", np.nan, np.nan, np.nan, lo, hi, 0, np.array([])
        )
        name = " ".join(x for x in (t.part, t.case) if x)
        if t.design == "architecture":
            over = (
                "EGA over standard attention (Welch, log scale)"
                if t.log
                else ("EGA minus standard attention (Welch)")
            )
        else:
            over = (
                "geometric mean over the models (Student t, log scale)"
                if t.log
                else ("mean over the models (Student t)")
            )
        out.append(
            f"{'(' + name + ') ' if name else ''}${t.symbol}$, {t.words}, {over}: "
            f"{render.needs_text(t, view)}; smallest effect: {t.sesoi_reason}"
        )
    return out


def rules_markdown() -> str:
    """Every claim's tests as the registry states them (the rules page): per claim a
    heading with the label ``rule-<id>`` and one item per test, with its smallest effect
    of interest and the reason for its size."""
    out = []
    for c in REGISTRY.values():
        out.append(f"(rule-{c.id.lower()})=\n### {c.id}: {c.paper}\n")
        out += [f"* {line}" for line in rule_lines(c.id)]
        out.append("")
    return "\n".join(out)


def _layer_span(layers: list[int]) -> str:
    """``"1–2"`` of consecutive layers, ``"3, 5"`` otherwise."""
    if len(layers) > 1 and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}–{layers[-1]}"
    return ", ".join(map(str, layers))


def edge_text(ev: xr.Dataset) -> str:
    """How often the scale spectrum E(a) of the default reading has no interior maximum
    (``ev``: the trained models' evidence), so that its dominant scale a* is a bound at
    the grid's edge: in how many model-layers, per layer."""
    sel = {a: MAIN_READING[a] for a in ("field", "normalisation", "scale_min", "scale_stat")}
    edge = ev["scale_stat_edge"].sel(sel) != 0
    per = edge.sum("model")
    n, total = edge.sizes["model"], int(edge.sum())
    runs: list[tuple[int, list[int]]] = []
    for layer, k in zip(per["layer"].values, per.values, strict=True):
        if runs and runs[-1][0] == int(k) and runs[-1][1][-1] == int(layer) - 1:
            runs[-1][1].append(int(layer))
        else:
            runs.append((int(k), [int(layer)]))
    per_layer = "; ".join(
        f"{'layer' if len(ls) == 1 else 'layers'} {_layer_span(ls)}: {k} of {n} models"
        + ("" if len(ls) == 1 else " each")
        for k, ls in runs
    )
    cells = edge.size
    return (
        f"$E(a)$ has no interior maximum in {total} of {cells} model-layers ({per_layer}): "
        "there $a^*$ is a bound at the grid's edge, set by where the grid ends rather than "
        f"by the attention; in the other {cells - total} it is located between grid points."
    )


# --- the zoos -------------------------------------------------------------------------


def zoo_models(mv, zoo: str) -> tuple[int, int]:
    """(standard-attention, EGA) models of ``zoo`` in the curve."""
    arch = mv["architecture"].values[mv["model_zoo"].values == zoo]
    return int((arch == "baseline").sum()), int((arch == "ega").sum())


def zoo_width(mv, zoo: str) -> int:
    """:math:`d_\\mathrm{model}` of ``zoo``'s models (from their training configs)."""
    from msapod.models.zoo import ZOO_CONFIGS

    first = str(mv["model"].values[mv["model_zoo"].values == zoo][0])
    return int(ZOO_CONFIGS[first].model.n_embd)


def other_zoos(mv) -> list[str]:
    """The trained zoos of the curve other than the main one."""
    zoos = [z for z in str(mv.attrs.get("zoos", "")).split(",") if z]
    return [z for z in zoos if z != str(mv.attrs["main_zoo"])]


def capacity(mv) -> str:
    """What the other trained zoos (another model width) change, in words."""
    main = str(mv.attrs["main_zoo"])
    others = other_zoos(mv)
    if not others:
        return "No zoo of another width is trained, so no verdict can say whether it changes."
    parts = []
    for z in others:
        b, e = zoo_models(mv, z)
        changed = [
            str(c)
            for c in mv["claim"].values
            if render.main_code(mv, str(c), z) != render.main_code(mv, str(c), main)
        ]
        parts.append(
            f"The {z} zoo has {b} standard-attention and {e} EGA models of width "
            f"$d_\\mathrm{{model}} = {zoo_width(mv, z)}$; "
            + (
                f"on it the verdict of {plots.enumeration(changed)} differs (table below), so "
                "those verdicts are not robust to the model's width"
                if changed
                else "no verdict differs on it (table below)"
            )
        )
    return "; ".join(parts) + "."


def zoo_verdicts(mv) -> pd.DataFrame | None:
    """Whether each claim's default verdict differs between the zoos (first column), then
    its verdict on every trained zoo; None with one zoo."""
    others = other_zoos(mv)
    if not others:
        return None
    zoos = [str(mv.attrs["main_zoo"]), *others]
    rows = {}
    for c in (str(x) for x in mv["claim"].values):
        rows[c] = {
            f"{z} ({' + '.join(map(str, zoo_models(mv, z)))} models)": render.word(
                render.main_code(mv, c, z)
            )
            for z in zoos
        }
    table = pd.DataFrame(rows).T.rename_axis("claim")
    table.insert(0, "differs with width?", np.where(table.nunique(axis=1) > 1, "yes", "no"))
    return table


# --- the scorecard page ---------------------------------------------------------------


def headline(mv: xr.Dataset, zoo: str | None = None) -> str:
    """One sentence: which of the paper's empirical claims are reproduced, which refuted
    and which undecided on the main zoo, with Theorem 1 and the cited loss claim apart."""
    z = zoo or str(mv.attrs["main_zoo"])
    codes = {c: render.main_code(mv, c, z) for c in REGISTRY}
    empirical = [c for c, cl in REGISTRY.items() if cl.kind == "empirical"]
    groups = {}
    for c in empirical:
        groups.setdefault(codes[c], []).append(c)
    order = (
        ("holds", "reproduced"),
        ("partly", "reproduced in part"),
        ("refuted", "refuted"),
        ("undecided", "undecided"),
        ("untestable", "not testable as stated"),
    )
    parts = [f"{label} {plots.enumeration(groups[k])}" for k, label in order if k in groups]
    n = len(empirical)
    out = f"Of the paper's {n} empirical claims, on the {z} zoo: " + "; ".join(parts) + "."
    theorem = [c for c, cl in REGISTRY.items() if cl.kind == "theorem"]
    cited = [c for c, cl in REGISTRY.items() if cl.kind == "cited"]
    for c in theorem:
        out += f" Theorem 1 ({c}) {render.word(codes[c])} as an exact identity."
    for c in cited:
        out += f" The cited loss claim ({c}): {render.word(codes[c])}."
    return out


def assurance(mv) -> str:
    """How the verdicts are decided and how sure they are, in one paragraph from the
    curve: the replicates and intervals, how many verdicts are robust, the joint tests
    that are significant, and which verdicts the untrained models repeat."""
    claims = [str(c) for c in mv["claim"].values]
    robust = [c for c in claims if bool(mv["robust"].sel(claim=c))]
    fragile = [c for c in claims if c not in robust]
    s = JOINT_STATISTIC[0]
    sig = {"for": [], "against": []}
    for c in claims:
        if not str(mv["joint_null"].sel(claim=c).values):
            continue
        r = mv.sel(claim=c, statistic=s)
        if bool(r["joint_informative"]) and float(r["joint_p"]) < 0.05:
            sig["for" if float(r["joint"]) > 0 else "against"].append(c)
    text = (
        "Each verdict reads a 90 % interval over the training seeds of the main zoo "
        "(Student-$t$ over its models; Welch for EGA against standard attention) against the "
        "smallest effect of interest the registry states for the claim. "
        f"{len(robust)} of the {len(claims)} verdicts are **robust** (no single choice the book "
        "varies, the zoo's width and the unit of inference included, changes them)"
    )
    if fragile:
        text += f"; {plots.enumeration(fragile)} {'is' if len(fragile) == 1 else 'are'} **fragile**"
    text += ". "
    lean = {"for": "towards the claimed direction", "against": "away from it"}
    joint = [f"{lean[w]} for {plots.enumeration(ids)}" for w, ids in sig.items() if ids]
    text += (
        f"Over the whole curve the joint test ({render.STATISTIC_WORDS[s]}, against no effect) "
        + ("leans " + " and ".join(joint) if joint else "is significant for no claim")
        + ". "
    )
    same = [
        c
        for c in claims
        if render.main_code(mv, c) in ("holds", "partly")
        and str(mv["null_verdict"].sel(claim=c, null="untrained").values) == render.main_code(mv, c)
    ]
    if same:
        text += (
            f"On untrained copies of the models the same tests give the same verdict for "
            f"{plots.enumeration(same)}: there it describes the architecture or the method, not "
            "what training learned."
        )
    return text.strip()


#: The short name of each page in the scorecard's links.
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
    """Links to the pages a scorecard row names, by their short names."""
    return ", ".join(
        f"[{PAGE_NAMES.get(p.strip(), p.strip())}]({p.strip()}.md)" for p in str(pages).split(",")
    )


def claims_markdown(card: pd.DataFrame) -> str:
    """The claims with their verdicts as a three-column Markdown table (it fits a phone):
    the paper's words with the pages that test it and a link to its rule, and the
    verdict (bold) with its robustness."""
    lines = [
        "| claim | the paper's claim (tested on; rule) | verdict |",
        "|---|---|---|",
    ]
    for c, r in card.iterrows():
        claim = str(r["paper"]).replace("*", r"\*")
        robust = "robust" if str(r["robustness"]).startswith("robust") else "fragile"
        lines.append(
            f"| {c} | {claim} ({page_links(r['page'])}; [rule {c}](#rule-{c.lower()})) "
            f"| **{r['verdict']}** ({robust}) |"
        )
    return "\n".join(lines)


def scorecard_markdown(card: pd.DataFrame) -> str:
    """The scorecard claim by claim as a Markdown definition list (fits any screen)."""
    fields = {
        "paper": "the paper says",
        "measured": "we measure (default reading, 90 % intervals over the seeds)",
        "robustness": "robust?",
        "joint_test": "joint test",
        "untrained": "untrained",
        "shuffled": "characters shuffled",
        "words": "words shuffled",
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


# --- C6, budget by budget -------------------------------------------------------------


def _mean_layer_removed(study: xr.Dataset, strategy: str, budget) -> float:
    """Mean layer number of the heads ``strategy`` removes at ``budget`` (NaN: no masks)."""
    if "mask" not in study or "layer" not in study.dims:
        return float("nan")
    gone = (study["mask"].sel(strategy=strategy, budget=budget) == 0).astype(float)
    return float((gone * study["layer"]).sum() / gone.sum()) if gone.sum() else np.nan


def _budget_row(study: xr.Dataset, inc: xr.DataArray, b) -> dict:
    """The numbers of one budget ``b`` (see :func:`budget_contrasts`)."""
    M = inc.sizes["model"]
    low = inc.sel(strategy="low-H*", budget=b).isel(draw=0)
    rnd = inc.sel(strategy="random", budget=b)
    n_draw = int(rnd.count("draw").min())
    rmean = rnd.mean("draw")
    D = low - rmean
    se_model = float(D.std("model", ddof=1)) / np.sqrt(M) if M > 1 else np.nan
    se_draw = float(np.sqrt((rnd.var("draw", ddof=1) / n_draw).sum("model"))) / M
    se = float(np.nanmax([se_model, se_draw]))
    d = float(D.mean("model"))
    means = {
        k: float(inc.sel(strategy=st, budget=b).mean("draw").mean("model"))
        for k, st in (
            ("high_H", "high-H*"),
            ("uniform", "uniform"),
            ("allocation", "H*-allocation"),
            ("importance", "importance"),
        )
    }
    return {
        "budget": int(b),
        "low_H": float(low.mean("model")),
        "random": float(rmean.mean("model")),
        "random_draw_sd": float(rnd.std("draw", ddof=1).mean("model")),
        "difference": d,
        "se": se,
        "se_models": float(se_model),
        "se_draws": float(se_draw),
        "z": d / se if np.isfinite(se) and se else float("nan"),
        **means,
        "low_H_mean_layer": _mean_layer_removed(study, "low-H*", b),
        "high_H_mean_layer": _mean_layer_removed(study, "high-H*", b),
    }


def budget_contrasts(study: xr.Dataset) -> dict:
    """Low-H* pruning against random pruning, budget by budget, from a
    :func:`~msapod.studies.measure.prune.pruning_study` result (numbers only; the verdict
    on C6 is :mod:`msapod.studies.verdict`'s).

    For every budget ``b`` and model ``m``: ``D_m = Delta_low-H*(m, b) - mean over draws
    of Delta_random(m, b, d)`` (loss increases). ``D = mean_m D_m`` with standard error
    ``SE = max(sd_m(D_m) / sqrt(M), sqrt(sum_m var_d(Delta_random) / n_random) / M)``:
    the spread over models (which also carries the draw noise) or, if larger, the spread
    of the random-draw means alone; ``z = D / SE``.

    Returns
    -------
    dict
        ``per_budget``: a list of dicts (``budget``, ``low_H``, ``random``,
        ``random_draw_sd``, ``difference`` (D), ``se``, ``se_models``, ``se_draws``,
        ``z``, the mean loss increases of ``high_H``, ``uniform``, ``allocation`` and
        ``importance``, and the mean layer number of the heads low-H* and high-H*
        remove); ``n_models``; ``measured``: a one-line summary.
    """
    if not isinstance(study, xr.Dataset) or "loss_increase" not in study:
        raise ValueError("study: expected a pruning_study() Dataset with 'loss_increase'")
    inc = study["loss_increase"]
    if "model" not in inc.dims:
        inc = inc.expand_dims(model=["model"])
    rows = [_budget_row(study, inc, b) for b in inc["budget"].values]
    n_heads = study.attrs.get("n_heads")
    if n_heads is None and {"layer", "head"} <= set(study.dims):
        n_heads = study.sizes["layer"] * study.sizes["head"]
    measured = "; ".join(
        f"{r['budget']}/{n_heads} heads: low-H* {r['low_H']:+.3f} vs random "
        f"{r['random']:+.3f} ± {r['se']:.3f} nats"
        for r in rows
    )
    where = [r for r in rows if np.isfinite(r["low_H_mean_layer"])]
    if where:
        r = where[len(where) // 2]
        measured += (
            f"; at {r['budget']} heads low-H* removes heads from layer "
            f"{r['low_H_mean_layer']:.1f} on average, high-H* from layer "
            f"{r['high_H_mean_layer']:.1f} (loss {r['high_H']:+.3f})"
        )
    return {"per_budget": rows, "n_models": int(inc.sizes["model"]), "measured": measured}


# --- the loss claim -------------------------------------------------------------------


def arch_difference(
    value: xr.DataArray,
    se: xr.DataArray | None = None,
    *,
    architecture: str = "architecture",
    treatment: str = "ega",
    control: str = "baseline",
    level: float = 0.95,
) -> xr.Dataset:
    """Difference of architecture means with an interval over seeds and snapshots.

    With ``m_t`` and ``m_c`` models (training seeds) per architecture, values ``x`` and
    jackknife standard errors ``s`` (optional), the difference of means
    ``d = mean_t(x) - mean_c(x)`` gets the variance

        var(d) = v_t / m_t + v_c / m_c,   v = max(var_seed(x), mean(s^2)),

    and a Student-t interval with ``m_t + m_c - 2`` degrees of freedom. With two seeds per
    architecture that is 2 degrees of freedom (t = 4.30 at 95 %): an honest, wide
    interval. ``significant`` is true where the interval excludes zero.

    Why the maximum and not the sum: each model's value is ``x_m = mu + e_seed + e_snap``
    (training seed and snapshot ensemble), so the between-seed sample variance
    ``var_seed(x)`` already estimates ``var(e_seed) + var(e_snap)``; adding the mean
    jackknife variance ``mean(s^2)`` (an estimate of ``var(e_snap)``) would count the
    snapshot noise twice. ``mean(s^2)`` is used only as a floor: the true variance cannot
    be below the snapshot part, and with two seeds the sample variance is often far below
    it by chance.

    Parameters
    ----------
    value
        Statistic with a ``model`` dim and an ``architecture`` coord on it.
    se
        Its per-model standard errors (same dims), or None.

    Returns
    -------
    xarray.Dataset
        ``diff``, ``se``, ``lower``, ``upper``, ``significant`` and ``df``.
    """
    if "model" not in value.dims or architecture not in value.coords:
        raise ValueError(f"value: expected a 'model' dim with an {architecture!r} coord")
    arch = value[architecture]
    parts = {}
    for label in (treatment, control):
        sel = arch == label
        m = int(sel.sum())
        if m < 2:
            raise ValueError(
                f"value: expected at least 2 models of architecture {label!r} (seeds), got {m}"
            )
        idx = np.flatnonzero(sel.values)  # isel, not where(drop=True): same values, cheaper
        x = value.isel(model=idx)
        v = x.var("model", ddof=1)
        if se is not None:  # floor, not a sum: var_seed already holds the snapshot noise
            v = np.maximum(v, (se.isel(model=idx) ** 2).mean("model"))
        parts[label] = (x.mean("model"), v, m)
    (mt, vt, nt), (mc, vc, nc) = parts[treatment], parts[control]
    diff = mt - mc
    sd = np.sqrt(vt / nt + vc / nc)
    df = nt + nc - 2
    t = t_quantile(df, level)
    out = xr.Dataset(
        {
            "diff": diff,
            "se": sd,
            "lower": diff - t * sd,
            "upper": diff + t * sd,
        }
    )
    out["significant"] = (out["lower"] > 0) | (out["upper"] < 0)
    out.attrs = {
        "df": df,
        "level": level,
        "t": t,
        "method": "Student-t over seeds; variance = max(seed variance, mean jackknife variance)",
        "contrast": f"{treatment} - {control}",
    }
    return out


def loss_difference(models=None) -> tuple[xr.DataArray, xr.Dataset]:
    """The whole-split validation losses of ``models`` (default the main zoo's trained
    models) and EGA − baseline with its 95 % Student-t interval over seeds
    (:func:`arch_difference`)."""
    from msapod.models import zoo
    from msapod.studies.verdict.study import zoo_losses

    models = list(zoo.trained()) if models is None else list(models)
    loss = zoo_losses(models)
    return loss, arch_difference(loss)


def claimed_signs(claim: str) -> dict[int, int]:
    """The sign of EGA − baseline each layer is claimed to have (from the registry's tests:
    ``{layer: +1 or -1}``), for an architecture claim such as C8."""
    out = {}
    for t in REGISTRY[claim].tests:
        for layer in t.args.get("layers", ()):
            out[int(layer)] = 1 if t.direction == "greater" else -1
    return out


def loss_text(mv) -> str:
    """Claim L's numbers in one sentence, from the curve: EGA − baseline of the
    whole-split validation loss with its 90 % Welch interval over the seeds, against the
    size the EGA paper states."""
    size = next(v for v in render.claim_views(mv, "L") if v.test.direction == "within")
    stated = size.test.reference
    return (
        f"EGA − baseline, validation loss over the whole split: **{plots.number(size.estimate)} "
        f"nats/char**, 90 % interval [{plots.number(size.lower)}, {plots.number(size.upper)}] "
        f"over the seeds (Welch); the EGA paper states about {plots.number(stated)}, so the "
        f"difference is {100 * abs(size.estimate / stated):.0f} % of the stated size."
    )


# --- the LLM page -----------------------------------------------------------------------


def _cpt(ds: xr.Dataset) -> float:
    """Characters per token of the LLM ensemble's snippets."""
    return float(ds.attrs["ensemble_chars_per_token"])


def llm_scale_facts(ds: xr.Dataset) -> str:
    """What the token scales mean for the scale claims (a Markdown list): the grid in
    characters, what it cannot resolve, and C1's and C2's scales in tokens."""
    cpt, finest, top = _cpt(ds), float(ds["scale"].min()), float(ds["scale"].max())
    c1, c2 = REGISTRY["C1"].stated["scale"], REGISTRY["C2"].stated["scale"]
    return (
        f"* The scalogram's scales run from {finest:g} to $L/2$ = {top:.1f} **tokens**, i.e. "
        f"about {finest * cpt:.0f} to {top * cpt:.0f} characters; the zoo's run from 3 to "
        f"128 characters. Over the coarse end the two cover the same text; at the fine end "
        f"the LLM **cannot resolve** anything below about {finest * cpt:.0f} characters: "
        f"whatever happens inside and between neighbouring tokens (the character n-grams of "
        f"C4) sits below its sampling limit.\n"
        f"* C1's band $a \\le {c1:g}$ characters is $a \\le {c1 / cpt:.2f}$ tokens, "
        f"below the finest scale: the LLM's spectrum has no share there. C2's $a \\ge {c2:g}$ "
        f"characters is $a \\ge {c2 / cpt:.2f}$ tokens, inside the range. Below, scales in "
        f"characters are token scales times {cpt:.2f}."
    )


def llm_scale_depth(ds: xr.Dataset, zoo_centroid: xr.DataArray) -> str:
    """The LLM's scales across depth: the spread of its scale centroid (characters) and
    its rank correlation with depth, in how many layers the dominant scale is the finest
    one, against the zoo's centroids (``zoo_centroid``, characters)."""
    from msapod.pipeline import FIELD_SYMBOLS

    sym = FIELD_SYMBOLS[ds.attrs["scalogram_field"]]
    cpt, n = _cpt(ds), ds.sizes["layer"]
    c = ds["scale_centroid"] * cpt
    rho = float(pd.Series(c.values).corr(pd.Series(ds["layer"].values), method="spearman"))
    finest = float(ds["scale"].min())
    dom = ds["dominant_scale"].isel(peak=0)
    c1, c2 = REGISTRY["C1"].stated["scale"], REGISTRY["C2"].stated["scale"]
    lo, hi = round(float(c.min()), 1), round(float(c.max()), 1)
    n_fine = int((dom == finest).sum())
    if float(zoo_centroid.max()) < lo:
        compared = (
            f"are finer, but the LLM's scale grid starts at {finest * cpt:.0f} characters, so "
            "part of that gap is the tokenisation"
        )
    else:
        compared = "are coarser" if float(zoo_centroid.min()) > hi else "overlap the LLM's"
    if rho <= -0.3:
        trend = "it falls with depth, from coarse to fine: the reverse of C1 and C2"
    elif rho >= 0.3:
        trend = "it rises with depth, from fine to coarse"
    else:
        trend = "it shows no trend with depth"
    if hi - lo < c2 - c1:
        depth = (
            "There is **no fine-to-coarse organisation across depth** of the size C1 and C2 "
            f"describe: the centroid moves less than their {c2 - c1:g} characters, and "
            f"{trend}. On average the layers put the energy of ${sym}$ at "
        )
    else:
        depth = (
            f"The centroid spans at least the move C1 and C2 describe ({c2 - c1:g} "
            f"characters) across depth; on average the layers put the energy of ${sym}$ at "
        )
    return (
        f"The scale centroid of ${sym}$ stays between {lo:.1f} and {hi:.1f} "
        f"characters ({float(c.min()) / cpt:.2f}–{float(c.max()) / cpt:.2f} tokens) in all "
        f"{n} layers: a spread of "
        f"{hi - lo:.1f} characters (rank correlation with depth {rho:+.2f}), where C1 and C2 "
        f"describe a move from at most {c1:g} to at least {c2:g}. The spectrum's maximum is "
        f"at the grid's finest scale, a dominant scale of at most {finest:g} tokens (a "
        f"bound), in {n_fine} of {n} layers"
        + (": the spectrum falls from the finest scale on. " if n_fine == n else ". ")
        + depth
        + f"{float(c.mean()) / cpt:.0f} tokens ({float(c.mean()):.0f} characters). The zoo's "
        f"centroids of ${sym}$ ({float(zoo_centroid.min()):.0f}–"
        f"{float(zoo_centroid.max()):.0f} characters) {compared}."
    )


def llm_table(outcomes: dict) -> pd.DataFrame:
    """The LLM's claims (:func:`~msapod.studies.verdict.scorecard.llm_outcomes`), one row
    per test: the claim, its verdict, the statistic with its 90 % snippet interval and
    what the claim needs."""
    rows = []
    for out in outcomes.values():
        for r in out.tests:
            v = render.TestView.of(r)
            rows.append(
                {
                    "test": r.id,
                    "SmolLM2 verdict": render.word(out.parts[r.test.part])
                    if r.test.part
                    else render.word(out.code),
                    "statistic": r.test.words,
                    "estimate [90 % interval]": (
                        f"{plots.number(v.estimate)} [{plots.number(v.lower)}, "
                        f"{plots.number(v.upper)}]"
                        if r.code != "untestable"
                        else (r.reason or plots.MISSING)
                    ),
                    "the claim needs": render.needs_text(r.test, v),
                }
            )
    return pd.DataFrame(rows).set_index("test")
