import torch

inputs = torch.rand(6, 3)
scores = inputs @ inputs.T
