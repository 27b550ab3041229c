"""The lesson format's table (tracer.lessons.format) is the one place a key is declared: the
reader's accepted and required keys, the JSON Schema's properties and the model's fields all
agree with it, for every mapping of the format, so a key added in one place and not the
others fails here."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tracer.lessons import format as fmt
from tracer.lessons import model
from tracer.lessons.grammar import Reader
from tracer.lessons.loader import LessonError, parse_lesson
from tracer.lessons.schema import _object, lesson_schema
from tracer.plugin_host import PluginHost

ROOT = Path(__file__).resolve().parents[2]
H = "title: T\nsummary: S\n"
STEP_ORDER = {shape.name: index for index, shape in enumerate(fmt.STEPS)}


@functools.cache
def schema() -> dict[str, Any]:
    return lesson_schema()


def _step_schema(kind: str) -> dict[str, Any]:
    """The schema of a step kind's body; of its mapping form where it has a short one too (a
    checkpoint's bare list of points)."""
    body: dict[str, Any] = schema()["definitions"]["step"]["oneOf"][STEP_ORDER[kind]]
    body = body["properties"][kind]
    if "oneOf" in body:
        (body,) = [form for form in body["oneOf"] if form.get("type") == "object"]
    return body


def _schemas() -> dict[str, dict[str, Any]]:
    """The schema object of every mapping of the format, by the shape's name."""
    definitions = schema()["definitions"]
    quiz = _step_schema("quiz")["properties"]
    found = {shape.name: _step_schema(shape.name) for shape in fmt.STEPS if shape.mapping}
    return {
        **found,
        "lesson": schema(),
        "defaults": schema()["properties"]["defaults"],
        "options": definitions["options"],
        "ref": quiz["cells"],  # REF's keys, as SHOWN's (which requires a stage)
        "side": _step_schema("compare")["properties"]["left"],
        "answer": definitions["answer"],
        "shown": quiz["cells"],
        "focus": definitions["focus"]["oneOf"][1],
    }


def test_every_mapping_of_the_format_is_in_the_table_once() -> None:
    names = [shape.name for shape in fmt.SHAPES]
    assert len(names) == len(set(names))
    assert fmt.STEP_KINDS == model.STEP_KINDS == tuple(STEP_ORDER)
    for shape in fmt.SHAPES:
        assert len(shape.keys) == len(set(shape.keys)), shape.name
        spelt = [old for field in shape.fields for old in field.old]
        assert not set(spelt) & set(shape.keys), shape.name
        # A required key has no old spelling: the schema could not require either of them.
        assert not [f.name for f in shape.fields if f.required and f.old], shape.name


@pytest.mark.parametrize("shape", [s for s in fmt.SHAPES if s.model], ids=lambda s: s.name)
def test_the_models_fields_are_the_tables_keys(shape: fmt.Shape) -> None:
    """Every attribute of the dataclass a mapping is read into is filled by one of its keys or
    named as unwritten (a position, the step's kind), and every key fills real attributes."""
    assert shape.model is not None
    cls = getattr(model, shape.model)
    attributes = {field.name for field in dataclasses.fields(cls)}
    filled = {name for field in shape.fields for name in field.attributes}
    if shape.short is not None:
        filled |= set(shape.short.attributes)
    assert filled <= attributes, f"{shape.name}: keys fill {filled - attributes}, not in the model"
    assert set(shape.unwritten) <= attributes
    assert filled | set(shape.unwritten) == attributes, (
        f"{shape.name}: the model's {attributes - filled - set(shape.unwritten)} "
        "come from no key of the table"
    )


