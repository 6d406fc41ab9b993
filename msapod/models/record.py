"""Attention probabilities recorded in one forward pass, whatever attention the model runs.

:func:`record_batch` reads the probabilities ``A^{l,h}(i, j)`` where a forward pass hands
each layer's queries and keys to its attention kernel, so that one pass over a batch gives
every requested layer and only one layer's probabilities exist at a time. Each layer goes
to a *sink* (``sink(layer, values)``) as soon as it is computed, arranged as
:class:`Layout` says.

* **Hugging Face models that use transformers' attention interface**
  (``AttentionInterface``: Llama, Qwen, Mistral, Gemma, GPT-2, BERT, ...) are switched,
  for the pass, to one registered attention function, :data:`ATTENTION_NAME`. It
  receives what the configured kernel receives -- the queries and keys after the rotary
  embedding, the values, the scaling and the model's own mask (causal, padding, sliding
  window), built by the configured implementation's own mask function -- and

  1. returns what the configured implementation (``sdpa``, ``eager``, ...) returns for
     exactly these arguments, so that the pass computes what it computes unrecorded;
  2. for a requested layer computes, per query head h, a block of queries at a time,
     ``A^{l,h}(i, j) = softmax_j(s q_i^h . k_j^h + m_ij)`` (grouped key heads repeated to
     the query heads; scores in float32, float64 for a float64 model; a logit soft-cap
     and a position bias applied as the kernels apply them), or under ``eager`` records
     the kernel's own probabilities.

  The first block of queries of every recorded layer is checked: its probabilities times
  the values must give the kernel's output, else a ``ValueError`` names the layer (a
  kernel that is more than a masked, scaled softmax is refused rather than misread). The
  configured implementation is restored afterwards, after an error too.
* **Hugging Face models that do not use the interface** run with
  ``output_attentions=True`` (loaded with eager attention), each layer handed to the sink.
* **msapod's GPT** runs its blocks in order; a requested block's probabilities are its
  exact float64 :meth:`~msapod.models.gpt.CausalSelfAttention.probabilities`.

:func:`recording_path` says which of these a model takes (the progress bars show it).
"""

from __future__ import annotations

import contextvars
import inspect
import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from .gpt import GPT

__all__ = ["ATTENTION_NAME", "Layout", "inference", "record_batch", "recording_path"]

#: Name under which the recording function is registered with transformers'
#: ``AttentionInterface`` (and its mask function with ``AttentionMaskInterface``).
ATTENTION_NAME = "msapod_record"

#: Bytes of one block of scores (batch x heads x queries x keys) while a layer is recorded.
SCORE_BLOCK = 32 * 2**20

#: Largest deviation of the recorded probabilities times the values from the kernel's
#: output, relative to the largest value, per dtype of the values (round-off of the
#: kernel's own arithmetic: float32 kernels differ by about 1e-6).
OUTPUT_RTOL = {torch.float64: 1e-8, torch.float32: 1e-3, torch.float16: 3e-2, torch.bfloat16: 3e-2}


@dataclass(frozen=True)
class Layout:
    """How a recorded layer is handed to the sink.

    Attributes
    ----------
    average_heads
        Average over the heads (in float64) or keep them.
    tau_max
        None: the key layout ``(query, key)``; else the lag band ``(query, lag)``,
        ``R(i, tau) = A(i, i - tau)`` for ``tau = 0..tau_max`` (zero where ``i - tau < 0``).
    dtype
        Floating numpy dtype of the values.
    """

    average_heads: bool
    tau_max: int | None
    dtype: np.dtype

    def width(self, n_keys: int) -> int:
        """Size of the last axis: keys, or lags ``0..tau_max``."""
        return n_keys if self.tau_max is None else self.tau_max + 1

    def arrange(self, p: torch.Tensor, q0: int = 0) -> np.ndarray:
        """Probabilities ``p (B, H, queries, keys)`` of the queries ``q0, q0 + 1, ...`` as
        the sink takes them, ``(B, [H,] queries, width)``; ``ValueError`` for a lag band of
        probabilities with weight on keys after the query."""
        n_q, n_k = p.shape[-2:]
        if self.average_heads:
            p = p.to(torch.float64).mean(1)
        if self.tau_max is None:
            return p.cpu().numpy().astype(self.dtype, copy=False)
        later = torch.ones(n_q, n_k, dtype=torch.bool, device=p.device).triu(q0 + 1)
        if bool((p * later).any()):
            raise ValueError(
                "tau_max: the lag band keeps lags 0..tau_max of causal attention; this model "
                "gives weight to keys after the query (bidirectional attention): record it "
                "without tau_max"
            )
        i = torch.arange(q0, q0 + n_q, device=p.device)[:, None]
        j = i - torch.arange(self.tau_max + 1, device=p.device)[None, :]
        band = torch.gather(p, -1, j.clamp(min=0).expand(*p.shape[:-1], -1))
        band = band * (j >= 0)
        return band.cpu().numpy().astype(self.dtype, copy=False)


