"""The explorer's session without a front end: position, moves, ends, typed results, pending work.

The app's explorer and ``attn explore --plain`` draw this session; what they show is
decided here, so it is tested here without Textual. The ``tiny`` variant (tests/tui/plugins)
yields its inputs, a loop of one dot product per (query, key) pair of the six course
tokens, then the scores and the weights; reference numbers are computed with torch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tracer.errors import PluginError
from tracer.inputs import load_inputs
from tracer.session.explore import ExploreSession, TraceOptions, explore_loader
from tracer.session.moves import AtEnd, Cancelled, Failed, Moved, Refused, Waiting, settle
from tracer.variant import Stage, SubStep

PLUGINS = Path(__file__).resolve().parents[1] / "tui" / "plugins"
MANY = Path(__file__).resolve().parents[1] / "tui" / "inputs" / "tokens200.yaml"
TOKENS = load_inputs("your-journey").tokens
PAIRS = len(TOKENS) ** 2
INPUTS = torch.tensor(load_inputs("your-journey").embeddings)


def opened(variant: str = "tiny", **options: object) -> Iterator[ExploreSession]:
    session = explore_loader(variant, TraceOptions(**options), [str(PLUGINS)])  # type: ignore[arg-type]
    try:
        session.start()
        yield session
    finally:
        session.close()


@pytest.fixture
def session() -> Iterator[ExploreSession]:
    yield from opened()


def test_stepping_forward_and_back_through_a_loop(session: ExploreSession) -> None:
    assert session.position == -1 and session.step is None  # nothing shown before the first
    assert isinstance(session.go(0), Moved) and session.position == 0
    for _ in range(3):
        assert isinstance(session.next(), Moved)
    step = session.step
    assert isinstance(step, SubStep) and step.position == (0, 2)
    assert float(step.tensors["score"]) == pytest.approx(float(INPUTS[0] @ INPUTS[2]), abs=1e-6)
    assert isinstance(session.back(), Moved) and session.position == 2
    assert isinstance(session.first(), Moved) and session.position == 0
    back = session.back()  # nothing before the first step: stays, and says so
    assert isinstance(back, AtEnd) and not back and session.position == 0


def test_the_loop_end_the_last_step_and_past_it(session: ExploreSession) -> None:
    session.go(1)
    assert isinstance(session.loop_end(), Moved)
    built = session.step
    assert isinstance(built, Stage) and built.name == "scores"
    assert session.position == 1 + PAIRS  # every pair, then the stage they built
    assert isinstance(session.last(), Moved)
    last = session.step
    assert isinstance(last, Stage) and last.name == "weights"
    assert session.total is not None and session.position == session.total - 1
    assert isinstance(session.next(), AtEnd)  # past the end: stays
    assert session.position == session.total - 1


def test_a_stage_by_name_and_one_the_variant_never_produces(session: ExploreSession) -> None:
    session.go(0)
    assert isinstance(session.stage("weights"), Moved)
    assert isinstance(session.step, Stage) and session.step.name == "weights"
    here = session.position
    refused = session.stage("no-such-stage")
    assert isinstance(refused, Refused) and not refused
    assert refused.reason == "The variant produced no stage 'no-such-stage'"
    assert session.position == here


def test_the_view_says_where_it_is_and_how_many_steps_only_once_known(
    session: ExploreSession,
) -> None:
    session.go(0)
    view = session.view()
    assert view.counter == "step 1 of ?" and view.where == "stage 1 of 3"
    assert view.current == "inputs" and view.done == ()
    session.go(2)  # the loop's second pair: its end not run yet
    view = session.view()
    assert view.where == "pair 2" and view.title == "Loop building “scores”"
    assert view.cell == "0, 1" and view.current == "scores" and view.done == ("inputs",)
    session.loop_end()
    session.back()  # the loop's last pair, its length now certain
    assert session.view().where == f"pair {PAIRS} of {PAIRS}"
    session.last()
    total = session.total
    assert total is not None and session.view().counter == f"step {total} of {total}"
    session.go(2)  # and it stays known going back
    view = session.view()
    assert view.where == f"pair 2 of {PAIRS}" and view.counter == f"step 3 of {total}"


def test_the_canvas_is_the_matrix_filled_so_far(session: ExploreSession) -> None:
    session.go(3)
    view = session.view()
    canvas = view.canvas
    assert canvas is not None
    row = [canvas.value(0, column, view.step.index) for column in range(6)]  # type: ignore[union-attr]
    assert row[:3] == pytest.approx([float(INPUTS[0] @ INPUTS[k]) for k in range(3)], abs=1e-6)
    assert row[3:] == [None, None, None]


def test_a_loop_that_failed_part_way_is_a_step_of_its_own_with_no_count() -> None:
    for session in opened("fails-in-loop"):
        session.go(0)
        assert isinstance(session.next(), Moved) and isinstance(session.next(), Moved)
        failed = session.next()  # the third pair never comes
        assert isinstance(failed, Failed) and failed.moved and failed
        assert isinstance(failed.error, PluginError)
        assert "the loop broke after two sub-steps" in str(failed.error)
        view = session.view()
        assert view.step is None and view.failure is failed.error
        assert session.total is not None
        assert view.where == f"step {session.total + 1} · ← goes back to the last step it produced"
        again = session.next()  # on the failure already: nothing moves
        assert isinstance(again, Failed) and not again.moved
        assert isinstance(session.back(), Moved)  # the last pair that ran
        # The run ended, but by failing inside the loop: two pairs ran, not "2 of 2".
        assert session.view().where == "pair 2"


FIRST_FAILS = """
from tracer import RunContext, Variant, hookimpl, stage


