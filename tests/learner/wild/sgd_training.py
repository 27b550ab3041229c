"""Training the projections with torch.optim.SGD, then attending with the trained weights."""

import torch
from torch import nn


def train(inputs, W_query, W_key, W_value, steps, lr):
    n = inputs.shape[0]
    partner = torch.roll(torch.arange(n), -1)
    targets = inputs[partner] @ W_value
    params = [nn.Parameter(w.clone()) for w in (W_query, W_key, W_value)]
    Wq, Wk, Wv = params
    opt = torch.optim.SGD(params, lr=lr)

    def forward():
        k = inputs @ Wk
        w = torch.softmax(inputs @ Wq @ k.T / k.shape[1] ** 0.5, dim=1)
        return w, w @ (inputs @ Wv)

    for _ in range(steps):
        opt.zero_grad()
        w, z = forward()
        loss = -w[torch.arange(n), partner].log().mean() + ((z - targets) ** 2).mean()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return forward()[1]


# expect: --against training -> ok
