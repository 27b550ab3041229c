"""Grading any text a learner can type: it never raises, never quotes more than a line,
and reads digits as ASCII 0-9 only (the app's answer box and ``--plain -i`` alike)."""

from __future__ import annotations

import pytest

from tracer.lessons.grading import (
    ECHO_CHARS,
    MAX_INDEX_DIGITS,
    MAX_NUMBER_CHARS,
    MAX_RESPONSE,
    CellAnswer,
    Grade,
    echo,
    grade,
    parse_cells,
    parse_choice,
    parse_number,
)
from tracer.lessons.model import Quiz

NUMBER = Quiz("q", "number", 0.0, tolerance=0.5)
CHOICE = Quiz("q", "choice", 1, choices=("Your", "journey", "x²"))
MULTIPLE = Quiz("q", "multiple", (0, 2), choices=("Your", "journey", "starts"))
CELLS = Quiz("q", "cells", 0.0)
TOKENS = ("the", "cat", "saw", "the", "dog")
LABELS = ("the@0", "cat", "saw", "the@3", "dog")
ANSWER = CellAnswer(frozenset({(3, 1)}), (5, 5), (LABELS, LABELS))

HOSTILE = [
    "²",
    "①",
    "٣",  # an Arabic-Indic three: a digit to Python's int(), not to a learner's quiz
    "３",  # a full-width three
    "1" * 5000,
    "9" * 4301 + ",0",
    "-" + "9" * 5000,
    "1e99999",
    "\x00",
    "\x1b[A",
    "a" * 1_000_000,
    "0,0; " * 200_000,
    "\ud800",  # a lone surrogate, as a terminal's surrogateescape gives undecodable bytes
    " , ; ,,, ;;",
    "the@",
    "@3",
    "the@99999999999999999999",
]
ANSWERS: list[tuple[Quiz, object]] = [
    (NUMBER, 2.0),
    (CHOICE, 1),
    (MULTIPLE, (0, 2)),
    (CELLS, ANSWER),
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize(("quiz", "answer"), ANSWERS, ids=["number", "choice", "multiple", "cells"])
def test_no_typed_text_makes_grading_raise(quiz: Quiz, answer: object, text: str) -> None:
    result = grade(quiz, answer, text)  # type: ignore[arg-type]
    assert result.right in (None, False)
    assert len(result.message) <= 200  # a line, whatever was typed
    assert "\n" not in result.message


@pytest.mark.parametrize("digit", ["²", "①", "٣", "３"])
def test_digits_other_than_ascii_are_said_not_read(digit: str) -> None:
    # int("٣") is 3 and int("²") raises: neither happens; the learner is told in one line.
    for quiz, answer in ((NUMBER, 2.0), (CHOICE, 1), (MULTIPLE, (0, 2))):
        result = grade(quiz, answer, digit)  # type: ignore[arg-type]
        assert result.right is None
        assert result.message == f"'{digit}' is not a digit 0-9; type digits 0-9 only"
    assert parse_choice(CHOICE.choices, digit) is None
    found = parse_cells(f"{digit},1", ANSWER)
    assert found == f"'{digit}' is not a digit 0-9; type digits 0-9 only"


def test_a_choice_whose_text_holds_such_a_digit_is_still_chosen_by_its_text() -> None:
    assert grade(CHOICE, 2, "x²").right is True


def test_a_number_with_thousands_of_digits_is_no_answer_not_a_crash() -> None:
    result = grade(NUMBER, 2.0, "1" * 5000)  # Python's int() says "Exceeds the limit"
    assert result == Grade(None, "an answer has at most 4,096 characters; this one has 5,000")
    result = grade(NUMBER, 2.0, "1" * 4000)
    assert result.right is None
    assert result.message == (
        f"a number has at most {MAX_NUMBER_CHARS} characters; '{echo('1' * 4000)}' has more"
    )
    assert parse_number("1" * (MAX_NUMBER_CHARS + 1)) is None
    assert parse_number("1" * MAX_NUMBER_CHARS) == float("1" * MAX_NUMBER_CHARS)


def test_an_index_of_thousands_of_digits_is_out_of_range() -> None:
    assert (
        parse_cells("9" * 5000 + ",1", ANSWER)
        == f"'{echo('9' * 5000)}' is out of range: there are 5 (0 to 4)"
    )
    assert parse_choice(CHOICE.choices, "1" * (MAX_INDEX_DIGITS + 1)) is None
    assert grade(CHOICE, 1, "0" * MAX_INDEX_DIGITS + "2").right is True  # 10 digits, still 2


def test_messages_quote_at_most_a_short_cut_of_the_response() -> None:
    long = "z" * 1_000_000
    result = grade(NUMBER, 2.0, long)
    assert (
        result.message
        == f"an answer has at most {MAX_RESPONSE:,} characters; this one has 1,000,000"
    )
    result = grade(NUMBER, 2.0, "z" * 100)
    assert (
        result.message
        == f"'{'z' * (ECHO_CHARS - 3)}...' is not a number; type digits, with a decimal point or comma"
    )
    many = "0,0; " * 200_000  # 800 KB of cells
    assert grade(CELLS, ANSWER, many).right is None


def test_a_bare_token_that_occurs_twice_asks_which() -> None:
    # The table labels the two "the" the@0 and the@3; a bare "the" is never the first silently.
    assert parse_cells("the@3,cat", ANSWER) == frozenset({(3, 1)})
    assert (
        parse_cells("the,cat", ANSWER)
        == "'the' occurs more than once; type which, as the table labels it: the@0, the@3"
    )
    assert grade(CELLS, ANSWER, "the,cat").right is None
    assert grade(CELLS, ANSWER, "3,1").right is True
    assert parse_cells("dog,cat", ANSWER) == frozenset({(4, 1)})  # a token once: bare as ever


def test_a_number_beyond_floats_says_so() -> None:
    assert grade(NUMBER, 2.0, "1e999") == Grade(
        None, "'1e999' is too large a number; a quiz's answers are below 1e308"
    )
    assert grade(NUMBER, 2.0, "-1e400").right is None
