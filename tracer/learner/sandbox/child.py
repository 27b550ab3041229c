"""The process a learner's file runs in: ``python -m tracer.learner.sandbox.child FOLDER FD``.

``attn check`` computes the reference in its own process, then starts this one
(a fresh interpreter) to run the learner's code. Nothing the learner does here
(patching ``torch.softmax``, changing the default dtype, ``os._exit``, an
endless loop, a print) can reach the reference or the tool's own output:

- FOLDER holds ``request.json`` and ``arguments.pt`` from the parent; this
  process writes ``result.pt`` there (read back with ``weights_only=True`` and
  checked, never trusted);
- FD is a pipe to the parent: ``r`` once torch is loaded (the time limit starts
  then), ``d`` when the result is written;
- the learner's stdout and stderr go to files the parent shows as "your output";
- the address space is capped (``RLIMIT_AS``, :func:`tracer.processes.cap_address_space`)
  before any learner code runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import json
import os
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import torch
from torch.overrides import _get_current_function_mode_stack

from tracer.errors import Location, UsageError
from tracer.learner.sandbox.calling import Call, choose, prepare
from tracer.learner.sandbox.module_loading import MissingConfig
from tracer.learner.sandbox.names import Setting, normal_name
from tracer.learner.sandbox.recorder import NumpySteps, Recorder
from tracer.learner.sandbox.source_loader import learner_traceback
from tracer.processes import cap_address_space, confine_writes, refuse_writes_outside

HIDDEN = "__hidden__"
"""Sent next to the arguments: the (query, key) pairs the reference hides (see check.py)."""

# Taken before any learner code runs, so a file that replaces them cannot fake a result.
_save = torch.save
_replace = os.replace
_write = os.write
_exit = os._exit
_clone = torch.Tensor.clone
_detach = torch.Tensor.detach

SHAPE_ERROR = re.compile(
    r"shapes cannot be multiplied|size of tensor a|must match the size|Expected size|"
    r"mat1 and mat2|cannot be broadcast|dimension out of range|Dimension out of range|"
    r"not enough values to unpack|too many values to unpack|invalid for input of size"
)
LEARNER_MODULE = "__learner__"
TRANSPOSED_WEIGHT = re.compile(r"\b[Ww]\w*\.(?:T\b|mT\b|t\(\)|transpose\([^)]*\))")


class Ended(BaseException):
    """The learner's code tried to end the process; ``text`` says how (one line)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _NoInput(io.TextIOBase):
    """Standard input for the learner's code: every read says there is nothing to read.

    ``/dev/null`` alone would hand ``sys.stdin.read()`` an empty string, and the
    file would fail later for a reason far from its cause.
    """

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        raise EOFError("attn check gives your code no standard input")

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        raise EOFError("attn check gives your code no standard input")

    def readlines(self, hint: int | None = -1) -> list[str]:  # type: ignore[override]
        raise EOFError("attn check gives your code no standard input")


COMPILED: list[str] = []
"""What the learner's code handed ``torch.compile`` (names), in this process."""


def _eager_compile(model: Any = None, **options: Any) -> Any:
    """``torch.compile`` in the sandbox: the code runs as written, one operation at a time.

    Compiling takes seconds (more on a loaded machine) and runs the code as one graph that
    the recorder cannot see into; eagerly, every step is recorded at its line and compared.
    What the check judges is the arithmetic, which compiling must not change."""
    if model is None:  # @torch.compile(mode=...): a decorator with options
        return lambda function: _eager_compile(function, **options)
    COMPILED.append(str(getattr(model, "__name__", type(model).__name__)))
    return model


def use_temporary_folder(folder: Path) -> None:
    """A temporary folder inside this run's folder (the only place the learner's code may
    write): ``tempfile`` and whatever uses it find a usable one, as they would outside."""
    import tempfile

    temporary = folder / "tmp"
    temporary.mkdir(exist_ok=True)
    for name in ("TMPDIR", "TEMP", "TMP"):
        os.environ[name] = str(temporary)
    tempfile.tempdir = None  # chosen again, from TMPDIR, on next use


def _fake_exit(status: int = 0) -> None:
    raise Ended(f"your code called os._exit({status!r})")


