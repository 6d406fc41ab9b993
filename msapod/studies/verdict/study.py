"""The curve study, cached: every claim on every trained zoo with its null columns and joint
test (``results/multiverse.nc``, :func:`multiverse_study`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from ...models import zoo as zoo_mod
from ..measure.evidence import model_evidence, needs_window_se
from ..measure.nullfields import TEXT_NULLS, null_evidence
from ..registry import WINDOW_AXES
from ..store.cache import cached_dataset, stack_models
from .curve import (
    CLAIM_IDS,
    MAIN_READING,
    NULL_COLUMNS,
    assemble,
    null_outcomes,
    robustness,
    source_hash,
)
from .joint import joint_tests
from .outcome import Outcome
from .statistics import Zoo

__all__ = [
    "EVIDENCE_KINDS",
    "MAIN_AXES",
    "decided",
    "input_digest",
    "multiverse_study",
    "null_columns",
    "trained_zoos",
    "zoo_evidence",
    "zoo_losses",
    "zoo_of",
]

#: The evidence the curve reads, by kind: the trained models of every trained zoo, the
#: same models at initialisation and the main zoo's trained models on snippets with their
#: characters or their words shuffled (at the default reading, :data:`MAIN_AXES`).
EVIDENCE_KINDS = ("trained", *NULL_COLUMNS)
#: The window readings cut to the default reading (what the text nulls measure).
MAIN_AXES = {a: (MAIN_READING[a],) for a in WINDOW_AXES}


def trained_zoos(zoos: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
    """``(trained, not_trained)`` among ``zoos`` (default every zoo, the main first): a zoo
    is analysed when it has a trained model of each architecture."""
    names = list(zoo_mod.ZOOS) if zoos is None else list(zoos)
    for z in names:
        if z not in zoo_mod.ZOOS:
            raise ValueError(f"zoos: expected names from {list(zoo_mod.ZOOS)}, got {z!r}")
    names = sorted(names, key=lambda z: z != zoo_mod.MAIN)
    ok = [z for z in names if all(zoo_mod.trained(z, a) for a in zoo_mod.ARCHITECTURES)]
    return ok, [z for z in names if z not in ok]


def zoo_losses(models: Sequence[str]) -> xr.DataArray:
    """Whole-split validation losses of ``models`` (``val_loss_split`` of their
    ``config.json``), with an ``architecture`` coordinate."""
    ids = [zoo_mod.identity(m) for m in models]
    return xr.DataArray(
        [i.meta.get("val_loss_split", i.meta["val_loss"]) for i in ids],
        dims="model",
        coords={"model": list(models), "architecture": ("model", [i.architecture for i in ids])},
        attrs={"long_name": "validation loss over the whole split", "units": "nats/char"},
    )


def zoo_evidence(
    models: Sequence[str] | None = None,
    *,
    null_models: Sequence[str] | None = None,
    progress: bool = False,
    cache_dir=None,
) -> dict[str, xr.Dataset]:
    """The per-model evidence of :data:`EVIDENCE_KINDS`, each stacked along ``model``
    (computed or read from the cache; ``msapod reproduce`` ships it as
    ``results/evidence*.nc``). ``models``: a subset of the trained models of the trained
    zoos (default all); ``null_models``: those of ``models`` whose null ensembles are
    measured too (default all of them). Theorem 1 is checked on layer 4 of each zoo's
    first model."""
    trained, _ = trained_zoos()
    names = [m for z in trained for m in zoo_mod.trained(z)]
    if models is not None and (unknown := [m for m in models if m not in names]):
        raise ValueError(f"models: expected trained models of the zoos {trained}, got {unknown}")
    if null_models is not None and (
        unknown := [m for m in null_models if m not in (names if models is None else models)]
    ):
        raise ValueError(f"null_models: expected some of models, got {unknown}")
    stacks = {k: {} for k in EVIDENCE_KINDS}  # {kind: {model: evidence}}
    for z in trained:
        zoo_models = list(zoo_mod.trained(z))
        window_se = needs_window_se(zoo_models)
        for m in zoo_models:
            if models is not None and m not in models:
                continue
            kw = dict(
                progress=progress,
                cache_dir=cache_dir,
                theorem1_layer=4 if m == zoo_models[0] else 0,
                window_se=window_se,
            )
            got = {"trained": model_evidence(m, **kw)}
            if null_models is None or m in null_models:
                got["untrained"] = null_evidence(m, "untrained", **kw)
                if z == trained[0]:
                    got.update({n: null_evidence(m, n, axes=MAIN_AXES, **kw) for n in TEXT_NULLS})
            for kind, ev in got.items():
                stacks[kind][m] = ev
    return {k: stack_models(list(v.values()), list(v)) for k, v in stacks.items() if v}


def zoo_of(
    evidence: xr.Dataset,
    models: Sequence[str],
    *,
    convergence: xr.Dataset | None = None,
    pruning: xr.Dataset | None = None,
    losses: xr.DataArray | None = None,
    name: str = "",
) -> Zoo:
    """The :class:`~.statistics.Zoo` of ``models`` from stacked evidence and studies."""
    ev = evidence.sel(model=list(models))
    ev.attrs["n_snapshots"] = int(ev.sizes["rank"])

    def sub(ds):
        return None if ds is None else ds.sel(model=list(models))

    return Zoo(ev, sub(convergence), sub(pruning), sub(losses), name=name)


def null_columns(nulls: Mapping[str, Zoo]) -> xr.Dataset:
    """The default reading's code of every claim on each null ensemble (``{null: Zoo}`` of
    :data:`~.curve.NULL_COLUMNS`): ``null_verdict(claim, null)`` (``""`` where the null
    does not address the claim) and ``null_reason`` (the registry's reason then)."""
    code = np.full((len(CLAIM_IDS), len(NULL_COLUMNS)), "", dtype=object)
    why = np.full(code.shape, "", dtype=object)
    for j, null in enumerate(NULL_COLUMNS):
        if null not in nulls:
            why[:, j] = "not computed"
            continue
        for i, got in enumerate(null_outcomes(nulls[null], null).values()):
            if isinstance(got, Outcome):
                code[i, j] = got.code
            else:
                why[i, j] = got
    return xr.Dataset(
        {
            "null_verdict": (("claim", "null"), code.astype(str)),
            "null_reason": (("claim", "null"), why.astype(str)),
        },
        coords={"claim": list(CLAIM_IDS), "null": list(NULL_COLUMNS)},
    )


def decided(zoos: Mapping[str, Zoo], nulls: Mapping[str, Zoo] | None = None) -> xr.Dataset:
    """The curve of ``zoos`` (the main first) with its robustness, the null columns
    (``nulls``: the main zoo's null ensembles) and the joint test."""
    ds = assemble(zoos)
    ds = ds.merge(robustness(ds)).merge(null_columns(nulls or {}))
    jt = joint_tests(ds)
    ds = ds.merge(jt)
    ds.attrs.update(jt.attrs)
    return ds


def multiverse_study(
    zoos: Sequence[str] | None = None,
    *,
    evidence: Mapping[str, xr.Dataset] | None = None,
    convergence: xr.Dataset | None = None,
    pruning: xr.Dataset | None = None,
    depth: xr.Dataset | None = None,
    progress: bool = False,
    cache_dir=None,
) -> xr.Dataset:
    """Every claim under every reading on every trained zoo, with robustness, null columns
    and the joint test (see the module docstring).

    Parameters
    ----------
    zoos
        Zoo names (default every zoo); zoos without a trained model of each architecture
        are skipped and listed in the attr ``not_trained``.
    evidence
        ``{kind: stacked evidence}`` of :data:`EVIDENCE_KINDS` (e.g. the shipped, verified
        ``results/evidence*.nc``); None computes it or reads it from the cache.
    convergence, pruning, depth
        The main zoo's convergence study, pruning study and C6's depth test (None:
        computed or read from the cache); another zoo has none, so its N = 400 readings and
        C6 are untestable and say so.
    progress, cache_dir
        Progress bars; the cache root.
    """
    from ..measure.convergence import convergence_study
    from ..measure.prune import depth_study, pruning_study

    trained, untrained = trained_zoos(zoos)
    main_models = list(zoo_mod.trained(trained[0]))
    kw = dict(progress=progress, cache_dir=cache_dir)
    ev = dict(evidence) if evidence is not None else zoo_evidence(**kw)
    conv = convergence if convergence is not None else convergence_study(main_models, **kw)
    prune = pruning if pruning is not None else pruning_study(main_models, **kw)
    deep = depth if depth is not None else depth_study(main_models, **kw)

    def compute() -> xr.Dataset:
        zoos_ = {}
        for z in trained:
            models = list(zoo_mod.trained(z))
            both = xr.merge([prune, deep], compat="override", combine_attrs="drop_conflicts")
            studies = dict(convergence=conv, pruning=both) if z == trained[0] else {}
            zoos_[z] = zoo_of(ev["trained"], models, losses=zoo_losses(models), name=z, **studies)
        nulls = {n: zoo_of(ev[n], main_models, name=n) for n in NULL_COLUMNS if n in ev}
        ds = decided(zoos_, nulls)
        ds.attrs["not_trained"] = ",".join(untrained)
        return ds

    weights = {m: zoo_mod.identity(m).weights_sha256 for z in trained for m in zoo_mod.trained(z)}
    parts = {
        "source": source_hash(),
        "zoos": trained,
        "weights_sha256": weights,
        "inputs": input_digest(*ev.values(), conv, prune, deep),
    }
    label = "study-" + "+".join(trained)
    return cached_dataset("multiverse", label, parts, compute, cache_dir=cache_dir)


def input_digest(*datasets: xr.Dataset | None) -> str:
    """sha256 of the values, dims and coordinates of every variable of ``datasets`` (what
    the curve is computed from: a changed input is a new cache key)."""
    h = hashlib.sha256()
    for ds in datasets:
        if ds is None:
            h.update(b"none")
            continue
        for name in sorted(map(str, ds.variables)):
            v = ds.variables[name]
            h.update(repr((name, v.dims, v.dtype.str, v.shape)).encode())
            h.update(np.ascontiguousarray(v.values).tobytes())
    return h.hexdigest()
