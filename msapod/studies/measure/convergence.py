"""Convergence of the POD numbers in the ensemble size N.

H* is an integer that cannot exceed N - 1, and the default T_spec fit runs over the
first N/2 eigenvalues, so both depend on N by construction. :func:`nested_spectra`
computes the plain POD spectrum of nested ensembles (the first N snippets of one fixed
random order, for every N) from a single Gram matrix of the raw fields; the Reynolds
mean of each sub-ensemble is removed by double centring, so every N gets exactly the
spectrum :func:`msapod.pod` would give. :func:`convergence_study` runs it on the zoo
models over held-out text, the validation split, up to N = 400 (the split holds 435
non-overlapping 256-character snippets, so no larger ensemble of unseen text exists), and
adds a grouped jackknife for each N.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import xarray as xr
from tqdm import tqdm

from ...backends import kernels
from ...fields import check_field
from ...lagstats import gram_pod, one_blas_thread
from ...models.data import SNIPPET_LENGTH, ensemble_offsets, load_corpus
from ...resampling import double_centre, jackknife
from ...spectra import EPS, effective_rank, spectral_concentration
from ..store.cache import ModelInputs, cached_model_study, iter_attention, model_inputs, stack_zoo
from .uncertainty import fractional_rank

__all__ = ["FIXED_K", "NS", "convergence_study", "nested_ensemble", "nested_spectra"]

#: The ensemble sizes of :func:`convergence_study`: the paper's N = 150 and the largest
#: ensemble of held-out text (435 non-overlapping snippets in the validation split).
NS = (50, 100, 150, 300, 400)

#: An N-independent T_spec fit range ``(k_min, k_max)``, next to the default ``1..N/2``.
FIXED_K = (1, 20)

#: Version of :func:`convergence_study`'s output; part of its cache key.
CONVERGENCE_FORMAT = 1


def nested_ensemble(n_tokens: int, n: int, length: int, seed: int = 0) -> np.ndarray:
    """Offsets of ``n`` non-overlapping snippets in a random order: for every ``N <= n`` the
    first ``N`` form a uniformly random sub-ensemble, so growing ensembles are nested."""
    offsets = ensemble_offsets(n_tokens, n=n, length=length, seed=seed)
    return offsets[np.random.default_rng(seed + 1).permutation(n)]


def nested_spectra(
    A: xr.DataArray,
    ns: Sequence[int],
    *,
    dim: str = "snapshot",
    eps: float | Sequence[float] = EPS,
    fixed_k: tuple[int, int] = FIXED_K,
    groups: int = 20,
) -> xr.Dataset:
    """Plain-POD spectra, T_spec and H* of the nested ensembles ``A[:N]``.

    Parameters
    ----------
    A
        One field set ``(dim, "query", "key")`` in the nested order (numpy or dask).
    ns
        Increasing ensemble sizes, each ``<= A.sizes[dim]`` and ``>= 2 * groups``.
    eps
        Tolerances of :func:`msapod.effective_rank` (energy criterion).
    fixed_k
        A second, N-independent T_spec fit range ``(k_min, k_max)`` next to the default
        ``1..N/2`` one.
    groups
        Groups of the delete-a-group jackknife (``N / groups`` snapshots left out at a
        time) that gives the standard errors.

    Returns
    -------
    xarray.Dataset
        dims ``n`` (and ``eps``, ``rank`` up to max(ns)): ``spectrum(n, rank)`` (NaN
        beyond N), ``T_spec`` (fit 1..N/2), ``T_spec_fixed`` (fit ``fixed_k``),
        ``H_star(n, eps)``, ``at_rank_limit(n, eps)``, and jackknife ``*_se`` (for H*:
        of :func:`msapod.studies.measure.uncertainty.fractional_rank`).
    """
    check_field(A, name="A", dims=(dim, "query", "key"), snapshot_dim=dim)
    ns = [int(x) for x in ns]
    n_max = A.sizes[dim]
    if sorted(ns) != ns or ns[0] < 2 * groups or ns[-1] > n_max:
        raise ValueError(
            f"ns: expected increasing sizes in [{2 * groups}, {n_max}] "
            f"({groups} jackknife groups, {n_max} snapshots), got {ns}"
        )
    eps_list = [float(e) for e in np.atleast_1d(eps)]
    k0, k1 = (int(k) for k in fixed_k)
    if not 1 <= k0 < k1 < ns[0] // 2:
        raise ValueError(f"fixed_k: expected 1 <= k_min < k_max < {ns[0] // 2}, got {fixed_k}")
    K_raw = _raw_gram(A.transpose(dim, "query", "key").data)
    with one_blas_thread():
        rows = [_nested_row(K_raw, n, groups, (k0, k1), eps_list) for n in ns]
    return _nested_dataset(rows, ns, eps_list, (k0, k1), groups)


def _nested_dataset(rows: list[dict], ns: list[int], eps_list, fixed_k, groups) -> xr.Dataset:
    """:func:`nested_spectra`'s Dataset from the numbers of each ensemble size."""
    k0, k1 = fixed_k
    spectra = np.full((len(ns), ns[-1]), np.nan)
    for i, (n, row) in enumerate(zip(ns, rows, strict=True)):
        spectra[i, :n] = row["spectrum"]
    ds = xr.Dataset(
        {
            "spectrum": (("n", "rank"), spectra),
            **{k: ("n", np.array([r[k] for r in rows])) for k in _SCALARS},
            **{k: (("n", "eps"), np.array([r[k] for r in rows])) for k in _PER_EPS},
        },
        coords={"n": ns, "eps": eps_list, "rank": np.arange(1, ns[-1] + 1)},
    )
    ds["T_spec"].attrs = {"long_name": "T_spec, fit k = 1..N/2"}
    ds["T_spec_fixed"].attrs = {"long_name": f"T_spec, fit k = {k0}..{k1}"}
    ds["H_star"].attrs = {"long_name": "effective rank H*(eps), energy criterion"}
    ds.attrs = {
        "window": "plain",
        "fixed_k": f"{k0}..{k1}",
        "jackknife_groups": groups,
        "method": "nested ensembles; plain POD from one raw Gram matrix, double centred",
    }
    return ds


