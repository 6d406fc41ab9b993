"""Attention fields of a model over a snippet ensemble, as labelled arrays.

For each layer the attention probabilities ``A_s^{l,h}(i, j)`` of every snippet ``s`` of
an ensemble (PAPER.md step 1, :func:`ensemble_ids`) are collected into an
:class:`xarray.DataArray` with dims ``("head", "snapshot", "query", "key")``, without
``head`` when heads are averaged, ``lag`` for ``key`` in a lag band (``tau = i - j`` in
``0..tau_max``, PAPER.md step 3). Layers and heads are labelled from 1, as in the paper.
The probabilities are recorded in one forward pass per batch (:mod:`msapod.models.record`)
into memory (:func:`collect_attention`), a field file (:func:`write_attention`) or one
layer at a time (:func:`iter_attention`).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Sequence

import numpy as np
import torch
import xarray as xr
from tqdm import tqdm

from .._io import check_int, package_version
from .._labels import check_tau_max
from ..fieldfile import FieldFile, default_coords, key_hash
from .data import check_layers, ensemble_ids, load_corpus
from .gpt import GPT
from .record import Layout, inference, record_batch, recording_path

__all__ = [
    "collect_attention",
    "ensemble_ids",
    "iter_attention",
    "record_fields",
    "write_attention",
]


# ----------------------------------------------------------------------------- models


def _is_hf(model) -> bool:
    """Whether ``model`` is a transformers model (one implies transformers was imported)."""
    tf = sys.modules.get("transformers")
    return tf is not None and isinstance(model, tf.PreTrainedModel)


def _model_info(model) -> dict:
    """n_layer, n_head, max_len, vocab_size and kind of a supported model."""
    if isinstance(model, GPT):
        c = model.config
        return {
            "n_layer": c.n_layer,
            "n_head": c.n_head,
            "max_len": c.block_size,
            "vocab_size": c.vocab_size,
            "attention": c.attention,
            "framework": "msapod",
        }
    if _is_hf(model):
        c = model.config
        return {
            "n_layer": int(c.num_hidden_layers),
            "n_head": int(c.num_attention_heads),
            "max_len": getattr(c, "max_position_embeddings", None),
            "vocab_size": getattr(c, "vocab_size", None),
            "attention": "standard",
            "framework": "transformers",
        }
    raise ValueError(
        "model: expected an msapod.models.gpt.GPT or a transformers.PreTrainedModel, "
        f"got {type(model).__name__}"
    )


def _model_name(model, name: str | None) -> str:
    if name is not None:
        return str(name)
    own = getattr(model, "name", None)
    if isinstance(own, str) and own:
        return own
    if _is_hf(model):
        path = getattr(model.config, "name_or_path", "") or getattr(model, "name_or_path", "")
        return str(path or model.config.model_type)
    return type(model).__name__


def _as_ids(model, texts_or_ids, info: dict, tokenizer=None, least: int = 2) -> np.ndarray:
    """Validate and convert ``texts_or_ids`` to an ``(N, L)`` int64 array of at least
    ``least`` snapshots (an ensemble: 2; a batch streamed by :func:`iter_attention`: 1)."""
    if isinstance(texts_or_ids, str):
        raise ValueError("texts_or_ids: expected a list of strings or (N, L) ids, got one string")
    if (
        isinstance(texts_or_ids, list | tuple)
        and texts_or_ids
        and all(isinstance(t, str) for t in texts_or_ids)
    ):
        texts = list(texts_or_ids)
        if info["framework"] == "transformers":
            if tokenizer is None:
                raise ValueError(
                    "texts_or_ids: strings need tokenizer= for a Hugging Face model "
                    "(or pass token ids)"
                )
            encoded = [list(tokenizer(t)["input_ids"]) for t in texts]
        else:
            corpus = load_corpus()
            encoded = [corpus.encode(t) for t in texts]
        lengths = sorted({len(e) for e in encoded})
        if len(lengths) != 1:
            raise ValueError(
                f"texts_or_ids: expected strings of equal (token) length, got lengths {lengths}"
            )
        ids = np.asarray(encoded, dtype=np.int64).reshape(len(texts), lengths[0])
    else:
        tensor = isinstance(texts_or_ids, torch.Tensor)
        arr = texts_or_ids.detach().cpu().numpy() if tensor else np.asarray(texts_or_ids)
        if arr.dtype.kind not in "iu":
            raise ValueError(
                f"texts_or_ids: expected integer token ids or a list of strings, "
                f"got dtype {arr.dtype}"
            )
        if arr.ndim != 2:
            raise ValueError(
                f"texts_or_ids: expected a 2-D (snapshot, position) array, got shape {arr.shape}"
            )
        ids = arr.astype(np.int64)
    n, length = ids.shape
    if n < least:
        raise ValueError(f"texts_or_ids: expected at least {least} snapshots, got {n}")
    if length < 1:
        raise ValueError("texts_or_ids: expected at least one token per snapshot, got 0")
    if info["max_len"] is not None and length > info["max_len"]:
        raise ValueError(
            f"texts_or_ids: length {length} exceeds the model's context {info['max_len']}"
        )
    vocab = info["vocab_size"]
    if ids.min() < 0 or (vocab is not None and ids.max() >= vocab):
        raise ValueError(
            f"texts_or_ids: expected token ids in 0..{vocab - 1 if vocab else 'vocab'}, "
            f"got range {ids.min()}..{ids.max()}"
        )
    return ids


def _model_device(model) -> torch.device:
    for p in model.parameters():
        return p.device
    return torch.device("cpu")


def _base_attrs(model, info: dict, name: str | None) -> dict:
    attrs = {
        "model": _model_name(model, name),
        "attention": info["attention"],
        "framework": info["framework"],
    }
    sha = getattr(model, "weights_sha256", None)
    if isinstance(sha, str):
        attrs["weights_sha256"] = sha
    if info["framework"] == "transformers":
        attrs["model_type"] = str(model.config.model_type)
    return attrs


def _layout(average_heads, tau_max, dtype, length: int) -> Layout:
    """The checked arrangement of the recorded layers."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype: expected a floating dtype, got {dtype}")
    if not isinstance(average_heads, bool | np.bool_):
        raise ValueError(f"average_heads: expected True or False, got {average_heads!r}")
    return Layout(bool(average_heads), check_tau_max(tau_max, length), dtype)


