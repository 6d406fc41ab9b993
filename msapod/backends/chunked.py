"""Chunked (dask) kernels: ensembles larger than memory, chunk by chunk.

Every analysis function of msapod accepts a dask-backed ``xarray.DataArray`` (``A.data`` a
``dask.array.Array``) chunked over ``snapshot`` and any leading dims; it dispatches here.
Memory is then bounded by a few chunks plus the results, never by the ensemble:

* element-wise steps stay lazy: the Reynolds fluctuation ``A - Abar``, :func:`to_lag`,
  :func:`from_lag`, :func:`apply_window`, :func:`cwt`;
* first and second moments are sums over chunks: the mean field and the input checks (one
  pass, :func:`field_stats`), the lag moments ``C = <r r^T>`` (:func:`lag_moments`), the
  coherency sums;
* the windowed snapshot Grams ``G_w[s, t] = sum_{i, j} w(i - j)^2 u_s(i, j) u_t(i, j)`` are
  formed block by block over pairs of snapshot chunks (:func:`window_grams`): only the
  windows asked for, never the (lag, N, N) per-lag tensor of the in-memory path;
* the N x N eigenproblem is solved in memory; the leading modes ``X^T V / sqrt(N lambda)``
  take one more pass over the chunks (:func:`project`).

The ``query`` and ``key`` (or ``lag``) dims must be whole within a chunk because every lag
profile needs its whole row: chunks along them are merged (``rechunk``) automatically, so
a chunk holds ``snapshots_per_chunk x L x L`` values. Reductions are plain dask graphs
computed with ``dask.compute``: they run unchanged on the threaded scheduler or on a
``dask.distributed`` cluster (the active ``Client``), and no global state is used.

A pass over the data per reduction: :func:`msapod.analyze` needs four (checks and mean,
lag moments, Grams, modes), the Gram pass loading each chunk about ``n_chunks / 2`` times.
Values are checked where they are reduced (the mean, ``C`` and the Gram diagonal are
finite iff the data are), so a NaN surfaces as the same ``ValueError`` as in memory.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .._labels import check_count, positions, raise_values
from .memory import gather_last

__all__ = [
    "CHECKS_IN_PASS",
    "Snapshots",
    "check_values",
    "coherency_sums",
    "cwt",
    "eigensolve",
    "field_stats",
    "gather",
    "is_causal",
    "lag_gram",
    "lag_moments",
    "pod_operand",
    "residual",
]


def whole(x, axes):
    """Rechunk ``x`` so that each of ``axes`` is a single chunk (no-op if it already is)."""
    want = {a % x.ndim: -1 for a in axes if len(x.chunks[a % x.ndim]) > 1}
    return x.rechunk(want) if want else x


#: Whether values are checked in the passes that reduce them (so the entry checks skip them).
CHECKS_IN_PASS = True


# ----------------------------------------------------------------------------- checks


def check_values(
    A: xr.DataArray, name: str, *, stochastic: bool, atol: float, key: str = "key"
) -> None:
    """The value checks of :func:`msapod.check_field`, computed chunk by chunk (one pass)."""
    import dask

    x = A.data
    tasks = {"bad": (~_isfinite(x)).sum()}
    if stochastic and x.size:
        tasks["neg"] = (x < -atol).any()
        tasks["worst"] = abs(x.sum(axis=A.dims.index(key)) - 1.0).max()
    (res,) = dask.compute(tasks)
    raise_values(name, res, stochastic, atol)


def _isfinite(x):
    import dask.array as da

    return da.isfinite(x)


def field_stats(
    A: xr.DataArray,
    dim: str,
    *,
    stochastic: bool,
    atol: float = 1e-3,
    name: str = "A",
    min_snapshots: int | None = 2,
    flags: bool = True,
) -> tuple[xr.DataArray, xr.DataArray, bool | None, bool | None]:
    """One pass over a dask field: value checks, the mean over ``dim`` and causality.

    Returns
    -------
    A64 : xarray.DataArray
        ``A`` as float64 (lazy).
    mean : xarray.DataArray
        ``A.astype(float64).mean(dim)``, in memory (numpy-backed).
    causal_A, causal_u : bool
        Whether ``A`` and its fluctuation ``A - mean`` are zero above the diagonal (key
        after query), exactly as :func:`msapod.is_causal` would find (None unless
        ``flags``).
    """
    import dask

    if min_snapshots is not None:
        check_count(A, name, min_snapshots, dim)
    x = A.data
    tasks = {
        # float64 accumulation without a float64 copy of each chunk
        "mean": A.mean(dim, dtype=np.float64).data,
        "bad": (~_isfinite(x)).sum(),
    }
    if flags:
        tasks["max"] = A.max(dim).data
        tasks["min"] = A.min(dim).data
    if stochastic and x.size:
        tasks["neg"] = (x < -atol).any()
        tasks["worst"] = abs(x.sum(axis=A.dims.index("key")) - 1.0).max()
    (res,) = dask.compute(tasks)
    raise_values(name, res, stochastic, atol)
    rest = [d for d in A.dims if d != dim]
    mean = xr.DataArray(
        np.asarray(res["mean"]),
        dims=rest,
        coords={c: A.coords[c] for c in A.coords if dim not in A.coords[c].dims},
    )
    A64 = A.astype(np.float64)
    if not flags:
        return A64, mean, None, None
    q = positions(A, "query", name)
    k = positions(A, "key", name)
    upper = xr.DataArray(k[None, :] > q[:, None], dims=("query", "key"))
    hi = xr.DataArray(np.asarray(res["max"]), dims=rest)
    lo = xr.DataArray(np.asarray(res["min"]), dims=rest)
    # |A_s - m| is largest at the extreme A_s (float subtraction is monotone)
    causal_A = bool(((abs(hi) <= 0) & (abs(lo) <= 0)).where(upper, True).all())
    m = mean.variable
    causal_u = bool(
        ((abs(hi.variable - m) <= 0) & (abs(lo.variable - m) <= 0))
        .where(upper.variable, True)
        .all()
    )
    return A64, mean, causal_A, causal_u


def is_causal(A: xr.DataArray, atol: float = 0.0) -> bool:
    """:func:`msapod.is_causal` of a dask field (one pass)."""
    import dask.array as da

    q = positions(A, "query", "A")
    k = positions(A, "key", "A")
    upper = k[None, :] > q[:, None]
    if not upper.any():
        return True
    x = A.transpose(..., "query", "key").data
    worst = da.where(upper, abs(x), 0).max()
    ok = (worst <= atol).compute()
    return bool(ok)


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


def lag_moments(R: xr.DataArray, dims) -> tuple[np.ndarray, tuple, tuple]:
    """``C = <r r^T>`` over ``dims`` of a dask lag field, summed chunk by chunk.

    Returns ``(C, lead, shape)`` with ``C`` of shape ``shape + (lag, lag)`` (float64, in
    memory) and the leading dims ``lead``.
    """
    lead = tuple(d for d in R.dims if d not in (*dims, "lag"))
    X = whole(R.transpose(*lead, *dims, "lag").data, (-1,))
    nl, k = len(lead), len(dims)
    n_lag = X.shape[-1]
    chunks = (
        X.chunks[:nl] + tuple((1,) * len(c) for c in X.chunks[nl : nl + k]) + ((n_lag,), (n_lag,))
    )
    M = X.map_blocks(
        _moment_block, nl, k, chunks=chunks, new_axis=X.ndim, dtype=np.float64, meta=np.array(())
    )
    S = M.sum(axis=tuple(range(nl, nl + k))) if k else M
    count = int(np.prod(X.shape[nl : nl + k], dtype=np.int64))
    C = np.asarray(S.compute()) / count
    if not np.isfinite(np.trace(C, axis1=-2, axis2=-1).sum()):
        raise ValueError("R: expected finite values, found NaN/inf entries")
    return C, lead, tuple(R.sizes[d] for d in lead)


def cwt(r: xr.DataArray, Phi: np.ndarray):
    """Lazy Morlet transform of every lag profile, chunked like ``r`` (``lag`` whole)."""
    rt = r.transpose(..., "lag")
    x = whole(rt.data, (-1,))
    n_scale, n_lag = Phi.shape[0], Phi.shape[1]
    W = x.map_blocks(
        _cwt_block,
        Phi,
        chunks=x.chunks[:-1] + ((n_scale,), (n_lag,)),
        new_axis=x.ndim - 1,
        dtype=np.complex128,
        meta=np.array((), dtype=np.complex128),
    )
    return W, rt.dims[:-1]


def _cwt_block(x: np.ndarray, Phi: np.ndarray) -> np.ndarray:
    X = np.asarray(x, dtype=np.float64)
    W = np.einsum("sbt,nt->nsb", Phi, X.reshape(-1, X.shape[-1]), optimize=True)
    return W.reshape(X.shape[:-1] + W.shape[1:])


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


def window_grams(
    X, w2: np.ndarray, out: np.ndarray | None = None, *, zeroed: bool = False
) -> np.ndarray:
    """Windowed Grams ``X diag(w2[w]) X^T`` of a lazy ``(N, P)`` matrix, block by block.

    One ``dask.compute`` per panel of row chunks forms the blocks (i, j >= i) (see
    :func:`_pairwise`): memory holds the panel, a few chunks in flight and the
    ``(n_w, N, N)`` result (``out`` if given), never all of ``X``. Windows that are zero
    everywhere give zero Grams without a pass (``zeroed``: ``out`` is already zero, as
    from ``np.zeros``, whose untouched pages cost no memory, so they are left alone).
    """
    w2 = np.ascontiguousarray(w2, dtype=np.float64)
    n = X.shape[0]
    G = np.zeros((len(w2), n, n)) if out is None else out
    live = np.flatnonzero((w2 != 0).any(axis=1))
    if out is not None and not zeroed:
        for w in np.setdiff1d(np.arange(len(w2)), live):
            G[w] = 0.0
    if len(live):
        _pairwise(X, _gram_pair, w2[live], G, None if len(live) == len(w2) else live)
    return G


def _lag_gram_pair(ri: np.ndarray, rj: np.ndarray) -> np.ndarray:
    """``G_tau[a, b] = sum_i ri[a, i, tau] rj[b, i, tau]`` (lag, a, b), float64."""
    ri = np.asarray(ri, dtype=np.float64)
    rj = np.asarray(rj, dtype=np.float64)
    return np.matmul(ri.transpose(2, 0, 1), rj.transpose(2, 1, 0))


def lag_gram(R) -> np.ndarray:
    """Per-lag Gram tensor (lag, N, N) of a dask lag field (N, query, lag), block by block.

    The result is in memory (``8 L N^2`` bytes): for large N use :func:`window_grams`.
    """
    R = whole(R, (1, 2))
    n, n_lag = R.shape[0], R.shape[2]
    G = np.empty((n_lag, n, n))
    _pairwise(R, _lag_gram_pair, None, G)
    return G


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


class Snapshots:
    """One ensemble of fields as the POD sees it, chunk by chunk (see
    :class:`msapod.backends.memory.Snapshots` for the in-memory namesake).

    The entries of the lag form are packed straight from the chunks of ``one`` (key or
    lag form, ``(N, query, key|lag)``), the mean field ``center`` subtracted on the way:
    no lag-form pass. Grams are formed over pairs of snapshot chunks, only for the
    windows asked for; all windows' modes come from one more pass.
    """

    def __init__(self, one: xr.DataArray, layout, center: np.ndarray | None = None) -> None:
        self.n = one.shape[0]
        n_lag = len(layout.lags)
        if layout.lag_form:
            # every (query, lag) entry, as the in-memory path uses
            sel = np.arange(len(layout.qpos) * n_lag)
            self.col = np.tile(np.arange(n_lag), len(layout.qpos))
            self.pos = sel
        else:
            qi, self.col = np.nonzero(layout.valid)  # entries in lag-form order (query-major)
            sel = qi * len(layout.kpos) + layout.idx[qi, self.col]
            self.pos = qi * n_lag + self.col
        self.size = len(layout.qpos) * n_lag
        sub = None if center is None else center.reshape(-1)[sel]
        self.X = pack(one.data, sel, sub)

    def grams(self, W2: np.ndarray, out: np.ndarray) -> None:
        """``out[w] = K_w`` for the squared windows ``W2`` (window, lag); ``out`` zeroed."""
        window_grams(self.X, W2[:, self.col], out=out, zeroed=True)
        out /= self.n

    def project(self, Vts: list) -> list:
        """``V_w^T X`` in lag form (mode, query * lag), one per window, in one pass."""
        proj = project(self.X, np.concatenate(Vts))
        out, start = [], 0
        for Vt in Vts:
            phi = np.zeros((len(Vt), self.size))
            phi[:, self.pos] = proj[start : start + len(Vt)]
            out.append(phi)
            start += len(Vt)
        return out


def pod_operand(A: xr.DataArray, R: xr.DataArray, mean: xr.DataArray):
    """What :func:`msapod.analyze` decomposes: ``A`` itself, ``mean`` removed chunk by
    chunk while packing (no lag-form pass over the fluctuation)."""
    return A, mean


def eig_top(K: np.ndarray, n_modes: int) -> tuple[np.ndarray, np.ndarray]:
    """All eigenvalues (descending, clipped at 0) and the leading ``n_modes`` eigenvectors.

    Few modes: the eigenvalues alone and a subset eigensolve (no N x N eigenvector
    matrix); many: one full ``eigh``.
    """
    n = len(K)
    if 2 * n_modes >= n:
        lam, V = np.linalg.eigh(K)
        return np.clip(lam[::-1], 0.0, None), V[:, ::-1][:, :n_modes]
    from scipy.linalg import eigh

    lam = eigh(K, eigvals_only=True, check_finite=False)
    _, V = eigh(K, subset_by_index=[n - n_modes, n - 1], check_finite=False)
    return np.clip(lam[::-1], 0.0, None), V[:, ::-1]


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


def coherency_sums(R: xr.DataArray, dim: str, Bs: list):
    """Per-scale ``sum_s Y_s Y_s^H`` (scale, query, query) of a dask lag field, no lead dims."""
    X = whole(R.transpose(dim, "query", "lag").data, (1, 2))
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


def residual(u: xr.DataArray, dim: str, Bm: np.ndarray, C: np.ndarray | None) -> float:
    """``(1/N) sum_s ||u_s - c_s Bm||^2`` of a dask field (``C`` None: project onto Bm)."""
    import dask.array as da

    x = whole(u.transpose(dim, "query", "key").data, (1, 2))
    parts = []
    offs = np.r_[0, np.cumsum(x.chunks[0])]
    for i, blk in enumerate(x.to_delayed().ravel()):
        Cb = None if C is None else C[offs[i] : offs[i + 1]]
        from dask import delayed

        parts.append(
            da.from_delayed(
                delayed(_residual_block, pure=True)(blk, Bm, Cb), shape=(1,), dtype=np.float64
            )
        )
    return float(da.concatenate(parts).sum().compute()) / u.sizes[dim]


eigensolve = eig_top  # the name the dispatch uses (see msapod.backends.kernels)
