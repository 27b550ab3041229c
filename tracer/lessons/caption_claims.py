"""Sentences that say on which side of the diagonal a table's hidden cells lie, checked against
the table, as ``attn lesson check`` warns about them.

"The future keys, everything above the diagonal, read -inf" is a claim about the table the
step shows: with queries on the rows and keys on the columns the later keys are above it,
but a table with key tiles on the rows puts them below. For each step with tables (a
``show`` or ``compare`` caption, a quiz's question, hints and explanation, with the tables
it shows and its answer's), a sentence that says "above the diagonal" or "below the
diagonal" is checked against each square table of the step whose marked cells (``-inf`` or
the lowest float, 0 in a table of other values, or the 1s of a table of 0s and 1s) all lie
strictly on one side of it: a sentence that names the other side gets a warning, at the
``file:line:column`` where its words are written::

    from tracer.lessons.caption_claims import diagonal_sides, shape_claims
    warnings = diagonal_sides(lesson, runner, path)   # [] when every side said is so

A table whose marked cells lie on both sides, or none, is no evidence either way, and a
sentence about another table (a narration) is not checked.

A ``show`` caption that gives the table's shape ("one key per token (6 × 2)", "3 tokens of 3
numbers each") is checked the same way (:func:`shape_claims`): some table the step shows
must have those sizes, side by side, among its axes. A product followed by "=" is
arithmetic ("3 × 2 = 6"), and one followed by what it is ("a 3 × 4 projection", "a 2 × 2
rotation") another matrix's shape, not the table's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.model import Lesson, TensorRef
from tracer.lessons.statements import locate, source_lines
from tracer.lessons.unsaid import sentences
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner

_SIDE = re.compile(r"\b(above|below|under|over)\s+(?:the\s+)?(?:main\s+)?diagonal\b", re.I)
_ANOTHER = re.compile(r" (?:projection|matrix|matrices|rotation|weights?|layer)\b")
"""Words after a shape that make it another matrix's, not the table's."""
_SHAPE = re.compile(
    r"(?<![\w.])(\d+) ?[×x] ?(\d+)(?![\w.]| ?[=)]?\s*=)"
    r"|(?<![\w.])(\d+) tokens? of (\d+) (?:numbers|values|columns|features)\b"
)
LOWEST = -1e30
"""A value this low is a mask's "minus infinity" (the lowest float some code adds instead)."""


def marked_side(tensor: torch.Tensor) -> str | None:
    """``"above"`` or ``"below"``: the side of the diagonal where every marked cell of the
    square table ``tensor`` (its last two axes) lies; None when they lie on both, or none."""
    import torch  # here: a lesson check runs the lesson, which has imported it

    if tensor.dim() < 2 or tensor.shape[-1] != tensor.shape[-2] or tensor.shape[-1] < 2:
        return None
    grid = tensor.detach().cpu().double().reshape(-1, *tensor.shape[-2:])
    n = grid.shape[-1]
    upper = torch.ones(n, n, dtype=torch.bool).triu(1)
    lower = torch.ones(n, n, dtype=torch.bool).tril(-1)
    finite = grid[torch.isfinite(grid)]
    binary = bool(((finite == 0) | (finite == 1)).all()) if finite.numel() else False
    candidates = [(grid <= LOWEST) | torch.isneginf(grid)]
    candidates.append(grid == 1 if binary else grid == 0)
    for marked in candidates:
        if not bool(marked.any()) or bool(marked.all()):
            continue
        above, below = bool((marked & upper).any()), bool((marked & lower).any())
        if above != below:
            return "above" if above else "below"
    return None


def diagonal_sides(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each sentence that puts a table's marked cells on the wrong side of its
    diagonal."""
    source = source_lines(lesson)
    found: list[Problem] = []
    for step in lesson.steps:
        refs = list(step.tables())
        answer = getattr(step, "answer", None)
        if isinstance(answer, TensorRef) and answer.cell is None:
            refs.append(answer)
        if not refs:
            continue
        sides: dict[str, str] = {}
        for ref in refs:
            try:
                tensors = runner.tensors(ref)
            except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
                continue  # check_lesson reports it
            for resolved in tensors:
                side = marked_side(resolved.tensor)
                if side is not None:
                    sides.setdefault(side, resolved.name)
        if len(sides) != 1:
            continue  # no table says, or tables on both sides: no evidence either way
        ((side, name),) = sides.items()
        for text in step.prose():
            for sentence in sentences(text):
                for match in _SIDE.finditer(sentence):
                    said = {"under": "below", "over": "above"}.get(
                        match.group(1).lower(), match.group(1).lower()
                    )
                    if said == side:
                        continue
                    line, column = locate(source, match.group(), step.line)
                    found.append(
                        Problem(
                            line,
                            column,
                            f"warning: '{match.group()}' but the marked cells of '{name}' "
                            f"(-inf, 0 or the 1s of a mask) lie {side} its diagonal: say "
                            f"'{side} the diagonal', or show the table the sentence is about",
                            path,
                        )
                    )
    return sorted(set(found), key=lambda p: (p.line, p.column, p.message))


def shape_claims(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each shape a ``show`` caption gives that no table of the step has."""
    source = source_lines(lesson)
    found: list[Problem] = []
    for step in lesson.steps:
        if step.kind != "show":
            continue
        try:
            shapes = [tuple(int(n) for n in t.tensor.shape) for t in runner.tensors(step.ref)]
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
            continue  # check_lesson reports it
        for sentence in sentences(step.caption):
            for match in _SHAPE.finditer(sentence):
                if _ANOTHER.match(sentence, match.end()):
                    continue  # "(a 3 × 4 projection)": the shape of another matrix
                rows, columns = (int(n) for n in match.groups() if n is not None)
                if any(
                    (shape[i], shape[i + 1]) == (rows, columns)
                    for shape in shapes
                    for i in range(len(shape) - 1)
                ):
                    continue
                line, column = locate(source, match.group(), step.line)
                shown = ", ".join(" × ".join(map(str, shape)) or "one number" for shape in shapes)
                found.append(
                    Problem(
                        line,
                        column,
                        f"warning: the caption says '{match.group()}' but the table shown is "
                        f"{shown}: say the shape it has",
                        path,
                    )
                )
    return sorted(set(found), key=lambda p: (p.line, p.column, p.message))