#: The per-N numbers of :func:`nested_spectra`, and those per N and eps.
_SCALARS = ("T_spec", "T_spec_se", "T_spec_fixed", "T_spec_fixed_se")
_PER_EPS = ("H_star", "H_star_se", "at_rank_limit")


def _raw_gram(a) -> np.ndarray:
    """``X X^T`` of the lag form of the snapshots ``a (N, query, key)`` as they are (no
    mean removed; the lag statistics of the kernels of ``a``, numpy or dask), float64."""
    kern = kernels(a)
    q, k = np.arange(a.shape[1]), np.arange(a.shape[2])
    causal = kern.is_causal(a, q, k)
    return kern.LagStats.of_fluctuation(a, q, k, causal=causal).plain_gram() * len(a)


def _statistics(lam: np.ndarray, fixed_k: tuple[int, int], eps: list[float]) -> np.ndarray:
    """``(T_spec, T_spec_fixed, fractional H*(eps)...)`` of spectra ``lam (r, rank)``:
    ``(r, 2 + len(eps))``."""
    da = xr.DataArray(lam, dims=("boot", "rank"))
    T = spectral_concentration(da)["T_spec"].values
    Tf = spectral_concentration(da, *fixed_k)["T_spec"].values
    return np.column_stack([T, Tf, *(fractional_rank(lam, e) for e in eps)])


def _nested_row(K_raw: np.ndarray, n: int, groups: int, fixed_k, eps: list[float]) -> dict:
    """The numbers of the first ``n`` snapshots, with a delete-a-group jackknife (leave
    out every ``groups``-th snapshot in turn) for their standard errors."""
    lam = gram_pod(double_centre(K_raw[:n, :n]) / n).eigenvalues
    da = xr.DataArray(lam, dims="rank")
    hs = [effective_rank(da, e, n_snapshots=n) for e in eps]
    leave_out = [np.flatnonzero(np.arange(n) % groups == g) for g in range(groups)]
    (T, Tf, *_), se = jackknife(
        K_raw[:n, :n] / n, lambda x: _statistics(x, fixed_k, eps), leave_out
    )
    return {
        "spectrum": lam,
        "T_spec": T,
        "T_spec_se": se[0],
        "T_spec_fixed": Tf,
        "T_spec_fixed_se": se[1],
        "H_star": [float(h) for h in hs],
        "H_star_se": se[2:],
        "at_rank_limit": [bool(h["at_rank_limit"]) for h in hs],
    }


def convergence_study(
    models: Sequence[str] | None = None,
    *,
    ns: Sequence[int] = NS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    split: str = "val",
    eps: Sequence[float] = EPS,
    fixed_k: tuple[int, int] = FIXED_K,
    groups: int = 20,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    batch_size: int = 32,
) -> xr.Dataset:
    """H*(eps) and T_spec of the zoo models against the ensemble size N (cached).

    One model and one layer at a time: the head-averaged fields of ``max(ns)`` nested
    snippets (:func:`nested_ensemble` of ``split``) are extracted layer by layer
    (:func:`msapod.models.extract.iter_attention`) and reduced by :func:`nested_spectra`.

    Returns
    -------
    xarray.Dataset
        dims ``model``, ``layer``, ``n``, ``eps`` (``rank``); coord ``architecture``.
    """
    if split not in ("train", "val"):
        raise ValueError(f"split: expected 'train' or 'val', got {split!r}")
    corpus = load_corpus()
    tokens = corpus.train if split == "train" else corpus.val
    offsets = nested_ensemble(len(tokens), int(max(ns)), length, seed)
    ids = np.stack([tokens[o : o + length] for o in offsets]).astype(np.int64)
    parts = {
        "data_sha256": corpus.sha256,
        "ns": list(map(int, ns)),
        "length": length,
        "seed": seed,
        "split": split,
        "eps": [float(e) for e in eps],
        "fixed_k": list(map(int, fixed_k)),
        "groups": groups,
        "format": CONVERGENCE_FORMAT,
    }

    def compute(inputs: ModelInputs) -> xr.Dataset:
        res = _model_convergence(inputs, ids, ns, eps, fixed_k, groups, batch_size, progress)
        res["offset"] = ("snapshot", offsets)
        res.attrs.update(model=inputs.name, split=split, length=length)
        return res

    def one(name: str) -> xr.Dataset:
        inputs = model_inputs(name, cache_dir=cache_dir, progress=progress)
        key = {"weights_sha256": inputs.weights_sha256, **parts}
        return cached_model_study("convergence", inputs, key, compute, keyed_by_fields=False)

    return stack_zoo(one, models)


def _model_convergence(inputs, ids, ns, eps, fixed_k, groups, batch_size, progress):
    """:func:`nested_spectra` of every layer of one model's fields over ``ids``."""
    layers = []
    name, model = inputs.name, inputs.model
    it = iter_attention(model, ids, average_heads=True, batch_size=batch_size, name=name)
    for A in tqdm(it, total=model.config.n_layer, desc=f"convergence {name}", disable=not progress):
        ds = nested_spectra(A.drop_vars("layer"), ns, eps=eps, fixed_k=fixed_k, groups=groups)
        layers.append(ds.expand_dims(layer=[int(A["layer"])]))
        del A
    return xr.concat(layers, dim="layer")
