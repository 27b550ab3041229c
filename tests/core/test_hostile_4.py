"""Reliability 4: the tool's own process, closed and full streams, limits, files and formats."""

from __future__ import annotations

import errno
import json
import math
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests import forked
from tracer import files
from tracer.cli.channels import standard_streams
from tracer.environment import (
    MEBIBYTES,
    NO_MEMORY_LIMIT_MB,
    NO_TIME_LIMIT,
    SECONDS,
    Limit,
    parse_limit,
)
from tracer.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError
from tracer.files import write_new
from tracer.plugin_host import PluginHost
from tracer.processes import confine_writes, refuse_writes_outside
from tracer.render.text import format_number, format_tensor
from tracer.sanitize import LABEL_LIMIT, display_width
from tracer.tracing.runner import TraceOptions, start_trace

Attn = Callable[..., tuple[int, str, str]]

# Wrong numbers: in-place updates after a step was recorded, in the tool's own process --------

IN_PLACE = textwrap.dedent(
    """
    import torch
    from tracer import Variant, hookimpl, stage

    def data_sub(W):
        W.data.sub_(1.0)

    def add_no_grad(W):
        with torch.no_grad():
            W.add_(1.0)

    def detached(W):
        W.detach().mul_(3.0)

    def numpy_view(W):
        W.detach().numpy()[...] += 5.0

    def set_item(W):
        with torch.no_grad():
            W[0] = -7.0

    def make(update):
        def run(ctx):
            W = torch.ones(2, 3, requires_grad=True)
            yield stage("before", "W before", w=W)
            update(W)
            yield stage("after", "W after", w=W)
            return W.detach()
        return run

    @hookimpl
    def register_variants(register):
        for update in (data_sub, add_no_grad, detached, numpy_view, set_item):
            name = "w-" + update.__name__.replace("_", "-")
            register(Variant(name=name, title=name, run=make(update), stages=("before", "after")))
    """
)
UPDATES = ("data-sub", "add-no-grad", "detached", "numpy-view", "set-item")


@pytest.fixture(scope="module")
def in_place_host(tmp_path_factory: pytest.TempPathFactory) -> PluginHost:
    folder = tmp_path_factory.mktemp("in_place")
    (folder / "in_place_updates.py").write_text(IN_PLACE)
    return PluginHost([folder], use_env=False)


@pytest.mark.parametrize("update", UPDATES)
def test_in_place_update_after_a_stage_keeps_the_value_a_reader_already_took(
    in_place_host: PluginHost, update: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ATTN_ISOLATE=off is how every plugin runs off Linux: the guard alone keeps the numbers.
    monkeypatch.setenv("ATTN_ISOLATE", "off")
    trace = start_trace(f"w-{update}", TraceOptions(), in_place_host)
    before = next(trace).tensors["w"]  # taken before the update, as `attn trace --json` does
    after = next(trace).tensors["w"]
    list(trace)
    torch.testing.assert_close(before, torch.ones(2, 3))
    assert not torch.equal(after, torch.ones(2, 3))
    torch.testing.assert_close(after, trace.output)


# Streams: closed or full standard streams -------------------------------------------------


def _closed(fd: int) -> Callable[[], None]:
    """In the forked ``attn``: descriptor ``fd`` closed at start-up, as ``<&-`` leaves it
    (the interpreter then has no ``sys.stdin``/``stdout``/``stderr`` for it)."""

    def close() -> None:
        os.close(fd)
        setattr(sys, ("stdin", "stdout", "stderr")[fd], None)

    return close


def _on_full_device() -> None:
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, 1)
    os.close(full)


@pytest.fixture(scope="module")
def plugin_folder(in_place_host: PluginHost, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("third_party")
    (folder / "in_place_updates.py").write_text(IN_PLACE)
    return folder


@pytest.mark.parametrize("fd", [0, 2], ids=["stdin-closed", "stderr-closed"])
def test_a_plugin_runs_in_its_worker_with_a_standard_stream_closed(
    plugin_folder: Path, fd: int
) -> None:
    result = forked.run_attn(
        "trace", "w-data-sub", "--plugins-dir", str(plugin_folder), "--json",
        preexec_fn=_closed(fd),
    )  # fmt: skip
    assert result.returncode == EXIT_OK, result.stderr
    stages = json.loads(result.stdout)["stages"]
    assert [stage["tensors"]["w"][0][0] for stage in stages] == [1.0, 0.0]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (("trace", "masked", "--json"), "standard output is closed"),
        (("trace", "masked"), "standard output is closed"),
    ],
)
def test_closed_stdout_is_one_line_not_a_traceback(command: tuple[str, ...], expected: str) -> None:
    result = forked.run_attn(*command, preexec_fn=_closed(1))
    assert result.returncode == EXIT_USAGE
    assert result.stderr == f"attn: cannot write the output: {expected}\n"


