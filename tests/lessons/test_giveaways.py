"""What a quiz hides is decided once, over the whole screen; what hiding cannot mend is a
problem `attn lesson check` reports at the quiz.

Reference numbers come from numpy over the built-in inputs (the Basic Self Attention
notebook's embeddings, tests/data/seeds.py), never from the walk being tested.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.data import seeds
from tracer.lessons.check import check_lesson, open_checked
from tracer.lessons.hiding import HIDDEN_NOTE, quiz_tables
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import parse_lesson
from tracer.lessons.model import Lesson
from tracer.lessons.reading import LessonError
from tracer.lessons.views import step_view
from tracer.plugin_host import PluginHost
from tracer.render.text import format_scalar
from tracer.session.lesson import LessonSession as Session
from tracer.session.lesson import LoopView, start_session
from tracer.session.moves import Moved
from tracer.text.plain_lesson import plain_lines

TOKENS = ("Your", "journey", "starts", "with", "one", "step")
X = np.array(seeds.SEED_003_INPUTS)
SCORES = X @ X.T
WEIGHTS = np.exp(SCORES) / np.exp(SCORES).sum(axis=1, keepdims=True)

TWO_QUIZZES = """title: T
summary: S
steps:
  - show: {variant: vectorized, stage: weights}
  - quiz:
      id: first
      question: How much weight does journey give Your?
      answer: {variant: vectorized, stage: weights, cell: [journey, Your]}
      tolerance: 0.005
  - quiz:
      id: second
      question: What is the score of one with step?
      answer: {variant: naive-loop, stage: scores, cell: [one, step]}
      tolerance: 0.005
  - show: {variant: naive-loop, stage: scores}
"""


def load(text: str, host: PluginHost) -> Lesson:
    return parse_lesson(text, "l.yaml", host)


def steps(text: str, host: PluginHost) -> Lesson:
    """A lesson of these steps (YAML lines of a ``steps:`` list) and nothing else."""
    return load("title: T\nsummary: S\nsteps:\n" + text, host)


def test_a_hidden_weight_hides_one_more_of_its_row(host: PluginHost) -> None:
    """A row of softmax weights adds up to 1: with one cell hidden the rest of it would give
    it away (1 minus the others), so one more cell of it reads "?" (the next one), and a
    subtraction gives only the sum of the two; the rest of the row stays shown."""
    lesson = load(TWO_QUIZZES, host)
    runner = LessonRunner(lesson, host)
    journey = TOKENS.index("journey")
    assert abs(WEIGHTS[journey].sum() - 1) < 1e-9  # the oracle: the row adds up to 1
    (table,) = quiz_tables(lesson, runner, 1, answered={"second"}).tables
    # Every weight within the tolerance reads "?", and so does the next cell of each row that
    # holds just one of them (a row with two hidden gives neither: only their sum).
    near = np.abs(WEIGHTS - WEIGHTS[journey, 0]) <= 0.005
    expected = {(int(r), int(c)) for r, c in zip(*np.nonzero(near), strict=True)}
    for row in range(6):
        if near[row].sum() == 1:
            (column,) = np.nonzero(near[row])[0]
            expected.add((row, int(column) + 1 if column < 5 else int(column) - 1))
    assert near[journey].sum() == 1 and table.hidden == expected
    for row in range(6):  # no row holds a lone hidden weight: 1 minus the rest gives nothing
        assert sum((row, c) in table.hidden for c in range(6)) in (0, 2, 3, 4, 5, 6)
    assert np.allclose(table.resolved.tensor.double().numpy(), WEIGHTS, atol=1e-6)


def test_a_step_hides_the_answers_of_quizzes_not_yet_answered(host: PluginHost) -> None:
    """Read top to bottom, the show step before the quizzes hides both answers; the show
    step after them hides nothing. In a session, answering one quiz reveals only its own."""
    lesson = load(TWO_QUIZZES, host)
    runner = LessonRunner(lesson, host)
    one, step, journey = (TOKENS.index(t) for t in ("one", "step", "journey"))
    (weights,) = step_view(lesson, runner, 0).tables
    assert (journey, 0) in weights.hidden
    assert step_view(lesson, runner, 3).tables[0].hidden == frozenset()
    assert abs(SCORES[one, step] - SCORES[step, one]) < 1e-12  # the twin reads the same
    session = start_session(lesson, host, Path("l.yaml"))
    session.attach(None)
    session.go_to(3)  # skipped both quizzes with →: the scores table keeps the second's
    assert {(one, step), (step, one)} <= session.view().tables[0].hidden
    session.go_to(2)
    assert session.answer(f"{SCORES[one, step]:.4f}").right
    session.go_to(3)
    assert session.view().tables[0].hidden == frozenset()
    session.go_to(1)  # the first is still not answered: its own screen still hides it
    assert (journey, 0) in session.view().tables[0].hidden
    session.close()


def test_check_reports_a_question_that_states_its_answer(host: PluginHost) -> None:
    text = """title: T