def _uses_interface(model) -> bool:
    """Whether a Hugging Face model computes attention through ``AttentionInterface``."""
    test = getattr(type(model), "_can_set_attn_implementation", None)
    return bool(test is not None and test())


def recording_path(model) -> str:
    """How :func:`record_batch` records ``model``'s attention, in words."""
    if isinstance(model, GPT):
        return "msapod GPT, float64 probabilities"
    if _uses_interface(model):
        return f"AttentionInterface, {model.config._attn_implementation} kernel"
    return "output_attentions (the model does not use transformers' AttentionInterface)"


@contextmanager
def inference(model):
    """Eval mode without gradients, the model's mode restored afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


Sink = Callable[[int, np.ndarray], None]


def record_batch(
    model, idx: torch.Tensor, layers: Sequence[int], sink: Sink, layout: Layout
) -> None:
    """One forward pass over the token ids ``idx (B, L)``: ``sink(layer, values)`` for
    every requested layer (1-based, ascending), ``values (B, [H,] L, width)`` as
    ``layout`` arranges them. Run it under :func:`inference`.

    Raises
    ------
    ValueError
        The model returned no probabilities, its kernel's output is not its recorded
        probabilities times the values, or fewer layers called the kernel than it has.
    """
    wanted = sorted(int(x) for x in layers)
    if isinstance(model, GPT):
        _gpt_pass(model, idx, wanted, sink, layout)
    elif _uses_interface(model):
        _interface_pass(model, idx, wanted, sink, layout)
    else:
        _output_attentions_pass(model, idx, wanted, sink, layout)


def _gpt_pass(model: GPT, idx: torch.Tensor, wanted: list[int], sink: Sink, layout) -> None:
    """msapod's GPT: the blocks in order up to the last requested one."""
    model.check_idx(idx)
    x = model.wte(idx) + model.wpe(torch.arange(idx.shape[1], device=idx.device))
    for number, block in enumerate(model.blocks[: wanted[-1]], start=1):
        if number in wanted:
            sink(number, layout.arrange(block.attn.probabilities(block.ln_1(x))))
        if number < wanted[-1]:
            x = block(x)[0]


def _no_cache(model) -> dict:
    """``use_cache=False`` where the model's forward takes it (no key/value cache kept)."""
    params = inspect.signature(model.forward).parameters
    return {"use_cache": False} if "use_cache" in params else {}


def _output_attentions_pass(model, idx, wanted: list[int], sink: Sink, layout) -> None:
    """A model outside the interface: every layer from ``output_attentions``."""
    out = model(input_ids=idx, output_attentions=True, **_no_cache(model))
    att = getattr(out, "attentions", None)
    n_layer = int(model.config.num_hidden_layers)
    if att is None or len(att) != n_layer or any(att[k - 1] is None for k in wanted):
        raise ValueError(
            f"model: {type(model).__name__} does not use transformers' AttentionInterface "
            "and returned no attention probabilities with output_attentions=True; load it "
            "with attn_implementation='eager'"
        )
    del out
    for layer in wanted:
        sink(layer, layout.arrange(att[layer - 1]))


# ----------------------------------------------------------------------------- interface


class _Stop(Exception):
    """Raised by the recording function once the last requested layer is recorded."""


@dataclass
class _Session:
    """One recorded pass: what the recording function reads."""

    wanted: list[int]
    sink: Sink
    layout: Layout
    kernels: dict  # id(config) -> the configured implementation
    default: str  # the top model's configured implementation
    seen: dict  # id(module) -> layer number, in the order of the calls

    def kernel(self, obj) -> str:
        """The configured implementation of a module or config."""
        config = getattr(obj, "config", obj)
        return self.kernels.get(id(config), self.default)


