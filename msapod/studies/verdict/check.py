"""The paper's field-based claims on any attention fields, with the book's rules.

:func:`check_claims` is the scorecard's own path (fields -> per-layer evidence
(:func:`msapod.studies.verdict.multiverse.fields_evidence`) -> the rule of each claim under the
book's default reading (:func:`msapod.studies.verdict.multiverse.main_outcomes`) -> a table)
applied to fields the caller brings: one's own model, untrained models, shuffled inputs.
The zoo's scorecard (:func:`msapod.studies.verdict.scorecard.zoo_scorecard`) is the same path on
the zoo's cached fields, so a verdict here and there is decided by the same code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..registry import REGISTRY
from .claims import ROW_COLUMNS, render

__all__ = ["FIELD_CLAIMS", "check_claims", "outcomes_table"]

#: The claims decided from attention fields alone (C6 needs head pruning, L losses).
FIELD_CLAIMS = tuple(c.id for c in REGISTRY.values() if c.source == "fields")
#: Columns of :func:`check_claims` (and of the scorecard's claim columns).
COLUMNS = ROW_COLUMNS


def outcomes_table(outcomes: dict) -> pd.DataFrame:
    """``{claim: Outcome}`` as a table, index ``claim``, columns :data:`COLUMNS`: each
    row by :func:`~msapod.studies.verdict.claims.render`."""
    expanded = {}
    for claim, out in outcomes.items():
        expanded[claim] = out
        expanded.update(out.extra.get("parts", {}))
    rows = [{"claim": c, **render(c, out)["row"]} for c, out in expanded.items()]
    return pd.DataFrame(rows, columns=["claim", *COLUMNS]).set_index("claim")


def _check_fields(fields, dim: str) -> xr.DataArray:
    if not isinstance(fields, xr.DataArray):
        raise TypeError(f"fields: expected an xarray.DataArray, got {type(fields).__name__}")
    want = ("model", "layer", dim, "query", "key")
    missing = [d for d in want if d not in fields.dims]
    extra = [d for d in fields.dims if d not in want]
    if missing or extra:
        raise ValueError(
            f"fields: expected dims {want}, got {fields.dims}"
            + (f" (missing {missing})" if missing else "")
            + (f" (unexpected {extra}: average heads first)" if extra else "")
        )
    if "architecture" not in fields.coords or fields["architecture"].dims != ("model",):
        raise ValueError(
            "fields: expected an 'architecture' coordinate on 'model' (e.g. "
            "fields.assign_coords(architecture=('model', ['baseline', 'ega'])))"
        )
    layers = fields["layer"].values
    if not np.issubdtype(np.asarray(layers).dtype, np.integer) or (layers < 1).any():
        raise ValueError(f"fields: expected 1-based integer layer numbers, got {layers}")
    if len(set(fields["model"].values.tolist())) != fields.sizes["model"]:
        raise ValueError("fields: model names must be unique")
    return fields


def _reference(reference, fields, dim, omega0, axes, band_evidence, causal_window):
    """C1's and C2's reference evidence per model: of ``reference`` (fields like
    ``fields``) or, without it, of the causal window alone (computed once)."""
    models = fields["model"].values
    if reference is None:
        one = fields.isel(model=0, drop=True).transpose("layer", dim, "query", "key")
        ev = band_evidence(causal_window(one), dim=dim, omega0=omega0, axes=axes)
        return ev.expand_dims(model=models)
    reference = _check_fields(reference, dim)
    if sorted(map(str, reference["model"].values)) != sorted(map(str, models)):
        raise ValueError("reference: expected the models of fields (the same models untrained)")
    parts = [
        band_evidence(
            reference.sel(model=m, drop=True).transpose("layer", dim, "query", "key"),
            dim=dim,
            omega0=omega0,
            axes=axes,
        )
        for m in models
    ]
    return xr.concat(parts, dim=xr.DataArray(models, dims="model", name="model"))


def check_claims(
    fields: xr.DataArray,
    *,
    dim: str = "snapshot",
    losses: xr.DataArray | None = None,
    treatment: str = "ega",
    control: str = "baseline",
    omega0: float = 6.0,
    readings: str = "default",
    reference: xr.DataArray | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """The field-based claims (C1-C5, C7-C10) on ``fields``, decided by the book's rules.

    Parameters
    ----------
    fields
        Causal attention fields A^(l) with dims ``(model, layer, dim, query, key)``
        (heads averaged), an ``architecture`` coordinate on ``model`` and 1-based integer
        layer numbers. One model is fine (claims that compare architectures then say
        they need more models).
    dim
        The snapshot dim (N >= 3 snippets).
    losses
        Optional validation losses per ``model`` (with the same ``architecture`` coord):
        adds the loss claim L.
    treatment, control
        Architecture labels compared by C7, C8 and L (``treatment - control``).
    omega0
        Morlet centre frequency.
    readings
        ``"default"``: compute only the book's default reading (fast); ``"all"``: every
        reading of the specification curve (the verdicts are the same; slower).
    reference
        C1's and C2's reference: the same models untrained, fields like ``fields``
        (default: the causal window alone,
        :func:`msapod.studies.measure.evidence.causal_window`, the same for every model).
    progress
        Print one line per model.

    Returns
    -------
    pandas.DataFrame
        Index ``claim``; columns ``verdict`` (a word of
        :data:`msapod.studies.verdict.claims.VERDICTS`), ``measured``, ``interval`` (the 95 %
        intervals, or "point value"), ``rule``, ``cases``, ``reason``, ``paper`` (the
        claim as stated) and ``paper_value`` (whether a number the paper states is inside
        the intervals).

    Notes
    -----
    The layer groups are the paper's (early 1-2, late 5-6, the rest 3-6) for six layers
    and :func:`msapod.studies.measure.llm.depth_groups` ("literal": early 1-2, late the last
    third) otherwise; C4 and C8 name layers of the paper's six-layer model and are not
    testable on other depths. C10 (Theorem 1) is checked on layer 4 (or the middle layer)
    of the first model.
    """
    from ..measure.evidence import band_evidence, causal_window
    from ..measure.llm import depth_groups
    from .multiverse import MAIN_SPEC, ZooData, fields_evidence, main_outcomes

    fields = _check_fields(fields, dim)
    if readings not in ("default", "all"):
        raise ValueError(f"readings: expected 'default' or 'all', got {readings!r}")
    window_axes = ("field", "normalisation", "scale_min", "scale_stat", "centre", "width")
    axes = {a: (MAIN_SPEC[a],) for a in window_axes} if readings == "default" else None
    models = [str(m) for m in fields["model"].values]
    layers = [int(v) for v in fields["layer"].values]
    six = sorted(layers) == [1, 2, 3, 4, 5, 6]
    groups = None
    if not six:
        if sorted(layers) != list(range(1, len(layers) + 1)):
            raise ValueError(f"fields: expected layers 1..L in some order, got {layers}")
        groups = depth_groups(len(layers), "literal")
    t1 = 4 if 4 in layers else sorted(layers)[len(layers) // 2]
    evs = []
    for i, m in enumerate(models):
        if progress:
            print(f"check_claims: model {m} ({i + 1}/{len(models)})", flush=True)
        evs.append(
            fields_evidence(
                fields.sel(model=m, drop=True).transpose("layer", dim, "query", "key"),
                theorem1_layer=t1 if i == 0 else 0,
                dim=dim,
                omega0=omega0,
                axes=axes,
            )
        )
    ev = xr.concat(evs, dim=xr.DataArray(models, dims="model", name="model"))
    ev = ev.assign_coords(architecture=("model", [str(a) for a in fields["architecture"].values]))
    ev.attrs["n_snapshots"] = int(fields.sizes[dim])
    ref = _reference(reference, fields, dim, omega0, axes, band_evidence, causal_window)
    loss = None
    if losses is not None:
        if "model" not in losses.dims:
            raise ValueError("losses: expected a 'model' dim")
        loss = (losses.sel(model=models).assign_coords(architecture=ev["architecture"]), False)
    data = ZooData(
        models,
        ev,
        None,
        None,
        loss,
        groups=groups,
        treatment=treatment,
        control=control,
        reference=ref,
    )
    out = main_outcomes(data)
    keep = [c for c in (*FIELD_CLAIMS, "L") if c != "L" or losses is not None]
    return outcomes_table({c: out[c] for c in keep})
