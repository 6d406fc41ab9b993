"""The scorecard: every claim of the paper (C1-C10), what we measure, an interval, a verdict.

:func:`zoo_scorecard` computes the table the book's scorecard page shows and
``msapod reproduce`` writes as CSV. Every row carries the rule that decides its verdict.
Verdicts:

* **holds** -- every model/layer the claim is about passes, with its 95 % interval;
* **partly** -- some pass (with their interval), others do not or are not significant;
* **not significant** -- no case passes or fails beyond its interval;
* **does not hold** -- no case passes and at least one fails beyond its interval;
* **not testable as stated** -- the setting cannot support the claim (said why).

Intervals: per model and layer, 1.96 jackknife standard errors over snapshots
(:mod:`msapod.studies.uncertainty`); architecture differences (C7, C8, the loss) use the
Student-t interval over the two training seeds per architecture of
:func:`msapod.studies.uncertainty.arch_difference`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from .claims import CLAIMS, VERDICTS, Z95, case_counts, classify, combine, fmt_range

__all__ = ["VERDICTS", "classify", "combine", "zoo_scorecard"]


def _lag_stats(mode: xr.DataArray) -> tuple[float, int, int]:
    from ..fields import to_lag

    e = to_lag(mode**2).sum("query")
    c = e.cumsum("lag") / e.sum("lag")
    mean = float((e * e["lag"]).sum() / e.sum())
    lo = int(e["lag"][int(np.searchsorted(c.values, 0.1))])
    hi = int(e["lag"][int(np.searchsorted(c.values, 0.9))])
    return mean, lo, hi


def zoo_scorecard(
    models: Sequence[str] | None = None,
    *,
    uncertainty: xr.Dataset | None = None,
    convergence: xr.Dataset | None = None,
    pruning: xr.Dataset | None = None,
    llm: xr.Dataset | None | bool = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Compute the scorecard of claims C1-C10 (plus the EGA loss claim) on the zoo.

    Parameters
    ----------
    models
        Zoo models (default all four: two seeds per architecture).
    uncertainty, convergence, pruning
        Results of :func:`msapod.studies.uncertainty.zoo_uncertainty`,
        :func:`msapod.studies.convergence.convergence_study` and
        :func:`msapod.studies.prune.pruning_study`; computed (or read from the cache) when None.
    llm
        Result of :func:`msapod.studies.llm.smollm2_analysis`; None computes it when the
        optional ``llm`` extra is installed, False skips it (the LLM columns then say
        so).

    Returns
    -------
    pandas.DataFrame
        Index ``claim``; columns ``paper``, ``measured``, ``verdict``, ``rule``,
        ``cases``, ``page``, ``llm_measured``, ``llm_verdict``.
    """
    models, studies = _studies(models, uncertainty, convergence, pruning, progress)
    unc, conv, ds = studies["uncertainty"], studies["convergence"], studies["analysis"]
    rows = [
        *_scale_rows(unc),
        *_concentration_rows(ds, unc, conv, models),
        *_rank_rows(ds, unc, conv, models),
        *_pruning_rows(studies["pruning"]),
        *_energy_rows(unc),
        *_mode_rows(models, progress),
        *_theorem1_rows(models, progress),
        *_loss_rows(models, ds),
    ]
    card = pd.DataFrame(rows).set_index("claim")
    card = card.loc[[f"C{i}" for i in range(1, 11)] + ["L"]]
    return _merge_llm(card, llm, progress)


def _studies(models, uncertainty, convergence, pruning, progress) -> tuple[list, dict]:
    """The zoo's models and the studies the claims read (computed or cached when None)."""
    from ..models import zoo
    from .cache import zoo_analysis

    models = list(zoo.models() if models is None else models)
    if uncertainty is None:
        from .uncertainty import zoo_uncertainty

        uncertainty = zoo_uncertainty(models, progress=progress)
    if convergence is None:
        from .convergence import convergence_study

        convergence = convergence_study(models, progress=progress)
    if pruning is None:
        from .prune import pruning_study

        pruning = pruning_study(models, progress=progress)
    ds = zoo_analysis(
        models,
        variables=["scale_centroid", "spectrum", "T_spec", "H_star", "energy", "total_energy"],
        progress=progress,
    )
    return models, {
        "uncertainty": uncertainty.sel(model=models),
        "convergence": convergence,
        "pruning": pruning,
        "analysis": ds,
    }


