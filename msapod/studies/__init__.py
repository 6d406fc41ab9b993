"""The paper's studies built on the method core and the model zoo.

* :mod:`.cache` -- cached fields and analyses (netCDF, keyed by inputs and version),
* :mod:`.uncertainty` -- jackknife intervals of T_spec, H* and the scale centroid,
* :mod:`.convergence` -- nested-ensemble convergence of the spectra,
* :mod:`.prune` -- head pruning guided by the POD spectra (claim C6),
* :mod:`.llm` -- the same analysis on a real LLM (SmolLM2-135M),
* :mod:`.claims` -- the one home of claim texts, verdict rules and interval formatting,
* :mod:`.scorecard` -- the claims checked against the zoo,
* :mod:`.reproduce` -- every cached study in one command.
"""
