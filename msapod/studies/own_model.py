"""Analyse your own model: ``msapod analyze SOURCE`` as a function.

A *source* is a zoo model name, a checkpoint folder of :func:`msapod.models.train.train`,
a Hugging Face model folder or id (loaded with eager attention; the ``hf`` extra), or
``smollm2`` (SmolLM2-135M-Instruct, the GGUF file of the ``llm`` extra). For each source
:func:`analyze_sources`

1. draws the snippet ensemble (PAPER.md step 1): ``n`` non-overlapping snippets of
   ``length`` tokens of a text (default: the zoo's validation split; characters for the
   zoo's character-level models, the model's own tokens otherwise), deterministic in
   ``seed``;
2. extracts the attention fields ``A_s^l(i, j)`` (heads averaged, or kept), one forward pass
   per batch of snippets, written batch by batch into a field file (netCDF-4,
   :class:`msapod.fieldfile.FieldFile`) keyed by the
   source's sha256 (its weights), the text's sha256, the ensemble and the layers, so an
   interrupted run resumes at the next batch and a finished one is never recomputed;
3. analyses one layer at a time with :func:`msapod.analyze` (steps 2-10, the book's code)
   and attaches leave-one-snapshot-out jackknife standard errors and 95 % intervals of the
   scale centroid (:func:`~msapod.studies.measure.uncertainty.scale_jackknife`) and of T_spec and
   H*(eps) per window (:func:`~msapod.studies.measure.uncertainty.pod_jackknife`), each layer
   cached on its own;
4. stacks the layers, and the sources along a ``model`` dim with an ``architecture``
   coordinate, into one dataset whose attrs record every parameter and whose ``model``
   coordinates record each source, its sha256 and the text's sha256.

Memory holds one batch of attention while extracting and one field set (one layer, or one
layer and head) while analysing. :func:`write_report` turns the dataset into one
self-contained HTML page (figures embedded as PNG, no network).

The module imports neither torch nor matplotlib; both are imported when a model is loaded
or a report drawn.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
import re
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from .._io import atomic_path, check_int, package_version
from ..models.data import N_SNAPSHOTS, SNIPPET_LENGTH
from ..pipeline import ANALYZE_DEFAULTS, FIELD_SYMBOLS, check_options
from .store.cache import (
    FieldFile,
    TokenEnsemble,
    cache_root,
    cached_dataset,
    concat_layers,
    netcdf_safe,
    state_sha256,
    text_coords,
)
from .verdict.claims import REPORT_COLUMNS, ROW_COLUMNS, VERDICTS, render

__all__ = [
    "GGUF_ALIASES",
    "Ensemble",
    "Source",
    "UsageError",
    "analyze_source",
    "analyze_sources",
    "make_ensemble",
    "resolve_source",
    "write_report",
]

#: Layout of the cached fields and per-layer analyses; part of every key.
OWN_FORMAT = 3
#: Names that select the SmolLM2-135M GGUF of the ``llm`` extra.
GGUF_ALIASES = ("smollm2", "smollm2-135m", "SmolLM2-135M-Instruct-Q4_1")
#: Bytes of attention one forward pass may return (all layers and heads, float32).
BATCH_BUDGET = 256 * 2**20
#: Variables of :func:`msapod.analyze` not kept in the result (per snapshot or per mode
#: field; the lag profiles of the modes are kept as ``mode_lag_energy``).
DROPPED = ("modes", "coefficients", "gram")
#: Leading POD modes whose lag profiles are kept.
N_MODE_PROFILES = 3
#: Confidence level of the stored intervals.
LEVEL = 0.95
#: Fewest snapshots: the T_spec fit needs ranks 1..(N - 1) // 2 >= 2.
MIN_N = 5
#: Smallest snippet length: the default scale grid needs more than 6 lags.
MIN_LENGTH = 8


class UsageError(ValueError):
    """A bad input (source, text, ensemble, layers, options): the command exits with 2."""


# ----------------------------------------------------------------------------- sources


@dataclass
class Source:
    """A loaded model with what the analysis needs to know about it.

    Attributes
    ----------
    spec
        What was asked for (zoo name, folder, id or GGUF alias).
    label
        Name in the dataset's ``model`` coordinate.
    kind
        ``"zoo"``, ``"checkpoint"``, ``"hf"`` or ``"gguf"``.
    model
        The module whose attention is read (for the GGUF: the decoder alone).
    tokenizer
        Hugging Face tokenizer, or None for the zoo's character vocabulary.
    sha256
        The source's hash: the weights' sha256 (checkpoints, GGUF) or a sha256 over the
        config and every tensor of the state dict (Hugging Face).
    n_layer, n_head, max_len
        Layers, heads (query heads) and context length.
    architecture
        ``"ega"`` for energy-gated attention, else ``"baseline"`` (standard softmax
        attention): the grouping of the claims that compare architectures (C7, C8).
    model_type
        What the model is, from its config: ``"msapod-gpt"`` for the zoo's and
        :func:`msapod.models.train.train`'s GPTs, else the config's ``model_type``
        (``"bert"``, ``"gpt2"``, ``"llama"``, ...).
    causal
        Whether the attention is causal (keys never after the query); for Hugging Face
        models it is measured on a probe pass.
    """

    spec: str
    label: str
    kind: str
    model: object
    tokenizer: object | None
    sha256: str
    n_layer: int
    n_head: int
    max_len: int | None
    architecture: str = "baseline"
    model_type: str = "msapod-gpt"
    causal: bool = True
    framework: str = "msapod"
    notes: list[str] = field(default_factory=list)


def _gpt_source(spec: str, label: str, kind: str, model) -> Source:
    c = model.config
    return Source(
        spec=spec,
        label=label,
        kind=kind,
        model=model,
        tokenizer=None,
        sha256=model.weights_sha256,
        n_layer=int(c.n_layer),
        n_head=int(c.n_head),
        max_len=int(c.block_size),
        architecture="ega" if c.attention == "ega" else "baseline",
        causal=True,
        framework="msapod",
    )


def _quiet_hf():
    """transformers' logging at error level (no 'weights not used' chatter)."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    return hf_logging, level


def _hf_source(spec: str, label: str | None, local_only: bool) -> Source:
    """A Hugging Face model (folder or id) as a :class:`Source`, loaded with eager attention."""
    model, tokenizer = _hf_load(spec, local_only)
    model = model.float().eval()
    c = model.config
    n_layer = getattr(c, "num_hidden_layers", None)
    n_head = getattr(c, "num_attention_heads", None)
    if n_layer is None or n_head is None:
        raise UsageError(
            f"SOURCE {spec!r}: model type {c.model_type!r} has no num_hidden_layers / "
            "num_attention_heads; expected a transformer with self-attention"
        )
    if tokenizer is None:
        raise UsageError(
            f"SOURCE {spec!r}: no tokenizer found with the model; save the model's tokenizer "
            "in the same folder (tokenizer.save_pretrained(folder))"
        )
    name = label or (folder_label(Path(spec)) if Path(spec).exists() else spec.split("/")[-1])
    return Source(
        spec=spec,
        label=name,
        kind="hf",
        model_type=str(c.model_type),
        model=model,
        tokenizer=tokenizer,
        sha256=state_sha256(model, with_config=True),
        n_layer=int(n_layer),
        n_head=int(n_head),
        max_len=getattr(c, "max_position_embeddings", None),
        framework="transformers",
    )


