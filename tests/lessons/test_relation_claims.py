"""Relations and counts a sentence states about its step's tables are checked against the
tables (:mod:`tracer.lessons.relation_claims`), two-decimal numbers typed into prose against
what the lesson shows (:mod:`tracer.lessons.typed_values`), each warned at the words'
``file:line:column``; ``attn lesson check PATH --claims`` lists what was checked and what was
read as prose.

Whether each sentence is true is decided here by numpy from the course notes' embeddings
(tests/data/seeds.py): scores = X Xᵀ, weights = softmax over each row; and rotary speeds
θᵢ = base^(−2i/d), NTK-aware scaling's base · s^(d/(d−2)), from the formulas.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.data import seeds
from tracer.lessons.check import examine
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import load_lesson, shipped_dir
from tracer.lessons.model import Loop
from tracer.lessons.relation_claims import _so_far, relation_warnings
from tracer.lessons.typed_values import unshown_numbers
from tracer.plugin_host import PluginHost
from tracer.render.labels import holds_stage

X = np.array(seeds.SEED_003_INPUTS)
SCORES = X @ X.T
WEIGHTS = np.exp(SCORES) / np.exp(SCORES).sum(axis=1, keepdims=True)

SHOW = """title: T
summary: S
steps:
  - show:
      variant: vectorized
      stage: {stage}
      caption: {caption}
"""
COMPARE = """title: T
summary: S
steps:
  - compare:
      stage: {stage}
      left: {{variant: {left}}}
      right: {{variant: {right}}}
      caption: {caption}
"""
ROPE = """title: T
summary: S
options: {{seed: 123, init: rand, d_out: 8}}
steps:
  - compare:
      variant: rope
      stage: angles
      tensor: theta
      left: {{label: no scaling}}
      right: {{options: {{scaling: ntk, factor: 4}}, label: "ntk, factor 4"}}
      caption: {caption}
