"""The one on-disk format of attention fields: a netCDF-4 file written batch by batch.

Every field set msapod writes is one :class:`FieldFile`: the field cache of the zoo models
(:func:`msapod.studies.store.cache.field_store`, and through it the null ensembles), the
ensembles that ``msapod analyze`` and the SmolLM2 study draw
(:mod:`msapod.studies.own_model`, :mod:`msapod.studies.measure.llm`) and the stores of
``collect_attention(..., store=path)`` (:func:`msapod.models.extract.write_attention`).

* **streaming**: each layer of a batch is written in place as soon as it is computed; a
  flag per batch (``done``) makes an interrupted write resume where it stopped;
* **chunking**: chunks of one layer, one head and ``chunk`` snapshots, gzip with the byte
  shuffle; :meth:`FieldFile.open` opens them lazily with dask chunks on the same grid;
* **verification**: written as ``<path>.partial`` and moved into place once complete, a
  file carries the key of everything it depends on and one sha256 per layer, which every
  read checks;
* **one library**: ``h5netcdf`` also reads and writes the shipped ``results/*.nc``; a zarr
  or netCDF ensemble of one's own is still an input (``msapod.analyze(xarray.open_zarr(...)
  ["attention"])``).

Layout: the variable ``attention(layer, [head,] snapshot, query, key)`` float32 (a lag band:
``lag`` in place of ``key``, see :func:`msapod.collect_attention`'s ``tau_max``) with its
descriptive attrs, coordinate variables for its dims (and ``offset(snapshot)`` when
given), ``done(batch)``, the arrays that describe the ensemble (e.g. token ids, dims
``<name>_<axis>``) and, as root attrs, ``key``, ``layer_sha256`` (when complete),
``msapod_fields`` (the layout version) and the ensemble's attrs.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm import tqdm

from ._io import COMPRESS

__all__ = ["FIELDS_FORMAT", "CacheWarning", "FieldFile", "key_hash", "values_sha256"]

#: Layout version of a field file (root attr ``msapod_fields``).
FIELDS_FORMAT = 1

#: The variable that holds the fields.
VAR = "attention"

#: Root attrs and variables of a field file that are not part of its ensemble description.
_OWN_ATTRS = ("key", "layer_sha256", "msapod_fields")


class CacheWarning(UserWarning):
    """A cached or partial file was stale, tampered with or unreadable, and is redone."""


def values_sha256(values: np.ndarray) -> str:
    """sha256 of float32 field values as contiguous little-endian bytes (the checksum of
    one layer of a field file)."""
    return hashlib.sha256(np.ascontiguousarray(values, dtype="<f4")).hexdigest()


def key_hash(parts: Mapping) -> str:
    """sha256 of the JSON of ``parts`` (keys sorted): the key of what a file depends on."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def default_dims(ndim: int) -> tuple[str, ...]:
    """``(layer, [head,] snapshot, query, key)`` for a 4- or 5-dimensional field array."""
    if ndim == 4:
        return ("layer", "snapshot", "query", "key")
    if ndim == 5:
        return ("layer", "head", "snapshot", "query", "key")
    raise ValueError(f"shape: expected (layer, [head,] snapshot, query, key), got {ndim} axes")


def default_coords(dims: Sequence[str], shape: Sequence[int]) -> dict:
    """Layers and heads numbered from 1, snapshots, queries and keys from 0."""
    first = {"layer": 1, "head": 1}
    return {
        d: np.arange(first.get(d, 0), first.get(d, 0) + s) for d, s in zip(dims, shape, strict=True)
    }


