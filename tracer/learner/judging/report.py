"""Plain-text report of a check: which stages match, where it diverges, and why."""

from __future__ import annotations

import linecache
import textwrap
from pathlib import Path
from typing import Any

from tracer.learner.judging.compare import close
from tracer.learner.judging.judge import NOTE_WIDTH, Judgement, dropout_line
from tracer.learner.judging.results import (
    DIFFERS,
    MATCH,
    NOT_COMPARED,
    OTHER_ROUTE,
    OWN_MASK,
    CheckResult,
    largest_difference,
    precision_note,
)
from tracer.render.text import format_number, format_tensor, plain, shape_text

__all__ = ["check_json", "dropout_line", "format_check", "format_judgement"]

WIDTH = NOTE_WIDTH
STATUS_WORDS = {
    MATCH: "ok",
    DIFFERS: "DIFFERS",
    OTHER_ROUTE: "-",
    OWN_MASK: "ok",
    NOT_COMPARED: "-",
}


def _code(path: str, line: int | None) -> str:
    if line is None:
        return ""
    linecache.checkcache(path)  # the watcher re-checks files that were just edited
    return linecache.getline(path, line).strip()


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def format_check(result: CheckResult, *, show_stages: bool = True) -> str:
    trace = result.trace
    name = Path(result.path).name
    tokens = trace.tokens
    out = [f"checking {result.path} against '{trace.variant.name}' ({trace.variant.title})"]
    if result.note:
        out.append(f"  ({result.note})")
    if result.learner_output:
        out.append("")
        out.append(learner_output(result.learner_output))
    if show_stages and result.stages:
        out.append("")
        width = max(len(r.stage.name) for r in result.stages)
        for stage_result in result.stages:
            word = STATUS_WORDS[stage_result.status]
            where = ""
            if stage_result.status == MATCH and stage_result.line is not None:
                where = f"  your line {stage_result.line}"
            elif stage_result.status == OTHER_ROUTE:
                where = "  (not computed: you took another route)"
            elif stage_result.status == OWN_MASK:
                where = f"  your line {stage_result.line} ({_own_mask(result, stage_result)})"
            elif stage_result.status == NOT_COMPARED:
                where = "  (not compared: your dropout mask is not the reference's)"
            out.append(f"  {word:<7}  {stage_result.stage.name:<{width}}{where}".rstrip())
    if result.matches and result.dropout is not None:
        out.append("")
        out.append(dropout_summary(result))
        return "\n".join(out)
    precision = precision_note(result)
    if result.matches:
        out.append("")
        if precision is not None:
            text = f"result: your output matches '{trace.variant.name}': {precision}. Well done!"
            out.append(textwrap.fill(text, WIDTH, subsequent_indent="  "))
        else:
            out.append(
                f"result: your output matches '{trace.variant.name}' (within 1e-5). Well done!"
            )
        return "\n".join(out)

    diverging = result.diverging
    if diverging is not None:
        stage = diverging.stage
        out.append("")
        out.append(f"first divergence: stage '{stage.name}' - {stage.title}")
        if stage.formula:
            out.append(f"  expected: {stage.formula}")
        if diverging.line is not None:
            out.append(f"  {name}:{diverging.line}  {_code(result.path, diverging.line)}")
    for diagnosis in result.diagnoses:
        out.append("")
        out.append(f"diagnosis: {diagnosis.title} [{diagnosis.code}]")
        if diagnosis.line is not None:
            out.append(f"  {name}:{diagnosis.line}  {_code(result.path, diagnosis.line)}")
        out.append(
            textwrap.fill(diagnosis.message, WIDTH, initial_indent="  ", subsequent_indent="  ")
        )
    if not result.diagnoses and result.problem is None:
        out.append("")
        out.append(
            "diagnosis: none of the common mistakes recognised; compare your tensor with "
            "the expected one below."
        )
    if diverging is not None and not _from_dropout_on(result, diverging.stage.name):
        expected = diverging.stage.tensors.get(diverging.stage.name)
        if expected is None:
            expected = next(iter(diverging.stage.tensors.values()))
        out.append("")
        out.append(f"expected {diverging.stage.name} ({shape_text(expected)}):")
        out.append(_indent(format_tensor(expected, tokens)))
        if diverging.record is not None and diverging.record.value is not None:
            out.append(f"yours, from line {diverging.line} ({shape_text(diverging.record.value)}):")
            out.append(_indent(format_tensor(diverging.record.value, tokens)))
    out.append("")
    if result.problem is not None:
        out.append(f"result: {result.problem}")
    elif result.dropout is not None:
        text = (
            f"result: with dropout on (p = {result.dropout.rate:g}) your code does not do what "
            "dropout should (see above); values after dropout are not compared, the masks differ"
        )
        out.append(textwrap.fill(text, WIDTH, subsequent_indent="  "))
    else:
        difference = largest_difference(result)
        if (
            result.output is not None
            and diverging is not None
            and close(result.output, result.expected_output)
        ):
            text = (
                f"result: your output matches '{trace.variant.name}', but your "
                f"'{diverging.stage.name}' stage does not (see above)"
            )
            out.append(textwrap.fill(text, WIDTH, subsequent_indent="  "))
        elif difference is not None and difference > 0:
            text = (
                f"result: your output differs from '{trace.variant.name}' "
                f"(largest difference {format_number(difference)})"
            )
            if precision is not None:
                text += f"; {precision}"
            out.append(textwrap.fill(text, WIDTH, subsequent_indent="  "))
        else:
            out.append("result: your output matches, but your function changed its arguments")
    return "\n".join(out)