def _plain(value: Any, depth: int = 0) -> Any:
    """Kept arguments, reduced to what ``torch.load(weights_only=True)`` accepts."""
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)) and depth < 3:
        return [_plain(v, depth + 1) for v in value]
    return repr(value)[:80]


def _tensor(value: torch.Tensor) -> Any:
    """A plain strided CPU tensor, or a description of why it is not one."""
    if value.is_meta:
        return {"problem": "a meta tensor (it has a shape but no values)"}
    if value.layout != torch.strided:
        return {"problem": f"a sparse tensor ({value.layout})"}
    if value.device.type != "cpu":
        return {"problem": f"a tensor on {value.device}, not the CPU"}
    plain = _clone(_detach(value))
    if type(plain) is not torch.Tensor:
        plain = plain.as_subclass(torch.Tensor)
    return plain


def _unbatch(value: torch.Tensor | None) -> torch.Tensor | None:
    if value is not None and value.dim() >= 2 and value.shape[0] == 1:
        return value[0]
    return value


def _from_numpy(value: Any) -> Any:
    """A numpy array the learner returned, as a tensor (numpy code is checked like torch code)."""
    if type(value).__module__ == "numpy" and type(value).__name__ == "ndarray":
        try:
            return torch.from_numpy(value.copy())
        except (TypeError, ValueError):  # object or string arrays: reported as not a tensor
            return value
    return value


OUTPUT_FIELDS = (
    "output",
    "out",
    "context",
    "context_vec",
    "context_vecs",
    "context_vectors",
    "attn_output",
    "attention_output",
    "hidden_states",
    "last_hidden_state",
    "result",
    "y",
)
"""Field names that hold the output in a dataclass, named tuple or dict, likeliest first."""
WEIGHT_FIELDS = (
    "weights",
    "attn_weights",
    "attention_weights",
    "attention",
    "attentions",
    "attn",
    "probs",
    "attn_probs",
)


def _fields(value: Any) -> dict[str, Any] | None:
    """A dataclass's, named tuple's or dict's tensors by field name (None for anything else)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    elif isinstance(value, tuple) and hasattr(type(value), "_fields"):
        items = dict(zip(getattr(type(value), "_fields"), value, strict=False))  # noqa: B009
    elif isinstance(value, dict):
        items = {str(k): v for k, v in value.items()}
    else:
        return None
    return {k: _from_numpy(v) for k, v in items.items()}


def _named_output(value: Any, batched: bool, wanted: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The output held in a field: by its name (the usual ones, or the reference's own name
    for its output: ``dX`` for a backward pass), else the only tensor; says which field.

    The other tensors come back too (``fields``), so the check can compare each one named
    like a stage, and pick the output by value when no name says which it is."""
    fields = _fields(value)
    if fields is None:
        return None
    tensors = {k: v for k, v in fields.items() if isinstance(v, torch.Tensor)}
    name = next((n for n in OUTPUT_FIELDS for k in tensors if k.lower() == n), None)
    if name is not None:
        name = next(k for k in tensors if k.lower() == name)
    else:
        normal = {normal_name(w) for w in wanted}
        name = next((k for k in tensors if normal_name(k) in normal), None)
    if name is None and len(tensors) == 1:
        name = next(iter(tensors))
    elif name is None:
        unnamed = [k for k in tensors if k.lower() not in WEIGHT_FIELDS]
        name = unnamed[0] if len(unnamed) == 1 else None
    others = {
        k: _tensor(v[0] if batched and v.dim() >= 2 and v.shape[0] == 1 else v)
        for k, v in tensors.items()
        if k != name and k.lower() not in WEIGHT_FIELDS
    }
    if name is None:
        if len(others) < 2:
            return None
        # Several tensors and no name that says which is the output: the check picks by value.
        return {
            "fields": others,
            "field_ids": {k: id(v) for k, v in tensors.items() if k in others},
            "type": type(value).__name__,
            "dict": isinstance(value, dict),
        }
    found = _output(tensors[name], batched)
    weights = next((k for n in WEIGHT_FIELDS for k in tensors if k.lower() == n), None)
    if weights is not None:
        held: torch.Tensor = tensors[weights]
        if batched and held.dim() >= 2 and held.shape[0] == 1:
            held = held[0]
        found["weights"] = _tensor(held)
    found["field"] = (
        f"{type(value).__name__}.{name}" if not isinstance(value, dict) else (f"['{name}']")
    )
    if others:
        found["fields"] = others
    return found


