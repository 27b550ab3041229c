"""Text from files and plugins reaches the terminal through one sanitiser: no escape runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests import forked
from tracer.sanitize import message, visible

OSC_TITLE = "\x1b]0;owned\x07"
CSI_CLEAR = "\x1b[2J\x1b[?25l"
OSC_52 = "\x1b]52;c;aGVsbG8=\x07"


def run_attn(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """``attn ARGV`` forked from this process (tests/forked.py), its output as bytes.

    Equivalent here: what is checked is the bytes ``attn`` writes to its stdout and stderr,
    which the child writes through new streams on pipes, opened as the interpreter opens
    them (same encoding and error handler); the files read are this test's own.
    """
    return forked.run_attn(*argv, timeout=300, cwd=cwd, text=False)


@pytest.fixture
def hostile_inputs(tmp_path: Path) -> Path:
    path = tmp_path / "hostile.json"
    document = {"tokens": [OSC_TITLE, CSI_CLEAR, "ok"], "embeddings": [[1, 0], [0, 1], [1, 1]]}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_visible_shows_every_control_character_and_keeps_plain_text() -> None:
    assert visible("Your journey starts") == "Your journey starts"
    assert visible("a\nb\tc") == "a\nb\tc"
    assert visible(OSC_TITLE) == "␛]0;owned␇"
    assert visible("a\nb", multiline=False) == "a␊b"
    assert visible("x\x9b2Jy\u202eevil") == "x<U+009B>2Jy<U+202E>evil"
    assert visible("\x7f\r") == "\u2421␍"
    for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]:
        assert chr(code) not in visible(chr(code), multiline=False)


def test_message_cuts_a_huge_message() -> None:
    text = message("x" * 50_000_000)
    assert len(text) < 5000
    assert "more characters not shown" in text


def test_trace_text_never_emits_a_tokens_escape(hostile_inputs: Path) -> None:
    result = run_attn("trace", "vectorized", "--inputs", str(hostile_inputs))
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout + result.stderr
    assert "␛]0;owned␇".encode() in result.stdout


def test_trace_json_keeps_the_exact_token(hostile_inputs: Path) -> None:
    result = run_attn("trace", "vectorized", "--inputs", str(hostile_inputs), "--json")
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout
    assert json.loads(result.stdout)["tokens"][:2] == [OSC_TITLE, CSI_CLEAR]


def test_error_message_naming_a_token_never_emits_its_escape(hostile_inputs: Path) -> None:
    result = run_attn("trace", "vectorized", "--inputs", str(hostile_inputs), "--query", OSC_52)
    assert result.returncode == 2
    assert b"\x1b" not in result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_error_in_a_file_never_emits_its_escape(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"tokens: [a]\nembeddings: [[1]]\n{OSC_52}: 1\n", encoding="utf-8")
    result = run_attn("trace", "vectorized", "--inputs", str(path))
    assert result.returncode == 2
    assert b"\x1b" not in result.stdout + result.stderr


def test_lesson_plain_never_emits_osc_52(tmp_path: Path) -> None:
    lesson = tmp_path / "clip.yaml"
    lesson.write_text(
        json.dumps(
            {
                "title": f"Clipboard {OSC_52}",
                "summary": f"Summary {CSI_CLEAR}",
                "steps": [{"narration": f"Hello {OSC_52} there"}],
            }
        ),
        encoding="utf-8",
    )
    result = run_attn("lesson", "run", str(lesson), "--plain")
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout + result.stderr
    assert "Hello ␛]52;c;aGVsbG8=␇ there".encode() in result.stdout


def test_plugin_text_never_emits_its_escape(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "loud.py").write_text(f"raise RuntimeError({OSC_52!r})\n", encoding="utf-8")
    for argv in (["plugins"], ["trace", "vectorized"]):
        result = run_attn(*argv, "--plugins-dir", str(folder))
        assert result.returncode == 0, result.stderr
        assert b"\x1b" not in result.stdout + result.stderr
        assert "␛]52".encode() in result.stdout + result.stderr


def test_app_labels_and_prose_show_escapes_visibly() -> None:
    from tracer.tui.grid import tensor_labels

    rows, columns, _ = tensor_labels((2, 2), ("query", "key"), (OSC_TITLE, CSI_CLEAR), None)
    assert all("\x1b" not in label for label in rows + columns)
    assert rows[0] == "␛]0;owned␇"


def test_lessons_list_never_emits_a_titles_escape(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "10_clip.yaml").write_text(
        json.dumps({"title": f"Clip {OSC_52}", "summary": "S", "steps": [{"narration": "Hi."}]}),
        encoding="utf-8",
    )
    result = run_attn("lessons", "--lessons-dir", str(folder))
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout + result.stderr
    assert "Clip ␛]52".encode() in result.stdout
