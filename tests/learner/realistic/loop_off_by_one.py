import torch


def attention(inputs):
    attn_scores = torch.empty(inputs.shape[0], inputs.shape[0])
    for i, x_i in enumerate(inputs):
        for j in range(len(inputs) - 1):
            attn_scores[i, j] = torch.dot(x_i, inputs[j])
    attn_weights = torch.softmax(attn_scores, dim=-1)
    return attn_weights @ inputs


# expect: --against naive-loop -> loop-range at 7
