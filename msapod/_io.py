"""File helpers shared by the models and the studies (private): the package version, sha256
checks, verified downloads, integer arguments, compressed netCDF, atomic writes, the cache
root and the raw-file URL of the commit pip installed msapod from."""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = [
    "COMPRESS",
    "atomic_path",
    "cache_dir",
    "check_int",
    "fetch",
    "json_object",
    "package_version",
    "repository_url",
    "sha256_file",
    "verify_sha256",
    "write_json",
]

#: The version used when the package is run from a source tree without metadata.
FALLBACK_VERSION = "0.1.0"

#: netCDF encoding of every compressed variable (gzip level 4 with byte shuffling: the
#: causal zeros above the diagonal of a field cost almost nothing).
COMPRESS = {"zlib": True, "complevel": 4, "shuffle": True}


def check_int(value, name: str, least: int, error: type[Exception] = ValueError) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) of at least ``least``;
    else ``error`` naming the argument ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise error(f"{name}: expected an integer >= {least}, got {value!r}")
    return int(value)


def fetch(url: str, sha256: str | None, fname: str, folder: Path | None = None) -> Path:
    """``url`` as ``folder/fname`` (default folder: pooch's cache), downloaded unless it is
    there and intact, checked against ``sha256`` (None: not checked); pooch's logging held
    at warnings meanwhile. Raises ``ValueError`` when the sha256 differs."""
    import pooch  # deferred: only needed when downloading

    log = pooch.get_logger()
    level = log.level
    log.setLevel("WARNING")  # its line per file, and its advice to pin an unchecked hash
    try:
        known = None if sha256 is None else f"sha256:{sha256}"
        return Path(
            pooch.retrieve(url, known_hash=known, fname=fname, path=folder, progressbar=False)
        )
    finally:
        log.setLevel(level)


def json_object(path: Path) -> dict:
    """The JSON object in ``path``, or an empty one where it is missing, unreadable or not an
    object."""
    try:
        meta = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return meta if isinstance(meta, dict) else {}


def package_version() -> str:
    """Version of msapod: the installed metadata, else :data:`FALLBACK_VERSION`."""
    try:
        return version("msapod")
    except PackageNotFoundError:
        return FALLBACK_VERSION


def cache_dir() -> Path:
    """Root of the cache: ``$MSAPOD_CACHE`` if set, else ``~/.cache/msapod``."""
    env = os.environ.get("MSAPOD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "msapod"


def repository_url(path: str) -> str | None:
    """The raw-file URL of ``path`` (relative to the repository root) at the commit pip
    installed msapod from, read from pip's install record (``direct_url.json``, PEP 610);
    ``None`` if msapod was not installed from a GitHub repository (an index, a local
    folder, an editable checkout)."""
    import importlib.metadata  # at call time, so a patched distribution is honoured
    import re

    try:
        text = importlib.metadata.distribution("msapod").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        text = None
    info = json.loads(text) if text else {}
    commit = info.get("vcs_info", {}).get("commit_id")
    match = re.fullmatch(
        r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?", info.get("url", "")
    )
    if not commit or match is None:
        return None
    owner, repo = match.groups()
    return f"https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{path.lstrip('/')}"


def sha256_file(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_sha256(
    path: str | os.PathLike,
    expected: str,
    what: str,
    hint: str,
    error: type[Exception] = ValueError,
) -> Path:
    """``path`` if its sha256 is ``expected``; else ``error``: ``"<what>: <path> has sha256
    <digest>, expected <expected>; <hint>"``."""
    digest = sha256_file(path)
    if digest != expected:
        raise error(f"{what}: {path} has sha256 {digest}, expected {expected}; {hint}")
    return Path(path)


@contextmanager
def atomic_path(path: str | os.PathLike, tmp: str | os.PathLike | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it onto ``path``. On error a
    ``tmp`` given by the caller is left in place, the default one (unique to the process)
    removed."""
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


def write_json(path: str | os.PathLike, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically (:func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(obj, indent=1))
