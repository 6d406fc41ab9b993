"""The claims' tests at each step of the training trajectory.

:func:`step_verdicts` decides every claim that the trajectory's evidence
(:func:`msapod.studies.measure.trajectory.trajectory_study`) can speak to with the
scorecard's own tests, once per step. With one model per architecture the unit of
inference is the snippets, and the architecture contrasts compare one model with one.
"""

from __future__ import annotations

import pandas as pd
import xarray as xr

from ..registry import REGISTRY
from .curve import MAIN_READING
from .outcome import Outcome, evaluate
from .statistics import Zoo

__all__ = ["STEP_CLAIMS", "step_outcomes", "step_verdicts"]

#: The claims whose evidence the trajectory holds (not the pruning claim, C6: no pruning
#: per snapshot; not the theorem, C10: it holds for any ensemble and is checked on the zoo).
STEP_CLAIMS = tuple(
    c.id for c in REGISTRY.values() if c.source != "pruning" and c.kind != "theorem"
)


def _step_zoo(traj: xr.Dataset, step: int) -> Zoo:
    """The evidence of every model at ``step`` and its whole-split validation loss."""
    at = traj.sel(step=step)
    ev = at.drop_vars(["val_loss_split", "weights_sha256", "step"], errors="ignore")
    ev.attrs = {**traj.attrs, "n_snapshots": int(traj.attrs["n_snapshots"])}
    return Zoo(ev, losses=at["val_loss_split"], name=f"step {step}")


def step_outcomes(traj: xr.Dataset) -> dict[int, dict[str, Outcome]]:
    """``{step: {claim: Outcome}}``: the scorecard's tests on the trajectory's evidence at
    every step (:data:`STEP_CLAIMS`), the snippets the unit of inference."""
    reading = {**MAIN_READING, "unit": "snippets", "n": int(traj.attrs["n_snapshots"])}
    return {
        int(step): {c: evaluate(c, _step_zoo(traj, int(step)), reading) for c in STEP_CLAIMS}
        for step in traj["step"].values
    }


def step_verdicts(traj: xr.Dataset) -> pd.DataFrame:
    """The verdict codes of :func:`step_outcomes`: index claim, one column per step."""
    codes = {step: {c: o.code for c, o in per.items()} for step, per in step_outcomes(traj).items()}
    return pd.DataFrame(codes).rename_axis(index="claim", columns="step")
