"""C1's and C2's statistics of the scale spectrum: the band shares and the log-log slope
on spectra whose answer is known, and the rules that read them against a reference."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from msapod.studies import check_claims
from msapod.studies.measure.evidence import (
    SLOPE_RANGE,
    band_evidence,
    band_shares,
    causal_window,
    spectrum_slope,
)
from msapod.studies.registry import REGISTRY
from msapod.studies.verdict import rules
from msapod.studies.verdict.multiverse import MAIN_SPEC, ZooData, evaluate
from msapod.wavelets import log_scales

sys.path.insert(0, str(Path(__file__).parent))
from test_check_claims import ARCH, MODELS  # noqa: E402


@pytest.mark.parametrize("p", [-1.5, 0.0, 0.7, 2.0])
def test_slope_of_a_power_law(p):
    s = log_scales(256, 3.0, 128.0, 48)
    got = spectrum_slope(3.0 * s**p, s)
    assert got == pytest.approx(p, abs=1e-9 * max(1.0, abs(p)))


def test_slope_reads_only_its_range():
    # a broken power law: a^-2 below 10, a^+1 above; the fit over [12, 100] sees +1 only
    s = log_scales(256, 3.0, 128.0, 48)
    E = np.where(s < 10, 10.0**3 * s**-2.0, s**1.0)
    assert spectrum_slope(E, s, (12.0, 100.0)) == pytest.approx(1.0, abs=1e-9)
    assert not spectrum_slope(E, s, (3.0, 128.0)) == pytest.approx(1.0, abs=0.1)
    # too few scales in the range, or no energy there: no slope
    assert np.isnan(spectrum_slope(E, s, (200.0, 300.0)))
    assert np.isnan(spectrum_slope(np.zeros_like(s), s))
    with pytest.raises(ValueError, match="scale_range"):
        spectrum_slope(E, s, (10.0, 5.0))


@pytest.mark.parametrize("p", [-1.0, 0.5, 1.0])
def test_band_shares_of_a_power_law_equal_the_integral(p):
    """On a dense log grid the shares are the integrals of a^p over d ln a:
    (7^p - a0^p) / (a1^p - a0^p) below 7 and (a1^p - 20^p) / (a1^p - a0^p) above 20."""
    a0, a1 = 3.0, 128.0
    s = log_scales(256, a0, a1, 2000)
    fine, coarse = band_shares(s**p, s)
    den = a1**p - a0**p
    assert fine == pytest.approx((7.0**p - a0**p) / den, abs=2e-3)
    assert coarse == pytest.approx((a1**p - 20.0**p) / den, abs=2e-3)


def test_band_shares_edge_cases():
    s = log_scales(256, 3.0, 128.0, 48)
    spike_fine = np.where(np.arange(s.size) == 2, 1.0, 0.0)
    spike_coarse = np.where(np.arange(s.size) == s.size - 3, 1.0, 0.0)
    assert band_shares(spike_fine, s) == (1.0, 0.0)
    assert band_shares(spike_coarse, s) == (0.0, 1.0)
    fine, coarse = band_shares(np.zeros_like(s), s)
    assert np.isnan(fine) and np.isnan(coarse)
    with pytest.raises(ValueError, match="scales"):
        band_shares(np.ones(5), s)


def _lag_field(profile, n=40, length=64, seed=0, layers=6, noise=0.05):
    """``layers`` layers of n snapshots whose lag profile is ``profile(lag)`` (the same in
    every layer) plus independent noise per layer and snapshot, causal."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    lag = i - j
    causal = lag >= 0
    mean = np.where(causal, profile(np.maximum(lag, 0)), 0.0)
    noise = noise * rng.standard_normal((layers, n, length, length)) * mean.max()
    F = np.where(causal, mean + noise, 0.0)
    return xr.DataArray(
        F,
        dims=("layer", "snapshot", "query", "key"),
        coords={
            "layer": np.arange(1, layers + 1),
            "query": np.arange(length),
            "key": np.arange(length),
        },
    )


def test_band_evidence_of_fine_and_coarse_oscillations():
    """A lag profile oscillating with period 4 puts most of E(a) at a <= 7; one with
    period 40 most at a >= 20 (the rectified spectrum of the attention, scales from 3)."""
    main = {a: (MAIN_SPEC[a],) for a in ("field", "normalisation", "scale_min")}
    fine = band_evidence(_lag_field(lambda t: 1 + np.cos(2 * np.pi * t / 4), layers=1), axes=main)
    coarse = band_evidence(
        _lag_field(lambda t: 1 + np.cos(2 * np.pi * t / 40), layers=1), axes=main
    )
    assert float(fine["fine_share"].squeeze()) > 0.5 > float(coarse["fine_share"].squeeze())
    assert float(coarse["coarse_share"].squeeze()) > 0.5 > float(fine["coarse_share"].squeeze())
    assert float(coarse["scale_slope"].squeeze()) > float(fine["scale_slope"].squeeze())
    assert (fine["fine_share_se"] > 0).all()  # the noise gives the jackknife something


