"""Lag statistics of an ensemble: the quantities every later step is a function of.

With the lag profiles ``r_{s,i}(tau) = u_s(i, i - tau)`` of N snapshots (PAPER.md step 3),
two second-moment objects carry the whole method:

* the **lag second-moment matrices** ``S_s = sum_i r_{s,i} r_{s,i}^T`` (lag x lag, one
  per snapshot) and their ensemble mean ``C = sum_s S_s / (N Q)``: every Morlet
  scalogram ``E(a, b) = psi_ab^H C psi_ab`` and scale spectrum ``E(a) = M_a . vec(C)``
  (:func:`msapod.wavelets.scalogram_energy`,
  :func:`msapod.wavelets.scale_spectrum_operator`) is a quadratic form of them, and so is
  every leave-one-out replicate;
* the **per-lag Gram tensor** ``G(tau)[s, s'] = sum_i r_{s,i}(tau) r_{s',i}(tau)``: every
  Gaussian window w has the Gram matrix ``G^(w) = sum_tau w(tau)^2 G(tau) / N``
  (:func:`window_grams`), whose eigenpairs are the scale-selective POD (w = 1: the plain
  POD), and mode k's lag energy is ``w(tau)^2 xihat_k^T G(tau) xihat_k`` (:func:`mode_lag_energy`).

:class:`LagStats` holds them for one in-memory ensemble and runs Gram -> eigensolve ->
project (:meth:`LagStats.pod`); :class:`msapod.backends.chunked.LagStats` is its twin for
dask data, with the same interface. Both take and return bare arrays (numpy, float64);
the labelled entry points are :func:`msapod.lag_moments`, :func:`msapod.lag_gram`,
:func:`msapod.scalogram`, :func:`msapod.pod` and :func:`msapod.analyze`. The functions
below are the array kernels on lag-form ensembles ``X (N, query, lag)``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import as_strided
from threadpoolctl import ThreadpoolController

from ._labels import lag_layout, lookup

__all__ = [
    "GramPOD",
    "LagStats",
    "band_layout",
    "eig_desc",
    "from_upper",
    "gather_last",
    "gaussian_windows",
    "gram_pod",
    "lag_gram_tensor",
    "mode_lag_energy",
    "one_blas_thread",
    "require_causal",
    "row_bands",
    "snapshot_moments",
    "upper_operator",
    "window_grams",
]


#: Lags per block of the causal products (rows below a block's first lag are skipped).
BLOCK = 32

#: Entries gathered per block of snapshots when a lag form is formed (no full-size
#: intermediate in the input dtype).
GATHER = 1 << 20

#: Eigenvalues at or below ``RTOL`` times the largest are beyond the numerical rank: their
#: modes are NaN and their coefficients 0 (:meth:`LagStats.pod`).
RTOL = 1e-12


class LagStats:
    """The lag statistics of one in-memory ensemble, and its POD.

    The lag form of the ensemble is gathered once, snapshot-major, as ``X (N, lag,
    query)`` (float64; for a causal square field a strided copy of the flattened
    snapshots, no index arrays); every statistic below is a product of it, formed when
    asked for. The per-lag Gram tensor is kept once :meth:`gram_tensor` has formed it
    (every later window Gram, mode lag energy or jackknife re-centring ``J G(tau) J``
    reads it); :meth:`window_grams` alone forms it and drops it (8 L N^2 bytes).

    Build one with :meth:`of_ensemble`, :meth:`of_band`, :meth:`of_fluctuation` or
    :meth:`of_lag_form` (bare arrays, the positions of the queries and keys given).

    Attributes
    ----------
    X : numpy.ndarray
        The lag form ``(N, lag, query)``: ``X[s, tau, i] = u_s(i, i - tau)``, 0 where
        ``i - tau`` is not a key.
    n : int
        N, the snapshots.
    lags, qpos, kpos : numpy.ndarray
        The lags of the lag form and the query and key positions (int).
    rows : numpy.ndarray
        ``(lag, 2)``: the band ``[lo, hi)`` of query rows that can hold an entry at each
        lag (a causal square field: ``[tau, Q)``); products skip the rows outside it.
    mean : numpy.ndarray or None
        The mean field removed (:meth:`of_ensemble`, :meth:`of_band`), else None:
        ``(query, key)``, or ``(query, lag)`` for a lag band.
    band : bool
        Whether the statistics are of a lag band: the mean field and the modes are then
        given in the lag layout ``(query, lag)``.
    causal : bool or None
        Whether the decomposed field is zero above the diagonal (its lags start at 0).
    causal_total : bool or None
        The same for the fields themselves (:meth:`of_ensemble`), else None.
    """

    def __init__(self, X: np.ndarray, lags, qpos, kpos, rows: np.ndarray) -> None:
        self.X = X
        self.n = X.shape[0]
        self.lags = np.asarray(lags)
        self.qpos = np.asarray(qpos)
        self.kpos = np.asarray(kpos)
        self.rows = rows
        self.mean = None
        self.band = False
        self.causal = None
        self.causal_total = None
        self._fields = None
        self._mean_lag = None  # a band's mean field in the lag form (lag, query)
        self._G = None

    # ------------------------------------------------------------------ construction

    @classmethod
    def of_ensemble(
        cls,
        A: np.ndarray,
        qpos: np.ndarray,
        kpos: np.ndarray,
        *,
        name: str = "A",
        stochastic: bool = False,
        atol: float = 1e-3,
        tau_max: int | None = None,
    ) -> LagStats:
        """The lag statistics of the fluctuation ``u = A - mean`` of fields ``A (N,
        query, key)``: the mean over the snapshots (float64), both causality flags and
        the lag form of u. The values are taken as checked (in memory the field check
        reads them first; ``name``, ``stochastic`` and ``atol`` are for the chunked twin,
        which checks them in its pass). ``tau_max``: only the lags ``0..tau_max`` (see
        :meth:`of_band`; the fields must be causal)."""
        mean = A.mean(0, dtype=np.float64)
        causal_A, causal_u = _causality(A, mean, qpos, kpos)
        if tau_max is not None:
            require_causal(causal_A, name)
            stats = cls._gathered(A, mean, qpos, kpos, True, tau_max)
            return stats.as_band(stats.gather_band(mean, qpos, kpos, tau_max))
        stats = cls._gathered(A, mean, qpos, kpos, causal_u)
        stats.mean, stats.causal_total, stats._fields = mean, causal_A, A
        return stats

    @classmethod
    def of_band(
        cls,
        R: np.ndarray,
        lags: np.ndarray,
        qpos: np.ndarray,
        kpos: np.ndarray,
        *,
        name: str = "A",
        stochastic: bool = False,
        atol: float = 1e-3,
    ) -> LagStats:
        """The lag statistics of fields given as a lag band ``R (N, query, lag)``,
        ``R_s(i, tau) = A_s(i, i - tau)`` for the lags ``0..tau_max``: the mean over the
        snapshots and the lag form of ``u = R - mean``, at every lag of the band the
        numbers the whole field gives there (``name``, ``stochastic`` and ``atol``: as
        in :meth:`of_ensemble`)."""
        n, n_q, n_lag = R.shape
        mean = R.mean(0, dtype=np.float64)
        X = np.empty((n, n_lag, n_q))
        X[...] = np.asarray(R).transpose(0, 2, 1)
        X -= mean.T
        _, _, valid = band_layout(qpos, kpos, n_lag - 1)
        return cls(X, lags, qpos, kpos, row_bands(valid.T)).as_band(mean)

    @staticmethod
    def gather_band(F: np.ndarray, qpos, kpos, tau_max: int) -> np.ndarray:
        """The lag band ``(..., query, lag)``, lags ``0..tau_max``, of fields ``F (...,
        query, key)``."""
        lags, idx, valid = band_layout(qpos, kpos, tau_max)
        return gather_last(np.asarray(F, dtype=np.float64), idx, valid)

    def as_band(self, mean: np.ndarray) -> LagStats:
        """These statistics marked as a causal lag band with the mean field ``mean (query,
        lag)``."""
        self.mean, self.band = mean, True
        self.causal = self.causal_total = True
        self._mean_lag = np.ascontiguousarray(mean.T)[None]
        return self

    @classmethod
    def of_fluctuation(
        cls, u: np.ndarray, qpos: np.ndarray, kpos: np.ndarray, *, causal: bool
    ) -> LagStats:
        """The lag statistics of a fluctuation ``u (N, query, key)`` as given (no mean
        removed); ``causal``: whether it is zero above the diagonal."""
        return cls._gathered(u, None, qpos, kpos, causal)

    @classmethod
    def of_lag_form(
        cls, R: np.ndarray, lags: np.ndarray, qpos: np.ndarray, kpos: np.ndarray
    ) -> LagStats:
        """The lag statistics of a lag form ``R (N, query, lag)`` as given; the row bands
        are the rows that hold a non-zero entry at some snapshot."""
        X = np.ascontiguousarray(np.asarray(R, dtype=np.float64).transpose(0, 2, 1))
        return cls(X, lags, qpos, kpos, row_bands((X != 0).any(axis=0)))

    @classmethod
    def _gathered(cls, F, mean, qpos, kpos, causal, tau_max=None) -> LagStats:
        """The lag statistics of ``F - mean`` (``mean`` None: ``F``), lags by ``causal``
        (``tau_max``: the causal lags ``0..tau_max`` only)."""
        if tau_max is None:
            lags, idx, valid = lag_layout(qpos, kpos, causal)
        else:
            lags, idx, valid = band_layout(qpos, kpos, tau_max)
        X = _lag_ensemble(F, mean, qpos, kpos, lags, idx, valid, causal)
        stats = cls(X, lags, qpos, kpos, row_bands(valid.T))
        stats.causal = bool(causal)
        return stats

    # ------------------------------------------------------------------ statistics

    def lag_form(self) -> np.ndarray:
        """The lag form ``(N, query, lag)``: a transposed view of ``X``."""
        return self.X.transpose(0, 2, 1)

    def moments(self, field: str = "fluctuation") -> tuple[np.ndarray, np.ndarray]:
        """``(lags, C)``: ``C(tau, tau') = <r(tau) r(tau')>`` over every snapshot and query
        of the fluctuation's lag profiles (``"total"``: of the fields', mean included;
        :meth:`of_ensemble` only).

        Since the fluctuations sum to zero over the snapshots, the cross term of
        ``<(rbar + r_u)(rbar + r_u)^T>`` vanishes and the fields' moments are the
        fluctuation's plus the mean field's, ``C_A = C_u + C_Abar``: only the mean field's
        lag form is gathered. Where the fields and the fluctuation have different lags
        (a causal fluctuation of fields that are not), the fields are gathered instead."""
        if field == "fluctuation":
            return self.lags, _moments(self.X, self.rows)
        if self._mean_lag is not None:  # a lag band: the mean field's lag form is kept
            return self.lags, _moments(self.X, self.rows) + _moments(self._mean_lag, self.rows)
        if self._fields is None:
            raise ValueError("field: 'total' needs the fields (LagStats.of_ensemble)")
        if self.causal_total == self.causal:
            mean = type(self)._gathered(self.mean[None], None, self.qpos, self.kpos, self.causal)
            return self.lags, _moments(self.X, self.rows) + _moments(mean.X, mean.rows)
        total = type(self)._gathered(self._fields, None, self.qpos, self.kpos, self.causal_total)
        return total.lags, _moments(total.X, total.rows)

    def snapshot_moments(self, upper: bool = False) -> np.ndarray:
        """Per-snapshot ``S_s = X_s^T X_s`` (see :func:`snapshot_moments`)."""
        return snapshot_moments(self.lag_form(), upper=upper, causal_rows=self._square())

    def gram_tensor(self) -> np.ndarray:
        """The per-lag Gram tensor ``G(tau)[s, s'] = sum_i X[s, tau, i] X[s', tau, i]``
        ``(lag, N, N)``: one product per lag over its band of rows (formed once, kept)."""
        if self._G is None:
            self._G = _gram_tensor(self.X, self.rows)
        return self._G

    def window_grams(self, W: np.ndarray) -> np.ndarray:
        """Gram matrices ``G^(w) = sum_tau w(tau)^2 G(tau) / N`` of the windows ``W
        (window, lag)``: ``(window, N, N)``, one product for all windows (from the kept
        Gram tensor if :meth:`gram_tensor` formed it, else from one formed and dropped)."""
        G = self._G if self._G is not None else _gram_tensor(self.X, self.rows)
        return window_grams(G, np.atleast_2d(W))

    def plain_gram(self) -> np.ndarray:
        """The plain POD's Gram ``K = X X^T / N`` ``(N, N)`` from the lag form, a block of
        lags at a time on the rows their bands cover (the per-lag tensor is not formed;
        :meth:`window_grams` of a window of ones gives the same to rounding)."""
        K = np.zeros((self.n, self.n))
        for a in _spans(len(self.lags)):
            lo, hi = self.rows[a, 0].min(), self.rows[a, 1].max()
            if hi > lo:
                x = self.X[:, a, lo:hi].reshape(self.n, -1)
                K += x @ x.T
        return K / self.n

    @staticmethod
    def eigensolve(K: np.ndarray, n_modes: int) -> tuple[np.ndarray, np.ndarray]:
        """All eigenvalues of ``K`` (descending, clipped at 0) and the leading
        ``n_modes`` eigenvectors ``(N, n_modes)`` (:func:`gram_pod`; the chunked twin
        solves for the leading ones alone)."""
        got = gram_pod(K, n_modes)
        return got.eigenvalues, got.vectors

    def project(self, V: np.ndarray, W: np.ndarray) -> np.ndarray:
        """``P[w, m, tau, i] = w(tau) sum_s V[w, s, m] X[s, tau, i]`` for temporal
        vectors ``V (window, N, mode)``: every window's modes from one product."""
        n_w, n, m = V.shape
        P = V.transpose(0, 2, 1).reshape(n_w * m, n) @ self.X.reshape(n, -1)
        P = P.reshape(n_w, m, len(self.lags), -1)
        P *= np.asarray(W, dtype=np.float64)[:, None, :, None]
        return P

    def mode_lag_energy(self, W: np.ndarray, V: np.ndarray) -> np.ndarray:
        """:func:`mode_lag_energy` of this ensemble's Gram tensor."""
        return mode_lag_energy(self.gram_tensor(), W, V)

    def pod(self, W: np.ndarray, n_modes: int, rtol: float = RTOL) -> dict:
        """POD of every window ``W (window, lag)`` (a row of ones: the plain POD): Grams,
        eigensolve, projection (the method of snapshots).

        Returns
        -------
        dict
            ``spectrum (window, N)`` (every eigenvalue), ``gram (window, N, N)``,
            ``eigenvalues (window, n_modes)``, ``modes (window, n_modes, query, key)``
            (``(..., query, lag)`` for a lag band; orthonormal, sign fixed: the
            largest-magnitude entry positive; NaN beyond the numerical rank ``rtol``) and
            ``coefficients (window, N, n_modes)``. A window that is zero everywhere has a
            zero spectrum and no modes.

        Raises
        ------
        ValueError
            A Gram has a NaN/inf diagonal (the values were not finite).
        """
        W = np.asarray(W, dtype=np.float64)
        n, n_w = self.n, len(W)
        K = self.window_grams(W)
        if not np.isfinite(np.einsum("wii->", K)):
            raise ValueError("u: expected finite values, found NaN/inf entries")
        spectrum = np.zeros((n_w, n))
        V = np.zeros((n_w, n, n_modes))
        with one_blas_thread():  # N x N eigenproblems: threads contend
            for w in range(n_w):
                if not W[w].any():  # zero window: zero Gram, no mode
                    V[w] = np.eye(n, n_modes)
                    continue
                spectrum[w], V[w] = self.eigensolve(K[w], n_modes)
        P = self.project(V, W)
        if self.band:  # the modes in the lag layout: entry (i, tau) from lag tau
            _, _, kvalid = band_layout(self.qpos, self.kpos, int(self.lags[-1]))
            kidx = np.broadcast_to(np.arange(len(self.lags)), kvalid.shape)
        else:
            kidx, kvalid = lookup(self.lags, self.qpos[:, None] - self.kpos[None, :])
        modes = np.empty((n_w, n_modes, *kidx.shape))
        coef = np.empty((n_w, n, n_modes))
        for w in range(n_w):
            modes[w], coef[w] = _finish_modes(P[w], V[w], spectrum[w], n, rtol, kidx, kvalid)
        return {
            "spectrum": spectrum,
            "gram": K,
            "eigenvalues": spectrum[:, :n_modes],
            "modes": modes,
            "coefficients": coef,
        }

    def _square(self) -> bool:
        """Whether the lag form is causal and square: lags ``0..Q-1`` over the queries
        ``0..Q-1`` (lag tau exists only for queries ``>= tau``)."""
        Q = len(self.qpos)
        return bool(
            self.lags[0] == 0 and len(self.lags) == Q and np.array_equal(self.qpos, np.arange(Q))
        )


