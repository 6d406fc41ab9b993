"""The structure during training: the claims' statistics at checkpoints along a training run.

The trajectory runs retrain the first seed of each architecture of the d = 128 zoo with
the zoo's recipe, keeping the weights after the steps of :data:`STEPS` (``msapod train
NAME --snapshots ...``, stored in the zoo folder as ``snapshots/step-NNNNN``); step 0 is
the initialisation. :func:`trajectory_study` measures every snapshot as the claims'
evidence measures a zoo model (:func:`msapod.studies.measure.evidence.fields_evidence`,
the default reading), with its whole-split validation loss and weights' sha256;
:func:`final_comparison` says whether the retrained final weights equal the shipped
model's (training reproduces bit for bit on the same kind of machine and thread count).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import xarray as xr
from tqdm import tqdm

from ...models import zoo as zoo_mod
from ...models.data import load_corpus
from ...models.train import CONFIG, load_checkpoint, read_config, snapshot_path, validation_loss
from ...wavelets import DEFAULT_NUM_SCALES
from ..registry import WINDOW_AXES
from ..store.cache import cached_dataset, cached_fields
from .convergence import FIXED_K
from .evidence import AXES, EVIDENCE_FORMAT, STATED, fields_evidence

__all__ = [
    "STEPS",
    "TRAJECTORY_FORMAT",
    "checkpoint_folder",
    "default_reading",
    "final_comparison",
    "trajectory_models",
    "trajectory_study",
]

#: Training steps with a snapshot: the initialisation, four points on a logarithmic
#: ladder and the end of training (the zoo's 3000 steps).
STEPS = (0, 30, 100, 300, 1000, 3000)
#: Version of :func:`trajectory_study`'s output; part of its cache key.
TRAJECTORY_FORMAT = 2


def trajectory_models() -> tuple[str, ...]:
    """The retrained models: the first seed of each architecture of the d = 128 zoo."""
    return tuple(zoo_mod.models("d128", a)[0] for a in zoo_mod.ARCHITECTURES)


def checkpoint_folder(name: str, step: int) -> Path:
    """The checkpoint of model ``name`` after ``step`` steps of its trajectory run.

    The snapshot folder of the zoo model (``<zoo>/<name>/snapshots/step-NNNNN``); for the
    last step, when the run reproduced the shipped weights bit for bit and so no separate
    snapshot is kept, the zoo model's own folder.
    """
    if name not in zoo_mod.ZOO_CONFIGS:
        raise ValueError(f"name: expected a zoo model {list(zoo_mod.ZOO_CONFIGS)}, got {name!r}")
    folder = snapshot_path(zoo_mod.path(name), step)
    if (folder / CONFIG).is_file():
        return folder
    if step == zoo_mod.ZOO_CONFIGS[name].steps and (zoo_mod.path(name) / CONFIG).is_file():
        return zoo_mod.path(name)
    raise FileNotFoundError(
        f"{folder}: no snapshot of {name} at step {step}; make it with `msapod train {name} "
        f"--out RUN --snapshots {','.join(map(str, STEPS))}` and copy RUN/snapshots into "
        f"{zoo_mod.path(name)}"
    )


def _default_axes() -> dict:
    """``{axis: (default,)}``: the evidence's default reading of every window axis."""
    return {a: (AXES[a][0],) for a in WINDOW_AXES}


def default_reading(traj: xr.Dataset) -> xr.Dataset:
    """``traj`` with the reading's axes (each of length one) dropped."""
    return traj.squeeze([a for a in WINDOW_AXES if a in traj.dims], drop=True)


