"""Each test's statistic, one value per model, from a zoo's measurements under one reading.

A :class:`Zoo` holds what the tests read for one set of models; :func:`per_model`
computes one test's statistic for every model under one reading as a :class:`Stat`: the
value on the scale the test decides on (the log for a positive statistic) and its
propagated snippet (jackknife) standard error, or why it cannot be formed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ...spectra import effective_rank
from ..measure.evidence import EPS
from ..registry import EARLY, LATE, MIDDLE_LATE, SCALE_AXES, WINDOW_AXES, ClaimTest

__all__ = ["STATISTICS", "Stat", "Zoo", "per_model"]


@dataclass
class Zoo:
    """What the tests read for one zoo (models stacked along ``model``).

    Attributes
    ----------
    evidence
        The models' stacked evidence (dims ``model``, ``layer`` and the readings), with an
        ``architecture`` coordinate on ``model`` and attr ``n_snapshots``.
    convergence
        The convergence study (T_spec and H* at other ensemble sizes) or None.
    pruning
        The pruning study (C6) or None.
    losses
        Validation losses per ``model`` or None.
    groups
        ``{"early", "late", "rest"}``: the layers playing the paper's 1-2, 5-6 and 3-6
        (None: those); other depths use :func:`msapod.studies.measure.llm.depth_groups`.
    treatment, control
        The architecture labels of ``design="architecture"`` tests.
    name
        The zoo's name (for the curve).
    """

    evidence: xr.Dataset
    convergence: xr.Dataset | None = None
    pruning: xr.Dataset | None = None
    losses: xr.DataArray | None = None
    groups: Mapping | None = None
    treatment: str = "ega"
    control: str = "baseline"
    name: str = ""
    _memo: dict = field(default_factory=dict, repr=False)

    @property
    def models(self) -> list[str]:
        return [str(m) for m in self.evidence["model"].values]

    @property
    def n_snapshots(self) -> int:
        return int(self.evidence.attrs.get("n_snapshots", self.evidence.sizes.get("rank", 0)))

    def treated(self) -> np.ndarray:
        """Per model: whether it has the treatment architecture."""
        return self.evidence["architecture"].values.astype(str) == self.treatment

    def layers(self, group: Sequence[int]) -> list[int]:
        """The layers playing the registry's ``group`` in these models."""
        named = {EARLY: "early", LATE: "late", MIDDLE_LATE: "rest"}
        group = tuple(group)
        if self.groups is not None and group in named:
            return list(self.groups[named[group]])
        return list(group)

    def six_layers(self) -> bool:
        return sorted(int(v) for v in self.evidence["layer"].values) == [1, 2, 3, 4, 5, 6]


@dataclass
class Stat:
    """One test's statistic per model (on its decision scale) and its snippet standard
    error; ``reason`` says why it cannot be formed (the values are then NaN)."""

    value: np.ndarray
    se: np.ndarray
    reason: str = ""


def _none(zoo: Zoo, reason: str) -> Stat:
    n = len(zoo.models)
    return Stat(np.full(n, np.nan), np.full(n, np.nan), reason)


def _by_layer(x: xr.DataArray | None, like: np.ndarray | None = None) -> np.ndarray:
    """``x`` as a float ``(model, layer)`` array; NaN shaped as ``like`` for None."""
    if x is None:
        return np.full_like(like, np.nan)
    return x.transpose("model", "layer").values.astype(float)


def _mean_over(x: xr.DataArray, se: xr.DataArray | None, layers, log: bool):
    """Per model the mean over ``layers`` of ``x`` (of ``log x`` with ``log``) and its
    standard error from the per-layer ``se`` (independent layers; NaN without)."""
    x = _by_layer(x.sel(layer=layers))
    s = _by_layer(None if se is None else se.sel(layer=layers), x)
    if log:
        with np.errstate(invalid="ignore", divide="ignore"):
            s, x = s / x, np.log(x)
    return x.mean(1), np.sqrt((s**2).sum(1)) / x.shape[1]


def _reading(reading: Mapping, axes: Sequence[str] = SCALE_AXES) -> dict:
    return {a: reading[a] for a in axes}