"""


def warnings_of(text: str, host: PluginHost, tmp_path: Path) -> list[str]:
    path = tmp_path / "lesson.yaml"
    path.write_text(text, encoding="utf-8")
    examined = examine(path, host)
    assert examined.problems == []
    return [f"{w.line}:{w.column}: {w.message}" for w in examined.warnings]


def where(text: str, words: str) -> str:
    """``line:column`` of ``words`` in ``text``, counted here."""
    for number, line in enumerate(text.splitlines(), start=1):
        if words in line:
            return f"{number}:{line.index(words) + 1}"
    raise AssertionError(words)


Case = tuple[str, dict[str, str], bool]
"""(template, its fields, whether numpy says the sentence is true)."""

CASES: dict[str, Case] = {
    "rows sum to 1": (
        SHOW,
        {"stage": "weights", "caption": "Each row of the weights sums to 1."},
        bool(np.allclose(WEIGHTS.sum(axis=1), 1)),
    ),
    "columns sum to 1": (
        SHOW,
        {"stage": "weights", "caption": "Each column of the weights sums to 1."},
        bool(np.allclose(WEIGHTS.sum(axis=0), 1)),
    ),
    "rows do not sum to 1": (
        SHOW,
        {"stage": "weights", "caption": "The rows of the weights do not add up to 1."},
        not np.allclose(WEIGHTS.sum(axis=1), 1),
    ),
    "every weight positive": (
        SHOW,
        {"stage": "weights", "caption": "Every weight is positive."},
        bool((WEIGHTS > 0).all()),
    ),
    "every score negative": (
        SHOW,
        {"stage": "scores", "caption": "Every score is negative."},
        bool((SCORES < 0).all()),
    ),
    "36 scores": (SHOW, {"stage": "scores", "caption": "All 36 scores."}, SCORES.size == 36),
    "30 scores": (SHOW, {"stage": "scores", "caption": "All 30 scores."}, SCORES.size == 30),
    "the same context vectors": (
        COMPARE,
        {
            "stage": "context",
            "left": "naive-loop",
            "right": "vectorized",
            "caption": "The same context vectors, up to rounding.",
        },
        True,  # the same formula, softmax(X Xᵀ) X, computed two ways
    ),
    "the same weights": (
        COMPARE,
        {
            "stage": "weights",
            "left": "vectorized",
            "right": "masked",
            "caption": "The same weights, up to rounding.",
        },
        bool(np.allclose(WEIGHTS, np.tril(WEIGHTS))),  # a causal mask changes them
    ),
}


def ntk_kept() -> list[int]:
    """The pairs whose speed NTK-aware scaling keeps (d = 8, base 10000, factor 4)."""
    d, base, s = 8, 10000.0, 4.0
    i = np.arange(d // 2)
    before = base ** (-2 * i / d)
    after = (base * s ** (d / (d - 2))) ** (-2 * i / d)
    return [int(k) for k in i if np.isclose(before[k], after[k], rtol=1e-4)]


KEPT = ntk_kept()
CASES |= {
    "keeps pair 0": (ROPE, {"caption": "NTK-aware scaling keeps pair 0."}, 0 in KEPT),
    "keeps pair 1": (ROPE, {"caption": "NTK-aware scaling keeps pair 1."}, 1 in KEPT),
    "keeps the fastest pair": (
        ROPE,
        {"caption": "NTK-aware scaling keeps the fastest pair."},
        0 in KEPT,  # pair 0 turns fastest: base^0 = 1
    ),
    "keeps the fast pairs": (
        ROPE,
        {"caption": "NTK-aware scaling keeps the fast pairs."},
        len(KEPT) >= 2,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_claim_is_warned_at_its_words_exactly_when_it_is_false(
    name: str, host: PluginHost, tmp_path: Path
) -> None:
    template, fields, true = CASES[name]
    text = template.format(**fields)
    warned = [w for w in warnings_of(text, host, tmp_path) if "warning: '" in w]
    if true:
        assert warned == [], warned
        return
    caption = fields["caption"]
    sentence_at = where(text, caption)
    assert len(warned) == 1, warned
    line, column = (int(n) for n in sentence_at.split(":"))
    # The warning is on the caption's line, at the words that state the relation.
    said_line, said_column = (int(n) for n in warned[0].split(":")[:2])
    assert said_line == line and column <= said_column < column + len(caption), warned


def test_the_oracles_cover_true_and_false_of_each_kind() -> None:
    truths = {name: case[2] for name, case in CASES.items()}
    assert truths["rows sum to 1"] and not truths["columns sum to 1"]
    assert truths["36 scores"] and not truths["30 scores"]
    assert not truths["rows do not sum to 1"] and truths["every weight positive"]
    assert KEPT == [0]  # NTK keeps only the fastest pair: "the fast pairs" is false


def test_a_sentence_with_no_table_beside_it_is_prose(host: PluginHost, tmp_path: Path) -> None:
    text = SHOW.format(stage="weights", caption="Every row of the weights sums to 1.")
    text = text.replace("steps:\n", "steps:\n  - narration: Each column sums to 1.\n")
    assert not [w for w in warnings_of(text, host, tmp_path) if "sums" in w]


def test_a_sentence_naming_another_tensor_is_prose(host: PluginHost, tmp_path: Path) -> None:
    """The caption is about real attention weights, not the scores the step shows."""
    text = SHOW.format(stage="scores", caption="Every row of real attention weights adds up to 1.")
    assert warnings_of(text, host, tmp_path) == []


def test_claims_lists_what_was_checked_and_what_is_prose(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    text = SHOW.format(stage="weights", caption="Each row of the weights sums to 1.")
    text = text.replace("steps:\n", "steps:\n  - narration: Each column sums to 1.\n")
    path = tmp_path / "lesson.yaml"
    path.write_text(text, encoding="utf-8")
    status, out, err = attn("lesson", "check", str(path), "--claims")
    assert (status, err) == (0, "")
    # An option before the path is read as one after it (argparse alone would refuse the path).
    assert attn("lesson", "check", "--claims", str(path)) == (status, out, err)
    lines = out.splitlines()
    narration, caption = where(text, "Each column"), where(text, "Each row")
    assert (
        f'{path}:{narration}: "Each column sums to 1" -- prose (not checked: the narration shows no table)'
        in lines
    )
    assert (
        f"{path}:{caption}: \"Each row of the weights sums to 1\" -- checked: the row sums of 'weights'"
        in lines
    )
    assert lines[-1] == (
        f"{path}: 2 sentences state a relation or a count: 1 checked (0 false), 1 prose"
    )


def test_claims_goes_only_with_check(attn: Callable[..., tuple[int, str, str]]) -> None:
    status, _out, err = attn("lesson", "run", "01", "--plain", "--claims")
    assert status == 2 and "--claims goes with 'attn lesson check'" in err
    status, _out, err = attn("lesson", "check", "--claims", "--bogus", "lessons")
    assert status == 2 and "unrecognized arguments: --bogus" in err


def test_a_typed_number_no_table_shows_is_warned_where_it_is_typed(
    host: PluginHost, tmp_path: Path
) -> None:
    shown = f"{WEIGHTS[1, 1]:.2f}"  # the weight of "journey" on itself, as numpy has it
    absent = next(
        f"{v / 100:.2f}"
        for v in range(11, 99)
        if not np.isclose(WEIGHTS, v / 100, atol=0.005).any()
        and not np.isclose(SCORES, v / 100, atol=0.005).any()
        and not np.isclose(X, v / 100, atol=0.005).any()
    )
    text = SHOW.format(stage="weights", caption=f"Journey keeps {shown} of its own attention.")
    assert not [w for w in warnings_of(text, host, tmp_path) if shown in w]
    text = SHOW.format(stage="weights", caption=f"Journey keeps {absent} of its own attention.")
    warned = [w for w in warnings_of(text, host, tmp_path) if absent in w]
    assert warned == [
        f"{where(text, absent)}: warning: {absent} in the show is in no table this lesson "
        "shows, nor a live value or a formula shown with a table; write it as a live value "
        "({{name}}), or show where it comes from"
    ]


def test_a_loop_titled_so_far_must_hold_the_stages_values(host: PluginHost) -> None:
    """naive-loop's scores loop writes each score of X Xᵀ: titled "scores so far", true."""
    assert holds_stage("scores", "score") and not holds_stage("grad_scores", "D_from_dP")
    lesson = load_lesson(shipped_dir() / "01_dot_products.yaml", host)
    runner = LessonRunner(lesson, host)
    try:
        loops = [step for step in lesson.steps if isinstance(step, Loop)]
        assert loops and all(_so_far(loop, runner) is None for loop in loops)
        row = next(iter(runner.substeps(loops[0])))
        assert row.tensors["score"].item() == pytest.approx(SCORES[row.position], abs=1e-4)
    finally:
        runner.close()


