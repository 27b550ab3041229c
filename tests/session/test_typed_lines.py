"""``attn lesson run NAME --plain -i`` at hostile standard input: every line bounded and
read as text, every refusal one line, no traceback (docs/reference.md, "Typed answers")."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests import forked
from tracer.text import interactive
from tracer.text.interactive import MAX_LINE, stdin_problem

LESSON = """\
title: Typed answers
summary: Two quizzes to type at.
inputs: four-words
steps:
  - quiz:
      question: How many tokens are there?
      answer: 4
      tolerance: 0
      explanation: Count them.
  - quiz:
      question: Which word comes first?
      choices: [one, two, three]
      answer: two
  - narration: The end is near.
"""
PROMPT = "[type your answer · b: back · q: quit] > "  # a quiz without hints offers none


@pytest.fixture
def lesson(tmp_path: Path) -> Path:
    path = tmp_path / "typed.yaml"
    path.write_text(LESSON, encoding="utf-8")
    return path


def take(lesson: Path, data: bytes | str, **kwargs: object) -> tuple[int, str, str]:
    result = forked.run_attn(
        "lesson", "run", str(lesson), "--plain", "-i", input=data, timeout=60, **kwargs
    )  # type: ignore[arg-type]
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout, result.stderr


def answers(out: str) -> list[str]:
    """What was said after each prompt at the number quiz."""
    return [part.splitlines()[0] for part in out.split(PROMPT)[1:]]


def test_unicode_digits_and_a_huge_number_are_said_in_a_line_each(lesson: Path) -> None:
    lines = ["²", "①", "٣", "1" * 5000, "1" * 4000, "4"]
    status, out, err = take(lesson, "\n".join(lines) + "\n")
    assert (status, err) == (0, "")
    said = answers(out)
    assert said[:6] == [
        "Not an answer: '²' is not a digit 0-9; type digits 0-9 only.",
        "Not an answer: '①' is not a digit 0-9; type digits 0-9 only.",
        "Not an answer: '٣' is not a digit 0-9; type digits 0-9 only.",
        f"That line is longer than {MAX_LINE:,} characters, so it was not read; type it again.",
        "Not an answer: a number has at most 64 characters; "
        "'1111111111111111111111111111111111111...' has more.",
        "Right: 4.",
    ]


def test_a_million_character_answer_is_not_echoed(lesson: Path) -> None:
    huge = "7" * 1_000_000
    cells = "0,0;" * 200_000
    status, out, err = take(lesson, f"{huge}\n{cells}\n{huge}\n{huge}\n4\nq\n")
    assert (status, err) == (0, "")
    assert len(out) < 4000  # the lesson's own text, and a line for each
    skipped = (
        f"That line is longer than {MAX_LINE:,} characters, so it was not read; type it again."
    )
    # Long lines are skipped, never counted as the lines of a binary stream.
    assert answers(out)[:5] == [skipped] * 4 + ["Right: 4."]


def test_a_line_too_long_to_be_typing_ends_the_input_with_the_place_saved(lesson: Path) -> None:
    def small_limit() -> None:  # in the child: 1 MiB, not 64 MiB, so the test stays quick
        interactive.GIVE_UP_BYTES = 2**20

    data = b"\n" + b"x" * (3 * 2**20) + b"\nq\n"
    status, out, err = take(lesson, data, preexec_fn=small_limit)
    assert status == 2
    assert err == (
        "attn: standard input sent a line of more than 1 MiB; stopped (your place is saved)\n"
    )
    assert "--- Step 2 of 3: quiz" in out  # the Enter before it was read


def test_lines_that_are_not_text_are_said_and_enough_of_them_stop(lesson: Path) -> None:
    status, out, err = take(lesson, b"\xff\xfe\n\x00\n4\n")
    assert (status, err) == (0, "")
    assert answers(out)[:3] == [
        "That line is not utf-8 text; type it again.",
        "That line holds a NUL byte: it is not text; type it again.",
        "Right: 4.",
    ]
    afresh = {**os.environ, "ATTN_DATA_DIR": str(lesson.parent / "afresh")}
    status, out, err = take(lesson, b"\x1b[A\n\xff\n\x00\n4\n", env=afresh)
    assert status == 2
    assert (
        err == "attn: standard input sent 3 lines in a row that are not text; stopped "
        "(your place is saved)\n"
    )
    assert "Right" not in out


def _stdin_from(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    os.dup2(fd, 0)
    os.close(fd)


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("folder", "a folder, not text"),
        ("/dev/zero", "a device that is not a terminal"),
        ("binary", "a file that is not utf-8 text"),
        ("nul", "a binary file, not text"),
    ],
)
def test_stdin_that_is_not_typed_text_is_refused_in_one_line(
    lesson: Path, tmp_path: Path, source: str, what: str
) -> None:
    # A fresh CPython stops at a folder itself ("Fatal Python error"); a forked child has its
    # streams already, so attn's own check is what answers here.
    folder = tmp_path / "answers"
    folder.mkdir()
    (tmp_path / "binary").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "nul").write_bytes(b"4\n\x00\x00\n")
    path = {"folder": str(folder), "/dev/zero": "/dev/zero"}.get(source, str(tmp_path / source))
    status, out, err = take(lesson, "", preexec_fn=lambda: _stdin_from(path))
    assert (status, out) == (2, "")
    assert err == (
        f"attn: standard input is {what}; give the answers from a terminal, a pipe or a text file\n"
    )


def test_a_text_file_and_dev_null_are_read(lesson: Path, tmp_path: Path) -> None:
    answers_file = tmp_path / "answers.txt"
    answers_file.write_text("4\n\nb\n")
    status, out, _ = take(lesson, "", preexec_fn=lambda: _stdin_from(str(answers_file)))
    assert status == 0 and "Right: 4." in out and "Right: b) two." in out
    status, out, _ = take(lesson, "", preexec_fn=lambda: _stdin_from(os.devnull))
    assert status == 0 and out.rstrip().endswith("Stopped; your place is saved.")


def test_stdin_problem_reads_only_the_descriptor() -> None:
    assert stdin_problem(None) is not None and "closed" in stdin_problem(None)  # type: ignore[operator]
    assert stdin_problem(io.StringIO("4\n")) is None  # no descriptor: a test's text


def test_a_warning_is_said_once_not_at_every_line(lesson: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")  # the data folder would be inside a file: nothing can be saved
    env = {**os.environ, "ATTN_DATA_DIR": str(blocker / "data")}
    status, _out, err = take(lesson, "\n\nb\n\n\n\n\nb\n\n\nq\n", env=env)
    assert status == 0
    warnings = [line for line in err.splitlines() if line.startswith("attn: warning:")]
    assert len(warnings) == len(set(warnings)), err  # each said once
    saving = [line for line in warnings if "could not save progress" in line]
    assert len(saving) == 1 and saving[0].endswith("progress.json: Not a directory"), err
