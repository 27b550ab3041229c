"""Writing lessons as a teacher: variant options, live values in prose, operations, defaults.

Numbers are checked against torch computed directly from the built-in inputs (the
"your-journey" embeddings copied into tests/data/seeds.py from the course notebooks), never
against the lesson runner's own output.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests.data import seeds
from tracer.lessons.check import check_lesson
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import LessonError, parse_lesson
from tracer.lessons.model import Lesson
from tracer.plugin_host import PluginHost
from tracer.render.text import format_number
from tracer.text.plain_lesson import plain_lines

Attn = Callable[..., tuple[int, str, str]]
TOKENS = ("Your", "journey", "starts", "with", "one", "step")
H = "title: T\nsummary: S\n"

WINDOWED = """
import torch
from tracer import Option, Variant, hookimpl, stage


def run(ctx):
    window = ctx.options["window"]
    yield stage("window", "The window", axes=(), window=torch.tensor(float(window)))
    scores = ctx.inputs @ ctx.inputs.T
    yield stage("scores", "Scores", axes=("query", "key"), scores=scores)
    return scores


@hookimpl
def register_variants(register):
    register(Variant(
        name="windowed", title="Windowed", run=run, stages=("window", "scores"),
        uses_weights=False,
        options=(Option("window", int, 2, "keys each query sees", min=1, max=10),),
    ))
