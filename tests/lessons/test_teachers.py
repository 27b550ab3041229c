"""What teachers asked for: divide among the operations, every tensor of a shown stage, readable
inline inputs in exported notebooks, and a warning where narration would read '?'.

Numbers come from torch on the course notes' embeddings (tests/data/seeds.py), never from the
lesson runner's own output."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import jsonschema
import nbformat
import pytest
import torch
import yaml

from tests.lessons.test_authoring import H, load, problems, scores, value_of
from tracer.lessons.check import examine
from tracer.lessons.hiding import quiz_tables
from tracer.lessons.lesson_runner import LessonRunner, explain
from tracer.lessons.loader import load_lesson
from tracer.lessons.model import Operation
from tracer.lessons.schema import lesson_schema
from tracer.lessons.views import step_view
from tracer.plugin_host import PluginHost
from tracer.text.export import export_text
from tracer.text.plain_lesson import plain_lines

Attn = Callable[..., tuple[int, str, str]]


# divide ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("then", "cell", "oracle"),
    [
        ("[{divide: 4}, max]", "", lambda s: s.max() / 4),
        ("[max, {divide: {stage: scores, then: [min]}}]", "", lambda s: s.max() / s.min()),
        # "How many times smaller is journey's score with Your than with itself?"
        (
            "[{pick: journey}, {divide: {stage: scores, then: [{pick: journey}], cell: [1]}}]",
            ", cell: [0]",
            lambda s: s[1, 0] / s[1, 1],
        ),
        ("[{divide: {stage: scores, then: [transpose]}}]", ", cell: [2, 4]", lambda s: s[2, 4] / s[4, 2]),
    ],
)  # fmt: skip
def test_divide_matches_torch(
    then: str, cell: str, oracle: Callable[[torch.Tensor], torch.Tensor], host: PluginHost
) -> None:
    assert value_of(then, host, cell) == pytest.approx(float(oracle(scores())), rel=1e-5)


@pytest.mark.parametrize(
    ("then", "expected"),
    [
        ("[{divide: 0}]", "4:64: 'divide' by 0 has no value; divide by another number"),
        ("[{divide: 0.0}]", "4:64: 'divide' by 0 has no value; divide by another number"),
        # A tensor with a 0 in it: every score compared with 100 is 0.
        ("[{divide: {stage: scores, then: [{compare: '> 100'}]}}]",
         "4:56: 'divide' by 0 at (0, 0): the divisor has a 0 there"),
        ("[{divide: {stage: scores, then: [{compare: '> 100'}, {sum: -1}], cell: [2]}}]",
         "4:56: 'divide' by 0: the divisor has a 0 there"),
        ("[{divide: {stage: inputs}}]",
         "4:56: 'divide' needs two tensors of the same shape, not 6×6 and 6×3"),
    ],
)  # fmt: skip
def test_division_by_zero_is_refused_at_the_operation(
    then: str, expected: str, host: PluginHost
) -> None:
    text = H + f"steps:\n  - show: {{variant: naive-loop, stage: scores, then: {then}}}\n"
    assert problems(text, host) == [expected]


def test_lesson_check_names_the_file_line_and_column(attn: Attn, tmp_path: Path) -> None:
    path = tmp_path / "ratio.yaml"
    path.write_text(
        H + "steps:\n  - quiz:\n      question: How many times larger?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [0, 0],\n"
        "               then: [{divide: 0}]}\n",
        encoding="utf-8",
    )
    status, out, err = attn("lesson", "check", str(path))
    assert status == 1
    assert f"{path}:7:32: 'divide' by 0 has no value; divide by another number" in out + err


def test_divide_reads_in_words_and_is_in_the_schema() -> None:
    assert explain(Operation("divide", 4.0)) == "divided by 4"
    schema = lesson_schema()
    lesson = {
        "title": "T",
        "summary": "S",
        "steps": [{"show": {"variant": "naive-loop", "stage": "scores", "then": []}}],
    }

    def valid(operation: object) -> bool:
        lesson["steps"][0]["show"]["then"] = [operation]  # type: ignore[index]
        try:
            jsonschema.validate(lesson, schema)
        except jsonschema.ValidationError:
            return False
        return True

    assert valid({"divide": 4})
    assert valid({"divide": {"stage": "scores"}})
    assert not valid({"divide": 0})


def test_the_teachers_guide_divide_example_is_right(host: PluginHost) -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "lessons.md").read_text("utf-8")
    section = guide.split('"How many times larger" is a `divide`', 1)[1]
    (said,) = re.findall(r"computes \(([\d.]+)\)", section.split("```", 1)[0])
    (quiz,) = re.findall(r"```yaml\n(.*?)```", section, re.S)[:1]
    lesson = load(H + "steps:\n" + quiz, host)
    answer = LessonRunner(lesson, host).answer(lesson.quizzes[0])
    s = scores()
    assert answer == pytest.approx(float(s[1, 1] / s[1, 0]), rel=1e-5)  # journey, Your
    assert float(said) == round(float(s[1, 1] / s[1, 0]), 2)


# Warnings from running the lesson ---------------------------------------------------------------

HIDDEN = """\
title: T
summary: S
values:
  top: {variant: naive-loop, stage: scores, cell: [journey, journey], then: [{scale: 100}]}
  base: {variant: naive-loop, stage: scores, cell: [Your, Your], then: [{scale: 100}]}
