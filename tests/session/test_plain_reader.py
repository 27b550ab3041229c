"""``attn lesson run NAME --plain -i`` as a screen reader's user hears it: a skip is said,
only hints that exist are offered, no line that is not a verdict starts like one, a
finished lesson can start again, the end does not repeat the checkpoint, and tables can
be read row by row with their labels. And ``attn lessons`` says the progress."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests import forked
from tests.data.seeds import SIMPLE_SCORES

TOKENS = ["Your", "journey", "starts", "with", "one", "step"]
LESSON = """\
title: Read aloud
summary: Scores, a quiz with a hint, one without, and what it covered.
inputs: your-journey
steps:
  - show: {variant: naive-loop, stage: scores}
  - compare:
      stage: scores
      left: {variant: naive-loop, label: route 1}
      right: {variant: vectorized, label: route 2}
  - quiz:
      question: How many tokens are there?
      answer: 6
      tolerance: 0
      hints: [Count the words.]
  - quiz:
      question: Which comes first?
      choices: [Your, journey]
      answer: Your
  - checkpoint:
      - A score is a dot product.
      - Both routes give the same scores.
"""


@pytest.fixture
def lesson(tmp_path: Path) -> Path:
    path = tmp_path / "aloud.yaml"
    path.write_text(LESSON, encoding="utf-8")
    return path


def take(lesson: Path, *lines: str) -> str:
    result = forked.run_attn(
        "lesson", "run", str(lesson), "--plain", "-i", input="\n".join(lines) + "\n", timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def test_tables_are_read_row_by_row_with_their_labels(lesson: Path) -> None:
    out = take(lesson, "t")
    start = out.index("scores, row by row (6×6: query × key):\n")
    rows = out[start:].splitlines()[1:7]
    for row, (token, numbers) in enumerate(zip(TOKENS, SIMPLE_SCORES, strict=True)):
        cells = rows[row].split("; ")
        assert [cell.rsplit(": ", 1)[0] for cell in cells] == [f"{token}, {key}" for key in TOKENS]
        assert [float(cell.rsplit(": ", 1)[1]) for cell in cells] == pytest.approx(
            numbers, abs=1e-4
        )
    assert "journey, with: 0.8434" in rows[1]  # as the course notes print it


def test_no_line_of_a_compare_starts_like_a_verdict(lesson: Path) -> None:
    out = take(lesson, "")
    compare = out[out.index("--- Step 2 of 5") : out.index("--- Step 2 of 5") + 3000]
    assert "On the left: route 1 (naive-loop, stage scores)" in compare
    assert "On the right: route 2 (vectorized, stage scores)" in compare
    assert not [line for line in compare.splitlines() if line.startswith(("Right", "Left"))]


def test_a_skip_is_said_and_only_hints_that_exist_are_offered(lesson: Path) -> None:
    out = take(lesson, "", "", "h", "h", "", "h", "")
    said = out.split("] > ")  # what follows each prompt
    assert said[3].startswith("Hint 1: Count the words.")
    assert said[4].startswith("No more hints: its hint is above.")
    assert said[5].startswith("Skipped: this quiz is not answered; b goes back to it.")
    assert said[6].startswith("This quiz has no hints.")
    assert said[7].startswith("Skipped: this quiz is not answered")
    asked = re.findall(r"\[([^\]]*)\] > ", out)
    assert "h: hint" in asked[2]  # the number quiz, its hint not yet asked for
    assert "hint" not in asked[3] + asked[4]  # used up
    assert "hint" not in asked[5] + asked[6]  # the choice quiz has none


def test_the_end_says_the_score_not_the_checkpoint_again(lesson: Path) -> None:
    out = take(lesson, "", "", "6", "", "a", "", "")
    assert out.count("A score is a dot product.") == 1  # said by the checkpoint step only
    end = out[out.index("--- End of the lesson.") :]
    assert "Quizzes: 2 of 2 right (2 answered)." in end
    assert "What it covered is in its checkpoint at step 5." in end
    assert "[Enter or q: quit · s: start again · b: back] > " in end


def test_a_finished_lesson_can_start_again(lesson: Path) -> None:
    take(lesson, "", "", "6", "", "a", "", "")  # to the end: finished
    out = take(lesson, "s", "q")
    assert "You finished this lesson before. Type s to start it again" in out
    after = out[out.index("Starting again from the first step; your answers are kept.") :]
    assert after.splitlines()[1] == "--- Step 1 of 5: naive-loop, stage scores"
    out = take(lesson, "", "", "", "", "", "s", "", "")  # at the end once more: s there too
    end = out.index("--- End of the lesson.")
    assert "--- Step 1 of 5: naive-loop, stage scores" in out[end:]
    assert "Answered before. Right: 6." in out[end:]  # the answers are kept


def test_attn_lessons_says_the_progress(tmp_path: Path) -> None:
    from tracer.lessons.loader import find_lessons, shipped_dir
    from tracer.session.progress import LessonProgress, ProgressStore, lesson_key

    data = tmp_path / "data"
    second = find_lessons()[1]
    ProgressStore(data).save(
        lesson_key(second.path, shipped_dir()),
        LessonProgress(step=2, steps=9, title=second.title, updated=time.time()),
    )
    result = forked.run_attn("lessons", env={**os.environ, "ATTN_DATA_DIR": str(data)})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[2].endswith(f"{second.title}  (step 3 of 9)")
    assert lines[1].endswith("(not started)")
