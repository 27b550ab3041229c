"""An instance bound to the name attention; its weights are replaced by the reference's."""

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.query = nn.Linear(d_in, d_out, bias=False)
        self.key = nn.Linear(d_in, d_out, bias=False)
        self.value = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        return torch.softmax(q @ k.mT / k.shape[-1] ** 0.5, dim=-1) @ v


attention = Attention(3, 2)


# expect: --against trainable -> ok
