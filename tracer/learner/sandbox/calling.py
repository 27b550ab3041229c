"""Turning whatever a learner wrote into one call on the reference's inputs.

Runs inside the sandbox process (:mod:`tracer.learner.sandbox.child`), next to the
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
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tracer.errors import Location, UsageError
from tracer.learner.sandbox.module_loading import (
    bias_role,
    class_line,
    defined_here,
    dropout_rate,
    load_weights,
    make_config,
    own_config,
    shown_value,
    takes_config_dropout,
)
from tracer.learner.sandbox.names import (
    ARGUMENT_ORDER,
    BIAS,
    CONFIG,
    CONTEXT,
    D_BOTH,
    D_IN,
    D_OUT,
    D_SOURCE,
    DROPOUT,
    FUNCTION_NAME,
    HEADS,
    INPUT_NAMES,
    MASK_NAMES,
    PROJECTED,
    ROLES,
    SOURCE,
    Setting,
    option_for,
)

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
                and defined_here(value, filename)
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
        and defined_here(value, filename)
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

        shown = ", ".join(f"{k}={shown_value(v)}" for k, v in kwargs.items())
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
    if "b_out" in provided and bias_role(name) == "out":
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
                    Location(filename, class_line(cls)),
                )
            kwargs[parameter.name] = setting.d_in
        elif key in D_SOURCE and setting.d_source is not None:
            kwargs[parameter.name] = setting.d_source
        elif (option := option_for(parameter.name, setting.options)) is not None:
            kwargs[parameter.name] = setting.options[option]
        elif key in CONTEXT:
            kwargs[parameter.name] = setting.context_length
        elif key in DROPOUT:
            kwargs[parameter.name] = dropout_rate(setting)
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
                Location(filename, class_line(cls)),
            )
    return kwargs
