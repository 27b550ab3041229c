"""What a shipped lesson says about its numbers is checked against the numbers.

A caption that says "exactly", "the same", "adds up to 1" or "nan" is a claim
about what the variants compute, and a teaching tool must not claim more than
the computation shows. Every such phrase in the shipped lessons' prose is found
by ``CLAIM_WORDS`` and must be listed in ``CLAIMS`` with the check that backs it
(or, for a phrase about code or maths rather than a computed table, the reason
it needs none). A new lesson that makes a claim fails here until its claim is
checked, so "equal" can never again stand where only "equal up to rounding" is
true.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cache
from itertools import pairwise

import pytest
import torch

from tracer.lessons.lesson_runner import LessonRunner
from tracer.lessons.loader import load_lesson, shipped_dir
from tracer.lessons.model import Lesson, LessonStep, TensorRef
from tracer.plugin_host import PluginHost

# Phrases that state a fact about computed numbers.
CLAIM_WORDS = re.compile(
    r"\b(exact(ly)?|identical|bit for bit|zero everywhere|nan|adds? up to (1|less than 1)"
    r"|sums? to 1|the same (numbers|weights|context vectors|output|scores|gradients)"
    r"|(?<!nearly )(?<!almost )equals?|(is|are) the same)\b",
    re.IGNORECASE,
)
# float32 rounding: what "up to rounding" allows (a few units in the last place of values near 1).
ROUNDING = 1e-6


@dataclass
class Runs:
    """One lesson, its runner, and the step whose prose makes the claim being checked."""

    lesson: Lesson
    runner: LessonRunner
    step: LessonStep

    def table(self, index: int = 0) -> torch.Tensor:
        """The step's own table number ``index`` (a compare step: 0 left, 1 right)."""
        return self.tensor(self.step.tables()[index])

    def tensor(self, ref: TensorRef) -> torch.Tensor:
        return self.runner.tensor(ref).tensor.double()

    def value(self, name: str) -> float:
        named = self.lesson.value(name)
        assert named is not None, f"{self.lesson.name} has no value '{name}'"
        return self.runner.value(named.ref)

    def answer(self) -> float:
        """The step's computed number answer, exactly as the runner computes it."""
        answer = getattr(self.step, "answer", None)
        assert isinstance(answer, TensorRef), "the step is not a computed quiz"
        return self.runner.value(answer)

    def other(self, says: str) -> Runs:
        """The same lesson at the step whose prose contains ``says``."""
        return Runs(self.lesson, self.runner, step_saying(self.lesson, says))


Check = Callable[[Runs], None]


def rows_sum_to_one(table: Callable[[Runs], torch.Tensor]) -> Check:
    def check(runs: Runs) -> None:
        sums = table(runs).sum(dim=-1)
        assert torch.allclose(sums, torch.ones_like(sums), atol=ROUNDING), sums

    return check


def within_rounding(*names: str) -> Check:
    """Each named value (a largest absolute difference) is no more than rounding."""

    def check(runs: Runs) -> None:
        for name in names:
            gap = runs.value(name)
            assert 0 <= gap <= ROUNDING, (name, gap)

    return check


def step_tables_within_rounding(runs: Runs) -> None:
    left, right = runs.table(0), runs.table(1)
    assert left.shape == right.shape
    assert (right - left).abs().max().item() <= ROUNDING


def assert_close_to_one(value: float) -> None:
    assert abs(value - 1) <= ROUNDING, value


def bit_exact_one(runs: Runs) -> None:
    assert runs.answer() == 1.0


def induction_stripe(runs: Runs) -> None:
    """Layer 1, head 0: from position 10 on, more than half of each row's weight, and its
    largest, is on the key nine places left of the diagonal (not merely "nearly all")."""
    table = runs.other("Layer 1, head 0. From position 10 on").table(0)
    for row in range(10, table.shape[0]):
        assert table[row, row - 9] > 0.5, (row, table[row])
        assert int(table[row].argmax()) == row - 9, (row, table[row])


