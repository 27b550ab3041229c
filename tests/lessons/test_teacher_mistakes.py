"""A new teacher's mistakes, one small lesson each (tests/lessons/teacher_mistakes/), and what
``attn lesson check`` must say of each: exactly one line, at the line and column where the
mistake is written, in the teacher's words (lesson syntax in its suggestions, YAML errors in
words, never PyYAML's), and exit status 1.

Each expectation is the place in the file a teacher would point at, and a phrase that says
what to change: written from the lesson, not copied from the tool's output.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests import forked

MISTAKES = Path(__file__).parent / "teacher_mistakes"

# file name (no .yaml): (line:column of the mistake, what the one line must say)
EXPECTED: dict[str, tuple[str, str]] = {
    # Giveaways: a quiz a learner passes without working it out.
    "tolerance_accepts_a_guess": ("7:18", "accepts a guess, 0"),  # the value after tolerance:
    "choice_read_off_earlier_table": ("4:11", "warning: this table holds, whole, the row"),
    "question_states_number": ("5:17", "the quiz's question states its answer"),
    "hint_states_number": ("11:11", "the quiz's hint 2 states its answer"),
    "hint_names_right_choice": ("9:11", "names its right choice ('dividing by the sum')"),
    "explanation_answer_in_question": ("5:23", "{{answer}} in the question would give"),
    # Options: at the value written, said as a lesson writes it.
    "option_odd": ("7:47", "rope_dim 3 is odd"),
    "option_lesson_wide": ("4:13", "(try rope_dim: 4)"),
    "option_trace_value": ("7:34", "(try d_out: 2 or 4)"),
    "option_range": ("7:37", "kv_heads 2 does not divide heads 3"),
    "option_type": ("8:16", "heads must be a whole number, not text ('many')"),
    "option_name": ("7:17", "unknown key 'kv_head' in options (did you mean 'kv_heads'?)"),
    "seed_type": ("7:23", "seed must be a whole number"),
    "d_out_range": ("7:24", "d_out must be at least 1"),
    # Names: misspelt, with did-you-mean, at the name.
    "variant_typo": ("4:21", "(did you mean 'naive-loop'?)"),
    "stage_typo": ("4:40", "(did you mean 'weights'?)"),
    "tensor_typo": ("4:51", "(did you mean 'rotated_queries'?)"),
    "then_typo": ("4:56", "(did you mean 'softmax'?)"),
    "step_kind_typo": ("4:5", "(did you mean 'show'?)"),
    "inputs_unknown": ("4:56", "(did you mean 'your-journey'?)"),
    "value_unknown_stage": ("4:37", "(did you mean 'scores'?)"),
    "live_unknown": ("6:29", "unknown value 'scroe' in the narration (did you mean 'score'?)"),
    "caption_unknown_value": ("7:28", "unknown value 'best' in the caption"),
    # Cells, tokens and focuses: at the index.
    "cell_missing": ("6:68", "cell index 9 is out of range"),
    "cell_token_missing": ("6:68", "'dragon' is not one of the tokens"),
    "cell_arity": ("6:59", "cell has 1 index but 'scores' has 2 dimensions"),
    "cell_arity3": ("6:59", "cell has 3 indices but 'scores' has 2 dimensions"),
    "focus_token_missing": ("4:63", "'dragon' is not one of the tokens"),
    "focus_out_of_range": ("4:64", "focus column 7 is out of range"),
    "query_missing": ("4:55", "'dragon' is not one of the tokens"),
    # Quizzes.
    "choice_no_right": ("7:15", "answer 'division' is not one of the choices"),
    "choice_answer_index": ("7:15", "answer '3' is not one of the choices"),
    "choice_two_right": ("6:47", "choice 'dividing by the sum' appears twice"),
    "computed_choice_missing": ("7:15", "'journey', which is not one of the choices"),
    "cells_shape": ("7:15", "they must be the same shape"),
    "duplicate_quiz_id": ("9:11", "quiz id 'q' is already used by the quiz at line 4"),
    "quiz_no_answer": ("5:7", "'quiz' needs 'answer'"),
    "tolerance_choice": ("8:7", "tolerance is for number quizzes"),
    "tolerance_negative": ("7:18", "tolerance must not be negative"),
    "tolerance_text": ("7:18", "a percentage (1%), not text ('small')"),
    "then_arg_type": ("4:65", "must be a whole number, not text ('rows')"),
    "loop_stage_not_loop": ("4:40", "is not built by a loop; its loops: scores, context"),
    "empty_step": ("4:4", "step 1 must be a mapping"),
    "checkpoint_points_as_text": ("6:15", "write each point on its own '- ' line"),
    # Structure.
    "yaml_less_indented": ("7:5", "'tolerance' belongs inside 'quiz': indent it under 'quiz:'"),
    "yaml_hint_colon": ("8:11", "text that holds ': ' (a colon and a space) must be in quotes"),
    "yaml_hash": ("4:20", "YAML reads ' #' and what follows as a comment"),
    "yaml_dup_key": ("7:7", "duplicate key 'stage' (first defined at line 6, column 7)"),
    "yaml_dash_without_space": ("4:3", "needs a space after its '-' to be a step"),
    # YAML that does not parse, in words.
    "yaml_block_end": ("5:2", "indented less than the list above it (from line 4, at column 3)"),
    "yaml_entry_too_deep": ("7:5", "indented more than the list above it"),
    "yaml_entry_one_too_deep": ("7:4", "indent it to column 3"),
    "yaml_key_less_indented": ("6:6", "indented less than the keys above it"),
    "yaml_key_more_indented": ("6:8", "indented further than line 5, which already has its value"),
    "yaml_top_key_indented": ("2:3", "indent it like line 1 (column 1)"),
    "yaml_missing_dash": ("5:3", "start it with '- ' too"),
    "yaml_key_without_space": ("5:7", "no space after its ':'"),
    "yaml_expected_colon": ("6:7", "'stage scores' is neither 'key: value' nor a '- ' list entry"),
    "yaml_mapping_values": ("4:20", "a colon and a space inside unquoted text"),
    "yaml_tab": ("5:1", "a tab character; indent with spaces"),
    "yaml_tab_in_mapping": ("6:1", "a tab character; indent with spaces"),
    "yaml_unclosed_quote": ("4:16", 'the quote (") opened here is never closed'),
    "yaml_unclosed_single": ("4:16", "the quote (') opened here is never closed"),
    "yaml_backslash": ("4:23", "'\\p' in double quotes is no escape YAML knows"),
    "yaml_unclosed_flow": ("4:11", "the '{' opened here is never closed"),
    "yaml_mapping_never_closed": ("4:11", "end the mapping with '}'"),
    "yaml_unclosed_list": ("6:16", "the '[' opened here is never closed"),
    "yaml_list_never_closed": ("4:16", "end the list with ']'"),
    "yaml_steps_never_closed": ("3:8", "the '[' opened here is never closed"),
    "yaml_extra_brace": ("4:47", "this '}' closes nothing"),
    "yaml_braces_in_list": ("7:26", "a live value {{...}} inside [...] or {...} must be in quotes"),
    "live_unknown_in_hint": ("7:26", "put the whole item in quotes"),
    "yaml_text_after_quote": ("4:25", "text goes on after a quoted part"),
    "yaml_apostrophe_in_single_quotes": ("5:20", "write '' for an apostrophe"),
    "yaml_text_after_quoted_item": ("6:21", "put the whole item in quotes"),
    "yaml_pipe_then_text": ("4:16", "text that starts with | or > must be in quotes"),
    "yaml_starts_with_gt": ("5:16", "text that starts with | or > must be in quotes"),
    "yaml_question_mark": ("4:16", "text that starts with '? ' must be in quotes"),
    "yaml_dash_after_key": ("5:15", "a '- ' list entry cannot follow a key on its line"),
    "yaml_asterisk": ("4:16", "text that starts with '*' must be in quotes"),
    "yaml_ampersand": ("4:16", "put text that starts with '&' in quotes"),
    "yaml_exclamation": ("4:16", "put text that starts with '!' in quotes"),
    "yaml_second_document": ("5:1", "'---' starts another YAML document"),
    "yaml_percent": ("5:1", "'%YAML 1.1' starts another YAML document"),
    "yaml_comment_ends_text": ("6:3", "this comment, less indented than the text around it"),
    "yaml_stray_bracket_line": ("5:1", "this ']' closes nothing"),
    "yaml_entry_among_keys": ("5:1", "a '- ' list entry where the lines around it are keys"),
    "yaml_first_key_indented": ("2:1", "start every top-level key at column 1"),
    "yaml_colon_in_flow_item": ("4:61", "a colon inside an item of a [...] or {...}"),
    "yaml_caption_without_space": ("7:7", "put a space after 'caption:'"),
    "yaml_second_step_without_space": ("5:3", "write '- show:'"),
}

WARNED = {"choice_read_off_earlier_table"}
"""Mistakes the walk mends (it draws the deciding row "?" until the quiz is answered): a
warning at their place, and the lesson runs."""

PYYAML_WORDS = (
    "<block end>",
    "<stream end>",
    "<scalar>",
    "block mapping",
    "flow mapping",
    "flow sequence",
    "simple key",
    "could not find expected",
    "cannot start any token",
    "mapping values are not allowed",
)
"""PyYAML's terms, which a teacher does not read."""
COMMAND_LINE = re.compile(r"(?<![\w-])(-o [a-z_]+=|--[a-z])")
"""The command line's spellings (-o rope_dim=4, --d-out), where a lesson writes options."""


