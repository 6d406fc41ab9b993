"""On-disk cache of the head-averaged attention fields of the zoo models.

The fields of one model over the paper's ensemble are kept as a field file
(:class:`msapod.fieldfile.FieldFile`), written batch by batch and resumed after an
interruption. Its name carries a key hashed from everything the fields depend on (the
weights' and the data's sha256, ``n``, ``length``, ``seed``, the layers, the split, the
cache format and the msapod version); the same parts are stored as attrs next to a sha256
per layer, every load checks them and the coordinates, and a stale, tampered or unreadable
file is reported with a :class:`CacheWarning` and rebuilt.

:func:`field_store` is the one field cache of the zoo models (:func:`cached_fields` and
the null ensembles call it). :func:`model_inputs` and :func:`cached_model_study` are the
one recipe of a cached per-model study; :func:`stack_zoo` stacks one over the zoo.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm import tqdm

from ..._io import COMPRESS, atomic_path, cache_dir, check_int, package_version
from ...fieldfile import CacheWarning, FieldFile, default_coords, key_hash, values_sha256
from ...models.data import N_SNAPSHOTS, SNIPPET_LENGTH, check_layers, ensemble_ids, load_corpus
from ...pipeline import analyze, check_options, text_coords

__all__ = [
    "CacheWarning",
    "FieldFile",
    "ModelInputs",
    "TokenEnsemble",
    "cache_dir",
    "cache_root",
    "cached_analysis",
    "cached_dataset",
    "cached_fields",
    "cached_model_study",
    "concat_layers",
    "field_store",
    "fields_key",
    "iter_attention",
    "key_hash",
    "model_inputs",
    "netcdf_safe",
    "record_fields",
    "stack_models",
    "stack_zoo",
    "state_sha256",
    "text_coords",
    "values_sha256",
    "zoo_analysis",
    "zoo_models",
]

#: Version of the key's recipe; part of the key (and so of the shipped ``fields_key``). The
#: file's layout is :class:`~msapod.fieldfile.FieldFile`'s, checked on every read.
CACHE_FORMAT = 1
#: Format of every :func:`cached_dataset` file (its checksum covers coordinates and attrs).
DATASET_FORMAT = 2
ANALYSIS_FORMAT = 2
DIMS = ("layer", "snapshot", "query", "key")


def cache_root(folder: str | os.PathLike | None = None) -> Path:
    """``folder`` if given, else :func:`cache_dir`; ``ValueError`` if it is a file."""
    path = Path(folder).expanduser() if folder is not None else cache_dir()
    if path.exists() and not path.is_dir():
        src = "cache_dir (--cache-dir)" if folder is not None else "$MSAPOD_CACHE"
        raise ValueError(f"{src}: {path} is a file; expected a folder")
    return path


def _cache_file(cache_dir, kind: str, label: str, tail: str) -> Path:
    """``<cache>/<kind>/<label>-<tail>.nc``, the folder made and the label file-safe."""
    folder = cache_root(cache_dir) / kind
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', str(label))}-{tail}.nc"


def _zoo_model(name: str, model, n, length, seed) -> tuple:
    """``(model, weights_sha256, n, length, seed)``: ``model`` or ``msapod.zoo.load(name)``
    and the ensemble, checked."""
    n = check_int(n, "n", 2)
    length = check_int(length, "length", 2)
    seed = check_int(seed, "seed", 0)
    if model is None:
        from ...models.zoo import load  # at call time, so a patched msapod.zoo.load is honoured

        model = load(name)
    sha = getattr(model, "weights_sha256", None)
    if not isinstance(sha, str):
        raise ValueError(
            "model: expected a checkpoint-loaded GPT with a weights_sha256 attribute "
            "(msapod.models.train.load_checkpoint sets it)"
        )
    return model, sha, n, length, seed


def iter_attention(*args, **kw):
    """:func:`msapod.models.extract.iter_attention`, imported on call (it needs torch)."""
    from ...models.extract import iter_attention as extract

    return extract(*args, **kw)


def record_fields(*args, **kw) -> None:
    """:func:`msapod.models.extract.record_fields`, imported on call (it needs torch)."""
    from ...models.extract import record_fields as record

    record(*args, **kw)


def _key_parts(weights_sha256, data_sha256, n, length, seed, layers) -> dict:
    return {
        "weights_sha256": weights_sha256,
        "data_sha256": data_sha256,
        "n_snapshots": n,
        "length": length,
        "seed": seed,
        "split": "val",
        "layers": ",".join(map(str, layers)),
        "msapod_version": package_version(),
        "cache_format": CACHE_FORMAT,
    }


def fields_key(
    weights_sha256: str,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    layers: Sequence[int],
) -> str:
    """Key of the fields :func:`cached_fields` serves for checkpoint ``weights_sha256``,
    this ensemble and these layers, computed without extracting or reading them."""
    return key_hash(_key_parts(weights_sha256, load_corpus().sha256, n, length, seed, layers))


def state_sha256(model, *, with_config: bool = False) -> str:
    """sha256 of a torch model's state dict.

    Every tensor in name order (a tied ``lm_head.weight`` left out, as in a checkpoint)
    contributes its name, shape and float32 bytes (other dtypes: their own bytes).

    Parameters
    ----------
    model
        A ``torch.nn.Module``.
    with_config
        Hash the model's Hugging Face configuration first
        (``model.config.to_json_string(use_diff=False)``, where it has one), so that the
        same tensors under another configuration hash differently.

    Returns
    -------
    str
        The hex digest.
    """
    h = hashlib.sha256()
    cfg = getattr(model, "config", None)
    if with_config and cfg is not None and hasattr(cfg, "to_json_string"):
        h.update(cfg.to_json_string(use_diff=False).encode())
    for k, v in sorted(model.state_dict().items()):
        if k == "lm_head.weight":
            continue
        t = v.detach().cpu()
        h.update(k.encode())
        h.update(str(tuple(t.shape)).encode())
        arr = t.float().numpy() if t.is_floating_point() else t.numpy()
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------- snippets and fields


@dataclass(frozen=True)
class TokenEnsemble:
    """Non-overlapping snippets of a tokenised text: the ensemble of a field file.

    Attributes
    ----------
    ids
        ``(n, length)`` int64 token ids.
    offsets
        ``(n,)`` token offsets of the snippets in the tokenised text.
    n_tokens, n_chars
        Tokens and characters of the whole text.
    unit
        ``"token"``, or ``"character"`` for the zoo's character vocabulary.
    text_source
        What the text is: a description or a file's path.
    text_sha256
        sha256 of the text (UTF-8).
    char_start, char_end
        ``(n,)`` character offsets of each snippet's first character and one past its
        last, where the tokenizer reports them; else None.
    """

    ids: np.ndarray
    offsets: np.ndarray
    n_tokens: int
    n_chars: int
    unit: str
    text_source: str
    text_sha256: str
    char_start: np.ndarray | None = None
    char_end: np.ndarray | None = None

    @property
    def chars_per_token(self) -> float:
        """Characters per token over the whole text (1 for characters)."""
        return self.n_chars / self.n_tokens

    @property
    def ids_sha256(self) -> str:
        """sha256 of the token ids as contiguous little-endian int64 bytes."""
        return hashlib.sha256(np.ascontiguousarray(self.ids, dtype="<i8").tobytes()).hexdigest()

    @property
    def ensemble_chars_per_token(self) -> float:
        """Mean characters per token over the snippets (needs the character spans)."""
        if self.char_start is None or self.char_end is None:
            raise ValueError("ensemble: no character spans recorded")
        return float((self.char_end - self.char_start).mean() / self.ids.shape[1])


def field_store(
    name: str,
    model=None,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    layers: Sequence[int] | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    batch_size: int = 16,
    extra: Mapping | None = None,
    label: str | None = None,
    ids_transform: Callable[[np.ndarray], np.ndarray] | None = None,
) -> xr.DataArray:
    """:func:`cached_fields`, the token ids passed through ``ids_transform`` (e.g. a
    shuffle) before extraction. The key is :func:`fields_key`'s plus the ``extra`` parts
    (which must name the transform); the file is labelled ``label`` (default ``name``)."""
    model, sha, n, length, seed = _zoo_model(name, model, n, length, seed)
    layers = check_layers(layers, model.config.n_layer)
    if length > model.config.block_size:
        raise ValueError(
            f"length: expected at most the model's block_size {model.config.block_size}, "
            f"got {length}"
        )
    label = name if label is None else label
    corpus = load_corpus()
    parts = {**_key_parts(sha, corpus.sha256, n, length, seed, layers), **(extra or {})}
    path = _cache_file(cache_dir, "fields", label, f"n{n}-L{length}-s{seed}-{key_hash(parts)[:16]}")
    shape = (len(layers), n, length, length)
    store = FieldFile(path, key_hash(parts))
    coords = {"layer": np.asarray(layers, dtype=np.int64), **default_coords(DIMS[1:], shape[1:])}
    if path.exists():
        da, reason = store.read(shape=shape, coords=coords, attrs=parts)
        if da is not None:
            return da
        warnings.warn(f"cache file {path}: {reason}; rebuilding it", CacheWarning, stacklevel=3)
        path.unlink()
    ids, offsets = ensemble_ids(corpus, n=n, length=length, seed=seed, split="val")
    if ids_transform is not None:
        ids = ids_transform(ids)
    attrs = {
        **parts,
        "key": store.key,
        "model": label,
        "attention": str(model.config.attention),
        "offsets": offsets.astype(np.int64),
        "average_heads": 1,
        "source": "msapod.cached_fields",
        "description": (
            "head-averaged attention probabilities A(i, j) (query i, key j) of an "
            "ensemble of non-overlapping validation snippets; layers numbered from 1"
        ),
    }
    record_fields(
        store,
        model,
        ids,
        layers,
        [(a, min(a + batch_size, n)) for a in range(0, n, batch_size)],
        average_heads=True,
        coords=coords,
        attrs=attrs,
        offsets=offsets,
        chunk=min(n, 8),
        progress=progress,
        desc=f"{label}: attention",
    )
    da, reason = store.read(shape=shape, coords=coords, attrs=parts)
    if da is None:
        raise OSError(f"cache file {path}: just written but fails verification: {reason}")
    return da


def cached_fields(
    name: str,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    layers: Sequence[int] | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    model=None,
    batch_size: int = 16,
) -> xr.DataArray:
    """Head-averaged attention fields of zoo model ``name``, from the cache if valid.

    Parameters
    ----------
    name
        Zoo model name (see :data:`msapod.zoo.MODELS`); loaded with
        :func:`msapod.zoo.load` unless ``model`` is given.
    n, length, seed
        The ensemble of :func:`msapod.models.extract.ensemble_ids` (validation split).
    layers
        1-based layer numbers; default all.
    cache_dir
        Cache folder; default :func:`cache_dir` (``$MSAPOD_CACHE`` or ``~/.cache/msapod``).
    progress
        Show a progress bar while extracting.
    model
        A checkpoint-loaded GPT (with ``weights_sha256``) used instead of
        ``zoo.load(name)``; ``name`` then only labels the file.
    batch_size
        Snapshots per forward pass while extracting.

    Returns
    -------
    xarray.DataArray
        float32, dims ``("layer", "snapshot", "query", "key")``, coord ``offset`` on
        ``snapshot``; attrs hold the key parts; ``encoding["source"]`` is the cache file.

    Warns
    -----
    CacheWarning
        The cache file was unreadable or failed a check; it is rebuilt.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name: expected a zoo model name, got {name!r}")
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
    )