def _snapshot_evidence(name: str, step: int, corpus, cache_dir, progress: bool) -> xr.Dataset:
    """The default-reading evidence, validation loss and sha256 of one snapshot (cached)."""
    folder = checkpoint_folder(name, step)
    model = load_checkpoint(folder)
    label = f"{name}-step{step:05d}"
    F = cached_fields(label, model=model, cache_dir=cache_dir, progress=progress)
    parts = {
        "fields_key": F.attrs.get("key"),
        "weights_sha256": model.weights_sha256,
        "axes": {a: [str(v) for v in vals] for a, vals in _default_axes().items()},
        "num_scales": DEFAULT_NUM_SCALES,
        "fixed_k": list(FIXED_K),
        "format": [EVIDENCE_FORMAT, TRAJECTORY_FORMAT],
        "stated": STATED,
        "data_sha256": corpus.sha256,
    }

    def compute() -> xr.Dataset:
        ev = fields_evidence(F, axes=_default_axes(), window_se=False)
        ev["val_loss_split"] = validation_loss(model, corpus.val)
        ev.attrs.update(model=name, step=step)
        return ev

    ev = cached_dataset("trajectory", label, parts, compute, cache_dir=cache_dir)
    return ev.assign(weights_sha256=model.weights_sha256)


def trajectory_study(
    models: Sequence[str] | None = None,
    steps: Sequence[int] = STEPS,
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> xr.Dataset:
    """The claims' statistics of every snapshot of the trajectory runs (cached).

    Parameters
    ----------
    models
        Zoo models with snapshots; default :func:`trajectory_models`.
    steps
        Training steps, each with a snapshot (:func:`checkpoint_folder`).
    cache_dir
        Cache root (fields and results; default ``$MSAPOD_CACHE``).

    Returns
    -------
    xarray.Dataset
        dims ``model``, ``step``, ``layer`` and the evidence's other dims (the reading's
        axes, each of length one: the default reading; ``fit``, ``criterion``, ``rank``,
        ...): the evidence variables (``energy``, ``T_spec``, ``H_star``, the scale
        statistics, each with its jackknife ``*_se``), ``val_loss_split`` (nats/char, the
        whole validation split) and ``weights_sha256`` per model and step; the shipped
        zoo model's ``shipped_sha256`` and ``shipped_val_loss_split`` per model; coord
        ``architecture`` on ``model``.
    """
    models = tuple(trajectory_models() if models is None else models)
    steps = tuple(int(s) for s in steps)
    if not models or not steps:
        raise ValueError(f"models, steps: expected at least one each, got {models}, {steps}")
    corpus = load_corpus()
    todo = tqdm([(m, s) for m in models for s in steps], desc="trajectory", disable=not progress)
    rows = [_snapshot_evidence(name, step, corpus, cache_dir, False) for name, step in todo]
    per_model = [
        xr.concat(rows[i * len(steps) : (i + 1) * len(steps)], dim="step", coords="minimal")
        for i in range(len(models))
    ]
    out = xr.concat(per_model, dim="model", coords="minimal", compat="override")
    shipped = [read_config(zoo_mod.path(m)) for m in models]
    out["shipped_sha256"] = ("model", [c["weights_sha256"] for c in shipped])
    out["shipped_val_loss_split"] = ("model", [float(c["val_loss_split"]) for c in shipped])
    out = out.assign_coords(
        model=list(models),
        step=list(steps),
        architecture=("model", [zoo_mod.architecture(m) for m in models]),
    )
    out.attrs = {
        "description": "claims' statistics along training (default reading)",
        "steps": list(steps),
        "n_snapshots": int(rows[0].attrs["n_snapshots"]),
    }
    return out


def final_comparison(traj: xr.Dataset) -> pd.DataFrame:
    """The retrained final checkpoint of each model of ``traj`` (:func:`trajectory_study`)
    against the shipped zoo model: both weights' sha256 (first 16 hex digits), whether they
    are identical, and both whole-split validation losses (nats/char) with their difference.
    """
    last = traj.sel(step=traj["step"].values[-1])
    new = [str(h) for h in last["weights_sha256"].values]
    old = [str(h) for h in traj["shipped_sha256"].values]
    table = pd.DataFrame(
        {
            "shipped sha256": [h[:16] + "…" for h in old],
            "retrained sha256": [h[:16] + "…" for h in new],
            "identical": ["yes" if a == b else "no" for a, b in zip(old, new, strict=True)],
            "shipped loss": traj["shipped_val_loss_split"].values,
            "retrained loss": last["val_loss_split"].values,
        },
        index=pd.Index([str(m) for m in traj["model"].values], name="model"),
    )
    table["difference"] = table["retrained loss"] - table["shipped loss"]
    return table
