"""The decision rule every claim shares: replicates -> interval -> verdict code.

**The replicates are the training seeds.** A claim about trained models is a claim about
what training produces, so each test's statistic is computed once per model and the zoo's
models are its replicates. The estimate is their mean, with a Student-*t* interval over
the models (``design="models"``), or the difference of the two architectures' means with
a Welch interval (``design="architecture"``: EGA minus standard attention). Each model's
value carries the noise of its finite snippet ensemble, so the spread over models already
holds it: its jackknife standard error over the snippets (0.001-0.005 for a band share,
well below the spread over seeds) is kept for display and for the ``"snippets"`` unit of
inference, the book's comparison reading: the models as they are, their mean with only the
snippet uncertainty (a fixed-effect interval, normal quantiles). A two-stage bootstrap
(seeds, then snippets) would be too narrow at 4-8 seeds (it underestimates the spread of
8 values by 1/8 and has no small-sample quantile), so the *t* interval is the rule.

**One decision rule** (equivalence logic, Lakens 2017): each test has a boundary where its
smallest effect of interest ends (:meth:`msapod.studies.registry.ClaimTest.boundary`). Two
one-sided tests at 95 % read the 90 % interval ``[lower, upper]``:

* ``"holds"`` when the interval lies beyond the boundary in the claimed direction (for
  ``"within"``: inside the stated size's tolerance);
* ``"refuted"`` when it lies wholly on the other side: effects of the smallest interesting
  size in the claimed direction are excluded (the effect is negligible or reversed; for
  ``"within"``: the size is outside its tolerance);
* ``"undecided"`` otherwise; ``"untestable"`` where the data cannot decide (too few
  replicates, a quantity that cannot reach the boundary).

**Cases and parts.** A part with several cases (C7's six layers, C6's budgets) is decided
by :func:`combine_cases` (an intersection-union test, Bonferroni for refuted), a claim
from its parts by :func:`combine_parts`. The words of the codes are the renderer's
(:mod:`.render`).
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = [
    "ALPHA",
    "CODES",
    "Interval",
    "combine_cases",
    "combine_parts",
    "decide",
    "fixed_effect",
    "log_interval",
    "one_sample",
    "welch",
]

#: The level of each one-sided test (the decision reads the two-sided 90 % interval).
ALPHA = 0.05
#: The verdict codes, in the order the scorecard counts them.
CODES = ("holds", "partly", "refuted", "undecided", "untestable")


class Interval:
    """A zoo-level estimate: ``estimate``, its standard error ``se`` and degrees of
    freedom ``df`` (inf: normal), on the scale the test decides on (log for a positive
    statistic). Arrays broadcast over leading dims (specifications, relabellings)."""

    def __init__(self, estimate, se, df):
        self.estimate = np.asarray(estimate, dtype=np.float64)
        self.se = np.asarray(se, dtype=np.float64)
        self.df = np.broadcast_to(np.asarray(df, dtype=np.float64), self.estimate.shape)

    def quantile(self, level: float) -> np.ndarray:
        """The two-sided quantile of this interval's t (or normal) at ``level``."""
        df = np.where(self.df >= 1, self.df, np.nan)
        return special.stdtrit(df, 0.5 + level / 2)

    def bounds(self, level: float = 1 - 2 * ALPHA) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` at the two-sided ``level`` (default 90 %: the decision's)."""
        q = self.quantile(level)
        return self.estimate - q * self.se, self.estimate + q * self.se

    def p_above(self, value) -> np.ndarray:
        """One-sided p of H0 ``theta <= value`` (small when the estimate is clearly above)."""
        return _sf(self, value)

    def p_below(self, value) -> np.ndarray:
        """One-sided p of H0 ``theta >= value``."""
        return _sf(self, value, below=True)


def _sf(iv: Interval, value, below: bool = False) -> np.ndarray:
    value = np.asarray(value, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (iv.estimate - value) / iv.se
        if below:
            z = -z
        # an interval of zero width (exact values): decided by the sign alone
        z = np.where(iv.se > 0, z, np.where(z > 0, np.inf, np.where(z < 0, -np.inf, 0.0)))
    df = np.where(iv.df >= 1, iv.df, np.nan)
    p = special.stdtr(df, -z)
    return np.where(np.isfinite(iv.estimate) & ~np.isnan(df) & ~np.isnan(iv.se), p, np.nan)


def log_interval(value, se, q: float):
    """``(lower, upper)`` of a positive quantity: ``value exp(-+ q se / value)`` (the
    interval of its log by the delta method, ``se / value`` the log's standard error:
    how every positive statistic is decided, so it never reaches zero). Arrays or
    DataArrays (aligned by their dims); a missing ``se`` is a point value."""
    if hasattr(se, "fillna"):
        se = se.fillna(0.0)
    else:
        se = np.nan_to_num(np.asarray(se, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        f = np.exp(q * se / value)
    return value / f, value * f


def _moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean, the variance (``n - 1``) and the number ``n`` of the finite values of
    ``x`` along its last axis."""
    n = np.isfinite(x).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(x, -1) / n
        return mean, np.nansum((x - mean[..., None]) ** 2, -1) / (n - 1), n


def one_sample(values: np.ndarray) -> Interval:
    """The mean of ``values (..., model)`` over the models with its Student-t standard
    error (``sd / sqrt(n)``, ``n - 1`` df); NaN values are left out (a model without the
    statistic), fewer than 2 models give NaN."""
    mean, var, n = _moments(np.asarray(values, dtype=np.float64))
    with np.errstate(all="ignore"):
        se = np.sqrt(var / n)
    ok = n >= 2
    return Interval(np.where(ok, mean, np.nan), np.where(ok, se, np.nan), np.where(ok, n - 1, 0))


def welch(values: np.ndarray, treated: np.ndarray) -> Interval:
    """``mean(treated) - mean(control)`` of ``values (..., model)`` with Welch's standard
    error and Welch-Satterthwaite df; ``treated`` a boolean per model (it may carry
    leading dims, e.g. one relabelling per row). Fewer than 2 models in a group: NaN."""
    x = np.asarray(values, dtype=np.float64)
    t = np.broadcast_to(np.asarray(treated, bool), x.shape)
    finite = np.isfinite(x)
    (m1, v1, n1), (m0, v0, n0) = (_moments(np.where(g & finite, x, np.nan)) for g in (t, ~t))
    with np.errstate(invalid="ignore", divide="ignore"):
        v1, v0 = v1 / n1, v0 / n0
        se2 = v1 + v0
        df = se2**2 / (v1**2 / (n1 - 1) + v0**2 / (n0 - 1))
    ok = (n1 >= 2) & (n0 >= 2)
    return Interval(
        np.where(ok, m1 - m0, np.nan), np.where(ok, np.sqrt(se2), np.nan), np.where(ok, df, 0)
    )


def fixed_effect(values: np.ndarray, se: np.ndarray, treated=None) -> Interval:
    """The ``"snippets"`` unit of inference: the models as they are, their mean (or the
    difference of the architectures' means with ``treated``) with only the snippet
    uncertainty of each model (``sqrt(sum se^2) / n``, normal); NaN where a model's
    standard error is missing."""
    x = np.asarray(values, dtype=np.float64)
    s = np.broadcast_to(np.asarray(se, dtype=np.float64), x.shape)
    groups = [np.ones(x.shape, bool)] if treated is None else [treated, ~np.asarray(treated)]
    est, var = [], []
    for g in groups:
        g = np.broadcast_to(g, x.shape) & np.isfinite(x)
        n = g.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            est.append(np.where(g, x, 0).sum(-1) / n)
            bad = (g & ~np.isfinite(s)).any(-1) | (n < 1)
            var.append(np.where(bad, np.nan, (np.where(g, s, 0.0) ** 2).sum(-1) / n**2))
    e = est[0] if treated is None else est[0] - est[1]
    v = var[0] if treated is None else var[0] + var[1]
    return Interval(e, np.sqrt(v), np.inf)


def decide(iv: Interval, low: float, high: float, direction: str) -> dict[str, np.ndarray]:
    """The codes of :data:`CODES` for intervals ``iv`` against the boundary ``(low,
    high)`` (on ``iv``'s scale) of a test in ``direction``.

    Returns
    -------
    dict
        ``code`` (str array), ``lower``, ``upper`` (the 90 % interval the decision reads),
        ``p_holds`` (the larger one-sided p of the holding side: significant at
        :data:`ALPHA` when the test holds) and ``p_refuted`` (the same for refuted).
    """
    lower, upper = iv.bounds()
    if direction == "greater":
        p_holds, p_refuted = iv.p_above(low), iv.p_below(low)
    elif direction == "less":
        p_holds, p_refuted = iv.p_below(high), iv.p_above(high)
    elif direction == "within":
        p_holds = np.fmax(iv.p_above(low), iv.p_below(high))  # two one-sided tests
        p_refuted = np.fmin(iv.p_below(low), iv.p_above(high))
    else:
        raise ValueError(f"direction: expected 'greater', 'less' or 'within', got {direction!r}")
    code = np.where(
        ~np.isfinite(p_holds),
        "untestable",
        np.where(p_holds <= ALPHA, "holds", np.where(p_refuted <= ALPHA, "refuted", "undecided")),
    )
    return dict(code=code, lower=lower, upper=upper, p_holds=p_holds, p_refuted=p_refuted)


def combine_cases(codes, p_refuted) -> np.ndarray:
    """A part's code from its cases' (last axis): ``holds`` when every testable case
    holds, ``refuted`` when some case's ``p_refuted <= ALPHA / k`` (Bonferroni over the
    ``k`` testable cases), ``untestable`` when none is testable, else ``undecided``."""
    c = np.asarray(codes)
    p = np.asarray(p_refuted, dtype=np.float64)
    testable = c != "untestable"
    k = testable.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        refuted = (np.where(testable, p, np.inf) <= ALPHA / np.maximum(k, 1)[..., None]).any(-1)
    holds = (k > 0) & (np.where(testable, c == "holds", True)).all(-1)
    return np.where(
        k == 0, "untestable", np.where(holds, "holds", np.where(refuted, "refuted", "undecided"))
    )


def combine_parts(codes) -> np.ndarray:
    """A claim's code from its parts' (last axis).

    With ``h`` parts holding and ``r`` refuted: ``r > h`` -> ``refuted`` (more of the claim
    is refuted than holds, so it does not hold); ``h >= r >= 1`` -> ``partly``; ``r = 0``
    and every testable part holds -> ``holds``; otherwise ``undecided``."""
    c = np.asarray(codes)
    testable = c != "untestable"
    h = (c == "holds").sum(-1)
    r = (c == "refuted").sum(-1)
    all_hold = testable.any(-1) & np.where(testable, c == "holds", True).all(-1)
    return np.where(
        ~testable.any(-1),
        "untestable",
        np.where(
            all_hold,
            "holds",
            np.where(r > h, "refuted", np.where((r >= 1) & (h >= r), "partly", "undecided")),
        ),
    )
