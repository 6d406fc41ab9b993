"""One rule per claim: measured values with 95 % intervals -> per-case outcomes -> verdict.

Every page, the scorecard (:func:`msapod.studies.scorecard.zoo_scorecard`), the LLM rows
and the specification curve (:mod:`msapod.studies.multiverse`) decide a claim with the
function of this module named after it (:data:`RULES`). Each takes the numbers measured
under **one specification** (one reading of the paper) and returns an :class:`Outcome`.

Conventions, stated once:

* **One interval level**: 95 % everywhere (``Z95`` jackknife standard errors per model
  and layer; Student-t over seeds for architecture differences; the same ``Z95`` for the
  pruning contrast of C6). Where no interval exists (mode shapes, C4 and C9) the rule
  says "point value" and the interval is the point.
* **Cases** are classified with :func:`msapod.studies.claims.classify` (``"yes"``: the
  interval is inside the claim's range; ``"no"``: disjoint from it; ``"ns"``: across its
  edge) and combined with :func:`msapod.studies.claims.combine`.
* **Contrasts first** (C3, C5): a claim that states an early-vs-late *contrast* does not
  hold when the contrast is reversed beyond its interval in every model, whatever the
  threshold cases say (:func:`combine_core`).
* **Edges are not dominant scales**: a maximum of the scale spectrum at the first or last
  scale of the grid is an *edge* (the spectrum is still rising there). A claim that needs
  an interior dominant scale and finds none in any of its cases is **not testable as
  stated** (reason: "under this reading"), not "partly"; cases without one are left out
  and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from .claims import CLAIMS, Z95, case_counts, classify, combine, fmt_range, layer_span

__all__ = [
    "EARLY",
    "LATE",
    "PAPER_LAGS",
    "RULES",
    "THRESHOLDS",
    "Outcome",
    "combine_core",
    "interior_peak",
    "rule_c1",
    "rule_c2",
    "rule_c3",
    "rule_c4",
    "rule_c5",
    "rule_c6",
    "rule_c7",
    "rule_c8",
    "rule_c9",
    "rule_c10",
    "rule_loss",
]

#: The layers each claim is about.
EARLY, LATE, MIDDLE_LATE = [1, 2], [5, 6], [3, 4, 5, 6]
#: C4: the paper's lag range (characters) of the scale-selective modes of layers 2, 4, 6.
PAPER_LAGS = {2: (2, 10), 4: (10, 35), 6: (10, 40)}
#: The target range of each claim's key statistic (for forest plots): ``(low, high)``.
THRESHOLDS = {
    "C1": (-np.inf, 7.0),
    "C2": (20.0, np.inf),
    "C3": (0.75, 1.25),
    "C4": (0.5, np.inf),
    "C5": (0.85 * 91, 1.15 * 91),
    "C7": (0.0, np.inf),
    "C8": (0.0, np.inf),
    "C9": (-np.inf, 1.0),
    "C10": (-np.inf, 1e-8),
    "L": (-np.inf, 0.0),
}
NOT_TESTABLE = "not testable as stated"


@dataclass
class Outcome:
    """A claim's verdict under one specification.

    Attributes
    ----------
    claim
        ``"C1"`` ... ``"C10"`` or ``"L"``.
    verdict
        One of :data:`msapod.studies.claims.VERDICTS`.
    measured, rule, cases, reason
        What was measured (text with numbers), the rule, the per-case counts, and why a
        claim is not testable (empty otherwise).
    stat, lower, upper
        The key statistic per ``(model, layer)`` with its 95 % interval (None if the claim
        has none).
    contrast
        Per-model early-vs-late contrast (C3, C5) as a Dataset ``value, lower, upper``.
    diff
        Architecture difference per layer (C7, C8, L) as a Dataset ``value, lower, upper``.
    """

    claim: str
    verdict: str
    measured: str
    rule: str
    cases: str
    reason: str = ""
    stat: xr.DataArray | None = None
    lower: xr.DataArray | None = None
    upper: xr.DataArray | None = None
    contrast: xr.Dataset | None = None
    diff: xr.Dataset | None = None
    extra: dict = field(default_factory=dict)


def combine_core(core, other=()) -> str:
    """Verdict of a claim with a core contrast: "does not hold" if the core cases do not
    hold (reversed beyond their interval, none passing), else :func:`combine` of all."""
    core = np.asarray(core).ravel()
    other = np.asarray(other).ravel()
    if core.size and combine(core) == "does not hold":
        return "does not hold"
    return combine(np.concatenate([core, other]))


def interior_peak(spectrum: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Strongest interior local maximum of ``spectrum(..., scale)``, NaN if none.

    A maximum at the first or last scale is an edge, not a peak. The location is refined
    by a parabola through the three points around it in ``log a`` (so it moves
    continuously, which its jackknife standard error needs).
    """
    E = np.asarray(spectrum, dtype=np.float64)
    s = np.log(np.asarray(scales, dtype=np.float64))
    mid = E[..., 1:-1]
    is_peak = (mid > E[..., :-2]) & (mid >= E[..., 2:])
    score = np.where(is_peak, mid, -np.inf)
    k = np.argmax(score, axis=-1)
    has = np.isfinite(np.take_along_axis(score, k[..., None], -1)[..., 0])
    i = k + 1
    y0 = np.take_along_axis(E, (i - 1)[..., None], -1)[..., 0]
    y1 = np.take_along_axis(E, i[..., None], -1)[..., 0]
    y2 = np.take_along_axis(E, (i + 1)[..., None], -1)[..., 0]
    h = s[1] - s[0] if s.size > 1 else 1.0
    den = y0 - 2 * y1 + y2
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = np.where(den < 0, 0.5 * (y0 - y2) / den, 0.0)
    # uniform log grid assumed for the refinement (the grids here are log-spaced)
    loga = s[np.clip(i, 0, s.size - 1)] + np.clip(shift, -0.5, 0.5) * h
    return np.where(has, np.exp(loga), np.nan)


