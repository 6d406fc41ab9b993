"""One rule per claim: measured values with 95 % intervals -> per-case outcomes -> verdict.

Every page, the scorecard (:func:`msapod.studies.verdict.scorecard.zoo_scorecard`), the LLM rows
and the specification curve (:mod:`msapod.studies.verdict.multiverse`) decide a claim with the
function of this module named after it (:data:`RULES`). Each takes the numbers measured
under **one specification** (one reading of the paper) and returns an :class:`Outcome`.

Conventions, stated once:

* **One interval level**: 95 % everywhere (``Z95`` jackknife standard errors per model
  and layer; Student-t over seeds for architecture differences). Intervals of positive
  quantities (scales, T_spec, H*, ratios) are formed on the log scale (delta method:
  ``a exp(+-Z95 se / a)``), so they never cross zero. Where no interval exists (a mode
  shape, an LLM scale) the rule says "point value".
* **Cases** (models x layers of one claim) are decided by :func:`decide`: each case's
  one-sided tests against the claim's range, **Holm-corrected across the cases of the
  claim** (family-wise 5 %); a rejected case is ``"yes"`` (inside the range) or ``"no"``
  (outside), the others ``"ns"``. With one case this is the 95 % interval read against the
  range. Cases are combined with :func:`msapod.studies.verdict.claims.combine`. The
  interval a rule prints next to such a verdict is each case's at the level of its Holm
  step (:func:`decide` with ``quantiles``; C1, C2 and C2's dominant-scale reading), so it
  excludes the claim's boundary exactly when the case is decided.
* **Scale claims against the untrained models**: C1 and C2 read the shares of the scale
  spectrum's energy at a <= 7 and a >= 20 against the same models untrained (a power-law
  spectrum has no dominant scale; the causal window alone has shares of its own), and the
  shift from fine to coarse scales once, in C2, as the slope of log E(a) against log a.
* **Contrasts first** (C2, C3, C5): a claim that states an early-vs-late *shift* or
  *contrast* does not hold when the contrast is reversed beyond its interval in every
  model, whatever the threshold cases say (:func:`combine_core`).
* **Edges are bounds**: a scale spectrum whose maximum sits at the first (last) scale of
  the grid says ``a* <= a_min`` (``a* >= a_max``; C1's and C2's dominant-scale reading,
  :func:`rule_dominant_scale`). A bound decides a case when the claim's
  range allows it (``a* <= a_min < 20`` contradicts C2, ``a* <= a_min <= 7`` supports C1);
  otherwise the case is not significant. "Not testable as stated" remains only for what
  the data cannot decide at all, with the reason.
* **Numbers the paper states** (T_spec about 1.0, H* about 91, the loss change -0.10
  nats/char) are tested with a stated tolerance (+-25 %, +-15 %, and the interval itself),
  and ``Outcome.paper_value`` says whether the stated number lies inside the intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ...models.data import N_SNAPSHOTS
from ..registry import EARLY as _EARLY
from ..registry import LATE as _LATE
from ..registry import MIDDLE_LATE as _MIDDLE_LATE
from ..registry import REGISTRY
from .claims import (
    CLAIMS,
    VERDICTS,
    Z95,
    bounded_range,
    case_counts,
    combine,
    fmt_num,
    fmt_range,
    layer_span,
)

__all__ = [
    "C8_SIGNS",
    "EARLY",
    "LATE",
    "PAPER_LAGS",
    "RULES",
    "interval",
    "THRESHOLDS",
    "Outcome",
    "combine_core",
    "decide",
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
    "rule_dominant_scale",
    "rule_loss",
]

#: The layers each claim is about (the registry's depth groups).
EARLY, LATE, MIDDLE_LATE = list(_EARLY), list(_LATE), list(_MIDDLE_LATE)
#: C4: the paper's lag range (characters) of the scale-selective modes of layers 2, 4, 6.
PAPER_LAGS = dict(REGISTRY["C4"].stated["lags"])
#: C8: the sign of EGA - baseline T_spec the paper states per layer.
C8_SIGNS = dict(REGISTRY["C8"].signs)
#: The target range of each claim's key statistic ``(low, high)``: the registry's ranges.
THRESHOLDS = {c.id: c.range for c in REGISTRY.values() if c.id != "C6"}
NOT_TESTABLE = VERDICTS[-1]


@dataclass
class Outcome:
    """A claim's verdict under one specification.

    Attributes
    ----------
    claim
        ``"C1"`` ... ``"C10"`` or ``"L"``.
    verdict
        One of :data:`msapod.studies.verdict.claims.VERDICTS`.
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
    read
        The intervals the decisions read, where they differ from the 95 % ones above
        (each case of a Holm-tested rule at its step's level, :func:`holm_interval`):
        ``{"stat" | "contrast" | "diff": (lower, upper)}``, shaped as those. The 95 %
        intervals give the standardised effects of the specification curve, case by case;
        these are the ones printed next to a verdict.
    interval
        The intervals the decisions read, in words ("point value" where none).
    paper_value
        Whether a number the paper states lies inside the intervals ("" if it states none).
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
    interval: str = ""
    paper_value: str = ""
    extra: dict = field(default_factory=dict)
    read: dict = field(default_factory=dict)

    def read_interval(self, kind: str = "stat") -> tuple:
        """``(lower, upper)`` of ``kind`` (``"stat"``, ``"contrast"`` or ``"diff"``) as
        the decisions read them (the 95 % ones where the rule reads no other)."""
        if kind in self.read:
            return self.read[kind]
        if kind == "stat":
            return self.lower, self.upper
        ds = getattr(self, kind)
        return (None, None) if ds is None else (ds["lower"], ds["upper"])


def combine_core(core, other=()) -> str:
    """Verdict of a claim with a core contrast: "does not hold" if the core cases do not
    hold (reversed beyond their interval, none passing), else :func:`combine` of all."""
    core = np.asarray(core).ravel()
    other = np.asarray(other).ravel()
    if core.size and combine(core) == "does not hold":
        return "does not hold"
    return combine(np.concatenate([core, other]))


def _grid(da: xr.DataArray, *dims: str) -> np.ndarray:
    """``da``'s values in the order ``dims`` (default model, layer), without carrying its
    coordinates along (a DataArray transpose copies every coordinate)."""
    return da.variable.transpose(*(dims or ("model", "layer"))).values


def _replaced(da: xr.DataArray, layers, values) -> xr.DataArray:
    """A copy of ``da`` with its entries at ``layers`` replaced by ``values``."""
    out = da.copy()
    out.loc[{"layer": list(layers)}] = values
    return out


def _put_cases(da: xr.DataArray, mask: np.ndarray, values, layers=None) -> xr.DataArray:
    """A copy of ``da`` with its ``(model, layer)`` entries (at ``layers``; default every
    layer) where ``mask`` replaced by ``values`` (in the order of ``mask``'s True
    entries)."""
    out = da.copy()
    sel = {} if layers is None else {"layer": list(layers)}
    grid = _grid(out.sel(sel) if sel else out).astype(float)
    grid[mask] = values
    order = [d for d in out.dims if d in ("model", "layer")]
    out.loc[sel] = grid if order == ["model", "layer"] else grid.T
    return out


def interval(stat, se, log: bool = False, q: float = Z95):
    """The interval every rule prints and tests with: ``stat +- q se`` (``q``: the
    quantile, the normal 95 % one by default), on the log scale (``stat exp(+-q se /
    stat)``) for a positive quantity, so it never reaches below zero."""
    if se is None:
        se = xr.zeros_like(stat)
    else:  # fillna(0.0) without xarray's apply_ufunc (the joint test calls this often)
        se = se.copy(data=np.where(np.isnan(se.values), 0.0, se.values))
    if log:
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.exp(q * se / stat)
        return stat / f, stat * f
    return stat - q * se, stat + q * se


def _jack_words(df: int | None) -> str:
    """How a jackknife interval over snapshots was formed, in words."""
    if df is None:
        return "95 % jackknife intervals over snapshots"
    return f"95 % delete-group jackknife intervals over snapshots ({df + 1} groups, t({df}))"


def _bound_cells(v, side, lo: float, hi: float, log: bool) -> np.ndarray:
    """Per case the decision of a bound: the half-line (0, v] or [v, inf) against the
    range ("" for an estimate)."""
    fixed = np.full(v.size, "", dtype=object)
    below, above = side < 0, side > 0
    floor = 0.0 if log else -np.inf
    fixed[below] = np.where(
        (floor >= lo) & (v[below] <= hi), "yes", np.where(v[below] < lo, "no", "ns")
    )
    fixed[above] = np.where(
        (v[above] >= lo) & (hi == np.inf), "yes", np.where(v[above] > hi, "no", "ns")
    )
    return fixed


def _one_sided_p(v, e, lo: float, hi: float, df, shape):
    """P-values of "inside the range" and "outside it" per case (normal, or Student-t
    with ``df``), and the per-case degrees of freedom (None when normal)."""
    from scipy import stats

    d = None
    if df is None:
        cdf, sf = stats.norm.cdf, stats.norm.sf
    else:
        d = np.broadcast_to(np.asarray(df, float), shape).ravel()
        d_ok = np.where(d >= 1, d, 1.0)
        cdf = lambda z: stats.t.cdf(z, d_ok)  # noqa: E731
        sf = lambda z: stats.t.sf(z, d_ok)  # noqa: E731

    def z(bound):
        with np.errstate(invalid="ignore", divide="ignore"):
            point = np.where(v == bound, 0.0, np.sign(v - bound) * np.inf)  # no SE
            return np.where(e > 0, (v - bound) / np.where(e > 0, e, 1.0), point)

    p_in = np.zeros(v.size)
    p_out = np.ones(v.size)
    if np.isfinite(lo):
        zl = z(lo)
        p_in = np.maximum(p_in, sf(zl))  # H0: value <= low
        p_out = np.minimum(p_out, cdf(zl))  # H0: value >= low
    if np.isfinite(hi):
        zh = z(hi)
        p_in = np.maximum(p_in, cdf(zh))
        p_out = np.minimum(p_out, sf(zh))
    return p_in, p_out, d


def _holm(p: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down: the j-th smallest p-value (0-based) against alpha / (k - j).

    Returns the rejections and each case's level: a rejected case the level of its step,
    the others the level of the first step not rejected (their p-values all exceed it), so
    the interval at that level of every case agrees with its decision."""
    order = np.argsort(p, kind="stable")
    k = p.size
    reject = np.zeros(k, bool)
    level = np.full(k, alpha / max(k, 1))
    for j, i in enumerate(order):
        if p[i] > alpha / (k - j):
            level[order[j:]] = alpha / (k - j)
            break
        reject[i] = True
        level[i] = alpha / (k - j)
    return reject, level


def decide(
    value,
    se=None,
    low: float = -np.inf,
    high: float = np.inf,
    *,
    log: bool = False,
    df=None,
    edge=None,
    alpha: float = 0.05,
    quantiles: bool = False,
):
    """Per-case ``"yes"`` / ``"no"`` / ``"ns"`` against the range ``[low, high]``, Holm-
    corrected across the cases (family-wise ``alpha``).

    Each case has two one-sided tests: "inside the range" (intersection-union over the
    finite ends) and "outside it"; its two-sided p-value ``2 min(p_in, p_out)`` enters
    Holm's step-down procedure over all cases, and a rejected case is "yes" or "no" by the
    smaller of the two. One case at ``alpha = 0.05`` is the 95 % interval read against the
    range (:func:`msapod.studies.verdict.claims.classify`).

    Parameters
    ----------
    value, se
        Estimates and standard errors (broadcast; a missing or NaN ``se`` is a point value).
    low, high
        The claim's range.
    log
        Test on the log scale (positive quantities: ``se / value`` is the SE of the log).
    df
        Student-t degrees of freedom (scalar or per case; None: normal). ``df < 1``: the
        case cannot be decided ("ns").
    edge
        Per case 0 (estimate), -1 (a bound: the quantity is <= value) or +1 (>= value).
        A bound is "yes"/"no" when the whole half-line is inside/outside the range.
    quantiles
        Also return, per case, the quantile of the interval its decision reads: the
        two-sided interval ``value +- q se`` (on the log scale with ``log``) at the Holm
        level of the case's step (:func:`_holm`), which lies inside (outside) the range
        exactly when the case is "yes" ("no"). Then ``(cells, q)``.
    """
    v = np.asarray(value, dtype=np.float64)
    shape = v.shape
    v = v.ravel()
    e = np.broadcast_to(np.nan_to_num(np.asarray(0.0 if se is None else se, float)), shape)
    e = e.ravel().astype(np.float64)
    side = np.zeros(v.size, int) if edge is None else np.broadcast_to(edge, shape).ravel()
    lo, hi = float(low), float(high)
    fixed = _bound_cells(v, side, lo, hi, log)
    if log:
        with np.errstate(invalid="ignore", divide="ignore"):
            e = np.where(v > 0, e / v, 0.0)
            v = np.log(v)
            lo = np.log(lo) if lo > 0 else -np.inf
            hi = np.log(hi) if hi > 0 else -np.inf
    p_in, p_out, d = _one_sided_p(v, e, lo, hi, df, shape)
    p = np.minimum(1.0, 2 * np.minimum(p_in, p_out))
    p = np.where(np.isfinite(v), p, 1.0)
    if df is not None:
        p = np.where(d >= 1, p, 1.0)
    p = np.where(side != 0, np.where(fixed == "ns", 1.0, 0.0), p)
    reject, level = _holm(p, alpha)
    cells = np.where(reject, np.where(p_in <= p_out, "yes", "no"), "ns")
    cells = np.where(side != 0, fixed, cells).astype(str)
    if not quantiles:
        return cells.reshape(shape)
    from scipy import stats

    tail = 1 - level / 2  # the two-sided interval at each case's Holm level
    q = stats.norm.ppf(tail) if d is None else stats.t.ppf(tail, np.where(d >= 1, d, np.nan))
    return cells.reshape(shape), np.asarray(q, float).reshape(shape)


def holm_interval(value, se, q, *, log: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The interval each case's decision reads: ``value -+ q se`` at the quantile ``q`` of
    its Holm step (:func:`decide` with ``quantiles``), on the log scale with ``log``
    (``value /* exp(q se / value)``); a missing ``se`` is a point value."""
    v = np.asarray(value, dtype=np.float64)
    e = np.nan_to_num(np.broadcast_to(np.asarray(0.0 if se is None else se, float), v.shape))
    q = np.asarray(q, dtype=np.float64)
    if not log:
        return v - q * e, v + q * e
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        f = np.exp(q * e / v)
    return v / f, v * f


def _fmt_iv(lo, up, fmt: str = "{:.1f}") -> str:
    lo_s = "0" if lo <= 0 and not np.isfinite(lo) else fmt_num(lo, fmt)
    up_s = "∞" if not np.isfinite(up) else fmt_num(up, fmt)
    return f"[{lo_s}, {up_s}]"


def _log_shift(stat, se, edge, first, second):
    """``mean log a*(second) - mean log a*(first)`` per model with its 95 % interval, the
    interval its decision reads (``read_lower``, ``read_upper``) and the per-model decision
    against > 0 (Holm across models). A model with a bound in these layers gets the
    interval of the half-lines (interval arithmetic) and is decided by it."""
    models = stat["model"].values
    val, lo_, up_ = (np.full(len(models), np.nan) for _ in range(3))
    p_se = np.zeros(len(models))
    fixed = np.full(len(models), "", dtype=object)
    # (model, layer) arrays once; the groups are column indexes into them
    where_ = {int(v): j for j, v in enumerate(stat["layer"].values)}

    X = _grid(stat).astype(float)
    S = None if se is None else _grid(se.reindex_like(stat)).astype(float)
    E = None if edge is None else _grid(edge.reindex_like(stat)).astype(int)
    for i in range(len(models)):
        parts = {}
        for name, layers in (("first", first), ("second", second)):
            cols = [where_[int(v)] for v in layers]
            x = X[i, cols]
            s_ = np.nan_to_num(S[i, cols]) if S is not None else np.zeros_like(x)
            e_ = E[i, cols] if E is not None else np.zeros(len(x), int)
            lx = np.log(x)
            ls = np.where(x > 0, s_ / x, 0.0)
            lo_l = np.where(e_ < 0, -np.inf, lx - Z95 * ls)
            up_l = np.where(e_ > 0, np.inf, lx + Z95 * ls)
            parts[name] = (lx, ls, lo_l, up_l, e_)
        (f, fs, flo, fup, fe), (g, gs, glo, gup, ge) = parts["first"], parts["second"]
        val[i] = g.mean() - f.mean()
        if (fe != 0).any() or (ge != 0).any():
            lo_[i] = glo.mean() - fup.mean()
            up_[i] = gup.mean() - flo.mean()
            fixed[i] = "yes" if lo_[i] > 0 else ("no" if up_[i] < 0 else "ns")
        else:
            p_se[i] = np.sqrt((gs**2).sum() / len(g) ** 2 + (fs**2).sum() / len(f) ** 2)
            lo_[i], up_[i] = val[i] - Z95 * p_se[i], val[i] + Z95 * p_se[i]
    # a model decided by its bounds keeps that decision; the others enter Holm
    cells, q = decide(np.where(fixed == "", val, 0.0), p_se, low=0.0, quantiles=True)
    est = fixed == ""
    read_lo, read_up = lo_.copy(), up_.copy()
    read_lo[est], read_up[est] = holm_interval(val[est], p_se[est], q[est])
    cells = np.where(est, cells, fixed).astype(str)
    ds = xr.Dataset(
        {
            "value": ("model", val),
            "lower": ("model", lo_),
            "upper": ("model", up_),
            "read_lower": ("model", read_lo),
            "read_upper": ("model", read_up),
        },
        coords={"model": models},
    )
    return ds, cells


_SCALE_NAMES = {
    "peak": "dominant scale a*",
    "argmax": "global maximum a*",
    "centroid": "scale centroid",
}


def _edge_ints(stat: xr.DataArray, edge: xr.DataArray | None) -> xr.DataArray:
    """The edge side per case as integers (None or NaN: 0, an estimate)."""
    if edge is None:
        edge = xr.zeros_like(stat, dtype=int)
    elif edge.dtype.kind == "f":
        edge = edge.copy(data=np.where(np.isnan(edge.values), 0, edge.values))
    return edge.astype(int)


def _bound_words(es: xr.DataArray) -> list[str]:
    """How many cases are bounds below / above the grid, in words."""
    n_low, n_high = int((es.values < 0).sum()), int((es.values > 0).sum())
    bounds = []
    if n_low:
        bounds.append(f"{n_low} at or below the grid's first scale")
    if n_high:
        bounds.append(f"{n_high} at or above its last")
    return bounds


def _scale_measured(name: str, span: str, s, es, bounds: list[str], shift) -> str:
    """C1's or C2's measured values: the scales of the claimed layers (bounds marked
    "≤" / "≥") and the late/early ratio per model."""
    measured = f"{name}, layers {span}: {bounded_range(s, es)} characters" + (
        f" ({', '.join(bounds)}: read as bounds)" if bounds else ""
    )
    if shift is not None:
        measured += "; late/early ratio of a*: " + ", ".join(
            _ratio_text(v, a_, b_)
            for v, a_, b_ in zip(
                shift["value"].values, shift["lower"].values, shift["upper"].values, strict=True
            )
        )
    return measured


def _ratio_text(log_value: float, log_lower: float, log_upper: float) -> str:
    """A late/early scale ratio from its log and interval: "×1.5 [1.2, 1.9]"; where a
    bound leaves one side open, the side the data decide ("≥ ×1.2"); both open:
    "unresolved (bounds)"."""
    lo_ok, up_ok = np.isfinite(log_lower), np.isfinite(log_upper)
    if lo_ok and up_ok:
        return f"×{np.exp(log_value):.2g} [{np.exp(log_lower):.2g}, {np.exp(log_upper):.2g}]"
    if lo_ok:
        return f"≥ ×{np.exp(log_lower):.2g} (bounds)"
    if up_ok:
        return f"≤ ×{np.exp(log_upper):.2g} (bounds)"
    return "unresolved (bounds)"


def _scale_rule_text(name: str, target: str, span: str, groups, where: str) -> str:
    """The dominant-scale reading's rule in words: C2's core shift (with two depth
    groups) and part (i)."""
    core_text = (
        f"(core) a* of layers {layer_span(groups[1])} above that of layers "
        f"{layer_span(groups[0])} (log ratio > 0), every model; "
        if groups is not None
        else ""
    )
    return (
        f"{core_text}(i) {name} {target} in layers {span}, every model, bounds read as "
        f"bounds; 95 %, Holm across cases ({where})"
    )


def _scale_none(claim: str, name: str, span: str, size: int, where: str) -> Outcome:
    """C1 or C2 not testable: no scale spectrum in the claimed layers."""
    return Outcome(
        claim,
        NOT_TESTABLE,
        f"{name}, layers {span}: none",
        "",
        f"{size} cases: no value",
        reason=f"no scale spectrum in layers {span} ({where})",
    )


def _scale_read(value, se, q, edge, grid) -> tuple[np.ndarray, np.ndarray]:
    """The intervals the decisions read of the claimed layers' scales (``(model, layer)``
    arrays): each at its Holm step's quantile ``q`` on the log scale, inside the grid
    ``(a_min, a_max)`` (None: not clipped); a bound is its half-line."""
    lo, up = holm_interval(value, se, q, log=True)
    if grid is not None:
        lo, up = np.maximum(lo, grid[0]), np.minimum(up, grid[1])
    lo, up = np.where(edge < 0, 0.0, lo), np.where(edge > 0, np.inf, up)
    return np.where(edge > 0, value, lo), np.where(edge < 0, value, up)


def _as_stat(like: xr.DataArray, grid: np.ndarray) -> np.ndarray:
    """A ``(model, layer)`` array in the dim order of ``like``."""
    return (
        grid if [d for d in like.dims if d in ("model", "layer")] == ["model", "layer"] else grid.T
    )


def _scale_intervals(value, lo, up, edge) -> str:
    """The intervals of the claimed layers' scales (:func:`_scale_read`), model by model,
    in words; a bound at the grid's edge reads as the bound ("≤ 3", "≥ 128"), never as an
    interval."""
    words = []
    for v, a_, b_, e_ in zip(value.ravel(), lo.ravel(), up.ravel(), edge.ravel(), strict=True):
        if e_ < 0:
            words.append(f"≤ {v:.3g}")
        elif e_ > 0:
            words.append(f"≥ {v:.3g}")
        else:
            words.append(_fmt_iv(float(a_), float(b_)))
    return f"{HOLM_WORDS}: " + "; ".join(words)


def rule_dominant_scale(
    claim: str,
    stat: xr.DataArray,
    se: xr.DataArray | None,
    *,
    statistic: str = "peak",
    where: str = "",
    early=EARLY,
    late=LATE,
    unit: float = 1.0,
    edge: xr.DataArray | None = None,
    grid: tuple[float, float] | None = None,
) -> Outcome:
    """C1 or C2 read on a dominant-scale statistic (one reading of the specification
    curve): (i) the statistic of every model in the claimed layers on the claim's side of
    its stated scale (C1: :math:`a^* \\le 7` in layers 1-2; C2: :math:`a^* \\ge 20` in
    layers 5-6), and for C2 (core) per model the shift ``mean log a*(late) - mean log
    a*(early) > 0``.

    Parameters
    ----------
    claim
        ``"C1"`` or ``"C2"``.
    stat, se
        The scale statistic (lags) and its jackknife standard error per
        ``(model, layer)``.
    statistic
        ``"peak"``, ``"argmax"`` or ``"centroid"`` (names the statistic in the text).
    early, late, unit
        The depth groups (default 1-2 and 5-6; an LLM maps them by depth) and characters
        per lag unit (1 for character models; characters per token for BPE).
    edge
        Per ``(model, layer)``: 0 estimate, -1 / +1 a bound at the grid's first / last
        scale (:func:`msapod.studies.measure.evidence.scale_reading`); None: no bounds.
    grid
        ``(a_min, a_max)`` of the scale grid (lags): the intervals of estimates are
        clipped to it (the grid resolves no scale outside it); None: not clipped.
    """
    if claim not in ("C1", "C2"):
        raise ValueError(f"claim: expected 'C1' or 'C2', got {claim!r}")
    bound = float(REGISTRY[claim].stated["scale"])
    low, high = (-np.inf, bound) if claim == "C1" else (bound, np.inf)
    layers = list(early) if claim == "C1" else list(late)
    stat = stat * unit
    stat.attrs = {"range": (low, high), "log": True}
    se = None if se is None else se * unit
    edge = _edge_ints(stat, edge)
    s = stat.sel(layer=layers)
    es = edge.sel(layer=layers)
    lo, up = interval(stat, se, log=True)
    if grid is not None:
        lo, up = lo.clip(min=grid[0] * unit), up.clip(max=grid[1] * unit)
    # a bound is the half-line beyond the grid's end: (0, a_min] or [a_max, inf)
    lo = lo.where(edge >= 0, 0.0).where(edge <= 0, stat)
    up = up.where(edge <= 0, np.inf).where(edge >= 0, stat)
    name = _SCALE_NAMES.get(statistic, statistic)
    span = layer_span(layers)
    target = f"≤ {high:g}" if np.isfinite(high) else f"≥ {low:g}"
    if not np.isfinite(s.values).any():
        return _scale_none(claim, name, span, s.size, where)
    se_s = None if se is None else _grid(se.sel(layer=layers))
    cells, q = decide(_grid(s), se_s, low, high, log=True, edge=_grid(es), quantiles=True)
    groups = _disjoint(stat, early, late) if claim == "C2" else None
    shift, core = None, np.array([], dtype=str)
    if groups is not None:
        shift, core = _log_shift(stat, se, edge, *groups)
    contrast, read = _contrast_parts(shift)
    unit_grid = None if grid is None else (grid[0] * unit, grid[1] * unit)
    if se is not None:
        r_lo, r_up = _scale_read(_grid(s), se_s, q, _grid(es), unit_grid)
        read["stat"] = (
            _replaced(lo, layers, _as_stat(lo, r_lo)),
            _replaced(up, layers, _as_stat(up, r_up)),
        )
    bounds = _bound_words(es)
    counts = (f"(core) {case_counts(core)}; " if core.size else "") + f"(i) {case_counts(cells)}"
    return Outcome(
        claim,
        combine_core(core, cells) if core.size else combine(cells),
        _scale_measured(name, span, s, es, bounds, shift),
        _scale_rule_text(name, target, span, groups, where),
        counts,
        reason="; ".join(bounds) + (" (bounds)" if bounds else ""),
        stat=stat,
        lower=lo,
        upper=up,
        contrast=contrast,
        interval=_scale_intervals(_grid(s), r_lo, r_up, _grid(es))
        if se is not None
        else "point values",
        read=read,
    )


#: How the printed intervals of a rule that tests with Holm are formed, in words.
HOLM_WORDS = "95 % family-wise: each case's interval at the level of its Holm step"


def _band_excess(value, se, ref, ref_se):
    """``value - ref`` per (model, layer) of a band share with its SE (the two
    jackknives independent) and 95 % interval, clipped to [-1, 1] (a difference of
    shares)."""
    d = value - ref
    s = np.sqrt(se.fillna(0.0) ** 2 + ref_se.fillna(0.0) ** 2)
    return d, s, (d - Z95 * s).clip(min=-1.0), (d + Z95 * s).clip(max=1.0)


def _band_part(claim, value, se, ref, ref_se, layers):
    """One band part of C1 or C2: the trained-minus-untrained share in ``layers`` per
    model with its 95 % interval and the one each decision reads, its cells against > 0
    (Holm across cases) and its numbers in words."""
    bound = REGISTRY[claim].stated["scale"]
    band = f"a ≤ {bound:g}" if claim == "C1" else f"a ≥ {bound:g}"
    d, s, lo, up = _band_excess(value, se, ref, ref_se)
    ds, ss = _grid(d.sel(layer=layers)), _grid(s.sel(layer=layers))
    cells, q = decide(ds, ss, low=0.0, quantiles=True)
    span = layer_span(layers)
    measured = (
        f"share of E(a) at {band}, layers {span}: {fmt_range(value.sel(layer=layers), '{:.2f}')}"
        f" (untrained {fmt_range(ref.sel(layer=layers), '{:.2f}')}); trained − untrained "
        f"{fmt_range(ds, '{:+.3f}')}"
    )
    r_lo, r_up = (np.clip(x, -1.0, 1.0) for x in holm_interval(ds, ss, q))
    interval = f"trained − untrained, layers {span} ({HOLM_WORDS}): " + _ivs(r_lo, r_up, "{:+.3f}")
    read = (_replaced(lo, layers, _as_stat(lo, r_lo)), _replaced(up, layers, _as_stat(up, r_up)))
    rule = f"share of E(a) at {band} in layers {span} above the same models untrained"
    return d, lo, up, read, cells, measured, interval, rule


def _band_none(claim: str, layers, size: int, where: str) -> Outcome:
    """C1 or C2 not testable: no band share of the models or of their reference (the
    causal window alone has no fluctuation u) in the claimed layers."""
    span = layer_span(layers)
    return Outcome(
        claim,
        NOT_TESTABLE,
        f"band share, layers {span}: none",
        "",
        f"{size} cases: no value",
        reason=f"no band share of the models or of their reference in layers {span} ({where})",
    )


def rule_c1(
    share: xr.DataArray,
    se: xr.DataArray,
    ref: xr.DataArray,
    ref_se: xr.DataArray,
    *,
    where: str = "",
    early=EARLY,
) -> Outcome:
    """C1: layers 1-2 put more of the scale spectrum's energy at :math:`a \\le 7` than the
    same models untrained (the causal window's own share), in every model.

    Parameters
    ----------
    share, se
        The fine share (:func:`msapod.studies.measure.evidence.band_shares`) and its
        jackknife SE per ``(model, layer)``.
    ref, ref_se
        The same of the reference: each model untrained (or the causal window alone).
    where
        The specification in words (for the rule text).
    early
        The claimed layers (default 1-2; an LLM maps them by depth).
    """
    layers = list(early)
    d, lo, up, read, cells, measured, interval, rule = _band_part(
        "C1", share, se, ref, ref_se, layers
    )
    if not np.isfinite(_grid(d.sel(layer=layers))).any():
        return _band_none("C1", layers, cells.size, where)
    return Outcome(
        "C1",
        combine(cells),
        measured,
        f"{rule}, every model; 95 %, Holm across cases ({where})",
        case_counts(cells),
        stat=d,
        lower=lo,
        upper=up,
        interval=interval,
        read={"stat": read},
    )


def rule_c2(
    share: xr.DataArray,
    se: xr.DataArray,
    ref: xr.DataArray,
    ref_se: xr.DataArray,
    slope: xr.DataArray,
    slope_se: xr.DataArray | None,
    *,
    where: str = "",
    early=EARLY,
    late=LATE,
) -> Outcome:
    """C2: (core) the slope :math:`p` of :math:`\\ln E(a)` against :math:`\\ln a` is larger
    in layers 5-6 than in layers 1-2 (the spectrum tilts to coarse scales with depth), per
    model; (i) layers 5-6 put more of the energy at :math:`a \\ge 20` than the same
    models untrained, in every model.

    Parameters
    ----------
    share, se, ref, ref_se
        The coarse share and its SE, trained and reference (as :func:`rule_c1`).
    slope, slope_se
        :func:`msapod.studies.measure.evidence.spectrum_slope` and its jackknife SE per
        ``(model, layer)``.
    early, late
        The depth groups (default 1-2 and 5-6).
    """
    layers = list(late)
    d, lo, up, read, cells, measured, interval, rule = _band_part(
        "C2", share, se, ref, ref_se, layers
    )
    if not np.isfinite(_grid(d.sel(layer=layers))).any():
        return _band_none("C2", layers, cells.size, where)
    c, core, groups = _core(slope, slope_se, early, late, 1)
    lo_a, hi_a = REGISTRY["C2"].stated["slope_range"]
    slope_words = f"slope β_a of ln E(a) over the grid's scales in {lo_a:g} ≤ a ≤ {hi_a:g}"
    if c is not None:
        g0, g1 = layer_span(groups[0]), layer_span(groups[1])
        measured = f"{slope_words}, layers {g1} − {g0}: {_contrast_text(c, '{:+.2f}')}; " + measured
        rule = f"(core) {slope_words} larger in layers {g1} than in {g0}, every model; (i) {rule}"
    counts = (f"(core) {case_counts(core)}; " if core.size else "") + f"(i) {case_counts(cells)}"
    return Outcome(
        "C2",
        combine_core(core, cells) if core.size else combine(cells),
        measured,
        f"{rule}, every model; 95 %, Holm across cases ({where})",
        counts,
        stat=d,
        lower=lo,
        upper=up,
        contrast=_contrast_parts(c)[0],
        interval=interval,
        read={"stat": read, **_contrast_parts(c)[1]},
    )


def _disjoint(value, first, second) -> tuple[list, list] | None:
    """Two depth groups without common layers: a layer in both is left to ``second``
    unless ``first`` would then be empty (with 2 layers, early 1-2 and late 2 compare
    layer 1 with layer 2); None when a group is empty or has layers ``value`` lacks."""
    have = {int(v) for v in value["layer"].values}
    first, second = [int(x) for x in first], [int(x) for x in second]
    a = [x for x in first if x not in second] or first
    b = [x for x in second if x not in a]
    if not a or not b or not {*a, *b} <= have:
        return None
    return a, b


def _contrast_text(c: xr.Dataset | None, fmt: str) -> str:
    """Per model ``value [lower, upper]`` of a contrast with the interval its decision
    reads (``read_lower``, ``read_upper``: Holm across the models, said so; else the 95 %
    one); ``"—"`` without one."""
    if c is None:
        return "—"
    read = "read_lower" in c
    lo, up = (c["read_lower"], c["read_upper"]) if read else (c["lower"], c["upper"])
    text = ", ".join(
        f"{fmt_num(v, fmt)} {_fmt_iv(float(lo_), float(up_), fmt)}"
        for v, lo_, up_ in zip(c["value"], lo, up, strict=True)
    )
    return text + (f" ({HOLM_WORDS})" if read else "")


def _layer_intervals(lo, up, layers, se, fmt: str) -> str:
    """``"layers a–b: [..], .."`` of the intervals at ``layers`` ("point values" without
    standard errors)."""
    if se is None:
        return "point values"
    if not layers:
        return "no layers"
    return (
        f"layers {layer_span(layers)}: "
        f"{_ivs(lo.sel(layer=layers).values, up.sel(layer=layers).values, fmt)}"
    )


def _contrast(value, se, first, second):
    """``mean(value[second]) - mean(value[first])`` per model, its SE and its 95 %
    interval. The SE combines the layers' SEs as independent; the layers share the
    snippets, so a positive correlation of their errors within a group makes it too
    small and one across the groups too large (a jackknife of the contrast itself would
    include both; it needs the layers' replicates, which the evidence does not keep)."""
    d = value.sel(layer=second).mean("layer") - value.sel(layer=first).mean("layer")
    if se is None:
        s = xr.zeros_like(d)
    else:
        s = np.sqrt(
            (se.sel(layer=second) ** 2).sum("layer") / len(second) ** 2
            + (se.sel(layer=first) ** 2).sum("layer") / len(first) ** 2
        )
    return xr.Dataset({"value": d, "lower": d - Z95 * s, "upper": d + Z95 * s, "se": s})


def _paper_inside(x, lo, up, number: float, what: str) -> str:
    """Whether the paper's stated ``number`` lies inside the intervals the cases'
    decisions read."""
    inside = (lo.values <= number) & (up.values >= number)
    k, n = int(inside.sum()), inside.size
    if n == 0:
        return ""
    word = "compatible" if k == n else ("not compatible" if k == 0 else "partly compatible")
    return f"{word}: {what} = {number:g} inside the interval in {k} of {n} cases"


def _ivs(lo, up, fmt="{:.2f}") -> str:
    return ", ".join(
        _fmt_iv(float(a_), float(b_), fmt)
        for a_, b_ in zip(np.ravel(lo), np.ravel(up), strict=True)
    )


def _core(value, se, first, second, sign: int):
    """The per-model contrast ``mean(second) - mean(first)`` over the layers of one depth
    group only (:func:`_disjoint`) and its cells against ``sign`` (+1: > 0, -1: < 0),
    Holm across models; ``(None, no cells, None)`` without two such groups. The contrast
    carries its 95 % interval and the one each decision reads (``read_lower``,
    ``read_upper``; :func:`_contrast_parts`)."""
    groups = _disjoint(value, first, second)
    if groups is None:
        return None, np.array([], dtype=str), None
    c = _contrast(value, se, *groups)
    side = {"low": 0.0} if sign > 0 else {"high": 0.0}
    cells, q = decide(c["value"].values, c["se"].values, **side, quantiles=True)
    lo, up = holm_interval(c["value"].values, c["se"].values, q)
    c["read_lower"], c["read_upper"] = c["value"].copy(data=lo), c["value"].copy(data=up)
    return c, cells, groups


def _decide_layers(stat, se, layers, lo, up, **range_):
    """The cells of ``stat`` at ``layers`` against ``range_`` (log scale, Holm across
    the cases) and ``lo``, ``up`` with those cases' intervals replaced by the ones their
    decisions read (:func:`holm_interval`)."""
    x = stat.sel(layer=layers)
    e = None if se is None else se.sel(layer=layers).values
    cells, q = decide(x.values, e, log=True, quantiles=True, **range_)
    a, b = holm_interval(x.values, e, q, log=True)
    return cells, _replaced(lo, layers, a), _replaced(up, layers, b)


def _contrast_parts(c: xr.Dataset | None) -> tuple[xr.Dataset | None, dict]:
    """A contrast of :func:`_core` or :func:`_log_shift` as the outcome's ``contrast``
    (value and 95 % interval) and its ``read`` entry."""
    if c is None:
        return None, {}
    return c[["value", "lower", "upper"]], {"contrast": (c["read_lower"], c["read_upper"])}


def _verdict(core, other, reason: str) -> tuple[str, str]:
    """:func:`combine_core` of the cases, or "not testable as stated" (with ``reason``)
    when there is none."""
    if np.asarray(core).size + np.asarray(other).size == 0:
        return NOT_TESTABLE, reason
    return combine_core(core, other), ""


def rule_c3(
    T: xr.DataArray,
    se: xr.DataArray | None,
    *,
    n: int = N_SNAPSHOTS,
    where: str = "",
    early=EARLY,
    late=LATE,
) -> Outcome:
    """C3: early T_spec about 1 AND late layers more concentrated than early ones.

    Cases: (core) per model, the contrast ``mean T_spec(5-6) - mean T_spec(1-2) < 0``
    (a more concentrated spectrum decays faster: larger beta, smaller T_spec) with its 95 %
    interval, over the layers of one group only (:func:`_disjoint`; none when a group is
    then empty); (i) per model and layer 1-2, the interval of T_spec inside ``1 ± 0.25``.
    A reversed contrast in every model means "does not hold".
    """
    early, late = list(early), list(late)
    lo, up = interval(T, se, log=True)
    c, core, groups = _core(T, se, early, late, -1)
    Te = T.sel(layer=early)
    c3 = REGISTRY["C3"]
    low, high = c3.range
    a, r_lo, r_up = _decide_layers(T, se, early, lo, up, low=low, high=high)
    contrast, read = _contrast_parts(c)
    read["stat"] = (r_lo, r_up)
    measured = (
        f"T_spec (N = {n}) layers {layer_span(early)}: {fmt_range(Te, '{:.2f}')}"
        f", layers {layer_span(late)}: {fmt_range(T.sel(layer=late), '{:.2f}')}; late − early: "
        + _contrast_text(c, "{:+.2f}")
    )
    core_text = (
        f"(core) T_spec(layers {layer_span(groups[1])}) − T_spec(layers "
        f"{layer_span(groups[0])}) < 0, every model; "
        if groups
        else ""
    )
    verdict, reason = _verdict(core, a, "no layers to compare")
    return Outcome(
        "C3",
        verdict,
        measured,
        f"{core_text}(i) T_spec inside {c3.about:g} ± {c3.tolerance:.0%}, layers "
        f"{layer_span(early)}; 95 %, Holm across cases; {HOLM_WORDS} ({where})",
        (f"(core) {case_counts(core)}; " if core.size else "") + f"(i) {case_counts(a)}",
        reason=reason,
        stat=T,
        lower=lo,
        upper=up,
        contrast=contrast,
        interval=_layer_intervals(r_lo, r_up, early, se, "{:.2f}"),
        paper_value=_paper_inside(
            Te, r_lo.sel(layer=early), r_up.sel(layer=early), c3.about, "T_spec"
        ),
        read=read,
    )


def _q95(df=None):
    """Two-sided 95 % quantile: normal (``df`` None) or Student-t with ``df`` degrees of
    freedom (``df < 1`` is read as 1)."""
    if df is None:
        return Z95
    from scipy import stats

    return stats.t.ppf(0.975, np.maximum(np.asarray(df, float), 1.0))


def over_seeds(x: xr.DataArray | np.ndarray, *, log: bool = False):
    """Per layer: the mean of ``x (model, layer)`` over the models (training seeds) with a
    finite value, its standard error ``sd / sqrt(k)`` and degrees of freedom ``k - 1``.

    With ``log`` the mean is taken of ``log x`` (a positive ratio): ``value =
    exp(mean log x)`` and ``se = value * se(log x)``, the form :func:`decide` reads with
    ``log=True``. Layers with fewer than two finite values get ``df < 1`` (undecidable).

    Returns
    -------
    value, se, df : numpy.ndarray
        One entry per layer of ``x``.
    """
    import warnings

    v = (_grid(x) if isinstance(x, xr.DataArray) else np.asarray(x)).astype(np.float64)
    if log:
        with np.errstate(invalid="ignore", divide="ignore"):
            v = np.where(v > 0, np.log(v), np.nan)
    k = np.isfinite(v).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        m = np.nanmean(v, 0)
        se = np.where(k >= 2, np.nanstd(v, 0, ddof=1) / np.sqrt(np.maximum(k, 1)), np.nan)
    if log:
        m = np.exp(m)
        se = m * se
    return m, se, k - 1


def standardised(value, lower, upper, low=-np.inf, high=np.inf, log=False):
    """Signed distance of ``value`` inside ``[low, high]`` (negative outside) in units of
    the interval half-width ``(upper - lower) / 2``; with ``log``, all on the log scale
    (positive quantities with log-scale intervals). The raw distance for point values
    (zero width), its sign for a one-sided bound (infinite half-width)."""
    value, lower, upper = (np.asarray(x, dtype=float) for x in (value, lower, upper))
    with np.errstate(invalid="ignore", divide="ignore"):
        if log:
            value, lower, upper = np.log(value), np.log(lower), np.log(upper)
            low = np.log(low) if low > 0 else -np.inf
            high = np.log(high) if high > 0 else -np.inf
        d = np.minimum(value - low, high - value)
        half = (upper - lower) / 2
        return np.where(
            np.isinf(half), np.sign(d), np.where(np.isfinite(half) & (half > 0), d / half, d)
        )


def _layers(n: int) -> str:
    return "layer" if n == 1 else "layers"


def _median_effect(z) -> float:
    z = np.asarray(z, float).ravel()
    z = z[np.isfinite(z)]
    return float(np.median(z)) if z.size else float("nan")


#: C4: the least share of mode 1's lag energy inside the paper's range.
C4_SHARE = REGISTRY["C4"].low


@dataclass
class _C4Grid:
    """C4's inputs at layers 2, 4, 6 as ``(model, layer)`` arrays."""

    layers: list
    sv: np.ndarray
    bv: np.ndarray | None
    dv: np.ndarray | None
    rv: np.ndarray
    usable: np.ndarray
    ok6: np.ndarray


@dataclass
class _C4Cases:
    """C4's cases: share and difference with standard errors, layer 6's peak test, the
    degrees of freedom and 95 % quantile, and what the intervals give per case."""

    s_val: np.ndarray
    s_se: np.ndarray
    d_val: np.ndarray
    d_se: np.ndarray
    peak_ok: np.ndarray
    df: np.ndarray | None
    q: float | np.ndarray
    lower: xr.DataArray
    upper: xr.DataArray
    diff: xr.Dataset | None = None
    keep: np.ndarray | None = None
    n_thin: int = 0


def _c4_grid(share, reach, base, peaks6, layers) -> _C4Grid:
    """Share, reach, window-alone share and difference at ``layers``, the usable cases
    and layer 6's peak count test per model."""
    sv = _grid(share.sel(layer=layers)).astype(float)
    rv = _grid(reach.sel(layer=layers))
    rv = np.where(np.isnan(rv), False, rv) if rv.dtype.kind == "f" else rv
    rv = rv.astype(bool)
    bv = None if base is None else _grid(base.sel(layer=layers)).astype(float)
    usable = np.isfinite(sv) & rv
    if bv is not None:
        usable &= np.isfinite(bv)
    dv = None if bv is None else sv - bv
    ok6 = (
        np.ones(sv.shape[0], bool)
        if peaks6 is None
        else np.nan_to_num(np.asarray(peaks6, float)).ravel() >= REGISTRY["C4"].stated["peaks6"]
    )
    return _C4Grid(layers, sv, bv, dv, rv, usable, ok6)


def _c4_seed_cases(g: _C4Grid, share) -> _C4Cases:
    """C4 over seeds: per layer the means of the share and the difference over the models
    whose window reaches the range, with Student-t quantiles (layers with two such seeds)."""
    layers, usable, i6 = g.layers, g.usable, g.layers.index(6)
    s_val, s_se, df = over_seeds(np.where(usable, g.sv, np.nan))
    if g.dv is not None:
        d_val, d_se, _ = over_seeds(np.where(usable, g.dv, np.nan))
    else:
        d_val, d_se = np.full(len(layers), np.inf), np.zeros(len(layers))
    keep = df >= 1
    u6 = usable[:, i6]
    # layer 6's peaks (a count per model): 1 every seed has >= 2, 0 none, -1 some
    peak_ok = np.ones(len(layers), dtype=np.int8)
    peak_ok[i6] = 1 if g.ok6[u6].all() else (0 if not g.ok6[u6].any() else -1)
    s_val, s_se, d_val, d_se, peak_ok, df = (
        x[keep] for x in (s_val, s_se, d_val, d_se, peak_ok, df)
    )
    q = _q95(df)
    diff_ds = None
    if g.dv is not None:
        lay = np.asarray(layers)[keep]
        dq = d_se * q
        diff_ds = xr.Dataset(
            {
                "value": ("layer", d_val),
                "lower": ("layer", np.maximum(d_val - dq, -1.0)),  # a difference of shares
                "upper": ("layer", np.minimum(d_val + dq, 1.0)),
            },
            coords={"layer": lay},
        )
    n_thin = int((~keep & (usable.sum(0) > 0)).sum())
    return _C4Cases(s_val, s_se, d_val, d_se, peak_ok, df, q, share, share, diff_ds, keep, n_thin)


def _c4_model_cases(g: _C4Grid, share, share_se, diff_se, se_df) -> _C4Cases:
    """C4 per model and layer: jackknife standard errors over snapshots (normal or
    Student-t with ``se_df``) when given, point values otherwise."""
    layers, usable = g.layers, g.usable
    e_s = np.zeros_like(g.sv) if share_se is None else _sel6(share_se, layers)
    e_d = np.zeros_like(g.sv) if diff_se is None else _sel6(diff_se, layers)
    peak_m = np.ones(g.sv.shape, dtype=np.int8)
    peak_m[:, layers.index(6)] = g.ok6
    s_val, s_se = g.sv[usable], e_s[usable]
    d_val = g.dv[usable] if g.dv is not None else np.full(s_val.shape, np.inf)
    d_se = e_d[usable]
    peak_ok = peak_m[usable]
    df = None if se_df is None or share_se is None else np.full(s_val.shape, se_df)
    q = _q95(None if df is None else se_df)
    lower, upper = share, share
    if share_se is not None:
        half = q * np.nan_to_num(_sel_all(share_se, share))
        lower = (share - half).clip(0.0, 1.0)
        upper = (share + half).clip(0.0, 1.0)
    return _C4Cases(s_val, s_se, d_val, d_se, peak_ok, df, q, lower, upper)


def _c4_cells(c: _C4Cases, has_base: bool):
    """Per case "yes" / "no" / "ns" (share, difference and peaks all pass / any fails),
    the half-widths of the share's and the difference's intervals that the decisions
    read (each test's Holm steps), and the standardised effect (from the 95 %
    intervals)."""
    share = REGISTRY["C4"].low
    n = c.s_val.size
    a, qa = (
        decide(c.s_val, c.s_se, low=share, df=c.df, quantiles=True)
        if n
        else (np.array([], str), np.zeros(0))
    )
    b, qb = (
        decide(c.d_val, c.d_se, low=0.0, df=c.df, quantiles=True)
        if n and has_base
        else (np.full(c.s_val.shape, "yes"), np.zeros(c.s_val.shape))
    )
    fails = (a == "no") | (b == "no") | (c.peak_ok == 0)
    passes = (a == "yes") & (b == "yes") & (c.peak_ok == 1)
    cells = np.where(fails, "no", np.where(passes, "yes", "ns")).astype(str)
    with np.errstate(invalid="ignore"):
        s_se, d_se = np.nan_to_num(c.s_se), np.nan_to_num(c.d_se)
        z = np.minimum(
            standardised(c.s_val, c.s_val - c.q * s_se, c.s_val + c.q * s_se, low=share),
            standardised(c.d_val, c.d_val - c.q * d_se, c.d_val + c.q * d_se, low=0.0)
            if has_base
            else np.inf,
        )
        return cells, qa * s_se, qb * d_se, z


def _c4_read(c: _C4Cases, g: _C4Grid, mode: str, qs, qd) -> dict:
    """The outcome's ``read`` entries: the intervals the decisions read (half-widths
    ``qs`` of the share, ``qd`` of the difference) of the per-layer means over seeds
    (``diff``) or of the per-model shares at the usable cases (jackknife)."""
    if mode == "seeds" and c.diff is not None:
        d = c.diff["value"]
        return {"diff": (np.maximum(d - qd, -1.0), np.minimum(d + qd, 1.0))}  # share difference
    if mode == "jackknife":
        lo = _put_cases(c.lower, g.usable, np.clip(c.s_val - qs, 0.0, 1.0), g.layers)
        up = _put_cases(c.upper, g.usable, np.clip(c.s_val + qs, 0.0, 1.0), g.layers)
        return {"stat": (lo, up)}
    return {}


#: Where C4's windows sit, in words (the ``c4_window`` readings).
C4_PLACEMENT = {
    "range": "in a window on the paper's lags",
    "dominant scale": "in a window of the dominant scale",
}


def _mode_words(mode: str, se_df, log: bool) -> str:
    """How C4's and C9's rules form their intervals (``mode``: ``"jackknife"`` per model
    and layer, ``"seeds"`` per layer over seeds, ``"point"``), in words."""
    scale = " (log scale)" if log else ""
    return {
        "jackknife": _jack_words(se_df) + scale + ", Holm across cases",
        "seeds": f"per layer the {'geometric ' if log else ''}mean over seeds, 95 % Student-t "
        f"intervals over seeds{scale}, Holm across layers",
        "point": "point values",
    }[mode]


def _c4_rule_text(mode: str, se_df, where: str, placement: str) -> str:
    """C4's rule in words for one way of forming the intervals."""
    kind = _mode_words(mode, se_df, log=False)
    per = "every layer 2, 4, 6" if mode == "seeds" else "every model and layer 2, 4, 6"
    return (
        f"share of mode 1's lag energy inside the paper's lags ≥ {REGISTRY['C4'].low:g} and above "
        f"the window alone's share (difference > 0), {C4_PLACEMENT[placement]} "
        f"(layer 6 also ≥ {REGISTRY['C4'].stated['peaks6']} peaks in "
        f"{'–'.join(map(str, PAPER_LAGS[6]))}), {per}; {kind} ({where})"
    )


def _c4_text(mode: str, g: _C4Grid, c: _C4Cases, qs, qd, read: dict) -> tuple[str, str]:
    """C4's measured values (per layer the range over models, and the means over seeds)
    and the intervals its decisions read in words."""
    layers = g.layers

    def fmt(x):  # per layer, the range over models (x: (model, layer) at ``layers``)
        return "; ".join(f"L{L_} {fmt_range(x[:, j], '{:.2f}')}" for j, L_ in enumerate(layers))

    measured = f"lag-energy share in the paper's range (models min–max): {fmt(g.sv)}"
    if g.bv is not None:
        measured += "; window alone: " + fmt(g.bv)
    if mode == "seeds":
        iv = [
            f"L{L_} share {v:.2f} [{max(v - h, 0.0):.2f}, {min(v + h, 1.0):.2f}]"
            + (
                f", mode − window {x:+.3f} [{x - g_:+.3f}, {x + g_:+.3f}]"
                if g.dv is not None
                else ""
            )
            for L_, v, h, x, g_ in zip(
                np.asarray(layers)[c.keep], c.s_val, qs, c.d_val, qd, strict=True
            )
        ]
        interval = "; ".join(iv) or "no layer with two seeds"
        if iv:
            measured += "; mean over seeds: " + interval
    elif mode == "jackknife":
        lo, up = read["stat"]
        interval = _ivs(lo.sel(layer=layers).values, up.sel(layer=layers).values)
    else:
        interval = "point values"
    return measured, interval


def _c4_left(g: _C4Grid, n_thin: int) -> list[str]:
    """The cases C4 leaves out, and why, in words."""
    n_none = int((~np.isfinite(g.sv)).sum())
    n_unreach = int((np.isfinite(g.sv) & ~g.rv).sum())
    left = []
    if n_none:
        left.append(f"{n_none} without a dominant scale")
    if n_unreach:
        left.append(f"{n_unreach} whose window cannot reach the paper's lags")
    if n_thin:
        left.append(f"{n_thin} {_layers(n_thin)} with fewer than two seeds reaching the lags")
    return left


def rule_c4(
    share: xr.DataArray,
    reach: xr.DataArray,
    peaks6=None,
    *,
    base: xr.DataArray | None = None,
    share_se: xr.DataArray | None = None,
    diff_se: xr.DataArray | None = None,
    se_df: int | None = None,
    seeds: bool = True,
    where: str = "",
    placement: str = "range",
) -> Outcome:
    r"""C4: the scale-selective modes of layers 2, 4, 6 sit at the paper's lags.

    Per layer :math:`\ell \in \{2, 4, 6\}` with its range :math:`R_\ell`
    (:data:`PAPER_LAGS`), mode 1 of the window :math:`w` (``placement``) puts the
    share :math:`s = \sum_{\tau \in R_\ell} e_1(\tau)` of its lag energy
    :math:`e_1(\tau) \propto w(\tau)^2 v_1^\top G(\tau) v_1` in the range; the
    window alone (the windowed fluctuation, no mode) puts :math:`b`. A case passes when
    :math:`s \ge 0.5` **and** :math:`d = s - b > 0` (the mode beats what the window gives
    by itself), each by its 95 % interval with Holm across the cases (an intersection-union
    test: "yes" when both pass, "no" when either fails beyond its interval); layer 6 also
    needs at least two peaks of :math:`e_1` in 10-40 (a count, no interval).

    Parameters
    ----------
    share
        :math:`s` per ``(model, layer)``: the largest, over the windows of the
        specification, share inside the paper's range; NaN where the specification gives
        no window.
    reach
        Per ``(model, layer)``: whether that window reaches the paper's range at all
        (weight ``w >= exp(-2)`` somewhere in it). A window that cannot reach the range
        leaves the case untestable (decided by construction, not by the data).
    peaks6
        Per model: local maxima of the mode's lag-energy profile inside 10-40 (layer 6).
    base
        :math:`b` per ``(model, layer)``; None: no baseline (only :math:`s \ge 0.5`).
    share_se, diff_se
        Jackknife standard errors over snapshots of :math:`s` and of :math:`d` (the
        difference's own replicates: :math:`s` and :math:`b` are correlated). Given:
        the cases are the models x layers, 95 % intervals normal or, with ``se_df``,
        Student-t with ``se_df`` degrees of freedom (a delete-group jackknife).
    se_df
        Degrees of freedom of the jackknife standard errors (None: normal).
    seeds
        Without standard errors: the cases are the layers, :math:`\bar s` and
        :math:`\bar d` the means over the models (training seeds) whose window reaches
        the range, Student-t intervals with models - 1 degrees of freedom (the
        per-layer values land in ``Outcome.diff``: ``value`` = :math:`\bar d`). False
        (or one model): point values per model and layer.
    placement
        Where the windows sit (:data:`C4_PLACEMENT`): on the paper's lags (``"range"``:
        centred on each range, the width a multiple of its half-width) or at the
        dominant scale (``"dominant scale"``); names the windows in the rule's text.
    """
    if placement not in C4_PLACEMENT:
        raise ValueError(f"placement: expected one of {list(C4_PLACEMENT)}, got {placement!r}")
    g = _c4_grid(share, reach, base, peaks6, sorted(PAPER_LAGS))
    n_models = g.sv.shape[0]
    mode = (
        "jackknife" if share_se is not None else ("seeds" if seeds and n_models >= 2 else "point")
    )
    if mode == "seeds":
        c = _c4_seed_cases(g, share)
    else:
        c = _c4_model_cases(g, share, share_se, diff_se, se_df)
    cells, qs, qd, z = _c4_cells(c, g.dv is not None)
    read = _c4_read(c, g, mode, qs, qd)
    rule = _c4_rule_text(mode, se_df, where, placement)
    measured, interval = _c4_text(mode, g, c, qs, qd, read)
    left = _c4_left(g, c.n_thin)
    common = dict(
        stat=share, lower=c.lower, upper=c.upper, diff=c.diff, interval=interval, read=read
    )
    if cells.size == 0:
        return Outcome(
            "C4",
            NOT_TESTABLE,
            measured,
            rule,
            f"{g.sv.size} cases: " + ", ".join(left),
            reason="no case testable under this reading: " + ", ".join(left),
            **common,
        )
    return Outcome(
        "C4",
        combine(cells),
        measured,
        rule,
        case_counts(cells) + (f"; left out: {', '.join(left)}" if left else ""),
        reason="; ".join(left),
        extra={"effect": _median_effect(z)},
        **common,
    )


def _sel6(se: xr.DataArray, layers) -> np.ndarray:
    """``se`` at ``layers`` as a ``(model, layer)`` array (NaN -> 0: a point value)."""
    return np.nan_to_num(_grid(se.sel(layer=layers)).astype(float))


def _sel_all(se: xr.DataArray, like: xr.DataArray) -> xr.DataArray:
    """``se`` aligned with ``like`` (NaN where ``se`` has no value)."""
    return se.reindex_like(like).transpose(*like.dims)


def _c5_rule_text(groups, early, rest, n: int, where: str) -> str:
    """C5's rule in words: the core contrast, part (i) (or why it is left out at this
    ``n``) and part (ii)."""
    c5 = REGISTRY["C5"]
    above = c5.stated["early_above"]
    testable = n - 1 > above
    rest_text = layer_span(rest) if rest else "none"
    return (
        (
            f"(core) H*(layers {layer_span(groups[1])}) − H*(layers {layer_span(groups[0])}) "
            "> 0, every model; "
            if groups
            else ""
        )
        + f"(i) H* above {above}, layers {layer_span(early)}"
        + ("" if testable else f" — left out: H* ≤ N − 1 = {n - 1} by construction")
        + (
            f"; (ii) H* within {c5.about:g} ± {c5.tolerance:.0%}, layers {rest_text}"
            if rest
            else ""
        )
        + f"; 95 %, Holm across the cases of each part ({where})"
    )


def _c5_cases_text(core, a, b, testable: bool, rest) -> str:
    """C5's case counts per part."""
    return (
        (f"(core) {case_counts(core)}; " if core.size else "")
        + "(i) "
        + (case_counts(a) if testable else "not testable at this N")
        + (f"; (ii) {case_counts(b)}" if rest else "")
    )


def rule_c5(
    H: xr.DataArray,
    se: xr.DataArray | None,
    *,
    n: int = N_SNAPSHOTS,
    criterion: str = "energy",
    where: str = "",
    early=EARLY,
    rest=MIDDLE_LATE,
) -> Outcome:
    """C5: H*(0.10) of layers 1-2 above 150, of layers 3-6 about 91 — early needs MORE.

    Cases: (core) per model ``mean H*(1-2) - mean H*(3-6) > 0`` with its 95 % interval
    (none without later layers); (i) layers 1-2 above 150 (only testable when N - 1 > 150:
    H* cannot exceed N - 1); (ii) layers 3-6 within ±15 % of 91. A reversed contrast means
    "does not hold"; no case at all (two layers at N <= 151) is not testable.
    """
    early, rest = list(early), list(rest)
    c5 = REGISTRY["C5"]
    above = c5.stated["early_above"]
    lo, up = interval(H, se, log=True)
    c, core, groups = _core(H, se, rest, early, 1)  # early - later
    testable = n - 1 > above
    a = b = np.array([], dtype=str)
    r_lo, r_up = lo, up
    if testable:
        a, r_lo, r_up = _decide_layers(H, se, early, r_lo, r_up, low=above + 0.5)
    if rest:
        low, high = c5.range
        b, r_lo, r_up = _decide_layers(H, se, rest, r_lo, r_up, low=low, high=high)
    # H* counts modes: 1 <= H* <= N - 1
    lo, up, r_lo, r_up = (
        lo.clip(min=1.0),
        up.clip(max=n - 1.0),
        r_lo.clip(min=1.0),
        r_up.clip(max=n - 1.0),
    )
    contrast, read = _contrast_parts(c)
    read["stat"] = (r_lo, r_up)
    rest_text = layer_span(rest) if rest else "none"
    measured = (
        f"H*(0.10, {criterion}) at N = {n}: layers {layer_span(early)} "
        f"{fmt_range(H.sel(layer=early), '{:.0f}')}, layers {rest_text} "
        f"{fmt_range(H.sel(layer=rest), '{:.0f}')}; early − later: " + _contrast_text(c, "{:+.3g}")
    )
    rule = _c5_rule_text(groups, early, rest, n, where)
    why = [] if testable else [f"'> {above} modes' cannot occur with N = {n} snapshots"]
    if not rest:
        why.append("no layers after the early ones")
    verdict, _ = _verdict(core, np.concatenate([a.ravel(), b.ravel()]), "")
    return Outcome(
        "C5",
        verdict,
        measured,
        rule,
        _c5_cases_text(core, a, b, testable, rest),
        reason="; ".join(why),
        stat=H,
        lower=lo,
        upper=up,
        contrast=contrast,
        interval=_layer_intervals(r_lo, r_up, rest, se, "{:.0f}"),
        paper_value=_paper_inside(
            H.sel(layer=rest),
            r_lo.sel(layer=rest),
            r_up.sel(layer=rest),
            c5.about,
            "H*(layers 3–6)",
        ),
        read=read,
    )


def _prune_contrast(inc: xr.DataArray, first: str, second: str, b) -> tuple[float, float, int]:
    """Mean over models of ``Delta_first - Delta_second`` (loss increases, random draws
    averaged) at budget ``b``, its SE (the spread over models, or the random draws' noise
    if larger) and the degrees of freedom (models - 1)."""

    def per_model(st):
        x = inc.sel(strategy=st, budget=b)
        return x.mean("draw"), x.var("draw", ddof=1) / x.count("draw")

    (x1, v1), (x2, v2) = per_model(first), per_model(second)
    D = x1 - x2
    M = D.sizes["model"]
    se_model = float(D.std("model", ddof=1)) / np.sqrt(M) if M > 1 else np.nan
    se_draw = float(np.sqrt((v1.fillna(0) + v2.fillna(0)).sum("model"))) / M
    return float(D.mean("model")), float(np.nanmax([se_model, se_draw])), M - 1


def _mean_layer(study: xr.Dataset, strategy: str, b) -> float:
    """Mean layer number of the heads a strategy removes at budget ``b``."""
    if "mask" not in study:
        return np.nan
    gone = (study["mask"].sel(strategy=strategy, budget=b) == 0).astype(float)
    return float((gone * study["layer"]).sum() / gone.sum()) if gone.sum() else np.nan


def _c6_part(inc, budgets, strategies, name, pairs, text, rule) -> Outcome:
    """One part of C6: per budget and strategy pair the contrast of loss increases,
    Student-t over models, Holm across the cases."""
    vals, ses, dfs, labels = [], [], [], []
    for b in budgets:
        for first, second, label in pairs:
            if {first, second} <= strategies:
                d, se, df = _prune_contrast(inc, first, second, b)
                vals.append(d)
                ses.append(se)
                dfs.append(df)
                labels.append((b, label))
    if not vals:
        return Outcome(
            name,
            NOT_TESTABLE,
            "no such strategies",
            rule,
            "0 cases",
            reason="the pruning study lacks the strategies this part needs",
        )
    v, e, df = np.array(vals), np.array(ses), np.array(dfs)
    cells, q = decide(v, e, high=0.0, df=df, quantiles=True)
    lo, up = holm_interval(v, e, q)
    iv = [
        f"{b} heads {lab}: {x:+.3f} [{a_:+.3f}, {b_:+.3f}]"
        for (b, lab), x, a_, b_ in zip(labels, v, lo, up, strict=True)
    ]
    return Outcome(
        name,
        combine(cells),
        text + "; ".join(iv),
        rule,
        case_counts(cells),
        interval="; ".join(iv),
    )


def _c6_verdict(parts) -> str:
    """C6 from its testable parts: holds if all hold, partly if one holds or partly."""
    testable = [o for o in parts if o.verdict != NOT_TESTABLE]
    if not testable:
        return NOT_TESTABLE
    words = [o.verdict for o in testable]
    if all(w == "holds" for w in words):
        return "holds"
    if any(w in ("holds", "partly") for w in words):
        return "partly"
    if any(w == "does not hold" for w in words):
        return "does not hold"
    return "not significant"


def rule_c6(study: xr.Dataset | None) -> Outcome:
    """C6 in two parts, each a row of the scorecard (``extra["parts"]``):

    * **C6a** (depth: deep layers over-specified, early ones under-specified): removing
      heads from deep layers costs less validation loss than removing them from early
      layers and than removing them at random. Read on the strategies of the pruning
      study that remove mostly deep heads ("high-H*") and mostly early heads ("low-H*";
      their mean layer is stated); cases: every budget x {vs early, vs random}.
    * **C6b** (H* as the guide): H*-guided pruning ("low-H*": the heads needing fewest
      modes; "H*-allocation": heads kept per layer in proportion to its H*) costs less
      than random pruning at the same budget; cases: every budget x guide.

    Each case is the mean over models of the per-model difference of loss increases
    with a Student-t interval (models - 1 degrees of freedom; SE the spread over models
    or, if larger, the random draws' noise), Holm across the part's cases. C6 itself
    combines both parts; None (study not run) is not testable.
    """
    if study is None or "loss_increase" not in study:
        return Outcome(
            "C6",
            NOT_TESTABLE,
            "pruning study not run",
            "head pruning: depth (C6a) and H* as the guide (C6b)",
            "0 cases",
            reason="the pruning study was not run for this zoo",
        )
    inc = study["loss_increase"]
    if "model" not in inc.dims:
        inc = inc.expand_dims(model=["model"])
    budgets = [int(b) for b in inc["budget"].values]
    strategies = set(inc["strategy"].values.tolist())

    b_mid = budgets[len(budgets) // 2]
    deep, early = "high-H*", "low-H*"
    layers_txt = (
        f" (at {b_mid} heads they remove heads of mean layer {_mean_layer(study, deep, b_mid):.1f}"
        f" and {_mean_layer(study, early, b_mid):.1f})"
    )
    c6a = _c6_part(
        inc,
        budgets,
        strategies,
        "C6a",
        [(deep, early, "deep − early"), (deep, "random", "deep − random")],
        "loss increase (nats/char), mostly-deep (high-H*) minus mostly-early (low-H*) or "
        f"random removal{layers_txt}: ",
        "removing deep heads costs less than removing early heads and than random removal, "
        "every budget; 95 % Student-t over models, Holm across cases",
    )
    c6b = _c6_part(
        inc,
        budgets,
        strategies,
        "C6b",
        [
            ("low-H*", "random", "low-H* − random"),
            ("H*-allocation", "random", "allocation − random"),
        ],
        "loss increase (nats/char), H*-guided minus random removal: ",
        "H*-guided removal costs less than random removal at equal budget, every budget and "
        "guide; 95 % Student-t over models, Holm across cases",
    )
    return Outcome(
        "C6",
        _c6_verdict([c6a, c6b]),
        f"C6a {c6a.verdict}; C6b {c6b.verdict}",
        "(a) depth: deep heads cheaper to remove than early or random ones; (b) H*-guided "
        "removal cheaper than random; holds if both hold, partly if one holds or partly",
        f"C6a {c6a.cases}; C6b {c6b.cases}",
        interval=f"C6a {c6a.interval}; C6b {c6b.interval}",
        extra={"parts": {"C6a": c6a, "C6b": c6b}},
    )


def _diff_rule(claim, d, layers_sign, measured_label, rule):
    """Architecture differences per layer against the stated signs: Student-t with the
    seeds' degrees of freedom, Holm across the layers. The intervals of those layers in
    its words and in ``read`` are the ones the decision reads, each at its Holm step's
    level (:data:`HOLM_WORDS`); a layer the claim says nothing about keeps its own 95 %
    interval."""
    layers = list(layers_sign)
    sign = np.array([layers_sign[k] for k in layers], float)
    x = d.sel(layer=layers)
    value, se = x["value"].values, x["se"].values
    cells, q = decide(sign * value, se, low=0.0, df=d.attrs["df"], quantiles=True)
    lo, up = holm_interval(value, se, q)
    measured = f"{measured_label} ({HOLM_WORDS}): " + ", ".join(
        f"L{layer} {v:+.3g} [{a_:+.3g}, {b_:+.3g}]"
        for layer, v, a_, b_ in zip(layers, value, lo, up, strict=True)
    )
    return Outcome(
        claim,
        combine(cells),
        measured,
        rule,
        case_counts(cells),
        diff=d.drop_vars("se"),
        interval=_ivs(lo, up, "{:+.3g}"),
        read={"diff": (_replaced(d["lower"], layers, lo), _replaced(d["upper"], layers, up))},
    )


#: Architecture labels of the treatment and control groups (C7, C8, L).
TREATMENT, CONTROL = "ega", "baseline"


def _arch(value, se, treatment=TREATMENT, control=CONTROL):
    from ..measure.uncertainty import arch_difference

    d = arch_difference(value, se, treatment=treatment, control=control)
    out = xr.Dataset({"value": d["diff"], "lower": d["lower"], "upper": d["upper"], "se": d["se"]})
    out.attrs["df"] = int(d.attrs["df"])
    return out


def _too_few(claim, value, treatment, control) -> Outcome | None:
    """Not testable when an architecture has fewer than two models (no seed interval)."""
    arch = value["architecture"].values if "architecture" in value.coords else np.array([])
    counts = {lab: int((arch == lab).sum()) for lab in (treatment, control)}
    if min(counts.values()) >= 2:
        return None
    return Outcome(
        claim,
        NOT_TESTABLE,
        f"models per architecture: {counts}",
        f"{treatment} − {control} with a Student-t interval over training seeds",
        "0 cases",
        reason=(
            f"needs at least 2 models of each architecture ({treatment!r}, {control!r}) for "
            f"an interval over training seeds; got {counts}"
        ),
    )


def rule_c7(
    E: xr.DataArray,
    se: xr.DataArray | None,
    *,
    where: str = "",
    treatment: str = TREATMENT,
    control: str = CONTROL,
) -> Outcome:
    """C7: EGA - baseline scalogram energy > 0 in every layer (95 % seed-and-snapshot
    interval of :func:`msapod.studies.measure.uncertainty.arch_difference`, Holm across layers)."""
    if (out := _too_few("C7", E, treatment, control)) is not None:
        return out
    d = _arch(E, se, treatment, control)
    lo, up = interval(E, se, log=True)
    out = _diff_rule(
        "C7",
        d,
        {int(layer): 1 for layer in E["layer"].values},
        f"{treatment} − {control} scalogram energy",
        f"{treatment} − {control} energy > 0, every layer; 95 % seed-and-snapshot interval "
        f"(Student-t, {d.attrs['df']} df), Holm across layers ({where})",
    )
    out.stat, out.lower, out.upper = E, lo, up
    return out


def rule_c8(
    T: xr.DataArray,
    se: xr.DataArray | None,
    *,
    where: str = "",
    treatment: str = TREATMENT,
    control: str = CONTROL,
) -> Outcome:
    """C8: EGA - baseline T_spec > 0 in layers 3-4 and < 0 in layers 5-6 (95 % interval,
    Holm across the four layers)."""
    if (out := _too_few("C8", T, treatment, control)) is not None:
        return out
    d = _arch(T, se, treatment, control)
    lo, up = interval(T, se, log=True)
    out = _diff_rule(
        "C8",
        d,
        C8_SIGNS,
        f"{treatment} − {control} T_spec",
        f"signs as stated (+ in layers 3–4, − in 5–6); 95 % seed-and-snapshot interval "
        f"(Student-t, {d.attrs['df']} df), Holm across layers ({where})",
    )
    out.stat, out.lower, out.upper = T, lo, up
    return out


#: C9: the windowed mode must be at least this much narrower in scale (ratio < 1 - margin).
C9_MARGIN = REGISTRY["C9"].stated["margin"]


@dataclass
class _C9Cases:
    """C9's cases: the ratios with standard errors (log scale) and degrees of freedom,
    their 95 % intervals (the standardised effect's), what the Outcome reports (the
    intervals the decisions read, :func:`_c9_read`) and layers left out for thin seeds."""

    val: np.ndarray
    e: np.ndarray
    df: np.ndarray | None
    lo: np.ndarray
    up: np.ndarray
    lower: xr.DataArray
    upper: xr.DataArray
    interval: str
    diff: xr.Dataset | None = None
    n_thin: int = 0


def _c9_rule_text(mode: str, se_df, margin: float, where: str) -> str:
    """C9's rule in words for one way of forming the intervals."""
    kind = _mode_words(mode, se_df, log=True)
    per = "every layer" if mode == "seeds" else "every model and layer"
    return (
        f"windowed mode 1 narrower in scale than plain mode 1 by the margin: ratio < "
        f"{1 - margin:g} by its interval passes, > {1 - margin:g} by its interval fails, "
        f"{per}; {kind} ({where})"
    )


def _c9_seed_cases(ratio, ok) -> _C9Cases:
    """C9 over seeds: per layer the geometric mean of the ratio over the models with a
    window and its Student-t interval (layers with two such seeds)."""
    val, e, df = over_seeds(ratio, log=True)
    keep = df >= 1
    lay = ratio["layer"].values[keep]
    val, e, df = val[keep], e[keep], df[keep]
    f = np.exp(_q95(df) * e / val)
    lo_, up_ = val / f, val * f
    diff_ds = xr.Dataset(
        {"value": ("layer", val), "lower": ("layer", lo_), "upper": ("layer", up_)},
        coords={"layer": lay},
    )
    n_thin = int((~keep & ok.any(0)).sum())
    return _C9Cases(val, e, df, lo_, up_, ratio, ratio, "", diff_ds, n_thin)


def _c9_model_cases(ratio, v, ok, se, se_df) -> _C9Cases:
    """C9 per model and layer: jackknife standard errors over snapshots (log scale, normal
    or Student-t with ``se_df``) when given, point values otherwise."""
    lower, upper, df = ratio, ratio, None
    val = v[ok]
    e = np.zeros_like(val) if se is None else np.nan_to_num(_grid(se).astype(float))[ok]
    q = _q95(se_df if se is not None else None)
    if se is not None:
        lower, upper = interval(ratio, se.reindex_like(ratio), log=True, q=q)
        df = None if se_df is None else np.full(val.shape, se_df)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.exp(q * e / val)
    lo_, up_ = val / f, val * f
    return _C9Cases(val, e, df, lo_, up_, lower, upper, "point values")


def _c9_read(c: _C9Cases, mode: str, ok: np.ndarray, q: np.ndarray) -> dict:
    """The intervals the decisions read (each case's Holm step, log scale), in words
    (``c.interval``) and as the outcome's ``read`` entries: the per-layer geometric
    means over seeds (``diff``) or the per-model ratios at the cases ``ok``
    (jackknife)."""
    lo, up = holm_interval(c.val, c.e, q, log=True)
    if mode == "seeds":
        c.interval = ", ".join(
            f"L{int(L_)} {x:.3f} {_fmt_iv(a_, b_, '{:.3f}')}"
            for L_, x, a_, b_ in zip(c.diff["layer"].values, c.val, lo, up, strict=True)
        )
        d = c.diff["value"]
        return {"diff": (d.copy(data=lo), d.copy(data=up))}
    if mode == "jackknife":
        c.interval = _ivs(lo, up)
        return {"stat": (_put_cases(c.lower, ok, lo), _put_cases(c.upper, ok, up))}
    return {}


def _c9_no_window(ratio, v, measured: str, rule: str) -> Outcome:
    """C9 not testable: no scale window under this reading."""
    return Outcome(
        "C9",
        NOT_TESTABLE,
        measured,
        rule,
        f"{v.size} cases: no window",
        reason="no dominant scale, hence no scale window, under this reading",
        stat=ratio,
        lower=ratio,
        upper=ratio,
        interval="point values",
    )


def _c9_no_case(ratio, c: _C9Cases, measured: str, rule: str, left: list[str]) -> Outcome:
    """C9 not testable: windows exist, but no case can be decided (``left`` says why)."""
    return Outcome(
        "C9",
        NOT_TESTABLE,
        measured,
        rule,
        "0 cases: " + ", ".join(left),
        reason="no case testable under this reading: " + ", ".join(left),
        stat=ratio,
        lower=c.lower,
        upper=c.upper,
        interval=c.interval or "no layer with two seeds",
    )


def rule_c9(
    ratio: xr.DataArray,
    se: xr.DataArray | None = None,
    *,
    se_df: int | None = None,
    seeds: bool = True,
    where: str = "",
    margin: float | None = None,
) -> Outcome:
    r"""C9: scale-selective modes separate scales the plain modes mix.

    ``ratio`` :math:`D` per ``(model, layer)``: the spread (standard deviation of
    :math:`\log a` under the mode's own scale spectrum) of mode 1 of the first scale
    window over that of plain mode 1; NaN without a window. The claim is
    :math:`D < 1 - m` (``margin``: the windowed mode is clearly narrower in *scale*;
    the lag window alone does not guarantee this -- narrowing in lag broadens in scale).
    The rule is symmetric about that one boundary: a case passes if the 95 % interval of
    :math:`D` (log scale) lies below :math:`1 - m`, fails if it lies above it, and is
    not significant only when the interval contains it; Holm across the cases.

    Parameters
    ----------
    ratio
        :math:`D` per ``(model, layer)``.
    se
        Jackknife standard errors of :math:`D` over snapshots: the cases are the
        models x layers, intervals on the log scale, normal or, with ``se_df``,
        Student-t with ``se_df`` degrees of freedom (a delete-group jackknife).
    se_df
        Degrees of freedom of ``se`` (None: normal).
    seeds
        Without ``se``: the cases are the layers, :math:`\bar D` the geometric mean
        over the models (training seeds) with a window, Student-t interval of
        :math:`\log D` with models - 1 degrees of freedom (in ``Outcome.diff``).
        False (or one model): point values per model and layer.
    """
    v = _grid(ratio).astype(float)
    ok = np.isfinite(v)
    mode = "jackknife" if se is not None else ("seeds" if seeds and v.shape[0] >= 2 else "point")
    if margin is None:
        margin = REGISTRY["C9"].stated["margin"]
    rule = _c9_rule_text(mode, se_df, margin, where)
    measured = (
        f"scale spread of windowed / plain mode 1: {fmt_range(ratio, '{:.2f}')} "
        f"(median {np.nanmedian(v):.2f})"
        if ok.any()
        else "no scale window"
    )
    if not ok.any():
        return _c9_no_window(ratio, v, measured, rule)
    n_none = int((~ok).sum())
    left = [f"{n_none} without a window"] if n_none else []
    if mode == "seeds":
        c = _c9_seed_cases(ratio, ok)
        if c.n_thin:
            left.append(f"{c.n_thin} {_layers(c.n_thin)} with fewer than two seeds with a window")
    else:
        c = _c9_model_cases(ratio, v, ok, se, se_df)
    if c.val.size == 0:
        return _c9_no_case(ratio, c, measured, rule, left)
    cells, q = decide(c.val, c.e, high=1.0 - margin, log=True, df=c.df, quantiles=True)
    z = standardised(c.val, c.lo, c.up, high=1.0 - margin, log=True)
    read = _c9_read(c, mode, ok, q)
    if mode == "seeds":
        measured += f"; geometric mean over seeds: {c.interval}"
    return Outcome(
        "C9",
        combine(cells),
        measured,
        rule,
        case_counts(cells) + (f"; left out: {', '.join(left)}" if left else ""),
        stat=ratio,
        lower=c.lower,
        upper=c.upper,
        diff=c.diff,
        interval=c.interval,
        extra={"effect": _median_effect(z)},
        read=read,
    )


def rule_c10(gap: float, beaten: int, trials: int, label: str = "") -> Outcome:
    """C10 (Theorem 1): the rank-K error equals the eigenvalue tail to 1e-8 and no random
    orthonormal basis beats POD."""
    tol = REGISTRY["C10"].high
    ok = gap < tol and beaten == 0
    return Outcome(
        "C10",
        "holds" if ok else "does not hold",
        f"{label}relative gap between error and tail sum {roundoff_bound(gap)} for "
        "K = 1, 5, 20; "
        f"random orthonormal bases beating POD: {beaten} of {trials}",
        f"error equals the tail sum to {tol:.0e} and no random basis does better",
        f"3 ranks x {trials // 3} random bases",
        interval="exact (no sampling error)",
    )


#: The smallest bound stated for a machine-precision result (about 50 float64 epsilons):
#: below it two machines' round-off differ, so no smaller value is printed.
MACHINE_BOUND = 1e-14


def roundoff_bound(x: float) -> str:
    """A machine-precision result ``x`` as a bound: "below 1e-14" for anything under
    :data:`MACHINE_BOUND`, else "below" the next power of ten ("below 1e-09")."""
    if not np.isfinite(x):
        return "not finite"
    exp = max(int(np.ceil(np.log10(max(abs(x), 1e-300)))), int(np.log10(MACHINE_BOUND)))
    if 10.0**exp <= abs(x):
        exp += 1
    return f"below 1e{exp:+03d}".replace("+0", "+").replace("-0", "-")


#: L: the loss change the EGA paper states (nats per character), and the tolerance of its
#: "about" (relative, as C3's "about 1.0").
PAPER_LOSS = REGISTRY["L"].stated["size"]
PAPER_LOSS_TOLERANCE = REGISTRY["L"].stated["size_tolerance"]


def rule_loss(
    loss: xr.DataArray,
    *,
    unfinished: bool = False,
    treatment: str = TREATMENT,
    control: str = CONTROL,
) -> Outcome:
    """L (EGA paper): EGA lowers the validation loss, by about 0.10 nats/char.

    Two cases read from one 95 % interval of the EGA - baseline difference over seeds
    (Student-t): (direction) the difference < 0; (size) the difference within
    ``PAPER_LOSS * (1 -+ PAPER_LOSS_TOLERANCE)``, i.e. -0.125 to -0.075 nats/char. Both
    statements come from the same interval, so they are true together with its 95 %
    coverage (no multiplicity correction; the interval printed is the one read).
    An interval that excludes the stated size fails the size case, so a difference
    indistinguishable from zero but clearly smaller than the claim "does not hold" as
    stated; "not significant" is left for an interval that contains both the stated size
    and its negation.
    """
    if (out := _too_few("L", loss, treatment, control)) is not None:
        return out
    d = _arch(loss, None, treatment, control)
    value, se, df = float(d["value"]), float(d["se"]), d.attrs["df"]
    size_lo = PAPER_LOSS * (1 + PAPER_LOSS_TOLERANCE)
    size_hi = PAPER_LOSS * (1 - PAPER_LOSS_TOLERANCE)
    direction, size = (
        decide(value, se, low, high, df=df).item()
        for low, high in ((-np.inf, 0.0), (size_lo, size_hi))
    )
    lo_, up_ = float(d["lower"]), float(d["upper"])
    inside = lo_ <= PAPER_LOSS <= up_
    return Outcome(
        "L",
        combine([direction, size]),
        f"{treatment} − {control} val loss {value:+.4f} nats/char, 95 % interval "
        f"[{lo_:+.4f}, {up_:+.4f}]" + ("; some models unfinished" if unfinished else ""),
        f"(direction) difference < 0 and (size) difference within {size_lo:+.3f} to "
        f"{size_hi:+.3f} nats/char (the claimed {PAPER_LOSS:+.2f} ± "
        f"{PAPER_LOSS_TOLERANCE:.0%}); one 95 % Student-t interval over seeds ({df} df), "
        "read for both",
        f"(direction) {case_counts([direction])}; (size) {case_counts([size])}",
        diff=d.drop_vars("se"),
        interval=f"[{lo_:+.4f}, {up_:+.4f}]",
        paper_value=(
            f"{'compatible' if inside else 'not compatible'}: the claimed size "
            f"{PAPER_LOSS:+.2f} nats/char is {'inside' if inside else 'outside'} the interval"
        ),
    )


_VERDICT_SET = set(VERDICTS)

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
