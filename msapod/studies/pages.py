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

from .. import plots
from .registry import REGISTRY
from .verdict import claims as cl
from .verdict.multiverse import AXES, CLAIM_AXES, MAIN_SPEC, READING_TAGS

__all__ = [
    "PAGE_NAMES",
    "assurance",
    "c3_lines",
    "c5_large_n_text",
    "c5_lines",
    "capacity",
    "claim_counts",
    "claim_lines",
    "claims_markdown",
    "curve_values",
    "forest_note",
    "forest_panels",
    "interval_table",
    "interval_text",
    "layer_table",
    "llm_scale_depth",
    "llm_scale_facts",
    "llm_table",
    "loss_difference",
    "loss_text",
    "null_groups",
    "other_zoos",
    "page_links",
    "reading_note",
    "readings_table",
    "reasons",
    "rule_parts",
    "comparison_line",
    "scorecard_markdown",
    "seeds_each",
    "sign_text",
    "spec_curves",
    "zoo_models",
    "zoo_verdicts",
    "zoo_width",
]


#: How one changed axis of a reading reads in a table row (the values of
#: :data:`~msapod.studies.verdict.multiverse.AXES`).
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
        words = cl.claim_reading(c, mv)
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


def interval_text(stat: float, lower: float, upper: float, sig: int = 3) -> str:
    """One estimate with its 95 % interval: ``"93.7 [91.7, 95.7]"``; a bound (an interval
    open at 0 or at infinity that ends at the estimate, a maximum at the grid's edge)
    reads ``"≤ 3.00"`` / ``"≥ 128"``; a missing estimate ``"—"``."""
    if not np.isfinite(stat):
        return plots.MISSING
    if lower == upper == stat:  # a point value (no interval)
        return _words(stat, sig)
    side = int(_sides(stat, lower, upper))
    if side:
        return f"{'≤' if side < 0 else '≥'} {_words(stat, sig)}"
    if not (np.isfinite(lower) and np.isfinite(upper)):
        return _words(stat, sig)
    return f"{_words(stat, sig)} [{_words(lower, sig)}, {_words(upper, sig)}]"


def interval_table(
    claim: str, mv, zoo: str | None = None, layers=None, sig: int = 3, **axes
) -> pd.DataFrame:
    """The key statistic of ``claim`` with its 95 % interval (:func:`interval_text`), one
    row per model and one column per layer (default: every layer), under the default
    reading or the one that differs from it in ``axes``
    (:func:`~msapod.studies.verdict.claims.main_numbers`)."""
    n = cl.main_numbers(claim, mv, zoo, **axes)
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
    return cl.reading_words({**MAIN_SPEC, **axes}, list(axes))


def axes_table() -> pd.DataFrame:
    """The axes of the specification curve, one row each: its readings in words (the
    default reading first, tagged *paper* or *book*), why the default is what it is
    (:data:`~msapod.studies.verdict.multiverse.READING_TAGS`) and the claims it can
    change."""
    rows = {}
    for a, values in AXES.items():
        tag, why = READING_TAGS[a]
        base = {**MAIN_SPEC, "c4_window": "dominant scale"} if a == "width" else MAIN_SPEC
        words = [cl.READING_WORDS[a](v, {**base, a: v}) for v in values]
        rows[cl.AXIS_NAMES[a]] = {
            "readings (default first)": f"{words[0]} (default, {tag}); " + "; ".join(words[1:]),
            "why the default": why,
            "claims": ", ".join(c for c, axes in CLAIM_AXES.items() if a in axes),
        }
    return pd.DataFrame(rows).T.rename_axis("axis")


def _sides(stat, lower, upper) -> np.ndarray:
    """Per estimate: -1 where it is a bound at the grid's first scale (its interval is
    ``[0, stat]``), +1 at its last (``[stat, inf]``), 0 for a located value (or NaN)."""
    st, lo, up = (np.asarray(x, float) for x in (stat, lower, upper))
    ok = np.isfinite(st)
    at_most = ok & (lo <= 0) & np.isclose(up, st)
    at_least = ok & np.isinf(up) & np.isclose(lo, st)
    return np.where(at_most, -1, np.where(at_least, 1, 0))


def _bound_side(n: xr.Dataset) -> xr.DataArray:
    """:func:`_sides` of ``n`` (``stat``, ``lower``, ``upper``, as :func:`main_numbers`
    gives), with its dims."""
    return n["stat"].copy(data=_sides(n["stat"], n["lower"], n["upper"]))


