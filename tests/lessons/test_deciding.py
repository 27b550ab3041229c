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


def check(tmp_path: Path, steps: str) -> list[str]:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text("title: t\nsummary: s\ninputs: your-journey\nsteps:\n" + steps, "utf-8")
    result = forked.run_attn("lesson", "check", str(lesson))
    assert (result.returncode, result.stderr) == (0, "")
    return [line.replace(f"{lesson}:", "") for line in result.stdout.splitlines()]


def test_the_row_shown_before_the_quiz_is_reported_at_its_table(tmp_path: Path) -> None:
    lines = check(tmp_path, ROW + QUIZ)
    assert lines[0].startswith(
        "6:7: warning: this table holds, whole, the row the quiz at line 9 takes its answer "
        "from (argmax)"
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


def test_the_walk_draws_the_row_question_marks_until_the_quiz_is_answered(host: object) -> None:
    """Before the quiz, the row of scores of "journey" reads "?" wherever it is drawn (as a
    row of the whole table too), with a legend that says why; answered, it shows. The row
    is recomputed with numpy from the course notes' embeddings."""
    import numpy as np

    from tests.data import seeds
    from tracer.lessons.hiding import Why, hidden_legend
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.loader import parse_lesson
    from tracer.lessons.views import step_view
    from tracer.text.plain_lesson import plain_lines

    x = np.array(seeds.SEED_003_INPUTS)
    journey = 1
    whole = "  - show: {variant: naive-loop, stage: scores}\n"
    text = "title: t\nsummary: s\ninputs: your-journey\nsteps:\n" + ROW + whole + QUIZ
    lesson = parse_lesson(text, "l.yaml", host)  # type: ignore[arg-type]
    runner = LessonRunner(lesson, host)  # type: ignore[arg-type]
    try:
        (row,) = step_view(lesson, runner, 0).tables
        assert np.allclose(row.resolved.tensor.double().numpy(), x[journey] @ x.T, atol=1e-5)
        assert row.hidden == {(0, column) for column in range(6)}
        assert row.why == (Why("decides", 2),)
        assert hidden_legend([row]) == (
            "(? = hidden until the quiz at step 3 is answered: the numbers its right choice "
            "is read off)"
        )
        (table,) = step_view(lesson, runner, 1).tables
        scores = x @ x.T  # symmetric: the row of journey is also its column
        assert np.allclose(table.resolved.tensor.double().numpy(), scores, atol=1e-5)
        assert table.hidden == {(journey, c) for c in range(6)} | {(r, journey) for r in range(6)}
        answered = {"step-3"}
        assert step_view(lesson, runner, 1, answered).tables[0].hidden == frozenset()
        printed = "\n".join(plain_lines(lesson, host))  # type: ignore[arg-type]
        before = printed.split("--- Step 3")[0]
        assert "the numbers its right choice is read off" in before
    finally:
        runner.close()


LOOP = (
    "  - loop:\n      variant: naive-loop\n      stage: scores\n      query: journey\n"
    "      caption: journey with each token in turn.\n"
)


def test_a_loop_that_works_the_row_out_before_the_quiz_is_reported_and_hidden(
    tmp_path: Path, host: object
) -> None:
    """A loop that works out the scores of "journey" one by one, then "which token has the
    largest score with journey?": the check warns at the loop, and each score the loop shows
    reads "?" until the quiz is answered (numpy's scores from the course notes' embeddings)."""
    import numpy as np

    from tests.data import seeds
    from tracer.lessons.loader import parse_lesson
    from tracer.text.plain_lesson import plain_lines

    lines = check(tmp_path, LOOP + QUIZ)
    assert lines[0].startswith(
        "5:5: warning: this loop works out, whole, the row the quiz at line 10 takes its "
        "answer from (argmax)"
    )
    x = np.array(seeds.SEED_003_INPUTS)
    scores = x[1] @ x.T
    text = "title: t\nsummary: s\ninputs: your-journey\nsteps:\n" + LOOP + QUIZ
    printed = "\n".join(plain_lines(parse_lesson(text, "l.yaml", host), host))  # type: ignore[arg-type]
    loop = printed.split("--- Step 2")[0]
    assert loop.count("score = ?") == 6
    assert not any(f"{value:.4f}" in loop for value in scores)
    after = "\n".join(plain_lines(parse_lesson(QUIZ_FIRST + LOOP, "l.yaml", host), host))  # type: ignore[arg-type]
    assert all(f"{value:.4f}" in after for value in scores)  # after the quiz: every score


QUIZ_FIRST = "title: t\nsummary: s\ninputs: your-journey\nsteps:\n" + QUIZ


def test_a_later_screen_hides_the_row_while_the_quiz_is_skipped(host: object) -> None:
    """The quiz first, then the whole table of scores: a learner who skips the quiz (→) and
    comes back finds the row (and its symmetric column) of "journey" as "?" on the later
    screen; answered, it shows; read top to bottom (``--plain``, whose quiz is followed by
    its answer), it shows too. The scores are numpy's, from the course notes' embeddings."""
    import numpy as np

    from tests.data import seeds
    from tracer.lessons.hiding import Why
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.loader import parse_lesson
    from tracer.lessons.views import step_view

    x = np.array(seeds.SEED_003_INPUTS)
    journey = 1
    whole = "  - show: {variant: naive-loop, stage: scores}\n"
    lesson = parse_lesson(QUIZ_FIRST + whole, "l.yaml", host)  # type: ignore[arg-type]
    runner = LessonRunner(lesson, host)  # type: ignore[arg-type]
    try:
        (table,) = step_view(lesson, runner, 1, frozenset()).tables
        assert np.allclose(table.resolved.tensor.double().numpy(), x @ x.T, atol=1e-5)
        assert table.hidden == {(journey, c) for c in range(6)} | {(r, journey) for r in range(6)}
        assert table.why == (Why("decides", 0),)
        assert step_view(lesson, runner, 1, {"step-1"}).tables[0].hidden == frozenset()
        assert step_view(lesson, runner, 1).tables[0].hidden == frozenset()
    finally:
        runner.close()
