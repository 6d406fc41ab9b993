"""Figures and sentences of the book's pages that are longer than a page's cell.

A page hides the code of its figures (tag ``hide-input``); a student who opens the page
as a notebook reads that code too, so each long one lives here, as one function per
figure or sentence, called from the page in a line or two. Each takes what the page has
already computed (the shipped results, a live illustration) and draws or writes it, with
the book's style (:mod:`msapod.plots`); none computes a claim's number or verdict (the
rules of :mod:`msapod.studies.verdict` do).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from msapod_book import plots


def _colour(k: int) -> str:
    """The ``k``-th colour of the book's palette (:data:`msapod.plots.CATEGORY_COLOURS`),
    as a colour, not a ``"Ck"`` name: matplotlib resolves a name when the figure is drawn,
    from the colour cycle in force then, which need not be the book's."""
    return plots.CATEGORY_COLOURS[k % len(plots.CATEGORY_COLOURS)]


def _need(name: str, data, keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise KeyError(f"{name}: expected {', '.join(map(repr, missing))} in it")


def window_panels(ds: xr.Dataset, lags: np.ndarray, *, min_reach: float = 24.0):
    """Page 4: per layer, the energy ``E(a*_m, b)`` of each dominant scale along the lag
    (solid) and the window ``w_m(b)`` built around it (dashed), both scaled to a maximum
    of 1, one colour per window.

    ``ds`` is one model of the zoo analysis (``window_centre``, ``window_width``,
    ``window_scale`` over ``layer`` and ``window``; ``energy`` over ``layer``, ``scale``,
    ``lag``); the lag axis reaches at least ``min_reach`` characters and 3.5 widths past
    the farthest window centre.
    """
    from msapod import lag_window

    _need("ds", ds, ("window_centre", "window_width", "window_scale", "energy"))
    windows = [w for w in ds["window"].values if w != "plain"]
    fig, axes = plots.panels(ds.sizes["layer"], height=2.0, sharey=True)
    with plots.style():
        for ax, layer in zip(axes, ds["layer"].values, strict=False):
            reach = min_reach
            for k, w in enumerate(windows):
                p = ds.sel(layer=layer, window=w)
                a, c = float(p["window_scale"]), float(p["window_centre"])
                sigma = float(p["window_width"])
                if not np.isfinite(a):
                    continue
                e = ds["energy"].sel(layer=layer).sel(scale=a, method="nearest")
                label = f"$m = {k + 1}$"
                ax.plot(lags, e / e.max(), color=_colour(k), label=f"{label}: $E(a^*_m, b)$")
                ax.plot(
                    lags,
                    lag_window(lags, c, sigma),
                    color=_colour(k),
                    ls="--",
                    label=f"{label}: $w_m(b)$",
                )
                reach = max(reach, c + 3.5 * sigma)
            ax.set(xlim=(0, min(reach, float(np.max(lags)))), title=f"layer {layer}")
            ax.set_xlabel("lag $b$ (characters)")
            ax.set_ylabel("energy / max, window")
        plots.outer_labels(axes)
        handles, labels = max(axes, key=lambda a: len(a.lines)).get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=3)
    return fig