class _Sub:
    def __init__(self, cell: tuple[int, int], value: float) -> None:
        import torch

        from tracer.equations import Dot

        self.position = cell
        self.tensors = {"score": torch.tensor(value), "query": torch.ones(2), "key": torch.ones(2)}
        self.equations = (Dot("query", "key", "score"),)
        self.equation = self.equations[0]


class _FakeRunner:
    """A loop's sub-steps and its stage's final table, as a variant might yield them."""

    def __init__(self, written: dict[tuple[int, int], float], final: np.ndarray) -> None:
        self.written, self.final = written, final

    def substeps(self, _step: Loop) -> list[_Sub]:
        return [_Sub(cell, value) for cell, value in self.written.items()]

    def tensor(self, _ref: object) -> object:
        import torch

        class _Resolved:
            tensor = torch.from_numpy(self.final)

        return _Resolved()


def test_a_so_far_table_with_another_quantity_or_empty_cells_is_warned() -> None:
    loop = Loop("naive-loop", "scores", line=7, column=5)  # no limit: it runs to its end
    whole = {(r, c): float(SCORES[r, c]) for r in range(2) for c in range(2)}
    assert (
        _so_far(
            loop,
            _FakeRunner(whole, SCORES[:2, :2]),
        )
        is None
    )  # type: ignore[arg-type]
    other = dict(whole) | {(1, 0): float(WEIGHTS[1, 0])}
    said = _so_far(loop, _FakeRunner(other, SCORES[:2, :2]))  # type: ignore[arg-type]
    assert said is not None and "cell (1, 0) holds" in said and "'scores so far'" in said
    even = {cell: value for cell, value in whole.items() if cell[1] % 2 == 0}
    said = _so_far(loop, _FakeRunner(even, SCORES[:2, :2]))  # type: ignore[arg-type]
    assert said is not None and "filled 2 of the 4 cells" in said


