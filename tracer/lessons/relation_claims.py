"""Sentences that state a relation about a table, checked against the table the step shows,
as ``attn lesson check`` warns about them; and every such sentence, checked or read as prose,
as ``attn lesson check --claims`` lists them.

A caption, a table's ``label`` (about that table alone), a quiz's question, hints and
explanation, and a checkpoint's title and points are read one sentence at a time (a question asks and a choice may be meant to be wrong: neither states
anything). A sentence that states a relation is tied to a table of its own step (a ``show``'s,
a ``compare``'s two sides, a quiz's ``show:`` and ``cells:``, or for a quiz without tables the
show step's before it, as the walk shows them) when its words name it (the tensor or its
stage, and no word more: "the future weights" is a part) or when the step shows one table and
the sentence names none; then it is checked against the values the walk shows:

- sums: "each row sums to 1", "every row of P adds up to 1", "the rows ... do not add up to
  1", "each row of dS sums to zero" (rows: the last axis; columns: the one before);
- every cell: "every weight is positive", "all ... are 0", "non-negative", "at most 1";
- equal rows or columns of one table: "its two columns are equal", "every row is the same";
- equality of a ``compare`` step's two sides: "the same context vectors", "equal up to
  rounding", "the first three rows agree" (up to float rounding: what the tables show);
- counts: "all 36 scores", "its three keys", "6 in all", where the noun names the table or
  one of its axes: the number must be one of the table's sizes or of its counts of cells
  that are not masked (not 0, not -inf), in all or in one row;
- what a ``compare`` keeps: "keeps pair 0", "leaves pair 0 ... as it was", "keeps the
  fastest pair", "keeps the fast pairs" (more than one must be the same on both sides);
- a ``loop`` whose table the walk titles "<stage> so far" (the number each sub-step writes is
  the stage's own): every cell it fills must be the stage's final cell, and a loop that runs
  to its end fills them all.

A sentence that cannot be tied to one table (a narration, a summary, a sentence naming
another thing, one with an exception such as "every row but the last") is prose: it is not
an error. A false claim is a warning at the ``file:line:column`` where its words are
written::

    from tracer.lessons.relation_claims import claims, relation_warnings
    warnings = relation_warnings(lesson, runner, path)   # [] when every checked claim holds
    for claim in claims(lesson, runner):                  # what --claims lists
        print(claim.line, claim.column, claim.verdict)

Which side of the diagonal and a caption's shape are checked by
:mod:`tracer.lessons.caption_claims`; :func:`claims` lists them as checked there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracer.errors import TracerError
from tracer.lessons.hiding import quiz_context
from tracer.lessons.model import Checkpoint, Lesson, LessonStep, Loop, Quiz, Show
from tracer.lessons.statements import locate, source_lines
from tracer.lessons.unsaid import NUMBER_WORDS, sentence_spans
from tracer.lessons.views import step_as
from tracer.render.labels import holds_stage
from tracer.yamldoc import Problem

if TYPE_CHECKING:
    import torch

    from tracer.lessons.lesson_runner import LessonRunner, Resolved

ROUNDING = 1e-4
"""How far two values may be apart and still be "equal" or "the same" (relative to the larger
when above 1): less than the tables' fourth decimal shows."""
LONGEST = 600
"""Characters of the longest sentence read as a claim: a longer one is prose (and reading
it cannot take long whatever a file holds)."""
MASKED = -1e30
"""A value this low is a mask's minus infinity (as :mod:`tracer.lessons.caption_claims`)."""

