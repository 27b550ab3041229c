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
from tracer.lessons.format import (
    ANSWER,
    BINARY_OPERATIONS,
    DEFAULTS,
    FLAG_OPERATIONS,
    FOCUS,
    LESSON,
    OPERATIONS,
    REDUCTIONS,
    SHOWN,
    SIDE,
    STEP_KINDS,
    STEPS,
    TRACE_OPTIONS,
    Field,
    Shape,
)

if TYPE_CHECKING:
    from tracer.plugin_host import PluginHost
    from tracer.variant import Option

SCHEMA_ID = "https://attention-tracer.invalid/lesson.schema.json"
SCHEMA_FILE = Path(__file__).with_name("schema.json")
SCHEMA_NAME = "lesson.schema.json"
"""The file ``attn lesson schema --write DIR`` writes, named by the modeline of new lessons."""
SHIPPED_MODELINE = "# yaml-language-server: $schema=../lessons/schema.json"
MODELINE = f"# yaml-language-server: $schema={SCHEMA_NAME}"

STEP_DESCRIPTIONS = {shape.name: shape.description for shape in STEPS}
"""What each step kind is, as the schema describes it (from :mod:`tracer.lessons.format`)."""
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


_REF_TO = ("variant", "stage", "tensor", "inputs", "options", "focus")
"""Kinds whose values a definition of the same name describes."""
_LISTS: dict[str, dict[str, Any]] = {
    "operations": {"type": "array", "items": {"$ref": "#/definitions/operation"}},
    "cell": {"type": "array", "items": _INDEX, "minItems": 1},
    "pair": {"type": "array", "items": _INDEX, "minItems": 2, "maxItems": 2},
    "choices": {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": True},
    "hints": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
    "points": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    "plugins": {"type": "array", "items": {"type": "string", "minLength": 1}},
    "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/step"}},
}
"""Kinds whose values are lists, by what their items are."""
_VALUES: dict[str, dict[str, Any]] = {
    "query": {"anyOf": [_INDEX, {"type": "null"}]},
    "index": dict(_INDEX),
    "answer": {
        "anyOf": [
            {"$ref": "#/definitions/answer"},
            {"type": "number"},
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}, "minItems": 1},
        ],
    },
    "tolerance": {
        "anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)?\s*%\s*$"},
        ],
    },
    "values": {
        "type": "object",
        "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_-]*$"},
        "additionalProperties": {"$ref": "#/definitions/answer"},
    },
}
"""Kinds with a schema of their own."""
_TYPED = {"text": "string", "prose": "string", "integer": "integer", "number": "number"}


