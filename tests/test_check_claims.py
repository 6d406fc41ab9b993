"""check_claims on planted fields: the claims hold where they were built in, and an
architecture effect disappears under shuffled labels."""

import numpy as np
import pytest
import xarray as xr

from msapod.studies import check_claims
from msapod.studies.claims import VERDICTS

MODELS = ["b1", "b2", "e1", "e2"]
ARCH = ["baseline", "baseline", "ega", "ega"]


def planted(n=60, length=64, gain=(1.0, 1.0, 1.5, 1.5)):
    """Six layers whose mean lag profile oscillates with period 5 (layers 1-2, so
    a* = 5 / 1.033 <= 7) up to 24 (layers 5-6, a* >= 20), plus fluctuations whose POD
    spectrum is exactly k^-1 (layers 1-2: T_spec = 1) to k^-2 (layers 5-6: more
    concentrated); the "ega" models are the same fields scaled by 1.5 (more energy)."""
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    lag = i - j
    causal = lag >= 0
    periods = {1: 5, 2: 5, 3: 10, 4: 12, 5: 24, 6: 24}
    betas = {1: 1.0, 2: 1.0, 3: 1.5, 4: 1.5, 5: 2.0, 6: 2.0}
    out = np.zeros((len(MODELS), 6, n, length, length))
    for m in range(len(MODELS)):
        rng = np.random.default_rng(m)
        for layer in range(1, 7):
            mean = np.where(causal, np.cos(2 * np.pi * lag / periods[layer]), 0.0)
            basis = np.linalg.qr(rng.standard_normal((causal.sum(), n - 1)))[0]
            # orthonormal snapshot coefficients with zero mean: POD eigenvalues k^-beta
            Q = np.linalg.qr(rng.standard_normal((n, n - 1)) - 0.0)[0]
            Q = np.linalg.qr(Q - Q.mean(0))[0]
            coef = Q * np.arange(1, n) ** (-betas[layer] / 2)
            u = np.zeros((n, length, length))
            u[:, causal] = 0.3 * coef @ basis.T
            out[m, layer - 1] = gain[m] * (mean + u)
    return xr.DataArray(
        out,
        dims=("model", "layer", "snapshot", "query", "key"),
        coords={"model": MODELS, "layer": np.arange(1, 7), "architecture": ("model", ARCH)},
    )


@pytest.fixture(scope="module")
def fields():
    return planted()


def test_planted_claims_hold(fields):
    card = check_claims(fields)
    assert list(card.index) == ["C1", "C2", "C3", "C4", "C5", "C7", "C8", "C9", "C10"]
    assert set(card["verdict"]) <= set(VERDICTS)
    for claim in ("C1", "C2", "C3", "C7", "C10"):
        assert card.loc[claim, "verdict"] == "holds", (claim, card.loc[claim, "measured"])
    assert card.loc["C3", "paper_value"].startswith(("compatible", "partly"))
    assert {"verdict", "measured", "interval", "rule", "cases", "reason"} <= set(card.columns)


def test_shuffled_architecture_labels_are_not_significant(fields):
    shuffled = fields.assign_coords(architecture=("model", ["baseline", "ega", "baseline", "ega"]))
    card = check_claims(shuffled)
    assert card.loc["C7", "verdict"] == "not significant"


def test_one_model_says_what_needs_more_models(fields):
    card = check_claims(fields.isel(model=[0], snapshot=slice(0, 12), layer=[0, 1, 2]))
    assert card.loc["C7", "verdict"] == "not testable as stated"
    assert "at least 2 models" in card.loc["C7", "reason"]
    assert card.loc["C4", "verdict"] == "not testable as stated"  # three layers, not six


def test_bad_fields_name_the_argument(fields):
    with pytest.raises(ValueError, match="architecture"):
        check_claims(fields.drop_vars("architecture"))
    with pytest.raises(ValueError, match="fields.*dims"):
        check_claims(fields.isel(model=0))
    with pytest.raises(ValueError, match="readings"):
        check_claims(fields, readings="some")