class FieldFile:
    """Attention fields of one ensemble in one netCDF-4 file, written batch by batch.

    Parameters
    ----------
    path
        The finished file.
    key
        Hash of everything the fields depend on (:func:`key_hash`).
    """

    def __init__(self, path: str | os.PathLike, key: str):
        self.path = Path(path)
        self.key = key
        self.partial = self.path.with_name(self.path.name + ".partial")

    # ------------------------------------------------------------------ reading

    def _open(self):
        """The file opened for reading, or None where it is missing or unreadable."""
        import h5netcdf

        try:
            return h5netcdf.File(self.path, "r")
        except Exception:  # noqa: BLE001 - unreadable means: not there
            return None

    def problem(
        self,
        *,
        shape: Sequence[int] | None = None,
        coords: Mapping[str, np.ndarray] | None = None,
        attrs: Mapping | None = None,
    ) -> str:
        """Why the finished file cannot be served ("" when it can), without reading the
        values: missing or unreadable, another key, incomplete, or another ``shape``,
        ``coords`` or ``attrs`` (those given) than expected."""
        if not self.path.exists():
            return "missing"
        f = self._open()
        if f is None:
            return "unreadable (not a netCDF-4/HDF5 file)"
        with f:
            try:
                return _describe_mismatch(f, self.key, shape, coords, attrs)
            except Exception as err:  # noqa: BLE001 - any unreadable part means: redo
                return f"unreadable ({type(err).__name__}: {err})"

    def complete(self) -> bool:
        """Whether the finished file is there with this key and its checksums."""
        return self.problem() == ""

    def layer(self, k: int) -> np.ndarray:
        """Verified float32 field of layer index ``k``: ``([head,] snapshot, query, key)``.

        Raises
        ------
        OSError
            The file is missing, from another key, or the layer's sha256 differs.
        """
        why = self.problem()
        if why:
            raise OSError(f"fields file {self.path}: {why}")
        with self._open() as f:
            values = np.ascontiguousarray(f.variables[VAR][k], dtype="<f4")
            want = _sums(f.attrs)[k]
        got = values_sha256(values)
        if got != want:
            raise OSError(f"fields file {self.path}: layer index {k} sha256 {got} != {want}")
        return values

    def verify(self) -> str:
        """The empty string if every layer's values match their sha256 (read a chunk of
        snapshots at a time, never a whole layer), else which one differs."""
        with self._open() as f:
            var = f.variables[VAR]
            for k, want in enumerate(_sums(f.attrs)):
                got = _layer_sha256(var, k)
                if got != want:
                    return f"layer index {k}: values sha256 {got} != the recorded {want}"
        return ""

    def read(self, **expect) -> tuple[xr.DataArray | None, str]:
        """The fields loaded into memory and verified (key, ``expect``: see
        :meth:`problem`, and every layer's sha256): ``(array, "")``, or ``(None,
        reason)``. ``encoding["source"]`` is the file."""
        why = self.problem(**expect)
        if why:
            return None, why
        try:
            with xr.open_dataset(self.path, engine="h5netcdf") as ds:
                da = ds[VAR].load()
                sums = _sums(ds.attrs)
        except Exception as err:  # noqa: BLE001 - any failure to read means: redo
            return None, f"unreadable ({type(err).__name__}: {err})"
        for k, want in enumerate(sums):
            got = values_sha256(da.values[k])
            if got != want:
                return None, f"layer index {k}: values sha256 {got} != the recorded {want}"
        return _as_fields(da, self.path), ""

    def open(self, chunks: Mapping[str, int] | None = None, **expect) -> xr.DataArray:
        """The fields opened lazily (dask-backed, ``chunks`` per dim; default: the file's
        own chunks) after a streamed check of the key, ``expect`` and every layer's sha256.

        Raises
        ------
        OSError
            The file is missing, unreadable, from another key, differs from ``expect`` or
            its values from their checksums.
        """
        why = self.problem(**expect) or self.verify()
        if why:
            raise OSError(f"fields file {self.path}: {why}")
        ds = xr.open_dataset(self.path, engine="h5netcdf", chunks=dict(chunks or {}))
        da = _as_fields(ds[VAR], self.path)
        da.set_close(ds.close)  # ``da.close()`` releases the file
        return da

    def ensemble(self) -> dict:
        """The arrays and attrs stored with the fields to describe the ensemble."""
        f = self._open()
        if f is None:
            raise OSError(f"fields file {self.path}: missing or unreadable")
        with f:
            if f.attrs.get("key") != self.key:
                raise OSError(f"fields file {self.path}: from another key")
            return _ensemble_of(f)

    # ------------------------------------------------------------------ writing

    def build(
        self,
        plan: Sequence[tuple[int, int]],
        shape: Sequence[int],
        record: Callable[[int, int, Mapping[str, np.ndarray], Callable], None],
        *,
        dims: Sequence[str] | None = None,
        coords: Mapping[str, np.ndarray] | None = None,
        attrs: Mapping | None = None,
        offsets: np.ndarray | None = None,
        ensemble: Callable[[], tuple[Mapping, Mapping]] | None = None,
        chunk: int | None = None,
        progress: bool = False,
        desc: str = "attention",
    ) -> None:
        """Write the fields batch by batch, resuming a partial file with the same key,
        plan and shape (a stale or unreadable one is removed with a :class:`CacheWarning`),
        then add the layers' sha256 and move the file into place.

        Parameters
        ----------
        plan
            ``[start, stop)`` snapshot ranges of the batches.
        shape
            ``(layer, [head,] snapshot, query, key)`` of the whole field array.
        record
            ``record(start, stop, arrays, write)``: computes the fields of snapshots
            ``start..stop`` and calls ``write(k, values)`` for every layer index ``k`` as
            soon as that layer is computed, ``values`` laid out as ``shape`` without its
            layer axis and with ``stop - start`` snapshots (so memory holds one layer of
            one batch); ``arrays`` are the ensemble's arrays stored in the file. A batch
            counts as done once every layer is written.
        dims, coords, attrs, offsets
            The array's dims (default :func:`default_dims`), coordinates (default
            :func:`default_coords`), descriptive attrs and per-snapshot ``offset``
            coordinate (optional).
        ensemble
            Called once when a new file is started: ``(arrays, attrs)`` stored with the
            fields (e.g. the token ids the batches read back).
        chunk
            Snapshots per chunk (default: the largest batch, at most 16).
        progress, desc
            A tqdm bar over the layers of the batches, and its label.
        """
        shape = tuple(int(s) for s in shape)
        dims = tuple(dims) if dims is not None else default_dims(len(shape))
        f = self._resume(len(plan), shape)
        if f is None:
            arrays, ens_attrs = ensemble() if ensemble is not None else ({}, {})
            n = shape[dims.index("snapshot")]
            chunk = chunk or min(16, max(b - a for a, b in plan))
            coords = {**default_coords(dims, shape), **(coords or {})}
            layout = (dims, shape, coords, attrs or {}, offsets, min(chunk, n))
            f = self._start(len(plan), layout, arrays, ens_attrs)
        try:
            self._record(f, plan, record, progress, desc)
            var = f.variables[VAR]
            f.attrs["layer_sha256"] = [_layer_sha256(var, k) for k in range(shape[0])]
        finally:
            f.close()
        os.replace(self.partial, self.path)

    def _resume(self, n_batches: int, shape: tuple[int, ...]):
        """The partial file opened for appending if it has this key, plan and shape, else
        None."""
        import h5netcdf

        if not self.partial.exists():
            return None
        f = None
        try:
            f = h5netcdf.File(self.partial, "a")
            if (
                f.attrs.get("key") != self.key
                or f.variables["done"].shape != (n_batches,)
                or f.variables[VAR].shape != shape
            ):
                raise ValueError("stale")
            return f
        except Exception:  # noqa: BLE001 - a stale or broken partial file is redone
            if f is not None:
                f.close()
            warnings.warn(
                f"fields file {self.partial}: unreadable or stale; starting again",
                CacheWarning,
                stacklevel=4,
            )
            self.partial.unlink()
            return None

    def _start(self, n_batches: int, layout: tuple, arrays: Mapping, ens_attrs: Mapping):
        """A new partial file: empty fields, no batch done, the ensemble's arrays and
        attrs."""
        import h5netcdf

        dims, shape, coords, attrs, offsets, chunk = layout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = h5netcdf.File(self.partial, "w")
        f.dimensions = {**dict(zip(dims, shape, strict=True)), "batch": n_batches}
        for d in dims:
            f.create_variable(d, (d,), data=np.asarray(coords[d]))
        if offsets is not None:
            f.create_variable("offset", ("snapshot",), data=np.asarray(offsets, dtype=np.int64))
        var = f.create_variable(
            VAR,
            dims,
            dtype="f4",
            chunks=tuple(chunk if d == "snapshot" else 1 for d in dims[:-2]) + shape[-2:],
            compression="gzip",
            compression_opts=COMPRESS["complevel"],
            shuffle=COMPRESS["shuffle"],
        )
        var.attrs.update(attrs)
        if offsets is not None:
            var.attrs["coordinates"] = "offset"
        f.create_variable("done", ("batch",), data=np.zeros(n_batches, dtype="u1"))
        for name, values in arrays.items():
            values = np.asarray(values)
            axes = tuple(f"{name}_{i}" for i in range(values.ndim))
            f.dimensions.update(dict(zip(axes, values.shape, strict=True)))
            f.create_variable(name, axes, data=values)
        f.attrs["key"] = self.key
        f.attrs["msapod_fields"] = FIELDS_FORMAT
        f.attrs.update(ens_attrs)
        f.flush()
        return f

    def _record(self, f, plan, record, progress: bool, desc: str) -> None:
        """Run the batches not done yet, each layer written as it comes, flagging each
        batch once all its layers are written."""
        var, done = f.variables[VAR], f.variables["done"]
        shape = var.shape
        axis = var.dimensions.index("snapshot")
        arrays = _ensemble_of(f, attrs=False)
        todo = [i for i, flag in enumerate(done[...]) if not flag]
        bar = tqdm(  # a step per layer of a batch: a pass's progress shows as it runs
            total=len(plan) * shape[0],
            initial=(len(plan) - len(todo)) * shape[0],
            desc=desc,
            unit="layer",
            disable=not progress,
            mininterval=1,
        )
        with bar:
            for i in todo:
                a, b = plan[i]
                written = set()

                def write(k: int, values: np.ndarray, a=a, b=b, written=written) -> None:
                    want = (*shape[1:axis], b - a, *shape[axis + 1 :])
                    if not 0 <= k < shape[0] or np.shape(values) != want:
                        raise ValueError(
                            f"fields file {self.partial}: batch {a}:{b} layer index {k} has "
                            f"shape {np.shape(values)}, expected {want} for one of "
                            f"{shape[0]} layers"
                        )
                    where = (k,) + (slice(None),) * (axis - 1) + (slice(a, b),)
                    var[where] = np.asarray(values).astype("<f4", copy=False)
                    written.add(k)
                    bar.update(1)

                record(a, b, arrays, write)
                if len(written) != shape[0]:
                    raise ValueError(
                        f"fields file {self.partial}: batch {a}:{b} wrote layer indices "
                        f"{sorted(written)}, expected all {shape[0]}"
                    )
                f.flush()
                done[i] = 1
                f.flush()


