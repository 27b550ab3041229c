"""The session and ``attn lesson run --plain --interactive`` with Textual not importable.

Every shipped lesson is taken through the session in a child process where ``import
textual`` fails, answering every quiz with the answer its run computes. Then a whole
lesson is taken by stdin through ``--plain -i`` (Textual hidden the same way), and
``attn lessons --json`` and the app's picker read the progress it saved.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable

from tests.forked import run_attn
from tracer.lessons.loader import find_lessons, resolve_lesson
from tracer.lessons.model import Loop, Quiz
from tracer.plugin_host import PluginHost
from tracer.session.lesson import LessonSession, open_lesson
from tracer.session.moves import AtEnd
from tracer.session.progress import ProgressStore

from .answers import right_response


def hide_textual() -> None:
    """Make ``import textual`` (and the app's modules, which import it) fail from now on."""
    for name in list(sys.modules):
        if name.split(".")[0] == "textual" or name.startswith("tracer.tui"):
            del sys.modules[name]
    sys.modules["textual"] = None  # type: ignore[assignment]  # import textual: ImportError


def in_child(job: Callable[[], object]) -> object:
    """``job()`` in a forked child with Textual hidden; its JSON result (or its traceback)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        status = 0
        try:
            os.close(read)
            import torch

            torch.set_num_threads(1)  # the parent's thread pool did not fork
            hide_textual()
            data = json.dumps({"result": job()})
        except BaseException:
            data = json.dumps({"error": traceback.format_exc()})
            status = 1
        with os.fdopen(write, "w") as out:
            out.write(data)
        os._exit(status)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = json.loads(pipe.read() or '{"error": "the child wrote nothing"}')
    os.waitpid(pid, 0)
    assert "error" not in answer, answer["error"]
    return answer["result"]


def take(session: LessonSession) -> list[str]:
    """Walk the whole lesson, answering each quiz rightly; the kinds of the quizzes met."""
    kinds = []
    while True:
        step = session.steps[session.position.step]
        view = session.view()
        assert view.step.text is not None
        if isinstance(step, Quiz):
            verdict = session.answer(right_response(session, step))
            assert verdict.right is True, (session.lesson.name, session.position, verdict)
            kinds.append(step.quiz_kind)
        if isinstance(step, Loop) and session.position.sub == 0:
            assert session.loop_end()
        if isinstance(session.next(), AtEnd):
            return kinds


def every_lesson(host: PluginHost) -> dict[str, list[str]]:
    assert "textual" in sys.modules and sys.modules["textual"] is None
    taken = {}
    for ref in find_lessons(()):
        session = open_lesson(ref.path, host=host, warm=False)
        session.attach(None)
        taken[ref.name] = take(session)
        session.close()
    return taken


def test_every_shipped_lesson_is_taken_through_the_session_without_textual(
    host: PluginHost,
) -> None:
    taken = in_child(lambda: every_lesson(host))  # the plugins the test process loaded
    assert isinstance(taken, dict)
    shipped = [ref.name for ref in find_lessons(()) if ref.origin == "built-in"]
    assert sorted(taken) == sorted(shipped)
    kinds = {kind for quizzes in taken.values() for kind in quizzes}
    assert {"number", "choice", "cells"} <= kinds


def script(session: LessonSession) -> tuple[list[str], list[Quiz]]:
    """The lines a learner types to go through the whole lesson answering every quiz rightly
    (a hint asked for first where there is one), and the quizzes in order."""
    lines: list[str] = []
    quizzes = []
    for number, step in enumerate(session.steps):
        if isinstance(step, Quiz):
            session.go_to(number)
            quizzes.append(step)
            lines += ["h"] if step.hints else []
            lines.append(right_response(session, step))
        count = session.count_loop(number) if isinstance(step, Loop) else None
        lines += [""] * (count or 1)  # each sub-step of a loop, then on
    return lines, quizzes


def test_a_whole_lesson_by_stdin_then_lessons_json(host: PluginHost) -> None:
    name = "dot_products"  # number and choice quizzes, and loops to step through
    session = open_lesson(name, host=host, warm=False)
    lines, quizzes = script(session)
    done = run_attn(
        "lesson", "run", name, "--plain", "-i",
        input="\n".join(lines) + "\n", preexec_fn=hide_textual,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\x1b" not in out and not set("─│┌┐└┘") & set(out)  # plain text only
    assert out.count("> Right: ") == len(quizzes) and "Not quite" not in out
    assert out.rstrip().endswith(")") or "--- End of the lesson." in out
    for quiz, asked in zip(quizzes, out.split("Quiz: ")[1:], strict=True):
        before = asked.split("Right: ")[0]  # what was printed before the learner answered
        assert "Answer:" not in before and "count as right" not in before
        if quiz.explanation:
            assert "Why: " not in before and "Why: " in asked
        if quiz.hints:
            assert "Hint 1: " in before
    listed = run_attn("lessons", "--json")
    assert listed.returncode == 0, listed.stderr
    entry = next(e for e in json.loads(listed.stdout) if e["name"].endswith(name))
    count = len(session.steps)
    assert entry["progress"] == {
        "seen": count, "answered": len(quizzes), "right": len(quizzes), "done": True,
    }  # fmt: skip
    assert entry["number"] == int(entry["name"][:2]) and entry["title"] == session.lesson.title
    # The app's picker says the same of the progress file.
    from tracer.tui.picker_screen import progress_text

    saved = ProgressStore().get(session.key)
    assert progress_text(saved) == f"finished · {len(quizzes)}/{len(quizzes)} quiz answers right"
    session.close()


def test_quitting_saves_the_place_where_the_app_resumes(host: PluginHost) -> None:
    done = run_attn("lesson", "run", "1", "--plain", "-i", input="\n\nq\n", preexec_fn=hide_textual)
    assert done.returncode == 0, done.stderr
    assert "--- Step 3 of" in done.stdout and "--- Step 4 of" not in done.stdout
    session = open_lesson(resolve_lesson("1"), host=host, warm=False)
    session.attach(ProgressStore())
    assert session.position.step == 2 and not session.progress.finished
    assert session.progress.seen == 3
