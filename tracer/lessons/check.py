"""Checking a loaded lesson by running it: what only a run can tell.

The loader checks names and structure without computing anything. This runs
every step the way ``attn lesson run`` would and reports, at the step's line
and column, tensors a stage does not have, focuses and cells out of range,
operations that do not fit a tensor's shape, and variants that fail. It also
computes every live value and quiz answer, and reports numbers with three or
more decimals typed into prose, which go stale when the lesson changes::

    from tracer.lessons.check import check_lesson
    problems = check_lesson(lesson, host)      # [] when the lesson is sound

:func:`open_checked` is the one gate every front end opens a lesson through
(``attn lesson run``, ``--plain``, ``--plain -i``, ``export`` and the app, by way
of :func:`tracer.session.lesson.open_lesson`): a lesson that ``attn lesson check``
refuses is refused with the same problems (:class:`~tracer.lessons.loader.LessonError`,
exit status 1), so no front end can forget to check. Warnings do not refuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.cautions import cautions
from tracer.lessons.giveaways import giveaways, named_choices
from tracer.lessons.grammar.keys import the
from tracer.lessons.guesses import naive_guesses
from tracer.lessons.loader import load_lesson, resolve_lesson
from tracer.lessons.model import (
    Focus,
    Lesson,
    LessonStep,
    Loop,
    Options,
    OptionValue,
    Quiz,
    Show,
    TensorRef,
    TypedNumber,
)
from tracer.lessons.neighbour_values import neighbour_values
from tracer.lessons.prose import TOKEN_FORMAT, format_value, placeholders
from tracer.lessons.reading import LessonError, one_line
from tracer.lessons.views import quiz_at, step_as
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    from tracer.lessons.lesson_runner import LessonRunner, Resolved
    from tracer.plugin_host import PluginHost


@dataclass
class Examined:
    """What checking one lesson file found: what ``attn lesson check`` prints for it."""

    path: Path
    lesson: Lesson | None
    """The lesson (None: it could not be read whole; ``problems`` say why)."""
    problems: list[Problem]
    """Every problem, in file order: each refuses the lesson but those in ``unrefused``."""
    warnings: list[Problem]
    """Said, but they do not refuse the lesson (Markdown in prose, a bare repeated token)."""
    runner: LessonRunner | None = None
    """The runner that checked the lesson, still open when asked for (``keep_runner``):
    its runs are reused by the session that opens the lesson."""
    unrefused: list[Problem] = field(default_factory=list)
    """Problems (among ``problems``: ``attn lesson check`` exits 1 for them) that do not refuse
    a lesson which opened before the check knew them: a tolerance a guess gets through, a
    hint naming the right choice. A lesson that loaded in an earlier release still opens."""


def examine(
    spec: str | Path,
    host: PluginHost,
    *,
    extra_dirs: Sequence[str | Path] = (),
    keep_runner: bool = False,
) -> Examined:
    """Load and check lesson ``spec`` (a name, number or path): every problem and warning.

    A lesson that cannot be read whole still has the steps that could be read run, so
    every problem is reported at once. Raises :class:`~tracer.errors.UsageError` (no
    such lesson) and the YAML layer's :class:`LessonError` (a file that is no safe YAML)
    as :func:`~tracer.lessons.loader.load_lesson` does.
    """
    from tracer.lessons.lesson_runner import LessonRunner  # here: the runner imports torch

    path = resolve_lesson(spec, extra_dirs)
    try:
        lesson = load_lesson(path, host, extra_dirs=extra_dirs)
    except LessonError as error:
        if error.partial is None:
            raise
        # All problems at once: the steps that could be read are run too.
        problems = one_line(error.problems + check_lesson(error.partial, host))
        return Examined(path, None, _ordered(problems), markup_warnings(error.partial))
    runner = LessonRunner(lesson, host)
    try:
        problems = check_lesson(lesson, host, runner=runner, later=False)
        warnings = markup_warnings(lesson) + repeated_cells(lesson, runner)
        unrefused: list[Problem] = []
        if not problems:  # what a learner would see that the author may not mean
            where = str(lesson.path) if lesson.path is not None else "<lesson>"
            unrefused = named_choices(lesson, runner, where)  # a hint naming the right choice
            unrefused += naive_guesses(lesson, runner, where)  # a tolerance a guess gets through
            problems += unrefused
            warnings += cautions(lesson, runner)
            warnings += neighbour_values(lesson, runner)
    except BaseException:
        runner.close()  # a plugin's worker processes stop now, not when collected
        raise
    if not keep_runner:
        runner.close()
    kept = runner if keep_runner else None
    return Examined(
        path, lesson, _ordered(problems), _ordered(warnings), unrefused=unrefused, runner=kept
    )


def open_checked(
    spec: str | Path, host: PluginHost, *, extra_dirs: Sequence[str | Path] = ()
) -> Examined:
    """The one gate: lesson ``spec`` checked, its runner open, or :class:`LessonError`
    (exit status 1) with exactly the problems ``attn lesson check`` reports for it."""
    examined = examine(spec, host, extra_dirs=extra_dirs, keep_runner=True)
    refusing = [p for p in examined.problems if p not in examined.unrefused]
    if refusing or examined.lesson is None:
        if examined.runner is not None:
            examined.runner.close()
        raise LessonError(refusing)
    return examined


def _ordered(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.line, p.column))


def check_lesson(
    lesson: Lesson,
    host: PluginHost,
    *,
    typed: bool = True,
    runner: LessonRunner | None = None,
    later: bool = True,
) -> list[Problem]:
    """Every problem found by running each step of ``lesson``, in file order.

    ``typed``: also report numbers typed into prose, which go stale when the lesson
    changes (every front end refuses them, through :func:`open_checked`).
    ``runner``: run the lesson on this runner (left open), else on one of its own.
    ``later``: also report the problems added after lessons were written against this check
    (a hint naming the right choice, a tolerance a guess gets through); :func:`examine` reports
    them apart, as problems that do not refuse the lesson.
    """
    from tracer.lessons.lesson_runner import LessonRunner

    own = runner is None
    runner = runner if runner is not None else LessonRunner(lesson, host)
    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    problems: list[Problem] = []
    computed: dict[str, float] = {}
    """Live values and number answers, by how prose writes them, to match typed numbers."""
    for named in lesson.values:
        try:
            computed[f"{{{{{named.name}}}}}"] = runner.value(named.ref)
        except (ArithmeticError, RuntimeError, ValueError, IndexError, TracerError) as exc:
            problems.append(_problem(exc, named.ref, named.line, named.column, path))
    for number, step in enumerate(lesson.steps):
        try:
            _check_step(step, runner)
            quiz = quiz_at(lesson, number)
            if quiz is not None and quiz.quiz_kind == "number":
                answer = runner.answer(quiz)
                assert isinstance(answer, (int, float))
                computed.setdefault(f"quiz '{quiz.id or quiz.line}'", float(answer))
            _check_prose(step, runner)
        except (ArithmeticError, RuntimeError, ValueError, IndexError) as exc:
            # A safety net: whatever a step asks of torch, the author gets a line, not a traceback.
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())
            problems.append(
                Problem(step.line, step.column, f"this step cannot be computed: {detail}", path)
            )
        except TracerError as exc:
            line, column = step.line, step.column
            where = step.reported_at
            if where is not None:
                line, column = where.line, where.column
                line, column = _index_at(exc, where) or (line, column)
            message, option = in_lesson_words(exc.message, step)
            if option is not None and option.line:
                line, column = option.line, option.column  # the value the teacher wrote
            if exc.location is not None and not exc.location.path and exc.location.line:
                line, column = exc.location.line, exc.location.column or 1
            elif exc.location is not None and exc.location.path:
                message = f"{message} ({exc.location})"  # a plugin failed: say where in its file
            problems.append(Problem(line, column, message, path))
    stated: list[Problem] = []
    if typed:  # a quiz that gives its answer away: refused like any problem (one gate)
        stated = giveaways(lesson, runner, path)
        problems += stated
        if later:
            problems += named_choices(lesson, runner, path)  # a hint that points at the choice
            problems += naive_guesses(lesson, runner, path)  # a tolerance a guess gets through
    if own:
        runner.close()  # a plugin's worker processes stop now, not when collected
    if typed:
        problems.extend(
            _typed(number, computed, path)
            for number in lesson.typed_numbers
            if not _said_already(number, lesson, stated)
        )
    return one_line(problems)


def _said_already(number: TypedNumber, lesson: Lesson, stated: list[Problem]) -> bool:
    """Whether a number typed into a quiz's own question, choice or hint is that quiz's
    answer, already reported as stating it: one mistake, one line."""
    if number.where not in ("question", "a choice", "a hint"):
        return False
    starts = [step.line for step in lesson.steps] + [10**9]
    for start, end in pairwise(starts):
        if start <= number.line < end:
            return any(
                start <= problem.line < end and problem.message.startswith("the quiz's ")
                for problem in stated
            )
    return False


def markup_warnings(lesson: Lesson) -> list[Problem]:
    """A warning for each piece of Markdown markup in the lesson's prose, then the reader's own
    warnings (a token that occurs twice, named bare).

    Prose is plain text: the app, ``--plain`` and the exports show it exactly
    as written, so ``**bold**`` would reach the learner as asterisks. A warning,
    not a problem: the lesson still loads and runs.
    """
    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    return [
        Problem(
            mark.line,
            mark.column,
            f"warning: '{_short(mark.text)}' in {the(mark.where)} is Markdown ({mark.kind}), "
            "which is shown as written: prose is plain text; write it without the markup",
            path,
        )
        for mark in lesson.markup
    ] + list(lesson.warnings)


def repeated_cells(lesson: Lesson, runner: LessonRunner) -> list[Problem]:
    """A warning for each cells quiz whose question or hints name, in quotes, a token its
    table holds more than once (``'the'`` of "the cat saw the dog"): which one is meant is
    not said, and learners type it as the table labels it (``the@3``; a bare ``the`` is asked
    about, never graded as the first). Said at the quiz, with the labels to write instead."""
    from tracer.lessons.grading import CellAnswer
    from tracer.render.labels import bare_token

    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    found: list[Problem] = []
    for number in range(len(lesson.steps)):
        step = quiz_at(lesson, number)
        if step is None or step.quiz_kind != "cells":
            continue
        try:
            answer = runner.answer(step)
        except (ArithmeticError, RuntimeError, ValueError, IndexError, TracerError):
            continue  # reported as the quiz's problem
        if not isinstance(answer, CellAnswer):
            continue
        repeated: dict[str, list[str]] = {}
        for label in dict.fromkeys(label for axis in answer.labels for label in axis):
            if bare_token(label) != label:
                repeated.setdefault(bare_token(label), []).append(label)
        words = " ".join([step.question, *step.hints])
        for token, labels in repeated.items():
            if not re.search(rf"['\"`‘“]{re.escape(token)}['\"`’”]", words):
                continue
            quoted = [f"'{label}'" for label in labels]
            found.append(
                Problem(
                    step.line,
                    step.column,
                    f"warning: this cells quiz names '{token}', which its table holds "
                    f"{len(labels)} times; say which, as the table labels it and learners type "
                    f"it: {' or '.join(quoted)}",
                    path,
                )
            )
    return found


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


_NO_TENSOR = re.compile(r"^stage '[^']*' of '[^']*' has no tensor ")
_CELL_ARITY = re.compile(r"^cell has \d+ ind")
_CELL_INDEX = re.compile(r"^cell index -?\d+ is out of range for axis (\d+) ")


def _index_at(exc: TracerError, ref: TensorRef) -> tuple[int, int] | None:
    """Where the cell index (or the tensor) a message is about is written: the index, not
    the mapping."""
    if ref.tensor_at is not None and _NO_TENSOR.match(exc.message):
        return ref.tensor_at
    if ref.cell_at and _CELL_ARITY.match(exc.message):
        return ref.cell_at[0]  # the cell as written, not the mapping it is in
    found = _CELL_INDEX.match(exc.message)
    if found is None or int(found.group(1)) >= len(ref.cell_at):
        return None
    return ref.cell_at[int(found.group(1))]


_OPTION_FLAG = re.compile(r"-o ([A-Za-z_][\w]*)=([^\s),;]+)")
_TRY_FLAG = re.compile(r"\btry --(d-out|heads|seed|init|dropout) ([^\s),;]+)")
_COMMAND_FLAG = re.compile(r"--(d-out|heads|seed|init|dropout)\b")


def in_lesson_words(message: str, step: object) -> tuple[str, OptionValue | None]:
    """``message`` as a lesson's author writes options (``rope_dim: 4``, not ``-o rope_dim=4``
    or ``--d-out``), and the option value the step (or the lesson) wrote that it names first,
    to report it there."""
    said = _OPTION_FLAG.sub(lambda m: f"{m.group(1)}: {m.group(2)}", message)
    said = _TRY_FLAG.sub(lambda m: f"try {m.group(1).replace('-', '_')}: {m.group(2)}", said)
    said = _COMMAND_FLAG.sub(lambda m: m.group(1).replace("-", "_"), said)
    written: dict[str, OptionValue] = {}
    refs = [*getattr(step, "tables", lambda: ())()]
    options = [ref.options for ref in refs]
    own = getattr(step, "options", None)
    if isinstance(own, Options):
        options.append(own)
    for chosen in options:
        for value in (*chosen.values, *chosen.trace_at):
            written.setdefault(value.name, value)
    first = None
    for name, value in written.items():
        at = re.search(rf"\b{re.escape(name)}\b", said)
        if at is not None and (first is None or at.start() < first[0]):
            first = (at.start(), value)
    return said, first[1] if first is not None else None


def _problem(exc: Exception, ref: TensorRef, line: int, column: int, path: str) -> Problem:
    if isinstance(exc, TracerError):
        found = _index_at(exc, ref)
        if found is not None:
            line, column = found
        message = exc.message
        if exc.location is not None and not exc.location.path and exc.location.line:
            line, column = exc.location.line, exc.location.column or 1
        elif exc.location is not None and exc.location.path:
            message = f"{message} ({exc.location})"
    else:
        message = "this value cannot be computed: " + " ".join(
            f"{type(exc).__name__}: {exc}".split()
        )
    return Problem(line, column, message, path)


def _typed(number: TypedNumber, computed: dict[str, float], path: str) -> Problem:
    """A number typed into prose, and the live value it could be written as, if any."""
    decimals = len(number.text.split(".")[-1])
    typed = float(number.text.replace("−", "-"))
    same = [
        name
        for name, value in computed.items()
        if abs(round(value, decimals) - typed) <= 0.5 * 10**-decimals + 1e-12
    ]
    if same and same[0].startswith("{{"):
        advice = f"it is {same[0]} now: write that instead, so it follows the computation"
    elif same:
        advice = (
            f"it is the answer of {same[0]} now: write {{{{answer}}}} in that quiz's "
            "explanation, so it follows the computation"
        )
    else:
        advice = "the lesson computes no such number; compute it under 'values:' and write {{name}}"
    message = f"{number.text} is typed into {the(number.where)} and goes stale; {advice}"
    return Problem(number.line, number.column, message, path)


def _check_prose(step: LessonStep, runner: LessonRunner) -> None:
    """A value shown as a token must be a token's index."""
    for text in step.prose():
        for placeholder in placeholders(text):
            named = runner.lesson.value(placeholder.name)
            if placeholder.format != TOKEN_FORMAT or named is None:
                continue
            value = runner.value(named.ref)
            tokens = runner.index_tokens(named.ref)  # the source's, for an argmax over it
            if format_value(value, TOKEN_FORMAT, tokens) not in tokens:
                raise _error(
                    f"value '{placeholder.name}' is {value:g}, not a token's index, "
                    f"so '{{{{{placeholder.name}:token}}}}' cannot show it as a token"
                )


