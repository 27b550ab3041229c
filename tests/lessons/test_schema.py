"""The committed JSON Schema is the generated one, is valid draft-07, and agrees with the loader
and the variants (names, stages, options) it completes."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tracer.lessons.loader import shipped_dir
from tracer.lessons.schema import (
    SCHEMA_FILE,
    SCHEMA_ID,
    SHIPPED_MODELINE,
    catalog,
    lesson_schema,
    schema_text,
)
from tracer.lessons.starter import starter_lesson
from tracer.plugin_host import PluginHost

Attn = Callable[..., tuple[int, str, str]]


CHECKOUT_COPY = shipped_dir() / "schema.json"


@functools.cache
def generated() -> dict[str, Any]:
    """The generated schema, made once: each making loads the plugins and runs every variant."""
    return lesson_schema()


def test_committed_schema_is_the_generated_one() -> None:
    """Both copies, enums included: a new variant, stage or option must be regenerated."""
    expected = schema_text()
    assert SCHEMA_FILE.read_text(encoding="utf-8") == expected, (
        "regenerate it: attn lesson schema > tracer/lessons/schema.json"
    )
    if CHECKOUT_COPY.exists():  # a checkout; an installed wheel has only tracer/lessons/
        assert CHECKOUT_COPY.read_text(encoding="utf-8") == expected, (
            "regenerate it: attn lesson schema > lessons/schema.json"
        )


def test_the_shipped_modeline_finds_the_schema_in_a_checkout_and_in_a_wheel() -> None:
    import tracer

    # A wheel installs lessons/ as tracer/builtin_lessons/, beside tracer/lessons/.
    installed = Path(tracer.__file__).parent / "builtin_lessons"
    relative = SHIPPED_MODELINE.split("$schema=")[1]
    assert (installed / relative).resolve() == SCHEMA_FILE.resolve()
    assert (shipped_dir() / relative).resolve().is_file()


def test_the_enums_name_every_built_in_variant_its_stages_and_options(host: PluginHost) -> None:
    schema = generated()
    definitions = schema["definitions"]
    builtin = {n for n in host.variants if host.owner[n].origin == "built-in"}
    named = {c["const"] for c in definitions["variant"]["anyOf"] if "const" in c}
    assert named == builtin
    stages = {c["const"] for c in definitions["stage"]["anyOf"] if "const" in c}
    assert stages == {s for n in builtin for s in host.variants[n].stages}
    options = definitions["options"]["properties"]
    assert options["heads"]["maximum"] == 64  # declared by the multi-head variants
    assert {"seed", "init", "d_out", "dropout"} <= set(options)
    assert "scores" in {c.get("const") for c in definitions["tensor"]["anyOf"]}
    assert {c.get("const") for c in definitions["inputs"]["anyOf"]} >= {
        "your-journey",
        "four-words",
    }
    operations = {
        c.get("const") or next(iter(c["properties"])) for c in definitions["operation"]["anyOf"]
    }
    assert {"max", "argmax", "count", "add", "compare", "softmax"} <= operations
    assert all(c.get("description") for c in definitions["variant"]["anyOf"])
    tokens = {c.get("const") for c in definitions["index"]["anyOf"]}
    assert {"Your", "journey", "step", "word_1"} <= tokens


def test_a_known_variant_must_use_one_of_its_stages() -> None:
    schema = generated()
    base = {"title": "T", "summary": "S"}
    good = {**base, "steps": [{"show": {"variant": "naive-loop", "stage": "scores"}}]}
    jsonschema.validate(good, schema)
    with pytest.raises(jsonschema.ValidationError):
        bad = {**base, "steps": [{"show": {"variant": "naive-loop", "stage": "scaled"}}]}
        jsonschema.validate(bad, schema)
    # A variant from a plugin the schema does not know is left to 'attn lesson check'.
    other = {**base, "steps": [{"show": {"variant": "banded-window", "stage": "window"}}]}
    jsonschema.validate(other, schema)


def test_the_schema_lists_a_plugins_variants_and_options(tmp_path: Path) -> None:
    (tmp_path / "windowed.py").write_text(
        "import torch\n"
        "from tracer import Option, Variant, hookimpl, stage\n"
        "def run(ctx):\n"
        "    yield stage('window', 'The window', w=torch.tensor(1.0))\n"
        "@hookimpl\n"
        "def register_variants(register):\n"
        "    register(Variant(name='windowed', title='Windowed', run=run, stages=('window',),\n"
        "        uses_weights=False, options=(Option('span', int, 2, 'keys seen', min=1),)))\n",
        encoding="utf-8",
    )
    schema = lesson_schema(catalog(PluginHost([tmp_path], use_env=False)))
    assert {"const": "windowed", "description": "Windowed"} in schema["definitions"]["variant"][
        "anyOf"
    ]
    span = schema["definitions"]["options"]["properties"]["span"]
    assert span == {
        "type": "integer",
        "default": 2,
        "minimum": 1,
        "description": "keys seen (variant option of windowed)",
    }


@pytest.mark.lists_variants
def test_schema_write_puts_it_beside_the_lessons(tmp_path: Path, attn: Attn) -> None:
    status, out, err = attn("lesson", "schema", "--write", str(tmp_path))
    assert (status, err) == (0, "")
    assert out.startswith(f"wrote {tmp_path / 'lesson.schema.json'}")
    written = tmp_path / "lesson.schema.json"
    assert json.loads(written.read_text(encoding="utf-8")) == generated()
    assert attn("lesson", "schema", "--write", str(tmp_path))[0] == 0  # refreshing is fine


def test_schema_write_never_overwrites_another_file(tmp_path: Path, attn: Attn) -> None:
    mine = tmp_path / "lesson.schema.json"
    mine.write_text('{"$id": "my own"}', encoding="utf-8")
    assert attn("lesson", "schema", "--write", str(tmp_path)) == (
        2,
        "",
        f"attn: {mine} exists and is not a lesson schema written by attn; not overwriting it\n",
    )
    assert mine.read_text(encoding="utf-8") == '{"$id": "my own"}'
    assert SCHEMA_ID != "my own"


@pytest.mark.lists_variants
def test_attn_lesson_schema_prints_it(attn: Attn) -> None:
    status, out, err = attn("lesson", "schema")
    assert (status, err) == (0, "")
    assert json.loads(out) == generated()


def test_it_is_draft_07() -> None:
    schema = generated()
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)


@pytest.mark.parametrize("path", sorted(shipped_dir().glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_lessons_validate(path: Path) -> None:
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), generated())


def test_the_starter_lesson_validates() -> None:
    jsonschema.validate(yaml.safe_load(starter_lesson()), generated())


@pytest.mark.parametrize(
    "document",
    [
        {"title": "T", "summary": "S"},  # no steps
        {"title": "T", "summary": "S", "steps": [], "extra": 1},
        {"title": "T", "summary": "S", "steps": [{"shwo": {}}]},
        {"title": "T", "summary": "S", "steps": [{"show": {"variant": "x"}}]},  # no stage
        {"title": "T", "summary": "S", "steps": [{"narration": "a"}], "values": {"1x": {}}},
        {
            "title": "T",
            "summary": "S",
            "steps": [{"quiz": {"question": "q", "answer": 1, "tolerance": "lots"}}],
        },
        {"title": "T", "summary": "S", "steps": [{"narration": "a", "quiz": {}}]},
        {"title": "T", "summary": "S", "steps": [{"narration": "a"}], "options": {"init": "x"}},
        {"title": "T", "summary": "S", "steps": [{"quiz": {"question": "q"}}]},
    ],
)
def test_the_schema_rejects_what_the_loader_rejects(document: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, generated())
