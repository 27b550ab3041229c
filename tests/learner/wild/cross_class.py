"""A decoder's cross-attention block, as a module that reads the encoder's output."""

import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, d_in, d_out, d_source):
        super().__init__()
        self.to_q = nn.Linear(d_in, d_out, bias=False)
        self.to_k = nn.Linear(d_source, d_out, bias=False)
        self.to_v = nn.Linear(d_source, d_out, bias=False)
        self.scale = d_out**-0.5

    def forward(self, x, encoder_hidden_states):
        q = self.to_q(x)
        k = self.to_k(encoder_hidden_states)
        v = self.to_v(encoder_hidden_states)
        attn = (q @ k.transpose(-1, -2)) * self.scale
        return attn.softmax(dim=-1) @ v


# expect: --against cross-attention -> ok