def _attr_text(attrs: dict) -> bytes:
    """Attrs as canonical text (numpy scalars and arrays as Python values)."""
    body = {
        str(k): v.tolist() if isinstance(v, np.ndarray | np.generic) else v
        for k, v in attrs.items()
        if k != "values_sha256"
    }
    return json.dumps(body, sort_keys=True, default=str).encode()


def _dataset_sha256(ds: xr.Dataset) -> str:
    """sha256 over every variable's values, coordinates included, and every attr, less
    the checksum itself."""
    h = hashlib.sha256()
    h.update(_attr_text(ds.attrs))
    for name in sorted(map(str, ds.variables)):
        var = ds[name].variable
        h.update(name.encode())
        h.update(repr(var.dims).encode())
        v = np.asarray(var.values)
        if v.dtype.kind in "OUS":
            h.update("\x1f".join(map(str, v.ravel().tolist())).encode())
        elif v.dtype.kind == "M":
            h.update(np.ascontiguousarray(v.astype("datetime64[ns]").astype(np.int64)))
        else:
            h.update(np.ascontiguousarray(v.astype(np.float64) if v.dtype != bool else v))
        h.update(_attr_text(var.attrs))
    return h.hexdigest()


def concat_layers(parts: Sequence[xr.Dataset]) -> xr.Dataset:
    """Per-layer analyses (each with a ``layer`` dim) as one dataset, labels as strings."""
    return text_coords(
        xr.concat(
            list(parts),
            dim="layer",
            data_vars="minimal",
            coords="minimal",
            compat="override",
            combine_attrs="override",
        )
    )


