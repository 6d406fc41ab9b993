"""Lag statistics of an ensemble: the quantities every later step is a function of.

With the lag profiles ``r_{s,i}(tau) = u_s(i, i - tau)`` of N snapshots (PAPER.md step 3),
two second-moment objects carry the whole method:

* the **lag second-moment matrices** ``S_s = sum_i r_{s,i} r_{s,i}^T`` (lag x lag, one
  per snapshot) and their ensemble mean ``C = sum_s S_s / (N Q)``: every Morlet
  scalogram ``E(a, b) = psi_ab^H C psi_ab`` and scale spectrum ``E(a) = M_a . vec(C)``
  (:func:`msapod.wavelets.scalogram_energy`,
  :func:`msapod.wavelets.scale_spectrum_operator`) is a quadratic form of them, and so is
  every leave-one-out replicate;
* the **per-lag Gram tensor** ``G(tau)[s, t] = sum_i r_{s,i}(tau) r_{t,i}(tau)``: every
  Gaussian window w has the Gram matrix ``K^(w) = sum_tau w(tau)^2 G(tau) / N``
  (:func:`window_grams`), whose eigenpairs are the scale-selective POD (w = 1: the plain
  POD), and mode k's lag energy is ``w(tau)^2 v_k^T G(tau) v_k`` (:func:`mode_lag_energy`).

These are array kernels (numpy, float64) on lag-form ensembles ``X (N, query, lag)``;
the labelled entry points are :func:`msapod.lag_moments`, :func:`msapod.lag_gram`,
:func:`msapod.scalogram`, :func:`msapod.pod` and :func:`msapod.analyze`.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ensemble_moments",
    "from_upper",
    "gaussian_windows",
    "lag_gram_tensor",
    "mode_lag_energy",
    "snapshot_moments",
    "upper_operator",
    "window_grams",
]


#: Lags per block of the causal products (rows below a block's first lag are skipped).
BLOCK = 32


def _blocks(n_lag: int):
    """Pairs of lag blocks ``(a, b)`` with ``a <= b`` and the first row that ``b`` needs."""
    edges = list(range(0, n_lag, BLOCK)) + [n_lag]
    spans = [slice(lo, hi) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    return [(a, b, b.start) for j, b in enumerate(spans) for a in spans[: j + 1]]


def snapshot_moments(
    X: np.ndarray, *, upper: bool = False, causal_rows: bool = False
) -> np.ndarray:
    """Per-snapshot lag second-moment matrices ``S_s = X_s^T X_s`` of ``X (N, query, lag)``.

    Returns ``(N, L, L)``, or with ``upper`` the upper triangles in the order of
    ``numpy.triu_indices(L)``, ``(N, L (L + 1) / 2)`` (see :func:`upper_operator`).
    ``causal_rows``: lag tau exists only for queries ``>= tau`` (queries ``0..Q-1``), so
    the products run over lag blocks and skip the zero rows (about a quarter of the work).
    """
    X = np.asarray(X, dtype=np.float64)
    if causal_rows:
        S = np.empty((X.shape[0], X.shape[2], X.shape[2]))
        for a, b, i0 in _blocks(X.shape[2]):
            S[:, a, b] = np.matmul(X[:, i0:, a].transpose(0, 2, 1), X[:, i0:, b])
            S[:, b, a] = S[:, a, b].transpose(0, 2, 1)
    else:
        S = np.matmul(X.transpose(0, 2, 1), X)
    if not upper:
        return S
    n_lag = X.shape[2]
    iu = np.triu_indices(n_lag)
    return S.reshape(X.shape[0], -1)[:, iu[0] * n_lag + iu[1]]


def from_upper(S_up: np.ndarray, n_lag: int) -> np.ndarray:
    """The symmetric ``(..., L, L)`` matrix of upper triangles ``(..., L (L + 1) / 2)``."""
    S_up = np.asarray(S_up, dtype=np.float64)
    iu = np.triu_indices(n_lag)
    S = np.zeros(S_up.shape[:-1] + (n_lag, n_lag))
    S[..., iu[0], iu[1]] = S_up
    S[..., iu[1], iu[0]] = S_up
    return S


def upper_operator(M: np.ndarray, n_lag: int) -> np.ndarray:
    """A quadratic-form operator ``M (k, L * L)`` on the upper triangle of a symmetric
    matrix: ``M . vec(S) = M_up . S_up`` with the off-diagonal terms doubled."""
    iu = np.triu_indices(n_lag)
    w = np.where(iu[0] == iu[1], 1.0, 2.0)
    return np.ascontiguousarray(M.reshape(-1, n_lag, n_lag)[:, iu[0], iu[1]] * w)


def ensemble_moments(Xt: np.ndarray, *, causal_rows: bool = False) -> np.ndarray:
    """``C(tau, tau') = <r(tau) r(tau')>`` over every snapshot and query row of a lag-major
    ensemble ``Xt (lag, query, N)``: one product, float64.

    ``causal_rows``: lag tau exists only for queries ``>= tau`` (queries ``0..Q-1``), so
    the product runs over lag blocks and skips the zero rows.
    """
    n_lag = Xt.shape[0]
    count = int(np.prod(Xt.shape[1:]))
    if not causal_rows:
        F = Xt.reshape(n_lag, -1)
        return (F @ F.T) / count
    C = np.empty((n_lag, n_lag))
    for a, b, i0 in _blocks(n_lag):
        Fa = Xt[a, i0:].reshape(a.stop - a.start, -1)
        Fb = Xt[b, i0:].reshape(b.stop - b.start, -1)
        C[a, b] = Fa @ Fb.T
        C[b, a] = C[a, b].T
    return C / count


def lag_gram_tensor(X: np.ndarray, *, causal_rows: bool = False) -> np.ndarray:
    """Per-lag Gram tensor ``G(tau)[s, t] = sum_i X[s, i, tau] X[t, i, tau]``, (lag, N, N).

    ``X`` is a lag-form ensemble ``(N, query, lag)``. ``causal_rows``: the queries are
    ``0..Q-1`` and lag tau exists only for queries ``>= tau`` (a causal field in lag form),
    so each lag's product skips the zero rows (half the work).
    """
    X = np.asarray(X, dtype=np.float64)
    return _lag_gram_lagmajor(np.ascontiguousarray(X.transpose(2, 0, 1)), causal_rows, 1)


def _moments_snapmajor(X: np.ndarray, causal_rows: bool) -> np.ndarray:
    """:func:`ensemble_moments` of a snapshot-major ensemble ``X (N, lag, query)``: per
    pair of lag blocks one batched product over the snapshots (rows below the later
    block's first lag skipped with ``causal_rows``), summed over the snapshots."""
    n, n_lag, Q = X.shape
    C = np.empty((n_lag, n_lag))
    for a, b, i0 in _blocks(n_lag):
        i0 = i0 if causal_rows else 0
        C[a, b] = np.matmul(X[:, a, i0:], X[:, b, i0:].transpose(0, 2, 1)).sum(0)
        C[b, a] = C[a, b].T
    return C / (n * Q)


def _lag_gram_snapmajor(X: np.ndarray, causal_rows: bool) -> np.ndarray:
    """:func:`lag_gram_tensor` of a snapshot-major ensemble ``X (N, lag, query)``: one
    product per lag on the strided ``(N, query)`` slice (no transposed copy of X)."""
    n, n_lag, _ = X.shape
    G = np.empty((n_lag, n, n))
    for t in range(n_lag):
        x = X[:, t, t:] if causal_rows else X[:, t]
        np.matmul(x, x.T, out=G[t])
    return G


def _lag_gram_lagmajor(Xt: np.ndarray, causal_rows: bool, snap_axis: int) -> np.ndarray:
    """:func:`lag_gram_tensor` of a lag-major ensemble: ``Xt (lag, N, query)``
    (``snap_axis`` 1) or ``(lag, query, N)`` (``snap_axis`` 2)."""
    n_lag = Xt.shape[0]
    if not causal_rows:
        if snap_axis == 1:
            return np.matmul(Xt, Xt.transpose(0, 2, 1))
        return np.matmul(Xt.transpose(0, 2, 1), Xt)
    n = Xt.shape[snap_axis]
    G = np.empty((n_lag, n, n))
    for t in range(n_lag):
        if snap_axis == 1:
            x = Xt[t, :, t:]
            G[t] = x @ x.T
        else:
            x = Xt[t, t:, :]
            G[t] = x.T @ x
    return G


def window_grams(G: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Gram matrices ``K^(w) = sum_tau w(tau)^2 G(tau) / N`` of windows ``W (window, lag)``
    (one product for all windows): ``(window, N, N)``; a 1-D ``W`` gives ``(N, N)``."""
    W = np.asarray(W, dtype=np.float64)
    n_lag, n, _ = G.shape
    K = ((W.reshape(-1, n_lag) ** 2) @ G.reshape(n_lag, n * n)).reshape(-1, n, n) / n
    return K[0] if W.ndim == 1 else K


def mode_lag_energy(G: np.ndarray, W: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Lag-energy profile ``w(tau)^2 v^T G(tau) v`` of windowed modes, each normalised to
    sum to one (zero where the mode has no energy).

    ``W (window, lag)`` and ``V (N, window)``: one temporal eigenvector per window,
    returns ``(window, lag)``; a 1-D ``W`` and ``V`` give ``(lag,)``.
    """
    n_lag, n, _ = G.shape
    W = np.asarray(W, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    one = W.ndim == 1
    W2 = W.reshape(-1, n_lag) ** 2
    V = V.reshape(n, -1)
    Y = (G.reshape(n_lag * n, n) @ V).reshape(n_lag, n, V.shape[1])
    E = W2 * np.einsum("tsw,sw->wt", Y, V)
    tot = E.sum(1, keepdims=True)
    E = np.divide(E, tot, out=np.zeros_like(E), where=tot > 0)
    return E[0] if one else E


def gaussian_windows(lags: np.ndarray, centre, width) -> np.ndarray:
    """``w(tau) = exp(-(tau - c)^2 / (2 sigma^2))`` for each ``(c, sigma)``: (window, lag)."""
    c = np.atleast_1d(np.asarray(centre, dtype=np.float64))
    s = np.atleast_1d(np.asarray(width, dtype=np.float64))
    lags = np.asarray(lags, dtype=np.float64)
    return np.exp(-((lags[None, :] - c[:, None]) ** 2) / (2 * s[:, None] ** 2))