def at_once(run: RunContext):
    raise ValueError("this variant fails before its first stage")
    yield stage("inputs", "Token embeddings", inputs=run.inputs)


@hookimpl
def register_variants(register):
    register(Variant(name="at-once", title="Fails at once", run=at_once,
                     stages=("inputs",), uses_weights=False))
"""


def test_a_variant_that_fails_before_its_first_step_raises_at_start(tmp_path: Path) -> None:
    (tmp_path / "at_once.py").write_text(FIRST_FAILS, encoding="utf-8")
    session = explore_loader("at-once", TraceOptions(), [str(tmp_path)])
    try:
        with pytest.raises(PluginError, match="fails before its first stage"):
            session.start()
        assert session.position == -1
    finally:
        session.close()


def test_a_move_that_must_run_the_variant_waits_on_pending_work(
    session: ExploreSession,
) -> None:
    session.go(0)
    move = session.go(5, wait=False)  # not computed yet: the front end runs it off its thread
    assert isinstance(move, Waiting) and not move
    pending = move.pending
    assert pending.description == "Running to step 6"
    assert session.position == 0  # nothing moved before the work is done
    with pytest.raises(RuntimeError):
        pending.finish()  # finishing comes after running
    pending.run()
    assert isinstance(pending.finish(), Moved) and session.position == 5
    assert isinstance(session.go(3, wait=False), Moved)  # computed already: no waiting
    assert isinstance(session.last(wait=False), Waiting)  # even a short run goes to a worker
    assert isinstance(settle(session.last(wait=False)), Moved)
    assert session.position == session.total - 1  # type: ignore[operator]


def test_pending_work_cancelled_raises_and_moves_nothing(session: ExploreSession) -> None:
    session.go(0)
    move = session.go(7, wait=False)
    assert isinstance(move, Waiting)
    move.pending.cancel()
    assert move.pending.cancelled
    with pytest.raises(Cancelled):
        move.pending.run()
    assert session.position == 0
    outside = session.stage("weights", wait=False)  # a front end's own stop (Esc) counts too
    assert isinstance(outside, Waiting)
    with pytest.raises(Cancelled):
        outside.pending.run(cancelled=lambda: True)
    assert session.position == 0


def test_pending_work_reports_its_progress() -> None:
    for session in opened(inputs=str(MANY)):  # 200 tokens: 40,000 pairs
        session.go(0)
        move = session.go(2100, wait=False)
        assert isinstance(move, Waiting)
        said: list[int] = []
        move.pending.run(progress=said.append)
        assert said == [1024, 2048] and move.pending.done == 2048
        assert isinstance(move.pending.finish(), Moved) and session.position == 2100


def test_the_plain_explorer_walks_the_session_to_the_end(session: ExploreSession) -> None:
    from tracer.text.plain_explore import PLAIN_SUBSTEPS, plain_steps

    text = "\n".join(plain_steps(session))
    assert text.count("-- scores loop, sub-step") == PLAIN_SUBSTEPS
    assert f"… and {PAIRS - PLAIN_SUBSTEPS:,} more sub-steps of this loop" in text
    assert session.total is not None and session.position == session.total - 1