def _scale_rows(unc) -> list[dict]:
    """C1, C2: the scale centroid's interval against a ≤ 7 and a ≥ 20."""
    rows = []
    cent, cse = unc["scale_centroid"], unc["scale_centroid_se"]
    lo, up = cent - Z95 * cse, cent + Z95 * cse
    c1 = classify(lo.sel(layer=[1, 2]), up.sel(layer=[1, 2]), high=7)
    c2 = classify(lo.sel(layer=[5, 6]), up.sel(layer=[5, 6]), low=20)
    se_txt = fmt_range(cse, "{:.2f}")
    rows.append(
        dict(
            claim="C1",
            paper=CLAIMS["C1"],
            measured=(
                f"scale centroid of u, layers 1–2: {fmt_range(cent.sel(layer=[1, 2]))} characters "
                f"(jackknife SE {se_txt})"
            ),
            verdict=combine(c1),
            cases=case_counts(c1),
            rule="95 % interval of the centroid ≤ 7, per model and layer 1–2",
            page="03-scalogram",
        )
    )
    rows.append(
        dict(
            claim="C2",
            paper=CLAIMS["C2"],
            measured=(
                f"scale centroid of u, layers 5–6: {fmt_range(cent.sel(layer=[5, 6]))} characters"
            ),
            verdict=combine(c2),
            cases=case_counts(c2),
            rule="95 % interval of the centroid ≥ 20, per model and layer 5–6",
            page="03-scalogram",
        )
    )
    return rows


def _concentration_rows(ds, unc, conv, models) -> list[dict]:
    """C3, C8: T_spec near 1 early, concentration late; EGA − baseline T_spec."""
    rows = []
    from .uncertainty import arch_difference

    plain = ds.sel(window="plain")
    T = plain["T_spec"]
    Tse = unc["T_spec_se"].sel(window="plain")
    top5 = plain["spectrum"].sel(rank=slice(1, 5)).sum("rank") / plain["spectrum"].sum("rank")
    ca = classify((T - Z95 * Tse).sel(layer=[1, 2]), (T + Z95 * Tse).sel(layer=[1, 2]), 0.75, 1.25)
    cb = np.where(
        top5.sel(layer=[5, 6]).mean("layer") > top5.sel(layer=[1, 2]).mean("layer"), "yes", "no"
    )
    conv_T = conv["T_spec"].sel(model=models, layer=[1, 2])
    n_big = int(conv["n"].max())
    rows.append(
        dict(
            claim="C3",
            paper=CLAIMS["C3"],
            measured=(
                f"T_spec (N = {plain.sizes['rank']}) layers 1–2: "
                f"{fmt_range(T.sel(layer=[1, 2]), '{:.2f}')}, "
                f"layers 5–6: {fmt_range(T.sel(layer=[5, 6]), '{:.2f}')}; top-5-mode share "
                f"layers 1–2: {fmt_range(top5.sel(layer=[1, 2]), '{:.2f}')}, 5–6: "
                f"{fmt_range(top5.sel(layer=[5, 6]), '{:.2f}')}; layers 1–2 at N = {n_big} "
                f"(training split): {fmt_range(conv_T.sel(n=n_big), '{:.2f}')}"
            ),
            verdict=combine(np.concatenate([ca.ravel(), cb.ravel()])),
            cases=f"(a) {case_counts(ca)}; (b) {case_counts(cb)}",
            rule=(
                "(a) 95 % interval of T_spec inside 1 ± 0.25, layers 1–2 at the paper's N; "
                "(b) larger top-5 share in layers 5–6 than 1–2, every model"
            ),
            page="07-spectral-concentration, 11-uncertainty-convergence",
        )
    )
    dT = arch_difference(T, Tse)
    want = {3: 1, 4: 1, 5: -1, 6: -1}
    c8 = []
    for layer, sign in want.items():
        d = dT.sel(layer=layer)
        if not bool(d["significant"]):
            c8.append("ns")
        else:
            c8.append("yes" if np.sign(float(d["diff"])) == sign else "no")
    rows.append(
        dict(
            claim="C8",
            paper=CLAIMS["C8"],
            measured="EGA − baseline T_spec, layers 3–6: "
            + ", ".join(
                f"{float(dT['diff'].sel(layer=l)):+.2f} [{float(dT['lower'].sel(layer=l)):+.2f}, "
                f"{float(dT['upper'].sel(layer=l)):+.2f}]"
                for l in want
            ),
            verdict=combine(c8),
            cases=case_counts(c8),
            rule="sign as stated and the 95 % seed-and-snapshot interval excludes 0, per layer 3–6",
            page="07-spectral-concentration, 09-energy-gated-attention",
        )
    )
    return rows


