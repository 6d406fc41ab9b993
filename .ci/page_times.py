"""Execution time of every book page, read from the build's jupyter-cache.

Usage: ``python .ci/page_times.py [_build/.jupyter_cache] [--limit 20] [--total 240]
[--strict]``. Prints one line per page (slowest first) and the sum; pages over ``--limit``
seconds and a sum over ``--total`` are flagged. With ``--strict`` a flag is an error
(exit 1); without it, CI reports the times (shared CI machines are noisy).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cache", nargs="?", default="_build/.jupyter_cache")
    p.add_argument("--limit", type=float, default=20.0, help="seconds per page")
    p.add_argument("--total", type=float, default=240.0, help="seconds for all pages")
    p.add_argument("--strict", action="store_true", help="exit 1 if a limit is exceeded")
    args = p.parse_args(argv)
    path = Path(args.cache)
    if not path.is_dir():
        print(f"page_times: {path}: no jupyter-cache folder (was the book built?)")
        return 1
    from jupyter_cache import get_cache

    latest: dict[str, tuple[float, object]] = {}
    for rec in get_cache(str(path)).list_cache_records():
        secs = rec.data.get("execution_seconds")
        if secs is None:
            continue
        uri = Path(rec.uri).name
        if uri not in latest or rec.created > latest[uri][1]:
            latest[uri] = (float(secs), rec.created)
    if not latest:
        print(f"page_times: {path}: no executed pages recorded")
        return 1
    over = []
    for uri, (secs, _) in sorted(latest.items(), key=lambda kv: -kv[1][0]):
        flag = ""
        if secs > args.limit:
            flag = f"  <- over {args.limit:.0f} s"
            over.append(uri)
        print(f"{secs:8.1f} s  {uri}{flag}")
    total = sum(s for s, _ in latest.values())
    print(
        f"{total:8.1f} s  all {len(latest)} pages"
        + ("" if total <= args.total else f"  <- over {args.total:.0f} s")
    )
    bad = bool(over) or total > args.total
    return 1 if (bad and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
