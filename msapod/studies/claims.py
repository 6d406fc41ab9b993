"""The paper's claims, the verdict rules and the interval formatting: each written once.

Every study that judges a claim (the zoo scorecard, the LLM rows, head pruning) takes
the claim's text from :data:`CLAIMS`, classifies its cases with :func:`classify` (or
:func:`flags_verdict` for plain pass/fail cases) and combines them with :func:`combine`:

* **holds** -- every case passes;
* **partly** -- some pass, others do not or are not significant;
* **not significant** -- no case passes or fails beyond its interval;
* **does not hold** -- no case passes and at least one fails beyond its interval;
* **not testable as stated** -- the claim cannot be checked with this setup.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "CLAIMS",
    "VERDICTS",
    "Z95",
    "case_counts",
    "classify",
    "combine",
    "flags_verdict",
    "fmt_range",
    "layer_span",
]

VERDICTS = ("holds", "partly", "not significant", "does not hold", "not testable as stated")
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


def flags_verdict(flags) -> str:
    """:func:`combine` of pass/fail cases without intervals (True passes, False fails)."""
    flags = np.asarray(flags, dtype=bool).ravel()
    return combine(np.where(flags, "yes", "no"))


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
