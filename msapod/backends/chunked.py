"""Chunked (dask) kernels: ensembles larger than memory, chunk by chunk.

Every analysis function of msapod accepts a dask-backed ``xarray.DataArray`` (``A.data`` a
``dask.array.Array``) chunked over ``snapshot`` and any leading dims; it dispatches here.
Memory is then bounded by a few chunks plus the results, never by the ensemble:

* element-wise steps stay lazy: the Reynolds fluctuation ``A - Abar``, the lag form
  (:func:`gather`), :func:`cwt`;
* first and second moments are sums over chunks: the mean field and the input checks (one
  pass, :func:`ensemble_mean`, :meth:`LagStats.of_ensemble`), the lag moments
  ``C = <r r^T>`` (:func:`lag_moments`), the coherency sums;
* the windowed snapshot Grams ``G_w[s, s'] = sum_{i, j} w(i - j)^2 u_s(i, j) u_s'(i, j)`` are
  formed block by block over pairs of snapshot chunks (:func:`window_grams`): only the
  windows asked for, never the (lag, N, N) per-lag tensor of the in-memory path;
* the N x N eigenproblem is solved in memory; the leading modes ``X^T V / sqrt(N lambda)``
  take one more pass over the chunks (:func:`project`).

:class:`LagStats` gathers these for one ensemble behind the interface of
:class:`msapod.lagstats.LagStats`.

The ``query`` and ``key`` (or ``lag``) dims must be whole within a chunk because every lag
profile needs its whole row: chunks along them are merged (``rechunk``) automatically, so
a chunk holds ``snapshots_per_chunk x L x L`` values. Reductions are plain dask graphs
computed with ``dask.compute``: they run unchanged on the threaded scheduler or on a
``dask.distributed`` cluster (the active ``Client``), and no global state is used.

A pass over the data per reduction (the Gram pass loads each chunk about ``n_chunks / 2``
times). Values are checked where they are reduced (the mean, ``C`` and the Gram diagonal are
finite iff the data are), so a NaN surfaces as the same ``ValueError`` as in memory.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

from .. import lagstats
from .._labels import lag_layout, raise_values
from ..lagstats import band_layout, gather_last, require_causal, row_bands, snapshot_moments
from . import memory

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


def whole(x, axes):
    """Rechunk ``x`` so that each of ``axes`` is a single chunk (no-op if it already is)."""
    want = {a % x.ndim: -1 for a in axes if len(x.chunks[a % x.ndim]) > 1}
    return x.rechunk(want) if want else x


#: Whether values are checked in the passes that reduce them (so the entry checks skip them).
CHECKS_IN_PASS = True


# ----------------------------------------------------------------------------- checks


def _value_tasks(x, stochastic: bool, atol: float) -> dict:
    """The dask reductions of the value checks of ``x (..., key)``: NaN/inf count and,
    for attention probabilities, any entry below ``-atol`` and the worst row sum."""
    import dask.array as da

    tasks = {"bad": (~da.isfinite(x)).sum()}
    if stochastic and x.size:
        tasks["neg"] = (x < -atol).any()
        dev = x.sum(axis=-1) - 1.0
        tasks["worst"] = [dev.min(), dev.max()]
    return tasks


def check_values(x, name: str, *, stochastic: bool, atol: float, band: bool = False) -> None:
    """The value checks of :func:`msapod.check_field` of ``x (..., key)`` (``band``: ``(...,
    lag)``), computed chunk by chunk (one pass)."""
    import dask

    (res,) = dask.compute(_value_tasks(x, stochastic, atol))
    raise_values(name, res, stochastic, atol, band)


def ensemble_mean(x, name: str, *, stochastic: bool = False, atol: float = 1e-3) -> np.ndarray:
    """One pass over ``x (N, ..., query, key)``: the value checks and the mean over the
    first axis (float64, in memory)."""
    return _checked_pass(x, name, stochastic, atol)["mean"]


def _checked_pass(x, name, stochastic, atol, band=False, **tasks) -> dict:
    """One pass over ``x``: the value checks, the mean over the first axis (float64, in
    memory) and the reductions ``tasks``, computed."""
    import dask

    tasks.update(mean=x.mean(axis=0, dtype=np.float64), **_value_tasks(x, stochastic, atol))
    (res,) = dask.compute(tasks)
    raise_values(name, res, stochastic, atol, band)
    res["mean"] = np.asarray(res["mean"])
    return res


def is_causal(x, qpos: np.ndarray, kpos: np.ndarray, atol: float = 0.0) -> bool:
    """Whether every entry of ``x (..., query, key)`` with key after query is zero
    (within ``atol``), in one pass."""
    import dask.array as da

    upper = kpos[None, :] > qpos[:, None]
    if not upper.any():
        return True
    worst = da.where(upper, abs(x), 0).max()
    return bool((worst <= atol).compute())


# ----------------------------------------------------------------------------- lag form


def gather(x, idx, valid):
    """Lazy ``out[..., i, m] = x[..., i, idx[i, m]]`` (0 where not ``valid``).

    The last two axes (query and the source) are merged into one chunk each: every row
    needs its whole profile.
    """
    x = whole(x, (-2, -1))
    chunks = x.chunks[:-1] + ((idx.shape[1],),)
    return x.map_blocks(gather_last, idx, valid, chunks=chunks, dtype=x.dtype)


# ----------------------------------------------------------------------------- moments


def _moment_block(x: np.ndarray, nl: int, k: int) -> np.ndarray:
    """Sum of r r^T over the averaged axes of one block, kept as size-1 axes."""
    n_lag = x.shape[-1]
    lead = x.shape[:nl]
    xs = np.asarray(x, dtype=np.float64).reshape(lead + (-1, n_lag))
    C = np.swapaxes(xs, -1, -2) @ xs
    return C.reshape(lead + (1,) * k + (n_lag, n_lag))


def lag_moments(x, n_avg: int) -> np.ndarray:
    """``C = <r r^T>`` of a dask lag field ``x (*lead, *averaged, lag)``, the mean over its
    ``n_avg`` axes before the lag, summed chunk by chunk: ``(*lead, lag, lag)``, float64,
    in memory. A NaN/inf value surfaces as the ValueError of the in-memory check."""
    X = whole(x, (-1,))
    nl = X.ndim - 1 - n_avg
    n_lag = X.shape[-1]
    chunks = (
        X.chunks[:nl]
        + tuple((1,) * len(c) for c in X.chunks[nl : nl + n_avg])
        + ((n_lag,), (n_lag,))
    )
    M = X.map_blocks(
        _moment_block, nl, n_avg, chunks=chunks, new_axis=X.ndim, dtype=np.float64,
        meta=np.array(()),
    )  # fmt: skip
    S = M.sum(axis=tuple(range(nl, nl + n_avg))) if n_avg else M
    count = int(np.prod(X.shape[nl : nl + n_avg], dtype=np.int64))
    C = np.asarray(S.compute()) / count
    if not np.isfinite(np.trace(C, axis1=-2, axis2=-1).sum()):
        raise ValueError("R: expected finite values, found NaN/inf entries")
    return C


def cwt(x, Phi: np.ndarray):
    """Lazy Morlet transform of every lag profile of ``x (..., lag)``, chunked like ``x``
    (``lag`` whole): ``(..., scale, lag)``."""
    x = whole(x, (-1,))
    n_scale, n_lag = Phi.shape[0], Phi.shape[1]
    return x.map_blocks(
        memory.cwt,
        Phi,
        chunks=x.chunks[:-1] + ((n_scale,), (n_lag,)),
        new_axis=x.ndim - 1,
        dtype=np.complex128,
        meta=np.array((), dtype=np.complex128),
    )


# ----------------------------------------------------------------------------- Grams


def _pack_block(b: np.ndarray, sel: np.ndarray, sub) -> np.ndarray:
    """Rows of one chunk flattened and restricted to the entries ``sel`` (float64)."""
    x = np.asarray(b).reshape(b.shape[0], -1)
    y = np.empty((x.shape[0], len(sel)))
    for s in range(x.shape[0]):  # row by row: no (chunk x P) temporary in the input dtype
        y[s] = x[s, sel]
    if sub is not None:
        y -= sub
    return y


def pack(x, sel: np.ndarray, sub: np.ndarray | None = None):
    """Lazy ``(N, P)`` float64 matrix of the entries ``sel`` of a (N, Q, K) dask array.

    ``sub`` (``(P,)``) is subtracted from every row (the mean field for a fluctuation).
    """
    x = whole(x, tuple(range(1, x.ndim)))
    return x.map_blocks(
        _pack_block,
        sel,
        sub,
        chunks=(x.chunks[0], (len(sel),)),
        drop_axis=tuple(range(2, x.ndim)),
        dtype=np.float64,
        meta=np.array((), dtype=np.float64),
    )


#: Columns per product in :func:`_gram_pair`: the weighted copy of a chunk is formed a
#: column band at a time (``chunk x 4096`` floats), not whole.
GRAM_BAND = 4096


def _gram_pair(xi: np.ndarray, xj: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """``G_w[a, b] = sum_p w2[w, p] xi[a, p] xj[b, p]`` for every window w."""
    out = np.zeros((len(w2), xi.shape[0], xj.shape[0]))
    for w in range(len(w2)):
        for p0 in range(0, xi.shape[1], GRAM_BAND):
            band = slice(p0, p0 + GRAM_BAND)
            out[w] += (xi[:, band] * w2[w, band]) @ xj[:, band].T
    return out


def window_grams(X, w2: np.ndarray) -> np.ndarray:
    """Windowed Grams ``X diag(w2[w]) X^T`` ``(n_w, N, N)`` of a lazy ``(N, P)`` matrix,
    over pairs of row chunks a panel at a time (:func:`_pairwise`), never all of ``X`` in
    memory. Windows that are zero everywhere give zero Grams without a pass."""
    w2 = np.ascontiguousarray(w2, dtype=np.float64)
    G = np.zeros((len(w2), X.shape[0], X.shape[0]))
    live = np.flatnonzero((w2 != 0).any(axis=1))
    if len(live):
        _pairwise(X, _gram_pair, w2[live], G, None if len(live) == len(w2) else live)
    return G


def _lag_gram_pair(ri: np.ndarray, rj: np.ndarray) -> np.ndarray:
    """``G_tau[a, b] = sum_i ri[a, i, tau] rj[b, i, tau]`` (lag, a, b), float64."""
    ri = np.asarray(ri, dtype=np.float64)
    rj = np.asarray(rj, dtype=np.float64)
    return np.matmul(ri.transpose(2, 0, 1), rj.transpose(2, 1, 0))


#: Bytes of row chunks that one Gram ``dask.compute`` holds (the "panel"): every other
#: chunk is loaded once per panel, so a larger panel means fewer loads, more memory.
PANEL_BYTES = 160 * 2**20


def _pairwise(X, func, arg, G: np.ndarray, index=None) -> None:
    """``G[index, a, b] = func(X_a, X_b, arg)`` over snapshot chunk pairs (symmetric);
    ``index`` selects along the first axis of ``G`` (default all).

    Row chunks are taken a panel at a time (as many as fit in :data:`PANEL_BYTES`); one
    ``dask.compute`` per panel forms its blocks (i in panel, j >= i), so each chunk j is
    loaded once per panel and memory holds the panel plus the chunks in flight.
    """
    import dask
    from dask import delayed

    blocks = X.to_delayed().ravel()
    offs = np.r_[0, np.cumsum(X.chunks[0])]
    row_bytes = int(np.prod(X.shape[1:], dtype=np.int64)) * 8
    panel = max(1, PANEL_BYTES // max(1, max(X.chunks[0]) * row_bytes))
    pair = delayed(func, pure=True)
    extra = () if arg is None else (arg,)
    first = slice(None) if index is None else np.asarray(index)
    m = len(blocks)
    for i0 in range(0, m, panel):
        rows = range(i0, min(i0 + panel, m))
        todo = [(i, j) for j in range(i0, m) for i in rows if i <= j]
        parts = dask.compute(*[pair(blocks[i], blocks[j], *extra) for i, j in todo])
        for (i, j), g in zip(todo, parts, strict=True):
            si, sj = slice(offs[i], offs[i + 1]), slice(offs[j], offs[j + 1])
            G[first, si, sj] = g
            if j != i:
                G[first, sj, si] = np.swapaxes(g, 1, 2)


def project(X, Vt: np.ndarray) -> np.ndarray:
    """``Vt @ X`` of a lazy ``(N, P)`` matrix (``Vt`` in memory, ``(M, N)``), chunk by chunk."""
    import dask.array as da

    V = da.from_array(np.ascontiguousarray(Vt), chunks=(Vt.shape[0], X.chunks[0]))
    return np.asarray((V @ X).compute())


def eig_top(K: np.ndarray, n_modes: int) -> tuple[np.ndarray, np.ndarray]:
    """All eigenvalues (descending, clipped at 0) and the leading ``n_modes`` eigenvectors.

    Few modes: the eigenvalues alone and a subset eigensolve (no N x N eigenvector
    matrix); many: the in-memory eigensolve (:meth:`msapod.lagstats.LagStats.eigensolve`).
    """
    n = len(K)
    if 2 * n_modes >= n:
        return lagstats.LagStats.eigensolve(K, n_modes)
    lam = eigh(K, eigvals_only=True, check_finite=False)
    _, V = eigh(K, subset_by_index=[n - n_modes, n - 1], check_finite=False)
    return np.clip(lam[::-1], 0.0, None), V[:, ::-1]


class LagStats(lagstats.LagStats):
    """The lag statistics of one dask ensemble, chunk by chunk: the twin of
    :class:`msapod.lagstats.LagStats`, with its constructors, attributes and methods.

    The fields stay lazy, chunked over the snapshots. :meth:`of_ensemble` takes the value
    checks, the mean and both causality flags in one pass. The windowed Grams read the
    entries of the lag form packed straight from the chunks, the mean subtracted on the
    way (no per-lag tensor unless :meth:`gram_tensor` is asked for); the eigenproblem is
    solved by :func:`eig_top`. ``X``, :meth:`lag_form` and :meth:`snapshot_moments` are
    lazy.
    """

    def __init__(self, F, lags, qpos, kpos, idx=None, valid=None, mean=None) -> None:
        # the in-memory attributes, X (lazy) a property
        lag_form = idx is None
        self.lags, self.qpos, self.kpos = np.asarray(lags), np.asarray(qpos), np.asarray(kpos)
        n_q, n_lag = len(qpos), len(lags)
        self.rows = np.tile([0, n_q], (n_lag, 1)) if lag_form else row_bands(valid.T)
        self.causal = self.causal_total = self._G = self._mean_lag = None
        self.band = False
        self.n = F.shape[0]
        self._F, self._idx, self._valid, self.mean = F, idx, valid, mean
        self._full_mean = mean  # what the packed entries have subtracted
        if lag_form:  # every (query, lag) entry, as the in-memory lag form holds
            sel = np.arange(len(qpos) * n_lag)
            self._col = np.tile(np.arange(n_lag), len(qpos))
            self._pos = sel
        else:
            qi, self._col = np.nonzero(valid)  # entries in lag-form order (query-major)
            sel = qi * len(kpos) + idx[qi, self._col]
            self._pos = qi * n_lag + self._col
        sub = None if mean is None else mean.reshape(-1)[sel]
        self._packed = pack(F, sel, sub)

    @classmethod
    def of_ensemble(
        cls, A, qpos, kpos, *, name="A", stochastic=False, atol=1e-3, tau_max=None
    ) -> LagStats:
        """The lag statistics of ``u = A - mean`` of dask fields ``A (N, query, key)``:
        one pass for the value checks (the ValueErrors of the in-memory check), the mean
        (float64, in memory) and whether ``A`` and ``u`` are zero above the diagonal
        (``tau_max``: the lag band ``0..tau_max`` only)."""
        upper = kpos[None, :] > qpos[:, None]
        extremes = {"max": A.max(axis=0), "min": A.min(axis=0)} if upper.any() else {}
        res = _checked_pass(A, name, stochastic, atol, **extremes)
        mean = res["mean"]
        causal_A = causal_u = True
        if upper.any():
            hi, lo, m = np.asarray(res["max"])[upper], np.asarray(res["min"])[upper], mean[upper]
            # |A_s - m| is largest at the extreme A_s (float subtraction is monotone)
            causal_A = bool(((hi == 0) & (lo == 0)).all())
            causal_u = bool(((hi - m == 0) & (lo - m == 0)).all())
        if tau_max is not None:
            require_causal(causal_A, name)
            lags, idx, valid = band_layout(qpos, kpos, tau_max)
            stats = cls(A, lags, qpos, kpos, idx, valid, mean)
            return stats.as_band(stats.gather_band(mean, qpos, kpos, tau_max))
        lags, idx, valid = lag_layout(qpos, kpos, causal_u)
        stats = cls(A, lags, qpos, kpos, idx, valid, mean)
        stats.causal, stats.causal_total = causal_u, causal_A
        return stats

    @classmethod
    def of_band(cls, R, lags, qpos, kpos, *, name="A", stochastic=False, atol=1e-3) -> LagStats:
        """The lag statistics of dask fields given as a lag band ``R (N, query, lag)``:
        one pass for the value checks (rows of a band sum to at most one) and the mean."""
        mean = _checked_pass(R, name, stochastic, atol, band=True)["mean"]
        return cls(R, lags, qpos, kpos, mean=mean).as_band(mean)

    @classmethod
    def of_fluctuation(cls, u, qpos, kpos, *, causal: bool) -> LagStats:
        """The lag statistics of a dask fluctuation ``u (N, query, key)`` as given."""
        lags, idx, valid = lag_layout(qpos, kpos, causal)
        stats = cls(u, lags, qpos, kpos, idx, valid)
        stats.causal = bool(causal)
        return stats

    @classmethod
    def of_lag_form(cls, R, lags, qpos, kpos) -> LagStats:
        """The lag statistics of a dask lag form ``R (N, query, lag)`` as given."""
        return cls(R, lags, qpos, kpos)

    @property
    def X(self):
        """The lazy snapshot-major lag form ``(N, lag, query)``."""
        return self.lag_form().transpose(0, 2, 1)

    def lag_form(self):
        """The lazy lag form ``(N, query, lag)`` of the decomposed field (float64)."""
        u = self._F.astype(np.float64)
        if self.mean is not None and self._idx is None:  # a lag band: the mean is one too
            return u - self.mean
        if self.mean is not None:
            u = u - self._full_mean
        return gather(u, self._idx, self._valid)

    def moments(self, field: str = "fluctuation") -> tuple[np.ndarray, np.ndarray]:
        """``(lags, C)`` of the fluctuation (or, ``"total"``, of the fields), one pass."""
        if field == "fluctuation":
            return self.lags, lag_moments(self.lag_form(), 2)
        if self._mean_lag is not None:  # a lag band: C_A = C_u + C_Abar
            n_q = len(self.qpos)
            C_mean = self._mean_lag[0] @ self._mean_lag[0].T / n_q
            return self.lags, lag_moments(self.lag_form(), 2) + C_mean
        if self.causal_total is None:
            raise ValueError("field: 'total' needs the fields (LagStats.of_ensemble)")
        lags, idx, valid = lag_layout(self.qpos, self.kpos, self.causal_total)
        return lags, lag_moments(gather(self._F, idx, valid), 2)

    def snapshot_moments(self, upper: bool = False):
        """Lazy per-snapshot ``S_s`` ``(N, L, L)`` (``upper``: ``(N, L (L + 1) / 2)``)."""
        R = whole(self.lag_form(), (1, 2))
        n_lag = len(self.lags)
        if upper:
            chunks, drop = (R.chunks[0], (n_lag * (n_lag + 1) // 2,)), 2
        else:
            chunks, drop = (R.chunks[0], (n_lag,), (n_lag,)), ()
        return R.map_blocks(
            snapshot_moments, upper=upper, causal_rows=self._square(), chunks=chunks,
            drop_axis=drop, dtype=np.float64, meta=np.array(()),
        )  # fmt: skip

    def gram_tensor(self) -> np.ndarray:
        """The per-lag Gram tensor ``(lag, N, N)`` over pairs of snapshot chunks, in memory
        (``8 L N^2`` bytes: for large N ask for :meth:`window_grams` only)."""
        if self._G is None:
            R = whole(self.lag_form(), (1, 2))
            self._G = np.empty((len(self.lags), self.n, self.n))
            _pairwise(R, _lag_gram_pair, None, self._G)
        return self._G

    def window_grams(self, W: np.ndarray) -> np.ndarray:
        """``G^(w) (window, N, N)`` of the windows ``W (window, lag)``, block by block over
        pairs of snapshot chunks (zero windows: no pass)."""
        W2 = np.atleast_2d(np.asarray(W, dtype=np.float64)) ** 2
        K = window_grams(self._packed, W2[:, self._col])
        K /= self.n
        return K

    def plain_gram(self) -> np.ndarray:
        """The plain POD's Gram ``X X^T / N`` over pairs of snapshot chunks."""
        return self.window_grams(np.ones(len(self.lags)))[0]

    eigensolve = staticmethod(eig_top)

    def project(self, V: np.ndarray, W: np.ndarray) -> np.ndarray:
        """``(window, mode, lag, query)`` projections of every window, in one pass."""
        n_w, _, m = V.shape
        proj = project(self._packed, V.transpose(0, 2, 1).reshape(n_w * m, self.n))
        Q, n_lag = len(self.qpos), len(self.lags)
        phi = np.zeros((n_w * m, Q * n_lag))
        phi[:, self._pos] = proj
        P = phi.reshape(n_w, m, Q, n_lag).transpose(0, 1, 3, 2)
        P *= np.asarray(W, dtype=np.float64)[:, None, :, None]
        return P


