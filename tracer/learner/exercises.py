"""Exercises in the manner of rustlings: numbered stubs, a watcher, progress, hints.

``attn exercises init DIR`` copies the stubs (never over a learner's file);
``attn exercises watch DIR`` re-checks the current exercise whenever its file
is saved and moves on when it passes; progress lives in ``DIR/.attn-exercises.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.errors import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, InputError, Location, UsageError
from tracer.files import locked, set_aside, write_atomic, write_new
from tracer.suggest import did_you_mean

if TYPE_CHECKING:
    from tracer.tracing import Trace

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
    Exercise(
        "10_sliding_window",
        "Sliding-window attention: only the last few keys",
        "sliding-window",
        (
            "i = torch.arange(n).unsqueeze(1) is a column of query positions, "
            "j = torch.arange(n).unsqueeze(0) a row of key positions.",
            "hidden = (j > i) | (j <= i - window): the future, and keys too far back.",
            "scores.masked_fill(hidden, -torch.inf), then softmax(dim=-1) @ values.",
        ),
    ),
    Exercise(
        "11_grouped_query",
        "Grouped-query attention: query heads share key/value heads",
        "grouped-query",
        (
            "group = num_heads // kv_heads query heads read each key/value head.",
            "keys.repeat_interleave(group, dim=0) gives heads 0, 0, 1, 1; repeat would give "
            "0, 1, 0, 1, pairing the wrong heads.",
            "Then exercise 9: masked, scaled scores per head, transpose back, @ W_out + b_out.",
        ),
        {"heads": 4, "kv_heads": 2, "d_out": 8},
    ),
    Exercise(
        "12_kv_cache",
        "Decoding with a KV cache",
        "kv-cache",
        (
            "torch.cat returns a new tensor: keys = torch.cat([keys, key.unsqueeze(0)]).",
            "The scores of one query are keys @ query / d_out ** 0.5, one per cached key.",
            "rows.append(torch.softmax(scores, dim=-1) @ values).",
        ),
    ),
    Exercise(
        "13_online_softmax",
        "Online softmax: the FlashAttention recurrence",
        "online-softmax",
        (
            "m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values).",
            "rescale = torch.exp(m - m_new) corrects everything summed under the old maximum: "
            "multiply both l and O by it.",
            "p = torch.exp(scores - m_new); l = rescale * l + p.sum(-1, keepdim=True); "
            "O = rescale * O + p @ values[start : start + tile]; then m = m_new.",
        ),
        {"init": "randn"},
    ),
    Exercise(
        "14_training",
        "Training the projections by gradient descent",
        "training",
        (
            "keys = inputs @ W_key; weights = torch.softmax((inputs @ W_query) @ keys.T "
            "/ keys.shape[-1] ** 0.5, dim=-1); context = weights @ (inputs @ W_value).",
            "loss = -torch.log(weights[torch.arange(n), partner]).mean() "
            "+ ((context - targets) ** 2).mean(): targets stay those of the starting W_value.",
            "Downhill is minus the gradient: W_query = (W_query - lr * grads[0]).requires_grad_(), "
            "and the same for W_key and W_value. attn check runs your code with gradients off, "
            "so the loss and autograd.grad stay inside `with torch.enable_grad():`.",
        ),
    ),
    Exercise(
        "15_backward",
        "The backward pass: dV, dP, dS, dQ and dK by the chain rule",
        "backward",
        (
            "dV = P.T @ dO and dP = dO @ V.T: the two sides of O = P V.",
            "D = (dP * P).sum(dim=-1, keepdim=True) is one number per query (a sum over the "
            "keys); dS = P * (dP - D).",
            "dQ = dS @ K / d_k ** 0.5 and dK = dS.T @ Q / d_k ** 0.5; then "
            "return dQ @ W_query.T + dK @ W_key.T + dV @ W_value.T.",
        ),
    ),
    Exercise(
        "16_flash_backward",
        "The FlashAttention-2 backward: one tile at a time",
        "flash-backward",
        (
            "D = (dO * O).sum(dim=-1, keepdim=True) equals rowsum(dP * P) and needs no P.",
            "In each tile P = torch.exp(S - L[i : i + tile]), with S masked as in the forward "
            "pass; a tile's own softmax would sum to 1 over the wrong keys.",
            "dV[j : j + tile] += P.T @ dO[i : i + tile]; dS = P * (dO[i : i + tile] @ "
            "V[j : j + tile].T - D[i : i + tile]); dQ[i : i + tile] += dS @ K[j : j + tile] * "
            "scale; dK[j : j + tile] += dS.T @ Q[i : i + tile] * scale.",
        ),
    ),
    Exercise(
        "17_rotary",
        "Rotary position embeddings: turn each pair by its position",
        "rope",
        (
            "angle has one row per token and one column per pair, like even and odd: "
            "torch.cos(angle) and torch.sin(angle) line up with them element by element.",
            "turned[:, 0::2] = even * cos - odd * sin; turned[:, 1::2] = even * sin + odd * cos "
            "(turned = torch.empty_like(x)).",
            "Then exercise 4 on the turned queries and keys: softmax(queries @ keys.T "
            "/ d ** 0.5, dim=-1) @ values.",
        ),
        {"d_out": 4},
    ),
    Exercise(
        "18_latent_attention",
        "Multi-head latent attention, absorbed as inference does",
        "mla",
        (
            "q · (c W_uk)ᵀ = (q W_ukᵀ) · c: absorbed = query @ W_uk.transpose(1, 2) is "
            "(heads, tokens, rank), and absorbed @ latent.T the no-rope scores.",
            "Add query_rope @ key_rope.T, divide by (head_dim + rope_dim) ** 0.5, mask the future "
            "with -inf and take the softmax over the last dimension.",
            "mixed = weights @ latent; folded = W_uv @ W_out.view(num_heads, head_dim, d_out); "
            "return (mixed @ folded).sum(dim=0) + b_out.",
        ),
        {"d_out": 4, "rank": 2, "absorb": True},
    ),
    Exercise(
        "19_paged_kv_cache",
        "A paged KV cache: blocks and a block table",
        "paged-kv-cache",
        (
            "if t % block == 0: table.append(free.pop()) takes a new block for token t.",
            "key_pool[table[t // block], t % block] = x @ W_key, and the same for the value.",
            "keys = key_pool[table].reshape(-1, d_out)[: t + 1]; then exercise 12's softmax "
            "and weighted sum.",
        ),
        {"block": 2},
    ),
    Exercise(
        "20_cross_attention",
        "Cross-attention: queries from one sequence, keys and values from another",
        "cross-attention",
        (
            "Only the keys and values change: keys = context @ W_key, values = context @ W_value; "
            "the queries stay x @ W_query.",
            "The scores are (target tokens × source tokens): queries @ keys.T / keys.shape[-1] ** "
            "0.5, and the softmax runs over the source tokens, dim=-1.",
            "No causal mask: every target token may read the whole source.",
        ),
    ),
    Exercise(
        "21_grouped_query_config",
        "A grouped-query module built from its config",
        "grouped-query",
        (
            "self.n_kv_heads = args.n_kv_heads; the query heads per key/value head are "
            "args.n_heads // args.n_kv_heads, and head_dim = args.dim // args.n_heads.",
            "wk and wv map dim to n_kv_heads * head_dim; repeat each key/value head for its "
            "group with repeat_interleave(n_rep, dim=1) on (batch, heads, tokens, head_dim).",
            "Causal scores per head: q @ k.transpose(-2, -1) / head_dim ** 0.5, masked above the "
            "diagonal with -inf; softmax over dim=-1, @ v, heads side by side, then self.wo.",
        ),
        {"heads": 4, "kv_heads": 2, "d_out": 4, "inputs": "ton-voyage"},
    ),
)

VARIANT_OPTIONS = ("heads", "kv_heads", "window", "tile", "causal", "rank", "absorb", "block")
"""Exercise options that are the variant's own (``-o``), not trace options."""


