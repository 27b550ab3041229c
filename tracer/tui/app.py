"""The Textual application: one app, whose first screen is the picker, a lesson or an explorer.

Nothing heavy happens before the first frame. Screens that need torch start
a thread worker after their first refresh (see ``StepScreen``), and show a
loading indicator in the tensor pane meanwhile; this module imports neither
torch nor the plugins.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.theme import Theme

from tracer.session.progress import ProgressStore, load_settings, save_settings
from tracer.tui.commands import PaletteCommand, TracerCommands
from tracer.tui.hangup import HANG_UP, STOP_WAIT_S, Ending, TerminalDriver, driver_for
from tracer.tui.heap import COLLECTOR
from tracer.tui.modals import ErrorScreen, HelpScreen

if TYPE_CHECKING:
    from textual.driver import Driver

    from tracer.plugin_host import PluginHost

KEYMAP_ENV = "ATTN_KEYMAP"
ARROWS = {"right": "→", "left": "←", "up": "↑", "down": "↓"}
THEME_ENV = "ATTN_THEME"


def parse_keymap(text: str) -> dict[str, str]:
    """``attn.next=j,right;attn.prev=k`` → ``{"attn.next": "j,right", "attn.prev": "k"}``."""
    keymap: dict[str, str] = {}
    for part in text.split(";"):
        if "=" in part:
            binding_id, keys = part.split("=", 1)
            if binding_id.strip() and keys.strip():
                keymap[binding_id.strip()] = keys.strip()
    return keymap


KEYMAP_MODULES = ("step_screen", "lesson_screen", "explore_screen", "picker_screen", "modals")
"""The modules whose screens and widgets declare the app's bindings (imported to list them)."""


def known_binding_ids() -> set[str]:
    """Every binding id that ``ATTN_KEYMAP`` can remap: ours and Textual's own widgets'."""
    # Here, not at the top: loaded on first use, after the app's first frame.
    import importlib

    # Here, not at the top: loaded on first use, after the app's first frame.
    from textual.dom import DOMNode

    for name in KEYMAP_MODULES:
        importlib.import_module(f"tracer.tui.{name}")
    ids: set[str] = set()
    classes: list[type] = [DOMNode]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        for binding in cls.__dict__.get("BINDINGS", ()):
            if isinstance(binding, Binding) and binding.id:
                ids.add(binding.id)
    return ids


def keymap_warnings(text: str, known: set[str]) -> list[str]:
    """One line for each part of ``ATTN_KEYMAP`` that remaps nothing, with a did-you-mean."""
    # Here, not at the top: loaded on first use, after the app's first frame.
    from tracer.suggest import did_you_mean

    def clean_line(text: str) -> str:  # what the user typed, shown on one line
        text = "".join(c if c.isprintable() else "?" for c in text)
        return text if len(text) <= 40 else text[:39] + "…"

    warnings = []
    for part in text.split(";"):
        binding_id, sign, keys = (piece.strip() for piece in part.partition("="))
        if not part.strip():
            continue
        shown = clean_line(binding_id)
        if not sign or not binding_id or not keys:
            warnings.append(
                f"{KEYMAP_ENV}: '{clean_line(part.strip())}' is not ID=KEYS "
                "(e.g. attn.next=j,right); it is ignored"
            )
        elif binding_id not in known:
            hint = did_you_mean(binding_id, known)
            warnings.append(
                f"{KEYMAP_ENV}: no key binding has the id '{shown}'{hint}; it is ignored"
            )
    return warnings


