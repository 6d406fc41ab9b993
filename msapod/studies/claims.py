"""The paper's claims, the verdict rules and the interval formatting: each written once.

Every study that judges a claim (the zoo scorecard, the LLM rows, head pruning) takes
the claim's text from :data:`CLAIMS`, classifies its cases with :func:`classify` and
combines them with :func:`combine` (the rules themselves: :mod:`.rules`):

* **holds** -- every case passes;
* **partly** -- some pass, others do not or are not significant;
* **not significant** -- no case passes or fails beyond its interval;
* **does not hold** -- no case passes and at least one fails beyond its interval;
* **not testable as stated** -- the claim cannot be checked with this setup.

The per-claim rules are in :mod:`msapod.studies.rules`; the specification curve (every
claim under every reasonable reading of the paper) in :mod:`msapod.studies.multiverse`.
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
    "ROBUST_SHARE",
    "VERDICTS",
    "Z95",
    "case_counts",
    "classify",
    "combine",
    "fmt_range",
    "layer_span",
    "axis_flips",
    "main_verdict",
    "robustness",
    "show_verdict",
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
    return f"{fmt.format(float(np.nanmin(values)))}–{fmt.format(float(np.nanmax(values)))}"


def case_counts(cells) -> str:
    """``"n cases: p pass, f fail, s n.s."`` of per-case classifications."""
    cells = np.asarray(cells).ravel()
    parts = [
        f"{(cells == k).sum()} {label}"
        for k, label in (("yes", "pass"), ("no", "fail"), ("ns", "n.s."))
    ]
    return f"{cells.size} cases: " + ", ".join(parts)


def layer_span(layers) -> str:
    """``"a–b"`` of a sorted list of layer numbers (``"a"`` for one)."""
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


def verdict_markdown(claim: str, mv, zoo: str | None = None) -> str:
    """A MyST admonition with the claim's verdict, for a page.

    The text starts with the main-specification verdict (bold), then what was measured
    and the rule, then the verdicts over the specification curve and the robust/fragile
    label. The admonition carries the CSS classes ``verdict`` and ``claim-<id>``.

    Parameters
    ----------
    claim
        ``"C1"`` ... ``"C10"`` or ``"L"``.
    mv
        :func:`msapod.studies.multiverse.multiverse_study` result.
    zoo
        Zoo name (default: the main zoo). A zoo that is not trained gives an admonition
        saying so.
    """
    title = CLAIMS["loss" if claim == "L" else claim] if claim in {*CLAIMS, "L"} else claim
    try:
        sub, z = _claim_specs(claim, mv, zoo)
    except LookupError as err:
        return (
            f"```{{admonition}} {claim}: {title}\n:class: verdict claim-{claim}\n"
            f"**not testable as stated** here: {err}\n```"
        )
    main = sub.isel(spec=np.flatnonzero(sub["main"].values))
    word = str(main["verdict"].values[0])
    label, share = robustness(claim, mv, z)
    counts = verdict_shares(claim, mv, z)
    total = sum(counts.values())
    spread = ", ".join(f"{n} {w}" for w, n in counts.items() if n)
    reason = str(main["reason"].values[0])
    if label == "single":
        curve = "one reading only (no specification curve)"
    else:
        curve = (
            f"over the specification curve ({total} specifications, zoo {z}): {spread}; "
            f"**{label}** ({share:.0%} agree with the main verdict; robust means at least "
            f"{ROBUST_SHARE:.0%})"
        )
    body = (
        f"**{word}** under the main specification (the paper's literal reading; zoo {z}). "
        f"Measured: {main['measured'].values[0]}. Rule: {main['rule'].values[0]} "
        f"({main['cases'].values[0]})."
        + (f" Why: {reason}." if reason else "")
        + f" {curve[0].upper() + curve[1:]}."
    )
    return f"```{{admonition}} {claim}: {title}\n:class: verdict claim-{claim}\n{body}\n```"


def show_verdict(claim: str, mv, zoo: str | None = None):
    """:func:`verdict_markdown` as an ``IPython.display.Markdown`` (MyST-NB renders it)."""
    from IPython.display import Markdown

    return Markdown(verdict_markdown(claim, mv, zoo))
