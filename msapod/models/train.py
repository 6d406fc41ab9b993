"""Training of the character-level GPTs: seeded, resumable, logged, safetensors checkpoints.

A run lives in one folder::

    <run>/config.json        model + training config, data sha256, weights sha256
    <run>/model.safetensors  weights, stored in ``TrainConfig.storage`` (float32 or float16)
    <run>/log.json           train/val loss history, wall time per step, load, machine

The resumable state lives under the cache, never in the repository (:func:`state_file`),
replaced atomically every :data:`SAVE_EVERY` steps or less. Batches are drawn from
``numpy.random.default_rng([seed, step])`` and dropout from the saved torch RNG state, so
a resumed run equals an uninterrupted one bit for bit.

``precision="bf16"`` runs the passes under bf16 autocast with float32 master weights
(:func:`train` warns on a CPU without native bf16, :func:`cpu_has_native_bf16`).
``storage="float16"`` rounds the stored weights to float16: the stored model *is* the
model, evaluated and analysed everywhere.

:func:`validation_loss` is the one validation metric of the book and the CLI.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .._io import atomic_path, cache_dir, check_int, sha256_file, write_json
from .config import (
    CONFIG,
    STORAGES,
    WEIGHTS,
    GPTConfig,
    TrainConfig,
    config_digest,
    read_config,
    write_config,
)
from .data import Corpus, load_corpus
from .gpt import GPT
from .record import inference

__all__ = [
    "TrainConfig",
    "evaluate",
    "load_checkpoint",
    "save_checkpoint",
    "snapshot_path",
    "state_file",
    "state_key",
    "config_digest",
    "cpu_has_native_bf16",
    "read_config",
    "train",
    "validation_loss",
    "write_config",
]

STATE = "state.safetensors"
LOG = "log.json"
STORAGE = dict(zip(STORAGES, (torch.float32, torch.float16), strict=True))


def lr_at(cfg: TrainConfig, step: int) -> float:
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    frac = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * frac))


def get_batch(ids: np.ndarray, block: int, batch: int, rng: np.random.Generator):
    starts = rng.integers(0, len(ids) - block - 1, size=batch)
    x = np.stack([ids[s : s + block] for s in starts]).astype(np.int64)
    y = np.stack([ids[s + 1 : s + block + 1] for s in starts]).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(y)


def evaluate(model: GPT, ids: np.ndarray, batches: int = 20, batch_size: int = 16) -> float:
    """Mean cross-entropy (nats/char) on fixed, seeded validation batches."""
    rng = np.random.default_rng(1234)
    block = model.config.block_size
    with inference(model):
        losses = [model(*get_batch(ids, block, batch_size, rng))[1].item() for _ in range(batches)]
    return float(np.mean(losses))


def validation_loss(
    model: GPT, ids: np.ndarray, stride: int | None = None, batch_size: int = 16
) -> float:
    """Mean next-character loss (nats/char) over the *whole* token sequence ``ids``.

    Windows of the model's ``block_size`` advance by ``stride`` (default ``block // 2``);
    the first window scores all its positions, every later one only its last ``stride``
    positions (the ones not scored before), so each of the ``len(ids) - 1`` targets is
    scored exactly once and every target after the first window sees at least
    ``block - stride`` characters of context. The last window ends at the sequence's end.

    Parameters
    ----------
    model : GPT
        Evaluated in eval mode (dropout off), in float32.
    ids : numpy.ndarray
        1-D token ids, e.g. ``load_corpus().val`` (the last 10 % of the text).
    stride : int, optional
        Window advance, ``1 <= stride <= block_size``.
    """
    ids = np.asarray(ids)
    block = model.config.block_size
    stride = block // 2 if stride is None else stride
    if ids.ndim != 1 or len(ids) < 2:
        raise ValueError(f"ids: expected a 1-D sequence of >= 2 tokens, got shape {ids.shape}")
    stride = check_int(stride, "stride", 1)
    if stride > block:
        raise ValueError(f"stride: expected 1 <= stride <= block_size={block}, got {stride}")
    n = len(ids) - 1  # targets ids[1:], predicted from ids[:-1]
    width = min(block, n)
    # (start, first scored offset inside the window): windows end at start + width
    spans = [(0, 0)]
    scored = width  # targets 0 .. scored-1 are done
    while scored < n:
        end = min(scored + stride, n)
        start = end - width
        spans.append((start, scored - start))
        scored = end
    total = 0.0
    with inference(model):
        for b in range(0, len(spans), batch_size):
            chunk = spans[b : b + batch_size]
            x = np.stack([ids[s : s + width] for s, _ in chunk]).astype(np.int64)
            y = np.stack([ids[s + 1 : s + width + 1] for s, _ in chunk]).astype(np.int64)
            logits, _ = model(torch.from_numpy(x))
            nll = torch.nn.functional.cross_entropy(
                logits.float().transpose(1, 2), torch.from_numpy(y), reduction="none"
            ).double()
            for row, (_, first) in enumerate(chunk):
                total += float(nll[row, first:].sum())
    return total / n


def save_checkpoint(run: Path, model: GPT, cfg: TrainConfig, extra: dict | None = None) -> str:
    """Write weights (safetensors) and config with the weights' sha256; returns the hash."""
    from safetensors.torch import save_file

    run = Path(run)
    run.mkdir(parents=True, exist_ok=True)
    dtype = STORAGE[cfg.storage]
    tensors = {k: v.detach().to(dtype).contiguous().clone() for k, v in model.state_dict().items()}
    tensors.pop("lm_head.weight", None)  # tied to wte.weight
    with atomic_path(run / WEIGHTS) as tmp:
        save_file(tensors, str(tmp), metadata={"format": "pt"})
    digest = sha256_file(run / WEIGHTS)
    meta = {"train": cfg.to_dict(), "weights_sha256": digest, **(extra or {})}
    write_config(run, meta)
    return digest


