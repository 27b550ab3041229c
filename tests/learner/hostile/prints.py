import sys

import torch

print("loading my attention")


def attention(inputs):
    print("computing", tuple(inputs.shape))
    print("a warning of mine", file=sys.stderr)
    return torch.softmax(inputs @ inputs.T, dim=-1) @ inputs