def future_is_exact_zero(weights: Callable[[Runs], torch.Tensor]) -> Check:
    def check(runs: Runs) -> None:
        table = weights(runs)
        future = torch.ones_like(table, dtype=torch.bool).triu(diagonal=1)
        assert (table[future] == 0).all()

    return check


def weights_table(variant: str, tensor: str | None = "weights") -> Callable[[Runs], torch.Tensor]:
    """A variant's weights under the lesson's options (prose that names no table)."""

    def table(runs: Runs) -> torch.Tensor:
        return runs.tensor(TensorRef(variant, "weights", tensor, options=runs.lesson.options))

    return table


def shown(runs: Runs) -> torch.Tensor:
    return runs.table(0)


def shown_at(says: str) -> Callable[[Runs], torch.Tensor]:
    """The first table of the step whose prose contains ``says``."""
    return lambda runs: runs.other(says).table(0)


def all_of(*checks: Check) -> Check:
    def check(runs: Runs) -> None:
        for each in checks:
            each(runs)

    return check


def all_exactly_one(table: Callable[[Runs], torch.Tensor]) -> Check:
    def check(runs: Runs) -> None:
        values = table(runs)
        assert (values == 1.0).all(), values

    return check


def all_finite(table: Callable[[Runs], torch.Tensor]) -> Check:
    def check(runs: Runs) -> None:
        values = table(runs)
        assert values.isfinite().all(), values

    return check


def softmax_gains(runs: Runs) -> None:
    """journey and starts gain, Your, with and step lose, and one gains a little."""
    divided, softmax = runs.table(0), runs.table(1)
    tokens = runs.lesson.inputs.tokens
    gain = dict(zip(tokens, (softmax - divided).tolist(), strict=True))
    assert all(gain[token] > 0 for token in ("journey", "starts", "one")), gain
    assert all(gain[token] < 0 for token in ("Your", "with", "step")), gain
    scores = {token: runs.value(f"score-{token}") for token in tokens}
    nearest_one = sorted(tokens, key=lambda token: abs(scores[token] - 1))[:3]
    assert sorted(nearest_one) == sorted(["Your", "with", "step"]), scores
    assert min(scores, key=scores.__getitem__) == "one"


def short_but_last(sums: Callable[[Runs], torch.Tensor]) -> Check:
    """Every row sum is short of 1 but the last, which has no future to lose."""

    def check(runs: Runs) -> None:
        values = sums(runs)
        assert (values[:-1] < 1 - ROUNDING).all(), values
        assert abs(values[-1].item() - 1) <= ROUNDING, values

    return check


def one_or_two_keys(runs: Runs) -> None:
    """Without the scale, the two largest weights of every row hold nearly all of it."""
    unscaled = runs.other("Without the scale the weights are closer")
    top_two = unscaled.table(0).topk(2, dim=-1).values.sum(dim=-1)
    assert (top_two >= 0.98).all(), top_two


def wrong_axis_rows_and_columns(runs: Runs) -> None:
    wrong = runs.other("The wrong version normalises down each column").table(0)
    rows, columns = wrong.sum(dim=-1), wrong.sum(dim=0)
    assert not torch.allclose(rows, torch.ones_like(rows), atol=1e-3), rows
    assert torch.allclose(columns, torch.ones_like(columns), atol=ROUNDING), columns


def overflow_gives_nan_and_zero(runs: Runs) -> None:
    """Where exp overflowed the weight is nan; the rest of such a row is 0; other rows are finite."""
    ref = runs.step.tables()[0]
    overflowed = runs.tensor(
        TensorRef(ref.variant, ref.stage, ref.tensor, ref.query, ref.options, ref.then[:2])
    ).isinf()
    shown = runs.table(0)
    assert overflowed.any(), "the lesson's scores no longer overflow"
    for row_inf, row in zip(overflowed, shown, strict=True):
        if row_inf.any():
            assert row[row_inf].isnan().all() and (row[~row_inf] == 0).all(), row
        else:
            assert not row.isnan().any(), row


