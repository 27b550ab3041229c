"""Turning whatever a learner wrote into one call on the reference's inputs.

Runs inside the sandbox process (:mod:`tracer.learner.sandbox`), next to the
learner's code. A file may offer:

- a function ``attention(inputs, W_query, ...)`` (or any one function, when it
  is the only candidate), bound by parameter names or in the documented order;
- an ``nn.Module`` class with the book's constructor signature
  (``d_in, d_out[, context_length, dropout[, num_heads]], qkv_bias=False``),
  built and loaded with the reference's weights;
- an ``nn.Module`` instance, loaded with the reference's weights;
- a class built from one ``config`` object (nanoGPT, Hugging Face): it is
  handed one with the variant's sizes under the usual names;
- the Annotated Transformer's ``attention(query, key, value, mask=None,
  dropout=None)``, called with the already projected tensors;
- numpy code: a file that uses numpy and not torch gets numpy arrays, and an
  ``ndarray`` it returns is compared like a tensor.

Weights are recognised by name (``W_query``, ``q_proj``, ``c_attn``...) and
their layout by shape: the tool's matrices are applied as ``x @ W``, while
``nn.Linear`` stores ``W.T`` (d_out × d_in).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from tracer.errors import Location, UsageError

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


Thunk = Callable[[], Any]


@dataclass
class Call:
    """A prepared call: ``prepare(batched)`` gives the tensors handed over and the call itself.

    Modules are built (and loaded) in ``prepare``, so only ``forward`` is recorded.
    """

    description: str
    """What was called, for the report: ``function attention``, ``class CausalAttention``."""
    module: bool
    prepare: Callable[[bool], tuple[dict[str, torch.Tensor], Thunk]]
    built: nn.Module | None = None
    """The module the last ``prepare`` built (None for a function)."""
    takes_dropout: bool = False
    """Whether the check hands it the dropout rate (a constructor or function parameter)."""
    numpy: bool = False
    """numpy code: its steps are read from its variables (torch records none of them)."""


def expected_signature(arguments: dict[str, Any]) -> str:
    return f"{FUNCTION_NAME}({', '.join(n for n in ARGUMENT_ORDER if n in arguments)})"


def _defined_here(value: Any, filename: str) -> bool:
    if isinstance(value, types.FunctionType):
        return value.__code__.co_filename == filename
    if isinstance(value, type):
        module = sys.modules.get(value.__module__)
        return getattr(module, "__file__", None) == filename
    return False


def _container(value: Any) -> bool:
    """A class that only holds values: a dataclass or a named tuple."""
    return isinstance(value, type) and (
        dataclasses.is_dataclass(value) or (issubclass(value, tuple) and hasattr(value, "_fields"))
    )


def _constructor_parameters(cls: type) -> list[inspect.Parameter]:
    try:
        signature = inspect.signature(cls.__init__)  # type: ignore[misc]
    except (TypeError, ValueError):
        return []
    return [p for p in signature.parameters.values() if p.name != "self"]


def _fits(cls: type, setting: Setting) -> bool:
    """Whether a module class's constructor takes what this variant has (heads only if it has heads)."""
    names = {p.name.lower() for p in _constructor_parameters(cls)}
    takes_heads = bool(names & HEADS)
    return takes_heads == (setting.num_heads is not None)


def candidates(namespace: dict[str, Any], filename: str, setting: Setting) -> list[str]:
    """The names a check could run when the file has no ``attention``, likeliest first."""
    modules = [
        name
        for name, value in namespace.items()
        if not name.startswith("_")
        and (
            (
                isinstance(value, type)
                and issubclass(value, nn.Module)
                and _defined_here(value, filename)
            )
            or isinstance(value, nn.Module)
        )
    ]
    if modules:
        fitting = [
            n
            for n in modules
            if isinstance(namespace[n], nn.Module) or _fits(namespace[n], setting)
        ]
        if setting.causal and setting.num_heads is None and len(fitting) > 1:
            causal = [
                n
                for n in fitting
                if isinstance(namespace[n], type)
                and {p.name.lower() for p in _constructor_parameters(namespace[n])} & CONTEXT
            ]
            fitting = causal or fitting
        return fitting or modules
    functions = [
        name
        for name, value in namespace.items()
        if not name.startswith("_")
        and _defined_here(value, filename)
        and not _container(value)  # a dataclass of results or of settings is not the code
    ]
    named = [n for n in functions if re.search("attention|attn", n, re.IGNORECASE)]
    return named or functions