def _output(value: Any, batched: bool, wanted: tuple[str, ...] = ()) -> dict[str, Any]:
    named = _named_output(value, batched, wanted)
    if named is not None:
        return named
    if isinstance(value, (tuple, list)) and value:
        value = type(value)(_from_numpy(v) for v in value)
    value = _from_numpy(value)
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], torch.Tensor):
        first = _output(value[0], batched)
        if len(value) > 1 and isinstance(value[1], torch.Tensor):
            weights = value[1]
            first["weights"] = _tensor(_unbatch(weights) if batched else weights)  # type: ignore[arg-type]
        first["tuple"] = len(value)
        return first
    if isinstance(value, torch.Tensor):
        tensor = _tensor(value)
        if batched and isinstance(tensor, torch.Tensor):
            tensor = _unbatch(tensor)
        return {"tensor": tensor, "id": id(value)}
    return {"type": "None" if value is None else type(value).__name__}


@contextlib.contextmanager
def recorded_backwards(recorder: Recorder, path: str) -> Any:
    """The learner's own ``autograd.Function.backward``s, recorded as their forward code is.

    Autograd runs a backward with no torch function mode active, so the recorder would see
    none of its operations and a mistake in it would be cited at the ``.backward()`` call;
    while this is active, each such ``backward`` runs under the recorder, at its own lines."""
    module = sys.modules.get(LEARNER_MODULE)
    functions = [
        value
        for value in (vars(module).values() if module is not None else ())
        if isinstance(value, type)
        and issubclass(value, torch.autograd.Function)
        and getattr(getattr(value.backward, "__code__", None), "co_filename", None) == path
    ]
    originals = {cls: cls.__dict__.get("backward") for cls in functions}

    def recorded(original: Any) -> Any:
        def backward(ctx: Any, *grads: Any) -> Any:
            if recorder in _get_current_function_mode_stack():  # type: ignore[no-untyped-call]
                return original(ctx, *grads)
            with recorder:
                return original(ctx, *grads)

        return staticmethod(backward)

    for cls in functions:
        cls.backward = recorded(cls.backward)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for cls, original in originals.items():
            if original is not None:
                setattr(cls, "backward", original)  # noqa: B010


def run_call(
    call: Call, batched: bool, path: str, shapes: set[tuple[int, ...]], seed: int
) -> tuple[Any, dict[str, torch.Tensor], Recorder]:
    recorder_shapes = shapes | {(1, *s) for s in shapes}  # code that adds its own batch of one
    recorder = Recorder(path, recorder_shapes, {})
    # Code that trains (loss.backward(), torch.optim, autograd.grad) needs gradients on;
    # everything else runs without them, as inference.
    grad = torch.enable_grad() if _trains(path) else torch.no_grad()
    with grad, recorder, recorded_backwards(recorder, path):
        # A module's constructor is recorded too: it may build the mask the forward pass uses.
        tensors, thunk = call.prepare(batched)
        recorder.watch_arguments(tensors)
        torch.manual_seed(seed)  # dropout can match the reference's draws
        if call.numpy:
            with NumpySteps(recorder):
                output = thunk()
        else:
            output = thunk()
    return output, tensors, recorder


TRAINING = re.compile(r"\.backward\(|torch\.optim|autograd\.grad|\boptim\.")
OPTIMISER = re.compile(r"\boptim\b")