def outside_window_is_exact_zero(runs: Runs) -> None:
    tokens = runs.lesson.inputs.tokens
    step_row = runs.table(0)[tokens.index("step")]
    for token in ("Your", "journey", "starts"):
        assert step_row[tokens.index(token)].item() == 0.0


def every_key_outside_the_window_is_exact_zero(runs: Runs) -> None:
    """Every query's weights, not only those of "step": 0 on each key before its window of 3
    (the variant's default) and on each later key."""
    table = runs.table(0)
    for query in range(table.shape[0]):
        for key in range(table.shape[1]):
            if key <= query - 3 or key > query:
                assert table[query, key].item() == 0.0, (query, key)


def zero_up_to_rounding(runs: Runs) -> None:
    assert abs(runs.answer()) <= ROUNDING


def causal_backward_weights(runs: Runs) -> torch.Tensor:
    """backward's weights under the options of the lesson's causal dS quiz."""
    quiz = runs.other("which cells of dS are exactly zero").step
    answer = getattr(quiz, "answer", None)
    assert isinstance(answer, TensorRef)
    return runs.tensor(replace(answer, stage="weights", tensor=None, then=(), cell=None))


def columns_bit_equal(runs: Runs) -> None:
    """Every column of the step's table holds the same bits as the first."""
    table = runs.table(0)
    assert (table == table[..., :1]).all(), table


def rows_bit_equal(runs: Runs) -> None:
    """Every row of the step's table holds the same bits as the first."""
    table = runs.table(0)
    assert (table == table[..., :1, :]).all(), table


def one_mask_for_every_head(runs: Runs) -> None:
    """Each head's masked scores are -inf in the same cells, and only above the diagonal."""
    table = runs.table(0)  # heads × queries × keys
    masked = table.isinf()
    assert (masked == masked[:1]).all()
    future = torch.ones(table.shape[-2:], dtype=torch.bool).triu(diagonal=1)
    assert (masked[0] == future).all()


def bit_exact_zero(name: str) -> Check:
    def check(runs: Runs) -> None:
        assert runs.value(name) == 0.0, runs.value(name)

    return check


def copies_scores(runs: Runs) -> tuple[torch.Tensor, torch.Tensor]:
    """The rotary lesson's six copies of one embedding: the scores before and after rotating."""
    rotated = runs.other("The scores of the six copies").table(0)
    ref = runs.other("The scores of the six copies").step.tables()[0]
    queries = runs.tensor(TensorRef("rope", "queries", options=ref.options))
    keys = runs.tensor(TensorRef("rope", "keys", options=ref.options))
    return queries @ keys.T, rotated


def unrotated_copies_score_alike(runs: Runs) -> None:
    plain, _rotated = copies_scores(runs)
    assert (plain == plain[0, 0]).all(), plain


def same_distance_same_score(runs: Runs) -> None:
    """p4 with p1 and p3 with p0 (three back) score the same; p1 with p4 does not."""
    _plain, rotated = copies_scores(runs)
    assert abs(rotated[4, 1] - rotated[3, 0]) <= ROUNDING
    assert abs(rotated[4, 1] - rotated[1, 4]) > 1e-3


def ntk_keeps_only_the_fastest(runs: Runs) -> None:
    """Pair 0's speed is untouched; each later pair is slowed more, the last by 4 (numpy-free:
    θᵢ = base^(−2i/d) with base 10000 and 10000 · 4^(8/6), d = 8)."""
    plain, ntk = runs.table(0), runs.table(1)
    expected = [(10000 * 4 ** (8 / 6)) ** (-2 * i / 8) / 10000 ** (-2 * i / 8) for i in range(4)]
    ratios = (ntk / plain).tolist()
    assert ntk[0] == plain[0]
    assert ratios == pytest.approx(expected, rel=1e-5)
    assert all(later < earlier for earlier, later in pairwise(ratios))
    assert ratios[-1] == pytest.approx(0.25, rel=1e-5)