def _field_dims(info: dict, layout: Layout, n: int, length: int) -> tuple[tuple, tuple, dict]:
    """``(dims, shape, coords)`` of one layer's field over ``n`` snapshots."""
    last = "key" if layout.tau_max is None else "lag"
    dims = ("snapshot", "query", last)
    shape = (n, length, layout.width(length))
    if not layout.average_heads:
        dims, shape = ("head", *dims), (info["n_head"], *shape)
    return dims, shape, default_coords(dims, shape)


def _heads_first(values: np.ndarray) -> np.ndarray:
    """A recorded batch ``(B, [H,] L, W)`` with the heads before the snapshots."""
    return values.swapaxes(0, 1) if values.ndim == 4 else values


def _batches(n: int, batch_size: int) -> list[tuple[int, int]]:
    return [(a, min(a + batch_size, n)) for a in range(0, n, batch_size)]


def _record_pass(model, ids: np.ndarray, a: int, b: int, layers: list[int], layout, write) -> None:
    """One forward pass over the snippets ``a..b - 1``: ``write(k, values)`` for the
    ``k``-th of ``layers``, ``values ([head,] snapshot, query, width)``."""
    index = {layer: k for k, layer in enumerate(layers)}
    idx = torch.as_tensor(ids[a:b], device=_model_device(model))
    record_batch(
        model, idx, layers, lambda layer, part: write(index[layer], _heads_first(part)), layout
    )


def _gpt_layers(
    model: GPT, ids: np.ndarray, layers: list[int], batch_size: int, layout: Layout
) -> Iterator[tuple[int, Iterator[np.ndarray]]]:
    """Per requested layer (1-based), an iterator over the arranged probabilities of each
    batch (heads first): the hidden state entering the current block is kept per batch and
    advanced block by block, which reproduces ``GPT.attention(idx, layers=[l])`` exactly."""
    device = _model_device(model)
    batches = [torch.as_tensor(ids[a:b], device=device) for a, b in _batches(len(ids), batch_size)]
    for b in batches:
        model.check_idx(b)
    pos = torch.arange(ids.shape[1], device=device)
    hidden = [model.wte(b) + model.wpe(pos) for b in batches]
    done = 0  # number of blocks applied to `hidden`
    for layer in layers:
        for li in range(done, layer - 1):
            hidden = [model.blocks[li](x)[0] for x in hidden]
        done = layer - 1
        block = model.blocks[layer - 1]
        probabilities = (block.attn.probabilities(block.ln_1(x)) for x in hidden)
        yield layer, (_heads_first(layout.arrange(p)) for p in probabilities)