def _interval(stat, se):
    se = xr.zeros_like(stat) if se is None else se.fillna(0.0)
    return stat - Z95 * se, stat + Z95 * se


def _scale_rule(claim, layers, low, high, stat, se, statistic, where, unit=1.0):
    """C1 and C2: the scale statistic of every model and claimed layer in the range
    (``unit``: characters per lag unit, e.g. characters per token for an LLM)."""
    stat = stat * unit
    se = None if se is None else se * unit
    s = stat.sel(layer=layers)
    lo, up = _interval(stat, se)
    ok = np.isfinite(s.values)
    n_edge = int((~ok).sum())
    name = "interior dominant scale" if statistic == "peak" else "scale centroid"
    span = f"{layers[0]}–{layers[-1]}"
    target = f"≤ {high:g}" if np.isfinite(high) else f"≥ {low:g}"
    rule = f"95 % interval of the {name} {target}, every model and layer {span} ({where})"
    if not ok.any():
        return Outcome(
            claim,
            NOT_TESTABLE,
            f"{name}, layers {span}: none (every maximum at the edge of the scale grid)",
            rule,
            f"{s.size} cases: all at the grid edge",
            reason=(
                "no interior maximum of the scale spectrum in layers "
                f"{span} under this reading ({where}): the energy keeps rising towards the "
                "edge of the scale grid"
            ),
            stat=stat,
            lower=lo,
            upper=up,
        )
    cells = classify(lo.sel(layer=layers).values[ok], up.sel(layer=layers).values[ok], low, high)
    counts = case_counts(cells) + (f", {n_edge} at the grid edge (left out)" if n_edge else "")
    lo_min, up_max = float(np.nanmin(lo.sel(layer=layers))), float(np.nanmax(up.sel(layer=layers)))
    measured = (
        f"{name}, layers {span}: {fmt_range(s)} characters (95 % intervals within "
        f"{lo_min:.1f}–{up_max:.1f})"
    )
    return Outcome(
        claim,
        combine(cells),
        measured,
        rule,
        counts,
        reason=f"{n_edge} case(s) without an interior dominant scale" if n_edge else "",
        stat=stat,
        lower=lo,
        upper=up,
    )


