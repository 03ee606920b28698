"""A small GPT (pre-norm decoder blocks, learned positions, byte-level vocabulary) and the
corpus it learns: sentences drawn from a fixed word list by a seeded generator, so every
worker and every run gets the same bytes without a download."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

VOCAB = 256  # bytes
# fmt: off
_WORDS = (
    "the", "a", "one", "two", "three", "model", "layer", "token", "step", "loss", "rank",
    "node", "batch", "data", "parallel", "shard", "gradient", "learns", "trains", "reads",
    "writes", "fast", "slow", "small", "large", "every", "each", "before", "after", "with",
    "without", "and", "or", "but", "so", "then", "when", "while", "gpu", "cpu", "memory",
    "sequence", "attention", "head", "block",
)
# fmt: on


@dataclass(frozen=True)
class Shape:
    layers: int
    d_model: int
    heads: int
    seq_len: int

    def flops_per_token(self, params: int) -> float:
        """Training FLOPs per token by the standard rule: 6 N (N without the embedding
        tables, which are lookups) plus the attention scores, 12 L H Q T (H Q = d_model)."""
        return 6.0 * params + 12.0 * self.layers * self.d_model * self.seq_len


def corpus(n_bytes: int, seed: int = 0) -> torch.Tensor:
    """``n_bytes`` of sentences over a fixed word list, the same for a seed on any machine."""
    g = torch.Generator().manual_seed(seed)
    out = bytearray()
    while len(out) < n_bytes:
        n = int(torch.randint(4, 12, (1,), generator=g))
        picks = torch.randint(0, len(_WORDS), (n,), generator=g).tolist()
        out += (" ".join(_WORDS[i] for i in picks).capitalize() + ". ").encode()
    return torch.tensor(list(out[:n_bytes]), dtype=torch.long)


class Block(nn.Module):
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.tok = nn.Embedding(VOCAB, shape.d_model)
        self.pos = nn.Embedding(shape.seq_len, shape.d_model)
        self.blocks = nn.ModuleList(Block(shape.d_model, shape.heads) for _ in range(shape.layers))
        self.ln = nn.LayerNorm(shape.d_model)
        self.head = nn.Linear(shape.d_model, VOCAB, bias=False)

    def non_embedding_params(self) -> int:
        tables = self.tok.weight.numel() + self.pos.weight.numel()
        return sum(p.numel() for p in self.parameters()) - tables

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))


def model(shape: Shape, seed: int) -> GPT:
    torch.manual_seed(seed)  # every worker starts from the same parameters
    return GPT(shape)
