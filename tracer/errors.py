"""Errors a user can cause, each with the exit status the CLI documents.

Exit statuses (also in the README):
  0  success
  1  a check found problems (lesson problems, a mismatching implementation)
  2  usage or input error: bad option, bad inputs file, unknown name
  3  a plugin failed (to load, to register, or while running)
  130  interrupted: Ctrl+C, or a plugin raised KeyboardInterrupt
"""

from __future__ import annotations

from dataclasses import dataclass

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_USAGE = 2
EXIT_PLUGIN = 3
EXIT_INTERRUPTED = 130
"""Ctrl+C, or plugin code raising KeyboardInterrupt (128 + SIGINT, as shells report it)."""


@dataclass(frozen=True)
class Location:
    """A position in a user's file, 1-based as editors show it."""

    path: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.path]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


class TracerError(Exception):
    """Base for errors shown to the user as one line, without a traceback."""

    exit_status = EXIT_USAGE

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class UsageError(TracerError):
    """A bad option or an unknown name on the command line."""


class InputError(TracerError):
    """An inputs file (or an inline input set) that cannot be used."""


class PluginError(TracerError):
    """A plugin that failed to load, to register its variants, or while running."""

    exit_status = EXIT_PLUGIN


class VariantRunError(PluginError):
    """A variant raised, yielded something that is not a step, or returned no tensor.

    Also importable as ``tracer.tracing.VariantRunError``, where it used to live.
    """
