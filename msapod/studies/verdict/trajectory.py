"""The claims' tests at each step of the training trajectory.

:func:`step_verdicts` decides every claim that the trajectory's evidence can speak to
(:func:`msapod.studies.measure.trajectory.trajectory_study`: one model per architecture,
snapshots along training) with the scorecard's own tests (:func:`.outcome.evaluate`), once
per step, so the page on the structure during training says at which stage each of the
paper's patterns appears, in the scorecard's words. With one model per architecture there
are no seeds to replicate over: the unit of inference is the snippets (the two models as
they are), and the architecture contrasts (C7, C8, L) compare one model with one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scipy import special

from ..measure.trajectory import default_reading
from ..registry import REGISTRY
from .curve import MAIN_READING
from .outcome import Outcome, evaluate
from .render import word
from .statistics import Zoo

__all__ = [
    "STEP_CLAIMS",
    "ega_contrast",
    "reproduction_text",
    "stages_text",
    "step_outcomes",
    "step_verdicts",
]

#: The claims whose evidence the trajectory holds (not the pruning claim, C6: no pruning
#: per snapshot; not the theorem, C10: it holds for any ensemble and is checked on the zoo).
STEP_CLAIMS = tuple(
    c.id for c in REGISTRY.values() if c.source != "pruning" and c.kind != "theorem"
)
#: Two-sided 95 % normal quantile (the snippet intervals of :func:`ega_contrast`).
Z95 = float(special.ndtri(0.975))


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
    outcomes = step_outcomes(traj)
    table = pd.DataFrame(
        {step: {c: o.code for c, o in per.items()} for step, per in outcomes.items()}
    )
    table.index.name = "claim"
    table.columns.name = "step"
    return table


def ega_contrast(traj: xr.Dataset, var: str):
    """EGA minus baseline of ``var`` (default reading) per step and layer, with the 95 %
    interval of the difference from the two models' jackknife standard errors (one seed
    per architecture: an interval over the snippets only, a comparison, not a verdict).

    Returns ``(difference, lower, upper)``, dims ``(step, layer, ...)``.
    """
    d = default_reading(traj)
    arch = d["architecture"].values
    if sorted(arch) != ["baseline", "ega"]:
        raise ValueError(f"traj: expected one baseline and one EGA model, got {list(arch)}")
    ega = d[var].isel(model=int(np.flatnonzero(arch == "ega")[0]), drop=True)
    base = d[var].isel(model=int(np.flatnonzero(arch == "baseline")[0]), drop=True)
    se_e = d[f"{var}_se"].isel(model=int(np.flatnonzero(arch == "ega")[0]), drop=True)
    se_b = d[f"{var}_se"].isel(model=int(np.flatnonzero(arch == "baseline")[0]), drop=True)
    diff = ega - base
    half = Z95 * np.sqrt(se_e**2 + se_b**2)
    return diff, diff - half, diff + half


def stages_text(table: pd.DataFrame) -> str:
    """Per claim, the verdict at each stage of training, consecutive steps with the same
    verdict merged (``table``: :func:`step_verdicts`, codes), as Markdown bullets."""
    steps = [int(s) for s in table.columns]
    lines = []
    for claim, row in table.iterrows():
        runs, start = [], 0
        words = list(row.values)
        for i in range(1, len(words) + 1):
            if i == len(words) or words[i] != words[start]:
                a, b = steps[start], steps[i - 1]
                where = f"step {a}" if a == b else f"steps {a}–{b}"
                runs.append(f"{word(words[start])} at {where}")
                start = i
        text = runs[0] if len(runs) == 1 else "; ".join(runs)
        if len(runs) == 1:
            text = f"{word(words[0])} at every step"
        lines.append(f"* **{claim}** ({REGISTRY[claim].paper}): {text}.")
    return "\n".join(lines)


def reproduction_text(table: pd.DataFrame) -> str:
    """One sentence on whether the retraining reproduced the shipped models
    (``table``: :func:`msapod.studies.measure.trajectory.final_comparison`)."""
    same = table.index[table["identical"] == "yes"].tolist()
    other = table.index[table["identical"] != "yes"].tolist()
    if not other:
        return (
            f"The retrained final weights of {', '.join(same)} are identical to the shipped "
            "ones, bit for bit: training reproduces from its recipe."
        )
    gaps = ", ".join(f"{m} by {abs(table.loc[m, 'difference']):.4f} nats/char" for m in other)
    head = f"{', '.join(same)} reproduced bit for bit; " if same else ""
    return (
        f"{head}the retrained final weights of {', '.join(other)} differ from the shipped "
        f"ones (another machine or thread count changes the floating-point order of "
        f"the sums); their whole-split validation losses differ {gaps}."
    )
