"""The shipped results: ``results/`` read back, verified, and checked against a recomputation.

``msapod reproduce`` writes every number the book shows into a results folder (see
:mod:`msapod.studies.reproduce`) with a ``manifest.json`` that records, for each file, its
sha256, and for the whole folder its provenance: the zoo models with their weights'
sha256, the data's sha256 and the msapod version. The repository ships that folder, so
the book builds without recomputing anything; the pages read it through
:func:`load_result`, which refuses a file whose bytes or provenance do not match:

* the file's sha256 must equal the manifest's entry;
* every model of the manifest must still have the weights it was computed from (the
  ``weights_sha256`` of its ``config.json`` in the zoo);
* the data hash must be the TinyShakespeare hash the library uses.

:func:`check_results` compares a fresh recomputation (``msapod reproduce --check``) with the
shipped folder: same files, variables, coordinates and words; each number within a
tolerance scaled to its variable (:func:`tolerance`), verdicts identical.

What counts as "the same number"
---------------------------------
The fields are float32 (extraction) and everything downstream sums, solves and fits them
in float64 with a BLAS whose summation order depends on the CPU and the thread count, so
two machines agree to about 1e-6 of a quantity's scale, and a conditioned step (an
eigenvalue tail, a ratio of differences) loses one more digit. A real change (another
seed, another rule, a changed step) moves a variable by 1e-2 of its scale or more. So a
recomputed float variable ``x`` agrees with the shipped ``y`` when, element by element,

    |x - y| <= RTOL * max|y| + ATOL,

with ``max|y|`` over the variable's finite values (its scale), :data:`RTOL` = 1e-4 and
:data:`ATOL` = 1e-12 (a floor for variables that are all zero). NaN and infinite values
must match in place (and sign). A variable whose attrs carry ``roundoff_bound`` measures
round-off itself (a row-sum deviation): it agrees when both values are at or below that
bound (the recomputation's attrs, which say what the code measures today, take
precedence over the shipped file's). A variable whose attrs carry ``sign_dims`` holds
vectors defined up to their sign (POD modes: an eigensolver on another CPU may return
``-phi``): each vector, over those dims, is compared after taking the sign that matches
the shipped one. Integers, booleans, words and coordinates are compared exactly (float
coordinates to 1e-12 relative, the last bit a libm may round differently). On failure the
report says, per variable, the largest difference relative to the variable's scale.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from ..._io import fetch, verify_sha256
from ...models.data import SHA256 as DATA_SHA256

__all__ = [
    "ATOL",
    "COORD_RTOL",
    "RTOL",
    "ResultsError",
    "check_results",
    "ensure_results",
    "load_result",
    "manifest",
    "read_manifest",
    "results_dir",
    "tolerance",
]

#: Tolerance of :func:`check_results` relative to a variable's scale (its largest finite
#: magnitude), and the absolute floor (see the module docstring).
RTOL = 1e-4
ATOL = 1e-12
#: Relative tolerance of float coordinates (inputs such as the scale grid, not results).
COORD_RTOL = 1e-12

#: Variables compared exactly (words, flags and counts, not measured numbers).
_EXACT_KINDS = ("U", "S", "O", "b", "i", "u")


class ResultsError(ValueError):
    """The results folder is missing, incomplete, corrupt or stale."""


def results_dir(folder: str | os.PathLike | None = None) -> Path:
    """The results folder: ``folder``, else ``$MSAPOD_RESULTS``, else the repository's
    ``results/`` (beside the ``msapod`` package)."""
    if folder is not None:
        return Path(folder).expanduser()
    if env := os.environ.get("MSAPOD_RESULTS"):
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[3] / "results"


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


def manifest(folder: str | os.PathLike | None = None) -> dict:
    """The manifest of a results folder, with its provenance checked (see module docs).

    Raises
    ------
    ResultsError
        If the folder or its manifest is missing or unreadable, or the provenance does not
        match the zoo's current checkpoints or the data hash.
    """
    root = results_dir(folder)
    path = root / "manifest.json"
    if not path.exists():
        raise ResultsError(
            f"{path}: no results manifest; run `msapod reproduce --results {root}` to create it"
        )
    try:
        man = read_manifest(path)
    except ValueError as err:
        raise ResultsError(str(err)) from None
    _check_provenance(man, path)
    return man


def _check_provenance(man: dict, path: Path) -> None:
    from ...models import zoo

    prov = man.get("provenance")
    if not isinstance(prov, dict):
        raise ResultsError(f"{path}: no 'provenance' (models, data); rerun `msapod reproduce`")
    if prov.get("data_sha256") != DATA_SHA256:
        raise ResultsError(
            f"{path}: computed from data sha256 {prov.get('data_sha256')!r}, expected "
            f"{DATA_SHA256!r}; rerun `msapod reproduce`"
        )
    models = prov.get("weights_sha256")
    if not isinstance(models, dict) or not models:
        raise ResultsError(f"{path}: provenance lists no models; rerun `msapod reproduce`")
    for name, sha in models.items():
        if name not in zoo.MODELS:
            raise ResultsError(f"{path}: model {name!r} is not a zoo model ({list(zoo.MODELS)})")
        try:
            have = zoo.identity(name).weights_sha256
        except (OSError, ValueError) as err:
            raise ResultsError(f"{path}: the zoo's checkpoint of {name}: {err}") from None
        if have != sha:
            raise ResultsError(
                f"{path}: results of {name} were computed from weights {sha[:12]}…, the zoo "
                f"has {have[:12]}…; rerun `msapod reproduce`"
            )


def load_result(name: str, folder: str | os.PathLike | None = None):
    """One shipped result, verified: ``"uncertainty"`` -> ``results/uncertainty.nc``.

    Parameters
    ----------
    name
        File stem (``zoo_analysis``, ``uncertainty``, ``convergence``, ``pruning``, ``llm``,
        ``field_summaries``, ``multiverse``, ...) or ``"scorecard"`` (the CSV).
    folder
        Results folder (default :func:`results_dir`).

    Returns
    -------
    xarray.Dataset or pandas.DataFrame
        The netCDF file loaded into memory (``attrs["source"]`` is its path), or for
        ``"scorecard"`` the table indexed by ``claim``.

    Raises
    ------
    ResultsError
        If the file is not in the manifest, its sha256 differs, or the folder's provenance
        is stale (see :func:`manifest`).
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"name: expected a result name such as 'uncertainty', got {name!r}")
    root = results_dir(folder)
    man = manifest(root)
    fname = name if "." in name else (f"{name}.csv" if name == "scorecard" else f"{name}.nc")
    want = man.get("files", {}).get(fname)
    if want is None:
        raise ResultsError(
            f"{root / 'manifest.json'}: no entry for {fname!r} (has {sorted(man['files'])}); "
            "rerun `msapod reproduce`"
        )
    path = root / fname
    if not path.exists():
        raise ResultsError(f"{path}: listed in the manifest but missing; rerun `msapod reproduce`")
    verify_sha256(
        path,
        want,
        "results file",
        "it differs from the manifest's (the file was changed after `msapod reproduce` wrote it)",
        ResultsError,
    )
    if fname.endswith(".csv"):
        import pandas as pd

        return pd.read_csv(path, index_col=0, keep_default_na=False)
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        ds = ds.load()
    ds.attrs["source"] = str(path)
    return ds