steps:
  - narration: Scaled, the score grows to {{top}}, and by {{top:.1f}} with a base of {{base}}.
  - quiz:
      question: What is journey's score with itself, times 100?
      answer: {variant: naive-loop, stage: scores, cell: [journey, journey], then: [{scale: 100}]}
  - narration: It was {{top}}; the base was {{base}}.
"""


def at(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """Line and column (1-based) of the nth ``needle`` in ``text``, counted here."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def warnings_of(text: str, host: PluginHost, tmp_path: Path) -> list[str]:
    path = tmp_path / "l.yaml"
    path.write_text(text, encoding="utf-8")
    examined = examine(path, host)
    assert examined.problems == []
    return [f"{w.line}:{w.column}: {w.message}" for w in examined.warnings]


def test_a_live_value_that_would_read_as_a_question_mark_is_warned_at(
    host: PluginHost, tmp_path: Path
) -> None:
    found = warnings_of(HIDDEN, host, tmp_path)
    quiz_line = at(HIDDEN, "  - quiz:")[0]
    # Both spellings of {{top}} before the quiz; not {{base}} (another number), and not the
    # {{top}} after the quiz, which the learner sees once it is answered.
    assert [w.split(": warning: ")[0] for w in found] == [
        "{}:{}".format(*at(HIDDEN, "{{top}}")),
        "{}:{}".format(*at(HIDDEN, "{{top:.1f}}")),
    ]
    top = float(scores()[1, 1]) * 100
    assert found[0].endswith(
        f"{{{{top}}}} in the narration reads '?' here: its value, {top:.4f}, is the answer of "
        f"the quiz at line {quiz_line}, which is not answered yet; move this text after that "
        "quiz, or show another value"
    )
    # And it is so: read in order, the narration shows '?' for both, and the base.
    lesson = load(HIDDEN, host)
    runner = LessonRunner(lesson, host)
    try:
        text = step_view(lesson, runner, 0).text
    finally:
        runner.close()
    assert (
        text
        == f"Scaled, the score grows to ?, and by ? with a base of {float(scores()[0, 0]) * 100:.4f}."
    )


def test_no_warning_once_the_quiz_comes_first(host: PluginHost, tmp_path: Path) -> None:
    quiz_first = HIDDEN.replace(
        "  - narration: Scaled, the score grows to {{top}}, and by {{top:.1f}} with a base of "
        "{{base}}.\n",
        "",
    )
    assert warnings_of(quiz_first, host, tmp_path) == []


def test_a_show_that_applies_then_to_one_of_several_tensors_says_which(
    host: PluginHost, tmp_path: Path
) -> None:
    text = H + "steps:\n  - show: {variant: online-softmax, stage: projected, then: [transpose]}\n"
    (found,) = warnings_of(text, host, tmp_path)
    assert found == (
        "{}:{}: warning: stage 'projected' has 3 tensors (queries, keys, values); 'then' "
        "applies to the first, 'queries', the only one shown: write 'tensor: queries' to say "
        "so, or one show per tensor"
    ).format(*at(text, "{variant: online-softmax"))
    named = text.replace("stage: projected,", "stage: projected, tensor: queries,")
    assert warnings_of(named, host, tmp_path) == []


def test_a_show_of_a_stage_shows_every_tensor_of_it(host: PluginHost) -> None:
    lesson = load(H + "steps:\n  - show: {variant: online-softmax, stage: projected}\n", host)
    runner = LessonRunner(lesson, host)
    try:
        view = step_view(lesson, runner, 0)
    finally:
        runner.close()
    assert [table.resolved.name for table in view.tables] == [
        "projected.queries",
        "projected.keys",
        "projected.values",
    ]


# Exported notebooks write inline inputs as data ----------------------------------------------

INLINE = """\
title: T
summary: S
inputs:
  tokens: [yes, no, maybe]
  embeddings:
    - [0.5, 0.25, 1.0]
    - [1.5, -0.5, 0.0]
    - [0.0, 2.0, 0.75]
  weights:
    query: [[1, 0], [0, 1], [1, 1]]
    key: [[0.5, 0], [0, 0.5], [1, 0]]
    value: [[1, 1], [0, 1], [1, 0]]
  padding: [false, false, true]
steps:
  - show: {variant: masked, stage: scores}
  - show: {variant: masked, stage: weights}
"""


