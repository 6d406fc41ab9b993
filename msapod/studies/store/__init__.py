"""Where the studies keep their inputs and outputs, verified on every read: the field
store and per-model study cache (:mod:`.cache`) and the shipped results (:mod:`.results`).
Imports nothing from the other study tiers."""
