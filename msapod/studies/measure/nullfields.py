"""The null ensembles: the same measurements on models and text that carry no claim.

* ``"untrained"``: each zoo model's architecture at initialisation
  (:func:`untrained_model`), on the usual ensemble (the reference of C1 and C2, and the
  trained-vs-untrained null of the joint test);
* ``"shuffled"``: the trained model on snippets whose characters are permuted within
  each snippet (:func:`shuffle_snippets`);
* ``"words"``: the trained model on snippets whose words and lines are permuted within
  each snippet (:func:`msapod.models.data.shuffle_words`).

What they decide is :mod:`msapod.studies.verdict`'s (the null columns of the curve).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from ..._io import check_int
from ...models.data import N_SNAPSHOTS, SNIPPET_LENGTH, load_corpus, shuffle_words
from ..store.cache import cached_dataset, field_store, state_sha256
from . import evidence as mv

__all__ = [
    "NULLS",
    "NULL_FORMAT",
    "TEXT_NULLS",
    "check_null",
    "null_evidence",
    "null_fields",
    "shuffle_snippets",
    "untrained_model",
]


#: The null ensembles.
NULLS = ("untrained", "shuffled", "words")
#: The nulls that change the text, not the weights: each a column of the scorecard on
#: the main zoo at the default reading, for the claims about lag structure.
TEXT_NULLS = ("shuffled", "words")
#: Version of the null fields' and evidence's layout; part of their cache keys.
NULL_FORMAT = 1


def check_null(null: str) -> str:
    if null not in NULLS:
        raise ValueError(f"null: expected one of {NULLS}, got {null!r}")
    return null


def untrained_model(name: str):
    """Zoo model ``name``'s architecture with its weights at initialisation.

    Made as :func:`msapod.models.train.train` makes it before the first step
    (``torch.manual_seed(cfg.seed); GPT(cfg.model)``), rounded to the configuration's
    storage dtype (what a checkpoint of step 0 would hold), in eval mode; never written.

    Returns
    -------
    msapod.models.gpt.GPT
        With ``weights_sha256`` (:func:`state_sha256`, so field caches are keyed by it)
        and ``name = "untrained:<name>"``.
    """
    import torch

    from ...models.gpt import GPT
    from ...models.train import STORAGE
    from ...models.zoo import ZOO_CONFIGS

    if name not in ZOO_CONFIGS:
        raise ValueError(f"name: expected one of {list(ZOO_CONFIGS)}, got {name!r}")
    cfg = ZOO_CONFIGS[name]
    with torch.random.fork_rng(devices=[]):  # the caller's random state left as it was
        torch.manual_seed(cfg.seed)
        model = GPT(cfg.model)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(STORAGE[cfg.storage]).float())
    model.eval()
    model.weights_sha256 = "untrained-" + state_sha256(model)
    model.name = f"untrained:{name}"
    return model


def shuffle_snippets(ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """Permute the characters within each snippet (row) of ``ids (N, L)``; snippet ``i``
    uses ``numpy.random.default_rng([seed, i])`` (independent of N)."""
    ids = np.asarray(ids)
    if ids.ndim != 2:
        raise ValueError(f"ids: expected (snippet, position) token ids, got shape {ids.shape}")
    out = np.empty_like(ids)
    for i, row in enumerate(ids):
        out[i] = row[np.random.default_rng([int(seed), i]).permutation(row.size)]
    return out


def _label(name: str, null: str) -> str:
    return f"{null}-{name}"


def null_fields(
    name: str,
    null: str = "untrained",
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    layers: Sequence[int] | None = None,
    shuffle_seed: int = 0,
    cache_dir=None,
    progress: bool = False,
    model=None,
    batch_size: int = 16,
) -> xr.DataArray:
    """Head-averaged attention fields of zoo model ``name`` under a null, cached.

    The same extraction and the same verified cache file format as
    :func:`msapod.studies.store.cache.cached_fields` (``<cache>/fields/``), keyed by the
    weights' sha256, the data's sha256, the ensemble and the null.

    Parameters
    ----------
    name
        Zoo model name.
    null
        One of :data:`NULLS` (see the module docstring).
    n, length, seed, layers
        The ensemble and layers, as for :func:`~msapod.studies.store.cache.cached_fields`.
    shuffle_seed
        Seed of the within-snippet shuffle (:data:`TEXT_NULLS` only).
    model
        The model to use instead of the one ``null`` implies (tests: a tiny GPT carrying
        ``weights_sha256``).

    Returns
    -------
    xarray.DataArray
        float32 ``(layer, snapshot, query, key)``; attrs as ``cached_fields``' plus
        ``null``.
    """
    check_null(null)
    shuffle_seed = check_int(shuffle_seed, "shuffle_seed", 0)
    extra = {"null": null, "null_format": NULL_FORMAT}
    if null in TEXT_NULLS:
        extra["shuffle_seed"] = shuffle_seed

    def transform(ids: np.ndarray) -> np.ndarray:
        if null == "shuffled":
            return shuffle_snippets(ids, shuffle_seed)
        if null == "words":
            return shuffle_words(ids, load_corpus(), shuffle_seed)
        return ids

    if model is None and null == "untrained":
        model = untrained_model(name)
    return field_store(
        name,
        model,
        n=n,
        length=length,
        seed=seed,
        layers=layers,
        cache_dir=cache_dir,
        progress=progress,
        batch_size=batch_size,
        extra=extra,
        label=_label(name, null),
        ids_transform=transform,
    )


def null_evidence(
    name: str,
    null: str = "untrained",
    *,
    cache_dir=None,
    progress: bool = False,
    theorem1_layer: int = 0,
    fields: xr.DataArray | None = None,
    axes: dict | None = None,
    window_se: bool = False,
) -> xr.Dataset:
    """:func:`~msapod.studies.measure.evidence.model_evidence` of :func:`null_fields`.

    Cached under ``<cache>/multiverse-evidence/<null>-<name>-*.nc``. ``fields``: use these
    null fields instead (tests); ``axes``, ``window_se``: as in
    :func:`~msapod.studies.measure.evidence.fields_evidence`.
    """
    check_null(null)
    if fields is None:
        fields = null_fields(name, null, cache_dir=cache_dir, progress=progress)
    kw = dict(theorem1_layer=theorem1_layer, window_se=window_se, axes=axes)
    parts = {**mv.evidence_parts(fields, **kw), "null": null, "null_format": NULL_FORMAT}

    def compute():
        out = mv.fields_evidence(fields, **kw)
        out.attrs = {"model": name, "null": null}
        return out

    label = _label(name, null) + ("" if axes is None else "-default")
    ev = cached_dataset("multiverse-evidence", label, parts, compute, cache_dir=cache_dir)
    return mv.with_window_se(ev)
