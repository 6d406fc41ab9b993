"""Per-mask vs batched head-ablation losses (``msapod.studies.measure.prune``), in one process.

The old way scores each head mask with its own full forward passes
(:func:`msapod.studies.measure.prune.ablation_loss`, one :func:`msapod.models.train.evaluate`
per mask); the new one, :func:`msapod.studies.measure.prune.ablation_losses`, scores all masks
on each token batch at once, sharing the forward pass of common mask prefixes and each
prefix's attention. Both run on one zoo model (default ``baseline-1``) for a reduced
set of masks drawn like :func:`msapod.studies.measure.prune.model_pruning` draws them (the
unpruned model, the randomised strategies at every budget, and low/high "H*" masks
from a stand-in score that orders heads by layer, since the real per-head H* takes
minutes to compute). The two are timed alternately, ``--repeats`` times each, and the
script prints the best wall-clock and process CPU times, their ratios and the largest
relative difference of the losses.

Usage::

    MSAPOD_DATA=/path/to/data python benchmarks/bench_prune.py
    python benchmarks/bench_prune.py --model ega-1 --draws 2 --batches 4

Timings are for this machine (other processes may share the CPU; the process CPU time
is less sensitive to that than the wall clock): compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from msapod.models.data import load_corpus
from msapod.models.zoo import load
from msapod.studies.measure import prune


def masks_for(L: int, H: int, budgets, draws: int, seed: int = 0) -> np.ndarray:
    """The unpruned mask, low/high by a layer-ordered stand-in score, randomised draws."""
    score = np.arange(L * H, dtype=float).reshape(L, H)  # stand-in for rank_score
    layer_score = np.repeat(np.linspace(20.0, 60.0, L)[:, None], H, axis=1)
    out = [np.ones((L, H), dtype=np.int8)]
    for b in budgets:
        out.append(prune.prune_masks(score, b, "low-H*"))
        out.append(prune.prune_masks(score, b, "high-H*"))
        for st in prune.RANDOMISED:
            s = layer_score if st == "H*-allocation" else score
            for d in range(draws):
                rng = np.random.default_rng([seed, b, prune.STRATEGIES.index(st), d])
                out.append(prune.prune_masks(s, b, st, rng))
    return np.stack(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="baseline-1")
    ap.add_argument("--budgets", type=int, nargs="+", default=[8, 16, 24])
    ap.add_argument("--draws", type=int, default=1, help="draws per randomised strategy")
    ap.add_argument("--batches", type=int, default=2, help="eval batches (the study: 8)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: as is)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load(args.model)
    cfg = model.config
    tokens = load_corpus().val
    masks = masks_for(cfg.n_layer, cfg.n_head, args.budgets, args.draws)
    ev = dict(batches=args.batches, batch_size=args.batch_size)
    print(
        f"{args.model}: {len(masks)} masks, {args.batches} x {args.batch_size} windows of "
        f"{cfg.block_size}, torch threads {torch.get_num_threads()}"
    )

    def old():
        return np.array([prune.ablation_loss(model, m, tokens, **ev) for m in masks])

    def new():
        return prune.ablation_losses(model, masks, tokens, **ev)

    wall = {"per-mask": [], "batched": []}
    cpu = {"per-mask": [], "batched": []}
    results = {}
    for _ in range(args.repeats):
        for label, fn in (("per-mask", old), ("batched", new)):
            t, c = time.perf_counter(), time.process_time()
            results[label] = fn()
            wall[label].append(time.perf_counter() - t)
            cpu[label].append(time.process_time() - c)
            print(
                f"  {label:9s} {wall[label][-1]:8.2f} s wall {cpu[label][-1]:8.2f} s CPU",
                flush=True,
            )
    for what, d in (("wall", wall), ("CPU", cpu)):
        t_old, t_new = min(d["per-mask"]), min(d["batched"])
        print(
            f"best {what}: per-mask {t_old:.2f} s, batched {t_new:.2f} s: "
            f"{t_old / t_new:.2f}x faster"
        )
    rel = np.abs(results["batched"] / results["per-mask"] - 1).max()
    print(f"largest relative difference of the losses: {rel:.2e}")


if __name__ == "__main__":
    main()
