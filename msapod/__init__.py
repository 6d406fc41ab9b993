"""msapod: multiscale POD of transformer attention fields.

Attention fields are ``xarray.DataArray`` objects with dims ``(..., "snapshot", "query",
"key")``. The method (PAPER.md): Reynolds split -> Morlet scalogram along the lag ->
Gaussian lag windows at the dominant scales -> POD per scale -> T_spec and H*.
"""

from ._io import package_version
from .decomposition import basis_error, lag_gram, pod, reconstruct, reconstruction_error
from .fields import check_field, from_lag, is_causal, reynolds, to_lag
from .pipeline import analyze
from .resampling import bootstrap_spectrum, jackknife_se
from .spectra import effective_rank, spectral_concentration
from .wavelets import (
    coherency,
    cwt,
    dominant_scales,
    fourier_period,
    lag_moments,
    log_scales,
    min_valid_scale,
    morlet,
    scale_centroid,
    scalogram,
    wavelet_matrix,
)
from .windows import apply_window, lag_window, window_parameters

__version__ = package_version()


#: The non-core modules as lazy attributes (``msapod.zoo.load``), loaded on first use so
#: that ``import msapod`` never imports torch.
_LAZY_MODULES = {
    "zoo": "models.zoo",
    "model": "models.gpt",
    "train": "models.train",
    "data": "models.data",
    "extract": "models.extract",
    "cache": "studies.store.cache",
    "uncertainty": "studies.measure.uncertainty",
    "convergence": "studies.measure.convergence",
    "prune": "studies.measure.prune",
    "llm": "studies.measure.llm",
    "render": "studies.verdict.render",
    "scorecard": "studies.verdict.scorecard",
    "reproduce": "studies.reproduce",
    "plots": "plots",
    "models": "models",
    "studies": "studies",
    "backends": "backends",
}


def __getattr__(name: str):
    import importlib

    if name in ("collect_attention", "write_attention"):
        return getattr(importlib.import_module(f"{__name__}.models.extract"), name)
    if name in _LAZY_MODULES:
        return importlib.import_module(f"{__name__}.{_LAZY_MODULES[name]}")
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
    "min_valid_scale",
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
    "write_attention",
]
