"""The lesson walk decides once what a quiz shows and hides; every front end draws that."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from tracer.inputs import load_inputs
from tracer.lessons.hiding import grid_cell, quiz_tables
from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import load_lesson, resolve_lesson
from tracer.lessons.model import Lesson, Loop, Quiz
from tracer.lessons.views import grade, lesson_summary, loop_at, quiz_at, step_as
from tracer.plugin_host import PluginHost
from tracer.session.walk import start_loop
from tracer.text.export import export_text
from tracer.text.plain_lesson import plain_lines

Attn = Callable[..., tuple[int, str, str]]
INPUTS = torch.tensor(load_inputs("your-journey").embeddings)
TOKENS = ("Your", "journey", "starts", "with", "one", "step")


def lesson_and_runner(name: str) -> tuple[Lesson, LessonRunner, PluginHost]:
    host = PluginHost(())
    lesson = load_lesson(resolve_lesson(name, ()), host)
    return lesson, LessonRunner(lesson, host), host


def step_text(text: str, number: int) -> str:
    """One step of ``--plain`` output (1-based)."""
    start = text.index(f"--- Step {number} of ")
    return text[start : text.index("--- ", start + 4)]


def test_grid_cells_fold_leading_axes_into_rows() -> None:
    assert grid_cell((6, 6), (4, 5)) == (4, 5)
    assert grid_cell((6,), (2,)) == (0, 2)
    assert grid_cell((2, 3, 4), (1, 2, 3)) == (5, 3)
    assert grid_cell((), ()) == (0, 0)
    assert grid_cell((6, 6), (6, 0)) is None


def test_the_answer_and_its_symmetric_twin_are_hidden() -> None:
    lesson, runner, _ = lesson_and_runner("01_dot_products")
    # Step 12: the score of "one" with "step", every other quiz answered already.
    ids = {q.id for n in range(len(lesson.steps)) if (q := quiz_at(lesson, n)) and q.id}
    view = quiz_tables(lesson, runner, 11, answered=ids - {"one-step"})
    one, step, with_ = TOKENS.index("one"), TOKENS.index("step"), TOKENS.index("with")
    (table,) = view.tables
    assert table.role == "context" and view.context is not None
    assert {(one, step), (step, one)} <= table.hidden
    # Nothing else: every hidden cell reads the answer (the table is X Xᵀ, from the inputs file).
    scores = INPUTS @ INPUTS.T
    answer = round(float(scores[one, step]), 4)
    assert all(abs(float(scores[r, c]) - answer) <= 0.005 for r, c in table.hidden)
    # Step 13 not answered (skipped, or read top to bottom): its answer and twin hide too.
    (table,) = quiz_tables(lesson, runner, 11).tables
    assert table.hidden >= {(one, step), (step, one), (one, with_), (with_, one)}


def test_a_quiz_with_its_own_table_borrows_no_other() -> None:
    lesson, runner, _ = lesson_and_runner("01_dot_products")
    view = quiz_tables(lesson, runner, 3)  # step 4: dot product of Your and journey
    (table,) = view.tables
    assert table.role == "show" and view.context is None
    assert torch.equal(table.resolved.tensor, INPUTS)
    assert table.hidden == frozenset()  # no input reads the answer


def test_plain_and_markdown_hide_the_same_cells_as_the_app() -> None:
    lesson, _, host = lesson_and_runner("01_dot_products")
    answer = f"{float(INPUTS[4] @ INPUTS[5]):.4f}"
    plain = "\n".join(plain_lines(lesson, host))
    quiz = step_text(plain, 12)
    table, _, after = quiz.partition("Answer:")
    assert answer not in table and table.count("?") >= 2
    assert answer in after
    markdown = export_text(lesson, host, "md")
    start = markdown.index("## Step 12 of")
    part = markdown[start : markdown.index("<summary>Answer", start)]
    assert answer not in part and "(the table from step 11)" in part


def test_markdown_in_prose_is_a_warning_at_its_position(tmp_path: Path, attn: Attn) -> None:
    lesson = tmp_path / "marked.yaml"
    lesson.write_text(
        "title: Marked\n"
        "summary: s\n"
        "steps:\n"
        "  - narration: |\n"
        "      ## A heading\n"
        "\n"
        "      A **bold** word and the `__init__` method.\n"
        "  - quiz:\n"
        "      question: Is it [linked](http://x)?\n"
        "      choices: [yes, no]\n"
        '      answer: "yes"\n',
        encoding="utf-8",
    )
    status, out, err = attn("lesson", "check", str(lesson))
    assert (status, err) == (0, "")  # a warning: the lesson is still sound
    lines = out.splitlines()
    assert lines[0] == (
        f"{lesson}:5:7: warning: '## A heading' in the narration is Markdown (heading), which is "
        "shown as written: prose is plain text; write it without the markup"
    )
    assert lines[1].startswith(f"{lesson}:7:9: warning: '**bold**' in the narration")
    assert lines[2].startswith(f"{lesson}:9:23: warning: '[linked](http://x)' in the question")
    assert lines[3] == f"{lesson}: ok (2 steps)"
    assert "__init__" not in out  # code in backticks is not markup


def test_the_shipped_lessons_write_plain_text() -> None:
    from tracer.lessons.check import markup_warnings
    from tracer.lessons.loader import find_lessons

    host = PluginHost(())
    for ref in find_lessons(()):
        assert markup_warnings(load_lesson(ref.path, host)) == [], ref.name


def plain_text(name: str) -> str:
    lesson, _, host = lesson_and_runner(name)
    return "\n".join(plain_lines(lesson, host))


def test_a_sub_steps_table_keeps_its_shape_and_labels_in_plain_text() -> None:
    text = step_text(plain_text("10_online_softmax"), 7)  # the tiles loop
    lines = text.split("\n")
    # The loop follows the query "journey" (so every table it names fits on a screen).
    start = lines.index("  scaled (1×2: query × key):")
    header, row = lines[start + 1 : start + 3]
    assert header.split() == ["Your", "journey"]  # the first tile's two keys
    assert row.split()[0] == "journey" and len(row.split()) == 3  # the focused query's row


def test_wide_tables_wrap_into_blocks_of_columns() -> None:
    from tracer.lessons.views import TABLE_WIDTH

    text = plain_text("11_training")
    shown = step_text(text, 5) + step_text(text, 6)  # the training loop and the loss table
    tables = [line for line in shown.split("\n") if line.startswith(" ")]
    assert tables and max(len(line) for line in tables) <= TABLE_WIDTH
    # Lesson 11's loss (51 values) comes in blocks, every step labelled once.
    loss = step_text(text, 6)
    headers = [line.split() for line in loss.split("\n") if line.strip().startswith("0 ")]
    labels = [
        label
        for line in loss.split("\n")
        if line.strip() and all(part.isdigit() for part in line.split())
        for label in line.split()
    ]
    assert headers and labels == [str(n) for n in range(51)]


def caption_of(lesson: Lesson, variant: str, stage: str, tensor: str | None) -> str:
    from tracer.lessons.model import Show

    return next(
        step.caption
        for step in lesson.steps
        if isinstance(step, Show)
        and (step.ref.variant, step.ref.stage, step.ref.tensor) == (variant, stage, tensor)
    )


def test_lesson_08s_caption_names_no_key_of_step_and_its_zeros_are_exact() -> None:
    from tracer.lessons.model import TensorRef

    lesson, runner, _ = lesson_and_runner("08_windows_and_groups")
    caption = caption_of(lesson, "sliding-window", "weights", "weights")
    ref = TensorRef("sliding-window", "weights", "weights", options=lesson.options)
    row = runner.tensor(ref).tensor[TOKENS.index("step")]
    zero = {token for token, weight in zip(TOKENS, row.tolist(), strict=True) if weight == 0.0}
    assert zero == {"Your", "journey", "starts"}  # a window of 3 from the end
    # Naming them would answer the quiz before it ("the earliest key 'step' sees").
    assert not any(f'"{token}"' in caption for token in TOKENS)
    assert "the keys outside it get exactly zero" in " ".join(caption.split())


def test_lesson_05s_caption_names_exactly_the_keys_starts_may_see() -> None:
    from tracer.lessons.model import TensorRef

    lesson, runner, _ = lesson_and_runner("05_causal_masking")
    caption = caption_of(lesson, "masked", "mask", None)
    ref = TensorRef("masked", "mask", options=lesson.options)
    row = runner.tensor(ref).tensor[TOKENS.index("starts")]
    seen = {token for token, hidden in zip(TOKENS, row.tolist(), strict=True) if not hidden}
    assert seen == {"Your", "journey", "starts"}
    assert "may see Your, journey and itself" in caption


def test_no_explanation_refers_to_a_table_the_lesson_never_shows() -> None:
    lesson, _, _ = lesson_and_runner("08_windows_and_groups")
    assert not any("keys_seen" in step.explanation for step in lesson.quizzes)


def test_grading_a_quiz_checks_against_the_inputs_and_names_what_to_record() -> None:
    lesson, runner, _ = lesson_and_runner("01_dot_products")
    # Step 4: the dot product of "Your" and "journey", from the inputs file (not our output).
    right = round(float(INPUTS[0] @ INPUTS[1]), 4)
    graded = grade(lesson, runner, 3, str(right))
    assert graded.right and graded.quiz_id == "your-journey" and graded.response == str(right)
    shown = re.search(r"-?\d+\.\d+", graded.answer)
    assert shown is not None and abs(float(shown.group()) - right) < 1e-3
    assert not grade(lesson, runner, 3, str(right + 1)).right
    with pytest.raises(TypeError):
        grade(lesson, runner, 2, "1")  # step 3 is narration: nothing to grade


def test_the_walk_says_which_steps_are_loops_and_quizzes() -> None:
    lesson, _, _ = lesson_and_runner("01_dot_products")
    assert [n for n in range(len(lesson.steps)) if loop_at(lesson, n)] == [6, 9]
    assert [n for n in range(len(lesson.steps)) if quiz_at(lesson, n)] == [3, 5, 11, 12]
    assert loop_at(lesson, len(lesson.steps)) is None and quiz_at(lesson, -1) is None


def test_stepping_a_loop_finds_one_sub_step_per_key_then_its_end() -> None:
    lesson, runner, _ = lesson_and_runner("01_dot_products")
    loop = step_as(lesson.steps[6], Loop)  # "journey" with each token
    state = start_loop(runner, loop)
    assert state is not None
    sub, seen = 0, []
    while (after := state.after(sub, loop.stage)) == "next":
        sub += 1
        seen.append(sub)
    assert after == "end"
    assert sub + 1 == len(TOKENS)  # one dot product per key
    assert state.count_known() == len(TOKENS) and state.last_sub() == len(TOKENS) - 1
    assert state.clamp(99) == len(TOKENS) - 1 and state.clamp(2) == 2
    assert not state.may_go_on(len(TOKENS) - 1) and state.may_go_on(0)


@dataclass
class Saved:
    right: bool


def test_the_lesson_summary_counts_what_was_recorded() -> None:
    lesson, _, _ = lesson_and_runner("01_dot_products")
    summary = lesson_summary(lesson, {"your-journey": Saved(True), "one-step": Saved(False)})
    assert "Quizzes: 1 of 4 right (2 answered)." in summary
    assert "Not answered: step 6, 13." in summary
    assert "What it covered:" in summary


ROOT = Path(__file__).resolve().parents[2]


def _modules(folder: str) -> list[Path]:
    return sorted(path.relative_to(ROOT) for path in (ROOT / folder).glob("*.py"))


FRONT_ENDS = [
    *_modules("tracer/tui"),
    *_modules("tracer/serve"),
    *_modules("tracer/cli"),
    Path("tracer/notebook.py"),
    *_modules("tracer/text"),
    # Every lesson module but the views, hiding (with what the quizzes ask about, split out
    # of it) and the model, which define the kinds: the checker (`attn lesson check`), the
    # loader and the runner among them.
    *(
        path
        for path in _modules("tracer/lessons")
        if path.name not in ("views.py", "hiding.py", "asked.py", "model.py")
    ),
    *_modules("tracer/lessons/grammar"),
]
STEP_KINDS = {"Narration", "Show", "Loop", "Compare", "Quiz", "Checkpoint"}


def decides_by_step_kind(source: str) -> list[int]:
    """The lines where ``source`` tells step kinds apart by class: ``isinstance``,
    ``type(...) is`` or a ``case Show(...)`` pattern naming a step class."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
            names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops
        ):
            sides = [node.left, *node.comparators]
            typed = any(isinstance(side, ast.Call) and getattr(side.func, "id", None) == "type"
                        for side in sides)  # fmt: skip
            names = {n.id for n in sides if isinstance(n, ast.Name)} if typed else set()
        elif isinstance(node, ast.MatchClass):
            names = {n.id for n in ast.walk(node.cls) if isinstance(n, ast.Name)}
        else:
            continue
        if names & STEP_KINDS:
            found.append(getattr(node, "lineno", 0))
    return found


