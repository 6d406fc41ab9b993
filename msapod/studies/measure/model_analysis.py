"""Analysing a model: one path from a loaded model and a text to per-layer analyses.

The SmolLM2 study (:func:`msapod.studies.measure.llm.smollm2_analysis`) and ``msapod
analyze`` (:func:`msapod.studies.own_model.analyze_sources`) are two calls of it, each
with its own settings:

1. **the model**: a :class:`Source` (:func:`load_source`), its attention probed once
   (:func:`probe`);
2. **the ensemble** (PAPER.md step 1): ``n`` aligned, non-overlapping windows of
   ``length`` tokens of the text tokenised as a whole (:func:`make_ensemble`);
3. **the fields**: one forward pass per batch of snippets, each layer written into a field
   file as soon as it is computed; an interrupted file resumes (:func:`record_ensemble`);
4. **the analysis**: :func:`msapod.analyze` with jackknife standard errors, one layer (and
   head) at a time (:func:`analyse_layer`), each layer cached (:func:`layer_analyses`).

Memory holds the model plus one layer of one batch while recording, and one field set
while analysing. The module imports no torch: loading a model and recording import it.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm import tqdm

from ..._io import check_int, json_object
from ...models.data import N_SNAPSHOTS, SNIPPET_LENGTH, ensemble_offsets, load_corpus, load_text
from ...pipeline import ANALYZE_DEFAULTS, analyze
from ..store.cache import (
    FieldFile,
    TokenEnsemble,
    cache_root,
    cached_dataset,
    concat_layers,
    record_fields,
    state_sha256,
    text_coords,
)
from .modestats import lag_energy
from .uncertainty import pod_jackknife, scale_jackknife

__all__ = [
    "BATCH_BUDGET",
    "DROPPED",
    "GGUF_ALIASES",
    "VAL_TEXT",
    "Source",
    "UsageError",
    "analyse_field",
    "analyse_layer",
    "batch_plan",
    "draw_ensemble",
    "ensemble_record",
    "field_store",
    "folder_label",
    "layer_analyses",
    "load_source",
    "make_ensemble",
    "probe",
    "quiet_transformers",
    "record_ensemble",
    "snippet_bytes",
    "tokenise",
    "transformers_source",
    "validation_text",
]

#: Bytes of attention probabilities one layer of one batch may hold while it is recorded
#: (every head, float32): what fixes the batches.
BATCH_BUDGET = 64 * 2**20
#: Variables of :func:`msapod.analyze` not kept (per snapshot or per mode field).
DROPPED = ("modes", "coefficients", "gram")
#: Leading POD modes whose lag profiles :func:`analyse_field` keeps.
N_MODE_PROFILES = 3
#: Names that select the SmolLM2-135M GGUF of the ``llm`` extra
#: (:func:`msapod.studies.measure.llm.smollm2_source`).
GGUF_ALIASES = ("smollm2", "smollm2-135m", "SmolLM2-135M-Instruct-Q4_1")
#: Fewest snapshots: the T_spec fit needs ranks 1..(N - 1) // 2 >= 2.
MIN_N = 5
#: Smallest snippet length: the default scale grid needs more than 6 lags.
MIN_LENGTH = 8


class UsageError(ValueError):
    """A bad input (source, text, ensemble, layers, options): ``msapod analyze`` exits
    with 2."""


@dataclass
class Source:
    """A loaded model with what the analysis needs to know about it.

    Attributes
    ----------
    spec
        What was asked for (zoo name, folder, id or GGUF alias).
    label
        Name of the model in the results.
    kind
        ``"zoo"``, ``"checkpoint"``, ``"hf"`` or ``"gguf"``.
    model
        The module whose attention is recorded (a causal LM: its decoder alone, no
        logits over the vocabulary).
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
        ``"msapod-gpt"`` for msapod's GPTs, else the config's ``model_type``.
    causal
        Whether the attention is causal (keys never after the query); for Hugging Face
        models it is measured on a probe pass.
    framework
        ``"msapod"`` or ``"transformers"``.
    notes
        Lines to show the user (e.g. bidirectional attention).
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


