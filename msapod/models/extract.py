"""Attention fields of a model over a snippet ensemble, as labelled arrays.

The ensemble (PAPER.md step 1) is ``n`` non-overlapping snippets of ``length`` characters
drawn deterministically from the validation split (:func:`ensemble_ids`). For each layer
the exact attention probabilities ``A_s^{l,h}(i, j)`` of every snippet ``s`` are collected
into an :class:`xarray.DataArray` with dims ``("head", "snapshot", "query", "key")``, or
``("snapshot", "query", "key")`` when heads are averaged. Layers and heads are labelled
from 1, as in the paper.

Memory is bounded by one layer: :func:`iter_attention` yields the layers one at a time.
For the package's own :class:`~msapod.models.gpt.GPT` the hidden states entering the current
layer are kept per batch (``n * length * n_embd`` floats, about 20 MB for the paper's
setting) and advanced one block per layer, so every block runs once per snippet; the
probabilities are computed in float64 from exactly the hidden states of the ordinary
(fast) forward pass, bit-identical to ``GPT.attention(idx, layers=[l])``. For Hugging Face
models, whose ``output_attentions`` returns all layers at once, the model is re-run once
per layer and only that layer is kept: ``n_layer`` times the compute, one layer of memory;
when the ids fit in one batch, one forward pass serves all layers (its output holds them
all anyway), so callers can stream batch by batch at the cost of one pass.

Ensembles larger than memory: ``collect_attention(..., store=path)`` (or
:func:`write_attention_zarr`) writes each batch of snapshots into a chunked zarr store as
soon as it is computed (memory: one batch) and returns the store opened lazily, a
dask-backed array that the analysis functions reduce chunk by chunk
(:mod:`msapod.backends.chunked`).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
import xarray as xr

from .._io import check_int, package_version
from .data import check_layers, ensemble_ids, load_corpus
from .gpt import GPT

__all__ = ["collect_attention", "ensemble_ids", "iter_attention", "write_attention_zarr"]


# ----------------------------------------------------------------------------- models


def _hf_module():
    """The ``transformers`` module if it was imported (an HF model implies it was)."""
    return sys.modules.get("transformers")


def _is_hf(model) -> bool:
    tf = _hf_module()
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
        if path:
            return str(path)
        return str(model.config.model_type)
    return type(model).__name__


def _as_ids(model, texts_or_ids, info: dict, tokenizer=None) -> np.ndarray:
    """Validate and convert ``texts_or_ids`` to an ``(N, L)`` int64 array."""
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
        if isinstance(texts_or_ids, torch.Tensor):
            arr = texts_or_ids.detach().cpu().numpy()
        else:
            arr = np.asarray(texts_or_ids)
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
    if n < 2:
        raise ValueError(f"texts_or_ids: expected at least 2 snapshots, got {n}")
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


def _gpt_layers(
    model: GPT, ids: np.ndarray, layers: list[int], batch_size: int, bar
) -> Iterator[tuple[int, Iterator[torch.Tensor]]]:
    """Per requested layer (1-based), an iterator over per-batch float64 probabilities.

    The hidden state entering the current block is kept per batch and advanced block by
    block, which reproduces ``GPT.attention(idx, layers=[l])`` exactly (the blocks before
    ``l`` run their ordinary fast path).
    """
    device = _model_device(model)
    batches = [
        torch.as_tensor(ids[s : s + batch_size], device=device)
        for s in range(0, len(ids), batch_size)
    ]
    for b in batches:
        model._check_idx(b)
    T = ids.shape[1]
    pos = torch.arange(T, device=device)
    hidden = [model.wte(b) + model.wpe(pos) for b in batches]
    done = 0  # number of blocks applied to `hidden`
    for layer in layers:
        for li in range(done, layer - 1):
            hidden = [model.blocks[li](x)[0] for x in hidden]
        done = layer - 1
        block = model.blocks[layer - 1]

        def probs(block=block, hidden=hidden):
            for x in hidden:
                p = block.attn.probabilities(block.ln_1(x))
                bar.update(1)
                yield p

        yield layer, probs()


def _hf_layers(
    model, ids: np.ndarray, layers: list[int], batch_size: int, bar
) -> Iterator[tuple[int, Iterator[torch.Tensor]]]:
    """Per requested layer, per-batch probabilities of a Hugging Face model (re-run per
    layer so that only one layer's attention is ever kept). When all ids fit in one batch,
    the single forward pass (which returns every layer anyway) serves all layers."""
    device = _model_device(model)
    n_layer = int(model.config.num_hidden_layers)
    one_batch = len(ids) <= batch_size
    kept: dict = {}  # one_batch: layer -> that layer's attention, released once yielded
    for layer in layers:

        def probs(layer=layer):
            for s in range(0, len(ids), batch_size):
                if layer in kept:
                    bar.update(1)
                    yield kept.pop(layer).double()
                    continue
                idx = torch.as_tensor(ids[s : s + batch_size], device=device)
                out = model(input_ids=idx, output_attentions=True)
                att = getattr(out, "attentions", None)
                if att is None or len(att) != n_layer or att[layer - 1] is None:
                    raise ValueError(
                        "model: returned no attention probabilities with "
                        "output_attentions=True; load it with attn_implementation='eager'"
                    )
                if one_batch:
                    kept.update({k: att[k - 1] for k in layers if k > layer})
                del out
                bar.update(1)
                yield att[layer - 1].double()

        yield layer, probs()


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
) -> Iterator[xr.DataArray]:
    """Yield the attention field of each requested layer, one layer at a time.

    Parameters
    ----------
    model
        An :class:`msapod.models.gpt.GPT` or a ``transformers.PreTrainedModel`` (loaded with
        ``attn_implementation="eager"`` so that it returns attention probabilities). It
        is run in eval mode without gradients; its mode is restored afterwards.
    ids
        ``(N, L)`` integer token ids (numpy array, nested list or torch tensor), ``N >= 2``
        snapshots of ``L <=`` context length tokens.
    layers
        1-based layer numbers (as in the paper); default all. Yielded in ascending order.
    batch_size
        Snapshots per forward pass.
    average_heads
        If true, yield the head mean (taken batch by batch, so all heads of the whole
        ensemble are never held at once).
    dtype
        Floating dtype of the output; probabilities are computed in float64 (msapod
        models) and cast batch by batch.
    progress
        Show a tqdm progress bar over (layer, batch) steps.
    name
        Model label for the attrs (default ``model.name`` or the HF name).

    Yields
    ------
    xarray.DataArray
        Dims ``("head", "snapshot", "query", "key")`` (no ``head`` with
        ``average_heads``), coords ``head`` 1..H, ``snapshot`` 0..N-1, ``query`` and
        ``key`` 0..L-1, scalar coord ``layer``. Each row sums to one over ``key``.

    Notes
    -----
    Memory holds one layer: ``H * N * L * L`` values (``N * L * L`` averaged). For msapod
    GPTs the hidden states of the current layer are cached per batch (``N * L * n_embd``
    floats), so each block runs once per snapshot; Hugging Face models are re-run for
    every layer (``n_layer`` times the compute of one pass).
    """
    info = _model_info(model)
    ids = _as_ids(model, ids, info)
    layers = check_layers(layers, info["n_layer"])
    batch_size = check_int(batch_size, "batch_size", 1)
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype: expected a floating dtype, got {dtype}")
    return _iter_attention(
        model, ids, info, layers, int(batch_size), average_heads, dtype, progress, name
    )


def _iter_attention(
    model, ids, info, layers, batch_size, average_heads, dtype, progress, name
) -> Iterator[xr.DataArray]:
    from tqdm import tqdm

    n, length = ids.shape
    n_batches = -(-n // batch_size)
    H = info["n_head"]
    attrs = _base_attrs(model, info, name)
    attrs.update(source="msapod.iter_attention", average_heads=int(bool(average_heads)))
    source = _gpt_layers if info["framework"] == "msapod" else _hf_layers
    bar = tqdm(total=len(layers) * n_batches, desc="attention", disable=not progress, mininterval=2)
    layer_iter = source(model, ids, layers, batch_size, bar)
    try:
        while True:
            # eval mode and no_grad hold while a layer is computed, not while the caller
            # holds the yielded array
            with _inference(model):
                try:
                    layer, batches = next(layer_iter)
                except StopIteration:
                    return
                shape = (n, length, length) if average_heads else (H, n, length, length)
                out = np.empty(shape, dtype=dtype)
                start = 0
                for p in batches:
                    b = p.shape[0]
                    if p.shape[1:] != (H, length, length):
                        raise ValueError(
                            f"model: layer {layer} returned attention of shape "
                            f"{tuple(p.shape)}, expected (batch, {H}, {length}, {length})"
                        )
                    if average_heads:
                        out[start : start + b] = p.mean(dim=1).cpu().numpy()
                    else:
                        out[:, start : start + b] = p.transpose(0, 1).cpu().numpy()
                    start += b
            dims = ("snapshot", "query", "key")
            coords = {
                "snapshot": np.arange(n),
                "query": np.arange(length),
                "key": np.arange(length),
                "layer": layer,
            }
            if not average_heads:
                dims = ("head", *dims)
                coords["head"] = np.arange(1, H + 1)
            da = xr.DataArray(out, dims=dims, coords=coords, attrs=dict(attrs))
            da.name = "attention"
            yield da
    finally:
        bar.close()


@contextmanager
def _inference(model):
    """Eval mode without gradients, restoring the model's mode afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


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
    store=None,
    snapshot_chunk: int | None = None,
    overwrite: bool = False,
) -> xr.DataArray:
    """Attention fields of all requested layers as one labelled array.

    Parameters
    ----------
    model
        An :class:`msapod.models.gpt.GPT` or a ``transformers.PreTrainedModel`` (see
        :func:`iter_attention`).
    texts_or_ids
        ``(N, L)`` integer token ids (numpy array, nested list or torch tensor), or a list
        of ``N`` strings of equal length. Strings are encoded with the TinyShakespeare
        character vocabulary for msapod models and with ``tokenizer`` for Hugging Face
        models (their token counts must agree).
    layers, average_heads, batch_size, dtype, progress
        As in :func:`iter_attention` (layers 1-based).
    name
        Model label recorded in the attrs (default ``model.name`` or the HF name).
    offsets
        Optional ``(N,)`` start offsets of the snapshots in their text, stored as the
        non-dim coord ``offset`` on ``snapshot`` and in the attrs.
    tokenizer
        Hugging Face tokenizer for string input to an HF model.
    data_sha256
        sha256 of the text the snapshots come from (e.g. ``Corpus.sha256``), recorded in
        the attrs; ``ids_sha256`` (of the int64 ids) is recorded always.
    store
        A path (``str`` / ``os.PathLike``) or zarr store: stream the ensemble into a
        chunked zarr array there, batch by batch, and return it opened lazily (see
        :func:`write_attention_zarr`; ``snapshot_chunk`` and ``overwrite`` apply only
        then). Default ``None``: an in-memory array.

    Returns
    -------
    xarray.DataArray
        Dims ``("layer", "head", "snapshot", "query", "key")``, without ``head`` when
        ``average_heads``. attrs: ``model``, ``weights_sha256`` (if the model has one),
        ``data_sha256`` (if given), ``ids_sha256``, ``n_snapshots``, ``length``,
        ``offsets`` (if given), ``attention`` (``"standard"``/``"ega"``), ``framework``,
        ``average_heads``, ``source`` and ``msapod_version``. With ``store`` the data are
        dask-backed (chunked over ``snapshot``, one layer and head per chunk).
    """
    if store is not None:
        return write_attention_zarr(
            model,
            texts_or_ids,
            store,
            layers=layers,
            average_heads=average_heads,
            batch_size=batch_size,
            name=name,
            offsets=offsets,
            dtype=dtype,
            progress=progress,
            tokenizer=tokenizer,
            data_sha256=data_sha256,
            snapshot_chunk=snapshot_chunk,
            overwrite=overwrite,
        )
    _, ids, offsets, layer_list, attrs = _prepare_collect(
        model, texts_or_ids, layers, average_heads, name, offsets, tokenizer, data_sha256
    )
    parts = iter_attention(
        model,
        ids,
        layers=layer_list,
        batch_size=batch_size,
        average_heads=average_heads,
        dtype=dtype,
        progress=progress,
        name=name,
    )
    out = _stack_layers(parts, layer_list)
    if offsets is not None:
        out = out.assign_coords(offset=("snapshot", offsets))
    out.attrs = attrs
    out.name = "attention"
    return out


