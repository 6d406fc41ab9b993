"""The joint test over a claim's specification curve (Simonsohn, Simmons & Nelson 2020).

Does the curve as a whole lean for or against a claim more than chance would give? For a
claim, the **effects** are its tests' zoo-level estimates under every reading of the main
zoo (unit of inference: the seeds), each as a deviation from the test's reference (the
value of no effect), signed so that positive supports the claim; ``"within"`` tests have
no direction and stay out. The statistics (:func:`curve_statistics`): the **median
effect**, the **shares significant for** and **against** the claim (one-sided p < 0.05)
and **Stouffer's Z** ``sum_k z_k / sqrt(K)`` of the effects' one-sided p-values.

Their null distributions re-decide the whole curve, from the per-model values it holds,
under every relabelling exchangeable when the effect is absent (:func:`relabellings`):
**sign flips** of each model's deviation (``design="models"``; for C9 this swaps the
windowed and the plain mode, for a contrast the two layer groups) or the **architecture
labels** with the group sizes kept (``design="architecture"``, 70 for 4 + 4 models). With
``T_0`` observed and ``T_b`` under relabelling ``b``, the two-sided p is ``min(1, 2
min(#{T_b >= T_0}, #{T_b <= T_0}) / B)``; a statistic that no relabelling moves is
**uninformative** (not p = 1). The sentence reads the registry's
:data:`msapod.studies.registry.JOINT_STATISTIC`.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import xarray as xr
from scipy import special

from ..registry import JOINT_STATISTIC, REGISTRY
from .inference import ALPHA, one_sample, welch

__all__ = [
    "MAX_EXACT",
    "NUM_RANDOM",
    "STATISTICS",
    "curve_statistics",
    "joint_tests",
    "relabellings",
]

#: The curve's statistics, in the order they are reported.
STATISTICS = ("median_effect", "share_for", "share_against", "stouffer_z")
#: The largest number of relabellings enumerated (2^8 sign flips, C(8, 4) labels).
MAX_EXACT = 4096
#: Random relabellings beyond :data:`MAX_EXACT` (smallest two-sided p 2/1000).
NUM_RANDOM = 999


def relabellings(design: str, treated: np.ndarray, seed: int = 0) -> tuple[np.ndarray, bool]:
    """The relabellings of ``design``, row 0 the observed one: sign flips ``(B, M)`` of
    +-1 (``"models"``) or treatment masks ``(B, M)`` with the observed group sizes
    (``"architecture"``); and whether they are every one."""
    M = len(treated)
    if design == "models":
        if 2**M <= MAX_EXACT:
            return np.array(list(itertools.product((1.0, -1.0), repeat=M))), True
        rng = np.random.default_rng(seed)
        draws = rng.choice((1.0, -1.0), size=(NUM_RANDOM, M))
        return np.vstack([np.ones(M), draws]), False
    k = int(np.sum(treated))
    if math.comb(M, k) <= MAX_EXACT:
        rows = [np.isin(np.arange(M), c) for c in itertools.combinations(range(M), k)]
        observed = np.asarray(treated, bool)
        rows.sort(key=lambda r: not np.array_equal(r, observed))
        return np.array(rows), True
    rng = np.random.default_rng(seed)
    rows = [np.asarray(treated, bool)] + [
        np.isin(np.arange(M), rng.choice(M, k, replace=False)) for _ in range(NUM_RANDOM)
    ]
    return np.array(rows), False


def curve_statistics(estimate, se, df, sign) -> dict[str, np.ndarray]:
    """The statistics of curves of effects ``(..., K)``: estimates (deviations from the
    reference), their standard errors and df, and the claimed sign per effect (+1 or -1);
    NaN effects left out."""
    e = np.asarray(estimate) * sign
    ok = np.isfinite(e) & np.isfinite(se) & (np.asarray(df) >= 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(ok, e / np.where(se > 0, se, np.nan), np.nan)
        d = np.where(ok, df, np.nan)
        p_for = special.stdtr(d, -t)
        p_against = special.stdtr(d, t)
        k = ok.sum(-1)
        z = -special.ndtri(np.clip(p_for, 1e-300, 1 - 1e-16))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a curve without a finite effect
        return {
            "median_effect": np.nanmedian(np.where(ok, e, np.nan), -1),
            "share_for": np.where(ok, p_for < ALPHA, False).sum(-1) / np.maximum(k, 1),
            "share_against": np.where(ok, p_against < ALPHA, False).sum(-1) / np.maximum(k, 1),
            "stouffer_z": np.where(ok, z, 0.0).sum(-1) / np.sqrt(np.maximum(k, 1)),
        }


def _p_two_sided(null: np.ndarray) -> tuple[float, bool]:
    """The two-sided permutation p of row 0 and whether the statistic moves at all (ties
    to a relative 1e-12)."""
    if not np.isfinite(null[0]):
        return np.nan, False
    tol = 1e-12 * max(1.0, float(np.nanmax(np.abs(null))))
    ok = np.isfinite(null)
    moves = bool(np.ptp(null[ok]) > tol) if ok.sum() > 1 else False
    up = (np.where(ok, null >= null[0] - tol, False)).mean()
    down = (np.where(ok, null <= null[0] + tol, False)).mean()
    return float(min(1.0, 2 * min(up, down))), moves


def _claim_joint(ds: xr.Dataset, claim: str, zoo: str) -> dict | None:
    """The joint test of one claim on one zoo's curve (None: no effects to relabel)."""
    c = REGISTRY[claim]
    tests = [
        t
        for t in ds["test"].values
        if ds["test_claim"].sel(test=t) == claim and ds["test_direction"].sel(test=t) != "within"
    ]
    specs = (
        ds["applicable"].sel(claim=claim).values
        & (ds["zoo"].values == zoo)
        & (ds["unit"].values == "seeds")
    )
    models = ds["model"].values[ds["model_zoo"].values == zoo]
    if not tests or not specs.any():
        return None
    sub = ds.sel(test=tests, model=models).isel(spec=np.flatnonzero(specs))
    x = sub["value"].transpose("test", "spec", "model").values  # decision scale
    refs, logs = sub["test_reference"].values, sub["test_log"].values
    ref = np.array([np.log(r) if lg else r for r, lg in zip(refs, logs, strict=True)])
    sign = np.where(sub["test_direction"].values == "less", -1.0, 1.0)
    dev = (x - ref[:, None, None]).reshape(-1, len(models))  # (K, M)
    sgn = np.repeat(sign, x.shape[1])
    keep = np.isfinite(dev).any(-1)
    dev, sgn = dev[keep], sgn[keep]
    if not len(dev):
        return None
    treated = sub["architecture"].values == "ega"
    rows, exact = relabellings(c.design, treated)
    if c.design == "models":
        iv = one_sample(rows[:, None, :] * dev[None])  # (B, K)
    else:
        iv = welch(np.broadcast_to(dev[None], (len(rows), *dev.shape)), rows[:, None, :])
    null = curve_statistics(iv.estimate, iv.se, iv.df, sgn)
    out = dict(n_relabellings=len(rows), exact=exact, n_effects=len(dev), n_specs=int(specs.sum()))
    for s in STATISTICS:
        out[s] = float(null[s][0])
        out[f"{s}_p"], out[f"{s}_informative"] = _p_two_sided(null[s])
    return out


