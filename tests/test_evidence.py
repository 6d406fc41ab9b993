"""The evidence the claims are decided on (msapod.studies.measure.evidence), on small
synthetic fields: the moment and Gram shortcuts equal the library's direct computations,
and the jackknife equals refits without each group."""

import numpy as np
import pytest
import xarray as xr

import msapod
from msapod.fields import reynolds, to_lag
from msapod.lagstats import lag_gram_tensor, mode_lag_energy, upper_operator, window_grams
from msapod.studies.measure.evidence import _grid, layer_evidence


def attention(n=10, length=24, seed=0, scale=3.0, layers=None):
    """Causal row-stochastic fields with a lag preference of width ``scale``."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(length), np.arange(length), indexing="ij")
    lag = i - j
    shape = (n, length, length) if layers is None else (layers, n, length, length)
    logits = rng.normal(0, 1.0, shape) - lag / scale
    logits = np.where(lag >= 0, logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    dims = ("snapshot", "query", "key") if layers is None else ("layer", "snapshot", "query", "key")
    coords = {"query": np.arange(length), "key": np.arange(length)}
    if layers is not None:
        coords["layer"] = np.arange(1, layers + 1)
    return xr.DataArray(A, dims=dims, coords=coords)


def _jackknife_se(rep):
    """sqrt((g - 1) / g sum (x - mean)^2) over the g finite replicates of each entry."""
    out = np.full(rep.shape[1:], np.nan)
    for ix in np.ndindex(*rep.shape[1:]):
        x = rep[(slice(None), *ix)]
        x = x[np.isfinite(x)]
        if x.size >= 2:
            out[ix] = np.sqrt((x.size - 1) / x.size * ((x - x.mean()) ** 2).sum())
    return out


@pytest.fixture(scope="module")
def field():
    return attention()


@pytest.fixture(scope="module")
def evidence(field):
    return layer_evidence(field, theorem1=False)


def test_windowed_gram_eigenvalues_equal_pod(field):
    u = reynolds(field)["fluctuation"]
    R = to_lag(u)
    G = lag_gram_tensor(R.transpose("snapshot", "query", "lag").values)
    lags = R["lag"].values
    for c, sigma in ((0.0, 1.0), (5.0, 2.5), (12.0, 6.0)):
        w = msapod.lag_window(lags, c, sigma)
        lam = np.linalg.eigvalsh(window_grams(G, w.values))[::-1]
        ref = msapod.pod(u, window=w)["spectrum"].values
        np.testing.assert_allclose(lam, ref, rtol=0, atol=1e-10 * ref[0])
        # the mode's lag energy from G equals the lag energy of the POD mode itself
        vals, vecs = np.linalg.eigh(window_grams(G, w.values))
        e = mode_lag_energy(G, w.values, vecs[:, -1])
        mode = msapod.pod(u, n_modes=1, window=w)["modes"].isel(mode=0)
        e_ref = (to_lag(mode**2)).sum("query").values
        np.testing.assert_allclose(e, e_ref / e_ref.sum(), atol=1e-10)
    # plain POD (w = 1) as stored in the evidence
    ev = layer_evidence(field)
    np.testing.assert_allclose(ev["spectrum"].values, msapod.pod(u)["spectrum"].values, atol=1e-12)


def test_scale_statistics_equal_the_scalogram(field, evidence):
    u = reynolds(field)["fluctuation"]
    for field_name, data in (("u", u), ("A", field)):
        for smin in (2, 3):
            s = _grid(smin, 24)
            for norm in ("rectified", "raw"):
                spec = msapod.scalogram(data, scales=s, bias_correction=norm == "rectified")
                cent = float(msapod.scale_centroid(spec["spectrum"]))
                got = evidence["scale_stat_value"].sel(
                    field=field_name, normalisation=norm, scale_min=smin, scale_stat="centroid"
                )
                assert float(got) == pytest.approx(cent, rel=1e-9)
    # energy (raw) equals the sum of the scalogram of u
    spec = msapod.scalogram(u, scales=_grid(2, 24), bias_correction=False)
    e = evidence["energy"].sel(field="u", normalisation="raw", scale_min=2)
    assert float(e) == pytest.approx(float(spec["spectrum"].sum()), rel=1e-9)


@pytest.mark.parametrize("which", [("A", "total"), ("u", "fluctuation")])
def test_scale_jackknife_matches_the_uncertainty_study(field, evidence, which):
    from msapod.studies.measure.uncertainty import scale_jackknife

    sj = scale_jackknife(field, scales=_grid(3, 24), field=which[1])
    se = evidence["scale_stat_se"].sel(
        field=which[0], normalisation="rectified", scale_min=3, scale_stat="centroid"
    )
    assert float(se) == pytest.approx(float(sj["scale_centroid_se"]), rel=1e-6)


def test_theorem1_check_matches_basis_error(field):
    from msapod.studies.measure.evidence import theorem1_check

    u = reynolds(field)["fluctuation"]
    gap, beaten, trials = theorem1_check(u)
    assert gap < 1e-10 and beaten == 0 and trials == 10  # ranks 1 and 5 (N = 10)
    rng = np.random.default_rng(3)
    mask = np.tril(np.ones((24, 24), bool))
    Q = np.linalg.qr(rng.standard_normal((mask.sum(), 2)))[0]
    B = np.zeros((2, 24, 24))
    B[:, mask] = Q.T
    U = u.values[:, mask]
    mine = (U**2).sum(1).mean() - ((U @ Q) ** 2).sum(1).mean()
    ref = float(msapod.basis_error(u, xr.DataArray(B, dims=("mode", "query", "key"))))
    assert mine == pytest.approx(ref, rel=1e-12)


def test_window_jackknife_equals_refits_without_each_group():
    """C4's and C9's delete-group jackknife (the Gram tensor re-centred without a group)
    equals recomputing the Reynolds split, the Gram tensor and each window's mode 1 from
    the kept snapshots alone."""
    from msapod.lagstats import snapshot_moments
    from msapod.studies.measure import evidence as mv

    A = attention(n=2 * mv.JACKKNIFE_GROUPS + 3, length=20, seed=4)
    R = to_lag(A).transpose("snapshot", "query", "lag")
    X, lags = R.values, R["lag"].values
    Xu = X - X.mean(0)
    grids = [mv._grid(g, len(lags)) for g in (3, 2)]
    M_up = upper_operator(np.concatenate([mv._operator(g, lags, 6.0) for g in (3, 2)]), len(lags))
    keys = [(2.0, 1.5), (6.0, 3.0), (9.0, 4.0)]
    c4_key = np.array([[0, 1, 2], [2, -1, 1]])  # two readings x three paper ranges
    c9_key = np.full((2, 2, 2), -1)  # (reading, normalisation, grid)
    c9_key[0, 0, 0], c9_key[1, 1, 1], c9_key[1, 0, 1] = 1, 2, 0
    got = mv._window_jackknife(
        lag_gram_tensor(Xu), Xu, lags, keys, c4_key, c9_key, M_up, grids, [True, False]
    )
    inside = np.array([(lags >= lo) & (lags <= hi) for lo, hi in mv.PAPER_LAGS.values()])
    s_rep, d_rep, r_rep = [], [], []
    nS = msapod.wavelets.DEFAULT_NUM_SCALES
    for drop in np.array_split(np.arange(X.shape[0]), mv.JACKKNIFE_GROUPS):
        Xk = np.delete(X, drop, axis=0)
        Uk = Xk - Xk.mean(0)
        G = lag_gram_tensor(Uk)
        modes = mv._window_modes(G, Uk, lags, keys, [0, 1, 2], M_up)
        lag_e = np.einsum("tss->t", G)
        share = modes["energy"] @ inside.T
        w2e = msapod.lagstats.gaussian_windows(lags, *zip(*keys, strict=True)) ** 2 * lag_e
        base = (w2e @ inside.T) / w2e.sum(1, keepdims=True)
        r = np.arange(3)[None, :]
        s_rep.append(np.where(c4_key >= 0, share[c4_key, r], np.nan))
        d_rep.append(np.where(c4_key >= 0, share[c4_key, r] - base[c4_key, r], np.nan))
        K0 = window_grams(G, np.ones(len(lags)))
        v0 = np.linalg.eigh(K0)[1][:, -1]
        phi0 = np.tensordot(v0, Uk, axes=(0, 0))
        plain = M_up @ snapshot_moments(phi0[None], upper=True)[0]
        rr = np.full(c9_key.shape, np.nan)
        for ix, j in np.ndenumerate(c9_key):
            if j < 0:
                continue
            s, gi = grids[ix[2]], ix[2]
            wgt = 1 / s if ix[1] == 0 else np.ones_like(s)
            sl = slice(gi * nS, (gi + 1) * nS)
            rr[ix] = mv._spread(modes["spectra"][j][sl] * wgt, s) / mv._spread(plain[sl] * wgt, s)
        r_rep.append(rr)
    for g, rep in zip(got, (s_rep, d_rep, r_rep), strict=True):
        want = _jackknife_se(np.array(rep))
        np.testing.assert_allclose(g, want, rtol=1e-7, atol=1e-12)
        assert np.isfinite(want[np.isfinite(g) | np.isfinite(want)]).all()
    assert np.isnan(got[0][1, 1]) and np.isfinite(got[0][0, 0]) and got[2][0, 0, 0] > 0