"""


def scores() -> torch.Tensor:
    x = torch.tensor(seeds.SEED_003_INPUTS)
    return x @ x.T


@pytest.fixture(scope="module")
def windowed_host(tmp_path_factory: pytest.TempPathFactory) -> PluginHost:
    folder = tmp_path_factory.mktemp("plugins")
    (folder / "windowed.py").write_text(WINDOWED, encoding="utf-8")
    host = PluginHost([folder], use_env=False)
    assert "windowed" in host.variants, host.failures
    return host


def load(text: str, host: PluginHost) -> Lesson:
    return parse_lesson(text, "l.yaml", host)


def problems(text: str, host: PluginHost) -> list[str]:
    """Every problem, as 'check' reports them: loading, then running what could be read."""
    try:
        lesson = load(text, host)
    except LessonError as error:
        found = list(error.problems)
        if error.partial is not None:
            found += check_lesson(error.partial, host)
        return [f"{p.line}:{p.column}: {p.message}" for p in sorted(set(found))]
    return [f"{p.line}:{p.column}: {p.message}" for p in check_lesson(lesson, host)]


def plain(lesson: Lesson, host: PluginHost) -> str:
    return "\n".join(plain_lines(lesson, host))


# Variant options -----------------------------------------------------------------------------


def test_a_step_passes_a_declared_option_to_the_run(windowed_host: PluginHost) -> None:
    lesson = load(
        H + "steps:\n"
        "  - quiz:\n"
        "      question: q\n"
        "      answer: {variant: windowed, stage: window, options: {window: 3}}\n",
        windowed_host,
    )
    assert LessonRunner(lesson, windowed_host).answer(lesson.quizzes[0]) == 3.0


def test_lesson_wide_options_reach_only_the_variants_that_declare_them(
    windowed_host: PluginHost,
) -> None:
    lesson = load(
        H + "options: {window: 4}\nsteps:\n"
        "  - quiz: {question: q, answer: {variant: windowed, stage: window}}\n"
        "  - quiz: {question: r, answer: {variant: naive-loop, stage: scores, cell: [0, 1]}}\n",
        windowed_host,
    )
    runner = LessonRunner(lesson, windowed_host)
    assert runner.answer(lesson.quizzes[0]) == 4.0
    assert runner.answer(lesson.quizzes[1]) == pytest.approx(float(scores()[0, 1]))
    assert check_lesson(lesson, windowed_host) == []


def test_the_declared_default_applies_when_no_option_is_given(windowed_host: PluginHost) -> None:
    lesson = load(
        H + "steps:\n  - quiz: {question: q, answer: {variant: windowed, stage: window}}\n",
        windowed_host,
    )
    assert LessonRunner(lesson, windowed_host).answer(lesson.quizzes[0]) == 2.0


@pytest.mark.lists_variants
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            "{windw: 3}",
            "6:60: unknown key 'windw' in options (did you mean 'window'?); expected seed, init, "
            "d_out, dropout, heads, or an option a variant declares (absorb, attention_factor, base, beta_fast, beta_slow, block, causal, factor, head, high_freq_factor, kv_heads, latent_norm, layer, low_freq_factor, lr, model, mscale, mscale_all_dim, original_max_position_embeddings, out_bias, pairing, q_lora_rank, ramp, rank, rope_dim, rope_scaling, scaling, steps, tile, truncate, upstream, v_head_dim, window)",
        ),
        ("{window: 0}", "6:68: option 'window' must be at least 1, got 0"),
        ("{window: 11}", "6:68: option 'window' must be at most 10, got 11"),
        ("{window: wide}", "6:68: option 'window' must be a whole number, got 'wide'"),
    ],
)
def test_a_bad_option_is_reported_at_its_value(
    options: str, expected: str, windowed_host: PluginHost
) -> None:
    text = (
        H + "steps:\n  - quiz:\n      question: q\n"
        f"      answer: {{variant: windowed, stage: window, options: {options}}}\n"
    )
    assert problems(text, windowed_host) == [expected]


def test_an_option_of_another_variant_is_refused_on_a_step(windowed_host: PluginHost) -> None:
    text = H + "steps:\n  - show: {variant: trainable, stage: scores, options: {window: 3}}\n"
    assert problems(text, windowed_host) == [
        "4:65: variant 'trainable' has no option 'window'; it takes no options"
    ]


def test_a_lesson_wide_option_no_variant_uses_is_reported(windowed_host: PluginHost) -> None:
    text = H + "options: {window: 3}\nsteps:\n  - show: {variant: trainable, stage: scores}\n"
    assert problems(text, windowed_host) == [
        "3:19: no variant in this lesson has an option 'window'; the lesson uses trainable, "
        "whose options are none"
    ]


@pytest.mark.lists_variants
def test_an_option_no_installed_variant_declares_gets_did_you_mean(
    windowed_host: PluginHost,
) -> None:
    text = H + "options: {windo: 3}\nsteps:\n  - narration: n\n"
    assert problems(text, windowed_host) == [
        "3:11: unknown key 'windo' in options (did you mean 'window'?); expected seed, init, "
        "d_out, dropout, heads, or an option a variant declares (absorb, attention_factor, base, beta_fast, beta_slow, block, causal, factor, head, high_freq_factor, kv_heads, latent_norm, layer, low_freq_factor, lr, model, mscale, mscale_all_dim, original_max_position_embeddings, out_bias, pairing, q_lora_rank, ramp, rank, rope_dim, rope_scaling, scaling, steps, tile, truncate, upstream, v_head_dim, window)"
    ]


def test_heads_keeps_working_for_the_multi_head_variants(host: PluginHost) -> None:
    lesson = load(
        H + "options: {heads: 3}\nsteps:\n"
        "  - quiz: {question: q, answer: {variant: multihead-wrapper, stage: context, "
        "cell: [0, 5]}}\n",
        host,
    )
    assert check_lesson(lesson, host) == []  # 3 heads × d_out 2 = 6 columns: index 5 exists


# Live values in prose --------------------------------------------------------------------------

LIVE = (
    H + "values:\n"
    "  yj: {variant: naive-loop, stage: scores, cell: [Your, journey]}\n"
    "  best: {variant: naive-loop, stage: scores, then: [{pick: journey}, argmax]}\n"
    "steps:\n"
    "  - narration: 'Your · journey = {{yj}}, or {{yj:.2f}}; best for journey: {{best:token}}'\n"
    "  - show:\n"
    "      variant: naive-loop\n"
    "      stage: scores\n"
    "      caption: 'the score {{ yj }} is in row 0'\n"
    "  - quiz:\n"
    "      question: 'Twice {{yj}}?'\n"
    "      answer: {variant: naive-loop, stage: scores, then: [{scale: 2}], cell: [0, 1]}\n"
    "      hints: ['double {{yj}}']\n"
    "      explanation: '2 × {{yj}} = {{answer}}'\n"
)


def test_prose_shows_live_values_formatted(host: PluginHost) -> None:
    lesson = load(LIVE, host)
    expected = float(scores()[0, 1])
    text = plain(lesson, host)
    best = TOKENS[int(scores()[1].argmax())]
    assert (
        f"Your · journey = {format_number(expected)}, or {expected:.2f}; best for journey: {best}"
        in text
    )
    assert f"the score {format_number(expected)} is in row 0" in text
    assert f"Quiz: Twice {format_number(expected)}?" in text
    assert f"Hint 1: double {format_number(expected)}" in text
    assert f"Why: 2 × {format_number(expected)} = {format_number(2 * expected)}" in text
    assert check_lesson(lesson, host) == []


def test_the_runner_fills_prose_for_every_viewer(host: PluginHost) -> None:
    lesson = load(LIVE, host)
    runner = LessonRunner(lesson, host)
    assert runner.text("{{yj:.3f}} and {{best:token}}") == (
        f"{float(scores()[0, 1]):.3f} and {TOKENS[int(scores()[1].argmax())]}"
    )
    assert runner.text("<mask> a*b*c **bold** `code`") == "<mask> a*b*c **bold** `code`"


def test_values_follow_the_options(host: PluginHost) -> None:
    """The same prose under another random seed shows the other run's number."""
    text = (
        H + "options: {seed: SEED}\nvalues:\n"
        "  w: {variant: trainable, stage: weights, cell: [journey, Your]}\n"
        "steps:\n  - narration: 'weight {{w}}'\n"
    )
    shown = {seed: plain(load(text.replace("SEED", str(seed)), host), host) for seed in (123, 7)}
    numbers = {seed: s.split("weight ")[1].split()[0] for seed, s in shown.items()}
    assert numbers[123] != numbers[7]