def transformers_source(
    model, tokenizer, *, spec: str, label: str, kind: str, sha256: str
) -> Source:
    """A transformers model as a :class:`Source`: its layers, heads, context and type read
    from its ``config``.

    Parameters
    ----------
    model, tokenizer, spec, label, kind, sha256
        As in :class:`Source`.

    Raises
    ------
    ValueError
        A config without ``num_hidden_layers`` or ``num_attention_heads``.
    """
    c = model.config
    n_layer = getattr(c, "num_hidden_layers", None)
    n_head = getattr(c, "num_attention_heads", None)
    if n_layer is None or n_head is None:
        raise ValueError(
            f"model type {c.model_type!r} has no num_hidden_layers / num_attention_heads; "
            "expected a transformer with self-attention"
        )
    return Source(
        spec=spec,
        label=label,
        kind=kind,
        model=model,
        tokenizer=tokenizer,
        sha256=sha256,
        n_layer=int(n_layer),
        n_head=int(n_head),
        max_len=getattr(c, "max_position_embeddings", None),
        model_type=str(c.model_type),
        framework="transformers",
    )


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers imported and run without chatter: its logging at error level, its
    progress bars off and Python's warnings ignored (e.g. tqdm's "IProgress not found" in
    a notebook without ipywidgets), all restored afterwards.

    Raises
    ------
    ImportError
        transformers is not installed.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from transformers.utils import logging as hf_logging

        level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            yield
        finally:
            hf_logging.set_verbosity(level)
            if bars:
                hf_logging.enable_progress_bar()


def load_source(spec: str, label: str | None = None) -> Source:
    """Load a zoo model, a checkpoint or a Hugging Face model as a :class:`Source`.

    Parameters
    ----------
    spec
        Zoo model name, checkpoint folder (``config.json`` + ``model.safetensors`` of
        :func:`msapod.models.train.train`), or Hugging Face folder or id (loaded as
        transformers loads it, with its default attention implementation; the ``hf``
        extra). An id without ``/`` is looked up in the local Hugging Face cache only;
        ``org/name`` may be downloaded.
    label
        Name of the model in the results (default: the zoo name, the folder's name
        (:func:`folder_label`), the id's last part).

    Raises
    ------
    UsageError
        Unknown source, missing extra, a model without a tokenizer.
    """
    from ...models import zoo

    if not isinstance(spec, str) or not spec:
        raise UsageError(f"SOURCE: expected a model name, folder or id, got {spec!r}")
    if spec in zoo.ZOO_CONFIGS:
        try:
            model = zoo.load(spec)
        except FileNotFoundError as err:
            raise UsageError(f"SOURCE {spec!r}: {err}") from None
        return _msapod_source(spec, label or spec, "zoo", model)
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
        close = difflib.get_close_matches(spec, list(zoo.ZOO_CONFIGS), n=3)
        hint = f"no such zoo model; did you mean {' or '.join(close)}?" if close else ""
        raise UsageError(_unknown(spec, hint))
    return _hf_source(spec, label, local_only=_hf_cached(spec))


def _msapod_source(spec: str, label: str, kind: str, model) -> Source:
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
    )


