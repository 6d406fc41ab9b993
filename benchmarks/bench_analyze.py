"""Speed and memory of ``msapod.analyze`` against a naive pipeline, in one process.

The naive reference is what one writes first: ``pywt.cwt`` of every lag profile
(snapshot x query row) accumulated into |W|^2, then ``numpy.linalg.svd`` of the N x P
snapshot matrix for the plain POD and for each of three Gaussian-windowed fields. Both
run on the same synthetic layer (N = 150, L = 256, 48 scales by default), and the script
prints the ratio. It then streams 24 synthetic layers (4 models x 6 layers) through
``msapod.analyze`` one at a time and reports the total time and the peak RSS.

Usage::

    python benchmarks/bench_analyze.py              # full naive run (~1 min per layer)
    python benchmarks/bench_analyze.py --naive-rows 2048   # time the naive CWT on a
                                                    # subset of rows and extrapolate
Timings are wall-clock on this machine: compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import xarray as xr

import msapod


def synthetic_layer(n: int, L: int, seed: int) -> xr.DataArray:
    """Causal softmax attention with a local and a broad, snapshot-dependent component."""
    rng = np.random.default_rng(seed)
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    tau = i - j
    local = rng.standard_normal((n, 1, 1)) * 2.0 * (tau == 1)
    broad = rng.standard_normal((n, 1, 1)) * np.cos(2 * np.pi * tau / 24) * np.exp(-tau / 60)
    logits = local + broad + 0.5 * rng.standard_normal((n, L, L)) - tau / 30
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument(
        "--naive-rows",
        type=int,
        default=None,
        help="time the naive CWT on this many rows and extrapolate",
    )
    args = ap.parse_args()
    A = synthetic_layer(args.n, args.length, 0)
    scales = msapod.log_scales(args.length)

    msapod.analyze(A)  # warm-up (caches the wavelet matrix, as a real run over layers does)
    t0 = time.perf_counter()
    ds = msapod.analyze(A)
    t_fast = time.perf_counter() - t0
    print(
        f"msapod.analyze, one layer (N={args.n}, L={args.length}, {len(scales)} scales, "
        f"plain POD + {int(np.isfinite(ds['dominant_scale']).sum())} windows): "
        f"{t_fast:.2f} s"
    )

    t_all = 0.0
    for k in range(args.layers):
        layer = synthetic_layer(args.n, args.length, k + 1)  # input synthesis: not timed
        t0 = time.perf_counter()
        msapod.analyze(layer)
        t_all += time.perf_counter() - t0
        del layer
    rss_fast = peak_rss_mb()
    print(
        f"msapod.analyze, {args.layers} layers streamed one at a time: {t_all:.1f} s "
        f"({t_all / args.layers:.2f} s per layer); peak RSS {rss_fast:.0f} MB"
    )

    lags = np.arange(args.length)
    windows = np.stack(
        [np.exp(-((lags - c) ** 2) / (2 * s**2)) for c, s in ((1, 3), (20, 12), (60, 40))]
    )
    t_cwt, t_pod, n_rows, n_all = naive(A, scales, windows, args.naive_rows)
    t_naive = t_cwt + t_pod
    note = "" if n_rows == n_all else f" (CWT timed on {n_rows} of {n_all} rows, extrapolated)"
    print(
        f"naive (pywt.cwt per row + numpy SVD x4): {t_naive:.1f} s per layer{note}: "
        f"CWT {t_cwt:.1f} s, SVD {t_pod:.2f} s"
    )
    print(
        f"speed-up per layer: {t_naive / t_fast:.0f}x; peak RSS of the whole run "
        f"{peak_rss_mb():.0f} MB"
    )


if __name__ == "__main__":
    main()