@pytest.mark.parametrize(
    ("prose", "expected"),
    [
        (
            "'{{socre}}'",
            "6:17: unknown value 'socre' in the narration (did you mean 'score'?); values: score",
        ),
        (
            "'{{score:.2q}}'",
            "6:17: '.2q' is not a number format; use one like .2f, .1% or .0f, "
            "or 'token' for an index shown as its token",
        ),
        ("'a {{answer}}'", "6:19: unknown value 'answer' in the narration; values: score"),
    ],
)
def test_bad_live_values_are_reported_where_they_are_written(
    prose: str, expected: str, host: PluginHost
) -> None:
    text = (
        H + "values:\n  score: {variant: naive-loop, stage: scores, cell: [0, 1]}\n"
        f"steps:\n  - narration: {prose}\n"
    )
    assert problems(text, host) == [expected]


def test_the_answer_may_not_appear_in_the_question(host: PluginHost) -> None:
    text = (
        H + "steps:\n  - quiz:\n      question: 'is it {{answer}}?'\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [0, 1]}\n"
    )
    assert problems(text, host) == [
        "5:24: {{answer}} in the question would give the answer away; use it in the explanation"
    ]


def test_a_value_that_cannot_be_computed_is_reported_at_the_index(host: PluginHost) -> None:
    text = (
        H + "values:\n  far: {variant: naive-loop, stage: scores, cell: [0, 9]}\n"
        "steps:\n  - narration: '{{far}}'\n"
    )
    assert problems(text, host) == [
        "4:55: cell index 9 is out of range for axis 1 of 'scores', which has 6 entries (0 to 5)"
    ]


