"""Training step time of standard and energy-gated attention (EGA), in one process.

One optimisation step is the zoo's: a batch of 16 x 256 characters, forward, backward,
gradient clipping and AdamW, through :func:`msapod.models.train._step`. The script times
it for standard attention and EGA at d_model 128 and 256 with the regularisers one may
consider for the paper-size zoo:

* ``none``: no dropout (the d = 128 zoo),
* ``resid``: dropout 0.1 on the embeddings, residual branches and MLP, none on the
  attention weights (the paper-size zoo's recipe: the fused attention kernel stays),
* ``attn``: dropout 0.1 everywhere, attention weights included (leaves the fused kernel),
* ``bf16``: ``resid`` under bf16 autocast (``--bf16``; emulated and very slow on CPUs
  without native bf16, so off by default).

The configurations are timed in turns (``--repeats`` rounds of ``--steps`` steps each,
after a warm-up), so a change of machine load hits them alike; the script prints the
median seconds per step, the ratios EGA / standard and regulariser / none, the torch
thread count (default: the cores available to this process, as training uses) and the
load average before and after. Compare the ratios, not the seconds.

Usage::

    python benchmarks/bench_train.py                  # d 128 and 256, none/resid/attn
    python benchmarks/bench_train.py --sizes 128 --steps 3 --repeats 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import numpy as np
import torch

from msapod.models.data import load_corpus
from msapod.models.gpt import GPT, GPTConfig
from msapod.models.train import TrainConfig, _optimizer, _step, cpu_has_native_bf16

REGULARISERS = {
    "none": {"dropout": 0.0},
    "resid": {"dropout": 0.1, "attention_dropout": 0.0},
    "attn": {"dropout": 0.1, "attention_dropout": 0.1},
}


def _setup(d: int, attention: str, reg: str):
    model_kw = {"n_embd": d, "attention": attention, **REGULARISERS[reg.removesuffix("-bf16")]}
    cfg = TrainConfig(name="bench", seed=0, model=GPTConfig(**model_kw))
    torch.manual_seed(0)
    model = GPT(cfg.model)
    model.train()
    opt = _optimizer(model, cfg)
    bf16 = reg.endswith("-bf16")
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    return cfg, model, opt, autocast


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 256])
    p.add_argument("--regularisers", nargs="+", default=["none", "resid", "attn"])
    p.add_argument("--bf16", action="store_true", help="also time 'resid' under bf16 autocast")
    p.add_argument("--steps", type=int, default=4, help="steps per timing")
    p.add_argument("--repeats", type=int, default=3, help="rounds over all configurations")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    corpus = load_corpus()
    regs = list(args.regularisers) + (["resid-bf16"] if args.bf16 else [])
    keys = [(d, a, r) for d in args.sizes for r in regs for a in ("standard", "ega")]
    setups = {k: _setup(*k) for k in keys}
    times: dict = {k: [] for k in keys}
    load0 = os.getloadavg()[0]
    step = 0
    for k in keys:  # warm-up: first steps allocate
        cfg, model, opt, autocast = setups[k]
        _step(model, opt, cfg, corpus, 0, torch.device("cpu"), autocast, [])
    for _ in range(args.repeats):
        for k in keys:
            cfg, model, opt, autocast = setups[k]
            t0 = time.perf_counter()
            for _ in range(args.steps):
                step += 1
                _step(model, opt, cfg, corpus, step, torch.device("cpu"), autocast, [])
            times[k].append((time.perf_counter() - t0) / args.steps)
    load1 = os.getloadavg()[0]
    print(
        f"torch threads {args.threads}, native bf16 {cpu_has_native_bf16()}, "
        f"load average {load0:.1f} -> {load1:.1f}; median s/step over {args.repeats} rounds"
        f" of {args.steps} steps (batch 16 x 256, fwd + bwd + clip + AdamW)"
    )
    print(f"{'d':>4} {'regulariser':<11} {'standard':>9} {'EGA':>9} {'EGA/std':>8} {'std/none':>9}")
    med = {k: float(np.median(v)) for k, v in times.items()}
    for d in args.sizes:
        for r in regs:
            s, e = med[(d, "standard", r)], med[(d, "ega", r)]
            base = med.get((d, "standard", "none"))
            rel = f"{s / base:9.2f}" if base else f"{'-':>9}"
            print(f"{d:>4} {r:<11} {s:9.3f} {e:9.3f} {e / s:8.2f} {rel}")


if __name__ == "__main__":
    main()