summary: S
values:
  s: {variant: naive-loop, stage: scores, cell: [one, step]}
steps:
  - quiz:
      question: "The score of one with step is {{s}}: what is it?"
      answer: {variant: naive-loop, stage: scores, cell: [one, step]}
      tolerance: 0.005
  - quiz:
      question: What is the score of one with with?
      hints: ["It is close to 0.35."]
      answer: {variant: naive-loop, stage: scores, cell: [one, with]}
      tolerance: 0.005
"""
    one, step, with_ = (TOKENS.index(t) for t in ("one", "step", "with"))
    assert abs(SCORES[one, with_] - 0.35) <= 0.005  # the hint's 0.35 is a right answer
    found = [(p.line, p.message) for p in check_lesson(load(text, host), host)]
    assert found == [
        (
            6,
            f"the quiz's question states its answer ({SCORES[one, step]:.4f}); word it "
            "without the number, so the answer is not on the quiz's screen",
        ),
        (
            10,
            f"the quiz's hint 1 states its answer ({SCORES[one, with_]:.4f}); word it "
            "without the number, so the answer is not on the quiz's screen",
        ),
    ]


def test_check_reports_the_words_that_state_it_where_they_are_written(
    host: PluginHost, tmp_path: Path
) -> None:
    """Read from a file, the problem is at the hint's words, which the teacher rewords, not
    at '- quiz:'."""
    path = tmp_path / "lesson.yaml"
    path.write_text(
        "title: T\nsummary: S\nsteps:\n"
        "  - quiz:\n"
        "      question: What is the score of one with with?\n"
        "      hints:\n"
        "        - Think of the row of one.\n"
        "        - It is close to 0.35.\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [one, with]}\n"
        "      tolerance: 0.005\n",
        encoding="utf-8",
    )
    with pytest.raises(LessonError) as raised:
        open_checked(path, host)
    assert str(raised.value).startswith(f"{path}:8:11: the quiz's hint 2 states its answer")


def test_check_reports_an_answer_that_many_cells_read(host: PluginHost) -> None:
    """The causal weights of (Your, journey) is 0, as are the 14 other weights above the
    diagonal: hidden, the 15 "?" say "0" all the same."""
    text = """title: T
summary: S
steps:
  - show: {variant: masked, stage: weights, tensor: weights}
  - quiz:
      question: How much weight does Your give journey once the future is masked?
      answer: {variant: masked, stage: weights, cell: [Your, journey]}
      tolerance: 0.005
"""
    (problem,) = check_lesson(load(text, host), host)
    assert problem.line == 5
    assert problem.message.startswith("15 cells of 'weights' read the answer (0.0000)")


@pytest.mark.parametrize("kind", ["question", "table"])
def test_every_front_end_refuses_a_giveaway_as_check_does(
    host: PluginHost, kind: str, tmp_path: Path
) -> None:
    """One gate: the lesson `attn lesson check` refuses for stating its answer is refused by
    `run`, `--plain` and `export` too, with the same line."""
    question = "Is it {{s}}?" if kind == "question" else "What is it?"
    text = f"""title: T
summary: S
values:
  s: {{variant: naive-loop, stage: scores, cell: [one, step]}}
