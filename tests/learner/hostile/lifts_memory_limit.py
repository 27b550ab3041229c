"""Raises its own address-space limit (allowed as root), then takes far more than allowed."""

import resource
import time

import torch


def attention(inputs):
    try:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass  # not root: the limit holds anyway
    hoard = torch.ones(160, 1024, 1024)  # 640 MiB, every page touched
    time.sleep(1.0)
    return torch.softmax(inputs @ inputs.T, dim=-1) @ inputs + hoard[0, 0, 0] * 0