def rule_c1(
    stat: xr.DataArray,
    se: xr.DataArray | None,
    *,
    statistic: str = "peak",
    where: str = "",
    early=EARLY,
    unit: float = 1.0,
) -> Outcome:
    """C1: layers 1-2 at fine scales, a <= 7 (95 % interval of the scale statistic).

    Parameters
    ----------
    stat, se
        Scale statistic (interior dominant scale a* or centroid, lags) and its jackknife
        standard error per ``(model, layer)``; NaN where there is no interior maximum.
    statistic
        ``"peak"`` or ``"centroid"`` (names the statistic in the text).
    where
        The specification in words (for the rule text).
    early, unit
        The claimed layers (default 1-2; an LLM maps them by depth) and characters per
        lag unit (1 for character models; characters per token for a BPE model).
    """
    return _scale_rule("C1", list(early), -np.inf, 7.0, stat, se, statistic, where, unit)


def rule_c2(
    stat: xr.DataArray,
    se: xr.DataArray | None,
    *,
    statistic: str = "peak",
    where: str = "",
    late=LATE,
    unit: float = 1.0,
) -> Outcome:
    """C2: layers 5-6 at coarse scales, a >= 20 (as :func:`rule_c1`)."""
    return _scale_rule("C2", list(late), 20.0, np.inf, stat, se, statistic, where, unit)


def _contrast(value, se, first, second):
    """``mean(value[second]) - mean(value[first])`` per model and its SE (layers taken
    as independent: conservative when their errors are positively correlated)."""
    d = value.sel(layer=second).mean("layer") - value.sel(layer=first).mean("layer")
    if se is None:
        s = xr.zeros_like(d)
    else:
        s = np.sqrt(
            (se.sel(layer=second) ** 2).sum("layer") / len(second) ** 2
            + (se.sel(layer=first) ** 2).sum("layer") / len(first) ** 2
        )
    return xr.Dataset({"value": d, "lower": d - Z95 * s, "upper": d + Z95 * s})


def rule_c3(
    T: xr.DataArray,
    se: xr.DataArray | None,
    *,
    n: int = 150,
    where: str = "",
    early=EARLY,
    late=LATE,
) -> Outcome:
    """C3: early T_spec about 1 AND late layers more concentrated than early ones.

    Cases: (core) per model, the contrast ``mean T_spec(5-6) - mean T_spec(1-2) < 0``
    (a more concentrated spectrum decays faster: larger beta, smaller T_spec) with its 95 %
    interval; (a) per model and layer 1-2, the interval of T_spec inside ``1 ± 0.25``.
    A reversed contrast in every model means "does not hold".
    """
    early, late = list(early), list(late)
    lo, up = _interval(T, se)
    c = _contrast(T, se, early, late)
    core = classify(c["lower"].values, c["upper"].values, high=0.0)
    a = classify(lo.sel(layer=early).values, up.sel(layer=early).values, 0.75, 1.25)
    measured = (
        f"T_spec (N = {n}) layers {layer_span(early)}: {fmt_range(T.sel(layer=early), '{:.2f}')}"
        f", layers {layer_span(late)}: {fmt_range(T.sel(layer=late), '{:.2f}')}; late − early: "
        + ", ".join(
            f"{float(v):+.2f} [{float(lo_):+.2f}, {float(up_):+.2f}]"
            for v, lo_, up_ in zip(c["value"], c["lower"], c["upper"], strict=True)
        )
    )
    return Outcome(
        "C3",
        combine_core(core, a),
        measured,
        f"(core) T_spec(layers {layer_span(late)}) − T_spec(layers {layer_span(early)}) < 0 "
        "with its 95 % interval, every model; (a) 95 % interval of T_spec inside 1 ± 0.25, "
        f"layers {layer_span(early)} ({where})",
        f"(core) {case_counts(core)}; (a) {case_counts(a)}",
        stat=T,
        lower=lo,
        upper=up,
        contrast=c,
    )


