"""The paper's claims, the verdict rules and the interval formatting: each written once.

Every study that judges a claim (the zoo scorecard, the LLM rows, head pruning) takes
the claim's text from :data:`CLAIMS`, classifies its cases with :func:`classify` and
combines them with :func:`combine` (the rules themselves: :mod:`.rules`). The verdict
words and what each means are :data:`VERDICT_MEANING` (stated there once; pages list them
with :func:`verdict_legend`).

The per-claim rules are in :mod:`msapod.studies.verdict.rules`; the specification curve (every
claim under every reasonable reading of the paper) in :mod:`msapod.studies.verdict.multiverse`.
Pages show a verdict only through :func:`verdict_markdown` / :func:`show_verdict`, which
read the specification curve, so a page cannot disagree with the scorecard.

**Robust or fragile**: a main-specification verdict is *robust* when at least
:data:`ROBUST_SHARE` (75 %) of the claim's specifications give the same verdict, else
*fragile*; a claim with one specification has no robustness check.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..measure.evidence import FIXED_K
from ..registry import REGISTRY

__all__ = [
    "AXIS_NAMES",
    "CLAIMS",
    "CLAIM_PARTS",
    "KINDS",
    "READING_WORDS",
    "REVERSED",
    "ROBUST_SHARE",
    "VERDICTS",
    "VERDICT_MEANING",
    "Z95",
    "axis_flips",
    "bounded_range",
    "case_counts",
    "claim_reading",
    "classify",
    "combine",
    "fmt_num",
    "fmt_range",
    "headline",
    "joint_text",
    "layer_span",
    "main_numbers",
    "main_verdict",
    "names",
    "reading_axes",
    "reading_words",
    "robustness",
    "show_verdict",
    "spec_outcome",
    "spec_row",
    "verdict_legend",
    "verdict_markdown",
    "verdict_shares",
]

#: The clause of "does not hold" that applies to the claims with an early-vs-late contrast.
REVERSED = ", or a claimed early-vs-late contrast is reversed beyond its interval in every model"
#: What each verdict word says, in one sentence (the vocabulary, stated once).
VERDICT_MEANING = {
    "holds": "every case passes its test by its 95 % interval (family-wise where the rule "
    "tests with Holm)",
    "partly": "some cases pass by their 95 % interval, the others do not",
    "not significant": "no case passes or fails: every interval contains both the claim's "
    "boundary and its negation",
    "does not hold": "no case passes and at least one fails beyond its 95 % interval" + REVERSED,
    "not testable as stated": "the data or the setting cannot decide the claim (the reason "
    "is given)",
}
#: The verdict words, from the strongest support to none.
VERDICTS = tuple(VERDICT_MEANING)
#: What kind of statement each claim is: the paper's empirical claims, its theorem, and
#: the cited claim of the energy-gated attention paper (from the registry).
KINDS = {c.id: c.kind for c in REGISTRY.values()}
#: Least share of a claim's specifications agreeing with the main verdict for "robust".
ROBUST_SHARE = 0.75
#: Two-sided 95 % normal quantile.
Z95 = 1.959963984540054

#: The claims as the paper states them (C1-C10 and the EGA loss claim, keyed ``"loss"``):
#: a view of :data:`~msapod.studies.registry.REGISTRY`.
CLAIMS = {("loss" if c.id == "L" else c.id): c.paper for c in REGISTRY.values()}
#: The two parts of C6, each a row of the scorecard (the C6 row combines them).
CLAIM_PARTS = {
    "C6a": "C6 (depth): deep layers are over-specified, early ones under-specified",
    "C6b": "C6 (guide): H* tells which heads to remove",
}


#: The columns of a claim's row: the scorecard, :func:`~msapod.studies.check_claims` and
#: the claims table of ``msapod analyze``'s report.
ROW_COLUMNS = ("verdict", "measured", "interval", "rule", "cases", "reason", "paper", "paper_value")
#: The cells of the report's claims table, with their headers.
REPORT_COLUMNS = {
    "claim": "claim",
    "paper": "the paper says",
    "verdict": "verdict",
    "measured": "measured",
    "interval": "interval (its rule's)",
    "cases": "cases",
}


def render(claim: str, fields, where: str = "") -> dict:
    """A claim's decided outcome as every page, table and report shows it.

    Parameters
    ----------
    claim
        ``"C1"`` ... ``"C10"``, ``"C6a"``, ``"C6b"`` or ``"L"``.
    fields
        The outcome's words by name (``verdict``, ``measured``, ``interval``, ``rule``,
        ``cases``, ``reason``, ``paper_value``): a
        :class:`~msapod.studies.verdict.rules.Outcome`'s attributes or one specification
        of the curve.
    where
        Where it was decided, for the sentence ("on the d128 zoo (...)").

    Returns
    -------
    dict
        ``sentence``: the verdict box's first sentence (the verdict in bold and what it
        means, :data:`VERDICT_MEANING`, or why the claim is not testable); ``row``: the
        claim's row (:data:`ROW_COLUMNS`); ``cells``: the report table's cells
        (:data:`REPORT_COLUMNS`).
    """
    get = fields.get if hasattr(fields, "get") else lambda k, d="": getattr(fields, k, d)
    word = str(get("verdict", ""))
    if word not in VERDICT_MEANING:
        raise ValueError(f"fields: expected a verdict of {VERDICTS}, got {word!r}")
    reason = str(get("reason", "") or "")
    if word == VERDICTS[-1] and reason:
        why = reason
    elif KINDS.get(claim) == "theorem":
        why = f"{VERDICT_MEANING[word].split(' by ')[0]}, an exact check (no sampling error)"
    else:
        why = VERDICT_MEANING[word]
        if claim not in REGISTRY or REGISTRY[claim].contrast_sign is None:
            why = why.replace(REVERSED, "")  # a claim without an early-vs-late contrast
    texts = {**CLAIMS, **CLAIM_PARTS, "L": CLAIMS["loss"]}
    row = {c: str(get(c, "") or "") for c in ROW_COLUMNS}
    row.update(verdict=word, reason=reason, paper=texts.get(claim, claim))
    row["interval"] = row["interval"] or "point value"
    cells = {**row, "claim": claim, "cases": f"{row['cases']} {reason}".strip()}
    return {
        "sentence": f"**{word}**{where}: {why}.",
        "row": row,
        "cells": [cells[c] for c in REPORT_COLUMNS],
    }


def classify(lower, upper, low: float = -np.inf, high: float = np.inf) -> np.ndarray:
    """Classify intervals ``[lower, upper]`` against the target range ``[low, high]``.

    Returns an array of ``"yes"`` (interval inside the range), ``"no"`` (interval
    disjoint from it) or ``"ns"`` (overlapping its edge: not significant either way).
    """
    lo, up = np.broadcast_arrays(np.asarray(lower, float), np.asarray(upper, float))
    if np.any(lo > up):
        raise ValueError("lower, upper: expected lower <= upper")
    inside = (lo >= low) & (up <= high)
    outside = (up < low) | (lo > high)
    return np.where(inside, "yes", np.where(outside, "no", "ns"))


def combine(cells) -> str:
    """Verdict of a set of per-case classifications (see the module docstring)."""
    cells = np.asarray(cells).ravel()
    if cells.size == 0:
        raise ValueError("cells: expected at least one case")
    bad = set(cells) - {"yes", "no", "ns"}
    if bad:
        raise ValueError(f"cells: expected 'yes', 'no' or 'ns', got {sorted(bad)}")
    n_yes, n_no = ((cells == k).sum() for k in ("yes", "no"))
    if n_yes == cells.size:
        return "holds"
    if n_yes:
        return "partly"
    if n_no:
        return "does not hold"
    return "not significant"


def fmt_num(x: float, fmt: str = "{:.3g}") -> str:
    """``x`` formatted with ``fmt``; a value that prints as zero has no sign ("0.00", not
    "-0.00" or "+0.00")."""
    s = fmt.format(float(x))
    try:
        zero = float(s) == 0.0
    except ValueError:  # not a plain number (a percentage, infinity): as formatted
        return s
    return s.lstrip("+-") if zero else s


def fmt_range(values, fmt: str = "{:.1f}") -> str:
    """``"lo–hi"`` of the finite values (NaN ignored), each formatted with ``fmt``
    (:func:`fmt_num`); ``"lo to hi"`` when ``lo`` is negative (a dash between signed
    numbers reads as a minus); one value when both ends print the same."""
    v = np.asarray(values, dtype=float)
    if not np.isfinite(v).any():
        return "—"
    lo, hi = fmt_num(np.nanmin(v), fmt), fmt_num(np.nanmax(v), fmt)
    if lo == hi:
        return lo
    return f"{lo} to {hi}" if lo.startswith("-") else f"{lo}–{hi}"


def bounded_range(values, side, fmt: Callable[[float], str] | None = None) -> str:
    """The range of the finite ``values`` with an end that is a bound printed as one
    ("≤ 3.0 to 93.7"): ``side`` per value -1 (at most: a maximum at the grid's first
    scale), +1 (at least: at its last) or 0 (a value); each end formatted with ``fmt``
    (default one decimal, :func:`fmt_num`). Ends joined by "–", or by " to " where an
    end is signed or a bound (a dash there reads as a minus or as part of the bound);
    one value when both ends print the same; "—" when none is finite."""
    v, side = np.asarray(values, float).ravel(), np.asarray(side).ravel()
    fmt = fmt or (lambda x: fmt_num(x, "{:.1f}"))
    ok = np.isfinite(v)
    if not ok.any():
        return "—"
    i, j = (int(np.flatnonzero(ok)[f(v[ok])]) for f in (np.argmin, np.argmax))
    lo, hi = (("≤ " if side[k] < 0 else "≥ " if side[k] > 0 else "") + fmt(v[k]) for k in (i, j))
    if lo == hi:
        return lo
    return f"{lo} to {hi}" if lo.startswith(("-", "≤", "≥")) or hi[0] in "≤≥" else f"{lo}–{hi}"


def case_counts(cells) -> str:
    """``"n cases: p pass, f fail, s n.s."`` of per-case classifications."""
    cells = np.asarray(cells).ravel()
    parts = [
        f"{(cells == k).sum()} {label}"
        for k, label in (("yes", "pass"), ("no", "fail"), ("ns", "n.s."))
    ]
    return f"{cells.size} {'case' if cells.size == 1 else 'cases'}: " + ", ".join(parts)


def layer_span(layers) -> str:
    """``"a–b"`` of a sorted list of layer numbers (``"a"`` for one, ``"none"`` for
    none)."""
    layers = list(layers)
    if not layers:
        return "none"
    return f"{layers[0]}–{layers[-1]}" if len(layers) > 1 else f"{layers[0]}"


def _claim_specs(claim: str, mv, zoo: str | None):
    """The claim's applicable specifications of ``zoo`` (default: the main zoo)."""
    if claim not in mv["claim"].values:
        raise ValueError(f"claim: expected one of {list(mv['claim'].values)}, got {claim!r}")
    z = _zoo(mv, zoo)
    sub = mv.sel(claim=claim)
    keep = (sub["applicable"] & (sub["zoo"] == z)).values
    return sub.isel(spec=np.flatnonzero(keep)), z