def test_every_file_of_the_corpus_has_an_expectation() -> None:
    assert sorted(path.stem for path in MISTAKES.glob("*.yaml")) == sorted(EXPECTED)
    assert len(EXPECTED) >= 60


@pytest.fixture(scope="module")
def checked() -> tuple[int, str, dict[str, list[str]]]:
    """One ``attn lesson check`` of the whole folder: its status, stderr, and each file's lines."""
    result = forked.run_attn("lesson", "check", str(MISTAKES))
    lines: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        path, _, rest = line.partition(".yaml:")
        lines.setdefault(Path(path).name, []).append(rest)
    return result.returncode, result.stderr, lines


def test_the_folder_is_refused_without_a_traceback(
    checked: tuple[int, str, dict[str, list[str]]],
) -> None:
    status, stderr, _ = checked
    assert (status, stderr) == (1, "")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_mistake_is_one_line_at_its_place(
    name: str, checked: tuple[int, str, dict[str, list[str]]]
) -> None:
    place, phrase = EXPECTED[name]
    lines = checked[2][name]
    if name in WARNED:  # mended by the walk, which hides it: said, and the lesson runs
        assert len(lines) == 2 and lines[1].startswith(" ok (")
        lines = lines[:1]
    (line,) = lines  # exactly one line: no "ok", no second report of one mistake
    assert line.startswith(f"{place}: ")
    assert phrase in line
    assert ("warning:" in line) == (name in WARNED)  # else refused until it is fixed
    said = line.removeprefix(f"{place}: ")
    assert not [word for word in PYYAML_WORDS if word in said]
    assert COMMAND_LINE.search(said) is None


