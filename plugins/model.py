from __future__ import annotations

import ast
import copy
import inspect
import textwrap
from pathlib import Path

from tracer.builtin_plugins._model_loading import (
    DEFAULT_TEXT,
    HEAD,
    INSTALL,
    LAYER,
    MODEL,
    Stopped,
    attention_of,
    decoder_layers,
    load,
    token_ids,
    tokenize,
    transformers_missing,
    untraced,
)

from tracer import RunContext, Variant, hookimpl, stage
from tracer.errors import UsageError
from tracer.inputs import InputSet


def _prepare(model, ids, layer_index):
    """In a helper thread (not recorded): run the model up to the chosen layer, keeping what
    the model hands that layer and every head's weights there."""
    import torch

    layer = decoder_layers(model)[layer_index]
    attention = attention_of(layer)
    kept: dict = {}

    def before_layer(module, args, kwargs):
        kept["args"], kept["kwargs"] = args, dict(kwargs)

    def after_attention(module, args, output):
        kept["heads"] = output[1]

    def after_layer(module, args, output):
        raise Stopped

    hooks = [
        layer.register_forward_pre_hook(before_layer, with_kwargs=True),
        attention.register_forward_hook(after_attention),
        layer.register_forward_hook(after_layer),
    ]

    def work():
        try:
            with torch.no_grad():
                model(input_ids=torch.tensor([ids]), use_cache=False)
        except Stopped:
            pass

    try:
        untraced(work)
    finally:
        for hook in hooks:
            hook.remove()
    return layer, attention, kept


def _child_name(parent, child) -> str | None:
    return next((name for name, c in parent.named_children() if c is child), None)