# ----------------------------------------------------------------------------- POD


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded when first asked (inspecting them takes milliseconds)."""
    return ThreadpoolController()


def one_blas_thread():
    """A context with one BLAS thread: many small products or N x N eigenproblems, where
    threads only contend (and, on busy cores, spin)."""
    return _blas().limit(limits=1, user_api="blas")


def eig_desc(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs of a symmetric (or Hermitian) PSD matrix, or of a stack ``(..., N, N)``
    of them, descending, negatives (rounding) clipped: the one dense eigensolve of the
    method (:func:`gram_pod`, the coherency factor)."""
    lam, V = np.linalg.eigh(K)
    lam, V = lam[..., ::-1], V[..., ::-1]
    return np.clip(lam, 0.0, None), V


class GramPOD(NamedTuple):
    """The POD of a Gram matrix (:func:`gram_pod`)."""

    #: ``lambda_k``, all N, descending, clipped at 0: ``(..., N)``.
    eigenvalues: np.ndarray
    #: The leading temporal eigenvectors ``v_k`` as columns: ``(..., N, n_modes)``.
    vectors: np.ndarray
    #: The modes ``phi_k`` as rows, ``(n_modes, P)``, when the snapshots were given.
    modes: np.ndarray | None = None
    #: The coefficients ``a_k(s)``, ``(N, n_modes)``, when the snapshots were given.
    coefficients: np.ndarray | None = None


