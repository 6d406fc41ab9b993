"""The book's Sphinx extension: the pages that need executing run side by side.

With ``execute_notebooks: cache`` myst-nb executes a page when Sphinx reads it, one page
after another. Before Sphinx reads the pages (``env-before-read-docs``), this reads every
page about to be read as myst-nb reads it, looks it up in the build's jupyter-cache, and
executes the pages the cache lacks, several at a time (each in its own kernel process;
``MSAPOD_BOOK_JOBS`` sets how many, default the machine's CPUs), caching each page that
ran without error exactly as myst-nb caches it. myst-nb then finds every page in the
cache. A page that failed here is not cached: myst-nb executes it again and fails the
build with its traceback, as without this extension.

The kernels share the CPUs: each gets ``CPUs // jobs`` BLAS and torch threads
(``OMP_NUM_THREADS`` and the like, where the environment does not set them). More
threads than cores make OpenBLAS's waiting threads hold the cores the working ones need:
on a busy 2-core machine, page 05's random-basis cell took 16 s with two threads and
1.3 s with one.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from sphinx.util import logging

LOG = logging.getLogger(__name__)


def jobs() -> int:
    """How many pages execute at a time: ``MSAPOD_BOOK_JOBS`` or the CPUs."""
    text = os.environ.get("MSAPOD_BOOK_JOBS", "")
    if not text:
        return os.cpu_count() or 1
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"MSAPOD_BOOK_JOBS: expected a whole number >= 1, got {text!r}")
    return int(text)


#: The variables that set a kernel's BLAS and torch threads.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextmanager
def kernel_threads(n_jobs: int):
    """``os.environ`` with ``CPUs // n_jobs`` threads in :data:`THREAD_VARIABLES` where it
    does not set them (the kernels started inside inherit them); restored on exit."""
    threads = str(max(1, (os.cpu_count() or 1) // max(1, n_jobs)))
    added = {k: threads for k in THREAD_VARIABLES if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _notebook(env, docname: str):
    """The page ``docname`` as the notebook myst-nb executes and hashes, with its path;
    ``None`` for a page that is not a notebook or is excluded from execution."""
    from myst_nb.core.read import create_nb_reader

    path = Path(env.doc2path(docname))
    config = env.mystnb_config
    reader = create_nb_reader(str(path), env.myst_config, config, path.read_text("utf-8"))
    if reader is None:
        return None
    posix = PurePosixPath(path.as_posix())
    if any(posix.match(p) for p in config.execution_excludepatterns):
        return None
    return reader.read(path.read_text("utf-8")), path, reader.read_fmt


def _execute(notebook, path: Path, config):
    """One page executed in its folder (myst-nb's settings: timeout, errors)."""
    from jupyter_cache.executors.utils import single_nb_execution

    return single_nb_execution(
        notebook,
        cwd=str(path.parent),
        allow_errors=config.execution_allow_errors,
        timeout=config.execution_timeout,
        meta_override=True,
    )


def execute_missing(app, env, docnames) -> None:
    """Execute, ``jobs()`` at a time, the pages to be read that the cache lacks, and cache
    those that ran without error (the cache writes stay in this thread)."""
    config = env.mystnb_config
    if config.execution_mode != "cache":
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(config.execution_cache_path or ".jupyter_cache")
    missing = []
    for docname in sorted(docnames):
        found = _notebook(env, docname)
        if found is None:
            continue
        try:
            cache.match_cache_notebook(found[0])
        except KeyError:
            missing.append(found)
    if not missing:
        return
    n_jobs = min(jobs(), len(missing))
    LOG.info(f"msapod_execute: {len(missing)} pages to execute, {n_jobs} at a time")
    start = time.perf_counter()
    with kernel_threads(n_jobs), ThreadPoolExecutor(n_jobs) as pool:
        runs = {pool.submit(_execute, nb, path, config): (path, fmt) for nb, path, fmt in missing}
        for run in as_completed(runs):
            path, fmt = runs[run]
            result = run.result()
            if result.err is not None:
                LOG.info(f"msapod_execute: {path.name} failed; myst-nb runs it again")
                continue
            read = {} if fmt is None else {"read_data": fmt}
            record = cache.add_nb_to_project(str(path), **read)
            bundle = CacheBundleIn(result.nb, record.uri, data={"execution_seconds": result.time})
            cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
            LOG.info(f"msapod_execute: {path.name} executed in {result.time:.1f} s")
    LOG.info(f"msapod_execute: {len(missing)} pages in {time.perf_counter() - start:.0f} s")


def setup(app):
    app.connect("env-before-read-docs", execute_missing, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