steps:
  - quiz:
      question: "{question}"
      answer: {{variant: naive-loop, stage: scores, cell: [one, step]}}
      tolerance: 0.005
"""
    if kind == "table":  # the answer itself is no giveaway: only a question that states it
        assert check_lesson(load(text, host), host) == []
        return
    path = tmp_path / "giveaway.yaml"
    path.write_text(text, encoding="utf-8")
    problems = [str(p) for p in check_lesson(load(text, host), host)]
    assert problems and "states its answer" in " ".join(problems)
    with pytest.raises(LessonError) as refused:
        open_checked(path, host)
    assert [p.message for p in refused.value.problems] == [
        p.message for p in check_lesson(load(text, host), host)
    ]


def test_plain_says_what_a_hidden_cell_of_a_show_step_means(host: PluginHost) -> None:
    lesson = load(TWO_QUIZZES, host)
    text = "\n".join(plain_lines(lesson, host))
    first_show = text.split("--- Step 2")[0]
    # The legend names the quiz the "?" waits for and says what the hidden cells are: the
    # answer's own cell, other weights as near it, and the next weight of their rows (1
    # minus the rest would give it).
    journey = TOKENS.index("journey")
    near = np.abs(WEIGHTS - WEIGHTS[journey, 0]) <= 0.005
    assert near.sum() > 1  # the oracle: other weights are within the tolerance too
    assert "?" in first_show
    assert (
        "(? = hidden until the quiz at step 2 is answered: the cell that holds its answer; "
        "a number equal to its answer within its tolerance, read off it would be accepted; "
        "a number its answer follows from in one operation)"
    ) in first_show
    assert "(? = " not in text.split("--- Step 4")[1]  # after both quizzes: nothing hidden


CROSS = """title: T
summary: S
inputs:
  tokens: [Le, chat, dort]
  embeddings: [[0.2, 0.9, 0.1], [0.7, 0.3, 0.5], [0.4, 0.6, 0.8]]
  source:
    tokens: [The, cat, is, sleeping]
    embeddings: [[0.1, 0.2, 0.3, 0.4], [0.8, 0.1, 0.6, 0.2], [0.3, 0.9, 0.2, 0.7], [0.5, 0.4, 0.9, 0.1]]
values:
  best-chat: {variant: cross-attention, stage: weights, then: [{pick: chat}, argmax]}
  best-row: {variant: cross-attention, stage: weights, then: [{argmax: -1}], cell: [chat]}
steps:
  - quiz:
      question: Which source token does chat attend to most?
      choices: [The, cat, is, sleeping]
      answer: {variant: cross-attention, stage: weights, then: [{pick: chat}, argmax]}
  - narration: "chat attends most to {{best-chat:token}} ({{best-row:token}})."
  - show: {variant: cross-attention, stage: weights}