def gram_pod(
    K: np.ndarray, n_modes: int = 0, X: np.ndarray | None = None, *, rtol: float = RTOL
) -> GramPOD:
    """POD of N snapshots from their Gram matrix (the method of snapshots).

    With the snapshots as the rows of ``X (N, P)`` and ``K = X X^T / N`` (PAPER.md step
    6), the eigenpairs ``K v_k = lambda_k v_k`` give the modes ``phi_k = X^T v_k /
    sqrt(N lambda_k)`` and coefficients ``a_k(s) = sqrt(N lambda_k) v_k(s)`` (see
    :mod:`msapod.decomposition`).

    Parameters
    ----------
    K
        ``X X^T / N`` (symmetric, positive semi-definite), or a stack ``(..., N, N)`` of
        them (one batched eigensolve).
    n_modes
        Leading temporal vectors kept; 0: the eigenvalues alone (no eigenvectors formed).
    X
        The snapshots ``(N, P)`` of a single ``K``: also the modes and coefficients.
    rtol
        Eigenvalues at or below ``rtol lambda_1`` are beyond the numerical rank: their
        modes are NaN and their coefficients 0.

    Returns
    -------
    GramPOD
        The eigenvalues and leading vectors; with ``X`` also the modes and coefficients,
        each mode's sign fixed so that its largest-magnitude entry is positive (its
        coefficients take the same sign: ``a_k = sqrt(N lambda_k) v_k`` up to it).
    """
    if n_modes == 0:
        lam = np.clip(np.linalg.eigvalsh(K)[..., ::-1], 0.0, None)
        return GramPOD(lam, np.zeros(lam.shape + (0,)))
    lam, V = eig_desc(K)
    V = V[..., :n_modes]
    if X is None:
        return GramPOD(lam, V)
    X = np.asarray(X, dtype=np.float64)
    modes, a = _normalised_modes(V.T @ X, V, lam, len(X), rtol)
    return GramPOD(lam, V, modes, a)


