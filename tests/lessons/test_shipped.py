"""The shipped lessons: they check clean, run headless, and every quiz answer matches an oracle.

Quiz answers are computed live from the variants; here each one is compared with
a number printed in the seeds (tests/data/seeds.py) or computed independently with
torch's own functions, so neither the lessons nor the variants can drift.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.data import seeds
from tests.learner.data.book import MULTIHEAD_CONTEXT, WRAPPER_CONTEXT
from tests.learner.test_multihead import BookMultiHead, BookWrapper, book_batch
from tests.variants.backward_lesson_oracles import BACKWARD_ORACLES
from tests.variants.cross_lesson_oracles import CROSS_ORACLES
from tests.variants.lesson_oracles import MODERN_ORACLES
from tests.variants.lessons_16_18_oracles import LATE_ORACLES
from tests.variants.model_lesson_oracles import MODEL_ORACLES
from tracer.lessons.check import check_lesson
from tracer.lessons.grading import CellAnswer
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import find_lessons, load_lesson, shipped_dir
from tracer.lessons.model import Lesson, Quiz, TensorRef
from tracer.plugin_host import PluginHost
from tracer.render.text import format_number

SHIPPED = sorted(shipped_dir().glob("*.yaml"))
NAMES = [path.stem for path in SHIPPED]
EXPECTED_NAMES = [
    "01_dot_products",
    "02_normalising",
    "03_vectorising",
    "04_trainable_qkv",
    "05_causal_masking",
    "06_common_mistakes",
    "07_multi_head",
    "08_windows_and_groups",
    "09_kv_cache",
    "10_online_softmax",
    "11_training",
    "12_cross_attention",
    "13_induction_heads",
    "14_backward",
    "15_flash_backward",
    "16_rotary",
    "17_latent_attention",
    "18_paged_cache",
    "19_real_model",
]
TOKENS = ("Your", "journey", "starts", "with", "one", "step")


def journey_inputs() -> torch.Tensor:
    return torch.tensor(seeds.SEED_003_INPUTS)


def seed_weights(draw: Callable[..., torch.Tensor], d_out: int = 2) -> list[torch.Tensor]:
    """W_query, W_key, W_value as seeds 000-002 draw them (manual_seed(123), then three draws)."""
    torch.manual_seed(123)
    return [draw(3, d_out) for _ in range(3)]


def qkv(draw: Callable[..., torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = journey_inputs()
    w_q, w_k, w_v = seed_weights(draw)
    return x @ w_q, x @ w_k, x @ w_v


def causal_weights() -> torch.Tensor:
    """Causal softmax weights, built from torch's own masking, for seed 000's rand weights."""
    q, k, _ = qkv(torch.rand)
    scores = (q @ k.T) / math.sqrt(k.shape[-1])
    future = torch.ones(6, 6).triu(diagonal=1).bool()
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


def four_words_scores() -> torch.Tensor:
    words = torch.tensor(seeds.SEED_004_WORDS, dtype=torch.float32)
    q = words @ torch.tensor(seeds.SEED_004_W_Q, dtype=torch.float32)
    k = words @ torch.tensor(seeds.SEED_004_W_K, dtype=torch.float32)
    return q @ k.T


def dropout_kept() -> float:
    # Dropout keeps a weight where numpy's RandomState(seed) draws at least p, and doubles it:
    # that stream is the same on every platform (torch's dropout masks are not).
    weights = causal_weights()
    keep = np.random.RandomState(123).random_sample((6, 6)) >= 0.5
    return float(weights[3, 1] * 2) if keep[3, 1] else 0.0  # with, journey


def sum_can_go_negative() -> str:
    scores = torch.tensor([1.0, -0.5, 2.0])
    by_sum = (scores / scores.sum()).min() < 0
    by_softmax = torch.softmax(scores, dim=0).min() < 0
    assert by_sum and not by_softmax
    return "dividing by the sum"


def book_layers(book_class: type[torch.nn.Module], d_out: int, heads: int) -> torch.nn.Module:
    """The course's class, its layers created under manual_seed(123) as the chapter does."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(123)
        return book_class(3, d_out, heads)


