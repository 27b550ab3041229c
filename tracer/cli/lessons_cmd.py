"""``attn lessons`` and ``attn lesson ...``: list, check, print, start and open lessons.

    attn lessons [--lessons-dir DIR]          numbered list: shipped lessons, then DIR's
    attn lesson check PATH|DIR... [--watch]   every problem as path:line:column: message
    attn lesson check --claims PATH           each sentence stating a relation or a count:
                                              what it was checked against, or why it is prose
    attn lesson run NAME|PATH --plain         the whole lesson as text (pipes, screen readers)
    attn lesson run NAME|PATH --plain -i      step by step as text, answered line by line
                                              (Enter: next, h: hint, b: back, q: quit)
    attn lessons --json                       every lesson with the learner's progress
    attn lesson new PATH                      a commented starter lesson (never overwrites)
    attn lesson export NAME|PATH --to md|ipynb [-o FILE] [--force]
                                              the lesson as Markdown or a notebook
    attn lesson schema [--write DIR]          the JSON Schema for lesson files (for the installed
                                              variants), or written to DIR/lesson.schema.json
    attn lesson NAME|PATH                     open the lesson in the TUI

Exit status: 0 ok, 1 a lesson has problems, 2 usage error (unknown lesson,
missing file, refusing to overwrite), 3 a plugin failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.cli.plain_cmd import run_interactive, run_plain
from tracer.cli.trace_arguments import add_plugin_options
from tracer.errors import EXIT_OK, EXIT_PROBLEMS, TracerError, UsageError
from tracer.files import write_atomic, write_new
from tracer.sanitize import message, visible

if TYPE_CHECKING:
    from tracer.lessons.model import Lesson
    from tracer.plugin_host import PluginHost

ACTIONS = ("check", "run", "new", "schema", "export")
USAGE = (
    "attn lesson check PATH|DIR... [--watch] | run NAME|PATH [--plain [-i]] | new PATH | schema "
    "| export NAME|PATH --to md|ipynb | NAME|PATH"
)
WATCH_INTERVAL = 0.5
"""Seconds between looks at the files 'check --watch' follows."""


def add_lesson_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lessons-dir", action="append", default=[], metavar="DIR",
        help="also use the lessons (.yaml) in DIR (repeatable; also ATTN_LESSONS_DIR)",
    )  # fmt: skip


def add_parser(commands: Any) -> None:
    listing = commands.add_parser(
        "lessons",
        help="list the lessons, numbered and titled, with your progress",
        description="List the shipped lessons, then those in --lessons-dir and ATTN_LESSONS_DIR.",
    )
    add_lesson_dir_option(listing)
    listing.add_argument(
        "--json", action="store_true",
        help=(
            "a JSON list: each lesson's number, name, title, progress and what "
            "'attn lesson check' says of it (each lesson is checked)"
        ),
    )  # fmt: skip
    # Accepted for symmetry with 'attn lesson'; listing itself needs no plugins.
    add_plugin_options(listing)
    listing.set_defaults(handler=run_list)

    lesson = commands.add_parser(
        "lesson",
        help="open, check, print or start a lesson",
        usage=f"{USAGE} [options]",
        add_help=False,  # -h after a command prints that command's help (_CommandHelp)
        description=(
            "Work with lesson scripts. 'attn lesson NAME' opens a lesson in the TUI; "
            "NAME is a lesson's number, its name from 'attn lessons', or a .yaml path."
        ),
        epilog=(
            "check PATH|DIR...: report every problem as path:line:column: message "
            "(a folder: each lesson in it; --watch: again whenever a file is saved). "
            "run NAME|PATH --plain: print the whole lesson as text, quiz answers included; "
            "with -i (--interactive): step by step, reading a line after each step "
            "(Enter: next, a quiz's answer, h: hint, b: back, q: quit), progress saved. "
            "new PATH: write a commented starter lesson (never overwrites). "
            "export NAME|PATH --to md|ipynb [-o FILE] [--force]: the lesson, computed, as "
            "Markdown or a Jupyter notebook (never overwrites without --force). "
            "schema [--write DIR]: print the JSON Schema for lesson files (editor completion "
            "for the installed variants), or write it to DIR/lesson.schema.json. "
            "Exit status: 0 ok, 1 a lesson has problems, 2 usage error, 3 plugin failure."
        ),
    )
    lesson.add_argument(
        "-h", "--help", action=_CommandHelp, nargs=0,
        help="show this help and exit; after a command ('attn lesson check -h'), its own",
    )  # fmt: skip
    lesson.add_argument(
        "action", metavar="COMMAND|LESSON",
        help="check, run, new, schema or export; or a lesson (number, name or .yaml path) to open",
    )  # fmt: skip
    lesson.add_argument("targets", nargs="*", default=[], metavar="PATH", help=argparse.SUPPRESS)
    lesson.add_argument(
        "--plain", action="store_true",
        help="with run: print text instead of opening the TUI (the default in a pipe)",
    )  # fmt: skip
    lesson.add_argument(
        "-i", "--interactive", action="store_true",
        help=(
            "with run --plain: one step at a time, reading a line after each "
            "(Enter: next, an answer at a quiz, h: hint, b: back, q: quit)"
        ),
    )  # fmt: skip
    lesson.add_argument(
        "--to", choices=("md", "ipynb"),
        help="with export: Markdown (md) or a Jupyter notebook (ipynb)",
    )  # fmt: skip
    lesson.add_argument(
        "-o", "--output", metavar="FILE",
        help="with export: the file to write (default: the lesson's name, in this folder)",
    )  # fmt: skip
    lesson.add_argument(
        "--force", action="store_true", help="with export: replace FILE if it exists",
    )  # fmt: skip
    lesson.add_argument(
        "--write", metavar="DIR",
        help="with schema: write DIR/lesson.schema.json, which new lessons' first line names",
    )  # fmt: skip
    lesson.add_argument(
        "--claims", action="store_true",
        help="with check: list each sentence that states a relation or a count, as "
        "'checked: <against what>' or 'prose (not checked: <why>)'",
    )  # fmt: skip
    lesson.add_argument(
        "--watch", action="store_true",
        help="with check: check again whenever a lesson is saved (Ctrl+C stops)",
    )  # fmt: skip
    add_lesson_dir_option(lesson)
    add_plugin_options(lesson)
    lesson.set_defaults(handler=run_lesson)


COMMAND_HELP = {
    "check": (
        "attn lesson check PATH|DIR... [--watch] [--claims] [--plugins-dir DIR]",
        "Report every problem of each lesson as path:line:column: message (a folder: each "
        "lesson in it; inputs files beside the lessons are passed over). --watch: check "
        "again whenever a file is saved (Ctrl+C stops). --claims: then list each sentence "
        "that states a relation or a count, checked (against what) or prose (why). Exit status: 0 ok, 1 a lesson has "
        "problems, 2 usage error, 3 plugin failure.",
    ),
    "run": (
        "attn lesson run NAME|PATH [--plain [-i]] [--plugins-dir DIR]",
        "Start a lesson; --plain (the default in a pipe) prints the whole lesson as text, "
        "quiz answers included; with -i (--interactive) it goes step by step, reading a line "
        "after each step: Enter goes on, at a quiz the line is the answer, h a hint, b back, "
        "q quits. No answer is printed before you answer; progress is saved as the app saves it.",
    ),
    "new": ("attn lesson new PATH", "Write a commented starter lesson (never overwrites)."),
    "schema": (
        "attn lesson schema [--write DIR]",
        "Print the JSON Schema for lesson files (editor completion for the installed "
        "variants), or write it to DIR/lesson.schema.json.",
    ),
    "export": (
        "attn lesson export NAME|PATH --to md|ipynb [-o FILE] [--force]",
        "The lesson, computed, as Markdown or a Jupyter notebook (never overwrites without "
        "--force).",
    ),
}
"""What ``attn lesson COMMAND -h`` prints: the command's usage and what it does."""


