"""The JSON Schema (draft-07) for lesson files, generated from the loader's tables and the variants.

Editors that use the YAML language server read it through a lesson's first line::

    # yaml-language-server: $schema=lesson.schema.json

and then complete keys, variant, stage, tensor, option, input-set and
operation names (each with its description), and show defaults and examples.

Where the schema lives, so that the modeline works everywhere:

- a folder of your own lessons: ``attn lesson schema --write DIR`` writes
  ``DIR/lesson.schema.json`` (``attn lesson new`` does it for a new lesson's
  folder), so a lesson shared with its folder keeps its completion;
- the shipped lessons say ``$schema=../lessons/schema.json``: in a checkout
  that is the copy in ``lessons/schema.json``, in an installed wheel it is
  ``tracer/lessons/schema.json`` (the shipped lessons install as
  ``tracer/builtin_lessons``). Both copies are the built-in variants' schema,
  and a test checks they equal :func:`schema_text`.

The names come from the plugins: :func:`catalog` runs each variant once on
the default inputs to learn its stages' titles and tensors. Enums are for
completion: a name the schema does not know (a plugin installed later) is
still accepted, except a stage that a known variant does not have. The
loader stays the judge (``attn lesson check``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.inputs.input_set import KEYS as INPUT_KEYS
from tracer.inputs.weights import INITS
from tracer.lessons import grammar
from tracer.lessons.model import OPERATIONS, STEP_KINDS

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost
    from tracer.variant import Option

SCHEMA_ID = "https://attention-tracer.invalid/lesson.schema.json"
SCHEMA_FILE = Path(__file__).with_name("schema.json")
SCHEMA_NAME = "lesson.schema.json"
"""The file ``attn lesson schema --write DIR`` writes, named by the modeline of new lessons."""
SHIPPED_MODELINE = "# yaml-language-server: $schema=../lessons/schema.json"
MODELINE = f"# yaml-language-server: $schema={SCHEMA_NAME}"

STEP_DESCRIPTIONS = {
    "narration": "plain text, shown as written; {{name}} shows a live value",
    "show": "one stage of a variant: its tensors, optionally focused",
    "loop": "step through the sub-steps of a loop, one iteration at a time",
    "compare": "two tensors side by side and their difference",
    "quiz": "a question: a number, one or several choices, or cells to select",
    "checkpoint": "a recap: a title and the points the learner should now know",
}
SHARED_OPTIONS: dict[str, dict[str, Any]] = {
    "seed": {
        "type": "integer",
        "default": 123,
        "examples": [123],
        "description": "random seed for the weights (and dropout)",
    },
    "init": {
        "enum": list(INITS),
        "default": "rand",
        "description": "how the weights are drawn",
    },
    "d_out": {
        "type": "integer",
        "minimum": 1,
        "default": 2,
        "examples": [2, 64],
        "description": "width of q, k, v",
    },
    "dropout": {
        "type": "number",
        "minimum": 0,
        "exclusiveMaximum": 1,
        "default": 0,
        "examples": [0.5],
        "description": "dropout rate",
    },
    "heads": {
        "type": "integer",
        "minimum": 1,
        "default": 2,
        "description": "attention heads, for the variants that declare them",
    },
}
_JSON_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string"}


@dataclass
class VariantInfo:
    """What completion needs to know about one variant."""

    name: str
    title: str
    description: str
    stages: list[str]
    stage_titles: dict[str, str] = field(default_factory=dict)
    tensors: dict[str, list[str]] = field(default_factory=dict)
    options: tuple[Option, ...] = ()


def catalog(host: PluginHost, *, builtin_only: bool = False) -> list[VariantInfo]:
    """Every variant of ``host`` (or only the built-in ones), with the stages and tensors
    of one run on the default inputs (a variant that fails to run still lists its stages)."""
    from tracer.plugin_host.host import ORIGIN_BUILTIN
    from tracer.tracing.runner import TraceOptions, start_trace
    from tracer.variant import Stage

    found = []
    for name in sorted(host.variants):
        if builtin_only and host.owner[name].origin != ORIGIN_BUILTIN:
            continue
        variant = host.variants[name]
        info = VariantInfo(
            name, variant.title, variant.description, list(variant.stages), options=variant.options
        )
        try:
            for item in start_trace(name, TraceOptions(), host):
                if isinstance(item, Stage):
                    info.stage_titles.setdefault(item.name, item.title)
                    info.tensors.setdefault(item.name, list(item.tensors))
        except Exception:  # a plugin that fails here still gets its stage names completed
            pass
        found.append(info)
    return found


def usual_title(titles: list[str]) -> str:
    """The title most variants give a stage (the first seen among equals); "" for none, so
    one variant's own wording (cross-attention's "Target tokens") does not speak for all."""
    return max(titles, key=titles.count) if titles else ""


def _text(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "description": description, **extra}


_INDEX = {"$ref": "#/definitions/index"}


def _index_definition() -> dict[str, Any]:
    """A token or a 0-based index; the built-in input sets' tokens are offered for completion."""
    from tracer.inputs.builtin import BUILTIN_INPUTS

    owners: dict[str, list[str]] = {}
    for name, inputs in sorted(BUILTIN_INPUTS.items()):
        for position, token in enumerate(inputs.tokens):
            owners.setdefault(token, []).append(f"{name}[{position}]")
    return {
        "description": "a token, or its 0-based position",
        "anyOf": [
            *({"const": token, "description": f"token {', '.join(where)}"}
              for token, where in owners.items()),
            {"type": "integer", "minimum": 0},
            {"type": "string", "minLength": 1, "description": "a token of the lesson's inputs"},
        ],
    }  # fmt: skip