def test_causal_window_is_uniform_and_row_stochastic():
    like = _lag_field(lambda t: np.ones_like(t, dtype=float), n=3, length=16, layers=1)
    w = causal_window(like)
    np.testing.assert_allclose(w.sum("key").values, 1.0, rtol=1e-12)
    assert float(w.isel(layer=0, snapshot=0, query=3, key=2)) == pytest.approx(0.25)
    assert float(w.isel(layer=0, snapshot=0, query=3, key=5)) == 0.0


def power_law_fields(n=40, length=64):
    """Four models whose six layers all have the same lag profile (lag + 1)^-1 and the
    same kind of fluctuations: no layer is finer or coarser than another."""
    out = []
    for m in range(len(MODELS)):
        out.append(_lag_field(lambda t: (t + 1.0) ** -1, n=n, length=length, seed=m).values)
    return xr.DataArray(
        np.stack(out),
        dims=("model", "layer", "snapshot", "query", "key"),
        coords={"model": MODELS, "layer": np.arange(1, 7), "architecture": ("model", ARCH)},
    )


@pytest.fixture(scope="module")
def power_law_card():
    return check_claims(power_law_fields())


def test_one_power_law_in_every_layer_gives_no_shift(power_law_card):
    """The same power law in every layer: no fine-to-coarse shift, so C1 and C2 do not
    both hold (the slope shift, C2's core, passes in no model)."""
    card = power_law_card
    verdicts = {card.loc["C1", "verdict"], card.loc["C2", "verdict"]}
    assert verdicts != {"holds"}
    assert card.loc["C2", "verdict"] != "holds"
    assert card.loc["C2", "cases"].startswith("(core) 4 cases: 0 pass")


def test_a_model_against_itself_is_no_evidence():
    """The fields as their own reference: every trained-minus-reference share is 0, so
    neither band part can pass."""
    F = power_law_fields(n=12, length=32)
    card = check_claims(F, reference=F)
    assert card.loc["C1", "verdict"] == "not significant"
    assert "0 pass" in card.loc["C1", "cases"]
    with pytest.raises(ValueError, match="reference"):
        check_claims(F, reference=F.isel(model=[0, 1]))


def _zoo(with_bands: bool, reference: bool):
    layers = np.arange(1, 7)
    coords = {
        "model": MODELS,
        "layer": layers,
        "field": ["A"],
        "normalisation": ["rectified"],
        "scale_min": [3],
    }
    dims = ("model", "layer", "field", "normalisation", "scale_min")
    shape = (len(MODELS), 6, 1, 1, 1)
    ev = xr.Dataset(coords=coords)
    if with_bands:
        for v in ("fine_share", "coarse_share", "scale_slope"):
            ev[v] = (dims, np.full(shape, 0.4))
            ev[f"{v}_se"] = (dims, np.full(shape, 0.01))
    ev = ev.assign_coords(architecture=("model", ARCH))
    ref = ev.copy() if reference else None
    if ref is not None and not with_bands:
        for v in ("fine_share", "coarse_share", "scale_slope"):
            ref[v] = (dims, np.full(shape, 0.3))
            ref[f"{v}_se"] = (dims, np.full(shape, 0.01))
    return ZooData(MODELS, ev, reference=ref)


def test_missing_band_evidence_is_a_clear_error():
    spec = {"zoo": "", **MAIN_SPEC}
    with pytest.raises(ValueError, match=r"fine_share.*msapod reproduce --steps evidence"):
        evaluate("C1", spec, _zoo(with_bands=False, reference=True))
    out = evaluate("C1", spec, _zoo(with_bands=True, reference=False))
    assert out.verdict == "not testable as stated" and "untrained" in out.reason
    full = _zoo(with_bands=True, reference=True)
    with pytest.raises(ValueError, match=r"reference.*lacks \['e2'\]"):
        ZooData(MODELS, full.ev, reference=full.ev.sel(model=MODELS[:3]))
    assert evaluate("C2", spec, _zoo(with_bands=True, reference=True)).verdict in (
        "not significant",
        "does not hold",
        "partly",
    )


