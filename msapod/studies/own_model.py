"""Analyse your own model: ``msapod analyze SOURCE`` as a function.

:func:`resolve_source` loads a SOURCE; :func:`analyze_sources` takes each along the path
of :mod:`msapod.studies.measure.model_analysis` (:func:`analyze_source`), stacks them
along ``model`` and decides the paper's claims they can test (:func:`evaluate_claims`).
The module imports no torch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from .._io import atomic_path, check_int, package_version
from .._labels import check_tau_max
from ..models.data import N_SNAPSHOTS, SNIPPET_LENGTH, check_layers
from ..pipeline import ANALYZE_DEFAULTS, check_options
from ..wavelets import DEFAULT_MIN_SCALE, DEFAULT_NUM_SCALES, log_scales
from .measure import llm
from .measure.evidence import EVIDENCE_FORMAT
from .measure.model_analysis import (
    GGUF_ALIASES,
    Source,
    UsageError,
    analyse_field,
    analyse_layer,
    field_store,
    layer_analyses,
    load_source,
    make_ensemble,
    probe,
    record_ensemble,
)
from .measure.uncertainty import t_quantile
from .store.cache import FieldFile, TokenEnsemble, cached_dataset, key_hash, netcdf_safe
from .verdict.check import check_claims
from .verdict.curve import source_hash
from .verdict.inference import log_interval

__all__ = [
    "ANALYZE_OPTIONS",
    "DEFAULTS",
    "GGUF_ALIASES",
    "GRID_OPTIONS",
    "Source",
    "UsageError",
    "analyze_source",
    "analyze_sources",
    "evaluate_claims",
    "make_ensemble",
    "probe",
    "resolve_source",
    "save_dataset",
]

#: Layout of the cached fields and per-layer analyses; part of every key.
OWN_FORMAT = 4
#: Confidence level of the stored intervals.
LEVEL = 0.95
#: The options of :func:`msapod.analyze` an analysis takes (the others keep analyze's
#: defaults; the scales come from :data:`GRID_OPTIONS`, the lag band from ``tau_max``).
ANALYZE_OPTIONS = ("omega0", "max_peaks", "centre", "width", "field", "eps", "n_modes")
#: The options of the scale grid, None for analyze's default grid
#: (:data:`~msapod.wavelets.DEFAULT_MIN_SCALE` to half the lags in
#: :data:`~msapod.wavelets.DEFAULT_NUM_SCALES` steps).
GRID_OPTIONS = ("scale_min", "scale_max", "n_scales")
#: Every option of an analysis with its default: the grid's, and analyze's read from its
#: signature (:data:`msapod.pipeline.ANALYZE_DEFAULTS`).
DEFAULTS = MappingProxyType(
    {**dict.fromkeys(GRID_OPTIONS), **{k: ANALYZE_DEFAULTS[k] for k in ANALYZE_OPTIONS}}
)


# ----------------------------------------------------------------------------- sources


def resolve_source(spec: str, label: str | None = None) -> Source:
    """Load the model a SOURCE names.

    Parameters
    ----------
    spec
        A name in :data:`GGUF_ALIASES` or a ``.gguf`` file (SmolLM2,
        :func:`msapod.studies.measure.llm.smollm2_source`), else as in
        :func:`~msapod.studies.measure.model_analysis.load_source`.
    label
        As in :func:`~msapod.studies.measure.model_analysis.load_source`.

    Raises
    ------
    UsageError
        Unknown source, missing extra, a model without a tokenizer.
    """
    if isinstance(spec, str) and (
        spec.lower() in {a.lower() for a in GGUF_ALIASES} or spec.endswith(".gguf")
    ):
        return _gguf_source(spec, label)
    return load_source(spec, label)


def _gguf_source(spec: str, label: str | None) -> Source:
    try:
        path = Path(spec).expanduser() if spec.endswith(".gguf") else None
        return replace(llm.smollm2_source(label, path), spec=spec)
    except (FileNotFoundError, ImportError, ValueError) as err:
        raise UsageError(f"SOURCE {spec!r}: {err}") from None


# ----------------------------------------------------------------------------- analysis


def _analysis_params(n: int | None = None, **options) -> dict:
    """Every option of :data:`DEFAULTS`, given or default (JSON-safe); analyze's checked
    by :func:`msapod.pipeline.check_options` (N = ``n``), the grid's by :func:`_scales`."""
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unexpected options {sorted(unknown)}; expected some of {list(DEFAULTS)}")
    options = {**DEFAULTS, **options}
    grid = {k: options.pop(k) for k in GRID_OPTIONS}
    with _flag_errors():
        checked = check_options(n, **options)
    return {**grid, **{k: checked[k] for k in options}}


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