def netcdf_safe(ds: xr.Dataset) -> xr.Dataset:
    """Attrs that netCDF can hold: lists joined to strings, bools to ints."""

    def clean(attrs: dict) -> dict:
        out = {}
        for k, v in attrs.items():
            if isinstance(v, bool):
                v = int(v)
            elif isinstance(v, list | tuple):
                v = ", ".join(map(str, v))
            elif v is None:
                v = "None"
            out[k] = v
        return out

    ds = ds.copy()
    ds.attrs = clean(ds.attrs)
    for name in ds.variables:
        ds[name].attrs = clean(ds[name].attrs)
    return ds


@dataclass(frozen=True)
class ModelInputs:
    """A zoo model resolved for a per-model study (:func:`model_inputs`).

    Attributes
    ----------
    name, model, weights_sha256
        The zoo model name, the loaded model and its weights' sha256.
    n, length, seed
        The ensemble of :func:`cached_fields`.
    fields_key
        The key of the fields over that ensemble (:func:`fields_key`, every layer),
        known without extracting or reading them.
    cache_dir, progress
        Cache root and progress bars of the fields.
    """

    name: str
    model: object
    weights_sha256: str
    n: int
    length: int
    seed: int
    fields_key: str
    cache_dir: str | os.PathLike | None = None
    progress: bool = False

    def fields(self) -> xr.DataArray:
        """The cached fields of every layer, checked to carry :attr:`fields_key`."""
        fields = cached_fields(
            self.name,
            n=self.n,
            length=self.length,
            seed=self.seed,
            cache_dir=self.cache_dir,
            progress=self.progress,
            model=self.model,
        )
        if fields.attrs.get("key") != self.fields_key:
            raise OSError(
                f"fields of {self.name}: key {fields.attrs.get('key')!r}, expected "
                f"{self.fields_key!r} (fields_key no longer matches the fields served)"
            )
        return fields

    def identity(self) -> dict:
        """``model``, ``fields_key`` and ``weights_sha256``: attrs of a per-model result."""
        return {
            "model": self.name,
            "fields_key": self.fields_key,
            "weights_sha256": self.weights_sha256,
        }


