"""The paper's studies built on the method core and the model zoo.

* :mod:`.cache` -- cached fields and analyses (netCDF, keyed by inputs and version), the
  one recipe of a cached per-model study and the stacking of the zoo's results,
* :mod:`.fieldstats` -- per-model field summaries the method pages show (mean lags,
  energies, mean fields, the scalogram of A),
* :mod:`.modestats` -- per-model POD-mode lag/scale summaries and coherency curves,
* :mod:`.uncertainty` -- jackknife intervals of T_spec, H* and the scale centroid,
* :mod:`.convergence` -- nested-ensemble convergence of the spectra,
* :mod:`.prune` -- head pruning guided by the POD spectra (claim C6),
* :mod:`.llm` -- the same analysis on a real LLM (SmolLM2-135M),
* :mod:`.claims` -- claim texts, verdict words, interval formatting and verdict admonitions,
* :mod:`.rules` -- one rule per claim (95 % intervals, contrasts, edge-aware scales),
* :mod:`.multiverse` -- every claim over the specification curve of reasonable readings,
* :mod:`.nulls` -- null controls (untrained models, shuffled snippets) and the joint test
  over the specification curve (permutation of architecture and layer labels),
* :mod:`.check` -- :func:`check_claims`: the field-based claims on any attention fields,
* :mod:`.own_model` -- ``msapod analyze``: any model and text to a dataset with intervals
  and a self-contained HTML report,
* :mod:`.scorecard` -- the claims checked against the zoo (the book's default reading),
* :mod:`.reproduce` -- every cached study in one command, and ``--check``,
* :mod:`.results` -- the shipped ``results/``: verified loading and comparison.
"""

from .check import check_claims

__all__ = ["check_claims"]
