"""A character-level GPT with standard or energy-gated attention, in one file.

The layout follows nanoGPT: pre-LayerNorm blocks, learned absolute positions, tied input
and output embeddings. ``attention="ega"`` switches every layer to *energy-gated
attention* (EGA, arXiv:2605.21842, Algorithm 1 as summarised in PAPER.md). Per head h:

* energy per key token ``e_j = <w_h, x_j>`` (one learned projection per head),
* a causal standardisation ``z_j = (e_j - mu_j) / sd_j`` where ``mu_j, sd_j`` are the
  mean and standard deviation of ``e_0 .. e_j``: the key's own prefix, so only positions
  ``<= j <= i`` enter and no information flows from the future (``standardize="none"``
  uses ``z_j = e_j``),
* a gate ``g_j = sigmoid(alpha_h (z_j - t_h))`` with learned ``alpha_h`` and ``t_h``,
* gated attention ``Ahat_ij = A_ij g_j / sum_k A_ik g_k``.

Because ``A_ij = exp(s_ij) / Z_i``, the gated attention is exactly
``softmax_j(s_ij + log g_j)``: the gate is an additive bias on the logits. Extraction
computes these probabilities; training appends one channel to queries and keys,
``q' = [q, 1]`` and ``k'_j = [k_j, log g_j / scale]``, so that PyTorch's fused causal
attention computes the same thing at the cost of one extra head dimension (queries, keys
and values must share their width to stay on the fast kernel, so the values get a zero
channel). A per-query standardisation ``(e_j - mu_i) / sd_i`` would make the gate a full
T x T tensor; the per-key prefix form keeps the same causality.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import GPTConfig

__all__ = ["GPT", "GPTConfig"]


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.head_dim = cfg.n_embd // cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.dropout = cfg.dropout if cfg.attention_dropout is None else cfg.attention_dropout
        self.resid_drop = nn.Dropout(cfg.dropout)
        self.ega = cfg.attention == "ega"
        self.standardize = cfg.standardize
        if self.ega:
            # energy projection w_h, slope alpha_h and threshold t_h per head
            self.energy = nn.Linear(cfg.n_embd, cfg.n_head, bias=False)
            self.gate_alpha = nn.Parameter(torch.ones(cfg.n_head))
            self.gate_threshold = nn.Parameter(torch.zeros(cfg.n_head))
        # per-head output mask used for head ablation (1 = keep); not a parameter
        self.register_buffer("head_mask", torch.ones(cfg.n_head), persistent=False)

    def log_gate(self, x: torch.Tensor) -> torch.Tensor:
        """``log g_j`` per head and key, shape (B, H, T)."""
        e = self.energy(x).transpose(1, 2)  # (B, H, T): e_j per head
        if self.standardize == "causal":
            # prefix moments in float64: E[e^2] - E[e]^2 cancels catastrophically in
            # float32 over short prefixes, which made the gate depend on rounding noise
            e64 = e.double()
            n = torch.arange(1, e.shape[-1] + 1, device=e.device, dtype=torch.float64)
            mu = e64.cumsum(-1) / n
            var = (e64.square().cumsum(-1) / n - mu.square()).clamp_min(0.0)
            e = ((e64 - mu) / torch.sqrt(var + 1e-5)).to(e.dtype)
        alpha = self.gate_alpha[:, None]
        t = self.gate_threshold[:, None]
        return F.logsigmoid(alpha * (e - t))

    def qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values (B, H, T, head_dim) of the layer input ``x`` (B, T, C), in
        ``x``'s dtype; the scores are ``q @ k^T / sqrt(head_dim)`` (plus ``log_gate`` for EGA)."""
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        shape = (B, T, self.n_head, self.head_dim)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        return q, k, v

    def probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """Exact attention probabilities (B, H, T, T), rows summing to one, zero above
        the diagonal; computed in float64 for extraction."""
        T = x.shape[1]
        q, k, _ = self.qkv(x)
        # in place: the (B, H, T, T) float64 scores are the largest array of extraction
        s = q.double() @ k.double().transpose(-2, -1)
        s.div_(math.sqrt(self.head_dim))
        if self.ega:
            s.add_(self.log_gate(x).double()[..., None, :])
        later = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        return torch.softmax(s.masked_fill_(later, float("-inf")), dim=-1)

    def head_outputs(self, x: torch.Tensor) -> torch.Tensor:
        """Per-head outputs ``(B, H, T, head_dim)`` of the fused kernels, which :meth:`forward`
        multiplies by ``head_mask`` before ``c_proj`` (attention dropout when training)."""
        q, k, v = self.qkv(x)
        p_drop = self.dropout if self.training else 0.0
        if self.ega:
            # log g_j enters as one extra query/key channel: q'.k'_j = q.k_j + log g_j / scale
            scale = 1.0 / math.sqrt(self.head_dim)
            log_g = self.log_gate(x)[..., None]  # (B, H, T, 1)
            ones = torch.ones_like(log_g)
            out = F.scaled_dot_product_attention(
                torch.cat([q, ones], dim=-1),
                torch.cat([k, log_g / scale], dim=-1),
                torch.cat([v, torch.zeros_like(log_g)], dim=-1),
                is_causal=True,
                dropout_p=p_drop,
                scale=scale,
            )
            return out[..., :-1]
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p_drop)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        B, T, C = x.shape
        if return_attention:
            _, _, v = self.qkv(x)
            att = self.probabilities(x)
            y = att.to(v.dtype) @ v
        else:
            y = self.head_outputs(x)
            att = None
        y = y * self.head_mask.to(y.dtype)[None, :, None, None]
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.c_proj(y)), att