def _rank_rows(ds, unc, conv, models) -> list[dict]:
    """C5: H*(0.10) above 150 early (at the largest N), about 91 later."""
    rows = []
    plain = ds.sel(window="plain")
    n_big = int(conv["n"].max())
    H = plain["H_star"].sel(eps=0.10)
    Hse = unc["H_star_frac_se"].sel(window="plain", eps=0.10)
    n_snap = plain.sizes["rank"]
    cH = conv["H_star"].sel(model=models, eps=0.10, n=n_big)
    cHse = conv["H_star_se"].sel(model=models, eps=0.10, n=n_big)
    c5a = classify(
        (cH - Z95 * cHse).sel(layer=[1, 2]), (cH + Z95 * cHse).sel(layer=[1, 2]), low=150.5
    )
    hl = H.sel(layer=[3, 4, 5, 6])
    hlse = Hse.sel(layer=[3, 4, 5, 6])
    c5b = classify(hl - Z95 * hlse, hl + Z95 * hlse, 0.85 * 91, 1.15 * 91)
    rows.append(
        dict(
            claim="C5",
            paper=CLAIMS["C5"],
            measured=(
                f"H*(0.10) at N = {n_snap}: layers 1–2 {fmt_range(H.sel(layer=[1, 2]), '{:.0f}')} "
                f"(ceiling {n_snap - 1}), layers 3–6 {fmt_range(hl, '{:.0f}')}; at N = {n_big} "
                f"(training split): layers 1–2 {fmt_range(cH.sel(layer=[1, 2]), '{:.0f}')}, layers "
                f"3–6 {fmt_range(cH.sel(layer=[3, 4, 5, 6]), '{:.0f}')}"
            ),
            verdict=f"(a) {combine(c5a)}; (b) {combine(c5b)}",
            cases=f"(a) {case_counts(c5a)}; (b) {case_counts(c5b)}",
            rule=(
                f"(a) > 150 modes is untestable at N = {n_snap}; tested at N = {n_big}: 95 % "
                "interval above 150; (b) 'about 91' = 95 % interval within ±15 % of 91 at the "
                f"paper's N = {n_snap}, every model and layer 3–6"
            ),
            page="08-effective-rank, 11-uncertainty-convergence",
        )
    )
    return rows


def _pruning_rows(pruning) -> list[dict]:
    """C6: head pruning guided by H* (see :func:`msapod.studies.prune.c6_verdict`)."""
    rows = []
    from .prune import c6_verdict

    c6 = c6_verdict(pruning)
    rows.append(
        dict(
            claim="C6",
            paper=c6.get("paper", CLAIMS["C6"]),
            measured=c6["measured"],
            verdict=c6["verdict"],
            cases=c6.get("cases")
            or f"{len(c6.get('per_budget', []))} budgets, {pruning.sizes.get('model', 1)} models",
            rule=c6["rule"],
            page="12-head-pruning",
        )
    )
    return rows


def _energy_rows(unc) -> list[dict]:
    """C7: EGA − baseline scalogram energy, every layer."""
    rows = []
    from .uncertainty import arch_difference

    E = unc["energy"]
    dE = arch_difference(E, unc["energy_se"])
    c7 = np.where(dE["significant"], np.where(dE["diff"] > 0, "yes", "no"), "ns")
    ratio = E.where(E["architecture"] == "ega").mean("model") / E.where(
        E["architecture"] == "baseline"
    ).mean("model")
    rows.append(
        dict(
            claim="C7",
            paper=CLAIMS["C7"],
            measured="EGA / baseline scalogram energy, layers 1–6: "
            + ", ".join(f"{float(r):.2f}" for r in ratio.values),
            verdict=combine(c7),
            cases=case_counts(c7),
            rule="EGA − baseline energy > 0 with a 95 % seed-and-snapshot interval, every layer",
            page="09-energy-gated-attention",
        )
    )
    return rows


def _mode_rows(models, progress) -> list[dict]:
    """C4, C9: lags of the first scale-selective mode; plain vs windowed spread."""
    rows = []
    from .cache import cached_analysis

    paper_lags = {2: (2, 10), 4: (10, 35), 6: (10, 40)}
    c4, c4_text, spread_plain, spread_scale = [], [], [], []
    for m in models:
        modes = cached_analysis(m, progress=progress)["modes"].sel(mode=1)
        for layer in (2, 4, 6):
            mean, _, _ = _lag_stats(modes.sel(layer=layer, window="scale-1").astype(float))
            a, b = paper_lags[layer]
            c4.append("yes" if a <= mean <= b else "no")
            c4_text.append(f"L{layer} {mean:.0f}")
        for layer in modes["layer"].values:
            for window, bucket in (("plain", spread_plain), ("scale-1", spread_scale)):
                _, lo_, hi_ = _lag_stats(modes.sel(layer=layer, window=window).astype(float))
                bucket.append(hi_ - lo_)
    rows.append(
        dict(
            claim="C4",
            paper=CLAIMS["C4"],
            measured="mean lag of the first scale-1 mode (characters): "
            + "; ".join(
                f"{m}: " + "/".join(c4_text[3 * k : 3 * k + 3]) for k, m in enumerate(models)
            ),
            verdict=combine(c4),
            cases=case_counts(c4),
            rule="mean lag inside the paper's range, every model and layer (a point value: "
            "mode shapes carry no interval here)",
            page="05-pod",
        )
    )
    c9 = np.where(np.array(spread_scale) < np.array(spread_plain), "yes", "no")
    rows.append(
        dict(
            claim="C9",
            paper=CLAIMS["C9"],
            measured=(
                f"80 % lag range of mode 1: plain {np.median(spread_plain):.0f} characters, "
                f"scale-1 window {np.median(spread_scale):.0f} (medians over models and "
                "layers)"
            ),
            verdict=combine(c9),
            cases=case_counts(c9),
            rule="scale-selective mode narrower in lag than the plain mode (per model and layer); "
            "the window imposes part of this by construction",
            page="05-pod",
        )
    )
    return rows


