"""The paper's claims, the verdict rules and the interval formatting: each written once.

Every study that judges a claim (the zoo scorecard, the LLM rows, head pruning) takes
the claim's text from :data:`CLAIMS`, classifies its cases with :func:`classify` and
combines them with :func:`combine` (the rules themselves: :mod:`.rules`):

* **holds** -- every case passes;
* **partly** -- some pass, others do not or are not significant;
* **not significant** -- no case passes or fails beyond its interval;
* **does not hold** -- no case passes and at least one fails beyond its interval;
* **not testable as stated** -- the claim cannot be checked with this setup.

The per-claim rules are in :mod:`msapod.studies.verdict.rules`; the specification curve (every
claim under every reasonable reading of the paper) in :mod:`msapod.studies.verdict.multiverse`.
Pages show a verdict only through :func:`verdict_markdown` / :func:`show_verdict`, which
read the specification curve, so a page cannot disagree with the scorecard.

**Robust or fragile**: a main-specification verdict is *robust* when at least
:data:`ROBUST_SHARE` (75 %) of the claim's specifications give the same verdict, else
*fragile*; a claim with one specification has no robustness check.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "CLAIMS",
    "CLAIM_PARTS",
    "ROBUST_SHARE",
    "VERDICTS",
    "Z95",
    "case_counts",
    "classify",
    "combine",
    "fmt_range",
    "layer_span",
    "axis_flips",
    "main_numbers",
    "main_verdict",
    "robustness",
    "show_verdict",
    "spec_outcome",
    "verdict_markdown",
    "verdict_shares",
]

VERDICTS = ("holds", "partly", "not significant", "does not hold", "not testable as stated")
#: Least share of a claim's specifications agreeing with the main verdict for "robust".
ROBUST_SHARE = 0.75
#: Two-sided 95 % normal quantile.
Z95 = 1.959963984540054

#: The claims as the paper states them (C1-C10 and the EGA loss claim).
CLAIMS = {
    "C1": "layers 1–2 put scalogram energy at fine scales, a ≤ 7",
    "C2": "layers 5–6 put it at coarse scales, a ≥ 20",
    "C3": "early T_spec ≈ 1.0 (distributed); late layers more concentrated",
    "C4": "scale-selective modes: layer 2 at lags 2–10, layer 4 at 10–35, layer 6 at 10–40",
    "C5": "H*(0.10): layers 1–2 need > 150 modes; layers 3–6 about 91",
    "C6": "uniform 8 heads over-specify deep layers, under-specify early ones",
    "C7": "EGA models show systematically higher scalogram energy in every layer",
    "C8": "EGA vs baseline: slightly higher T_spec in layers 3–4, lower in 5–6",
    "C9": "plain POD mixes scales; scale-selective POD separates them",
    "C10": "POD modes are the optimal rank-K linear basis (Theorem 1)",
    "loss": "EGA lowers validation loss (EGA paper: about −0.10 nats/char)",
}
#: The two parts of C6, each a row of the scorecard (the C6 row combines them).
CLAIM_PARTS = {
    "C6a": "C6 (depth): deep layers are over-specified, early ones under-specified",
    "C6b": "C6 (guide): H* tells which heads to remove",
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


def fmt_range(values, fmt: str = "{:.1f}") -> str:
    """``"lo–hi"`` of the finite values (NaN ignored), each formatted with ``fmt``."""
    v = np.asarray(values, dtype=float)
    if not np.isfinite(v).any():
        return "—"
    return f"{fmt.format(float(np.nanmin(v)))}–{fmt.format(float(np.nanmax(v)))}"


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


def main_numbers(claim: str, mv, zoo: str | None = None):
    """The default reading's key statistic of ``claim`` per ``(model, layer)`` with its
    95 % interval (``stat``, ``lower``, ``upper``), for numbers a page shows next to the
    verdict."""
    sub, z = _claim_specs(claim, mv, zoo)
    row = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))
    models = [
        m for m, mz in zip(mv["model"].values, mv["model_zoo"].values, strict=True) if mz == z
    ]
    return row[["stat", "lower", "upper"]].sel(model=models).reset_coords(drop=True)


def spec_outcome(claim: str, mv, zoo: str | None = None, **axes) -> dict:
    """The claim's outcome under the specification that differs from the default reading
    only in ``axes`` (e.g. ``n=600``): ``verdict``, ``measured``, ``cases``, ``rule``,
    ``reason`` (decided by the rule, read from the curve)."""
    sub, _ = _claim_specs(claim, mv, zoo)
    import json

    main = json.loads(str(mv.attrs.get("main_specification", "{}")) or "{}")
    want = {**main, **axes}
    keep = np.ones(sub.sizes["spec"], bool)
    for a, v in want.items():
        if a in sub.coords:
            keep &= sub[a].values == np.asarray(v, dtype=sub[a].dtype)
    if keep.sum() != 1:
        raise LookupError(f"axes: no single specification of {claim} with {axes}")
    row = sub.isel(spec=int(np.flatnonzero(keep)[0]))
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


#: Each claim's rule in one line (book symbols, MyST math); the full rule is in
#: :mod:`msapod.studies.verdict.rules` and on the page "The paper and its open choices".
RULE_LINES = {
    "C1": r"$a^*_{1,2} \le 7$ in every model, and $a^*$ larger in layers 5–6 than in 1–2",
    "C2": r"$a^*_{5,6} \ge 20$ in every model, and $a^*$ larger in layers 5–6 than in 1–2",
    "C3": r"$T_\mathrm{spec}(5,6) < T_\mathrm{spec}(1,2)$ in every model, and "
    r"$T_\mathrm{spec}(1,2) = 1 \pm 25\,\%$",
    "C4": r"mode 1 of layers 2, 4, 6 puts $\ge 50\,\%$ of its lag energy in the paper's lags, "
    "more than the window alone",
    "C5": r"$H^*_{1,2} > H^*_{3\text{–}6}$ in every model, $H^*_{1,2} > 150$ (where $N > 151$), "
    r"$H^*_{3\text{–}6} = 91 \pm 15\,\%$",
    "C6": "(a) pruning deep heads costs less than pruning early heads; (b) H*-guided pruning "
    "beats random at equal budget",
    "C7": r"$E_\mathrm{EGA} - E_\mathrm{baseline} > 0$ in every layer",
    "C8": r"$\Delta T_\mathrm{spec} > 0$ in layers 3–4 and $< 0$ in layers 5–6 (EGA − baseline)",
    "C9": r"scale spread of the windowed mode 1 $< 0.9 \times$ that of plain mode 1",
    "C10": r"rank-$K$ error $= \sum_{k > K} \lambda_k$ to $10^{-8}$; no random basis does better",
    "L": r"$\Delta \mathcal{L} = \mathcal{L}_\mathrm{EGA} - \mathcal{L}_\mathrm{baseline} < 0$",
}
#: The measured quantity of each claim in math and the layers it is read on.
_SYMBOLS = {
    "C1": (r"a^*", (1, 2)),
    "C2": (r"a^*", (5, 6)),
    "C3": (r"T_\mathrm{spec}", (1, 2)),
    "C4": (r"\text{share}", (2, 4, 6)),
    "C5": (r"H^*", (3, 4, 5, 6)),
    "C9": (r"\rho", None),
}
_DIFF_SYMBOLS = {"C7": r"\Delta E", "C8": r"\Delta T_\mathrm{spec}", "L": r"\Delta\mathcal{L}"}
#: C4 and C9 over seeds: the per-layer statistic the rule decides.
_SEED_SYMBOLS = {"C4": r"s - s_\mathrm{window}", "C9": r"\bar\rho"}


def _num(x: float) -> str:
    if not np.isfinite(x):
        return r"\infty" if x > 0 else r"-\infty"
    return "0" if abs(x) < 5e-3 else f"{x:.3g}"


def _measured_math(claim: str, main) -> str:
    """The default reading's key numbers in math: the range of the estimates and of their
    95 % intervals (``main``: the claim's row of the curve). C4 and C9 decided over seeds
    show their per-layer means (``diff``: mode - window share, geometric mean ratio)."""
    if claim in _SEED_SYMBOLS and "diff" in main and np.isfinite(main["diff"].values).any():
        d, lo, up = (main[k].values for k in ("diff", "diff_lower", "diff_upper"))
        ok = np.isfinite(d)
        return (
            f"${_SEED_SYMBOLS[claim]} = {_num(d[ok].min())}$ to ${_num(d[ok].max())}$ over "
            f"layers (mean over seeds), 95 % intervals within "
            f"$[{_num(np.nanmin(lo[ok]))}, {_num(np.nanmax(up[ok]))}]$"
        )
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
        text = f"${sym} = {_num(v.min())}$–${_num(v.max())}$" + (f" ({span})" if span else "")
        lv, uv = lo.values[np.isfinite(st.values)], up.values[np.isfinite(st.values)]
        if np.any(uv > lv):
            text += f", 95 % intervals within $[{_num(np.nanmin(lv))}, {_num(np.nanmax(uv))}]$"
        else:
            text += " (point values)"
        return text
    if claim in _DIFF_SYMBOLS and "diff" in main:
        d, lo, up = main["diff"], main["diff_lower"], main["diff_upper"]
        ok = np.isfinite(d.values)
        if not ok.any():
            return ""
        if claim == "L" or ok.sum() == 1:
            i = int(np.flatnonzero(ok)[0])
            return (
                f"${_DIFF_SYMBOLS[claim]} = {d.values[i]:+.3g}$, 95 % interval "
                f"$[{lo.values[i]:+.3g}, {up.values[i]:+.3g}]$"
            )
        return (
            f"${_DIFF_SYMBOLS[claim]} = {np.nanmin(d.values):+.3g}$ to "
            f"${np.nanmax(d.values):+.3g}$ over layers, 95 % intervals within "
            f"$[{np.nanmin(lo.values):+.3g}, {np.nanmax(up.values):+.3g}]$"
        )
    return ""


def _reading_words(claim: str, mv) -> str:
    """The default reading of the claim's axes, each tagged paper / book."""
    import json

    tags = json.loads(str(mv.attrs.get("reading_tags", "{}")) or "{}")
    spec = json.loads(str(mv.attrs.get("main_specification", "{}")) or "{}")
    axes = [a for a in str(mv["axes"].sel(claim=claim).values).split(",") if a]
    names = {
        "field": lambda v: f"scalogram of {v}",
        "normalisation": lambda v: "$E(a)/a$" if v == "rectified" else "raw $E(a)$",
        "scale_min": lambda v: f"scales from {v} to $L/2$",
        "scale_stat": lambda v: {"peak": "local maximum (edges as bounds)"}.get(v, v),
        "centre": lambda v: f"window centre {v}",
        "width": lambda v: f"$\\sigma = {v:g}\\,a^*$",
        "criterion": lambda v: f"{v} criterion",
        "n": lambda v: f"$N = {v}$",
        "fit": lambda v: "fit $k = 1..N/2$" if v == "default" else "fit $k = 1..20$",
    }
    parts = [
        f"{names[a](spec[a])} ({tags.get(a, {}).get('tag', 'book')})" for a in axes if a in spec
    ]
    return ", ".join(parts)


def verdict_markdown(claim: str, mv, zoo: str | None = None) -> str:
    """A short MyST admonition with the claim's verdict, for a page.

    It starts with the verdict of the book's default reading (bold), then the measured
    values with their 95 % intervals (math), the rule in one line, the reading (each
    choice tagged *paper* or *book*), the share of the specification curve that agrees
    (robust / fragile), the joint p over the curve and a link to the rule. The admonition
    carries the CSS classes ``verdict`` and ``claim-<id>``.

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
        return head + f"**not testable as stated** here: {err}\n```"
    main = sub.isel(spec=int(np.flatnonzero(sub["main"].values)[0]))
    word = str(main["verdict"].values)
    label, share = robustness(claim, mv, z)
    total = sum(verdict_shares(claim, mv, z).values())
    reason = str(main["reason"].values)
    math = _measured_math(claim, main) or str(main["measured"].values)
    lines = [f"**{word}** (the book's default reading, zoo {z}). Measured: {math}."]
    if word == "not testable as stated" and reason:
        lines.append(f"Why: {reason}.")
    stated = str(main["paper_value"].values) if "paper_value" in main else ""
    if stated:
        lines.append(f"The paper's number: {stated}.")
    level = "" if claim == "C10" else " (95 %, Holm across cases)"
    lines.append(f"Rule: {RULE_LINES.get(claim, str(main['rule'].values))}{level}.")
    reading = _reading_words(claim, mv)
    if reading:
        lines.append(f"Reading: {reading}.")
    if label == "single":
        curve = "One reading only (no specification curve)"
    else:
        curve = f"Robustness: {share:.0%} of {total} readings agree (**{label}**)"
    if "joint_p" in mv and claim in mv["joint_p"]["claim"].values:
        p = float(mv["joint_p"].sel(claim=claim))
        curve += f"; joint $p = {p:.2g}$" if np.isfinite(p) else "; joint p: —"
    else:
        curve += "; joint p: not computed"
    lines.append(curve + f". [The rule](#rule-{claim.lower()}).")
    return head + " ".join(lines) + "\n```"


#: The page that states every rule; each rule has the label ``rule-<claim>`` there,
#: linked as ``(#rule-c1)`` (a project-wide MyST target).
RULE_PAGE = "paper-choices.md"


def show_verdict(claim: str, mv, zoo: str | None = None):
    """:func:`verdict_markdown` as an ``IPython.display.Markdown`` (MyST-NB renders it)."""
    from IPython.display import Markdown

    return Markdown(verdict_markdown(claim, mv, zoo))
