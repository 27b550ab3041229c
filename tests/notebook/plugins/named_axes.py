"""A variant that names its axes, with a line whose source needs HTML escaping."""

import torch

from tracer import Variant, hookimpl, stage


def named(run):
    x = run.inputs
    scores = x @ x.T
    yield stage("scores", "Scores <b>raw</b>", axes=("query", "key"), scores=scores)
    hidden = torch.arange(x.shape[0])[None, :] > torch.arange(x.shape[0])[:, None]  # j > i & <
    masked = scores.masked_fill(hidden, float("-inf"))
    per_head = torch.stack([scores, -scores])
    yield stage(
        "masked",
        "Masked",
        axes={"masked": ("query", "key"), "per_head": ("head", "query", "key")},
        masked=masked,
        per_head=per_head,
        plain=torch.ones(2, 3),
    )
    return masked


@hookimpl
def register_variants(register):
    register(
        Variant(
            name="named-axes",
            title="Named axes",
            run=named,
            stages=("scores", "masked"),
            uses_weights=False,
        )
    )
