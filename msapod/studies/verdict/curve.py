"""The specification curve: every claim under every reading the book varies, as numbers.

The paper leaves many choices open (the page "The paper and its open choices"). Following
Simonsohn, Simmons & Nelson (2020) and Steegen et al. (2016), each claim is decided
(:func:`.outcome.evaluate`) under every combination of the readings that affect it
(:data:`CURVE_AXES`; the default first, tagged ``paper`` or ``book`` in
:data:`READING_TAGS`), on every trained zoo, and under both units of inference. Each
claim is evaluated on its sub-grid: its axes vary, the others stay at the default
reading (:func:`applies`). **Robust** means robust to every axis the book varies
(:func:`robustness`).

:func:`assemble` returns the curve as a Dataset of numbers and codes (``multiverse.nc``);
:func:`.study.multiverse_study` adds the null columns and the joint test, cached.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from ..measure.evidence import AXES, EVIDENCE_FORMAT
from ..measure.nullfields import NULLS
from ..registry import REGISTRY, qualified_id, registry_hash
from .outcome import UNITS, Outcome, evaluate
from .statistics import Zoo

__all__ = [
    "CLAIM_IDS",
    "CURVE_AXES",
    "DECIDING",
    "MAIN_READING",
    "NULL_COLUMNS",
    "READING_TAGS",
    "applies",
    "assemble",
    "claim_axes",
    "null_outcomes",
    "readings",
    "robustness",
    "source_hash",
    "specifications",
]

CLAIM_IDS = tuple(REGISTRY)
#: The axes of the curve and their values, the default reading first: the measurement
#: axes of the evidence, the unit of inference, and C9's smallest effect.
CURVE_AXES: dict[str, tuple] = {
    **AXES,
    "unit": UNITS,
    "c9_margin": (lambda s: (s, s / 2, 0.0))(REGISTRY["C9"].tests[0].sesoi),
}
#: The book's default reading.
MAIN_READING = {a: v[0] for a, v in CURVE_AXES.items()}
#: Per axis: whether the default reading is the paper's stated choice ("paper") or the
#: book's own ("book"), and why.
READING_TAGS: dict[str, tuple[str, str]] = {
    "field": ("paper", "the paper writes the scalogram of the attention, |W_psi[A](a, b)|^2"),
    "normalisation": (
        "book",
        "the paper gives no normalisation; E(a)/a (the rectified spectrum) puts a sinusoid's "
        "peak at its period",
    ),
    "scale_min": (
        "book",
        "the paper gives no grid; 3 lags is about 1.5 times the sampling limit (period >= 2 "
        "lags from a = 1.94 at omega0 = 6), log-spaced to L/2",
    ),
    "scale_stat": (
        "paper",
        "the paper reads local maxima a*_m of the scale spectrum; a maximum at the grid's edge "
        "is a bound and places no window",
    ),
    "c4_window": (
        "book",
        "C4 names lags (2-10, 10-35, 10-40) that a window of the dominant scale cannot reach "
        "(a* at or below the grid's first scale): the window sits on the paper's lags, sigma = "
        "width x half the range; the dominant scale's window is one reading",
    ),
    "centre": ("book", "the paper gives no window formula; centred where the energy of a* sits"),
    "width": (
        "book",
        "the paper gives no window width; sigma = a*, the wavelet's own width (C4's windows on "
        "the paper's lags: the same multiples of half the range)",
    ),
    "criterion": ("paper", "the paper's eps = 0.10 with 90 % of the energy"),
    "n": ("paper", "the paper's ensemble of N = 150 snippets"),
    "fit": ("book", "the paper gives no fit range; k = 1..N/2"),
    "unit": (
        "book",
        "the training seeds are the replicates of a claim about trained models; the models "
        "as they are, with their snippet uncertainty only, is the comparison",
    ),
    "c9_margin": (
        "book",
        "the paper gives no size for 'separates': the registry's smallest effect (10 % "
        "narrower), half of it and none",
    ),
}
#: The modules whose code decides the claims (the renderer's words are not among them).
DECIDING = ("inference.py", "statistics.py", "outcome.py", "curve.py", "joint.py", "study.py")
#: The null columns: the default reading on each null ensemble (the same models untrained,
#: on snippets with their characters or their words shuffled).
NULL_COLUMNS = NULLS


def claim_axes(claim: str) -> tuple[str, ...]:
    """The axes a claim's verdict depends on (the registry's, plus the unit of inference
    for a claim decided from replicates)."""
    c = REGISTRY[claim]
    return (*c.axes, "unit") if c.tests else c.axes


def _in_subgrid(claim: str, reading: Mapping) -> bool:
    """Whether ``reading`` is one of the claim's readings: under a reading named in the
    registry's ``varies_with`` only its axes vary."""
    c = REGISTRY[claim]
    for (axis, value), keep in c.varies_with.items():
        if reading[axis] == value:
            fixed = [a for a in c.axes if a != axis and a not in keep]
            if any(reading[a] != MAIN_READING[a] for a in fixed):
                return False
    return True