def load_checkpoint(run: str | os.PathLike, expect: GPTConfig | None = None) -> GPT:
    """Load a run folder into a :class:`GPT` in eval mode, verifying it first.

    Raises
    ------
    FileNotFoundError
        The folder lacks ``config.json`` or ``model.safetensors``.
    ValueError
        ``config.json`` is not valid, its ``config_sha256`` does not match its content,
        the weights' sha256 differs from the one in ``config.json`` (corrupt file), the
        config differs from ``expect``, or the tensors do not fit the config.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load as load_bytes

    run = Path(run)
    for name in (CONFIG, WEIGHTS):
        if not (run / name).is_file():
            raise FileNotFoundError(f"run: {run} has no {name}")
    # hash and deserialise the same bytes, so what is verified is what is loaded
    blob = (run / WEIGHTS).read_bytes()
    digest = hashlib.sha256(blob).hexdigest()
    meta = read_config(run)
    if digest != meta.get("weights_sha256"):
        # a trainer replaces the weights just before config.json: read the config once more
        time.sleep(0.5)
        meta = read_config(run)
    if digest != meta.get("weights_sha256"):
        raise ValueError(
            f"checkpoint {run / WEIGHTS}: sha256 {digest} does not match config.json "
            f"({meta.get('weights_sha256')}); the file is corrupt or was replaced"
        )
    try:
        cfg = TrainConfig.from_dict(meta["train"]).model
    except (TypeError, ValueError) as err:
        raise ValueError(f"{run / CONFIG}: invalid train config ({err})") from None
    if expect is not None and expect != cfg:
        raise ValueError(f"checkpoint {run}: config {cfg} does not match expected {expect}")
    model = GPT(cfg)
    try:
        tensors = load_bytes(blob)
    except SafetensorError as err:
        raise ValueError(f"checkpoint {run / WEIGHTS}: unreadable safetensors ({err})") from err
    tensors = {k: v.float() for k, v in tensors.items()}  # float16 storage -> float32 model
    tensors["lm_head.weight"] = tensors["wte.weight"]
    try:
        missing, unexpected = model.load_state_dict(tensors, strict=False)
    except RuntimeError as err:  # a tensor of the wrong shape
        first = str(err).strip().splitlines()[-1].strip()
        raise ValueError(f"checkpoint {run}: tensors do not fit the config ({first})") from None
    bad = [k for k in missing if not k.endswith("head_mask")] + list(unexpected)
    if bad:
        raise ValueError(f"checkpoint {run}: tensors do not match the config: {bad[:5]}")
    model.eval()
    model.weights_sha256 = digest
    model.name = run.name
    return model


def _machine(device: str = "cpu") -> dict:
    """Where the wall times of a log were measured (the load average at the start)."""
    info = {
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "device": device,
        "native_bf16": cpu_has_native_bf16(),
        "load_average": _load(),
    }
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info


def _load() -> float | None:
    """One-minute load average of the machine (``None`` where the OS has none)."""
    return float(os.getloadavg()[0]) if hasattr(os, "getloadavg") else None


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX512-BF16 or AMX-BF16 on x86, BF16 on
    Arm); without it bf16 autocast is emulated and much slower than float32."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags.split() for f in ("avx512_bf16", "amx_bf16", "bf16"))


#: Training state is saved at least this often (steps), and at every evaluation.
SAVE_EVERY = 100
#: Version of the state file's layout.
STATE_FORMAT = 1


def state_key(cfg: TrainConfig, data_sha256: str) -> str:
    """sha256 naming a run's resumable state: the whole training config, the data's
    sha256 and :data:`STATE_FORMAT` (canonical JSON)."""
    body = {"train": cfg.to_dict(), "data_sha256": data_sha256, "format": STATE_FORMAT}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def state_file(cfg: TrainConfig, data_sha256: str, root: str | os.PathLike | None = None) -> Path:
    """``<root>/<name>-<key[:16]>/state.safetensors``, the resumable state of ``cfg``
    (``root`` default ``$MSAPOD_CACHE/train-state``)."""
    root = Path(root) if root is not None else cache_dir() / "train-state"
    return root / f"{cfg.name}-{state_key(cfg, data_sha256)[:16]}" / STATE


def _save_state(path: Path, key: str, model: GPT, opt, step: int, log: dict, running) -> None:
    """Everything a bit-exact resume needs (master weights, AdamW state, torch RNG states,
    step, log, the interval's losses) in one atomically replaced safetensors file."""
    from safetensors.torch import save_file

    names = {id(p): n for n, p in model.named_parameters()}
    tensors = {}
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            if st:
                n = names[id(p)]
                tensors[f"{n}.exp_avg"] = st["exp_avg"].detach().cpu().contiguous()
                tensors[f"{n}.exp_avg_sq"] = st["exp_avg_sq"].detach().cpu().contiguous()
                tensors[f"{n}.step"] = torch.as_tensor(st["step"]).detach().cpu().reshape(1)
    for n, p in model.named_parameters():
        tensors[f"master.{n}"] = p.detach().cpu().contiguous().clone()
    tensors["rng.torch"] = torch.get_rng_state()
    device = next(model.parameters()).device
    if device.type == "cuda":
        tensors["rng.cuda"] = torch.cuda.get_rng_state(device)
    meta = {
        "format": str(STATE_FORMAT),
        "key": key,
        "step": str(step),
        "log": json.dumps(log),
        "running": json.dumps(list(running)),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=meta)


def _load_state(path: Path, key: str, model: GPT, opt) -> tuple[int, dict, list]:
    """Restore what :func:`_save_state` wrote; returns ``(step, log, running)``."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata() or {}
            tensors = {k: fh.get_tensor(k) for k in fh.keys()}
    except (SafetensorError, OSError) as err:
        raise ValueError(f"training state {path}: unreadable ({err})") from None
    if meta.get("key") != key or meta.get("format") != str(STATE_FORMAT):
        raise ValueError(f"training state {path}: written for another config or format")
    device = next(model.parameters()).device
    params = dict(model.named_parameters())
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(tensors[f"master.{n}"])
    for n, p in params.items():
        if f"{n}.exp_avg" in tensors:
            opt.state[p] = {
                "step": tensors[f"{n}.step"].reshape(()),
                "exp_avg": tensors[f"{n}.exp_avg"].to(device),
                "exp_avg_sq": tensors[f"{n}.exp_avg_sq"].to(device),
            }
    torch.set_rng_state(tensors["rng.torch"])
    if "rng.cuda" in tensors and device.type == "cuda":
        torch.cuda.set_rng_state(tensors["rng.cuda"], device)
    return int(meta["step"]), json.loads(meta["log"]), json.loads(meta["running"])


def _optimizer(model: GPT, cfg: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=cfg.lr,
        betas=(0.9, 0.99),
    )


def train(
    cfg: TrainConfig,
    run: str | os.PathLike,
    corpus: Corpus | None = None,
    resume: bool = True,
    progress: bool = True,
    threads: int | None = None,
    device: str = "cpu",
    state_root: str | os.PathLike | None = None,
    save_every: int = SAVE_EVERY,
    snapshots: Sequence[int] = (),
) -> dict:
    """Train (or resume) one model into the folder ``run``; returns the log.

    The log records, per ``eval_interval`` steps, the mean training loss since the last
    evaluation, the validation loss (nats/char) on fixed validation batches, the wall
    time, the seconds per step and the machine's load average; ``machine`` says where it
    ran and ``resumed`` at which steps a stopped run continued.

    Parameters
    ----------
    cfg : TrainConfig
        The run's settings; its hash (with the data's) keys the resumable state.
    run : path
        Folder of the weights, ``config.json`` and ``log.json`` (written at every
        evaluation and at the end).
    resume : bool
        Continue from the saved state of the same config, if any; otherwise (and with
        ``False``) start from step 0. A finished run in ``run`` is returned as it is.
    threads : int, optional
        torch threads; default: torch's choice (the cores available to the process).
    device : str
        ``"cpu"`` or a CUDA device such as ``"cuda"``; the state is saved on the CPU.
    state_root : path, optional
        Folder of resumable states; default ``$MSAPOD_CACHE/train-state``
        (:func:`state_file`).
    save_every : int
        The full state is saved every ``save_every`` steps (at most :data:`SAVE_EVERY`)
        and at each evaluation.
    snapshots : sequence of int
        Steps (0 to ``cfg.steps``) after which the weights are also written to
        ``run/snapshots/step-NNNNN`` (:func:`snapshot_path`), a checkpoint folder like
        ``run`` itself, for studies of the structure during training. Writing them
        changes nothing in the run.
    """
    corpus = corpus if corpus is not None else load_corpus()
    dev = _check_run(cfg, corpus, save_every, device)
    snapshots = _check_snapshots(snapshots, cfg)
    if threads:
        torch.set_num_threads(threads)
    run = Path(run)
    if resume and _finished(run, cfg):
        _finish(run, corpus)
        return json.loads((run / LOG).read_text())
    run.mkdir(parents=True, exist_ok=True)
    key = state_key(cfg, corpus.sha256)
    spath = state_file(cfg, corpus.sha256, state_root)
    model, opt, start, log, running = _start_run(cfg, dev, spath, key, resume)
    model.train()
    t0 = time.time() - (log["time_s"][-1] if log["time_s"] else 0.0)
    t_interval, n_interval = time.time(), 0
    autocast = _autocast(cfg, dev)
    if start == 0 and 0 in snapshots:
        _checkpoint(snapshot_path(run, 0), model, cfg, corpus, 0)
    steps = range(start, cfg.steps)
    bar = tqdm(steps, initial=start, total=cfg.steps, desc=cfg.name, disable=not progress)
    for step in bar:
        _step(model, opt, cfg, corpus, step, dev, autocast, running)
        done, n_interval = step + 1, n_interval + 1
        evaluate_now = done % cfg.eval_interval == 0 or done == cfg.steps
        if evaluate_now:
            val = _record(log, model, cfg, corpus, done, (t0, t_interval, n_interval), running)
            running.clear()
            t_interval, n_interval = time.time(), 0
            bar.set_postfix(val=f"{val:.3f}")
            _checkpoint(run, model, cfg, corpus, done, val_loss=val)
            write_json(run / LOG, log)
        if done in snapshots:
            _checkpoint(snapshot_path(run, done), model, cfg, corpus, done)
        if evaluate_now or done % save_every == 0:
            _save_state(spath, key, model, opt, done, log, running)
    bar.close()
    _finish(run, corpus)
    spath.unlink(missing_ok=True)  # the finished run is in ``run``
    return log


def _start_run(cfg: TrainConfig, dev, spath: Path, key: str, resume: bool) -> tuple:
    """``(model, optimizer, start step, log, running losses)`` of a run, from ``cfg.seed``
    or, when resuming, the saved state at ``spath``."""
    torch.manual_seed(cfg.seed)
    model = GPT(cfg.model).to(dev)
    opt = _optimizer(model, cfg)
    log = {"name": cfg.name, "steps": [], "train_loss": [], "val_loss": [], "time_s": []}
    log.update(s_per_step=[], load_average=[], resumed=[])
    start, running = 0, []
    if resume and spath.is_file():
        start, log, running = _load_state(spath, key, model, opt)
        log["resumed"].append(start)
    log["machine"] = _machine(str(dev))
    log["state_file"] = str(spath)
    return model, opt, start, log, running


def snapshot_path(run: str | os.PathLike, step: int) -> Path:
    """The folder of the checkpoint written after ``step`` steps of the run in ``run``."""
    return Path(run) / "snapshots" / f"step-{step:05d}"


def _check_snapshots(snapshots, cfg: TrainConfig) -> frozenset[int]:
    """``snapshots`` as a set of steps, each a whole number in ``[0, cfg.steps]``."""
    steps = [check_int(s, "snapshots", 0) for s in snapshots]
    beyond = [s for s in steps if s > cfg.steps]
    if beyond:
        raise ValueError(f"snapshots: expected steps in [0, {cfg.steps}], got {beyond}")
    return frozenset(steps)


def _checkpoint(folder: Path, model, cfg: TrainConfig, corpus: Corpus, done: int, **extra) -> None:
    """The weights after ``done`` steps in ``folder`` (:func:`save_checkpoint`), with ``extra``."""
    meta = {"step": done, "data_sha256": corpus.sha256, **extra, "n_params": model.num_params()}
    save_checkpoint(folder, model, cfg, meta)


def _autocast(cfg: TrainConfig, dev):
    """bf16 autocast on ``dev`` for ``precision="bf16"``, else a no-op context."""
    if cfg.precision == "bf16":
        return torch.autocast(dev.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _check_run(cfg: TrainConfig, corpus: Corpus, save_every, device: str) -> torch.device:
    """The device of a run, after checking the run's arguments against each other."""
    if cfg.model.vocab_size != corpus.vocab_size:
        raise ValueError(
            f"cfg.model.vocab_size: expected {corpus.vocab_size} for this corpus, "
            f"got {cfg.model.vocab_size}"
        )
    save_every = check_int(save_every, "save_every", 1)
    if save_every > SAVE_EVERY:
        raise ValueError(f"save_every: expected at most {SAVE_EVERY} steps, got {save_every}")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {device!r} requested but no CUDA device is available")
    if cfg.precision == "bf16" and dev.type == "cpu" and not cpu_has_native_bf16():
        warnings.warn(
            "precision='bf16' on a CPU without native bf16: autocast is emulated and about "
            "24x slower than fp32 here (benchmarks/bench_train.py); train in fp32",
            RuntimeWarning,
            stacklevel=3,
        )
    return dev