def rule_c4(
    share: xr.DataArray, reach: xr.DataArray, peaks6: xr.DataArray | None = None, *, where: str = ""
) -> Outcome:
    """C4: the scale-selective modes of layers 2, 4, 6 sit at the paper's lags.

    Parameters
    ----------
    share
        Per ``(model, layer)``: the largest, over the windows of the specification, share
        of mode 1's lag energy inside the paper's range (:data:`PAPER_LAGS`); NaN where
        the specification gives no window (no interior dominant scale).
    reach
        Per ``(model, layer)``: whether that window reaches the paper's range at all
        (weight ``w >= exp(-2)`` somewhere in it). A window that cannot reach the range
        leaves the case untestable (decided by construction, not by the data).
    peaks6
        Per model: local maxima of that mode's lag-energy profile inside 10-40 (layer 6
        needs "several", >= 2).

    A case passes if the share is >= 0.5 (and layer 6 has >= 2 peaks); point values (a
    mode shape carries no interval here).
    """
    layers = sorted(PAPER_LAGS)
    s = share.sel(layer=layers)
    r = reach.sel(layer=layers).fillna(False).astype(bool)
    ok = np.isfinite(s.values) & r.values
    passed = s.values >= 0.5
    if peaks6 is not None:
        i6 = layers.index(6)
        passed[:, i6] &= np.nan_to_num(np.asarray(peaks6, float)) >= 2
    cells = np.where(passed, "yes", "no")[ok]
    n_none = int((~np.isfinite(s.values)).sum())
    n_unreach = int((np.isfinite(s.values) & ~r.values).sum())
    rule = (
        "share of mode 1's lag energy inside the paper's lags ≥ 0.5 in a window of the "
        "dominant scale (layer 6 also ≥ 2 peaks in 10–40), every model and layer 2, 4, 6; "
        f"point values ({where})"
    )
    text = "; ".join(
        f"L{layer} {fmt_range(s.sel(layer=layer), '{:.2f}')}"
        if np.isfinite(s.sel(layer=layer)).any()
        else f"L{layer} —"
        for layer in layers
    )
    measured = f"lag-energy share in the paper's range (models min–max): {text}"
    left = []
    if n_none:
        left.append(f"{n_none} without an interior dominant scale")
    if n_unreach:
        left.append(f"{n_unreach} whose window cannot reach the paper's lags")
    if cells.size == 0:
        return Outcome(
            "C4",
            NOT_TESTABLE,
            measured,
            rule,
            f"{s.size} cases: " + ", ".join(left),
            reason="no case testable under this reading: " + ", ".join(left),
            stat=share,
            lower=share,
            upper=share,
        )
    return Outcome(
        "C4",
        combine(cells),
        measured,
        rule,
        case_counts(cells) + (f"; left out: {', '.join(left)}" if left else ""),
        reason="; ".join(left),
        stat=share,
        lower=share,
        upper=share,
    )


