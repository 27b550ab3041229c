"""What ``attn check FILE --against model`` compares a learner's attention with.

The book the first lessons follow loads OpenAI's GPT-2 weights into the learner's own
``MultiHeadAttention`` one chapter later: GPT-2 keeps its query, key and value weights
fused in one ``c_attn`` (a ``Conv1D``, whose weight is stored as (in, out), the other way
round from ``nn.Linear``), and the learner splits it into ``W_query``, ``W_key`` and
``W_value``. Its Llama chapter does the same with a Llama's separate projections, rotary
positions and grouped key/value heads. This reference checks that loading and the attention
after it against the real layer, every head at once.

What the learner's code is handed (the calling convention)
-----------------------------------------------------------
GPT-2: ``attention(x, c_attn_weight, c_attn_bias, c_proj_weight, c_proj_bias, num_heads)``;
Llama, Mistral, Qwen2: ``attention(x, q_proj_weight, k_proj_weight, v_proj_weight,
o_proj_weight, cos, sin, num_heads, num_kv_heads)``, and Qwen2's ``q_proj_bias``,
``k_proj_bias``, ``v_proj_bias``.

- ``x``: the layer's input after its norm (``ln_1``, ``input_layernorm``), (tokens, d_model);
- the layer's attention weights exactly as the model holds them, named as in its state dict
  (``attn.c_attn.weight`` is ``c_attn_weight``): GPT-2's in ``Conv1D``'s layout (applied as
  ``x @ W + b``), a Llama's in ``nn.Linear``'s (applied as ``x @ W.T``);
- ``cos`` and ``sin`` (tokens, head_dim): the model's own rotary angles for each position,
  turned as ``q * cos + rotate_half(q) * sin`` (any rope scaling already in them);
- ``num_heads``, and ``num_kv_heads`` (or any of its usual names: ``n_kv_heads``,
  ``num_kv_groups``...).

It returns the attention's output (before the residual), (tokens, d_model); code that wants a
batch (the book's module) gets a batch of one. The stages compared: the projected queries,
keys and values, each split into heads, turned (rotary) and repeated (grouped-query), the
scores, scaled and masked, the weights, each head's context, the heads joined, and the output.
Each is the real layer's: the queries, keys and values come out of the layer's own modules,
and the weights and the output are checked against what the layer itself computed (its
``output_attentions`` and its output) before anything is compared.

Gemma 2 (its own score scale, softcapping) and any other architecture are refused in one line.
"""

from __future__ import annotations

import itertools

import torch
from tracer.builtin_plugins._model_loading import (
    DEFAULT_TEXT,
    HEAD,
    LAYER,
    MODEL,
    attention_of,
    decoder_layers,
    load,
    token_ids,
    untraced,
)

from tracer import Mistake, RunContext, Variant, stage
from tracer.errors import UsageError

CHECKED = ("gpt2", "llama", "mistral", "qwen2")
"""Architectures (``config.model_type``) whose layers a learner's attention is checked against."""
GIVEN_NAMES = ("c_attn_weight", "c_attn_bias", "c_proj_weight", "c_proj_bias")
"""GPT-2's attention weights, as its state dict names them (``attn.c_attn.weight``)."""
ORDER = ("q", "k", "v")
TOLERANCE = 1e-5
"""How far our stages may be from what the layer computed itself (its weights and output)."""

_LAYERS: dict[tuple[str, int, str], dict[str, torch.Tensor]] = {}
"""What one layer hands a learner, by (model option, layer, text): computed once per check."""


def _shown(name: str) -> str:
    return "the shipped model" if not name else f"model '{name}'"