def _hf_source(spec: str, label: str | None, local_only: bool) -> Source:
    """A Hugging Face model (folder or id) as a :class:`Source`, as transformers loads it."""
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as err:
        raise UsageError(
            f"SOURCE {spec!r}: a Hugging Face model needs the hf extra ({err}); "
            'pip install "msapod[hf]"'
        ) from None
    load = {"local_files_only": local_only}
    with quiet_transformers():
        try:
            config = transformers.AutoConfig.from_pretrained(spec, **load)
        except (OSError, ValueError) as err:
            raise UsageError(
                _unknown(spec, f"not loadable as a Hugging Face model: {err}")
            ) from None
        try:
            model = transformers.AutoModel.from_pretrained(spec, **load)
        except (OSError, ValueError, TypeError, KeyError) as err:
            raise UsageError(
                f"SOURCE {spec!r}: Hugging Face model {config.model_type!r} could not be "
                f"loaded: {' '.join(str(err).split())[:300]}"
            ) from None
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(spec, **load)
        except Exception:  # noqa: BLE001 - any failure means: no usable tokenizer
            tokenizer = None
    model = model.float().eval()
    name = label or (folder_label(Path(spec)) if Path(spec).exists() else spec.split("/")[-1])
    try:
        source = transformers_source(
            model, tokenizer, spec=spec, label=name, kind="hf",
            sha256=state_sha256(model, with_config=True),
        )  # fmt: skip
    except ValueError as err:
        raise UsageError(f"SOURCE {spec!r}: {err}") from None
    if tokenizer is None:
        raise UsageError(
            f"SOURCE {spec!r}: no tokenizer found with the model; save the model's tokenizer "
            "in the same folder (tokenizer.save_pretrained(folder))"
        )
    return source


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

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # noqa: BLE001 - without huggingface_hub or with an invalid id: not cached
        return False


def _folder_source(spec: str, path: Path, label: str | None) -> Source:
    """The checkpoint (of :func:`msapod.models.train.train`) or Hugging Face model in ``path``."""
    from ...models.train import CONFIG, WEIGHTS, load_checkpoint

    meta = json_object(path / CONFIG)  # an msapod run's config names its weights
    if (path / WEIGHTS).is_file() and "train" in meta and "weights_sha256" in meta:
        try:
            model = load_checkpoint(path)
        except (ValueError, OSError) as err:
            raise UsageError(f"SOURCE {spec!r}: {err}") from None
        return _msapod_source(spec, label or folder_label(path), "checkpoint", model)
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


def probe(source: Source) -> None:
    """One forward pass over two short snippets: the model's attention must be recorded
    (:mod:`msapod.models.record`); for Hugging Face models it also measures causality
    (sets ``source.causal`` and adds a note when the model attends to later keys) and
    notes how the attention is recorded."""
    from ...models.extract import collect_attention
    from ...models.record import recording_path

    if source.framework == "msapod":
        return
    vocab = getattr(source.model.config, "vocab_size", None) or 2
    length = 8 if source.max_len is None else max(2, min(8, int(source.max_len)))
    ids = np.random.default_rng(0).integers(0, max(1, int(vocab)), size=(2, length))
    try:
        A = collect_attention(source.model, ids, layers=[1], progress=False, batch_size=2)
    except ValueError as err:
        raise UsageError(f"SOURCE {source.spec!r}: {err}") from None
    source.notes.append(f"{source.label}: attention recorded by {recording_path(source.model)}")
    source.causal = float(np.triu(A.values, 1).max()) == 0.0
    if not source.causal:
        source.notes.append(
            f"{source.label}: bidirectional attention (keys after the query get weight); "
            "fine: the lag profiles then run over negative lags (keys after the query) "
            "as well as positive ones"
        )


# ----------------------------------------------------------------------------- ensemble


#: What :func:`validation_text` is.
VAL_TEXT = "TinyShakespeare validation split (last 10 %)"


def validation_text() -> str:
    """The validation split of TinyShakespeare: the text after the corpus' training part
    (the zoo's snippets' text, the default text of every model's analysis)."""
    return load_text()[len(load_corpus().train) :]