def book_width(book_class: type[torch.nn.Module], heads: int) -> int:
    return int(book_layers(book_class, 2, heads)(book_batch()).shape[-1])


def split_head_weights() -> torch.Tensor:
    """The causal weights of each head of the course's MultiHeadAttention (d_out 2, 2 heads)."""
    book = book_layers(BookMultiHead, 2, 2)
    x = journey_inputs()
    q = book.W_query(x).view(6, 2, 1).transpose(0, 1)
    k = book.W_key(x).view(6, 2, 1).transpose(0, 1)
    scores = (q @ k.transpose(1, 2)).detach()
    future = torch.ones(6, 6).triu(diagonal=1).bool()
    return torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)


def width_stays_fixed() -> str:
    """The class whose output width does not change from one head to two."""
    fixed = [
        cls for cls in (BookWrapper, BookMultiHead) if book_width(cls, 1) == book_width(cls, 2)
    ]
    assert fixed == [BookMultiHead]
    return "MultiHeadAttention (one projection, split)"


# (lesson, quiz id) -> the right answer, from the seeds or from torch directly.
ORACLES: dict[tuple[str, str], Callable[[], float | str | frozenset[tuple[int, int]]]] = {
    ("01_dot_products", "your-journey"): lambda: seeds.SEED_003_DOT_0_1,
    ("01_dot_products", "most-aligned"): lambda: TOKENS[
        max(range(6), key=lambda j: seeds.SIMPLE_SCORES[1][j])
    ],
    ("01_dot_products", "one-step"): lambda: seeds.SIMPLE_SCORES[4][5],
    ("01_dot_products", "symmetric"): lambda: seeds.SIMPLE_SCORES[3][4],
    ("02_normalising", "sum-is-one"): lambda: 1.0,
    ("02_normalising", "softmax-journey"): lambda: seeds.SEED_001_SOFTMAX_WEIGHTS_2[1],
    ("02_normalising", "negative"): sum_can_go_negative,
    ("02_normalising", "context-journey"): lambda: seeds.SEED_001_CONTEXT_2[0],
    ("03_vectorising", "shape"): lambda: " × ".join(
        str(n) for n in (journey_inputs() @ journey_inputs().T).shape
    ),
    ("03_vectorising", "with-one"): lambda: seeds.SIMPLE_SCORES[3][4],
    ("03_vectorising", "row-sum"): lambda: 1.0,
    ("03_vectorising", "context-step"): lambda: seeds.SIMPLE_CONTEXT[5][1],
    ("04_trainable_qkv", "query-2"): lambda: seeds.SEED_001_QUERY_2[1],
    ("04_trainable_qkv", "scaled-22"): lambda: float(
        (qkv(torch.rand)[0] @ qkv(torch.rand)[1].T)[1, 1] / math.sqrt(2)
    ),
    ("04_trainable_qkv", "weight-22"): lambda: seeds.SEED_000_ATTN_WEIGHTS[1][1],
    ("04_trainable_qkv", "score-22-randn"): lambda: float(
        qkv(torch.randn)[0][1].dot(qkv(torch.randn)[1][1])
    ),
    ("05_causal_masking", "hidden-cells"): lambda: frozenset(
        (int(i), int(j)) for i, j in torch.ones(6, 6).triu(diagonal=1).nonzero().tolist()
    ),
    ("05_causal_masking", "hidden"): lambda: float(torch.ones(6, 6).triu(diagonal=1)[3].sum()),
    ("05_causal_masking", "renorm-journey-your"): lambda: float(causal_weights()[1, 0]),
    ("05_causal_masking", "starts-journey"): lambda: float(causal_weights()[2, 1]),
    ("05_causal_masking", "dropout-kept"): dropout_kept,
    ("06_common_mistakes", "wrong-dim-row-sum"): lambda: float(
        # Seed 004's module: F.softmax(scores, dim=1) on a batch of one.
        F.softmax((four_words_scores() / math.sqrt(3)).unsqueeze(0), dim=1)[0, 0].sum()
    ),
    ("06_common_mistakes", "no-scale"): lambda: float(torch.softmax(four_words_scores(), -1)[0, 2]),
    ("06_common_mistakes", "unrenormalised-sum"): lambda: float(
        torch.softmax((qkv(torch.rand)[0] @ qkv(torch.rand)[1].T) / math.sqrt(2), -1)[1, :2].sum()
    ),
    ("06_common_mistakes", "self-dot-starts"): lambda: seeds.SEED_003_SELF_DOTS[2],
    ("06_common_mistakes", "single-softmax"): lambda: float(
        torch.softmax(torch.tensor([0.1234]), dim=0)[0]
    ),
    ("07_multi_head", "head1-query-journey"): lambda: float(
        book_layers(BookWrapper, 2, 2).heads[1].W_query(journey_inputs())[1, 0].detach()
    ),
    ("07_multi_head", "wrapper-width"): lambda: book_width(BookWrapper, 3),
    ("07_multi_head", "split-head1-weight"): lambda: float(split_head_weights()[1, 1, 0]),
    ("07_multi_head", "split-output"): lambda: MULTIHEAD_CONTEXT[1][1],
    ("07_multi_head", "fixed-width"): width_stays_fixed,
}