def _normalised_modes(P, Vk, lam, n, rtol) -> tuple[np.ndarray, np.ndarray]:
    """Modes ``phi_k`` and coefficients ``a_k`` from the projections ``P[k] = X^T v_k``
    (``(mode, ...)``, any layout) and the leading vectors ``Vk (N, mode)``: divided by
    ``sqrt(N lambda_k)``, the sign fixed (the largest-magnitude entry positive), NaN
    modes and zero coefficients beyond the numerical rank ``rtol``."""
    n_modes = P.shape[0]
    keep = lam[:n_modes] > rtol * max(lam[0], np.finfo(float).tiny)
    shape = (-1,) + (1,) * (P.ndim - 1)
    P /= np.sqrt(np.where(keep, n * lam[:n_modes], 1.0)).reshape(shape)
    flat = P.reshape(n_modes, -1)
    sgn = np.sign(flat[np.arange(n_modes), np.abs(flat).argmax(1)])
    sgn[sgn == 0] = 1.0
    P *= sgn.reshape(shape)
    P[~keep] = np.nan
    a = Vk * sgn * np.sqrt(n * lam[:n_modes])
    a[:, ~keep] = 0.0
    return P, a


def _finish_modes(P, Vk, lam, n, rtol, kidx, kvalid):
    """Normalised, sign-fixed modes in (query, key) and their coefficients from one
    window's projections ``P (mode, lag, query)`` and leading eigenvectors ``Vk``: one
    gather of the (query, key) entries, ``modes[m, i, j] = P[m, lag(i - j), i]``."""
    n_modes, _, Q = P.shape
    flat = kidx * Q + np.arange(Q)[:, None]  # (query, key) -> entry of (lag, query)
    modes = np.take(P.reshape(n_modes, -1), flat, axis=1)
    modes *= kvalid
    return _normalised_modes(modes, Vk, lam, n, rtol)


