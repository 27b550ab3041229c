"""Every shipped lesson's exported notebook runs top to bottom in a Python kernel, and each code
cell prints exactly the output saved with it (the numbers the lesson shows).

The notebooks of one test process share one kernel (starting one costs about three
CPU-seconds: an interpreter, ipykernel, torch), which is as good as a fresh one for them:

- before each notebook the kernel's namespace is emptied (``%reset -f``, names and imported
  modules' names alike) and its working folder set, so a notebook that uses a name it does
  not define itself fails with a NameError, as it would in a fresh kernel;
- after each notebook the kernel's process-wide state a notebook could leave behind
  (torch's defaults and print options, the environment, ``sys.path``) must be what a fresh
  kernel has, or the test fails: a later notebook never runs on an earlier one's settings;
- the first notebook of each test process runs in a kernel just started; a kernel that
  died, or that a notebook failed in or left changed, is started again for the next one.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

from tracer.lessons.loader import find_lessons, load_lesson
from tracer.plugin_host import PluginHost
from tracer.text.export import export_text

nbclient = pytest.importorskip("nbclient", reason="nbclient is in the 'test' extra")
pytest.importorskip("ipykernel", reason="ipykernel (the notebook's kernel) is in the 'test' extra")

SHIPPED = [ref for ref in find_lessons(()) if ref.origin == "built-in"]


def kernel_name() -> str:
    """This interpreter's kernel: the notebook must run with the attention-tracer under test."""
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME

    return NATIVE_KERNEL_NAME


FRESH_STATE = """\
import json as _json, os as _os, sys as _sys
_torch = _sys.modules.get("torch")
print(_json.dumps({
    "environ": dict(_os.environ),
    "path": [p for p in _sys.path if p != _os.getcwd()],
    "torch": None if _torch is None else {
        "dtype": str(_torch.get_default_dtype()),
        "grad": _torch.is_grad_enabled(),
        "deterministic": _torch.are_deterministic_algorithms_enabled(),
        "print": sorted(vars(_torch._tensor_str.PRINT_OPTS).items()),
    },
}))
del _json, _os, _sys, _torch
"""
"""What a notebook could change for the notebooks run after it in the same kernel."""

TORCH_DEFAULTS = {
    "dtype": "torch.float32",
    "grad": True,
    "deterministic": False,
    "print": [
        ["edgeitems", 3],
        ["linewidth", 80],
        ["precision", 4],
        ["sci_mode", None],
        ["threshold", 1000],
    ],
}


def run_code(km: Any, source: str) -> str:
    """Run ``source`` in the shared kernel; what it printed."""
    document = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    client = nbclient.NotebookClient(document, km=km, timeout=60)
    try:
        client.execute()
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    return "".join(out.get("text", "") for out in document.cells[0].outputs)


class Kernel:
    """One kernel for the notebooks of this test process (see the module's docstring)."""

    def __init__(self) -> None:
        from jupyter_client.manager import KernelManager

        self.km = KernelManager(kernel_name=kernel_name())
        try:
            self.km.start_kernel(cwd=str(SHIPPED[0].path.parent))
        except RuntimeError as error:  # no kernel could start here: say so, do not pass quietly
            pytest.fail(f"no Python kernel could be started for {sys.executable}: {error}")
        self.fresh = self.state()

    def state(self) -> dict[str, Any]:
        return dict(json.loads(run_code(self.km, FRESH_STATE)))

    def restart(self) -> None:
        """A new kernel process, for the next notebook to start clean."""
        self.km.restart_kernel(now=True)
        self.fresh = self.state()


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    shared = Kernel()
    try:
        yield shared
    finally:
        shared.km.shutdown_kernel(now=True)


@pytest.mark.parametrize("ref", SHIPPED, ids=[ref.name for ref in SHIPPED])
def test_an_exported_notebook_runs_and_prints_what_it_saved(ref: object, kernel: Kernel) -> None:
    from tracer.lessons.model import LessonRef

    assert isinstance(ref, LessonRef)
    km = kernel.km
    if not km.is_alive():  # an earlier notebook killed it
        kernel.restart()
    host = PluginHost(())
    lesson = load_lesson(ref.path, host)
    document = nbformat.reads(export_text(lesson, host, "ipynb"), as_version=4)
    saved = [
        "".join(out.get("text", "") for out in cell.outputs)
        for cell in document.cells
        if cell.cell_type == "code"
    ]
    assert len(saved) > 1  # the setup cell and at least one table recomputed
    folder = ref.path.parent
    run_code(
        km,
        f"get_ipython().run_line_magic('reset', '-f')\n__import__('os').chdir({str(folder)!r})",
    )
    client = nbclient.NotebookClient(
        document,
        km=km,
        timeout=120,
        kernel_name=kernel_name(),
        resources={"metadata": {"path": str(folder)}},
    )
    clean = False
    try:
        _execute_and_check(client, document, saved, kernel, ref.name)
        clean = True
    finally:
        if not clean:
            kernel.restart()  # whatever failed, the next notebook starts in a fresh kernel


def _execute_and_check(
    client: Any, document: Any, saved: list[str], kernel: Any, name: str
) -> None:
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as error:
        pytest.fail(f"{name}: a cell failed: {str(error).splitlines()[-1]}")
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
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
    # Nothing this notebook changed reaches the next one (see the module's docstring); if it
    # did, this notebook fails and the caller restarts the kernel.
    left, fresh = kernel.state(), kernel.fresh
    assert left["environ"] == fresh["environ"]
    assert left["path"] == fresh["path"]
    assert left["torch"] in (None, TORCH_DEFAULTS)
