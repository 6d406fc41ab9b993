"""The specification-curve study, cached: every claim under every reading of the curve
(:func:`msapod.studies.verdict.multiverse.assemble_study`) on every trained zoo, with the
null controls of :mod:`msapod.studies.verdict.nulls` (the untrained and shuffled-snippet
verdicts at the default reading and the joint test over the curve).

This is the one place where the curve and its nulls meet, so :mod:`.multiverse` (the
curve) and :mod:`.nulls` (the nulls, built on the curve) import each other nowhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from ...models import zoo as zoo_mod
from ..measure.evidence import EVIDENCE_FORMAT, model_evidence
from ..measure.nullfields import TEXT_NULLS, null_evidence, untrained_evidence
from ..registry import REGISTRY
from ..store.cache import cached_dataset, stack_models
from . import nulls as nl
from .multiverse import (
    assemble_study,
    needs_window_se,
    specifications,
    trained_zoos,
    zoo_data,
)

__all__ = [
    "EVIDENCE_KINDS",
    "add_nulls",
    "multiverse_study",
    "null_verdict_columns",
    "source_hash",
    "zoo_evidence",
]

#: The evidence the curve reads, by kind: the trained models of every trained zoo (every
#: reading), the same models at initialisation (every reading) and the main zoo's trained
#: models on snippets with their characters or their words shuffled (the text nulls
#: :data:`.nulls.TEXT_NULLS`, at the default reading; :func:`.nulls.main_axes`).
EVIDENCE_KINDS = ("trained", "untrained", *TEXT_NULLS)


def zoo_evidence(
    models: Sequence[str] | None = None, *, progress: bool = False, cache_dir=None
) -> dict[str, xr.Dataset]:
    """The per-model evidence of :data:`EVIDENCE_KINDS`, each stacked along ``model``
    (computed or read from the cache; ``msapod reproduce`` ships it as
    ``results/evidence*.nc``).

    ``models``: a subset of the trained models of the trained zoos (the default check's
    one model per architecture and zoo); default all of them. The Theorem 1 check runs on
    layer 4 of each zoo's first model, and C4's and C9's jackknife on the zoos with fewer
    than two seeds of an architecture, as in :func:`multiverse_study`.
    """
    trained, _ = trained_zoos()
    names = [m for z in trained for m in zoo_mod.trained(z)]
    if models is not None:
        unknown = [m for m in models if m not in names]
        if unknown:
            raise ValueError(
                f"models: expected trained models of the zoos {trained}, got {unknown}"
            )
    picked = {k: [] for k in EVIDENCE_KINDS}
    parts = {k: [] for k in EVIDENCE_KINDS}
    for z in trained:
        zoo_models = list(zoo_mod.trained(z))
        window_se = needs_window_se(zoo_models)
        for m in zoo_models:
            if models is not None and m not in models:
                continue
            t1 = 4 if m == zoo_models[0] else 0
            kw = dict(
                progress=progress, cache_dir=cache_dir, theorem1_layer=t1, window_se=window_se
            )
            picked["trained"].append(m)
            parts["trained"].append(model_evidence(m, **kw))
            picked["untrained"].append(m)
            parts["untrained"].append(null_evidence(m, "untrained", **kw))
            if z == trained[0]:
                for null in TEXT_NULLS:
                    picked[null].append(m)
                    parts[null].append(null_evidence(m, null, axes=nl.main_axes(), **kw))
    return {k: stack_models(parts[k], picked[k]) for k in EVIDENCE_KINDS if parts[k]}


def source_hash() -> str:
    """sha256 of the verdict tier's sources that decide the claims (a cache key part)."""
    h = hashlib.sha256()
    for mod in ("rules.py", "multiverse.py", "claims.py", "nulls.py", "curve.py"):
        h.update((Path(__file__).parent / mod).read_bytes())
    return h.hexdigest()


