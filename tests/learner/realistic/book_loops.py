import torch


def attention(inputs):
    attn_scores = torch.empty(inputs.shape[0], inputs.shape[0])
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            attn_scores[i, j] = torch.dot(x_i, x_j)
    attn_weights = torch.softmax(attn_scores, dim=-1)
    all_context_vecs = attn_weights @ inputs
    return all_context_vecs


# expect: --against naive-loop -> ok
