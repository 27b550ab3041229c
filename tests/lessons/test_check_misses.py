"""What ``attn lesson check`` says of a negative ``pick`` and of a cells quiz that names a
repeated token (the previous hostile corpus's misses), through the command itself."""

from __future__ import annotations

from pathlib import Path

from tests import forked

HEAD = "title: t\nsummary: s\n"
REPEATED = "inputs: {tokens: [the, cat, the], embeddings: [[1, 0], [0, 1], [1, 1]]}\nsteps:\n"


def check(tmp_path: Path, text: str) -> tuple[int, list[str]]:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text(text, encoding="utf-8")
    result = forked.run_attn("lesson", "check", str(lesson))
    assert result.stderr == ""
    return result.returncode, [
        line.replace(f"{lesson}:", "") for line in result.stdout.splitlines()
    ]


def test_a_negative_pick_says_the_range_of_the_table_it_picks_from(tmp_path: Path) -> None:
    status, lines = check(
        tmp_path,
        HEAD + "inputs: four-words\nsteps:\n"
        "  - show: {variant: naive-loop, stage: scores, then: [pick: -1]}\n"
        "  - show: {variant: naive-loop, stage: scores, then: [pick: -10000000000000000000000000]}\n"
        "  - show: {variant: naive-loop, stage: scores, then: [{pick: 1}, {pick: -2}]}\n",
    )
    assert status == 1
    assert lines == [  # four tokens, so rows 0 to 3; then one row of four, so 0 to 3 again
        "5:55: 'pick: -1' is out of range: the first dimension has 4 entries, so valid "
        "indices are 0 to 3 (indices start at 0)",
        "6:55: 'pick: -10000000000000000000000000' is out of range: the first dimension has "
        "4 entries, so valid indices are 0 to 3 (indices start at 0)",
        "7:67: 'pick: -2' is out of range: the first dimension has 4 entries, so valid "
        "indices are 0 to 3 (indices start at 0)",
    ]


def test_a_cells_quiz_naming_a_repeated_token_is_flagged_with_its_labels(tmp_path: Path) -> None:
    status, lines = check(
        tmp_path,
        HEAD + REPEATED + "  - quiz:\n"
        "      question: Which keys does 'the' see?\n"
        "      cells: {variant: masked, stage: scaled}\n"
        "      answer: {variant: masked, stage: weights, then: [{compare: '> 0'}]}\n"
        "  - quiz:\n"  # 'the' as an English word, and a token once: nothing to say
        "      question: Which cells does the mask hide from “cat”?\n"
        "      cells: {variant: masked, stage: scaled}\n"
        "      answer: {variant: masked, stage: weights, then: [{compare: '== 0'}]}\n",
    )
    assert status == 0  # a warning: the lesson loads and runs as it did
    assert lines == [
        "5:5: warning: this cells quiz names 'the', which its table holds 2 times; say which, "
        "as the table labels it and learners type it: 'the@0' or 'the@2'",
        " ok (2 steps)",
    ]


def test_a_hint_that_names_it_is_flagged_too(tmp_path: Path) -> None:
    _, lines = check(
        tmp_path,
        HEAD + REPEATED + "  - quiz:\n"
        "      question: Which keys does the second token see?\n"
        "      cells: {variant: masked, stage: scaled}\n"
        "      answer: {variant: masked, stage: weights, then: [{compare: '> 0'}]}\n"
        '      hints: [Start from "the".]\n',
    )
    assert lines[0].startswith("5:5: warning: this cells quiz names 'the'")


def test_an_option_value_is_reported_at_the_value_in_lesson_syntax(tmp_path: Path) -> None:
    """Not at the step, and not as the command line writes it (-o rope_dim=4, --d-out)."""
    status, lines = check(
        tmp_path,
        HEAD + "inputs: your-journey\nsteps:\n"
        "  - show:\n"
        "      variant: mla\n"
        "      stage: latent\n"
        "      options: {d_out: 8, heads: 4, rope_dim: 3}\n",
    )
    assert status == 1
    assert lines == [
        "8:47: rope_dim 3 is odd: rotary embeddings turn the features in pairs (try rope_dim: 4)"
    ]


def test_a_lesson_wide_option_is_reported_where_the_lesson_sets_it(tmp_path: Path) -> None:
    status, lines = check(
        tmp_path,
        HEAD + "inputs: your-journey\noptions:\n  rope_dim: 3\n  d_out: 8\nsteps:\n"
        "  - show: {variant: mla, stage: latent}\n",
    )
    assert status == 1
    assert len(lines) == 1 and lines[0].startswith("5:13: rope_dim 3 is odd")
    assert "-o " not in lines[0] and "--" not in lines[0]


def test_a_cells_quiz_on_a_picked_row_takes_the_tokens_its_table_shows() -> None:
    """The row of "journey" is labelled by its keys; typing them is an answer (causal: Your and
    journey itself), as typing their indices is."""
    from tracer.lessons.grading import grade
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.loader import parse_lesson
    from tracer.plugin_host import PluginHost

    host = PluginHost(use_env=False)
    lesson = parse_lesson(
        HEAD + "inputs: your-journey\nsteps:\n"
        "  - quiz:\n"
        "      question: Which keys does journey give a weight to?\n"
        "      cells: {variant: masked, stage: weights, tensor: weights, then: [{pick: journey}]}\n"
        "      answer: {variant: masked, stage: weights, tensor: weights, "
        "then: [{pick: journey}, {compare: '> 0'}]}\n",
        host=host,
    )
    runner = LessonRunner(lesson, host)
    try:
        quiz = lesson.quizzes[0]
        answer = runner.answer(quiz)
        assert runner.answer_text(quiz) == "Your; journey"
        assert grade(quiz, answer, "Your; journey").right is True
        assert grade(quiz, answer, "0; 1").right is True
        assert grade(quiz, answer, "journey; starts").right is False
    finally:
        runner.close()