def wide_scores() -> torch.Tensor:
    """Scores with d_out = 64, the rand weights drawn as the course draws them."""
    x = journey_inputs()
    w_q, w_k, _ = seed_weights(torch.rand, 64)
    return (x @ w_q) @ (x @ w_k).T


# (lesson, value name) -> the live value prose shows, from the seeds or from torch directly.
VALUE_ORACLES: dict[tuple[str, str], Callable[[], float]] = {
    ("01_dot_products", "journey-journey"): lambda: seeds.SIMPLE_SCORES[1][1],
    ("02_normalising", "divided-one"): lambda: seeds.SEED_001_SUM_WEIGHTS_2[4],
    ("02_normalising", "weight-one"): lambda: seeds.SEED_001_SOFTMAX_WEIGHTS_2[4],
    ("02_normalising", "weight-starts"): lambda: seeds.SEED_001_SOFTMAX_WEIGHTS_2[2],
    ("04_trainable_qkv", "spread-64"): lambda: float(wide_scores().std(correction=0)),
    ("04_trainable_qkv", "spread-64-scaled"): lambda: float((wide_scores() / 8).std(correction=0)),
    ("04_trainable_qkv", "top-64"): lambda: float(torch.softmax(wide_scores(), -1).max()),
    ("04_trainable_qkv", "top-64-scaled"): lambda: float(
        torch.softmax(wide_scores() / 8, -1).max()
    ),
    ("05_causal_masking", "starts-journey"): lambda: float(causal_weights()[2, 1]),
    # rᵢ = L·θᵢ/2π turns over L = 2048 positions, θᵢ = 10000^(−2i/d) with d = 8 (RoFormer).
    ("16_rotary", "pair2-turns"): lambda: 2048 * 10000 ** (-2 * 2 / 8) / (2 * math.pi),
}


# Lessons 08-11 (the modern variants) have their oracles beside those variants' tests.
ORACLES.update(MODERN_ORACLES)
ORACLES.update(CROSS_ORACLES)
ORACLES.update(BACKWARD_ORACLES)
ORACLES.update(LATE_ORACLES)
ORACLES.update(MODEL_ORACLES)


@pytest.fixture(scope="module")
def lessons(host: PluginHost) -> dict[str, Lesson]:
    return {path.stem: load_lesson(path, host) for path in SHIPPED}