# ----------------------------------------------------------------------------- coherency


def _coherency_block(x: np.ndarray, Bs: list) -> np.ndarray:
    """``sum_s Y_s Y_s^H`` with ``Y_s = x_s B_k`` for every scale k, one chunk."""
    x = np.asarray(x, dtype=np.float64)
    c, q, _ = x.shape
    out = np.empty((len(Bs), q, q), dtype=np.complex128)
    for k, B in enumerate(Bs):
        Y = (x @ B).transpose(1, 0, 2).reshape(q, -1)  # (query, snapshot * r)
        out[k] = Y @ Y.conj().T
    return out[None]


def coherency_sums(x, Bs: list) -> np.ndarray:
    """Per-scale ``sum_s Y_s Y_s^H`` (scale, query, query) of one dask lag field ``x (N,
    query, lag)``, chunk by chunk."""
    X = whole(x, (1, 2))
    q = X.shape[1]
    M = X.map_blocks(
        _coherency_block,
        Bs,
        chunks=((1,) * len(X.chunks[0]), (len(Bs),), (q,), (q,)),
        new_axis=3,
        dtype=np.complex128,
        meta=np.array((), dtype=np.complex128),
    )
    return np.asarray(M.sum(axis=0).compute())


# ----------------------------------------------------------------------------- errors


def _residual_block(u: np.ndarray, Bm: np.ndarray, C) -> np.ndarray:
    U = np.asarray(u, dtype=np.float64).reshape(u.shape[0], -1)
    Cb = U @ Bm.T if C is None else C
    R = U - Cb @ Bm
    return np.atleast_1d(np.einsum("sp,sp->", R, R))


def residual(u, Bm: np.ndarray, C: np.ndarray | None) -> float:
    """``(1/N) sum_s ||u_s - c_s Bm||^2`` of a dask ``u (N, query, key)`` (``C`` None:
    project onto the rows of Bm), chunk by chunk."""
    import dask.array as da
    from dask import delayed

    x = whole(u, (1, 2))
    parts = []
    offs = np.r_[0, np.cumsum(x.chunks[0])]
    for i, blk in enumerate(x.to_delayed().ravel()):
        Cb = None if C is None else C[offs[i] : offs[i + 1]]
        parts.append(
            da.from_delayed(
                delayed(_residual_block, pure=True)(blk, Bm, Cb), shape=(1,), dtype=np.float64
            )
        )
    return float(da.concatenate(parts).sum().compute()) / u.shape[0]