def test_the_scan_finds_the_walk_deciding_by_kind() -> None:
    """The scan below is not vacuous: it finds the walk's own switch, and every kind of it."""
    assert len(FRONT_ENDS) > 30 and Path("tracer/lessons/check.py") in FRONT_ENDS
    assert decides_by_step_kind((ROOT / "tracer/lessons/views.py").read_text(encoding="utf-8"))
    probe = (
        "if isinstance(s, Quiz): pass\nif type(s) is Show: pass\nmatch s:\n    case Loop(): pass\n"
    )
    assert decides_by_step_kind(probe) == [1, 2, 4]


@pytest.mark.parametrize("path", FRONT_ENDS, ids=str)
def test_no_front_end_decides_by_step_kind(path: Path) -> None:
    """Front ends draw the walk's view through a registry keyed by its kind, and the checker
    reads each step's ``prose()`` and ``tables()``; only the walk tells the kinds apart."""
    assert not decides_by_step_kind((ROOT / path).read_text(encoding="utf-8"))


def test_a_quiz_hides_every_number_within_its_tolerance() -> None:
    """Lesson 05's dropout quiz asks what dropout made of (with, journey): every cell of its
    table within the quiz's tolerance of the answer reads "?", not only the answer's own."""
    lesson, runner, _ = lesson_and_runner("05_causal_masking")
    ids = {q.id for n in range(len(lesson.steps)) if (q := quiz_at(lesson, n)) and q.id}
    number = next(
        n for n, step in enumerate(lesson.steps) if getattr(step, "id", "") == "dropout-kept"
    )
    quiz = step_as(lesson.steps[number], Quiz)
    view = quiz_tables(lesson, runner, number, answered=ids - {"dropout-kept"})
    (table,) = view.tables
    weights = table.resolved.tensor.double()
    # The oracle: the causal weights' (with, journey), doubled where numpy's mask kept it.
    answer = float(runner.answer(quiz))  # type: ignore[arg-type]
    with_, journey = TOKENS.index("with"), TOKENS.index("journey")
    assert answer == pytest.approx(float(weights[with_, journey])) and answer > 0
    near = {(r, c) for r in range(6) for c in range(6) if abs(weights[r, c] - answer) <= 0.005}
    assert near <= table.hidden and (with_, journey) in near
    # Every weight of "with" was kept, so its row adds up to 2, a number the table shows
    # (the first row's): one more cell of that row is hidden, so no single subtraction of the
    # shown cells from 2 gives the answer. Nothing else is.
    row = weights[with_]
    assert float(row.sum()) == pytest.approx(2.0) and (weights == 2.0).any()
    extra = table.hidden - near
    assert len(extra) == 1 and {r for r, _ in extra} == {with_}