def _zoo(mv, zoo: str | None) -> str:
    zoos = [z for z in str(mv.attrs.get("zoos", "")).split(",") if z]
    if zoo is None:  # the main zoo (the study lists it first)
        zoo = str(mv.attrs.get("main_zoo", "")) or (zoos[0] if zoos else "")
    if zoo not in zoos:
        untrained = str(mv.attrs.get("not_trained", "")).split(",")
        why = "not trained" if zoo in untrained else "not in this study"
        raise LookupError(f"zoo: {zoo!r} is {why} (zoos analysed: {zoos})")
    return zoo


def main_verdict(claim: str, mv, zoo: str | None = None) -> str:
    """The main specification's verdict of ``claim`` in a :func:`multiverse_study`."""
    sub, _ = _claim_specs(claim, mv, zoo)
    main = sub.isel(spec=np.flatnonzero(sub["main"].values))
    return str(main["verdict"].values[0])


def main_numbers(claim: str, mv, zoo: str | None = None, **axes):
    """The key statistic of ``claim`` per ``(model, layer)`` with its interval (``stat``,
    ``lower``, ``upper``) under the default reading, or the one that differs from it in
    ``axes`` (:func:`spec_row`), for numbers a page shows next to the verdict."""
    row, z = spec_row(claim, mv, zoo, **axes)
    models = [
        m for m, mz in zip(mv["model"].values, mv["model_zoo"].values, strict=True) if mz == z
    ]
    return row[["stat", "lower", "upper"]].sel(model=models).reset_coords(drop=True)


