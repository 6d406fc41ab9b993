"""In-memory (numpy) kernels of the method: the eager side of :mod:`msapod.backends`.

Every kernel here has a namesake in :mod:`.chunked` with the same signature; the method
modules pick one with :func:`msapod.backends.kernels` and never test the array type
themselves. Kernels take and return bare arrays; the method modules label them.
"""

from __future__ import annotations

import numpy as np

from .._labels import raise_values
from ..lagstats import LagStats, gather_last, one_blas_thread

__all__ = [
    "CHECKS_IN_PASS",
    "LagStats",
    "check_values",
    "coherency_sums",
    "cwt",
    "ensemble_mean",
    "gather",
    "is_causal",
    "lag_moments",
    "residual",
]

#: Whether values are checked in the passes that reduce them (so the entry checks skip them).
CHECKS_IN_PASS = False


def check_values(
    x: np.ndarray, name: str, *, stochastic: bool, atol: float, band: bool = False
) -> None:
    """The value checks of :func:`msapod.check_field` (finite; rows summing to one over
    the last axis, the keys, or at most one over a lag band's lags), in two passes over
    ``x``: the row sums and the minimum."""
    # a sum is finite iff no NaN/inf entry (barring overflow, which the full check catches)
    sums = x.sum(-1, dtype=np.float64) if stochastic else x.sum(dtype=np.float64)
    if not np.isfinite(sums).all() and not np.isfinite(x).all():
        raise_values(name, {"bad": (~np.isfinite(x)).sum()}, False, atol)
    if stochastic and x.size:
        dev = sums - 1.0
        neg = bool(x.min() < -atol)
        worst = [dev.min(), dev.max()]
        raise_values(name, {"bad": 0, "neg": neg, "worst": worst}, True, atol, band)


def is_causal(x: np.ndarray, qpos: np.ndarray, kpos: np.ndarray, atol: float = 0.0) -> bool:
    """Whether every entry of ``x (..., query, key)`` with key after query is zero
    (within ``atol``)."""
    upper = kpos[None, :] > qpos[:, None]
    if not upper.any():
        return True
    return bool((np.abs(x[..., upper]) <= atol).all())


def ensemble_mean(
    x: np.ndarray, name: str, *, stochastic: bool = False, atol: float = 1e-3
) -> np.ndarray:
    """The mean of ``x (N, ..., query, key)`` over its first axis, float64 (the values
    are checked before, in memory: ``name``, ``stochastic`` and ``atol`` are for the
    chunked namesake, which checks them in this pass)."""
    return x.mean(0, dtype=np.float64)


gather = gather_last  # the name the dispatch uses (see msapod.backends.kernels)


def lag_moments(x: np.ndarray, n_avg: int) -> np.ndarray:
    """``C = <r r^T>`` of a lag field ``x (*lead, *averaged, lag)``, the mean over its
    ``n_avg`` axes before the lag: ``(*lead, lag, lag)``, float64."""
    lead = x.shape[: x.ndim - 1 - n_avg]
    n_lag = x.shape[-1]
    X = x.reshape((int(np.prod(lead, dtype=np.int64)), -1, n_lag))
    C = np.empty((X.shape[0], n_lag, n_lag))
    for b in range(X.shape[0]):
        xb = np.asarray(X[b], dtype=np.float64)
        C[b] = (xb.T @ xb) / xb.shape[0]
    return C.reshape(lead + (n_lag, n_lag))


def cwt(x: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    """``W[..., a, b] = sum_tau Phi[a, b, tau] x[..., tau]`` (complex)."""
    X = np.asarray(x, dtype=np.float64).reshape(-1, x.shape[-1])
    W = np.einsum("sbt,nt->nsb", Phi, X, optimize=True)
    return W.reshape(x.shape[:-1] + W.shape[1:])


def coherency_sums(x: np.ndarray, Bs: list) -> np.ndarray:
    """Per-scale ``sum_s Y_s Y_s^H`` (scale, query, query), ``Y_s = r_s B_k``, of one lag
    field ``x (N, query, lag)``."""
    q = x.shape[1]
    out = np.empty((len(Bs), q, q), dtype=np.complex128)
    with one_blas_thread():  # many small products: threads contend
        for k, B in enumerate(Bs):
            G = np.zeros((q, q), dtype=np.complex128)
            for xs in x:
                Y = np.asarray(xs, dtype=np.float64) @ B  # (query, r)
                G += Y @ Y.conj().T
            out[k] = G
    return out


def residual(u: np.ndarray, Bm: np.ndarray, C: np.ndarray | None) -> float:
    """``(1/N) sum_s ||u_s - c_s Bm||^2`` of ``u (N, query, key)``, the residual formed
    explicitly (``C`` None: project onto the rows of Bm)."""
    U = u.reshape(u.shape[0], -1).astype(np.float64)
    R = U - (U @ Bm.T if C is None else C) @ Bm
    return float(np.einsum("sp,sp->", R, R) / U.shape[0])
