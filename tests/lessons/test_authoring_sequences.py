"""Lessons for two sequences and a variant's own inputs, and one message per author mistake.

Each mistake is reported at its own line and column with the words that name it;
what follows only from a default the check fell back to is not reported.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.lessons.test_authoring import H, load, problems
from tracer.lessons.model import Compare, Quiz, Show
from tracer.plugin_host import PluginHost

Attn = Callable[..., tuple[int, str, str]]


def test_a_comma_inside_a_flow_list_hint_keeps_the_sentence_whole(host: PluginHost) -> None:
    lesson = load(
        H + "steps:\n"
        "  - quiz:\n"
        "      question: What is 2 × 3 + 1?\n"
        "      answer: 7\n"
        "      hints: [Multiply first, then add., 'Then, check: is it odd?', Odd numbers]\n",
        host,
    )
    (quiz,) = lesson.steps
    assert isinstance(quiz, Quiz)
    assert quiz.hints == ("Multiply first, then add.", "Then, check: is it odd?", "Odd numbers")
    # ...and check says so, at the hint, so the author can quote it.
    assert [(w.line, w.column, w.message) for w in lesson.warnings] == [
        (
            7,
            15,
            "warning: in a [ ] list a comma starts a new item, so YAML splits 'Multiply "
            "first, then add.' into two hints; it is read as one hint: quote it, or write "
            "each hint on its own '- ' line",
        )
    ]


def test_a_live_value_in_a_compare_label_is_reported_at_it(host: PluginHost) -> None:
    text = (
        H + "values:\n  w: {variant: naive-loop, stage: scores, cell: [0, 1]}\nsteps:\n"
        "  - compare:\n"
        "      left: {variant: naive-loop, stage: scores, label: 'w = {{w:.0f}}'}\n"
        "      right: {variant: vectorized, stage: scores}\n"
    )
    assert problems(text, host) == [
        "7:62: a label is shown as written: live values ({{name}}) are filled in only in "
        "narration, captions and quizzes; put the value in the caption"
    ]


def test_a_missing_inputs_file_is_the_only_message(host: PluginHost) -> None:
    text = (
        H + "inputs: data/dragon.yaml\nsteps:\n"
        "  - show: {variant: naive-loop, stage: scores, focus: {cell: [Dragon, fire]}}\n"
        "  - quiz: {question: q, answer: {variant: naive-loop, stage: scores, cell: [Here, be]}}\n"
    )
    assert problems(text, host) == [
        f"3:9: inputs file not found: {Path.cwd() / 'data/dragon.yaml'}; the steps are not "
        "checked until the inputs can be read"
    ]


def test_a_missing_default_variant_is_the_only_message(host: PluginHost) -> None:
    text = (
        H + "defaults: {variant: perceiver}\nsteps:\n"
        "  - show: {stage: weights}\n  - show: {stage: context}\n"
    )
    (only,) = problems(text, host)
    assert only.startswith("3:21: unknown variant 'perceiver'")
    assert only.endswith("; the steps are not checked until it is available")


def test_a_source_token_of_the_default_source_says_which_source_was_used(
    host: PluginHost,
) -> None:
    text = (
        H + "steps:\n"
        "  - quiz: {question: q, answer: {variant: cross-attention, stage: weights, "
        "cell: [Your, cat]}}\n"
    )
    assert problems(text, host) == [
        "4:89: cell index 'cat' is not one of the tokens; tokens: Your journey starts with one "
        "step; source: Ton voyage commence d'un pas (the lesson gives no source, so the default "
        "source 'ton-voyage', 'Ton voyage commence d'un pas', was used; give one with a "
        "'source:' section in the inputs)"
    ]


def test_a_lesson_uses_a_variants_own_inputs_and_may_name_them(host: PluginHost) -> None:
    own = host.variants["induction"].inputs
    assert own is not None
    lesson = load(H + "steps:\n  - show: {variant: induction, stage: tokens}\n", host)
    (show,) = lesson.steps
    assert isinstance(show, Show)
    assert show.ref.options.inputs is own  # as 'attn trace induction' runs it
    assert lesson.options.inputs is own  # what the lesson says it runs on: every step's inputs
    named = load(
        H + "inputs: repeated-letters\nsteps:\n  - show: {variant: induction, stage: tokens}\n",
        host,
    )
    assert named.options.inputs is own
    # A lesson that names inputs keeps them; a variant without inputs of its own is unchanged.
    given = load(
        H + "inputs: your-journey\nsteps:\n"
        "  - compare:\n      left: {variant: naive-loop, stage: scores}\n"
        "      right: {variant: vectorized, stage: scores}\n",
        host,
    )
    (compare,) = given.steps
    assert isinstance(compare, Compare)
    assert compare.left.options.inputs is not None
    assert compare.left.options.inputs.tokens[0] == "Your"


def test_size_counts_entries_not_values(host: PluginHost) -> None:
    from tracer.lessons.lesson_runner import LessonRunner

    lesson = load(
        H + "values:\n"
        "  keys: {variant: naive-loop, stage: scores, then: [{size: 1}]}\n"
        "  all: {variant: naive-loop, stage: scores, then: [size]}\n"
        "  row: {variant: masked, stage: mask, then: [{pick: 1}, size]}\n"
        "steps:\n  - narration: '{{keys}} keys, {{all}} scores, {{row}}'\n",
        host,
    )
    runner = LessonRunner(lesson, host)
    try:
        assert [runner.value(named.ref) for named in lesson.values] == [6.0, 36.0, 6.0]
    finally:
        runner.close()


def test_an_inputs_file_beside_the_lessons_is_not_a_lesson(tmp_path: Path, attn: Attn) -> None:
    (tmp_path / "data.yaml").write_text("tokens: [a, b]\nembeddings: [[1, 0], [0, 1]]\n")
    (tmp_path / "one.yaml").write_text(
        H + "inputs: data.yaml\nsteps:\n  - show: {variant: naive-loop, stage: scores}\n"
    )
    status, out, err = attn("lesson", "check", str(tmp_path))
    assert (status, err) == (0, ""), out
    assert out.splitlines() == [f"{tmp_path / 'one.yaml'}: ok (1 step)"]
    status, out, _ = attn("lessons", "--lessons-dir", str(tmp_path))
    assert status == 0 and "one" in out and "data" not in out.split(str(tmp_path))[-1]


def test_a_repeated_token_is_named_with_its_position(host: PluginHost) -> None:
    text = (
        H + "steps:\n"
        "  - quiz:\n"
        "      question: q\n"
        "      answer: {variant: induction, stage: layer0_weights, options: {layer: 0, head: 2}, "
        "cell: [R@10, R@0]}\n"
    )
    (quiz,) = load(text, host).steps
    assert isinstance(quiz, Quiz)
    assert quiz.answer.cell == (10, 0)  # type: ignore[union-attr]
    assert problems(text.replace("R@0]", "R@3]"), host) == [
        "6:102: cell index 'R@3': token 3 is 'S', not 'R'; 'R' is at 0, 10 (numbered from 0)"
    ]


def test_lower_case_hint_fragments_stay_separate(host: PluginHost) -> None:
    lesson = load(
        H + "steps:\n  - quiz: {question: q, answer: 1, hints: [first hint, second hint]}\n", host
    )
    (quiz,) = lesson.steps
    assert isinstance(quiz, Quiz)
    assert quiz.hints == ("first hint", "second hint")


def test_lesson_check_help_is_its_own(attn: Attn) -> None:
    status, out, err = attn("lesson", "check", "--help")
    assert (status, err) == (0, "")
    assert out.startswith("usage: attn lesson check PATH|DIR... [--watch]")
    status, out, _ = attn("lesson", "--help")
    assert status == 0 and "check, run, new, schema or export" in out