def spec_row(claim: str, mv, zoo: str | None = None, **axes):
    """The claim's row of the curve ``mv`` under the specification that differs from the
    default reading only in ``axes`` (e.g. ``n=400``), and its zoo: ``(row, zoo)``;
    LookupError when no single specification matches."""
    import json

    sub, z = _claim_specs(claim, mv, zoo)
    want = {**json.loads(str(mv.attrs.get("main_specification", "{}")) or "{}"), **axes}
    keep = np.ones(sub.sizes["spec"], bool)
    for a, v in want.items():
        if a in sub.coords:
            keep &= sub[a].values == np.asarray(v, dtype=sub[a].dtype)
    if keep.sum() != 1:
        raise LookupError(f"axes: no single specification of {claim} with {axes}")
    return sub.isel(spec=int(np.flatnonzero(keep)[0])), z


def spec_outcome(claim: str, mv, zoo: str | None = None, **axes) -> dict:
    """The claim's outcome under the specification that differs from the default reading
    only in ``axes`` (:func:`spec_row`): ``verdict``, ``measured``, ``cases``, ``rule``,
    ``reason`` (decided by the rule, read from the curve)."""
    row, _ = spec_row(claim, mv, zoo, **axes)
    return {k: str(row[k].values) for k in ("verdict", "measured", "cases", "rule", "reason")}