@pytest.mark.parametrize("shape", fmt.SHAPES, ids=lambda s: s.name)
def test_the_schemas_properties_are_the_tables_keys(shape: fmt.Shape) -> None:
    if not shape.mapping:  # a narration: only its text
        assert shape.short is not None and shape.short.kind == "prose"
        assert _step_schema(shape.name)["type"] == "string"
        return
    found = _schemas()[shape.name]
    written = set(found["properties"])
    if shape.name == "options":  # the variants' declared options follow the shared ones
        assert set(shape.keys) <= written
        return
    assert written == {*shape.keys, *shape.old_spellings}
    if shape.name != "ref":
        assert found.get("required", []) == list(shape.required)
    for field in shape.fields:
        assert found["properties"][field.name]["description"] == field.description


# The reader: for each mapping, a lesson with an unknown key in it, and the keys it expects.
VARIANT = "variant: naive-loop"
UNKNOWN = {
    "lesson": f"{H}zzz: 1\nsteps:\n- narration: n\n",
    "defaults": f"{H}defaults:\n  zzz: 1\nsteps:\n- narration: n\n",
    "show": f"{H}steps:\n- show:\n    {VARIANT}\n    stage: scores\n    zzz: 1\n",
    "loop": f"{H}steps:\n- loop:\n    {VARIANT}\n    stage: context\n    zzz: 1\n",
    "compare": f"{H}steps:\n- compare:\n    zzz: 1\n    left: {{{VARIANT}, stage: scores}}\n"
    f"    right: {{{VARIANT}, stage: scores}}\n",
    "quiz": f"{H}steps:\n- quiz:\n    question: q\n    answer: 1\n    zzz: 1\n",
    "checkpoint": f"{H}steps:\n- checkpoint:\n    points: [p]\n    zzz: 1\n",
    "side": f"{H}steps:\n- compare:\n    left: {{{VARIANT}, stage: scores, zzz: 1}}\n"
    f"    right: {{{VARIANT}, stage: scores}}\n",
    "answer": f"{H}steps:\n- quiz:\n    question: q\n    answer: {{{VARIANT}, stage: scores, "
    "cell: [0, 0], zzz: 1}\n",
    "shown": f"{H}steps:\n- quiz:\n    question: q\n    answer: 1\n    show: {{{VARIANT}, "
    "stage: scores, zzz: 1}\n",
    "ref": f"{H}steps:\n- quiz:\n    question: q\n    choices: [a, b]\n    answer: "
    f"{{{VARIANT}, stage: scores}}\n    cells: {{{VARIANT}, stage: scores, zzz: 1}}\n",
    "focus": f"{H}steps:\n- show:\n    {VARIANT}\n    stage: scores\n    focus: {{zzz: 1}}\n",
}


def _problems(text: str, host: PluginHost) -> list[str]:
    with pytest.raises(LessonError) as caught:
        parse_lesson(text, "t.yaml", host)
    return [problem.message for problem in caught.value.problems]


def test_every_mapping_but_the_options_is_probed() -> None:
    assert set(UNKNOWN) == {shape.name for shape in fmt.SHAPES if shape.mapping} - {"options"}


@pytest.mark.parametrize("name", sorted(UNKNOWN))
def test_the_reader_accepts_exactly_the_tables_keys(name: str, host: PluginHost) -> None:
    shape = next(s for s in fmt.SHAPES if s.name == name)
    found = [m for m in _problems(UNKNOWN[name], host) if m.startswith("unknown key 'zzz'")]
    assert len(found) == 1, found
    assert found[0].endswith(f"; expected {', '.join(shape.keys)}")


def test_the_reader_takes_the_trace_options_from_the_table(host: PluginHost) -> None:
    (message,) = _problems(f"{H}options: {{zzz: 1}}\nsteps:\n- narration: n\n", host)
    assert f"expected {', '.join(fmt.TRACE_OPTIONS.keys)}, or an option" in message


def _written(name: str) -> str:
    """The keys ``UNKNOWN[name]`` writes in its mapping (the lesson's own: with its title)."""
    return UNKNOWN[name] if name == "lesson" else UNKNOWN[name].removeprefix(H)


