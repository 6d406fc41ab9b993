"""Training of the character-level GPTs: seeded, resumable, logged, safetensors checkpoints.

A run lives in one folder::

    <run>/config.json        model + training config, data sha256, weights sha256
    <run>/model.safetensors  weights (float32)
    <run>/log.json           train/val loss history
    <run>/state.safetensors  optimizer moments for resuming (not needed for analysis)

Batches are drawn from ``numpy.random.default_rng([seed, step])``, so a resumed run sees
exactly the batches an uninterrupted one would have.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import numpy as np
import torch

from .data import Corpus, load_corpus, sha256_file
from .model import GPT, GPTConfig

__all__ = ["TrainConfig", "evaluate", "load_checkpoint", "save_checkpoint", "train"]

WEIGHTS = "model.safetensors"
STATE = "state.safetensors"
CONFIG = "config.json"
LOG = "log.json"


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings of one run (AdamW, linear warm-up, cosine decay)."""

    name: str = "run"
    seed: int = 0
    steps: int = 2500
    batch_size: int = 16
    lr: float = 2e-3
    min_lr: float = 2e-4
    warmup: int = 100
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_interval: int = 250
    eval_batches: int = 20
    model: GPTConfig = field(default_factory=GPTConfig)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["model"] = self.model.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        d = dict(d)
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"config: unknown keys {sorted(unknown)}")
        d["model"] = GPTConfig.from_dict(d.get("model", {}))
        return cls(**d)


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


@torch.no_grad()
def evaluate(model: GPT, ids: np.ndarray, batches: int = 20, batch_size: int = 16) -> float:
    """Mean cross-entropy (nats/char) on fixed, seeded validation batches."""
    was_training = model.training
    model.eval()
    rng = np.random.default_rng(1234)
    block = model.config.block_size
    losses = []
    for _ in range(batches):
        x, y = get_batch(ids, block, batch_size, rng)
        losses.append(model(x, y)[1].item())
    model.train(was_training)
    return float(np.mean(losses))


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)


def save_checkpoint(run: Path, model: GPT, cfg: TrainConfig, extra: dict | None = None) -> str:
    """Write weights (safetensors) and config with the weights' sha256; returns the hash."""
    from safetensors.torch import save_file

    run = Path(run)
    run.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    tensors.pop("lm_head.weight", None)  # tied to wte.weight
    tmp = run / (WEIGHTS + ".tmp")
    save_file(tensors, str(tmp), metadata={"format": "pt"})
    os.replace(tmp, run / WEIGHTS)
    digest = sha256_file(run / WEIGHTS)
    meta = {"train": cfg.to_dict(), "weights_sha256": digest, **(extra or {})}
    _write_json(run / CONFIG, meta)
    return digest