def theorem1_panels(
    ranks,
    tail,
    reconstruction,
    k_test,
    random_err,
    half_err,
    pod_err,
    total: float,
    *,
    n: int,
    layer: int,
    rng: np.random.Generator,
    model: str,
):
    """Page 5: Theorem 1 on one layer of ``model``. Top: the POD reconstruction error
    against the rank ``ranks`` (dots) on the eigenvalue tail (grey line). Bottom: the
    error, as a share of ``total``, of the POD modes (``pod_err``), of the modes of the
    other half of the snapshots (``half_err``) and of random orthonormal bases
    (``random_err``, one row per basis, jittered along the rank with ``rng``), at the
    ranks ``k_test``."""
    random_err = np.asarray(random_err, dtype=float)
    if random_err.ndim != 2 or random_err.shape[1] != len(k_test):
        raise ValueError(
            f"random_err: expected (bases, {len(k_test)} ranks), got {random_err.shape}"
        )
    fig, axes = plots.panels(2, ncols=1, height=2.4)
    ax = axes[0]
    ax.plot(ranks, tail, "k-", lw=3, alpha=0.35, label=r"$\sum_{k>K}\lambda_k$")
    ax.plot(ranks, reconstruction, "C0.", label="reconstruction_error (POD modes)")
    ax.set(
        xlabel="rank $K$ (modes kept)",
        ylabel="mean squared error",
        title=f"{model}, layer {layer} ($N$ = {n}): Theorem 1",
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
    ax = axes[1]
    n_bases = random_err.shape[0]
    for j, k in enumerate(k_test):
        jitter = np.exp(rng.uniform(-0.06, 0.06, n_bases))
        ax.plot(
            np.full(n_bases, k) * jitter,
            random_err[:, j] / total,
            ".",
            color="0.6",
            ms=3,
            label=f"{n_bases} random bases" if j == 0 else None,
        )
    ax.plot(
        k_test,
        np.asarray(half_err) / total,
        "s-",
        color=_colour(1),
        label=f"POD modes of snapshots {n // 2}-{n - 1}",
    )
    ax.plot(
        k_test, np.asarray(pod_err) / total, "o-", color=_colour(0), label="POD modes (optimal)"
    )
    ax.set(
        xscale="log",
        xlabel="rank $K$ (modes kept)",
        ylabel="error / total energy",
        title="competing orthonormal bases",
        ylim=(0, 1.05),
    )
    plots.log_ticks(ax)
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
    return fig


def mode_lag_panels(
    shown: Mapping[str, tuple[str, xr.DataArray]],
    layers: Sequence[int],
    paper_lags: Mapping[int, tuple[float, float]],
    lag_max: int,
):
    """Page 5: the lag profile (mean over the queries) of the first two POD modes, plain
    (black) and per scale window (colours), for ``layers`` of one model per architecture
    (``shown``: architecture -> (model, modes over ``window``, ``mode``, ``layer``,
    ``query``, ``lag``)); grey band: the lag range the paper gives for the layer."""
    fig, flat = plots.panels(len(shown) * len(layers), height=2.2, sharex=True)
    for r, (name, modes) in enumerate(shown.values()):
        for c, layer in enumerate(layers):
            ax = flat[r * len(layers) + c]
            ax.axvspan(*paper_lags[layer], color="0.85", label="paper's lag range")
            for n, w in enumerate(modes["window"].values):
                for k, ls in ((1, "-"), (2, "--")):
                    prof = modes.sel(layer=layer, window=w, mode=k).mean("query")
                    if float(abs(prof).max()) == 0:
                        continue
                    colour = "k" if w == "plain" else _colour(n - 1)
                    ax.plot(
                        prof["lag"], prof, ls=ls, color=colour, lw=1.2, label=f"{w} $\\phi_{k}$"
                    )
            ax.axhline(0, color="0.5", lw=0.5)
            ax.set(title=f"{name}, layer {layer}", xlim=(0, lag_max - 1))
            ax.set_xlabel(plots.LABELS["lag"])
            ax.set_ylabel(r"mean over $i$ of $\phi_k$")
    plots.outer_labels(flat)
    plots.legend_below(fig, flat)
    return fig


#: page 5's markers of the scale windows (open circles: the plain POD)
WINDOW_MARKERS = {"scale-1": "^", "scale-2": "v", "scale-3": "s"}


def spread_panels(
    models: Sequence[str],
    plain_lag: xr.DataArray,
    window_lag: xr.DataArray,
    plain_scale: xr.DataArray,
    window_scale: xr.DataArray,
):
    """Page 5: the lag spread (left, logarithmic) and the scale spread (right) of the
    leading mode per layer and model: open circles the plain POD (``plain_*``: over
    ``model`` and ``layer``), filled markers the scale windows (``window_*``: also over
    ``window``); one colour per architecture."""
    from matplotlib.lines import Line2D

    fig, axes = plots.panels(2, height=2.8)
    layers = plain_lag["layer"].values
    for n, name in enumerate(models):
        off = (n - (len(models) - 1) / 2) * 0.1
        col = plots.colour(name)
        first = n == 0 or name.endswith("-1")
        for ax, pv, wv in ((axes[0], plain_lag, window_lag), (axes[1], plain_scale, window_scale)):
            ax.plot(
                layers + off,
                pv.sel(model=name),
                "o",
                mfc="none",
                color=col,
                label=plots.architecture(name) if first else "_",
            )
            for w in wv["window"].values:
                ax.plot(
                    layers + off,
                    wv.sel(model=name, window=w),
                    WINDOW_MARKERS.get(str(w), "x"),
                    color=col,
                    ms=5,
                    label="_",
                )
    axes[0].set(
        yscale="log",
        xlabel="layer $l$",
        ylabel=r"lag spread of $\phi_1$ (characters)",
        title="spread in lag",
    )
    plots.log_ticks(axes[0])
    axes[1].set(
        xlabel="layer $l$", ylabel=r"scale spread of $\phi_1$ (octaves)", title="spread in scale"
    )
    keys = [Line2D([], [], color="0.3", marker="o", mfc="none", ls="none")]
    keys += [Line2D([], [], color="0.3", marker=m, ls="none") for m in WINDOW_MARKERS.values()]
    keys += [Line2D([], [], color=c, lw=3) for c in plots.ARCH_COLOURS.values()]
    names = ["plain POD", *WINDOW_MARKERS, *plots.ARCH_COLOURS]
    fig.legend(keys, names, loc="outside lower center", ncol=6)
    return fig


def coherency_panels(curves: Mapping[int, Mapping], fixed: Sequence[float]):
    """Page 6: per layer, the mean coherency against the row separation at the fixed
    scales ``fixed`` (dashed) and at the layer's dominant scales (solid), with each
    scale's null level (dotted). ``curves``: layer -> {``"curve"``: over ``scale`` and
    ``separation``, ``"null"``: per scale}."""
    fixed_colours = dict(zip(fixed, (_colour(0), _colour(3)), strict=False))
    fig, axes = plots.panels(len(curves), height=2.1, sharex=True, sharey=True)
    with plots.style():
        for ax, (layer, c) in zip(axes, curves.items(), strict=False):
            _need(f"curves[{layer}]", c, ("curve", "null"))
            scales = c["curve"]["scale"].values
            dominant = [a for a in scales if not np.isclose(a, fixed).any()]
            for a in scales:
                if np.isclose(a, fixed).any():
                    col = fixed_colours.get(float(a), _colour(0))
                    ls, label = "--", f"$a = {a:g}$ (fixed)"
                else:
                    m = dominant.index(a)  # by scale, finest first (the title gives them)
                    rank = ("finest", "second finest", "third finest")[m % 3]
                    col, ls, label = _colour((1, 2, 4)[m % 3]), "-", f"dominant $a^*$, {rank}"
                curve = c["curve"].sel(scale=a)
                ax.plot(c["curve"]["separation"], curve, color=col, ls=ls, label=label)
                ax.axhline(c["null"].loc[a], color=col, ls=":", lw=1)
            ax.set(
                xscale="log",
                yscale="log",
                ylim=(1e-3, 1),
                title=f"layer {layer}: $a^*$ = {plots.enumeration(dominant, 2)}",
            )
            plots.log_ticks(ax)
            ax.set_xlabel(plots.LABELS["separation"])
            ax.set_ylabel(r"mean $\gamma_{ij}(a)$")
        plots.outer_labels(axes)
        plots.legend_below(fig, axes, ncol=3)
    return fig


def training_panels(
    logs: Mapping[str, Mapping], config, lr_at: Callable[[object, int], float], target: float
):
    """Page 10: the learning-rate schedule of ``config`` (``lr_at(config, step)``), and
    the training and validation losses of each model's log (``logs``: model -> a
    ``log.json`` with ``steps``, ``train_loss``, ``val_loss``), with the target loss."""
    for m, log in logs.items():
        _need(f"logs[{m!r}]", log, ("steps", "train_loss", "val_loss"))
    fig, axes = plots.panels(3, height=2.6)
    with plots.style():
        steps = np.arange(config.steps)
        axes[0].plot(steps, [lr_at(config, int(s)) for s in steps], color="k")
        axes[0].set(xlabel="step", ylabel="learning rate", title="schedule (all models)")
        for m, log in logs.items():
            st = plots.model_style(m)
            for ax, key in zip(axes[1:], ("train_loss", "val_loss"), strict=True):
                ax.plot(log["steps"], log[key], color=st["color"], ls=st["ls"], label=m)
        for ax, what in zip(axes[1:], ("training", "validation"), strict=True):
            ax.axhline(target, color="0.5", lw=0.8, ls=":", label=f"target {target}")
            ax.set(
                xlabel="step",
                ylabel=rf"{what} $\mathcal{{L}}$ (nats/char)",
                title=f"{what} loss",
                xlim=(0, config.steps),
            )
        handles, labels = axes[2].get_legend_handles_labels()  # 4 a row: the figure's width
        fig.legend(handles, labels, loc="outside lower center", ncol=4)
    return fig


def convergence_panels(conv: xr.Dataset):
    """Page 11: ``H*`` against the ensemble size ``N`` per criterion ``eps`` (one panel
    each), one line per layer (mean ± sd over models), with the ceiling ``N - 1``."""
    _need("conv", conv, ("H_star", "n"))
    ns = conv["n"].values
    fig, axes = plots.panels(conv.sizes["eps"], height=2.6, sharex=True)
    for ax, eps in zip(axes, conv["eps"].values, strict=False):
        H = conv["H_star"].sel(eps=eps)
        for n, layer in enumerate(conv["layer"].values):
            h = H.sel(layer=layer)
            ax.errorbar(
                ns,
                h.mean("model"),
                yerr=h.std("model"),
                ms=4,
                capsize=2,
                label=f"layer {layer}",
                **plots.category_style(n),
            )
        ax.plot(ns, ns - 1, "k--", lw=1, label="ceiling N − 1")
        ax.set(xscale="log", yscale="log", xlabel="$N$ (snippets)", title=f"$H^*({eps:g})$")
        plots.log_ticks(ax, "y")
        ax.minorticks_off()  # plain labels on the log axes
        ax.set_xticks(ns, [str(n) for n in ns])
    axes[0].set_ylabel(f"$H^*$ (mean ± sd, {conv.sizes['model']} models)")
    plots.legend_below(fig, axes)
    return fig


def pruning_panels(
    increase: xr.DataArray,
    strategies: Sequence[str],
    randomised: Sequence[str],
    n_heads: int,
    *,
    reference: str = "random",
):
    """Page 12. Top: the loss increase after pruning per budget and strategy (mean and sd
    over models; faint dots the models; wide thin caps the spread over random draws).
    Bottom: each strategy minus ``reference`` with ± 2 standard errors over models.

    ``increase`` is over ``strategy``, ``budget``, ``model`` and ``draw`` (one draw, or
    NaN beyond the first, for a deterministic strategy)."""
    dm = increase.mean("draw")
    budgets = [int(b) for b in increase["budget"].values]
    fig, axes = plots.panels(2, ncols=1, height=2.6)
    styles = {st: plots.category_style(n) for n, st in enumerate(strategies)}
    width = 0.6
    for k, st in enumerate(strategies):
        x = np.array(budgets) + (k - (len(strategies) - 1) / 2) * width
        y = dm.sel(strategy=st)
        colour = styles[st]["color"]
        for m in y["model"].values:
            axes[0].plot(x, y.sel(model=m), ".", color=colour, alpha=0.35, ms=5)
        mean = y.mean("model")
        axes[0].errorbar(
            x, mean, yerr=y.std("model", ddof=1), fmt="-", capsize=3, label=st, lw=1, **styles[st]
        )
        if st in randomised:  # spread over draws, pooled over models (thin, wide caps)
            sd = increase.sel(strategy=st).std("draw", ddof=1).mean("model")
            axes[0].errorbar(x, mean, yerr=sd, fmt="none", color=colour, capsize=6, lw=0.6)
    axes[0].set(
        xlabel=f"heads removed (of {n_heads})",
        ylabel="loss increase\n(nats/char)",
        xticks=budgets,
        title="mean ± sd over models; dots: models",
    )
    ref = dm.sel(strategy=reference)
    for k, st in enumerate(s for s in strategies if s != reference):
        d = dm.sel(strategy=st) - ref
        se = d.std("model", ddof=1) / np.sqrt(d.sizes["model"])
        axes[1].errorbar(
            np.array(budgets) + (k - 2) * width,
            d.mean("model"),
            yerr=2 * se,
            capsize=3,
            label=st,
            ls="none",
            **styles[st],
        )
    axes[1].axhline(0, color="0.3", lw=0.8)
    axes[1].set(
        xlabel=f"heads removed (of {n_heads})",
        xticks=budgets,
        ylabel=f"minus {reference}'s\n(nats/char)",
        title=f"difference to {reference} pruning, mean ± 2 SE over models",
    )
    for ax in axes:
        ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
    return fig


def rank_sentence(
    H: xr.DataArray, at_ceiling: int, n_snapshots: int, tied: float, n_heads: int, slope: float
) -> str:
    """Page 12: what the per-head effective ranks ``H`` (over ``model``, ``layer``,
    ``head``) show: their range, how many sit at the ceiling ``N - 1``, how many share
    their integer value (``tied``, mean per model), and which layers have the lower rank
    (``slope``: the least-squares change of the head-averaged ``H*`` per layer)."""
    deep_low, flat = slope < 0, abs(slope) < 1.0
    trend = (
        "**no layer trend** (under one mode per layer)"
        if flat
        else f"the **{'deep' if deep_low else 'early'} layers have the lower effective rank**"
    )
    text = (
        f"Per-head $H^*(0.10)$ ranges from {int(H.min())} to {int(H.max())} over the "
        f"{H.size} heads of the {H.sizes['model']} models; {at_ceiling} of them sit at the "
        f"ceiling $N - 1 = {n_snapshots - 1}$; still, {tied:.0f} of the {n_heads} heads of a "
        "model (mean over models) share their integer $H^*$ with another head, and the "
        "captured-energy tie-break orders those. The head-averaged $H^*$ changes by "
        f"{slope:+.1f} modes per layer with depth (least-squares slope over models): here "
        f"{trend}"
    )
    if not (deep_low or flat):
        text += (
            ", the opposite of the paper's C5 premise, so `low-H*` removes heads mostly in "
            "the early layers — where C6 says heads are *missing*"
        )
    return text + (
        ". Whatever the layer pattern, the test below asks the question C6 rests on: does "
        "a low $H^*$ mark heads that can go?"
    )


def depth_sentence(mid: Mapping[str, float], n_heads: int, apart: float = 1.0) -> str:
    """Page 12: at one budget (``mid``, a row of ``budget_contrasts``' ``per_budget``:
    the budget, each strategy's loss increase and the mean layer of the heads the two
    ``H*`` strategies remove), whether the ``H*`` ranking is a depth ranking (the two
    strategies' mean layers at least ``apart`` layers apart), which end the deep heads
    are at, and what removing the deep or the early heads costs against random removal:
    C6's premise (deep heads have a low ``H*``) and its conclusion (deep heads are the
    dispensable ones) judged separately."""
    _need(
        "mid",
        mid,
        ("budget", "low_H", "high_H", "random", "importance", "low_H_mean_layer"),
    )
    lo_layer, hi_layer = mid["low_H_mean_layer"], mid["high_H_mean_layer"]
    text = (
        f"At {mid['budget']} of {n_heads} heads, `low-H*` removes heads from layer "
        f"{lo_layer:.1f} on average and `high-H*` from layer {hi_layer:.1f}. "
    )
    if abs(hi_layer - lo_layer) < apart:
        return text + (
            "The $H^*$ ranking is not a depth ranking in this zoo (the two ends remove heads "
            f"of mean layers less than {apart:g} apart), so this ablation cannot separate "
            "C6's premise about depth from its conclusion."
        )
    deep, early = ("high_H", "low_H") if hi_layer > lo_layer else ("low_H", "high_H")
    premise = deep == "low_H"
    cheap = mid[deep] < mid["random"] and mid[deep] < mid[early]
    than_importance = "less" if mid[deep] < mid["importance"] else "more"
    text += (
        f"The $H^*$ ranking is thus roughly a depth ranking, with the **deep** layers at the "
        f"**{'low' if premise else 'high'}** end. Removing the deep heads costs "
        f"{mid[deep]:+.3f} nats, {'less' if mid[deep] < mid['random'] else 'more'} than random "
        f"removal ({mid['random']:+.3f}) and {than_importance} than pruning by Michel "
        f"importance ({mid['importance']:+.3f}); removing the early heads costs "
        f"{mid[early]:+.3f}. "
    )
    said = {
        (True, True): "Both C6's premise (deep heads have a low $H^*$) and its conclusion "
        "(deep heads are the dispensable ones) are what this ablation shows.",
        (False, True): "So the *conclusion* about depth (deep heads are the dispensable ones, "
        "early heads the indispensable ones) is what the ablation shows, but it goes with a "
        "*high* $H^*$ here, not a low one: the effective rank points the wrong way, and the "
        "verdict on C6 as an $H^*$-based rule is the one above.",
        (True, False): "C6's premise holds here (deep heads have a low $H^*$), but its "
        "conclusion does not: the deep heads are not the cheaper ones to remove.",
        (False, False): "Neither the premise nor the conclusion about depth is supported here.",
    }[(premise, cheap)]
    return (
        text
        + said
        + (
            " Whether early layers are *under*-specified (would gain from more heads) needs "
            "retraining and is not tested."
        )
    )


def lag_reach_sentence(
    energy: xr.DataArray, *, near: int = 16, coarse: float | None = None, level: float = 0.9
) -> str:
    r"""Page 3: where the scalogram energy of each layer sits in lag: the share of
    :math:`\sum_{a,b} E(a, b)` at lags :math:`b <` ``near``, and the lag below which the
    fraction ``level`` of the energy at coarse scales (:math:`a \ge` ``coarse``; default
    C2's band, :data:`msapod.studies.registry.REGISTRY`) lies, naming the two layers that
    reach furthest.

    ``energy`` has dims ``layer``, ``scale`` and ``lag`` (:func:`msapod.scalogram`'s energy
    of one model).
    """
    from msapod.studies.registry import REGISTRY

    dims = {"layer", "scale", "lag"}
    if set(energy.dims) != dims:
        raise ValueError(f"energy: expected dims {sorted(dims)}, got {list(energy.dims)}")
    if coarse is None:
        coarse = float(REGISTRY["C2"].stated["scale"])
    if not 0 < level < 1:
        raise ValueError(f"level: expected a fraction in (0, 1), got {level}")
    share = energy.where(energy["lag"] < near).sum(("scale", "lag")) / energy.sum(("scale", "lag"))
    far_scales = energy.where(energy["scale"] >= coarse).sum("scale")
    cum = far_scales.cumsum("lag") / far_scales.sum("lag")
    reach = energy["lag"].values[(cum < level).sum("lag").values.clip(max=energy.sizes["lag"] - 1)]
    layers = [int(v) for v in energy["layer"].values]
    furthest = [layers[i] for i in np.argsort(-reach, kind="stable")[:2]]
    return (
        f"Share at lags below {near}: "
        + ", ".join(
            f"layer {lay}: {float(v):.0%}"
            for lay, v in zip(layers, share.transpose("layer").values, strict=True)
        )
        + f". Energy at scales $a \\ge {coarse:g}$ reaches ({level:.0%}) to lags "
        + ", ".join(f"{int(r)} (layer {lay})" for lay, r in zip(layers, reach, strict=True))
        + "; furthest in layers "
        + " and ".join(str(v) for v in furthest)
        + "."
    )


def _zoo_lines(ax, zoo_y: xr.DataArray, depth) -> None:
    for m in zoo_y["model"].values:
        st = plots.model_style(str(m))
        ax.plot(depth, zoo_y.sel(model=m), color=st["color"], ls=st["ls"], marker=".", label=str(m))


def llm_scale_panels(
    ds: xr.Dataset, zoo_centroid: xr.DataArray, chars_per_token: float, c1: float, c2: float
):
    """Page 13. Left: the LLM's scale spectrum ``E(a)`` per layer as a share of the
    layer's energy (scale in characters). Right: its scale centroid across relative depth
    beside the zoo's (``zoo_centroid`` over ``model`` and ``layer``), with C1's band
    (``a <= c1``), C2's threshold ``c2`` and the LLM's finest scale."""
    from msapod.pipeline import FIELD_SYMBOLS

    _need("ds", ds, ("scale_spectrum", "scale_centroid"))
    sym = FIELD_SYMBOLS[ds.attrs["scalogram_field"]]
    depth = ds["layer"] / ds.sizes["layer"]
    llm_c = ds["scale_centroid"] * chars_per_token
    top = 1.1 * max(float(llm_c.max()), float(zoo_centroid.max()), c2)
    spec = ds["scale_spectrum"] / ds["scale_spectrum"].sum("scale")
    fig, axes = plots.panels(2, height=3.0)
    with plots.style():
        im = axes[0].pcolormesh(ds["scale"] * chars_per_token, ds["layer"], spec, shading="nearest")
        axes[0].set(
            xscale="log",
            ylabel="layer $l$",
            title=f"SmolLM2: $E(a)$ of ${sym}$, share per layer",
            xlabel=f"scale $a$ (characters = tokens × {chars_per_token:.2f})",
        )
        plots.log_ticks(axes[0])
        fig.colorbar(im, ax=axes[0], label="share of $E$")
        ax = axes[1]
        ax.axhspan(
            0,
            c1,
            color=plots.BAND_COLOUR,
            alpha=plots.BAND_ALPHA,
            lw=0,
            label=rf"C1: $a \leq {c1:g}$",
        )
        ax.plot(
            depth,
            llm_c,
            "ko-",
            ms=3,
            label=f"SmolLM2 ({ds.sizes['layer']} layers)",
        )
        _zoo_lines(ax, zoo_centroid, zoo_centroid["layer"] / zoo_centroid.sizes["layer"])
        ax.axhline(c2, color="k", lw=0.8, ls=":", label=rf"C2: $a \geq {c2:g}$")
        finest = float(ds["scale"].min()) * chars_per_token
        ax.axhline(finest, color="0.4", lw=0.8, ls="-.", label="finest LLM scale")
        ax.set(
            xlabel="relative depth $l / 30$, $l / 6$",
            ylabel="scale centroid (characters)",
            ylim=(0, top),
            title="scale centroid across depth",
        )
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=4)
    return fig