def choose(
    namespace: dict[str, Any], filename: str, setting: Setting, name: str | None
) -> tuple[str, Any, str | None]:
    """(name, value, note): the callable to check; the note says why it was picked."""
    where = Location(filename)
    if name is not None:
        if name not in namespace:
            found = candidates(namespace, filename, setting)
            also = f" (it has {', '.join(found)})" if found else ""
            raise UsageError(f"defines nothing named '{name}'{also}", where)
        return name, namespace[name], None
    if FUNCTION_NAME in namespace:
        return FUNCTION_NAME, namespace[FUNCTION_NAME], None
    found = candidates(namespace, filename, setting)
    if not found:
        raise UsageError(
            f"defines no function '{FUNCTION_NAME}' and no nn.Module; write def "
            f"{expected_signature(setting.arguments)}",
            where,
        )
    if len(found) > 1:
        raise UsageError(
            f"has no '{FUNCTION_NAME}' and several candidates ({', '.join(found)}); "
            f"pick one with --function NAME",
            where,
        )
    return (
        found[0],
        namespace[found[0]],
        f"no '{FUNCTION_NAME}' in the file, so it checks {found[0]}",
    )


def prepare(name: str, value: Any, filename: str, setting: Setting) -> Call:
    where = Location(filename)
    if isinstance(value, nn.Module):
        module = value
        load_weights(module, setting, filename, name)
        return _module_call(f"the module {name}", lambda: module, setting)
    if isinstance(value, type) and issubclass(value, nn.Module):
        cls = value
        kwargs = constructor_arguments(cls, setting, filename)

        def build() -> nn.Module:
            instance = cls(**kwargs)
            load_weights(instance, setting, filename, name)
            # A config offers a dropout rate; the class takes one only if it read it.
            call.takes_dropout = any(k.lower() in DROPOUT for k in kwargs) or any(
                k.lower() in CONFIG and takes_config_dropout(v) for k, v in kwargs.items()
            )
            return instance

        shown = ", ".join(f"{k}={_shown(v)}" for k, v in kwargs.items())
        call = _module_call(f"class {name}({shown})", build, setting)
        call.takes_dropout = any(k.lower() in DROPOUT or k.lower() in CONFIG for k in kwargs)
        return call
    if callable(value) and not isinstance(value, type):
        function = value
        numpy_only = _numpy_only(function)
        projected = projected_parameters(function)
        if projected is not None:
            return _projected_call(function, name, projected, filename, setting, numpy_only)
        args, kwargs = bind(function, setting.arguments, filename, name, setting.options)
        rate = dropout_parameter(function, args, kwargs)
        own = variant_options(function, args, kwargs, setting)

        def prepare_function(batched: bool) -> tuple[dict[str, torch.Tensor], Thunk]:
            copies = {n: _copy(v) for n, v in setting.arguments.items()}
            tensors = {n: v for n, v in copies.items() if isinstance(v, torch.Tensor)}
            if batched:
                copies["inputs"] = copies["inputs"].unsqueeze(0)  # a view: writes still show
                if isinstance(copies.get("source"), torch.Tensor):
                    copies["source"] = copies["source"].unsqueeze(0)
            if numpy_only:
                copies = {n: _to_numpy(v) for n, v in copies.items()}
            positional = [copies[n] for n in args]
            keywords: dict[str, Any] = {k: copies[n] for k, n in kwargs.items()}
            if rate is not None:
                keywords[rate] = setting.dropout
            keywords.update(own)
            return tensors, lambda: function(*positional, **keywords)

        return Call(
            f"function {name}" + (" (numpy)" if numpy_only else ""),
            False,
            prepare_function,
            takes_dropout=rate is not None,
            numpy=numpy_only,
        )
    raise UsageError(f"'{name}' is a {type(value).__name__}, not a function or nn.Module", where)