def edge_text(mv, zoo: str | None = None) -> str:
    """How often the scale spectrum E(a) of the default reading has no interior maximum,
    so that its dominant scale a* is a bound at the grid's edge: in how many model-layers
    of ``zoo`` (the main zoo by default), per layer."""
    n = cl.main_numbers("C1", mv, zoo, scale_test="peak")
    bound = (_bound_side(n) != 0).sum("model")
    n_models, total = n.sizes["model"], int(bound.sum())
    runs: list[tuple[int, list[int]]] = []  # consecutive layers with the same count
    for layer, k in zip(bound["layer"].values, bound.values, strict=True):
        if runs and runs[-1][0] == int(k) and runs[-1][1][-1] == int(layer) - 1:
            runs[-1][1].append(int(layer))
        else:
            runs.append((int(k), [int(layer)]))
    per_layer = "; ".join(
        f"{'layer' if len(ls) == 1 else 'layers'} {cl.layer_span(ls)}: {k} of {n_models} models"
        + ("" if len(ls) == 1 else " each")
        for k, ls in runs
    )
    return (
        f"$E(a)$ has no interior maximum in {total} of {bound.size * n_models} model-layers "
        f"({per_layer}): there $a^*$ is a bound at the grid's edge, set by where the grid "
        f"ends rather than by the attention; in the other {bound.size * n_models - total} it "
        "is located between grid points, with an interval."
    )