def test_the_shipped_lessons_state_no_false_relation_and_type_no_unshown_number(
    host: PluginHost,
) -> None:
    found = []
    for path in sorted(shipped_dir().glob("*.yaml")):
        lesson = load_lesson(path, host)
        runner = LessonRunner(lesson, host)
        try:
            found += relation_warnings(lesson, runner, str(path))
            found += unshown_numbers(lesson, runner, str(path))
        finally:
            runner.close()
    assert found == []


QUIZ = """title: T
summary: S
steps:
  - quiz:
      question: Does each column of the weights sum to 1? Pick the sentence that is true.
      choices:
        - Each column of the weights sums to 1.
        - Each row of the weights sums to 1.
      answer: Each row of the weights sums to 1.
      show: {{variant: vectorized, stage: weights}}
      explanation: {explanation}
"""


def test_a_question_and_a_wrong_choice_state_nothing_an_explanation_does(
    host: PluginHost, tmp_path: Path
) -> None:
    """The wrong choice is false on purpose (numpy: the columns do not sum to 1), and the
    question asks; the explanation states, and is checked."""
    assert not np.allclose(WEIGHTS.sum(axis=0), 1)
    right = QUIZ.format(explanation="Softmax runs along each row, so each row sums to 1.")
    assert warnings_of(right, host, tmp_path) == []
    wrong = QUIZ.format(explanation="Softmax runs down each column, so each column sums to 1.")
    warned = warnings_of(wrong, host, tmp_path)
    assert len(warned) == 1 and warned[0].startswith(where(wrong, "Softmax runs down")), warned


def test_two_sides_that_differ_do_not_match(host: PluginHost, tmp_path: Path) -> None:
    """A causal mask changes every row but the last (numpy: softmax of X Xᵀ is not lower
    triangular), so vectorized and masked weights differ."""
    assert not np.allclose(WEIGHTS, np.tril(WEIGHTS))
    fields = {"stage": "weights", "left": "vectorized", "right": "masked"}
    text = COMPARE.format(**fields, caption="They match.")
    warned = warnings_of(text, host, tmp_path)
    assert len(warned) == 1 and warned[0].startswith(where(text, "They match")), warned
    text = COMPARE.format(**fields, caption="The first 5 rows differ and the last rows match.")
    assert warnings_of(text, host, tmp_path) == []  # a difference: prose


def test_the_first_rows_agree_only_where_both_sides_agree(host: PluginHost, tmp_path: Path) -> None:
    """Causal weights differ from full ones in every row but the last (numpy: the first row
    of the masked weights is [1, 0, ...], of the full ones softmax of X Xᵀ's first row)."""
    assert not np.allclose(WEIGHTS[:2], np.eye(6)[:2])
    fields = {"stage": "weights", "left": "vectorized", "right": "masked"}
    text = COMPARE.format(**fields, caption="The first two rows agree.")
    warned = warnings_of(text, host, tmp_path)
    assert len(warned) == 1 and warned[0].startswith(where(text, "The first two")), warned
    fields = {"stage": "scores", "left": "naive-loop", "right": "vectorized"}
    text = COMPARE.format(**fields, caption="The first three rows agree.")  # X Xᵀ both ways
    assert warnings_of(text, host, tmp_path) == []


def test_a_part_of_a_table_is_prose_the_whole_table_is_checked(
    host: PluginHost, tmp_path: Path
) -> None:
    """Causal weights (numpy: softmax of X Xᵀ with the later keys at -inf) are 0 above the
    diagonal: "all the future weights are 0" is about a part, "every weight is positive" is
    false of the whole."""
    masked = np.where(np.triu(np.ones((6, 6)), 1) > 0, -np.inf, SCORES)
    causal = np.exp(masked) / np.exp(masked).sum(axis=1, keepdims=True)
    assert (causal[np.triu_indices(6, 1)] == 0).all() and not (causal > 0).all()
    text = SHOW.format(stage="weights", caption="All the future weights are 0.").replace(
        "vectorized", "masked"
    )
    assert warnings_of(text, host, tmp_path) == []
    text = SHOW.format(stage="weights", caption="Every weight is positive.").replace(
        "vectorized", "masked"
    )
    warned = warnings_of(text, host, tmp_path)
    assert len(warned) == 1 and warned[0].startswith(where(text, "Every weight")), warned