def _numpy_only(function: Any) -> bool:
    """Whether the function's module uses numpy and not torch: it gets numpy arrays then."""
    names = getattr(function, "__globals__", {})
    modules = [v for v in names.values() if isinstance(v, types.ModuleType)]
    roots = {m.__name__.split(".")[0] for m in modules}
    torch_names = any(getattr(v, "__module__", "") == "torch" for v in names.values())
    return "numpy" in roots and "torch" not in roots and not torch_names


def _to_numpy(value: Any) -> Any:
    return value.numpy() if isinstance(value, torch.Tensor) else value


def projected_parameters(function: Any) -> tuple[list[str], str | None, str | None] | None:
    """``([query, key, value], mask, dropout)`` parameter names when the function takes the
    tensors already projected, as the Annotated Transformer's ``attention`` does."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in parameters]
    lowered = [n.lower() for n in names]
    for triple in PROJECTED:
        if tuple(lowered[:3]) == triple:
            mask = next((n for n in names[3:] if n.lower() in MASK_NAMES), None)
            dropout = next(
                (n for n in names[3:] if n.lower() in DROPOUT or n.lower() == "dropout_module"),
                None,
            )
            return names[:3], mask, dropout
    return None


def _projected_call(
    function: Any,
    name: str,
    projected: tuple[list[str], str | None, str | None],
    filename: str,
    setting: Setting,
    numpy_only: bool,
) -> Call:
    """Call ``attention(query, key, value, mask=None, dropout=None)`` on the projections."""
    arguments = setting.arguments
    if "W_query" not in arguments or "W_out" in arguments or setting.stacked:
        line = getattr(getattr(function, "__code__", None), "co_firstlineno", None)
        raise UsageError(
            f"{name}({', '.join(projected[0])}, ...) takes tensors already projected; attn check "
            "can call it against a single-head variant with weights (trainable, masked, "
            "sliding-window), not this one",
            Location(filename, line),
        )
    parameters, mask_name, dropout_name = projected
    hidden = setting.hidden
    if mask_name is None and hidden is not None and bool(hidden.any()):
        line = getattr(getattr(function, "__code__", None), "co_firstlineno", None)
        raise UsageError(
            f"{name}({', '.join(parameters)}) takes no mask, but this variant hides keys; add a "
            "parameter `mask=None` (1 = visible) and apply it with "
            "`scores.masked_fill(mask == 0, float('-inf'))`",
            Location(filename, line),
        )

    def prepare_projected(batched: bool) -> tuple[dict[str, torch.Tensor], Thunk]:
        inputs = arguments["inputs"].detach().clone()
        given = inputs.unsqueeze(0) if batched else inputs
        tensors = [
            given @ arguments[w] for w in ("W_query", "W_key", "W_value")
        ]  # recorded: the projections are the first stages
        keywords: dict[str, Any] = {}
        if mask_name is not None:
            keywords[mask_name] = (
                None if hidden is None else (~hidden).to(torch.int64)  # 1 = visible, as it expects
            )
        if dropout_name is not None and setting.dropout > 0:
            keywords[dropout_name] = nn.Dropout(setting.dropout)
        values = [_to_numpy(t) for t in tensors] if numpy_only else tensors
        if numpy_only and keywords.get(mask_name or "") is not None:
            keywords[mask_name or ""] = _to_numpy(keywords[mask_name or ""])
        return {"inputs": inputs}, lambda: function(*values, **keywords)

    return Call(
        f"function {name}({', '.join(parameters)}) on the projected queries, keys and values",
        False,
        prepare_projected,
        takes_dropout=dropout_name is not None,
        numpy=numpy_only,
    )


def _rate(setting: Setting) -> float:
    """The dropout rate a learner's class is built with."""
    return setting.dropout if setting.eval_dropout is None else setting.eval_dropout