def _layer_input(run: RunContext) -> dict[str, torch.Tensor]:
    """The layer's input after its norm, its weights as the model holds them, and what the
    layer computed itself (every head's weights, its attention's output)."""
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
            f"attention with the layers of {', '.join(CHECKED)} models: give -o model= one "
            "of those, or step through this one with attn trace model"
        )
    layers = config.num_hidden_layers
    if index >= layers:
        raise UsageError(
            f"-o layer={index} is out of range: the model has {layers} layers (0 to {layers - 1})"
        )
    attention = attention_of(decoder_layers(model)[index])
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = attention.head_dim
    if run.options["head"] >= heads:
        head = run.options["head"]
        raise UsageError(
            f"-o head={head} is out of range: the model has {heads} heads (0 to {heads - 1})"
        )
    if abs(attention.scaling - head_dim**-0.5) > 1e-12 or getattr(
        attention, "is_cross_attention", False
    ):
        raise UsageError(
            f"{_shown(name)} scales layer {index}'s scores by {attention.scaling:g}, not "
            "1/√head_dim as the book's attention does; attn check cannot compare them"
        )
    ids = token_ids(tokenizer, text)
    kept: dict[str, torch.Tensor] = {}

    class Stop(Exception):
        pass

    def before(module, args, kwargs):
        kept["x"] = (args[0] if args else kwargs["hidden_states"])[0]
        rotary = kwargs.get("position_embeddings")
        if rotary is not None:
            kept["cos"], kept["sin"] = rotary[0][0], rotary[1][0]

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
    x = kept["x"].detach().clone()
    found = {"inputs": x}
    with torch.no_grad():
        if config.model_type == "gpt2":
            fused = untraced(lambda: attention.c_attn(x))  # the layer's own module
            for part in ("c_attn", "c_proj"):
                found[f"{part}_weight"] = getattr(attention, part).weight.detach().clone()
                found[f"{part}_bias"] = getattr(attention, part).bias.detach().clone()
            found["queries"], found["keys"], found["values"] = fused.split(heads * head_dim, -1)
        else:
            for part in ("q_proj", "k_proj", "v_proj", "o_proj"):
                linear = getattr(attention, part)
                found[f"{part}_weight"] = linear.weight.detach().clone()
                if linear.bias is not None:
                    found[f"{part}_bias"] = linear.bias.detach().clone()
            for part, made in (("queries", "q_proj"), ("keys", "k_proj"), ("values", "v_proj")):
                found[part] = untraced(lambda m=made: getattr(attention, m)(x))
            found["cos"], found["sin"] = kept["cos"].clone(), kept["sin"].clone()
            found["kv_heads"] = torch.tensor(kv_heads)
    found["num_heads"] = torch.tensor(heads)
    found["model_weights"] = kept["weights"].detach().clone()
    found["model_output"] = kept["output"].detach().clone()
    _LAYERS.clear()  # one layer at a time: a check asks for one
    _LAYERS[key] = found
    return found


def _given_names(given: dict[str, torch.Tensor]) -> list[str]:
    """What the learner's code is handed, in the order of the calling convention."""
    names = ["inputs"]
    if "c_attn_weight" in given:
        return [*names, *GIVEN_NAMES, "num_heads"]
    projections = ("q_proj", "k_proj", "v_proj", "o_proj")
    names += [f"{p}_weight" for p in projections]
    names += [f"{p}_bias" for p in projections if f"{p}_bias" in given]
    return [*names, "cos", "sin", "num_heads", "kv_heads"]


def rotate_half(x: torch.Tensor, sign: float = 1.0) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-sign * x[..., half:], sign * x[..., :half]), dim=-1)


def attend_llama(
    given: dict[str, torch.Tensor],
    *,
    rotate_queries: bool = True,
    rotate_keys: bool = True,
    sign: float = 1.0,
    tile: bool = False,
    transposed: bool = False,
    reshape: bool = False,
    causal: bool = True,
    scale: float | None = None,
) -> dict[str, torch.Tensor]:
    """The book's grouped-query attention with rotary positions on a Llama-style layer's
    weights, with one thing changed: a rotation left out (``rotate_queries``/``rotate_keys``),
    turned the other way (``sign=-1``), key/value heads ``tile``d with ``repeat`` instead of
    ``repeat_interleave``, the square q_proj and o_proj ``transposed`` (GPT-2's layout taken
    for Llama's), heads split by a ``reshape``, no mask, another ``scale``."""
    x = given["inputs"]
    heads, kv_heads = int(given["num_heads"]), int(given["kv_heads"])
    n = x.shape[0]
    cos, sin = given["cos"], given["sin"]
    head_dim = cos.shape[-1]

    def project(part: str, flip: bool = False) -> torch.Tensor:
        W = given[f"{part}_weight"]
        bias = given.get(f"{part}_bias")
        out = x @ (W if flip else W.T)
        return out if bias is None else out + bias

    square = given["q_proj_weight"].shape[0] == given["q_proj_weight"].shape[1]
    queries = project("q_proj", transposed and square)
    keys, values = project("k_proj"), project("v_proj")

    def split(t: torch.Tensor, count: int) -> torch.Tensor:
        if reshape:
            return t.reshape(count, n, head_dim)
        return t.view(n, count, head_dim).transpose(0, 1)

    q, k, v = split(queries, heads), split(keys, kv_heads), split(values, kv_heads)
    if rotate_queries:
        q = q * cos + rotate_half(q, sign) * sin
    if rotate_keys:
        k = k * cos + rotate_half(k, sign) * sin
    group = heads // kv_heads
    if tile:
        k, v = k.repeat(group, 1, 1), v.repeat(group, 1, 1)
    else:
        k, v = k.repeat_interleave(group, dim=0), v.repeat_interleave(group, dim=0)
    scores = q @ k.transpose(1, 2)
    scaled = scores * (head_dim**-0.5 if scale is None else scale)
    hidden = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    masked = scaled.masked_fill(hidden, float("-inf")) if causal else scaled
    weights = torch.softmax(masked, dim=-1)
    head_context = weights @ v
    if reshape:
        concat = head_context.reshape(n, heads * head_dim)
    else:
        concat = head_context.transpose(0, 1).contiguous().view(n, heads * head_dim)
    W_out = given["o_proj_weight"]
    context = concat @ (W_out if transposed and W_out.shape[0] == W_out.shape[1] else W_out.T)
    if "o_proj_bias" in given:
        context = context + given["o_proj_bias"]
    return {
        "queries": queries,
        "keys": keys,
        "values": values,
        "rotated_queries": q,
        "repeated_keys": k,
        "repeated_values": v,
        "scores": scores,
        "scaled": scaled,
        "masked_scores": masked,
        "weights": weights,
        "head_context": head_context,
        "concat": concat,
        "context": context,
    }


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