def verdict_shares(claim: str, mv, zoo: str | None = None) -> dict[str, int]:
    """Number of the claim's specifications giving each verdict (every word of
    :data:`VERDICTS`, zeros included)."""
    sub, _ = _claim_specs(claim, mv, zoo)
    v = sub["verdict"].values
    return {w: int((v == w).sum()) for w in VERDICTS}


def robustness(claim: str, mv, zoo: str | None = None) -> tuple[str, float]:
    """``("robust" | "fragile" | "single", share agreeing with the main verdict)``."""
    counts = verdict_shares(claim, mv, zoo)
    total = sum(counts.values())
    share = counts[main_verdict(claim, mv, zoo)] / total
    if total < 2:
        return "single", share
    return ("robust" if share >= ROBUST_SHARE else "fragile"), share


def axis_flips(claim: str, mv, zoo: str | None = None) -> dict[str, float]:
    """Per axis of the claim's sub-grid: the share of pairs of specifications that differ
    only in that axis and give different verdicts (0: the axis never flips the claim)."""
    sub, _ = _claim_specs(claim, mv, zoo)
    axes = [a for a in str(sub["axes"].values).split(",") if a]
    table = {a: sub[a].values for a in axes}
    verdicts = sub["verdict"].values
    out = {}
    for a in axes:
        others = [b for b in axes if b != a]
        keys = (
            list(zip(*(table[b] for b in others), strict=True)) if others else [()] * len(verdicts)
        )
        groups: dict = {}
        for k, v in zip(keys, verdicts, strict=True):
            groups.setdefault(k, []).append(v)
        pairs = flips = 0
        for vs in groups.values():
            for i in range(len(vs)):
                for j in range(i + 1, len(vs)):
                    pairs += 1
                    flips += vs[i] != vs[j]
        out[a] = flips / pairs if pairs else 0.0
    return out


def names(ids, bold: bool = True) -> str:
    """``"**C1**, **C2** and **C3**"`` (plain with ``bold=False``); ``"none"`` for none."""
    ids = [f"**{c}**" if bold else str(c) for c in ids]
    if not ids:
        return "none"
    return ids[0] if len(ids) == 1 else ", ".join(ids[:-1]) + " and " + ids[-1]