def _module_call(description: str, build: Callable[[], nn.Module], setting: Setting) -> Call:
    def prepare_module(batched: bool) -> tuple[dict[str, torch.Tensor], Thunk]:
        module = build()
        if setting.eval_dropout is not None:
            module.eval()  # dropout must be off in eval mode, whatever the rate
        call.built = module
        inputs = setting.arguments["inputs"].detach().clone()
        given = inputs.unsqueeze(0) if batched else inputs
        source = setting.arguments.get("source")
        if isinstance(source, torch.Tensor):  # cross-attention: forward(x, context)
            source = source.detach().clone()
            other = source.unsqueeze(0) if batched else source
            keyword = _source_parameter(module.forward)
            if keyword is not None:
                return {"inputs": inputs, "source": source}, lambda: module(
                    given, **{keyword: other}
                )
            return {"inputs": inputs, "source": source}, lambda: module(given, other)
        return {"inputs": inputs}, lambda: module(given)

    call = Call(description, True, prepare_module)
    return call


def _source_parameter(function: Callable[..., Any]) -> str | None:
    """The keyword a cross-attention forward takes the source sequence by, if it names one."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    named = [p.name for p in parameters[1:] if p.name.lower() in SOURCE]
    return named[0] if named else None


def _copy(value: Any) -> Any:
    return value.detach().clone() if isinstance(value, torch.Tensor) else value


def _meaning(name: str, provided: dict[str, Any]) -> str | None:
    """Which provided argument a parameter name stands for (``x`` the inputs, ``W_q`` the
    query weights, ``context`` the source sequence, ``b_o`` the output bias...)."""
    if name in provided:
        return name
    key = name.lower()
    if key in INPUT_NAMES and "inputs" in provided:
        return "inputs"
    if key in SOURCE and "source" in provided:
        return "source"
    for role, argument in (("query", "W_query"), ("key", "W_key"), ("value", "W_value")):
        if argument in provided and (key in ROLES[role] or key == argument.lower()):
            return argument
    if "W_out" in provided and (key in ROLES["out"] or key == "w_out"):
        return "W_out"
    if "b_out" in provided and _bias_role(name) == "out":
        return "b_out"
    if "num_heads" in provided and key in HEADS:
        return "num_heads"
    return None


def bind(
    function: Callable[..., Any],
    provided: dict[str, Any],
    filename: str,
    name: str,
    options: dict[str, Any] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Argument names, positionally in the documented order or by keyword when the names say which.

    A required parameter named after one of the variant's options (``kv_heads``,
    ``n_kv_heads``, ``window_size``) is left to :func:`variant_options`.
    """
    options = options or {}
    expected = [n for n in ARGUMENT_ORDER if n in provided]
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return expected, {}
    parameters = list(signature.parameters.values())
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [
        p
        for p in parameters
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and (p.kind == p.POSITIONAL_ONLY or option_for(p.name, options) is None)
    ]
    names = {p.name for p in parameters}
    own = names & (set(provided) - set(ARGUMENT_ORDER))  # a variant's own weights (W_dkv...)
    if (set(expected) <= names or own) and all(p.name in provided for p in required):
        return [], {n: n for n in provided if n in names}
    meanings = {
        p.name: _meaning(p.name, provided)
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    taken = {m for m in meanings.values() if m is not None}
    needed = {n for n in expected if n != "b_out"}  # an output bias left out is their mistake
    if (
        needed <= taken
        and len(taken) == sum(m is not None for m in meanings.values())
        and all(meanings.get(p.name) is not None for p in required)
    ):
        return [], {p: m for p, m in meanings.items() if m is not None}
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in parameters)
    if (len(positional) >= len(expected) or has_varargs) and len(required) <= len(expected):
        return expected, {}
    line = getattr(getattr(function, "__code__", None), "co_firstlineno", None)
    raise UsageError(
        f"{name}{signature} does not fit: it should be def {expected_signature(provided)}",
        Location(filename, line),
    )


