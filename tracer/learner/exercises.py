"""Exercises in the manner of rustlings: numbered stubs, a watcher, progress, hints.

``attn exercises init DIR`` copies the stubs (never over a learner's file);
``attn exercises watch DIR`` re-checks the current exercise whenever its file
is saved and moves on when it passes; progress lives in ``DIR/.attn-exercises.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from tracer.errors import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, InputError, Location, UsageError
from tracer.suggest import did_you_mean

PROGRESS_FILE = ".attn-exercises.json"
PROGRESS_VERSION = 1


@dataclass(frozen=True)
class Exercise:
    slug: str
    """File stem, e.g. ``01_dot_products``; also how progress names it."""
    title: str
    variant: str
    hints: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)
    """Trace options for the check (``init``, ``d_out``, ``heads``)."""

    @property
    def filename(self) -> str:
        return f"{self.slug}.py"

    @property
    def number(self) -> int:
        return int(self.slug.split("_", 1)[0])


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "01_dot_products",
        "Dot products as alignment",
        "naive-loop",
        (
            "torch.dot(a, b) takes two 1-d tensors; inputs[i] is token i's embedding.",
            "The loop body is one line: scores[i, j] = torch.dot(inputs[i], inputs[j]).",
        ),
    ),
    Exercise(
        "02_normalising",
        "From scores to weights to context vectors",
        "naive-loop",
        (
            "torch.softmax(scores, dim=-1) normalises each row: one query's weights over all keys.",
            "context[i] += weights[i, j] * inputs[j] adds one weighted embedding.",
            "Remove the `raise` line once the loop body is written.",
        ),
    ),
    Exercise(
        "03_vectorising",
        "Vectorising: every score in one product",
        "vectorized",
        (
            "inputs @ inputs.T has one row per query and one column per key.",
            "The context vectors are weights @ inputs: each row mixes all embeddings.",
        ),
    ),
    Exercise(
        "04_trainable_qkv",
        "Trainable queries, keys and values",
        "trainable",
        (
            "queries = inputs @ W_query, and the same for keys and values.",
            "d_k = keys.shape[-1]; divide the scores by d_k ** 0.5 before the softmax.",
            "softmax over dim=-1, then weights @ values.",
        ),
    ),
    Exercise(
        "05_causal_mask",
        "Causal attention with -inf",
        "masked",
        (
            "mask = torch.triu(torch.ones(n, n), diagonal=1).bool() is True above the diagonal.",
            "masked_fill returns a new tensor: scores = scores.masked_fill(mask, -torch.inf).",
            "Then softmax(scores / keys.shape[-1] ** 0.5, dim=-1) @ values.",
        ),
    ),
    Exercise(
        "06_renormalise",
        "Zero the future after softmax, then renormalise",
        "masked",
        (
            "torch.tril(torch.ones(n, n)) is 1 on and below the diagonal: multiply the weights by it.",
            "weights / weights.sum(dim=-1, keepdim=True) makes every row sum to 1 again.",
        ),
    ),
    Exercise(
        "07_fix_the_mistakes",
        "Fix the three mistakes",
        "masked",
        (
            "Run the watcher: it names one mistake and its line at a time.",
            "A masked_fill result must be kept: assign it, or use masked_fill_.",
            "Scale by the square root of d_k, and softmax over the last dimension.",
        ),
    ),
    Exercise(
        "08_multihead_wrapper",
        "Multi-head attention: stacked causal heads",
        "multihead-wrapper",
        (
            "causal_attention is your exercise 5, word for word.",
            "W_query[h] is head h's query matrix; loop over range(len(W_query)).",
            "torch.cat([...], dim=-1) puts the heads' outputs side by side.",
        ),
        {"init": "linear", "heads": 2, "d_out": 2},
    ),
    Exercise(
        "09_multihead_split",
        "Multi-head attention: one projection split into heads",
        "multihead",
        (
            "(inputs @ W_query).view(n, num_heads, head_dim).transpose(0, 1) is one head per slice.",
            "Per-head scores: queries @ keys.transpose(1, 2), the last two axes only.",
            "(weights @ values).transpose(0, 1).contiguous().view(n, d_out) @ W_out + b_out.",
        ),
        {"init": "linear", "heads": 2, "d_out": 4},
    ),
)


def template(exercise: Exercise) -> str:
    folder = resources.files("tracer.learner") / "templates" / "exercises"
    return (folder / f"{exercise.slug}.py.tmpl").read_text(encoding="utf-8")


def init_exercises(folder: Path) -> list[tuple[Path, bool]]:
    """Write every missing stub; return (path, written) pairs. Existing files are kept as they are."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"not a folder: {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for exercise in EXERCISES:
        path = folder / exercise.filename
        try:
            with path.open("x", encoding="utf-8") as handle:  # "x": never over an existing file
                handle.write(template(exercise))
        except FileExistsError:
            results.append((path, False))
            continue
        results.append((path, True))
    progress = folder / PROGRESS_FILE
    if not progress.exists():
        Progress().save(folder)
    return results


@dataclass
class Progress:
    done: list[str] = field(default_factory=list)
    hints: dict[str, int] = field(default_factory=dict)

    @classmethod
    def load(cls, folder: Path) -> Progress:
        if not folder.is_dir():
            raise UsageError(
                f"exercise folder not found: {folder} (run 'attn exercises init {folder}')"
            )
        path = folder / PROGRESS_FILE
        if not path.exists():
            if not any((folder / e.filename).exists() for e in EXERCISES):
                raise UsageError(f"no exercises in {folder} (run 'attn exercises init {folder}')")
            return cls()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(
                f"progress file is not valid JSON: {exc.msg}",
                Location(str(path), exc.lineno, exc.colno),
            ) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the progress file: {exc}", Location(str(path))) from exc
        known = {e.slug for e in EXERCISES}
        if not isinstance(data, dict):
            raise InputError("progress file must hold a JSON object", Location(str(path)))
        done = data.get("done", [])
        hints = data.get("hints", {})
        if not isinstance(done, list) or not isinstance(hints, dict):
            raise InputError(
                "progress file: 'done' must be a list and 'hints' an object", Location(str(path))
            )
        return cls(
            done=[slug for slug in done if slug in known],
            hints={k: int(v) for k, v in hints.items() if k in known and isinstance(v, int)},
        )

    def save(self, folder: Path) -> None:
        data = {"version": PROGRESS_VERSION, "done": self.done, "hints": self.hints}
        path = folder / PROGRESS_FILE
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, path)  # never a half-written progress file

    def current(self) -> Exercise | None:
        return next((e for e in EXERCISES if e.slug not in self.done), None)


