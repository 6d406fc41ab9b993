"""Measurements on the fields and the models (field and mode statistics, jackknife
uncertainty, convergence in N, head pruning, the LLM analysis), read from and written to
:mod:`msapod.studies.store`. No verdicts: the rules live in :mod:`msapod.studies.verdict`."""