def _layer_sha256(var, k: int, step: int = 16) -> str:
    """sha256 of layer ``k`` of a field variable, read a block of snapshots at a time: the
    same digest as :func:`values_sha256` of the whole layer (C order)."""
    h = hashlib.sha256()
    axis = var.dimensions.index("snapshot") - 1  # within the layer
    mid, n = var.shape[1 : axis + 1], var.shape[axis + 1]
    for ix in np.ndindex(*mid):
        for a in range(0, n, step):
            block = var[(k, *ix, slice(a, min(a + step, n)))]
            h.update(np.ascontiguousarray(block, dtype="<f4"))
    return h.hexdigest()


def _sums(attrs) -> list[str]:
    """The layers' sha256 of a file's attrs (one layer's is stored as a plain string)."""
    sums = attrs["layer_sha256"]
    return [sums] if isinstance(sums, str) else [str(x) for x in sums]


def _describe_mismatch(f, key: str, shape, coords, attrs) -> str:
    """What differs between an open field file and what is expected ("" nothing)."""
    layout = f.attrs.get("msapod_fields")
    if layout != FIELDS_FORMAT:
        got = "none" if layout is None else f"{layout}"
        return f"layout {got}, expected {FIELDS_FORMAT} (attr msapod_fields)"
    if f.attrs.get("key") != key:
        return f"key {f.attrs.get('key')}, expected {key}"
    if "layer_sha256" not in f.attrs or VAR not in f.variables:
        return "incomplete (no checksums)"
    var = f.variables[VAR]
    if var.dtype != np.float32 or len(_sums(f.attrs)) != var.shape[0]:
        return (
            f"array {var.dtype} with {len(_sums(f.attrs))} checksums, expected float32 with "
            f"one per layer ({var.shape[0]})"
        )
    if shape is not None and tuple(var.shape) != tuple(shape):
        return f"shape {tuple(var.shape)}, expected {tuple(shape)}"
    for name, want in (coords or {}).items():
        got = f.variables[name][...] if name in f.variables else None
        if got is None or got.shape != np.shape(want) or not np.array_equal(got, want):
            return f"coordinate {name} differs from the one expected"
    for name, want in (attrs or {}).items():
        got = var.attrs.get(name)
        if got is None or str(got) != str(want):
            return f"attr {name} is {got!r}, expected {want!r}"
    return ""


def _ensemble_of(f, attrs: bool = True) -> dict:
    """The ensemble's arrays (and root attrs) of an open field file."""
    fixed = {VAR, "done", "offset", *f.variables[VAR].dimensions}
    out = {k: v[...] for k, v in f.variables.items() if k not in fixed}
    if attrs:
        out.update({k: v for k, v in f.attrs.items() if k not in _OWN_ATTRS})
    return out


def _as_fields(da: xr.DataArray, path: Path) -> xr.DataArray:
    """The stored array as the fields: the ``offset`` coordinate and attr loaded, name
    and source set."""
    small = [c for c in da.coords if c not in da.dims]
    if small:  # e.g. ``offset``: load the per-snapshot labels, keep the data lazy
        da = da.assign_coords({c: da[c].load() for c in small})
    da = da.drop_vars([c for c in da.coords if c not in da.dims and c != "offset"])
    da.encoding["source"] = str(path)
    da.encoding.pop("coordinates", None)
    da.name = VAR
    return da