# -- the shipped folder outside a checkout -------------------------------------------------


def _vcs_source() -> str:
    """The raw-file URL of ``results/`` at the commit pip installed msapod from
    (:func:`msapod._io.repository_url`); a :class:`ResultsError` where there is none."""
    from ..._io import repository_url

    url = repository_url("results/")
    if url is None:
        raise ResultsError(
            f"{results_dir()}: no results folder beside the msapod package, and msapod was not "
            'installed from a GitHub repository (pip install "msapod @ git+https://github.com/'
            'OWNER/REPO@REF") to fetch them from; set $MSAPOD_RESULTS to a results folder'
        )
    return url


def ensure_results(source: str | None = None) -> Path:
    """The results folder the pages read, fetched first when it is not on this machine.

    In a checkout (a ``results/`` with its ``manifest.json`` beside the package), or with
    ``$MSAPOD_RESULTS`` set, this returns :func:`results_dir` and does nothing else.
    Otherwise (msapod installed by pip, e.g. on Colab) it downloads ``manifest.json`` and
    every file the manifest lists from ``source`` into ``results/`` of the cache
    (``$MSAPOD_CACHE``, default ``~/.cache/msapod``; one folder per source), each file
    checked against the manifest's sha256 (:mod:`pooch`; files already there and intact
    are not fetched again), and sets ``$MSAPOD_RESULTS`` to that folder, so that
    :func:`load_result` reads it (with the provenance checks of :func:`manifest`).

    Parameters
    ----------
    source
        URL of a results folder (ending in ``/``). Default: ``results/`` of the GitHub
        repository at the commit pip installed msapod from, so results, code and zoo
        weights come from one commit.

    Raises
    ------
    ResultsError
        If there is nowhere to fetch from, or a fetched file's sha256 differs from the
        manifest's (the message names the file).
    """
    if os.environ.get("MSAPOD_RESULTS") or (results_dir() / "manifest.json").exists():
        return results_dir()
    import hashlib

    from ..._io import cache_dir

    source = source if source is not None else _vcs_source()
    if not source.endswith("/"):
        raise ValueError(f"source: expected the URL of a folder, ending in '/', got {source!r}")
    folder = cache_dir() / "results" / hashlib.sha256(source.encode()).hexdigest()[:16]
    return _fetch(source, folder)