def applies(claim: str, reading: Mapping) -> bool:
    """Whether the claim is evaluated under ``reading``: its other axes at the default
    and the reading in its sub-grid."""
    axes = claim_axes(claim)
    others = all(reading[a] == MAIN_READING[a] for a in CURVE_AXES if a not in axes)
    return others and _in_subgrid(claim, reading)


def readings(claim: str) -> list[dict]:
    """The claim's readings (one zoo), the default first."""
    axes = claim_axes(claim)
    grid = itertools.product(*(CURVE_AXES[a] for a in axes))
    every = ({**MAIN_READING, **dict(zip(axes, values, strict=True))} for values in grid)
    return [r for r in every if _in_subgrid(claim, r)]


def specifications(zoos: Sequence[str]) -> list[dict]:
    """Every claim's readings on every zoo (``zoo`` added), distinct, the main zoo's
    default reading first."""
    specs = {}
    for z in zoos:
        for claim in CLAIM_IDS:
            for r in readings(claim):
                spec = {"zoo": z, **r}
                specs.setdefault(tuple(spec.values()), spec)
    return list(specs.values())


class _Cells:
    """The arrays of :func:`assemble`, filled one outcome at a time."""

    PER_TEST = ("estimate", "se", "df", "lower", "upper", "low", "high", "p_holds", "p_refuted")

    def __init__(self, n_spec: int, models: list[str]):
        self.tests = [(c.id, t) for c in REGISTRY.values() for t in c.tests]
        self.t_index = {qualified_id(c, t): i for i, (c, t) in enumerate(self.tests)}
        self.parts = [(c.id, p) for c in REGISTRY.values() for p in c.parts or ("",)]
        self.p_index = {(c, p): i for i, (c, p) in enumerate(self.parts)}
        self.models = models
        self.m_index = {m: i for i, m in enumerate(models)}
        nt, nm, nc = len(self.tests), len(models), len(CLAIM_IDS)
        self.num = {k: np.full((nt, n_spec), np.nan) for k in self.PER_TEST}
        self.value = np.full((nt, n_spec, nm), np.nan)
        self.value_se = np.full((nt, n_spec, nm), np.nan)
        self.code = np.full((nt, n_spec), "", dtype=object)
        self.reason = np.full((nt, n_spec), "", dtype=object)
        self.part_code = np.full((len(self.parts), n_spec), "", dtype=object)
        self.verdict = np.full((nc, n_spec), "", dtype=object)
        self.claim_reason = np.full((nc, n_spec), "", dtype=object)
        self.theorem = {k: np.full(n_spec, np.nan) for k in ("gap", "beaten", "trials")}

    def put(self, j: int, out: Outcome, models: list[str]) -> None:
        ci = CLAIM_IDS.index(out.claim)
        self.verdict[ci, j] = out.code
        self.claim_reason[ci, j] = out.reason
        for p, code in out.parts.items():
            self.part_code[self.p_index[(out.claim, p)], j] = code
        cols = [self.m_index[m] for m in models]
        for r in out.tests:
            i = self.t_index[r.id]
            for k in self.PER_TEST:
                self.num[k][i, j] = getattr(r, k)
            self.value[i, j, cols] = r.stat.value
            self.value_se[i, j, cols] = r.stat.se
            self.code[i, j] = r.code
            self.reason[i, j] = r.reason
        for k, v in out.extra.items():
            if k in self.theorem:
                self.theorem[k][j] = v


def assemble(zoos: Mapping[str, Zoo]) -> xr.Dataset:
    """Every claim under every reading of its sub-grid on every zoo of ``zoos`` (``{name:
    Zoo}``, the main zoo first), as numbers and codes (see the module docstring)."""
    names = list(zoos)
    specs = specifications(names)
    models = [m for z in names for m in zoos[z].models]
    cells = _Cells(len(specs), models)
    applicable = np.zeros((len(CLAIM_IDS), len(specs)), bool)
    for j, spec in enumerate(specs):
        zoo = zoos[spec["zoo"]]
        reading = {a: spec[a] for a in CURVE_AXES}
        for i, claim in enumerate(CLAIM_IDS):
            if applies(claim, reading):
                applicable[i, j] = True
                cells.put(j, evaluate(claim, zoo, reading), zoo.models)
    return _dataset(cells, specs, applicable, zoos)


#: The registry's fields of each test kept as ``test_<field>`` coordinates of the curve.
_TEST_FIELDS = ("part", "case", "log", "direction", "design", "reference", "sesoi")


