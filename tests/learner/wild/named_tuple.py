"""Self-attention returning a NamedTuple (weights first, then the output)."""

from typing import NamedTuple

import torch


class Result(NamedTuple):
    weights: torch.Tensor
    out: torch.Tensor


def attention(inputs, W_query, W_key, W_value):
    queries = torch.einsum("td,de->te", inputs, W_query)
    keys = torch.einsum("td,de->te", inputs, W_key)
    values = torch.einsum("td,de->te", inputs, W_value)
    scores = torch.einsum("qe,ke->qk", queries, keys) / keys.shape[-1] ** 0.5
    weights = scores.softmax(-1)
    return Result(weights, torch.einsum("qk,ke->qe", weights, values))


# expect: --against trainable -> ok