def claim_counts(claim: str, mv, zoo: str | None = None, **axes) -> dict:
    """The key statistic of ``claim`` over the claim's layers and the zoo's models under
    the default reading (or the one that differs in ``axes``): ``span`` (its range, text),
    ``in_range`` (point values inside the claim's range, without their intervals: the
    rule's own cases are in :func:`~msapod.studies.verdict.claims.spec_outcome`),
    ``bounds`` (values that are a bound: a maximum at the grid's edge,
    :func:`interval_text`) and ``total``."""
    c = REGISTRY[claim]
    n = cl.main_numbers(claim, mv, zoo, **axes)
    if c.layers is not None:
        n = n.sel(layer=[la for la in c.layers if la in n["layer"].values])
    st = n["stat"].values.ravel()
    ok = np.isfinite(st)
    side = _bound_side(n).values.ravel()
    bound = side != 0
    return {
        "span": cl.bounded_range(st, side, _words),
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


def comparison_line(claim: str, mv, zoo: str | None = None, **axes) -> str:
    """What the claim's rule measures and would read under the reading that differs from
    the default one in ``axes`` (e.g. ``field="u"``), labelled a comparison: one
    sentence from the curve (the rule's own ``measured`` text and cases)."""
    if not axes:
        raise ValueError("axes: expected the reading to compare with (e.g. field='u')")
    out = cl.spec_outcome(claim, mv, zoo, **axes)
    return (
        f"For comparison, with the {_reading_label(axes)}, the {claim} rule measures "
        f"{out['measured']} and would read *{out['verdict']}* "
        f"({out['cases']}); the verdict above is the default reading's."
    )


def _sentence_end(text: str) -> str:
    """``text`` ending a sentence: one full stop, none added after one ("n.s.")."""
    return text if text.endswith(".") else text + "."


def claim_lines(mv, claims, zoo: str | None = None, **compare) -> str:
    """A Markdown list, one item per claim: the claim in the paper's words, the range of
    its key statistic over the claim's layers and models under the default reading and
    the rule's cases; with ``compare`` (axes, e.g. ``field="u"``) the same under that
    reading, labelled a comparison, with the verdict its rule would give."""
    lines = []
    for claim in claims:
        c = REGISTRY[claim]
        if c.per_layer[0]:  # its per-model values are not its symbol's (a difference)
            raise ValueError(f"claims: {claim} is decided on {c.per_layer[1]}; use comparison_line")
        k, out = claim_counts(claim, mv, zoo), cl.spec_outcome(claim, mv, zoo)
        text = (
            f"* **{claim}** ({c.paper}): ${c.symbol}$ = {k['span']} under the default "
            f"reading; the rule counts {_sentence_end(out['cases'])}"
        )
        if compare:
            k2, other = (
                claim_counts(claim, mv, zoo, **compare),
                cl.spec_outcome(claim, mv, zoo, **compare),
            )
            text += (
                f" For comparison, with the {_reading_label(compare)}: {k2['span']}; the "
                f"rule would read *{other['verdict']}*, counting {_sentence_end(other['cases'])}"
            )
        lines.append(text)
    return "\n".join(lines)


def loss_difference(models=None) -> tuple[xr.DataArray, xr.Dataset]:
    """The whole-split validation losses of ``models`` (default: the trained models of
    the main zoo) and EGA − baseline with its 95 % Student-t interval over seeds
    (:func:`~msapod.studies.measure.uncertainty.arch_difference` of
    :func:`~msapod.studies.verdict.multiverse.zoo_losses`): the numbers claim L is
    decided on; ``unfinished`` in the losses' attributes is 1 when a model stopped
    before its planned steps."""
    from ..models import zoo
    from .measure.uncertainty import arch_difference
    from .verdict.multiverse import zoo_losses

    models = list(zoo.trained()) if models is None else list(models)
    loss, unfinished = zoo_losses(models)
    loss.attrs["unfinished"] = int(unfinished)
    return loss, arch_difference(loss)


def layer_table(claims, mv, zoo: str | None = None, sig: int = 3) -> pd.DataFrame:
    """The per-layer statistic the rule of each claim decides (C4 and C9 over seeds,
    C7 and C8 EGA − baseline) with its 95 % interval, under the default reading: one row
    per layer the claim is about, one column per claim (``"—"`` where the reading gives
    no value)."""
    cols = {}
    for claim in claims:
        row, _ = cl.spec_row(claim, mv, zoo)  # the default reading's row of the curve
        d, lo, up = (row[k] for k in ("diff", "diff_lower", "diff_upper"))
        layers = REGISTRY[claim].layers or d["layer"].values
        cols[f"{claim}: {REGISTRY[claim].per_layer[1] or 'statistic'}"] = {
            int(la): interval_text(
                float(d.sel(layer=la)), float(lo.sel(layer=la)), float(up.sel(layer=la)), sig
            )
            for la in layers
        }
    return pd.DataFrame(cols).rename_axis("layer").sort_index().fillna(plots.MISSING)


# --- the scorecard page -------------------------------------------------------------


def null_groups() -> str:
    """The null each claim's joint test relabels, in words with its claims (the registry's
    ``null``): ``"layer labels (C1, C2, ...); architecture labels (C7, ...); ..."``, then
    the claims without a joint test."""
    groups: dict[str, list[str]] = {}
    for c in REGISTRY.values():
        groups.setdefault(c.null or "", []).append(c.id)
    none = groups.pop("", [])
    text = "; ".join(f"{null} ({', '.join(ids)})" for null, ids in groups.items())
    return text + (f"; none for {', '.join(none)}" if none else "")


def zoo_models(mv, zoo: str) -> tuple[int, int]:
    """(standard-attention, EGA) models of ``zoo`` in the specification curve."""
    arch = mv["architecture"].values[mv["model_zoo"].values == zoo]
    return int((arch == "baseline").sum()), int((arch == "ega").sum())


def zoo_width(mv, zoo: str) -> int:
    """:math:`d_\\mathrm{model}` of ``zoo``'s models (from their training configs)."""
    from ..models.zoo import ZOO_CONFIGS

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
        f"{w} {cl.names(ids)} (p-value {', '.join(f'{p[c]:.2g}' for c in ids)})"
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
            ": the verdict does not need the characters of the text in order",
        ),
        (
            "words",
            "with the words of each snippet shuffled",
            ": the verdict does not need the words in order",
        ),
    ):
        if col not in card.columns:
            continue
        same = [
            c
            for c in top
            if card.loc[c, "verdict"] in ("holds", "partly")
            and str(card.loc[c, col]).startswith(str(card.loc[c, "verdict"]))
        ]
        if same:
            text += (
                f"Of the claims that hold at least in part, the same rules {what} give the "
                f"same verdict for {cl.names(same)}{why}. "
            )
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
    """Whether the main verdict of every claim changes with capacity (first column), then
    the verdict on every trained zoo, one column per zoo (its numbers of models in the
    header); None with one zoo."""
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
    changes = np.where(table.nunique(axis=1) > 1, "yes", "no")
    table.insert(0, "changes with capacity?", changes)  # first: on a phone the rest scrolls
    return table


def seeds_each(mv, zoo: str) -> bool:
    """Whether ``zoo`` has at least two seeds of each architecture: then its C4 and C9
    intervals are over its seeds and its EGA contrasts are decided
    (:func:`~msapod.studies.verdict.multiverse.two_seeds_each`)."""
    from .verdict.multiverse import two_seeds_each

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


def _clip(claim: str) -> tuple[float | None, float | None]:
    """The values ``claim``'s statistic can take (the registry's ``bounds``) as axis
    limits: an interval beyond them is cut (an arrow marks it); None where unbounded."""
    return tuple(None if np.isinf(b) else b for b in REGISTRY[claim].bounds)


