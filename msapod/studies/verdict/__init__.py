"""How the paper's claims are decided: one rule per claim (:mod:`.rules`), their texts and
boxes (:mod:`.claims`), the specification curve (:mod:`.multiverse`), null controls and
the joint test (:mod:`.nulls`), claims on any fields (:mod:`.check`) and the zoo's
scorecard (:mod:`.scorecard`). Built on :mod:`msapod.studies.measure` and
:mod:`msapod.studies.store`."""