def _recorded_layers(
    model, ids: np.ndarray, layers: list[int], batch_size: int, layout: Layout
) -> Iterator[tuple[int, Iterator[np.ndarray]]]:
    """Per requested layer, an iterator over each batch's arranged probabilities (heads
    first), every pass stopping at that layer (:func:`msapod.models.record.record_batch`)."""

    def batches(layer: int) -> Iterator[np.ndarray]:
        for a, b in _batches(len(ids), batch_size):
            got: list[np.ndarray] = []
            _record_pass(
                model, ids, a, b, [layer], layout, lambda _, part, got=got: got.append(part)
            )
            yield got[0]

    for layer in layers:
        yield layer, batches(layer)


def iter_attention(
    model,
    ids,
    *,
    layers: Sequence[int] | int | None = None,
    batch_size: int = 16,
    average_heads: bool = False,
    dtype=np.float32,
    progress: bool = False,
    name: str | None = None,
    tau_max: int | None = None,
) -> Iterator[xr.DataArray]:
    """Yield the attention field of each requested layer, one layer at a time.

    Parameters
    ----------
    model
        An :class:`msapod.models.gpt.GPT` or a ``transformers.PreTrainedModel`` (any
        attention implementation; see :mod:`msapod.models.record`). It is run in eval
        mode without gradients; its mode is restored afterwards.
    ids
        ``(N, L)`` integer token ids (numpy array, nested list or torch tensor), ``N >= 1``
        snapshots of ``L <=`` context length tokens.
    layers
        1-based layer numbers (as in the paper); default all. Yielded in ascending order.
    batch_size
        Snapshots per forward pass.
    average_heads
        If true, yield the head mean (taken batch by batch, in float64, so all heads of
        the whole ensemble are never held at once).
    dtype
        Floating dtype of the output; probabilities are computed in float64 (msapod
        models) or float32 (Hugging Face models) and cast batch by batch.
    progress
        Show a tqdm progress bar over (layer, batch) steps.
    name
        Model label for the attrs (default ``model.name`` or the HF name).
    tau_max
        Keep only the lags ``tau = query - key`` in ``0..tau_max`` (the lag layout of
        :func:`msapod.to_lag`): the last dim is ``lag``; default None, the whole
        ``(query, key)`` field. The values at those lags are the full field's.

    Yields
    ------
    xarray.DataArray
        Dims ``("head", "snapshot", "query", "key")`` (no ``head`` with
        ``average_heads``; ``lag`` for ``key`` with ``tau_max``), coords ``head`` 1..H,
        ``snapshot`` 0..N-1, ``query`` and ``key`` 0..L-1 (``lag`` 0..tau_max), scalar
        coord ``layer``. Each row sums to one over ``key``.

    Notes
    -----
    Memory holds one layer: ``H * N * L * W`` values (``W = L``, or ``tau_max + 1`` in a
    band). For msapod GPTs the hidden states of the current layer are cached per batch,
    so each block runs once; a Hugging Face model runs its layers up to layer l for every
    layer l (:func:`collect_attention` records every layer in one pass).
    """
    info = _model_info(model)
    ids = _as_ids(model, ids, info, least=1)
    layers = check_layers(layers, info["n_layer"])
    batch_size = check_int(batch_size, "batch_size", 1)
    layout = _layout(average_heads, tau_max, dtype, ids.shape[1])
    return _iter_attention(model, ids, info, layers, batch_size, layout, progress, name)


def _iter_attention(model, ids, info, layers, batch_size, layout, progress, name):
    n, length = ids.shape
    attrs = _base_attrs(model, info, name)
    attrs.update(source="msapod.iter_attention", average_heads=int(layout.average_heads))
    if layout.tau_max is not None:
        attrs.update(tau_max=layout.tau_max, lag_definition="tau = query - key")
    source = _gpt_layers if info["framework"] == "msapod" else _recorded_layers
    dims, shape, coords = _field_dims(info, layout, n, length)
    bar = tqdm(
        total=len(layers) * len(_batches(n, batch_size)),
        desc=f"attention ({recording_path(model)})",
        disable=not progress,
        mininterval=2,
    )
    layer_iter = source(model, ids, layers, batch_size, layout)
    try:
        while True:
            # eval mode and no_grad hold while a layer is computed, not while the caller
            # holds the yielded array
            with inference(model):
                try:
                    layer, batches = next(layer_iter)
                except StopIteration:
                    return
                out = np.empty(shape, dtype=layout.dtype)
                for (a, b), values in zip(_batches(n, batch_size), batches, strict=True):
                    out[..., a:b, :, :] = values
                    bar.update(1)
            da = xr.DataArray(out, dims=dims, coords={**coords, "layer": layer}, attrs=dict(attrs))
            da.name = "attention"
            yield da
    finally:
        bar.close()


