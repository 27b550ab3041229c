"""The committed JSON Schema is the generated one, is valid draft-07, and agrees with the loader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import yaml

from tracer.lessons.loader import shipped_dir
from tracer.lessons.schema import SCHEMA_FILE, lesson_schema, schema_text
from tracer.lessons.starter import starter_lesson

Attn = Callable[..., tuple[int, str, str]]


def test_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "regenerate it: attn lesson schema > tracer/lessons/schema.json"
    )


def test_attn_lesson_schema_prints_it(attn: Attn) -> None:
    status, out, err = attn("lesson", "schema")
    assert (status, err) == (0, "")
    assert json.loads(out) == lesson_schema()


def test_it_is_draft_07() -> None:
    schema = lesson_schema()
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)


@pytest.mark.parametrize("path", sorted(shipped_dir().glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_lessons_validate(path: Path) -> None:
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), lesson_schema())


def test_the_starter_lesson_validates() -> None:
    jsonschema.validate(yaml.safe_load(starter_lesson()), lesson_schema())


@pytest.mark.parametrize(
    "document",
    [
        {"title": "T", "summary": "S"},  # no steps
        {"title": "T", "summary": "S", "steps": [], "extra": 1},
        {"title": "T", "summary": "S", "steps": [{"shwo": {}}]},
        {"title": "T", "summary": "S", "steps": [{"show": {"variant": "x"}}]},
        {"title": "T", "summary": "S", "steps": [{"narration": "a", "quiz": {}}]},
        {"title": "T", "summary": "S", "steps": [{"narration": "a"}], "options": {"init": "x"}},
        {"title": "T", "summary": "S", "steps": [{"quiz": {"question": "q"}}]},
    ],
)
def test_the_schema_rejects_what_the_loader_rejects(document: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, lesson_schema())
