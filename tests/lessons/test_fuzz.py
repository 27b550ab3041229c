"""Fuzzing the loader: whatever the text or structure, the only failure is a LessonError.

Random text exercises the YAML layer; random structures built from the lesson
vocabulary get past YAML and exercise every branch of validation. Structures
that load are also checked by running them, which must report problems, not raise.
"""

from __future__ import annotations

import os
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracer.lessons.check import check_lesson
from tracer.lessons.loader import LessonError, parse_lesson
from tracer.plugin_host import PluginHost

WORDS = [
    "title", "summary", "inputs", "options", "steps", "narration", "show", "loop", "compare",
    "quiz", "checkpoint", "variant", "stage", "tensor", "query", "then", "focus", "caption",
    "left", "right", "label", "question", "answer", "choices", "tolerance", "explanation", "id",
    "points", "cell", "row", "column", "token", "limit", "seed", "init", "d_out", "dropout",
    "softmax", "sum", "diagonal", "pick", "scale", "naive-loop", "trainable", "masked",
    "vectorized", "scores", "weights", "context", "scaled", "mask", "journey", "Your",
    "four-words", "your-journey", "randn", "tokens", "embeddings",
    # Added with live values, variant options, defaults and the new quizzes and operations.
    "values", "defaults", "plugins", "hints", "cells", "max", "min", "mean", "std", "abs",
    "argmax", "count", "add", "subtract", "multiply", "compare", "heads", "window", "1%",
    "> 0", "{{x}}", "{{answer}}", "{{x:.2f}}", "{{x:token}}", "{{", "x",
]  # fmt: skip

FUZZ = settings(
    max_examples=int(os.environ.get("ATTN_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

scalars = st.one_of(
    st.sampled_from(WORDS),
    st.integers(min_value=-3, max_value=8),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
)
structures = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(WORDS), children, max_size=5),
    ),
    max_leaves=30,
)
lessons = st.fixed_dictionaries(
    {
        "title": scalars,
        "summary": scalars,
        "values": st.dictionaries(st.sampled_from(WORDS), structures, max_size=2),
        "defaults": structures,
        "steps": st.lists(
            st.dictionaries(st.sampled_from(WORDS), structures, min_size=1, max_size=2),
            max_size=4,
        ),
    },
    optional={"inputs": structures, "options": structures},
)


def load(text: str, host: PluginHost) -> None:
    try:
        lesson = parse_lesson(text, "fuzz.yaml", host)
    except LessonError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.line >= 1 and problem.column >= 1
            assert "\n" not in problem.message
        return
    for problem in check_lesson(lesson, host):
        assert problem.line >= 1 and "\n" not in problem.message


@FUZZ
@given(text=st.text(max_size=300))
def test_random_text(text: str, host: PluginHost) -> None:
    load(text, host)


@FUZZ
@given(text=st.text(alphabet="-:[]{}&*!|>'\"#%@` \n\tab1.", max_size=200))
def test_random_yaml_punctuation(text: str, host: PluginHost) -> None:
    load(text, host)


@FUZZ
@given(data=structures)
def test_random_structures(data: Any, host: PluginHost) -> None:
    load(yaml.safe_dump(data), host)


@FUZZ
@given(data=lessons)
def test_random_lessons(data: dict[str, Any], host: PluginHost) -> None:
    load(yaml.safe_dump(data, sort_keys=False), host)


VARIANT_STAGES = {
    "naive-loop": ["inputs", "scores", "weights", "context"],
    "vectorized": ["inputs", "scores", "weights", "context"],
    "trainable": ["projections", "queries", "keys", "values", "scores", "scaled", "weights"],
    "masked": ["mask", "renormalized", "masked_scores", "weights", "dropout", "context"],
}
small = st.integers(min_value=-3, max_value=7)
operations = st.one_of(
    st.dictionaries(
        st.sampled_from(["softmax", "sum", "normalize"]), small, min_size=1, max_size=1
    ),
    st.fixed_dictionaries({"pick": small}),
    st.fixed_dictionaries({"scale": st.floats(-2, 2)}),
    st.sampled_from(["diagonal", "transpose", "exp"]),
)


@st.composite
def refs(draw: st.DrawFn) -> dict[str, Any]:
    variant = draw(st.sampled_from(sorted(VARIANT_STAGES)))
    ref: dict[str, Any] = {
        "variant": variant,
        "stage": draw(st.sampled_from(VARIANT_STAGES[variant])),
    }
    if draw(st.booleans()):
        ref["then"] = draw(st.lists(operations, max_size=3))
    if draw(st.booleans()):
        ref["query"] = draw(st.integers(0, 5))
    if draw(st.booleans()):
        ref["options"] = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "init": st.sampled_from(["rand", "randn", "linear"]),
                    "d_out": st.integers(1, 4),
                    "dropout": st.sampled_from([0, 0.25, 0.5]),
                },
            )
        )
    if draw(st.booleans()):
        ref["inputs"] = "four-words"
    return ref


@st.composite
def runnable_steps(draw: st.DrawFn) -> dict[str, Any]:
    ref = draw(refs())
    kind = draw(st.sampled_from(["show", "quiz", "compare"]))
    if kind == "show":
        if draw(st.booleans()):
            ref["focus"] = draw(
                st.one_of(
                    st.dictionaries(
                        st.sampled_from(["row", "column", "token"]), small, min_size=1, max_size=1
                    ),
                    st.fixed_dictionaries({"cell": st.lists(small, min_size=2, max_size=2)}),
                )
            )
        return {"show": ref}
    if kind == "quiz":
        ref["cell"] = draw(st.lists(small, max_size=3))
        return {"quiz": {"question": "q", "answer": ref}}
    return {"compare": {"left": ref, "right": draw(refs())}}


@settings(
    max_examples=int(os.environ.get("ATTN_FUZZ_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(runnable_steps(), min_size=1, max_size=3))
def test_random_runnable_steps(steps: list[dict[str, Any]], host: PluginHost) -> None:
    """Real variants and stages with random operations, focuses and cells: problems, never a crash."""
    load(yaml.safe_dump({"title": "T", "summary": "S", "steps": steps}), host)