@pytest.mark.parametrize("command", [("trace", "masked", "--json"), ("trace", "vectorized")])
def test_stdout_on_a_full_device_is_one_line_not_a_traceback(command: tuple[str, ...]) -> None:
    result = forked.run_attn(*command, preexec_fn=_on_full_device)
    assert result.returncode == EXIT_USAGE
    assert result.stderr == "attn: cannot write the output: No space left on device\n"


def test_check_json_with_stdout_closed(tmp_path: Path) -> None:
    mine = tmp_path / "mine.py"
    mine.write_text("def attention(inputs):\n    return inputs\n")
    result = forked.run_attn(
        "check", str(mine), "--against", "naive-loop", "--json", preexec_fn=_closed(1)
    )
    assert result.returncode == EXIT_USAGE
    assert result.stderr.endswith("attn: cannot write the output: standard output is closed\n")
    assert "Traceback" not in result.stderr


def test_closed_stdin_reads_as_empty_and_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    # `exercises watch DIR <&-` asks sys.stdin.isatty(): a closed stdin is an empty one.
    monkeypatch.setattr(sys, "stdin", None)
    standard_streams()
    assert sys.stdin is not None and not sys.stdin.isatty()
    assert sys.stdin.read() == ""


def test_kill_int_closes_the_app_with_the_interrupted_status() -> None:
    import pty
    import select
    import signal
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the app on a pseudo-terminal (Ctrl+C is a key there, not SIGINT)
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, [sys.executable, "-m", "tracer", "explore", "vectorized"])
    output = b""
    deadline = time.monotonic() + 60
    sent = False
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
        if not sent and b"\x1b[?1049h" in output and b"Your" in output:  # on screen
            os.kill(pid, signal.SIGINT)
            sent = True
    _, status = os.waitpid(pid, 0)
    assert sent
    assert os.waitstatus_to_exitcode(status) == EXIT_INTERRUPTED
    assert b"\x1b[?1049l" in output  # the terminal is restored


# Limits from flags and the environment: one check, one message; inf lifts a limit -----------


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("inf", SECONDS, NO_TIME_LIMIT),
        ("Infinity", SECONDS, NO_TIME_LIMIT),
        ("0.5", SECONDS, 0.5),
        ("inf", MEBIBYTES, NO_MEMORY_LIMIT_MB),
        ("256", MEBIBYTES, 256),
    ],
)
def test_a_limit_of_inf_is_no_limit(text: str, kind: Limit, expected: float) -> None:
    assert parse_limit("ATTN_X", text, kind) == expected


@pytest.mark.parametrize("text", ["nan", "-inf", "0", "1e400", "1e300", "soon", ""])
def test_every_bad_time_limit_gets_the_same_one_line(text: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_limit("--timeout", text, SECONDS)
    assert str(refused.value) == (
        "--timeout must be a number of seconds above 0 and at most 1,000,000,000, "
        f"or inf for no limit, got {text!r}"
    )


@pytest.mark.parametrize("text", ["nan", "63", "64.5", "1e30"])
def test_bad_memory_limits_are_refused(text: str) -> None:
    with pytest.raises(UsageError, match=r"^ATTN_CHECK_MEMORY_MB must be a whole number of MiB"):
        parse_limit("ATTN_CHECK_MEMORY_MB", text, MEBIBYTES)


def test_limits_from_flags_and_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.learner.isolation import Limits
    from tracer.tracing.worker import WorkerLimits

    monkeypatch.setenv("ATTN_CHECK_TIMEOUT", "inf")
    monkeypatch.setenv("ATTN_CHECK_MEMORY_MB", "inf")
    assert Limits.from_environment() == Limits(NO_TIME_LIMIT, NO_MEMORY_LIMIT_MB)
    assert Limits.from_environment(math.inf, None).timeout == NO_TIME_LIMIT  # --timeout inf
    monkeypatch.setenv("ATTN_STEP_TIMEOUT", "inf")
    monkeypatch.setenv("ATTN_PLUGIN_MEMORY_MB", "inf")
    assert WorkerLimits.from_environment() == WorkerLimits(NO_TIME_LIMIT, NO_MEMORY_LIMIT_MB)


def test_check_refuses_a_bad_timeout_flag_in_one_line(attn: Attn) -> None:
    status, _, err = attn("check", "mine.py", "--against", "vectorized", "--timeout", "nan")
    assert status == EXIT_USAGE
    assert err == (
        "attn: --timeout must be a number of seconds above 0 and at most 1,000,000,000, "
        "or inf for no limit, got 'nan'\n"
    )


def test_an_import_time_limit_of_inf_never_fails_the_built_ins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATTN_IMPORT_TIMEOUT", "inf")
    host = PluginHost(use_env=False)
    assert host.failures == []
    assert "masked" in host.variants


# Files: exclusive creation, bounded lock waits, nothing half-made, a deleted working folder ---


def test_a_new_file_is_created_exclusively(tmp_path: Path) -> None:
    target = tmp_path / "same.md"
    write_new(target, "first\n")
    with pytest.raises(FileExistsError):
        write_new(target, "second\n")
    assert target.read_text() == "first\n"
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileExistsError):
        write_new(dangling, "third\n")
    assert not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.md", "same.md"]


