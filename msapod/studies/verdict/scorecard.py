"""The scorecard: every claim of the paper, its verdict and the numbers behind it.

:func:`scorecard` renders the table of the book's scorecard page (``scorecard.csv``) from
the curve (``multiverse.nc``) through :mod:`.render`. :func:`llm_outcomes` decides the
claims a single pretrained LLM can speak to with the same tests.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..registry import REGISTRY, SCALE_AXES
from .curve import MAIN_READING, NULL_COLUMNS
from .outcome import Outcome, evaluate
from .render import (
    TestView,
    claim_views,
    joint_sentence,
    main_code,
    robustness_sentence,
    test_line,
    theorem_text,
    word,
)
from .statistics import Zoo

__all__ = ["LLM_CLAIMS", "PAGES", "llm_outcomes", "llm_zoo", "scorecard"]

#: The book pages where each claim is examined (the registry's ``pages``).
PAGES = {c.id: ", ".join(c.pages) for c in REGISTRY.values()}
#: The claims a single pretrained LLM's analysis can speak to.
LLM_CLAIMS = ("C1", "C2", "C3", "C5")


def _plain(text: str) -> str:
    return text.replace("**", "")


def scorecard(mv: xr.Dataset, llm: xr.Dataset | None = None) -> pd.DataFrame:
    """The scorecard table of the curve ``mv`` (and the LLM columns from ``llm``, a
    :func:`msapod.studies.measure.llm.smollm2_analysis` result; None: a dash).

    Returns
    -------
    pandas.DataFrame
        Index ``claim``; columns ``paper``, ``verdict``, ``measured`` (each test's line),
        ``robustness``, ``joint_test``, ``verdict_<zoo>`` for every other zoo,
        ``untrained``, ``shuffled``, ``words`` (the null columns), ``page``,
        ``llm_verdict``, ``llm_measured``.
    """
    zoos = [z for z in str(mv.attrs["zoos"]).split(",") if z]
    llm_out = llm_outcomes(llm) if llm is not None else {}
    rows = {}
    for c in REGISTRY:
        code = main_code(mv, c)
        if REGISTRY[c].kind == "theorem":
            j = int(np.flatnonzero(mv["main"].values)[0])
            g = [mv[f"theorem_{k}"].values[j] for k in ("gap", "beaten", "trials")]
            measured = theorem_text(*g).removeprefix("Measured: ").replace("$", "")
        else:
            measured = "; ".join(_plain(test_line(v, math=False)) for v in claim_views(mv, c))
        row = {
            "paper": REGISTRY[c].paper,
            "verdict": word(code),
            "measured": measured,
            "robustness": _plain(robustness_sentence(mv, c)),
            "joint_test": joint_sentence(mv, c),
        }
        for z in zoos[1:]:
            row[f"verdict_{z}"] = word(main_code(mv, c, z))
        for null in NULL_COLUMNS:
            n = str(mv["null_verdict"].sel(claim=c, null=null).values)
            row[null] = word(n) if n else "—"
        row["page"] = PAGES[c]
        got = llm_out.get(c)
        lines = [_plain(test_line(TestView.of(r), math=False)) for r in got.tests] if got else []
        row["llm_verdict"] = word(got.code) if got else "—"
        row["llm_measured"] = "; ".join(lines) if got else "—"
        rows[c] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("claim")


def llm_zoo(ds: xr.Dataset, mapping: str = "literal") -> Zoo:
    """A one-model :class:`~.statistics.Zoo` of an LLM analysis (``ds``: a
    :func:`msapod.analyze` result with a ``layer`` dim, e.g.
    :func:`msapod.studies.measure.llm.smollm2_analysis`): T_spec and H* of the plain POD
    with their jackknife standard errors, the band shares of its scale spectrum with the
    bands converted from characters to tokens (the ensemble's characters per token; no
    standard error), the paper's depth groups mapped by
    :func:`~msapod.studies.measure.llm.depth_groups`."""
    from ..measure.evidence import COARSE_MIN, EPS, FINE_MAX, band_shares
    from ..measure.llm import depth_groups

    cpt = float(ds.attrs.get("ensemble_chars_per_token", ds.attrs.get("chars_per_token", 1.0)))
    layers = [int(x) for x in ds["layer"].values]
    plain = ds.sel(window="plain")
    spec = ds["scale_spectrum"].transpose("layer", "scale")
    chars = spec["scale"].values * cpt
    fine, coarse = band_shares(spec.values, chars)
    fine = np.where((chars <= FINE_MAX).any(), fine, np.nan)  # a band without a scale of
    coarse = np.where((chars >= COARSE_MIN).any(), coarse, np.nan)  # the grid has no share
    one = {"model": ["SmolLM2"], "layer": layers}

    def var(x, *axes):
        """``x (layer)`` as ``(*axes, model, layer)`` at the default reading of ``axes``."""
        da = xr.DataArray(np.asarray(x, float)[None], dims=("model", "layer"), coords=one)
        return da.expand_dims({a: [MAIN_READING[a]] for a in axes})

    nan = np.full(len(layers), np.nan)
    T_se = ds["T_spec_se"].values if "T_spec_se" in ds else nan
    H_se = ds["H_star_se"].sel(eps=EPS).values if "H_star_se" in ds else nan
    ev = xr.Dataset(
        {
            "fine_share": var(fine, *SCALE_AXES),
            "T_spec": var(plain["T_spec"].values, "fit"),
            "T_spec_se": var(T_se, "fit"),
            "H_star": var(plain["H_star"].sel(eps=EPS).values, "criterion"),
            "H_star_se": var(H_se, "criterion"),
            "fine_share_se": var(nan, *SCALE_AXES),
            "coarse_share": var(coarse, *SCALE_AXES),
            "coarse_share_se": var(nan, *SCALE_AXES),
        },
        coords={"architecture": ("model", ["pretrained"])},
    )
    ev.attrs["n_snapshots"] = int(ds.attrs.get("n_snapshots", plain.sizes.get("rank", 0)))
    return Zoo(ev, groups=depth_groups(len(layers), mapping), name="SmolLM2")


def llm_outcomes(ds: xr.Dataset, mapping: str = "literal") -> dict[str, Outcome]:
    """:data:`LLM_CLAIMS` on an LLM analysis (:func:`llm_zoo`) under the default reading,
    its snippets the unit of inference (one model)."""
    zoo = llm_zoo(ds, mapping)
    reading = {**MAIN_READING, "unit": "snippets", "n": zoo.n_snapshots}
    return {c: evaluate(c, zoo, reading) for c in LLM_CLAIMS}
