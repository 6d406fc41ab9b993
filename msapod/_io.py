"""File helpers shared by the models and the studies (private): each rule written once.

* :func:`package_version` -- the msapod version recorded in every cache key and file,
* :func:`sha256_file` -- the hex sha256 of a file, read in 1 MiB blocks,
* :func:`atomic_path` -- write to a temporary name, move into place with ``os.replace``
  (a crash never leaves a half-written file under the final name),
* :func:`cache_dir` -- the root of every cache (fields, analyses, training state).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path", "cache_dir", "package_version", "sha256_file"]

#: The version used when the package is run from a source tree without metadata.
FALLBACK_VERSION = "0.1.0"


def package_version() -> str:
    """Version of msapod: the installed metadata, else :data:`FALLBACK_VERSION`."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("msapod")
    except PackageNotFoundError:
        return FALLBACK_VERSION


def cache_dir() -> Path:
    """Root of the cache: ``$MSAPOD_CACHE`` if set, else ``~/.cache/msapod``."""
    env = os.environ.get("MSAPOD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "msapod"


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def atomic_path(path: str | os.PathLike, tmp: str | os.PathLike | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``.

    ``tmp`` defaults to a hidden name unique to the process, removed on any error; a
    ``tmp`` given by the caller is left in place on error.
    """
    path = Path(path)
    own = tmp is None
    if own:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    tmp = Path(tmp)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if own:
            tmp.unlink(missing_ok=True)
