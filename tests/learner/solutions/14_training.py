import torch


def train(inputs, W_query, W_key, W_value, steps=50, lr=2.0):
    n = inputs.shape[0]
    partner = (torch.arange(n) + 1) % n
    targets = inputs[partner] @ W_value
    W_query, W_key, W_value = (w.clone().requires_grad_() for w in (W_query, W_key, W_value))
    for _ in range(steps):
        with torch.enable_grad():
            keys = inputs @ W_key
            weights = torch.softmax((inputs @ W_query) @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
            context = weights @ (inputs @ W_value)
            attend = -torch.log(weights[torch.arange(n), partner]).mean()
            carry = ((context - targets) ** 2).mean()
            grads = torch.autograd.grad(attend + carry, (W_query, W_key, W_value))
        W_query = (W_query - lr * grads[0]).requires_grad_()
        W_key = (W_key - lr * grads[1]).requires_grad_()
        W_value = (W_value - lr * grads[2]).requires_grad_()
    keys = inputs @ W_key
    weights = torch.softmax((inputs @ W_query) @ keys.T / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ (inputs @ W_value)
