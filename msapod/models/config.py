"""The configuration of a GPT (:class:`GPTConfig`) and of its training (:class:`TrainConfig`),
and a checkpoint's ``config.json`` verified by the sha256 of its own content. Numpy and torch
free: the zoo's identities and the results' provenance read them without loading torch."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .._io import write_json

__all__ = [
    "CONFIG",
    "PRECISIONS",
    "STORAGES",
    "WEIGHTS",
    "GPTConfig",
    "TrainConfig",
    "config_digest",
    "read_config",
    "write_config",
]

#: File names of a checkpoint folder: the weights and the verified config.
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
#: Training precisions and the dtypes a checkpoint's weights may be stored in.
PRECISIONS = ("fp32", "bf16")
STORAGES = ("float32", "float16")


def _known_keys(cls, d: dict, what: str) -> dict:
    """A copy of ``d`` if it is a dict whose keys are fields of the dataclass ``cls``;
    else ``ValueError`` naming ``what``."""
    if not isinstance(d, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(d).__name__}")
    unknown = set(d) - {f.name for f in fields(cls)}
    if unknown:
        raise ValueError(f"config: unknown keys {sorted(unknown)}")
    return dict(d)


def _integers(cfg, names: tuple[str, ...], least: int) -> None:
    """Each field of ``names`` a Python ``int`` (not a bool, nor a numpy integer, which
    ``to_dict`` could not write as JSON) of at least ``least``."""
    for name in names:
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name}: expected an integer >= {least}, got {value!r}")


@dataclass(frozen=True)
class GPTConfig:
    """Architecture of a :class:`GPT`.

    ``attention`` is ``"standard"`` or ``"ega"``; ``standardize`` (EGA only) is
    ``"causal"`` (mean/std of the energies over the key's prefix) or ``"none"``.

    ``dropout`` acts on the embeddings, the residual branches and the MLP;
    ``attention_dropout`` on the attention weights (``None``: the same as ``dropout``).
    Attention-weight dropout leaves PyTorch's fused attention kernel for a slower one
    (``benchmarks/bench_train.py`` measures it), so the zoo's regularised configs set it
    to 0 and regularise the residual stream only.
    """

    vocab_size: int = 65
    block_size: int = 256
    n_layer: int = 6
    n_head: int = 8
    n_embd: int = 128
    dropout: float = 0.0
    attention: str = "standard"
    attention_dropout: float | None = None
    standardize: str = "causal"

    def __post_init__(self) -> None:
        _integers(self, ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"), 1)
        for name in ("dropout", "attention_dropout"):
            d = getattr(self, name)
            if name == "attention_dropout" and d is None:
                continue
            if isinstance(d, bool) or not isinstance(d, int | float) or not 0 <= d < 1:
                raise ValueError(f"{name}: expected a number in [0, 1), got {d!r}")
        if self.attention not in ("standard", "ega"):
            raise ValueError(f"attention: expected 'standard' or 'ega', got {self.attention!r}")
        if self.standardize not in ("causal", "none"):
            raise ValueError(f"standardize: expected 'causal' or 'none', got {self.standardize!r}")
        if self.n_embd % self.n_head:
            raise ValueError(
                f"n_embd: expected a multiple of n_head={self.n_head}, got {self.n_embd}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> GPTConfig:
        return cls(**_known_keys(cls, d, "model config"))


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
    precision: str = "fp32"
    storage: str = "float32"
    model: GPTConfig = field(default_factory=GPTConfig)

    def __post_init__(self) -> None:
        _integers(self, ("seed", "warmup"), 0)
        _integers(self, ("steps", "batch_size", "eval_interval", "eval_batches"), 1)
        for name in ("lr", "min_lr", "weight_decay", "grad_clip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name}: expected a number >= 0, got {value!r}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name: expected a non-empty string, got {self.name!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision: expected one of {PRECISIONS}, got {self.precision!r}")
        if self.storage not in STORAGES:
            raise ValueError(f"storage: expected one of {STORAGES}, got {self.storage!r}")

    def to_dict(self) -> dict:
        return asdict(self)  # the nested GPTConfig as its to_dict()

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        d = _known_keys(cls, d, "train config")
        d["model"] = GPTConfig.from_dict(d.get("model", {}))
        return cls(**d)


def config_digest(meta: dict) -> str:
    """sha256 of a checkpoint's ``config.json`` content, less its own ``config_sha256``
    (canonical JSON: sorted keys, no spaces), so that any edit of the config is seen."""
    body = {k: v for k, v in meta.items() if k != "config_sha256"}
    blob = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def write_config(run: str | os.PathLike, meta: dict) -> None:
    """Write ``<run>/config.json`` with its ``config_sha256`` (atomic)."""
    meta = {k: v for k, v in meta.items() if k != "config_sha256"}
    meta["config_sha256"] = config_digest(meta)
    write_json(Path(run) / CONFIG, meta)


def read_config(run: str | os.PathLike) -> dict:
    """Read and verify ``<run>/config.json``: a JSON object with a ``train`` section whose
    ``config_sha256`` matches its content. Raises ``ValueError`` naming the file."""
    path = Path(run) / CONFIG
    try:
        meta = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    if "train" not in meta:
        raise ValueError(f"{path}: has no 'train' section (not an msapod checkpoint config)")
    if "config_sha256" not in meta:
        raise ValueError(
            f"{path}: has no config_sha256; the config is not covered by a hash "
            "(re-save it with msapod.models.train.write_config after checking it)"
        )
    if config_digest(meta) != meta["config_sha256"]:
        raise ValueError(
            f"{path}: content does not match its config_sha256; the config was edited or is corrupt"
        )
    return meta