def _hf_load(spec: str, local_only: bool) -> tuple:
    """``(model, tokenizer)`` of a Hugging Face folder or id, the model with eager
    attention, under a quieted logger (the tokenizer None where none loads)."""
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as err:
        raise UsageError(
            f"SOURCE {spec!r}: a Hugging Face model needs the hf extra ({err}); "
            'pip install "msapod[hf]"'
        ) from None
    hf_logging, level = _quiet_hf()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                config = transformers.AutoConfig.from_pretrained(spec, local_files_only=local_only)
            except (OSError, ValueError) as err:
                why = f"not loadable as a Hugging Face model: {err}"
                raise UsageError(_unknown(spec, why)) from None
            try:
                model = transformers.AutoModel.from_pretrained(
                    spec, attn_implementation="eager", local_files_only=local_only
                )
            except (OSError, ValueError, TypeError, KeyError) as err:
                raise UsageError(
                    f"SOURCE {spec!r}: Hugging Face model {config.model_type!r} could not be "
                    f"loaded with eager attention (needed for attention probabilities): "
                    f"{' '.join(str(err).split())[:300]}"
                ) from None
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(
                    spec, local_files_only=local_only
                )
            except Exception:  # noqa: BLE001 - any failure means: no usable tokenizer
                tokenizer = None
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()
    return model, tokenizer


def _unknown(spec: str, why: str = "") -> str:
    return (
        f"SOURCE {spec!r}: unknown source ({why or 'no such model'}); expected a zoo model "
        "(`msapod zoo` lists them), a checkpoint folder, a Hugging Face model folder or id, "
        f"or {GGUF_ALIASES[0]!r} (the SmolLM2 GGUF of the llm extra)"
    )


