"""check_claims on planted attention fields: the claims hold where they were built in, do not
where one model of four carries them, and not where the effect is real but far below the
smallest effect of interest."""

import numpy as np
import pytest
import xarray as xr

from msapod.studies import check_claims

MODELS = ["b1", "b2", "e1", "e2"]
ARCH = ["baseline", "baseline", "ega", "ega"]
#: Periods of the mean lag profile per layer: fine early (a* about 5 <= 7), coarse late
#: (a* about 23 >= 20).
FINE_TO_COARSE = {1: 5, 2: 5, 3: 10, 4: 12, 5: 24, 6: 24}


def planted(n=24, length=64, gain=(1.0, 1.0, 1.5, 1.5), periods=None, seed=0):
    """Six layers whose mean lag profile oscillates with ``periods[model][layer]``, plus
    fluctuations whose POD spectrum is exactly k^-1 (layers 1-2: T_spec = 1) to k^-2
    (layers 5-6: more concentrated); model ``m``'s fields scaled by ``gain[m]``."""
    periods = periods or [FINE_TO_COARSE] * len(MODELS)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    lag = i - j
    causal = lag >= 0
    betas = {1: 1.0, 2: 1.0, 3: 1.5, 4: 1.5, 5: 2.0, 6: 2.0}
    out = np.zeros((len(MODELS), 6, n, length, length))
    for m in range(len(MODELS)):
        rng = np.random.default_rng(seed + m)
        for layer in range(1, 7):
            mean = np.where(causal, np.cos(2 * np.pi * lag / periods[m][layer]), 0.0)
            basis = np.linalg.qr(rng.standard_normal((causal.sum(), n - 1)))[0]
            Q = np.linalg.qr(rng.standard_normal((n, n - 1)))[0]
            Q = np.linalg.qr(Q - Q.mean(0))[0]  # zero-mean coefficients: eigenvalues k^-beta
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
def card():
    return check_claims(planted())


def test_planted_claims_hold(card):
    assert list(card.index) == ["C1", "C2", "C3", "C4", "C5", "C7", "C8", "C9", "C10"]
    for claim in ("C1", "C2", "C3", "C7", "C10"):
        assert card.loc[claim, "code"] == "holds", (claim, card.loc[claim, "measured"])
    assert (card["unit"] == "seeds").all()
    assert {"paper", "verdict", "code", "measured", "reason"} <= set(card.columns)


def test_one_model_carrying_the_pattern_neither_holds_nor_partly():
    reversed_ = {layer: FINE_TO_COARSE[7 - layer] for layer in range(1, 7)}
    got = check_claims(planted(periods=[FINE_TO_COARSE] + [reversed_] * 3))
    for claim in ("C1", "C2"):
        assert got.loc[claim, "code"] not in ("holds", "partly"), got.loc[claim, "measured"]


def test_an_architecture_effect_far_below_the_smallest_effect_does_not_hold():
    """EGA's fields 2 % stronger: scalogram energy 4 % higher in every layer and model, a
    real effect well inside C7's smallest effect of interest (10 %)."""
    got = check_claims(planted(gain=(1.0, 1.0, 1.02, 1.02)))
    assert got.loc["C7", "code"] not in ("holds", "partly"), got.loc["C7", "measured"]


def test_one_model_is_decided_on_its_snippets():
    got = check_claims(planted().isel(model=[0], snapshot=slice(0, 12), layer=[0, 1, 2]))
    assert (got["unit"] == "snippets").all()
    assert got.loc["C7", "code"] == "untestable"
    assert "a model of each architecture" in got.loc["C7", "reason"]
    assert got.loc["C4", "code"] == "untestable"  # three layers, not the paper's six


def test_bad_fields_name_the_argument():
    fields = planted(n=6, length=16)
    with pytest.raises(ValueError, match="architecture"):
        check_claims(fields.drop_vars("architecture"))
    with pytest.raises(ValueError, match="fields.*dims"):
        check_claims(fields.isel(model=0))
    with pytest.raises(ValueError, match="unit"):
        check_claims(fields, unit="layers")