def test_typed_numbers_are_reported_at_their_position(host: PluginHost) -> None:
    text = (
        H + "steps:\n"
        "  - narration: |\n"
        "      The score is 0.9544, about 0.95.\n"
        "  - quiz:\n"
        "      question: Your with journey?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [0, 1]}\n"
        "      explanation: It is 0.9544; with another seed 0.3764.\n"
    )
    assert problems(text, host) == [
        "5:20: 0.9544 is typed into the narration and goes stale; it is the answer of quiz '6' "
        "now: write {{answer}} in that quiz's explanation, so it follows the computation",
        "9:26: 0.9544 is typed into the explanation and goes stale; it is the answer of quiz '6' "
        "now: write {{answer}} in that quiz's explanation, so it follows the computation",
        "9:52: 0.3764 is typed into the explanation and goes stale; the lesson computes no such "
        "number; compute it under 'values:' and write {{name}}",
    ]


def test_numbers_in_quoted_code_and_short_numbers_are_not_typed_values(host: PluginHost) -> None:
    text = H + "steps:\n  - narration: 'prints `tensor(0.8651)`; 0.43 × 0.55; 14 tokens'\n"
    assert problems(text, host) == []


def test_an_unquoted_hash_cutting_a_caption_is_reported(host: PluginHost) -> None:
    text = (
        H
        + "steps:\n  - show:\n      variant: naive-loop\n      stage: scores\n"
        + ("      caption: Step #1 of the loop\n")
    )
    assert problems(text, host) == [
        "7:21: the caption is cut here: YAML reads ' #' and what follows as a comment; "
        "put the text in quotes to keep it"
    ]


# Operations ------------------------------------------------------------------------------------


def value_of(then: str, host: PluginHost, cell: str = "") -> float:
    lesson = load(
        H + "steps:\n  - quiz:\n      question: q\n"
        f"      answer: {{variant: naive-loop, stage: scores, then: {then}{cell}}}\n",
        host,
    )
    answer = LessonRunner(lesson, host).answer(lesson.quizzes[0])
    # A count or a position (count, argmax) is a whole number and stays an int, so it prints as
    # one ("3", not "3.0000"); every other operation ends in a float.
    counting = "count" in then or "argmax" in then
    assert type(answer) is (int if counting else float), (then, answer)
    return float(answer)


@pytest.mark.parametrize(
    ("then", "cell", "oracle"),
    [
        ("[max]", "", lambda s: s.max()),
        ("[min]", "", lambda s: s.min()),
        ("[mean]", "", lambda s: s.mean()),
        ("[std]", "", lambda s: s.std(correction=0)),
        ("[{max: -1}]", ", cell: [journey]", lambda s: s.amax(-1)[1]),
        ("[{mean: 0}]", ", cell: [2]", lambda s: s.mean(0)[2]),
        ("[{std: -1}]", ", cell: [3]", lambda s: s.std(-1, correction=0)[3]),
        ("[{pick: one}, argmax]", "", lambda s: s[4].argmax().float()),
        ("[{argmax: -1}]", ", cell: [step]", lambda s: s.argmax(-1)[5].float()),
        ("[{scale: -1}, abs, max]", "", lambda s: s.abs().max()),
        ("[{compare: '> 1'}, count]", "", lambda s: (s > 1).sum().float()),
        ("[{compare: '<= 0.5'}, {count: -1}]", ", cell: [Your]", lambda s: (s[0] <= 0.5).sum()),
        ("[{add: 1}, max]", "", lambda s: (s + 1).max()),
        (
            "[{subtract: {stage: scores, then: [transpose]}}, abs, max]",
            "",
            lambda s: s.new_zeros(()),
        ),
        ("[{multiply: {stage: scores}}]", ", cell: [1, 2]", lambda s: s[1, 2] ** 2),
        (
            "[{pick: journey}, {subtract: {stage: scores, then: [{pick: Your}]}}]",
            ", cell: [3]",
            lambda s: s[1, 3] - s[0, 3],
        ),
        ("[max, {subtract: {stage: scores, then: [min]}}]", "", lambda s: s.max() - s.min()),
    ],
)
def test_operations_match_torch(
    then: str, cell: str, oracle: Callable[[torch.Tensor], torch.Tensor], host: PluginHost
) -> None:
    assert value_of(then, host, cell) == pytest.approx(float(oracle(scores())), abs=1e-5)


