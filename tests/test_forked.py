"""The forked ``attn`` of tests/forked.py is what a fresh ``python -m tracer`` is, for the
things the tests that use it look at: output, exit status, stdin, signals, timeouts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import forked


def test_a_forked_attn_runs_as_a_fresh_interpreter_does(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"  # a plugin reporting what it finds at import
    probe.write_text(
        "import os, signal, sys\n"
        "print(os.getcwd(), os.environ.get('ATTN_TEST_PROBE'), sys.stdin.read() or 'eof',\n"
        "      signal.getsignal(signal.SIGINT) is signal.default_int_handler,\n"
        "      signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,\n"
        "      signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN,\n"
        "      sys.stdout.line_buffering, sys.stdout.write_through,\n"
        "      sys.stderr.line_buffering, type(sys.stdout.buffer).__name__,\n"
        "      sys.stdin.fileno(), file=sys.stderr)\n"
    )
    # PYTHONUNBUFFERED the other way round from this process: applied in the child too.
    unbuffered = "" if os.environ.get("PYTHONUNBUFFERED") else "1"
    env = {**os.environ, "ATTN_TEST_PROBE": "seen", "PYTHONUNBUFFERED": unbuffered}
    argv = ["trace", "vectorized", "--query", "1", "--plugins-dir", str(tmp_path)]
    real = subprocess.run(
        [sys.executable, "-m", "tracer", *argv],
        capture_output=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    fork = forked.run_attn(*argv, cwd=tmp_path, env=env, text=False)
    assert real.returncode == 0, real.stderr
    assert (fork.returncode, fork.stdout, fork.stderr) == (0, real.stdout, real.stderr)
    assert f"{tmp_path} seen eof True True True".encode() in fork.stderr
    # Without PYTHONUNBUFFERED, buffered as Python opens pipes (whatever this process's -u).
    env.pop("PYTHONUNBUFFERED")
    buffered = forked.run_attn(*argv, cwd=tmp_path, env=env)
    assert buffered.stderr.endswith(" False True BufferedWriter 0\n"), buffered.stderr
    typed = forked.run_attn(*argv, cwd=tmp_path, env=env, input="typed")
    assert f"{tmp_path} seen typed True True True" in typed.stderr
    usage = forked.run_attn("trace", "no-such-variant")
    assert (usage.returncode, usage.stdout) == (2, "")
    assert usage.stderr.startswith("attn: unknown variant 'no-such-variant'")


def test_what_a_fork_cannot_apply_is_refused() -> None:
    changed = "latin-1" if os.environ.get("PYTHONIOENCODING") != "latin-1" else "ascii"
    with pytest.raises(forked.StartUpDiffers, match="PYTHONIOENCODING"):
        forked.run_attn("--version", env={**os.environ, "PYTHONIOENCODING": changed})


def test_a_timeout_kills_the_forked_attn_and_its_group(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    pids = tmp_path / "pids"
    (folder / "sleeps.py").write_text(
        f"import os, time\nopen({str(pids)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    env = {**os.environ, "ATTN_IMPORT_TIMEOUT": "100"}
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        forked.run_attn("plugins", "--plugins-dir", str(folder), env=env, timeout=5)
    assert time.monotonic() - started < 30
    sleeper = int(pids.read_text())  # the plugin's trial child, in the forked attn's group
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(sleeper, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(sleeper, signal.SIGKILL)
        pytest.fail("a process of the timed-out attn outlived it")