def template(exercise: Exercise) -> str:
    folder = resources.files("tracer.learner") / "templates" / "exercises"
    return (folder / f"{exercise.slug}.py.tmpl").read_text(encoding="utf-8")


def init_exercises(folder: Path) -> list[tuple[Path, bool]]:
    """Write every missing stub, and every stub a full disk cut short; return (path, written)
    pairs. Each is written whole or not at all; a file with anything of the learner's in it is
    kept as it is, so running it again after a failure finishes the folder."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"not a folder: {folder}")
    results = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for exercise in EXERCISES:
            path = folder / exercise.filename
            text = template(exercise)
            try:
                if _cut_short(path, text):  # a stub a full disk cut short: nothing of yours
                    write_atomic(path, text)
                else:  # whole or not at all, and never over an existing file
                    write_new(path, text)
            except FileExistsError:
                results.append((path, False))
                continue
            results.append((path, True))
    except OSError as exc:
        where = exc.filename or folder
        raise UsageError(f"cannot write {where}: {exc.strerror or exc}") from None
    progress = folder / PROGRESS_FILE
    if not progress.exists():
        Progress().try_save(folder)
    return results


def _cut_short(path: Path, text: str) -> bool:
    """Whether ``path`` is a stub cut short (empty, or the template's start and no more, as a
    full disk leaves an older version's stub): then nothing in it is the learner's, and it is
    written whole. A file with anything else in it is theirs, and kept."""
    whole = text.encode("utf-8")
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size >= len(whole):
            return False
        with path.open("rb") as handle:
            start = handle.read(len(whole))
    except OSError:
        return False
    return whole.startswith(start)


def _warn(message: str) -> None:
    print(f"attn: warning: {message}", file=sys.stderr)


@dataclass
class Progress:
    """Which exercises are done or skipped, and how many hints each has had.

    Saved atomically (a temporary file, fsync, rename) and merged with what is
    on disk at that moment, so two watchers in one folder lose nothing; a file
    that cannot be read is set aside as ``.attn-exercises.json.corrupt``.
    """

    done: list[str] = field(default_factory=list)
    hints: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, folder: Path, warn: Callable[[str], None] = _warn) -> Progress:
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
            return cls.parse(path.read_bytes(), str(path))
        except InputError as error:
            aside = _set_aside(path)
            where = f"set aside as {aside.name}" if aside else "left where it is"
            warn(f"{error} ({where}; starting with no progress)")
            return cls()
        except OSError as exc:
            warn(f"cannot read {path}: {exc.strerror} (starting with no progress)")
            return cls()

    @classmethod
    def parse(cls, data: bytes, where: str) -> Progress:
        """Progress from a file's bytes; InputError names what is wrong with them."""
        try:
            value = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(
                f"progress file is not UTF-8 text (byte {exc.start})", Location(where)
            ) from exc
        except json.JSONDecodeError as exc:
            raise InputError(
                f"progress file is not valid JSON: {exc.msg}",
                Location(where, exc.lineno, exc.colno),
            ) from exc
        except RecursionError as exc:
            raise InputError("progress file is nested too deeply", Location(where)) from exc
        if not isinstance(value, dict):
            raise InputError("progress file must hold a JSON object", Location(where))
        done, hints, skipped = (
            value.get("done", []),
            value.get("hints", {}),
            value.get("skipped", []),
        )
        if (
            not isinstance(done, list)
            or not isinstance(skipped, list)
            or not isinstance(hints, dict)
            or not all(isinstance(slug, str) for slug in done + skipped)
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in hints.values())
        ):
            raise InputError(
                "progress file: 'done' and 'skipped' must be lists of names and 'hints' an "
                "object of counts",
                Location(where),
            )
        known = {e.slug for e in EXERCISES}
        return cls(
            done=[slug for slug in dict.fromkeys(done) if slug in known],
            hints={k: max(0, v) for k, v in hints.items() if k in known},
            skipped=[slug for slug in dict.fromkeys(skipped) if slug in known],
        )

    def merged(self, other: Progress, forget: frozenset[str] = frozenset()) -> Progress:
        """Both instances' progress: nothing either has recorded is lost, except ``forget``."""
        done = [s for s in dict.fromkeys(other.done + self.done) if s not in forget]
        skipped = [
            s
            for s in dict.fromkeys(other.skipped + self.skipped)
            if s not in forget and s not in done
        ]
        hints = {
            k: max(other.hints.get(k, 0), self.hints.get(k, 0)) for k in {*other.hints, *self.hints}
        }
        return Progress(
            done=done, hints={k: v for k, v in hints.items() if k not in forget}, skipped=skipped
        )

    def save(self, folder: Path, forget: frozenset[str] = frozenset()) -> None:
        """Merge with the file as it is now and write the result atomically.

        ``forget``: exercises whose progress is dropped on purpose (a reset).
        Raises OSError when the folder cannot be written.
        """
        path = folder / PROGRESS_FILE
        with locked(path):  # two instances saving at once keep each other's progress
            self._merge_and_write(folder, path, forget)

    def _merge_and_write(self, folder: Path, path: Path, forget: frozenset[str]) -> None:
        on_disk = Progress()  # nothing (readable) there: this instance's progress is all there is
        with contextlib.suppress(OSError, InputError):
            on_disk = Progress.parse(path.read_bytes(), str(path))
        merged = self.merged(on_disk, forget)
        self.done, self.hints, self.skipped = merged.done, merged.hints, merged.skipped
        data = {
            "version": PROGRESS_VERSION,
            "done": self.done,
            "hints": dict(sorted(self.hints.items())),
            "skipped": self.skipped,
        }
        _clean_stale_temporaries(folder)
        # Never a half-written progress file; a symlinked one stays a symlink.
        write_atomic(path, json.dumps(data, indent=1) + "\n")

    def try_save(
        self,
        folder: Path,
        warn: Callable[[str], None] = _warn,
        forget: frozenset[str] = frozenset(),
    ) -> bool:
        """Save, or warn that progress could not be kept; never fail the command."""
        try:
            self.save(folder, forget)
        except OSError as exc:
            warn(f"cannot save progress in {folder / PROGRESS_FILE}: {exc.strerror or exc}")
            return False
        return True

    def current(self) -> Exercise | None:
        return next(
            (e for e in EXERCISES if e.slug not in self.done and e.slug not in self.skipped), None
        )