def _dataset(cells: _Cells, specs, applicable, zoos: Mapping[str, Zoo]) -> xr.Dataset:
    names = list(zoos)
    test_ids = [qualified_id(c, t) for c, t in cells.tests]
    part_ids = [":".join(x for x in cp if x) for cp in cells.parts]
    arch = [str(a) for z in names for a in zoos[z].evidence["architecture"].values]
    spec_coords = {a: ("spec", np.asarray([s[a] for s in specs])) for a in ("zoo", *CURVE_AXES)}
    main = [
        s["zoo"] == names[0] and all(s[a] == MAIN_READING[a] for a in CURVE_AXES) for s in specs
    ]
    ts = [t for _, t in cells.tests]
    ds = xr.Dataset(
        {
            "verdict": (("claim", "spec"), cells.verdict.astype(str)),
            "claim_reason": (("claim", "spec"), cells.claim_reason.astype(str)),
            "applicable": (("claim", "spec"), applicable),
            "part_code": (("part", "spec"), cells.part_code.astype(str)),
            "code": (("test", "spec"), cells.code.astype(str)),
            "reason": (("test", "spec"), cells.reason.astype(str)),
            **{k: (("test", "spec"), v) for k, v in cells.num.items()},
            "value": (("test", "spec", "model"), cells.value),
            "value_se": (("test", "spec", "model"), cells.value_se),
            **{f"theorem_{k}": ("spec", v) for k, v in cells.theorem.items()},
        },
        coords={
            "claim": list(CLAIM_IDS),
            "part": part_ids,
            "part_claim": ("part", [c for c, _ in cells.parts]),
            "part_name": ("part", [p for _, p in cells.parts]),
            "test": test_ids,
            "test_claim": ("test", [c for c, _ in cells.tests]),
            **{f"test_{k}": ("test", [getattr(t, k) for t in ts]) for k in _TEST_FIELDS},
            "spec": np.arange(len(specs)),
            **spec_coords,
            "main": ("spec", np.asarray(main, bool)),
            "model": cells.models,
            "architecture": ("model", arch),
            "model_zoo": ("model", [z for z in names for _ in zoos[z].models]),
        },
    )
    ds["theorem_gap"].attrs["roundoff_bound"] = REGISTRY["C10"].stated["gap"]
    theorem = next((z for z in names if "t1_gap" in zoos[z].evidence), None)
    ds.attrs = {
        "title": "specification curve of the paper's claims",
        "main_reading": json.dumps(MAIN_READING),
        "reading_tags": json.dumps(
            {a: {"tag": t, "reason": r} for a, (t, r) in READING_TAGS.items()}
        ),
        "zoos": ",".join(names),
        "main_zoo": names[0],
        "interval": "90 % (two one-sided tests at 95 %), Student-t over the models or Welch for "
        "architecture contrasts (unit seeds); normal with snippet standard errors (unit snippets)",
        "scale": "value, estimate, lower, upper, low, high on the decision scale: the log for "
        "tests with test_log",
        "registry_sha256": registry_hash(),
        "theorem_zoo": theorem or "",
    }
    return ds


def robustness(ds: xr.Dataset) -> xr.Dataset:
    """Per claim: ``robust_share`` (the share of its decided specifications, every zoo and
    unit, with the default verdict), ``robust`` (no single departure from the default
    reading, one axis at a time with the zoo, gives another decided verdict) and
    ``flips`` (those departures, ``"axis=value"`` joined by ``"; "``)."""
    main = {a: ds[a].values[ds["main"].values][0] for a in ("zoo", *CURVE_AXES)}
    share, robust, flips = [], [], []
    for claim in ds["claim"].values:
        v = ds["verdict"].sel(claim=claim).values
        ok = ds["applicable"].sel(claim=claim).values & (v != "untestable")
        default = v[ds["main"].values][0]
        share.append(float((v[ok] == default).mean()) if ok.any() else np.nan)
        changed = []
        for axis in ("zoo", *CURVE_AXES):
            others = np.logical_and.reduce(
                [ds[a].values == main[a] for a in ("zoo", *CURVE_AXES) if a != axis]
            )
            sel = ok & others & (ds[axis].values != main[axis])
            changed += [f"{axis}={x}" for x in np.unique(ds[axis].values[sel & (v != default)])]
        robust.append(not changed and default != "untestable")
        flips.append("; ".join(changed))
    return xr.Dataset(
        {
            "robust_share": ("claim", np.asarray(share)),
            "robust": ("claim", np.asarray(robust, bool)),
            "flips": ("claim", np.asarray(flips, dtype=str)),
        },
        coords={"claim": ds["claim"].values},
    )


def null_outcomes(null: Zoo, which: str) -> dict[str, Outcome | str]:
    """The default reading on a null ensemble (``which``: one of :data:`NULL_COLUMNS`):
    ``{claim: Outcome}``, or the registry's reason where the null does not address the
    claim (the claims not decided from fields, the claims a shuffled text does not speak
    to, the claims about training on the untrained models)."""
    out: dict[str, Outcome | str] = {}
    for c in REGISTRY.values():
        why = (
            "decided from head pruning or losses, not from fields"
            if c.source != "fields"
            else (c.no_untrained if which == "untrained" else c.no_shuffled)
        )
        out[c.id] = why or evaluate(c.id, null, MAIN_READING)
    return out


def source_hash() -> str:
    """sha256 of what decides the claims: the registry's facts and the verdict tier's
    sources (a cache-key part: an edited threshold or rule is a new key)."""
    h = hashlib.sha256(registry_hash().encode())
    h.update(str(EVIDENCE_FORMAT).encode())
    for name in DECIDING:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()