class _CommandHelp(argparse.Action):
    """``-h``: the help of the command typed before it, else of ``attn lesson``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        found = COMMAND_HELP.get(getattr(namespace, "action", None) or "")
        if found is None:
            parser.print_help()
        else:
            usage, text = found
            print(f"usage: {usage}\n\n" + textwrap.fill(text, 79))
        parser.exit()


def run_list(args: argparse.Namespace) -> int:
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.lessons.loader import find_lessons

    refs = find_lessons(args.lessons_dir)
    if getattr(args, "json", False):
        return list_json(refs, args)
    from tracer.lessons.loader import shipped_dir
    from tracer.session.progress import ProgressStore, lesson_key, progress_text

    store = ProgressStore()
    if store.warning:
        print(message(f"attn: warning: {store.warning}"), file=sys.stderr)
    shipped = shipped_dir()
    origin = None
    width = max((len(ref.name) for ref in refs), default=0)
    for ref in refs:
        if ref.origin != origin:
            origin = ref.origin
            where = "Shipped lessons" if origin == "built-in" else "Lessons in " + origin
            print(visible(f"{where}:", multiline=False))
        if ref.problem is None:  # with the learner's progress, as the picker says it
            progress = progress_text(store.get(lesson_key(ref.path, shipped)))
            title = f"{ref.title}  ({progress})"
        else:
            title = f"(cannot be loaded: {ref.problem})"
        line = f"{ref.number:>3}. {ref.name.ljust(width)}  {title}"
        print(message(visible(line, multiline=False)))  # titles and names come from files
    if not refs:
        print("No lessons found.")
    return EXIT_OK


def list_json(refs: list[Any], args: argparse.Namespace) -> int:
    """``attn lessons --json``: every lesson with the learner's progress in it, from the
    progress file the app and ``--plain --interactive`` write, and what ``attn lesson check``
    says of it (``problem``, ``problems``, ``warnings``, ``ok``): each lesson is checked
    exactly as that command checks it."""
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.lessons.loader import shipped_dir
    from tracer.session.progress import ProgressStore, lesson_key, progress_summary

    store = ProgressStore()
    if store.warning:
        print(message(f"attn: warning: {store.warning}"), file=sys.stderr)
    shipped = shipped_dir()
    listed = []
    host = None
    for ref in refs:
        checked = checked_lines(str(ref.path), args, host)
        host = checked.host
        problems = checked.problems
        if ref.problem is not None and not problems:  # never "ok" where the listing is not
            problems = [ref.problem]
        listed.append(
            {
                "number": ref.number,
                "name": ref.name,
                "title": ref.title,
                "origin": ref.origin,
                "path": str(ref.path),
                "problem": problems[0] if problems else None,
                "problems": problems,
                "warnings": checked.warnings,
                "ok": not problems,
                "progress": progress_summary(store.get(lesson_key(ref.path, shipped))),
            }
        )
    # JSON escapes every control character, so file text reaches the terminal inert.
    print(json.dumps(listed, indent=2))
    return EXIT_OK


def run_lesson(args: argparse.Namespace) -> int:
    action, targets = args.action, list(args.targets)
    if args.interactive and action in ("check", "new", "schema", "export"):
        raise UsageError("-i (--interactive) goes with 'attn lesson run NAME --plain'")
    if action == "check":
        if not targets:
            raise UsageError("'attn lesson check' needs at least one lesson file or folder")
        files = lesson_files(targets)
        if args.watch and args.claims:
            raise UsageError("--claims lists a lesson's claims once; it does not go with --watch")
        if args.watch:
            return watch(files, args)
        return check(files, args)
    if args.watch:
        raise UsageError("--watch goes with 'attn lesson check'")
    if args.claims:
        raise UsageError("--claims goes with 'attn lesson check'")
    if action == "run":
        if len(targets) != 1:
            raise UsageError("'attn lesson run' takes one lesson: a name, a number or a .yaml path")
        args.lesson = targets[0]
        if args.interactive:
            return run_interactive(targets[0], args)
        if args.plain or not sys.stdout.isatty():
            return run_plain(targets[0], args)
        return open_tui(args)
    if action == "export":
        if len(targets) != 1:
            raise UsageError(
                "'attn lesson export' takes one lesson: a name, a number or a .yaml path"
            )
        return export(targets[0], args)
    if args.to is not None or args.output is not None or args.force:
        raise UsageError("--to, -o and --force go with 'attn lesson export'")
    if action == "new":
        if len(targets) != 1:
            raise UsageError("'attn lesson new' takes one path, for example my_lesson.yaml")
        return new(Path(targets[0]))
    if action == "schema":
        if targets:
            raise UsageError("'attn lesson schema' takes no arguments (--write DIR writes a file)")
        return schema(args)
    if args.write is not None:
        raise UsageError("--write goes with 'attn lesson schema'")
    if targets:
        raise UsageError(
            f"unknown lesson command '{action}'; expected check, run, new, schema or export, "
            "or a single lesson to open"
        )
    if args.interactive:
        return run_interactive(action, args)
    if args.plain:
        return run_plain(action, args)
    args.lesson = action
    return open_tui(args)


def open_tui(args: argparse.Namespace) -> int:
    try:
        import tracer.tui.launch  # noqa: F401  (the viewer needs Textual)
    except ImportError:
        raise UsageError(
            "the lesson viewer is not available in this installation; "
            f"use 'attn lesson run {args.lesson} --plain'"
        ) from None
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.cli import app_cmd

    status: int = app_cmd.open_lesson(args)
    return status


def lesson_files(targets: list[str]) -> list[str]:
    """Each target, with a folder replaced by the lessons in it (sorted)."""
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.lessons.loader import lesson_files_in

    files: list[str] = []
    for target in targets:
        folder = Path(target)
        if folder.is_dir():
            found = lesson_files_in(folder)  # inputs files beside the lessons are not lessons
            if not found:
                raise UsageError(f"no lessons (.yaml) in {folder}")
            files += [str(p) for p in found]
        else:
            files.append(target)
    return files


def watch(targets: list[str], args: argparse.Namespace) -> int:
    """Check, then check each file again whenever it changes, until interrupted."""
    # Here, not at the top: each command loads what it needs (start-up stays light).
    import time

    def stamps() -> dict[str, float | None]:
        found: dict[str, float | None] = {}
        for target in targets:
            try:
                found[target] = Path(target).stat().st_mtime
            except OSError:
                found[target] = None
        return found

    # Each file's latest status: the exit status is that of the lessons as they are now.
    statuses = {target: check([target], args) for target in targets}
    seen = stamps()
    print(
        f"watching {len(targets)} lesson{'s' if len(targets) != 1 else ''}; Ctrl+C stops",
        flush=True,
    )
    try:
        while True:
            time.sleep(WATCH_INTERVAL)
            now = stamps()
            changed = [t for t in targets if now[t] != seen[t]]
            seen = now
            if changed:
                print(f"--- {time.strftime('%H:%M:%S')}: checking again", flush=True)
                statuses.update({target: check([target], args) for target in changed})
    except KeyboardInterrupt:
        pass
    return max(statuses.values(), default=EXIT_OK)


@dataclass
class Checked:
    """What ``attn lesson check`` says of one lesson, line by line."""

    problems: list[str]
    """Every problem (or the error that stopped the check), as printed: any refuses it."""
    warnings: list[str]
    lines: list[str]
    """Problems and warnings together, in file order: what the check prints."""
    lesson: Lesson | None
    path: Path | None
    status: int
    """The check's exit status for this lesson alone."""
    host: PluginHost | None
    """The plugins it loaded (loaded once, reused for the next lesson)."""
    error: bool = False
    """The problem is an error of the command (no such file, a plugin failed), not the file's."""