WRONG_TYPE = {
    "text": "must be text, not a list",
    "prose": "must be text, not a list",
    "tensor": "must be text, not a list",
    "integer": "must be a whole number, not a list",
}
"""What the reader says of a list written where a key of each plain kind is expected."""


@pytest.mark.parametrize(
    ("name", "key"),
    [
        (name, field.name)
        for name in sorted(UNKNOWN)
        for field in fmt.SHAPES_BY_NAME[name].fields
        if field.kind in WRONG_TYPE and not re.search(rf"\b{field.name}:", _written(name))
    ],
)
def test_the_reader_checks_each_keys_value_by_its_kind(
    name: str, key: str, host: PluginHost
) -> None:
    kind = fmt.SHAPES_BY_NAME[name].field(key).kind
    problems = _problems(UNKNOWN[name].replace("zzz: 1", f"{key}: [1, 2]"), host)
    assert [p for p in problems if p.startswith(f"{key} {WRONG_TYPE[kind]}")], problems


# Each required key left out of a mapping that is otherwise complete.
COMPLETE = {
    "lesson": {"title": "T", "summary": "S", "steps": [{"narration": "n"}]},
    "show": {"variant": "naive-loop", "stage": "scores"},
    "loop": {"variant": "naive-loop", "stage": "context"},
    "compare": {
        "left": {"variant": "naive-loop", "stage": "scores"},
        "right": {"variant": "naive-loop", "stage": "scores"},
    },
    "quiz": {"question": "q", "answer": 1},
    "checkpoint": {"points": ["p"]},
}


# A tensor named inside a quiz: the shape, the quiz key it is under, the rest of the quiz.
NAMED = {
    "answer": ("answer", {"question": "q"}, {"cell": [0, 0]}),
    "shown": ("show", {"question": "q", "answer": 1}, {}),
}


def test_every_shape_with_required_keys_is_probed() -> None:
    required = {s.name for s in fmt.SHAPES if s.required}
    assert {*COMPLETE, *NAMED} == required


@pytest.mark.parametrize("name", sorted(NAMED))
def test_a_named_tensor_requires_the_tables_required_keys(name: str, host: PluginHost) -> None:
    shape = fmt.SHAPES_BY_NAME[name]
    under, quiz, extra = NAMED[name]
    for key in shape.required:
        named = {"variant": "naive-loop", "stage": "scores", **extra}
        complete = {**COMPLETE["lesson"], "steps": [{"quiz": {**quiz, under: named}}]}
        parse_lesson(yaml.safe_dump(complete, sort_keys=False), "t.yaml", host)
        del named[key]
        problems = _problems(yaml.safe_dump(complete, sort_keys=False), host)
        assert shape.missing(key, under) in problems


@pytest.mark.parametrize(
    ("name", "key"), [(name, key) for name in COMPLETE for key in fmt.SHAPES_BY_NAME[name].required]
)
def test_the_reader_requires_the_tables_required_keys(
    name: str, key: str, host: PluginHost
) -> None:
    shape = fmt.SHAPES_BY_NAME[name]

    def lesson(body: dict[str, Any]) -> str:
        document = body if name == "lesson" else {**COMPLETE["lesson"], "steps": [{name: body}]}
        return yaml.safe_dump(document, sort_keys=False)

    parse_lesson(lesson(COMPLETE[name]), "t.yaml", host)  # complete, it loads
    without = {k: v for k, v in COMPLETE[name].items() if k != key}
    assert shape.missing(key) in _problems(lesson(without), host)


def test_every_key_is_read_by_the_grammar() -> None:
    """A key added to the table is accepted by the reader at once; it must also be read."""
    package = ROOT / "tracer" / "lessons" / "grammar"
    source = "\n".join(
        path.read_text(encoding="utf-8")
        for path in package.glob("*.py")
        if path.name not in ("__init__.py", "keys.py")
    )
    quoted = set(re.findall(r'"([a-z_]+)"', source))
    for shape in fmt.SHAPES:
        if shape.name == "options":
            continue  # read by name from the trace options (tracer.options checks them)
        missing = [key for key in shape.keys if key not in quoted]
        assert not missing, f"{shape.name}: {missing} never read by the grammar"


