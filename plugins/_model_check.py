"""What ``attn check FILE --against model`` compares a learner's attention with.

The book the first lessons follow loads OpenAI's GPT-2 weights into the learner's own
``MultiHeadAttention`` one chapter later: GPT-2 keeps its query, key and value weights
fused in one ``c_attn`` (a ``Conv1D``, whose weight is stored as (in, out), the other way
round from ``nn.Linear``), and the learner splits it into ``W_query``, ``W_key`` and
``W_value``. This reference checks that step and the attention after it against the
real layer, every head at once.

What the learner's code is handed (the calling convention)
-----------------------------------------------------------
``attention(x, c_attn_weight, c_attn_bias, c_proj_weight, c_proj_bias, num_heads)``:

- ``x``: the layer's input after its norm (``ln_1``), (tokens, d_model);
- the layer's attention weights exactly as GPT-2 holds them (``attn.c_attn.weight`` is
  ``c_attn_weight``): ``c_attn_weight`` (d_model, 3·d_model) and ``c_attn_bias`` (3·d_model,),
  ``c_proj_weight`` (d_model, d_model) and ``c_proj_bias`` (d_model,), all in Conv1D's layout,
  applied as ``x @ W + b``;
- ``num_heads``, the layer's number of heads.

It returns the attention's output (before the residual), (tokens, d_model); code that wants a
batch (the book's module) gets a batch of one. The stages compared: the projected queries,
keys and values, each split into heads, the scores, scaled and masked, the weights, each
head's context, the heads joined, and the output. Each is the real layer's: the queries, keys
and values come out of the layer's own ``c_attn`` module, and the weights and the output are
checked against what the layer itself computed (its ``output_attentions`` and its output)
before anything is compared.

Only GPT-2 layers are checked: the Llama family's rotary positions and grouped key/value
heads have no counterpart in the book's attention yet, and are refused in one line.
"""

from __future__ import annotations

import itertools

import torch
from tracer.builtin_plugins.model import (
    DEFAULT_TEXT,
    HEAD,
    LAYER,
    MODEL,
    _attention_of,
    _layers,
    load,
    token_ids,
    untraced,
)

from tracer import Mistake, RunContext, Variant, stage
from tracer.errors import UsageError

CHECKED = ("gpt2",)
"""Architectures (``config.model_type``) whose layers a learner's attention is checked against."""
GIVEN_NAMES = ("c_attn_weight", "c_attn_bias", "c_proj_weight", "c_proj_bias")
ORDER = ("q", "k", "v")
TOLERANCE = 1e-5
"""How far our stages may be from what the layer computed itself (its weights and output)."""

_LAYERS: dict[tuple[str, int, str], dict[str, torch.Tensor]] = {}
"""What one layer hands a learner, by (model option, layer, text): computed once per check."""


def _shown(name: str) -> str:
    return "the shipped model" if not name else f"model '{name}'"


