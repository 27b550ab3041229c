"""The one-line footer draws and behaves as Textual's own ``Footer`` does.

The oracle is Textual's ``Footer`` on the same screen, with the same bindings, at the same
size and theme: the bottom row is compared cell by cell (character and style).
"""

from __future__ import annotations

from typing import ClassVar

import pytest
from rich.cells import cell_len
from rich.style import Style
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.events import MouseScrollDown
from textual.screen import Screen
from textual.widgets import Footer, Static

from tracer.tui.footer import FooterLine

from .conftest import lesson_running, seen_cells

MOVE = Binding.Group("Move")
SCROLL = Binding.Group("Scroll", compact=True)


class KeysScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "next", "Next", key_display="→"),
        Binding("left", "previous", "Back", key_display="←"),
        Binding("e", "loop_end", "Loop end", tooltip="End of loop"),
        Binding("z", "zoom", "Zoom"),
        Binding("h", "hidden", "Hidden", show=False),
    ]

    def __init__(self, footer: type[Footer] | type[FooterLine]) -> None:
        super().__init__()
        self.footer = footer
        self.done: list[str] = []
        self.loop_end_enabled = False

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield self.footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "loop_end":
            return True if self.loop_end_enabled else None  # None: shown, dimmed
        return True

    def action_next(self) -> None:
        self.done.append("next")

    def action_loop_end(self) -> None:
        self.done.append("loop_end")


class GroupedKeysScreen(KeysScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "down", "Down", group=MOVE),
        Binding("k", "up", "Up", group=MOVE),
        Binding("u", "page_up", "Page up", group=SCROLL),
        Binding("d", "page_down", "Page down", group=SCROLL),
    ]


class KeysApp(App[None]):
    def __init__(self, footer: type[Footer] | type[FooterLine], *, grouped: bool = False) -> None:
        super().__init__()
        self.keys_screen = (GroupedKeysScreen if grouped else KeysScreen)(footer)

    def on_mount(self) -> None:
        self.push_screen(self.keys_screen)


async def bottom_row(
    footer: type[Footer] | type[FooterLine],
    size: tuple[int, int],
    theme: str,
    *,
    grouped: bool = False,
    hover_x: int | None = None,
    theme_before: str | None = None,
) -> list[tuple[str, Style]]:
    app = KeysApp(footer, grouped=grouped)
    async with app.run_test(size=size) as pilot:
        if theme_before is not None:  # drawn in one theme, then shown in another
            app.theme = theme_before
            await pilot.pause()
            await pilot.hover(offset=(1, size[1] - 1))
            await pilot.pause()
            await pilot.hover(offset=(1, 0))
            await pilot.pause()
        app.theme = theme
        for widget in app.screen.query("Footer, FooterLine"):
            widget.compact = size[0] < 100  # type: ignore[attr-defined]  # as the lesson screen sets it
        for _ in range(20):  # Textual's footer makes its keys a few frames after the screen's
            await pilot.pause()
            if "Next" in app.screen._compositor.render_strips()[-1].text:
                break
        if hover_x is not None:
            await pilot.hover(offset=(hover_x, size[1] - 1))
            await pilot.pause()
        return seen_cells(app.screen._compositor.render_strips()[-1])


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
@pytest.mark.parametrize("size", [(120, 10), (80, 10)], ids=["wide", "compact"])
async def test_the_footer_line_draws_textuals_footer(size: tuple[int, int], theme: str) -> None:
    ours = await bottom_row(FooterLine, size, theme)
    assert ours == await bottom_row(Footer, size, theme)
    text = "".join(char for char, _ in ours)
    assert "Next" in text and "palette" in text and "Hidden" not in text


@pytest.mark.parametrize("size", [(120, 10), (80, 10)], ids=["wide", "compact"])
async def test_a_group_of_keys_shows_its_keys_and_then_its_description(
    size: tuple[int, int],
) -> None:
    ours = await bottom_row(FooterLine, size, "textual-dark", grouped=True)
    assert ours == await bottom_row(Footer, size, "textual-dark", grouped=True)
    text = "".join(char for char, _ in ours)
    assert "j k Move" in text and "ud Scroll" in text


async def test_a_new_theme_draws_the_footer_in_its_colours() -> None:
    ours = await bottom_row(FooterLine, (120, 10), "textual-light", theme_before="textual-dark")
    assert ours == await bottom_row(Footer, (120, 10), "textual-light")


@pytest.mark.parametrize("x", [1, 9, 18, 115], ids=["first", "second", "dimmed", "palette"])
async def test_a_hovered_key_is_drawn_as_textual_draws_it(x: int) -> None:
    ours = await bottom_row(FooterLine, (120, 10), "textual-dark", hover_x=x)
    assert ours == await bottom_row(Footer, (120, 10), "textual-dark", hover_x=x)
    assert ours != await bottom_row(FooterLine, (120, 10), "textual-dark")


