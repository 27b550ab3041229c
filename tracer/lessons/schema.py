"""The JSON Schema (draft-07) for lesson files, generated from the loader's own tables.

The committed copy, ``tracer/lessons/schema.json``, is what editors load
through each lesson's first line::

    # yaml-language-server: $schema=../tracer/lessons/schema.json

A test checks that the committed file equals :func:`schema_text`, so the
schema cannot drift from what the loader accepts. The schema is for editor
completion and early hints; the loader stays the judge (it also checks
variant and stage names against the installed plugins, which no static
schema can know). Regenerate with ``attn lesson schema > tracer/lessons/schema.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracer.inputs.input_set import KEYS as INPUT_KEYS
from tracer.inputs.weights import INITS
from tracer.lessons import loader
from tracer.lessons.model import OPERATIONS, STEP_KINDS

SCHEMA_ID = "https://attention-tracer.invalid/lesson.schema.json"
SCHEMA_FILE = Path(__file__).with_name("schema.json")

_TEXT = {"type": "string", "minLength": 1}
_INDEX = {
    "description": "a token, or its 0-based position",
    "oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}],
}


def _text(description: str) -> dict[str, Any]:
    return {**_TEXT, "description": description}


def _object(
    properties: dict[str, Any], keys: tuple[str, ...], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """A closed object whose properties are exactly the loader's allowed ``keys``."""
    missing = set(keys) - set(properties)
    assert not missing, f"schema lacks {missing}"
    result: dict[str, Any] = {
        "type": "object",
        "properties": {key: properties[key] for key in keys},
        "additionalProperties": False,
    }
    if required:
        result["required"] = list(required)
    return result


def lesson_schema() -> dict[str, Any]:
    """The schema as a dict (draft-07)."""
    matrix = {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}
    inline_inputs: dict[str, Any] = {
        "type": "object",
        "description": "inline inputs: tokens and their embeddings, optionally weights",
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
        },
        "required": ["tokens", "embeddings"],
        "additionalProperties": False,
    }
    assert set(inline_inputs["properties"]) == set(INPUT_KEYS)
    operation_items = [
        {"const": name, "description": text}
        for name, text in OPERATIONS.items()
        if name in loader.FLAG_OPERATIONS
    ] + [
        {
            "type": "object",
            "properties": {
                name: {**_INDEX, "description": text}
                if name == "pick"
                else {"type": "number" if name == "scale" else "integer", "description": text}
            },
            "required": [name],
            "additionalProperties": False,
        }
        for name, text in OPERATIONS.items()
        if name not in loader.FLAG_OPERATIONS
    ]
    common = {
        "variant": _text("a variant's name, as 'attn plugins' lists it (e.g. naive-loop)"),
        "stage": _text("a stage of the variant, as 'attn plugins' lists it (e.g. scores)"),
        "tensor": _text("one of the stage's tensors (default: its first)"),
        "query": {**_INDEX, "description": "focus one query token (a token or its index)"},
        "inputs": {"$ref": "#/definitions/inputs"},
        "options": {"$ref": "#/definitions/options"},
        "then": {
            "description": "operations applied to the tensor, in order (e.g. '- softmax: 0')",
            "type": "array",
            "items": {"$ref": "#/definitions/operation"},
        },
        "caption": _text("a sentence shown with the step"),
        "label": _text("what to call this side"),
        "focus": {"$ref": "#/definitions/focus"},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "show at most this many sub-steps",
        },
        "cell": {
            "description": "which value: [row, column], tokens or 0-based indices",
            "type": "array",
            "items": _INDEX,
            "minItems": 1,
        },
    }
    side = _object(common, loader.SIDE_KEYS)
    steps = {
        "narration": _text("Markdown, shown as written"),
        "show": _object(common, loader.SHOW_KEYS, ("variant", "stage")),
        "loop": _object(common, loader.LOOP_KEYS, ("variant", "stage")),
        "compare": _object(
            {**common, "left": side, "right": side}, loader.COMPARE_KEYS, ("left", "right")
        ),
        "quiz": _object(
            {
                "id": _text("a name for this quiz, unique in the lesson"),
                "question": _text("the question"),
                "answer": {
                    "description": (
                        "a number; the text of the right choice; or, best, a computed value: "
                        "variant, stage and cell"
                    ),
                    "oneOf": [
                        {"type": "number"},
                        {"type": "string"},
                        _object(common, loader.ANSWER_KEYS, ("variant", "stage")),
                    ],
                },
                "choices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 2,
                    "uniqueItems": True,
                },
                "tolerance": {
                    "type": "number",
                    "minimum": 0,
                    "description": f"how close a predicted number must be (default {loader.DEFAULT_TOLERANCE})",
                },
                "explanation": _text("revealed after answering"),
            },
            loader.QUIZ_KEYS,
            ("question", "answer"),
        ),
        "checkpoint": {
            "oneOf": [
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
                _object(
                    {
                        "title": _text("e.g. Summary"),
                        "points": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    },
                    loader.CHECKPOINT_KEYS,
                    ("points",),
                ),
            ]
        },
    }
    assert tuple(steps) == STEP_KINDS
    step_variants = []
    for kind, body in steps.items():
        step_variants.append(
            {
                "type": "object",
                "properties": {kind: body},
                "required": [kind],
                "additionalProperties": False,
            }
        )
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": "attention-tracer lesson",
        "description": "A lesson script for attention-tracer: see docs/lessons.md.",
        "type": "object",
        "properties": {
            "title": _text("the lesson's title, as 'attn lessons' lists it"),
            "summary": _text("one or two sentences: what the learner will see"),
            "inputs": {"$ref": "#/definitions/inputs"},
            "options": {"$ref": "#/definitions/options"},
            "steps": {"type": "array", "minItems": 1, "items": {"$ref": "#/definitions/step"}},
        },
        "required": ["title", "summary", "steps"],
        "additionalProperties": False,
        "definitions": {
            "inputs": {
                "description": "a built-in input set (your-journey, four-words), a .yaml/.json file, or inline",
                "oneOf": [{"type": "string", "minLength": 1}, inline_inputs],
            },
            "options": _object(
                {
                    "seed": {
                        "type": "integer",
                        "description": "random seed for the weights (default 123)",
                    },
                    "init": {
                        "enum": list(INITS),
                        "description": "how the weights are drawn (default rand)",
                    },
                    "d_out": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "width of q, k, v (default 2)",
                    },
                    "dropout": {
                        "type": "number",
                        "minimum": 0,
                        "exclusiveMaximum": 1,
                        "description": "dropout rate (default 0)",
                    },
                    "heads": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "attention heads, for multihead and multihead-wrapper (default 2)",
                    },
                },
                loader.OPTION_KEYS,
            ),
            "operation": {"oneOf": operation_items},
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


def schema_text() -> str:
    """The schema as the committed file holds it: indented JSON, one trailing newline."""
    return json.dumps(lesson_schema(), indent=2, ensure_ascii=False) + "\n"