def rule_c5(
    H: xr.DataArray,
    se: xr.DataArray | None,
    *,
    n: int = 150,
    criterion: str = "energy",
    where: str = "",
    early=EARLY,
    rest=MIDDLE_LATE,
) -> Outcome:
    """C5: H*(0.10) of layers 1-2 above 150, of layers 3-6 about 91 — early needs MORE.

    Cases: (core) per model ``mean H*(1-2) - mean H*(3-6) > 0`` with its 95 % interval;
    (a) layers 1-2 above 150 (only testable when N - 1 > 150: H* cannot exceed N - 1);
    (b) layers 3-6 within ±15 % of 91. A reversed contrast means "does not hold".
    """
    early, rest = list(early), list(rest)
    lo, up = _interval(H, se)
    c = _contrast(H, se, rest, early)  # early - later
    core = classify(c["lower"].values, c["upper"].values, low=0.0)
    testable = n - 1 > 150
    a = (
        classify(lo.sel(layer=early).values, up.sel(layer=early).values, low=150.5)
        if testable
        else np.array([], dtype=str)
    )
    b = classify(lo.sel(layer=rest).values, up.sel(layer=rest).values, 0.85 * 91, 1.15 * 91)
    measured = (
        f"H*(0.10, {criterion}) at N = {n}: layers {layer_span(early)} "
        f"{fmt_range(H.sel(layer=early), '{:.0f}')}, layers {layer_span(rest)} "
        f"{fmt_range(H.sel(layer=rest), '{:.0f}')}; early − later: "
        + ", ".join(
            f"{float(v):+.0f} [{float(lo_):+.0f}, {float(up_):+.0f}]"
            for v, lo_, up_ in zip(c["value"], c["lower"], c["upper"], strict=True)
        )
    )
    rule = (
        f"(core) H*(layers {layer_span(early)}) − H*(layers {layer_span(rest)}) > 0 with its "
        f"95 % interval, every model; (a) 95 % interval of H* above 150, layers "
        f"{layer_span(early)}"
        + ("" if testable else f" — left out: H* ≤ N − 1 = {n - 1} by construction")
        + f"; (b) within ±15 % of 91, layers {layer_span(rest)} ({where})"
    )
    return Outcome(
        "C5",
        combine_core(core, np.concatenate([a.ravel(), b.ravel()])),
        measured,
        rule,
        f"(core) {case_counts(core)}; (a) "
        + (case_counts(a) if testable else "not testable at this N")
        + f"; (b) {case_counts(b)}",
        reason="" if testable else f"'> 150 modes' cannot occur with N = {n} snapshots",
        stat=H,
        lower=lo,
        upper=up,
        contrast=c,
    )


def rule_c6(c6: dict | None) -> Outcome:
    """C6: the head-pruning verdict of :func:`msapod.studies.prune.c6_verdict` (computed
    with ``z = Z95``); None (study not run) is not testable."""
    if c6 is None:
        return Outcome(
            "C6",
            NOT_TESTABLE,
            "pruning study not run",
            "head pruning guided by H* vs random",
            "0 cases",
            reason="the pruning study was not run for this zoo",
        )
    verdict = c6["verdict"] if c6["verdict"] in _VERDICT_SET else NOT_TESTABLE
    return Outcome(
        "C6",
        verdict,
        c6["measured"],
        c6["rule"],
        str(c6.get("cases") or f"{len(c6.get('per_budget', []))} budgets"),
    )


def _diff_rule(claim, d, layers_sign, measured_label, rule):
    cells = []
    for layer, sign in layers_sign.items():
        x = d.sel(layer=layer)
        lo_, up_ = float(x["lower"]), float(x["upper"])
        if sign > 0:
            cells.append(classify(lo_, up_, low=0.0).item())
        else:
            cells.append(classify(lo_, up_, high=0.0).item())
    measured = f"{measured_label}: " + ", ".join(
        f"L{layer} {float(d['value'].sel(layer=layer)):+.3g} "
        f"[{float(d['lower'].sel(layer=layer)):+.3g}, {float(d['upper'].sel(layer=layer)):+.3g}]"
        for layer in layers_sign
    )
    return Outcome(claim, combine(cells), measured, rule, case_counts(cells), diff=d)


def _arch(value, se):
    from .uncertainty import arch_difference

    d = arch_difference(value, se)
    return xr.Dataset({"value": d["diff"], "lower": d["lower"], "upper": d["upper"]})


def rule_c7(E: xr.DataArray, se: xr.DataArray | None, *, where: str = "") -> Outcome:
    """C7: EGA - baseline scalogram energy > 0 in every layer (95 % seed-and-snapshot
    interval of :func:`msapod.studies.uncertainty.arch_difference`)."""
    d = _arch(E, se)
    lo, up = _interval(E, se)
    out = _diff_rule(
        "C7",
        d,
        {int(layer): 1 for layer in E["layer"].values},
        "EGA − baseline scalogram energy",
        "EGA − baseline energy > 0 with its 95 % seed-and-snapshot interval, every layer "
        f"({where})",
    )
    out.stat, out.lower, out.upper = E, lo, up
    return out