def test_lesson_08s_cache_quizzes_come_before_the_table_that_states_their_answers() -> None:
    """The grouped-query 'groups' stage is titled "... the cache holds N numbers per token
    instead of M": both cache quizzes' answers. It is shown after them; each quiz shows the
    keys whose columns the learner counts, and no earlier text gives the later answer."""
    lesson, runner, _ = lesson_and_runner("08_windows_and_groups")
    numbers = {q.id: n for n in range(len(lesson.steps)) if (q := quiz_at(lesson, n)) and q.id}
    first, second = numbers["cache-per-token"], numbers["cache-per-token-multihead"]
    groups = next(
        n
        for n, step in enumerate(lesson.steps)
        if any(ref.stage == "groups" for ref in step.tables())
    )
    assert first < second < groups
    for number, heads_sharing in ((first, 1), (second, 4)):
        (table,) = quiz_tables(lesson, runner, number).tables
        keys = table.resolved.tensor
        assert table.role == "show" and table.resolved.name.endswith("keys")
        # The oracle: keys and values of (d_out 8 / 4 heads) columns, per key/value head.
        assert runner.answer(lesson.steps[number]) == 2 * keys.shape[-1]  # type: ignore[arg-type]
        assert keys.shape[-1] == heads_sharing * 8 // 4
    title = runner.tensor(lesson.steps[groups].tables()[0]).stage.title
    answers = [str(int(runner.answer(lesson.steps[n]))) for n in (first, second)]  # type: ignore[arg-type]
    assert all(answer in title for answer in answers)
    # The first quiz's explanation, read before the second is answered, gives no multiple.
    assert "times" not in step_as(lesson.steps[first], Quiz).explanation


