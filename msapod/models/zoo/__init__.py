"""The model zoo: character-level GPTs trained on TinyShakespeare.

``load("baseline-1")`` returns a verified, ready model (eval mode). Each model folder
of a checkout holds a run of :mod:`msapod.models.train`; the wheel carries only the
``config.json`` files (the weights: :mod:`msapod.models.zoo.fetch`). ``msapod zoo`` lists
every configured model, whether it is trained, its validation loss and training time.

Two sets, both standard and energy-gated attention (EGA), 6 layers x 8 heads, context 256:

* the **paper-size** zoo (:data:`PAPER_SIZE`, the main zoo of the book): d_model 256,
  four seeds per architecture, dropout 0.1 on the embeddings, residual branches and MLP
  (none on the attention weights, which would leave the fused attention kernel), float32
  training (these CPUs have no native bf16), float16 storage (about 4.8 M parameters; EGA
  adds 0.257 %, the EGA paper's "< 0.26 %");
* the **d = 128** zoo (:data:`D128`, the capacity comparison): d_model 128, four seeds per
  architecture, no dropout, float32 training and storage (1.23 M parameters), the same
  recipe otherwise; the training-trajectory study retrains its first seed of each
  architecture (cheap at this size).

Every model sees the same split, schedule (AdamW, lr 2e-3 cosine to 2e-4, 3000 steps of
16 x 256 characters) and token budget. Pages and studies take their model lists from
:data:`ZOOS` / :func:`models` / :func:`trained`, never from literal names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import CONFIG, WEIGHTS, GPTConfig, TrainConfig, read_config
from .fetch import ENV, run_folder

if TYPE_CHECKING:
    from ..gpt import GPT

__all__ = [
    "ARCHITECTURES",
    "D128",
    "MAIN",
    "MODELS",
    "PAPER_SIZE",
    "ZOOS",
    "ZOO_CONFIGS",
    "Identity",
    "architecture",
    "first",
    "identity",
    "load",
    "models",
    "path",
    "trained",
]

ROOT = Path(__file__).resolve().parent
#: The repository root when the package is run from a checkout (``pyproject.toml`` beside it).
_REPO = ROOT.parents[2]

ARCHITECTURES = ("baseline", "ega")


def _config(arch: str, seed: int, name: str, **kw) -> TrainConfig:
    model = {"attention": "standard" if arch == "baseline" else "ega"}
    model.update(kw.pop("model", {}))
    return TrainConfig(name=name, seed=seed, steps=3000, model=GPTConfig(**model), **kw)


_D128 = {
    f"{arch}-{seed}": _config(arch, seed, f"{arch}-{seed}")
    for arch in ARCHITECTURES
    for seed in (1, 2, 3, 4)
}
_D256 = {
    f"{arch}-d256-{seed}": _config(
        arch,
        seed,
        f"{arch}-d256-{seed}",
        precision="fp32",
        storage="float16",
        model={"n_embd": 256, "dropout": 0.1, "attention_dropout": 0.0},
    )
    for arch in ARCHITECTURES
    for seed in (1, 2, 3, 4)
}

ZOO_CONFIGS: dict[str, TrainConfig] = {**_D256, **_D128}
MODELS = tuple(ZOO_CONFIGS)
_ARCH = {n: "ega" if c.model.attention == "ega" else "baseline" for n, c in ZOO_CONFIGS.items()}
#: Model names per zoo (see the module docs).
ZOOS: dict[str, tuple[str, ...]] = {"paper-size": tuple(_D256), "d128": tuple(_D128)}
PAPER_SIZE = ZOOS["paper-size"]
D128 = ZOOS["d128"]
#: The zoo every page, study and the scorecard use unless told otherwise (d_model 256, the
#: size the paper's parameter count implies).
MAIN = "paper-size"


def models(zoo: str = MAIN, architecture: str | None = None) -> tuple[str, ...]:
    """Names of the models of ``zoo`` (``"paper-size"`` or ``"d128"``), optionally only
    those of one ``architecture`` (``"baseline"`` or ``"ega"``)."""
    if zoo not in ZOOS:
        raise ValueError(f"zoo: expected one of {list(ZOOS)}, got {zoo!r}")
    if architecture is not None and architecture not in ARCHITECTURES:
        raise ValueError(f"architecture: expected one of {ARCHITECTURES}, got {architecture!r}")
    names = ZOOS[zoo]
    return tuple(n for n in names if architecture is None or _ARCH[n] == architecture)


def architecture(name: str) -> str:
    """``"baseline"`` or ``"ega"``: the attention of zoo model ``name``'s config."""
    path(name)  # a zoo model
    return _ARCH[name]