async def test_a_click_presses_the_key_and_a_dimmed_one_only_rings() -> None:
    app = KeysApp(FooterLine)
    async with app.run_test(size=(120, 10)) as pilot:
        screen = app.keys_screen
        footer = screen.query_one(FooterLine)
        await pilot.click(FooterLine, offset=(1, 0))  # " → Next "
        await pilot.pause()
        assert screen.done == ["next"]
        await pilot.click(FooterLine, offset=(18, 0))  # " e Loop end ", disabled
        await pilot.pause()
        assert screen.done == ["next"]
        screen.loop_end_enabled = True
        screen.refresh_bindings()
        await pilot.pause()
        await pilot.click(FooterLine, offset=(18, 0))
        await pilot.pause()
        assert screen.done == ["next", "loop_end"]
        await pilot.hover(FooterLine, offset=(18, 0))
        await pilot.pause()
        assert footer.tooltip == "End of loop"
        await pilot.click(FooterLine, offset=(115, 0))  # "^p palette"
        await pilot.pause()
        assert app.screen.id == "--command-palette"


async def test_keys_that_do_not_fit_are_cut_at_the_palette_and_scroll_into_view() -> None:
    app = KeysApp(FooterLine)
    async with app.run_test(size=(36, 10)) as pilot:
        footer = app.keys_screen.query_one(FooterLine)
        footer.compact = True
        await pilot.pause()
        row = "".join(char for char, _ in seen_cells(app.screen._compositor.render_strips()[-1]))
        assert row.endswith("▏^p palette ") and "Zoom" not in row
        for _ in range(5):  # the mouse wheel, over the footer
            footer.post_message(MouseScrollDown(footer, 2, 0, 0, 0, 0, False, False, False))
        await pilot.pause()
        row = "".join(char for char, _ in seen_cells(app.screen._compositor.render_strips()[-1]))
        assert "z Zoom" in row and "Next" not in row and row.endswith("▏^p palette ")
        await pilot.click(FooterLine, offset=(row.index("z Zoom"), 0))  # where it is drawn now
        await pilot.pause()
        assert app.screen is app.keys_screen  # z has no action here: nothing else opened


async def test_a_key_name_from_a_keymap_never_sends_a_control_character() -> None:
    """A learner's keymap names the keys the footer shows: a control character in one is
    drawn as a picture, never sent to the terminal."""
    app = KeysApp(FooterLine)
    async with app.run_test(size=(120, 10)) as pilot:
        app.get_key_display = lambda binding: "\x1b[31m" + binding.key  # type: ignore[method-assign]
        footer = app.keys_screen.query_one(FooterLine)
        footer.sync()
        await pilot.pause()
        row = app.screen._compositor.render_strips()[-1].text
        assert "\x1b" not in row and "Next" in row


async def test_a_key_named_in_wide_characters_is_drawn_and_clicked_where_it_shows() -> None:
    """A keymap may name a key in characters two cells wide: the footer draws it as Textual's
    does, and a click lands on the key drawn at that place, not on one counted in characters."""
    wide = "全角"

    async def row_and_click(footer: type[Footer] | type[FooterLine]) -> tuple[object, list[str]]:
        app = KeysApp(footer)
        async with app.run_test(size=(120, 10)) as pilot:
            app.get_key_display = (  # type: ignore[method-assign]
                lambda binding: wide if binding.key == "right" else binding.key
            )
            app.keys_screen.refresh_bindings()
            for _ in range(20):
                await pilot.pause()
                if wide[0] in app.screen._compositor.render_strips()[-1].text:
                    break
            cells = seen_cells(app.screen._compositor.render_strips()[-1])
            text = "".join(char for char, _ in cells)
            if footer is FooterLine:
                app.keys_screen.loop_end_enabled = True
                app.keys_screen.refresh_bindings()
                await pilot.pause()
                at = cell_len(text[: text.index("Loop end")])  # cells, not characters
                await pilot.click(FooterLine, offset=(at + 1, 0))
                await pilot.pause()
            return cells, app.keys_screen.done

    ours, done = await row_and_click(FooterLine)
    theirs, _ = await row_and_click(Footer)
    assert ours == theirs
    assert done == ["loop_end"]


async def test_keys_shown_again_are_the_keys_drawn_anew() -> None:
    """Stepping through a lesson and back shows a few sets of keys (a quiz's, a table's) again
    and again: each time the footer shows, and clicks at, what a footer that kept nothing
    draws for those keys."""
    from tracer.tui.launch import make_lesson_app

    from .conftest import LESSON, PLUGINS, settle

    app = make_lesson_app(LESSON, resume=False, plugin_dirs=[str(PLUGINS)])
    async with lesson_running(app) as (pilot, screen):
        footer = screen.query_one(FooterLine)
        steps = len(screen.session.lesson.steps)
        shown = set()
        for number in [*range(steps), *range(steps - 2, -1, -1)]:
            screen.go_to_step(number)
            await settle(pilot)
            kept, places = seen_cells(footer.render_line(0)), list(footer._placed)
            drawings, footer._drawn = footer._drawn, {}
            assert seen_cells(footer.render_line(0)) == kept
            assert footer._placed == places
            footer._drawn = drawings
            shown.add(footer._keys)
        assert len(shown) >= 2  # the keys changed from step to step, and came back