def _set_aside(path: Path) -> Path | None:
    return set_aside(path)  # .corrupt, .corrupt.1, ...: a second corruption keeps the first


def _clean_stale_temporaries(folder: Path) -> None:
    """Temporary files left by a watcher that was killed mid-save (its process is gone)."""
    for stale in folder.glob(f"{PROGRESS_FILE}.*.tmp"):
        pid = stale.name[len(PROGRESS_FILE) + 1 : -len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                stale.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    from dataclasses import replace

    from tracer.learner.check import judge, reference_host
    from tracer.learner.loader import LearnerFailure, Unwritten
    from tracer.learner.report import format_judgement, learner_output
    from tracer.plugin_host import PluginHost
    from tracer.tracing.runner import TraceOptions, start_trace

    path = folder / exercise.filename
    if not path.exists():
        return Outcome(
            exercise,
            EXIT_USAGE,
            f"{path} is missing; 'attn exercises init {folder}' writes it again (and keeps your other files)",
        )
    options = dict(exercise.options)
    extra = {k: options.pop(k) for k in VARIANT_OPTIONS if k in options}
    trace_options = TraceOptions(extra=extra, **options)
    host = reference_host(exercise.variant, PluginHost)
    trace = start_trace(exercise.variant, trace_options, host).run_to_end()

    def rerun(changes: dict[str, Any]) -> Trace:
        return start_trace(exercise.variant, replace(trace_options, **changes), host).run_to_end()

    try:
        # The same rechecks as attn check (wider heads, dropout on and off): they judge alike.
        judgement = judge(path, trace, rerun)
    except LearnerFailure as failure:
        if isinstance(failure, Unwritten):
            return Outcome(
                exercise,
                EXIT_PROBLEMS,
                f"{path} is waiting for you: replace the TODOs.\n{failure.text}",
            )
        shown = learner_output(failure.output) + "\n" if failure.output else ""
        return Outcome(exercise, EXIT_USAGE, shown + failure.text)
    except UsageError as error:
        return Outcome(exercise, EXIT_USAGE, str(error))
    text = format_judgement(judgement)
    return Outcome(exercise, EXIT_OK if judgement.matches else EXIT_PROBLEMS, text)


def heading(exercise: Exercise) -> str:
    return (
        f"exercise {exercise.number}/{len(EXERCISES)}: {exercise.filename} - {exercise.title} "
        f"(against '{exercise.variant}')"
    )


def next_hint(progress: Progress, exercise: Exercise) -> str:
    """The exercise's next hint (the last one again once all are shown); counted in ``progress``."""
    shown = progress.hints.get(exercise.slug, 0)
    number = min(shown + 1, len(exercise.hints))
    progress.hints[exercise.slug] = number
    more = "" if number < len(exercise.hints) else " (that was the last one)"
    return f"{exercise.filename}, hint {number}/{len(exercise.hints)}{more}:\n  {exercise.hints[number - 1]}"


def hint(folder: Path, name: str | None = None, warn: Callable[[str], None] = _warn) -> str:
    """The next hint for an exercise (the current one by default), counted in the progress file.

    A progress file that cannot be written costs the count, never the hint.
    """
    progress = Progress.load(folder, warn)
    exercise = find_exercise(name) if name else progress.current()
    if exercise is None:
        return "All exercises are done: no hints needed."
    text = next_hint(progress, exercise)
    progress.try_save(folder, warn)
    return text


def progress_lines(progress: Progress) -> Iterator[str]:
    current = progress.current()
    for exercise in EXERCISES:
        if exercise.slug in progress.done:
            mark = "done"
        elif exercise.slug in progress.skipped:
            mark = "skip"
        elif exercise is current:
            mark = "next"
        else:
            mark = "todo"
        yield f"  {mark:<4}  {exercise.filename:<26} {exercise.title}"
    skipped = f", {len(progress.skipped)} skipped" if progress.skipped else ""
    yield f"{len(progress.done)}/{len(EXERCISES)} done{skipped}"


def status_lines(folder: Path) -> Iterator[str]:
    yield from progress_lines(Progress.load(folder))


def reset_exercise(folder: Path, exercise: Exercise, progress: Progress) -> Path:
    """Put the stub back, keeping the learner's version as ``NAME.py.bak`` (or ``.bak.2``...)."""
    path = folder / exercise.filename
    backup = folder / f"{exercise.filename}.bak"
    number = 2
    while backup.exists():
        backup = folder / f"{exercise.filename}.bak.{number}"
        number += 1
    if path.exists():
        backup.write_bytes(path.read_bytes())
    path.write_text(template(exercise), encoding="utf-8")
    progress.done = [s for s in progress.done if s != exercise.slug]
    progress.skipped = [s for s in progress.skipped if s != exercise.slug]
    progress.hints.pop(exercise.slug, None)
    return backup


KEYS_HELP = "h hint, r reset, Enter check now, s skip, l list, q quit"

KeyReader = Callable[[float], "str | None"]
"""Waits up to the given seconds for one key press; None when none came."""


def watch(
    folder: Path,
    emit: Callable[[str], None],
    *,
    once: bool = False,
    interval: float = 0.5,
    polls: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    keys: KeyReader | None = None,
    confirm: Callable[[str], bool] | None = None,
    warn: Callable[[str], None] = _warn,
) -> int:
    """Check the current exercise, then again after each save; move on when it passes.

    With ``once``, check once and return its status. Otherwise run until every
    exercise is done (or ``polls`` polls have passed, for tests; Ctrl-C stops it).
    With ``keys`` (a terminal), the learner can also ask for a hint, reset,
    re-check, skip, list or quit, as in rustlings; ``confirm`` asks before a reset.
    """
    from tracer.learner.isolation import shared_server

    progress = Progress.load(folder, warn)
    shared_server().spawn()  # one warm sandbox for the whole session: each save forks from it
    while True:
        exercise = progress.current()
        if exercise is None:
            emit(f"All {len(EXERCISES)} exercises are done. Well done!")
            return EXIT_OK
        outcome = check_exercise(folder, exercise)
        emit(f"{heading(exercise)}\n\n{outcome.text}")
        if outcome.status == EXIT_OK:
            progress.done.append(exercise.slug)
            progress.try_save(folder, warn)
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
        how = (
            KEYS_HELP
            if keys is not None
            else f"Ctrl-C to stop; 'attn exercises hint {folder}' for a hint"
        )
        emit(f"(watching {exercise.filename}: save it to check again; {how})")
        path = folder / exercise.filename
        before = _stamp(path)
        while _stamp(path) == before:
            if polls is not None:
                if polls <= 0:
                    return outcome.status
                polls -= 1
            if keys is None:
                sleep(interval)
                continue
            key = keys(interval)
            if key is None:
                continue
            if key in ("\n", "\r"):
                break
            if key == "q":
                return EXIT_OK  # the learner chose to stop: not a failure, whatever the check said
            if key == "h":
                emit(next_hint(progress, exercise))
                progress.try_save(folder, warn)
            elif key == "l":
                emit("\n".join(progress_lines(progress)))
            elif key == "s":
                progress.skipped.append(exercise.slug)
                progress.try_save(folder, warn)
                emit(f"skipped {exercise.filename}; 'l' lists it, and saving it checks it again")
                break
            elif key == "r":
                question = f"reset {exercise.filename} to its stub? Your version is kept as a .bak file [y/N]"
                if confirm is not None and confirm(question):
                    backup = reset_exercise(folder, exercise, progress)
                    progress.try_save(folder, warn, forget=frozenset({exercise.slug}))
                    emit(f"reset {exercise.filename}; your version is in {backup.name}")
                    break
                emit("not reset")


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)