def _source(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return ""


def _trains(path: str) -> bool:
    """Whether the learner's file trains something (it needs gradients on)."""
    return TRAINING.search(_source(path)) is not None


def _records(
    recorder: Recorder, batched: bool, shapes: set[tuple[int, ...]]
) -> list[dict[str, Any]]:
    records = []
    for record in recorder.records:
        value = record.value
        if batched or (
            value is not None
            and tuple(value.shape) not in shapes
            and tuple(value.shape[1:]) in shapes
        ):
            value = _unbatch(value)  # their own unsqueeze(0), or the batch of one we gave
        args, kwargs = record.args, record.kwargs
        if batched:
            first = args[0] if args else None
            unbatched = isinstance(first, torch.Tensor) and first.dim() >= 2 and first.shape[0] == 1
            args = tuple(_unbatch(a) if isinstance(a, torch.Tensor) else a for a in args)
            if record.op == "softmax" and unbatched:
                # dim counted on the batched tensor: the same axis of the unbatched one
                if len(args) > 1 and isinstance(args[1], int) and args[1] > 0:
                    args = (args[0], args[1] - 1, *args[2:])
                if isinstance(kwargs.get("dim"), int) and kwargs["dim"] > 0:
                    kwargs = {**kwargs, "dim": kwargs["dim"] - 1}
        records.append(
            {
                "index": record.index,
                "op": record.op,
                "line": record.line,
                "value": None if value is None else _tensor(value),
                "inplace": record.inplace,
                "args": _plain(args),
                "kwargs": {k: _plain(v) for k, v in kwargs.items()},
                "result_id": record.result_id,
                "calls": list(record.calls),
            }
        )
    return records


def _failure(exc: BaseException, path: str, setting: Setting) -> dict[str, Any]:
    if isinstance(exc, Ended):
        return {"status": "ended", "text": exc.text}
    if isinstance(exc, SystemExit):
        return {"status": "ended", "text": f"your code called sys.exit({exc.code!r})"}
    if isinstance(exc, (GeneratorExit, KeyboardInterrupt)):
        return {"status": "ended", "text": f"your code raised {type(exc).__name__}"}
    if isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError) and "can't allocate memory" in str(exc)
    ):
        return {"status": "memory"}
    if isinstance(exc, EOFError):
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
        how = "input()" if frames and "input(" in (frames[-1].line or "") else "sys.stdin"
        return {
            "status": "ended",
            "text": f"your code reads from standard input ({how}); attn check gives it nothing to read",
        }
    unwritten = _unwritten(exc, path)
    if unwritten is not None:
        return {"status": "unwritten", "text": unwritten}
    try:
        text = learner_traceback(exc, path)
    except Exception:  # an exception whose own text fails
        text = f"{type(exc).__name__} (its message could not be shown)\n"
    note = _layout_note(exc, path, setting)
    return {"status": "failed", "text": text + note}


def _unwritten(exc: BaseException, path: str) -> str | None:
    """One line for an exercise whose TODOs are still there: a NotImplementedError raised by
    a line of the learner's file (the scaffolds raise ``NotImplementedError("TODO: ...")``)."""
    if type(exc) is not NotImplementedError:
        return None
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    if not frames or "NotImplementedError" not in (frames[-1].line or ""):
        return None  # raised by a library it called, not by a line of the file
    where = "the file" if frames[-1].name == "<module>" else f"{frames[-1].name}()"
    try:
        said = str(exc).splitlines()[0] if str(exc) else ""
    except Exception:
        said = ""
    return (
        f"{path}:{frames[-1].lineno}: not written yet: {where} raises NotImplementedError"
        f"{f' ({said})' if said else ''} here; replace the TODOs and check again"
    )


def _layout_note(exc: BaseException, path: str, setting: Setting) -> str:
    """When a shape error comes from transposing a weight, say which layout the tool passes."""
    if not SHAPE_ERROR.search(str(exc)) or "W_query" not in setting.arguments:
        return ""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    if not frames or not frames[-1].line:
        return ""
    used = TRANSPOSED_WEIGHT.search(frames[-1].line)
    if used is None:
        return ""
    shape = "×".join(map(str, setting.arguments["W_query"].shape[-2:]))
    return (
        f"note: line {frames[-1].lineno} uses {used.group(0)} as if the weights were nn.Linear's "
        f"(d_out×d_in, x @ W.T); attn check passes them as d_in×d_out ({shape} here), "
        "applied as inputs @ W, so drop the .T\n"
    )


def _output_marks() -> list[int | None]:
    """Where stdout and stderr stand now, so a failed first attempt's output can be dropped."""
    marks: list[int | None] = []
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        try:
            stream.flush()
            marks.append(os.lseek(fd, 0, os.SEEK_CUR))
        except (OSError, ValueError, AttributeError):
            marks.append(None)
    return marks


def _rewind_output(marks: list[int | None]) -> None:
    for (stream, fd), mark in zip(((sys.stdout, 1), (sys.stderr, 2)), marks, strict=True):
        if mark is None:
            continue
        try:
            stream.flush()
            os.ftruncate(fd, mark)
            os.lseek(fd, mark, os.SEEK_SET)
        except (OSError, ValueError, AttributeError):
            pass