def _stack_layers(parts: Iterator[xr.DataArray], layers: list[int]) -> xr.DataArray:
    """The per-layer arrays ``parts`` (one per entry of ``layers``) as one array with a
    leading ``layer`` dim, allocated once (no second copy of the whole result)."""
    values = None
    first = None
    for k, part in enumerate(parts):
        if values is None:
            values = np.empty((len(layers), *part.shape), dtype=part.dtype)
            first = part
        values[k] = part.values
    coords = {d: first[d].values for d in first.dims}
    coords["layer"] = np.asarray(layers)
    return xr.DataArray(values, dims=("layer", *first.dims), coords=coords)


def _prepare_collect(model, texts_or_ids, layers, average_heads, name, offsets, tokenizer, sha):
    """Validated ``(info, ids, offsets, layers, attrs)`` of :func:`collect_attention`."""
    info = _model_info(model)
    ids = _as_ids(model, texts_or_ids, info, tokenizer=tokenizer)
    n, length = ids.shape
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
        average_heads=int(bool(average_heads)),
        source="msapod.collect_attention",
        msapod_version=package_version(),
        description=(
            "attention probabilities A(i, j): row = query position i, column = key "
            "position j; layers and heads numbered from 1"
            + ("; mean over heads" if average_heads else "")
        ),
    )
    if sha is not None:
        attrs["data_sha256"] = sha
    if offsets is not None:
        attrs["offsets"] = offsets
    return info, ids, offsets, layer_list, attrs