def model_inputs(
    name: str,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    model=None,
) -> ModelInputs:
    """Zoo model ``name`` (or ``model``) with its weights' sha256, the ensemble checked and
    the key of its fields computed (a valid cached study needs no fields at all)."""
    model, sha, n, length, seed = _zoo_model(name, model, n, length, seed)
    layers = check_layers(None, model.config.n_layer)
    fkey = fields_key(sha, n=n, length=length, seed=seed, layers=layers)
    return ModelInputs(name, model, sha, n, length, seed, fkey, cache_dir, progress)


def cached_model_study(
    kind: str,
    inputs: ModelInputs,
    parts: Mapping,
    compute: Callable[[ModelInputs], xr.Dataset],
    *,
    key_attr: str = "cache_key",
    attrs: Mapping | None = None,
    keyed_by_fields: bool = True,
) -> xr.Dataset:
    """``compute(inputs)`` of one zoo model, cached by :func:`cached_dataset` under
    ``<cache>/<kind>/<name>-*.nc``; the key is ``parts`` plus the fields' key (unless
    ``keyed_by_fields`` is false: a study that extracts its own ensemble puts the weights'
    and data's sha256 into ``parts``)."""
    full = {"fields_key": inputs.fields_key, **parts} if keyed_by_fields else dict(parts)
    return cached_dataset(
        kind,
        inputs.name,
        full,
        lambda: compute(inputs),
        cache_dir=inputs.cache_dir,
        attrs=attrs,
        key_attr=key_attr,
    )