@pytest.mark.parametrize(
    ("then", "expected"),
    [
        ("[argmax]", "4:55: 'argmax' of a tensor of shape 6×6 needs a dimension ('argmax: -1' "
         "for each row), or 'pick' one row first"),
        ("[{compare: '~ 1'}]", "4:65: 'compare' takes an operator and a number, like '> 0' or "
         "'== 0', not text ('~ 1'); operators: >= <= == != > <"),
        ("[{add: [1]}]", "4:61: 'add' takes a number or a mapping naming a tensor (stage, "
         "tensor...), not a list"),
        ("[{add: {stage: inputs}}]", "4:56: 'add' needs two tensors of the same shape, not 6×6 "
         "and 6×3"),
        ("[{max: x}]", "4:61: the dimension of 'max' must be a whole number, not text ('x')"),
        ("[{add: {stage: scors}}]", "4:69: variant 'naive-loop' has no stage 'scors' (did you "
         "mean 'scores'?); its stages: inputs, scores, weights, context"),
    ],
)  # fmt: skip
def test_bad_operations_are_reported_at_the_operation(
    then: str, expected: str, host: PluginHost
) -> None:
    text = H + f"steps:\n  - show: {{variant: naive-loop, stage: scores, then: {then}}}\n"
    assert problems(text, host) == [expected]


# Defaults --------------------------------------------------------------------------------------


def test_defaults_set_the_variant_and_query_once(host: PluginHost) -> None:
    lesson = load(
        H + "defaults: {variant: naive-loop, query: journey}\nsteps:\n"
        "  - show: {stage: scores}\n"
        "  - quiz: {question: q, answer: {stage: scores, cell: [step]}}\n"
        "  - defaults: {variant: vectorized, query: ~}\n"
        "  - quiz: {question: r, answer: {stage: scores, cell: [one, step]}}\n",
        host,
    )
    first, quiz, last = lesson.steps
    assert first.ref.variant == "naive-loop" and first.ref.query == 1  # type: ignore[union-attr]
    assert quiz.answer.variant == "naive-loop"  # type: ignore[union-attr]
    assert last.answer.variant == "vectorized" and last.answer.query is None  # type: ignore[union-attr]
    runner = LessonRunner(lesson, host)
    assert runner.answer(quiz) == pytest.approx(float(scores()[1, 5]), abs=1e-6)  # type: ignore[arg-type]
    assert runner.answer(last) == pytest.approx(float(scores()[4, 5]), abs=1e-6)  # type: ignore[arg-type]


def test_a_step_without_variant_or_defaults_says_where_to_set_one(host: PluginHost) -> None:
    assert problems(H + "steps:\n  - show: {stage: scores}\n", host) == [
        "4:11: 'show' needs a 'variant' (or set one in 'defaults')"
    ]


# All problems at once --------------------------------------------------------------------------


def test_a_broken_quiz_still_has_its_id_checked(host: PluginHost) -> None:
    text = (
        H + "steps:\n"
        "  - quiz: {id: a, question: q, answer: {variant: naive-loop, stage: scores, cell: [0, 1]}}\n"
        "  - quiz: {id: a, question: r}\n"
    )
    assert problems(text, host) == [
        "5:11: 'quiz' needs 'answer'",
        "5:16: quiz id 'a' is already used by the quiz at line 4",
    ]