def collect_attention(
    model,
    texts_or_ids,
    *,
    layers: Sequence[int] | int | None = None,
    average_heads: bool = False,
    batch_size: int = 16,
    name: str | None = None,
    offsets=None,
    dtype=np.float32,
    progress: bool = True,
    tokenizer=None,
    data_sha256: str | None = None,
    tau_max: int | None = None,
    store=None,
    snapshot_chunk: int | None = None,
    overwrite: bool = False,
) -> xr.DataArray:
    """Attention fields of all requested layers as one labelled array, recorded in one
    forward pass per batch.

    Parameters
    ----------
    model, layers, average_heads, batch_size, dtype, progress, name, tau_max
        As in :func:`iter_attention` (layers 1-based).
    texts_or_ids
        ``(N, L)`` integer token ids (numpy array, nested list or torch tensor), or a list
        of ``N`` strings of equal length. Strings are encoded with the TinyShakespeare
        character vocabulary for msapod models and with ``tokenizer`` for Hugging Face
        models (their token counts must agree).
    offsets
        Optional ``(N,)`` start offsets of the snapshots in their text, stored as the
        non-dim coord ``offset`` on ``snapshot`` and in the attrs.
    tokenizer
        Hugging Face tokenizer for string input to an HF model.
    data_sha256
        sha256 of the text the snapshots come from (e.g. ``Corpus.sha256``), recorded in
        the attrs; ``ids_sha256`` (of the int64 ids) is recorded always.
    store
        A file path: stream the ensemble into a field file there and return it opened
        lazily (:func:`write_attention`, to which ``snapshot_chunk`` and ``overwrite`` are
        passed). Default ``None``: an in-memory array.

    Returns
    -------
    xarray.DataArray
        Dims ``("layer", "head", "snapshot", "query", "key")``, without ``head`` when
        ``average_heads``, ``lag`` (0..tau_max) for ``key`` with ``tau_max``. attrs:
        ``model``, ``weights_sha256`` (if the model has one), ``data_sha256`` (if given),
        ``ids_sha256``, ``n_snapshots``, ``length``, ``offsets`` (if given),
        ``attention`` (``"standard"``/``"ega"``), ``framework``, ``average_heads``,
        ``tau_max`` (with a band), ``source`` and ``msapod_version``. With ``store`` the
        data are dask-backed (chunked over ``snapshot``, one layer and head per chunk).
    """
    if store is not None:
        return write_attention(
            model, texts_or_ids, store, layers=layers, average_heads=average_heads,
            batch_size=batch_size, name=name, offsets=offsets, dtype=dtype, progress=progress,
            tokenizer=tokenizer, data_sha256=data_sha256, tau_max=tau_max,
            snapshot_chunk=snapshot_chunk, overwrite=overwrite,
        )  # fmt: skip
    info, ids, offsets, layer_list, attrs, layout = _prepare_collect(
        model, texts_or_ids, layers, average_heads, name, offsets, tokenizer, data_sha256,
        tau_max, dtype,
    )  # fmt: skip
    batch_size = check_int(batch_size, "batch_size", 1)
    dims, shape, coords = _field_dims(info, layout, *ids.shape)
    values = np.empty((len(layer_list), *shape), dtype=layout.dtype)
    plan = tqdm(
        _batches(len(ids), batch_size),
        desc=f"attention ({recording_path(model)})",
        unit="batch",
        disable=not progress,
        mininterval=2,
    )
    with inference(model):
        for a, b in plan:

            def put(k: int, part: np.ndarray, a=a, b=b) -> None:
                values[k][..., a:b, :, :] = part

            _record_pass(model, ids, a, b, layer_list, layout, put)
    coords = {**coords, "layer": np.asarray(layer_list)}
    out = xr.DataArray(values, dims=("layer", *dims), coords=coords, attrs=attrs, name="attention")
    if offsets is not None:
        out = out.assign_coords(offset=("snapshot", offsets))
    return out


