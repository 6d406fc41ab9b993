"""In-memory (numpy) kernels of the method: the eager side of :mod:`msapod.backends`.

Every kernel here has a namesake in :mod:`.chunked` with the same signature; the method
modules pick one with :func:`msapod.backends.kernels` and never test the array type
themselves.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from .._labels import positions, raise_values, stack_leading

__all__ = [
    "CHECKS_IN_PASS",
    "Snapshots",
    "check_values",
    "coherency_sums",
    "cwt",
    "eig_desc",
    "eigensolve",
    "field_stats",
    "gather",
    "gather_last",
    "is_causal",
    "lag_gram",
    "lag_moments",
    "pod_operand",
    "residual",
]

#: Whether values are checked in the passes that reduce them (so the entry checks skip them).
CHECKS_IN_PASS = False


# ----------------------------------------------------------------------------- checks


def check_values(A: xr.DataArray, name: str, *, stochastic: bool, atol: float) -> None:
    """The value checks of :func:`msapod.check_field` (finite; rows summing to one)."""
    values = A.values
    # a sum is finite iff no NaN/inf entry (barring overflow, which the full check catches)
    if not np.isfinite(values.sum(dtype=np.float64)) and not np.isfinite(values).all():
        raise_values(name, {"bad": (~np.isfinite(values)).sum()}, False, atol)
    if stochastic:
        sums = A.sum("key").values
        worst = float(np.abs(sums - 1.0).max()) if sums.size else 0.0
        raise_values(name, {"bad": 0, "neg": (values < -atol).any(), "worst": worst}, True, atol)


def is_causal(A: xr.DataArray, atol: float = 0.0) -> bool:
    """:func:`msapod.is_causal`: every entry with key after query is zero (within atol)."""
    q = positions(A, "query", "A")
    k = positions(A, "key", "A")
    upper = k[None, :] > q[:, None]
    if not upper.any():
        return True
    vals = A.transpose(..., "query", "key").values
    return bool((np.abs(vals[..., upper]) <= atol).all())


def field_stats(
    A: xr.DataArray, dim: str, *, stochastic: bool = False, flags: bool = True
) -> tuple[xr.DataArray, xr.DataArray, bool | None, bool | None]:
    """``A`` as float64, its mean over ``dim`` and whether ``A`` and ``A - mean`` are causal.

    The values are not checked here (in memory :func:`msapod.check_field` has checked
    them before); one gather of the entries above the diagonal gives both causality
    flags (None unless ``flags``), as in the chunked namesake.
    """
    A64 = A.astype(np.float64)
    mean = A64.mean(dim)
    if not flags:
        return A64, mean, None, None
    q = positions(A, "query", "A")
    k = positions(A, "key", "A")
    upper = k[None, :] > q[:, None]
    if not upper.any():
        return A64, mean, True, True
    rest = [d for d in A.dims if d != dim]
    vals = A.transpose(dim, *rest).values[..., upper]  # (N, ..., entries above)
    m = mean.transpose(*rest).values[..., upper]
    causal_A = bool((np.abs(vals) <= 0).all())
    # |A_s - m| is largest at the extreme A_s (float subtraction is monotone)
    causal_u = bool(((np.abs(vals.max(0) - m) <= 0) & (np.abs(vals.min(0) - m) <= 0)).all())
    return A64, mean, causal_A, causal_u


# ----------------------------------------------------------------------------- lag form


def gather_last(x: np.ndarray, idx: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``out[..., i, m] = x[..., i, idx[i, m]]`` where ``valid``, else 0."""
    idx_b = np.broadcast_to(idx, x.shape[:-2] + idx.shape)
    out = np.take_along_axis(x, idx_b, axis=-1)
    out *= valid
    return out


gather = gather_last  # the name the dispatch uses (see msapod.backends.kernels)


# ----------------------------------------------------------------------------- moments


def lag_moments(R: xr.DataArray, dims) -> tuple[np.ndarray, tuple, tuple]:
    """``C = <r r^T>`` over ``dims`` of a lag field: ``(C, lead, shape)``, float64."""
    X, lead, shape = stack_leading(R, (*dims, "lag"))
    n_lag = X.shape[-1]
    X = X.reshape(X.shape[0], -1, n_lag)
    C = np.empty((X.shape[0], n_lag, n_lag))
    for b in range(X.shape[0]):
        xb = np.asarray(X[b], dtype=np.float64)
        C[b] = (xb.T @ xb) / xb.shape[0]
    return C, lead, shape


