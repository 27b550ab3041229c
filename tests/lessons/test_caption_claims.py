"""A sentence that says on which side of the diagonal a table's hidden cells lie is checked
against the table (:mod:`tracer.lessons.caption_claims`), at the words' ``file:line:column``.

The sides are the textbook's: a causal mask hides key j > query i, above the diagonal of a
(query, key) table; flash-backward's table of skipped tiles has key tiles on the rows, so
the skipped (later) key tiles are below it. Both are recomputed here with torch's own triu.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests import forked
from tracer.lessons.caption_claims import marked_side

MASKED = """title: T
summary: S
steps:
  - show:
      variant: masked
      stage: masked_scores
      caption: The later keys, {side} the diagonal, read -inf.
"""
SKIPPED = """title: T
summary: S
options: {{seed: 123, init: randn, d_out: 2}}
steps:
  - show:
      variant: flash-backward
      stage: skipped
      tensor: skipped
      options: {{causal: true}}
      caption: The tiles the loop skipped, by key tile (rows) and query tile (columns), {side} the diagonal.
"""


@pytest.mark.parametrize(
    ("text", "wrong", "right"), [(MASKED, "below", "above"), (SKIPPED, "above", "below")]
)
def test_lesson_check_warns_where_a_sentence_names_the_other_side(
    tmp_path: Path, text: str, wrong: str, right: str
) -> None:
    path = tmp_path / "lesson.yaml"
    path.write_text(text.format(side=wrong), encoding="utf-8")
    result = forked.run_attn("lesson", "check", str(path))
    assert result.returncode == 0, result.stdout + result.stderr  # a warning
    lines = [line.replace(f"{path}:", "") for line in result.stdout.splitlines()]
    caption = text.format(side=wrong).splitlines()
    row = next(n for n, line in enumerate(caption) if "caption:" in line)
    column = caption[row].index(f"{wrong} the diagonal") + 1
    said = [line for line in lines if f"'{wrong} the diagonal'" in line]
    assert len(said) == 1 and said[0].startswith(f"{row + 1}:{column}: warning:"), lines
    assert f"lie {right} its diagonal" in said[0]

    path.write_text(text.format(side=right), encoding="utf-8")
    result = forked.run_attn("lesson", "check", str(path))
    assert result.returncode == 0 and "diagonal" not in result.stdout, result.stdout


def test_the_side_of_a_mask_a_table_of_zeros_and_a_table_on_both_sides() -> None:
    n = 5
    later = torch.ones(n, n, dtype=torch.bool).triu(1)  # key after query
    scores = torch.arange(n * n, dtype=torch.float32).reshape(n, n) + 1
    assert marked_side(scores.masked_fill(later, float("-inf"))) == "above"
    assert marked_side(scores.masked_fill(later.T, torch.finfo(torch.float32).min)) == "below"
    assert marked_side(later.float()) == "above"  # a mask's 1s
    assert marked_side(scores.masked_fill(later.T, 0.0)) == "below"  # weights of 0
    both = later | later.T
    assert marked_side(scores.masked_fill(both, float("-inf"))) is None
    assert marked_side(scores) is None and marked_side(scores[:, :3]) is None


SHAPED = """title: T
summary: S
steps:
  - show:
      variant: trainable
      stage: keys
      caption: One key per token ({shape}), from a 3 × 2 projection; 3 × 2 = 6 numbers.
"""


def test_lesson_check_warns_at_a_shape_the_table_shown_does_not_have(tmp_path: Path) -> None:
    """The built-in inputs have 6 tokens and trainable's keys 2 columns: 6 × 2 (numpy's
    shape of X @ W_key, X from the course notes)."""
    import numpy as np

    from tests.data import seeds

    assert (np.array(seeds.SEED_003_INPUTS) @ np.zeros((3, 2))).shape == (6, 2)
    path = tmp_path / "lesson.yaml"
    path.write_text(SHAPED.format(shape="2 × 6"), encoding="utf-8")
    result = forked.run_attn("lesson", "check", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line.replace(f"{path}:", "") for line in result.stdout.splitlines()]
    column = SHAPED.splitlines()[6].index("{shape}") + 1
    assert lines[0] == (
        f"7:{column}: warning: the caption says '2 × 6' but the table shown is 6 × 2: say the "
        "shape it has"
    ), lines
    assert (
        len([line for line in lines if "warning" in line]) == 1
    )  # the projection, the sum: not shapes
    path.write_text(SHAPED.format(shape="6 × 2"), encoding="utf-8")
    result = forked.run_attn("lesson", "check", str(path))
    assert "warning" not in result.stdout, result.stdout