def variant_options(
    function: Callable[..., Any], args: list[str], kwargs: dict[str, str], setting: Setting
) -> dict[str, Any]:
    """Keyword arguments for the function's parameters named like the variant's options
    (``window=3``, ``tile=2``), so the learner's code runs with the reference's values."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return {}
    given = {*kwargs}
    found = {}
    for position, parameter in enumerate(parameters):
        if position < len(args) or parameter.name in given:
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        option = option_for(parameter.name, setting.options)
        if parameter.kind != parameter.POSITIONAL_ONLY and option is not None:
            found[parameter.name] = setting.options[option]
    return found


def dropout_parameter(
    function: Callable[..., Any], args: list[str], kwargs: dict[str, str]
) -> str | None:
    """The function's parameter for the dropout rate (``dropout=0.0``), if it has one left free."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    taken = len(args)
    for position, parameter in enumerate(parameters):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if position < taken and parameter.kind != parameter.KEYWORD_ONLY:
            continue  # already given positionally
        if parameter.name in kwargs or parameter.kind == parameter.POSITIONAL_ONLY:
            continue
        if parameter.name.lower() in DROPOUT:
            return parameter.name
    return None


def constructor_arguments(cls: type, setting: Setting, filename: str) -> dict[str, Any]:
    """Keyword arguments for the learner's class, by what its parameter names mean."""
    kwargs: dict[str, Any] = {}
    own_width = any(p.name.lower() in D_OUT for p in _constructor_parameters(cls))
    for parameter in _constructor_parameters(cls):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        key = parameter.name.lower()
        if key in D_IN:
            kwargs[parameter.name] = setting.d_in
        elif key in D_OUT:
            kwargs[parameter.name] = setting.d_out
        elif key in D_BOTH and own_width:  # (d_model, ..., d_out): d_model is the input width
            kwargs[parameter.name] = setting.d_in
        elif key in D_BOTH:
            if setting.d_in != setting.d_out:
                raise UsageError(
                    f"{cls.__name__} takes one width '{parameter.name}' for both inputs and "
                    f"outputs, but the inputs are {setting.d_in} wide and the variant's d_out is "
                    f"{setting.d_out}; run with --d-out {setting.d_in}",
                    Location(filename, _line(cls)),
                )
            kwargs[parameter.name] = setting.d_in
        elif key in D_SOURCE and setting.d_source is not None:
            kwargs[parameter.name] = setting.d_source
        elif (option := option_for(parameter.name, setting.options)) is not None:
            kwargs[parameter.name] = setting.options[option]
        elif key in CONTEXT:
            kwargs[parameter.name] = setting.context_length
        elif key in DROPOUT:
            kwargs[parameter.name] = _rate(setting)
        elif key in HEADS and setting.num_heads is not None:
            kwargs[parameter.name] = setting.num_heads
        elif key in BIAS:
            kwargs[parameter.name] = False
        elif key in CONFIG and parameter.default is parameter.empty:
            config = make_config(cls, setting, filename)
            kwargs[parameter.name] = own_config(cls, parameter, config, filename)
        elif parameter.default is parameter.empty:
            raise UsageError(
                f"{cls.__name__}.__init__ needs '{parameter.name}', which attn check cannot "
                f"supply; it builds classes as (d_in, d_out[, context_length, dropout"
                f"[, num_heads]], qkv_bias=False) or from one `config`",
                Location(filename, _line(cls)),
            )
    return kwargs


CONFIG_DROPOUT = frozenset(
    {
        "dropout",
        "attn_pdrop",
        "resid_pdrop",
        "drop_rate",
        "attention_dropout",
        "attention_probs_dropout_prob",
        "hidden_dropout_prob",
        "dropout_rate",
    }
)
"""A config's names for the dropout rate."""


class MissingConfig(AttributeError):
    """The learner's class read a name the supplied config lacks (reported as one line)."""


