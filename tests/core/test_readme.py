"""The README's examples work as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from textual.binding import Binding

from tracer.inputs.builtin import YOUR_JOURNEY

README = Path(__file__).resolve().parents[2] / "README.md"


def test_plugin_example_runs_as_documented(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = README.read_text()
    (code,) = re.findall(r"Save this as\s+`my_plugins/dot.py`.*?```python\n(.*?)```", text, re.S)
    folder = tmp_path / "my_plugins"
    folder.mkdir()
    (folder / "dot.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    x = torch.tensor(YOUR_JOURNEY.embeddings)

    for temperature in (1.0, 2.0):
        status, out, err = attn(
            "trace",
            "unscaled",
            "--plugins-dir",
            "my_plugins",
            "--json",
            "-o",
            f"temperature={temperature}",
        )
        assert (status, err) == (0, "")
        document = json.loads(out)
        assert [s["name"] for s in document["stages"]] == ["scores", "weights"]
        assert document["stages"][0]["axes"] == {"scores": ["query", "key"]}
        expected = F.scaled_dot_product_attention(x, x, x, scale=1.0 / temperature)
        torch.testing.assert_close(torch.tensor(document["output"]), expected)


# The README's example as it was before variants declared options and axes: plugins
# written against that API must keep working unchanged.
OLD_EXAMPLE = """\
import torch
from tracer import Variant, hookimpl, stage

def unscaled(run):
    scores = run.focus(run.inputs) @ run.inputs.T
    yield stage("scores", "Dot products", scores=scores)
    weights = torch.softmax(scores, dim=-1)
    yield stage("weights", "Softmax", weights=weights)
    return weights @ run.inputs

@hookimpl
def register_variants(register):
    register(Variant(name="unscaled", title="Unscaled", run=unscaled, stages=("scores", "weights")))
