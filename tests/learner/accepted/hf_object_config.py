"""A Hugging Face style attention block whose config is a plain class of its own
(hidden_size, num_attention_heads, num_key_value_heads, head_dim, attention_dropout...)."""

import torch
from torch import nn


class AttnConfig:
    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        num_key_value_heads,
        max_position_embeddings,
        head_dim,
        attention_dropout=0.0,
    ):
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.max_position_embeddings = max_position_embeddings
        self.head_dim = head_dim
        self.attention_dropout = attention_dropout


class SelfAttention(nn.Module):
    def __init__(self, config: "AttnConfig"):
        super().__init__()
        self.heads, self.head_dim = config.num_attention_heads, config.head_dim
        width = self.heads * self.head_dim
        self.q_proj = nn.Linear(config.hidden_size, width, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, width, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, width, bias=False)
        self.o_proj = nn.Linear(width, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_dropout)
        n = config.max_position_embeddings
        self.register_buffer("causal", torch.tril(torch.ones(n, n, dtype=torch.bool)))

    def forward(self, hidden_states):
        b, n, _ = hidden_states.shape

        def split(t):
            return t.view(b, n, self.heads, self.head_dim).transpose(1, 2)

        q = split(self.q_proj(hidden_states))
        k = split(self.k_proj(hidden_states))
        v = split(self.v_proj(hidden_states))
        scores = q @ k.transpose(-1, -2) / self.head_dim**0.5
        scores = scores.masked_fill(~self.causal[:n, :n], float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        out = (weights @ v).transpose(1, 2).reshape(b, n, -1)
        return self.o_proj(out)