#: How a group of claims with one verdict reads in a sentence: (one claim, several).
_VERBS = {
    "holds": ("holds", "hold"),
    "partly": ("holds partly", "hold partly"),
    "does not hold": ("does not hold", "do not hold"),
    "not significant": ("is not significant", "are not significant"),
    "not testable as stated": ("is not testable as stated", "are not testable as stated"),
}


#: The order in which a sentence lists the verdict groups: reproduced, refuted, the rest.
_HEADLINE_ORDER = ("holds", "does not hold", "partly", "not significant", "not testable as stated")


def _grouped(card, ids) -> str:
    """``"C1 and C2 do not hold; C7 is not significant"`` for the claims ``ids`` of the
    scorecard ``card`` (index ``claim``, column ``verdict``): reproduced, refuted, the rest."""
    parts = []
    for word in _HEADLINE_ORDER:
        group = [c for c in ids if str(card.loc[c, "verdict"]) == word]
        if group:
            parts.append(f"{names(group)} {_VERBS[word][len(group) > 1]}")
    return "; ".join(parts)


def headline(card, zoo: str = "") -> str:
    """The book's answer in one paragraph, from the scorecard ``card``: how many of the
    paper's *empirical* claims (:data:`KINDS`) are reproduced (hold) and how many are
    refuted (do not hold), each group named; then Theorem 1 (C10) and the cited loss claim
    (L) apart, since a theorem holds on any ensemble and L is another paper's claim."""
    empirical = [c for c in card.index if KINDS.get(c) == "empirical"]
    held = [c for c in empirical if card.loc[c, "verdict"] == "holds"]
    refuted = [c for c in empirical if card.loc[c, "verdict"] == "does not hold"]
    where = f" on the {zoo} zoo" if zoo else ""
    n = len(empirical)
    count = f"{len(held)} of the paper's {n}" if held else f"None of the paper's {n}"
    verb = "is" if len(held) <= 1 else "are"
    text = (
        f"{count} empirical claims (C1–C9) {verb} reproduced{where} and {len(refuted)} "
        f"{'is' if len(refuted) == 1 else 'are'} refuted: {_grouped(card, empirical)}."
    )
    extra = []
    if "C10" in card.index:
        extra.append(
            f"Theorem 1 (**C10**, a property of POD on any ensemble) "
            f"{_VERBS[str(card.loc['C10', 'verdict'])][0]}"
        )
    if "L" in card.index:
        extra.append(
            f"the energy-gated attention paper's loss claim (**L**) "
            f"{_VERBS[str(card.loc['L', 'verdict'])][0]}"
        )
    if extra:
        text += " " + "; ".join(extra)[0].upper() + "; ".join(extra)[1:] + "."
    return text


#: Each claim's rule in one line (book symbols, MyST math), from the registry; the full
#: rule is in :mod:`msapod.studies.verdict.rules` and on the page "The paper and its open
#: choices".
RULE_LINES = {c.id: c.rule_line for c in REGISTRY.values()}
#: The measured quantity of each layer claim in math and the layers it is read on.
_SYMBOLS = {c.id: (c.symbol, c.layers) for c in REGISTRY.values() if c.symbol and not c.signs}
#: The architecture contrasts' symbols (the claims that state EGA - baseline signs).
_DIFF_SYMBOLS = {c.id: c.symbol for c in REGISTRY.values() if c.signs}
#: C4 and C9 over seeds: the per-layer statistic the rule decides.
_SEED_SYMBOLS = {c.id: c.per_layer[0] for c in REGISTRY.values() if c.per_layer[0] and not c.signs}


def _num(x: float) -> str:
    if not np.isfinite(x):
        return r"\infty" if x > 0 else r"-\infty"
    return "0" if abs(x) < 5e-3 else f"{x:.3g}"


