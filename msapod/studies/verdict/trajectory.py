"""The claims' rules at each step of the training trajectory.

:func:`step_verdicts` decides every claim that the trajectory's evidence can speak to
(:func:`msapod.studies.measure.trajectory.trajectory_study`: one model per architecture,
snapshots along training) with the scorecard's own rules
(:func:`msapod.studies.verdict.multiverse.main_outcomes`), once per step, so the page on
the structure during training says at which stage each of the paper's patterns appears
in the very words of the scorecard; C1 and C2 read each step against step 0, the
initialisation (the zoo's untrained reference). With one seed per architecture the rules
that compare architectures (C7, C8, L) need two seeds each and say so ("not testable as
stated"); the page draws those contrasts with their snapshot intervals as comparisons instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..measure.trajectory import default_reading
from ..registry import REGISTRY
from .multiverse import ZooData, main_outcomes
from .rules import interval

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


def _step_data(traj: xr.Dataset, step: int) -> ZooData:
    """The zoo data of the rules at one step: the evidence of every model at ``step``,
    its whole-split validation losses as the loss claim's input, and as C1's and C2's
    reference the snapshot at step 0 (the initialisation, ``torch.manual_seed(seed)`` on
    the model's config: the same weights as the zoo's untrained reference)."""
    drop = ["val_loss_split", "weights_sha256", "step"]
    at = traj.sel(step=step)
    ev = at.drop_vars(drop, errors="ignore")
    ev.attrs = {**traj.attrs, "n_snapshots": int(traj.attrs["n_snapshots"])}
    loss = (at["val_loss_split"], False)
    ref = traj.sel(step=0).drop_vars(drop, errors="ignore") if 0 in traj["step"] else None
    return ZooData(list(traj["model"].values), ev, None, None, loss, reference=ref)


def step_outcomes(traj: xr.Dataset) -> dict[int, dict]:
    """``{step: {claim: Outcome}}``: the scorecard's rules on the trajectory's evidence at
    every step (:data:`STEP_CLAIMS`)."""
    out = {}
    for step in traj["step"].values:
        outcomes = main_outcomes(_step_data(traj, int(step)))
        out[int(step)] = {c: outcomes[c] for c in STEP_CLAIMS if c in outcomes}
    return out


def step_verdicts(traj: xr.Dataset) -> pd.DataFrame:
    """The verdict words of :func:`step_outcomes`: index claim, one column per step."""
    outcomes = step_outcomes(traj)
    table = pd.DataFrame(
        {step: {c: o.verdict for c, o in per.items()} for step, per in outcomes.items()}
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
    lower, upper = interval(diff, np.sqrt(se_e**2 + se_b**2))
    return diff, lower, upper


def stages_text(table: pd.DataFrame) -> str:
    """Per claim, the verdict at each stage of training, consecutive steps with the same
    verdict merged (``table``: :func:`step_verdicts`), as Markdown bullets."""
    steps = [int(s) for s in table.columns]
    lines = []
    for claim, row in table.iterrows():
        runs, start = [], 0
        words = list(row.values)
        for i in range(1, len(words) + 1):
            if i == len(words) or words[i] != words[start]:
                a, b = steps[start], steps[i - 1]
                where = f"step {a}" if a == b else f"steps {a}–{b}"
                runs.append(f"{words[start]} at {where}")
                start = i
        text = runs[0] if len(runs) == 1 else "; ".join(runs)
        if len(runs) == 1:
            text = f"{words[0]} at every step"
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
