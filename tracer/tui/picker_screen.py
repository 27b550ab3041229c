"""``attn`` with no command: the lessons, shipped and the learner's own, with progress.

Listing lessons reads only their titles (no torch), so the picker appears at
once; torch and the plugins load in the background meanwhile, so opening a
lesson is quick too. If a lesson was left half-way, the picker offers to
resume it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Header, OptionList, Static
from textual.widgets.option_list import Option

from tracer.sanitize import visible
from tracer.session.progress import LessonProgress, ProgressStore, lesson_key
from tracer.session.progress import progress_text as progress_text
from tracer.tui.footer import FooterLine
from tracer.tui.modals import ConfirmScreen

if TYPE_CHECKING:
    from tracer.lessons.model import LessonRef
    from tracer.plugin_host import PluginHost


class PickerScreen(Screen[None]):
    """Choose a lesson; Enter opens it, r resumes the last one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "resume", "Resume", id="attn.resume"),
        Binding("enter", "open", "Open", id="attn.open", show=False),
    ]

    HELP = "Choose a lesson with ↑/↓ and Enter. r resumes where you stopped."

    def __init__(
        self,
        *,
        plugin_dirs: Sequence[str] = (),
        lesson_dirs: Sequence[str] = (),
        store: ProgressStore | None = None,
        offer_resume: bool = True,
        preload: bool = True,
    ) -> None:
        super().__init__(id="picker")
        self.plugin_dirs = tuple(plugin_dirs)
        self.lesson_dirs = tuple(lesson_dirs)
        self.store = store
        self.offer_resume = offer_resume
        self.preload = preload
        self.refs: list[LessonRef] = []
        self.host: PluginHost | None = None

    def compose(self) -> ComposeResult:
        yield Header(icon="∑")
        yield Static(
            Text("Choose a lesson. Each one steps through real attention code, number by number."),
            id="picker-intro",
        )
        yield OptionList(id="picker-list")
        yield FooterLine()

    def on_mount(self) -> None:
        self.title = "attention-tracer"
        self.sub_title = "lessons"
        if self.store is None:
            store_of = getattr(self.app, "progress_store", None)  # the app's one store
            self.store = store_of() if store_of is not None else ProgressStore()
        if self.store.warning:
            self.app.notify(self.store.warning, title="Progress", severity="warning", markup=False)
        # Reading the lessons' titles takes a moment: paint the first frame before it.
        self.call_after_refresh(self._fill)

    def _fill(self) -> None:
        self.refresh_list()
        if self.preload:
            self._preload()
        if self.offer_resume:
            self._offer_resume()

    def on_screen_resume(self) -> None:
        if self.refs:
            self.refresh_list()

    def refresh_list(self) -> None:
        # Here, not at the top: loaded on first use, after the picker's first frame.
        from tracer.errors import TracerError
        from tracer.lessons.loader import find_lessons, shipped_dir

        try:
            self.refs = find_lessons(self.lesson_dirs)
        except TracerError as error:
            self.refs = []
            self.app.notify(str(error), title="Lessons", severity="error", markup=False)
        shipped = shipped_dir()
        options = self.query_one(OptionList)
        highlighted = options.highlighted
        options.clear_options()
        assert self.store is not None
        for ref in self.refs:
            progress = self.store.get(lesson_key(ref.path, shipped))
            line = Text()
            line.append(f"{ref.number:>2}. ", style="dim")
            line.append(visible(ref.title or ref.name, multiline=False), style="bold")
            if ref.origin != "built-in":
                line.append(f"  ({ref.origin})", style="dim")
            line.append("\n    ")
            if ref.problem:
                line.append(f"cannot be opened: {ref.problem}", style="red")
            else:
                line.append(progress_text(progress), style="italic")
            options.add_option(Option(line, id=str(ref.number)))
        if not self.refs:
            options.add_option(Option(Text("No lessons found."), disabled=True))
        else:
            keep = highlighted is not None and highlighted < len(self.refs)
            options.highlighted = highlighted if keep else 0
        options.focus()

    @work(thread=True, exclusive=True, exit_on_error=False, group="preload")
    def _preload(self) -> None:
        """Import torch and the plugins now, so opening a lesson does not wait for them."""
        # Here, not at the top: loaded on first use, after the picker's first frame.
        from tracer.plugin_host import PluginHost

        host_of = getattr(self.app, "plugin_host", None)  # the app's one host
        self.host = host_of() if host_of is not None else PluginHost(self.plugin_dirs)

    def _ref(self, number: str | None) -> LessonRef | None:
        for ref in self.refs:
            if str(ref.number) == number:
                return ref
        return None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        ref = self._ref(event.option.id)
        if ref is not None:
            self.open(ref)

    def action_open(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            option = options.get_option_at_index(options.highlighted)
            ref = self._ref(option.id)
            if ref is not None:
                self.open(ref)

    def open(self, ref: LessonRef, *, resume: bool = True) -> None:
        # Here, not at the top: loaded on first use, after the picker's first frame.
        from tracer.tui.lesson_screen import LessonScreen

        if ref.problem:
            self.app.show_error(f"{ref.title or ref.name} cannot be opened", ref.problem)  # type: ignore[attr-defined]
            return
        self.app.push_screen(
            LessonScreen(
                ref.path,
                plugin_dirs=self.plugin_dirs,
                lesson_dirs=self.lesson_dirs,
                resume=resume,
                store=self.store,
                host=self.host,
            )
        )

    def _last(self) -> tuple[LessonRef, LessonProgress] | None:
        # Here, not at the top: loaded on first use, after the picker's first frame.
        from tracer.lessons.loader import shipped_dir

        if self.store is None:
            return None
        last = self.store.last()
        if last is None:
            return None
        key, progress = last
        shipped = shipped_dir()
        for ref in self.refs:
            if lesson_key(ref.path, shipped) == key and not ref.problem:
                return ref, progress
        return None

    def _offer_resume(self) -> None:
        found = self._last()
        if found is None:
            return
        ref, progress = found
        question = f"Resume “{ref.title or ref.name}” at {progress_text(progress)}?"

        def answered(yes: bool | None) -> None:
            if yes:
                self.open(ref)

        self.app.push_screen(ConfirmScreen(question), answered)

    def action_resume(self) -> None:
        found = self._last()
        if found is None:
            self.app.notify("Nothing to resume yet: pick a lesson.", timeout=2)
            return
        self.open(found[0])