def _prepare_collect(
    model, texts_or_ids, layers, average_heads, name, offsets, tokenizer, sha, tau_max, dtype
):
    """Validated ``(info, ids, offsets, layers, attrs, layout)`` of :func:`collect_attention`."""
    info = _model_info(model)
    ids = _as_ids(model, texts_or_ids, info, tokenizer=tokenizer)
    n, length = ids.shape
    layout = _layout(average_heads, tau_max, dtype, length)
    if offsets is not None:
        offsets = np.asarray(offsets)
        if offsets.shape != (n,) or offsets.dtype.kind not in "iu":
            raise ValueError(
                f"offsets: expected {n} integer offsets (one per snapshot), got "
                f"shape {offsets.shape} dtype {offsets.dtype}"
            )
        offsets = offsets.astype(np.int64)
    if sha is not None and not isinstance(sha, str):
        raise ValueError(f"data_sha256: expected a hex string, got {sha!r}")
    layer_list = check_layers(layers, info["n_layer"])
    attrs = _base_attrs(model, info, name)
    attrs.update(
        n_snapshots=n,
        length=length,
        ids_sha256=hashlib.sha256(np.ascontiguousarray(ids, dtype="<i8").tobytes()).hexdigest(),
        average_heads=int(layout.average_heads),
        source="msapod.collect_attention",
        msapod_version=package_version(),
        description=(
            "attention probabilities A(i, j): row = query position i, column = key "
            "position j; layers and heads numbered from 1"
            + ("; mean over heads" if layout.average_heads else "")
            + (
                f"; lag band R(i, tau) = A(i, i - tau), tau = 0..{layout.tau_max}"
                if layout.tau_max is not None
                else ""
            )
        ),
    )
    if layout.tau_max is not None:
        attrs.update(tau_max=layout.tau_max, lag_definition="tau = query - key")
    if sha is not None:
        attrs["data_sha256"] = sha
    if offsets is not None:
        attrs["offsets"] = offsets
    return info, ids, offsets, layer_list, attrs, layout


# ----------------------------------------------------------------------------- stores


def write_attention(
    model,
    texts_or_ids,
    path: str | os.PathLike,
    *,
    layers: Sequence[int] | int | None = None,
    average_heads: bool = False,
    batch_size: int = 16,
    name: str | None = None,
    offsets=None,
    dtype=np.float32,
    progress: bool = True,
    tokenizer=None,
    data_sha256: str | None = None,
    tau_max: int | None = None,
    snapshot_chunk: int | None = None,
    overwrite: bool = False,
) -> xr.DataArray:
    """Stream the attention fields of an ensemble into a field file and open it lazily.

    Each layer of each batch is written as soon as it is computed (memory: one layer of
    one batch plus the model) into a :class:`msapod.fieldfile.FieldFile`; an interrupted
    write resumes where it stopped. The result is the file opened lazily after its checks,
    a dask-backed DataArray that every msapod analysis function accepts.

    Parameters
    ----------
    model, texts_or_ids, layers, average_heads, batch_size, name, offsets, progress,
    tokenizer, data_sha256, tau_max
        As in :func:`collect_attention`.
    path
        The file (conventionally ``*.nc``).
    dtype
        float32, the precision of every field file (given only to be checked).
    snapshot_chunk
        Snapshots per chunk (default ``batch_size``); chunks hold one layer and one head:
        ``(1, 1, snapshot_chunk, L, W)`` (``(1, snapshot_chunk, L, W)`` head-averaged).
    overwrite
        Rebuild an existing file. Without it an existing file is reused only if it holds
        exactly what was asked (dims, shape, coords and attrs) and its values their
        checksums; otherwise a ``ValueError`` lists the differences. An interrupted write
        of the same request resumes, unless the model has no ``weights_sha256``.

    Returns
    -------
    xarray.DataArray
        Dims, coords and attrs as :func:`collect_attention` returns them, dask-backed.

    Raises
    ------
    ValueError
        Bad arguments; without ``overwrite``, an existing file that differs from the
        request or cannot be verified; a file that does not read back as written.
    """
    if np.dtype(dtype) != np.float32:
        raise ValueError(f"dtype: a field file holds float32, got {np.dtype(dtype)}")
    info, ids, offsets, layer_list, attrs, layout = _prepare_collect(
        model, texts_or_ids, layers, average_heads, name, offsets, tokenizer, data_sha256,
        tau_max, dtype,
    )  # fmt: skip
    batch_size = check_int(batch_size, "batch_size", 1)
    chunk = check_int(batch_size if snapshot_chunk is None else snapshot_chunk, "snapshot_chunk", 1)
    if not isinstance(path, str | os.PathLike):
        raise ValueError(f"store: expected a file path, got {type(path).__name__}")
    n = len(ids)
    dims, shape, coords = _field_dims(info, layout, *ids.shape)
    dims, shape = ("layer", *dims), (len(layer_list), *shape)
    coords = {**coords, "layer": np.asarray(layer_list, dtype=np.int64)}
    store = FieldFile(path, key_hash({"dims": dims, "shape": shape, **_plain(attrs)}))
    chunks = {"layer": 1, "head": 1, "snapshot": chunk}
    if store.path.exists() and not overwrite:
        diffs = _store_diffs(store, shape, coords, attrs)
        if "weights_sha256" not in attrs:
            diffs.append("the model has no weights_sha256 to verify the stored one against")
        if diffs:
            raise ValueError(
                "store: exists but does not hold the requested ensemble ("
                + "; ".join(diffs)
                + "); pass overwrite=True to rebuild it"
            )
        return store.open(chunks, shape=shape, coords=coords)
    if overwrite:
        store.path.unlink(missing_ok=True)
    if overwrite or "weights_sha256" not in attrs:  # no resuming what cannot be verified
        store.partial.unlink(missing_ok=True)
    record_fields(
        store, model, ids, layer_list, _batches(n, batch_size),
        average_heads=layout.average_heads, tau_max=layout.tau_max, coords=coords,
        attrs=attrs, offsets=offsets, chunk=min(chunk, n), progress=progress,
    )  # fmt: skip
    try:
        return store.open(chunks, shape=shape, coords=coords)
    except OSError as err:
        raise ValueError(f"store: did not read back as written ({err})") from None