def test_the_shipped_lessons_ship_in_order() -> None:
    assert NAMES == EXPECTED_NAMES
    refs = find_lessons(use_env=False)
    assert [(ref.number, ref.name) for ref in refs] == list(enumerate(EXPECTED_NAMES, start=1))
    assert all(ref.problem is None and ref.title for ref in refs)


@pytest.mark.parametrize("path", SHIPPED, ids=NAMES)
def test_first_line_points_editors_at_the_schema(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../lessons/schema.json"
    assert (path.parent / "../lessons/schema.json").resolve().is_file()


@pytest.mark.parametrize("name", NAMES)
def test_checks_clean(name: str, lessons: dict[str, Lesson], host: PluginHost) -> None:
    assert check_lesson(lessons[name], host) == []


@pytest.mark.parametrize("name", NAMES)
def test_every_quiz_answer_matches_its_oracle(
    name: str, lessons: dict[str, Lesson], host: PluginHost
) -> None:
    runner = LessonRunner(lessons[name], host)
    checked = 0
    for quiz in lessons[name].quizzes:
        assert quiz.id is not None, f"{name}: quiz at line {quiz.line} needs an id"
        oracle = ORACLES.get((name, quiz.id))
        if isinstance(quiz.answer, TensorRef):
            assert oracle is not None, f"{name}: live quiz '{quiz.id}' has no oracle here"
        if oracle is None:
            continue
        expected = oracle()
        answer = runner.answer(quiz)
        if quiz.quiz_kind == "choice":
            assert isinstance(answer, int)
            assert quiz.choices[answer] == expected, quiz.id
        elif quiz.quiz_kind == "cells":
            assert isinstance(answer, CellAnswer)
            assert answer.cells == expected, quiz.id
        else:
            assert isinstance(answer, (int, float)) and isinstance(expected, (int, float))
            # Seed numbers are printed to 4 decimals.
            assert float(answer) == pytest.approx(float(expected), abs=5e-5), quiz.id
        checked += 1
    live = [q for q in lessons[name].quizzes if isinstance(q.answer, TensorRef)]
    assert len(live) >= 2, f"{name} needs at least two quizzes answered by the live computation"
    assert checked >= 2


@pytest.mark.parametrize("name", NAMES)
def test_the_printed_answer_is_judged_right(
    name: str, lessons: dict[str, Lesson], host: PluginHost
) -> None:
    runner = LessonRunner(lessons[name], host)
    for quiz in lessons[name].quizzes:
        answer = runner.answer(quiz)
        if quiz.quiz_kind == "choice":
            assert isinstance(answer, int)
            assert runner.is_right(quiz, quiz.choices[answer])
            wrong = next(c for c in quiz.choices if c != quiz.choices[answer])
            assert not runner.is_right(quiz, wrong)
        elif quiz.quiz_kind == "cells":
            assert isinstance(answer, CellAnswer)
            printed = runner.answer_text(quiz)
            assert runner.is_right(quiz, printed)
            assert not runner.is_right(quiz, printed.rsplit(";", 1)[0])  # one cell missing
        else:
            assert isinstance(answer, (int, float))
            assert runner.is_right(quiz, format_number(float(answer)))
            assert not runner.is_right(quiz, format_number(float(answer) + quiz.tolerance + 0.01))


@pytest.mark.parametrize(("name", "value"), sorted(VALUE_ORACLES), ids=str)
def test_live_values_in_prose_match_their_oracle(
    name: str, value: str, lessons: dict[str, Lesson], host: PluginHost
) -> None:
    named = lessons[name].value(value)
    assert named is not None, f"{name} has no value '{value}'"
    computed = LessonRunner(lessons[name], host).value(named.ref)
    assert computed == pytest.approx(VALUE_ORACLES[(name, value)](), abs=5e-5, rel=1e-5)


def _quizzes(lesson: Lesson) -> list[Quiz]:
    return list(lesson.quizzes)


def test_every_oracle_belongs_to_a_quiz(lessons: dict[str, Lesson]) -> None:
    ids = {(name, quiz.id) for name, lesson in lessons.items() for quiz in _quizzes(lesson)}
    assert set(ORACLES) <= ids


@pytest.mark.parametrize("name", NAMES)
def test_runs_headless_in_a_pipe(name: str, attn: Callable[..., tuple[int, str, str]]) -> None:
    status, out, err = attn("lesson", "run", name, "--plain")
    assert (status, err) == (0, "")
    assert out.count("Quiz: ") == out.count("Answer: ") >= 2
    assert out.rstrip().endswith("--- End of the lesson.")
    assert "\x1b[" not in out  # no colour codes: readable in a pipe and by a screen reader
    assert "{{" not in out  # every live value was filled in


# Every tensor printed in the seeds, and where it is printed (tests/data/seeds.py), and
# the multi-head outputs the course material prints (tests/learner/data/book.py).
PRINTED = {
    "BOOK_WRAPPER_CONTEXT": WRAPPER_CONTEXT,
    "BOOK_MULTIHEAD_CONTEXT": MULTIHEAD_CONTEXT,
    "SEED_000_ATTN_WEIGHTS": seeds.SEED_000_ATTN_WEIGHTS,
    "SEED_000_CONTEXT_VECTORS": seeds.SEED_000_CONTEXT_VECTORS,
    "SEED_001_SCORES_2": [seeds.SEED_001_SCORES_2],
    "SEED_001_SUM_WEIGHTS_2": [seeds.SEED_001_SUM_WEIGHTS_2],
    "SEED_001_SOFTMAX_WEIGHTS_2": [seeds.SEED_001_SOFTMAX_WEIGHTS_2],
    "SEED_001_CONTEXT_2": [seeds.SEED_001_CONTEXT_2],
    "SIMPLE_SCORES": seeds.SIMPLE_SCORES,
    "SIMPLE_WEIGHTS": seeds.SIMPLE_WEIGHTS,
    "SIMPLE_CONTEXT": seeds.SIMPLE_CONTEXT,
    "SEED_001_QUERY_2": [seeds.SEED_001_QUERY_2],
    "SEED_003_INPUTS": seeds.SEED_003_INPUTS,
    "SEED_003_DOT_0_1": [[seeds.SEED_003_DOT_0_1]],
    "SEED_003_SELF_DOTS": [seeds.SEED_003_SELF_DOTS],
}


@pytest.fixture(scope="module")
def all_plain_text(lessons: dict[str, Lesson], host: PluginHost) -> str:
    """Every lesson as ``--plain`` prints it, then each show and compare step's tables as
    the learner sees them once every quiz is answered (before, an unanswered quiz's answer
    reads "?" on every step)."""
    from tracer.lessons.hiding import quiz_id
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.model import Compare, Quiz, Show
    from tracer.lessons.views import step_view
    from tracer.text.plain_lesson import plain_lines, view_lines

    texts = [text for name in NAMES for text in plain_lines(lessons[name], host)]
    for name in NAMES:
        lesson = lessons[name]
        steps = list(enumerate(lesson.steps))
        answered = {quiz_id(n, step) for n, step in steps if isinstance(step, Quiz)}
        runner = LessonRunner(lesson, host)
        for number, step in steps:
            if isinstance(step, (Show, Compare)):
                texts += view_lines(step_view(lesson, runner, number, answered))
        runner.close()
    return "\n".join(texts)


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_every_number_printed_in_the_seeds_is_shown_by_a_lesson(
    name: str, all_plain_text: str
) -> None:
    for row in PRINTED[name]:
        pattern = r"(?<![\d.])" + r"\s+".join(re.escape(f"{value:.4f}") for value in row)
        assert re.search(pattern + r"(?![\d])", all_plain_text), (
            f"{name}: row {row} is shown nowhere"
        )
