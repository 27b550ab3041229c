"""A Hugging Face style attention block that calls F.scaled_dot_product_attention."""

import torch.nn.functional as F
from torch import nn


class GPT2Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.v_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = config.attention_probs_dropout_prob

    def forward(self, hidden_states):
        b, n, _ = hidden_states.shape

        def heads(t):
            return t.view(b, n, self.num_heads, self.head_dim).transpose(1, 2)

        q = heads(self.q_proj(hidden_states))
        k = heads(self.k_proj(hidden_states))
        v = heads(self.v_proj(hidden_states))
        out = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))


# expect: --against multihead --d-out 3 --heads 1 -> ok