def _layer_input(run: RunContext) -> dict[str, torch.Tensor]:
    """The layer's input after its norm, its weights as GPT-2 holds them, and what the layer
    computed itself (every head's weights, its attention's output)."""
    name, index = run.options["model"], run.options["layer"]
    text = run.text if run.text is not None else DEFAULT_TEXT
    key = (name, index, text)
    if key in _LAYERS:
        return _LAYERS[key]
    tokenizer, model = untraced(lambda: load(name))
    config = model.config
    if config.model_type not in CHECKED:
        raise UsageError(
            f"{_shown(name)} is a '{config.model_type}' model; attn check compares your "
            f"attention with a GPT-2 layer (fused c_attn) only: give -o model= a GPT-2 model "
            "(a folder saved with save_pretrained, or gpt2), or step through this one with "
            "attn trace model"
        )
    layers = config.num_hidden_layers
    if index >= layers:
        raise UsageError(
            f"-o layer={index} is out of range: the model has {layers} layers (0 to {layers - 1})"
        )
    attention = _attention_of(_layers(model)[index])
    heads, head_dim = attention.num_heads, attention.head_dim
    if run.options["head"] >= heads:
        head = run.options["head"]
        raise UsageError(
            f"-o head={head} is out of range: the model has {heads} heads (0 to {heads - 1})"
        )
    if abs(attention.scaling - head_dim**-0.5) > 1e-12 or attention.is_cross_attention:
        raise UsageError(
            f"{_shown(name)} scales layer {index}'s scores by {attention.scaling:g}, not "
            f"1/√head_dim as the book's attention does (scale_attn_weights, "
            "scale_attn_by_inverse_layer_idx in its config); attn check cannot compare them"
        )
    ids = token_ids(tokenizer, text)
    kept: dict[str, torch.Tensor] = {}

    class Stop(Exception):
        pass

    def before(module, args, kwargs):
        kept["x"] = (args[0] if args else kwargs["hidden_states"])[0]

    def after(module, args, output):
        kept["output"], kept["weights"] = output[0][0], output[1][0]
        raise Stop

    hooks = [
        attention.register_forward_pre_hook(before, with_kwargs=True),
        attention.register_forward_hook(after),
    ]

    def work() -> None:
        try:
            with torch.no_grad():
                model(input_ids=torch.tensor([ids]), use_cache=False)
        except Stop:
            pass

    try:
        untraced(work)
    finally:
        for hook in hooks:
            hook.remove()
    with torch.no_grad():
        fused = untraced(lambda: attention.c_attn(kept["x"]))  # the layer's own module
    found = {
        "inputs": kept["x"].detach().clone(),
        "c_attn_weight": attention.c_attn.weight.detach().clone(),
        "c_attn_bias": attention.c_attn.bias.detach().clone(),
        "c_proj_weight": attention.c_proj.weight.detach().clone(),
        "c_proj_bias": attention.c_proj.bias.detach().clone(),
        "num_heads": torch.tensor(heads),
        "fused": fused.detach().clone(),
        "model_weights": kept["weights"].detach().clone(),
        "model_output": kept["output"].detach().clone(),
    }
    _LAYERS.clear()  # one layer at a time: a check asks for one
    _LAYERS[key] = found
    return found


def attend(
    given: dict[str, torch.Tensor],
    *,
    order: tuple[int, int, int] = (0, 1, 2),
    linear_qkv: bool = False,
    linear_out: bool = False,
    reshape: bool = False,
    causal: bool = True,
    scale: float | None = None,
) -> dict[str, torch.Tensor]:
    """The book's multi-head attention on the layer's weights, with one thing changed:
    ``order`` the fused weight's parts taken as q, k, v; ``linear_qkv``/``linear_out`` a
    Conv1D weight used as if it were nn.Linear's (untransposed, or transposed twice);
    ``reshape`` heads split by a reshape to (heads, tokens, head_dim) without a transpose;
    ``causal`` False: no mask; ``scale`` in place of 1/√head_dim."""
    x, heads = given["inputs"], int(given["num_heads"])
    n, d = x.shape
    head_dim = d // heads
    weights = given["c_attn_weight"].split(d, dim=-1)
    biases = given["c_attn_bias"].split(d, dim=-1)
    projected = []
    for part in order:
        W = weights[part].T if linear_qkv else weights[part]
        projected.append(x @ W + biases[part])
    queries, keys, values = projected

    def split(t: torch.Tensor) -> torch.Tensor:
        return (
            t.reshape(heads, n, head_dim) if reshape else t.view(n, heads, head_dim).transpose(0, 1)
        )

    q, k, v = split(queries), split(keys), split(values)
    scores = q @ k.transpose(1, 2)
    scaled = scores * (head_dim**-0.5 if scale is None else scale)
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    masked = scaled.masked_fill(hidden, float("-inf")) if causal else scaled
    attention = torch.softmax(masked, dim=-1)
    head_context = attention @ v
    if reshape:
        concat = head_context.reshape(n, d)
    else:
        concat = head_context.transpose(0, 1).contiguous().view(n, d)
    W_out = given["c_proj_weight"].T if linear_out else given["c_proj_weight"]
    return {
        "queries": queries,
        "keys": keys,
        "values": values,
        "head_queries": q,
        "head_keys": k,
        "head_values": v,
        "scores": scores,
        "scaled": scaled,
        "masked_scores": masked,
        "weights": attention,
        "head_context": head_context,
        "concat": concat,
        "context": concat @ W_out + given["c_proj_bias"],
    }


