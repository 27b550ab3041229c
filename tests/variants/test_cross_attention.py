"""The built-in cross-attention variant and the second sequence it reads (``run.source``).

Oracles: the attention formula in plain numpy, and torch's own
``scaled_dot_product_attention`` given the target's queries and the source's keys
and values, on an inputs file whose source differs from the target in length (5
against 4) and width (4 against 3).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tracer.errors import InputError
from tracer.inputs import load_inputs
from tracer.testing import assert_close, run_variant
from tracer.tracing import Trace
from tracer.tracing.runner import TraceOptions

Attn = Callable[..., tuple[int, str, str]]
CROSS = str(Path(__file__).parents[1] / "data" / "cross_inputs.yaml")


def numpy_cross_attention(
    x: np.ndarray, s: np.ndarray, wq: np.ndarray, wk: np.ndarray, wv: np.ndarray
) -> np.ndarray:
    q, k, v = x @ wq, s @ wk, s @ wv
    scores = q @ k.T / np.sqrt(k.shape[1])
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def file_matrices() -> tuple[np.ndarray, ...]:
    """The file's numbers as numpy reads them, independently of the tracer's tensors."""
    inputs = load_inputs(CROSS)
    source = inputs.source_sequence
    assert source is not None and inputs.weights is not None and source.weights is not None
    return tuple(
        np.array(m, dtype=np.float64)
        for m in (
            inputs.embeddings,
            source.embeddings,
            inputs.weights["query"],
            source.weights["key"],
            source.weights["value"],
        )
    )


def test_the_inputs_file_has_a_source_of_its_own_length_and_width() -> None:
    x, s, wq, wk, _ = file_matrices()
    assert x.shape == (4, 3) and s.shape == (5, 4)
    assert wq.shape == (3, 2) and wk.shape == (4, 2)


def test_cross_attention_equals_numpy_and_torch_sdpa() -> None:
    trace = run_variant("cross-attention", inputs=CROSS)
    expected = numpy_cross_attention(*file_matrices())
    assert trace.output is not None and trace.output.shape == (4, 2)
    assert_close(trace.output.double(), torch.from_numpy(expected))
    x, s, wq, wk, wv = (torch.from_numpy(m) for m in file_matrices())
    sdpa = F.scaled_dot_product_attention(x @ wq, s @ wk, s @ wv)
    assert_close(trace.output.double(), sdpa)
    weights = trace.stage("weights").tensors["weights"]
    assert weights.shape == (4, 5)
    assert_close(weights.sum(dim=-1), torch.ones(4))


def test_a_focused_query_is_one_target_row() -> None:
    whole = run_variant("cross-attention", inputs=CROSS).output
    one = run_variant("cross-attention", inputs=CROSS, query="chat")
    assert one.output is not None and whole is not None
    assert_close(one.output, whole[1])
    assert one.stage("weights").tensors["weights"].shape == (5,)


def test_drawn_source_weights_match_sdpa_and_keep_trainables_queries(tmp_path: Path) -> None:
    # No weights in the file: W_q is trainable's, W_k' and W_v' are (source width, d_out).
    source = tmp_path / "source.yaml"
    source.write_text(
        "tokens: [a, b, c, d, e]\n"
        "embeddings: [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 0]]\n"
    )
    trace = run_variant("cross-attention", source=str(source), init="randn", d_out=3)
    run = trace.context
    assert run.source is not None and run.source.weights is not None and run.weights is not None
    assert run.source.weights.key.shape == (4, 3) and run.source.weights.value.shape == (4, 3)
    trainable = run_variant("trainable", init="randn", d_out=3).context.weights
    assert trainable is not None and torch.equal(run.weights.query, trainable.query)
    x, s = run.inputs, run.source.inputs
    sdpa = F.scaled_dot_product_attention(
        x @ run.weights.query, s @ run.source.weights.key, s @ run.source.weights.value
    )
    assert trace.output is not None and trace.output.shape == (6, 3)
    assert_close(trace.output, sdpa)


def test_keys_and_source_axes_are_labelled_with_the_source_tokens(attn: Attn) -> None:
    status, out, _ = attn("trace", "cross-attention", "--inputs", CROSS, "--stages", "weights")
    assert status == 0
    lines = out.splitlines()
    assert "source: The black cat sat down" in lines
    table = lines.index("weights (4×5: query × key)")
    assert lines[table + 1].split() == ["The", "black", "cat", "sat", "down"]
    assert [line.split()[0] for line in lines[table + 2 : table + 6]] == [
        "Le",
        "chat",
        "est",
        "noir",
    ]
    status, out, _ = attn("trace", "cross-attention", "--inputs", CROSS, "--json")
    document = json.loads(out)
    assert document["tokens"] == ["Le", "chat", "est", "noir"]
    assert document["source_tokens"] == ["The", "black", "cat", "sat", "down"]


def default_matrices(trace: Trace) -> tuple[np.ndarray, ...]:
    """Target and default source as the built-in sets list them; the weights the run drew."""
    run = trace.context
    assert run.source is not None and run.source.weights is not None and run.weights is not None
    embeddings = (load_inputs("your-journey").embeddings, load_inputs("ton-voyage").embeddings)
    drawn = (run.weights.query, run.source.weights.key, run.source.weights.value)
    return tuple(np.array(m, dtype=np.float64) for m in embeddings) + tuple(
        w.double().numpy() for w in drawn
    )


def test_without_a_source_it_runs_on_the_default_source_of_another_length_and_width() -> None:
    trace = run_variant("cross-attention")
    source = trace.context.source
    assert source is not None and source.default == "ton-voyage"
    assert source.tokens == load_inputs("ton-voyage").tokens
    x, s, wq, wk, wv = default_matrices(trace)
    assert x.shape == (6, 3) and s.shape == (5, 4)  # the lesson of shapes, by default
    assert wq.shape == (3, 2) and wk.shape == wv.shape == (4, 2)
    assert trace.output is not None and trace.output.shape == (6, 2)
    assert_close(trace.output.double(), torch.from_numpy(numpy_cross_attention(x, s, wq, wk, wv)))
    xt, st, wqt, wkt, wvt = (torch.from_numpy(m) for m in (x, s, wq, wk, wv))
    sdpa = F.scaled_dot_product_attention(xt @ wqt, st @ wkt, st @ wvt)
    assert_close(trace.output.double(), sdpa)
    assert trace.stage("weights").tensors["weights"].shape == (6, 5)
    trainable = run_variant("trainable").context.weights
    assert trainable is not None and torch.equal(trace.context.weights.query, trainable.query)  # type: ignore[union-attr]


def test_a_given_source_wins_over_the_default() -> None:
    from_file = run_variant("cross-attention", inputs=CROSS).context.source
    assert from_file is not None and from_file.default is None
    assert from_file.tokens == ("The", "black", "cat", "sat", "down")
    flag = run_variant("cross-attention", source="four-words").context.source
    assert flag is not None and flag.default is None and flag.tokens[0] == "word_1"


def test_without_a_source_attn_trace_says_which_default_it_used(attn: Attn) -> None:
    status, out, err = attn("trace", "cross-attention", "--stages", "weights")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[2] == (
        "source: Ton voyage commence d'un pas "
        "(the default source, input set 'ton-voyage'; --source gives another)"
    )
    table = lines.index("weights (6×5: query × key)")
    assert lines[table + 1].split() == ["Ton", "voyage", "commence", "d'un", "pas"]
    assert lines[table + 2].split()[0] == "Your"
    status, out, err = attn("trace", "cross-attention", "--json")
    assert status == 0, err
    document = json.loads(out)
    assert document["source_tokens"] == ["Ton", "voyage", "commence", "d'un", "pas"]
    assert document["source_default"] == "ton-voyage"
    weights = np.array(
        next(s for s in document["stages"] if s["name"] == "weights")["tensors"]["weights"]
    )
    expected = numpy_cross_attention(*default_matrices(run_variant("cross-attention")))
    np.testing.assert_allclose(np.array(document["output"]), expected, rtol=1e-5, atol=1e-6)
    assert weights.shape == (6, 5)
    np.testing.assert_allclose(weights.sum(axis=1), np.ones(6), rtol=1e-6)


def test_explore_plain_and_the_notebook_name_the_default_source(attn: Attn) -> None:
    from tracer.notebook import trace

    status, out, err = attn("explore", "cross-attention", "--plain")
    assert (status, err) == (0, "")
    assert out.splitlines()[2].startswith("source: Ton voyage commence d'un pas (the default")
    html = trace("cross-attention")._repr_html_()
    assert "source: Ton voyage commence d&#x27;un pas (the default source" in html
    assert trace("cross-attention", source="four-words").context.source.tokens[0] == "word_1"  # type: ignore[union-attr]


def test_self_attention_variants_still_run_on_a_file_with_a_source() -> None:
    trace = run_variant("trainable", inputs=CROSS)
    x, _, wq, _, _ = file_matrices()
    inputs = load_inputs(CROSS)
    assert inputs.weights is not None
    wk, wv = (np.array(inputs.weights[n], dtype=np.float64) for n in ("key", "value"))
    expected = numpy_cross_attention(x, x, wq, wk, wv)  # the source is the target itself
    assert trace.output is not None
    assert_close(trace.output.double(), torch.from_numpy(expected))


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "source:\n  tokens: [a, b]\n  embeddings: [[1, 2]]\n",
            "5:15: source has 2 tokens but 1 embedding rows; give one row per token",
        ),
        (
            "source:\n  tokens: [a]\n  embedings: [[1, 2]]\n",
            "5:3: unknown key 'source.embedings' (did you mean 'embeddings'?); "
            "expected one of tokens, embeddings, weights",
        ),
        (
            "weights: {query: [[1], [1]], key: [[1], [1]], value: [[1], [1]]}\n"
            "source:\n  tokens: [a]\n  embeddings: [[1, 2, 3]]\n"
            "  weights: {key: [[1], [1]], value: [[1], [1], [1]]}\n",
            "7:18: source.weights.key is 2×1 but must be source width × d_out = 3×1 (the "
            "source embeddings' width, the main weights' d_out)",
        ),
        (  # without the main weights: refused at the source's weights (d_out is the queries')
            "source:\n  tokens: [a]\n  embeddings: [[1, 2]]\n"
            "  weights: {key: [[1], [1]], value: [[1], [1]]}\n",
            "6:12: source.weights needs the main 'weights' too: the queries come from the main "
            "sequence, so its query weights must be given with them (weights: {query: ...})",
        ),
    ],
)
def test_a_bad_source_section_is_reported_at_its_line(
    tmp_path: Path, source: str, message: str
) -> None:
    path = tmp_path / "inputs.yaml"
    path.write_text("tokens: [x, y]\nembeddings: [[1, 0], [0, 1]]\n" + source)
    with pytest.raises(InputError) as caught:
        load_inputs(str(path))
    assert str(caught.value) == f"{path}:{message}"


def test_the_lesson_runs_headless_in_a_pipe(attn: Attn) -> None:
    status, out, err = attn("lesson", "run", "12_cross_attention", "--plain")
    assert (status, err) == (0, "")
    assert out.count("Quiz: ") == out.count("Answer: ") == 3
    weights = out.splitlines().index("weights (3×4: query × key)")
    assert out.splitlines()[weights + 2].split() == ["The", "cat", "is", "sleeping"]


def test_a_lesson_names_source_tokens_in_cells(tmp_path: Path) -> None:
    from tracer.lessons.loader import LessonError, parse_lesson

    lesson = (Path(__file__).parents[2] / "lessons" / "12_cross_attention.yaml").read_text()
    assert "cell: [chat, sleeping]" in lesson  # a target row and a source column, by name
    with pytest.raises(LessonError) as caught:
        parse_lesson(lesson.replace("cell: [chat, sleeping]}", "cell: [chat, sleping]}"), "l.yaml")
    assert (
        "cell index 'sleping' is not one of the tokens (did you mean 'sleeping'?); tokens: Le "
        "chat dort; source: The cat is sleeping"
    ) in str(caught.value)


FILE_LABELS = (["Le", "chat", "est", "noir"], ["The", "black", "cat", "sat", "down"])
DEFAULT_LABELS = (
    ["Your", "journey", "starts", "with", "one", "step"],
    ["Ton", "voyage", "commence", "d'un", "pas"],
)


@pytest.mark.parametrize(
    ("options", "labels"),
    [(TraceOptions(inputs=CROSS), FILE_LABELS), (TraceOptions(), DEFAULT_LABELS)],
    ids=["source-section", "default-source"],
)
async def test_the_app_steps_through_it_with_source_labels(
    options: TraceOptions, labels: tuple[list[str], list[str]]
) -> None:
    from tests.tui.conftest import settle
    from tracer.tui.launch import make_explore_app

    app = make_explore_app("cross-attention", options, [])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        seen = await step_through(app, pilot)
    assert seen["weights"] == labels
    assert seen["keys"][0] == labels[1]


async def test_the_palette_opens_it_on_the_default_source() -> None:
    # What a newcomer does in the app: pick "Explore variant: cross-attention".
    from tests.tui.conftest import settle
    from tracer.tui.explore_screen import ExploreScreen
    from tracer.tui.launch import make_explore_app

    app = make_explore_app("trainable", TraceOptions(), [])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        first = app.screen
        (command,) = [
            c for c in app.palette_commands() if c.title == "Explore variant: cross-attention"
        ]
        command.run()
        await pilot.pause()
        assert app.screen is not first and isinstance(app.screen, ExploreScreen)
        await settle(pilot)
        seen = await step_through(app, pilot)
    assert seen["weights"] == DEFAULT_LABELS


async def step_through(app: Any, pilot: Any) -> dict[str, tuple[list[str], list[str]]]:
    """Every stage of the explorer (a loop's first sub-step drawn, then its end), each with
    the token view too; the labels of each stage's table."""
    from tests.tui.conftest import press
    from tracer.tui.explore_screen import ExploreScreen
    from tracer.tui.grid import TensorGrid
    from tracer.tui.tensor_pane import TensorPane
    from tracer.variant import Stage

    screen = app.screen
    assert isinstance(screen, ExploreScreen) and screen.session is not None
    stepper = screen.session.stepper
    seen = {}
    for _ in range(80):
        pane = screen.query_one(TensorPane)
        assert not pane.has_class("-error"), screen.position
        if not isinstance(stepper.get(screen.position), Stage):
            await press(pilot, "e")  # a loop: on to the stage it builds
            continue
        grid = pane.view.grid
        if isinstance(grid, TensorGrid):
            seen[grid.name] = (list(grid.row_labels), list(grid.column_labels))
        await press(pilot, "w")  # the token view, where it applies, must draw too
        assert not pane.has_class("-error"), screen.position
        await press(pilot, "w")
        if stepper.total is not None and screen.position == stepper.total - 1:
            break
        await press(pilot, "right")
    assert stepper.total is not None and screen.position == stepper.total - 1
    assert screen.failure is None and len(seen) == 9
    return seen


def test_sdpa_reference_takes_keys_and_values_from_the_source() -> None:
    from tracer.testing import sdpa_reference

    trace = run_variant("cross-attention", inputs=CROSS, query=2)
    assert trace.output is not None
    assert_close(sdpa_reference(trace), trace.output)
    x, s, wq, wk, wv = (torch.from_numpy(m).float() for m in file_matrices())
    assert_close(sdpa_reference(trace), F.scaled_dot_product_attention(x @ wq, s @ wk, s @ wv)[2])


def test_source_flag_takes_another_input_set(attn: Attn) -> None:
    status, out, err = attn(
        "trace", "cross-attention", "--source", "four-words", "--stages", "weights", "--json"
    )
    assert status == 0, err
    document = json.loads(out)
    assert document["source_tokens"] == ["word_1", "word_2", "word_3", "word_4"]
    weights = np.array(document["stages"][0]["tensors"]["weights"])
    assert weights.shape == (6, 4)
    np.testing.assert_allclose(weights.sum(axis=1), np.ones(6), rtol=1e-6)


DEFAULT_LESSON = """\
title: Cross-attention on the default source
summary: Its keys and values come from the built-in ton-voyage.
steps:
  - show:
      variant: cross-attention
      stage: weights
      focus: {cell: [journey, voyage]}
      caption: The default source's tokens name the columns.
  - quiz:
      id: journey-voyage
      question: What weight does "journey" give to "voyage"?
      answer: {variant: cross-attention, stage: weights, cell: [journey, voyage]}
      tolerance: 0.005
      explanation: "{{answer}}"
"""


def test_a_lesson_names_the_default_sources_tokens_in_cells() -> None:
    from tracer.lessons.loader import LessonError, parse_lesson
    from tracer.lessons.model import Quiz

    lesson = parse_lesson(DEFAULT_LESSON, "l.yaml")
    (quiz,) = [step for step in lesson.steps if isinstance(step, Quiz)]
    assert quiz.answer.cell == (1, 1)  # type: ignore[union-attr]
    # The answer is read from a run on the default source: numpy's weight of journey for voyage.
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.plugin_host import PluginHost

    x, s, wq, wk, _ = default_matrices(run_variant("cross-attention"))
    scores = (x @ wq) @ (s @ wk).T / np.sqrt(wk.shape[1])
    weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    answer = LessonRunner(lesson, PluginHost()).value(quiz.answer)  # type: ignore[arg-type]
    assert answer == pytest.approx(weights[1, 1], rel=1e-5)
    with pytest.raises(LessonError) as caught:
        parse_lesson(DEFAULT_LESSON.replace("voyage]}\n      tol", "voyag]}\n      tol"), "l.yaml")
    assert (
        "cell index 'voyag' is not one of the tokens (did you mean 'voyage'?); tokens: Your "
        "journey starts with one step; source: Ton voyage commence d'un pas"
    ) in str(caught.value)
