"""A Hugging Face style self-attention that never scales its scores."""

import torch
from torch import nn


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.key = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.value = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.out_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def split(self, x):
        b, n, _ = x.shape
        return x.view(b, n, self.num_attention_heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        b, n, d = hidden_states.shape
        q = self.split(self.query(hidden_states))
        k = self.split(self.key(hidden_states))
        v = self.split(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2))
        causal = torch.ones(n, n, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(causal, torch.finfo(scores.dtype).min)
        probs = nn.functional.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, n, d)
        return self.out_proj(context)


# expect: --against multihead --d-out 3 --heads 1 -> scaling at 26