def _theorem1_rows(models, progress) -> list[dict]:
    """C10: Theorem 1 on layer 4 of the first model (error = tail sum; random bases)."""
    rows = []
    from ..decomposition import basis_error, pod, reconstruction_error
    from ..fields import reynolds
    from .cache import cached_fields

    A = cached_fields(models[0], progress=progress).sel(layer=4)
    u = reynolds(A)["fluctuation"]
    res = pod(u, n_modes=20)
    lam = res["spectrum"].values
    worst, beaten = 0.0, 0
    rng = np.random.default_rng(0)
    mask = np.tril(np.ones((u.sizes["query"], u.sizes["key"]), bool))
    for K in (1, 5, 20):
        err = float(reconstruction_error(u, res, K))
        worst = max(worst, abs(err - lam[K:].sum()) / lam[K:].sum())
        for _ in range(5):
            B = np.zeros((K, *mask.shape))
            B[:, mask] = np.linalg.qr(rng.standard_normal((mask.sum(), K)))[0].T
            beaten += float(basis_error(u, xr.DataArray(B, dims=("mode", "query", "key")))) < err
    rows.append(
        dict(
            claim="C10",
            paper=CLAIMS["C10"],
            measured=(
                f"layer 4 of {models[0]}: relative gap between error and tail sum ≤ "
                f"{worst:.1e} for K = 1, 5, 20; random orthonormal bases beating POD: "
                f"{beaten} of 15"
            ),
            verdict="holds" if worst < 1e-8 and beaten == 0 else "does not hold",
            cases="3 ranks x 5 random bases",
            rule="error equals the tail sum to 1e-8 and no random basis does better",
            page="05-pod",
        )
    )
    return rows


def _loss_rows(models, ds) -> list[dict]:
    """L: the EGA paper's loss claim (not a C-claim of this paper)."""
    rows = []
    from ..models.zoo import ZOO_CONFIGS, path
    from .uncertainty import arch_difference

    losses = xr.DataArray(
        [json.loads((path(m) / "config.json").read_text())["val_loss"] for m in models],
        dims="model",
        coords={"model": models, "architecture": ds["architecture"]},
    )
    dL = arch_difference(losses)
    steps = [
        json.loads((path(m) / "config.json").read_text())["step"] >= ZOO_CONFIGS[m].steps
        for m in models
    ]
    cl = (
        "yes"
        if bool(dL["significant"]) and float(dL["diff"]) < 0
        else "no"
        if bool(dL["significant"])
        else "ns"
    )
    rows.append(
        dict(
            claim="L",
            paper=CLAIMS["loss"],
            measured=(
                f"EGA − baseline val loss {float(dL['diff']):+.4f} nats/char, 95 % interval "
                f"[{float(dL['lower']):+.4f}, {float(dL['upper']):+.4f}] (2 seeds each"
                + ("" if all(steps) else "; some models unfinished")
                + ")"
            ),
            verdict=combine([cl]),
            cases="1 contrast",
            rule="interval over seeds below 0 (t with 2 degrees of freedom)",
            page="10-training",
        )
    )
    return rows


def _merge_llm(card: pd.DataFrame, llm, progress: bool) -> pd.DataFrame:
    """Add the LLM columns (``llm`` False: a dash in each)."""
    card["llm_measured"] = "—"
    card["llm_verdict"] = "—"
    if llm is not False:
        for r in _llm_rows(llm, progress):
            if r["claim"] in card.index:
                card.loc[r["claim"], "llm_measured"] = r["measured"]
                card.loc[r["claim"], "llm_verdict"] = r["verdict"]
    return card


def _llm_rows(llm, progress: bool) -> list[dict]:
    try:
        from .llm import llm_verdicts, smollm2_analysis
    except ImportError as err:  # the optional extra is missing: say so in the table
        return [
            dict(claim=c, measured=f"not run ({err})", verdict="not run")
            for c in ("C1", "C2", "C3", "C5")
        ]
    if llm is None:
        llm = smollm2_analysis(progress=progress)
    return llm_verdicts(llm)
