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
:func:`write_attention`) writes each batch of snapshots into a field file
(:class:`msapod.fieldfile.FieldFile`, the one on-disk format of attention fields) as soon
as it is computed (memory: one batch) and returns it opened lazily, a dask-backed array
that the analysis functions reduce chunk by chunk (:mod:`msapod.backends.chunked`).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import torch
import xarray as xr

from .._io import check_int, package_version
from ..fieldfile import FieldFile, default_coords, key_hash
from .data import check_layers, ensemble_ids, load_corpus
from .gpt import GPT

__all__ = ["collect_attention", "ensemble_ids", "iter_attention", "write_attention"]


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
        model.check_idx(b)
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
    ids = _as_ids(model, ids, info, least=1)
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
        A file path (``str`` / ``os.PathLike``): stream the ensemble into a field file
        there (:class:`msapod.fieldfile.FieldFile`, netCDF-4), batch by batch, and return
        it opened lazily (see :func:`write_attention`; ``snapshot_chunk`` and
        ``overwrite`` apply only then). Default ``None``: an in-memory array.

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
        return write_attention(
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
    snapshot_chunk: int | None = None,
    overwrite: bool = False,
) -> xr.DataArray:
    """Stream the attention fields of an ensemble into a field file and open it lazily.

    Batch by batch, the fields of every requested layer are written as soon as the model
    has produced them (memory: one batch of every layer, ``layers x batch_size x H x L x
    L`` probabilities, never the ensemble), into a :class:`msapod.fieldfile.FieldFile`
    (netCDF-4, the one on-disk format of attention fields; an interrupted write resumes
    where it stopped). The result is the file opened lazily after its checks: a
    dask-backed DataArray that every msapod analysis function accepts (see
    :mod:`msapod.backends.chunked`).

    Parameters
    ----------
    model, texts_or_ids, layers, average_heads, batch_size, name, offsets, progress,
    tokenizer, data_sha256
        As in :func:`collect_attention`.
    path
        The file (conventionally ``*.nc``).
    dtype
        float32, the precision of every field file (given only to be checked).
    snapshot_chunk
        Snapshots per chunk (default ``batch_size``); chunks hold one layer and one head:
        ``(1, 1, snapshot_chunk, L, L)`` (``(1, snapshot_chunk, L, L)`` head-averaged).
    overwrite
        Rebuild an existing file. Without it an existing file is reused only if it holds
        exactly what was asked (same dims, shape, coords and attrs: model,
        ``weights_sha256``, ``ids_sha256``, layers, msapod version, ...) and its values
        their checksums; otherwise a ``ValueError`` lists the differences. An interrupted
        write (``<path>.partial``) of the same request resumes at its next batch, unless
        the model has no ``weights_sha256`` to tell it from another.

    Returns
    -------
    xarray.DataArray
        Dims, coords and attrs as :func:`collect_attention` returns them, dask-backed.

    Raises
    ------
    ValueError
        Bad arguments; an existing file that differs from the request (or whose model
        cannot be verified: no ``weights_sha256``) without ``overwrite``; a file that does
        not read back as written.
    """
    info, ids, offsets, layer_list, attrs = _prepare_collect(
        model, texts_or_ids, layers, average_heads, name, offsets, tokenizer, data_sha256
    )
    batch_size = check_int(batch_size, "batch_size", 1)
    chunk = check_int(batch_size if snapshot_chunk is None else snapshot_chunk, "snapshot_chunk", 1)
    if np.dtype(dtype) != np.float32:
        raise ValueError(f"dtype: a field file holds float32, got {np.dtype(dtype)}")
    if not isinstance(path, str | os.PathLike):
        raise ValueError(f"store: expected a file path, got {type(path).__name__}")
    n, length = ids.shape
    dims = ("layer", "snapshot", "query", "key")
    shape = (len(layer_list), n, length, length)
    if not average_heads:
        dims = ("layer", "head", *dims[1:])
        shape = (shape[0], info["n_head"], *shape[1:])
    coords = {**default_coords(dims, shape), "layer": np.asarray(layer_list, dtype=np.int64)}
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

    def extract(a: int, b: int, arrays) -> np.ndarray:
        parts = iter_attention(
            model,
            ids[a:b],
            layers=layer_list,
            batch_size=b - a,
            average_heads=average_heads,
            dtype=np.float32,
            progress=False,
            name=name,
        )
        return np.stack([part.values for part in parts])

    plan = [(a, min(a + batch_size, n)) for a in range(0, n, batch_size)]
    store.build(
        plan,
        shape,
        extract,
        dims=dims,
        coords=coords,
        attrs=attrs,
        offsets=offsets,
        chunk=min(chunk, n),
        progress=progress,
    )
    try:
        return store.open(chunks, shape=shape, coords=coords)
    except OSError as err:
        raise ValueError(f"store: did not read back as written ({err})") from None


def _plain(attrs: dict) -> dict:
    """attrs as JSON values (arrays as lists, numpy scalars as Python numbers)."""
    return {
        k: v.tolist() if isinstance(v, np.ndarray) else v.item() if isinstance(v, np.generic) else v
        for k, v in attrs.items()
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