def _scales(params: dict, n_lag: int) -> np.ndarray | None:
    """The scale grid over ``n_lag`` lags, or None for :func:`msapod.analyze`'s default."""
    if all(params[k] is None for k in GRID_OPTIONS):
        return None
    smin = DEFAULT_MIN_SCALE if params["scale_min"] is None else params["scale_min"]
    smax = n_lag / 2 if params["scale_max"] is None else params["scale_max"]
    num = DEFAULT_NUM_SCALES if params["n_scales"] is None else params["n_scales"]
    num = check_int(num, "--n-scales", 2, UsageError)
    if not 1 <= smin < smax <= n_lag / 2:
        raise UsageError(
            f"--scale-min, --scale-max: expected 1 <= min < max <= {n_lag / 2:g} (half the "
            f"{n_lag} lags), got {smin:g}, {smax:g}"
        )
    return log_scales(n_lag, smin, smax, num)


def _with_intervals(out: xr.Dataset, t: float) -> xr.Dataset:
    """``out`` with the 95 % intervals (quantile ``t``) of the scale centroid, T_spec and H*."""
    for name, se in (
        ("scale_centroid", "scale_centroid_se"),
        ("T_spec", "T_spec_se"),
        ("H_star", "H_star_frac_se"),
    ):
        out[f"{name}_lower"], out[f"{name}_upper"] = log_interval(out[name], out[se], t)
    out.attrs["interval_level"] = LEVEL
    out.attrs["interval_t"] = t
    out.attrs["interval_rule"] = (
        "value x exp(+- t_{0.975, N-1} x jackknife SE / value), the log scale of a positive "
        "quantity (H*: the SE of the interpolated rank)"
    )
    return out


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def analyze_source(
    source: Source,
    ens: TokenEnsemble,
    *,
    layers: Sequence[int] | None = None,
    average_heads: bool = True,
    tau_max: int | None = None,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    **options,
) -> xr.Dataset:
    """Fields (cached), then the analysis layer by layer (each layer cached) of one source.

    Parameters are those of :func:`analyze_sources`; ``options`` those of
    :data:`DEFAULTS`.

    Returns
    -------
    xarray.Dataset
        Per ``layer`` (and ``head`` if kept) the variables of
        :func:`~msapod.studies.measure.model_analysis.analyse_field` (every window, the
        scalogram's jackknife, three mode lag profiles) with the 95 % intervals
        ``*_lower``/``*_upper`` of the scale centroid, T_spec and H*; attrs: the source,
        its sha256, the text, its sha256, the ensemble and the keys.
    """
    n, length = ens.ids.shape
    params = _analysis_params(n, **options)
    try:
        layers = check_layers(layers, source.n_layer)
    except ValueError as err:
        reason = f"{str(err).removeprefix('layers: ')} ({source.label} has {source.n_layer} layers)"
        raise UsageError(f"--layers: {reason}") from None
    tau_max = _band(tau_max, source, length)
    n_lag = length if source.causal else 2 * length - 1
    analysis = {
        "scales": _scales(params, n_lag if tau_max is None else tau_max + 1),
        **{k: params[k] for k in ANALYZE_OPTIONS},
    }
    fparts = _fields_parts(source, ens, layers, average_heads, tau_max)
    fkey = key_hash(fparts)
    label = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', source.label)}-n{n}-L{length}"
    store = field_store("analyze-fields", label, fkey, cache_dir)
    t = t_quantile(n - 1, LEVEL)

    def record() -> None:
        record_ensemble(
            store, source, ens, layers, average_heads=average_heads, tau_max=tau_max,
            batch_size=batch_size, progress=progress,
        )  # fmt: skip

    def analyse(values: np.ndarray, layer: int) -> xr.Dataset:
        one = analyse_layer(values, layer, lambda F: analyse_field(F, analysis))
        return _with_intervals(one, t)

    ds = layer_analyses(
        store, record, layers, analyse, kind="analyze-layers", label=label,
        parts={"fields_key": fkey, "params": _json(params), "own_format": OWN_FORMAT},
        cache_dir=cache_dir, progress=progress, desc=f"{source.label}: analysis",
    )  # fmt: skip
    ds.attrs.update(
        average_heads=fparts["average_heads"],
        tau_max=fparts["tau_max"],
        **_provenance(source, ens),
        n_tokens_text=ens.n_tokens,
        fields_key=fkey,
        fields_file=str(store.path),
    )
    ds["offset"] = ("snapshot", ens.offsets)
    return ds