def cwt(r: xr.DataArray, Phi: np.ndarray):
    """``W[..., a, b] = sum_tau Phi[a, b, tau] r[..., tau]``: ``(W, lead)``."""
    X, lead, shape = stack_leading(r, ("lag",))
    W = np.einsum("sbt,nt->nsb", Phi, X.astype(np.float64), optimize=True)
    return W.reshape(shape + W.shape[1:]), lead


def coherency_sums(R: xr.DataArray, dim: str, Bs: list) -> np.ndarray:
    """Per-scale ``sum_s Y_s Y_s^H`` (scale, query, query), ``Y_s = r_s B_k``, one set."""
    X = R.transpose(dim, "query", "lag").values
    q = X.shape[1]
    out = np.empty((len(Bs), q, q), dtype=np.complex128)
    with threadpool_limits(1, user_api="blas"):  # many small products: threads contend
        for k, B in enumerate(Bs):
            G = np.zeros((q, q), dtype=np.complex128)
            for xs in X:
                Y = np.asarray(xs, dtype=np.float64) @ B  # (query, r)
                G += Y @ Y.conj().T
            out[k] = G
    return out


# ----------------------------------------------------------------------------- POD


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


class Snapshots:
    """One ensemble of fields as the POD sees it: Grams of the windowed snapshots and
    projections onto them.

    In memory the lag form ``(N, query, lag)`` is formed once (gathered from the key
    form when needed) and every window's Gram comes from one per-lag Gram tensor:
    ``K_w = sum_tau w(tau)^2 G_tau / N``.
    """

    def __init__(self, one: xr.DataArray, layout, center: None = None) -> None:
        # ``center`` is for the chunked namesake: in memory ``one`` is the fluctuation
        x = np.asarray(one.values, dtype=np.float64)
        if not layout.lag_form:
            x = gather_last(x, layout.idx, layout.valid)
        self.n = x.shape[0]
        self.X = x.reshape(self.n, -1)
        self.G = lag_gram(x)

    def grams(self, W2: np.ndarray, out: np.ndarray) -> None:
        """``out[w] = K_w`` for the squared windows ``W2`` (window, lag)."""
        for w in range(len(W2)):
            out[w] = np.tensordot(W2[w], self.G, axes=(0, 0)) / self.n

    def project(self, Vts: list) -> list:
        """``V_w^T X`` in lag form (mode, query * lag), one per window."""
        return [Vt @ self.X for Vt in Vts]


def eig_desc(K: np.ndarray):
    """Eigenpairs of a symmetric PSD matrix, descending, negatives (rounding) clipped."""
    lam, V = np.linalg.eigh(K)
    lam, V = lam[::-1], V[:, ::-1]
    return np.clip(lam, 0.0, None), V


def eigensolve(K: np.ndarray, n_modes: int) -> tuple[np.ndarray, np.ndarray]:
    """All eigenvalues (descending, clipped at 0) and the leading ``n_modes`` vectors."""
    lam, V = eig_desc(K)
    return lam, V[:, :n_modes]


def pod_operand(A: xr.DataArray, R: xr.DataArray, mean: xr.DataArray):
    """What :func:`msapod.analyze` decomposes: the lag-form fluctuation ``R`` at hand."""
    return R, None


# ----------------------------------------------------------------------------- errors


def mean_sq_residual(U: np.ndarray, C: np.ndarray, Phi: np.ndarray) -> float:
    """``(1/N) sum_s ||U_s - C_s Phi||^2``, the residual formed explicitly."""
    R = U - C @ Phi
    return float(np.einsum("sp,sp->", R, R) / U.shape[0])


def residual(u: xr.DataArray, dim: str, Bm: np.ndarray, C: np.ndarray | None) -> float:
    """``(1/N) sum_s ||u_s - c_s Bm||^2`` (``C`` None: project onto the rows of Bm)."""
    U = u.transpose(dim, "query", "key").values.reshape(u.sizes[dim], -1).astype(np.float64)
    return mean_sq_residual(U, U @ Bm.T if C is None else C, Bm)