def conceptual(reason: str) -> str:
    return reason


@dataclass(frozen=True)
class Claim:
    lesson: str
    says: str
    """Words of the prose that makes the claim (unique within the lesson)."""
    check: Check | str
    """The check, or why the phrase is not a claim about computed numbers."""


CLAIMS = (
    Claim(
        "01_dot_products",
        "exactly as a plain Python loop would",
        conceptual("describes how the naive-loop variant is written, not a number"),
    ),
    Claim(
        "02_normalising",
        "weights that sum to 1, first by",
        rows_sum_to_one(weights_table("naive-loop")),
    ),
    Claim(
        "02_normalising",
        "normalised so that they add up to 1",
        conceptual("says what normalising is for; the next quiz checks the sum"),
    ),
    Claim(
        "02_normalising",
        "1, up to float rounding, which is the whole point",
        lambda runs: assert_close_to_one(runs.answer()),
    ),
    Claim(
        "02_normalising",
        "it gives weights that add up to 1",
        conceptual("a property of softmax's formula, shown on the next step's table"),
    ),
    Claim(
        "02_normalising", "(each row adds up to 1)", rows_sum_to_one(weights_table("naive-loop"))
    ),
    Claim(
        "02_normalising",
        "scores normalised to add up to 1",
        conceptual("a summary of the definition"),
    ),
    Claim("02_normalising", "It is not a ranking", softmax_gains),
    Claim(
        "03_vectorising",
        "gives the same numbers, up to float rounding",
        within_rounding("scores-gap", "context-gap"),
    ),
    Claim(
        "03_vectorising",
        "The largest difference is {{scores-gap:.2g}}",
        within_rounding("scores-gap"),
    ),
    Claim(
        "03_vectorising",
        "Again the same numbers, to within rounding",
        within_rounding("context-gap"),
    ),
    Claim(
        "03_vectorising",
        "the numbers of the loops, up to float rounding",
        within_rounding("scores-gap", "context-gap"),
    ),
    Claim(
        "05_causal_masking",
        "the visible weights add up to 1 again",
        rows_sum_to_one(shown_at("splits its attention")),
    ),
    Claim(
        "05_causal_masking",
        "Every row but the last now",
        short_but_last(lambda runs: runs.table(0).sum(dim=-1)),
    ),
    Claim(
        "05_causal_masking",
        "gives those keys exactly",
        future_is_exact_zero(weights_table("masked")),
    ),
    Claim(
        "05_causal_masking",
        "Every row adds up to 1 and the future gets 0",
        all_of(rows_sum_to_one(shown), future_is_exact_zero(shown)),
    ),
    Claim(
        "05_causal_masking",
        "The two routes agree up to float rounding",
        within_rounding("routes-gap"),
    ),
    Claim(
        "05_causal_masking",
        "Why do the two routes give the same weights, up to rounding?",
        within_rounding("routes-gap"),
    ),
    Claim(
        "05_causal_masking", "give the same weights, up to rounding", within_rounding("routes-gap")
    ),
    Claim(
        "06_common_mistakes",
        "the rows of the wrong weights do not add up to 1",
        wrong_axis_rows_and_columns,
    ),
    Claim(
        "06_common_mistakes",
        "every row except the last adds up to less than 1",
        short_but_last(shown_at("Symptom: the row sums of the zeroed weights")),
    ),
    Claim(
        "06_common_mistakes",
        "nearly all of each row's weight lands on one or two keys",
        one_or_two_keys,
    ),
    Claim(
        "06_common_mistakes",
        "still gives weights that add up to 1",
        rows_sum_to_one(shown_at("Without the scale the weights are closer")),
    ),
    Claim(
        "06_common_mistakes",
        "a weight of exactly 1, for any weights",
        all_exactly_one(lambda runs: runs.runner.tensor(runs.step.tables()[0]).tensor),
    ),
    Claim("06_common_mistakes", "Exactly 1: the softmax of a single number", bit_exact_one),
    Claim(
        "06_common_mistakes",
        "Every row of your weights adds up to 1, but",
        conceptual("a hypothetical learner's symptom, in a question"),
    ),
    Claim(
        "06_common_mistakes",
        "Every row of attention weights adds up to 1 (softmax",
        conceptual("a summary of the rule the lesson's tables showed"),
    ),
    Claim(
        "06_common_mistakes",
        "A weight of exactly 1 from a softmax",
        conceptual("a summary of the single-score softmax checked above"),
    ),
    Claim(
        "13_induction_heads",
        "each row puts most of its weight on a stripe parallel to the diagonal",
        induction_stripe,
    ),
    Claim(
        "13_induction_heads",
        "On the repeat most of each row's weight sits on the position of the next letter",
        induction_stripe,
    ),
    Claim(
        "08_windows_and_groups",
        "the keys outside it get exactly zero",
        all_of(outside_window_is_exact_zero, every_key_outside_the_window_is_exact_zero),
    ),
    Claim(
        "09_kv_cache",
        "gives the same numbers as causal",
        within_rounding("cache-weights-gap", "cache-context-gap"),
    ),
    Claim(
        "09_kv_cache",
        "The same weights, up to float rounding",
        within_rounding("cache-weights-gap"),
    ),
    Claim(
        "09_kv_cache",
        "And the same context vectors, up to float rounding",
        within_rounding("cache-context-gap"),
    ),
    Claim(
        "10_online_softmax",
        "Written exactly that way",
        conceptual("describes the code, not a number"),
    ),
    Claim("10_online_softmax", "those entries came out as nan", overflow_gives_nan_and_zero),
    Claim("10_online_softmax", "torch.softmax on the same scores works", all_finite(shown)),
    Claim(
        "10_online_softmax", "The same context vectors, up to rounding", step_tables_within_rounding
    ),
    Claim(
        "11_training",
        "does exactly this",
        conceptual("describes what the training variant's code does"),
    ),
    Claim("12_cross_attention", "Each row sums to 1: a", rows_sum_to_one(shown)),
    Claim(
        "12_cross_attention",
        "of weights is spread over the source's tokens and sums to 1.",
        rows_sum_to_one(shown_at("Each row sums to 1: a")),
    ),
    Claim(
        "14_backward",
        "because they must sum to 1",
        rows_sum_to_one(weights_table("backward", tensor=None)),
    ),
    Claim("14_backward", "zero up to rounding: Σ_j p_j dp_j is D", zero_up_to_rounding),
    Claim(
        "14_backward",
        "their weights are exactly 0",
        future_is_exact_zero(causal_backward_weights),
    ),
    Claim(
        "14_backward",
        "which cells of dS are exactly zero",
        conceptual("the question of a cells quiz; its answer is computed with '== 0'"),
    ),
    Claim(
        "07_multi_head",
        "The causal mask is the same for every head.",
        one_mask_for_every_head,
    ),
    Claim(
        "07_multi_head",
        "The causal mask and the softmax are the same for every head.",
        conceptual("a summary of the masked-scores step, whose claim is checked above"),
    ),
    Claim(
        "10_online_softmax",
        "the weights it gives are still the softmax of the scores",
        conceptual("an identity of the formula, said as one; the table shows the result"),
    ),
    Claim("14_backward", "its two columns are equal", columns_bit_equal),
    Claim("14_backward", "With dO = 1 every row is the same.", rows_bit_equal),
    Claim(
        "15_flash_backward",
        "Lesson 14 showed it equals rowsum(dO ∘ O)",
        conceptual("an identity of the algebra; lesson 14 checks it up to rounding"),
    ),
    Claim(
        "15_flash_backward",
        "their difference: equal up to rounding",
        step_tables_within_rounding,
    ),
    Claim(
        "15_flash_backward",
        "The gradients equal the naive backward's up to float rounding",
        lambda runs: step_tables_within_rounding(
            runs.other("their difference: equal up to rounding")
        ),
    ),
    Claim("16_rotary", "all 36 scores would be equal", unrotated_copies_score_alike),
    Claim("16_rotary", "for key p1 is equal to which of these?", same_distance_same_score),
    Claim(
        "16_rotary",
        "NTK-aware scaling leaves pair 0, the fastest, exactly",
        ntk_keeps_only_the_fastest,
    ),
    Claim(
        "16_rotary",
        "is the same distance the other way",
        conceptual("a distance between positions, not a computed number"),
    ),
    Claim(
        "16_rotary",
        "unless the query and the key are the same vector",
        conceptual("a condition on the vectors, not a computed number"),
    ),
    Claim(
        "17_latent_attention",
        "equal up to float32 rounding",
        within_rounding("absorb-gap"),
    ),
    Claim(
        "18_paged_cache",
        "only from other places in memory: the largest difference is",
        bit_exact_zero("paged-gap"),
    ),
)