def llm_index_panels(
    depth: xr.DataArray,
    spec: tuple[xr.DataArray, xr.DataArray],
    rank: tuple[xr.DataArray, xr.DataArray],
    zoo: xr.Dataset,
    *,
    c3_range: tuple[float, float],
    c5_about: float,
    n_snapshots: int,
):
    """Page 13: the LLM's ``T_spec`` (left) and ``H*(0.10)`` (right) per relative depth
    with their jackknife standard errors (``spec``, ``rank``: (value, SE) per layer),
    beside the zoo's plain readings (``zoo``: ``T_spec``, ``H_star`` over ``model`` and
    ``layer``); C3's band, C5's value and the ceiling ``N - 1``."""
    zoo_depth = zoo["layer"] / zoo.sizes["layer"]
    zoo_rank = zoo["H_star"].sel(eps=0.10) if "eps" in zoo["H_star"].dims else zoo["H_star"]
    labels_y = (r"$T_\mathrm{spec} = 1/\beta$", r"$H^*(0.10)$ (modes)")
    fig, axes = plots.panels(2, height=3.0)
    with plots.style():
        for ax, (y, se), zy, lab in zip(
            axes, (spec, rank), (zoo["T_spec"], zoo_rank), labels_y, strict=True
        ):
            ax.errorbar(depth, y, yerr=se, fmt="ko-", ms=3, capsize=2, label="SmolLM2")
            _zoo_lines(ax, zy, zoo_depth)
            ax.set(xlabel="relative depth $l / 30$, $l / 6$", ylabel=lab)
        plots.claim_band(axes[0], *c3_range, label=r"C3: early $T_\mathrm{spec} \approx 1$")
        axes[1].axhline(n_snapshots - 1, color="0.3", lw=0.8, ls=":", label="ceiling $N - 1$")
        axes[1].axhline(c5_about, color="0.6", lw=0.8, ls="--", label=f"C5: about {c5_about:g}")
        handles, labels = axes[1].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=4)
    return fig


