"""nn.MultiheadAttention with its default layout: (tokens, batch, features)."""

import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, embed_dim, n_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(embed_dim, n_heads)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[0])
        return self.mha(x, x, x, attn_mask=mask)[0]


# expect: --against multihead --d-out 3 --heads 1 -> ok