def _fetch(source: str, folder: Path) -> Path:
    """Download the manifest at ``source`` and every file it lists into ``folder``."""
    path = fetch(source + "manifest.json", None, ".manifest.json", folder)
    try:
        files = read_manifest(path)["files"]
    except (ValueError, KeyError) as err:
        Path(path).unlink(missing_ok=True)
        raise ResultsError(f"{source}manifest.json: not a results manifest ({err})") from None
    for fname, sha in files.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", fname) or fname.startswith("."):
            raise ResultsError(f"{source}manifest.json: file name {fname!r} is not allowed")
        try:
            fetch(source + fname, sha, fname, folder)
        except ValueError as err:
            raise ResultsError(
                f"results file {fname} from {source}: its sha256 differs from the manifest's "
                f"({err})"
            ) from None
    os.replace(path, folder / "manifest.json")  # last: a folder with a manifest is complete
    os.environ["MSAPOD_RESULTS"] = str(folder)
    return folder


# -- comparison of a recomputation with the shipped folder ---------------------------------

_NUM = re.compile(r"[-+−]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _close_text(a: str, b: str) -> bool:
    """Two formatted texts agree: same words, numbers equal up to one unit in their last
    printed digit (a recomputation may round the other way)."""
    if _NUM.sub("#", str(a)) != _NUM.sub("#", str(b)):
        return False
    na, nb = (_NUM.findall(str(t).replace("−", "-")) for t in (a, b))
    for x, y in zip(na, nb, strict=True):
        if "e" in x:
            if not math.isclose(float(x), float(y), rel_tol=1e-2):
                return False
        elif abs(float(x) - float(y)) > 10.0 ** -len(x.partition(".")[2]) * 1.000001 + 1e-12:
            return False
    return True


def tolerance(shipped: np.ndarray) -> float:
    """The absolute tolerance of a float variable whose shipped values are ``shipped``:
    ``RTOL * max|shipped| + ATOL`` over the finite values (see the module docstring)."""
    finite = np.isfinite(shipped)
    scale = float(np.max(np.abs(shipped[finite]))) if finite.any() else 0.0
    return RTOL * scale + ATOL


def _compare_numbers(name: str, x: np.ndarray, y: np.ndarray, attrs: dict) -> list[str]:
    """One float variable: NaN and infinities in place, then the scaled tolerance (or the
    round-off bound of a variable that measures round-off)."""
    x, y = x.astype(float), y.astype(float)
    if not np.array_equal(np.isnan(x), np.isnan(y)):
        return [f"{name}: NaN pattern differs"]
    inf_x, inf_y = np.isinf(x), np.isinf(y)
    if not np.array_equal(inf_x, inf_y) or not np.array_equal(x[inf_x], y[inf_y]):
        return [f"{name}: infinite values differ"]
    finite = np.isfinite(y)
    x, y = x[finite], y[finite]
    if "roundoff_bound" in attrs:
        bound = float(attrs["roundoff_bound"])
        above = int((np.abs(x) > bound).sum() + (np.abs(y) > bound).sum())
        return [f"{name}: {above} values above its round-off bound {bound:.0e}"] if above else []
    tol = tolerance(y)
    bad = np.abs(x - y) > tol
    if not bad.any():
        return []
    err = float(np.max(np.abs(x - y)))
    scale = (tol - ATOL) / RTOL
    rel = f"{err / scale:.2g} of its scale {scale:.3g}" if scale > 0 else "its scale is 0"
    return [
        f"{name}: {int(bad.sum())} values differ (largest |diff| {err:.3g}, {rel}; "
        f"tolerance {RTOL:g} of the scale)"
    ]


def _matched_sign(x: xr.DataArray, y: xr.DataArray, dims: list[str]) -> np.ndarray:
    """``x`` with each vector over ``dims`` multiplied by the sign that makes it agree
    with ``y``'s (the sign of their inner product; NaN entries left out)."""
    dot = (x.fillna(0.0) * y.fillna(0.0)).sum(dims)
    return (x * xr.where(dot < 0, -1.0, 1.0)).transpose(*y.dims).values


def _compare_netcdf(new: Path, old: Path, part: Mapping[str, Sequence] | None = None) -> list[str]:
    with xr.open_dataset(new, engine="h5netcdf") as a, xr.open_dataset(old, engine="h5netcdf") as b:
        a, b = a.load(), b.load()
    for dim, values in (part or {}).items():
        if dim not in b.dims:
            continue
        if missing := [v for v in values if v not in b[dim].values.tolist()]:
            return [f"{dim} {missing} are not in the shipped file"]
        b = b.sel({dim: list(values)})
    if set(a.variables) != set(b.variables):
        return [f"variables differ: {sorted(set(a.variables) ^ set(b.variables))}"]
    if dict(a.sizes) != dict(b.sizes):
        return [f"sizes differ: {dict(a.sizes)} vs {dict(b.sizes)}"]
    problems = []
    for v in a.variables:
        x, y = a[v].values, b[v].values
        if x.dtype.kind in _EXACT_KINDS or y.dtype.kind in _EXACT_KINDS:
            if diff := int((x.astype(str) != y.astype(str)).sum()):
                problems.append(f"{v}: differs ({diff} cells)")
        elif v in b.coords:
            same = np.isclose(x, y, rtol=COORD_RTOL, atol=0.0, equal_nan=True)
            if not same.all():
                problems.append(f"{v}: coordinate differs ({int((~same).sum())} values)")
        else:
            # the recomputation's attrs say what the code measures today
            attrs = {**b[v].attrs, **a[v].attrs}
            if "sign_dims" in attrs:
                x = _matched_sign(a[v], b[v], str(attrs["sign_dims"]).split())
            problems += _compare_numbers(v, x, y, attrs)
    return problems


def _compare_csv(new: Path, old: Path) -> list[str]:
    import pandas as pd

    a = pd.read_csv(new, index_col=0, keep_default_na=False)
    b = pd.read_csv(old, index_col=0, keep_default_na=False)
    if list(a.index) != list(b.index) or list(a.columns) != list(b.columns):
        return ["rows or columns differ"]
    problems = []
    for col in a.columns:
        for idx in a.index:
            x, y = a.at[idx, col], b.at[idx, col]
            exact = "verdict" in col or col in ("rule", "paper", "page", "cases")
            if (x != y) if exact else not _close_text(x, y):
                problems.append(f"{idx}/{col}: {str(x)[:80]!r} vs shipped {str(y)[:80]!r}")
    return problems


def check_results(
    new: str | os.PathLike,
    shipped: str | os.PathLike | None = None,
    *,
    files: Mapping[str, Mapping[str, Sequence] | None] | None = None,
) -> dict[str, list[str]]:
    """Compare a recomputed results folder ``new`` with the shipped one.

    Every file of the shipped manifest (or of ``files``) must exist in ``new``; netCDF
    files must have the same variables, sizes, coordinates and words, and numbers within
    the tolerance of their variable (see the module docstring); the scorecard CSV must
    have identical verdicts, rules and case counts, and its "measured" texts the same
    words with numbers equal up to one unit in the last printed digit.

    ``files`` maps the file names to compare to the part recomputed for each: ``{dim:
    values}`` (e.g. ``{"model": ["baseline-d256-1"], "draw": [0, 1]}``; ``None``: the
    whole file); a shipped file is then compared on those values of each dim it has.

    Returns
    -------
    dict
        File name -> list of problems (empty lists: the file agrees).
    """
    old_root, new_root = results_dir(shipped), Path(new)
    old_man = manifest(old_root)
    if files is None:
        files = dict.fromkeys(old_man["files"])
    out: dict[str, list[str]] = {}
    for fname in sorted(files):
        a, b = new_root / fname, old_root / fname
        if fname not in old_man["files"]:
            out[fname] = ["not in the shipped manifest"]
        elif not a.exists():
            out[fname] = ["not produced by the recomputation"]
        elif fname.endswith(".csv"):
            out[fname] = _compare_csv(a, b)
        else:
            out[fname] = _compare_netcdf(a, b, files[fname])
    return out
