"""The model zoo: four trained character-level GPTs shipped with the package.

``load("baseline-1")`` returns a verified, ready model (eval mode). Each model folder
holds ``model.safetensors``, ``config.json`` (with the weights' sha256) and ``log.json``.
"""

from __future__ import annotations

from pathlib import Path

from ..model import GPT, GPTConfig
from ..train import TrainConfig, load_checkpoint

__all__ = ["MODELS", "ZOO_CONFIGS", "load", "path"]

ROOT = Path(__file__).resolve().parent

#: Zoo models: two seeds per architecture, sized for about 45 min each on 2 CPU cores.
ZOO_CONFIGS: dict[str, TrainConfig] = {
    f"{arch}-{seed}": TrainConfig(
        name=f"{arch}-{seed}",
        seed=seed,
        steps=3000,
        model=GPTConfig(attention="standard" if arch == "baseline" else "ega"),
    )
    for arch in ("baseline", "ega")
    for seed in (1, 2)
}
MODELS = tuple(ZOO_CONFIGS)


def path(name: str) -> Path:
    """Folder of zoo model ``name``."""
    if name not in ZOO_CONFIGS:
        raise ValueError(f"name: expected one of {list(ZOO_CONFIGS)}, got {name!r}")
    return ROOT / name


def load(name: str) -> GPT:
    """Load zoo model ``name`` (weights verified by sha256, config checked)."""
    folder = path(name)
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(f"zoo model {name!r} is not trained yet: {folder} is empty")
    return load_checkpoint(folder, expect=ZOO_CONFIGS[name].model)
