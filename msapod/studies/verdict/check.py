"""The paper's field-based claims on any attention fields, with the book's tests.

:func:`check_claims` is the scorecard's own path (evidence, every test under the default
reading, a table by :mod:`.render`) on fields the caller brings.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ...wavelets import OMEGA0
from ..registry import REGISTRY
from .curve import MAIN_READING
from .outcome import UNITS, evaluate
from .render import outcome_rows
from .statistics import Zoo
from .study import MAIN_AXES

__all__ = ["FIELD_CLAIMS", "check_claims"]

#: The claims decided from attention fields alone (C6 needs head pruning, L losses).
FIELD_CLAIMS = tuple(c.id for c in REGISTRY.values() if c.source == "fields")


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


def check_claims(
    fields: xr.DataArray,
    *,
    dim: str = "snapshot",
    losses: xr.DataArray | None = None,
    treatment: str = "ega",
    control: str = "baseline",
    omega0: float = OMEGA0,
    unit: str = "auto",
    progress: bool = False,
) -> pd.DataFrame:
    """The field-based claims (C1-C5, C7-C10) on ``fields``, decided by the book's tests.

    Parameters
    ----------
    fields
        Causal attention fields A^(l) with dims ``(model, layer, dim, query, key)``
        (heads averaged), an ``architecture`` coordinate on ``model`` and 1-based integer
        layer numbers.
    dim
        The snapshot dim (N >= 3 snippets).
    losses
        Optional validation losses per ``model``: adds the loss claim L.
    treatment, control
        Architecture labels compared by C7, C8 and L (``treatment - control``).
    omega0
        Morlet centre frequency.
    unit
        The unit of inference (:data:`~.outcome.UNITS`): ``"seeds"`` (the models are the
        replicates: needs at least 2, and 2 of each architecture for C7, C8, L),
        ``"snippets"`` (the models as they are, with their snippet uncertainty), or
        ``"auto"``: seeds with at least 2 models of each architecture, else snippets.
    progress
        Print one line per model.

    Returns
    -------
    pandas.DataFrame
        :func:`~.render.outcome_rows` (index ``claim``; ``paper``, ``verdict``, ``code``,
        ``measured``, ``reason``) with the column ``unit``.

    Notes
    -----
    The layer groups are the paper's (early 1-2, late 5-6, the rest 3-6) for six layers
    and :func:`msapod.studies.measure.llm.depth_groups` ("literal") otherwise; C4, C7 and
    C8 name layers of the paper's six-layer model and are not testable on other depths.
    C10 (Theorem 1) is checked on layer 4 (or the middle layer) of the first model.
    """
    from ..measure.evidence import fields_evidence
    from ..measure.llm import depth_groups

    fields = _check_fields(fields, dim)
    if unit not in (*UNITS, "auto"):
        raise ValueError(f"unit: expected one of {(*UNITS, 'auto')}, got {unit!r}")
    models = [str(m) for m in fields["model"].values]
    layers = sorted(int(v) for v in fields["layer"].values)
    groups = None
    if layers != [1, 2, 3, 4, 5, 6]:
        if layers != list(range(1, len(layers) + 1)):
            raise ValueError(f"fields: expected layers 1..L in some order, got {layers}")
        groups = depth_groups(len(layers), "literal")
    t1 = 4 if 4 in layers else layers[len(layers) // 2]
    kw = dict(dim=dim, omega0=omega0, axes=MAIN_AXES)
    evs = []
    for i, m in enumerate(models):
        if progress:
            print(f"check_claims: model {m} ({i + 1}/{len(models)})", flush=True)
        one = fields.sel(model=m, drop=True).transpose("layer", dim, "query", "key")
        evs.append(fields_evidence(one, theorem1_layer=t1 if i == 0 else 0, **kw))
    ev = xr.concat(evs, dim=xr.DataArray(models, dims="model", name="model"))
    arch = [str(a) for a in fields["architecture"].values]
    ev = ev.assign_coords(architecture=("model", arch))
    ev.attrs["n_snapshots"] = int(fields.sizes[dim])
    if losses is not None and "model" not in losses.dims:
        raise ValueError("losses: expected a 'model' dim")
    loss = losses.sel(model=models) if losses is not None else None
    zoo = Zoo(ev, losses=loss, groups=groups, treatment=treatment, control=control)
    if unit == "auto":
        unit = "seeds" if min(map(arch.count, arch)) >= 2 else "snippets"
    reading = {**MAIN_READING, "unit": unit, "n": zoo.n_snapshots}
    keep = [c for c in (*FIELD_CLAIMS, "L") if c != "L" or losses is not None]
    table = outcome_rows({c: evaluate(c, zoo, reading) for c in keep})
    table["unit"] = unit
    return table
