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

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tracer.errors import InputError, UsageError
from tracer.inputs import load_inputs
from tracer.runner import TraceOptions, start_trace
from tracer.testing import assert_close, run_variant

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


def test_without_a_source_it_says_how_to_give_one(attn: Attn) -> None:
    status, out, err = attn("trace", "cross-attention")
    assert (status, out) == (2, "")
    assert err.strip() == (
        "attn: variant 'cross-attention' needs a second sequence: give an inputs file with a "
        "'source:' section, or --source NAME|FILE"
    )
    with pytest.raises(UsageError):
        start_trace("cross-attention", TraceOptions()).run_to_end()


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
        (
            "source:\n  tokens: [a]\n  embeddings: [[1, 2]]\n"
            "  weights: {key: [[1], [1]], value: [[1], [1]]}\n",
            "6:12: source.weights needs the main 'weights' too: the queries come from the main "
            "sequence, so its query weights must be given with them",
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
    assert "cell: [chat, cat]" in lesson  # a target row and a source column, by name
    with pytest.raises(LessonError) as caught:
        parse_lesson(lesson.replace("cell: [chat, cat]}", "cell: [chat, cta]}"), "l.yaml")
    assert (
        "cell index 'cta' is not one of the tokens (did you mean 'cat'?); tokens: Le chat dort; "
        "source: The cat is sleeping"
    ) in str(caught.value)


async def test_the_app_steps_through_it_with_source_labels() -> None:
    from tests.tui.conftest import press, settle
    from tracer.tui.explore_screen import ExploreScreen
    from tracer.tui.grid import TensorGrid
    from tracer.tui.launch import make_explore_app
    from tracer.tui.tensor_pane import TensorPane

    app = make_explore_app("cross-attention", TraceOptions(inputs=CROSS), [])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExploreScreen) and screen.session is not None
        seen = {}
        for _ in range(9):
            pane = screen.query_one(TensorPane)
            assert not pane.has_class("-error"), screen.position
            grid = pane.view.grid
            if isinstance(grid, TensorGrid):
                seen[grid.name] = (list(grid.row_labels), list(grid.column_labels))
            await press(pilot, "w")  # the token view, where it applies, must draw too
            assert not pane.has_class("-error"), screen.position
            await press(pilot, "w", "right")
        assert screen.position == 8 and screen.failure is None
    assert seen["weights"] == (
        ["Le", "chat", "est", "noir"],
        ["The", "black", "cat", "sat", "down"],
    )
    assert seen["keys"][0] == ["The", "black", "cat", "sat", "down"]


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
