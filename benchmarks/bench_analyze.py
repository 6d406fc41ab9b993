"""Speed and memory of ``msapod.analyze`` against the plain-numpy version of its arithmetic.

On one synthetic layer (N = 150, L = 256, 48 scales, plain POD + 3 windows) the script
times ``msapod.analyze`` and, in the same run, the same arithmetic written as plain numpy
on bare arrays (Reynolds split, lag gather, lag moments of A, scalogram, peaks, windows, the
per-lag Gram tensor, one eigensolve and projection per window; no labels, no checks), and
prints both and their ratio (best of ``--repeat`` runs each; target <= 1), once with the
BLAS threads as they are and once with both on one BLAS thread (the ratio that a busy
machine leaves steady: on shared cores threaded BLAS spins), with the peak memory each
allocates (tracemalloc, in a separate untimed run) and the machine's load. It then streams
24 synthetic layers (4 models x 6 layers, the zoo) through ``msapod.analyze`` one at a
time and reports the total time (target: at most 4.5 s on 2 idle cores of a machine on
which the plain arithmetic takes 0.183 s per layer), its ratio to 24 times the plain
arithmetic measured in the same run, and the peak RSS.
``--naive`` also times what one writes first: ``pywt.cwt`` of every lag profile and
``numpy.linalg.svd`` per window.

Usage::

    python benchmarks/bench_analyze.py
    python benchmarks/bench_analyze.py --naive --naive-rows 2048

Timings are wall-clock on this machine: compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's msapod
import msapod  # noqa: E402


def synthetic_layer(n: int, L: int, seed: int) -> xr.DataArray:
    """Causal softmax attention with a local, a mid (period 6) and a broad (period 24)
    snapshot-dependent component: three dominant scales, so plain POD + 3 windows."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    tau = i - j
    local = rng.standard_normal((n, 1, 1)) * 2.0 * (tau == 1)
    mid = rng.standard_normal((n, 1, 1)) * 1.5 * np.cos(2 * np.pi * tau / 6) * np.exp(-tau / 12)
    broad = rng.standard_normal((n, 1, 1)) * np.cos(2 * np.pi * tau / 24) * np.exp(-tau / 60)
    logits = local + mid + broad + 0.5 * rng.standard_normal((n, L, L)) - tau / 30
    logits = np.where(tau >= 0, logits, -np.inf)
    A = np.exp(logits - logits.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return xr.DataArray(A.astype(np.float32), dims=("snapshot", "query", "key"))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def naive(A: xr.DataArray, scales: np.ndarray, windows: np.ndarray, rows: int | None):
    import pywt

    u = (A - A.mean("snapshot")).values.astype(np.float64)
    R = msapod.to_lag(xr.DataArray(u, dims=A.dims)).values
    profiles = R.reshape(-1, R.shape[-1])
    n_rows = len(profiles) if rows is None else min(rows, len(profiles))
    t0 = time.perf_counter()
    E = np.zeros((len(scales), R.shape[-1]))
    for r in profiles[:n_rows]:
        W, _ = pywt.cwt(r, scales, "cmor1.5-1.0")
        E += np.abs(W) ** 2
    t_cwt = (time.perf_counter() - t0) * len(profiles) / n_rows
    t0 = time.perf_counter()
    X = u.reshape(u.shape[0], -1)
    np.linalg.svd(X, full_matrices=False)
    n, L = u.shape[0], u.shape[-1]
    tau = np.subtract.outer(np.arange(L), np.arange(L))
    for w in windows:
        np.linalg.svd((u * w[np.clip(tau, 0, L - 1)]).reshape(n, -1), full_matrices=False)
    t_pod = time.perf_counter() - t0
    return t_cwt, t_pod, n_rows, len(profiles)


def wavelet_parts(scales: np.ndarray, L: int, omega0: float = 6.0):
    """Real and imaginary parts of the Morlet matrix (scale * b, tau), formed once (as
    analyze caches it)."""
    lags = np.arange(L)
    eta = (lags[None, None, :] - lags[None, :, None]) / scales[:, None, None]
    Phi = np.pi**-0.25 * np.exp(-1j * omega0 * eta - 0.5 * eta**2)
    Phi = (Phi / np.sqrt(scales)[:, None, None]).reshape(-1, L)
    return np.ascontiguousarray(Phi.real), np.ascontiguousarray(Phi.imag)


def plain_numpy(A: np.ndarray, scales: np.ndarray, parts, n_modes: int = 10):
    """analyze's arithmetic on a bare causal ``A (N, L, L)``, written plainly in numpy."""
    n, L, _ = A.shape
    u = A.astype(np.float64)
    mean = u.mean(0)
    u -= mean
    i, t = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")  # (query, lag)
    R = np.take_along_axis(u, np.broadcast_to(np.clip(i - t, 0, None), u.shape), -1)
    R *= i >= t  # (N, query, lag)
    X = R.reshape(-1, L)
    Rm = np.take_along_axis(mean, np.clip(i - t, 0, None), -1) * (i >= t)  # (query, lag)
    C = X.T @ X / len(X) + Rm.T @ Rm / L  # the lag moments of A: u's plus the mean field's
    Pr, Pi = parts
    E = np.einsum("kt,kt->k", Pr @ C, Pr) + np.einsum("kt,kt->k", Pi @ C, Pi)
    E = E.reshape(len(scales), L)
    spec = E.sum(-1) / scales
    mid = np.flatnonzero((spec[1:-1] > spec[:-2]) & (spec[1:-1] >= spec[2:])) + 1
    peaks = mid[np.argsort(-spec[mid])][:3]
    lags = np.arange(L)
    W = [np.ones(L)] + [
        np.exp(-((lags - lags[E[p].argmax()]) ** 2) / (2 * scales[p] ** 2)) for p in peaks
    ]
    Rt = np.ascontiguousarray(R.transpose(2, 0, 1))
    G = np.matmul(Rt, Rt.transpose(0, 2, 1))  # (lag, N, N)
    out = []
    for w in W:
        K = np.tensordot(w**2, G, axes=(0, 0)) / n
        lam, V = np.linalg.eigh(K)
        V = V[:, ::-1][:, :n_modes]
        phi = (V.T @ R.reshape(n, -1)).reshape(n_modes, L, L) * w
        out.append((lam[::-1], phi, V))
    return E, out


def best_time(f, repeat: int) -> tuple[float, float]:
    """Least wall-clock and least CPU time of ``repeat`` calls (on a busy machine the CPU
    time is the steadier measure)."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def peak_alloc_mb(f) -> float:
    """Peak memory allocated while ``f`` runs (tracemalloc: numpy's buffers included)."""
    tracemalloc.start()
    f()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive", action="store_true", help="also time pywt.cwt + numpy SVD")
    ap.add_argument(
        "--naive-rows",
        type=int,
        default=None,
        help="time the naive CWT on this many rows and extrapolate",
    )
    args = ap.parse_args()
    A = synthetic_layer(args.n, args.length, 0)
    a = A.values
    scales = msapod.log_scales(args.length)
    parts = wavelet_parts(scales, args.length)

    ds = msapod.analyze(A)  # warm-up (caches the wavelet matrix, as a run over layers does)
    plain_numpy(a, scales, parts)
    t_fast = best_time(lambda: msapod.analyze(A), args.repeat)
    t_plain = best_time(lambda: plain_numpy(a, scales, parts), args.repeat)
    with threadpool_limits(1, user_api="blas"):
        t_fast1 = best_time(lambda: msapod.analyze(A), args.repeat)
        t_plain1 = best_time(lambda: plain_numpy(a, scales, parts), args.repeat)
    m_fast = peak_alloc_mb(lambda: msapod.analyze(A))
    m_plain = peak_alloc_mb(lambda: plain_numpy(a, scales, parts))
    n_win = int(np.isfinite(ds["dominant_scale"]).sum())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"one layer (N={args.n}, L={args.length}, {len(scales)} scales, plain POD + "
        f"{n_win} windows), best of {args.repeat}; {os.cpu_count()} cores, load {load}:"
    )
    print(
        f"  msapod.analyze          {t_fast[0]:6.3f} s wall {t_fast[1]:6.3f} s CPU   "
        f"peak alloc {m_fast:5.0f} MB"
    )
    print(
        f"  plain numpy arithmetic  {t_plain[0]:6.3f} s wall {t_plain[1]:6.3f} s CPU   "
        f"peak alloc {m_plain:5.0f} MB"
    )
    print(
        f"  ratio analyze / plain numpy: {t_fast[0] / t_plain[0]:.2f} wall, "
        f"{t_fast[1] / t_plain[1]:.2f} CPU; both on one BLAS thread: "
        f"{t_fast1[0] / t_plain1[0]:.2f} wall, {t_fast1[1] / t_plain1[1]:.2f} CPU (target <= 1)"
    )

    if not args.layers:
        return
    walls, cpus, wins = [], [], []
    for k in range(args.layers):
        layer = synthetic_layer(args.n, args.length, k + 1)  # input synthesis: not timed
        t0, c0 = time.perf_counter(), time.process_time()
        out = msapod.analyze(layer)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        wins.append(int(np.isfinite(out["dominant_scale"]).sum()))
        del layer, out
    t_all, c_all = sum(walls), sum(cpus)
    print(
        f"msapod.analyze, {args.layers} layers streamed one at a time: {t_all:.1f} s wall, "
        f"{c_all:.1f} s CPU ({t_all / args.layers:.2f} s per layer; target <= 4.5 s for the "
        f"zoo's 24 on 2 idle cores); peak RSS {peak_rss_mb():.0f} MB"
    )
    plain_all = args.layers * t_plain[0]
    print(
        f"  against the plain-numpy arithmetic of the same layers on this machine "
        f"({args.layers} x its best single layer, {plain_all:.1f} s): {t_all / plain_all:.2f} "
        f"wall; the 4.5 s target is {4.5 / args.layers / 0.183:.2f} x the plain arithmetic "
        "where it takes 0.183 s per layer"
    )
    print(
        f"  per layer: median {np.median(walls):.3f} s wall, {np.median(cpus):.3f} s CPU "
        f"(vs best single layer {t_fast[0]:.3f} / {t_fast[1]:.3f}); windows per layer "
        f"{min(wins)}-{max(wins)} (+ plain)"
    )
    if not args.naive:
        return
    lags = np.arange(args.length)
    windows = np.stack(
        [np.exp(-((lags - c) ** 2) / (2 * s**2)) for c, s in ((1, 3), (20, 12), (60, 40))]
    )
    t_cwt, t_pod, n_rows, n_all = naive(A, scales, windows, args.naive_rows)
    t_naive = t_cwt + t_pod
    note = "" if n_rows == n_all else f" (CWT timed on {n_rows} of {n_all} rows, extrapolated)"
    print(
        f"naive (pywt.cwt per row + numpy SVD x4): {t_naive:.1f} s per layer{note}: "
        f"CWT {t_cwt:.1f} s, SVD {t_pod:.2f} s; speed-up {t_naive / t_fast[0]:.0f}x"
    )


if __name__ == "__main__":
    main()
