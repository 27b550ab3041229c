import torch


def attention(inputs):
    weights = torch.softmax(inputs @ inputs.T, dim=-1)
    # Reuses the inputs' memory for the result: the caller's embeddings are gone.
    inputs[:] = weights @ inputs
    return inputs


# expect: --against vectorized -> inputs-mutated at 7