# ----------------------------------------------------------------------------- lag form


def gather_last(x: np.ndarray, idx: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """``out[..., i, m] = x[..., i, idx[i, m]]`` where ``valid``, else 0."""
    idx_b = np.broadcast_to(idx, x.shape[:-2] + idx.shape)
    out = np.take_along_axis(x, idx_b, axis=-1)
    out *= valid
    return out


def _lag_ensemble(F, mean, q, k, lags, idx, valid, causal) -> np.ndarray:
    """The snapshot-major lag form ``X (N, lag, query)`` of ``F - mean`` (``mean`` None:
    ``F`` as is), float64, gathered a few snapshots at a time."""
    n, Q, Kk = F.shape
    square = Q == Kk and np.array_equal(q, np.arange(Q)) and np.array_equal(k, q)
    if causal and square and np.array_equal(lags, np.arange(len(lags))) and len(lags) <= Q:
        return _lag_ensemble_causal(F, mean, len(lags))
    flat = (np.arange(len(q))[None, :] * Kk + idx.T).ravel()  # (lag, query) -> entry
    keep = valid.T.ravel()
    m = None if mean is None else mean.ravel()[flat]
    src = F.reshape(n, -1)
    X = np.empty((n, len(flat)))
    step = max(1, GATHER // len(flat))
    for lo in range(0, n, step):
        taken = np.take(src[lo : lo + step], flat, axis=1)
        out = X[lo : lo + step]
        if m is None:
            out[...] = taken
        else:
            np.subtract(taken, m, out=out)
        out *= keep
    return X.reshape(n, len(lags), len(q))


def _lag_ensemble_causal(F, mean, n_lag: int) -> np.ndarray:
    """:func:`_lag_ensemble` of a causal square field (queries and keys ``0..L-1``, zero
    above the diagonal) at the lags ``0..n_lag - 1``: ``X[s, tau, i] = u_s[i, i - tau]``
    is a strided view of the flattened snapshot after ``L`` zeros (stride ``L + 1`` along
    the query, ``-1`` along the lag), whose entries for ``i < tau`` fall on the zeros
    above the diagonal or the padding."""
    n, L, _ = F.shape
    step = max(1, GATHER // (L * L))
    buf = np.zeros((min(step, n), L + L * L))
    X = np.empty((n, n_lag, L))
    m = None if mean is None else mean.ravel()
    for lo in range(0, n, step):
        b = min(step, n - lo)
        if m is None:
            buf[:b, L:] = F[lo : lo + b].reshape(b, -1)
        else:
            np.subtract(F[lo : lo + b].reshape(b, -1), m, out=buf[:b, L:])
        row, item = buf.strides
        X[lo : lo + b] = as_strided(
            buf[:b, L:], shape=(b, n_lag, L), strides=(row, -item, (L + 1) * item), writeable=False
        )
    return X


def _causality(F, mean, q, k) -> tuple[bool, bool]:
    """Whether ``F`` and ``F - mean`` are zero above the diagonal (key after query)."""
    upper = k[None, :] > q[:, None]
    if not upper.any():
        return True, True
    # every F_s is zero there iff the extreme F_s are; |F_s - m| is largest at the
    # extreme F_s (float subtraction is monotone)
    hi, lo, m = F.max(0)[upper], F.min(0)[upper], mean[upper]
    causal_F = bool(((hi == 0) & (lo == 0)).all())
    causal_u = bool(((hi - m == 0) & (lo - m == 0)).all())
    return causal_F, causal_u


def band_layout(qpos: np.ndarray, kpos: np.ndarray, tau_max: int):
    """The lags ``0..tau_max`` of a lag band and, per (query, lag), the key index and a
    found-mask (:func:`msapod._labels.lag_layout` restricted to the band)."""
    lags = np.arange(int(tau_max) + 1)
    idx, valid = lookup(kpos, qpos[:, None] - lags[None, :])
    return lags, idx, valid


def require_causal(causal: bool, name: str) -> None:
    """A lag band keeps the lags ``>= 0``: the fields must be zero above the diagonal."""
    if not causal:
        raise ValueError(
            f"tau_max: the lag band keeps lags 0..tau_max of causal attention; {name} has "
            "non-zero entries with key after query"
        )


def row_bands(mask: np.ndarray) -> np.ndarray:
    """``(lag, 2)``: the first and one past the last True row of each lag of ``mask (lag,
    query)`` (``[0, 0)`` for a lag without any)."""
    any_ = mask.any(axis=1)
    lo = np.where(any_, mask.argmax(axis=1), 0)
    hi = np.where(any_, mask.shape[1] - mask[:, ::-1].argmax(axis=1), 0)
    return np.stack([lo, hi], axis=1)


# ----------------------------------------------------------------------------- moments


def _spans(n_lag: int) -> list[slice]:
    """The lag blocks of :data:`BLOCK` lags."""
    edges = list(range(0, n_lag, BLOCK)) + [n_lag]
    return [slice(lo, hi) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]


def _blocks(n_lag: int):
    """Pairs of lag blocks ``(a, b)`` with ``a <= b`` and the first row that ``b`` needs."""
    spans = _spans(n_lag)
    return [(a, b, b.start) for j, b in enumerate(spans) for a in spans[: j + 1]]


def _moments(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``C = sum_{s, i} X[s, :, i] X[s, :, i]^T / (N Q)`` of a snapshot-major ``X (N,
    lag, query)``: per pair of lag blocks one batched product over the snapshots on the
    rows both blocks' bands cover, summed over the snapshots."""
    n, n_lag, Q = X.shape
    C = np.empty((n_lag, n_lag))
    for a, b, _ in _blocks(n_lag):
        lo = max(rows[a, 0].min(), rows[b, 0].min())
        hi = min(rows[a, 1].max(), rows[b, 1].max())
        if hi <= lo:
            C[a, b] = 0.0
        else:
            C[a, b] = np.matmul(X[:, a, lo:hi], X[:, b, lo:hi].transpose(0, 2, 1)).sum(0)
        C[b, a] = C[a, b].T
    return C / (n * Q)


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


# ----------------------------------------------------------------------------- Grams


def _gram_tensor(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The per-lag Gram tensor of a snapshot-major ``X (N, lag, query)``: one product per
    lag on its band of rows of the strided ``(N, query)`` slice (no transposed copy)."""
    n, n_lag, _ = X.shape
    G = np.empty((n_lag, n, n))
    with one_blas_thread():  # many small products: threads contend
        for t in range(n_lag):
            lo, hi = rows[t]
            if hi <= lo:
                G[t] = 0.0
                continue
            x = X[:, t, lo:hi]
            np.matmul(x, x.T, out=G[t])
    return G


def lag_gram_tensor(X: np.ndarray, *, causal_rows: bool = False) -> np.ndarray:
    """Per-lag Gram tensor ``G(tau)[s, s'] = sum_i X[s, i, tau] X[s', i, tau]``, (lag, N, N).

    ``X`` is a lag-form ensemble ``(N, query, lag)``. ``causal_rows``: the queries are
    ``0..Q-1`` and lag tau exists only for queries ``>= tau`` (a causal field in lag form),
    so each lag's product skips the zero rows (half the work); otherwise the rows that
    hold a non-zero entry at some snapshot are used (:meth:`LagStats.gram_tensor`).
    """
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64).transpose(0, 2, 1))
    n, n_lag, Q = X.shape
    if causal_rows:
        rows = np.stack([np.arange(n_lag), np.full(n_lag, Q)], axis=1)
    else:
        rows = row_bands((X != 0).any(axis=0))
    return _gram_tensor(X, rows)


def window_grams(G: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Gram matrices ``G^(w) = sum_tau w(tau)^2 G(tau) / N`` of windows ``W (window, lag)``
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