def test_an_old_spelling_is_read_as_its_key_with_a_warning(host: PluginHost) -> None:
    shape = fmt.Shape(
        "demo",
        "'demo'",
        "a mapping with a renamed key",
        (fmt.Field("caption", "prose", "a caption", old=("legend",)),),
    )
    reader = Reader("t.yaml", Path.cwd(), host)
    node = yaml.compose("legend: hello\n")
    entries = reader.mapping(node, shape.what, shape)
    assert entries is not None and set(entries) == {"caption"}
    assert reader.problems == []
    assert [w.message for w in reader.warnings] == [
        "warning: 'legend' is the old spelling of 'caption' in 'demo'; write 'caption'"
    ]
    both = Reader("t.yaml", Path.cwd(), host)
    assert set(both.mapping(yaml.compose("legend: a\ncaption: b\n"), "'demo'", shape) or {}) == {
        "caption"
    }
    assert [p.message for p in both.problems] == [
        "'legend' is the old spelling of 'caption' in 'demo', which is given too; keep only one"
    ]
    properties = _object(shape, {})["properties"]
    assert properties["legend"]["description"] == (
        "the old spelling of 'caption', still read; write 'caption'"
    )


OLD_NAMES = [
    "ANSWER",
    "ANSWER_KEYS",
    "BINARY_OPERATIONS",
    "CHECKPOINT_KEYS",
    "COMPARE_KEYS",
    "COMPARISONS",
    "Checkpoint",
    "Compare",
    "DEFAULT_KEYS",
    "DEFAULT_TOLERANCE",
    "FLAG_OPERATIONS",
    "FOCUS_KEYS",
    "Focus",
    "InputSet",
    "LEGACY_OPTIONS",
    "LESSON_KEYS",
    "LOOP_KEYS",
    "Lesson",
    "LessonStep",
    "Loop",
    "Markup",
    "NamedValue",
    "Narration",
    "OPERATIONS",
    "OPTION_KEYS",
    "Operation",
    "OptionValue",
    "Options",
    "PROSE_FIELDS",
    "Problem",
    "QUIZ_KEYS",
    "Quiz",
    "QuizKind",
    "REDUCTIONS",
    "REF_KEYS",
    "Reader",
    "SHOW_KEYS",
    "SIDE_KEYS",
    "STEP_KEYS",
    "STEP_KINDS",
    "Show",
    "TRACE_KEYS",
    "TensorRef",
    "Tokens",
    "TracerError",
    "TypedNumber",
    "UsageError",
    "VALUE_NAME",
    "_BOOL",
    "_FLOAT",
    "_INT",
    "_NULL",
    "_POSITIONED",
    "_STR",
    "_Scope",
    "_T",
    "_at",
    "_closest",
    "_comparison",
    "_is_defaults",
    "_is_null",
    "_keys",
    "_kind",
    "_listing",
    "_quoted",
    "_rejoined_sentences",
    "_scalar",
    "_short_text",
    "_tokens",
    "did_you_mean",
    "format_problem",
    "line_column",
    "markup",
    "parse_input_node",
    "placeholders",
    "source_tokens",
    "typed_numbers",
]


def test_every_name_the_one_file_grammar_had_is_still_importable() -> None:
    grammar = importlib.import_module("tracer.lessons.grammar")
    assert [name for name in OLD_NAMES if not hasattr(grammar, name)] == []
    # The key tables are the format's.
    assert fmt.SHOW.keys == grammar.SHOW_KEYS and fmt.QUIZ.keys == grammar.QUIZ_KEYS
    assert {s.name: s.keys for s in fmt.STEPS if s.mapping} == grammar.STEP_KEYS
