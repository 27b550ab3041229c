"""A custom autograd.Function for the softmax whose backward leaves out the rowsum term;
the gradient of the inputs comes from loss.backward()."""

import torch


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores):
        weights = torch.softmax(scores, dim=-1)
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad_weights):
        (weights,) = ctx.saved_tensors
        grad_scores = weights * grad_weights
        return grad_scores


def attention(inputs, W_query, W_key, W_value):
    x = inputs.clone().requires_grad_(True)
    queries, keys, values = x @ W_query, x @ W_key, x @ W_value
    weights = Softmax.apply(queries @ keys.T / keys.shape[-1] ** 0.5)
    (weights @ values).sum().backward()
    return x.grad
