"""The chunked (dask) path of ``msapod.analyze`` on an ensemble larger than memory allows.

One synthetic layer (causal softmax attention, L = 256) of N = 5,000 snapshots is
generated lazily, chunk by chunk, from a seeded per-chunk generator (block i always gives
the same snapshots), so the ensemble is never held in memory. ``msapod.analyze`` runs on it
through the chunked path. As a reference, the in-memory path runs on the same snapshots
at the largest N of ``--mem-n`` whose peak RSS stays under the budget, and the chunked path
is timed at that N too: the ratio of the two is printed with their agreement.

Every configuration runs in its own subprocess, so each peak RSS (``ru_maxrss``) is its
own. Timings are wall-clock on this machine and include, for the chunked path, the
synthesis of every chunk each time a pass loads it (printed separately): compare ratios.

Usage::

    python benchmarks/bench_dask.py                    # N = 5000, chunks of 200
    python benchmarks/bench_dask.py --n 2000 --chunk 200 --mem-n 300 600
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

BUDGET_MB = 2048


def synthetic_block(index: int, size: int, L: int, seed: int = 0) -> np.ndarray:
    """``size`` snapshots of causal row-stochastic attention (float32), block ``index``.

    A local (lag 1) and a broad periodic (period 24) component with snapshot-dependent
    amplitudes, plus entry noise: a few dominant scales and a long spectral tail. Built
    in place (one ``size x L x L`` buffer).
    """
    rng = np.random.default_rng([seed, index])
    i, j = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    tau = (i - j).astype(np.float32)
    broad = (np.cos(2 * np.pi * tau / 24) * np.exp(-np.maximum(tau, 0) / 60)).astype(np.float32)
    a_local = 2.0 * rng.standard_normal(size, dtype=np.float32)
    a_broad = rng.standard_normal(size, dtype=np.float32)
    logits = rng.random((size, L, L), dtype=np.float32)  # uniform noise, sd 0.5
    logits -= 0.5
    logits *= np.float32(np.sqrt(3.0))
    logits -= tau / 30
    for s in range(size):
        logits[s] += a_broad[s] * broad
        logits[s, np.arange(1, L), np.arange(L - 1)] += a_local[s]
    logits[:, tau < 0] = -np.inf
    logits -= logits.max(-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(-1, keepdims=True)
    return logits


def _block(size: int, L: int, seed: int, block_id=None) -> np.ndarray:
    return synthetic_block(block_id[0], size, L, seed)


def lazy_ensemble(n: int, L: int, chunk: int, seed: int = 0):
    """Dask-backed DataArray (snapshot, query, key): chunk i is ``synthetic_block(i)``.

    Chunks all have ``chunk`` snapshots (N is rounded up to a whole number of chunks
    then cut), so the snapshots of a given index do not depend on N.
    """
    import dask.array as da
    import xarray as xr

    m = -(-n // chunk)
    x = da.map_blocks(
        _block,
        chunk,
        L,
        seed,
        chunks=((chunk,) * m, (L,), (L,)),
        dtype=np.float32,
        meta=np.array((), dtype=np.float32),
    )[:n]
    return xr.DataArray(x, dims=("snapshot", "query", "key"), attrs={"model": "synthetic"})


def run_one(mode: str, n: int, L: int, chunk: int, out: str) -> None:
    """Child process: one configuration; writes its figures (and spectra) to ``out``."""
    import msapod

    A = lazy_ensemble(n, L, chunk)
    rec: dict = {"mode": mode, "n": n, "L": L, "chunk": chunk}
    if mode == "memory":
        t0 = time.perf_counter()
        A = A.compute()  # synthesis: not timed
        rec["synthesis_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ds = msapod.analyze(A)
        rec["time_s"] = time.perf_counter() - t0
    else:
        t0 = time.perf_counter()
        A.data.sum().compute()  # one pass of synthesis alone, for reference
        rec["synthesis_s"] = time.perf_counter() - t0
        from msapod.backends.chunked import PANEL_BYTES

        m = len(A.chunks[0])
        packed = chunk * (L * (L + 1) // 2) * 8  # one chunk of causal entries, float64
        panel = max(1, PANEL_BYTES // packed)
        # checks + mean, lag moments, modes: one load each; Grams: each chunk once per panel
        rec["chunk_loads"] = 3 * m + sum(m - i0 for i0 in range(0, m, panel))
        t0 = time.perf_counter()
        ds = msapod.analyze(A)
        rec["time_s"] = time.perf_counter() - t0
    rec["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rec["n_windows"] = int(np.isfinite(ds["dominant_scale"]).sum()) + 1
    np.savez(
        out + ".npz",
        spectrum=ds["spectrum"].values,
        energy=ds["energy"].values,
        gram=ds["gram"].values if n <= 2000 else np.zeros(0),
    )
    with open(out + ".json", "w") as f:
        json.dump(rec, f)


def child(mode: str, n: int, L: int, chunk: int, tmp: str) -> dict:
    out = os.path.join(tmp, f"{mode}-{n}")
    cmd = [sys.executable, __file__, "--child", mode, "--n", str(n)]
    cmd += ["--length", str(L), "--chunk", str(chunk), "--out", out]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"mode": mode, "n": n, "failed": proc.stderr.strip().splitlines()[-1:]}
    with open(out + ".json") as f:
        rec = json.load(f)
    rec["arrays"] = out + ".npz"
    return rec


def rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.nan_to_num(a), np.nan_to_num(b)
    return float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-300))


def describe(r: dict) -> str:
    if "failed" in r:
        return f"{r['mode']:8s} N={r['n']:5d}: failed ({r['failed']})"
    extra = ""
    if r["mode"] == "chunked":
        extra = f", {r['chunk_loads']} chunk loads, one synthesis pass {r['synthesis_s']:.1f} s"
    return (
        f"{r['mode']:8s} N={r['n']:5d} L={r['L']} ({r['n_windows']} windows): "
        f"{r['time_s']:7.1f} s, peak RSS {r['peak_rss_mb']:6.0f} MB{extra}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--chunk", type=int, default=200)
    ap.add_argument("--mem-n", type=int, nargs="+", default=[250, 500, 750])
    ap.add_argument("--child", choices=["memory", "chunked"])
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.child:
        run_one(args.child, args.n, args.length, args.chunk, args.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        mem = None
        for n in sorted(args.mem_n):
            r = child("memory", n, args.length, args.chunk, tmp)
            print(describe(r), flush=True)
            if "failed" in r or r["peak_rss_mb"] >= BUDGET_MB:
                break
            mem = r
        if mem is not None:
            ck = child("chunked", mem["n"], args.length, args.chunk, tmp)
            print(describe(ck), flush=True)
            if "failed" not in ck:
                a, b = np.load(mem["arrays"]), np.load(ck["arrays"])
                print(
                    f"  largest in-memory N within {BUDGET_MB} MB: {mem['n']}; chunked / "
                    f"in-memory time {ck['time_s'] / mem['time_s']:.2f}x, RSS "
                    f"{ck['peak_rss_mb'] / mem['peak_rss_mb']:.2f}x; agreement (max rel): "
                    f"spectrum {rel(a['spectrum'], b['spectrum']):.1e}, scalogram "
                    f"{rel(a['energy'], b['energy']):.1e}, Gram {rel(a['gram'], b['gram']):.1e}",
                    flush=True,
                )
        big = child("chunked", args.n, args.length, args.chunk, tmp)
        print(describe(big), flush=True)
        if "failed" not in big:
            ok = big["peak_rss_mb"] < BUDGET_MB
            print(
                f"  N={args.n}: peak RSS {big['peak_rss_mb']:.0f} MB "
                f"{'<' if ok else '>='} {BUDGET_MB} MB budget"
                + (
                    f"; time per snapshot {1e3 * big['time_s'] / args.n:.1f} ms vs "
                    f"{1e3 * mem['time_s'] / mem['n']:.1f} ms in memory at N={mem['n']}"
                    if mem
                    else ""
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