def checked_lines(target: str, args: argparse.Namespace, host: PluginHost | None) -> Checked:
    """Check lesson ``target`` as ``attn lesson check`` does; what it would print."""
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.cli.trace_arguments import load_host
    from tracer.lessons.check import examine
    from tracer.lessons.loader import LessonError, preflight

    path = lesson = None
    try:
        # YAML-level problems first: a hostile file is refused before torch loads.
        path = preflight(target, args.lessons_dir)
        host = host or load_host(args)
        found = examine(path, host)
        problems, warnings, lesson = found.problems, found.warnings, found.lesson
    except LessonError as error:
        problems, warnings = error.problems, []
    except TracerError as error:
        prefix = "" if error.location is not None else "attn: "
        said = message(f"{prefix}{error}")
        return Checked([said], [], [said], None, path, error.exit_status, host, error=True)
    status = EXIT_PROBLEMS if problems or lesson is None else EXIT_OK
    ordered = sorted([*problems, *warnings], key=lambda p: (p.line, p.column))
    return Checked(
        [message(str(problem)) for problem in problems],
        [message(str(warning)) for warning in warnings],
        [message(str(problem)) for problem in ordered],
        lesson,
        path,
        status,
        host,
    )


def check(targets: list[str], args: argparse.Namespace) -> int:
    host = None
    status = EXIT_OK
    for target in targets:
        checked = checked_lines(target, args, host)
        host = checked.host
        status = max(status, checked.status)
        if checked.error:
            print(checked.problems[0], file=sys.stderr)
            continue
        # Warnings (Markdown markup in prose) are said, in file order with the problems,
        # but do not fail the check: the lesson loads and runs as it is. Every front end
        # refuses exactly these problems (lessons.check.open_checked, the one gate).
        for line in checked.lines:
            print(line, flush=True)
        if checked.lesson is not None and not checked.problems:
            count = len(checked.lesson.steps)
            print(f"{checked.path}: ok ({count} step{'' if count == 1 else 's'})")
            if getattr(args, "claims", False) and host is not None:
                for line in claim_lines(checked.lesson, host):
                    print(message(line), flush=True)
    return status