__all__ = [
    "WINDOW_MARKERS",
    "coherency_panels",
    "convergence_panels",
    "depth_sentence",
    "ega_contrast",
    "llm_index_panels",
    "llm_scale_panels",
    "mode_lag_panels",
    "pruning_panels",
    "rank_sentence",
    "spread_panels",
    "theorem1_panels",
    "training_panels",
    "window_panels",
]


#: the two-sided 95 % normal quantile (the intervals over the snippets of page 16)
Z95 = 1.959963984540054


def _with_interval(value: xr.DataArray, se: xr.DataArray, log: bool):
    """``value`` with its 95 % normal interval over the snippets (``log``: on the log
    scale, :func:`msapod.studies.verdict.inference.log_interval`)."""
    from msapod.studies.verdict.inference import log_interval

    if log:
        return value, *log_interval(value, se, Z95)
    return value, value - Z95 * se, value + Z95 * se


def trajectory_panels(traj: xr.Dataset):
    """Page 16: the whole-split validation loss of each model against the training step,
    and :math:`T_\\mathrm{spec}` (default fit) of the early layers 1-2 and the late layers
    5-6 (layer means), with 95 % intervals over the snippets (``traj``: the default reading of
    :func:`msapod.studies.measure.trajectory.trajectory_study`)."""
    _need("traj", traj, ("val_loss_split", "T_spec", "T_spec_se"))
    fig, axes = plots.panels(3, height=2.8)
    with plots.style():
        plots.along_training(axes[0], traj["val_loss_split"], hue="model", ylabel="nats/char")
        axes[0].set_title("validation loss")
        T, Tse = traj["T_spec"].sel(fit="default"), traj["T_spec_se"].sel(fit="default")
        for ax, layers in zip(axes[1:], ([1, 2], [5, 6]), strict=True):
            v, lo, up = _with_interval(
                T.sel(layer=layers).mean("layer"), Tse.sel(layer=layers).mean("layer"), True
            )
            plots.along_training(ax, v, lo, up, hue="model", ylabel=r"$T_\mathrm{spec}$")
            ax.set_title(f"layers {layers[0]}–{layers[1]}")
        plots.legend_below(fig, axes[:1])
    return fig


