"""Time of the specification curve and its joint test (msapod.studies.verdict) on the
shipped results.

The curve (:func:`msapod.studies.verdict.curve.assemble`) decides every claim under every
reading of every trained zoo from the shipped evidence (``results/evidence*.nc``,
``convergence.nc``, ``pruning.nc``, ``depth_pruning.nc``). Its per-model statistics are
memoised per reading of the evidence, so the unit of inference and C9's smallest effect,
which change only the decision, reuse them; the reference run decides every specification
from scratch (an empty memo per specification). The joint test
(:func:`msapod.studies.verdict.joint.joint_tests`) re-decides each claim's whole curve
under every relabelling at once (stacked arrays); its reference re-decides one relabelling
at a time. The script prints both times of each pair measured in the same run and their
ratio: compare the ratios, not the seconds.

Usage::

    MSAPOD_DATA=... python benchmarks/bench_multiverse.py
"""

from __future__ import annotations

import time

import numpy as np


def _zoos():
    """The main zoo and every other trained zoo as :class:`Zoo` objects, from the shipped
    results."""
    from msapod.models import zoo as zoo_mod
    from msapod.studies.store.results import load_result
    from msapod.studies.verdict.study import trained_zoos, zoo_losses, zoo_of

    trained, _ = trained_zoos()
    ev = load_result("evidence")
    studies = {
        "convergence": load_result("convergence"),
        "pruning": load_result("pruning").merge(load_result("depth_pruning"), compat="override"),
    }
    out = {}
    for z in trained:
        models = list(zoo_mod.trained(z))
        extra = studies if z == trained[0] else {}
        out[z] = zoo_of(ev, models, losses=zoo_losses(models), name=z, **extra)
    return out


def _curve_unmemoised(zoos) -> float:
    """The reference: every specification decided with a fresh memo (its statistics
    recomputed even where another specification read the same evidence)."""
    from msapod.studies.verdict.curve import CLAIM_IDS, CURVE_AXES, applies, specifications
    from msapod.studies.verdict.outcome import evaluate

    t0 = time.perf_counter()
    for spec in specifications(list(zoos)):
        zoo = zoos[spec["zoo"]]
        reading = {a: spec[a] for a in CURVE_AXES}
        zoo._memo.clear()
        for claim in CLAIM_IDS:
            if applies(claim, reading):
                evaluate(claim, zoo, reading)
    return time.perf_counter() - t0


def _joint_one_at_a_time(ds, claim: str) -> float:
    """The reference joint test of one claim: each relabelling decided on its own."""
    from msapod.studies.registry import REGISTRY
    from msapod.studies.verdict import joint
    from msapod.studies.verdict.inference import one_sample, welch

    zoo = str(ds.attrs["main_zoo"])
    tests = [t for t in ds["test"].values if ds["test_claim"].sel(test=t) == claim]
    keep = ds["applicable"].sel(claim=claim).values & (ds["zoo"].values == zoo)
    models = ds["model"].values[ds["model_zoo"].values == zoo]
    x = ds.sel(test=tests, model=models).isel(spec=np.flatnonzero(keep))["value"].values
    dev = x.reshape(-1, len(models))
    treated = ds["architecture"].values[ds["model_zoo"].values == zoo] == "ega"
    rows, _ = joint.relabellings(REGISTRY[claim].design, treated)
    t0 = time.perf_counter()
    for r in rows:
        iv = one_sample(r * dev) if REGISTRY[claim].design == "models" else welch(dev, r)
        joint.curve_statistics(iv.estimate, iv.se, iv.df, np.ones(len(dev)))
    return time.perf_counter() - t0


def main() -> None:
    from msapod.studies.verdict.curve import assemble
    from msapod.studies.verdict.joint import joint_tests

    zoos = _zoos()
    t0 = time.perf_counter()
    ds = assemble(zoos)
    memo = time.perf_counter() - t0
    plain = _curve_unmemoised(zoos)
    print(
        f"curve: {ds.sizes['spec']} specifications, {memo:.1f} s memoised, "
        f"{plain:.1f} s from scratch: ratio {memo / plain:.2f}"
    )
    t0 = time.perf_counter()
    joint_tests(ds)
    stacked = time.perf_counter() - t0
    claims = [c for c in ds["claim"].values if c != "C10"]
    single = sum(_joint_one_at_a_time(ds, str(c)) for c in claims)
    print(
        f"joint test, every claim: {stacked:.2f} s stacked, {single:.2f} s one relabelling "
        f"at a time: ratio {stacked / single:.2f}"
    )


if __name__ == "__main__":
    main()
