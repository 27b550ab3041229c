"""A computed-choice quiz whose deciding row an earlier table holds whole
(:mod:`tracer.lessons.deciding`), as lesson 01 had it: the row of scores of "journey" shown
in full, then "which token has the largest score?"."""

from __future__ import annotations

from pathlib import Path

from tests import forked

QUIZ = (
    "  - quiz:\n"
    "      question: Which token has the largest score with journey?\n"
    "      choices: [Your, journey, starts, step]\n"
    "      answer: {variant: naive-loop, stage: scores, then: [{pick: journey}, argmax]}\n"
)
ROW = "  - show:\n      variant: naive-loop\n      stage: scores\n      query: journey\n"


def check(tmp_path: Path, steps: str, status: int = 0) -> list[str]:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text("title: t\nsummary: s\ninputs: your-journey\nsteps:\n" + steps, "utf-8")
    result = forked.run_attn("lesson", "check", str(lesson))
    assert (result.returncode, result.stderr) == (status, "")
    return [line.replace(f"{lesson}:", "") for line in result.stdout.splitlines()]


def test_the_row_shown_before_the_quiz_is_reported_at_its_table(tmp_path: Path) -> None:
    lines = check(tmp_path, ROW + QUIZ, status=1)  # a problem: the quiz gives its answer away
    assert len(lines) == 1
    assert lines[0].startswith(
        "6:7: this table holds, whole, the row the quiz at line 9 takes its answer from (argmax)"
    )


def test_the_row_shown_after_the_quiz_is_not(tmp_path: Path) -> None:
    assert check(tmp_path, QUIZ + ROW) == [" ok (2 steps)"]


def test_no_shipped_lesson_shows_a_computed_choices_row_before_asking(host: object) -> None:
    from tracer.lessons.deciding import deciding_rows
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.loader import find_lessons, load_lesson

    found = []
    for ref in find_lessons(use_env=False):
        lesson = load_lesson(ref.path, host)  # type: ignore[arg-type]
        runner = LessonRunner(lesson, host)  # type: ignore[arg-type]
        try:
            found += [str(p) for p in deciding_rows(lesson, runner, ref.path.name)]
        finally:
            runner.close()
    assert found == []