def test_an_export_keeps_a_file_that_appeared_while_the_lesson_ran(
    attn: Attn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracer.text.export as export

    target = tmp_path / "same.md"

    def concurrent_export(*args: object, **kwargs: object) -> str:
        target.write_text("the other export's\n")  # another `lesson export -o same.md` won
        return "this export's\n"

    monkeypatch.setattr(export, "export_text", concurrent_export)
    status, _, err = attn("lesson", "export", "01", "--to", "md", "-o", str(target))
    assert status == EXIT_USAGE
    assert err == f"attn: {target} already exists; not overwriting it (use --force to replace it)\n"
    assert target.read_text() == "the other export's\n"


def test_a_held_folder_lock_is_waited_for_a_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from tracer.learner.exercises import Progress

    monkeypatch.setattr(files, "LOCK_WAIT_S", 0.05)
    holder = os.open(tmp_path, os.O_RDONLY)  # another attn process, holding the folder
    fcntl.flock(holder, fcntl.LOCK_EX)
    warnings: list[str] = []
    try:
        assert not Progress(done=[]).try_save(tmp_path, warnings.append)
    finally:
        os.close(holder)
    assert warnings == [
        f"cannot save progress in {tmp_path / '.attn-exercises.json'}: another process has "
        f"held {tmp_path} for more than 0.05 s"
    ]
    assert Progress(done=[]).try_save(tmp_path, warnings.append)  # let go: saved


def test_init_on_a_full_disk_leaves_nothing_half_made_and_a_later_init_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracer.learner.exercises import EXERCISES, init_exercises, template

    real = files._write_temporary
    written: list[Path] = []

    def fills_up(temporary: Path, text: str) -> None:
        if len(written) == 2:
            with open(temporary, "x") as handle:  # the disk fills up in the middle of a stub
                handle.write(text[: len(text) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        real(temporary, text)
        written.append(temporary)

    monkeypatch.setattr(files, "_write_temporary", fills_up)
    with pytest.raises(UsageError, match=r"No space left on device$"):
        init_exercises(tmp_path)
    stubs = sorted(p.name for p in tmp_path.iterdir())
    assert stubs == [e.filename for e in EXERCISES[:2]]  # two whole stubs, nothing else
    monkeypatch.setattr(files, "_write_temporary", real)
    (tmp_path / EXERCISES[0].filename).write_text("")  # an empty stub of an older version
    init_exercises(tmp_path)
    for exercise in EXERCISES:
        assert (tmp_path / exercise.filename).read_text() == template(exercise)


def test_a_deleted_working_folder_is_one_line(attn: Attn, tmp_path: Path) -> None:
    here = os.getcwd()
    gone = tmp_path / "gone"
    outcomes = []
    for command in (("lesson", "export", "01", "--to", "md"), ("exercises", "init", "ex")):
        gone.mkdir()
        os.chdir(gone)
        try:
            gone.rmdir()
            outcomes.append(attn(*command))
        finally:
            os.chdir(here)
    message = "attn: the working folder no longer exists; cd to one that does and try again\n"
    assert outcomes == [(EXIT_USAGE, "", message)] * 2


# A learner's file may change nothing outside its run's own folder -------------------------------


def _in_a_child(confine: Callable[[str], object], scratch: Path, victim: Path) -> list[str]:
    """Confine a forked child to ``scratch``, then try to write ``victim``; what happened."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        outcomes = []
        try:
            confine(str(scratch))
            for attempt in (
                lambda: victim.write_text('{"done": ["01-dot-products"]}'),
                lambda: (scratch / "result.tmp").write_text("ok"),
                lambda: os.replace(scratch / "result.tmp", scratch / "result.pt"),
                lambda: victim.unlink(),
            ):
                try:
                    attempt()
                    outcomes.append("done")
                except PermissionError:
                    outcomes.append("refused")
        finally:
            os.write(write, json.dumps(outcomes).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as reader:
        data = reader.read()
    os.waitpid(pid, 0)
    return list(json.loads(data))


@pytest.mark.parametrize("confine", ["kernel", "audit hook"])
def test_a_learners_code_cannot_change_the_progress_file(tmp_path: Path, confine: str) -> None:
    scratch, learner = tmp_path / "run", tmp_path / "learner"
    scratch.mkdir()
    learner.mkdir()
    progress = learner / ".attn-exercises.json"
    progress.write_text('{"done": []}')

    def kernel(folder: str) -> None:
        if not confine_writes(folder):
            os._exit(0)  # no Landlock here: nothing to report

    outcomes = _in_a_child(
        kernel if confine == "kernel" else refuse_writes_outside, scratch, progress
    )
    if confine == "kernel" and not outcomes:
        pytest.skip("this kernel has no Landlock")
    assert outcomes == ["refused", "done", "done", "refused"]
    assert progress.read_text() == '{"done": []}'


# Bounded formats: widths, label lengths, digits; padding by display width -------------------


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (">999999999", "'>999999999' asks for a width of 999,999,999; the most is 40"),
        ("0<41.2f", "'0<41.2f' asks for a width of 41; the most is 40"),
        (".999f", "'.999f' asks for 999 decimals; the most is 16"),
        (">40.16f", None),
        (".2%", None),
    ],
)
def test_a_live_values_format_is_bounded(spec: str, problem: str | None) -> None:
    from tracer.lessons.prose import format_problem, format_value

    assert format_problem(spec) == problem
    shown = format_value(0.5, spec, ())
    assert len(shown) <= 40
    if problem is not None:
        assert shown == "0.5000"  # never applied, even when no check ran first


def test_lesson_check_refuses_a_huge_format_width(attn: Attn, tmp_path: Path) -> None:
    lesson = tmp_path / "wide.yaml"
    lesson.write_text(
        "title: Wide\nsummary: A format that asks for a gigabyte.\n"
        "values:\n  dot: {variant: vectorized, stage: scores, cell: [0, 1]}\n"
        "steps:\n  - variant: vectorized\n    stage: scores\n"
        "    narration: 'The dot product is {{dot:>999999999}}.'\n"
    )
    status, out, err = attn("lesson", "check", str(lesson))
    assert status == 1, (out, err)
    assert "asks for a width of 999,999,999; the most is 40" in out + err


@pytest.mark.parametrize(
    ("value", "shown"),
    [(3.4e38, "3.4000e+38"), (1.7e308, "1.7000e+308"), (-2.5e15, "-2.5000e+15"), (0.5, "0.5000")],
)
def test_huge_numbers_print_in_scientific_notation(value: float, shown: str) -> None:
    assert format_number(value) == shown


def test_labels_are_sanitised_cut_and_padded_by_display_width() -> None:
    tokens = ("cat", "猫猫", "e\u0301te\u0301", "😀x", "a\u202eb", "x" * 100_000)
    table = format_tensor(torch.ones(len(tokens), 2), tokens, axes=("token", "feature"))
    lines = table.splitlines()
    assert all(display_width(line) == display_width(lines[1]) for line in lines[1:])
    assert "\u202e" not in table and "a<U+202E>b" in table
    assert "x" * (LABEL_LIMIT - 1) + "…" in table and "x" * LABEL_LIMIT not in table
    assert len(table) < 1000
    assert [display_width(t) for t in ("猫猫", "e\u0301te\u0301", "😀x")] == [4, 3, 3]


def test_an_embedding_beyond_float32_is_refused(tmp_path: Path) -> None:
    from tracer.errors import InputError
    from tracer.inputs.input_set import load_inputs

    path = tmp_path / "big.json"
    path.write_text('{"tokens": ["a", "b"], "embeddings": [[1e308, 1.0], [0.5, 0.5]]}')
    with pytest.raises(InputError, match=r"beyond float32's ±3\.4028e\+38$"):
        load_inputs(str(path))


@pytest.mark.parametrize("before", [b'{"done": []}\n', None])
def test_a_progress_file_the_learners_code_changed_is_put_back(
    tmp_path: Path, before: bytes | None
) -> None:
    from tracer.learner.isolation import _kept

    progress = tmp_path / ".attn-exercises.json"
    if before is not None:
        progress.write_bytes(before)
    with _kept(tmp_path / "01_dot_products.py"):  # while the learner's code runs
        progress.write_text('{"done": ["01-dot-products", "02-normalising"]}')
    assert (progress.read_bytes() if progress.exists() else None) == before


def _index_problem(value: str, tokens: tuple[str, ...], size: int | None = None) -> list[str]:
    import yaml

    from tracer.lessons.grammar import Reader

    reader = Reader("lesson.yaml", Path("."), PluginHost(entry_points=False, use_env=False))
    node = yaml.compose(value)
    assert reader.index(node, "pick", tokens, size) is None
    return [problem.message for problem in reader.problems]


def test_an_index_by_a_token_that_occurs_twice_is_ambiguous_but_still_loads(
    tmp_path: Path,
) -> None:
    # Never picked silently: check says so at the token. But a lesson written before 'the@4'
    # existed meant the first, so it loads as it did (exit 0: a warning, not a problem).
    lesson = tmp_path / "repeat.yaml"
    lesson.write_text(
        "title: t\nsummary: s\n"
        "inputs: {tokens: [the, cat, the], embeddings: [[1, 0], [0, 1], [1, 1]]}\n"
        "steps:\n"
        "  - quiz: {question: q, answer: {variant: naive-loop, stage: scores, cell: [the, cat]}}\n",
        encoding="utf-8",
    )
    result = forked.run_attn("lesson", "check", str(lesson))
    assert result.returncode == 0, result.stderr
    assert f"{lesson}:5:77: warning: cell index 'the' is ambiguous: it is tokens 0, 2 " in (
        result.stdout + result.stderr
    )
    assert "the first is used; name one with its position: 'the@0', 'the@2'" in (
        result.stdout + result.stderr
    )


def test_a_huge_negative_index_says_indices_start_at_zero() -> None:
    assert _index_problem(str(-(10**25)), ("a", "b"), size=1 << 30) == [
        f"pick {-(10**25)} is out of range: indices start at 0"
    ]


def test_a_huge_python_int_as_a_tensor_names_the_stage_and_the_tensor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracer.tracing.trace import VariantRunError

    monkeypatch.setenv("ATTN_ISOLATE", "off")
    (tmp_path / "big_int.py").write_text(
        "from tracer import Variant, hookimpl, stage\n\n"
        "def run(ctx):\n"
        "    yield stage('s', 'S', n=10**30)\n"
        "    return ctx.inputs\n\n"
        "@hookimpl\n"
        "def register_variants(register):\n"
        "    register(Variant(name='big-int', title='Big int', run=run, stages=('s',)))\n"
    )
    trace = start_trace("big-int", TraceOptions(), PluginHost([tmp_path], use_env=False))
    with pytest.raises(VariantRunError) as failed:
        next(trace)
    assert str(failed.value).endswith(
        ":4: variant 'big-int' stage 's': tensor 'n' is a whole number of 31 digits, beyond "
        "int64; yield it as a float (or a tensor)"
    )


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_an_inputs_file_that_is_not_a_regular_file(tmp_path: Path, special: str) -> None:
    from tracer.errors import InputError
    from tracer.inputs.input_set import load_inputs

    if special == "fifo":
        special = str(tmp_path / "inputs.json")
        os.mkfifo(special)
    with pytest.raises(InputError, match=f"^inputs file is not a regular file: {special}$"):
        load_inputs(special)


def test_an_inputs_file_nested_100000_deep_is_one_line(tmp_path: Path) -> None:
    from tracer.errors import InputError
    from tracer.inputs.input_set import load_inputs

    path = tmp_path / "deep.json"
    path.write_text('{"tokens": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError) as refused:
        load_inputs(str(path))
    assert str(refused.value) == (
        f"{path}:1:1: inputs file is nested too deeply; an input set is a mapping of lists of "
        "numbers"
    )


def test_a_plugins_dir_that_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "plugin.py"
    file.write_text("")
    with pytest.raises(UsageError, match=f"^plugins folder {file} is not a folder$"):
        PluginHost([file], entry_points=False, use_env=False)


@pytest.mark.parametrize("isolate", ["off", "plugins"])
def test_a_quantized_tensor_is_refused_in_one_line_without_torchs_warning(
    tmp_path: Path, isolate: str
) -> None:
    (tmp_path / "quantized.py").write_text(
        "import torch\n"
        "from tracer import Variant, hookimpl, stage\n\n"
        "def run(ctx):\n"
        "    q = torch.quantize_per_tensor(torch.ones(2, 2), 0.1, 0, torch.quint8)\n"
        "    yield stage('s', 'S', q=q)\n"
        "    return ctx.inputs\n\n"
        "@hookimpl\n"
        "def register_variants(register):\n"
        "    register(Variant(name='quantized', title='Q', run=run, stages=('s',)))\n"
    )
    result = forked.run_attn(
        "trace", "quantized", "--plugins-dir", str(tmp_path),
        env={**os.environ, "ATTN_ISOLATE": isolate},
    )  # fmt: skip
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        f"{tmp_path / 'quantized.py'}:6: variant 'quantized' stage 's': tensor 'q' has dtype "
        "torch.quint8, which is not a number type"
    ]


def test_a_warning_is_kept_as_one_sanitised_line() -> None:
    import warnings

    from tracer.sanitize import keep_warnings, take_warnings

    before = warnings.showwarning
    try:
        keep_warnings()
        warnings.showwarning("deprecated\x1b]0;title\x07\nsecond line", UserWarning, "t.py", 1)
        warnings.showwarning("deprecated\x1b]0;title\x07\nsecond line", UserWarning, "t.py", 1)
    finally:
        warnings.showwarning = before
    assert take_warnings() == ["attn: warning: UserWarning: deprecated␛]0;title␇"]
    assert take_warnings() == []


FORKS = textwrap.dedent(
    """
    import os
    import torch
    from tracer import Variant, hookimpl, stage

    children = []

    def run(ctx):
        pid = os.fork()  # both processes go on to yield
        if pid:
            children.append(pid)
        yield stage("a", "A", x=torch.ones(64, 64))
        yield stage("b", "B", x=torch.zeros(64, 64))
        return ctx.inputs

    @hookimpl
    def register_variants(register):
        register(Variant(name="forks", title="Forks", run=run, stages=("a", "b")))
    """
)


@pytest.mark.parametrize("isolate", ["off", "plugins"])
def test_a_step_that_forks_is_answered_once(tmp_path: Path, isolate: str) -> None:
    (tmp_path / "forks.py").write_text(FORKS)
    result = forked.run_attn(
        "trace", "forks", "--plugins-dir", str(tmp_path), "--json",
        env={**os.environ, "ATTN_ISOLATE": isolate},
    )  # fmt: skip
    assert result.returncode == EXIT_OK, result.stderr
    assert [stage["name"] for stage in json.loads(result.stdout)["stages"]] == ["a", "b"]


async def test_serve_answers_a_100kb_request_line_with_400_and_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import asyncio

    from tracer.serve.server import BrowserServer

    server = BrowserServer([sys.executable, "-c", "pass"], host="127.0.0.1", port=0)
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 30)
        writer.close()
    finally:
        await server.stop()
    assert status.split()[1] == b"400"
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("attn serve: refused a request: ")
    assert "Traceback" not in lines[0]


@pytest.mark.parametrize(("shape", "blocks"), [((0, 3), [[None] * 3]), ((3, 0), [[None]] * 3)])
@pytest.mark.parametrize("all_finite", [True, False])
def test_the_overview_of_an_empty_table_is_empty_blocks(
    shape: tuple[int, int], blocks: list[list[None]], all_finite: bool
) -> None:
    # What `z` draws: a 0×3 tensor in the explorer crashed the app here.
    from tracer.tui.grid import block_means

    assert block_means(torch.empty(shape), 8, 8, all_finite=all_finite) == blocks


def test_a_big_yaml_inputs_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from tracer.errors import InputError
    from tracer.inputs.input_set import load_inputs

    path = tmp_path / "big.yaml"
    row = "  - [" + ", ".join(["0.5"] * 64) + "]\n"
    path.write_text("tokens: [a]\nembeddings:\n" + row * 20_000)  # 5 MB
    with pytest.raises(InputError, match=r"YAML is read up to 4 MB \(a well-formed JSON file"):
        load_inputs(str(path))
