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

* :mod:`.verdict` -- how the claims are decided, numbers first:

  * :mod:`.verdict.inference` -- the one decision rule: replicates, interval, verdict code,
  * :mod:`.verdict.statistics` -- each test's statistic per model from the evidence,
  * :mod:`.verdict.outcome` -- a claim decided under one reading,
  * :mod:`.verdict.curve` -- every claim over the specification curve, and robustness,
  * :mod:`.verdict.joint` -- the joint test over a claim's curve,
  * :mod:`.verdict.study` -- the curve on every trained zoo with its null columns, cached
    (what ``multiverse.nc`` holds),
  * :mod:`.verdict.render` -- the one place outcomes become words,
  * :mod:`.verdict.check` -- :func:`check_claims`: the field-based claims on any fields,
  * :mod:`.verdict.scorecard` -- the scorecard table from the curve;

and on top, using all three:

* :mod:`.reproduce` -- every cached study in one command, and ``--check``,
* :mod:`.own_model` -- ``msapod analyze``: any model and text to a dataset with intervals,
* :mod:`.report` -- its self-contained HTML report;

and the book's kit beside the package (``msapod_book``: what the pages print and draw),
which imports msapod and is never imported by it.
"""

__all__ = ["check_claims"]


def __getattr__(name: str):
    """``check_claims`` on first use (the verdict tier imports the measurements)."""
    if name == "check_claims":
        from .verdict.check import check_claims

        return check_claims
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