class TracerApp(App[int]):
    """attention-tracer's terminal app."""

    CSS_PATH = "app.tcss"
    TITLE = "attention-tracer"
    COMMANDS: ClassVar = App.COMMANDS | {TracerCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="attn.quit"),
        # ctrl+c quits, as in any terminal program, even while a quiz answer is being typed
        # (its own action: check_action hides "quit" from the footer while q types a letter).
        Binding("ctrl+c", "quit_now", "Quit", id="attn.quit_ctrl_c", show=False, priority=True),
        Binding("question_mark", "help", "Help", key_display="?", id="attn.help"),
    ]

    def __init__(
        self,
        first_screen: Callable[[], Screen[Any]],
        *,
        theme: str | None = None,
        plugin_dirs: Sequence[str] = (),
        lesson_dirs: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self._first_screen = first_screen
        self.plugin_dirs = tuple(plugin_dirs)
        self.lesson_dirs = tuple(lesson_dirs)
        self.variant_names: list[str] = []
        """Variants the plugins registered, once a screen has loaded them (for the palette)."""
        self.exit_status = 0
        self._host: PluginHost | None = None
        self._host_lock = threading.Lock()
        self._store: ProgressStore | None = None
        self.ending = Ending(self._abandon_terminal, self._end_now, self.save_progress)
        """How a signal or the terminal going away ends the app (see :mod:`tracer.tui.hangup`)."""
        self._keymap_text = os.environ.get(KEYMAP_ENV, "")
        keymap = parse_keymap(self._keymap_text)
        if keymap:
            self.set_keymap(keymap)
        # The theme: an argument, then ATTN_THEME, then the last one chosen in the palette.
        chosen = theme or os.environ.get(THEME_ENV) or load_settings().get("theme")
        if isinstance(chosen, str) and chosen in self.available_themes:
            self.theme = chosen

    def plugin_host(self) -> PluginHost:
        """The app's one plugin host, loaded on first use (from a worker: it imports torch)."""
        with self._host_lock:
            if self._host is None:
                # Here, not at the top: loaded on first use, after the app's first frame.
                from tracer.plugin_host import PluginHost

                self._host = PluginHost(self.plugin_dirs)
            return self._host

    def progress_store(self) -> ProgressStore:
        """The app's one progress store (saves merge with what other instances wrote)."""
        if self._store is None:
            self._store = ProgressStore()
        return self._store

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            COLLECTOR.key_pressed(self)  # the garbage collector waits for this key's frame
        await super().on_event(event)

    def on_unmount(self) -> None:
        # A key's pause of the collector ends with the app, not with a timer that no longer
        # runs: the process (a notebook's, a test's) goes on with its collector on.
        COLLECTOR.resume()

    def on_mount(self) -> None:
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self._keymap_text.strip():
            # After the first frame: listing the ids imports every screen's module.
            self.call_after_refresh(self._check_keymap)
        # SIGTERM, SIGHUP and SIGINT (``kill -INT``: Ctrl+C is a key here) close the app the
        # way q does, restoring the terminal, with 128 + the signal's number: the handlers
        # :meth:`run` installed reach the loop from here on.
        self.ending.loop = asyncio.get_running_loop()

    def _check_keymap(self) -> None:
        """A misspelt binding id would remap nothing, silently: say so, once, on one line."""
        for warning in keymap_warnings(self._keymap_text, known_binding_ids()):
            self.notify(warning, title="Keys", severity="warning", markup=False, timeout=10)

    # Ending on a signal or a lost terminal (see tracer.tui.hangup) -----------------------

    def get_driver_class(self) -> type[Driver]:
        return driver_for(super().get_driver_class())

    def run(self, *args: Any, **kwargs: Any) -> int | None:
        """Run the app, ending it on SIGHUP, SIGTERM or SIGINT (or a lost terminal) within
        a bounded time, progress saved, whatever it was doing then."""
        self.ending.install()
        try:
            return super().run(*args, **kwargs)
        except OSError:
            if self.ending.status is None:
                raise
            return None  # the terminal went away while Textual wrote its last words

    def terminal_lost(self) -> None:
        """Writing to or reading from the terminal failed: it is gone, as on a hang-up."""
        self.ending.begin(HANG_UP)

    def _abandon_terminal(self, status: int) -> None:
        """A hang-up drops the output at once; another signal gives it a second to drain
        (the terminal is still there, to be restored), then drops it too."""
        driver = self._driver
        if isinstance(driver, TerminalDriver):
            driver.abandon(0.0 if status == HANG_UP else STOP_WAIT_S)

    def _end_now(self) -> None:
        """On the event loop: save, then exit as ``q`` does, with the ending's status."""
        self.save_progress()
        status = self.ending.status or 1
        self.exit_status = status
        self.exit(return_code=status)

    def save_progress(self) -> None:
        """Save the position of every lesson open (the app's thread, or the watchdog's)."""
        for screen in list(self.screen_stack):
            session = getattr(screen, "session", None)
            save = getattr(session, "save", None)
            if save is not None:
                with contextlib.suppress(Exception):  # no terminal to warn on
                    save()
        self.ending.saved = True

    def _remember_theme(self, theme: Theme) -> None:
        settings = load_settings()
        if settings.get("theme") != theme.name:
            settings["theme"] = theme.name
            warning = save_settings(settings)
            if warning:
                self.notify(warning, severity="warning", markup=False)

    def get_default_screen(self) -> Screen[Any]:
        return self._first_screen()

    async def action_quit_now(self) -> None:
        await self.action_quit()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A box that takes every key (a quiz's answer) has the focus: q and ? type themselves,
        # so the footer does not offer them.
        typing = getattr(self.focused, "takes_every_key", False)
        return not (typing and action in ("quit", "help"))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        keys: list[tuple[str, str]] = []
        for key, active in self.screen.active_bindings.items():
            binding = active.binding
            # Ours only: the focused widget's scrolling keys are summed up in one line below.
            if not binding.description or not (binding.id or "").startswith("attn."):
                continue
            # Each key on its own (a binding's key_display names only its first key).
            shown = ARROWS.get(key) or self.get_key_display(replace(binding, key_display=None))
            keys.append((shown or key, binding.tooltip or binding.description))
        keys.append(("ctrl+p", "Command palette: jump to a stage, step, lesson or variant; themes"))
        keys.append(
            ("tab", "Move between panes; ↑/↓, PgUp/PgDn and shift+←/→ scroll the focused one")
        )
        intro = getattr(self.screen, "HELP", "") or ""
        self.push_screen(HelpScreen(_merge(keys), intro))

    def palette_commands(self) -> list[PaletteCommand]:
        """Every lesson and every known variant, from any screen."""
        # Here, not at the top: loaded on first use, after the app's first frame.
        from tracer.errors import TracerError
        from tracer.lessons.loader import find_lessons

        commands = []
        try:
            refs = find_lessons(self.lesson_dirs)
        except TracerError:
            refs = []
        for ref in refs:
            commands.append(
                PaletteCommand(
                    f"Open lesson {ref.number}: {ref.title or ref.name}",
                    ref.problem or str(ref.path),
                    lambda path=ref.path: self.open_lesson(path),  # type: ignore[misc]
                )
            )
        for name in self.variant_names:
            commands.append(
                PaletteCommand(
                    f"Explore variant: {name}",
                    "every stage and loop of the variant, on the default inputs",
                    lambda name=name: self.open_explorer(name),  # type: ignore[misc]
                )
            )
        return commands

    def open_lesson(self, path: object) -> None:
        # Here, not at the top: loaded on first use, after the app's first frame.
        from pathlib import Path

        # Here, not at the top: loaded on first use, after the app's first frame.
        from tracer.tui.lesson_screen import LessonScreen

        assert isinstance(path, Path)
        self._open(LessonScreen(path, plugin_dirs=self.plugin_dirs, lesson_dirs=self.lesson_dirs))

    def _open(self, screen: Screen[Any]) -> None:
        """A lesson or explorer replaces the one on screen (one at a time, never stacked)."""
        # Here, not at the top: loaded on first use, after the app's first frame.
        from tracer.tui.step_screen import StepScreen

        while len(self.screen_stack) > 1 and not isinstance(self.screen, StepScreen):
            self.pop_screen()  # modals (a lesson's end, an error) close first
        current = self.screen
        if isinstance(current, StepScreen):
            current.stop_autoplay()
        if isinstance(current, StepScreen) and len(self.screen_stack) > 1:
            self.switch_screen(screen)  # replaces the lesson opened earlier from here
        else:
            self.push_screen(screen)  # the first screen stays underneath (it cannot be replaced)

    def open_explorer(self, variant: str) -> None:
        # Here, not at the top: loaded on first use, after the app's first frame.
        from tracer.session.explore import TraceOptions, explore_loader
        from tracer.tui.explore_screen import ExploreScreen

        dirs = self.plugin_dirs
        self._open(
            ExploreScreen(
                lambda host: explore_loader(variant, TraceOptions(), dirs, host),
                f"explore {variant}",
            )
        )

    def show_error(self, title: str, message: str) -> None:
        """An error in a modal: the app keeps running."""
        self.push_screen(ErrorScreen(title, message))


def _merge(keys: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """One line per description, with every key that triggers it (``→ / n / space``)."""
    merged: dict[str, list[str]] = {}
    for key, description in keys:
        merged.setdefault(description, [])
        if key not in merged[description]:
            merged[description].append(key)
    return [(" / ".join(k), d) for d, k in merged.items()]