"""


def test_the_earlier_plugin_api_still_works(
    attn: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "dot.py").write_text(OLD_EXAMPLE)
    status, out, err = attn("trace", "unscaled", "--plugins-dir", str(folder), "--json")
    assert (status, err) == (0, "")
    x = torch.tensor(YOUR_JOURNEY.embeddings)
    expected = F.scaled_dot_product_attention(x, x, x, scale=1.0)
    torch.testing.assert_close(torch.tensor(json.loads(out)["output"]), expected)
    assert attn("trace", "unscaled", "--plugins-dir", str(folder), "--heads", "2")[0] == 0


QUICK_START_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def quick_start() -> tuple[str, list[str]]:
    """The Quick start section and the contents of its fenced blocks, in order."""
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return section, [body.strip() for _, body in QUICK_START_BLOCK.findall(section)]


def test_quick_start_is_two_commands_and_ci_runs_the_test_one() -> None:
    # On a fresh machine: one command installs attn and opens it, one installs the test
    # extras and runs the whole suite. Nothing else is fenced there.
    _, commands = quick_start()
    assert len(commands) == 2
    opens, tests = commands
    assert "\n" not in opens and "\n" not in tests
    assert opens.startswith("python3 -m venv .venv && ") and opens.endswith("&& .venv/bin/attn")
    assert tests.startswith("python3 -m venv .venv && ") and tests.endswith("&& .venv/bin/pytest")
    assert "-e '.[test]'" in tests
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    assert tests in ci  # verbatim, a line of its own


def test_quick_start_says_where_torch_comes_from_before_installing_it() -> None:
    section, commands = quick_start()
    # The CPU build of torch is a note in the text, with its command inline, before the
    # first command that installs anything (installing attn installs torch).
    (cpu,) = [c for c in re.findall(r"`([^`\n]+)`", section) if CPU_INDEX in c]
    assert "-c constraints.txt" in cpu  # the version the project pins
    assert cpu.startswith("python3 -m venv .venv && .venv/bin/pip install ")
    at = section.index(cpu)
    # The first install in the section is that one.
    assert at <= section.index("pip install") < at + len(cpu)
    assert section.index("CUDA") < at < section.index(commands[0])


def test_quick_start_says_how_to_quit_with_the_apps_own_keys() -> None:
    from tracer.tui.app import TracerApp

    quits = {
        key
        for binding in TracerApp.BINDINGS
        if isinstance(binding, Binding) and binding.action in ("quit", "quit_now")
        for key in binding.key.split(",")
    }
    section, (opens, _) = quick_start()
    before = section[: section.index(opens)]
    said = set(re.findall(r"`([^`]+)` or ([\w+]+)\s+quits", before)[0])
    assert said and said <= quits


def test_readme_is_a_front_door() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    # A picture of the app, drawn by the app (scripts/screenshots.py), and links that resolve.
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    assert any(t.startswith("docs/images/") and t.endswith(".svg") for t in targets)
    local = [t for t in targets if "://" not in t]
    assert [t for t in local if not (README.parent / t).exists()] == []
    for guide in ("learners", "lessons", "plugins", "reference", "architecture"):
        assert f"(docs/{guide}.md)" in text


def test_commands_that_need_an_extra_come_after_installing_it() -> None:
    commands = [c for _, c in shell_commands(README.read_text())]
    for extra, command in (("serve", "attn serve"), ("completion", "attn completion")):
        uses = [i for i, c in enumerate(commands) if c.startswith(command)]
        installs = [
            i
            for i, c in enumerate(commands)
            if re.search(r"pip install .*-e '\.\[[^]]*\b" + extra + r"\b", c)
        ]
        assert uses, command
        assert installs and installs[0] < uses[0], f"{command} before the {extra} extra"


# Reading the README as a fresh shell would: no virtual environment is active, so a bare
# `attn` is not on PATH and a bare `pip`, `python` or `pytest` is the system's.
TOOLS = {"attn", "pip", "pip3", "pytest", "python", "python3"}
SHELL_BLOCK = re.compile(r"^```(sh|bash|shell|console)\n(.*?)^```", re.S | re.M)
ACTIVATION = re.compile(r"^(?:source|\.)\s+(?:\./)?\.venv/bin/activate$")
WRAPPERS = {"timeout", "env", "time", "exec", "nohup"}


def shell_commands(text: str) -> list[tuple[int, str]]:
    """Every command in the README's shell blocks, in order, with the offset of its block.

    In ``console`` blocks only the lines after a ``$`` prompt are commands (the rest is output);
    ``a && b``, ``a; b`` and ``a | b`` are several commands.
    """
    commands = []
    for block in SHELL_BLOCK.finditer(text):
        kind, body = block.group(1), block.group(2)
        for line in body.splitlines():
            if kind == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            commands += [(block.start(), part) for part in split_line(line)]
    return commands


def split_line(line: str) -> list[str]:
    """The commands of one line: ``a && b``, ``a; b`` and ``a | b`` are several."""
    return [part.strip() for part in re.split(r"&&|\|\||;|\|", line) if part.strip()]


def program(command: str) -> tuple[str, list[str]]:
    """The program a command runs and its arguments, past ``NAME=value`` and ``timeout N``."""
    words = command.split()
    while words and (re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]) or words[0] in WRAPPERS):
        wrapper = words.pop(0)
        if wrapper == "timeout" and words:
            words.pop(0)  # the duration
    return (words[0], words[1:]) if words else ("", [])


def needs_the_venv(command: str) -> bool:
    """Whether a command runs a bare tool that only the virtual environment provides."""
    name, args = program(command)
    if name not in TOOLS:
        return False  # .venv/bin/attn and the like
    # Making the virtual environment needs the system's python.
    return not (name in ("python", "python3") and args[:2] == ["-m", "venv"])


def test_every_readme_command_runs_in_a_fresh_shell() -> None:
    text = README.read_text()
    commands = shell_commands(text)
    activations = [at for at, command in commands if ACTIVATION.match(command)]
    assert activations, "the README never makes the virtual environment active"
    # Early: the first shell block after the Quick start (whose two commands need no
    # activation), before any that uses bare commands.
    after_quick_start = text.index("\n## ", text.index("## Quick start") + 1)
    assert activations[0] == min(at for at, _ in commands if at > after_quick_start)
    stray = [c for at, c in commands if at < activations[0] and needs_the_venv(c)]
    assert stray == [], "commands that need the virtual environment before it is active"
    # Commands written in the text before the activation name .venv/bin/ too (a bare tool
    # name, as in "`attn` opens a lesson", is a mention, not a command).
    before = text[: activations[0]]
    spans = [
        span
        for span in re.findall(r"`([^`\n]+)`", before)
        for part in split_line(span)
        if needs_the_venv(part) and program(part)[1]
    ]
    assert spans == [], "commands in the text before the virtual environment is active"


def test_shell_commands_are_read_the_way_a_shell_runs_them() -> None:
    # The reader above, on the cases the README has: it must find the bare tools.
    sample = (
        "```sh\npython3 -m venv .venv && .venv/bin/pip install -e . && attn\n```\n"
        "```console\n$ pytest -q   # the suite\nattn: output, not a command\n"
        "$ ATTN_KEYMAP=x timeout 9 pip list | python -c 1\n```\n"
    )
    assert [program(c)[0] for _, c in shell_commands(sample)] == [
        "python3",
        ".venv/bin/pip",
        "attn",
        "pytest",
        "pip",
        "python",
    ]


@pytest.mark.slow  # a new shell starting attn once per example
def test_readme_examples_run_in_a_fresh_shell(tmp_path: Path) -> None:
    """The tour's examples, pasted into a new shell after the README's activation line."""
    venv = README.parent / ".venv"
    if Path(sys.prefix).resolve() != venv.resolve():
        pytest.skip(f"the tests run in {sys.prefix}, not in the README's {venv}")
    text = README.read_text()
    (activation,) = {c for _, c in shell_commands(text) if ACTIVATION.match(c)}
    using = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    # The blocks of commands alone (a block that also shows output may show an error).
    quiet = "".join(
        block.group(0)
        for block in SHELL_BLOCK.finditer(using)
        if all(line.startswith("$ ") for line in block.group(2).splitlines() if line)
    )
    examples = [c for _, c in shell_commands(quiet) if program(c)[0] == "attn"]
    assert len(examples) >= 3
    script = "\n".join(["set -e", activation, *(f"{c} > /dev/null" for c in examples)])
    fresh = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "LANG": "C.UTF-8",
    }
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script],
        cwd=README.parent,
        env=fresh,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (result.returncode, result.stderr) == (0, "")


def test_the_readme_names_every_built_in_variant_attn_plugins_lists(
    attn: Callable[..., tuple[int, str, str]],
) -> None:
    status, out, err = attn("plugins", "--json")
    assert (status, err) == (0, "")
    built_in = [
        variant["name"]
        for plugin in json.loads(out)
        if plugin["origin"] == "built-in"
        for variant in plugin["variants"]
    ]
    sentence = README.read_text().split("built-in variants are ", 1)[1].split(";", 1)[0]
    listed = re.findall(r"`([\w-]+)`", sentence)
    assert sorted(listed) == sorted(built_in)
    assert len(listed) == len(set(listed))
    (count,) = re.findall(r"The (\d+) built-in variants are", README.read_text())
    assert int(count) == len(built_in)