# ----------------------------------------------------------------------------- zarr


def _json_attrs(attrs: dict) -> dict:
    """attrs as zarr stores them (arrays as lists, numpy scalars as Python numbers)."""
    out = {}
    for k, v in attrs.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


def _open_store(store, expect: dict) -> tuple[xr.DataArray | None, list[str]]:
    """Open an existing msapod store; ``(None, [])`` if there is none, else the array and
    the list of differences from ``expect`` (empty: it holds exactly what was asked)."""
    import os

    import zarr

    if isinstance(store, str | os.PathLike):
        path = os.fspath(store)
        if not os.path.exists(path) or (os.path.isdir(path) and not os.listdir(path)):
            return None, []
    try:
        zarr.open_group(store, mode="r")
    except (FileNotFoundError, KeyError, ValueError) as err:
        if isinstance(store, str | os.PathLike):
            raise ValueError(
                f"store: {os.fspath(store)!r} exists and is not a zarr store ({err}); "
                "remove it or choose another path"
            ) from err
        return None, []
    try:
        ds = xr.open_zarr(store, consolidated=None)
    except Exception as err:  # noqa: BLE001 - any unreadable store is a mismatch
        return None, [f"unreadable by xarray ({type(err).__name__}: {err})"]
    diffs = []
    if "attention" not in ds:
        return None, ["no 'attention' array"]
    da_ = ds["attention"]
    if not int(ds.attrs.get("complete", 0)):
        diffs.append("incomplete (an interrupted write)")
    if da_.dims != expect["dims"]:
        diffs.append(f"dims {da_.dims} != {expect['dims']}")
    if da_.shape != expect["shape"]:
        diffs.append(f"shape {da_.shape} != {expect['shape']}")
    if da_.dtype != expect["dtype"]:
        diffs.append(f"dtype {da_.dtype} != {expect['dtype']}")
    for c, v in expect["coords"].items():
        if c not in da_.coords or not np.array_equal(da_[c].values, v):
            diffs.append(f"coord {c!r} differs")
    have = _json_attrs(dict(da_.attrs))
    want = _json_attrs(expect["attrs"])
    for key in sorted(set(have) | set(want)):
        if have.get(key) != want.get(key):
            diffs.append(f"attr {key!r}: stored {have.get(key)!r}, expected {want.get(key)!r}")
    return da_, diffs