_NUMBER = r"(?:\d+|" + "|".join(NUMBER_WORDS[2:]) + r")"
_TRIGGER = re.compile(
    r"\b(?:zero|is 0|are 0|sums? to|adds? up to|add up to|equal|equals|the same|identical"
    r"|match(?:es)?|agree|every|all|each|keeps?|kept|leaves?|so far|positive|negative"
    r"|in all|above|below)\b|(?<![\w.])" + _NUMBER + r"\s+[a-z]",
    re.IGNORECASE,
)
"""Words that may state a relation or a count: a sentence without them is not listed."""
_SUM = re.compile(
    r"\b(?P<axis>rows?|columns?)\b(?P<between>[^.;:]*?)\s"
    r"(?P<neg>(?:do|does|did|will) not |(?:do|does)n[’']t |never )?"
    r"(?:sums?|adds? up|summing|adding up) to (?P<target>less than 1|1|one|zero|0)\b",
    re.IGNORECASE,
)
_WHOLE_SUM = re.compile(
    r"^(?P<subject>[^,;:]*?)\s(?P<neg>(?:does|do) not |(?:does|do)n[’']t )?"
    r"(?:sums?|adds? up) to (?P<target>zero|0|1|one)\b",
    re.IGNORECASE,
)
_EVERY_CELL = re.compile(
    r"\b(?:every|each|all(?: the)?)\s+(?P<noun>[A-Za-z_]\w*(?: [A-Za-z_]\w*)?)\s+"
    r"(?:is|are|stays?|remains?)\s+(?:exactly\s+|now\s+)?"
    r"(?P<what>0|zero|positive|negative|non-negative|at most 1|between 0 and 1)\b",
    re.IGNORECASE,
)
_SAME_LINES = re.compile(
    r"\b(?:its |the )?(?:two |all |both |every |each )?(?P<axis>rows?|columns?)\s+"
    r"(?:are|is)\s+(?:all\s+)?(?:equal|the same|identical)\b",
    re.IGNORECASE,
)
_SAME_SIDES = re.compile(
    r"\b(?:the same|identical) (?P<noun>[a-z_]\w*(?: [a-z_]\w*)?)|(?:^|[:,] |\bare )equal\b"
    r"|\b(?:they|the two(?: sides| tables)?|both(?: sides| tables)?) match\b"
    r"|\b(?:both|each) (?:routes?|variants?|sides?)\b.*\bequal\b",
    re.IGNORECASE,
)
_FIRST_AGREE = re.compile(
    r"\bthe (?P<which>first|last) (?P<n>" + _NUMBER + r") (?P<axis>rows|columns) (?:agree|"
    r"are the same|are equal|match)\b",
    re.IGNORECASE,
)
_COUNT = re.compile(
    r"(?<![\w.×])(?P<n>" + _NUMBER + r")\s+(?P<noun>in all|[A-Za-z_]\w*(?: [A-Za-z_]\w*)?)",
    re.IGNORECASE,
)
_KEEPS = re.compile(
    r"\b(?:keeps?|leaves?)\s+(?:(?P<axis>pair|row|column|token|head) (?P<index>\d+)"
    r"|the (?P<speed>fast|slow)(?P<est>est)? (?P<plural>pairs?|rows?|columns?))",
    re.IGNORECASE,
)
_EXCEPTION = re.compile(r"\b(?:but|except|apart from|other than|not all|most|some)\b", re.I)
_NEGATION = re.compile(r"\bnot\b|n[’']t\b|\bnever\b|\bno longer\b", re.I)
_SIDE_OR_SHAPE = re.compile(
    r"\b(?:above|below|under|over)\s+(?:the\s+)?(?:main\s+)?diagonal\b|\d+ ?[×x] ?\d+", re.I
)
_NOT_COUNTED = (
    "lesson", "step", "position", "head", "pair", "row", "column", "layer", "=", "of", "×", "·",
    "*", "first", "last", "top", "other", "than", "least", "most", "about", "nearly", "over",
    "under",
)  # fmt: skip
"""Words before a number that make it an index or another thing's size ("head 1")."""
_NOUN_TAILS = frozenset({"vector", "head", "key", "query", "row", "column", "score", "weight"})
"""Second words of a counted noun ("context vectors", "query heads")."""
_SPLIT = re.compile(r"[\s._→()\[\],·-]+")
GENERIC = frozenset({"number", "numbers", "value", "values", "cell", "cells", "entry", "entries"})
"""Nouns that name whichever table the step shows, when it shows one."""
_AXIS_NOUNS = {
    "row": "rows",
    "column": "columns",
    "key": "key",
    "query": "query",
    "querie": "query",
    "token": "token",
    "feature": "feature",
    "head": "head",
    "pair": "pair",
    "tile": "tile",
    "block": "block",
    "position": "position",
}
"""A count's noun (singular) and the axis it counts."""