def load_checkpoint(run: str | os.PathLike, expect: GPTConfig | None = None) -> GPT:
    """Load a run folder into a :class:`GPT` in eval mode, verifying it first.

    Raises
    ------
    FileNotFoundError
        The folder lacks ``config.json`` or ``model.safetensors``.
    ValueError
        The weights' sha256 differs from the one in ``config.json`` (corrupt file), the
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
    meta = json.loads((run / CONFIG).read_text())
    if digest != meta.get("weights_sha256"):
        # a trainer replaces the weights just before config.json: read the config once more
        time.sleep(0.5)
        meta = json.loads((run / CONFIG).read_text())
    if digest != meta.get("weights_sha256"):
        raise ValueError(
            f"checkpoint {run / WEIGHTS}: sha256 {digest} does not match config.json "
            f"({meta.get('weights_sha256')}); the file is corrupt or was replaced"
        )
    cfg = TrainConfig.from_dict(meta["train"]).model
    if expect is not None and expect != cfg:
        raise ValueError(f"checkpoint {run}: config {cfg} does not match expected {expect}")
    model = GPT(cfg)
    try:
        tensors = load_bytes(blob)
    except SafetensorError as err:
        raise ValueError(f"checkpoint {run / WEIGHTS}: unreadable safetensors ({err})") from err
    tensors["lm_head.weight"] = tensors["wte.weight"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    bad = [k for k in missing if not k.endswith("head_mask")] + list(unexpected)
    if bad:
        raise ValueError(f"checkpoint {run}: tensors do not match the config: {bad[:5]}")
    model.eval()
    model.weights_sha256 = digest
    model.name = run.name
    return model


def _save_state(run: Path, opt: torch.optim.Optimizer, model: GPT, step: int) -> None:
    from safetensors.torch import save_file

    names = {id(p): n for n, p in model.named_parameters()}
    tensors = {}
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            if st:
                n = names[id(p)]
                tensors[f"{n}.exp_avg"] = st["exp_avg"].contiguous()
                tensors[f"{n}.exp_avg_sq"] = st["exp_avg_sq"].contiguous()
                tensors[f"{n}.step"] = torch.as_tensor(st["step"]).reshape(1).float()
    tmp = run / (STATE + ".tmp")
    save_file(tensors, str(tmp), metadata={"step": str(step)})
    os.replace(tmp, run / STATE)


def _load_state(run: Path, opt: torch.optim.Optimizer, model: GPT) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(run / STATE))
    params = dict(model.named_parameters())
    for n, p in params.items():
        if f"{n}.exp_avg" in tensors:
            opt.state[p] = {
                "step": tensors[f"{n}.step"].reshape(()),
                "exp_avg": tensors[f"{n}.exp_avg"],
                "exp_avg_sq": tensors[f"{n}.exp_avg_sq"],
            }


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
) -> dict:
    """Train (or resume) one model into the folder ``run``; returns the log.

    The log records, per ``eval_interval`` steps, the mean training loss since the last
    evaluation and the validation loss (nats/char) on fixed validation batches.
    """
    from tqdm import tqdm

    corpus = corpus if corpus is not None else load_corpus()
    if cfg.model.vocab_size != corpus.vocab_size:
        raise ValueError(
            f"cfg.model.vocab_size: expected {corpus.vocab_size} for this corpus, "
            f"got {cfg.model.vocab_size}"
        )
    if threads:
        torch.set_num_threads(threads)
    run = Path(run)
    run.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    model = GPT(cfg.model)
    opt = _optimizer(model, cfg)
    log = {"name": cfg.name, "steps": [], "train_loss": [], "val_loss": [], "time_s": []}
    start = 0
    if resume and (run / CONFIG).is_file() and (run / STATE).is_file():
        meta = json.loads((run / CONFIG).read_text())
        if TrainConfig.from_dict(meta["train"]) != cfg:
            raise ValueError(f"run: {run} holds a different config; use another folder")
        model = load_checkpoint(run)
        model.train()
        opt = _optimizer(model, cfg)
        _load_state(run, opt, model)
        log = json.loads((run / LOG).read_text())
        start = meta["step"]
    model.train()
    t0 = time.time() - (log["time_s"][-1] if log["time_s"] else 0.0)
    running = []
    bar = tqdm(
        range(start, cfg.steps),
        initial=start,
        total=cfg.steps,
        desc=cfg.name,
        disable=not progress,
        mininterval=5,
    )
    for step in bar:
        for g in opt.param_groups:
            g["lr"] = lr_at(cfg, step)
        x, y = get_batch(
            corpus.train,
            cfg.model.block_size,
            cfg.batch_size,
            np.random.default_rng([cfg.seed, step]),
        )
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        running.append(loss.item())
        done = step + 1
        if done % cfg.eval_interval == 0 or done == cfg.steps:
            val = evaluate(model, corpus.val, cfg.eval_batches, cfg.batch_size)
            log["steps"].append(done)
            log["train_loss"].append(float(np.mean(running)))
            log["val_loss"].append(val)
            log["time_s"].append(time.time() - t0)
            running = []
            bar.set_postfix(val=f"{val:.3f}")
            save_checkpoint(
                run,
                model,
                cfg,
                {
                    "step": done,
                    "data_sha256": corpus.sha256,
                    "val_loss": val,
                    "n_params": model.num_params(),
                },
            )
            _save_state(run, opt, model, done)
            _write_json(run / LOG, log)
    return log