def _check_step(step: LessonStep, runner: LessonRunner) -> None:
    """Compute what the step shows (the tensors the walk draws with it), then what only its
    kind computes (a show step's focus, a loop's sub-steps, a quiz's answer)."""
    own = step.reported_at
    for ref in step.tables():
        if ref is own:
            runner.tensor(ref)  # a failure is reported at the step's own tensor
            continue
        try:
            runner.tensor(ref)
        except TracerError as exc:
            raise _error(exc.message, ref) from None
    computes = _COMPUTES.get(step.kind)
    if computes is not None:
        computes(step, runner)


def _show_focus(step: LessonStep, runner: LessonRunner) -> None:
    show = step_as(step, Show)
    if show.focus is not None:
        shown = runner.tensor(show.ref)
        _check_focus(runner.focus_of(show.focus, shown), shown)


def _loop_substeps(step: LessonStep, runner: LessonRunner) -> None:
    loop = step_as(step, Loop)
    if next(iter(runner.substeps(loop)), None) is None:
        raise _error(f"the '{loop.stage}' loop of '{loop.variant}' yielded no sub-steps")


def _quiz_answer(step: LessonStep, runner: LessonRunner) -> None:
    runner.answer(step_as(step, Quiz))


_COMPUTES: dict[str, Callable[[LessonStep, LessonRunner], None]] = {
    "show": _show_focus,
    "loop": _loop_substeps,
    "quiz": _quiz_answer,
}
"""What a step of each kind computes beyond its tables, by ``step.kind``."""


def _check_focus(focus: Focus, resolved: Resolved) -> None:
    tensor = resolved.tensor
    if tensor.dim() == 0:
        raise _error(f"'{resolved.name}' is a single value; there is nothing to focus on")
    rows = tensor.shape[0] if tensor.dim() >= 2 else 1
    columns = tensor.shape[-1]
    if focus.row is not None and tensor.dim() >= 2 and not focus.row < rows:
        raise _error(f"focus row {focus.row} is out of range: '{resolved.name}' has {rows} rows")
    one_row = tensor.dim() == 1 and focus.kind in ("row", "cell")
    if focus.row is not None and one_row and focus.row != resolved.query:
        raise _error(
            f"'{resolved.name}' has one row (one query); focus on a column or a token instead"
        )
    if focus.column is not None and not focus.column < columns:
        raise _error(
            f"focus column {focus.column} is out of range: '{resolved.name}' has {columns} columns"
        )


def _error(message: str, ref: TensorRef | None = None) -> TracerError:
    from tracer.errors import Location

    error = TracerError(message)
    if ref is not None:
        line, column = _index_at(error, ref) or (ref.line, ref.column)
        error.location = Location("", line, column)
    return error