def rule_c8(T: xr.DataArray, se: xr.DataArray | None, *, where: str = "") -> Outcome:
    """C8: EGA - baseline T_spec > 0 in layers 3-4 and < 0 in layers 5-6 (95 % interval)."""
    d = _arch(T, se)
    lo, up = _interval(T, se)
    out = _diff_rule(
        "C8",
        d,
        {3: 1, 4: 1, 5: -1, 6: -1},
        "EGA − baseline T_spec",
        "sign as stated with the 95 % seed-and-snapshot interval excluding 0, layers 3–6 "
        f"({where})",
    )
    out.stat, out.lower, out.upper = T, lo, up
    return out


def rule_c9(ratio: xr.DataArray, *, where: str = "") -> Outcome:
    """C9: scale-selective modes separate scales the plain modes mix.

    ``ratio`` per ``(model, layer)``: the spread (standard deviation of log a under the
    mode's own scale spectrum) of mode 1 of the first scale window over that of plain
    mode 1; NaN without a window. A case passes if it is < 1 (the windowed mode is
    narrower in *scale*; the lag window alone does not guarantee this — narrowing in lag
    broadens in scale). Point values.
    """
    v = ratio.values
    ok = np.isfinite(v)
    cells = np.where(v[ok] < 1.0, "yes", "no")
    measured = (
        f"scale spread of windowed / plain mode 1: {fmt_range(ratio, '{:.2f}')} "
        f"(median {np.nanmedian(v):.2f})"
        if ok.any()
        else "no scale window"
    )
    rule = "windowed mode 1 narrower in scale than plain mode 1 (ratio < 1), every model "
    rule += f"and layer; point values ({where})"
    if not ok.any():
        return Outcome(
            "C9",
            NOT_TESTABLE,
            measured,
            rule,
            f"{v.size} cases: no window",
            reason="no interior dominant scale, hence no scale window, under this reading",
            stat=ratio,
            lower=ratio,
            upper=ratio,
        )
    n_none = int((~ok).sum())
    return Outcome(
        "C9",
        combine(cells),
        measured,
        rule,
        case_counts(cells) + (f"; {n_none} without a window (left out)" if n_none else ""),
        stat=ratio,
        lower=ratio,
        upper=ratio,
    )


def rule_c10(gap: float, beaten: int, trials: int, label: str = "") -> Outcome:
    """C10 (Theorem 1): the rank-K error equals the eigenvalue tail to 1e-8 and no random
    orthonormal basis beats POD."""
    ok = gap < 1e-8 and beaten == 0
    return Outcome(
        "C10",
        "holds" if ok else "does not hold",
        f"{label}relative gap between error and tail sum ≤ {gap:.1e} for K = 1, 5, 20; "
        f"random orthonormal bases beating POD: {beaten} of {trials}",
        "error equals the tail sum to 1e-8 and no random basis does better",
        f"3 ranks x {trials // 3} random bases",
    )


def rule_loss(loss: xr.DataArray, *, unfinished: bool = False) -> Outcome:
    """L (EGA paper): EGA - baseline validation loss < 0 with its 95 % interval over
    seeds (Student-t)."""
    d = _arch(loss, None)
    cell = classify(float(d["lower"]), float(d["upper"]), high=0.0).item()
    return Outcome(
        "L",
        combine([cell]),
        f"EGA − baseline val loss {float(d['value']):+.4f} nats/char, 95 % interval "
        f"[{float(d['lower']):+.4f}, {float(d['upper']):+.4f}]"
        + ("; some models unfinished" if unfinished else ""),
        "interval over seeds below 0 (Student-t)",
        "1 contrast",
        diff=d,
    )


_VERDICT_SET = {"holds", "partly", "not significant", "does not hold", NOT_TESTABLE}

#: Rule function of every claim.
RULES = {
    "C1": rule_c1,
    "C2": rule_c2,
    "C3": rule_c3,
    "C4": rule_c4,
    "C5": rule_c5,
    "C6": rule_c6,
    "C7": rule_c7,
    "C8": rule_c8,
    "C9": rule_c9,
    "C10": rule_c10,
    "L": rule_loss,
}
assert set(RULES) == {*CLAIMS} - {"loss"} | {"L"}