def _span_math(sym: str, v, lo, up, over: str) -> str:
    """``$sym$ = $a$ to $b$ (over), family-wise 95 % intervals (Holm) within $[l, u]$`` of
    the finite values ``v`` and the intervals their decisions read (point values where
    the intervals are empty)."""
    ok = np.isfinite(v)
    v, lo, up = v[ok], lo[ok], up[ok]
    a, b = _num(v.min()), _num(v.max())
    text = f"${sym}$ = ${a}$" if a == b else f"${sym}$ = ${a}$ to ${b}$"  # wraps on a phone
    text += f" ({over})" if over else ""
    if np.any(up > lo):
        return text + (
            f", family-wise 95 % intervals (Holm) within $[{_num(np.nanmin(lo))}, "
            f"{_num(np.nanmax(up))}]$"
        )
    return text + " (point values)"


def _core_math(claim: str, main) -> str:
    """The early/late contrast a claim's core test decides on (:attr:`Claim.contrast_symbol`),
    per model; "" for a claim without one."""
    sym = REGISTRY[claim].contrast_symbol if claim in REGISTRY else ""
    if not sym or "contrast" not in main or not np.isfinite(main["contrast"].values).any():
        return ""
    c = (main[k].values for k in ("contrast", "contrast_lower", "contrast_upper"))
    return "core: " + _span_math(sym, *c, "per model")


def _measured_math(claim: str, main) -> str:
    """The default reading's key numbers in math: the core contrast first where the claim
    has one (:func:`_core_math`), then the range of the estimates and of the intervals
    their decisions read (``main``: the claim's row of the curve). C4 and C9 decided over
    seeds show their per-layer means (``diff``: mode - window share, geometric mean
    ratio)."""
    core = _core_math(claim, main)
    rest = _stat_math(claim, main)
    return "; ".join(x for x in (core, rest) if x)


def _stat_math(claim: str, main) -> str:
    """:func:`_measured_math` without the core contrast."""
    if claim in _SEED_SYMBOLS and "diff" in main and np.isfinite(main["diff"].values).any():
        d, lo, up = (main[k].values for k in ("diff", "diff_lower", "diff_upper"))
        return _span_math(_SEED_SYMBOLS[claim], d, lo, up, "over layers, mean over seeds")
    if claim in _SYMBOLS and "stat" in main:
        sym, layers = _SYMBOLS[claim]
        st = main["stat"]
        if layers is not None:
            st = st.sel(layer=[x for x in layers if x in st["layer"].values])
        sel = {k: v for k, v in st.coords.items() if k in ("layer",)}
        lo, up = main["lower"].sel(sel), main["upper"].sel(sel)
        v = st.values[np.isfinite(st.values)]
        if v.size == 0:
            return ""
        span = ""
        if layers:
            span = "layers " + (
                ", ".join(map(str, layers))
                if len(layers) > 2 and layers[1] - layers[0] > 1
                else f"{layers[0]}–{layers[-1]}"
            )
        return _span_math(sym, st.values, lo.values, up.values, span)
    if claim in _DIFF_SYMBOLS and "diff" in main:
        d, lo, up = main["diff"], main["diff_lower"], main["diff_upper"]
        signed = [x for x in REGISTRY[claim].signs if x is not None]
        if signed and "layer" in d.dims:  # only the layers the claim states a sign for
            keep = [x for x in signed if x in d["layer"].values]
            d, lo, up = (v.sel(layer=keep) for v in (d, lo, up))
        ok = np.isfinite(d.values)
        if not ok.any():
            return ""
        if claim == "L" or ok.sum() == 1:
            i = int(np.flatnonzero(ok)[0])
            return (
                f"${_DIFF_SYMBOLS[claim]}$ = ${d.values[i]:+.3g}$, 95 % interval "
                f"$[{lo.values[i]:+.3g}, {up.values[i]:+.3g}]$"
            )
        return (
            f"${_DIFF_SYMBOLS[claim]}$ = ${np.nanmin(d.values):+.3g}$ to "
            f"${np.nanmax(d.values):+.3g}$ over layers, family-wise 95 % intervals (Holm) within "
            f"$[{np.nanmin(lo.values):+.3g}, {np.nanmax(up.values):+.3g}]$"
        )
    return ""