def band_share(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """The share of E(a) in the band (``fine``: a <= C1's scale, ``coarse``: a >= C2's),
    mean over the test's layers."""
    ev = zoo.evidence
    name = f"{t.args['band']}_share"
    sel = _reading(reading)
    layers = zoo.layers(t.args["layers"])
    v, s = _mean_over(ev[name].sel(sel), ev[f"{name}_se"].sel(sel), layers, False)
    if not np.isfinite(v).any():
        return _none(zoo, "the scale grid holds no scale of the band")
    return Stat(v, s)


def band_change(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """The change of the band's share from the first layer to the last along its
    least-squares line over every layer: ``(L - 1) sum_l w_l F_l`` with the slope's
    weights ``w_l = (l - lbar) / sum (l - lbar)^2``."""
    ev = zoo.evidence
    name = f"{t.args['band']}_share"
    sel = _reading(reading)
    layers = sorted(int(v) for v in ev["layer"].values)
    if len(layers) < 3:
        return _none(zoo, f"a depth trend needs at least 3 layers, these models have {len(layers)}")
    pos = np.arange(len(layers), dtype=float)
    w = (pos - pos.mean()) / ((pos - pos.mean()) ** 2).sum() * (len(layers) - 1)
    x = ev[name].sel(sel).sel(layer=layers).transpose("model", "layer").values
    s = ev[f"{name}_se"].sel(sel).sel(layer=layers).transpose("model", "layer").values
    return Stat(x @ w, np.sqrt((s**2) @ w**2))


def _pod(zoo: Zoo, reading: Mapping, quantity: str) -> tuple[xr.DataArray, xr.DataArray] | str:
    """T_spec (under the reading's fit) or H* (its criterion) with their standard errors
    at the reading's ensemble size, or why there is none."""
    n = int(reading["n"])
    if n == zoo.n_snapshots:
        axis = "fit" if quantity == "T_spec" else "criterion"
        sel = {axis: reading[axis]}
        return zoo.evidence[quantity].sel(sel), zoo.evidence[f"{quantity}_se"].sel(sel)
    conv = zoo.convergence
    if conv is None or n not in conv["n"].values:
        return f"no ensemble of N = {n} (the convergence study did not run on this zoo)"
    c = conv.sel(n=n)
    if quantity == "T_spec":
        name = "T_spec" if reading["fit"] == "default" else "T_spec_fixed"
        return c[name], c[f"{name}_se"]
    if reading["criterion"] == "energy":
        return c["H_star"].sel(eps=EPS), c["H_star_se"].sel(eps=EPS)
    lam = c["spectrum"].sel(rank=slice(1, n)).fillna(0.0)
    H = effective_rank(lam, EPS, "l2", n_snapshots=n).reset_coords(drop=True)
    return H.astype(float), None


def _quantity(zoo: Zoo, reading: Mapping, quantity: str):
    if quantity == "energy":
        sel = _reading(reading)
        return zoo.evidence["energy"].sel(sel), zoo.evidence["energy_se"].sel(sel)
    return _pod(zoo, reading, quantity)


def _named_layers(zoo: Zoo, t: ClaimTest, *keys: str) -> str:
    """Why a test that names layers of the paper's 6-layer model cannot run ("" if it can)."""
    named = {int(v) for k in keys for v in np.atleast_1d(t.args[k])}
    if named <= {int(v) for v in zoo.evidence["layer"].values} and (
        zoo.six_layers() or zoo.groups is not None
    ):
        return ""
    return f"the claim names layers of the paper's 6-layer model ({sorted(named)})"


def level(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """The quantity (T_spec, H* or the scalogram energy) over the test's layers: the mean
    of its logarithm (the log of the geometric mean). H* cannot exceed ``N - 1``: a test
    whose boundary lies at or above it cannot pass and is not formed."""
    q = t.args["quantity"]
    layers = zoo.layers(t.args["layers"])
    if t.args["layers"] not in (EARLY, LATE, MIDDLE_LATE) and (
        why := _named_layers(zoo, t, "layers")
    ):
        return _none(zoo, why)
    got = _quantity(zoo, reading, q)
    if isinstance(got, str):
        return _none(zoo, got)
    if q == "H_star" and t.direction == "greater":
        ceiling = int(reading["n"]) - 1
        if t.boundary()[0] >= ceiling:
            return _none(
                zoo,
                f"H* ≤ N − 1 = {ceiling} by construction: the bound {t.reference:g} "
                f"needs N ≥ {int(t.reference) + 2} snippets",
            )
    return Stat(*_mean_over(*got, layers, t.log))


def ratio(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """``log`` of the quantity's geometric mean over the numerator layers over that of the
    denominator layers."""
    got = _quantity(zoo, reading, t.args["quantity"])
    if isinstance(got, str):
        return _none(zoo, got)
    num, s_num = _mean_over(*got, zoo.layers(t.args["numerator"]), True)
    den, s_den = _mean_over(*got, zoo.layers(t.args["denominator"]), True)
    return Stat(num - den, np.sqrt(s_num**2 + s_den**2))


def lag_enrichment(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """C4: mode 1's share of lag energy inside the paper's lags of its layer, minus the
    share the window alone puts there (in windows on the paper's lags, or in the window
    of the dominant scale)."""
    layer = int(t.args["layer"])
    if why := _named_layers(zoo, t, "layer"):
        return _none(zoo, why)
    ev = zoo.evidence
    at = {"layer": layer, "paper_layer": layer}
    if reading["c4_window"] == "range":
        share, base = ev["c4_range_share"], ev["c4_range_base"]
        se = ev.get("c4_range_diff_se")
        sel = {"width": reading["width"]}
    else:
        share, base, se = ev["c4_share"], ev["c4_base"], ev.get("c4_diff_se")
        sel = _reading(reading, WINDOW_AXES)
    value = (share - base).sel(at).sel(sel)
    s = se.sel(at).sel(sel).values if se is not None else np.full(value.shape, np.nan)
    return Stat(value.transpose("model").values.astype(float), np.asarray(s, float))


def spread_ratio(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """C9: per model the mean of ``log D`` over the layers that have a window (a
    spectrum whose dominant scale sits at the grid's edge has none under the ``peak``
    reading); NaN for a model without one."""
    ev = zoo.evidence
    sel = _reading(reading, WINDOW_AXES)
    D = _by_layer(ev["c9_ratio"].sel(sel))
    se = ev.get("c9_ratio_se")
    S = _by_layer(None if se is None else se.sel(sel), D)
    with np.errstate(invalid="ignore", divide="ignore"):
        logD, logS = np.log(D), S / D
        k = np.isfinite(logD).sum(1)
        value = np.where(k > 0, np.nansum(logD, 1) / k, np.nan)
        s = np.sqrt(np.nansum(np.where(np.isfinite(logD), logS**2, 0.0), 1)) / k
    if not (k > 0).any():
        return _none(zoo, "no layer of any model has a window under this reading")
    return Stat(value, s)


def _pruning(zoo: Zoo) -> xr.Dataset | str:
    if zoo.pruning is None:
        return "the pruning study did not run on this zoo"
    return zoo.pruning.sel(model=zoo.models)


def depth_pruning(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """C6's depth test: the loss increase of removing ``budget`` heads at random inside
    the early layers minus inside the late layers (mean over draws), nats/char; its
    standard error from the spread over draws."""
    ds = _pruning(zoo)
    if isinstance(ds, str):
        return _none(zoo, ds)
    if "depth_loss_increase" not in ds:
        return _none(zoo, "the pruning study holds no depth test (made before it)")
    inc = ds["depth_loss_increase"].sel(depth_budget=t.args["budget"])
    early, late = (
        inc.sel(group=g).transpose("model", "depth_draw").values for g in ("early", "late")
    )
    n = early.shape[1]
    se = np.sqrt(early.var(1, ddof=1) / n + late.var(1, ddof=1) / n)
    return Stat(early.mean(1) - late.mean(1), se)


def guided_pruning(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """C6's guide test: the loss increase of random removal (mean over draws) minus that
    of the H*-guided strategy at the same budget (mean over its draws), nats/char."""
    ds = _pruning(zoo)
    if isinstance(ds, str):
        return _none(zoo, ds)
    inc = ds["loss_increase"].sel(budget=t.args["budget"])
    rnd = inc.sel(strategy="random").transpose("model", "draw").values
    gd = inc.sel(strategy=t.args["strategy"]).transpose("model", "draw").values

    def mean_var(x):  # the mean over a strategy's draws and its variance (0: one draw)
        n = np.isfinite(x).sum(1)
        m = np.nansum(x, 1) / n
        ss = np.nansum((x - m[:, None]) ** 2, 1)
        return m, np.where(n > 1, ss / np.maximum(n - 1, 1) / n, 0.0)

    (mr, vr), (mg, vg) = mean_var(rnd), mean_var(gd)
    return Stat(mr - mg, np.sqrt(vr + vg))


def loss(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """The validation loss per model (nats/char; no snippet standard error)."""
    if zoo.losses is None:
        return _none(zoo, "no validation losses")
    v = zoo.losses.sel(model=zoo.models).values.astype(float)
    return Stat(v, np.full(v.shape, np.nan))


#: The statistics by the name the registry's tests give.
STATISTICS = {
    "band_share": band_share,
    "band_change": band_change,
    "level": level,
    "ratio": ratio,
    "lag_enrichment": lag_enrichment,
    "spread_ratio": spread_ratio,
    "depth_pruning": depth_pruning,
    "guided_pruning": guided_pruning,
    "loss": loss,
}


def per_model(zoo: Zoo, reading: Mapping, t: ClaimTest) -> Stat:
    """ClaimTest ``t``'s statistic per model of ``zoo`` under ``reading``, memoised on the
    zoo by the reading's axes the statistic reads."""
    key = (
        t.statistic,
        repr(sorted(t.args.items())),
        t.direction,
        t.reference,
        repr(sorted(reading.items())),
    )
    if key not in zoo._memo:
        try:
            zoo._memo[key] = STATISTICS[t.statistic](zoo, reading, t)
        except KeyError as err:  # evidence made without this statistic's measurement
            zoo._memo[key] = _none(zoo, f"the evidence has no {err.args[0]}")
    return zoo._memo[key]