class MLP(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        a, att = self.attn(self.ln_1(x), return_attention)
        x = x + a
        return x + self.mlp(self.ln_2(x)), att


class GPT(nn.Module):
    """Decoder-only character model; ``forward(idx, targets)`` returns ``(logits, loss)``."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def check_idx(self, idx: torch.Tensor) -> None:
        """A clear error unless ``idx`` is ``(batch, time)`` token ids the model takes,
        at most ``block_size`` long."""
        if idx.ndim != 2:
            raise ValueError(f"idx: expected (batch, time) token ids, got shape {tuple(idx.shape)}")
        if idx.shape[1] > self.config.block_size:
            raise ValueError(
                f"idx: sequence length {idx.shape[1]} exceeds block_size {self.config.block_size}"
            )

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        self.check_idx(idx)
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x, _ = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss

    @torch.no_grad()
    def attention(self, idx: torch.Tensor, layers=None):
        """Yield ``(layer, probs)`` with exact float64 probabilities (B, H, T, T), one layer
        at a time, stopping after the last requested layer."""
        self.check_idx(idx)
        wanted = set(range(self.config.n_layer) if layers is None else layers)
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for li, block in enumerate(self.blocks):
            if not wanted:
                return
            x, att = block(x, return_attention=li in wanted)
            if li in wanted:
                wanted.discard(li)
                yield li, att

    def set_head_mask(self, mask: torch.Tensor | None) -> None:
        """Ablate heads: ``mask`` is (n_layer, n_head) of 0/1 (``None`` restores all)."""
        L, H = self.config.n_layer, self.config.n_head
        if mask is None:
            mask = torch.ones(L, H)
        mask = torch.as_tensor(mask, dtype=torch.float32)
        if mask.shape != (L, H):
            raise ValueError(f"mask: expected shape ({L}, {H}), got {tuple(mask.shape)}")
        for block, m in zip(self.blocks, mask, strict=True):
            block.attn.head_mask.copy_(m)

    @contextmanager
    def differentiable_head_mask(self, mask: torch.Tensor | None = None) -> Iterator[torch.Tensor]:
        """Yield an (n_layer, n_head) leaf tensor ``xi`` (``requires_grad``; from ``mask``,
        default all ones, in the parameters' dtype and device) whose rows are the blocks'
        head masks inside the ``with`` block, so that ``dL/dxi`` gives head-importance
        scores; the previous masks are restored on exit."""
        L, H = self.config.n_layer, self.config.n_head
        p = next(self.parameters())
        init = torch.ones(L, H) if mask is None else torch.as_tensor(mask)
        if init.shape != (L, H):
            raise ValueError(f"mask: expected shape ({L}, {H}), got {tuple(init.shape)}")
        xi = init.detach().to(dtype=p.dtype, device=p.device).clone().requires_grad_(True)
        saved = [block.attn.head_mask for block in self.blocks]
        try:
            for block, row in zip(self.blocks, xi, strict=True):
                block.attn.head_mask = row  # a buffer slot may hold a non-leaf tensor
            yield xi
        finally:
            for block, old in zip(self.blocks, saved, strict=True):
                block.attn.head_mask = old
