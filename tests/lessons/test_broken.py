"""A corpus of broken lessons, each with the exact problems `attn lesson check` must print.

Every line is ``path:line:column: message``; the whole list must match, so a
problem that goes missing, moves, or appears twice fails the test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

H = "title: T\nsummary: S\nsteps:\n"

# (name, lesson text, expected "line:column: message" lines, in order)
CORPUS: list[tuple[str, str, list[str]]] = [
    (
        "empty_file",
        "",
        ["1:1: lesson is empty; it needs a title, a summary and steps"],
    ),
    (
        "only_comment",
        "# nothing here\n",
        ["1:1: lesson is empty; it needs a title, a summary and steps"],
    ),
    (
        "root_list",
        "- a\n- b\n",
        ["1:1: a lesson must be a mapping with title, summary and steps, not a list"],
    ),
    (
        "root_scalar",
        "just text\n",
        ["1:1: a lesson must be a mapping with title, summary and steps, not text ('just text')"],
    ),
    (
        "missing_everything",
        "inputs: your-journey\n",
        [
            "1:1: the lesson has no 'steps'",
            "1:1: the lesson has no 'summary'",
            "1:1: the lesson has no 'title'",
        ],
    ),
    (
        "unknown_top_key",
        "title: T\nsumary: S\nsteps:\n  - narration: hi\n",
        [
            "2:1: unknown key 'sumary' in the lesson (did you mean 'summary'?); expected title, summary, plugins, inputs, options, defaults, values, steps"
        ],
    ),
    (
        "duplicate_key",
        "title: T\ntitle: U\nsummary: S\nsteps:\n  - narration: hi\n",
        ["2:1: duplicate key 'title' (first defined at line 1, column 1)"],
    ),
    (
        "anchor_alias",
        "title: &t T\nsummary: *t\nsteps:\n  - narration: hi\n",
        [
            "1:8: anchors (&t) are not allowed; repeat the value, or put text that starts with '&' in quotes (1 more anchor or alias in this file)"
        ],
    ),
    (
        "python_tag",
        "title: !!python/object:os.system x\nsummary: S\nsteps:\n  - narration: hi\n",
        [
            "1:8: YAML tag !!python/object:os.system is not allowed: these files never build Python objects"
        ],
    ),
    (
        "custom_tag",
        "title: !shout T\nsummary: S\nsteps:\n  - narration: hi\n",
        [
            "1:8: YAML tag !shout is not allowed; write plain values, and put text that starts with '!' in quotes"
        ],
    ),
    (
        "tab_indent",
        H + "\t- narration: hi\n",
        ["4:1: malformed YAML: a tab character; indent with spaces, not tabs"],
    ),
    (
        "unclosed_flow",
        "title: T\nsummary: S\nsteps: [\n",
        [
            "3:8: malformed YAML: the '[' opened here is never closed; end the list with ']' on this line"
        ],
    ),
    (
        "colon_in_caption",
        H
        + "  - show:\n      variant: naive-loop\n      stage: scores\n      caption: Note: this breaks\n",
        [
            "7:20: malformed YAML: a colon and a space inside unquoted text read as a new key; put the text in quotes, or write it as a block after '>-'"
        ],
    ),
    (
        "title_list",
        "title: [a, b]\nsummary: S\nsteps:\n  - narration: hi\n",
        ["1:8: title must be text, not a list"],
    ),
    (
        "empty_title",
        "title: ''\nsummary: S\nsteps:\n  - narration: hi\n",
        ["1:8: title is empty"],
    ),
    (
        "steps_mapping",
        H + "  narration: hi\n",
        ["4:3: steps must be a list, not a mapping"],
    ),
    (
        "steps_empty",
        "title: T\nsummary: S\nsteps: []\n",
        ["3:8: steps is empty; a lesson needs at least one step"],
    ),
    (
        "step_scalar",
        H + "  - narration\n",
        [
            "4:5: step 1 must be a mapping with one of narration, show, loop, compare, quiz, checkpoint, not text ('narration')"
        ],
    ),
    (
        "step_unknown_kind",
        H + "  - narate: hi\n",
        [
            "4:5: unknown step kind 'narate' (did you mean 'narration'?); a step is one of narration, show, loop, compare, quiz, checkpoint"
        ],
    ),
    (
        "step_two_kinds",
        H + "  - narration: hi\n    quiz: {question: q, answer: 1}\n",
        ["5:5: step 1 has two kinds, 'narration' and 'quiz'; start a new step with '- quiz:'"],
    ),
    (
        "step_key_outdented",
        H + "  - show:\n      variant: naive-loop\n      stage: scores\n    caption: c\n",
        ["7:5: 'caption' belongs inside 'show': indent it under 'show:'"],
    ),
    (
        "narration_not_text",
        H + "  - narration: [a]\n",
        ["4:16: narration must be text, not a list; text starting with '[' must be in quotes"],
    ),
    (
        "show_not_mapping",
        H + "  - show: scores\n",
        ["4:11: 'show' must be a mapping, not text ('scores')"],
    ),
    (
        "show_no_variant",
        H + "  - show: {stage: scores}\n",
        ["4:11: 'show' needs a 'variant' (or set one in 'defaults')"],
    ),
    (
        "show_unknown_variant",
        H + "  - show: {variant: naive_loop, stage: scores}\n",
        [
            "4:21: unknown variant 'naive_loop' (did you mean 'naive-loop'?); known variants: backward, cross-attention, flash-backward, grouped-query, induction, kv-cache, masked, mla, model, multihead, multihead-wrapper, naive-loop, online-softmax, paged-kv-cache, rope, sliding-window, trainable, training, vectorized"
        ],
    ),
    (
        "show_unknown_stage",
        H + "  - show: {variant: trainable, stage: weight}\n",
        [
            "4:39: variant 'trainable' has no stage 'weight' (did you mean 'weights'?); its stages: inputs, projections, queries, keys, values, scores, scaled, weights, context"
        ],
    ),
    (
        "show_unknown_key",
        H + "  - show: {variant: trainable, stage: weights, captoin: c}\n",
        [
            "4:48: unknown key 'captoin' in 'show' (did you mean 'caption'?); expected variant, stage, tensor, query, inputs, options, then, focus, caption"
        ],
    ),
    (
        "show_unknown_tensor",
        H + "  - show: {variant: naive-loop, stage: weights, tensor: softmax}\n",
        [
            "4:57: stage 'weights' of 'naive-loop' has no tensor 'softmax'; its tensors: weights, sum_normalized"
        ],
    ),
    (
        "focus_bad_token",
        H + "  - show: {variant: naive-loop, stage: scores, focus: {row: jorney}}\n",
        [
            "4:61: focus row 'jorney' is not one of the tokens (did you mean 'journey'?); tokens: Your journey starts with one step"
        ],
    ),
    (
        "focus_out_of_range",
        H + "  - show: {variant: naive-loop, stage: scores, focus: {column: 6}}\n",
        ["4:64: focus column 6 is out of range: valid indices are 0 to 5"],
    ),
    (
        "focus_two_keys",
        H + "  - show: {variant: naive-loop, stage: scores, focus: {row: 1, column: 2}}\n",
        ["4:55: focus takes exactly one of token, row, column or cell"],
    ),
    (
        "focus_cell_one_value",
        H + "  - show: {variant: naive-loop, stage: scores, focus: {cell: [1]}}\n",
        ["4:62: cell must be [row, column] (tokens or 0-based indices), not one value"],
    ),
    (
        "focus_on_scalar_row",
        H + "  - show: {variant: naive-loop, stage: scores, query: 1, focus: {row: 2}}\n",
        ["4:11: 'scores' has one row (one query); focus on a column or a token instead"],
    ),
    (
        "query_out_of_range",
        H + "  - show: {variant: naive-loop, stage: scores, query: 9}\n",
        ["4:55: query 9 is out of range: valid indices are 0 to 5"],
    ),
    (
        "unknown_operation",
        H + "  - show: {variant: naive-loop, stage: scores, then: [softmx]}\n",
        [
            "4:55: unknown operation 'softmx' (did you mean 'softmax'?); operations: softmax, normalize, sum, scale, diagonal, transpose, exp, pick, max, min, mean, std, argmax, count, size, abs, add, subtract, multiply, divide, compare"
        ],
    ),
    (
        "operation_no_value",
        H + "  - show: {variant: naive-loop, stage: scores, then: [softmax]}\n",
        [
            "4:55: 'softmax' needs a value: softmax over dimension N (0 = down the columns, -1 = along each row)"
        ],
    ),
    (
        "operation_bad_dim",
        H + "  - show: {variant: naive-loop, stage: scores, then: [{softmax: 2}]}\n",
        [
            # At the operation itself, not at the step.
            "4:56: 'softmax' over dimension 2: a tensor of shape 6×6 has dimensions 0, 1 (or -1 for the last)"
        ],
    ),
    (
        "diagonal_of_vector",
        H + "  - show: {variant: naive-loop, stage: scores, query: 1, then: [diagonal]}\n",
        ["4:65: 'diagonal' needs a square table, not a tensor of shape 6"],
    ),
    (
        "flag_with_value",
        H + "  - show: {variant: naive-loop, stage: scores, then: [{diagonal: 0}]}\n",
        ["4:66: 'diagonal' takes no value; write '- diagonal'"],
    ),
    (
        "options_unknown_key",
        "title: T\nsummary: S\noptions: {sead: 1}\nsteps:\n  - narration: hi\n",
        [
            "3:11: unknown key 'sead' in options (did you mean 'seed'?); expected seed, init, d_out, dropout, heads, or an option a variant declares (absorb, attention_factor, base, beta_fast, beta_slow, block, causal, factor, head, high_freq_factor, kv_heads, latent_norm, layer, low_freq_factor, lr, model, mscale, mscale_all_dim, original_max_position_embeddings, out_bias, pairing, q_lora_rank, ramp, rank, rope_dim, rope_scaling, scaling, steps, tile, truncate, upstream, v_head_dim, window)"
        ],
    ),
    (
        "options_bad_values",
        "title: T\nsummary: S\noptions: {seed: 1.5, init: rnd, d_out: 0, dropout: 1}\nsteps:\n  - narration: hi\n",
        [
            "3:17: seed must be a whole number, not a number (1.5)",
            "3:28: unknown init 'rnd' (did you mean 'rand'?); choose one of rand, randn, linear",
            "3:40: d_out must be at least 1, got 0",
            "3:52: dropout must be at least 0 and below 1, got 1",
        ],
    ),
    (
        "options_heads_zero",
        "title: T\nsummary: S\noptions: {heads: 0}\nsteps:\n  - narration: hi\n",
        ["3:18: heads must be at least 1, got 0"],
    ),
    (
        "options_heads_not_whole",
        H + "  - show: {variant: multihead, stage: split, options: {heads: 1.5}}\n",
        ["4:63: heads must be a whole number, not a number (1.5)"],
    ),
    (
        "options_heads_text",
        H
        + "  - quiz: {question: q, answer: {variant: multihead, stage: split, options: {heads: two}, cell: [0, 0, 0]}}\n",
        ["4:85: heads must be a whole number, not text ('two')"],
    ),
    (
        "options_heads_do_not_divide_d_out",
        H + "  - show: {variant: multihead, stage: split, options: {heads: 3}}\n",
        [
            "4:63: d_out 2 is not divisible by heads 3: multihead splits d_out into 3 equal heads (try d_out: 3)"
        ],
    ),
    (
        "options_not_mapping",
        "title: T\nsummary: S\noptions: [1]\nsteps:\n  - narration: hi\n",
        ["3:10: options must be a mapping, not a list"],
    ),
    (
        "inputs_unknown_set",
        "title: T\nsummary: S\ninputs: your-jorney\nsteps:\n  - narration: hi\n",
        [
            "3:9: unknown input set 'your-jorney' (did you mean 'your-journey'?); built-in sets: four-words, ton-voyage, your-journey; the variants' own: letters-text, repeated-letters, or give a .yaml/.json file; the steps are not checked until the inputs can be read"
        ],
    ),
    (
        "inputs_missing_file",
        "title: T\nsummary: S\ninputs: nowhere.yaml\nsteps:\n  - narration: hi\n",
        [
            "3:9: inputs file not found: {dir}/nowhere.yaml; the steps are not checked until the inputs can be read"
        ],
    ),
    (
        "inputs_inline_bad",
        "title: T\nsummary: S\ninputs:\n  tokens: [a, b]\n  embeddings: [[1, 2]]\nsteps:\n  - narration: hi\n",
        [
            "5:15: 2 tokens but 1 embedding rows; give one row per token; the steps are not checked until the inputs can be read"
        ],
    ),
    (
        "inputs_dout_clash",
        "title: T\nsummary: S\ninputs: four-words\noptions: {d_out: 2}\nsteps:\n  - narration: hi\n",
        ["4:10: d_out 2 disagrees with the weights of the inputs, which have d_out = 3"],
    ),
    (
        "loop_not_a_loop",
        H + "  - loop: {variant: naive-loop, stage: weights}\n",
        [
            "4:40: stage 'weights' of 'naive-loop' is not built by a loop; its loops: scores, context"
        ],
    ),
    (
        "loop_no_loops",
        H + "  - loop: {variant: vectorized, stage: scores}\n",
        [
            "4:40: variant 'vectorized' has no loops to step through; variants with loops: backward, cross-attention, flash-backward, induction, kv-cache, naive-loop, online-softmax, paged-kv-cache, rope, sliding-window, training"
        ],
    ),
    (
        "loop_bad_limit",
        H + "  - loop: {variant: naive-loop, stage: scores, limit: 0}\n",
        ["4:55: limit must be at least 1, got 0"],
    ),
    (
        "compare_missing_side",
        H + "  - compare: {variant: naive-loop, stage: scores, left: {}}\n",
        ["4:14: 'compare' needs 'right'"],
    ),
    (
        "compare_side_not_mapping",
        H + "  - compare: {variant: naive-loop, stage: scores, left: a, right: {}}\n",
        ["4:57: 'left' must be a mapping, not text ('a')"],
    ),
    (
        "compare_side_no_stage",
        H
        + "  - compare:\n      left: {variant: naive-loop}\n      right: {variant: vectorized, stage: scores}\n",
        ["5:13: 'left' needs a 'stage'"],
    ),
    (
        "compare_bad_tensor",
        H
        + "  - compare:\n      stage: weights\n      left: {variant: naive-loop, tensor: sum}\n      right: {variant: vectorized}\n",
        [
            "6:43: stage 'weights' of 'naive-loop' has no tensor 'sum'; its tensors: weights, sum_normalized"
        ],
    ),
    (
        "quiz_no_answer",
        H + "  - quiz: {question: q}\n",
        ["4:11: 'quiz' needs 'answer'"],
    ),
    (
        "quiz_text_answer",
        H + "  - quiz: {question: q, answer: five}\n",
        [
            "4:33: answer must be a number, or a mapping naming a computed value (variant, stage, cell), not text ('five'); for a choice, add 'choices'"
        ],
    ),
    (
        "quiz_choice_not_listed",
        H + "  - quiz: {question: q, choices: [a, b], answer: c}\n",
        ["4:50: answer 'c' is not one of the choices; choices: 'a', 'b'"],
    ),
    (
        "quiz_one_choice",
        H + "  - quiz: {question: q, choices: [a], answer: a}\n",
        ["4:34: choices needs at least two options; it has 1"],
    ),
    (
        "quiz_duplicate_choice",
        H + "  - quiz: {question: q, choices: [a, a], answer: a}\n",
        ["4:38: choice 'a' appears twice"],
    ),
    (
        "quiz_negative_tolerance",
        H + "  - quiz: {question: q, answer: 1, tolerance: -1}\n",
        ["4:47: tolerance must not be negative, got -1"],
    ),
    (
        "quiz_tolerance_with_choices",
        H + "  - quiz: {question: q, choices: [a, b], answer: a, tolerance: 1}\n",
        ["4:53: tolerance is for number quizzes; a quiz with choices or cells has none"],
    ),
    (
        "quiz_nan_answer",
        H + "  - quiz: {question: q, answer: .nan}\n",
        ["4:33: answer must be a finite number, got .nan"],
    ),
    (
        "quiz_ref_no_cell",
        H + "  - quiz: {question: q, answer: {variant: naive-loop, stage: scores}}\n",
        ["4:33: 'scores' is 6×6; add a 'cell' to pick one value"],
    ),
    (
        "quiz_ref_cell_range",
        H + "  - quiz: {question: q, answer: {variant: naive-loop, stage: scores, cell: [1, 7]}}\n",
        ["4:80: cell index 7 is out of range for axis 1 of 'scores', which has 6 entries (0 to 5)"],
    ),
    (
        "quiz_ref_cell_dims",
        H
        + "  - quiz: {question: q, answer: {variant: naive-loop, stage: scores, query: 1, cell: [1, 2]}}\n",
        ["4:87: cell has 2 indices but 'scores' has 1 dimension (6)"],
    ),
    (
        "quiz_duplicate_id",
        H
        + "  - quiz: {id: a, question: q, answer: 1}\n  - quiz: {id: a, question: r, answer: 2}\n",
        ["5:16: quiz id 'a' is already used by the quiz at line 4"],
    ),
    (
        "checkpoint_no_points",
        H + "  - checkpoint: {title: Done}\n",
        ["4:17: 'checkpoint' needs 'points', a list of what the learner should now know"],
    ),
    (
        "checkpoint_empty_list",
        H + "  - checkpoint: []\n",
        ["4:17: checkpoint has no points"],
    ),
    (
        "bad_timestamp_seed",
        "title: T\nsummary: S\noptions: {seed: 2001-13-45}\nsteps:\n  - narration: hi\n",
        ["3:17: seed must be a whole number, not text ('2001-13-45')"],
    ),
    (
        "key_is_list",
        "title: T\nsummary: S\n[a]: 1\nsteps:\n  - narration: hi\n",
        ["3:1: keys in the lesson must be plain words, not a list"],
    ),
]


def test_the_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40
    assert len({name for name, _, _ in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize(("name", "text", "expected"), CORPUS, ids=[c[0] for c in CORPUS])
def test_check_prints_every_problem_at_its_position(
    name: str,
    text: str,
    expected: list[str],
    tmp_path: Path,
    attn: Callable[..., tuple[int, str, str]],
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    status, out, err = attn("lesson", "check", str(path))
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        f"{path}:{line}".replace("{dir}", str(tmp_path)) for line in expected
    ]


@pytest.mark.parametrize(("name", "text", "expected"), CORPUS[:12], ids=[c[0] for c in CORPUS[:12]])
def test_run_refuses_a_broken_lesson_with_the_same_problems(
    name: str,
    text: str,
    expected: list[str],
    tmp_path: Path,
    attn: Callable[..., tuple[int, str, str]],
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    status, out, err = attn("lesson", "run", str(path), "--plain")
    assert (status, out) == (1, "")
    assert err.splitlines() == [
        f"{path}:{line}".replace("{dir}", str(tmp_path)) for line in expected
    ]