def claim_lines(lesson: Lesson, host: PluginHost) -> list[str]:
    """``path:line:column: "sentence" -- checked: ...`` (or ``prose (not checked: ...)``) for
    each sentence of ``lesson`` that states a relation or a count."""
    from tracer.lessons.lesson_runner import LessonRunner
    from tracer.lessons.relation_claims import claims

    runner = LessonRunner(lesson, host)
    try:
        found = claims(lesson, runner)
    finally:
        runner.close()
    path = str(lesson.path) if lesson.path is not None else "<lesson>"
    lines = [f'{path}:{c.line}:{c.column}: "{c.sentence}" -- {c.verdict}' for c in found]
    checked = sum(1 for c in found if c.checked is not None)
    false = sum(1 for c in found if c.false is not None)
    return [
        *lines,
        f"{path}: {len(found)} sentence{' states' if len(found) == 1 else 's state'} a relation or a "
        f"count: {checked} checked ({false} false), {len(found) - checked} prose",
    ]


def export(target: str, args: argparse.Namespace) -> int:
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.cli.trace_arguments import load_host
    from tracer.lessons.loader import preflight
    from tracer.session.lesson import open_lesson
    from tracer.text.export import export_text

    if args.to is None:
        raise UsageError("'attn lesson export' needs --to md or --to ipynb")
    path = preflight(target, args.lessons_dir)
    # Absolute now, before any plugin runs: a plugin's chdir must not move the export.
    named = Path(args.output) if args.output else Path(f"{path.stem}.{args.to}")
    output = named.absolute()
    if (output.exists() or output.is_symlink()) and not args.force:
        raise UsageError(f"{named} already exists; not overwriting it (use --force to replace it)")
    if output.is_dir():
        raise UsageError(f"{named} is a folder; give a file name with -o")
    if not output.parent.is_dir():
        raise UsageError(f"folder not found: {named.parent}")
    # The one gate: a lesson 'attn lesson check' refuses is not exported (its problems, exit 1).
    session = open_lesson(path, lesson_dirs=args.lessons_dir, host=load_host(args), warm=False)
    try:
        text = export_text(
            session.lesson, session.host, args.to, runner=session.runner, folder=output.parent
        )
    finally:
        session.close()
    try:
        if args.force:
            # Atomic: a full disk leaves the user's old file whole, never a truncated one.
            write_atomic(output, text)
        else:
            # Exclusive: a file that appeared while the lesson ran (another export) is kept.
            write_new(output, text)
    except FileExistsError:
        raise UsageError(
            f"{named} already exists; not overwriting it (use --force to replace it)"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot write {named}: {exc.strerror}") from None
    print(f"wrote {named}")
    return EXIT_OK


def schema(args: argparse.Namespace) -> int:
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.cli.trace_arguments import load_host
    from tracer.lessons.schema import catalog, schema_text

    text = schema_text(catalog(load_host(args)))
    if args.write is None:
        sys.stdout.write(text)
        return EXIT_OK
    folder = Path(args.write)
    if not folder.is_dir():
        raise UsageError(f"folder not found: {folder}")
    path = write_schema(folder, text)
    print(f"wrote {path}; lessons in {folder} that start with the line")
    print("  # yaml-language-server: $schema=lesson.schema.json")
    print("get completion for the installed variants")
    return EXIT_OK


def write_schema(folder: Path, text: str) -> Path:
    """``folder/lesson.schema.json``; replaces only a schema this tool wrote (never other files)."""
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.lessons.schema import SCHEMA_ID, SCHEMA_NAME

    path = folder / SCHEMA_NAME
    if path.exists() or path.is_symlink():
        try:
            ours = json.loads(path.read_text(encoding="utf-8")).get("$id") == SCHEMA_ID
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours or path.is_symlink():
            raise UsageError(
                f"{path} exists and is not a lesson schema written by attn; not overwriting it"
            )
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    return path


def new(path: Path) -> int:
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.lessons.starter import starter_lesson

    if path.suffix not in (".yaml", ".yml"):
        raise UsageError(f"{path}: lesson files end in .yaml; try {path.with_suffix('.yaml')}")
    if path.exists() or path.is_symlink():
        raise UsageError(f"{path} already exists; not overwriting it (choose another name)")
    if not path.parent.is_dir():
        raise UsageError(f"folder not found: {path.parent}")
    try:
        # "x" mode: fail rather than overwrite a file created since the check above.
        with path.open("x", encoding="utf-8") as handle:
            handle.write(starter_lesson())
    except FileExistsError:
        raise UsageError(
            f"{path} already exists; not overwriting it (choose another name)"
        ) from None
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    print(f"wrote {path}; check it with: attn lesson check {path}")
    # Here, not at the top: each command loads what it needs (start-up stays light).
    from tracer.lessons.schema import SCHEMA_NAME

    if not (path.parent / SCHEMA_NAME).exists():
        print(
            f"for completion in your editor, run: attn lesson schema --write {path.parent} "
            f"(its first line names {SCHEMA_NAME})"
        )
    return EXIT_OK


__all__ = ["ACTIONS", "add_parser", "run_lesson", "run_list"]
