"""Hostile files: each gets one clear line, exit status 1, without a traceback, and files that
are not a safe YAML document are refused before any plugin (or torch) is loaded."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

Attn = Callable[..., tuple[int, str, str]]


def billion_laughs() -> str:
    lines = ['lol0: &lol0 "lol"']
    for level in range(1, 10):
        refs = ", ".join([f"*lol{level - 1}"] * 10)
        lines.append(f"lol{level}: &lol{level} [{refs}]")
    return "\n".join(lines) + "\n"


CASES: list[tuple[str, bytes, str]] = [
    (
        "billion_laughs",
        billion_laughs().encode(),
        "1:7: anchors (&lol0) are not allowed; repeat the value, or put text that starts "
        "with '&' in quotes (99 more anchors or aliases in this file)",
    ),
    (
        "ten_megabytes",
        b"title: " + b"x" * 10_000_000 + b"\n",
        "1:1: lesson is too large (10.0 MB; the limit is 1 MB)",
    ),
    (
        "binary_garbage",
        bytes(range(256)) * 40,
        "1:1: this is a binary file, not YAML text",
    ),
    (
        "not_utf8",
        b"title: caf\xe9\nsummary: S\n",
        "1:11: not UTF-8 text (byte 0xe9)",
    ),
    ("empty", b"", "1:1: lesson is empty; it needs a title, a summary and steps"),
    (
        "root_is_a_list",
        b"- title: T\n",
        "1:1: a lesson must be a mapping with title, summary and steps, not a list",
    ),
    (
        "root_is_a_number",
        b"42\n",
        "1:1: a lesson must be a mapping with title, summary and steps, not a number (42)",
    ),
    (
        "deep_nesting",
        b"title: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
        "1:108: document nests too deeply (more than 100 levels of [ and {)",
    ),
    (
        "deep_block_nesting",
        "".join(" " * i + f"k{i}:\n" for i in range(1400)).encode(),
        "1:1: document nests too deeply",
    ),
    (
        "control_character",
        b"title: T\nsummary: a\x07b\n",
        "2:11: control character U+0007 is not allowed in YAML text",
    ),
]


NEED_PLUGINS = ("empty", "root_is_a_list", "root_is_a_number")
"""Valid YAML that is not a lesson: the loader, which needs the plugins, says so."""
SAFETY_TIMEOUT = 20.0
"""Not a speed test: only stops a pathological slowdown from hanging the suite."""


@pytest.mark.parametrize(("name", "data", "expected"), CASES, ids=[c[0] for c in CASES])
def test_one_clear_line(
    name: str,
    data: bytes,
    expected: str,
    tmp_path: Path,
    attn: Attn,
    host_loads: list[tuple[object, ...]],
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(data)
    started = time.perf_counter()
    status, out, err = attn("lesson", "check", str(path))
    elapsed = time.perf_counter() - started
    assert status == 1
    assert err == ""
    assert out.splitlines() == [f"{path}:{expected}"]
    # Refused while reading the YAML: no plugin host was built, so no plugin code ran.
    if name not in NEED_PLUGINS:
        assert host_loads == [], f"{name} loaded the plugins before being refused"
    assert elapsed < SAFETY_TIMEOUT, f"{name} took {elapsed:.2f}s"


def test_billion_laughs_is_refused_before_anything_expands(tmp_path: Path, attn: Attn) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text(billion_laughs(), encoding="utf-8")
    status, _, _ = attn("lesson", "run", str(path), "--plain")
    assert status == 1


def test_a_folder_without_lessons_is_a_usage_error(tmp_path: Path, attn: Attn) -> None:
    assert attn("lesson", "check", str(tmp_path)) == (
        2,
        "",
        f"attn: no lessons (.yaml) in {tmp_path}\n",
    )


def test_run_refuses_a_folder(tmp_path: Path, attn: Attn) -> None:
    assert attn("lesson", "run", str(tmp_path), "--plain") == (
        2,
        "",
        f"attn: {tmp_path} is a folder; give a lesson file (.yaml)\n",
    )
