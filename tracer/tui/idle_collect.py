"""Full garbage collections while the learner reads, not while a key is being answered.

The stepping screens freeze what loading made (``gc.freeze``), but each step
makes new objects (views, drawn rows) and Python's collector runs a full
collection over them every few hundred thousand allocations, inside whichever
key press reaches the count: 5–20 ms added to that key. :class:`IdleCollector`
looks a few times a second; when the input has been quiet for a while and a full
collection is half-way due, it runs it then. Nothing is collected that Python
would not collect; only the moment changes.
"""

from __future__ import annotations

import gc
import time

CHECK_SECONDS = 0.25
"""How often the app looks (an interval timer)."""
QUIET_SECONDS = 0.3
"""Input this long ago, or longer, counts as reading."""


def full_collection_due(counts: tuple[int, int, int], thresholds: tuple[int, ...]) -> bool:
    """Whether Python's next full collection is at least half-way due.

    ``counts`` and ``thresholds`` as :func:`gc.get_count` and :func:`gc.get_threshold`
    give them: the third count is the number of generation-1 collections since the
    last full one, which Python compares with the third threshold.
    """
    if len(thresholds) < 3 or thresholds[2] <= 0 or thresholds[0] <= 0:
        return False  # collection switched off by the user's thresholds
    return counts[2] * 2 >= thresholds[2]


class IdleCollector:
    """Runs a due full collection once the input has been quiet for :data:`QUIET_SECONDS`."""

    def __init__(self) -> None:
        self.last_input = time.monotonic()
        self.collections = 0
        """Full collections run here (tests and the curious)."""

    def input_seen(self) -> None:
        self.last_input = time.monotonic()

    def check(self) -> bool:
        """Collect if it is quiet and a full collection is due; whether it collected."""
        if not gc.isenabled() or time.monotonic() - self.last_input < QUIET_SECONDS:
            return False
        if not full_collection_due(gc.get_count(), gc.get_threshold()):
            return False
        gc.collect()
        self.collections += 1
        return True