class _Pauses(ast.NodeTransformer):
    """Adds a pause before every statement and turns top-level calls into ``yield from``."""

    def __init__(self, role: str, notes: dict):
        self.role, self.notes, self.count = role, notes, 0

    def body(self, statements):
        out = []
        for statement in statements:
            self.visit(statement)
            key = self.count
            self.count += 1
            self.notes[key] = copy.deepcopy(statement)  # as written, before the changes below
            out.extend(_pause(statement, key))
            out.append(_calls_yield_from(statement))
        return out

    def generic_visit(self, node):
        for name in ("body", "orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, name, self.body(value))
        return node

    def visit_FunctionDef(self, node):  # a nested def stays as written
        return node


def _pause(statement, key):
    """``for step in PAUSE(key, locals()): yield step``, on the line of ``statement``."""
    line = statement.lineno
    made = ast.parse(
        f"for __attn_step__ in __attn_pause__({key}, locals()):\n    yield __attn_step__\n"
    ).body
    for node in made:
        for sub in ast.walk(node):
            if hasattr(sub, "lineno"):
                sub.lineno = sub.end_lineno = line
                sub.col_offset, sub.end_col_offset = 0, 0
    return made


def _calls_yield_from(statement):
    """``x = f(...)`` becomes ``x = yield from CALL(f, ...)``: a call into one of the
    recompiled functions then passes its pauses up."""
    value = getattr(statement, "value", None)
    if isinstance(statement, (ast.Assign, ast.Expr, ast.Return, ast.AnnAssign)) and isinstance(
        value, ast.Call
    ):
        call = ast.Call(
            func=ast.Name("__attn_call__", ast.Load()),
            args=[value.func, *value.args],
            keywords=value.keywords,
        )
        statement.value = ast.copy_location(ast.YieldFrom(ast.copy_location(call, value)), value)
    return statement


def _recompiled(function, role: str, pause, call):
    """``function`` compiled again from its own file with pauses; returns it and the
    statements by pause key."""
    function = inspect.unwrap(function)  # the model's own function, under its decorators
    filename = inspect.getsourcefile(function)
    lines, first = inspect.getsourcelines(function)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    definition = tree.body[0]
    definition.decorator_list = []
    notes: dict = {}
    definition.body = _Pauses(role, notes).body(definition.body)
    maker = ast.parse("def __attn_make__(__attn_pause__, __attn_call__):\n    pass\n").body[0]
    maker.body = [definition, ast.Return(ast.Name(definition.name, ast.Load()))]
    module = ast.Module(body=[maker], type_ignores=[])
    ast.fix_missing_locations(module)
    for node in ast.walk(maker):
        if hasattr(node, "lineno") and node.lineno is None:
            node.lineno = first
    namespace: dict = {}
    exec(compile(module, filename, "exec"), function.__globals__, namespace)
    return namespace["__attn_make__"](pause, call), notes


def _source_text(statement) -> str:
    return ast.unparse(statement)


class _Walk:
    """The pauses of one run: which statement is about to run, and what it means."""

    def __init__(self, run, tokenizer, model, layer, attention, eager, index, head):
        self.run, self.index, self.head = run, index, head
        config = model.config
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.kv_head = head // (self.heads // self.kv_heads)
        self.attention, self.eager = attention, eager
        self.attention_name = _child_name(layer, attention)
        self.seen: dict[str, object] = {}
        self.shown: set[str] = set()
        self.file = Path(inspect.getsourcefile(inspect.unwrap(type(layer).forward))).name
        self.layer_forward, self.layer_notes = _recompiled(
            type(layer).forward, "layer", self.pause_layer, self.call
        )
        self.attention_forward, self.attention_notes = _recompiled(
            type(attention).forward, "attention", self.pause_attention, self.call
        )
        self.eager_forward, self.eager_notes = _recompiled(
            eager, "eager", self.pause_eager, self.call
        )
        self._softmax_at = next(
            (k for k, s in self.eager_notes.items() if "softmax(" in _source_text(s)), None
        )

    # Calls between the recompiled functions.
    def call(self, function, *args, **kwargs):
        if function is self.attention:
            return (yield from self.attention_forward(function, *args, **kwargs))
        if function is self.eager:
            return (yield from self.eager_forward(*args, **kwargs))
        return function(*args, **kwargs)

    # Pauses.
    def pause_layer(self, key, local):
        statement = self.layer_notes[key]
        if isinstance(statement, ast.Return) and "output" not in self.shown:
            value = _first_value(statement.value, local)
            return [self.make("output", value)]
        if "inputs" not in self.shown and self._calls_attention(statement):
            value = _attention_input(statement, local)
            return [self.make("inputs", value)] if value is not None else []
        return []

    def _calls_attention(self, statement) -> bool:
        return any(
            isinstance(node, ast.Attribute) and node.attr == self.attention_name
            for node in ast.walk(statement)
        )

    def pause_attention(self, key, local):
        statement = self.attention_notes[key]
        if isinstance(statement, ast.Return):
            return [self.make("attention_output", _first_value(statement.value, local))]
        changed = []
        for name in ("query_states", "key_states", "value_states"):
            value = local.get(name)
            if value is not None and value is not self.seen.get(name):
                self.seen[name] = value
                if getattr(value, "dim", lambda: 0)() == 4:
                    changed.append(name)
        made = []
        if len(changed) >= 2 and all(
            s in self.shown for s in ("queries", "keys")
        ):  # both changed again in one statement: the rotation
            made.append(self.make("rotary", local["query_states"], local["key_states"]))
        else:
            for name, shown in (
                ("query_states", "queries"),
                ("key_states", "keys"),
                ("value_states", "values"),
            ):
                if name in changed and shown not in self.shown:
                    made.append(self.make(shown, local[name]))
        return made

    def pause_eager(self, key, local):
        statement = self.eager_notes[key]
        if isinstance(statement, ast.Return):
            return [self.make("context", _first_value(statement.value, local))]
        if key == self._softmax_at:
            argument = _softmax_argument(statement)
            return [self.make("scores", local[argument])] if argument in local else []
        if self._softmax_at is not None and key == self._softmax_at + 1:
            target = _assigned_name(self.eager_notes[self._softmax_at])
            return [self.make("weights", local[target])] if target in local else []
        return []

    # The stages.
    def make(self, name, *tensors):
        self.shown.add(name)
        run, h, g = self.run, self.head, self.kv_head
        where = f"layer {self.index}, head {h}"
        if name == "inputs":
            return stage(
                "inputs",
                f"Layer {self.index}: its input after the layer's norm ({self.file})",
                formula="x = norm(h)",
                axes=("token", "feature"),
                inputs=tensors[0][0],
            )
        if name == "queries":
            return stage(
                "queries",
                f"Queries of {where}, as the model computes them",
                formula=f"Q_{h} = x W_Q[head {h}] (+ b_Q)",
                axes=("token", "feature"),
                queries=tensors[0][0, h],
            )
        if name in ("keys", "values"):
            shared = self._shared()
            letter = "K" if name == "keys" else "V"
            return stage(
                name,
                f"{name.capitalize()} of {shared}",
                formula=f"{letter}_{g} = x W_{letter}[kv head {g}] (+ b_{letter})",
                axes=("token", "feature"),
                **{name: tensors[0][0, g]},
            )
        if name == "rotary":
            return stage(
                "rotary",
                f"Queries (head {h}) and keys (kv head {g}) after the rotary rotation",
                formula="q' = q cos θ + rotate_half(q) sin θ;  k' likewise",
                axes=("token", "feature"),
                queries=tensors[0][0, h],
                keys=tensors[1][0, g],
            )
        if name == "scores":
            return stage(
                "scores",
                f"Scaled, masked scores of {where} (the mask adds the dtype's lowest value)",
                formula="ω = Q Kᵀ · scaling + mask",
                axes=("query", "key"),
                scores=run.focus(tensors[0][0, h]),
            )
        if name == "weights":
            return stage(
                "weights",
                f"Attention weights of {where}: the model's own",
                formula="α = softmax(ω, dim=-1)",
                axes=("query", "key"),
                weights=run.focus(tensors[0][0, h]),
            )
        if name == "context":
            return stage(
                "context",
                f"Context vectors of {where}",
                formula="context = α V",
                axes=("query", "feature"),
                context=run.focus(tensors[0][0, :, h]),
            )
        if name == "attention_output":
            return stage(
                "attention_output",
                f"Layer {self.index}: every head's context, joined and projected back",
                formula="out = concat_h(context_h) W_O (+ b_O)",
                axes=("token", "feature"),
                attention_output=tensors[0][0],
            )
        return stage(
            "output",
            f"Layer {self.index}: the layer's output (residual, MLP and norms included)",
            formula="h' = layer(h)",
            axes=("token", "feature"),
            output=tensors[0][0],
        )

    def _shared(self) -> str:
        group = self.heads // self.kv_heads
        if group == 1:
            return f"layer {self.index}, head {self.head}"
        first = self.kv_head * group
        return (
            f"layer {self.index}, key/value head {self.kv_head} "
            f"(query heads {first} to {first + group - 1} read it)"
        )


def _first_value(node, local):
    if isinstance(node, ast.Tuple):
        node = node.elts[0]
    if isinstance(node, ast.Name):
        return local[node.id]
    raise UsageError("this model's code returns something variant 'model' cannot follow")


def _attention_input(statement, local):
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "hidden_states" and isinstance(keyword.value, ast.Name):
                    return local.get(keyword.value.id)
            if node.args and isinstance(node.args[0], ast.Name):
                return local.get(node.args[0].id)
    return None


def _softmax_argument(statement):
    for node in ast.walk(statement):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "softmax"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            return node.args[0].id
    return None


def _assigned_name(statement):
    if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
        return statement.targets[0].id
    return None


# Head roles ---------------------------------------------------------------------------------


def head_roles(weights, ids):
    """Per head (weights: heads × query × key): the mean weight on the previous token, on
    the token after the current token's earlier occurrence (induction), and on the first."""
    import torch

    heads, n, _ = weights.shape
    if n < 2:
        zero = torch.zeros(heads)
        return zero, None, zero
    rows = torch.arange(1, n)
    previous = weights[:, rows, rows - 1].mean(dim=-1)
    first = weights[:, 1:, 0].mean(dim=-1)
    targets = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        for k in range(i):
            if ids[k] == ids[i] and k + 1 <= i:
                targets[i, k + 1] = True
    repeated = targets.any(dim=-1)
    if not repeated.any():
        return previous, None, first
    induction = (weights * targets).sum(dim=-1)[:, repeated].mean(dim=-1)
    return previous, induction, first


# The run --------------------------------------------------------------------------------------


def real_model(run: RunContext):
    if run.dropout > 0:
        raise UsageError("variant 'model' runs a model as it predicts; leave --dropout at 0")
    tokenizer, model = untraced(lambda: load(run.options["model"]))
    config = model.config
    layers, heads = config.num_hidden_layers, config.num_attention_heads
    index, head = run.options["layer"], run.options["head"]
    if index >= layers:
        raise UsageError(
            f"-o layer={index} is out of range: the model has {layers} layers (0 to {layers - 1})"
        )
    if head >= heads:
        raise UsageError(
            f"-o head={head} is out of range: the model has {heads} heads (0 to {heads - 1})"
        )
    text = run.text if run.text is not None else DEFAULT_TEXT
    ids = token_ids(tokenizer, text)
    if len(ids) != len(run.tokens):
        raise UsageError("the text's tokens changed since it was split; run again")

    import torch

    yield stage(
        "tokens",
        f"Token ids, as {config.model_type}'s tokenizer splits the text",
        formula="ids = tokenizer(text)",
        axes=("token",),
        ids=torch.tensor(ids),
    )

    layer, attention, kept = _prepare(model, ids, index)
    all_heads = kept["heads"][0]
    previous, induction, first = head_roles(all_heads, ids)
    roles = {"previous_token": previous}
    if induction is not None:
        roles["induction"] = induction
    roles["first_token"] = first
    yield stage(
        "heads",
        f"Layer {index}: every head's weights side by side, and what each head does"
        + ("" if induction is not None else " (no token repeats: no induction score)"),
        formula="prev[h] = mean_i α_h[i, i-1];  induction[h] = mean_i Σ α_h[i, j+1] over "
        "earlier j with token j = token i;  first[h] = mean_i α_h[i, 0]",
        axes={"weights": ("head", "query", "key"), **{k: ("head",) for k in roles}},
        weights=run.focus(all_heads, axes=("head", "query", "key"), axis="query"),
        **roles,
    )

    module = inspect.getmodule(type(attention))
    eager = getattr(module, "eager_attention_forward", None)
    if eager is None:
        raise UsageError(f"{config.model_type}'s modeling file has no eager attention function")
    walk = untraced(lambda: _Walk(run, tokenizer, model, layer, attention, eager, index, head))
    output = yield from walk.layer_forward(layer, *kept["args"], **kept["kwargs"])
    if isinstance(output, tuple):
        output = output[0]
    return output[0]


STAGES = (
    "tokens",
    "heads",
    "inputs",
    "queries",
    "keys",
    "values",
    "rotary",
    "scores",
    "weights",
    "context",
    "attention_output",
    "output",
)


def _description() -> str:
    text = (
        "One attention layer of a Hugging Face transformers model (GPT-2, Llama, Qwen2, "
        "Mistral, Gemma 2), stepped through in transformers' own code on --text; -o model= "
        "(default: a small Llama trained on repeated letters, shipped with attn), -o layer=, "
        "-o head=. attn check FILE --against model checks your own attention, loaded with "
        "a GPT-2, Llama, Mistral or Qwen2 layer's weights, against that layer."
    )
    if transformers_missing():
        text += f" Unavailable: transformers is not installed ({INSTALL})."
    return text


def cost(sizes):
    """One layer's tables: every head's weights (the head view), the chosen head's scores and
    weights, and the layer's activations; the model's own sizes from its config."""
    from tracer import Cost

    _, model = load(sizes.options["model"])
    config = model.config
    n, heads = sizes.tokens, config.num_attention_heads
    width = max(config.hidden_size, heads * getattr(config, "head_dim", 0) or 0)
    return Cost(
        elements=(heads + 4) * n * n + 16 * n * width + 4 * heads,
        table=max(heads * n * n, n * width, n),
    )


def _title() -> str:
    title = "A real transformer's attention, in its own code (Hugging Face transformers)"
    if transformers_missing():
        title += f" [unavailable: {INSTALL}]"
    return title


@hookimpl
def register_variants(register):
    # attn check --against model: a learner's attention, every head, against a GPT-2 layer.
    from tracer.builtin_plugins._model_check import CHECKED_WITH

    register(
        Variant(
            name="model",
            title=_title(),
            description=_description(),
            run=real_model,
            stages=STAGES,
            optional_stages=("rotary",),
            options=(MODEL, LAYER, HEAD),
            inputs=InputSet(
                name="letters-text",
                description="ten random letters, twice, as text",
                tokens=tuple(DEFAULT_TEXT.split()),
                embeddings=(),
                text=DEFAULT_TEXT,
            ),
            uses_weights=False,
            uses_embeddings=False,
            tokenize=tokenize,
            cost=cost,
            records=("transformers.models",),
            checked_with=CHECKED_WITH,
        )
    )
