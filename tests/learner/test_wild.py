"""Calling what learners write, and explaining a divergence by what the numbers show.

The labelled files in ``tests/learner/wild`` are scored by ``benchmarks/check_corpus.py
--only wild``; a few of them (one per way of calling, one per kind of explanation) run
here through the real sandbox. The relations themselves are tested in-process on
tensors built from an independent oracle (torch.softmax and plain matrix products),
and the learner package is checked for import cycles.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from benchmarks.check_corpus import WILD_FOLDERS, Case, cases, failing_configuration
from tracer.learner.judging.relations import Known, explain, loop_rows, relate, training_steps

Attn = Callable[..., tuple[int, str, str]]
ROOT = Path(__file__).resolve().parents[2]
WILD = {case.path.name: case for case in cases(WILD_FOLDERS)}
RUN_HERE = (
    "vmap_queries.py",  # torch.func.vmap
    "blog_dataclass.py",  # a dataclass output
    "square_params_no_bias.py",  # b_out, square x @ W weights; a bias left out
    "llama_gqa.py",  # ModelArgs with n_kv_heads, repeat_kv
    "gqa_kv_heads_required.py",  # kv_heads with no default
    "cross_class.py",  # forward(x, encoder_hidden_states), d_source
    "cross_function.py",  # cross_attention(x, context, ...)
    "window_peeks_one.py",  # the guard: not "scores not scaled" (the scaled scores were right)
    "head0_keys.py",  # a per-head loop stuck on head 0
    "decode_scale_cache_len.py",  # a decode step, scaled by the cache length
)


def test_the_third_corpus_is_there() -> None:
    assert len(WILD) >= 30
    assert sum(case.code is not None for case in WILD.values()) >= 15
    assert set(RUN_HERE) <= set(WILD)


@pytest.mark.parametrize("name", RUN_HERE)
def test_labelled_wild_file(attn: Attn, name: str) -> None:
    case: Case = WILD[name]
    status, out, err = attn("check", str(case.path), *case.options, "--json")
    assert "Traceback" not in err
    report = json.loads(out)
    if case.code is None:
        assert status == 0, out + err
        return
    assert status == 1, out + err
    report = failing_configuration(report)
    first = report["diagnoses"][0]
    assert first["code"] == case.code, first
    assert case.line is not None and first["line"] in (case.line, case.line + 1)
    assert "none of the common mistakes" not in first["message"]


def test_the_field_read_is_named(attn: Attn) -> None:
    status, out, _ = attn("check", str(WILD["named_tuple.py"].path), "--against", "trainable")
    assert status == 0
    assert "it returned Result.out, and that field was compared" in out


# Relations, in-process: reference tensors from torch's own softmax.
torch.manual_seed(0)
SCORES = torch.randn(5, 5, dtype=torch.float64)
WEIGHTS = torch.softmax(SCORES, dim=-1)
VALUES = torch.randn(5, 3, dtype=torch.float64)
CONTEXT = WEIGHTS @ VALUES


def known(stage: str, expected: torch.Tensor, **more: torch.Tensor) -> Known:
    tensors = {"scaled": SCORES, "weights": WEIGHTS, "values": VALUES, **more}
    return Known(stage, expected, tensors, None, heads=1, head_dim=4, tokens=5)


@pytest.mark.parametrize(
    ("factor", "said"),
    [(math.sqrt(4), "√d_k = √4"), (1 / 5, "1/(the number of tokens) = 1/5"), (4.0, "d_k = 4")],
)
def test_a_constant_factor_is_named(factor: float, said: str) -> None:
    code, text = relate(CONTEXT * factor, known("context", CONTEXT)) or ("", "")
    assert code == "scaled-by" and said in text


def test_transposed_and_reversed() -> None:
    assert (relate(WEIGHTS.T, known("weights", WEIGHTS)) or ("",))[0] == "transposed"
    assert (relate(CONTEXT.flip(0), known("context", CONTEXT)) or ("",))[0] == "reversed"


def test_the_other_axis_is_named_by_its_sums() -> None:
    columns = torch.softmax(SCORES, dim=0)
    code, text = relate(columns, known("weights", WEIGHTS)) or ("", "")
    assert code == "other-axis" and "columns sum to 1" in text


def test_a_sum_without_keepdims() -> None:
    e = SCORES.exp()
    wrong = e / e.sum(-1)  # numpy's and torch's broadcasting: row i divided by sum j
    assert (relate(wrong, known("weights", WEIGHTS)) or ("",))[0] == "keepdims"


def test_the_query_own_value_and_a_max_not_added_back() -> None:
    code, text = relate(CONTEXT + VALUES, known("context", CONTEXT)) or ("", "")
    assert code == "plus-tensor" and "values" in text
    top = SCORES.amax(-1, keepdim=True)
    log_weights = SCORES - torch.log(torch.exp(SCORES - top).sum(-1, keepdim=True))
    code, text = relate(log_weights.exp().log(), known("weights", WEIGHTS)) or ("", "")
    assert code == "row-offset" and "+ max" in text


def test_masked_after_the_softmax() -> None:
    hidden = torch.ones(5, 5, dtype=torch.bool).triu(1)
    masked = torch.softmax(SCORES.masked_fill(hidden, float("-inf")), dim=-1)
    after = WEIGHTS + torch.zeros(5, 5, dtype=torch.float64).masked_fill(hidden, -1e9)
    facts = Known("weights", masked, {"softmax": WEIGHTS}, hidden, heads=1, head_dim=4, tokens=5)
    assert (relate(after, facts) or ("",))[0] == "masked-after"


def test_nothing_related_still_says_where() -> None:
    noisy = CONTEXT.clone()
    noisy[3, 1] += 0.5
    found = explain(noisy, known("context", CONTEXT), 7)
    assert found is not None and found.code == "differs"
    assert "(3, 1)" in found.message and "rows 0, 1, 2, 4 are right" in found.message


def test_a_decode_step_names_its_pass() -> None:
    x = torch.randn(4, 3, dtype=torch.float64)
    wq, wk, wv = (torch.randn(3, 2, dtype=torch.float64) for _ in range(3))
    q, k, v = x @ wq, x @ wk, x @ wv
    hidden = torch.ones(4, 4, dtype=torch.bool).triu(1)
    expected = torch.softmax((q @ k.T / math.sqrt(2)).masked_fill(hidden, -math.inf), -1) @ v
    rows = [torch.softmax(k[: t + 1] @ q[t] / (t + 1), -1) @ v[: t + 1] for t in range(4)]
    records = [(row, 12, "matmul", i) for i, row in enumerate(rows)]
    found = loop_rows(
        torch.stack(rows),
        expected,
        records,
        {"inputs": x, "W_query": wq, "W_key": wk, "W_value": wv},
    )
    assert found is not None and found.code == "scaled-by" and found.line == 12
    assert "pass 1 of its loop (token 1)" in found.message
    assert "the cache length (2)" in found.message


def test_a_training_step_names_its_pass() -> None:
    losses = torch.tensor([3.0, 2.5, 2.0])
    mine = [torch.tensor(3.0), torch.tensor(2.5), torch.tensor(2.2)]
    found = training_steps([(v, 9, "add", i) for i, v in enumerate(mine)], losses)
    assert found is not None and found.line == 9 and "training step 2" in found.message


def _imports(path: Path) -> set[str]:
    """Every tracer.learner module a file imports, function-local imports included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("tracer.learner.")}


def _learner_graph() -> dict[str, set[str]]:
    """Each module of tracer/learner and its subpackages, and the learner modules it imports."""
    graph = {}
    for path in (ROOT / "tracer" / "learner").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = _imports(path)
    return graph


def test_the_learner_package_has_no_import_cycles() -> None:
    graph = _learner_graph()
    assert "tracer.learner.judging.judge" in graph  # the subpackages are walked too

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for module in graph.get(start, ()):
            if module == goal or (module not in seen and reaches(module, goal, seen | {module})):
                return True
        return False

    cycles = [name for name in graph if reaches(name, name, {name})]
    assert cycles == []


def test_the_learner_subpackages_import_one_way() -> None:
    """exercises -> judging -> sandbox: the code that runs the learner's file knows nothing of
    how it is judged, and judging knows nothing of the exercises."""
    order = ("tracer.learner.sandbox", "tracer.learner.judging", "tracer.learner.exercises")

    def rank(name: str) -> int:
        return next((i for i, p in enumerate(order) if name == p or name.startswith(p + ".")), -1)

    upward = [
        f"{name} -> {target}"
        for name, targets in _learner_graph().items()
        for target in targets
        if rank(name) >= 0 and rank(target) > rank(name)
    ]
    assert upward == []