def trained(zoo: str = MAIN, architecture: str | None = None) -> tuple[str, ...]:
    """The models of :func:`models` whose training is finished (the config's ``step`` has
    reached the configured steps), so results never mix finished and half-trained models."""
    return tuple(n for n in models(zoo, architecture) if _finished(ROOT / n))


def first(architecture: str = "baseline", zoo: str = MAIN) -> str:
    """The first trained model of ``architecture`` in ``zoo``: the model the pages show
    when they illustrate one model (its seed 1 where trained)."""
    names = trained(zoo, architecture)
    if not names:
        raise FileNotFoundError(f"zoo {zoo!r} has no trained {architecture} model (msapod zoo)")
    return names[0]


def _finished(folder: Path) -> bool:
    """Whether ``folder`` holds a checkpoint at its last configured step (outside a
    checkout, a config: :func:`load` fetches the weights)."""
    has_weights = (folder / WEIGHTS).is_file() or not _in_checkout()
    if not (has_weights and (folder / CONFIG).is_file()):
        return False
    meta = read_config(folder)
    return meta.get("step") == meta["train"]["steps"]


def _in_checkout() -> bool:
    """Whether the package is run from a checkout of the repository (nothing is fetched)."""
    return (_REPO / "pyproject.toml").is_file()


def path(name: str) -> Path:
    """Folder of zoo model ``name``."""
    if name not in ZOO_CONFIGS:
        raise ValueError(f"name: expected one of {list(ZOO_CONFIGS)}, got {name!r}")
    return ROOT / name


def load(name: str) -> GPT:
    """Load zoo model ``name`` (weights verified by sha256, config checked).

    The weights are those of :func:`path`'s folder or, where it has none (an installed
    wheel), :func:`.fetch.run_folder`'s.

    Raises
    ------
    FileNotFoundError
        If the model is not trained (no config; in a checkout, no weights), or its weights
        are neither in ``$MSAPOD_ZOO`` nor anywhere to fetch them from.
    ValueError
        If the weights' sha256 differs from the config's ``weights_sha256`` (the message
        names the file and the expected hash), or the config is invalid.
    """
    from ..train import load_checkpoint  # torch: the zoo's configs and identities need none

    folder = path(name)
    if not (folder / WEIGHTS).is_file():
        if not (folder / CONFIG).is_file() or not (os.environ.get(ENV) or not _in_checkout()):
            raise FileNotFoundError(f"zoo model {name!r} is not trained yet: {folder} is empty")
        folder = run_folder(name, folder)
    return load_checkpoint(folder, expect=ZOO_CONFIGS[name].model)


@dataclass(frozen=True)
class Identity:
    """What a zoo model's results are computed from, read from its ``config.json``.

    Attributes
    ----------
    name
        Zoo model name.
    weights_sha256
        sha256 of the checkpoint's weights, as recorded in its ``config.json``.
    architecture
        ``"baseline"`` or ``"ega"``: the attention the checkpoint was trained with.
    zoo
        The zoo the model belongs to (a key of :data:`ZOOS`).
    meta
        The whole verified ``config.json`` (training step, losses, ...).
    """

    name: str
    weights_sha256: str
    architecture: str
    zoo: str
    meta: dict


def identity(name: str) -> Identity:
    """The :class:`Identity` of trained zoo model ``name``, from its verified
    ``config.json`` (``ValueError`` if it is invalid or its attention is not the zoo config's)."""
    meta = read_config(path(name))
    attention = meta["train"].get("model", {}).get("attention", "standard")
    arch = "ega" if attention == "ega" else "baseline"
    if arch != architecture(name):
        raise ValueError(f"zoo model {name!r}: config.json has {attention!r} attention")
    zoo = next(z for z, names in ZOOS.items() if name in names)
    return Identity(name, str(meta.get("weights_sha256", "")), arch, zoo, meta)
