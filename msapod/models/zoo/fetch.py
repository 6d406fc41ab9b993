"""Zoo weights outside a checkout: a local copy or a verified download.

The wheel carries each zoo model's ``config.json`` (with its weights' sha256) but not its
``model.safetensors``: :func:`run_folder` supplies them, from ``$MSAPOD_ZOO`` (:data:`ENV`)
or downloaded (:func:`url`), checked against that sha256.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..._io import atomic_path, cache_dir, fetch, repository_url, verify_sha256
from ..config import CONFIG, WEIGHTS, read_config

__all__ = ["ENV", "run_folder", "url"]

#: Environment variable naming a folder that holds ``<name>/model.safetensors``.
ENV = "MSAPOD_ZOO"

#: The zoo's folder inside the repository.
REPO_PATH = "msapod/models/zoo/"


def url(name: str, fname: str = WEIGHTS, source: str | None = None) -> str:
    """URL of file ``fname`` (``model.safetensors``, ``log.json``) of zoo model ``name``
    in the zoo folder ``source`` (ending in ``/``; default: ``msapod/models/zoo/`` of the
    GitHub repository at the commit pip installed msapod from, ``FileNotFoundError`` if
    msapod was not installed from one)."""
    if source is None:
        source = repository_url(REPO_PATH)
        if source is None:
            raise FileNotFoundError(
                f"zoo model {name!r}: the msapod package holds no {fname} for it, and msapod "
                'was not installed from a GitHub repository (pip install "msapod @ '
                'git+https://github.com/OWNER/REPO@REF") to fetch it from; set '
                f"${ENV} to a folder holding {name}/{WEIGHTS}"
            )
    if not source.endswith("/"):
        raise ValueError(f"source: expected the URL of a folder, ending in '/', got {source!r}")
    return f"{source}{name}/{fname}"


def run_folder(name: str, config_folder: Path) -> Path:
    """``$MSAPOD_CACHE/zoo/<sha256[:16]>/<name>/``, a checkpoint folder of zoo model
    ``name`` made of the package's ``config.json`` in ``config_folder`` and the weights (a
    link to ``$MSAPOD_ZOO``'s file, or the download).

    Raises
    ------
    FileNotFoundError
        ``$MSAPOD_ZOO`` holds no weights for ``name``, or there is nowhere to fetch them.
    ValueError
        ``config.json`` has no ``weights_sha256``, or the weights' sha256 differs from it.
    """
    config = Path(config_folder) / CONFIG
    sha = read_config(config_folder).get("weights_sha256")
    if not isinstance(sha, str) or len(sha) != 64:
        raise ValueError(f"{config}: expected a 'weights_sha256' (64 hex digits), got {sha!r}")
    folder = cache_dir() / "zoo" / sha[:16] / name
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / CONFIG).is_file() or (folder / CONFIG).read_bytes() != config.read_bytes():
        with atomic_path(folder / CONFIG) as tmp:
            shutil.copyfile(config, tmp)
    if local := os.environ.get(ENV):
        _link(_local(name, Path(local).expanduser(), sha), folder / WEIGHTS)
    else:
        _download(name, sha, folder)
    return folder


def _local(name: str, root: Path, sha: str) -> Path:
    """``<root>/<name>/model.safetensors``, checked against ``sha``."""
    src = root / name / WEIGHTS
    if not src.is_file():
        raise FileNotFoundError(f"${ENV}={root}: expected the weights of {name!r} at {src}")
    return verify_sha256(
        src,
        sha,
        f"zoo model {name!r} weights",
        "the file is not the checkpoint the package's config.json describes",
    )


def _link(src: Path, dest: Path) -> None:
    """``dest`` becomes a link to ``src`` (a copy where links are not allowed)."""
    with atomic_path(dest) as tmp:
        try:
            os.symlink(src.resolve(), tmp)
        except OSError:
            shutil.copyfile(src, tmp)


def _download(name: str, sha: str, folder: Path) -> None:
    """Fetch the weights of ``name`` into ``folder`` (kept if already there and intact)."""
    address = url(name)
    try:
        fetch(address, sha, WEIGHTS, folder)
    except ValueError as err:
        raise ValueError(
            f"zoo model {name!r} weights: {address} has a sha256 other than the expected {sha} "
            f"(the package's config.json); the download was refused ({err})"
        ) from None