def _as_opened(da_: xr.DataArray) -> xr.DataArray:
    """The stored array with the attrs of the in-memory version (offsets as an array)."""
    da_ = da_.copy()
    small = [c for c in da_.coords if c not in da_.dims]
    if small:  # e.g. ``offset``: load the per-snapshot labels, keep the data lazy
        da_ = da_.assign_coords({c: da_[c].load() for c in small})
    if "offsets" in da_.attrs:
        da_.attrs["offsets"] = np.asarray(da_.attrs["offsets"], dtype=np.int64)
    da_.encoding.pop("coordinates", None)
    da_.name = "attention"
    return da_


def write_attention_zarr(
    model,
    texts_or_ids,
    store,
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
    snapshot_chunk: int | None = None,
    overwrite: bool = False,
) -> xr.DataArray:
    """Stream the attention fields of an ensemble into a chunked zarr store.

    Layer by layer, each batch of snapshots is written as soon as the model has produced
    it, so memory holds one batch (``batch_size x H x L x L`` float64 probabilities), never
    a layer or the ensemble. The result is the store opened lazily with
    ``xarray.open_zarr``: a dask-backed DataArray that every msapod analysis function
    accepts (see :mod:`msapod.backends.chunked`).

    Parameters
    ----------
    model, texts_or_ids, layers, average_heads, batch_size, name, offsets, dtype, progress,
    tokenizer, data_sha256
        As in :func:`collect_attention`.
    store
        A directory path or a zarr store (e.g. ``zarr.storage.MemoryStore``). Written in
        zarr format 2 with consolidated metadata (readable by zarr 2 and 3).
    snapshot_chunk
        Snapshots per chunk (default ``batch_size``); chunks hold one layer and one head:
        ``(1, 1, snapshot_chunk, L, L)`` (``(1, snapshot_chunk, L, L)`` head-averaged).
    overwrite
        Rebuild an existing store. Without it an existing store is reused only if it holds
        exactly what was asked (complete, same dims, shape, dtype, coords and attrs: model,
        ``weights_sha256``, ``ids_sha256``, layers, msapod version, ...); otherwise a
        ``ValueError`` lists the differences. A store is marked complete only after its
        last batch is written, so an interrupted write is never taken for a result.

    Returns
    -------
    xarray.DataArray
        Dims, coords and attrs as :func:`collect_attention` returns them, dask-backed.

    Raises
    ------
    ValueError
        Bad arguments; an existing store that differs from the request (or whose model
        cannot be verified: no ``weights_sha256``) without ``overwrite``; a store that
        does not read back as written.
    """
    info, ids, offsets, layer_list, attrs = _prepare_collect(
        model, texts_or_ids, layers, average_heads, name, offsets, tokenizer, data_sha256
    )
    batch_size = check_int(batch_size, "batch_size", 1)
    chunk = check_int(batch_size if snapshot_chunk is None else snapshot_chunk, "snapshot_chunk", 1)
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype: expected a floating dtype, got {dtype}")
    expect, chunks = _store_layout(ids.shape, layer_list, info["n_head"], average_heads, chunk)
    expect.update(dtype=dtype, attrs=attrs)
    if not overwrite:
        existing = _reusable_store(store, expect)
        if existing is not None:
            return _as_opened(existing)
    _write_store(store, expect, chunks, offsets)
    _fill_store(store, model, ids, info, layer_list, batch_size, average_heads, dtype, progress)
    opened, diffs = _open_store(store, expect)
    if opened is None or diffs:
        raise ValueError("store: did not read back as written (" + "; ".join(diffs) + ")")
    return _as_opened(opened)