def test_an_exported_notebook_writes_inline_inputs_as_data_and_runs(
    host: PluginHost,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "inline.yaml"
    path.write_text(INLINE, encoding="utf-8")
    lesson = load_lesson(path, host)
    document = nbformat.reads(export_text(lesson, host, "ipynb"), as_version=4)
    code = [cell.source for cell in document.cells if cell.cell_type == "code"]
    assert not any("InputSet(" in source or str(tmp_path) in source for source in code)
    # The setup cell names the inputs as the lesson writes them (read here by PyYAML).
    setup = code[0]
    namespace: dict[str, object] = {}
    exec(setup, namespace)  # the notebook's own cell
    written = yaml.safe_load(INLINE)["inputs"]
    written["tokens"] = ["yes", "no", "maybe"]  # text to attn; PyYAML's 1.1 reads booleans
    assert namespace["LESSON_INPUTS"] == written
    assert "    'tokens': ['yes', 'no', 'maybe']," in setup.splitlines()  # one key a line
    # The notebook still runs: each cell prints what it saved.
    saved = [
        "".join(out.get("text", "") for out in cell.outputs)
        for cell in document.cells
        if cell.cell_type == "code"
    ]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    printed = []
    for source in code:
        exec(source, namespace)
        printed.append(capsys.readouterr().out)
    assert printed == saved
    assert sum("inputs=LESSON_INPUTS" in source for source in code) >= 2
    # And the scores it printed are torch's, from the weights as written.
    x = torch.tensor(written["embeddings"])
    q, k = (
        x @ torch.tensor(written["weights"]["query"], dtype=torch.float32),
        x @ torch.tensor(written["weights"]["key"], dtype=torch.float32),
    )
    exec(code[1], namespace)  # the first table's cell: the scores
    capsys.readouterr()
    run = namespace["run"]
    torch.testing.assert_close(run.stage("scores").tensors["scores"], q @ k.T)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["your-journey", "ton-voyage"])
def test_input_data_reads_back_to_the_same_set(name: str) -> None:
    from dataclasses import replace

    from tracer.inputs.input_set import input_data, inputs_from_data, load_inputs

    original = load_inputs(name)
    again = inputs_from_data(input_data(original), "here", name=original.name)
    assert again == replace(original, source="here")


def test_trace_takes_inputs_as_data_and_says_what_is_wrong_with_them() -> None:
    from tracer import trace
    from tracer.errors import InputError

    run = trace("naive-loop", inputs={"tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]]})
    e = torch.exp(torch.tensor(1.0))
    torch.testing.assert_close(run.output, torch.tensor([[e, 1], [1, e]]) / (e + 1))
    with pytest.raises(InputError, match="embeddings row 2 has 1 value but row 1 has 2"):
        trace("naive-loop", inputs={"tokens": ["a", "b"], "embeddings": [[1, 0], [0]]})


def test_a_quizs_show_of_a_stage_shows_every_tensor_of_it(host: PluginHost) -> None:
    lesson = load(
        H + "steps:\n  - quiz:\n      question: Which key is longest?\n"
        "      choices: [Your, journey]\n      answer: journey\n"
        "      show: {variant: online-softmax, stage: projected}\n",
        host,
    )
    runner = LessonRunner(lesson, host)
    try:
        tables = quiz_tables(lesson, runner, 0).tables
        text = "\n".join(plain_lines(lesson, host, runner=runner))
    finally:
        runner.close()
    names = ["projected.queries", "projected.keys", "projected.values"]
    assert [table.name for table in tables] == names
    assert all(f"{name} (6×2" in text for name in names)


def test_a_quiz_explanation_is_never_hidden_but_its_hints_are(
    host: PluginHost, tmp_path: Path
) -> None:
    values, steps = HIDDEN.split("steps:\n")
    text = (
        values + "steps:\n"
        "  - quiz:\n"
        "      question: Your's score with itself, times 100?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [Your, Your], "
        "then: [{scale: 100}]}\n"
        "      hints:\n        - Not {{top}}.\n"
        "      explanation: It is {{base}}, not {{top}}.\n"
        + "  - quiz:"  # then the quiz on {{top}}, as HIDDEN has it
        + steps.split("  - quiz:", 1)[1].split("  - narration: It was")[0]
    )
    found = warnings_of(text, host, tmp_path)
    assert [w.split(": warning: ")[0] for w in found] == ["{}:{}".format(*at(text, "{{top}}"))]
    assert "{{top}} in the quiz reads '?' here" in found[0]
