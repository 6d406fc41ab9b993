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

With ``--joint`` it times the joint test over the main zoo's curve
(:func:`msapod.studies.verdict.nulls.joint_tests`) on the shipped evidence
(``results/evidence*.nc``, ``convergence.nc``, ``pruning.nc``) instead: per claim, one
relabelling evaluated on its own (the reference: the evidence relabelled, every
specification's rule run) against the joint test's own evaluation of all its
relabellings (stacked into one rule call per specification where the rule allows it),
as the cost per relabelling, their ratio, and the joint test's total.

Usage::

    MSAPOD_DATA=... python benchmarks/bench_multiverse.py [--zoos d128] [--no-studies]
    MSAPOD_DATA=... python benchmarks/bench_multiverse.py --joint [--claims C1 C4]
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
    parser.add_argument("--joint", action="store_true", help="time the joint test instead")
    parser.add_argument("--claims", nargs="*", default=None, help="--joint: these claims")
    args = parser.parse_args()
    if args.joint:
        return joint(args.claims)

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


def _shipped_zoos():
    """The trained zoos' ZooData and the untrained copies from the shipped results (the
    convergence and pruning studies on the main zoo only, as the curve has them)."""
    from msapod.models import zoo as zoo_mod
    from msapod.studies.store.results import load_result
    from msapod.studies.verdict import nulls
    from msapod.studies.verdict.multiverse import specifications, trained_zoos, zoo_data

    trained, _ = trained_zoos()
    ev, ev_u = load_result("evidence"), load_result("evidence-untrained")
    studies = {"convergence": load_result("convergence"), "pruning": load_result("pruning")}
    data = {
        z: zoo_data(
            zoo_mod.trained(z),
            evidence=ev,
            reference=ev_u,
            **{k: v if z == trained[0] else False for k, v in studies.items()},
        )
        for z in trained
    }
    untrained = {z: nulls.null_zoo_data(zoo_mod.trained(z), evidence=ev_u) for z in trained}
    return trained[0], data, untrained, specifications(trained)


def joint(claims=None) -> None:
    """Per claim: the cost of one relabelling evaluated on its own against the joint
    test's cost per relabelling, and the joint test's total (CPU time of this process)."""
    from msapod.studies.verdict import nulls
    from msapod.studies.verdict.multiverse import CLAIM_AXES, applies

    main, data, untrained, specs = _shipped_zoos()
    one, u_one = {main: data[main]}, {main: untrained[main]}
    d = data[main]
    print(f"joint test over the curve of zoo {main} ({len(d.models)} models), shipped evidence")
    print(
        f"{'claim':6} {'null':22} {'specs':>5} {'n_null':>6} {'one alone':>10} "
        f"{'per relab.':>10} {'ratio':>6} {'total':>8}  how"
    )
    total = 0.0
    for claim in claims or [c for c in nulls.DEFAULT_NULL]:
        kind = nulls.DEFAULT_NULL[claim]
        cs = [s for s in specs if s["zoo"] == main and applies(claim, s)]
        if kind == "trained vs untrained" and "n" in CLAIM_AXES[claim]:
            cs = [s for s in cs if s["n"] == int(d.ev.attrs["n_snapshots"])]
        labs, _, _ = nulls._labelings(claim, kind, d, nulls.MAX_EXACT, nulls.NUM_RANDOM, 0)
        view, u_view = nulls.claim_view(one, claim), nulls.claim_view(u_one, claim)
        curve = nulls.claim_curve(claim, cs, view, nulls._relabel_function(kind, u_view))
        c0 = time.process_time()
        curve(labs[1])
        alone = time.process_time() - c0
        c0 = time.process_time()
        _, how = nulls.claim_effects(claim, cs, one, kind, labs, u_one)
        spent = time.process_time() - c0
        total += spent
        per = spent / len(labs)
        print(
            f"{claim:6} {kind:22} {len(cs):5d} {len(labs):6d} {alone:9.3f}s {per:9.4f}s "
            f"{alone / per:5.0f}x {spent:7.1f}s  {how}",
            flush=True,
        )
    print(f"joint test, every claim: {total:.1f} s CPU (the curve's budget: 5 min wall)")


if __name__ == "__main__":
    main()