def _value(field: Field, shapes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What ``field``'s value may be, by its kind; ``shapes``: the schemas of the nested
    mappings (``tensor-ref``, ``side``, ``defaults``)."""
    kind = field.kind
    if kind in _TYPED:
        typed: dict[str, Any] = {"type": _TYPED[kind]}
        if _TYPED[kind] == "string":
            typed["minLength"] = 1
        return typed
    if kind == "choice":
        return {"enum": list(field.values)}
    if kind in _REF_TO:
        return {"$ref": f"#/definitions/{kind}"}
    if kind in shapes:
        return dict(shapes[kind])
    return dict(_LISTS.get(kind) or _VALUES[kind])


def _property(field: Field, shapes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The schema of one key: its value's, with the field's bounds, default, examples and
    description."""
    schema = _value(field, shapes)
    if field.minimum is not None:
        schema["minimum"] = field.minimum
    if field.below is not None:
        schema["exclusiveMaximum"] = field.below
    if field.has_default:
        schema["default"] = field.default
    if field.examples:
        schema["examples"] = list(field.examples)
    schema["description"] = field.description
    return schema


SHARED_OPTIONS: dict[str, dict[str, Any]] = {
    field.name: _property(field, {}) for field in TRACE_OPTIONS.fields
}
"""The options every lesson may write, as the format's table describes them."""


def _object(
    shape: Shape, shapes: dict[str, dict[str, Any]], stage_rules: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A closed object whose properties are exactly ``shape``'s keys (the reader's); a known
    variant's stage checked by ``stage_rules``."""
    properties = {field.name: _property(field, shapes) for field in shape.fields}
    for old, name in shape.old_spellings.items():  # still read, so still valid
        written = f"the old spelling of '{name}', still read; write '{name}'"
        properties[old] = {**properties[name], "description": written, "deprecated": True}
    result: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if stage_rules is not None:
        result["allOf"] = stage_rules
    if shape.required:
        result["required"] = list(shape.required)
    return result


def _step(shape: Shape, shapes: dict[str, dict[str, Any]], rules: list[dict[str, Any]]) -> Any:
    """The schema of a step kind's body: its mapping, its short form, or either."""
    mapping = None
    if shape.mapping:
        # A compare's own variant may be overridden by both sides, so its stage is not checked.
        checked = "stage" in shape.keys and shape.name != "compare"
        mapping = _object(shape, shapes, rules if checked else None)
    short = _value(shape.short, shapes) if shape.short is not None else None
    if mapping is not None and short is not None:
        return {"oneOf": [short, mapping]}
    return mapping if mapping is not None else short


def _operation_items() -> list[dict[str, Any]]:
    """Each operation: a name alone (no value), or a mapping of its name to its value."""
    whole = [name for name in REDUCTIONS if name != "sum"]
    items: list[dict[str, Any]] = [
        {"const": name, "description": OPERATIONS[name]} for name in (*FLAG_OPERATIONS, *whole)
    ]
    for name, text in OPERATIONS.items():
        if name in FLAG_OPERATIONS:
            continue
        if name == "pick":
            value: dict[str, Any] = {"allOf": [_INDEX], "description": text}
        elif name == "scale":
            value = {"type": "number", "description": text, "examples": [-1, 0.5]}
        elif name in BINARY_OPERATIONS:
            number: dict[str, Any] = {"type": "number"}
            if name == "divide":
                number["not"] = {"const": 0}
            value = {"description": text, "anyOf": [number, {"$ref": "#/definitions/answer"}]}
        elif name == "compare":
            value = {
                "type": "string",
                "pattern": r"^\s*(>=|<=|==|!=|>|<)\s*-?[0-9.]+([eE][-+]?[0-9]+)?\s*$",
                "description": text,
                "examples": ["> 0", "== 0"],
            }
        else:
            value = {"type": "integer", "description": text, "examples": [-1, 0]}
        items.append(
            {
                "type": "object",
                "properties": {name: value},
                "required": [name],
                "additionalProperties": False,
            }
        )
    return items


def _inline_inputs() -> dict[str, Any]:
    """Inputs written in the lesson: tokens (or text) and their embeddings, optionally more."""
    matrix = {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
    inline: dict[str, Any] = {
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
    assert set(inline["properties"]) == set(INPUT_KEYS)
    return inline


def _inputs_definition() -> dict[str, Any]:
    from tracer.inputs.builtin import BUILTIN_INPUTS

    return {
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
            _inline_inputs(),
        ],
    }


def _names(variants: list[VariantInfo]) -> dict[str, dict[str, Any]]:
    """The variant, stage and tensor definitions: every known name, with its description."""
    stage_owners: dict[str, list[str]] = {}
    stage_titles: dict[str, list[str]] = {}
    tensor_owners: dict[str, list[str]] = {}
    for info in variants:
        for stage in info.stages:
            stage_owners.setdefault(stage, []).append(info.name)
            if info.stage_titles.get(stage):
                stage_titles.setdefault(stage, []).append(info.stage_titles[stage])
        for stage, tensors in info.tensors.items():
            for tensor in tensors:
                tensor_owners.setdefault(tensor, []).append(f"{info.name}.{stage}")

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
    return {
        "variant": {**variant_names, "description": "a variant, as 'attn plugins' lists it"},
        "stage": {**stage_names, "description": "a stage of the variant"},
        "tensor": {**tensor_names, "description": "one of the stage's tensors"},
    }


def _options_definition(variants: list[VariantInfo]) -> dict[str, Any]:
    """The options: the shared ones from the format's table, then each declared option."""
    declared: dict[str, list[tuple[str, Option]]] = {}
    for info in variants:
        for option in info.options:
            declared.setdefault(option.name, []).append((info.name, option))
    option_properties = dict(SHARED_OPTIONS)
    for name, owners in sorted(declared.items()):  # heads included: its bounds are declared
        option_properties[name] = _option_schema(owners)
    return {
        "type": "object",
        "description": TRACE_OPTIONS.description,
        "properties": option_properties,
        "additionalProperties": {"type": ["integer", "number", "boolean", "string"]},
    }


def lesson_schema(variants: list[VariantInfo] | None = None) -> dict[str, Any]:
    """The schema as a dict (draft-07); ``variants`` from :func:`catalog` (default: built-ins).

    Every mapping's properties, required keys and descriptions come from the format's table
    (:mod:`tracer.lessons.format`); the names (variants, stages, tensors, options, inputs)
    from the variants."""
    if variants is None:
        from tracer.plugin_host import PluginHost

        variants = catalog(PluginHost(use_env=False), builtin_only=True)
    # A known variant's stage must be one of its stages.
    rules = [
        {
            "if": {"properties": {"variant": {"const": info.name}}, "required": ["variant"]},
            "then": {"properties": {"stage": {"enum": info.stages}}},
        }
        for info in variants
    ]
    shapes: dict[str, dict[str, Any]] = {}
    shapes["tensor-ref"] = _object(SHOWN, shapes, rules)
    shapes["side"] = _object(SIDE, shapes, rules)
    shapes["defaults"] = _object(DEFAULTS, shapes)
    steps = {shape.name: _step(shape, shapes, rules) for shape in STEPS}
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
    step_variants.append(
        {
            "type": "object",
            "description": "not a step: new defaults for the steps after it (a section)",
            "properties": {"defaults": {**shapes["defaults"], "description": DEFAULTS.description}},
            "required": ["defaults"],
            "additionalProperties": False,
        }
    )
    lesson = _object(LESSON, shapes)
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "attention-tracer lesson",
        "description": LESSON.description,
        **lesson,
        "definitions": {
            **_names(variants),
            "inputs": _inputs_definition(),
            "options": _options_definition(variants),
            "answer": _object(ANSWER, shapes, rules),
            "index": _index_definition(),
            "operation": {"anyOf": _operation_items()},
            "focus": {
                "description": FOCUS.description,
                "oneOf": [_value(FOCUS.short, shapes), _focus_object(shapes)]
                if FOCUS.short is not None
                else [_focus_object(shapes)],
            },
            "step": {"oneOf": step_variants},
        },
    }


def _focus_object(shapes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A focus written as a mapping: exactly one of its keys."""
    return {**_object(FOCUS, shapes), "minProperties": 1, "maxProperties": 1}


def schema_text(variants: list[VariantInfo] | None = None) -> str:
    """The schema as the committed files hold it: indented JSON, one trailing newline."""
    return json.dumps(lesson_schema(variants), indent=2, ensure_ascii=False) + "\n"