def gpt2_layer(run: RunContext):
    """Layer ``-o layer``'s attention, every head, as the book's MultiHeadAttention computes
    it from GPT-2's weights: what a learner's code is compared with."""
    if run.dropout > 0:
        raise UsageError(
            "attn check against a real model runs it as it predicts; leave --dropout at 0"
        )
    given = _layer_input(run)
    x, heads = given["inputs"], int(given["num_heads"])
    n, d = x.shape
    head_dim = d // heads
    yield stage(
        "given",
        "What your code is handed: the layer's input after its norm, and its attention's "
        "weights as GPT-2 holds them (Conv1D: applied as x @ W + b)",
        axes={
            "inputs": ("token", "feature"),
            "c_attn_weight": ("feature", "feature"),
            "c_attn_bias": ("feature",),
            "c_proj_weight": ("feature", "feature"),
            "c_proj_bias": ("feature",),
            "num_heads": (),
        },
        **{name: given[name] for name in ("inputs", *GIVEN_NAMES, "num_heads")},
    )

    # c_attn holds the queries', keys' and values' weights side by side, in that order.
    queries, keys, values = given["fused"].split(d, dim=-1)
    yield stage(
        "projected",
        "Queries, keys and values, from the layer's own c_attn (its weight's three parts, in order)",
        formula="[Q K V] = x W_attn + b_attn",
        axes=("token", "feature"),
        queries=queries,
        keys=keys,
        values=values,
    )

    # (tokens, d_model) -> (tokens, heads, head_dim) -> (heads, tokens, head_dim)
    queries = queries.view(n, heads, head_dim).transpose(0, 1)
    keys = keys.view(n, heads, head_dim).transpose(0, 1)
    values = values.view(n, heads, head_dim).transpose(0, 1)
    yield stage(
        "split",
        f"Split into {heads} heads of {head_dim} columns each",
        formula="view(tokens, heads, head_dim).transpose(0, 1)",
        axes={
            "queries": ("head", "query", "feature"),
            "keys": ("head", "key", "feature"),
            "values": ("head", "key", "feature"),
        },
        queries=queries,
        keys=keys,
        values=values,
    )

    scores = queries @ keys.transpose(1, 2)
    yield stage(
        "scores",
        "Every head's scores",
        formula="ω = Q Kᵀ",
        axes=("head", "query", "key"),
        scores=scores,
    )
    scaled = scores * head_dim**-0.5
    yield stage(
        "scaled",
        "Scaled by 1/√head_dim",
        formula=f"ω / √{head_dim}",
        axes=("head", "query", "key"),
        scaled=scaled,
    )
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    yield stage(
        "mask",
        "GPT-2 is causal: the keys after each query are hidden",
        axes=("query", "key"),
        mask=mask,
    )
    masked = scaled.masked_fill(mask, float("-inf"))
    yield stage(
        "masked_scores",
        "Masked scores",
        formula="-inf where the key comes after the query",
        axes=("head", "query", "key"),
        masked_scores=masked,
    )
    weights = torch.softmax(masked, dim=-1)
    if (weights - given["model_weights"]).abs().max() > TOLERANCE:
        raise UsageError(
            f"layer {run.options['layer']} of {_shown(run.options['model'])} computes other "
            "weights than the book's attention does on its own weights; attn check cannot compare them"
        )
    yield stage(
        "weights",
        "Attention weights: the layer's own (output_attentions)",
        formula="α = softmax(ω_masked)",
        axes=("head", "query", "key"),
        weights=weights,
    )
    head_context = weights @ values
    yield stage(
        "head_context",
        "Each head's context vectors",
        formula="Z_h = α_h V_h",
        axes=("head", "query", "feature"),
        head_context=head_context,
    )
    concat = head_context.transpose(0, 1).contiguous().view(n, d)
    yield stage(
        "concat",
        "Heads put back side by side",
        formula="transpose(0, 1).view(tokens, d_model)",
        axes=("query", "feature"),
        concat=concat,
    )
    context = concat @ given["c_proj_weight"] + given["c_proj_bias"]
    if (context - given["model_output"]).abs().max() > 1e-4:
        raise UsageError(
            f"layer {run.options['layer']} of {_shown(run.options['model'])} computes another "
            "output than the book's attention does on its own weights; attn check cannot compare them"
        )
    yield stage(
        "context",
        "The attention's output: the heads mixed by c_proj (the layer's own, before the residual)",
        formula="out = concat W_proj + b_proj",
        axes=("query", "feature"),
        context=context,
    )
    return context


