"""Every shipped lesson's exported notebook runs top to bottom in a fresh kernel, and each code
cell prints exactly the output saved with it (the numbers the lesson shows)."""

from __future__ import annotations

import sys

import nbformat
import pytest

from tracer.lessons.export import export_text
from tracer.lessons.loader import find_lessons, load_lesson
from tracer.plugin_host import PluginHost

nbclient = pytest.importorskip("nbclient", reason="nbclient is in the 'test' extra")
pytest.importorskip("ipykernel", reason="ipykernel (the notebook's kernel) is in the 'test' extra")

SHIPPED = [ref for ref in find_lessons(()) if ref.origin == "built-in"]


def kernel_name() -> str:
    """This interpreter's kernel: the notebook must run with the attention-tracer under test."""
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME

    return NATIVE_KERNEL_NAME


@pytest.mark.parametrize("ref", SHIPPED, ids=[ref.name for ref in SHIPPED])
def test_an_exported_notebook_runs_and_prints_what_it_saved(ref: object) -> None:
    from tracer.lessons.model import LessonRef

    assert isinstance(ref, LessonRef)
    host = PluginHost(())
    lesson = load_lesson(ref.path, host)
    document = nbformat.reads(export_text(lesson, host, "ipynb"), as_version=4)
    saved = [
        "".join(out.get("text", "") for out in cell.outputs)
        for cell in document.cells
        if cell.cell_type == "code"
    ]
    assert len(saved) > 1  # the setup cell and at least one table recomputed
    client = nbclient.NotebookClient(
        document,
        timeout=120,
        kernel_name=kernel_name(),
        resources={"metadata": {"path": str(ref.path.parent)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{ref.name}: a cell failed: {str(error).splitlines()[-1]}")
    except RuntimeError as error:  # no kernel could start here: say so, do not pass quietly
        pytest.fail(f"no Python kernel could be started for {sys.executable}: {error}")
    ran = [
        "".join(out.get("text", "") for out in cell.outputs if out.get("name") == "stdout")
        for cell in document.cells
        if cell.cell_type == "code"
    ]
    errors = [
        out
        for cell in document.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "error" or out.get("name") == "stderr"
    ]
    assert errors == []
    assert ran == saved