@cache
def host() -> PluginHost:
    return PluginHost()


@cache
def lesson_runs(name: str) -> tuple[Lesson, LessonRunner]:
    lesson = load_lesson(shipped_dir() / f"{name}.yaml", host())
    return lesson, LessonRunner(lesson, host())


def prose(lesson: Lesson) -> Iterator[tuple[LessonStep | None, str]]:
    yield None, lesson.summary
    for step in lesson.steps:
        for text in step.prose():
            yield step, text


def raw(text: str) -> str:
    """Prose as written: live values stay ``{{name}}`` so a claim can name them."""
    return " ".join(text.split())


def step_saying(lesson: Lesson, says: str) -> LessonStep:
    """The step whose prose contains ``says``; for the summary, the first step (a claim
    there is checked against the lesson's values or its options, not a step's tables)."""
    found = [step for step, text in prose(lesson) if says in raw(text)]
    assert found, f"{lesson.name}: no prose says {says!r}"
    return found[0] or lesson.steps[0]


SHIPPED = sorted(path.stem for path in shipped_dir().glob("*.yaml"))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_claim_about_numbers_is_listed_with_its_check(name: str) -> None:
    lesson, _ = lesson_runs(name)
    listed = [claim.says for claim in CLAIMS if claim.lesson == name]
    unlisted = []
    for _, text in prose(lesson):
        flat = raw(text)
        for match in CLAIM_WORDS.finditer(flat):
            if not any(
                flat.find(says) <= match.start() < flat.find(says) + len(says) + 80
                for says in listed
                if says in flat
            ):
                unlisted.append(flat[max(0, match.start() - 50) : match.end() + 30])
    assert not unlisted, (
        f"{name} claims something about its numbers that no test checks; add each to CLAIMS "
        f"in {__file__}: {unlisted}"
    )


@pytest.mark.parametrize(
    "claim",
    [claim for claim in CLAIMS if not isinstance(claim.check, str)],
    ids=lambda claim: f"{claim.lesson}:{claim.says[:30]}",
)
def test_the_claim_holds(claim: Claim) -> None:
    lesson, runner = lesson_runs(claim.lesson)
    assert callable(claim.check)
    claim.check(Runs(lesson, runner, step_saying(lesson, claim.says)))


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda claim: f"{claim.lesson}:{claim.says[:30]}")
def test_each_listed_claim_is_still_in_its_lesson(claim: Claim) -> None:
    lesson, _ = lesson_runs(claim.lesson)
    assert any(claim.says in raw(text) for _, text in prose(lesson))