@dataclass(frozen=True)
class Claim:
    """A sentence that states a relation or a count, and what became of it."""

    line: int
    column: int
    sentence: str
    checked: str | None = None
    """What it was checked against (None: it was read as prose)."""
    prose: str | None = None
    """Why it was not checked (None: it was checked)."""
    false: str | None = None
    """The warning, when the check found it false."""

    @property
    def verdict(self) -> str:
        if self.false is not None:
            return f"false: {self.false}"
        if self.checked is not None:
            return f"checked: {self.checked}"
        return f"prose (not checked: {self.prose})"


@dataclass(frozen=True)
class _Table:
    resolved: Resolved
    names: frozenset[str]
    """The words that name it: its tensor's name, its stage's for a stage's first tensor."""

    @property
    def tensor(self) -> torch.Tensor:
        return self.resolved.tensor.detach().double()

    @property
    def title(self) -> str:
        return self.resolved.ref.label or self.resolved.name


_Verdict = tuple[str, str | None]
"""(what it was checked against, the warning when false)."""
_Checker = Callable[[str, Sequence[_Table], LessonStep], "_Verdict | str | None"]
"""A verdict; or why the sentence is prose (a claim of this kind the check cannot tie to a
table); or None (not a claim of this kind)."""


def relation_warnings(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each sentence whose relation the tables it talks about contradict, and
    at each loop table titled "so far" that holds something else."""
    found = [
        Problem(claim.line, claim.column, f"warning: {claim.false}", path)
        for claim in claims(lesson, runner)
        if claim.false is not None
    ]
    found += so_far_loops(lesson, runner, path)
    return sorted(set(found), key=lambda p: (p.line, p.column, p.message))


def claims(lesson: Lesson, runner: LessonRunner) -> list[Claim]:
    """Every sentence of ``lesson`` that states a relation or a count, checked or not, in file
    order."""
    source = source_lines(lesson)
    found: list[Claim] = []
    for _start, _end, sentence in sentence_spans(lesson.summary):
        if _TRIGGER.search(sentence):
            line, column = locate(source, sentence, 1)
            found.append(Claim(line, column, sentence, prose="the summary shows no table"))
    for number, step in enumerate(lesson.steps):
        tables = _tables(lesson, number, runner)
        for table in tables:  # a label is its table's title: about that table alone
            label = table.resolved.ref.label
            if label and table.resolved.ref in step.tables() and _TRIGGER.search(label):
                line, column = locate(source, label, step.line)
                found.append(_judge(" ".join(label.split()), [table], step, line, column))
        for text, said in _said(step):
            for _start, end, sentence in sentence_spans(text):
                if not _TRIGGER.search(sentence):
                    continue
                line, column = locate(source, sentence, step.line)
                if said is not None:
                    found.append(Claim(line, column, sentence, prose=said))
                elif text[end : end + 1] == "?":
                    found.append(
                        Claim(line, column, sentence, prose="a question asks, it states nothing")
                    )
                else:
                    found.append(_judge(sentence, tables, step, line, column))
    return sorted(found, key=lambda c: (c.line, c.column))


def _judge(
    sentence: str, tables: Sequence[_Table], step: LessonStep, line: int, column: int
) -> Claim:
    if not tables:
        why = "a loop's sub-steps" if step.kind == "loop" else f"the {step.kind} shows no table"
        return Claim(line, column, sentence, prose=why)
    if len(sentence) > LONGEST:
        return Claim(line, column, sentence, prose="too long to read as one claim")
    reasons: list[str] = []
    for checker in _CHECKERS:
        try:
            verdict = checker(sentence, tables, step)
        except (ArithmeticError, RuntimeError, ValueError, IndexError, TypeError):
            # A table of a kind no checker expects (no rows, not numbers): not checked, never a
            # traceback in place of the lesson's warnings.
            verdict = "its table is of a kind this check does not read"
        if verdict is None:
            continue
        if isinstance(verdict, str):
            reasons.append(verdict)
            continue
        checked, false = verdict
        return Claim(line, column, sentence, checked=checked, false=false)
    if _SIDE_OR_SHAPE.search(sentence):
        return Claim(
            line, column, sentence, checked="the side of the diagonal or the shape of its tables"
        )
    why = reasons[0] if reasons else "no relation this check reads about a table it can name"
    return Claim(line, column, sentence, prose=why)


def _said(step: LessonStep) -> Iterator[tuple[str, str | None]]:
    """(text, None) for each piece of the step's prose that states what it says; (text, why
    it is prose) for a choice, which may be meant to be wrong."""
    if step.kind == "quiz":
        quiz = step_as(step, Quiz)
        yield from ((text, None) for text in (quiz.question, quiz.explanation, *quiz.hints))
        yield from (
            (choice, "a choice: a wrong one is meant to be false") for choice in quiz.choices
        )
        return
    if step.kind == "checkpoint":
        yield step_as(step, Checkpoint).title, None
    yield from ((text, None) for text in step.prose())


def _tables(lesson: Lesson, number: int, runner: LessonRunner) -> list[_Table]:
    """The tables step ``number`` shows, as the walk shows them: a compare's two sides; a
    show's (or a quiz's ``show:``) every tensor of a stage named alone; a quiz without tables
    of its own, those of the show step before it."""
    step = lesson.steps[number]
    if step.kind == "loop":
        return []
    if step.kind == "compare":
        pairs = [(ref, False) for ref in step.tables()]  # each side's own tensor
    else:
        refs = list(step.tables())
        if step.kind == "quiz" and not refs:
            context = quiz_context(lesson.steps, number)
            shown = lesson.steps[context] if context is not None else None
            refs = [step_as(shown, Show).ref] if shown is not None and shown.kind == "show" else []
        pairs = [(ref, True) for ref in refs]
    found: list[_Table] = []
    for ref, every in pairs:
        try:
            resolved = runner.tensors(ref) if every else [runner.tensor(ref)]
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError):
            continue  # check_lesson reports it
        for index, one in enumerate(resolved):
            # Not the label's words: "linear, factor 4" names the options, not the table. The
            # stage names its first tensor; another ("weights.difference") goes by its own.
            stage, own = one.ref.stage, one.name
            if index > 0 and own.startswith(f"{stage}."):
                own = own[len(stage) + 1 :]
            names = {*_words(own), (one.ref.tensor or "").lower()}
            names |= {stage.lower(), _singular(stage.lower())} if index == 0 else set()
            found.append(_Table(one, frozenset(n for n in names if n)))
    return found


def _words(text: str) -> list[str]:
    return [_singular(word.lower()) for word in _SPLIT.split(text) if word]


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


_LEADING = frozenset({"with", "and", "so", "then", "now", "here", "there", "where", "when"})
"""Words a sentence may have just before "every row is the same" without naming a part."""
_ARTICLES = frozenset({"the", "its", "their", "this", "that", "these", "those", "a", "an", "of"})


def _named(phrase: str, tables: Sequence[_Table], *, generic: bool = True) -> list[_Table]:
    """The tables ``phrase`` names, every word of it: the tensor's or its stage's name, or a
    generic noun ("values", "cells") for the step's only table; nothing names the step's only
    table. A word more ("the future weights", "real attention weights") names a part or
    another thing: no table."""
    words = {_singular(w.lower()) for w in re.findall(r"[A-Za-z_]\w*", phrase)} - _ARTICLES
    if not words:
        return list(tables) if generic and len(tables) == 1 else []
    named = [t for t in tables if words <= t.names]
    if named:
        return named
    plain = {_singular(g) for g in GENERIC}
    if generic and len(tables) == 1 and words <= tables[0].names | plain:
        return list(tables)
    return []


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    import torch

    if a.shape != b.shape:
        return False
    both = torch.isfinite(a) & torch.isfinite(b)
    if not bool((both == (torch.isfinite(a) | torch.isfinite(b))).all()):
        return False
    if not bool((a[~both] == b[~both]).all()):
        return False
    gap = (a[both] - b[both]).abs()
    scale = torch.maximum(a[both].abs(), b[both].abs()).clamp(min=1.0)
    return bool((gap <= ROUNDING * scale).all())


def _target(word: str) -> float:
    return {"one": 1.0, "1": 1.0, "zero": 0.0, "0": 0.0}.get(word.lower(), 1.0)


def _as_grid(tensor: torch.Tensor) -> torch.Tensor:
    """The table as rows and columns (a vector: one row)."""
    if tensor.dim() == 0:
        return tensor.reshape(1, 1)
    if tensor.dim() == 1:
        return tensor.reshape(1, -1)
    return tensor.reshape(-1, tensor.shape[-1])


def _sums(sentence: str, tables: Sequence[_Table], step: LessonStep) -> _Verdict | str | None:

    match = _SUM.search(sentence)
    if match is None:
        return _whole_sum(sentence, tables)
    if _EXCEPTION.search(match.group("between")):
        return "an exception ('but', 'most') the check does not locate"
    subject = re.search(r"\bof (?:the )?(.*)$", match.group("between").strip())
    phrase = subject.group(1) if subject else ""
    axis = match.group("axis").lower().rstrip("s")
    token, phrase = _token_in(phrase, tables) if axis == "row" else (None, phrase)
    named = _named(phrase, tables)
    if len(named) != 1:
        return "the sentence names no one table the step shows"
    table = named[0]
    tensor = table.tensor
    if axis == "column" and tensor.dim() < 2:
        return "a table without columns"
    sums = tensor.sum(dim=-1 if axis == "row" else -2)  # each matrix's own, heads apart
    if token is not None:
        row = _token_row(table, token)
        if row is None:
            return f"'{token}' is no one row of '{table.title}'"
        sums, axis = sums[row : row + 1], f"row of '{token}'"
    said = match.group("target").lower()
    if said == "less than 1":
        holds = bool((sums < 1 - ROUNDING).all())
    else:
        goal = _target(said)
        holds = bool(((sums - goal).abs() <= ROUNDING * max(1.0, abs(goal))).all())
    negated = match.group("neg") is not None
    if negated:
        holds = not bool(((sums - _target(said)).abs() <= ROUNDING).all())
    what = f"the {axis} sums of '{table.title}'"
    if holds:
        return what, None
    return what, _false_sum(match.group(), table, axis, sums, negated)


def _token_in(phrase: str, tables: Sequence[_Table]) -> tuple[str | None, str]:
    """The token ``phrase`` names a row by ("the row of 'journey'"), and the phrase without
    it; (None, phrase) when it names none."""
    tokens = {token for table in tables for token in table.resolved.tokens if token.strip()}
    for token in sorted(tokens, key=len, reverse=True):
        found = re.search(rf"['\"‘“]?(?<![\w]){re.escape(token)}(?![\w])['\"’”]?", phrase)
        if found is not None:
            return token, (phrase[: found.start()] + phrase[found.end() :]).strip()
    return None, phrase


def _token_row(table: _Table, token: str) -> int | None:
    """The row of ``token`` in a table of one row per token (None: no one row is it)."""
    tokens, axes, tensor = table.resolved.tokens, table.resolved.axes or (), table.tensor
    if tensor.dim() != 2 or not axes or axes[0] not in ("query", "token"):
        return None
    if tokens.count(token) != 1 or tensor.shape[0] != len(tokens):
        return None
    return tokens.index(token)


def _false_sum(written: str, table: _Table, axis: str, sums: torch.Tensor, negated: bool) -> str:
    shown = ", ".join(f"{float(v):.4f}" for v in sums.flatten()[:8])
    more = ", …" if sums.numel() > 8 else ""
    if negated:
        return (
            f"'{_short(written)}' but every {axis} of '{table.title}' does ({axis} sums "
            f"{shown}{more}): say what the table shows"
        )
    return (
        f"'{_short(written)}' but the {axis} sums of '{table.title}' are {shown}{more}: say "
        "what the table shows, or show the table the sentence is about"
    )


def _whole_sum(sentence: str, tables: Sequence[_Table]) -> _Verdict | str | None:
    match = _WHOLE_SUM.search(sentence)
    if match is None:
        return None
    named = _named(match.group("subject"), tables, generic=False)
    if len(named) != 1 or _EXCEPTION.search(match.group("subject")):
        return "the sentence names no one table the step shows"
    table = named[0]
    total = float(table.tensor.sum())
    goal = _target(match.group("target"))
    holds = abs(total - goal) <= ROUNDING * max(1.0, abs(goal))
    if match.group("neg"):
        holds = not holds
    what = f"the sum of '{table.title}'"
    if holds:
        return what, None
    return what, (
        f"'{_short(match.group())}' but '{table.title}' sums to {total:.4f}: say what the "
        "table shows"
    )


def _every_cell(sentence: str, tables: Sequence[_Table], step: LessonStep) -> _Verdict | str | None:

    match = _EVERY_CELL.search(sentence)
    if match is None:
        return None
    if _EXCEPTION.search(sentence[match.start() : match.end()]):
        return "an exception the check does not locate"
    named = _named(match.group("noun"), tables)
    if len(named) != 1:
        return "the sentence names no one table the step shows"
    table = named[0]
    values = table.tensor.flatten()
    what = match.group("what").lower()
    tests: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
        "0": lambda v: v.abs() <= ROUNDING,
        "zero": lambda v: v.abs() <= ROUNDING,
        "positive": lambda v: v > 0,
        "negative": lambda v: v < 0,
        "non-negative": lambda v: v >= 0,
        "at most 1": lambda v: v <= 1 + ROUNDING,
        "between 0 and 1": lambda v: (v >= -ROUNDING) & (v <= 1 + ROUNDING),
    }
    holds = tests[what](values)
    checked = f"every cell of '{table.title}'"
    if bool(holds.all()):
        return checked, None
    first = float(values[~holds][0])
    return checked, (
        f"'{_short(match.group())}' but '{table.title}' holds {first:.4f}: say what the table shows"
    )


def _same_lines(sentence: str, tables: Sequence[_Table], step: LessonStep) -> _Verdict | str | None:
    match = _SAME_LINES.search(sentence)
    if match is None or _NEGATION.search(sentence[: match.end()]):
        return None
    before = sentence[: match.start()]
    last = re.search(r"([A-Za-z]+)\W*$", before)
    if last is not None and last.group(1).lower() not in _LEADING:
        return "a part of the table ('the future rows') the check does not locate"
    named = _named(before, tables) or (list(tables) if len(tables) == 1 else [])
    if len(named) != 1:
        return "the sentence names no one table the step shows"
    table = named[0]
    if table.tensor.dim() > 2:
        return "a table of several matrices: which one's rows is not said"
    grid = _as_grid(table.tensor)
    axis = match.group("axis").lower().rstrip("s")
    lines = grid if axis == "row" else grid.T
    holds = all(_close(lines[0], other) for other in lines[1:])
    checked = f"the {axis}s of '{table.title}'"
    if holds:
        return checked, None
    return checked, (
        f"'{_short(match.group())}' but the {axis}s of '{table.title}' differ: say what the "
        "table shows"
    )


def _first_agree(
    sentence: str, tables: Sequence[_Table], step: LessonStep
) -> _Verdict | str | None:
    match = _FIRST_AGREE.search(sentence)
    if match is None or step.kind != "compare" or len(tables) != 2:
        return None
    if max(t.tensor.dim() for t in tables) > 2:
        return "tables of several matrices: which one's rows is not said"
    left, right = (_as_grid(t.tensor) for t in tables)
    if left.shape != right.shape:
        return "the two sides differ in shape"
    n = _count(match.group("n"))
    if match.group("axis").lower() == "columns":
        left, right = left.T, right.T
    part = slice(0, n) if match.group("which").lower() == "first" else slice(-n, None)
    checked = f"the {match.group('which')} {n} {match.group('axis')} of both sides"
    if n <= left.shape[0] and _close(left[part], right[part]):
        return checked, None
    return checked, (
        f"'{_short(match.group())}' but they differ between '{tables[0].title}' and "
        f"'{tables[1].title}': say which agree"
    )


def _same_sides(sentence: str, tables: Sequence[_Table], step: LessonStep) -> _Verdict | str | None:
    if step.kind != "compare" or len(tables) != 2:
        return None
    match = _SAME_SIDES.search(sentence)
    if match is None:
        return None
    if _NEGATION.search(sentence) or re.search(r"\bdifferen|\bequal to\b", sentence, re.I):
        return "a negation or a difference the check does not read"
    noun = match.group("noun")
    if noun is not None:
        words = {_singular(w.lower()) for w in noun.split()}
        names = tables[0].names | tables[1].names | {_singular(g) for g in GENERIC}
        names |= {"output", "result", "table"}
        if not words & names:
            return f"'the same {noun}' names no table the step compares"
    left, right = tables[0].tensor, tables[1].tensor
    checked = f"'{tables[0].title}' against '{tables[1].title}'"
    if _close(left, right):
        return checked, None
    if left.shape == right.shape:
        gap = float((left - right).abs().nan_to_num(0.0).max())
        detail = f"they differ by up to {gap:.4g}"
    else:
        detail = "their shapes differ"
    return checked, (
        f"'{_short(match.group())}' but {detail}: say how they differ, or compare what is the same"
    )


def _counts(sentence: str, tables: Sequence[_Table], step: LessonStep) -> _Verdict | str | None:
    verdict: _Verdict | str | None = None
    for match in _COUNT.finditer(sentence):
        noun = match.group("noun").lower()
        if " " in noun and _singular(noun.split()[1]) not in _NOUN_TAILS:
            noun = noun.split()[0]  # "two ramps agree": the noun is "ramps"
        after = sentence[match.start("noun") + len(noun) :]
        before = sentence[: match.start()].rstrip().lower()
        if (
            re.match(r"\s*(?:per|of|each|×|x\b|=)", after)
            or before.endswith(_NOT_COUNTED)
            or re.search(r"\d\s*(?:and|or|to|,)$", before)
        ):
            # "one key per token", "3 tokens of 3 numbers", "heads of 2 columns", "head 1",
            # "columns 0 and 1": a shape, another thing's size or an index, not a count
            continue
        n = _count(match.group("n"))
        allowed, what = _allowed(noun, tables)
        if allowed is None:
            if verdict is None:
                verdict = (
                    f"'{match.group('n')} {noun}' counts nothing the step's tables are named by"
                )
            continue
        if n in allowed:
            verdict = (what, None)
            continue
        sizes = ", ".join(str(a) for a in sorted(allowed)[:6])
        return what, (
            f"'{_short(match.group())}' but {what} counts {sizes}: say the number the table "
            "shows, or write it as a live value"
        )
    return verdict


def _allowed(noun: str, tables: Sequence[_Table]) -> tuple[set[int] | None, str]:
    """The numbers a count of ``noun`` may be, from the tables it names (None: it names
    none)."""
    import torch

    first = _singular(noun.split()[0])
    last = _singular(noun.split()[-1])
    if noun == "in all":
        named, axis = (list(tables) if len(tables) == 1 else []), None
    elif last in _AXIS_NOUNS:
        axis = _AXIS_NOUNS[last]
        named = [
            t for t in tables if axis in (t.resolved.axes or ()) or axis in ("rows", "columns")
        ]
        if first != last:
            named = [t for t in named if first in t.names] or named
    else:
        axis = None
        named = [t for t in tables if first in t.names or last in t.names]
    if not named:
        return None, ""
    allowed: set[int] = set()
    for table in named:
        tensor = table.tensor
        shape = list(tensor.shape)
        grid = _as_grid(tensor)
        kept = torch.isfinite(grid) & (grid > MASKED) & (grid != 0)
        per_row = {int(c) for c in kept.sum(dim=-1)} | {int(c) for c in kept.sum(dim=0)}
        if axis in ("rows", "columns"):
            allowed |= {grid.shape[0] if axis == "rows" else grid.shape[1]}
            continue
        if axis is not None:
            axes = table.resolved.axes or ()
            allowed |= {shape[i] for i, name in enumerate(axes) if name == axis}
            allowed |= per_row
            continue
        allowed |= {tensor.numel(), *shape, int(kept.sum()), *per_row} | (
            {len(named)} if len(named) > 1 else set()
        )
    titles = " and ".join(f"'{t.title}'" for t in named)
    return allowed, titles


def _keeps(sentence: str, tables: Sequence[_Table], step: LessonStep) -> _Verdict | str | None:
    match = _KEEPS.search(sentence)
    if match is None:
        return None
    if step.kind != "compare" or len(tables) != 2:
        return "what is kept is checked only where a compare shows before and after"
    verb = match.group().split()[0].lower()
    if verb.startswith("leave") and not re.search(r"\bas it was\b|\bunchanged\b", sentence):
        return None
    left, right = (t.tensor for t in tables)
    if left.shape != right.shape or left.dim() != 1:
        return "what is kept is checked in a table of one row"
    same = [i for i in range(left.shape[0]) if _close(left[i : i + 1], right[i : i + 1])]
    checked = f"'{tables[0].title}' against '{tables[1].title}', cell by cell"
    if match.group("index") is not None:
        index = int(match.group("index"))
        if index < left.shape[0] and index in same:
            return checked, None
        return checked, (
            f"'{_short(match.group())}' but {match.group('axis')} {index} changes: say which "
            f"{'are' if len(same) != 1 else 'is'} kept ({_listed(same)})"
        )
    order = sorted(range(left.shape[0]), key=lambda i: -float(left[i].abs()))
    if match.group("speed").lower() == "slow":
        order.reverse()
    plural = match.group("plural").lower().endswith("s")
    holds = order[0] in same and (len(same) >= 2 if plural else True)
    if plural and holds:
        holds = set(order[: len(same)]) == set(same)
    if holds:
        return checked, None
    return checked, (
        f"'{_short(match.group())}' but only {_singular(match.group('plural').lower())} "
        f"{_listed(same)} stays the same: say which is kept"
    )


def _listed(indices: Sequence[int]) -> str:
    if not indices:
        return "none"
    return ", ".join(str(i) for i in indices)


def _count(word: str) -> int:
    word = word.lower()
    return NUMBER_WORDS.index(word) if word in NUMBER_WORDS else int(word)


def _short(text: str, limit: int = 50) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_CHECKERS: tuple[_Checker, ...] = (
    _first_agree,
    _same_lines,
    _sums,
    _every_cell,
    _keeps,
    _same_sides,
    _counts,
)
"""Each kind of claim, most specific first: the first that reads a sentence decides it."""


# Loops titled "so far" ---------------------------------------------------------------


def so_far_loops(lesson: Lesson, runner: LessonRunner, path: str) -> list[Problem]:
    """A warning at each loop whose table the walk titles "<stage> so far" while its cells are
    not the stage's (another quantity, or cells left empty when the loop has run through)."""
    found: list[Problem] = []
    for step in lesson.steps:
        if step.kind != "loop":
            continue
        try:
            problem = _so_far(step_as(step, Loop), runner)
        except (TracerError, ArithmeticError, RuntimeError, ValueError, IndexError, TypeError):
            continue  # check_lesson reports it
        if problem is not None:
            found.append(Problem(step.line, step.column, f"warning: {problem}", path))
    return found