def _reusable_store(store, expect: dict) -> xr.DataArray | None:
    """The array of an existing store that holds exactly ``expect`` (its model verified
    by ``weights_sha256``), or None when there is no store.

    Raises
    ------
    ValueError
        The store exists but differs from ``expect``, or the model has no
        ``weights_sha256`` to verify it against.
    """
    existing, diffs = _open_store(store, expect)
    if existing is None and not diffs:
        return None
    if "weights_sha256" not in expect["attrs"]:
        diffs.append("the model has no weights_sha256 to verify the stored one against")
    if diffs:
        raise ValueError(
            "store: exists but does not hold the requested ensemble ("
            + "; ".join(diffs)
            + "); pass overwrite=True to rebuild it"
        )
    return existing


def _store_layout(shape2, layers, n_head: int, average_heads: bool, chunk: int):
    """``(expect, chunks)``: the dims, shape and coords of the stored array, its chunks."""
    n, length = shape2
    dims = ("layer", "snapshot", "query", "key")
    shape = (len(layers), n, length, length)
    chunks = (1, chunk, length, length)
    coords = {
        "layer": np.asarray(layers),
        "snapshot": np.arange(n),
        "query": np.arange(length),
        "key": np.arange(length),
    }
    if not average_heads:
        dims = ("layer", "head", *dims[1:])
        shape = (shape[0], n_head, *shape[1:])
        chunks = (1, 1, *chunks[1:])
        coords["head"] = np.arange(1, n_head + 1)
    return {"dims": dims, "shape": shape, "coords": coords}, chunks