def real_layer(run: RunContext):
    """Layer ``-o layer``'s attention, every head, as the book's attention computes it from
    the layer's own weights: what a learner's code is compared with."""
    if run.dropout > 0:
        raise UsageError(
            "attn check against a real model runs it as it predicts; leave --dropout at 0"
        )
    given = _layer_input(run)
    x, heads = given["inputs"], int(given["num_heads"])
    kv_heads = int(given.get("kv_heads", given["num_heads"]))
    n = x.shape[0]
    gpt2 = "c_attn_weight" in given
    names = _given_names(given)
    yield stage(
        "given",
        "What your code is handed: the layer's input after its norm, and its attention's "
        + (
            "weights as GPT-2 holds them (Conv1D: applied as x @ W + b)"
            if gpt2
            else "weights as the model holds them (nn.Linear: applied as x @ W.T + b), and the "
            "rotary cos and sin of each position"
        ),
        axes={
            name: ("token", "feature")
            if name in ("inputs", "cos", "sin")
            else ()
            if name.startswith("num_")
            else tuple("feature" for _ in given[name].shape)
            for name in names
        },
        **{name: given[name] for name in names},
    )

    # The layer's own projections (GPT-2's c_attn holds all three, side by side, in order).
    queries, keys, values = given["queries"], given["keys"], given["values"]
    yield stage(
        "projected",
        "Queries, keys and values, from the layer's own "
        + ("c_attn (its weight's three parts, in order)" if gpt2 else "q_proj, k_proj, v_proj"),
        formula="[Q K V] = x W_attn + b_attn" if gpt2 else "Q = x W_qᵀ, K = x W_kᵀ, V = x W_vᵀ",
        axes=("token", "feature"),
        queries=queries,
        keys=keys,
        values=values,
    )

    # (tokens, heads · head_dim) -> (tokens, heads, head_dim) -> (heads, tokens, head_dim)
    head_dim = queries.shape[-1] // heads
    queries = queries.view(n, heads, head_dim).transpose(0, 1)
    keys = keys.view(n, kv_heads, head_dim).transpose(0, 1)
    values = values.view(n, kv_heads, head_dim).transpose(0, 1)
    yield stage(
        "split",
        f"Split into {heads} heads of {head_dim} columns each"
        + (f" ({kv_heads} key/value heads)" if kv_heads != heads else ""),
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

    if not gpt2:  # rotary positions: each (i, i + head_dim/2) pair turned by its position
        cos, sin = given["cos"], given["sin"]
        queries = queries * cos + rotate_half(queries) * sin
        keys = keys * cos + rotate_half(keys) * sin
        yield stage(
            "rotated",
            "Queries and keys turned by their positions (rotary, transformers' rotate_half)",
            formula="q' = q cos + rotate_half(q) sin;  k' likewise",
            axes={"queries": ("head", "query", "feature"), "keys": ("head", "key", "feature")},
            queries=queries,
            keys=keys,
        )
    if kv_heads != heads:  # each key/value head serves heads // kv_heads query heads in a row
        keys = keys.repeat_interleave(heads // kv_heads, dim=0)
        values = values.repeat_interleave(heads // kv_heads, dim=0)
        yield stage(
            "repeated",
            f"Each key/value head repeated for the {heads // kv_heads} query heads that read it",
            formula="repeat_interleave(heads // kv_heads, dim=0)",
            axes={"keys": ("head", "key", "feature"), "values": ("head", "key", "feature")},
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
        "The model is causal: the keys after each query are hidden",
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
            "weights than the book's attention does on its own weights (a sliding window "
            "shorter than the text?); attn check cannot compare them"
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
    concat = head_context.transpose(0, 1).contiguous().view(n, heads * head_dim)
    yield stage(
        "concat",
        "Heads put back side by side",
        formula="transpose(0, 1).view(tokens, heads · head_dim)",
        axes=("query", "feature"),
        concat=concat,
    )
    if gpt2:
        context = concat @ given["c_proj_weight"] + given["c_proj_bias"]
    else:
        context = concat @ given["o_proj_weight"].T
        if "o_proj_bias" in given:
            context = context + given["o_proj_bias"]
    if (context - given["model_output"]).abs().max() > 1e-4:
        raise UsageError(
            f"layer {run.options['layer']} of {_shown(run.options['model'])} computes another "
            "output than the book's attention does on its own weights; attn check cannot "
            "compare them"
        )
    yield stage(
        "context",
        "The attention's output: the heads mixed by "
        + ("c_proj" if gpt2 else "o_proj")
        + " (the layer's own, before the residual)",
        formula="out = concat W_proj + b_proj" if gpt2 else "out = concat W_oᵀ",
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

LLAMA_MISTAKES = (
    Mistake(
        "rotary-unused",
        "the keys not turned by their positions (rotary applied to the queries only)",
        "turn the keys as the queries: `keys = apply_rope(keys, cos, sin)`, before the scores.",
        lambda run: attend_llama(_given(run), rotate_keys=False),
    ),
    Mistake(
        "rotary-unused",
        "the queries not turned by their positions (rotary applied to the keys only)",
        "turn the queries as the keys: `queries = apply_rope(queries, cos, sin)`, before the "
        "scores.",
        lambda run: attend_llama(_given(run), rotate_queries=False),
    ),
    Mistake(
        "rotary-unused",
        "no rotary positions: neither queries nor keys turned",
        "turn queries and keys by their positions before the scores: "
        "`x * cos + rotate_half(x) * sin`, with the cos and sin you are given.",
        lambda run: attend_llama(_given(run), rotate_queries=False, rotate_keys=False),
    ),
    Mistake(
        "rotary-direction",
        "rotate_half with its signs swapped: every pair turned the other way",
        "rotate_half is `torch.cat((-x2, x1), dim=-1)`, x1 the first half and x2 the second; "
        "`cat((x2, -x1))` turns by -mθ.",
        lambda run: attend_llama(_given(run), sign=-1.0),
        ops=("cat", "neg", "__neg__"),
    ),
    Mistake(
        "kv-repeat",
        "key/value heads tiled with repeat instead of repeat_interleave",
        "query heads g·k to g·k + g − 1 read key/value head k: "
        "`keys.repeat_interleave(num_heads // num_kv_heads, dim=1)`, not `repeat`.",
        lambda run: attend_llama(_given(run), tile=True),
        ops=("repeat", "tile", "expand"),
    ),
    Mistake(
        "linear-layout",
        "q_proj's and o_proj's weights transposed: they are nn.Linear's (out, in) already",
        "a Llama-style model's projections are nn.Linear: load q_proj's weight as it is "
        "(`W_query.weight = nn.Parameter(q_proj_weight)`), or compute `x @ q_proj_weight.T`; "
        "only GPT-2's Conv1D needs a transpose.",
        lambda run: attend_llama(_given(run), transposed=True),
    ),
    Mistake(
        "head-split",
        "heads split by a reshape to (heads, tokens, head_dim), without the transpose",
        "the heads are the last dimension's slices: `view(b, tokens, heads, head_dim)`, then "
        "`.transpose(1, 2)` to put the heads first.",
        lambda run: attend_llama(_given(run), reshape=True),
        ops=("view", "reshape"),
    ),
    Mistake(
        "mask-unused",
        "no causal mask applied",
        "the model is causal: hide the keys after each query before the softmax, "
        "`scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), -torch.inf)`.",
        lambda run: attend_llama(_given(run), causal=False),
    ),
    Mistake(
        "scaling",
        "scores not scaled",
        "divide each head's scores by √head_dim before the softmax.",
        lambda run: attend_llama(_given(run), scale=1.0),
        ops=("matmul", "__matmul__", "einsum"),
    ),
)


CHECKED_WITH = Variant(
    name="model",
    title="A real layer's attention, every head, as the book's attention computes it",
    description=(
        "What attn check --against model compares your attention(x, c_attn_weight, "
        "c_attn_bias, c_proj_weight, c_proj_bias, num_heads) with (GPT-2), or your "
        "attention(x, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight, cos, sin, "
        "num_heads, num_kv_heads) (Llama, Mistral, Qwen2: with q/k/v_proj_bias)."
    ),
    run=real_layer,
    stages=(
        "given",
        "projected",
        "split",
        "rotated",
        "repeated",
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
    optional_stages=("rotated", "repeated"),
    uses_embeddings=False,
    mistakes=(*MISTAKES, *LLAMA_MISTAKES),
)