@pytest.mark.lists_variants
def test_load_problems_do_not_hide_problems_that_need_a_run(host: PluginHost) -> None:
    text = (
        H + "steps:\n"
        "  - show: {variant: naive-lop, stage: scores}\n"
        "  - show: {variant: naive-loop, stage: scores, tensor: scorez}\n"
    )
    assert problems(text, host) == [
        "4:21: unknown variant 'naive-lop' (did you mean 'naive-loop'?); known variants: "
        "backward, cross-attention, flash-backward, grouped-query, induction, kv-cache, masked, mla, model, multihead, multihead-wrapper, naive-loop, "
        "online-softmax, paged-kv-cache, rope, sliding-window, trainable, training, vectorized",
        "5:56: stage 'scores' of 'naive-loop' has no tensor 'scorez' (did you mean 'scores'?); "
        "its tensors: scores",
    ]


@pytest.mark.lists_variants
def test_an_unknown_variant_may_be_a_plugin_not_installed(host: PluginHost) -> None:
    assert problems(H + "steps:\n  - show: {variant: banded, stage: scores}\n", host) == [
        "4:21: unknown variant 'banded'; if it comes from a plugin, that plugin is not "
        "installed (install it, or give its folder with --plugins-dir); known variants: "
        "backward, cross-attention, flash-backward, grouped-query, induction, kv-cache, masked, mla, model, multihead, multihead-wrapper, naive-loop, "
        "online-softmax, paged-kv-cache, rope, sliding-window, trainable, training, vectorized"
    ]


# YAML ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '  - narration: "never closed\n  - narration: b\n',
            '4:16: malformed YAML: the quote (") opened here is never closed; end the text with "',
        ),
        (
            "  - narration: @home\n",
            "4:16: malformed YAML: text that starts with @ must be in quotes",
        ),
        (
            "  - narration: `code` first\n",
            "4:16: malformed YAML: text that starts with ` must be in quotes",
        ),
        (
            "  - narration: *very* important\n",
            "4:16: malformed YAML: text that starts with '*' must be in quotes (YAML reads * "
            "as an alias)",
        ),
        (
            "  - narration: [1] is the first\n",
            "4:20: malformed YAML: text goes on after a [...] or {...} value; text that starts "
            "with [ or { must be in quotes",
        ),
        (
            "  - narration: hi\n   - show: {variant: masked, stage: scores}\n",
            "5:4: malformed YAML: this line is indented more than the list above it (from line "
            "4, at column 3); indent it to column 3",
        ),
        (
            "  - narration: [1, 2]\n",
            "4:16: narration must be text, not a list; text starting with '[' must be in quotes",
        ),
    ],
)
def test_yaml_problems_start_where_the_mistake_is(
    line: str, expected: str, tmp_path: Path, attn: Attn
) -> None:
    path = tmp_path / "l.yaml"
    path.write_text(H + "steps:\n" + line, encoding="utf-8")
    status, out, err = attn("lesson", "check", str(path))
    assert (status, err) == (1, "")
    assert out.splitlines() == [f"{path}:{expected}"]


# check DIR and --watch -------------------------------------------------------------------------