@pytest.mark.parametrize(
    "name", ["yaml_block_end", "option_trace_value", "tolerance_accepts_a_guess"]
)
def test_one_file_alone_exits_1(name: str) -> None:
    """A YAML error, a structure problem and a problem only a run finds: status 1 each."""
    result = forked.run_attn("lesson", "check", str(MISTAKES / f"{name}.yaml"))
    assert (result.returncode, result.stderr) == (1, "")
    assert len(result.stdout.splitlines()) == 1


@pytest.mark.parametrize("name", ["hint_names_right_choice", "tolerance_accepts_a_guess"])
def test_a_problem_the_check_learnt_later_does_not_refuse_a_lesson_that_opened(name: str) -> None:
    """Lessons written before the check knew these still open (compatibility): `lesson check`
    exits 1 for them, `run --plain` takes the lesson as it did."""
    path = str(MISTAKES / f"{name}.yaml")
    assert forked.run_attn("lesson", "check", path).returncode == 1
    taken = forked.run_attn("lesson", "run", path, "--plain")
    assert (taken.returncode, taken.stderr) == (0, "")
    assert "Quiz:" in taken.stdout


NOT_MISTAKES = {
    # A hint that weighs the choices, or names one the question names already, points at none.
    "hint_weighs_both": (
        "  - quiz:\n"
        "      question: Which normalisation can give a negative weight?\n"
        "      choices: [dividing by the sum, softmax]\n"
        "      answer: dividing by the sum\n"
        "      hints:\n"
        "        - Try a negative score with softmax, then with dividing by the sum.\n"
    ),
    "hint_names_the_questions_token": (
        "  - quiz:\n"
        "      question: Which key weighs most for journey, journey or Your?\n"
        "      choices: [Your, journey]\n"
        "      answer: {variant: naive-loop, stage: weights, then: [{pick: journey}, argmax]}\n"
        "      hints: [Look at the row of journey.]\n"
    ),
    # The row shown after the quiz, and a tolerance tighter than any guess.
    "row_after_the_quiz": (
        "  - quiz:\n"
        "      question: Which key weighs most for journey?\n"
        "      choices: [Your, journey, starts, with]\n"
        "      answer: {variant: naive-loop, stage: weights, then: [{pick: journey}, argmax]}\n"
        "  - show: {variant: naive-loop, stage: weights}\n"
    ),
    "tight_tolerance": (
        "  - quiz:\n"
        "      question: What is the score of journey with Your?\n"
        "      answer: {variant: naive-loop, stage: scores, cell: [journey, Your]}\n"
        "      tolerance: 0.005\n"
    ),
}