def trajectory_ranks(traj: xr.Dataset):
    """Page 16: :math:`H^*(0.10)` (energy criterion) of every layer against the training
    step, one panel per model, with 95 % intervals over the snippets."""
    _need("traj", traj, ("H_star", "H_star_se"))
    H, Hse = traj["H_star"].sel(criterion="energy"), traj["H_star_se"].sel(criterion="energy")
    models = [str(m) for m in traj["model"].values]
    fig, axes = plots.panels(len(models), height=2.8, sharey=True)
    with plots.style():
        for ax, m in zip(axes, models, strict=True):
            v, lo, up = _with_interval(H.sel(model=m), Hse.sel(model=m), True)
            plots.along_training(
                ax, v.transpose("step", "layer"), lo, up, hue="layer", ylabel=r"$H^*(0.10)$"
            )
            ax.set_title(m)
        plots.legend_below(fig, axes[:1])
    return fig


def ega_contrast(traj: xr.Dataset, var: str):
    """EGA minus baseline of ``var`` (default reading) per step and layer, with the 95 %
    interval of the difference from the two models' jackknife standard errors (one seed
    per architecture: an interval over the snippets only, a comparison, not a verdict).

    Returns ``(difference, lower, upper)``, dims ``(step, layer, ...)``.
    """
    from msapod.studies.measure.trajectory import default_reading

    d = default_reading(traj)
    arch = d["architecture"].values
    if sorted(arch) != ["baseline", "ega"]:
        raise ValueError(f"traj: expected one baseline and one EGA model, got {list(arch)}")
    at = {a: int(np.flatnonzero(arch == a)[0]) for a in ("ega", "baseline")}
    ega, base = d.isel(model=at["ega"], drop=True), d.isel(model=at["baseline"], drop=True)
    diff = ega[var] - base[var]
    half = Z95 * np.sqrt(ega[f"{var}_se"] ** 2 + base[f"{var}_se"] ** 2)
    return diff, diff - half, diff + half