def _object(
    properties: dict[str, Any],
    keys: tuple[str, ...],
    required: tuple[str, ...] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A closed object whose properties are exactly the loader's allowed ``keys``."""
    missing = set(keys) - set(properties)
    assert not missing, f"schema lacks {missing}"
    result: dict[str, Any] = {
        "type": "object",
        "properties": {key: properties[key] for key in keys},
        "additionalProperties": False,
        **extra,
    }
    if required:
        result["required"] = list(required)
    return result


def _named(
    items: dict[str, str], open_text: str | None, pattern: str | None = None
) -> dict[str, Any]:
    """Completion for names: each known one with its description, then (if ``open_text``)
    any other name, for what the schema cannot know."""
    choices: list[dict[str, Any]] = [
        {"const": name, "description": description} for name, description in items.items()
    ]
    if open_text is not None:
        other: dict[str, Any] = {"type": "string", "minLength": 1, "description": open_text}
        if pattern:
            other["pattern"] = pattern
        choices.append(other)
    return {"anyOf": choices}


def _option_schema(options: list[tuple[str, Option]]) -> dict[str, Any]:
    """One declared option (possibly declared by several variants)."""
    _, option = options[0]
    schema: dict[str, Any] = {"type": _JSON_TYPES[option.type], "default": option.default}
    if option.optional:  # absent unless given: no default to state
        del schema["default"]
    # A bound the inputs decide (max="tokens") is checked when the run starts, not here.
    if isinstance(option.min, (int, float)):
        schema["minimum"] = option.min
    if isinstance(option.max, (int, float)):
        schema["maximum"] = option.max
    if option.above is not None:
        schema["exclusiveMinimum"] = option.above
    if option.below is not None:
        schema["exclusiveMaximum"] = option.below
    if option.choices is not None:
        schema["enum"] = list(option.choices)
    owners = ", ".join(name for name, _ in options)
    schema["description"] = f"{option.help or option.name} (variant option of {owners})"
    return schema


def lesson_schema(variants: list[VariantInfo] | None = None) -> dict[str, Any]:
    """The schema as a dict (draft-07); ``variants`` from :func:`catalog` (default: built-ins)."""
    if variants is None:
        from tracer.plugin_host import PluginHost

        variants = catalog(PluginHost(use_env=False), builtin_only=True)
    from tracer.inputs.builtin import BUILTIN_INPUTS

    stage_owners: dict[str, list[str]] = {}
    stage_titles: dict[str, list[str]] = {}
    tensor_owners: dict[str, list[str]] = {}
    declared: dict[str, list[tuple[str, Option]]] = {}
    for info in variants:
        for stage in info.stages:
            stage_owners.setdefault(stage, []).append(info.name)
            if info.stage_titles.get(stage):
                stage_titles.setdefault(stage, []).append(info.stage_titles[stage])
        for stage, tensors in info.tensors.items():
            for tensor in tensors:
                tensor_owners.setdefault(tensor, []).append(f"{info.name}.{stage}")
        for option in info.options:
            declared.setdefault(option.name, []).append((info.name, option))

    def owned(title: str, owners: list[str]) -> str:
        return f"{title + '; ' if title else ''}in {', '.join(owners)}"

    variant_names = _named(
        {
            info.name: f"{info.title}" + (f": {info.description}" if info.description else "")
            for info in variants
        },
        "a variant from a plugin not known to this schema ('attn plugins' lists them)",
        r"^[a-z0-9][a-z0-9-]*$",
    )
    stage_names = _named(
        {
            stage: owned(usual_title(stage_titles.get(stage, [])), owners)
            for stage, owners in stage_owners.items()
        },
        "a stage of a plugin's variant",
    )
    tensor_names = _named(
        {tensor: owned("", owners) for tensor, owners in sorted(tensor_owners.items())},
        "one of the stage's tensors (default: every tensor of the stage)",
    )
    # A known variant's stage must be one of its stages.
    stage_rules = [
        {
            "if": {"properties": {"variant": {"const": info.name}}, "required": ["variant"]},
            "then": {"properties": {"stage": {"enum": info.stages}}},
        }
        for info in variants
    ]
    matrix = {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
    inline_inputs: dict[str, Any] = {
        "type": "object",
        "description": "inline inputs: tokens and their embeddings, optionally weights; "
        "tokens alone for a variant with its own embeddings (induction)",
        "properties": {
            "tokens": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "embeddings": matrix,
            "weights": {
                "type": "object",
                "properties": {"query": matrix, "key": matrix, "value": matrix},
                "required": ["query", "key", "value"],
                "additionalProperties": False,
            },
            "padding": {"type": "array", "items": {"type": "boolean"}},
            "description": {"type": "string"},
            "source": {
                "type": "object",
                "description": "a second sequence (cross-attention's keys and values)",
                "properties": {
                    "tokens": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "embeddings": matrix,
                    "weights": {
                        "type": "object",
                        "properties": {"key": matrix, "value": matrix},
                        "required": ["key", "value"],
                        "additionalProperties": False,
                    },
                },
                "required": ["tokens", "embeddings"],
                "additionalProperties": False,
            },
            "params": {
                "type": "object",
                "description": "the variant's own learnt parameters by name (Variant(params=...)), "
                "each a number or nested lists of numbers of the declared shape",
                "additionalProperties": {"type": ["number", "array"]},
            },
            "text": {
                "type": "string",
                "minLength": 1,
                "description": "text in place of tokens, for a variant with its own tokenizer "
                "(model): its tokenizer splits it",
            },
        },
        "oneOf": [{"required": ["tokens"]}, {"required": ["text"]}],
        "dependencies": {"weights": ["embeddings"]},
        "additionalProperties": False,
    }
    assert set(inline_inputs["properties"]) == set(INPUT_KEYS)
    whole = [name for name in grammar.REDUCTIONS if name != "sum"]
    operation_items: list[dict[str, Any]] = [
        {"const": name, "description": OPERATIONS[name]}
        for name in (*grammar.FLAG_OPERATIONS, *whole)
    ]
    for name, text in OPERATIONS.items():
        if name in grammar.FLAG_OPERATIONS:
            continue
        if name == "pick":
            value: dict[str, Any] = {"allOf": [_INDEX], "description": text}
        elif name == "scale":
            value = {"type": "number", "description": text, "examples": [-1, 0.5]}
        elif name in grammar.BINARY_OPERATIONS:
            number: dict[str, Any] = {"type": "number"}
            if name == "divide":
                number["not"] = {"const": 0}
            value = {
                "description": text,
                "anyOf": [number, {"$ref": "#/definitions/answer"}],
            }
        elif name == "compare":
            value = {
                "type": "string",
                "pattern": r"^\s*(>=|<=|==|!=|>|<)\s*-?[0-9.]+([eE][-+]?[0-9]+)?\s*$",
                "description": text,
                "examples": ["> 0", "== 0"],
            }
        else:
            value = {"type": "integer", "description": text, "examples": [-1, 0]}
        operation_items.append(
            {
                "type": "object",
                "properties": {name: value},
                "required": [name],
                "additionalProperties": False,
            }
        )
    common: dict[str, Any] = {
        "variant": {"$ref": "#/definitions/variant"},
        "stage": {"$ref": "#/definitions/stage"},
        "tensor": {"$ref": "#/definitions/tensor"},
        "query": {
            "description": "focus one query token (a token or its index; ~ for every query)",
            "anyOf": [_INDEX, {"type": "null"}],
            "examples": ["journey", 1],
        },
        "inputs": {"$ref": "#/definitions/inputs"},
        "options": {"$ref": "#/definitions/options"},
        "then": {
            "description": "operations applied to the tensor, in order (e.g. '- softmax: 0')",
            "type": "array",
            "items": {"$ref": "#/definitions/operation"},
        },
        "caption": _text("a sentence shown with the step; {{name}} shows a live value"),
        "label": _text("what to call this side"),
        "focus": {"$ref": "#/definitions/focus"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "show at most this many sub-steps (default: all)",
            "examples": [8],
        },
        "cell": {
            "description": "which value: [row, column], tokens or 0-based indices",
            "type": "array",
            "items": _INDEX,
            "minItems": 1,
            "examples": [["journey", "Your"], [0]],
        },
    }

    def ref(keys: tuple[str, ...], required: tuple[str, ...] = ()) -> dict[str, Any]:
        return _object(common, keys, required, allOf=stage_rules)

    side = ref(grammar.SIDE_KEYS)
    answer = ref(grammar.ANSWER_KEYS, ("stage",))
    steps: dict[str, Any] = {
        "narration": _text(STEP_DESCRIPTIONS["narration"]),
        "show": ref(grammar.SHOW_KEYS, ("stage",)),
        "loop": ref(grammar.LOOP_KEYS, ("stage",)),
        "compare": _object(
            {**common, "left": side, "right": side},
            grammar.COMPARE_KEYS,
            ("left", "right"),
        ),
        "quiz": _object(
            {
                "id": _text("a name for this quiz, unique in the lesson (progress is kept by it)"),
                "question": _text("the question; {{name}} shows a live value"),
                "answer": {
                    "description": (
                        "a computed value (variant, stage, cell), best; a number; the text of "
                        "the right choice, or a list of every right choice; for 'cells', a "
                        "computed tensor whose non-zero cells are right"
                    ),
                    "anyOf": [
                        {"$ref": "#/definitions/answer"},
                        {"type": "number"},
                        {"type": "string"},
                        {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    ],
                },
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 2,
                    "uniqueItems": True,
                    "description": "the options shown; the answer names the right one(s)",
                },
                "cells": {
                    **ref(grammar.REF_KEYS, ("stage",)),
                    "description": "the tensor whose cells the learner selects",
                },
                "show": {
                    **ref(grammar.REF_KEYS, ("stage",)),
                    "description": "a tensor shown with the question (not the answer's own)",
                },
                "tolerance": {
                    "description": (
                        "how close a predicted number must be: absolute (0.005) or relative "
                        f"(1%); default {grammar.DEFAULT_TOLERANCE}"
                    ),
                    "anyOf": [
                        {"type": "number", "minimum": 0},
                        {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*%\s*$"},
                    ],
                    "default": grammar.DEFAULT_TOLERANCE,
                    "examples": [0.005, "1%"],
                },
                "hints": {
                    "description": "hints, revealed one at a time before answering",
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                },
                "explanation": _text(
                    "revealed after answering; {{answer}} shows the computed answer"
                ),
            },
            grammar.QUIZ_KEYS,
            ("question", "answer"),
        ),
        "checkpoint": {
            "description": STEP_DESCRIPTIONS["checkpoint"],
            "oneOf": [
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
                _object(
                    {
                        "title": _text("e.g. Summary", default="Checkpoint"),
                        "points": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    },
                    grammar.CHECKPOINT_KEYS,
                    ("points",),
                ),
            ],
        },
    }
    assert tuple(steps) == STEP_KINDS
    step_variants: list[dict[str, Any]] = [
        {
            "type": "object",
            "description": STEP_DESCRIPTIONS[kind],
            "properties": {kind: {**body, "description": STEP_DESCRIPTIONS[kind]}},
            "required": [kind],
            "additionalProperties": False,
        }
        for kind, body in steps.items()
    ]
    defaults = _object(
        {
            "variant": {"$ref": "#/definitions/variant"},
            "query": common["query"],
            "inputs": {"$ref": "#/definitions/inputs"},
            "options": {"$ref": "#/definitions/options"},
        },
        grammar.DEFAULT_KEYS,
        description="what the following steps leave out: a variant, a query, options",
    )
    step_variants.append(
        {
            "type": "object",
            "description": "not a step: new defaults for the steps after it (a section)",
            "properties": {"defaults": defaults},
            "required": ["defaults"],
            "additionalProperties": False,
        }
    )
    option_properties = dict(SHARED_OPTIONS)
    for name, owners in sorted(declared.items()):  # heads included: its bounds are declared
        option_properties[name] = _option_schema(owners)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "attention-tracer lesson",
        "description": "A lesson script for attention-tracer: see docs/lessons.md.",
        "type": "object",
        "properties": {
            "title": _text("the lesson's title, as 'attn lessons' lists it"),
            "summary": _text("one or two sentences: what the learner will see"),
            "plugins": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "plugins whose variants the lesson uses ('attn plugins' names them)",
            },
            "inputs": {"$ref": "#/definitions/inputs"},
            "options": {"$ref": "#/definitions/options"},
            "defaults": defaults,
            "values": {
                "type": "object",
                "description": "live values prose shows as {{name}}, computed when it runs",
                "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_-]*$"},
                "additionalProperties": {"$ref": "#/definitions/answer"},
            },
            "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/step"}},
        },
        "required": ["title", "summary", "steps"],
        "additionalProperties": False,
        "definitions": {
            "variant": {**variant_names, "description": "a variant, as 'attn plugins' lists it"},
            "stage": {**stage_names, "description": "a stage of the variant"},
            "tensor": {**tensor_names, "description": "one of the stage's tensors"},
            "inputs": {
                "description": "a built-in input set, a .yaml/.json file, or inline",
                "default": "your-journey",
                "anyOf": [
                    *(
                        {"const": name, "description": inputs.description}
                        for name, inputs in sorted(BUILTIN_INPUTS.items())
                    ),
                    {
                        "type": "string",
                        "pattern": r"\.(ya?ml|json)$",
                        "description": "an inputs file, relative to the lesson",
                    },
                    inline_inputs,
                ],
            },
            "options": {
                "type": "object",
                "description": "options for the variants: shared ones and the variants' own",
                "properties": option_properties,
                "additionalProperties": {"type": ["integer", "number", "boolean", "string"]},
            },
            "answer": answer,
            "index": _index_definition(),
            "operation": {"anyOf": operation_items},
            "focus": {
                "description": "what to highlight: a token (its row and column), a row, a column or a cell",
                "oneOf": [
                    _INDEX,
                    {
                        "type": "object",
                        "properties": {
                            "token": _INDEX,
                            "row": _INDEX,
                            "column": _INDEX,
                            "cell": {
                                "type": "array",
                                "items": _INDEX,
                                "minItems": 2,
                                "maxItems": 2,
                            },
                        },
                        "minProperties": 1,
                        "maxProperties": 1,
                        "additionalProperties": False,
                    },
                ],
            },
            "step": {"oneOf": step_variants},
        },
    }


def schema_text(variants: list[VariantInfo] | None = None) -> str:
    """The schema as the committed files hold it: indented JSON, one trailing newline."""
    return json.dumps(lesson_schema(variants), indent=2, ensure_ascii=False) + "\n"