def _from_dropout_on(result: CheckResult, name: str) -> bool:
    """Whether stage ``name`` comes at or after dropout in a check run with dropout on: its
    reference values hold numpy's mask, which no learner's torch mask can be compared with."""
    if result.dropout is None:
        return False
    names = [stage.name for stage in result.trace.stages]
    return "dropout" in names and name in names and names.index(name) >= names.index("dropout")


def _own_mask(result: CheckResult, stage_result: Any) -> str:
    if stage_result.stage.name == "dropout":
        p = result.dropout.rate if result.dropout is not None else 0.0
        return f"your own mask: each weight 0 or ×1/(1-p) = ×{1 / (1 - p):g}"
    return "from your dropped weights"


def dropout_summary(result: CheckResult) -> str:
    """The verdict of a check with dropout on, whose masks are random on both sides."""
    assert result.dropout is not None
    p = result.dropout.rate
    text = (
        f"result: with dropout on (p = {p:g}) your weights before dropout match "
        f"'{result.trace.variant.name}', your dropout zeroes some weights and scales the rest "
        f"by 1/(1-p) = {1 / (1 - p):g}, and your context uses your dropped weights. (The mask is "
        "random, and yours comes from torch while the reference's comes from numpy, so the "
        "values after dropout are not compared one to one.)"
    )
    return textwrap.fill(text, WIDTH, subsequent_indent="  ")


def format_judgement(judgement: Judgement) -> str:
    """The report of a check and its rechecks: the one that failed, else the pass and its notes."""
    failed = judgement.failed
    if failed is not None:
        why = failed.recheck.why(judgement.first.trace, failed.changes)
        return f"{why}\n\n{format_check(failed.result)}"
    parts = [format_check(judgement.final), *judgement.notes()]
    return "\n\n".join(parts)


def learner_output(text: str) -> str:
    """What the learner's code printed, set apart from the tool's own lines."""
    return "your output:\n" + _indent(text.rstrip("\n"), "  | ")


def check_json(result: CheckResult) -> dict[str, Any]:
    """The check as one JSON document: ``attn check --json``."""
    diverging = result.diverging
    difference = largest_difference(result)
    return {
        "file": result.path,
        "variant": result.trace.variant.name,
        "matches": result.matches,
        "stages": [
            {"name": r.stage.name, "status": r.status, "line": r.line} for r in result.stages
        ],
        "diverging": None
        if diverging is None
        else {"stage": diverging.stage.name, "line": diverging.line},
        "diagnoses": [
            {"code": d.code, "title": d.title, "line": d.line, "message": d.message}
            for d in result.diagnoses
        ],
        "problem": result.problem,
        "max_difference": None if difference is None else plain(difference),
        "called": result.called,
        "precision": None
        if result.precision is None
        else str(result.precision).removeprefix("torch."),
        "precision_note": precision_note(result),
        "output": result.learner_output,
        "dropout": None
        if result.dropout is None
        else {
            "p": result.dropout.rate,
            "verified": result.dropout.verified,
            "note": result.dropout.note,
        },
    }
