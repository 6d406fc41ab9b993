"""The transformers whose attention fields the method analyses (needs the ``models`` extra):
character-level GPTs on TinyShakespeare, with standard or energy-gated attention (EGA).

* :mod:`.config` -- the configurations of a GPT and its training, and a checkpoint's
  verified ``config.json`` (no torch),
* :mod:`.gpt` -- the GPT with standard or energy-gated attention (EGA),
* :mod:`.train` -- training, checkpoints (safetensors + config.json with its sha256),
* :mod:`.data` -- the TinyShakespeare corpus and the ensemble offsets (numpy only),
* :mod:`.record` -- attention probabilities recorded in one forward pass, layer by layer
  (msapod's GPT, and Hugging Face models through transformers' attention interface),
* :mod:`.extract` -- attention extraction into labelled fields and field files,
* :mod:`.zoo` -- the configured models and the checkpoints of those trained.

Nothing is imported here, so ``msapod.models.data`` loads without torch.
"""