_SESSION: contextvars.ContextVar[_Session | None] = contextvars.ContextVar(
    "msapod_record_session", default=None
)


def _interface_pass(model, idx, wanted: list[int], sink: Sink, layout) -> None:
    """A model using the interface: one pass under :data:`ATTENTION_NAME`."""
    _register()
    configs = {id(m.config): m.config for m in model.modules() if hasattr(m, "config")}
    configs = {k: c for k, c in configs.items() if hasattr(c, "_attn_implementation_internal")}
    kernels = {k: c._attn_implementation_internal for k, c in configs.items()}
    session = _Session(wanted, sink, layout, kernels, model.config._attn_implementation, {})
    token = _SESSION.set(session)
    try:
        for c in configs.values():
            c._attn_implementation_internal = ATTENTION_NAME
        try:
            model(input_ids=idx, **_no_cache(model))
        except _Stop:
            pass
    finally:
        for k, c in configs.items():
            c._attn_implementation_internal = kernels[k]
        _SESSION.reset(token)
    n_layer = int(model.config.num_hidden_layers)
    missing = [layer for layer in wanted if layer not in session.seen.values()]
    if missing or (wanted[-1] == n_layer and len(session.seen) != n_layer):
        raise ValueError(
            f"model: {len(session.seen)} attention modules of {type(model).__name__} called "
            f"transformers' AttentionInterface in one pass, expected its {n_layer} layers "
            f"(layers {missing} not recorded); load it with attn_implementation='eager' and "
            "pass a model that returns output_attentions"
        )


def _register() -> None:
    """Register the recording function and its mask function with transformers (once)."""
    from transformers.masking_utils import AttentionMaskInterface
    from transformers.modeling_utils import AttentionInterface

    AttentionInterface.register(ATTENTION_NAME, _record_attention)
    AttentionMaskInterface.register(ATTENTION_NAME, _record_mask)


def _record_mask(*args, **kwargs):
    """The mask the configured implementation builds (None where it builds none)."""
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    build = ALL_MASK_ATTENTION_FUNCTIONS._global_mapping.get(_active().kernel(kwargs["config"]))
    return None if build is None else build(*args, **kwargs)


def _active() -> _Session:
    """The recorded pass under way."""
    session = _SESSION.get()
    if session is None:
        raise RuntimeError(
            f"model: attention implementation {ATTENTION_NAME!r} is active outside a "
            "recorded pass; set the model's attn_implementation back"
        )
    return session