def dropout_lines(call: Call, path: str) -> list[tuple[float, int]]:
    """(p, line) for each nn.Dropout in the learner's module: where its rate is set."""
    module = call.built
    if module is None:
        return []
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for name, sub in module.named_modules():
        if not isinstance(sub, torch.nn.Dropout):
            continue
        attribute = re.compile(rf"self\.{re.escape(name.rsplit('.', 1)[-1])}\s*=")
        line = next((i + 1 for i, text in enumerate(lines) if attribute.search(text)), None)
        if line is not None:
            found.append((float(sub.p), line))
    return found


def _sequence_first(module: torch.nn.Module | None) -> bool:
    """Whether the module holds an nn.MultiheadAttention that reads (tokens, batch, d)."""
    if module is None:
        return False
    return any(
        isinstance(m, torch.nn.MultiheadAttention) and not m.batch_first for m in module.modules()
    )


def _usage(error: UsageError) -> dict[str, Any]:
    location = error.location
    return {
        "status": "usage",
        "message": error.message,
        "line": None if location is None else location.line,
    }


def check_file(request: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    path = request["path"]
    hidden = arguments.pop(HIDDEN, None)
    setting = Setting(
        arguments=arguments,
        d_in=request["d_in"],
        d_out=request["d_out"],
        context_length=request["context_length"],
        dropout=request["dropout"],
        num_heads=request["num_heads"],
        causal=request["causal"],
        stacked=request["stacked"],
        hidden=hidden,
        eval_dropout=request.get("eval_dropout"),
        d_source=request.get("d_source"),
        options=dict(request.get("variant_options") or {}),
    )
    shapes = {tuple(s) for s in request["shapes"]}
    wanted = tuple(str(n) for n in request.get("output_names") or ())
    module = types.ModuleType(LEARNER_MODULE)
    module.__file__ = path
    sys.modules[LEARNER_MODULE] = module  # dataclasses and inspect look their module up here
    namespace: dict[str, Any] = module.__dict__
    sys.path.insert(0, str(Path(path).resolve().parent))  # their own helper modules
    try:
        # utf-8-sig: a byte order mark (some editors write one) is not part of the code
        code = compile(Path(path).read_text(encoding="utf-8-sig"), path, "exec")
        exec(code, namespace)
    except BaseException as exc:
        failure = _failure(exc, path, setting)
        if failure["status"] == "ended":
            failure["text"] += " while the file was loading"
        return failure
    try:
        name, value, note = choose(namespace, path, setting, request.get("function"))
        call = prepare(name, value, path, setting)
        if note is not None:
            note = f"no 'attention' in the file, so it checks {call.description}"
    except UsageError as error:
        return _usage(error)
    except BaseException as exc:  # the learner's constructor failed
        return _failure(exc, path, setting)
    attempts = [True, False] if call.module else [False, True]
    first: dict[str, Any] | None = None
    for batched in attempts:
        marks = _output_marks()
        try:
            output, tensors, recorder = run_call(call, batched, path, shapes, request["seed"])
        except UsageError as error:  # weights that cannot be placed in the learner's module
            return _usage(error)
        except MissingConfig as exc:  # their class wants a size the config cannot give
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
            line = frames[-1].lineno if frames else None
            return _usage(UsageError(str(exc), Location(path, line)))
        except BaseException as exc:
            failure = _failure(exc, path, setting)
            if failure["status"] != "failed":
                return failure
            if first is None:
                first = failure
                _rewind_output(marks)  # the retry's output replaces this attempt's
            continue
        if batched and _sequence_first(call.built) and False in attempts:
            # nn.MultiheadAttention(batch_first=False) reads (1, n, d) as n sequences of one
            # token: it runs, but wrongly; give it the tokens unbatched instead.
            _rewind_output(marks)
            continue
        try:
            return _result(call, note, batched, output, tensors, recorder, path, shapes, wanted)
        except BaseException as exc:  # a returned Tensor subclass whose methods raise, say
            return {"status": "ended", "text": _unreadable(output, exc)}
    assert first is not None
    return first


def run_check(folder: Path, status_fd: int) -> None:
    """Check the learner's file described in ``folder``; never returns (ends the process)."""
    request = json.loads((folder / "request.json").read_text(encoding="utf-8"))
    arguments = torch.load(folder / "arguments.pt", weights_only=True)
    if request.get("heads_argument"):
        arguments["num_heads"] = request["num_heads"]
    # One thread: a child forked from the warm server must not inherit a half-made pool.
    torch.set_num_threads(1)
    torch.softmax(torch.ones(2, 2) @ torch.ones(2, 2), dim=-1)  # start torch's kernels now
    if OPTIMISER.search(_source(request["path"])):
        # torch.optim's constructors import torch._dynamo on first use (seconds): import it
        # before the clock starts, so a training loop is timed on its own work.
        with contextlib.suppress(Exception):
            importlib.import_module("torch._dynamo")
    cap_address_space(request["memory_mb"])  # the server also watches it from outside
    use_temporary_folder(folder)
    torch.compile = _eager_compile
    # The learner's code may change files in this run's folder and its own folder only,
    # nothing outside (the kernel refuses where it can); the parent puts back the progress
    # file of an exercises folder if the code changed it (isolation.run_sandboxed).
    mine = os.path.dirname(os.path.abspath(request["path"]))
    if not confine_writes(str(folder), mine):
        refuse_writes_outside(str(folder), mine)
    os._exit = _fake_exit  # type: ignore[assignment]
    sys.stdin = _NoInput()
    _write(status_fd, b"r")
    try:
        result = check_file(request, arguments)
    except BaseException as exc:  # a failure of this tool, not of the learner's code
        result = {"status": "internal", "text": "".join(traceback.format_exception(exc))}
    try:
        _save(result, folder / "result.tmp")
    except BaseException as exc:
        _save(
            {"status": "internal", "text": f"could not save the result: {exc!r}"},
            folder / "result.tmp",
        )
    _replace(folder / "result.tmp", folder / "result.pt")
    for stream in (sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(BaseException):
            if stream is not None:
                stream.flush()
    _write(status_fd, b"d")
    _exit(0)  # no atexit handlers, no lingering threads of the learner's


def _result(
    call: Call,
    note: str | None,
    batched: bool,
    output: Any,
    tensors: dict[str, torch.Tensor],
    recorder: Recorder,
    path: str,
    shapes: set[tuple[int, ...]],
    wanted: tuple[str, ...] = (),
) -> dict[str, Any]:
    after = {n: _tensor(t) for n, t in tensors.items()}
    discarded = [
        r.index
        for r in recorder.records
        if r.op == "masked_fill"
        and r.result_id is not None
        and r.result_id not in recorder.used
        and recorder.tracked.get(r.result_id) is not output
    ]
    given = _output(output, batched, wanted)
    if COMPILED:
        eager = (
            "torch.compile ran your code eagerly, one operation at a time, so each step is compared"
        )
        note = eager if note is None else f"{note}; {eager}"
    if "field" in given:
        read = f"it returned {given['field'].lstrip('.')}, and that field was compared"
        if given["field"].startswith("["):
            read = f"it returned a dict, and its {given['field']} was compared"
        note = read if note is None else f"{note}; {read}"
    return {
        "status": "ok",
        "called": call.description,
        "note": note,
        "batched": batched,
        "output": given,
        "records": _records(recorder, batched, shapes),
        "mutations": [(m.argument, m.op, m.line) for m in recorder.mutations],
        "discarded": discarded,
        "arguments_after": after,
        "dropout_lines": dropout_lines(call, path),
        "takes_dropout": call.takes_dropout,
    }


def _unreadable(output: Any, exc: BaseException) -> str:
    """One line for a result that raises when it is read (its own message may not be safe)."""
    kind = type(output).__name__
    if isinstance(output, (tuple, list)) and output:
        kind = f"{kind} holding a {type(output[0]).__name__}"
    # type("\x1b]0;...", ...) is a class too: its name is shown, never its control characters.
    kind = "".join(c if c.isprintable() else "?" for c in kind)[:80]
    return (
        f"your code returned a {kind} that raised {type(exc).__name__} when attn check read it; "
        "return a plain torch.Tensor (for a subclass: .as_subclass(torch.Tensor))"
    )


def main(argv: list[str]) -> None:
    run_check(Path(argv[0]), int(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
