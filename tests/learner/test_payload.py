"""What the sandbox sends back is decoded once, and nothing in it is trusted."""

from __future__ import annotations

import torch

from tracer.learner.sandbox.payload import Failed, Returned, ReturnedOutput, TensorProblem, decode
from tracer.learner.sandbox.recorder import Mutation


def test_what_is_not_a_result_is_refused() -> None:
    assert decode("result") is None
    assert decode({"status": 3}) is None
    assert decode({}) is None


def test_a_failure_keeps_its_status_text_and_line() -> None:
    assert decode({"status": "usage", "message": "no attention", "line": 4}) == Failed(
        "usage", "no attention", 4
    )
    assert decode({"status": "usage", "message": "m", "line": "4"}) == Failed("usage", "m", None)
    assert decode({"status": "ended", "text": "os._exit(0)"}) == Failed("ended", "os._exit(0)")
    assert decode({"status": "memory"}) == Failed("memory", "None")


def test_a_result_keeps_only_what_has_its_form() -> None:
    plain = torch.ones(2, 3)
    raw = {
        "status": "ok",
        "called": "function attention",
        "note": 7,  # not text: no note
        "output": {"tensor": plain, "id": 11, "weights": "w", "fields": {"a": plain}},
        "records": [
            {"index": 0, "op": "matmul", "line": 3, "value": plain, "args": [plain, 1]},
            {"index": 1, "op": "add", "line": "4", "value": torch.ones(2).to_sparse()},
            "not a record",
            {"op": "no index"},
        ],
        "mutations": [("inputs", "add_", 5), ("x", "mul_"), ("W", "copy_", "6")],
        "discarded": [1, "2", 3.0],
        "arguments_after": {"inputs": plain, "W_query": {"problem": "a meta tensor"}, "b": None},
        "dropout_lines": [(0.1, 8), ("0.1", 9), (0.2, 9.5), (1, 2, 3)],
        "takes_dropout": "yes",
    }
    result = decode(raw)
    assert isinstance(result, Returned)
    assert result.called == "function attention" and result.note is None
    assert [r.index for r in result.records] == [0, 1]
    first, second = result.records
    assert first.line == 3 and first.value is plain and first.args == (plain, 1)
    assert second.line is None and second.value is None  # a sparse tensor is not compared
    assert result.mutations == [Mutation("inputs", "add_", 5), Mutation("W", "copy_", None)]
    assert result.discarded == [1]
    assert result.arguments_after == {"inputs": plain, "W_query": None}
    assert result.dropout_lines == [(0.1, 8)]
    assert result.takes_dropout is False
    output = result.output
    assert output.tensor is plain and output.id == 11
    assert output.weights is None and output.fields == {"a": plain}


def test_what_was_returned_instead_of_a_tensor_is_named() -> None:
    def output(data: object) -> ReturnedOutput:
        result = decode({"status": "ok", "output": data})
        assert isinstance(result, Returned)
        return result.output

    assert output({"type": "None"}).tensor is None
    assert output({"type": "None"}).kind == "None"
    problem = output({"tensor": {"problem": "a sparse tensor (torch.sparse_coo)"}})
    assert problem.tensor == TensorProblem("a sparse tensor (torch.sparse_coo)")
    assert output({"tensor": {}}).tensor == TensorProblem("an unusable tensor")
    assert output({"tensor": "text"}).tensor == TensorProblem("something that is not a tensor")
    assert output("not a dict").tensor is None


def test_picking_a_field_makes_it_the_output() -> None:
    a, b = torch.zeros(2), torch.ones(2)
    result = decode(
        {
            "status": "ok",
            "output": {"fields": {"a": a, "b": b}, "field_ids": {"a": 1, "b": "2"}, "dict": 1},
        }
    )
    assert isinstance(result, Returned)
    assert result.output.in_dict and result.output.field_ids == {"a": 1}
    picked = result.output.picked("a")
    assert picked.tensor is a and picked.id == 1 and picked.fields == {"b": b}
    assert result.output.picked("b").id is None