def tokenise(tokenizer, text: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``(ids, spans)`` of ``text`` tokenised as a whole without special tokens: the
    token ids and, where the tokenizer reports them (fast tokenizers), the character span
    ``(start, end)`` of every token, else None.

    ``tokenizer``: a Hugging Face tokenizer, or any callable ``tokenizer(text,
    add_special_tokens=False[, return_offsets_mapping=True])`` returning a mapping with
    ``input_ids`` (and ``offset_mapping``).
    """
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except NotImplementedError:  # a slow tokenizer: no character offsets
        enc = tokenizer(text, add_special_tokens=False)
    ids = np.asarray(enc["input_ids"], dtype=np.int64)
    spans = enc.get("offset_mapping")
    if spans is not None:
        spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    if ids.ndim != 1 or (spans is not None and len(spans) != len(ids)):
        raise ValueError("tokenizer: expected one id and one (start, end) span per token")
    return ids, spans


def draw_ensemble(
    tokens: np.ndarray,
    *,
    n: int,
    length: int,
    seed: int,
    text: str,
    text_source: str,
    unit: str = "token",
    spans: np.ndarray | None = None,
) -> TokenEnsemble:
    """``n`` non-overlapping snippets of ``length`` tokens of the tokenised ``text``.

    :func:`msapod.models.data.ensemble_offsets` draws ``n`` of the text's aligned windows
    of ``length`` tokens with ``seed`` (sorted, deterministic).

    Raises
    ------
    ValueError
        Fewer than ``n`` windows of ``length`` tokens in the text (naming ``n`` and
        ``length``).
    """
    offsets = ensemble_offsets(len(tokens), n=n, length=length, seed=seed)
    starts = ends = None
    if spans is not None:
        starts, ends = spans[offsets, 0], spans[offsets + length - 1, 1]
    return TokenEnsemble(
        ids=tokens[offsets[:, None] + np.arange(length)],
        offsets=offsets.astype(np.int64),
        n_tokens=int(len(tokens)),
        n_chars=len(text),
        unit=unit,
        text_source=text_source,
        text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        char_start=starts,
        char_end=ends,
    )


def ensemble_record(ens: TokenEnsemble) -> tuple[dict, dict]:
    """The arrays and attrs stored with the fields to describe the ensemble ``ens``."""
    arrays = {"ids": ens.ids, "token_offset": ens.offsets}
    attrs = {
        "n_tokens_split": ens.n_tokens,
        "n_chars_split": ens.n_chars,
        "chars_per_token": ens.chars_per_token,
    }
    if ens.char_start is not None:
        arrays.update(char_start=ens.char_start, char_end=ens.char_end)
        attrs["ensemble_chars_per_token"] = ens.ensemble_chars_per_token
    return arrays, attrs


def _read_text(text: str | os.PathLike | None) -> tuple[str, str]:
    if text is None:
        return validation_text(), VAL_TEXT
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
    zoo's character vocabulary for msapod models and :func:`tokenise` otherwise;
    :func:`draw_ensemble` then draws the snippets with ``seed``. For the zoo's models and
    the default text this is exactly the book's ensemble
    (:func:`msapod.models.extract.ensemble_ids`); for SmolLM2, the SmolLM2 study's.

    Raises
    ------
    UsageError
        ``n``, ``length`` or ``seed`` out of range, a length beyond the model's context,
        a character outside the vocabulary, or a text shorter than ``n x length`` tokens.
    """
    n = check_int(n, "--n", MIN_N, UsageError)
    length = check_int(length, "--length", MIN_LENGTH, UsageError)
    seed = check_int(seed, "--seed", 0, UsageError)
    if source.max_len is not None and length > source.max_len:
        raise UsageError(
            f"--length: {length} tokens exceed the context of {source.label} "
            f"({source.max_len} tokens)"
        )
    body, where = _read_text(text)
    spans, unit = None, "character"
    if source.tokenizer is not None:
        tokens, spans = tokenise(source.tokenizer, body)
        unit = "token"
    else:
        try:
            tokens = load_corpus().encode(body).astype(np.int64)
        except ValueError as err:
            raise UsageError(f"--text: {err} of {source.label} (the zoo's 65 characters)") from None
    slots = len(tokens) // length
    if slots < n:
        raise UsageError(
            f"--text: {where} has {len(tokens)} {unit}s, room for {slots} non-overlapping "
            f"snippets of {length}; N x length = {n} x {length} = {n * length} needed: "
            "lower --n or --length, or give a longer --text"
        )
    return draw_ensemble(
        tokens, n=n, length=length, seed=seed, text=body, text_source=where, unit=unit,
        spans=spans,
    )  # fmt: skip


# ----------------------------------------------------------------------------- fields


def field_store(kind: str, label: str, key: str, cache_dir: str | os.PathLike | None) -> FieldFile:
    """The field file ``<cache>/<kind>/<label>-<key[:16]>.nc`` keyed by ``key``."""
    return FieldFile(cache_root(cache_dir) / kind / f"{label}-{key[:16]}.nc", key)


def batch_plan(n: int, per_snippet: int, batch_size: int | None = None) -> list[tuple[int, int]]:
    """``[start, stop)`` of the batches of ``n`` snippets: ``batch_size`` snippets each, or
    as many as keep ``per_snippet`` bytes per snippet within :data:`BATCH_BUDGET`, every
    batch of at least two snippets, the batches as equal as can be."""
    size = batch_size if batch_size is not None else BATCH_BUDGET // max(1, per_snippet)
    size = int(min(n, max(2, size)))
    count = max(1, min(-(-n // size), n // 2))
    edges = np.linspace(0, n, count + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


def snippet_bytes(n_head: int, length: int, tau_max: int | None = None) -> int:
    """Bytes of one layer of one snippet's probabilities while it is recorded (every
    head, float32, every key or the lags ``0..tau_max``): what :func:`batch_plan` budgets."""
    return n_head * length * (length if tau_max is None else tau_max + 1) * 4


def record_ensemble(
    store: FieldFile,
    source: Source,
    ens: TokenEnsemble,
    layers: Sequence[int],
    *,
    average_heads: bool,
    tau_max: int | None = None,
    batch_size: int | None = None,
    progress: bool = True,
) -> None:
    """Record the fields of ``source`` over ``ens`` into ``store`` (resuming a partial
    file): one forward pass per batch of :func:`batch_plan`, each layer written as soon
    as it is computed, the ensemble (:func:`ensemble_record`) stored with the fields."""
    n, length = ens.ids.shape
    record_fields(
        store,
        source.model,
        ens.ids,
        layers,
        batch_plan(n, snippet_bytes(source.n_head, length, tau_max), batch_size),
        average_heads=average_heads,
        tau_max=tau_max,
        coords={"layer": np.asarray(layers, dtype=np.int64)},
        ensemble=lambda: ensemble_record(ens),
        progress=progress,
        desc=f"{source.label}: attention",
    )


# ----------------------------------------------------------------------------- analysis


def analyse_field(
    F: xr.DataArray,
    options: dict,
    *,
    windows: Sequence[str] | None = None,
    scale_errors: bool = True,
    mode_profiles: int = N_MODE_PROFILES,
) -> xr.Dataset:
    """:func:`msapod.analyze` of one field set with jackknife errors and mode profiles.

    Parameters
    ----------
    F
        ``(snapshot, query, key)`` attention fields of one layer (and head), or their lag
        band ``(snapshot, query, lag)``.
    options
        Keyword arguments of :func:`msapod.analyze` (checked there).
    windows
        The windows whose T_spec and H* get jackknife errors (default: all).
    scale_errors
        Also the jackknife of the scalogram: ``scale_centroid_se``, ``energy_se`` and
        ``scalogram_energy`` (:func:`~msapod.studies.measure.uncertainty.scale_jackknife`).
    mode_profiles
        Leading modes whose normalised lag energy ``rho_k(tau)`` is kept as
        ``mode_lag_energy(window, mode, lag)`` (0: none).

    Returns
    -------
    xarray.Dataset
        The variables of :func:`msapod.analyze` less :data:`DROPPED`, ``mean`` as
        float32; ``T_spec_se(window)``, ``H_star_se(window, eps)`` (of the integer H*) and
        ``H_star_frac_se(window, eps)`` (of its interpolated form,
        :func:`~msapod.studies.measure.uncertainty.fractional_rank`) of the chosen
        windows (:func:`~msapod.studies.measure.uncertainty.pod_jackknife`); the others
        as ``scale_errors`` and ``mode_profiles`` say.
    """
    ana = analyze(F, **options)
    gram = ana["gram"] if windows is None else ana["gram"].sel(window=list(windows))
    pj = pod_jackknife(
        gram,
        eps=ana["eps"].values,
        criterion=ana.attrs["criterion"],
        k_min=int(ana.attrs["fit_k_min"]),
        k_max=int(ana.attrs["fit_k_max"]),
    )
    out = ana.drop_vars([v for v in DROPPED if v in ana])
    out["mean"] = out["mean"].astype(np.float32)
    for name in ("T_spec_se", "H_star_se", "H_star_frac_se"):
        out[name] = _jackknife_se(pj[name], name)
    if mode_profiles:
        rho = lag_energy(ana["modes"].isel(mode=slice(0, mode_profiles))).astype(np.float32)
        out["mode_lag_energy"] = rho.assign_attrs(
            long_name="normalised lag energy rho_k(tau) of the POD modes (sums to 1 over lag)"
        )
    if scale_errors:
        pick = {k: options.get(k, ANALYZE_DEFAULTS[k]) for k in ("scales", "omega0", "field")}
        sj = scale_jackknife(F.astype(np.float64), **pick)
        for name in ("scale_centroid_se", "energy_se"):
            out[name] = _jackknife_se(xr.DataArray(float(sj[name])), name)
        out["scalogram_energy"] = xr.DataArray(float(sj["energy"]))
    return out


def _jackknife_se(se: xr.DataArray, name: str) -> xr.DataArray:
    return se.assign_attrs(
        long_name=f"leave-one-snapshot-out jackknife standard error of {name[:-3]}"
    )


def analyse_layer(
    values: np.ndarray, layer: int, analyse: Callable[[xr.DataArray], xr.Dataset]
) -> xr.Dataset:
    """``analyse`` of one layer's fields ``values ([head,] snapshot, query, key|lag)`` (a
    lag band where the last axis is shorter than the queries), per head where heads are
    kept (one field set in memory at a time), with a ``layer`` dim."""
    n, length, width = values.shape[-3:]
    last = "key" if width == length else "lag"
    dims = ("snapshot", "query", last)
    coords = {"snapshot": np.arange(n), "query": np.arange(length), last: np.arange(width)}
    if values.ndim == 3:
        ds = analyse(xr.DataArray(values, dims=dims, coords=coords))
    else:
        parts = [analyse(xr.DataArray(v, dims=dims, coords=coords)) for v in values]
        ds = xr.concat(
            parts,
            dim=xr.DataArray(np.arange(1, len(parts) + 1), dims="head", name="head"),
            coords="minimal",
            compat="override",
            combine_attrs="override",
        )
    return text_coords(ds).expand_dims(layer=[layer])


def layer_analyses(
    store: FieldFile,
    record: Callable[[], None],
    layers: Sequence[int],
    analyse: Callable[[np.ndarray, int], xr.Dataset],
    *,
    kind: str,
    label: str,
    parts: dict,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    desc: str = "analysis",
) -> xr.Dataset:
    """Each layer's ``analyse(values, layer)``, cached on its own (``kind``, file
    ``<label>-layer<layer>``, key ``parts`` and the layer), combined along ``layer``
    without the cache's attrs; the fields are recorded (``record()``) only when a layer is
    computed and ``store`` is not complete."""
    out = []
    bar = tqdm(total=len(layers), desc=desc, unit="layer", disable=not progress, mininterval=2)
    with bar:
        for k, layer in enumerate(layers):

            def compute(k=k, layer=layer) -> xr.Dataset:
                if not store.complete():
                    bar.clear()
                    record()
                return analyse(store.layer(k), layer)

            name = f"{label}-layer{layer:03d}"
            out.append(
                cached_dataset(kind, name, {**parts, "layer": layer}, compute, cache_dir=cache_dir)
            )
            bar.update(1)
    ds = concat_layers(out)
    ds.attrs = {k: v for k, v in ds.attrs.items() if not k.startswith(("cache_", "values_"))}
    return ds
