"""Returns a Tensor subclass whose every torch operation raises."""

import torch


class Boom(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("boom\n" * 50)


def attention(inputs):
    context = torch.softmax(inputs @ inputs.T, dim=-1) @ inputs
    return context.as_subclass(Boom)