def record_fields(
    store: FieldFile,
    model,
    ids: np.ndarray,
    layers: list[int],
    plan: Sequence[tuple[int, int]],
    *,
    average_heads: bool,
    tau_max: int | None = None,
    desc: str = "attention",
    **build,
) -> None:
    """Record the fields of ``model`` over the ids ``(N, L)`` into the field file
    ``store``, one forward pass per batch of ``plan`` (``[start, stop)`` ranges), float32,
    dims ``(layer, [head,] snapshot, query, key | lag)``; an interrupted file resumes at
    its next batch. ``build`` is passed to :meth:`msapod.fieldfile.FieldFile.build`."""
    info = _model_info(model)
    n, length = ids.shape
    layout = _layout(average_heads, tau_max, np.float32, length)
    dims, shape, _ = _field_dims(info, layout, n, length)

    def record(a: int, b: int, arrays, write) -> None:
        _record_pass(model, ids, a, b, layers, layout, write)

    with inference(model):
        store.build(
            plan,
            (len(layers), *shape),
            record,
            dims=("layer", *dims),
            desc=f"{desc} ({recording_path(model)})",
            **build,
        )


def _plain(attrs: dict) -> dict:
    """attrs as JSON values (arrays as lists, numpy scalars as Python numbers)."""
    return {
        k: v.tolist() if isinstance(v, np.ndarray | np.generic) else v for k, v in attrs.items()
    }


def _store_diffs(store: FieldFile, shape, coords: dict, attrs: dict) -> list[str]:
    """How an existing field file differs from the request (empty: it holds exactly what
    was asked, its values checked against their sha256)."""
    import h5netcdf

    try:
        f = h5netcdf.File(store.path, "r")
    except Exception as err:  # noqa: BLE001 - whatever it is, it is not a field file
        raise ValueError(
            f"store: {os.fspath(store.path)!r} exists and is not an msapod field file "
            f"({type(err).__name__}: {err}); remove it or choose another path"
        ) from None
    with f:
        if "attention" not in f.variables:
            return ["no 'attention' array"]
        var = f.variables["attention"]
        diffs = []
        if tuple(var.shape) != tuple(shape):
            diffs.append(f"shape {tuple(var.shape)} != {tuple(shape)}")
        for c, v in coords.items():
            if c not in f.variables or not np.array_equal(f.variables[c][...], v):
                diffs.append(f"coord {c!r} differs")
        have, want = _plain(dict(var.attrs)), _plain(attrs)
        have.pop("coordinates", None)
        for key in sorted(set(have) | set(want)):
            if have.get(key) != want.get(key):
                diffs.append(f"attr {key!r}: stored {have.get(key)!r}, expected {want.get(key)!r}")
    if not diffs:
        why = store.problem(shape=shape, coords=coords) or store.verify()
        if why:
            diffs.append(why)
    return diffs
