import torch


def attention(inputs, W_query, W_key, W_value):
    Q = inputs @ W_query
    K = inputs @ W_key
    V = inputs @ W_value
    A = torch.softmax(Q @ K.T / K.shape[1] ** 0.5, dim=1)
    Z = V.T @ A
    return Z.T


# expect: --against trainable -> context-order at 9
