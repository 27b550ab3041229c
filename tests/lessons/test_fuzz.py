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