def _so_far(step: Loop, runner: LessonRunner) -> str | None:
    from tracer.tracing.stepper import cell_of, scalar_of

    cells: dict[tuple[int, int], float] = {}
    result = ""
    count = 0
    for sub in runner.substeps(step):
        count += 1
        scalar, cell = scalar_of(sub), cell_of(sub)
        if scalar is None or cell is None:
            return None  # no table: the walk draws none for this loop
        result = scalar[0]
        if not holds_stage(step.stage, result):
            return None  # titled as what it holds, not "so far"
        cells[cell] = scalar[1]
    if not cells:
        return None
    final = _final(step, runner)
    if final is None:
        return None
    grid = _as_grid(final)
    if final.dim() == 1 and step.query is not None:  # one query's row: the loop's row
        cells = {(0, c): v for (r, c), v in cells.items() if r == step.query}
    wrong = [
        (cell, value)
        for cell, value in cells.items()
        if cell[0] >= grid.shape[0]
        or cell[1] >= grid.shape[1]
        or not _close(grid[cell].reshape(1), _scalar(value))
    ]
    title = f"'{step.stage} so far'"
    if wrong:
        (row, column), value = wrong[0]
        return (
            f"this loop's table is titled {title}, but its cell ({row}, {column}) holds "
            f"{value:.4f}, not {step.stage}'s value there: write the stage's own value in each "
            "sub-step, or name what the table holds"
        )
    whole = step.limit is None or count < step.limit
    if whole and len(cells) < grid.numel():
        return (
            f"this loop's table is titled {title}, but after its last sub-step it has filled "
            f"{len(cells)} of the {grid.numel()} cells of '{step.stage}': fill every cell, or "
            "name what the table holds"
        )
    return None


def _scalar(value: float) -> torch.Tensor:
    import torch

    return torch.tensor([value], dtype=torch.float64)


def _final(step: Loop, runner: LessonRunner) -> torch.Tensor | None:
    from tracer.lessons.model import TensorRef

    ref = TensorRef(step.variant, step.stage, query=step.query, options=step.options)
    try:
        resolved = runner.tensor(ref)
    except TracerError:
        return None
    tensor = resolved.tensor.detach().double()
    return tensor if tensor.dim() <= 2 else None


__all__ = ["Claim", "claims", "relation_warnings", "so_far_loops"]
