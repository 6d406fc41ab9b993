"""The paper's studies built on the method core and the model zoo, in three tiers.

Imports only go down the list (``tests/test_layout.py`` checks it, imports inside
functions included):

* :mod:`.store` -- where fields and results are kept and verified:

  * :mod:`.store.cache` -- the one field store (zoo and null ensembles), the one cached
    per-model study recipe and the stacking of the zoo's results,
  * :mod:`.store.results` -- the shipped ``results/``: manifest, verified loading and
    comparison;

* :mod:`.measure` -- what is measured on the fields and the models, no verdicts:

  * :mod:`.measure.fieldstats` -- per-model field summaries the method pages show,
  * :mod:`.measure.modestats` -- POD-mode lag/scale summaries and coherency curves,
  * :mod:`.measure.uncertainty` -- jackknife intervals of T_spec, H* and the scale centroid,
  * :mod:`.measure.convergence` -- nested-ensemble convergence of the spectra,
  * :mod:`.measure.prune` -- head pruning guided by the POD spectra (the numbers behind C6),
  * :mod:`.measure.model_analysis` -- one path from any model and a text to per-layer
    analyses (ensemble, recorded fields, cached layers),
  * :mod:`.measure.llm` -- that path on a real LLM (SmolLM2-135M);

* :mod:`.verdict` -- how the claims are decided:

  * :mod:`.verdict.rules` -- one rule per claim (95 % intervals, contrasts, edge-aware
    scales, Holm across cases),
  * :mod:`.verdict.claims` -- claim texts, verdict words, intervals and verdict boxes,
  * :mod:`.verdict.multiverse` -- every claim over the specification curve of readings,
  * :mod:`.verdict.curve` -- the curve on every trained zoo with its null columns and
    joint test, cached (what ``multiverse.nc`` holds),
  * :mod:`.verdict.nulls` -- null controls (untrained models, shuffled snippets) and the
    joint test over the specification curve,
  * :mod:`.verdict.check` -- :func:`check_claims`: the field-based claims on any fields,
  * :mod:`.verdict.scorecard` -- the claims checked against the zoo;

and on top, using all three:

* :mod:`.reproduce` -- every cached study in one command, and ``--check``,
* :mod:`.own_model` -- ``msapod analyze``: any model and text to a dataset with intervals,
* :mod:`.report` -- its self-contained HTML report,
* :mod:`.pages`, :mod:`.prose`, :mod:`.book` -- what the book's pages print: a claim's
  numbers and tables beside its verdict (read from the curve), the method pages'
  sentences, and their longer figures. None decides a claim.
"""

from .verdict.check import check_claims

__all__ = ["check_claims"]