def analysis_params(params: Mapping) -> str:
    """Every option of :func:`msapod.analyze`, the defaults filled in, as the JSON that
    keys a cached analysis (a changed default changes the key)."""
    full = check_options(**params)
    clean = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in sorted(full.items())}
    return json.dumps(clean, sort_keys=True, default=str)


def cached_analysis(
    name: str,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    model=None,
    **params,
) -> xr.Dataset:
    """:func:`msapod.analyze` of zoo model ``name``'s fields, from the cache if valid.

    The fields are :func:`cached_fields`' (same ``n``, ``length``, ``seed``); ``params``
    are passed to :func:`msapod.analyze`. The result is cached by :func:`cached_dataset`,
    keyed by the fields' key, the parameters and the msapod version.
    """
    inputs = model_inputs(
        name, n=n, length=length, seed=seed, cache_dir=cache_dir, progress=progress, model=model
    )
    parts = {
        "params": analysis_params(params),
        "msapod_version": package_version(),
        "analysis_format": ANALYSIS_FORMAT,
    }
    return cached_model_study(
        "analysis",
        inputs,
        parts,
        lambda inp: analyze(inp.fields(), **params),
        attrs={**inputs.identity(), "params": parts["params"]},
        key_attr="analysis_key",
    )


def cached_dataset(
    kind: str,
    label: str,
    parts: Mapping,
    compute: Callable[[], xr.Dataset],
    *,
    cache_dir: str | os.PathLike | None = None,
    attrs: Mapping | None = None,
    key_attr: str = "cache_key",
) -> xr.Dataset:
    """Return ``compute()``, cached as verified netCDF under ``<cache>/<kind>/``.

    The file is ``<label>-<key[:16]>.nc``, ``key`` the sha256 of ``parts``, ``kind`` and
    the msapod version. On load the stored key and a sha256 over the whole dataset are
    checked; a stale or unreadable file is reported with a :class:`CacheWarning` and
    recomputed. Files are moved into place atomically.

    Parameters
    ----------
    kind
        Sub-folder of the cache (``"analysis"``, ``"pruning"``, ...).
    label
        Human-readable file-name prefix (sanitised).
    parts
        Everything the result depends on; JSON-serialisable (``default=str`` is applied).
    compute
        Called on a miss; must return an :class:`xarray.Dataset`.
    cache_dir
        Cache root; default :func:`cache_dir`.
    attrs
        Extra attrs stored on the file (not part of the key).
    key_attr
        Name of the attr that stores the key.

    Returns
    -------
    xarray.Dataset
        Loaded into memory; ``encoding["source"]`` is the cache file.
    """
    if not isinstance(kind, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", kind):
        raise ValueError(f"kind: expected a plain folder name, got {kind!r}")
    full = {
        **dict(parts),
        "kind": kind,
        "msapod_version": package_version(),
        "dataset_format": DATASET_FORMAT,
    }
    full = json.loads(json.dumps(full, sort_keys=True, default=str))
    key = key_hash(full)
    path = _cache_file(cache_dir, kind, label, key[:16])
    if path.exists():
        ds, reason = _read_dataset(path, key, key_attr)
        if ds is not None:
            return ds
        warnings.warn(f"cache file {path}: {reason}; rebuilding it", CacheWarning, stacklevel=2)
    ds = compute()
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"compute: expected it to return an xarray.Dataset, got {type(ds)}")
    ds = netcdf_safe(ds)
    ds.attrs.update({k: str(v) for k, v in (attrs or {}).items()})
    ds.attrs[key_attr] = key
    ds.attrs["cache_key_parts"] = json.dumps(full, sort_keys=True)
    ds.attrs["values_sha256"] = _dataset_sha256(ds)
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf")
    back, reason = _read_dataset(path, key, key_attr)
    if back is None:
        raise OSError(f"cache file {path}: just written but fails verification: {reason}")
    return back


