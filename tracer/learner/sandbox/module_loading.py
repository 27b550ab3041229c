"""Building a learner's module as its author would: a config object holding the reference's
sizes under the usual names, and the reference's weights loaded into its parameters."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
from typing import Any

import torch
from torch import nn

from tracer.errors import Location, UsageError
from tracer.learner.sandbox.names import BIAS_WORDS, FUNCTION_NAME, OPTION_NAMES, ROLES, Setting


def defined_here(value: Any, filename: str) -> bool:
    """Whether a function or class comes from the learner's own file."""
    if isinstance(value, types.FunctionType):
        return value.__code__.co_filename == filename
    if isinstance(value, type):
        module = sys.modules.get(value.__module__)
        return getattr(module, "__file__", None) == filename
    return False


def dropout_rate(setting: Setting) -> float:
    """The dropout rate a learner's class is built with."""
    return setting.dropout if setting.eval_dropout is None else setting.eval_dropout


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
        config[name] = dropout_rate(setting)
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
        return annotation if filename and defined_here(annotation, filename) else None
    if annotation is not parameter.empty:
        return None
    known = {*ONE_WIDTH, "d_in", "d_out", "n_head", "num_heads", "block_size", "context_length"}
    found = [
        value
        for value in names.values()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and filename
        and defined_here(value, filename)
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
        raise UsageError(str(exc), Location(filename, class_line(kind))) from None
    try:
        built = kind(**values)
    except Exception:  # their __post_init__ refuses these sizes: the mapping may still do
        return config
    config.__dict__.setdefault("read", set()).update(values)
    return built


def shown_value(value: Any) -> str:
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


def class_line(cls: type) -> int | None:
    try:
        return inspect.getsourcelines(cls)[1]
    except (TypeError, OSError):
        return None


def bias_role(name: str) -> str | None:
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
            if kind == "raw" and parameter.dim() == 1 and bias_role(parts[-1]) is not None:
                kind, role = "bias", bias_role(parts[-1])  # b_o, out_bias: a raw bias
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