def _zarr_format() -> dict:
    import zarr

    return {"zarr_format": 2} if int(zarr.__version__.split(".")[0]) >= 3 else {}


def _write_store(store, expect: dict, chunks, offsets) -> None:
    """Create the (empty, incomplete) store of the array ``expect`` describes."""
    import dask.array as dsa

    template = xr.DataArray(
        dsa.zeros(expect["shape"], chunks=chunks, dtype=expect["dtype"]),
        dims=expect["dims"],
        coords=expect["coords"],
        name="attention",
    )
    if offsets is not None:
        template = template.assign_coords(offset=("snapshot", offsets))
    template.attrs = _json_attrs(expect["attrs"])
    ds = template.to_dataset()
    ds.attrs = {"complete": 0, "msapod_store": "attention ensemble (msapod.write_attention_zarr)"}
    ds.to_zarr(store, mode="w", compute=False, consolidated=True, **_zarr_format())


def _fill_store(store, model, ids, info, layers, batch_size, average_heads, dtype, progress):
    """Stream the fields into the store block by block, then mark it complete."""
    import zarr

    group = zarr.open_group(store, mode="r+", **_zarr_format())
    target = group["attention"]
    for k, start, block in _stream_blocks(
        model, ids, info, layers, batch_size, average_heads, progress
    ):
        b = block.shape[0]
        if average_heads:
            target[k, start : start + b] = block.astype(dtype)
        else:
            target[k, :, start : start + b] = block.transpose(1, 0, 2, 3).astype(dtype)
    group.attrs["complete"] = 1
    zarr.consolidate_metadata(store)


def _stream_blocks(model, ids, info, layers, batch_size, average_heads, progress):
    """Yield ``(layer index, start, probabilities)`` per batch: float64 numpy arrays
    ``(b, H, L, L)``, or ``(b, L, L)`` head means (taken in torch, as in
    :func:`iter_attention`).

    Eval mode and ``no_grad`` hold while a batch is computed; they are restored before the
    batch is handed over.
    """
    from tqdm import tqdm

    n, length = ids.shape
    H = info["n_head"]
    n_batches = -(-n // batch_size)
    source = _gpt_layers if info["framework"] == "msapod" else _hf_layers
    bar = tqdm(total=len(layers) * n_batches, desc="attention", disable=not progress, mininterval=2)
    layer_iter = source(model, ids, layers, batch_size, bar)
    try:
        for k in range(len(layers)):
            with _inference(model):
                layer, batches = next(layer_iter)
            start = 0
            while True:
                with _inference(model):
                    p = next(batches, None)
                    if p is None:
                        break
                    if p.shape[1:] != (H, length, length):
                        raise ValueError(
                            f"model: layer {layer} returned attention of shape "
                            f"{tuple(p.shape)}, expected (batch, {H}, {length}, {length})"
                        )
                    block = (p.mean(dim=1) if average_heads else p).detach().cpu().numpy()
                yield k, start, block
                start += block.shape[0]
    finally:
        bar.close()