def test_band_rules_read_the_registry(monkeypatch):
    """The band the rule names and the slope range come from the registry; the reference
    column of the untrained null says why it does not apply."""
    assert REGISTRY["C1"].no_untrained and REGISTRY["C2"].no_untrained
    assert SLOPE_RANGE == tuple(REGISTRY["C2"].stated["slope_range"])
    moved = dataclasses.replace(REGISTRY["C1"], stated={"scale": 5.0})
    monkeypatch.setitem(REGISTRY, "C1", moved)
    d = _zoo(with_bands=True, reference=True)
    out = rules.rule_c1(
        d.ev["fine_share"].squeeze(drop=True),
        d.ev["fine_share_se"].squeeze(drop=True),
        d.ev["fine_share_ref"].squeeze(drop=True),
        d.ev["fine_share_ref_se"].squeeze(drop=True),
    )
    assert "a ≤ 5" in out.measured and "a ≤ 7" not in out.measured


def test_c4_windows_sit_on_the_paper_lags():
    """C4's windows on the paper's lags: centred on each range, sigma a multiple of its
    half-width, so layer 4's 10-35 and layer 6's 10-40 are always within reach."""
    from msapod.studies.measure.evidence import PAPER_LAGS, _range_windows

    got = _range_windows((1.0, 2.0))
    assert len(got) == 2 * len(PAPER_LAGS)
    for wi, r, (c, sigma) in got:
        lo, hi = list(PAPER_LAGS.values())[r]
        assert c == pytest.approx((lo + hi) / 2) and lo < c < hi
        assert sigma == pytest.approx((1.0, 2.0)[wi] * (hi - lo) / 2)


def test_c4_without_the_windows_on_the_lags_is_a_clear_error():
    """Evidence made before the windows on the paper's lags: C4's default reading names
    the missing variable and the command that makes it; the dominant scale's reading
    still decides."""
    from test_check_claims import c4_fields

    from msapod.studies.measure.evidence import fields_evidence

    F = c4_fields(True, models=2, n=12)
    main = {a: (MAIN_SPEC[a],) for a in ("field", "normalisation", "scale_min", "scale_stat")}
    main |= {"centre": (MAIN_SPEC["centre"],)}
    ev = xr.concat(
        [fields_evidence(F.isel(model=m, drop=True), axes=main) for m in range(2)],
        dim=xr.DataArray(["b0", "b1"], dims="model", name="model"),
    ).assign_coords(architecture=("model", ["baseline"] * 2))
    old = ev.drop_vars([v for v in ev.data_vars if v.startswith("c4_range_")])
    spec = {"zoo": "", **MAIN_SPEC}
    with pytest.raises(ValueError, match=r"c4_range_share.*msapod reproduce --steps evidence"):
        evaluate("C4", spec, ZooData(["b0", "b1"], old))
    dominant = evaluate("C4", {**spec, "c4_window": "dominant scale"}, ZooData(["b0", "b1"], old))
    assert "window of the dominant scale" in dominant.rule
    assert "window on the paper's lags" in evaluate("C4", spec, ZooData(["b0", "b1"], ev)).rule


def test_no_band_share_is_not_testable_and_says_why():
    d = _zoo(with_bands=True, reference=True)
    nan = d.ev["fine_share_ref"].squeeze(drop=True) * np.nan
    share, se = (d.ev[k].squeeze(drop=True) for k in ("fine_share", "fine_share_se"))
    out = rules.rule_c1(share, se, nan, nan)
    assert out.verdict == "not testable as stated" and "reference" in out.reason


def test_reference_read_from_a_stacked_evidence_file():
    """The shipped untrained evidence has variables on dims the band shares lack (the
    dominant-scale reading's ``scale_stat``, ...): each band variable is taken on its own
    coordinates, every model of it, in the zoo's model order."""
    full = _zoo(with_bands=True, reference=True)
    ref = full.ev.assign(
        scale_stat_value=(("model", "layer", "scale_stat"), np.ones((len(MODELS), 6, 3)))
    ).assign_coords(scale_stat=["peak", "centroid", "edge"])
    ref["fine_share"] = ref["fine_share"] * 0.5
    d = ZooData(MODELS, full.ev, reference=ref.isel(model=slice(None, None, -1)))
    assert "scale_stat" not in d.ev["fine_share_ref"].dims
    np.testing.assert_allclose(d.ev["fine_share_ref"], 0.2)
    assert list(d.ev["fine_share_ref"]["model"].values) == list(MODELS)
