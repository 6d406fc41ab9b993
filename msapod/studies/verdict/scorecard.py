"""The scorecard: every claim of the paper (C1-C10), what we measure, an interval, a verdict.

:func:`zoo_scorecard` computes the table the book's scorecard page shows and
``msapod reproduce`` writes as CSV. Its verdicts are the **main specification** of the
specification curve (:mod:`msapod.studies.verdict.multiverse`), decided by the same rule
functions (:mod:`msapod.studies.verdict.rules`) on the same numbers, so the scorecard, the
specification curve and every page's verdict admonition
(:func:`msapod.studies.verdict.claims.verdict_markdown`) agree by construction. The
verdict words: :data:`msapod.studies.verdict.claims.VERDICT_MEANING`.

The LLM columns (SmolLM2-135M) are decided by the same rule functions
(:func:`llm_rows`): C3 and C5 as on the zoo, C1 and C2 by their dominant-scale reading
(:func:`~msapod.studies.verdict.rules.rule_dominant_scale`; the zoo's default reading needs
the same model untrained).

Intervals: per model and layer, jackknife standard errors over snapshots; architecture
differences (C7, C8, the loss) use the Student-t interval over the training seeds of
:func:`msapod.studies.measure.uncertainty.arch_difference`. Each interval printed is the
one its rule's decision reads (95 %, family-wise where the rule tests with Holm).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from ...models.data import N_SNAPSHOTS
from ...pipeline import FIELD_SYMBOLS
from ..registry import REGISTRY
from .claims import CLAIM_PARTS, CLAIMS, VERDICTS, classify, combine, joint_text

__all__ = ["PAGES", "VERDICTS", "classify", "combine", "zoo_scorecard"]

#: The book pages where each claim is examined (the registry's ``pages``; C6's parts on
#: C6's page).
PAGES = {c.id: ", ".join(c.pages) for c in REGISTRY.values()}
PAGES.update({part: PAGES["C6"] for part in CLAIM_PARTS})


def zoo_scorecard(
    models: Sequence[str] | None = None,
    *,
    convergence: xr.Dataset | None | bool = None,
    pruning: xr.Dataset | None | bool = None,
    llm: xr.Dataset | None | bool = None,
    multiverse: xr.Dataset | None = None,
    evidence: xr.Dataset | None = None,
    reference: xr.Dataset | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """Compute the scorecard of claims C1-C10 (plus the EGA loss claim) on the zoo.

    Parameters
    ----------
    models
        Zoo models (default every trained model of the main zoo).
    convergence, pruning
        Results of :func:`msapod.studies.measure.convergence.convergence_study` and
        :func:`msapod.studies.measure.prune.pruning_study`; computed (or read from the cache) when
        None; False skips them (N = 400 readings and C6 are then not testable).
    llm
        Result of :func:`msapod.studies.measure.llm.smollm2_analysis`; None computes it when the
        optional ``llm`` extra is installed, False skips it (the LLM columns then say
        so).
    multiverse
        :func:`msapod.studies.verdict.curve.multiverse_study` result: fills ``robust_share``,
        ``joint_p``, ``untrained``, ``shuffled`` and ``words`` (None: "not computed").
    evidence
        The trained models' stacked evidence (e.g. the verified ``results/evidence.nc``);
        None computes it or reads it from the cache.
    reference
        The same models untrained, stacked likewise (C1's and C2's reference, e.g.
        ``results/evidence-untrained.nc``); None computes it or reads it from the cache.

    Returns
    -------
    pandas.DataFrame
        Index ``claim``; columns ``paper``, ``verdict``, ``measured``, ``interval``,
        ``rule``, ``cases``, ``reason``, ``paper_value_compatible``, ``untrained``,
        ``shuffled``, ``words``, ``robust_share``, ``joint_p`` (the joint test's direction and
        p-value, :func:`joint_words`), ``verdict_<zoo>`` for every other
        trained zoo of ``multiverse`` (the default reading's verdict there), ``page``,
        ``llm_measured``, ``llm_verdict``. The verdicts are the book's default reading,
        decided by the path of :func:`msapod.studies.check_claims` (fields -> evidence ->
        rules).
        ``untrained``, ``shuffled`` and ``words`` are the same rule at the same reading on
        the untrained copies of the models, and on the trained models with the characters,
        or the words, of each snippet shuffled (:mod:`msapod.studies.verdict.nulls`); "—"
        in ``shuffled`` and ``words`` for the claims that are not about lag structure
        (:data:`msapod.studies.verdict.nulls.SHUFFLED_NOT_APPLICABLE` says why).
    """
    from ...models import zoo
    from ..measure.nullfields import untrained_evidence
    from .multiverse import main_outcomes, zoo_data

    models = list(zoo.models() if models is None else models)
    if reference is None:
        reference = untrained_evidence(models, progress=progress)
    data = zoo_data(
        models,
        convergence=convergence,
        pruning=pruning,
        progress=progress,
        evidence=evidence,
        reference=reference,
    )
    return scorecard_from_outcomes(
        main_outcomes(data), llm=llm, progress=progress, multiverse=multiverse
    )


#: What the curve-level columns say when the specification curve was not passed in.
NOT_COMPUTED = "not computed"


def scorecard_from_outcomes(
    outcomes: dict, *, llm=False, progress: bool = False, multiverse: xr.Dataset | None = None
) -> pd.DataFrame:
    """The scorecard table of ``{claim: Outcome}`` (the default reading) plus the curve's
    columns (from ``multiverse``) and the LLM columns."""
    from .check import outcomes_table

    card = outcomes_table(outcomes)
    card = card.rename(columns={"paper_value": "paper_value_compatible"})
    card["paper_value_compatible"] = card["paper_value_compatible"].replace("", "—")
    order = [f"C{i}" for i in range(1, 11)] + ["L"]
    order[6:6] = [c for c in ("C6a", "C6b") if c in card.index]
    card = card.loc[order]
    card["untrained"] = NOT_COMPUTED
    card["shuffled"] = NOT_COMPUTED
    card["words"] = NOT_COMPUTED
    card["robust_share"] = NOT_COMPUTED
    card["joint_p"] = NOT_COMPUTED
    if multiverse is not None:
        _curve_columns(card, multiverse)
    card["page"] = [PAGES[c] for c in card.index]
    cols = ["paper", "verdict", "measured", "interval", "rule", "cases", "reason"]
    cols += ["paper_value_compatible", "untrained", "shuffled", "words", "robust_share"]
    cols += ["joint_p"]
    cols += [c for c in card.columns if c.startswith("verdict_")] + ["page"]
    return _merge_llm(card[cols], llm, progress)


#: What a null column says when the null's verdict matches a trained "holds".
SAME_HOLDS = {
    "untrained": "holds (not specific to training)",
    "shuffled": "holds (not driven by the order of the text)",
    "words": "holds (not driven by the order of the words)",
}


def joint_words(row: xr.Dataset) -> str:
    """A claim's joint test over the curve (one claim of
    :func:`msapod.studies.verdict.curve.multiverse_study`) in the scorecard's words: the
    words of :func:`~msapod.studies.verdict.claims.joint_text` (``joint_direction``,
    ``joint_p``); "—" without a test."""
    p = float(row["joint_p"])
    if not np.isfinite(p):
        return "—"
    direction = str(row["joint_direction"].values) if "joint_direction" in row else ""
    return joint_text(p, direction)


def _curve_columns(card: pd.DataFrame, mv: xr.Dataset) -> None:
    """``robust_share``, ``joint_p``, ``untrained``, ``shuffled`` and ``words`` of each claim from
    the curve, and ``verdict_<zoo>``, the default reading's verdict on each other trained
    zoo (``verdict_paper-size``: the capacity column)."""
    from .claims import main_verdict, robustness

    zoos = [z for z in str(mv.attrs.get("zoos", "")).split(",") if z]
    for z in zoos[1:]:
        card[f"verdict_{z}"] = [
            main_verdict(c, mv, z) if c in mv["claim"].values else "—" for c in card.index
        ]

    for claim in card.index:
        if claim not in mv["claim"].values:  # the parts of C6: one reading, no null
            card.loc[claim, ["robust_share", "untrained", "shuffled", "words", "joint_p"]] = [
                "one reading",
                "not applicable",
                "—",
                "—",
                "—",
            ]
            continue
        label, share = robustness(claim, mv)
        card.loc[claim, "robust_share"] = (
            "one reading" if label == "single" else f"{share:.0%} ({label})"
        )
        if "joint_p" in mv:
            card.loc[claim, "joint_p"] = joint_words(mv.sel(claim=claim))
        for col in ("untrained", "shuffled", "words"):
            if f"{col}_verdict" in mv:
                u = str(mv[f"{col}_verdict"].sel(claim=claim).values)
                if u == "holds" and card.loc[claim, "verdict"] == "holds":
                    u = SAME_HOLDS[col]
                card.loc[claim, col] = u


def _merge_llm(card: pd.DataFrame, llm, progress: bool) -> pd.DataFrame:
    """Add the LLM columns (``llm`` False: a dash in each)."""
    card["llm_measured"] = "—"
    card["llm_verdict"] = "—"
    if llm is not False:
        for r in _llm_rows(llm, progress):
            if r["claim"] in card.index:
                iv = r.get("interval", "point value")
                card.loc[r["claim"], "llm_measured"] = r["measured"] + (
                    "; point values" if iv.startswith("point") else f"; 95 % intervals {iv}"
                )
                card.loc[r["claim"], "llm_verdict"] = r["verdict"]
    return card


def _llm_rows(llm, progress: bool) -> list[dict]:
    try:
        from ..measure.llm import smollm2_analysis
    except ImportError as err:  # the optional extra is missing: say so in the table
        return [
            dict(claim=c, measured=f"not run ({err})", verdict="not run")
            for c in ("C1", "C2", "C3", "C5")
        ]
    if llm is None:
        llm = smollm2_analysis(progress=progress)
    return llm_rows(llm)


def llm_rows(ds: xr.Dataset, mapping: str = "literal") -> list[dict]:
    """C1, C2, C3 and C5 on an LLM analysis with the zoo's rules (:mod:`.rules`).

    ``ds`` is a :func:`msapod.analyze` result with a ``layer`` dim (e.g.
    :func:`msapod.studies.measure.llm.smollm2_analysis`). Depth groups come from
    :func:`msapod.studies.measure.llm.depth_groups`; scales are converted from tokens to
    characters with the ensemble's characters per token. The dominant scale is read
    from the analysis' own scale spectrum as in the zoo (interior maximum, else a bound at
    the grid's edge; the dominant-scale reading of C1 and C2: an LLM has no untrained
    reference here); it has no jackknife here ("point value"). T_spec and H* use the
    shipped jackknife standard errors (``T_spec_se``, ``H_star_se``) when present.
    """
    from ..measure.evidence import scale_reading
    from ..measure.llm import depth_groups
    from .rules import rule_c3, rule_c5, rule_dominant_scale

    cpt = float(ds.attrs.get("ensemble_chars_per_token", ds.attrs.get("chars_per_token", 1.0)))
    layers = [int(x) for x in ds["layer"].values]
    g = depth_groups(len(layers), mapping)
    g = {k: [layers[i - 1] for i in v] for k, v in g.items()}
    one = lambda da: da.expand_dims(model=["SmolLM2"]).transpose("model", "layer")  # noqa: E731
    spec = ds["scale_spectrum"].transpose("layer", "scale")
    value, side = scale_reading(spec.values, spec["scale"].values, "peak")
    peak = xr.DataArray(value, dims="layer", coords={"layer": layers})
    edge = xr.DataArray(side, dims="layer", coords={"layer": layers})
    where = f"{mapping} depth mapping, {len(layers)} layers"  # T_spec, H*: the POD of u
    field = FIELD_SYMBOLS[ds.attrs["scalogram_field"]]
    plain = ds.sel(window="plain")
    n = int(ds.attrs.get("n_snapshots", plain.sizes.get("rank", N_SNAPSHOTS)))
    T_se = one(ds["T_spec_se"]) if "T_spec_se" in ds else None
    H_se = one(ds["H_star_se"].sel(eps=0.10)) if "H_star_se" in ds else None
    scale = dict(
        where=f"{where}, scalogram of {field}",
        early=g["early"],
        late=g["late"],
        unit=cpt,
        edge=one(edge),
    )
    outs = [
        *(rule_dominant_scale(c, one(peak), None, **scale) for c in ("C1", "C2")),
        rule_c3(one(plain["T_spec"]), T_se, n=n, where=where, early=g["early"], late=g["late"]),
        rule_c5(
            one(plain["H_star"].sel(eps=0.10).astype(float)),
            H_se,
            n=n,
            where=where,
            early=g["early"],
            rest=g["rest"],
        ),
    ]
    return [
        dict(
            claim=o.claim,
            paper=CLAIMS[o.claim],
            measured=o.measured,
            interval=o.interval or "point value",
            verdict=o.verdict,
            rule=o.rule,
            cases=o.cases,
            page="[LLM](13-llm.md)",
        )
        for o in outs
    ]
