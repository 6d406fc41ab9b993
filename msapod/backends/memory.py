"""In-memory (numpy) kernels of the method: the eager side of :mod:`msapod.backends`."""

from __future__ import annotations

import numpy as np

__all__ = ["eig_desc", "gather_last", "lag_gram", "mean_sq_residual"]


def gather_last(x: np.ndarray, idx: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``out[..., i, m] = x[..., i, idx[i, m]]`` where ``valid``, else 0."""
    idx_b = np.broadcast_to(idx, x.shape[:-2] + idx.shape)
    out = np.take_along_axis(x, idx_b, axis=-1)
    out *= valid
    return out


def lag_gram(R: np.ndarray) -> np.ndarray:
    """Per-lag Gram tensor of one ensemble R (N, query, lag) -> (lag, N, N), float64."""
    n, _, n_lag = R.shape
    G = np.empty((n_lag, n, n))
    nz = (R != 0).any(axis=0)  # (query, lag): rows that hold any non-zero entry
    for t in range(n_lag):
        rows = np.flatnonzero(nz[:, t])
        if rows.size == 0:
            G[t] = 0.0
            continue
        # copy only the band of rows that can be non-zero at this lag (float64 products)
        x = np.ascontiguousarray(R[:, rows[0] : rows[-1] + 1, t], dtype=np.float64)
        G[t] = x @ x.T
    return G


def eig_desc(K: np.ndarray):
    """Eigenpairs of a symmetric PSD matrix, descending, negatives (rounding) clipped."""
    lam, V = np.linalg.eigh(K)
    lam, V = lam[::-1], V[:, ::-1]
    return np.clip(lam, 0.0, None), V


def mean_sq_residual(U: np.ndarray, C: np.ndarray, Phi: np.ndarray) -> float:
    """``(1/N) sum_s ||U_s - C_s Phi||^2``, the residual formed explicitly."""
    R = U - C @ Phi
    return float(np.einsum("sp,sp->", R, R) / U.shape[0])