def find_exercise(name: str) -> Exercise:
    """An exercise by number (``3``), slug (``03_vectorising``) or file name."""
    stem = name.removesuffix(".py")
    for exercise in EXERCISES:
        if stem in (exercise.slug, str(exercise.number), f"{exercise.number:02d}"):
            return exercise
    slugs = [e.slug for e in EXERCISES]
    raise UsageError(
        f"no exercise '{name}'{did_you_mean(stem, slugs)}; they are numbered 1 to {len(EXERCISES)}"
    )


@dataclass
class Outcome:
    exercise: Exercise
    status: int
    """EXIT_OK passed, EXIT_PROBLEMS not yet, EXIT_USAGE the file fails."""
    text: str


def check_exercise(folder: Path, exercise: Exercise) -> Outcome:
    """Check one exercise file against its variant; the text is what the learner should see."""
    from tracer.learner.check import check
    from tracer.learner.loader import LearnerFailure
    from tracer.learner.report import format_check
    from tracer.runner import TraceOptions, start_trace

    path = folder / exercise.filename
    if not path.exists():
        return Outcome(
            exercise,
            EXIT_USAGE,
            f"{path} is missing; 'attn exercises init {folder}' writes it again (and keeps your other files)",
        )
    options = dict(exercise.options)
    heads = options.pop("heads", None)
    trace = start_trace(
        exercise.variant,
        TraceOptions(extra={} if heads is None else {"heads": heads}, **options),
    ).run_to_end()
    try:
        result = check(path, trace)
    except LearnerFailure as failure:
        if "NotImplementedError" in failure.text.strip().splitlines()[-1]:
            return Outcome(
                exercise,
                EXIT_PROBLEMS,
                f"{path} is waiting for you: replace the TODOs.\n{failure.text}",
            )
        return Outcome(exercise, EXIT_USAGE, failure.text)
    except UsageError as error:
        return Outcome(exercise, EXIT_USAGE, str(error))
    text = format_check(result)
    return Outcome(exercise, EXIT_OK if result.matches else EXIT_PROBLEMS, text)


def heading(exercise: Exercise) -> str:
    return (
        f"exercise {exercise.number}/{len(EXERCISES)}: {exercise.filename} - {exercise.title} "
        f"(against '{exercise.variant}')"
    )


def hint(folder: Path, name: str | None = None) -> str:
    """The next hint for an exercise (the current one by default), counted in the progress file."""
    progress = Progress.load(folder)
    exercise = find_exercise(name) if name else progress.current()
    if exercise is None:
        return "All exercises are done: no hints needed."
    shown = progress.hints.get(exercise.slug, 0)
    number = min(shown + 1, len(exercise.hints))
    progress.hints[exercise.slug] = number
    progress.save(folder)
    more = "" if number < len(exercise.hints) else " (that was the last one)"
    return f"{exercise.filename}, hint {number}/{len(exercise.hints)}{more}:\n  {exercise.hints[number - 1]}"


def status_lines(folder: Path) -> Iterator[str]:
    progress = Progress.load(folder)
    current = progress.current()
    for exercise in EXERCISES:
        if exercise.slug in progress.done:
            mark = "done"
        elif exercise is current:
            mark = "next"
        else:
            mark = "todo"
        yield f"  {mark:<4}  {exercise.filename:<26} {exercise.title}"
    yield f"{len(progress.done)}/{len(EXERCISES)} done"


def watch(
    folder: Path,
    emit: Callable[[str], None],
    *,
    once: bool = False,
    interval: float = 0.5,
    polls: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Check the current exercise, then again after each save; move on when it passes.

    With ``once``, check once and return its status. Otherwise run until every
    exercise is done (or ``polls`` polls have passed, for tests; Ctrl-C stops it).
    """
    progress = Progress.load(folder)
    while True:
        exercise = progress.current()
        if exercise is None:
            emit(f"All {len(EXERCISES)} exercises are done. Well done!")
            return EXIT_OK
        outcome = check_exercise(folder, exercise)
        emit(f"{heading(exercise)}\n\n{outcome.text}")
        if outcome.status == EXIT_OK:
            progress.done.append(exercise.slug)
            progress.save(folder)
            following = progress.current()
            emit(
                f"passed: {len(progress.done)}/{len(EXERCISES)} done."
                + (f" Next: {following.filename}" if following else "")
            )
            if once:
                return EXIT_OK
            continue
        if once:
            return outcome.status
        emit(
            f"(watching {exercise.filename}: save it to check again; Ctrl-C to stop; 'attn exercises hint {folder}' for a hint)"
        )
        path = folder / exercise.filename
        before = _stamp(path)
        while _stamp(path) == before:
            if polls is not None:
                if polls <= 0:
                    return outcome.status
                polls -= 1
            sleep(interval)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)