def _hf_cached(repo_id: str) -> bool:
    """Whether a Hugging Face id has a config in the local cache (no network)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        hit = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001 - an invalid id is simply not cached
        return False
    return isinstance(hit, str)


def resolve_source(spec: str, label: str | None = None) -> Source:
    """Load the model a SOURCE names (see the module docstring).

    Parameters
    ----------
    spec
        Zoo model name, checkpoint folder (``config.json`` + ``model.safetensors`` of
        :func:`msapod.models.train.train`), Hugging Face folder or id, or a name in
        :data:`GGUF_ALIASES`. An id without ``/`` is looked up in the local Hugging Face
        cache only; ``org/name`` may be downloaded.
    label
        Name of the model in the result (default: the zoo name, the folder's name, the
        id's last part).

    Raises
    ------
    UsageError
        Unknown source, missing extra, a model without a tokenizer or without attention
        probabilities.
    """
    from ..models.zoo import ZOO_CONFIGS

    if not isinstance(spec, str) or not spec:
        raise UsageError(f"SOURCE: expected a model name, folder or id, got {spec!r}")
    if spec in ZOO_CONFIGS:
        from ..models import zoo

        try:
            model = zoo.load(spec)
        except FileNotFoundError as err:
            raise UsageError(f"SOURCE {spec!r}: {err}") from None
        src = _gpt_source(spec, label or spec, "zoo", model)
        src.architecture = zoo.architecture(spec)
        return src
    if spec.lower() in {a.lower() for a in GGUF_ALIASES} or spec.endswith(".gguf"):
        return _gguf_source(spec, label)
    path = Path(spec).expanduser()
    if path.is_dir():
        return _folder_source(spec, path, label)
    if path.exists():
        raise UsageError(_unknown(spec, "a file, not a model folder"))
    if spec.startswith((".", "/", "~")) or os.sep + os.sep in spec:
        raise UsageError(_unknown(spec, "no such folder"))
    if "/" not in spec:
        if _hf_cached(spec):
            return _hf_source(spec, label, local_only=True)
        import difflib

        close = difflib.get_close_matches(spec, list(ZOO_CONFIGS), n=3)
        hint = f"no such zoo model; did you mean {' or '.join(close)}?" if close else ""
        raise UsageError(_unknown(spec, hint))
    return _hf_source(spec, label, local_only=_hf_cached(spec))


def _folder_source(spec: str, path: Path, label: str | None) -> Source:
    """The model in the folder ``path``: a checkpoint of :func:`msapod.models.train.train`
    or a Hugging Face model folder."""
    from ..models.train import CONFIG, WEIGHTS, load_checkpoint

    if (path / WEIGHTS).is_file() and _is_msapod_run(path / CONFIG):
        try:
            model = load_checkpoint(path)
        except (ValueError, OSError) as err:
            raise UsageError(f"SOURCE {spec!r}: {err}") from None
        return _gpt_source(spec, label or folder_label(path), "checkpoint", model)
    if (path / "config.json").is_file():
        return _hf_source(str(path), label, local_only=True)
    raise UsageError(
        _unknown(spec, "the folder holds neither a checkpoint nor a Hugging Face model")
    )


#: Folder names that say where a model is kept, not which model it is.
_GENERIC_FOLDERS = frozenset(
    {"model", "models", "checkpoint", "checkpoints", "final", "latest", "best", "hf", "weights"}
)


def folder_label(path: Path) -> str:
    """The name of the model in folder ``path``: the repository name of a Hugging Face
    cache snapshot (``models--org--name/snapshots/<commit>`` -> ``name``); the folder's
    name, prefixed with its parent's where it names no model (``run-7/checkpoint``,
    ``all-MiniLM-L6-v2/model``)."""
    path = path.expanduser().resolve()
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        return path.parent.parent.name.split("--")[-1]
    if path.name.lower() in _GENERIC_FOLDERS or re.fullmatch(r"[0-9a-f]{12,}", path.name):
        return f"{path.parent.name}/{path.name}" if path.parent.name else path.name
    return path.name


def _is_msapod_run(config: Path) -> bool:
    try:
        meta = json.loads(config.read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return isinstance(meta, dict) and "train" in meta and "weights_sha256" in meta


def _gguf_source(spec: str, label: str | None) -> Source:
    from .measure import llm

    try:
        path = Path(spec).expanduser() if spec.endswith(".gguf") else llm.smollm2_path(False)
        model, tokenizer = llm.load_smollm2(path)
    except (FileNotFoundError, ImportError) as err:
        raise UsageError(f"SOURCE {spec!r}: {err}") from None
    except ValueError as err:
        raise UsageError(f"SOURCE {spec!r}: {err}") from None
    c = model.config
    return Source(
        spec=spec,
        label=label or llm.MODEL_NAME,
        kind="gguf",
        model_type=str(c.model_type),
        model=model.model,  # the decoder alone: no logits over the vocabulary
        tokenizer=tokenizer,
        sha256=model.weights_sha256,
        n_layer=int(c.num_hidden_layers),
        n_head=int(c.num_attention_heads),
        max_len=getattr(c, "max_position_embeddings", None),
        framework="transformers",
    )


def probe(source: Source) -> None:
    """One forward pass over two short snippets: the model must return attention
    probabilities; for Hugging Face models it also measures causality (sets
    ``source.causal`` and adds a note when the model attends to later keys)."""
    from ..models.extract import collect_attention

    if source.framework == "msapod":
        return
    vocab = getattr(source.model.config, "vocab_size", None) or 2
    length = 8 if source.max_len is None else max(2, min(8, int(source.max_len)))
    ids = np.random.default_rng(0).integers(0, max(1, int(vocab)), size=(2, length))
    try:
        A = collect_attention(source.model, ids, layers=[1], progress=False, batch_size=2)
    except ValueError as err:
        raise UsageError(f"SOURCE {source.spec!r}: {err}") from None
    upper = float(np.triu(A.values, 1).max())
    source.causal = upper == 0.0
    if not source.causal:
        source.notes.append(
            f"{source.label}: bidirectional attention (keys after the query get weight); "
            "fine: the lag profiles then run over negative lags (keys after the query) "
            "as well as positive ones"
        )


# ----------------------------------------------------------------------------- ensemble


#: The snippet ensemble of one source (:class:`~msapod.studies.store.cache.TokenEnsemble`).
Ensemble = TokenEnsemble


def _read_text(text: str | os.PathLike | None) -> tuple[str, str]:
    from ..models.data import load_corpus, load_text

    if text is None:
        whole = load_text()
        return whole[len(load_corpus().train) :], "TinyShakespeare validation split (last 10 %)"
    path = Path(text).expanduser()
    if not path.is_file():
        raise UsageError(f"--text: {path} is not a file")
    try:
        body = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(f"--text: {path} is not UTF-8 text ({err})") from None
    return body, str(path.resolve())


def make_ensemble(
    source: Source,
    text: str | os.PathLike | None = None,
    *,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
) -> TokenEnsemble:
    """Draw ``n`` non-overlapping snippets of ``length`` tokens of ``text`` for ``source``.

    The text (default: the zoo's validation split) is tokenised as a whole, with the
    zoo's character vocabulary for msapod models and the model's tokenizer (no special
    tokens) otherwise; :func:`msapod.models.data.ensemble_offsets` then draws ``n`` of its
    aligned windows of ``length`` tokens with ``seed``. For the zoo's models and the
    default text this is exactly :func:`msapod.models.extract.ensemble_ids`, the book's
    ensemble.

    Raises
    ------
    UsageError
        ``n``, ``length`` or ``seed`` out of range, a length beyond the model's context,
        a character outside the vocabulary, or a text shorter than ``n x length`` tokens.
    """
    from ..models.data import ensemble_offsets

    n = check_int(n, "--n", MIN_N, UsageError)
    length = check_int(length, "--length", MIN_LENGTH, UsageError)
    seed = check_int(seed, "--seed", 0, UsageError)
    if source.max_len is not None and length > source.max_len:
        raise UsageError(
            f"--length: {length} tokens exceed the context of {source.label} "
            f"({source.max_len} tokens)"
        )
    body, where = _read_text(text)
    text_sha = hashlib.sha256(body.encode("utf-8")).hexdigest()
    tokens, unit = _tokenise(source, body, default_text=text is None)
    slots = len(tokens) // length
    if slots < n:
        raise UsageError(
            f"--text: {where} has {len(tokens)} {unit}s, room for {slots} non-overlapping "
            f"snippets of {length}; N x length = {n} x {length} = {n * length} needed: "
            "lower --n or --length, or give a longer --text"
        )
    offsets = ensemble_offsets(len(tokens), n=n, length=length, seed=seed)
    ids = tokens[offsets[:, None] + np.arange(length)]
    return TokenEnsemble(
        ids=ids,
        offsets=offsets.astype(np.int64),
        n_tokens=int(len(tokens)),
        n_chars=len(body),
        unit=unit,
        text_source=where,
        text_sha256=text_sha,
    )


def _tokenise(source: Source, body: str, default_text: bool) -> tuple[np.ndarray, str]:
    """``(tokens, unit)`` of the text ``body`` for ``source``: the zoo's characters for
    msapod models (the corpus' validation tokens for the default text), else the model's
    tokenizer without special tokens."""
    from ..models.data import load_corpus

    if source.tokenizer is not None:
        enc = source.tokenizer(body, add_special_tokens=False)
        return np.asarray(enc["input_ids"], dtype=np.int64).ravel(), "token"
    corpus = load_corpus()
    if default_text:
        return np.asarray(corpus.val, dtype=np.int64), "character"
    try:
        return corpus.encode(body).astype(np.int64), "character"
    except ValueError as err:
        raise UsageError(f"--text: {err} of {source.label} (the zoo's 65 characters)") from None


# ----------------------------------------------------------------------------- fields


def _batch_plan(n: int, per_snippet: int, batch_size: int | None) -> list[tuple[int, int]]:
    """``[start, stop)`` of the batches: each pass returns at most :data:`BATCH_BUDGET`
    bytes (or ``batch_size`` snippets), and every batch holds >= 2 snippets."""
    size = batch_size if batch_size is not None else BATCH_BUDGET // max(1, per_snippet)
    size = int(min(n, max(2, size)))
    count = max(1, min(-(-n // size), n // 2))
    edges = np.linspace(0, n, count + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def _build_fields(
    store: FieldFile,
    source: Source,
    ens: TokenEnsemble,
    layers: list[int],
    average_heads: bool,
    batch_size: int | None,
    progress: bool,
) -> None:
    """Extract the fields of ``source`` over ``ens`` into ``store``, resuming a partial
    file: ``(layer, [head,] snapshot, query, key)``, one forward pass per batch."""
    n, length = ens.ids.shape
    H = source.n_head
    plan = _batch_plan(n, source.n_layer * H * length * length * 4, batch_size)
    shape = (len(layers), n, length, length)
    if not average_heads:
        shape = (len(layers), H, n, length, length)

    def extract(a: int, b: int, arrays, write) -> None:
        from ..models.extract import collect_attention

        part = collect_attention(
            source.model,
            ens.ids[a:b],
            layers=layers,
            average_heads=average_heads,
            batch_size=b - a,
            progress=False,
            dtype=np.float32,
        )
        for k, values in enumerate(part.values):
            write(k, values)

    store.build(
        plan,
        shape,
        extract,
        coords={"layer": np.asarray(layers, dtype=np.int64)},
        progress=progress,
        desc=f"{source.label}: attention",
    )


# ----------------------------------------------------------------------------- analysis


def _analysis_params(n: int | None = None, **options) -> dict:
    """The parameters of :func:`msapod.analyze` and the scale grid (JSON-safe).

    ``options`` are :data:`DEFAULTS`' names; analyze's are checked by analyze's own rule
    (:func:`msapod.pipeline.check_options`, with N = ``n`` when known), its errors given
    the names of the command's flags; the grid's (``scale_*``, ``n_scales``) are checked
    when the grid is made (:func:`_scales`).
    """
    grid = {k: options.pop(k) for k in GRID_OPTIONS}
    with _flag_errors():
        checked = check_options(n, **options)
    return {**grid, **{k: checked[k] for k in options}}


#: The options of the scale grid (``msapod analyze`` only; analyze takes the grid).
GRID_OPTIONS = ("scale_min", "scale_max", "n_scales")


@contextmanager
def _flag_errors():
    """A ValueError of an option of :func:`msapod.analyze` as a :class:`UsageError` that
    names the option as the command's flag (``n_modes: ...`` -> ``--n-modes: ...``)."""
    try:
        yield
    except ValueError as err:
        name, sep, rest = str(err).partition(":")
        if sep and name in ANALYZE_DEFAULTS:
            raise UsageError(f"--{name.replace('_', '-')}:{rest}") from None
        raise UsageError(str(err)) from None


def _scales(params: dict, length: int, causal: bool) -> np.ndarray | None:
    """The scale grid, or None for :func:`msapod.analyze`'s default."""
    from ..wavelets import DEFAULT_MIN_SCALE, DEFAULT_NUM_SCALES, log_scales

    if params["scale_min"] is None and params["scale_max"] is None and params["n_scales"] is None:
        return None
    n_lag = length if causal else 2 * length - 1
    smin = DEFAULT_MIN_SCALE if params["scale_min"] is None else params["scale_min"]
    smax = n_lag / 2 if params["scale_max"] is None else params["scale_max"]
    num = DEFAULT_NUM_SCALES if params["n_scales"] is None else params["n_scales"]
    if isinstance(num, bool) or not isinstance(num, int | np.integer) or num < 2:
        raise UsageError(f"--n-scales: expected an integer >= 2, got {num!r}")
    if not 1 <= smin < smax <= n_lag / 2:
        raise UsageError(
            f"--scale-min, --scale-max: expected 1 <= min < max <= {n_lag / 2:g} (half the "
            f"{n_lag} lags), got {smin:g}, {smax:g}"
        )
    return log_scales(n_lag, smin, smax, num)


def analyse_field(F: xr.DataArray, params: dict, scales) -> xr.Dataset:
    """:func:`msapod.analyze` of one field set with jackknife errors and mode lag profiles.

    Parameters
    ----------
    F
        ``(snapshot, query, key)`` attention fields of one layer (and head).
    params
        From :func:`_analysis_params`.
    scales
        Scale grid or None (the default grid).

    Returns
    -------
    xarray.Dataset
        The variables of :func:`msapod.analyze` less ``modes``, ``coefficients`` and
        ``gram``; ``mode_lag_energy(window, mode, lag)`` (the normalised lag energy
        rho_k(tau) of the first modes); ``scale_centroid_se``, ``energy_se``,
        ``T_spec_se(window)``, ``H_star_se(window, eps)``, ``H_star_frac_se`` and the
        95 % intervals ``*_lower``/``*_upper`` of the scale centroid, T_spec and H*.
    """
    from ..pipeline import analyze
    from .measure.modestats import lag_energy
    from .measure.uncertainty import pod_jackknife, scale_jackknife, t_quantile

    ana = analyze(
        F,
        scales=scales,
        omega0=params["omega0"],
        max_peaks=params["max_peaks"],
        field=params["field"],
        centre=params["centre"],
        width=params["width"],
        n_modes=params["n_modes"],
        eps=params["eps"],
    )
    n = F.sizes["snapshot"]
    sj = scale_jackknife(
        F.astype(np.float64), scales=scales, omega0=params["omega0"], field=params["field"]
    )
    pj = pod_jackknife(
        ana["gram"],
        eps=params["eps"],
        criterion=ana.attrs["criterion"],
        k_min=int(ana.attrs["fit_k_min"]),
        k_max=int(ana.attrs["fit_k_max"]),
    )
    modes = ana["modes"].isel(mode=slice(0, N_MODE_PROFILES))
    rho = lag_energy(modes).astype(np.float32)
    out = ana.drop_vars([v for v in DROPPED if v in ana])
    out["mean"] = out["mean"].astype(np.float32)
    out["mode_lag_energy"] = rho.assign_attrs(
        long_name="normalised lag energy rho_k(tau) of the POD modes (sums to 1 over lag)"
    )
    return _with_intervals(out, sj, pj, t_quantile(n - 1, LEVEL))


def _with_intervals(out: xr.Dataset, sj, pj, t: float) -> xr.Dataset:
    """``out`` with the jackknife standard errors of the scalogram (``sj``) and the POD
    (``pj``) and the 95 % intervals of the scale centroid, T_spec and H* by the rules' own
    formula (:func:`msapod.studies.verdict.rules.interval`, on the log scale: the three
    are positive), with the quantile ``t``."""
    from .verdict.rules import interval

    out["scale_centroid_se"] = xr.DataArray(float(sj["scale_centroid_se"]))
    out["energy_se"] = xr.DataArray(float(sj["energy_se"]))
    out["scalogram_energy"] = xr.DataArray(float(sj["energy"]))
    out["T_spec_se"] = pj["T_spec_se"]
    out["H_star_se"] = pj["H_star_se"]
    out["H_star_frac_se"] = pj["H_star_frac_se"]
    for name, se in (
        ("scale_centroid", "scale_centroid_se"),
        ("T_spec", "T_spec_se"),
        ("H_star", "H_star_frac_se"),
    ):
        out[f"{name}_lower"], out[f"{name}_upper"] = interval(out[name], out[se], log=True, q=t)
    for name in ("scale_centroid_se", "energy_se", "T_spec_se", "H_star_se", "H_star_frac_se"):
        out[name].attrs["long_name"] = (
            f"leave-one-snapshot-out jackknife standard error of {name[:-3]}"
        )
    out.attrs["interval_level"] = LEVEL
    out.attrs["interval_t"] = t
    out.attrs["interval_rule"] = (
        "value x exp(+- t_{0.975, N-1} x jackknife SE / value), the log scale of a positive "
        "quantity (H*: the SE of the interpolated rank)"
    )
    return out


def _analyse_layer(values: np.ndarray, layer: int, params: dict, scales) -> xr.Dataset:
    """One layer: per head when heads are kept (one field set in memory at a time)."""

    coords = {
        "snapshot": np.arange(values.shape[-3]),
        "query": np.arange(values.shape[-2]),
        "key": np.arange(values.shape[-1]),
    }
    dims = ("snapshot", "query", "key")
    if values.ndim == 3:
        ds = analyse_field(xr.DataArray(values, dims=dims, coords=coords), params, scales)
    else:
        parts = [
            analyse_field(xr.DataArray(values[h], dims=dims, coords=coords), params, scales)
            for h in range(values.shape[0])
        ]
        ds = xr.concat(
            parts,
            dim=xr.DataArray(np.arange(1, len(parts) + 1), dims="head", name="head"),
            coords="minimal",
            compat="override",
            combine_attrs="override",
        )
    return text_coords(ds).expand_dims(layer=[layer])


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def analyze_source(
    source: Source,
    ens: TokenEnsemble,
    *,
    layers: Sequence[int] | None = None,
    average_heads: bool = True,
    params: dict | None = None,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
) -> xr.Dataset:
    """Fields (cached), then the analysis layer by layer (each layer cached) of one source.

    Returns
    -------
    xarray.Dataset
        Per ``layer`` (and ``head`` if kept) the variables of :func:`analyse_field`;
        attrs: the source, its sha256, the text, its sha256, the ensemble and the keys.
    """
    from tqdm import tqdm

    from ..models.data import check_layers

    params = params if params is not None else _analysis_params(**DEFAULTS)
    try:
        layers = check_layers(layers, source.n_layer)
    except ValueError as err:
        raise UsageError(f"--layers: {err} ({source.label} has {source.n_layer} layers)") from None
    n, length = ens.ids.shape
    scales = _scales(params, length, source.causal)
    fkey = hashlib.sha256(_json(_fields_parts(source, ens, layers, average_heads)).encode())
    fkey = fkey.hexdigest()
    root = cache_root(cache_dir)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", source.label)
    label = f"{safe}-n{n}-L{length}"
    store = FieldFile(root / "analyze-fields" / f"{label}-{fkey[:16]}.nc", fkey)

    def build_fields() -> None:
        _build_fields(store, source, ens, layers, average_heads, batch_size, progress)

    aparts = {"fields_key": fkey, "params": _json(params), "own_format": OWN_FORMAT}
    bar = tqdm(
        total=len(layers), desc=f"{source.label}: analysis", unit="layer", disable=not progress
    )
    with bar:
        parts = _layer_analyses(
            store, build_fields, layers, label, aparts, params, scales, cache_dir, bar
        )
    ds = concat_layers(parts)
    ds.attrs = _source_attrs(ds.attrs, source, ens, average_heads, fkey, store.path)
    ds["offset"] = ("snapshot", ens.offsets)
    return ds


def _layer_analyses(
    store: FieldFile, build_fields, layers, label, aparts, params, scales, cache_dir, bar
) -> list[xr.Dataset]:
    """Each layer's :func:`_analyse_layer`, cached on its own (key ``aparts`` and the
    layer; file ``<label>-layer<layer>``); the fields are extracted (``build_fields``)
    only when a layer is computed and ``store`` is not complete. ``bar`` counts layers."""
    parts = []
    for k, layer in enumerate(layers):

        def compute(k=k, layer=layer):
            if not store.complete():
                bar.clear()
                build_fields()
            return _analyse_layer(store.layer(k), layer, params, scales)

        parts.append(
            cached_dataset(
                "analyze-layers",
                f"{label}-layer{layer:03d}",
                {**aparts, "layer": layer},
                compute,
                cache_dir=cache_dir,
            )
        )
        bar.update(1)
    return parts


def _fields_parts(source: Source, ens: TokenEnsemble, layers, average_heads: bool) -> dict:
    """The key parts of a source's fields over an ensemble."""
    n, length = ens.ids.shape
    return {
        "source_sha256": source.sha256,
        "text_sha256": ens.text_sha256,
        "ids_sha256": ens.ids_sha256,
        "n_snapshots": n,
        "length": length,
        "layers": ",".join(map(str, layers)),
        "average_heads": int(average_heads),
        "msapod_version": package_version(),
        "own_format": OWN_FORMAT,
    }


def _source_attrs(attrs, source: Source, ens: TokenEnsemble, average_heads, fkey, path) -> dict:
    """The combined layers' attrs less the cache's, plus the source's and text's provenance."""
    keep = {
        k: v
        for k, v in attrs.items()
        if not k.startswith(("cache_", "values_")) and k not in ("dataset_format",)
    }
    keep.update(
        average_heads=int(average_heads),
        source=source.spec,
        source_kind=source.kind,
        model_type=source.model_type,
        source_sha256=source.sha256,
        framework=source.framework,
        causal=int(source.causal),
        n_layer_model=source.n_layer,
        n_head=source.n_head,
        text_source=ens.text_source,
        text_sha256=ens.text_sha256,
        ids_sha256=ens.ids_sha256,
        n_tokens_text=ens.n_tokens,
        lag_unit=ens.unit,
        chars_per_token=ens.chars_per_token,
        fields_key=fkey,
        fields_file=str(path),
    )
    return keep


#: Defaults of every analysis option: the scale grid's (None: analyze's default grid,
#: :data:`msapod.wavelets.DEFAULT_MIN_SCALE` to half the lags in
#: :data:`msapod.wavelets.DEFAULT_NUM_SCALES` steps) and analyze's own, read from its
#: signature.
DEFAULTS = {
    **dict.fromkeys(GRID_OPTIONS),
    **{
        k: ANALYZE_DEFAULTS[k]
        for k in ("omega0", "max_peaks", "centre", "width", "field", "eps", "n_modes")
    },
}

#: Per-model provenance kept as coordinates on ``model``.
_PER_MODEL = (
    "model_type",
    "source",
    "source_kind",
    "source_sha256",
    "framework",
    "causal",
    "text_source",
    "text_sha256",
    "ids_sha256",
    "lag_unit",
    "chars_per_token",
    "n_layer_model",
    "n_head",
)


def _check_sources(sources, labels) -> tuple[list, list | None]:
    """``(sources, labels)`` as lists: at least one source, one unique label each if any."""
    sources = list(sources)
    if not sources:
        raise UsageError("SOURCE: expected at least one model")
    if labels is not None:
        labels = list(labels)
        if len(labels) != len(sources):
            raise UsageError(
                f"--labels: expected one label per SOURCE ({len(sources)}), got {len(labels)}"
            )
        if len(set(labels)) != len(labels):
            raise UsageError(f"--labels: expected unique labels, got {labels}")
    return sources, labels


def analyze_sources(
    sources: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    text: str | os.PathLike | None = None,
    n: int = N_SNAPSHOTS,
    length: int = SNIPPET_LENGTH,
    seed: int = 0,
    layers: Sequence[int] | None = None,
    average_heads: bool = True,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    log=None,
    claims: bool = True,
    **options,
) -> xr.Dataset:
    """``msapod analyze``: analyse one or several models into one dataset.

    Parameters
    ----------
    sources
        SOURCEs (see :func:`resolve_source`).
    labels
        Names of the models in the result (default: from the sources); unique.
    text
        Text file (UTF-8); default the zoo's validation split.
    n, length, seed
        Snapshots N, tokens per snapshot L and the ensemble's seed.
    layers
        1-based layers; default all.
    average_heads
        Analyse the head mean (default) or every head.
    batch_size
        Snippets per forward pass (default: as many as fit 256 MB of attention).
    cache_dir
        Cache root (fields and per-layer analyses); default ``$MSAPOD_CACHE`` or
        ``~/.cache/msapod``.
    progress
        tqdm bars over batches and layers.
    log
        Called with one line per note (e.g. a bidirectional model); default: none.
    claims
        Also decide the paper's field-based claims (:func:`evaluate_claims`).
    **options
        ``scale_min``, ``scale_max``, ``n_scales``, ``omega0``, ``max_peaks``, ``centre``,
        ``width``, ``field``, ``eps``, ``n_modes`` (see :data:`DEFAULTS`).

    Returns
    -------
    xarray.Dataset
        dims ``model``, ``layer`` (``head`` if kept), ``window``, ``eps``, ``scale``,
        ``lag``, ...; coordinates on ``model``: ``architecture`` and the provenance
        (``source``, ``source_sha256``, ``text_sha256``, ``causal``, ...); attrs: every
        parameter; with ``claims``, ``claim_verdict(claim)`` and the other columns of
        :func:`msapod.studies.check_claims` (see :func:`evaluate_claims`).

    Raises
    ------
    UsageError
        Any bad input, before anything is extracted where it can be known then.
    """
    sources, labels = _check_sources(sources, labels)
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"analyze_sources: unexpected options {sorted(unknown)}")
    params = _analysis_params(n, **{**DEFAULTS, **options})
    if batch_size is not None:
        batch_size = check_int(batch_size, "--batch-size", 2, UsageError)
    log = log or (lambda line: None)
    results = []
    for src in _resolve_all(sources, labels, log):
        ens = make_ensemble(src, text, n=n, length=length, seed=seed)
        ds = analyze_source(
            src,
            ens,
            layers=layers,
            average_heads=average_heads,
            params=params,
            batch_size=batch_size,
            cache_dir=cache_dir,
            progress=progress,
        )
        results.append((src, ens, ds))
    ensemble = {"n": n, "length": length, "seed": seed, "average_heads": average_heads}
    out = _stack([(src, ds) for src, _, ds in results], params, **ensemble)
    if claims:
        out = _with_claims(out, results, cache_dir, progress, log)
    return out


def _resolve_all(sources: list, labels: list | None, log):
    """Each source loaded (:func:`resolve_source`) and probed (:func:`probe`, its notes
    to ``log``) in turn; two sources with one label are refused."""
    seen = set()
    for i, spec in enumerate(sources):
        src = resolve_source(spec, labels[i] if labels else None)
        if src.label in seen:
            raise UsageError(
                f"--labels: two sources are both labelled {src.label!r}; pass --labels"
            )
        seen.add(src.label)
        probe(src)
        for note in src.notes:
            log(note)
        yield src


def _with_claims(out: xr.Dataset, results, cache_dir, progress: bool, log) -> xr.Dataset:
    """``out`` with the claims of :func:`evaluate_claims` merged in, where they could be
    decided."""
    card = evaluate_claims(results, cache_dir=cache_dir, progress=progress, log=log)
    if card is None:
        return out
    out = out.merge(card)
    out.attrs["claims_models"] = card.attrs["claims_models"]
    out.attrs["claims_rules"] = (
        "msapod.studies.check_claims: the book's default reading of "
        "msapod.studies.verdict.rules (the scorecard's rules)"
    )
    return out


#: Columns of the claims table kept in the dataset (as ``claim_<column>(claim)``).
CLAIM_COLUMNS = ROW_COLUMNS


def _all_layers(ds: xr.Dataset) -> bool:
    n = int(ds.attrs["n_layer_model"])
    return sorted(int(v) for v in ds["layer"].values) == list(range(1, n + 1))


def evaluate_claims(
    results, *, cache_dir=None, progress: bool = False, log=None
) -> xr.Dataset | None:
    """The paper's field-based claims on the analysed models, by the book's rules.

    :func:`msapod.studies.check_claims` (the default reading of
    :mod:`msapod.studies.verdict.rules`, as the scorecard) on the head-averaged fields of every
    model that is causal and analysed at all its layers, all such models together (so
    that the claims comparing architectures are decided where there are at least two
    models of each; otherwise they say they need more models). Cached by the fields' keys.

    Returns
    -------
    xarray.Dataset or None
        ``claim_verdict(claim)``, ``claim_measured``, ... (:data:`CLAIM_COLUMNS`), attr
        ``claims_models``; None (with a note to ``log``) when no model qualifies.

    """
    log = log or (lambda line: None)
    ok = _claim_models(results, log)
    if not ok:
        return None
    from .measure.evidence import EVIDENCE_FORMAT
    from .verdict.curve import source_hash

    labels = [src.label for src, _, _ in ok]
    parts = {
        "fields_keys": [ds.attrs["fields_key"] for _, _, ds in ok],
        "labels": labels,
        "architectures": [src.architecture for src, _, _ in ok],
        "own_format": OWN_FORMAT,
        "readings": "default",
        "evidence_format": EVIDENCE_FORMAT,  # the claims decided again when evidence or
        "rules": source_hash(),  # the rules change
    }

    def compute() -> xr.Dataset:
        from . import check_claims

        card = check_claims(_head_mean_fields(ok, progress), readings="default", progress=progress)
        out = xr.Dataset(
            {
                f"claim_{c}": ("claim", card[c].astype(str).values)
                for c in CLAIM_COLUMNS
                if c in card.columns
            },
            coords={"claim": list(card.index.astype(str))},
        )
        out.attrs["claims_models"] = ", ".join(labels)
        return out

    try:
        claims = cached_dataset(
            "analyze-claims", "-".join(labels)[:80], parts, compute, cache_dir=cache_dir
        )
    except (ValueError, IndexError, KeyError) as err:  # the claims fail, the analysis stands
        log(
            f"the paper's claims could not be evaluated on {', '.join(labels)} "
            f"({type(err).__name__}: {' '.join(str(err).split())}); the dataset and the "
            "report are written without them"
        )
        return None
    out = claims[list(claims.data_vars)]
    out.attrs = {"claims_models": claims.attrs["claims_models"]}
    return out


def _claim_models(results, log) -> list:
    """The ``(source, ensemble, dataset)`` the claims apply to: causal, at least three
    layers, every layer analysed (each other one named in ``log``)."""
    ok = []
    for src, ens, ds in results:
        if not src.causal:
            log(f"{src.label}: the paper's claims are about causal attention; not evaluated")
        elif src.n_layer < 3:
            log(
                f"{src.label}: the paper's claims compare early layers (1-2) with later "
                f"ones; {src.n_layer} layers are too few, not evaluated"
            )
        elif not _all_layers(ds):
            log(
                f"{src.label}: the paper's claims need every layer (1..{src.n_layer}); "
                "run without --layers to evaluate them"
            )
        else:
            ok.append((src, ens, ds))
    return ok


def _head_mean_fields(ok: list, progress: bool) -> xr.DataArray:
    """The head-averaged fields of the qualifying models from their field files (rebuilt
    where removed since), ``(model, layer, snapshot, query, key)``."""
    fields = []
    for src, ens, ds in ok:
        store = FieldFile(Path(ds.attrs["fields_file"]), ds.attrs["fields_key"])
        if not store.complete():  # analyses cached, fields file removed since
            layers = [int(v) for v in ds["layer"].values]
            heads = bool(ds.attrs["average_heads"])
            _build_fields(store, src, ens, layers, heads, None, progress)
        values = np.stack([store.layer(k) for k in range(ds.sizes["layer"])])
        if values.ndim == 5:  # heads kept: the claims are about the head mean
            values = values.mean(axis=1, dtype=np.float64).astype(np.float32)
        fields.append(values)
    n, length = fields[0].shape[1:3]
    return xr.DataArray(
        np.stack(fields),
        dims=("model", "layer", "snapshot", "query", "key"),
        coords={
            "model": [src.label for src, _, _ in ok],
            "layer": ok[0][2]["layer"].values,
            "snapshot": np.arange(n),
            "query": np.arange(length),
            "key": np.arange(length),
            "architecture": ("model", [src.architecture for src, _, _ in ok]),
        },
    )


def _stack(results, params, **ensemble) -> xr.Dataset:
    """The per-source datasets along ``model``, with the provenance as coords and attrs."""
    labels = [src.label for src, _ in results]
    parts = []
    for _, ds in results:
        parts.append(ds.assign_attrs({}))
    ds = xr.concat(
        parts,
        dim=xr.DataArray(labels, dims="model", name="model"),
        coords="minimal",
        compat="override",
        join="outer",
        combine_attrs="drop",
    )
    coords = {"architecture": ("model", [src.architecture for src, _ in results])}
    for key in _PER_MODEL:
        coords[key] = ("model", [ds_.attrs[key] for _, ds_ in results])
    ds = ds.assign_coords(coords)
    ds.attrs = _stack_attrs(results, params, labels, ensemble)
    return ds


#: Attrs of the first source's analysis kept on the stacked dataset.
_SHARED_ATTRS = (
    "snapshot_dim",
    "omega0",
    "scalogram_field",
    "bias_correction",
    "max_peaks",
    "include_edges",
    "window_centre_rule",
    "window_width_rule",
    "n_modes",
    "criterion",
    "fit_k_min",
    "fit_k_max",
    "pod_normalisation",
    "interval_level",
    "interval_t",
    "interval_rule",
)


def _used_params(results, params: dict) -> dict:
    """The value each option of ``params`` took: the scale grid read from each result's
    ``scale`` coordinate and ``n_modes`` from its attrs (where ``params`` leaves them to
    the default), one value, or ``"<model>: <value>, ..."`` where the models differ (their
    lags differ)."""
    taken = {
        "scale_min": lambda ds: float(ds["scale"].min()),
        "scale_max": lambda ds: float(ds["scale"].max()),
        "n_scales": lambda ds: int(ds.sizes["scale"]),
        "n_modes": lambda ds: int(ds.attrs["n_modes"]),
    }
    used = {}
    for key, value in params.items():
        if value is not None or key not in taken:
            used[key] = value
            continue
        values = [taken[key](ds) for _, ds in results]
        if len(set(values)) == 1:
            used[key] = values[0]
        else:
            used[key] = ", ".join(
                f"{src.label}: {v:g}" for (src, _), v in zip(results, values, strict=True)
            )
    return used


def _stack_attrs(results, params: dict, labels: list, ensemble: dict) -> dict:
    """The stacked dataset's attrs: the ensemble, every parameter, each source's
    provenance and the analysis attrs shared by every source."""
    first = results[0][1].attrs
    return {
        "msapod_step": "analyze (msapod analyze)",
        "msapod_version": package_version(),
        "models": ", ".join(labels),
        "n_snapshots": ensemble["n"],
        "length": ensemble["length"],
        "seed": ensemble["seed"],
        "average_heads": int(ensemble["average_heads"]),
        "params": _json(params),
        **{f"param_{k}": v for k, v in _used_params(results, params).items()},
        "sources": _json(
            [{"label": src.label, **{k: ds_.attrs[k] for k in _PER_MODEL}} for src, ds_ in results]
        ),
        **{k: first[k] for k in _SHARED_ATTRS if k in first},
        "description": (
            "msapod.analyze per layer of the attention fields of each model over an "
            "ensemble of non-overlapping text snippets, with leave-one-snapshot-out "
            "jackknife standard errors and 95 % intervals; lags and scales in the unit "
            "of lag_unit; param_*: the value each option took, params: the options as "
            "given (null: the default)"
        ),
    }


def save_dataset(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write the dataset as netCDF (h5netcdf), atomically."""

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        netcdf_safe(ds).to_netcdf(tmp, engine="h5netcdf")
    return path


# ----------------------------------------------------------------------------- report


def _png(fig, alt: str) -> str:
    """A matplotlib figure as a base64 PNG ``<img>`` with the text ``alt`` (closed
    afterwards). A figure with a layout engine is saved as laid out (cropping it to its
    tight box would draw it twice)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    tight = None if fig.get_layout_engine() is not None else "tight"
    fig.savefig(buf, format="png", bbox_inches=tight)
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _unit(ds: xr.Dataset, model: str) -> str:
    return str(ds["lag_unit"].sel(model=model).values)


def _heads(ds: xr.Dataset) -> list:
    return list(ds["head"].values) if "head" in ds.dims else [None]


def _head_mean(da: xr.DataArray) -> xr.DataArray:
    """Heads kept: the figures show the mean over heads of each per-head quantity."""
    return da.mean("head") if "head" in da.dims else da


def _in_unit(fig, unit: str):
    """Axis labels in the source's lag unit (the shared figures say characters)."""
    if unit != "character":
        for ax in fig.axes:
            for get, put in ((ax.get_xlabel, ax.set_xlabel), (ax.get_ylabel, ax.set_ylabel)):
                label = get()
                if "characters" in label:
                    put(label.replace("characters", f"{unit}s"))
    return fig


def fig_trends(ds: xr.Dataset, name: str, ylabel: str):
    """Layer trend of ``name`` (plain window, H* at eps 0.10) of every model with its
    95 % jackknife interval (error bar: half the interval)."""
    from .. import plots

    value = ds[name]
    lower, upper = ds[f"{name}_lower"], ds[f"{name}_upper"]
    if "window" in value.dims:
        value, lower, upper = (v.sel(window="plain") for v in (value, lower, upper))
    if "eps" in value.dims:
        value, lower, upper = (v.sel(eps=0.1, method="nearest") for v in (value, lower, upper))
    value, half = _head_mean(value), _head_mean((upper - lower) / 2)
    fig = plots.layer_profile(value.drop_vars("eps", errors="ignore"), half, ylabel=ylabel)
    return _in_unit(fig, _unit(ds, str(ds["model"].values[0])))


def fig_scalogram(ds: xr.Dataset, model: str):
    """The scalogram E(a, b) of every layer of ``model`` (:func:`msapod.plots.scalogram`)."""
    from .. import plots

    E = _head_mean(ds["energy"].sel(model=model)).dropna("lag", how="all")
    E = E.dropna("scale", how="all")
    fig = plots.scalogram(E, by="layer")
    lags = E["lag"].values
    if lags.min() < 0:  # bidirectional: show the negative lags too
        for ax in fig.axes[:-1]:
            ax.set_xlim(lags.min(), lags.max())
    return _in_unit(fig, _unit(ds, model))


def fig_scale_spectrum(ds: xr.Dataset, model: str):
    """The scale spectrum E(a) per layer with the dominant scales a*_m."""
    from .. import plots

    one = ds.sel(model=[model])
    spec = _head_mean(one["scale_spectrum"]).dropna("scale", how="all")
    dom = _head_mean(one["dominant_scale"])
    return _in_unit(plots.scale_spectrum(spec, dom, by="layer"), _unit(ds, model))


def fig_pod(ds: xr.Dataset, model: str):
    """POD spectra lambda_k per layer, plain and per scale window, with T_spec and
    H*(0.10) of each window in the legend of its panel."""
    import matplotlib as mpl

    from .. import plots

    one = ds.sel(model=model)
    layers = list(one["layer"].values)
    fig, axes = plots.panels(len(layers), height=2.3, sharey=True)
    cmap = mpl.colormaps["viridis"]
    windows = list(one["window"].values)
    with plots.style():
        for ax, layer in zip(axes, layers, strict=True):
            sel = one.sel(layer=layer)
            for j, w in enumerate(windows):
                lam = _head_mean(sel["spectrum"].sel(window=w))
                if not np.isfinite(lam.values).any():
                    continue
                lam = lam.where(lam > 1e-10 * lam.sum()).dropna("rank")  # the null ranks
                T = float(_head_mean(sel["T_spec"].sel(window=w)))
                H = float(_head_mean(sel["H_star"].sel(window=w).sel(eps=0.1, method="nearest")))
                ax.plot(
                    lam["rank"], lam, color=cmap(0.85 * j / max(len(windows) - 1, 1)),
                    label=f"{w}: {T:.2f}, {H:.0f}",
                )  # fmt: skip
            ax.set(xscale="log", yscale="log", title=f"layer {layer}")
            plots.log_ticks(ax)
            ax.set_xlabel(plots.LABELS["mode"])
            ax.set_ylabel(plots.LABELS["lambda"])
            # inside the panel, outside the layout (so the panels keep their size)
            legend = ax.legend(loc="lower left", title="$T_{spec}$, $H^*$", borderaxespad=0.2)
            legend.set_in_layout(False)
        plots.outer_labels(axes)
    return fig


def fig_mode_lags(ds: xr.Dataset, model: str):
    """Lag energy rho_k(tau) of the leading plain-window POD modes per layer."""
    from .. import plots

    rho = _head_mean(ds["mode_lag_energy"].sel(model=model, window="plain"))
    rho = rho.dropna("lag", how="all")
    return _in_unit(
        plots.mode_lags(rho.dropna("mode", how="all"), by="layer", max_lag=_lag_extent(rho)),
        _unit(ds, model),
    )


def _lag_extent(rho: xr.DataArray, share: float = 0.99) -> float:
    """Smallest lag holding ``share`` of the profiles' energy (times 1.5, at least 16)."""
    p = rho.fillna(0.0)
    p = p.sum([d for d in p.dims if d != "lag"])
    lag = np.abs(p["lag"].values)
    order = np.argsort(lag, kind="stable")
    c = np.cumsum(p.values[order])
    if c[-1] <= 0:
        return float(lag.max())
    at = lag[order][min(np.searchsorted(c, share * c[-1]), len(c) - 1)]
    return float(min(lag.max(), max(16.0, 1.5 * at)))


_CSS = """
body { font-family: sans-serif; max-width: 1250px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; }
th { background: #eee; }
img { max-width: 100%; }
.note { background: #f4f4e8; border-left: 4px solid #aa8; padding: 0.4em 0.8em; }
code { background: #f2f2f2; padding: 0 0.2em; }
"""


def _table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    esc = html.escape
    out = ["<table><tr>" + "".join(f"<th>{esc(str(h))}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{esc(str(c))}</td>" for c in row) + "</tr>")
    return "\n".join(out) + "</table>"


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if not np.isfinite(x) else f"{x:.{digits}f}"


def _summary_rows(ds: xr.Dataset, model) -> list[list[str]]:
    rows = []
    one = ds.sel(model=model)
    for h in _heads(ds):
        sel = one if h is None else one.sel(head=h)
        for layer in ds["layer"].values:
            s = sel.sel(layer=layer)
            p = s.sel(window="plain")
            H, lo, hi = (
                p[v].sel(eps=0.1, method="nearest")
                for v in ("H_star", "H_star_lower", "H_star_upper")
            )
            first = float(s["scale"].min())
            peaks = [
                (f"{'≤' if a <= first else '≥'} {a:.1f} (grid edge)" if edge else f"{a:.1f}")
                for a, edge in zip(
                    np.atleast_1d(s["dominant_scale"].values),
                    np.atleast_1d(s["dominant_edge"].values),
                    strict=True,
                )
                if np.isfinite(a)
            ]
            row = [str(layer)] if h is None else [str(layer), str(h)]
            c, c_lo, c_hi = (
                float(s[v])
                for v in ("scale_centroid", "scale_centroid_lower", "scale_centroid_upper")
            )
            row += [
                f"{_fmt(c)} [{_fmt(c_lo)}, {_fmt(c_hi)}]",
                ", ".join(peaks) or "-",
                f"{_fmt(float(p['T_spec']))} "
                f"[{_fmt(float(p['T_spec_lower']))}, {_fmt(float(p['T_spec_upper']))}]",
                f"{_fmt(float(H), 0)} [{_fmt(float(lo), 1)}, {_fmt(float(hi), 1)}]",
            ]
            rows.append(row)
    return rows


def _claims_html(ds: xr.Dataset) -> str:
    """The claims section: what these models decide, by the book's rules (each row by
    :func:`msapod.studies.verdict.claims.render`)."""
    esc = html.escape
    units = {str(u) for u in ds["lag_unit"].values}
    out = [
        "<p>Decided on "
        f"{esc(str(ds.attrs.get('claims_models', '')))} by the book's rules (the default "
        "reading of <code>msapod.studies.verdict.rules</code>, the same code as the book's "
        "scorecard, through <code>msapod.studies.check_claims</code>). What a single model "
        "can decide is decided; claims that compare architectures (C7, C8) need at least "
        "two models of each architecture and say so. Verdicts: "
        + esc(", ".join(VERDICTS))
        + ".</p>"
    ]
    if units != {"character"}:
        out.append(
            '<p class="note">Lags and scales of token models are in tokens; the claims\' '
            "thresholds (e.g. C1's a &le; 7) are stated for the paper's character-level "
            "models.</p>"
        )
    rows = [
        render(
            str(c),
            {
                k: str(ds[f"claim_{k}"].sel(claim=c).values)
                for k in CLAIM_COLUMNS
                if f"claim_{k}" in ds
            },
        )["cells"]
        for c in ds["claim"].values
    ]
    out.append(_table(list(REPORT_COLUMNS.values()), rows))
    return "\n".join(out)


def _report_notes(ds: xr.Dataset, models: list[str], notes: Sequence[str]) -> list[str]:
    """The report's notes: the caller's, then one per bidirectional model."""
    esc = html.escape
    body = []
    for line in notes:
        body.append(f'<p class="note">{esc(line)}</p>')
    for m in models:
        if not int(ds["causal"].sel(model=m)):
            body.append(
                f'<p class="note">{esc(m)}: bidirectional attention; lags run over both '
                "signs (negative: keys after the query).</p>"
            )
    return body


def _report_provenance(ds: xr.Dataset, models: list[str]) -> list[str]:
    """The report's provenance and parameter tables."""
    body = ["<h2>Provenance and parameters</h2>"]
    rows = [
        [m, str(ds["model_type"].sel(model=m).values), _attention(ds, m)]
        + [str(ds[k].sel(model=m).values) for k in ("source", "source_kind")]
        + [
            str(ds["source_sha256"].sel(model=m).values)[:16] + "...",
            str(ds["text_source"].sel(model=m).values),
            str(ds["text_sha256"].sel(model=m).values)[:16] + "...",
            str(ds["lag_unit"].sel(model=m).values),
        ]
        for m in models
    ]
    body.append(
        _table(
            [
                "model",
                "architecture",
                "attention",
                "source",
                "kind",
                "source sha256",
                "text",
                "text sha256",
                "lag unit",
            ],
            rows,
        )
    )
    given = json.loads(ds.attrs["params"])
    params = [
        [k.removeprefix("param_"), _param_text(v, given.get(k.removeprefix("param_"), v))]
        for k, v in ds.attrs.items()
        if k.startswith("param_")
    ]
    params = [[k, f"{v} ({_FIELD_WORDS[v.split()[0]]})" if k == "field" else v] for k, v in params]
    params += [[k, str(ds.attrs[k])] for k in ("n_snapshots", "length", "seed", "average_heads")]
    body.append(
        "<p>The value each option took (where it was left to the default, the value the "
        "default came to).</p>"
    )
    body.append(_table(["parameter", "value"], params))
    return body


#: The report's words for each scalogram field of :func:`msapod.analyze`.
_FIELD_WORDS = {"total": "the attention A", "fluctuation": "the fluctuation u = A - mean"}


def _field_symbol(ds: xr.Dataset) -> str:
    """The paper's symbol of the field the scalogram was taken of: ``u`` or ``A``."""
    return FIELD_SYMBOLS[ds.attrs["scalogram_field"]]


def _attention(ds: xr.Dataset, model: str) -> str:
    """``"standard, causal"``, ``"energy-gated, causal"``, ``"standard, bidirectional"``."""
    kind = (
        "energy-gated" if str(ds["architecture"].sel(model=model).values) == "ega" else "standard"
    )
    return f"{kind}, {'causal' if int(ds['causal'].sel(model=model)) else 'bidirectional'}"


def _param_text(value, given) -> str:
    """A parameter's value as the report shows it, ``"(default)"`` added where it was not
    given."""
    text = f"{value:g}" if isinstance(value, float | np.floating) else str(value)
    return f"{text} (default)" if given is None else text


def _report_trends(ds: xr.Dataset, models: list[str]) -> list[str]:
    """The report's layer-trend figures and per-model tables."""
    esc = html.escape
    body = []
    body.append("<h2>Layer trends</h2>")
    if "head" in ds.dims:
        body.append(
            "<p>Heads kept: the figures show the mean over heads of each per-head number; "
            "the tables list every head.</p>"
        )
    names = ", ".join(models)
    for name, ylabel, what in (
        (
            "scale_centroid",
            f"scale centroid of ${_field_symbol(ds)}$ (characters)",
            f"the scale centroid of the scalogram of {_field_symbol(ds)}",
        ),
        ("T_spec", "$T_{spec}$ (plain window)", "T_spec of the plain POD"),
        ("H_star", "$H^*(0.10)$ (plain window)", "H*(0.10) of the plain POD"),
    ):
        alt = f"Per layer, {what} of {names}, a marker per layer with its 95 % interval."
        body.append(_png(fig_trends(ds, name, ylabel), alt))
    head_col = ["head"] if "head" in ds.dims else []
    for m in models:
        body.append(f"<h3>{esc(m)}: numbers per layer (95 % intervals)</h3>")
        body.append(
            _table(
                [
                    "layer",
                    *head_col,
                    "scale centroid",
                    "dominant scales",
                    "T_spec (plain)",
                    "H*(0.10) (plain)",
                ],
                _summary_rows(ds, m),
            )
        )
    return body


def _report_layers(ds: xr.Dataset, models: list[str]) -> list[str]:
    """The report's per-model, per-layer figures."""
    esc = html.escape
    body = []
    for m in models:
        body.append(f"<h2>{esc(m)}: layer by layer</h2>")
        for title, draw in (
            (f"Scalogram E(a, b) of the lag profiles of {_field_symbol(ds)}", fig_scalogram),
            ("Scale spectrum E(a) with the dominant scales a*", fig_scale_spectrum),
            ("POD spectra, plain and per scale window, with T_spec and H*(0.10)", fig_pod),
            ("Lag profiles rho_k(tau) of the leading POD modes (plain window)", fig_mode_lags),
        ):
            body.append(f"<h3>{esc(m)}: {esc(title)}</h3>")
            body.append(_png(draw(ds, m), f"{m}: {title}, one panel per layer."))
    return body


def write_report(
    ds: xr.Dataset,
    path: str | os.PathLike,
    *,
    notes: Sequence[str] = (),
) -> Path:
    """One self-contained HTML page of an :func:`analyze_sources` result.

    The provenance and parameters; the layer trends of every model with their intervals
    (:func:`fig_trends`) and a table of the numbers; then per model, one panel per layer:
    the scalogram (:func:`fig_scalogram`), the scale spectrum with the dominant scales
    (:func:`fig_scale_spectrum`), the POD spectra plain and per window with T_spec and H*
    (:func:`fig_pod`) and the mode lag profiles (:func:`fig_mode_lags`), drawn with
    :mod:`msapod.plots`. Figures are embedded as base64 PNG; the page loads nothing from the
    network.

    Parameters
    ----------
    ds
        The dataset of :func:`analyze_sources` (``model`` dim).
    path
        The HTML file to write (atomically).
    notes
        Lines shown as notes at the top (e.g. a bidirectional model).
    """
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg", force=False)
    esc = html.escape
    models = [str(m) for m in ds["model"].values]
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>msapod analyze: {esc(', '.join(models))}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Multiscale POD of attention: {esc(', '.join(models))}</h1>",
        "<p>Made by <code>msapod analyze</code> (msapod "
        f"{esc(str(ds.attrs.get('msapod_version', '')))}): the ensemble of N = "
        f"{ds.attrs['n_snapshots']} snippets of L = {ds.attrs['length']} tokens, the "
        "Reynolds split, the Morlet scalogram of the lag profiles, its dominant scales, one "
        "Gaussian lag window per dominant scale, plain and windowed POD, T_spec and H*. "
        "Intervals are 95 % leave-one-snapshot-out jackknife intervals (one model: they "
        "carry the snapshot noise, not the training-seed spread).</p>",
    ]
    body += _report_notes(ds, models, notes)
    body += _report_provenance(ds, models)
    body += _report_trends(ds, models)
    if "claim_verdict" in ds:
        body.append("<h2>The paper's claims on these models</h2>")
        body.append(_claims_html(ds))
    body += _report_layers(ds, models)
    body.append("</body></html>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(body), encoding="utf-8")
    return path
