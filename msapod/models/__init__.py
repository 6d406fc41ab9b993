"""The transformers whose attention fields the method analyses (needs the ``models`` extra).

* :mod:`.gpt` -- the GPT and its entropy-gated (EGA) variant,
* :mod:`.train` -- training, checkpoints (safetensors + config.json with its sha256),
* :mod:`.data` -- the TinyStories corpus and the ensemble offsets (numpy only),
* :mod:`.extract` -- attention extraction into labelled fields and zarr stores,
* :mod:`.zoo` -- the trained checkpoints shipped with the package.

Nothing is imported here, so ``msapod.models.data`` loads without torch.
"""