def joint_tests(ds: xr.Dataset, zoo: str | None = None) -> xr.Dataset:
    """The joint test of every claim on ``zoo``'s curve (default the main zoo) of the
    curve Dataset ``ds`` (:func:`.curve.assemble`): per claim and statistic ``joint``
    (observed), ``joint_p`` (two-sided), ``joint_informative``; per claim
    ``joint_relabellings``, ``joint_exact``, ``joint_effects``, ``joint_specs``,
    ``joint_null`` (the relabelling, or "" without a test) and ``joint_reads``."""
    zoo = zoo or str(ds.attrs["main_zoo"])
    claims = list(ds["claim"].values)
    n = len(claims)
    val, p = np.full((n, 4), np.nan), np.full((n, 4), np.nan)
    info = np.zeros((n, 4), bool)
    meta = {k: np.zeros(n, int) for k in ("relabellings", "effects", "specs")}
    exact, null = np.zeros(n, bool), np.full(n, "", dtype=object)
    for i, claim in enumerate(claims):
        got = None if REGISTRY[claim].no_joint else _claim_joint(ds, claim, zoo)
        if got is None:
            continue
        for k, s in enumerate(STATISTICS):
            val[i, k], p[i, k], info[i, k] = got[s], got[f"{s}_p"], got[f"{s}_informative"]
        for k in meta:
            meta[k][i] = got[f"n_{k}"]
        exact[i] = got["exact"]
        null[i] = "sign flips" if REGISTRY[claim].design == "models" else "architecture labels"
    dims = ("claim", "statistic")
    return xr.Dataset(
        {
            "joint": (dims, val),
            "joint_p": (dims, p),
            "joint_informative": (dims, info),
            **{f"joint_{k}": ("claim", v) for k, v in meta.items()},
            "joint_exact": ("claim", exact),
            "joint_null": ("claim", null.astype(str)),
        },
        coords={"claim": claims, "statistic": list(STATISTICS)},
        attrs={"joint_zoo": zoo, "joint_reads": JOINT_STATISTIC[0]},
    )