def test_check_takes_a_folder(tmp_path: Path, attn: Attn) -> None:
    (tmp_path / "a.yaml").write_text(H + "steps:\n  - narration: n\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text(H + "steps:\n  - narraton: n\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a lesson", encoding="utf-8")
    status, out, err = attn("lesson", "check", str(tmp_path))
    assert (status, err) == (1, "")
    assert out.splitlines() == [
        f"{tmp_path / 'a.yaml'}: ok (1 step)",
        f"{tmp_path / 'b.yaml'}:4:5: unknown step kind 'narraton' (did you mean 'narration'?); "
        "a step is one of narration, show, loop, compare, quiz, checkpoint",
    ]


def test_watch_checks_again_after_a_save(
    tmp_path: Path, attn: Attn, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import time

    lesson = tmp_path / "a.yaml"
    lesson.write_text(H + "steps:\n  - narraton: n\n", encoding="utf-8")
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        if len(naps) == 1:  # the author fixes the typo and saves
            lesson.write_text(H + "steps:\n  - narration: n\n", encoding="utf-8")
            os.utime(lesson, (time.time() + 5, time.time() + 5))
        elif len(naps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(time, "sleep", sleep)
    status, out, err = attn("lesson", "check", str(tmp_path), "--watch")
    lines = out.splitlines()
    assert (status, err) == (0, "")
    assert lines[0].startswith(f"{lesson}:4:5: unknown step kind 'narraton'")
    assert lines[1] == "watching 1 lesson; Ctrl+C stops"
    assert lines[2].endswith(": checking again")
    assert lines[3:] == [f"{lesson}: ok (1 step)"]


@pytest.mark.lists_variants
def test_a_lesson_names_the_plugins_it_needs(host: PluginHost) -> None:
    text = (
        H + "plugins: [masked, banded-window]\nsteps:\n"
        "  - show: {variant: banded, stage: weights}\n"
    )
    assert problems(text, host) == [
        "3:19: this lesson needs the plugin 'banded-window', which is not installed (install "
        "it, or give its folder with --plugins-dir); installed: backward, cross-attention, flash-backward, grouped-query, induction, kv-cache, masked, "
        "mla, model, multihead, multihead-wrapper, naive-loop, online-softmax, paged-kv-cache, rope, "
        "sliding-window, trainable, training, vectorized; the steps are not checked until it is installed",
    ]


def test_installed_plugins_the_lesson_names_are_fine(windowed_host: PluginHost) -> None:
    text = H + "plugins: [windowed]\nsteps:\n  - show: {variant: windowed, stage: window}\n"
    assert problems(text, windowed_host) == []


def test_typed_numbers_stop_a_lesson_everywhere_as_check_does(tmp_path: Path, attn: Attn) -> None:
    # One gate: what check refuses, --plain refuses too, with the same line (tests/lessons/
    # test_gate.py has every front end).
    lesson = tmp_path / "old.yaml"
    lesson.write_text(H + "steps:\n  - narration: The score is 0.9544.\n", encoding="utf-8")
    status, out, _ = attn("lesson", "check", str(lesson))
    assert status == 1
    assert attn("lesson", "run", str(lesson), "--plain") == (1, "", out)


@pytest.mark.lists_variants
def test_a_broken_value_is_reported_once_not_where_it_is_used(host: PluginHost) -> None:
    text = (
        H + "values:\n  dot: {variant: naive-lop, stage: scores, cell: [0, 1]}\n"
        "steps:\n  - narration: 'the score {{dot}}'\n"
    )
    assert problems(text, host) == [
        "4:18: unknown variant 'naive-lop' (did you mean 'naive-loop'?); known variants: "
        "backward, cross-attention, flash-backward, grouped-query, induction, kv-cache, masked, mla, model, multihead, multihead-wrapper, naive-loop, "
        "online-softmax, paged-kv-cache, rope, sliding-window, trainable, training, vectorized"
    ]


def test_compare_sides_take_the_defaults_too(host: PluginHost) -> None:
    lesson = load(
        H + "defaults: {variant: naive-loop, query: journey}\nsteps:\n"
        "  - compare:\n"
        "      stage: weights\n"
        "      left: {tensor: sum_normalized}\n"
        "      right: {tensor: weights}\n",
        host,
    )
    (step,) = lesson.steps
    assert (step.left.variant, step.right.variant) == ("naive-loop", "naive-loop")  # type: ignore[union-attr]
    assert step.left.query == step.right.query == 1  # type: ignore[union-attr]
    assert check_lesson(lesson, host) == []


def test_a_heads_bound_the_variant_declares_is_reported_at_the_value(host: PluginHost) -> None:
    text = (
        H + "options:\n  heads: 100\nsteps:\n"
        "  - show: {variant: multihead-wrapper, stage: weights}\n"
        "  - show: {variant: multihead, stage: weights, options: {heads: 65}}\n"
    )
    assert problems(text, host) == [
        "4:10: option 'heads' must be at most 64, got 100",
        "7:65: option 'heads' must be at most 64, got 65",
    ]