class Config(dict):  # type: ignore[type-arg]
    """A config object read as ``config.n_embd`` or ``config["n_embd"]``: the variant's sizes."""

    def __repr__(self) -> str:
        """Short, for the report's ``class Attention(args=...)``: the sizes, not every alias."""
        shown: tuple[str, ...] = (
            "n_embd",
            "n_head",
            "n_kv_heads",
            "block_size",
            "window_size",
            "d_source",
        )
        if ONE_WIDTH_KEY in self.__dict__:  # inputs and outputs of two widths: the book's names
            shown = ("d_in", "d_out", "num_heads", "context_length", "d_source")
        return "config(" + ", ".join(f"{k}={self[k]!r}" for k in shown if k in self) + ")"

    read: set[str]

    def __getitem__(self, name: str) -> Any:
        self._reading(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:
        self._reading(name)
        return super().get(name, default)

    def _reading(self, name: str) -> None:
        self.__dict__.setdefault("read", set()).add(name)
        problem = self.__dict__.get(ONE_WIDTH_KEY)
        if problem is not None and name in ONE_WIDTH:
            raise MissingConfig(problem)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise MissingConfig(
                f"the config attn check builds has no '{name}'; it has {', '.join(sorted(self))}"
            ) from None


ONE_WIDTH = frozenset(
    {"n_embd", "hidden_size", "d_model", "emb_dim", "embed_dim", "dim", "n_embed"}
)
"""Config names for one width that is both the inputs' and the outputs'."""
ONE_WIDTH_KEY = "one_width_problem"


def make_config(cls: type, setting: Setting, filename: str) -> Config:
    """Every usual name for the variant's sizes: the book's (``d_in``, ``d_out``,
    ``context_length``, ``dropout``, ``num_heads``, ``qkv_bias``), nanoGPT's, Hugging Face's,
    Llama's. A config of one width for inputs and outputs (``n_embd``) fits only where the
    two are equal; reading one otherwise says to run with ``--d-out``."""
    width, heads = setting.d_in, setting.num_heads or 1
    config = Config()
    if setting.d_in != setting.d_out:
        config.__dict__[ONE_WIDTH_KEY] = (
            f"{cls.__name__} is built from a config with one width for inputs and outputs, but "
            f"the inputs are {setting.d_in} wide and the variant's d_out is {setting.d_out}; run "
            f"with --d-out {setting.d_in}"
        )
    for name in ONE_WIDTH:
        config[name] = width
    config["d_in"], config["d_out"] = setting.d_in, setting.d_out
    for name in ("n_head", "n_heads", "num_heads", "num_attention_heads", "nhead", "heads"):
        config[name] = heads
    for name in ("block_size", "context_length", "max_position_embeddings", "n_positions"):
        config[name] = setting.context_length
    config["n_ctx"] = config["max_seq_len"] = setting.context_length
    for name in CONFIG_DROPOUT:
        config[name] = _rate(setting)
    config["bias"] = True  # nanoGPT: biases on every Linear (the query/key/value ones get 0)
    config["qkv_bias"] = False
    config["is_causal"] = config["causal"] = setting.causal
    config["head_dim"] = setting.d_out // heads
    config["attention_bias"] = False  # Llama's and Mistral's bias switch
    config["max_batch_size"] = 1
    for name in ("max_cache_len", "cache_size", "max_len", "seq_len"):
        config[name] = setting.context_length
    # Grouped-query, window and tile sizes under their usual names (Llama, Mistral, HF):
    # the variant's own value, else what leaves attention as it is (every head its own keys).
    for option, names in OPTION_NAMES.items():
        if option in setting.options:
            for alias in names - {"w", "h", "alpha", "eta", "groups", "block", "span"}:
                config.setdefault(alias, setting.options[option])
    for alias in ("n_kv_heads", "num_key_value_heads", "num_kv_heads", "kv_heads"):
        config.setdefault(alias, heads)
    if setting.d_source is not None:
        for alias in ("d_source", "kdim", "vdim", "encoder_hidden_size", "cross_attention_dim"):
            config[alias] = setting.d_source
    return config


def _config_class(cls: type, parameter: inspect.Parameter) -> type | None:
    """The learner's own config class for a constructor's ``config`` parameter: its
    annotation, else the one dataclass of the learner's file with config fields."""
    module = sys.modules.get(cls.__module__)
    names = vars(module) if module is not None else {}
    filename = getattr(module, "__file__", None)
    annotation = parameter.annotation
    if isinstance(annotation, str):  # from __future__ import annotations
        annotation = names.get(annotation.strip("'\" "))
    if isinstance(annotation, type):
        return annotation if filename and _defined_here(annotation, filename) else None
    if annotation is not parameter.empty:
        return None
    known = {*ONE_WIDTH, "d_in", "d_out", "n_head", "num_heads", "block_size", "context_length"}
    found = [
        value
        for value in names.values()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and filename
        and _defined_here(value, filename)
        and len({f.name for f in dataclasses.fields(value)} & known) >= 2
    ]
    return found[0] if len(found) == 1 else None


def own_config(cls: type, parameter: inspect.Parameter, config: Config, filename: str) -> Any:
    """The learner's own config class (a dataclass, a plain class, a named tuple), built
    with the variant's sizes under its own field names, so its methods and properties work;
    the ``Config`` mapping when it has a field attn check cannot fill."""
    kind = _config_class(cls, parameter)
    if kind is None or issubclass(kind, nn.Module):
        return config
    try:
        fields = [
            p
            for p in inspect.signature(kind).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return config
    values: dict[str, Any] = {}
    lowered = {k.lower(): k for k in config}
    try:
        for field_ in fields:
            key = lowered.get(field_.name.lower())
            if key is not None:
                values[field_.name] = config[key]
            elif field_.default is field_.empty:
                return config  # a field only the learner knows how to fill
    except MissingConfig as exc:  # a one-width config for inputs and outputs of two widths
        raise UsageError(str(exc), Location(filename, _line(kind))) from None
    try:
        built = kind(**values)
    except Exception:  # their __post_init__ refuses these sizes: the mapping may still do
        return config
    config.__dict__.setdefault("read", set()).update(values)
    return built


def _shown(value: Any) -> str:
    """A constructor argument for the report: a plain config object by its fields (its own
    repr would be an address, different on every run)."""
    if type(value).__repr__ is object.__repr__ and isinstance(  # type: ignore[comparison-overlap]
        getattr(value, "__dict__", None), dict
    ):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(value).items() if not k.startswith("_"))
        return f"{type(value).__name__}({fields})"
    return repr(value)


def takes_config_dropout(value: Any) -> bool:
    """Whether a config handed to a learner's class gave it a dropout rate."""
    if isinstance(value, Config):
        return bool(value.__dict__.get("read", set()) & CONFIG_DROPOUT)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(f.name.lower() in CONFIG_DROPOUT for f in dataclasses.fields(value))
    return any(name.lower() in CONFIG_DROPOUT for name in getattr(value, "__dict__", {}))


def _line(cls: type) -> int | None:
    try:
        return inspect.getsourcelines(cls)[1]
    except (TypeError, OSError):
        return None


def _bias_role(name: str) -> str | None:
    """The projection a raw bias parameter belongs to: ``b_o``, ``b_out``, ``bias_o``,
    ``out_bias``, ``bo``, ``b_q``..., or None when the name is not a bias's."""
    key = name.lower()
    for word in BIAS_WORDS:
        for rest in (
            key.removeprefix(f"{word}_") if key.startswith(f"{word}_") else None,
            key.removesuffix(f"_{word}") if key.endswith(f"_{word}") else None,
        ):
            if not rest:
                continue
            if rest in ("o", "out", "proj", "output", "c_proj", "o_proj", "out_proj"):
                return "out"
            role = _role([rest])
            if role is not None:
                return role
    if key in ("bo", "bout"):
        return "out"
    if key in ("bq", "bk", "bv"):
        return {"bq": "query", "bk": "key", "bv": "value"}[key]
    return None


def _role(parts: list[str]) -> str | None:
    for part in reversed(parts):
        key = part.lower().removesuffix("_weight").removesuffix("_bias")
        for role, names in ROLES.items():
            if key in names:
                return role
    return None


def _head(parts: list[str]) -> int | None:
    numbers = [int(p) for p in parts if p.isdigit()]
    return numbers[-1] if numbers else None


def _matrix(role: str, head: int | None, setting: Setting) -> torch.Tensor | None:
    """The reference's matrix for a role, in the ``x @ W`` layout."""
    args = setting.arguments
    if role == "out":
        out = args.get("W_out")
        return out if isinstance(out, torch.Tensor) else None
    if role == "qkv":
        parts = [_matrix(r, head, setting) for r in ("query", "key", "value")]
        if any(p is None for p in parts):
            return None
        return torch.cat(parts, dim=-1)  # type: ignore[arg-type]
    matrix = args.get(f"W_{role}")
    if not isinstance(matrix, torch.Tensor):
        return None
    if setting.stacked:
        if head is not None and head < matrix.shape[0]:
            return matrix[head]
        return torch.cat(list(matrix), dim=-1)
    if head is not None and setting.num_heads:
        width = matrix.shape[-1] // setting.num_heads
        return matrix[:, head * width : (head + 1) * width]
    return matrix


def load_weights(module: nn.Module, setting: Setting, filename: str, name: str) -> None:
    """Copy the reference's weights into the learner's module, by name, in its own layout."""
    where = Location(filename)
    with torch.no_grad():
        for full_name, parameter in module.named_parameters():
            parts = full_name.split(".")
            kind = parts[-1] if parts[-1] in ("weight", "bias") and len(parts) > 1 else "raw"
            if parts[-1].endswith("_bias"):
                kind = "bias"
            role = _role(parts[:-1] if kind != "raw" else parts)
            if role is None and kind == "bias" and parts[-1].endswith("_bias"):
                role = _role([parts[-1]])  # nn.MultiheadAttention's in_proj_bias
            if kind == "raw" and parameter.dim() == 1 and _bias_role(parts[-1]) is not None:
                kind, role = "bias", _bias_role(parts[-1])  # b_o, out_bias: a raw bias
            if role is None:
                raise UsageError(
                    f"cannot tell which weights {name}.{full_name} holds; name the projections "
                    "W_query, W_key, W_value (and out_proj) as the book does",
                    where,
                )
            if kind == "bias":
                if role == "out" and "b_out" in setting.arguments:
                    value = setting.arguments["b_out"]
                else:
                    value = torch.zeros(parameter.shape)  # qkv_bias: the reference has none
                _assign(parameter, value, full_name, name, where)
                continue
            matrix = _matrix(role, _head(parts), setting)
            given = [n for n in setting.arguments if n not in ("inputs", "num_heads")]
            if matrix is None and given and not any(n.startswith("W_") for n in given):
                raise UsageError(  # a real model's layer: its weights in its own layout
                    f"{name}.{full_name}: this variant hands its weights to a function, in the "
                    f"model's own layout; write def {FUNCTION_NAME}(inputs, {', '.join(given)}"
                    f"{', num_heads' if 'num_heads' in setting.arguments else ''}), which may "
                    f"build your {name} and load them into it",
                    where,
                )
            if matrix is None:
                raise UsageError(
                    f"{name}.{full_name} has no counterpart in this variant (it has "
                    f"{', '.join(n for n in setting.arguments if n.startswith('W_')) or 'no weights'})",
                    where,
                )
            linear = kind == "weight"
            if tuple(parameter.shape) == tuple(matrix.T.shape) and (
                linear or (matrix.dim() == 2 and matrix.shape[0] != matrix.shape[1])
            ):
                value = matrix.T  # nn.Linear's layout: (d_out, d_in), applied as x @ W.T
            else:
                value = matrix
            _assign(parameter, value, full_name, name, where)


def _assign(
    parameter: torch.Tensor, value: torch.Tensor, full_name: str, name: str, where: Location
) -> None:
    if tuple(parameter.shape) != tuple(value.shape):
        shape = "×".join(map(str, value.shape))
        raise UsageError(
            f"{name}.{full_name} is {'×'.join(map(str, parameter.shape))}, but the variant's "
            f"matching weights are {shape} (or {'×'.join(map(str, value.shape[::-1]))} in "
            "nn.Linear's layout)",
            where,
        )
    parameter.copy_(value.to(parameter.dtype))