LOOP = """title: T
summary: S
steps:
  - narration: The loop fills the scores.
  - loop:
      variant: naive-loop
      stage: scores
      caption: One dot product per sub-step.
"""


def test_a_so_far_warning_is_at_the_loop(host: PluginHost, tmp_path: Path) -> None:
    from tracer.lessons.relation_claims import so_far_loops

    path = tmp_path / "lesson.yaml"
    path.write_text(LOOP, encoding="utf-8")
    lesson = load_lesson(path, host)
    whole = {(r, c): float(SCORES[r, c]) for r in range(6) for c in range(6)}
    assert so_far_loops(lesson, _FakeRunner(whole, SCORES), str(path)) == []  # type: ignore[arg-type]
    wrong = whole | {(2, 3): float(WEIGHTS[2, 3])}  # another quantity in one cell
    found = so_far_loops(lesson, _FakeRunner(wrong, SCORES), str(path))  # type: ignore[arg-type]
    line, column = (int(n) for n in where(LOOP, "loop:").split(":"))
    assert [(p.line, p.column) for p in found] == [(line, column)]  # at "loop:"
    assert "cell (2, 3) holds" in found[0].message


def test_numbers_in_code_live_values_or_with_three_decimals_are_not_read_as_two(
    host: PluginHost, tmp_path: Path
) -> None:
    from tracer.lessons.typed_values import typed_two_decimals

    said = "Prints `0.12` and {{w:.2f}}; 0.123 goes stale; 3.5 and 12 are not values; 0.12 is."
    assert [number for _, number in typed_two_decimals(said)] == ["0.12"]


def test_a_very_long_sentence_is_prose(host: PluginHost, tmp_path: Path) -> None:
    """Read as one claim it would scan on from every 'row'; it is prose instead."""
    caption = "Each row " + "and row " * 4000 + "sums to 2."
    assert warnings_of(SHOW.format(stage="weights", caption=caption), host, tmp_path) == []


def test_a_label_is_checked_against_its_own_table(host: PluginHost, tmp_path: Path) -> None:
    """A label titles its side of a compare: "all 30 scores" over X Xᵀ (numpy: 36 cells)."""
    assert SCORES.size == 36
    text = COMPARE.format(
        stage="scores", left="naive-loop", right="vectorized", caption="Both ways."
    ).replace("{variant: naive-loop}", '{variant: naive-loop, label: "all 30 scores"}')
    warned = warnings_of(text, host, tmp_path)
    assert len(warned) == 1 and warned[0].startswith(where(text, "all 30 scores")), warned
    assert warnings_of(text.replace("all 30", "all 36"), host, tmp_path) == []


def test_the_row_of_a_token_is_checked_alone(host: PluginHost, tmp_path: Path) -> None:
    """journey's row of X Xᵀ (numpy) does not sum to 1; its row of weights does, and so do the
    causal weights' rows, whose future cells are 0 ('the future rows' is a part: prose)."""
    assert not np.isclose(SCORES[1].sum(), 1) and np.isclose(WEIGHTS[1].sum(), 1)
    text = SHOW.format(stage="scores", caption="The row of 'journey' sums to 1.")
    warned = warnings_of(text, host, tmp_path)
    assert len(warned) == 1 and "row of 'journey'" in warned[0], warned
    assert warned[0].startswith(where(text, "The row of"))
    text = SHOW.format(stage="weights", caption="The row of 'journey' sums to 1.")
    assert warnings_of(text, host, tmp_path) == []
    assert not np.allclose(WEIGHTS[0], WEIGHTS[1])  # read whole, the sentence would be false
    text = SHOW.format(stage="weights", caption="Here the future rows are the same.")
    assert warnings_of(text, host, tmp_path) == []
