"""A wrapper around nn.MultiheadAttention that forgets the causal mask."""

from torch import nn


class Wrapped(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    def forward(self, x):
        out, _ = self.attn(x, x, x, need_weights=False)
        return out


# expect: --against multihead --d-out 3 --heads 1 -> mask-unused at 12
