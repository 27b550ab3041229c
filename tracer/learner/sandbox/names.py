"""What the reference offers a learner's code (:class:`Setting`), and the names a learner may
give each part of it: parameters, sizes, options, projections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

FUNCTION_NAME = "attention"
ARGUMENT_ORDER = (
    "inputs",
    "source",
    "W_query",
    "W_key",
    "W_value",
    "W_out",
    "b_out",
    "num_heads",
)

# Constructor parameter names learners use, by what they mean.
D_IN = {"d_in", "din", "in_dim", "input_dim", "in_features", "d_input"}
D_OUT = {"d_out", "dout", "out_dim", "output_dim", "out_features", "head_size", "d_head"}
D_BOTH = {"d_model", "embed_dim", "n_embd", "emb_dim", "dim", "hidden_size", "d_embed"}
CONTEXT = {"context_length", "context_len", "block_size", "max_len", "max_seq_len", "seq_len"}
DROPOUT = {"dropout", "dropout_p", "p", "attn_pdrop", "dropout_rate", "drop"}
HEADS = {"num_heads", "n_heads", "n_head", "heads", "nhead", "h"}
BIAS = {"qkv_bias", "bias"}
CONFIG = {"config", "cfg", "conf", "args", "hparams", "params", "settings", "configuration"}
PROJECTED = (("query", "key", "value"), ("q", "k", "v"), ("queries", "keys", "values"))
"""Parameter names of a function that takes the tensors already projected (Annotated Transformer)."""
MASK_NAMES = {"mask", "attn_mask", "attention_mask", "causal_mask"}
SOURCE = {
    "source",
    "src",
    "context",
    "memory",
    "mem",
    "encoder_hidden_states",
    "encoder_output",
    "encoder_outputs",
    "encoder_out",
    "enc_out",
    "enc",
    "encoded",
    "kv",
    "kv_input",
    "x_kv",
    "y",
    "cond",
    "condition",
    "other",
    "s",
    "xs",
}
"""Names of the second sequence cross-attention reads its keys and values from."""
D_SOURCE = {
    "d_source",
    "d_src",
    "source_dim",
    "src_dim",
    "d_context",
    "context_dim",
    "d_kv",
    "kv_dim",
    "kdim",
    "vdim",
    "d_enc",
    "enc_dim",
    "encoder_dim",
    "d_memory",
    "memory_dim",
    "d_cross",
    "cross_dim",
    "d_y",
    "cond_dim",
    "d_in_kv",
    "d_kv_in",
}
"""Constructor parameters for the source sequence's width (``nn.MultiheadAttention``'s kdim)."""
INPUT_NAMES = {"inputs", "input", "x", "xs", "embeddings", "tokens", "hidden_states", "h"}
INPUT_NAMES |= {"target", "tgt", "queries_from", "x_q", "seq", "sequence", "embeds"}
OPTION_NAMES = {
    "kv_heads": {
        "kv_heads",
        "n_kv_heads",
        "num_kv_heads",
        "num_key_value_heads",
        "n_kv_head",
        "n_kv",
        "num_kv",
        "kv_head_count",
        "num_groups",
        "n_groups",
        "groups",
        "n_key_value_heads",
        "num_kv_groups",
        "n_kv_groups",
    },
    "window": {
        "window",
        "window_size",
        "sliding_window",
        "attention_window",
        "local_window",
        "win",
        "win_size",
        "w",
        "span",
    },
    "tile": {"tile", "tile_size", "chunk", "chunk_size", "block", "bc", "br", "tile_len"},
    "steps": {"steps", "n_steps", "num_steps", "epochs", "iterations", "iters", "n_iter"},
    "lr": {"lr", "learning_rate", "eta", "alpha", "step_size"},
    "causal": {"causal", "is_causal"},
}
"""Parameter names a variant's option goes by (``n_kv_heads`` for ``kv_heads``)."""


def normal_name(name: str) -> str:
    """A field or tensor name as the check compares it: ``grad_q``, ``d_q`` and ``dQ`` alike."""
    key = name.lower().replace("_", "")
    return "d" + key.removeprefix("grad") if key.startswith("grad") and len(key) > 4 else key


def option_for(name: str, options: dict[str, Any]) -> str | None:
    """The variant option a parameter name stands for, if the variant has that option."""
    if name in options:
        return name
    key = name.lower()
    return next((o for o, names in OPTION_NAMES.items() if o in options and key in names), None)


# Parameter names, by the projection they hold.
ROLES = {
    "query": {
        "w_query",
        "w_q",
        "wq",
        "query",
        "q",
        "q_proj",
        "to_q",
        "queries",
        "query_proj",
        "q_linear",
        "query_linear",
        "q_lin",
        "proj_q",
        "linear_q",
        "w_qs",
    },
    "key": {
        "w_key",
        "w_k",
        "wk",
        "key",
        "k",
        "k_proj",
        "to_k",
        "keys",
        "key_proj",
        "k_linear",
        "key_linear",
        "k_lin",
        "proj_k",
        "linear_k",
        "w_ks",
    },
    "value": {
        "w_value",
        "w_v",
        "wv",
        "value",
        "v",
        "v_proj",
        "to_v",
        "values",
        "value_proj",
        "v_linear",
        "value_linear",
        "v_lin",
        "proj_v",
        "linear_v",
        "w_vs",
    },
    "qkv": {"c_attn", "qkv", "w_qkv", "in_proj", "to_qkv", "qkv_proj", "wqkv", "query_key_value"},
    "out": {
        "out_proj",
        "c_proj",
        "w_out",
        "w_o",
        "wo",
        "o_proj",
        "proj",
        "to_out",
        "out",
        "fc_out",
        "o",
        "out_linear",
        "o_linear",
        "proj_out",
        "linear_out",
        "output",
        "output_proj",
        "attn_out",
        "dense",
        "w_out_proj",
    },
}
BIAS_WORDS = ("bias", "b")
"""How a bias is told apart from its projection in a raw parameter's name (``b_o``, ``out_bias``)."""


@dataclass(frozen=True)
class Setting:
    """What the reference offers a learner's code (sent by the parent process)."""

    arguments: dict[str, Any]
    """inputs, W_query... as tensors, num_heads as an int: only what the variant has."""
    d_in: int
    d_out: int
    """The width a learner's class is built with (per head for the wrapper variant)."""
    context_length: int
    dropout: float
    num_heads: int | None
    causal: bool
    stacked: bool
    """Per-head weights stacked (heads, d_in, width), as the wrapper variant gives them."""
    hidden: torch.Tensor | None = None
    """(query, key) pairs the reference hides (True), for code that takes a mask; None: none."""
    options: dict[str, Any] = field(default_factory=dict)
    """The variant's own options (``window``, ``tile``...): a function parameter of that name
    gets the value the reference used."""
    d_source: int | None = None
    """The source sequence's width, for cross-attention (None when there is no source)."""
    eval_dropout: float | None = None
    """Build the learner's module with this dropout rate, then switch it to eval mode: its
    output must equal the reference's without dropout (the eval-mode re-check)."""
