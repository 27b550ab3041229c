"""A number quiz whose tolerance grades a guess right (:mod:`tracer.lessons.guesses`)."""

from __future__ import annotations

from pathlib import Path

from tests import forked
from tracer.lessons.guesses import accepted
from tracer.lessons.hiding import Secret
from tracer.lessons.model import Quiz

QUIZ = Quiz(question="q", quiz_kind="number", answer=0.0)


def secret(value: float, tolerance: float) -> Secret:
    return Secret(0, QUIZ, value, tolerance)


def test_a_guess_inside_the_tolerance_is_named() -> None:
    assert accepted(secret(9.2, 10), 6) == "0"  # a score quiz with tolerance: 10
    assert accepted(secret(0.95, 0.1), 6) == "1"
    assert accepted(secret(0.19, 0.05), 6) == "an even split, 1/6"


def test_a_tight_tolerance_or_an_answer_that_is_the_guess_is_not() -> None:
    assert accepted(secret(0.9544, 0.005), 6) == ""
    assert accepted(secret(0.0, 0.005), 6) == ""  # the answer is 0: knowing it is the point
    assert accepted(secret(1.0, 0), 6) == ""
    assert accepted(secret(0.25, 0.01), 4) == ""  # the answer is the even split itself


def test_lesson_check_refuses_it_at_the_tolerance(tmp_path: Path) -> None:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text(
        "title: t\nsummary: s\ninputs: four-words\nsteps:\n"
        "  - quiz:\n"
        "      question: What is the score of the second token with itself?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [1, 1]}\n"
        "      tolerance: 10\n"
        "  - quiz:\n"
        "      question: And of the first with itself?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [0, 0]}\n"
        "      tolerance: 0.005\n",
        encoding="utf-8",
    )
    result = forked.run_attn("lesson", "check", str(lesson))
    assert (result.returncode, result.stderr) == (1, "")  # a problem for the check
    lines = [line.replace(f"{lesson}:", "") for line in result.stdout.splitlines()]
    assert len(lines) == 1  # at the value the teacher wrote, with a tolerance to write instead
    assert lines[0].startswith("8:18: this tolerance accepts a guess, 0, though")
    assert lines[0].endswith("for example tolerance: 0.05")
    # A lesson like this opened before the check knew of guesses: it still opens (and grades
    # the guess right, which is what the check is for).
    taken = forked.run_attn("lesson", "run", str(lesson), "--plain")
    assert (taken.returncode, taken.stderr) == (0, "")
    assert "And of the first with itself?" in taken.stdout


def test_the_tolerance_suggested_is_below_half_the_distance_and_reads_as_a_number() -> None:
    import yaml

    from tracer.lessons.guesses import _tighter

    for distance in (0.9544, 0.03, 0.0003, 0.00015):
        written = yaml.safe_load(f"tolerance: {_tighter(distance)}")["tolerance"]
        assert isinstance(written, float)  # YAML reads 4e-05 as text; this is a number
        assert 0 < written < distance / 2