def trajectory_contrasts(traj: xr.Dataset):
    """Page 16: EGA minus standard attention per layer against the training step, the
    scalogram energy (C7) and :math:`T_\\mathrm{spec}` (C8), with the 95 % interval of
    the difference over the snippets
    (:func:`ega_contrast`)."""
    fig, axes = plots.panels(2, height=2.8)
    with plots.style():
        for ax, (var, data, label) in zip(
            axes,
            (
                ("energy", traj, "EGA − standard energy"),
                ("T_spec", traj.sel(fit="default"), r"EGA − standard $T_\mathrm{spec}$"),
            ),
            strict=True,
        ):
            v, lo, up = ega_contrast(data, var)
            plots.along_training(ax, v.transpose("step", "layer"), lo, up, hue="layer")
            ax.axhline(0, color="0.3", lw=0.8, ls=":")
            ax.set_ylabel(label)
        plots.legend_below(fig, axes[:1])
    return fig


def scale_text(a_star: float, edge: bool, scales) -> str:
    """A dominant scale as text: ``"≤ 3.00"`` when it is a maximum at the first scale of
    the grid ``scales`` (``edge`` true), ``"≥ 128"`` at the last, the number otherwise
    (``"—"`` for NaN)."""
    a_star = float(a_star)
    if bool(edge) and np.isclose(a_star, float(np.min(scales))):
        return f"≤ {plots.number(a_star)}"
    if bool(edge) and np.isclose(a_star, float(np.max(scales))):
        return f"≥ {plots.number(a_star)}"
    return plots.number(a_star)