def _band(tau_max, source: Source, length: int) -> int | None:
    """The checked lag band of ``--tau-max`` (causal attention only)."""
    with _flag_errors():
        tau_max = check_tau_max(tau_max, length)
    if tau_max is not None and not source.causal:
        raise UsageError(
            f"--tau-max: the lag band keeps lags 0..tau_max of causal attention; "
            f"{source.label} is bidirectional (keys after the query get weight)"
        )
    return tau_max


def _fields_parts(source: Source, ens: TokenEnsemble, layers, average_heads, tau_max) -> dict:
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
        "tau_max": "none" if tau_max is None else int(tau_max),
        "msapod_version": package_version(),
        "own_format": OWN_FORMAT,
    }


def _provenance(source: Source, ens: TokenEnsemble) -> dict:
    """The source and text of one model's numbers (coords on ``model`` of the stack)."""
    return {
        "model_type": source.model_type,
        "source": source.spec,
        "source_kind": source.kind,
        "source_sha256": source.sha256,
        "framework": source.framework,
        "causal": int(source.causal),
        "text_source": ens.text_source,
        "text_sha256": ens.text_sha256,
        "ids_sha256": ens.ids_sha256,
        "lag_unit": ens.unit,
        "chars_per_token": ens.chars_per_token,
        "n_layer_model": source.n_layer,
        "n_head": source.n_head,
    }


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
    tau_max: int | None = None,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
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
    tau_max
        Record and analyse only the lags ``tau = query - key`` in ``0..tau_max`` of
        causal attention (the lag band of :func:`msapod.analyze`): memory and the Gram's
        cost grow as ``N L tau_max`` instead of ``N L^2``; default None, every lag.
    batch_size
        Snippets per forward pass (default: as many as keep one layer of one batch of
        attention within :data:`~msapod.studies.measure.model_analysis.BATCH_BUDGET`).
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
        The scale grid's and :func:`msapod.analyze`'s options, by name (:data:`DEFAULTS`
        lists them with their defaults).

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
    params = _analysis_params(n, **options)
    if batch_size is not None:
        batch_size = check_int(batch_size, "--batch-size", 2, UsageError)
    log = log or (lambda line: None)
    results = []
    for src in _resolve_all(sources, labels, log):
        ens = make_ensemble(src, text, n=n, length=length, seed=seed)
        ds = analyze_source(
            src, ens, layers=layers, average_heads=average_heads, tau_max=tau_max,
            batch_size=batch_size, cache_dir=cache_dir, progress=progress, **params,
        )  # fmt: skip
        results.append((src, ens, ds))
    ensemble = {
        "n_snapshots": n,
        "length": length,
        "seed": seed,
        "average_heads": int(average_heads),
        "tau_max": results[0][2].attrs["tau_max"],
    }
    out = _stack(results, params, ensemble)
    if claims:
        card = evaluate_claims(results, cache_dir=cache_dir, progress=progress, log=log)
        if card is not None:
            out = out.merge(card)
            out.attrs.update(card.attrs)
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


# ----------------------------------------------------------------------------- claims


#: Columns of the claims table kept in the dataset (as ``claim_<column>(claim)``).
CLAIM_COLUMNS = ("paper", "verdict", "code", "measured", "reason", "unit")