#: Each axis of the specification curve by name, in words.
AXIS_NAMES = {
    "field": "field",
    "normalisation": "scale-spectrum normalisation",
    "scale_min": "smallest scale",
    "scale_stat": "scale statistic",
    "scale_test": "scale test (C1, C2)",
    "c4_window": "C4's windows",
    "centre": "window centre",
    "width": "window width",
    "criterion": "H* criterion",
    "n": "ensemble size N",
    "fit": "T_spec fit range",
}
#: Each axis of a reading in words (plain text: the curve's ``where``, the verdict boxes).
READING_WORDS = {
    "field": lambda v, spec: f"scalogram of {v}",
    "normalisation": lambda v, spec: "E(a)/a" if v == "rectified" else "raw E(a)",
    "scale_min": lambda v, spec: f"scales from {v} to L/2",
    "scale_stat": lambda v, spec: {
        "peak": "a* at the strongest interior maximum (edges as bounds)",
        "argmax": "a* at the global maximum",
        "centroid": "a* as the scale centroid",
    }[v],
    "scale_test": lambda v, spec: {
        "share": "band shares of E(a) against the untrained models",
        "peak": "C1/C2 read on a* (edges as bounds)",
    }[v],
    "c4_window": lambda v, spec: {
        "range": "window on the paper's lags",
        "dominant scale": "window at the dominant scale",
    }[v],
    "centre": lambda v, spec: {
        "energy-max": "window centre at the energy maximum",
        "period": "window centre at the period p(a*)",
    }[v],
    "width": lambda v, spec: (
        f"σ = {v:g} × half the range" if spec.get("c4_window") == "range" else f"σ = {v:g} a*"
    ),
    "criterion": lambda v, spec: f"{v} criterion",
    "n": lambda v, spec: f"N = {v}",
    "fit": lambda v, spec: (
        "fit k = 1..N/2" if v == "default" else "fit k = {}..{}".format(*FIXED_K)
    ),
}


def reading_axes(claim: str, spec: dict) -> tuple[str, ...]:
    """The axes ``claim``'s verdict depends on under ``spec``: its registry ``axes``, or
    fewer under a reading of its ``varies_with`` (C4's windows on the paper's lags have
    a width but no centre)."""
    c = REGISTRY[claim]
    for (axis, value), keep in c.varies_with.items():
        if spec[axis] == value:
            return tuple(a for a in c.axes if a in (axis, *keep))
    return c.axes


def reading_words(spec: dict, axes, tags: dict | None = None) -> str:
    """The reading ``spec`` of ``axes`` in words (:data:`READING_WORDS`), each followed by
    its tag ("paper" or "book") where ``tags`` gives one; "" for no axes. Windows are on
    the paper's lags only where ``axes`` has ``c4_window`` (others sit at a* and their
    width reads in units of a*)."""
    if "c4_window" not in axes:
        spec = {**spec, "c4_window": "dominant scale"}
    parts = []
    for a in axes:
        if a in spec:
            tag = (tags or {}).get(a, {}).get("tag")
            parts.append(READING_WORDS[a](spec[a], spec) + (f" ({tag})" if tag else ""))
    return ", ".join(parts)


def claim_reading(claim: str, mv) -> str:
    """The default reading of ``claim``'s axes on the curve ``mv``, each tagged paper or
    book."""
    import json

    tags = json.loads(str(mv.attrs.get("reading_tags", "{}")) or "{}")
    spec = json.loads(str(mv.attrs.get("main_specification", "{}")) or "{}")
    axes = [a for a in str(mv["axes"].sel(claim=claim).values).split(",") if a]
    if claim in REGISTRY and spec:
        axes = [a for a in reading_axes(claim, spec) if a in axes]
    return reading_words(spec, axes, {a: tags.get(a, {"tag": "book"}) for a in axes})


def verdict_legend() -> str:
    """The verdict vocabulary as a Markdown list: each word with what it means
    (:data:`VERDICT_MEANING`, the one place it is stated)."""
    items = [f"* **{word}**: {meaning}" for word, meaning in VERDICT_MEANING.items()]
    return ";\n".join(items) + "."