def test_what_is_not_a_mistake_checks_clean(tmp_path: Path) -> None:
    for name, steps in NOT_MISTAKES.items():
        (tmp_path / f"{name}.yaml").write_text(
            "title: T\nsummary: S\nsteps:\n" + steps, encoding="utf-8"
        )
    result = forked.run_attn("lesson", "check", str(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")
    said = sorted(line.replace(f"{tmp_path}/", "") for line in result.stdout.splitlines())
    assert said == sorted(
        f"{name}.yaml: ok ({steps})"
        for name, steps in [
            ("hint_weighs_both", "1 step"),
            ("hint_names_the_questions_token", "1 step"),
            ("row_after_the_quiz", "2 steps"),
            ("tight_tolerance", "1 step"),
        ]
    )


SLIPS = ('"', "'", "[", "{", "]", "}", ":", "\t", "#", "- ", "*", "&", "!", "|", ">", "%", "@", "`")


def _slip(text: str, rng: random.Random) -> str:
    """One typing slip in ``text``: a line indented one more or one less, a colon or its space
    lost, a character YAML reads as syntax typed in, a tab, a stray line."""
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    line = lines[at]
    slip = rng.randrange(6)
    if slip == 0:
        lines[at] = line[1:] if line.startswith(" ") else " " + line
    elif slip == 1 and ": " in line:
        lines[at] = line.replace(": ", rng.choice([":", " "]), 1)
    elif slip == 2 and line:
        where = rng.randrange(len(line))
        lines[at] = line[:where] + rng.choice(SLIPS) + line[where:]
    elif slip == 3:
        lines[at] = line.replace("  ", "\t", 1)
    elif slip == 4 and ": " in line:
        lines[at] = line.replace(": ", ": Note: ", 1)
    else:
        lines.insert(at, "  " * rng.randrange(4) + rng.choice(["- x", "x: y", "x", "]", "---"]))
    return "\n".join(lines)


def test_a_slip_in_a_shipped_lesson_is_said_in_words_at_a_place_in_the_file() -> None:
    """Hundreds of typing slips in the shipped lessons' YAML: each that breaks it is one line,
    inside the file, in words (none of PyYAML's terms)."""
    from tracer.yamldoc import DocumentError, compose

    shipped = sorted((Path(__file__).parents[2] / "lessons").glob("*.yaml"))
    texts = [path.read_text(encoding="utf-8") for path in shipped]
    rng = random.Random(43)
    broken = 0
    for _ in range(600):
        text = _slip(rng.choice(texts), rng)
        try:
            compose(text, "lesson.yaml")
        except DocumentError as error:
            broken += 1
            for problem in error.problems:
                assert "\n" not in problem.message
                assert 1 <= problem.line <= text.count("\n") + 2, problem
                assert problem.column >= 1, problem
                terms = (*PYYAML_WORDS, "while ", "but found", "but got")
                assert not [term for term in terms if term in problem.message], problem
    assert broken > 200  # the slips did break the YAML, mostly