def evaluate_claims(
    results: Sequence[tuple[Source, TokenEnsemble, xr.Dataset]],
    *,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> xr.Dataset | None:
    """The paper's field-based claims on the analysed models, by the book's rules.

    :func:`msapod.studies.check_claims` on the head-averaged fields of every model that is
    causal and analysed at all its layers, all such models together. Cached by the
    fields' keys.

    Parameters
    ----------
    results
        ``(source, ensemble, dataset)`` of each model (:func:`analyze_source`).
    cache_dir, progress, log
        As in :func:`analyze_sources`.

    Returns
    -------
    xarray.Dataset or None
        ``claim_verdict(claim)``, ``claim_measured``, ... (:data:`CLAIM_COLUMNS`), attrs
        ``claims_models`` and ``claims_rules``; None (with a note to ``log``) when no
        model qualifies or the claims cannot be decided.
    """
    log = log or (lambda line: None)
    ok = _claim_models(results, log)
    if not ok:
        return None
    labels = [src.label for src, _, _ in ok]
    parts = {
        "fields_keys": [ds.attrs["fields_key"] for _, _, ds in ok],
        "labels": labels,
        "architectures": [src.architecture for src, _, _ in ok],
        "own_format": OWN_FORMAT,
        "evidence_format": EVIDENCE_FORMAT,  # the claims decided again when evidence or
        "rules": source_hash(),  # the rules change
    }

    def compute() -> xr.Dataset:
        card = check_claims(_head_mean_fields(ok, progress), progress=progress)
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
    out.attrs = {
        "claims_models": claims.attrs["claims_models"],
        "claims_rules": "msapod.studies.check_claims: the book's default reading of the "
        "tests of msapod.studies.verdict (the scorecard's)",
    }
    return out


def _claim_models(results, log) -> list:
    """The ``(source, ensemble, dataset)`` the claims apply to: causal, at least three
    layers, every layer analysed, every lag (each other one named in ``log``)."""
    ok = []
    for src, ens, ds in results:
        if not src.causal:
            log(f"{src.label}: the paper's claims are about causal attention; not evaluated")
        elif ds.attrs["tau_max"] != "none":
            log(
                f"{src.label}: the paper's claims are decided on whole fields; run without "
                "--tau-max to evaluate them"
            )
        elif src.n_layer < 3:
            log(
                f"{src.label}: the paper's claims compare early layers (1-2) with later "
                f"ones; {src.n_layer} layers are too few, not evaluated"
            )
        elif sorted(int(v) for v in ds["layer"].values) != list(range(1, src.n_layer + 1)):
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
            record_ensemble(store, src, ens, layers, average_heads=heads, progress=progress)
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


# ----------------------------------------------------------------------------- dataset


def _stack(results, params: dict, ensemble: dict) -> xr.Dataset:
    """The per-source datasets along ``model``, with the provenance as coords and attrs."""
    labels = [src.label for src, _, _ in results]
    ds = xr.concat(
        [ds for _, _, ds in results],
        dim=xr.DataArray(labels, dims="model", name="model"),
        coords="minimal",
        compat="override",
        join="outer",
        combine_attrs="drop",
    )
    origins = [_provenance(src, ens) for src, ens, _ in results]
    coords = {"architecture": ("model", [src.architecture for src, _, _ in results])}
    coords.update({k: ("model", [o[k] for o in origins]) for k in origins[0]})
    ds = ds.assign_coords(coords)
    first = results[0][2].attrs
    ds.attrs = {
        "msapod_step": "analyze (msapod analyze)",
        "msapod_version": package_version(),
        "models": ", ".join(labels),
        **ensemble,
        "params": _json(params),
        **{f"param_{k}": v for k, v in _used_params(results, params).items()},
        "sources": _json([{"label": la, **o} for la, o in zip(labels, origins, strict=True)]),
        **{k: first[k] for k in _SHARED_ATTRS if k in first},
        "description": (
            "msapod.analyze per layer of the attention fields of each model over an "
            "ensemble of non-overlapping text snippets, with leave-one-snapshot-out "
            "jackknife standard errors and 95 % intervals; lags and scales in the unit "
            "of lag_unit; param_*: the value each option took, params: the options as "
            "given (null: the default)"
        ),
    }
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
    """``params`` with each default of :data:`_TAKEN` read from the results (one value, or
    ``"<model>: <value>, ..."`` where the models' lags make them differ)."""
    used = dict(params)
    for key, taken in _TAKEN.items():
        if params[key] is None:
            values = [taken(ds) for _, _, ds in results]
            each = [f"{src.label}: {v:g}" for (src, _, _), v in zip(results, values, strict=True)]
            used[key] = values[0] if len(set(values)) == 1 else ", ".join(each)
    return used


#: How each option left to the default is read from a result.
_TAKEN = {
    "scale_min": lambda ds: float(ds["scale"].min()),
    "scale_max": lambda ds: float(ds["scale"].max()),
    "n_scales": lambda ds: int(ds.sizes["scale"]),
    "n_modes": lambda ds: int(ds.attrs["n_modes"]),
}


def save_dataset(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write the dataset as netCDF (h5netcdf), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        netcdf_safe(ds).to_netcdf(tmp, engine="h5netcdf")
    return path
