"""A screen's progress saver: saves on the writer thread, warnings said on the UI thread."""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message
from textual.message_pump import MessagePump

from tracer.session.saver import BackgroundSaver

__all__ = ["SaveWarning", "screen_saver"]


class SaveWarning(Message):
    """The saver's thread could not save the progress: said on the UI thread."""

    def __init__(self, warning: str) -> None:
        super().__init__()
        self.warning = warning


def screen_saver(screen: MessagePump, save: Callable[[], str | None]) -> BackgroundSaver:
    """A :class:`BackgroundSaver` whose warnings reach ``screen`` as :class:`SaveWarning`
    (posting a message is safe from any thread; the screen says it on its own)."""
    return BackgroundSaver(save, lambda warning: screen.post_message(SaveWarning(warning)))