def _read_dataset(path: Path, key: str, key_attr: str) -> tuple[xr.Dataset | None, str]:
    """Load and verify a :func:`cached_dataset` file; ``(dataset, "")`` or ``(None, why)``."""
    try:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            ds = ds.load()
    except Exception as err:  # any failure to read means: rebuild
        return None, f"unreadable ({type(err).__name__}: {err})"
    if ds.attrs.get(key_attr) != key:
        return None, f"{key_attr} {ds.attrs.get(key_attr)!r}, expected {key!r}"
    if _dataset_sha256(ds) != ds.attrs.get("values_sha256"):
        return None, "values sha256 differs from the recorded checksum"
    ds.encoding["source"] = str(path)
    return ds, ""


def zoo_analysis(
    models: Sequence[str] | None = None,
    variables: Sequence[str] | None = None,
    *,
    progress: bool = False,
    **params,
) -> xr.Dataset:
    """:func:`cached_analysis` of several zoo models stacked along a ``model`` dim.

    One model at a time; only ``variables`` are kept (default: all but the large
    ``modes``, ``coefficients``, ``gram``, ``mean`` and ``coherency``).
    """
    heavy = {"modes", "coefficients", "gram", "mean", "coherency"}

    def one(name: str) -> xr.Dataset:
        ds = cached_analysis(name, progress=progress, **params)
        keep = [v for v in ds.data_vars if (v in variables if variables else v not in heavy)]
        out = ds[keep].load()
        ds.close()
        return out

    return stack_zoo(one, models)


def zoo_models(models: Sequence[str] | None = None) -> list[str]:
    """``models`` as a list; default every trained model of the main zoo."""
    if models is None:
        from ...models import zoo  # imports torch: only when the zoo is asked for

        return list(zoo.trained())
    return list(models)


def stack_zoo(
    study: Callable[[str], xr.Dataset],
    models: Sequence[str] | None = None,
    *,
    desc: str | None = None,
    progress: bool = False,
    compressed: Sequence[str] | None = None,
) -> xr.Dataset:
    """``study(name)`` of every model (default :func:`zoo_models`), one at a time, stacked
    by :func:`stack_models`; with ``compressed`` every encoding is reset and the variables
    named are gzip-compressed (:data:`msapod._io.COMPRESS`)."""
    models = zoo_models(models)
    parts = [study(m) for m in tqdm(models, desc=desc, disable=not (progress and desc))]
    out = stack_models(parts, models)
    if compressed is not None:
        for var in out.variables:
            out[var].encoding = {}
        for var in compressed:
            if var in out:
                out[var].encoding.update(COMPRESS)
    return out


def stack_models(parts: Sequence[xr.Dataset], models: Sequence[str]) -> xr.Dataset:
    """Concatenate per-model results along a ``model`` dim with an ``architecture`` coord
    (each zoo model's configured attention: ``"baseline"`` or ``"ega"``)."""
    from ...models.zoo import architecture  # imports torch: per-model results come from it

    models = list(models)
    out = xr.concat(
        list(parts),
        dim=xr.DataArray(models, dims="model", name="model"),
        coords="minimal",
        compat="override",
        combine_attrs="drop_conflicts",
    )
    return out.assign_coords(architecture=("model", [architecture(m) for m in models]))