def forest_panels(mv, zoo: str, claims):
    """Forest plots of the main specification of ``zoo``, one panel per claim
    (:func:`msapod.plots.forest`): per model and layer the claim's statistic with its
    95 % interval against the claim's range; for C7 and C8 the EGA − baseline
    difference per layer (C8 with its claimed sign per layer shaded). Each panel's title
    is the claim and its verdict."""
    from .verdict.rules import C8_SIGNS

    models = [
        m for m, z in zip(mv["model"].values, mv["model_zoo"].values, strict=True) if z == zoo
    ]
    fig, axes = plots.panels(len(claims), height=2.3)
    for ax, c in zip(axes, claims, strict=False):
        m, _ = cl.spec_row(c, mv, zoo)  # the default reading's row
        band = (float(m["threshold_low"]), float(m["threshold_high"]))
        if c in ("C7", "C8"):
            plots.forest(
                m["diff"],
                m["diff_lower"],
                m["diff_upper"],
                ylabel=REGISTRY[c].statistic,
                zero=True,
                band=band if c == "C7" else None,
                ax=ax,
            )
        else:
            plots.forest(
                m["stat"].sel(model=models),
                m["lower"].sel(model=models),
                m["upper"].sel(model=models),
                ylabel=REGISTRY[c].statistic,
                band=band,
                clip=_clip(c),
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
        contrast = c == "C3"  # C3's curve is the late − early contrast, of either sign
        ylabel = r"late − early $T_\mathrm{spec}$" if contrast else REGISTRY[c].statistic
        clip = None if contrast else _clip(c)
        plots.specification_curve(
            **curve_values(c, mv, zoo), ylabel=ylabel, title=c, ax=ax, clip=clip
        )
        ax.set_xlabel("specifications, sorted")
        leg = ax.get_legend()
        for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True):
            seen.setdefault(t.get_text(), h)
        leg.remove()
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncol=3)
    return fig


# --- the energy-gated attention and training pages -------------------------------------


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


# --- the uncertainty and convergence page ---------------------------------------------


def c5_large_n_text(h: xr.DataArray, outcome: dict, n: int) -> str:
    """C5 at a larger ensemble: the :math:`H^*` of the early and the later layers
    (``h``, dims ``(model, layer)``) and the verdict of the C5 rule at that ``n``
    (``outcome``: :func:`~msapod.studies.verdict.claims.spec_outcome`), labelled with
    its :math:`N`."""
    c = REGISTRY["C5"]
    early = [la for la in (1, 2) if la in h["layer"].values]
    late = list(c.layers)
    return (
        f"At N = {n}, layers 1–2 need {plots.span(h.sel(layer=early), 3)} modes and layers "
        f"{cl.layer_span(late)} {plots.span(h.sel(layer=late), 3)}. The C5 rule at N = {n} "
        f"([the rule](#rule-c5)) reads **{outcome['verdict']}** ({outcome['cases']}). "
        f"'About {c.about:g}' is a property of N = 150, not of the layers."
    )


def rule_parts(claim: str, mv, zoo: str | None = None, **axes) -> dict[str, str]:
    """The rule's case counts of ``claim`` per part (``"core"``, ``"i"``, ``"ii"``, ...;
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
    n = cl.main_numbers("C5", mv, zoo)["stat"]
    early, late = n.sel(layer=[1, 2]), n.sel(layer=list(c.layers))
    parts = rule_parts("C5", mv, zoo)
    main, _ = cl.spec_row("C5", mv, zoo)
    n_snap = int(json.loads(str(mv.attrs.get("main_specification", "{}")))["n"])
    return "\n".join(
        [
            f"* Layers 1–2: $H^*(0.10)$ = {plots.span(early)} over the {early.sizes['model']} "
            f"models. 'More than {c.stated['early_above']} modes' cannot occur with "
            f"$N = {n_snap}$ snapshots ($H^* \\le N - 1$): the rule leaves that part out "
            f"({parts['i']}) and tests what can be tested, whether the early "
            f"layers need more modes than the later ones: {parts['core']}.",
            f"* Layers {cl.layer_span(list(c.layers))}: $H^*(0.10)$ = {plots.span(late)}; the "
            f"paper's 'about {c.about:g}' read as within ±{100 * c.tolerance:.0f} %, per model and "
            f"layer with its 95 % interval: {parts['ii']}. The paper's own number: "
            f"{main['paper_value'].values}.",
        ]
    )


# --- the LLM page -----------------------------------------------------------------------


def _cpt(ds: xr.Dataset) -> float:
    """Characters per token of the LLM ensemble's snippets."""
    return float(ds.attrs["ensemble_chars_per_token"])


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


