"""How the paper's claims are decided, numbers first; built on :mod:`msapod.studies.measure`
and :mod:`msapod.studies.store` (the modules are listed in :mod:`msapod.studies`)."""