def verdict_markdown(claim: str, mv, zoo: str | None = None) -> str:
    """The claim's verdict box for a page (a MyST admonition): two sentences, then the
    numbers.

    The first sentence is the verdict of the book's default reading (bold) with what the
    word means (:data:`VERDICT_MEANING`), or why the claim is not testable; the second is
    the specification curve's robustness and joint test. Then a list: the measured values
    with their 95 % intervals (math), the cases the rule decided (and those it left out),
    the paper's own number where it states one, the rule
    in one line with a link to its full statement, and the reading. The admonition carries
    the CSS classes ``verdict`` and ``claim-<id>``.

    Parameters
    ----------
    claim
        ``"C1"`` ... ``"C10"`` or ``"L"``.
    mv
        :func:`msapod.studies.verdict.curve.multiverse_study` result.
    zoo
        Zoo name (default: the main zoo). A zoo that is not trained gives an admonition
        saying so.
    """
    title = CLAIMS["loss" if claim == "L" else claim] if claim in {*CLAIMS, "L"} else claim
    head = f"```{{admonition}} {claim}: {title}\n:class: verdict claim-{claim}\n"
    try:
        sub, z = _claim_specs(claim, mv, zoo)
    except LookupError as err:
        return head + f"**{VERDICTS[-1]}** here: {err}\n```"
    main = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))
    words = {k: str(main[k].values) for k in ROW_COLUMNS if k in main}
    first = render(claim, words, f" on the {z} zoo (the book's default reading)")["sentence"]
    label, share = robustness(claim, mv, z)
    total = sum(verdict_shares(claim, mv, z).values())
    if label == "single":
        second = "The paper leaves no choice open here: one reading only"
    else:
        second = f"{share:.0%} of the {total} readings of the paper agree (**{label}**)"
    second += _joint_words(claim, mv) + "."
    items = [f"Measured: {_measured_math(claim, main) or str(main['measured'].values)}"]
    if "cases" in main and str(main["cases"].values):
        items.append(f"Cases: {main['cases'].values}")
    stated = str(main["paper_value"].values) if "paper_value" in main else ""
    if stated:
        items.append(f"The paper's number: {stated}")
    level = f" ({REGISTRY[claim].level})" if claim in REGISTRY and REGISTRY[claim].level else ""
    rule = RULE_LINES.get(claim, str(main["rule"].values))
    items.append(f"Rule: {rule}{level}; [the rule in full](#rule-{claim.lower()})")
    reading = claim_reading(claim, mv)
    if reading:
        items.append(f"Reading: {reading}")
    body = first + " " + second + "\n\n" + "\n".join(f"* {x}" for x in items)
    return head + body + "\n```"


def joint_text(p: float, direction: str) -> str:
    """The two-sided joint test of a claim's curve in words: ``"against the claim,
    two-sided p-value 0.01"`` when significant (below 0.05), ``"two-sided p-value 0.19,
    neither direction"`` otherwise, ``"no joint test"`` for NaN (the scorecard's column and the
    verdict boxes)."""
    if not np.isfinite(p):
        return "no joint test"
    if p < 0.05 and direction in ("for", "against"):
        return f"{direction} the claim, two-sided p-value {p:.2g}"
    return f"two-sided p-value {p:.2g}, neither direction"


def _joint_words(claim: str, mv) -> str:
    """``"; joint test over the curve: ..."`` (:func:`joint_text`) from the curve's
    ``joint_p`` and ``joint_direction``; ``"; no joint test"`` without one."""
    if "joint_p" not in mv or claim not in mv["joint_p"]["claim"].values:
        return "; no joint test"
    p = float(mv["joint_p"].sel(claim=claim))
    way = str(mv["joint_direction"].sel(claim=claim).values) if "joint_direction" in mv else ""
    text = joint_text(p, way)
    return "; " + text if text == "no joint test" else "; joint test over the curve: " + text


#: The page that states every rule; each rule has the label ``rule-<claim>`` there,
#: linked as ``(#rule-c1)`` (a project-wide MyST target).
RULE_PAGE = "paper-choices.md"


def show_verdict(claim: str, mv, zoo: str | None = None):
    """:func:`verdict_markdown` as an ``IPython.display.Markdown`` (MyST-NB renders it)."""
    from IPython.display import Markdown

    return Markdown(verdict_markdown(claim, mv, zoo))