def multiverse_study(
    zoos: Sequence[str] | None = None,
    *,
    progress: bool = False,
    convergence: dict | None = None,
    pruning: dict | None = None,
    cache_dir=None,
    data: dict | None = None,
    nulls: bool | None = None,
    evidence: dict[str, xr.Dataset] | None = None,
) -> xr.Dataset:
    """Every claim under every specification of its sub-grid, on every trained zoo.

    Parameters
    ----------
    zoos
        Zoo names (default every zoo of :data:`msapod.models.zoo.ZOOS`); zoos whose
        models are not all trained are skipped and listed in the attr ``not_trained``.
    progress
        Progress bars.
    convergence, pruning
        Optional ``{zoo: study result or False}`` (default: read or compute the cached
        studies; False skips, making N = 400 or C6 not testable). Both run on the main
        zoo only unless given for another zoo (the per-head ablations and the N = 400
        ensembles are the costliest studies per model): another zoo's claims are then
        decided at N = 150, and C6 there is not testable and says why.
    data
        Optional ``{zoo: ZooData}`` (tests: synthetic evidence; not cached then).
    nulls
        Add the null controls (:mod:`msapod.studies.verdict.nulls`): ``untrained_verdict`` (the
        default reading's verdict on the untrained models of the main zoo),
        ``shuffled_verdict`` (on the main zoo's trained models with the characters of
        each snippet shuffled, the claims about lag structure; computed at the default
        reading only) and the joint test over the main zoo's curve (``joint_p``,
        ``joint_direction``, ``joint_p_for``, ``joint_p_against``, ... per claim:
        :func:`add_nulls`). Default: True for the zoo, False with ``data``.
    evidence
        Optional :func:`zoo_evidence` of every model (e.g. the shipped, verified
        ``results/evidence*.nc``) instead of computing or reading it (not cached then).

    Returns
    -------
    xarray.Dataset
        dims ``claim``, ``spec``, ``model``, ``layer``. Coordinates along ``spec``: one
        per axis (``zoo``, ``field``, ``normalisation``, ``scale_min``, ``scale_stat``,
        ``scale_test``, ``centre``, ``width``, ``criterion``, ``n``, ``fit``) and the
        boolean ``main``.
        Variables: ``verdict(claim, spec)`` (a verdict word; "" where the claim does not
        apply), ``applicable``, ``measured``, ``rule``, ``cases``, ``reason``;
        ``stat``, ``lower``, ``upper`` (claim, spec, model, layer: the key statistic and
        its 95 % interval, NaN where not applicable); ``contrast*`` (claim, spec, model:
        C3, C5) and ``diff*`` (claim, spec, layer: C7, C8, L); per claim ``claim_text``,
        ``axes``, ``threshold_low``, ``threshold_high``. Attrs: ``zoos`` (analysed, the
        main zoo first), ``main_zoo``, ``not_trained``, ``main_specification`` (JSON).
    """
    if data is not None:
        trained, untrained = list(data), []
        ds = assemble_study(trained, untrained, data)
        return add_nulls(ds, data, None) if nulls else ds
    nulls = True if nulls is None else nulls
    trained, untrained = trained_zoos(zoos)
    studies = {"convergence": convergence or {}, "pruning": pruning or {}}

    def compute():
        return _curve(trained, untrained, studies, evidence or {}, nulls, progress, cache_dir)

    if convergence is not None or pruning is not None or evidence is not None:
        return compute()
    weights = {m: zoo_mod.identity(m).weights_sha256 for z in trained for m in zoo_mod.trained(z)}
    parts = {"source": source_hash(), "zoos": trained, "format": EVIDENCE_FORMAT}
    parts.update(weights_sha256=weights, nulls=bool(nulls))
    return cached_dataset(
        "multiverse", "study-" + "+".join(trained), parts, compute, cache_dir=cache_dir
    )


def _curve(trained, untrained, studies: dict, ev: dict, nulls: bool, progress, cache_dir):
    """:func:`multiverse_study`'s computation: every zoo's :class:`ZooData` (``studies``:
    the given convergence and pruning studies per zoo; ``ev``: the given evidence), the
    curve and, with ``nulls``, its null controls."""
    kw = dict(cache_dir=cache_dir, progress=progress)

    def reference(models):  # C1's and C2's: the same models untrained
        given = ev.get("untrained")
        return untrained_evidence(models, **kw) if given is None else given

    got = {
        z: zoo_data(
            zoo_mod.trained(z),
            convergence=studies["convergence"].get(z, None if z == trained[0] else False),
            pruning=studies["pruning"].get(z, None if z == trained[0] else False),
            progress=progress,
            cache_dir=cache_dir,
            evidence=ev.get("trained"),
            reference=reference(zoo_mod.trained(z)),
        )
        for z in trained
    }
    ds = assemble_study(trained, untrained, got)
    if not nulls:
        return ds
    null_data = {
        z: nl.null_zoo_data(zoo_mod.trained(z), "untrained", evidence=ev.get("untrained"), **kw)
        for z in trained
    }
    main = trained[0]  # the text nulls: the main zoo at the default reading
    text = {
        null: {
            main: nl.null_zoo_data(
                zoo_mod.trained(main),
                null,
                axes=nl.main_axes(),
                evidence=ev.get(null),
                reference=null_data[main].ev,
                **kw,
            )
        }
        for null in TEXT_NULLS
    }
    return add_nulls(ds, got, null_data, text["shuffled"], text["words"])


