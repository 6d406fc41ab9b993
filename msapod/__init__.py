"""msapod: multiscale POD of transformer attention fields.

Attention fields are ``xarray.DataArray`` objects with dims ``(..., "snapshot", "query",
"key")``. The method (PAPER.md): Reynolds split -> Morlet scalogram along the lag ->
Gaussian lag windows at the dominant scales -> POD per scale -> T_spec and H*.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .analyze import analyze
from .fields import check_field, from_lag, is_causal, reynolds, to_lag
from .pod import basis_error, lag_gram, pod, reconstruct, reconstruction_error
from .scalogram import (
    coherency,
    cwt,
    dominant_scales,
    fourier_period,
    lag_moments,
    log_scales,
    morlet,
    scale_centroid,
    scalogram,
    wavelet_matrix,
)
from .spectra import bootstrap_spectrum, effective_rank, jackknife_se, spectral_concentration
from .windows import apply_window, lag_window, window_parameters

try:
    __version__ = _version("msapod")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.1.0"


def __getattr__(name: str):
    # torch-dependent parts load lazily, so the analysis API imports without torch
    import importlib

    if name in ("collect_attention", "write_attention_zarr"):
        return getattr(importlib.import_module(f"{__name__}.extract"), name)
    lazy = ("zoo", "cache", "extract", "model", "train", "data", "prune", "llm", "reproduce")
    if name in lazy + ("scorecard", "convergence", "uncertainty"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'msapod' has no attribute {name!r}")


__all__ = [
    "__version__",
    "analyze",
    "apply_window",
    "basis_error",
    "bootstrap_spectrum",
    "check_field",
    "coherency",
    "collect_attention",
    "cwt",
    "dominant_scales",
    "effective_rank",
    "fourier_period",
    "from_lag",
    "is_causal",
    "jackknife_se",
    "lag_gram",
    "lag_moments",
    "lag_window",
    "log_scales",
    "morlet",
    "pod",
    "reconstruct",
    "reconstruction_error",
    "reynolds",
    "scale_centroid",
    "scalogram",
    "spectral_concentration",
    "to_lag",
    "wavelet_matrix",
    "window_parameters",
    "write_attention_zarr",
]