def llm_scale_depth(ds: xr.Dataset, zoo_centroid: xr.DataArray) -> str:
    """The LLM's scales across depth: the spread of its scale centroid (characters) and
    its rank correlation with depth, in how many layers the dominant scale is the finest
    one, against the zoo's centroids (``zoo_centroid``, characters), all of the scalogram
    of the field the analysis took (``scalogram_field``: A or u)."""
    from ..pipeline import FIELD_SYMBOLS

    sym = FIELD_SYMBOLS[ds.attrs["scalogram_field"]]
    cpt, n = _cpt(ds), ds.sizes["layer"]
    c = ds["scale_centroid"] * cpt
    rho = float(pd.Series(c.values).corr(pd.Series(ds["layer"].values), method="spearman"))
    finest = float(ds["scale"].min())
    dom = ds["dominant_scale"].isel(peak=0)
    c1, c2 = REGISTRY["C1"].stated["scale"], REGISTRY["C2"].stated["scale"]
    lo, hi = round(float(c.min()), 1), round(float(c.max()), 1)  # the ends as printed
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
        f"{float(zoo_centroid.max()):.0f} "
        f"characters) {compared}."
    )


def llm_table(rows) -> str:
    """The LLM's scorecard rows (:func:`~msapod.studies.verdict.scorecard.llm_rows`) as a
    Markdown table, the key columns first (on a phone the rest scrolls): claim, the
    verdict (bold), the paper's words, the measurement and the rule."""
    lines = [
        "| claim | verdict (SmolLM2) | the paper says | we measure (SmolLM2) | rule |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['claim']} | **{r['verdict']}** | {r['paper']} | {r['measured']} | {r['rule']} |"
        for r in rows
    ]
    return "\n".join(lines)


# --- the spectral concentration page --------------------------------------------------


def c3_lines(mv, top5: xr.DataArray, zoo: str | None = None) -> str:
    """C3 under the default reading as a Markdown list: :math:`T_\\mathrm{spec}` of the
    early and the late layers, the paper's "about 1.0" with the rule's cases, the
    late − early contrast with the rule's cases, and, as a comparison reading of
    "concentrated", the share of the energy in the first five modes (``top5``, dims
    ``(model, layer)``)."""
    c = REGISTRY["C3"]
    n = cl.main_numbers("C3", mv, zoo)["stat"]
    early, late = n.sel(layer=list(c.layers)), n.sel(layer=[5, 6])
    parts = rule_parts("C3", mv, zoo)
    conc = top5.sel(layer=[5, 6]).mean("layer") > top5.sel(layer=list(c.layers)).mean("layer")
    return "\n".join(
        [
            f"* $T_\\mathrm{{spec}}$ of layers {cl.layer_span(list(c.layers))}: "
            f"{plots.span(early)} over models and layers; the paper's 'about {c.about:.1f}', "
            f"read as within ±{100 * c.tolerance:.0f} %, per model and layer with its 95 % "
            f"interval: {parts['i']}.",
            f"* $T_\\mathrm{{spec}}$ of layers 5–6: {plots.span(late)}. Late minus early, per "
            f"model with its interval (the rule asks for late < early): {parts['core']}. "
            "A larger $T_\\mathrm{spec}$ is a *flatter* power law, i.e. a less concentrated "
            "spectrum by this index.",
            "* A comparison reading of 'concentrated', the share of the energy in the first "
            f"five modes (point values): layers 1–2 {plots.span(top5.sel(layer=[1, 2]))}, "
            f"layers 5–6 {plots.span(top5.sel(layer=[5, 6]))}; late layers concentrate more "
            f"energy in their first five modes than early layers in {int(conc.sum())} of "
            f"{conc.size} models.",
        ]
    )


def sign_text(claim: str, mv, zoo: str | None = None) -> str:
    """Where the per-layer EGA − baseline difference of ``claim`` (the default reading's)
    has the sign the claim states, and where the interval its rule reads (Holm across the
    claim's layers) excludes zero."""
    row, _ = cl.spec_row(claim, mv, zoo)  # the default reading's row
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
        f"{cl.layer_span(layers)}; the family-wise 95 % interval its verdict reads (Holm "
        f"across those layers) excludes zero in {where(sig)}."
    )