def null_verdict_columns(
    ds: xr.Dataset, untrained: dict | None, shuffled: dict | None = None, words: dict | None = None
) -> xr.Dataset:
    """``ds`` (:func:`assemble_study`) with the null verdicts of
    :mod:`msapod.studies.verdict.nulls`: ``untrained_verdict(claim)`` (the default reading on the
    untrained models of the main zoo; "not computed" without them) and
    ``shuffled_verdict(claim)`` (the default reading on the main zoo's shuffled-snippet
    fields, ``{zoo: ZooData}`` of :func:`~msapod.studies.verdict.nulls.null_zoo_data`, for
    :data:`~msapod.studies.verdict.nulls.SHUFFLED_CLAIMS`; "—" for the other claims, whose
    reasons its attr ``not_applicable`` holds; "not computed" without them) and likewise
    ``words_verdict(claim)`` from ``words`` (the snippets' words shuffled)."""
    zoos = [z for z in str(ds.attrs.get("zoos", "")).split(",") if z]
    main = str(ds.attrs.get("main_zoo", "")) or zoos[0]
    claims = ds["claim"].values
    if untrained:
        u = nl.null_verdicts(untrained[main]).reindex(claim=claims)
        why = [
            f"not applicable ({REGISTRY[c].no_untrained})"
            if c in REGISTRY and REGISTRY[c].no_untrained
            else "not applicable"
            for c in claims
        ]
        why = xr.DataArray(why, dims="claim", coords={"claim": claims})
        ds["untrained_verdict"] = xr.where(u == "", why, u).astype(str)
    else:
        ds["untrained_verdict"] = ("claim", np.full(ds.sizes["claim"], "not computed"))
    for null, given in (("shuffled", shuffled), ("words", words)):
        name = f"{null}_verdict"
        if given and main in given:
            s = nl.null_verdicts(given[main], name, nl.SHUFFLED_CLAIMS).reindex(claim=claims)
            ds[name] = xr.where(s == "", "—", s).astype(str)
        else:
            ds[name] = ("claim", np.full(ds.sizes["claim"], "not computed"))
        ds[name].attrs["not_applicable"] = json.dumps(nl.SHUFFLED_NOT_APPLICABLE)
    return ds


def add_nulls(
    ds: xr.Dataset,
    data: dict,
    untrained: dict | None,
    shuffled: dict | None = None,
    words: dict | None = None,
) -> xr.Dataset:
    """``ds`` (:func:`assemble_study`) with the null controls of
    :mod:`msapod.studies.verdict.nulls`: the null verdicts of :func:`null_verdict_columns` and
    the joint test over the main zoo's specification curve
    (:func:`~msapod.studies.verdict.nulls.joint_tests`), each of its variables ``<v>`` as
    ``joint_<v>(claim)`` (``joint_p`` and ``joint_direction`` the summary, ``joint_p_for``,
    ``joint_p_against``, the statistics ``joint_median_effect``, ``joint_share_for``, ...
    with their p-values, ``joint_n_null``, ``joint_min_p``, ``joint_note``, ...)."""
    zoos = [z for z in str(ds.attrs.get("zoos", "")).split(",") if z]
    main = str(ds.attrs.get("main_zoo", "")) or zoos[0]
    ds = null_verdict_columns(ds, untrained, shuffled, words)
    jt = nl.joint_tests(data, specifications(zoos), zoo=main, untrained=untrained or None)
    jt = jt.reindex(claim=ds["claim"].values)
    for k, v in jt.data_vars.items():
        ds[k if k.startswith("joint_") else f"joint_{k}"] = v
    ds.attrs["joint_test"] = jt.attrs["test"] + f" (zoo {main}; msapod.studies.verdict.nulls)"
    return ds
