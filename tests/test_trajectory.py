"""The training trajectory: snapshots, their verification and the step-by-step texts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import xarray as xr

from msapod.models import zoo
from msapod.models.train import load_checkpoint, read_config
from msapod.studies.measure import trajectory as measure
from msapod.studies.verdict import trajectory
from msapod_book import figures, prose


def test_trajectory_models_are_the_first_d128_seeds():
    models = measure.trajectory_models()
    assert models == tuple(zoo.models("d128", a)[0] for a in zoo.ARCHITECTURES)


def test_step_zero_is_the_initialisation():
    """The shipped step-0 snapshot holds the weights ``train`` starts from."""
    from msapod.models.gpt import GPT

    name = measure.trajectory_models()[0]
    cfg = zoo.ZOO_CONFIGS[name]
    torch.manual_seed(cfg.seed)
    init = GPT(cfg.model).state_dict()
    got = load_checkpoint(measure.checkpoint_folder(name, 0)).state_dict()
    assert all(torch.equal(init[k], got[k]) for k in got)
    assert read_config(measure.checkpoint_folder(name, 0))["step"] == 0


def test_checkpoint_folder_errors_name_the_fix():
    name = measure.trajectory_models()[0]
    with pytest.raises(FileNotFoundError, match="--snapshots"):
        measure.checkpoint_folder(name, 7)
    with pytest.raises(ValueError, match="name"):
        measure.checkpoint_folder("no-such-model", 0)


def _traj(sha_last=("a" * 64, "b" * 64)) -> xr.Dataset:
    steps = [0, 30]
    shas = np.array([["0" * 64, sha_last[0]], ["1" * 64, sha_last[1]]])
    return xr.Dataset(
        {
            "weights_sha256": (("model", "step"), shas),
            "val_loss_split": (("model", "step"), [[4.2, 1.50], [4.2, 1.49]]),
            "shipped_sha256": ("model", ["a" * 64, "c" * 64]),
            "shipped_val_loss_split": ("model", [1.50, 1.48]),
        },
        coords={"model": ["baseline-1", "ega-1"], "step": steps},
    )


def test_final_comparison():
    table = measure.final_comparison(_traj())
    assert table["identical"].tolist() == ["yes", "no"]
    assert table.loc["ega-1", "difference"] == pytest.approx(0.01)


def test_stages_text_merges_runs_of_one_verdict():
    table = pd.DataFrame(
        {0: ["refuted", "holds"], 30: ["refuted", "partly"], 100: ["holds", "partly"]},
        index=["C3", "C5"],
    )
    text = prose.stages_text(table)
    assert "does not hold at steps 0–30; holds at step 100" in text
    assert "holds at step 0; partly at steps 30–100" in text
    one = prose.stages_text(table.iloc[:, :1])
    assert "does not hold at every step" in one


def test_ega_contrast_needs_one_model_per_architecture():
    ds = xr.Dataset(
        {
            "energy": (("model", "step"), [[1.0, 2.0], [1.5, 2.5]]),
            "energy_se": (("model", "step"), [[0.3, 0.0], [0.4, 0.0]]),
        },
        coords={
            "model": ["baseline-1", "ega-1"],
            "step": [0, 30],
            "architecture": ("model", ["baseline", "ega"]),
        },
    )
    diff, lo, up = figures.ega_contrast(ds, "energy")
    assert diff.values.tolist() == [0.5, 0.5]
    assert float(up[0] - diff[0]) == pytest.approx(1.959964 * 0.5, rel=1e-6)
    with pytest.raises(ValueError, match="one baseline and one EGA"):
        figures.ega_contrast(ds.assign_coords(architecture=("model", ["ega", "ega"])), "energy")


def test_every_step_is_decided_on_the_snippets():
    """One model per architecture: the snippets are the unit of inference, so the scale
    claims are decided at every step (no seeds to replicate over)."""
    from msapod.studies.store.results import load_result

    traj = load_result("trajectory")
    outcomes = trajectory.step_outcomes(traj)
    for per in outcomes.values():
        assert per["C1"].code != "untestable" and per["C2"].code != "untestable"
        assert per["C3"].code != "untestable"
    table = trajectory.step_verdicts(traj)
    assert list(table.columns) == [int(s) for s in traj["step"].values]
