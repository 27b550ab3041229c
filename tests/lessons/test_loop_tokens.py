"""A loop's position names its tokens: the target's for a query, the source's for a
cross-attention key, and none for an index that is not a token (a feature, a pair)."""

from __future__ import annotations

from pathlib import Path

import torch

from tests import forked
from tracer.render.labels import loop_matrix_axes, position_tokens
from tracer.tui.lesson_drawing import loop_position
from tracer.variant import SubStep, Tokens

TARGET = Tokens(["Le", "chat", "dort"], source=["The", "cat", "is", "sleeping"])


def test_a_cross_attention_key_is_the_sources_token() -> None:
    assert position_tokens((2, 1), ("query", "key"), TARGET) == ("dort", "cat")
    assert position_tokens((0, 3), ("query", "source"), TARGET) == ("Le", "sleeping")


def test_an_index_that_is_not_a_token_is_not_named() -> None:
    plain = Tokens(["Your", "journey", "starts"])
    assert position_tokens((1, 2), ("query", "feature"), plain) == ("journey", "")
    assert position_tokens((1, 2), None, plain) == ("", "")  # unknown axes: index only
    assert position_tokens((1,), ("query", "key"), plain) == ("",)
    assert loop_matrix_axes(("key",)) == ("query", "key")  # one query's row of the table


def test_the_apps_legend_names_the_sources_token_for_a_key() -> None:
    sub = SubStep(stage="scores", position=(2, 1), tensors={})
    text = loop_position(sub, 6, 12, TARGET, ("query", "key")).plain
    assert "dort = x[2] here" in text
    assert "cat = source[1]" in text
    assert "chat" not in text  # the target's token 1 is no key here


LESSON = """title: t
summary: s
inputs:
  tokens: [Le, chat, dort]
  embeddings: [[0.2, 0.9, 0.1], [0.7, 0.3, 0.5], [0.4, 0.6, 0.8]]
  source:
    tokens: [The, cat, is, sleeping]
    embeddings: [[0.1, 0.2, 0.3, 0.4], [0.8, 0.1, 0.6, 0.2], [0.3, 0.9, 0.2, 0.7], [0.5, 0.4, 0.9, 0.1]]
options: {seed: 123, init: rand, d_out: 2}
steps:
  - loop: {variant: cross-attention, stage: scores, limit: 2}
"""


def test_plain_text_says_the_tokens_of_each_sub_step(tmp_path: Path) -> None:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text(LESSON, encoding="utf-8")
    result = forked.run_attn("lesson", "run", str(lesson), "--plain")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("sub-step")]
    assert lines[0].startswith("sub-step 1 at (0, 0; query Le, key The of the source):")
    assert lines[1].startswith("sub-step 2 at (0, 1; query Le, key cat of the source):")


def test_a_position_of_one_index_in_a_matrix_loop_names_nothing_and_draws() -> None:
    """A loop of one index per sub-step (a row per query) filling a (query, key) matrix."""
    sub = SubStep(stage="weights", position=(1,), tensors={})
    text = loop_position(sub, 2, 3, TARGET, ("query", "key")).plain
    assert "position (1), counted from 0" in text
    assert "chat" not in text


def _tile(key_tile: int, query_tile: int, size: int) -> SubStep:
    """A flash-backward tile: its tensors' token axes start where the tile starts."""
    q_axis, k_axis = f"query:{query_tile * size}", f"key:{key_tile * size}"
    return SubStep(
        stage="tiles",
        position=(key_tile, query_tile),
        tensors={"S_ij": torch.zeros(size, size), "dQ_i": torch.zeros(size, 3)},
        axes={"S_ij": (q_axis, k_axis), "dQ_i": (q_axis, "feature")},
    )


def test_a_tile_index_is_not_named_as_a_token() -> None:
    plain = Tokens(["Your", "journey", "starts", "with", "one", "step"])
    # The stage the tile loop builds is dQ, (query, feature): index 0 is a key tile there.
    assert position_tokens((1, 0), ("query", "feature"), plain, _tile(1, 0, 2)) == ("", "")
    assert position_tokens((2, 0), ("query", "feature"), plain, _tile(2, 0, 2)) == ("", "")
    text = loop_position(_tile(1, 0, 2), 4, 9, plain, ("query", "feature")).plain
    assert "journey" not in text and "starts" not in text
    # A window of one token, the one the index names, is that token.
    assert position_tokens((1, 1), ("query", "feature"), plain, _tile(1, 1, 1)) == ("journey", "")
    # A loop over tokens, whose tensors name no window, still names them.
    row = SubStep(stage="scores", position=(1, 2), tensors={}, axes={"x_i": ("feature",)})
    assert position_tokens((1, 2), ("query", "key"), plain, row) == ("journey", "starts")


def test_plain_text_names_no_token_for_flash_backwards_tiles(tmp_path: Path) -> None:
    lesson = tmp_path / "lesson.yaml"
    lesson.write_text(
        "title: t\nsummary: s\ninputs: your-journey\noptions: {seed: 123, init: rand}\n"
        "steps:\n  - loop: {variant: flash-backward, stage: tiles}\n",
        encoding="utf-8",
    )
    result = forked.run_attn("lesson", "run", str(lesson), "--plain")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("sub-step")]
    assert len(lines) == 9  # 3 key tiles × 3 query tiles of 2 tokens
    assert lines[3].startswith("sub-step 4 at (1, 0): tile keys 2..3 × queries 0..1")
    assert not any(";" in line.partition(":")[0] for line in lines)  # no "(1, 0; query ...)"
