"""Time of the whole specification grid (msapod.studies.verdict.multiverse) on the trained zoos.

With the head-averaged fields in the cache (``msapod reproduce`` or
:func:`msapod.studies.store.cache.cached_fields`), the script recomputes, for every model of
every trained zoo, the per-layer evidence (per-snapshot lag moments of u and A, the
per-lag Gram tensor, every scale grid / normalisation / statistic with its jackknife,
every window's leading mode) **without** reading the evidence cache, then evaluates every
claim under every specification of its sub-grid. The convergence and pruning studies are
read from their caches (``--no-studies`` skips them).

Next to it, the script times a few :func:`msapod.analyze` calls on one layer (the main
specification and two alternatives) and prints what re-running ``analyze`` once per
specification, model and layer would take (an underestimate: ``analyze`` computes no
jackknife). Timings are wall-clock on this machine: compare the ratio, not the seconds.

Usage::

    MSAPOD_DATA=... python benchmarks/bench_multiverse.py [--zoos d128] [--no-studies]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import xarray as xr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoos", nargs="*", default=None, help="zoo names (default: all)")
    parser.add_argument("--no-studies", action="store_true", help="skip N = 600 and C6")
    parser.add_argument("--analyze-calls", type=int, default=3)
    args = parser.parse_args()

    import msapod
    from msapod.models import zoo as zoo_mod
    from msapod.studies.store.cache import cached_fields, stack_models
    from msapod.studies.verdict.multiverse import (
        ZooData,
        assemble_study,
        fields_evidence,
        specifications,
        trained_zoos,
        zoo_losses,
    )

    trained, untrained = trained_zoos(args.zoos)
    if untrained:
        print(f"not trained (skipped): {', '.join(untrained)}")
    if not trained:
        raise SystemExit("no trained zoo")
    t_load = t_evidence = 0.0
    cpu0 = time.process_time()
    data = {}
    n_layers = 0
    for z in trained:
        models = list(zoo_mod.ZOOS[z])
        parts = []
        for i, m in enumerate(models):
            t0 = time.perf_counter()
            F = cached_fields(m, progress=False).load()
            t1 = time.perf_counter()
            ev = fields_evidence(F, theorem1_layer=4 if i == 0 else 0)
            t2 = time.perf_counter()
            t_load += t1 - t0
            t_evidence += t2 - t1
            n_layers += F.sizes["layer"]
            parts.append(ev)
            print(f"  {z}/{m}: fields {t1 - t0:5.1f} s, evidence {t2 - t1:5.1f} s", flush=True)
            del F
        ev = stack_models(parts, models)
        ev.attrs["n_snapshots"] = int(ev.sizes["rank"])
        conv = c6 = None
        if not args.no_studies:
            from msapod.studies.measure.convergence import convergence_study
            from msapod.studies.measure.prune import c6_verdict, pruning_study
            from msapod.studies.verdict.claims import Z95

            conv = convergence_study(models, progress=False).sel(model=models)
            c6 = c6_verdict(pruning_study(models, progress=False), z=Z95)
        data[z] = ZooData(models, ev, conv, c6, zoo_losses(models))
    t0 = time.perf_counter()
    mv = assemble_study(trained, untrained, data)
    t_rules = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    n_specs = len(specifications(trained))
    total = t_load + t_evidence + t_rules
    print(
        f"specification grid: {n_specs} specifications x {mv.sizes['claim']} claims over "
        f"{n_layers} layers ({', '.join(trained)})"
    )
    print(
        f"  fields from cache {t_load:6.1f} s | evidence {t_evidence:6.1f} s | rules "
        f"{t_rules:5.1f} s | total {total:6.1f} s ({total / 60:.1f} min; target <= 3 min)"
    )
    try:
        import os

        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(
        f"  CPU time of this process {cpu:6.1f} s (load average {load:.1f} on "
        f"{os.cpu_count()} cores: on a busy machine the wall time overstates the cost; "
        f"an idle 2-core machine needs between CPU/2 = {cpu / 2:.0f} s and CPU = {cpu:.0f} s)"
    )

    # re-running analyze once per specification: a few timed calls on one layer
    F = cached_fields(zoo_mod.ZOOS[trained[0]][0], progress=False).isel(layer=3).load()
    n_lag = F.sizes["key"]
    variants = [
        dict(scales=np.geomspace(1, n_lag / 2, 48), width=1.0),
        dict(scales=np.geomspace(3, n_lag / 2, 48), width=0.5),
        dict(scales=np.geomspace(2, n_lag / 2, 48), width=2.0, centre="scale"),
    ][: max(1, args.analyze_calls)]
    times, cpus = [], []
    for kw in variants:
        t0, c0 = time.perf_counter(), time.process_time()
        msapod.analyze(xr.DataArray(F.values, dims=F.dims), **kw)
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    per_layer = float(np.mean(times))
    estimate = per_layer * n_layers * n_specs / len(trained)
    print(
        f"analyze: {per_layer:.1f} s per layer and specification (mean of {len(times)}); "
        f"x {n_layers} layers x {n_specs // len(trained)} specifications per zoo = "
        f"{estimate:7.0f} s ({estimate / 60:.0f} min, no jackknife)"
    )
    print(f"ratio analyze-per-specification / specification grid: {estimate / total:.0f}x (wall)")
    est_cpu = float(np.mean(cpus)) * n_layers * n_specs / len(trained)
    print(f"ratio in CPU time: {est_cpu / cpu:.0f}x")


if __name__ == "__main__":
    main()