def _configured_function(module, kernel: str):
    """The attention function the module's own code calls under ``kernel`` (through its
    modeling file's interface, its eager function as the default)."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    home = sys.modules.get(type(module).__module__)
    interface = getattr(home, "ALL_ATTENTION_FUNCTIONS", ALL_ATTENTION_FUNCTIONS)
    function = interface.get_interface(kernel, getattr(home, "eager_attention_forward", None))
    if function is None:
        raise ValueError(
            f"model: no {kernel!r} attention function found for {type(module).__name__}; load "
            "the model with attn_implementation='sdpa'"
        )
    return function


def _record_attention(module, query, key, value, attention_mask, *args, **kwargs):
    """The registered attention function (see the module docstring): the configured
    kernel's result, after handing a requested layer's probabilities to the sink."""
    session = _active()
    layer = session.seen.setdefault(id(module), len(session.seen) + 1)
    kernel = session.kernel(module)
    result = _configured_function(module, kernel)(
        module, query, key, value, attention_mask, *args, **kwargs
    )
    if layer not in session.wanted:
        return result
    out, weights = result[0], result[1]
    if kernel == "eager" and isinstance(weights, torch.Tensor):
        values = session.layout.arrange(weights)
    else:
        scores = _Scores(module, query, key, attention_mask, kwargs)
        values = scores.probabilities(session.layout, value, out, f"layer {layer} ({kernel})")
    session.sink(layer, values)
    if layer == session.wanted[-1]:
        raise _Stop
    return result


class _Scores:
    """The attention scores of one call: ``s q_i . k_j`` (soft-capped, plus the position
    bias) under the call's mask, per query head, a block of queries at a time."""

    def __init__(self, module, query, key, mask, kwargs: dict) -> None:
        B, H, Q, d = query.shape
        if key.shape[2] != Q:
            raise ValueError(
                "model: recording needs the queries and keys of one pass over the ids (no "
                f"key/value cache), got {Q} queries and {key.shape[2]} keys"
            )
        self.dtype = torch.float64 if query.dtype == torch.float64 else torch.float32
        self.groups = H // key.shape[1]  # query heads per key head (grouped-query attention)
        self.query = query
        self.key = self.heads(key)
        scaling = kwargs.get("scaling")
        self.scaling = d**-0.5 if scaling is None else float(scaling)
        self.softcap = kwargs.get("softcap")
        self.bias = kwargs.get("position_bias")
        self.mask = mask
        if mask is not None and not (isinstance(mask, torch.Tensor) and mask.ndim == 4):
            raise ValueError(
                f"model: its attention mask ({type(mask).__name__}) cannot be read; load it "
                "with attn_implementation='sdpa' or 'eager'"
            )
        causal = kwargs.get("is_causal")
        self.causal = getattr(module, "is_causal", True) if causal is None else bool(causal)
        self.window = kwargs.get("sliding_window")

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        """Key or value heads repeated to the query heads, in the scores' dtype."""
        x = x.to(self.dtype)
        return x.repeat_interleave(self.groups, dim=1) if self.groups > 1 else x

    def block(self, q0: int, q1: int) -> torch.Tensor:
        """Masked scores ``(B, H, q1 - q0, keys)`` of the queries ``q0..q1 - 1``."""
        s = (self.query[:, :, q0:q1].to(self.dtype) @ self.key.transpose(-1, -2)) * self.scaling
        if self.softcap is not None:
            s = torch.tanh(s / self.softcap) * self.softcap
        if self.bias is not None:
            s = s + self.bias[..., q0:q1, :].to(self.dtype)
        n_k = s.shape[-1]
        if self.mask is not None:
            m = self.mask[:, :, q0:q1, :n_k]
            if m.dtype == torch.bool:
                return s.masked_fill(~m, float("-inf"))
            return s + m.to(self.dtype)
        if not self.causal and self.window is None:
            return s
        i = torch.arange(q0, q1, device=s.device)[:, None]
        j = torch.arange(n_k, device=s.device)[None, :]
        keep = j <= i if self.causal else torch.ones_like(j > i)
        if self.window is not None:
            keep = keep & (j > i - int(self.window))
        return s.masked_fill(~keep, float("-inf"))

    def probabilities(self, layout: Layout, value, out, what: str) -> np.ndarray:
        """The layer's probabilities as ``layout`` arranges them, a block of queries at a
        time; the first block times the values checked against the kernel's ``out``."""
        B, H, Q, _ = self.query.shape
        n_k = self.key.shape[2]
        shape = (B, Q, layout.width(n_k)) if layout.average_heads else (B, H, Q, layout.width(n_k))
        values = np.empty(shape, dtype=layout.dtype)
        step = max(1, SCORE_BLOCK // (B * H * n_k * 4))
        for q0 in range(0, Q, step):
            q1 = min(Q, q0 + step)
            p = torch.softmax(self.block(q0, q1), dim=-1)
            if q0 == 0:
                self.check(p, value, out[:, :q1], what)
            values[..., q0:q1, :] = layout.arrange(p, q0)
        return values

    def check(self, p: torch.Tensor, value, out, what: str) -> None:
        """``p V`` must be the kernel's output ``out (B, queries, H, d)`` to round-off."""
        want = (p @ self.heads(value)).transpose(1, 2)
        if tuple(out.shape) != tuple(want.shape):
            raise ValueError(
                f"model: {what} returned an output of shape {tuple(out.shape)}, expected "
                f"{tuple(want.shape)} (batch, queries, heads, head size)"
            )
        tol = OUTPUT_RTOL.get(value.dtype, max(OUTPUT_RTOL.values())) * float(value.abs().max())
        err = float((out.to(self.dtype) - want).abs().max())
        if not err <= tol:
            raise ValueError(
                f"model: the output of {what} differs from its recorded probabilities times "
                f"the values by {err:.3g} (tolerance {tol:.3g}): its attention is more than "
                "a masked, scaled softmax of the queries and keys, which cannot be recorded"
            )
