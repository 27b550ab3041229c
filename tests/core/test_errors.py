"""Bad input never produces a traceback: one line on stderr naming the problem, exit status 2."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tracer.plugin_host import PluginHost

Attn = Callable[..., tuple[int, str, str]]

# (file name, contents, the exact line a user sees)
BAD_FILES = [
    (
        "malformed.yaml",
        "tokens: [a, b\nembeddings: []\n",
        "malformed.yaml:1:9: malformed YAML: the '[' opened here is never closed; end the list "
        "with ']' on this line",
    ),
    (
        "malformed.json",
        '{"tokens": ["a", "b"],\n "embeddings": [[1, 2], [3, 4]],\n}\n',
        "malformed.json:3:1: malformed JSON: Expecting property name enclosed in double quotes",
    ),
    (
        "ragged.yaml",
        "tokens: [a, b]\nembeddings:\n  - [1, 2]\n  - [3]\n",
        "ragged.yaml:4:5: embeddings row 2 has 1 value but row 1 has 2; "
        "every row must be the same length",
    ),
    (
        "text.yaml",
        "tokens: [a, b]\nembeddings:\n  - [1, 2]\n  - [3, x]\n",
        "text.yaml:4:9: embeddings[2][2] is 'x', not a number",
    ),
    (
        "nan.yaml",
        "tokens: [a, b]\nembeddings:\n  - [1, .nan]\n  - [3, 4]\n",
        "nan.yaml:3:9: embeddings[1][2] is .nan; values must be finite numbers",
    ),
    (
        "inf.json",
        '{"tokens": ["a", "b"],\n "embeddings": [[1, 2], [Infinity, 4]]}\n',
        "inf.json:2:26: embeddings[2][1] is Infinity; values must be finite numbers",
    ),
    (
        "huge.yaml",
        "tokens: [a]\nembeddings: [[1e999]]\n",
        "huge.yaml:2:15: embeddings[1][1] is not a finite number",
    ),
    (
        "quoted.yaml",
        "tokens: [a]\nembeddings: [['0.5']]\n",
        "quoted.yaml:2:15: embeddings[1][1] is '0.5', not a number",
    ),
    ("zero.yaml", "tokens: []\nembeddings: []\n", "zero.yaml:1:9: no tokens: give at least one"),
    (
        "count.yaml",
        "tokens: [a, b, c]\nembeddings:\n  - [1, 2]\n  - [3, 4]\n",
        "count.yaml:3:3: 3 tokens but 2 embedding rows; give one row per token",
    ),
    (
        "shapes.yaml",
        "tokens: [a, b]\nembeddings: [[1, 2], [3, 4]]\nweights:\n"
        "  query: [[1, 0], [0, 1]]\n  key: [[1, 0], [0, 1], [1, 1]]\n  value: [[1, 0], [0, 1]]\n",
        "shapes.yaml:5:8: weights.key has 3 rows but the embeddings have 2 columns; "
        "it must be d_in×d_out = 2×d_out",
    ),
    (
        "widths.yaml",
        "tokens: [a, b]\nembeddings: [[1, 2], [3, 4]]\nweights:\n"
        "  query: [[1, 0], [0, 1]]\n  key: [[1], [0]]\n  value: [[1, 0], [0, 1]]\n",
        "widths.yaml:5:8: weights.key has 1 columns but weights.query has 2; "
        "query, key and value share d_out",
    ),
    (
        "tag.yaml",
        'tokens: !!python/object/apply:os.system ["echo hacked"]\nembeddings: [[1]]\n',
        "tag.yaml:1:9: YAML tag !!python/object/apply:os.system is not allowed: "
        "these files never build Python objects",
    ),
    (
        "root.yaml",
        "- just\n- a list\n",
        "root.yaml:1:1: inputs must be a mapping with 'tokens' and 'embeddings'",
    ),
    (
        "typo.yaml",
        "tokens: [a]\nembedings: [[1]]\n",
        "typo.yaml:2:1: unknown key 'embedings' (did you mean 'embeddings'?); "
        "expected one of tokens, embeddings, weights, padding, description, source, params, text",
    ),
    ("empty.yaml", "", "empty.yaml:1:1: inputs file is empty; it needs 'tokens' and 'embeddings'"),
    (
        "binary.yaml",
        b"\x89PNG\r\n\x1a\n\x00\x00",
        "binary.yaml:1:1: this is a binary file, not YAML text",
    ),
]


@pytest.mark.parametrize(("name", "contents", "message"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_inputs_file(
    attn: Attn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    contents: str | bytes,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    data = contents if isinstance(contents, bytes) else contents.encode()
    Path(name).write_bytes(data)
    assert attn("trace", "trainable", "--inputs", name) == (2, "", message + "\n")
    assert Path(name).read_bytes() == data  # nothing the user wrote is touched


BAD_OPTIONS = [
    (["--inputs", "missing.yaml"], "attn: inputs file not found: missing.yaml"),
    (
        ["--inputs", "your-jorney"],
        "attn: unknown input set 'your-jorney' (did you mean 'your-journey'?); "
        "built-in sets: four-words, ton-voyage, your-journey; the variants' own: "
        "letters-text, repeated-letters, or give a .yaml/.json file",
    ),
    (["--d-out", "0"], "attn: --d-out must be at least 1, got 0"),
    (["--dropout", "1"], "attn: --dropout must be at least 0 and below 1, got 1"),
    (["--query", "9"], "attn: --query 9 is out of range: there are 6 tokens, numbered 0 to 5"),
    (
        ["--query", "jorney"],
        "attn: --query 'jorney' is not one of the tokens (did you mean 'journey'?)",
    ),
    (
        ["--init", "lineer"],
        "attn: unknown --init 'lineer' (did you mean 'linear'?); choose one of rand, randn, linear",
    ),
    (
        ["--d-out", "2", "--inputs", "four-words"],
        "attn: --d-out 2 disagrees with the weights of input set 'four-words', which have d_out = 3",
    ),
    (
        ["--d-out", "x"],
        "attn trace: error: argument --d-out: invalid int value: 'x' (see 'attn trace --help')",
    ),
]


@pytest.mark.parametrize(("argv", "message"), BAD_OPTIONS)
def test_bad_option(attn: Attn, argv: list[str], message: str) -> None:
    assert attn("trace", "trainable", *argv) == (2, "", message + "\n")


@pytest.mark.lists_variants
def test_unknown_variant_suggests(attn: Attn, host: PluginHost) -> None:
    known = ", ".join(sorted(host.variants))
    assert attn("trace", "trainabel") == (
        2,
        "",
        f"attn: unknown variant 'trainabel' (did you mean 'trainable'?); known variants: {known}\n",
    )


def test_no_traceback_from_a_real_process(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("tokens: [a]\nembeddings: [[nan]]\n")
    result = subprocess.run(
        [sys.executable, "-m", "tracer", "trace", "masked", "--inputs", str(bad)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr == f"{bad}:2:15: embeddings[1][1] is nan; values must be finite numbers\n"
    assert "Traceback" not in result.stderr


def test_variant_rejecting_its_options_prints_nothing_else(attn: Attn) -> None:
    assert attn("trace", "multihead", "--d-out", "3") == (
        2,
        "",
        "attn: --d-out 3 is not divisible by --heads 2: multihead splits d_out into 2 equal heads "
        "(try --d-out 2 or 4)\n",
    )


def test_a_warning_left_from_an_earlier_command_in_the_process_is_not_said_again(
    attn: Attn,
) -> None:
    # main() keeps warnings to say them after its command; one raised after a command ended
    # (in a notebook, a test) belongs to no command and is never a later one's.
    import warnings

    assert attn("--version")[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        from tracer.sanitize import keep_warnings

        keep_warnings()
        warnings.warn("left over from before", DeprecationWarning, stacklevel=1)
    status, _, err = attn("plugins")
    assert status == 0
    assert "left over" not in err