def _finished(run: Path, cfg: TrainConfig) -> bool:
    """Whether ``run`` holds the finished run of ``cfg`` (``ValueError``: another config)."""
    if not (run / CONFIG).is_file():
        return False
    meta = read_config(run)
    if TrainConfig.from_dict(meta["train"]) != cfg:
        raise ValueError(f"run: {run} holds a different config; use another folder")
    return meta.get("step") == cfg.steps and (run / LOG).is_file()


def _record(log: dict, model, cfg, corpus, done: int, times: tuple, running: list) -> float:
    """Evaluate at step ``done``, append it to ``log``; returns the validation loss."""
    t0, t_interval, n_interval = times
    log["s_per_step"].append((time.time() - t_interval) / n_interval)
    log["load_average"].append(_load())
    val = evaluate(model, corpus.val, cfg.eval_batches, cfg.batch_size)
    log["steps"].append(done)
    log["train_loss"].append(float(np.mean(running)))
    log["val_loss"].append(val)
    log["time_s"].append(time.time() - t0)
    return val


def _step(model, opt, cfg: TrainConfig, corpus: Corpus, step: int, dev, autocast, running):
    """One optimisation step on batch ``step`` (drawn from ``default_rng([seed, step])``)."""
    for g in opt.param_groups:
        g["lr"] = lr_at(cfg, step)
    rng = np.random.default_rng([cfg.seed, step])
    x, y = get_batch(corpus.train, cfg.model.block_size, cfg.batch_size, rng)
    with autocast:
        _, loss = model(x.to(dev), y.to(dev))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    opt.step()
    running.append(loss.item())


def _finish(run: Path, corpus: Corpus) -> None:
    """Add the whole-split validation loss of the stored model to a finished run."""
    meta = read_config(run)
    if meta.get("step") == meta["train"]["steps"] and "val_loss_split" not in meta:
        stored = load_checkpoint(run)
        meta["val_loss_split"] = validation_loss(stored, corpus.val)
        write_config(run, meta)