def test_attn_serve_runs_the_app_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """`attn serve LESSON` starts, per browser tab, `python -m tracer lesson LESSON`: the same
    app and lesson screen as the terminal, so the browser draws the walk's view as the app does
    (tracer/serve itself is in the scan above and decides nothing about steps)."""
    import sys

    from tracer.cli import app_cmd
    from tracer.cli.main import main
    from tracer.cli.serve_cmd import app_command

    command = app_command("01_dot_products")
    assert command[:3] == [sys.executable, "-m", "tracer"]
    opened: list[str] = []

    def open_lesson(args: object) -> int:
        opened.append(getattr(args, "lesson", ""))
        return 0

    monkeypatch.setattr(app_cmd, "open_lesson", open_lesson)
    assert main(command[3:]) == 0
    assert opened == ["01_dot_products"]


def test_lesson_10s_loop_caption_says_what_the_last_tile_does() -> None:
    """ "In the last tile "one" raises m, so rescale drops below 1": checked against the tiles
    the loop computed, for the query it follows."""
    lesson, runner, _ = lesson_and_runner("10_online_softmax")
    number = next(n for n in range(len(lesson.steps)) if loop_at(lesson, n))
    loop = step_as(lesson.steps[number], Loop)
    assert 'In the last tile "one" raises m, so rescale drops below 1' in " ".join(
        loop.caption.split()
    )
    *_, last = runner.substeps(loop)
    assert tuple(last.axes["scaled"])[-1] == "key:4"  # the last tile starts at key 4: one
    scaled, m_old, m, rescale = (last.tensors[name] for name in ("scaled", "m_old", "m", "rescale"))
    one = TOKENS.index("one") - 4  # the last tile holds keys 4 and 5: one, step
    assert torch.equal(m, torch.maximum(m_old, scaled.max(dim=-1).values))
    assert bool((scaled[:, one] == m).all()) and bool((m > m_old).all())
    assert bool((rescale < 1).all())
    assert torch.allclose(rescale, torch.exp(m_old - m))


def test_a_tables_range_leaves_out_the_cells_a_quiz_hides() -> None:
    from tracer.lessons.hiding import value_range

    values = torch.tensor([[0.5, -2.0, 3.0], [float("-inf"), 1.0, 0.25]])
    assert value_range(values) == (-2.0, 3.0)  # a mask's -inf is no value on the scale
    hidden = frozenset({(0, 1), (0, 2)})
    assert value_range(values, hidden) == (0.25, 1.0)
    assert value_range(values, frozenset({(0, 0), (0, 1), (0, 2), (1, 1), (1, 2)})) is None
