"""Command palette (ctrl+p): jump to any stage, step, lesson or variant.

The provider asks the screen underneath and the app for their commands, so
each screen offers what makes sense there (stages while exploring, steps in
a lesson) and the app adds lessons and variants everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content


@dataclass(frozen=True)
class PaletteCommand:
    """One entry: what the palette shows, a line of help, and what choosing it does."""

    title: str
    help: str
    run: Callable[[], object]


def lesson_commands(
    contents: Iterable[tuple[str, str]],
    path: Path,
    go_to_step: Callable[[int], object],
    reload: Callable[[], object],
) -> list[PaletteCommand]:
    """A lesson's palette: go to each step (its label and tip), and reload the lesson file."""
    commands = [
        PaletteCommand(
            f"Go to step {label}",
            tip,
            lambda number=number: go_to_step(number),  # type: ignore[misc]
        )
        for number, (label, tip) in enumerate(contents)
    ]
    commands.append(PaletteCommand("Reload the lesson file", str(path), reload))
    return commands


def _commands(*sources: object) -> list[PaletteCommand]:
    found: list[PaletteCommand] = []
    for source in sources:
        method = getattr(source, "palette_commands", None)
        if callable(method):
            found.extend(method())
    return found


class TracerCommands(Provider):
    """Stages, steps, lessons and variants offered by the current screen and the app."""

    async def startup(self) -> None:
        # Gathered once per opening of the palette, not at every key typed into it: the
        # lessons' titles come from their files.
        self._found = _commands(self.screen, self.app)

    async def discover(self) -> Hits:
        for command in self._found:
            yield DiscoveryHit(Content(command.title), command.run, command.title, command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._found:
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.title),
                    command.run,
                    command.title,
                    command.help,
                )
