"""The lesson screen and the picker, driven by the pilot.

Reference numbers: the score of "Your" with "journey" is 0.9544 (seed 001);
softmax and sum-normalisation are recomputed here with torch's own functions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from textual.widgets import Button, Static

from tracer.inputs import load_inputs
from tracer.session.progress import ProgressStore
from tracer.session.saver import BackgroundSaver
from tracer.tui.app import TracerApp
from tracer.tui.grid import CanvasGrid, TensorGrid
from tracer.tui.launch import make_lesson_app, make_picker_app
from tracer.tui.lesson_screen import LessonScreen, Position
from tracer.tui.modals import ConfirmScreen, ErrorScreen
from tracer.tui.quiz_view import QuizView
from tracer.tui.tensor_pane import TensorPane
from tracer.tui.text_pane import ProsePane

from .conftest import LESSON, PLUGINS, press, settle

INPUTS = torch.tensor(load_inputs("your-journey").embeddings)
STEPS = [
    "narration",
    "show",
    "loop",
    "compare",
    "quiz",
    "quiz",
    "checkpoint",
    "show",
    "show",
    "quiz",
]


def lesson_app(path: Path = LESSON, *, resume: bool = False) -> TracerApp:
    return make_lesson_app(path, resume=resume, plugin_dirs=[str(PLUGINS)])


def lesson_screen(app: TracerApp) -> LessonScreen:
    screen = app.screen
    assert isinstance(screen, LessonScreen), getattr(screen, "message", screen)
    return screen


def rendered(widget: ProsePane) -> str:
    """What a Markdown pane draws, as plain text."""
    lines = widget.render_lines(widget.region.reset_offset)
    return "\n".join("".join(segment.text for segment in line) for line in lines)


async def goto(pilot: object, screen: LessonScreen, kind: str, occurrence: int = 1) -> None:
    number = [i for i, k in enumerate(STEPS) if k == kind][occurrence - 1]
    screen.go_to_step(number)
    await settle(pilot)  # type: ignore[arg-type]


async def test_narration_is_shown_as_written() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        assert screen.position == Position(0, 0)
        assert app.screen.title == "TUI test lesson [brackets stay]"
        text = rendered(screen.query_one("#narration-text", ProsePane))
        assert "[b]not bold[/b], [/] and [red]plain[/red]" in text
        # Not Markdown: nothing the author wrote disappears or turns into formatting.
        assert "The <mask> token, a*b*c and _x_ stay as typed." in text


async def test_show_step_highlights_the_focus_with_live_values() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await press(pilot, "right")
        grid = screen.pane.grid
        assert isinstance(grid, TensorGrid)
        assert grid.highlight.cells == frozenset({(1, 0)})  # journey's row, Your's column
        assert grid.row(1, 0, 1)[0] == pytest.approx(0.9544, abs=5e-5)
        assert screen.query_one("#caption", ProsePane).text == "All scores [36 of them]."


async def test_loop_step_has_sub_steps_and_a_limit() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await goto(pilot, screen, "loop")
        await press(pilot, "right", "right")
        assert screen.position == Position(2, 2)
        grid = screen.pane.grid
        assert isinstance(grid, CanvasGrid) and grid.highlight.current == (0, 2)
        assert grid.row(0, 2, 3)[0] == pytest.approx(float(torch.dot(INPUTS[0], INPUTS[2])))
        await press(pilot, "e")  # the end of the loop (the session's moves: tests/session)
        assert screen.position == Position(2, 7)
        grid = screen.pane.grid
        # The eighth (query, key) pair of six tokens, row by row: query 1, key 1.
        assert isinstance(grid, CanvasGrid) and grid.highlight.current == (1, 1)


async def test_compare_shows_both_sides_and_their_difference() -> None:
    app = lesson_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await goto(pilot, screen, "compare")
        scores = INPUTS @ INPUTS[1]
        softmax = torch.softmax(scores, dim=0)
        by_sum = scores / scores.sum()
        left = screen.query_one("#compare-left", TensorPane).grid
        right = screen.query_one("#compare-right", TensorPane).grid
        difference = screen.query_one("#compare-difference", TensorPane).grid
        assert left is not None and right is not None and difference is not None
        assert left.row(0, 0, 6) == pytest.approx(by_sum.tolist(), abs=1e-6)
        assert right.row(0, 0, 6) == pytest.approx(softmax.tolist(), abs=1e-6)
        assert difference.row(0, 0, 6) == pytest.approx((softmax - by_sum).tolist(), abs=1e-6)
        assert list(left.row_labels) == ["journey"]
        assert screen.query_one("#compare-left", TensorPane).border_title.startswith(
            "divided by the sum"
        )


async def test_quizzes_are_answered_in_place_and_remembered(data_dir: Path) -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await goto(pilot, screen, "quiz")
        await press(pilot, "1")  # "Your": wrong
        feedback = str(screen.query_one("#quiz-feedback").render())
        assert "Not quite" in feedback and "the answer is journey" in feedback
        await press(pilot, "2")  # after the reveal, a second answer does not count
        assert "Not quite" in str(screen.query_one("#quiz-feedback").render())
        await press(pilot, "right")  # the number quiz
        assert screen.query_one(QuizView).quiz.id == "dot"  # type: ignore[union-attr]
        await press(pilot, "0", "full_stop", "9", "5", "enter")
        feedback = str(screen.query_one("#quiz-feedback").render())
        assert "✓ Right" in feedback and "0.9544" in feedback
        await press(pilot, "right")  # Enter left the box, so → moves on
        assert screen.position == Position(6, 0)
    saved = json.loads((data_dir / "progress.json").read_text(encoding="utf-8"))
    (progress,) = saved["lessons"].values()
    assert progress["answers"] == {
        "best": {"response": "1", "right": False},
        "dot": {"response": "0.95", "right": True},
    }
    assert progress["step"] == 6


async def test_a_wrong_number_shows_the_answer() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await goto(pilot, screen, "quiz", 2)
        await press(pilot, "escape", "i")  # the box has the focus; Esc leaves it, i goes back
        for key in "1.5":
            await pilot.press("full_stop" if key == "." else key)
        await press(pilot, "enter")
        feedback = str(screen.query_one("#quiz-feedback").render())
        assert "you answered 1.5; the answer is 0.9544" in feedback


async def test_reopening_resumes_where_the_learner_stopped() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await goto(pilot, lesson_screen(app), "loop")
        await press(pilot, "right", "right", "right")
    again = lesson_app(resume=True)
    async with again.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert lesson_screen(again).position == Position(2, 3)


async def test_quitting_right_after_a_burst_of_moves_saves_the_last_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The writer thread never gets to run before the learner quits: only the flush saves.
    monkeypatch.setattr(BackgroundSaver, "_start_writer", lambda saver: None)
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        for number in (1, 3, 6, 7, 8):  # saved off the UI thread; no pause in between
            screen.go_to_step(number)
        # Leaving at once: the screen's unmount flushes the save still pending.
    again = lesson_app(resume=True)
    async with again.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert lesson_screen(again).position == Position(8, 0)


async def test_saving_the_file_reloads_it_and_keeps_the_position(lesson_copy: Path) -> None:
    app = lesson_app(lesson_copy)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await goto(pilot, screen, "compare")
        text = lesson_copy.read_text(encoding="utf-8")
        lesson_copy.write_text(
            text.replace("Softmax against dividing by the sum.", "Edited caption [v2]."),
            encoding="utf-8",
        )
        stat = lesson_copy.stat()
        os.utime(lesson_copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
        screen._check_file()  # what the watcher's timer does
        await settle(pilot)
        assert screen.position == Position(3, 0)
        assert screen.query_one("#caption", ProsePane).text == "Edited caption [v2]."
        # An edit that removes the step the learner is on falls back to the last step.
        lines = lesson_copy.read_text(encoding="utf-8").split("\n  - ")
        lesson_copy.write_text("\n  - ".join(lines[:3]) + "\n", encoding="utf-8")
        screen.reload_now()
        await settle(pilot)
        assert len(screen.session.lesson.steps) == 2  # type: ignore[union-attr]
        assert screen.position == Position(1, 0)


async def test_a_broken_edit_shows_its_problems_and_keeps_the_last_good_lesson(
    lesson_copy: Path,
) -> None:
    app = lesson_app(lesson_copy)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await press(pilot, "right")
        lesson_copy.write_text(
            lesson_copy.read_text(encoding="utf-8").replace("stage: scores", "stage: scroes", 1),
            encoding="utf-8",
        )
        screen.reload_now()
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ErrorScreen)
        assert f"{lesson_copy}:" in modal.message and "scroes" in modal.message
        await pilot.press("escape")
        await pilot.pause()
        assert screen.session is not None and len(screen.session.lesson.steps) == len(STEPS)
        assert screen.position == Position(1, 0)


async def test_fixing_the_lesson_closes_the_stale_error(lesson_copy: Path) -> None:
    app = lesson_app(lesson_copy)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        good = lesson_copy.read_text(encoding="utf-8")
        lesson_copy.write_text(good.replace("stage: scores", "stage: scroes", 1), encoding="utf-8")
        screen.reload_now()
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen)
        lesson_copy.write_text(good.replace("All scores", "Every score"), encoding="utf-8")
        screen.reload_now()  # the author saves again, fixed; the message goes away
        await settle(pilot)
        assert app.screen is screen
        await press(pilot, "right")
        assert screen.query_one("#caption", ProsePane).text.startswith("Every score")


async def test_a_lesson_that_cannot_load_is_an_error_modal(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: Bad\nsteps:\n  - narration: [not, text]\n", encoding="utf-8")
    app = lesson_app(bad)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(2000):  # the loading worker starts after the first frame, then fails
            await pilot.pause()
            if isinstance(app.screen, ErrorScreen):
                break
        modal = app.screen
        assert isinstance(modal, ErrorScreen)
        assert f"{bad}:3:" in modal.message


async def test_a_corrupt_progress_file_is_a_warning(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "progress.json").write_text("[1, 2", encoding="utf-8")
    app = lesson_app(resume=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert lesson_screen(app).position == Position(0, 0)
        messages = [n.message for n in app._notifications]
        assert any("damaged" in str(m) for m in messages)
    assert (data_dir / "progress.json.corrupt").read_text(encoding="utf-8") == "[1, 2"


async def test_the_picker_offers_to_resume_the_last_lesson(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTN_LESSONS_DIR", str(LESSON.parent))
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await goto(pilot, lesson_screen(app), "compare")
    picker = make_picker_app(plugin_dirs=[str(PLUGINS)])
    async with picker.run_test(size=(100, 30)) as pilot:
        await settle(pilot, attribute="store")
        modal = picker.screen
        assert isinstance(modal, ConfirmScreen)
        assert "TUI test lesson [brackets stay]" in modal.question
        assert "step 4 of 10" in modal.question
        await press(pilot, "y")
        await settle(pilot)
        assert lesson_screen(picker).position == Position(3, 0)


async def test_the_picker_lists_lessons_with_their_progress(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATTN_LESSONS_DIR", str(LESSON.parent))
    ProgressStore()  # no progress yet: nothing to resume
    picker = make_picker_app(plugin_dirs=[str(PLUGINS)])
    async with picker.run_test(size=(100, 30)) as pilot:
        await settle(pilot, attribute="store")
        from textual.widgets import OptionList

        options = picker.screen.query_one(OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        ours = [p for p in prompts if "TUI test lesson [brackets stay]" in p]
        assert len(ours) == 1 and "not started" in ours[0]
        assert len(prompts) > 1  # the shipped lessons are listed too
        options.highlighted = prompts.index(ours[0])
        await press(pilot, "enter")
        await settle(pilot)
        assert lesson_screen(picker).position == Position(0, 0)


async def test_a_lesson_check_refuses_shows_its_problems_instead(tmp_path: Path) -> None:
    # One gate: a step that only a run finds wrong is found by check, so the app shows the
    # lesson's problems (as 'attn lesson check' prints them) instead of the lesson.
    from tracer.tui.modals import ErrorScreen

    lesson = tmp_path / "late.yaml"
    lesson.write_text(
        "title: Late failure\n"
        "summary: A step that only fails when it runs.\n"
        "steps:\n"
        "  - narration: Next comes a tensor the stage does not have.\n"
        "  - show: {variant: naive-loop, stage: weights, tensor: nope}\n",
        encoding="utf-8",
    )
    app = lesson_app(lesson)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ErrorScreen)
        assert modal.title_text == "The lesson could not be opened"
        assert modal.message == (
            f"{lesson}:5:57: stage 'weights' of 'naive-loop' has no tensor 'nope'; "
            "its tensors: weights, sum_normalized"
        )
        assert app.exit_status == 1  # type: ignore[attr-defined]


async def test_clicking_a_step_in_the_timeline_jumps_to_it() -> None:
    from tracer.tui.timeline import Timeline, TimelineItem

    app = lesson_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        timeline = screen.query_one("#timeline", Timeline)
        item = next(w for w in timeline.query(TimelineItem) if w.key == "4")
        await pilot.click(item)
        await settle(pilot)
        assert screen.position == Position(4, 0)
        assert screen.query_one(QuizView).quiz.id == "best"  # type: ignore[union-attr]


async def test_a_variant_failing_inside_a_loop_is_reported_and_the_lesson_goes_on(
    tmp_path: Path,
) -> None:
    lesson = tmp_path / "loop.yaml"
    lesson.write_text(
        "title: A loop that breaks\n"
        "summary: Its variant raises after two sub-steps.\n"
        "steps:\n"
        "  - loop: {variant: fails-in-loop, stage: scores}\n"
        "  - narration: Still here.\n",
        encoding="utf-8",
    )
    app = lesson_app(lesson)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        await press(pilot, "right")
        assert screen.position == Position(0, 1)
        await press(pilot, "right")  # the third sub-step never comes
        assert screen.position == Position(0, 1)
        message = str(screen.pane.query_one("#tensor-message").render())
        assert "the loop broke after two sub-steps" in message
        await press(pilot, "left")
        assert screen.position == Position(0, 0)


async def test_choice_buttons_are_reused_from_quiz_to_quiz(tmp_path: Path) -> None:
    """A quiz after an answered one gets its own choices, all live; going back shows the answer.

    Removing and mounting buttons raced (DuplicateIds: the second quiz showed no choices and
    the first one's verdict), so the buttons are reused.
    """
    lesson = tmp_path / "choices.yaml"
    lesson.write_text(
        "title: Two choice quizzes\n"
        "summary: One quiz with four choices, then one with two.\n"
        "inputs: your-journey\n"
        "steps:\n"
        "  - quiz: {id: four, question: Pick b, choices: [a, b, c, d], answer: b}\n"
        "  - quiz: {id: two, question: Pick y, choices: [x, y], answer: y}\n",
        encoding="utf-8",
    )
    app = make_lesson_app(lesson, plugin_dirs=[str(PLUGINS)], resume=False)

    def buttons() -> list[tuple[str, bool]]:
        view = app.screen.query_one(QuizView)
        return [
            (str(button.label), button.disabled)
            for button in view.query("#quiz-choices Button").results(Button)
            if button.display
        ]

    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert buttons() == [
            ("( ) 1. a", False),
            ("( ) 2. b", False),
            ("( ) 3. c", False),
            ("( ) 4. d", False),
        ]
        await press(pilot, "2")
        assert all(disabled for _, disabled in buttons())  # answered: no second answer
        await press(pilot, "right")
        assert buttons() == [("( ) 1. x", False), ("( ) 2. y", False)]
        feedback = app.screen.query_one("#quiz-feedback", Static)
        assert str(feedback.content) == ""  # the first quiz's verdict does not linger
        await press(pilot, "left")
        assert [label for label, _ in buttons()] == ["( ) 1. a", "(•) 2. b", "( ) 3. c", "( ) 4. d"]
        assert all(disabled for _, disabled in buttons())


def test_code_in_backticks_is_drawn_as_code_and_nothing_else_is_read_as_markup() -> None:
    """The one markup prose uses: `dim=-1` in bold without its backticks; `*`, `[b]` and a
    lone backtick stay as typed."""
    from tracer.tui.text_pane import code_spans

    shown = code_spans("Use `dim=-1`, not `dim=1`: a*b*c [b] and a lone ` stay.")
    assert shown.plain == "Use dim=-1, not dim=1: a*b*c [b] and a lone ` stay."
    bold = [shown.plain[span.start : span.end] for span in shown.spans if "bold" in str(span.style)]
    assert bold == ["dim=-1", "dim=1"]


async def test_the_palette_goes_to_each_step_and_reloads() -> None:
    app = lesson_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = lesson_screen(app)
        commands = screen.palette_commands()
        titles = [command.title for command in commands]
        assert len([t for t in titles if t.startswith("Go to step ")]) == len(STEPS)
        assert titles[-1] == "Reload the lesson file" and commands[-1].help == str(LESSON)
        commands[3].run()  # the fourth step: the compare step
        await settle(pilot)
        assert screen.position == Position(3, 0)