def dominant_scale_table(z: xr.Dataset):
    """Page 4: the dominant scales :math:`a^*_m` per (model, layer) as text, one column per
    peak: a maximum at the grid's first scale reads ``"≤ 3.00"`` and one at its last
    ``"≥ 128"`` (a bound, not a scale: ``dominant_edge``), a missing peak ``"—"``.

    ``z`` is the zoo analysis (``dominant_scale`` and ``dominant_edge`` over ``model``,
    ``layer``, ``peak``; coordinate ``scale``)."""
    import pandas as pd

    _need("z", z, ("dominant_scale", "dominant_edge"))
    a, edge = z["dominant_scale"], z["dominant_edge"].astype(bool)
    if a.dims != ("model", "layer", "peak"):
        raise ValueError(f"z: expected dominant_scale over (model, layer, peak), got {a.dims}")
    grid = z["scale"].values
    cells = np.vectorize(lambda v, e: scale_text(v, e, grid), otypes=[object])(
        a.values, edge.values
    )
    flat = cells.reshape(-1, a.sizes["peak"])
    index = pd.MultiIndex.from_product(
        [[str(m) for m in a["model"].values], [int(x) for x in a["layer"].values]],
        names=["model", "layer"],
    )
    cols = [f"a*_{int(p) + 1}" for p in range(a.sizes["peak"])]
    return pd.DataFrame(flat, index=index, columns=cols)