def _given(run: RunContext) -> dict[str, torch.Tensor]:
    return _layer_input(run)


def _order_mistake(order: tuple[int, int, int]) -> Mistake:
    taken = ", ".join(ORDER[i] for i in order)
    return Mistake(
        "qkv-order",
        f"c_attn's weight split in the wrong order ({taken} instead of q, k, v)",
        "GPT-2's fused c_attn holds the query, key and value weights side by side in that "
        "order: `q_w, k_w, v_w = torch.split(c_attn_weight, d_model, dim=-1)` (its bias "
        "likewise).",
        lambda run: attend(_given(run), order=order),
        ops=("split", "chunk", "tensor_split", "unbind", "__getitem__"),
    )


TRANSPOSE = (
    "GPT-2's Conv1D stores its weight as (in, out), nn.Linear as (out, in): load the "
    "transpose, `W_query.weight = nn.Parameter(q_w.T)` (or compute `x @ q_w`), and transpose "
    "once only."
)

MISTAKES = (
    *(_order_mistake(order) for order in itertools.permutations(range(3)) if order != (0, 1, 2)),
    Mistake(
        "conv1d-layout",
        "c_attn's and c_proj's weights transposed the wrong number of times (Conv1D stores "
        "(in, out), nn.Linear (out, in))",
        TRANSPOSE,
        lambda run: attend(_given(run), linear_qkv=True, linear_out=True),
    ),
    Mistake(
        "conv1d-layout",
        "c_attn's weights transposed the wrong number of times (Conv1D stores (in, out), "
        "nn.Linear (out, in))",
        TRANSPOSE,
        lambda run: attend(_given(run), linear_qkv=True),
    ),
    Mistake(
        "conv1d-layout",
        "c_proj's weight transposed the wrong number of times (Conv1D stores (in, out), "
        "nn.Linear (out, in))",
        "GPT-2's Conv1D stores c_proj's weight as (in, out), nn.Linear as (out, in): "
        "`out_proj.weight = nn.Parameter(c_proj_weight.T)`, transposed once.",
        lambda run: attend(_given(run), linear_out=True),
    ),
    Mistake(
        "head-split",
        "heads split by a reshape to (heads, tokens, head_dim), without the transpose",
        "the heads are the last dimension's slices: `view(b, tokens, heads, head_dim)`, then "
        "`.transpose(1, 2)` to put the heads first (a reshape straight to (b, heads, tokens, "
        "head_dim) mixes tokens and heads).",
        lambda run: attend(_given(run), reshape=True),
        ops=("view", "reshape"),
    ),
    Mistake(
        "mask-unused",
        "no causal mask applied",
        "GPT-2 is causal: hide the keys after each query before the softmax, "
        "`scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)`.",
        lambda run: attend(_given(run), causal=False),
    ),
    Mistake(
        "scaling",
        "scores not scaled",
        "divide each head's scores by √head_dim before the softmax.",
        lambda run: attend(_given(run), scale=1.0),
        ops=("matmul", "__matmul__", "einsum"),
    ),
    Mistake(
        "scaling",
        "scaling by the model width instead of the head width",
        "√d_k is the square root of one head's width (head_dim = d_model / num_heads), not of "
        "d_model.",
        lambda run: attend(_given(run), scale=_given(run)["inputs"].shape[-1] ** -0.5),
        ops=("div", "__truediv__", "mul", "__mul__"),
    ),
)


CHECKED_WITH = Variant(
    name="model",
    title="A real GPT-2 layer's attention, every head, as the book's MultiHeadAttention computes it",
    description=(
        "What attn check --against model compares your attention(x, c_attn_weight, "
        "c_attn_bias, c_proj_weight, c_proj_bias, num_heads) with."
    ),
    run=gpt2_layer,
    stages=(
        "given",
        "projected",
        "split",
        "scores",
        "scaled",
        "mask",
        "masked_scores",
        "weights",
        "head_context",
        "concat",
        "context",
    ),
    options=(MODEL, LAYER, HEAD),
    uses_weights=False,
    uses_embeddings=False,
    mistakes=MISTAKES,
)