"""


def test_an_argmax_over_the_source_names_a_source_token(host: PluginHost) -> None:
    """In cross-attention a row of weights runs over the source: its argmax is a source
    position, named by a source token in prose and as a choice (not the target's "dort")."""
    lesson = load(CROSS, host)
    assert check_lesson(lesson, host) == []
    runner = LessonRunner(lesson, host)
    weights = runner.tensor(lesson.steps[2].tables()[0]).tensor  # shown after the quiz
    assert tuple(weights.shape) == (3, 4)  # target × source, as the variant computed it
    source = ("The", "cat", "is", "sleeping")
    best = source[int(np.argmax(weights.double().numpy()[1]))]
    text = step_view(lesson, runner, 1).text
    assert text == f"chat attends most to {best} ({best})."
    quiz = lesson.quizzes[0]
    assert runner.answer(quiz) == source.index(best)
    assert runner.answer_text(quiz) == best
    runner.close()


def test_a_derived_table_says_in_words_what_the_lesson_did(host: PluginHost) -> None:
    """Not the lesson file's pipeline ("derived from scores.scores", "scale(100) then exp")."""
    lesson = steps(
        "  - show:\n      variant: vectorized\n"
        "      stage: scores\n      then: [{scale: 100}, exp, {normalize: -1}]\n",
        host,
    )
    runner = LessonRunner(lesson, host)
    (table,) = step_view(lesson, runner, 0).tables
    assert table.title == "Worked out by the lesson from scores, after the run"
    assert table.formula == (
        "multiplied by 100, then e to the power of each value, then each value divided by "
        "the sum along each row"
    )
    runner.close()


def test_a_pick_is_named_by_the_axis_it_picks_from(host: PluginHost) -> None:
    """ "row 1" of a table of heads, or of a single row, would say what is not so: a pick
    names the head, or the token, it takes, and an operation over a single row does not
    say "along each row"."""
    lesson = steps(
        "  - show: {variant: multihead, stage: weights, then: [{pick: 1}]}\n"
        "  - show: {variant: vectorized, stage: scores, query: journey,"
        " then: [{pick: starts}, {softmax: 0}]}\n"
        "  - show: {variant: vectorized, stage: scores, then: [{pick: one}, {softmax: -1}]}\n",
        host,
    )
    runner = LessonRunner(lesson, host)
    formulas = [step_view(lesson, runner, n).tables[0].formula for n in range(3)]
    assert formulas == [
        "head 1",
        'the key "starts", then softmax of its one value',
        'the query "one", then softmax over its values',
    ]
    runner.close()


PLAIN_ANSWER = """title: T
summary: S
steps:
  - show: {variant: masked, stage: mask}
  - quiz:
      id: hidden-pair
      question: Does the mask hide journey from Your (1) or not (0)?
      answer: {variant: masked, stage: mask, cell: [Your, journey]}
      tolerance: 0
"""


def test_a_single_digit_answer_is_hidden_at_its_own_cell_only(host: PluginHost) -> None:
    """A mask is 0s and 1s: hiding every 1 on every step for a quiz whose answer is 1 would
    hide the mask. Before the quiz the answer's own cell reads "?" and the other 1s, which
    say nothing of it, show; on the quiz's own screen no 1 shows at all."""
    lesson = load(PLAIN_ANSWER, host)
    runner = LessonRunner(lesson, host)
    your, journey = TOKENS.index("Your"), TOKENS.index("journey")
    (table,) = step_view(lesson, runner, 0, answered=()).tables
    assert table.hidden == {(your, journey)}
    (table,) = step_view(lesson, runner, 1, answered=()).tables
    ones = {(r, c) for r in range(6) for c in range(6) if c > r}  # the causal mask's 1s
    assert table.hidden == ones
    (table,) = step_view(lesson, runner, 0, answered=("hidden-pair",)).tables
    assert table.hidden == frozenset()
    assert runner.answer_text(lesson.quizzes[0]) == "1"
    runner.close()


def test_a_title_that_states_an_answer_reads_question_mark_there(host: PluginHost) -> None:
    """The kv-cache's work stage is titled with both totals; while their quizzes are not
    answered the title keeps its words and says "?" for the totals alone."""
    lesson = steps(
        "  - show: {variant: kv-cache, stage: work, tensor: cached_total}\n"
        "  - quiz:\n      id: total\n      question: How many multiply-adds in all?\n"
        "      answer: {variant: kv-cache, stage: work, tensor: cached_total, cell: [step]}\n"
        "      tolerance: 0\n",
        host,
    )
    runner = LessonRunner(lesson, host)
    (table,) = step_view(lesson, runner, 0, answered=()).tables
    total = runner.answer_text(lesson.quizzes[0])
    stage_title = table.resolved.stage.title
    assert total in stage_title and total not in table.title
    assert table.title == stage_title.replace(total, "?", 1)
    (table,) = step_view(lesson, runner, 0, answered=("total",)).tables
    assert table.title == stage_title
    runner.close()


LOOP_THEN_QUIZ = """title: T
summary: S
steps:
  - loop: {variant: naive-loop, stage: scores, caption: Every dot product in turn.}
  - compare:
      left: {variant: naive-loop, stage: scores, label: the loop}
      right: {variant: vectorized, stage: scores, label: the matrix product}
  - quiz:
      id: one-step
      question: What is the score of one with step?
      answer: {variant: naive-loop, stage: scores, cell: [one, step]}
      tolerance: 0.005
  - loop: {variant: naive-loop, stage: scores}
"""


def loop_views(session: Session, number: int) -> list[LoopView]:
    """Every sub-step of loop step ``number`` as the session shows it (→ by →)."""
    session.go_to(number)
    seen = []
    while session.position.step == number:
        loop = session.view().loop
        assert loop is not None and loop.shown is not None
        seen.append(loop)
        if not isinstance(session.next(), Moved):
            break
    return seen


def test_a_loop_keeps_a_later_quizs_answer_off_every_sub_step(host: PluginHost) -> None:
    """The loop of dot products writes the answer of the quiz after it: skipped with →, the
    sub-step that computes it reads "?" (its score, the matrix's cell and its symmetric
    twin) and its arithmetic is not written out, which would add up to it; once the quiz
    is answered, every number shows."""
    one, step = TOKENS.index("one"), TOKENS.index("step")
    assert abs(SCORES[one, step] - SCORES[step, one]) < 1e-12  # the oracle's twin
    near = {
        (int(r), int(c))
        for r, c in zip(*np.nonzero(np.abs(SCORES - SCORES[one, step]) <= 0.005), strict=True)
    }
    session = start_session(load(LOOP_THEN_QUIZ, host), host, Path("l.yaml"))
    session.attach(None)
    loops = loop_views(session, 0)
    assert len(loops) == 36
    for loop in loops:
        shown = loop.shown
        assert shown is not None
        position = tuple(loop.sub.position)
        if position in near:
            assert shown.hidden["score"] == {(0, 0)} and not shown.arithmetic
        else:
            assert shown.hidden["score"] == frozenset() and shown.arithmetic
            assert abs(float(loop.sub.tensors["score"]) - SCORES[position]) < 1e-5
    # The matrix as it stands at the last sub-step hides every cell near the answer.
    assert loops[-1].shown is not None and loops[-1].shown.canvas_hidden == near
    session.go_to(2)
    assert session.answer(f"{SCORES[one, step]:.4f}").right
    assert all(not loop.shown.concealed for loop in loop_views(session, 0) if loop.shown)
    session.close()


def test_a_compare_hides_the_difference_only_where_it_would_give_a_side_away(
    host: PluginHost,
) -> None:
    """Both sides hide the quiz's cells: the difference of two hidden numbers says nothing
    of either, so it shows (the loop and the matrix product agree up to rounding)."""
    one, step = TOKENS.index("one"), TOKENS.index("step")
    session = start_session(load(LOOP_THEN_QUIZ, host), host, Path("l.yaml"))
    session.attach(None)
    session.go_to(1)
    view = session.view().step
    left, right = view.tables
    assert {(one, step), (step, one)} <= left.hidden and left.hidden == right.hidden
    assert view.difference_hidden == frozenset() and view.largest != "?"
    assert (left.label, right.label) == ("the loop", "the matrix product")
    session.close()


ONE_SIDE_HIDDEN = """title: T
summary: S
steps:
  - compare:
      left: {variant: naive-loop, stage: scores, label: scores}
      right: {variant: vectorized, stage: weights, label: weights}
  - quiz:
      id: one-step
      question: What is the score of one with step?
      answer: {variant: naive-loop, stage: scores, cell: [one, step]}
      tolerance: 0.005
"""


def test_a_compare_hides_the_difference_where_one_side_is_hidden(host: PluginHost) -> None:
    """The scores hide the quiz's cells and the weights beside them show theirs: the
    difference there is the weight minus the answer, one subtraction from it, so it reads
    "?" (and the largest difference too, when it is one of them)."""
    one, step = TOKENS.index("one"), TOKENS.index("step")
    difference = WEIGHTS - SCORES
    session = start_session(load(ONE_SIDE_HIDDEN, host), host, Path("l.yaml"))
    session.attach(None)
    view = session.view().step
    left, right = view.tables
    assert {(one, step), (step, one)} <= left.hidden and not right.hidden
    assert view.difference_hidden == left.hidden
    at = np.unravel_index(np.abs(difference).argmax(), difference.shape)
    largest_hidden = (int(at[0]), int(at[1])) in left.hidden
    assert (view.largest == "?") == largest_hidden
    session.go_to(1)
    assert session.answer(f"{SCORES[one, step]:.4f}").right
    session.go_to(0)
    view = session.view().step
    assert view.difference is not None and view.difference_hidden == frozenset()
    assert view.largest == format_scalar(float(np.abs(difference).max()))
    session.close()


def test_plain_keeps_the_answer_off_a_loop_before_its_quiz(host: PluginHost) -> None:
    """Read top to bottom: the loop before the quiz prints "?" for the answer's sub-steps
    and says what "?" means; the loop after it prints the score the oracle computes."""
    one, step = TOKENS.index("one"), TOKENS.index("step")
    text = "\n".join(plain_lines(load(LOOP_THEN_QUIZ, host), host))
    before, after = text.split("--- Step 3")[0], text.split("--- Step 4")[1]
    answer = f"{SCORES[one, step]:.4f}"
    assert answer not in before and HIDDEN_NOTE in before
    assert f"sub-step 30 at ({one}, {step}; query one, key step)" in before
    assert f"score = {answer}" in after and HIDDEN_NOTE not in after


def test_a_focus_line_says_question_mark_for_a_hidden_cell(host: PluginHost) -> None:
    """``--plain`` says the focused cell again in words: while the quiz after it is
    unanswered, its answer reads "?" there as in the table; once the quiz is past, the
    number the oracle computes."""
    text = TWO_QUIZZES.replace(
        "  - show: {variant: vectorized, stage: weights}",
        "  - show: {variant: vectorized, stage: weights, focus: {cell: [journey, Your]}}",
    ).replace(
        "  - show: {variant: naive-loop, stage: scores}",
        "  - show: {variant: vectorized, stage: weights, focus: {row: journey}}",
    )
    printed = "\n".join(plain_lines(load(text, host), host))
    journey = TOKENS.index("journey")
    answer = f"{WEIGHTS[journey, 0]:.4f}"
    assert "Focus: the cell for journey and Your: ?" in printed.split("--- Step 2")[0]
    assert f"Focus: row journey: Your {answer}," in printed.split("--- Step 4")[1]


TYPED_RESULT = """title: T
summary: S
steps:
  - narration: With 4 heads of 2 columns the cache keeps 16 numbers per token.
  - quiz:
      id: sixteen
      question: How many numbers per token does the cache keep?
      answer: 16
      tolerance: 0
  - quiz:
      id: four
      question: How many heads?
      answer: 4
      tolerance: 0
"""


def test_a_whole_result_typed_in_prose_is_hidden_but_a_single_digit_setting_is_not(
    host: PluginHost,
) -> None:
    """Skipping the quizzes and reading on: "16 numbers" states the first's answer and reads
    "?"; "4 heads" states the second's ("how many heads?") in a sentence, which is said once
    it is answered."""
    lesson = load(TYPED_RESULT, host)
    runner = LessonRunner(lesson, host)
    text = step_view(lesson, runner, 0, answered=()).text
    assert text == "(said once the quiz at step 3 is answered)."
    text = step_view(lesson, runner, 0, answered=("four",)).text
    assert text == "With 4 heads of 2 columns the cache keeps ? numbers per token."
    text = step_view(lesson, runner, 0, answered=("sixteen", "four")).text
    assert text == "With 4 heads of 2 columns the cache keeps 16 numbers per token."
    runner.close()


def test_a_diagonal_of_queries_and_keys_is_labelled_by_token(host: PluginHost) -> None:
    """Each token's score with itself: labelled "Your", "journey", ... as the table beside it
    is, not 0..5."""
    lesson = steps("  - show: {variant: vectorized, stage: scores, then: [diagonal]}\n", host)
    runner = LessonRunner(lesson, host)
    (table,) = step_view(lesson, runner, 0).tables
    assert table.resolved.axes == ("query",)
    assert np.allclose(table.resolved.tensor.double().numpy(), np.diag(SCORES), atol=1e-6)
    text = "\n".join(plain_lines(lesson, host))
    assert " ".join(TOKENS) in " ".join(text.split())
    runner.close()
