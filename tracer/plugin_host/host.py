"""The plugin host: loads every plugin on its own, so one broken plugin breaks nothing else.

Sources, in order:
1. entry points in the ``attention_tracer`` group (the built-in variants are
   entry points of this very distribution, so they load exactly like anyone's);
2. single ``.py`` files in folders from ``--plugins-dir`` and ``ATTN_PLUGINS_DIR``.

We loop over entry points ourselves instead of calling pluggy's
``load_setuptools_entrypoints``, which stops at the first plugin that fails to
import. Each plugin's ``register_variants`` hook is also called on its own,
for the same reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import select
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from tracer import hookspecs
from tracer.environment import SECONDS, env_limit
from tracer.errors import Location, PluginError, UsageError
from tracer.processes import die_with_parent
from tracer.suggest import did_you_mean
from tracer.tracing import Trace
from tracer.tracing.containment import PluginExit, contained
from tracer.variant import RunContext, Variant, deferred_declarations

ENTRY_POINT_GROUP = "attention_tracer"
DISTRIBUTION = "attention-tracer"
ORIGIN_BUILTIN = "built-in"
ORIGIN_ENTRY_POINT = "entry point"
ORIGIN_FOLDER = "folder"


@dataclass
class PluginRecord:
    """What ``attn plugins`` shows about one plugin."""

    name: str
    origin: str
    source: str
    version: str | None = None
    variants: list[str] = field(default_factory=list)
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    """Problems that did not stop the plugin: a refused variant name, torch defaults put back."""
    roots: tuple[str, ...] = ()
    """The plugin's files and folders: the tracer records lines in every file under them."""

    def as_json(self, host: PluginHost) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "origin": self.origin,
            "source": self.source,
            "variants": [
                {
                    "name": name,
                    "title": host.variants[name].title,
                    "stages": list(host.variants[name].stages),
                    "loops": list(host.variants[name].loops),
                    "options": [
                        {
                            "name": option.name,
                            "type": option.type.__name__,
                            "default": option.default,
                            "help": option.help,
                            "min": option.min,
                            "max": option.max,
                            "choices": list(option.choices) if option.choices else None,
                            "above": option.above,
                            "below": option.below,
                            "optional": option.optional,
                        }
                        for option in host.variants[name].options
                    ],
                    "params": [
                        {
                            "name": param.name,
                            "shape": list(param.shape),
                            "init": param.init,
                            "help": param.help,
                        }
                        for param in host.variants[name].params
                    ],
                    "uses_weights": host.variants[name].uses_weights,
                    "source": host.variants[name].source,
                    "default_source": _input_name(host.variants[name].default_source),
                    "inputs": _input_name(host.variants[name].inputs),
                    "unnormalised": list(host.variants[name].unnormalised),
                }
                for name in self.variants
            ],
            "error": self.error,
            "warnings": list(self.warnings),
        }


def _input_name(inputs: object) -> str | None:
    """A variant's own input set (or default source) by name, for ``attn plugins --json``."""
    if inputs is None or isinstance(inputs, str):
        return inputs
    name = getattr(inputs, "name", None)
    return name if isinstance(name, str) else None


def _normalized(name: str) -> str:
    """A distribution's name as packaging compares them: ``Attn_Banded`` is ``attn-banded``."""
    return "-".join(part for part in re.split(r"[-_.]+", name.lower()) if part)


def _header(dist: metadata.Distribution) -> tuple[str | None, str | None]:
    """A distribution's ``Name`` and ``Version``, read from its metadata's header alone (the
    whole file through the email parser costs ~1 ms a distribution, on every command)."""
    found: dict[str, str] = {}
    for line in _header_lines(dist):
        if not line.strip():
            break  # the header ends at the first blank line
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() in ("name", "version"):
            found.setdefault(key.strip().lower(), value.strip())
    return found.get("name") or None, found.get("version") or None


def _header_lines(dist: metadata.Distribution) -> Iterator[str]:
    """The metadata's lines from the start, read lazily where it is a file (a long README
    follows the header; only the header is wanted)."""
    folder = getattr(dist, "_path", None)
    if isinstance(folder, Path):
        for name in ("METADATA", "PKG-INFO"):
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                with (folder / name).open(encoding="utf-8", errors="replace") as lines:
                    yield from lines
                return
        return
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    yield from text.splitlines()


def _version(dist: metadata.Distribution) -> str | None:
    try:
        return _header(dist)[1]
    except Exception:  # unreadable metadata
        return None


def _where(dist: metadata.Distribution) -> str:
    """Where a distribution's metadata lies (its ``.dist-info`` folder), for messages."""
    return str(getattr(dist, "_path", "") or "") or "an unknown place"


def qualified_name(plugin: str, variant: str) -> str:
    """``PLUGIN:VARIANT``: how a variant whose name another plugin holds is reached."""
    return f"{plugin}:{variant}"


def strict_from_env() -> bool:
    return os.environ.get("ATTN_STRICT_PLUGINS", "").strip().lower() in ("1", "true", "yes", "on")


def dirs_from_env() -> list[str]:
    return [part for part in os.environ.get("ATTN_PLUGINS_DIR", "").split(os.pathsep) if part]


class PluginHost:
    """All plugins and the variants they registered."""

    def __init__(
        self,
        plugin_dirs: Sequence[str | Path] = (),
        *,
        strict: bool | None = None,
        entry_points: bool = True,
        use_env: bool = True,
        builtins_only: bool = False,
    ) -> None:
        self.strict = strict_from_env() if strict is None else strict
        # Read once, before any plugin loads: a bad value is the user's error, not a plugin's.
        self._import_timeout = import_timeout()
        self.manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.manager.add_hookspecs(hookspecs)
        self.plugins: list[PluginRecord] = []
        self.variants: dict[str, Variant] = {}
        self.owner: dict[str, PluginRecord] = {}
        self._records: dict[str, PluginRecord] = {}
        # builtins_only: no code of ours not written here runs (attn check's reference).
        self._builtins_only = builtins_only
        self.broken: dict[str, tuple[PluginRecord, str]] = {}
        """Variants whose declaration cannot work (a bad ``Option``), refused on their own."""
        self.contested: dict[str, list[str]] = {}
        """Variant names two third-party plugins both register: neither has the bare name;
        each is reached as ``PLUGIN:VARIANT`` (the qualified names, in loading order)."""
        self.warnings: list[str] = []
        """Problems of the environment, not of one plugin (an unreadable distribution)."""
        folders = [Path(d) for d in plugin_dirs] + (
            [Path(d) for d in dirs_from_env()] if use_env else []
        )
        if builtins_only:
            folders = []
        # A declaration that cannot work fails its variant alone, not the whole plugin.
        with deferred_declarations():
            if entry_points:
                self._load_entry_points()
            for folder in folders:
                self._load_folder(folder)
            self._register_variants()
        if self.strict and self.failures:
            first = self.failures[0]
            raise PluginError(
                f"plugin '{first.name}' failed: {first.error} (ATTN_STRICT_PLUGINS=1)"
            )
        if self.strict and self.broken:
            name, (record, problem) = next(iter(self.broken.items()))
            raise PluginError(
                f"plugin '{record.name}' failed to declare variant '{name}': {problem} "
                "(ATTN_STRICT_PLUGINS=1)"
            )

    @property
    def failures(self) -> list[PluginRecord]:
        return [record for record in self.plugins if record.error]

    def variant(self, name: str) -> Variant:
        """A variant by name (or ``PLUGIN:VARIANT``), or a UsageError suggesting the closest."""
        if name in self.variants:
            return self.variants[name]
        plugin, colon, short = name.partition(":")
        if colon and self.variants.get(short) is not None and self.owner[short].name == plugin:
            return self.variants[short]  # PLUGIN:VARIANT also reaches a name nobody contests
        if name in self.contested:
            spelled = self.contested[name]
            owners = " and ".join(f"'{self.owner[q].name}'" for q in spelled)
            count = "two" if len(spelled) == 2 else str(len(spelled))
            raise UsageError(
                f"variant '{name}' is registered by {count} plugins, {owners}; name the one you "
                f"mean: {' or '.join(spelled)}"
            )
        if name in self.broken or short in self.broken:
            record, problem = self.broken[name if name in self.broken else short]
            raise PluginError(
                f"variant '{name}' is unavailable: plugin '{record.name}' failed to declare it: "
                f"{problem}"
            )
        failed = [r for r in self.failures if name in (r.name, r.source)]
        if failed:
            raise PluginError(
                f"variant '{name}' is unavailable: plugin '{failed[0].name}' failed: {failed[0].error}"
            )
        known = ", ".join(sorted(self.variants)) or "none"
        raise UsageError(
            f"unknown variant '{name}'{did_you_mean(name, self.variants)}; known variants: {known}"
        )

    def start(self, name: str, context: RunContext, *, check: bool = False) -> Trace:
        """A fresh trace of variant ``name`` (nothing runs until it is iterated); ``check``:
        of what ``attn check`` compares a learner's code with (``Variant(checked_with=...)``)."""
        # multiprocessing and the worker (tens of ms) load with the first trace, not at start-up.
        from tracer.tracing.worker import WorkerTrace, should_isolate

        variant = self.variant(name)
        if check and variant.checked_with is not None:
            variant = variant.checked_with
        owner = self.owner[name if name in self.owner else name.partition(":")[2]]
        # Code we did not write runs in a worker process with a time and a memory limit.
        kind = WorkerTrace if should_isolate(owner.origin == ORIGIN_BUILTIN) else Trace
        return kind(variant, context, plugin=owner.name, roots=owner.roots)

    # Loading -----------------------------------------------------------------

    def _entry_points(self) -> list[tuple[str, metadata.EntryPoint, metadata.Distribution]]:
        """``(distribution name, entry point, distribution)`` for every plugin entry point, in
        the documented order: built-ins first, then by distribution name, then by entry-point
        name (never the order packages happen to sit on the path).

        A distribution whose metadata cannot be read (an interrupted install leaves one with
        no name) is skipped with one warning naming it; of two copies of one distribution on
        the path, the first is loaded (as Python imports it) and the pair is reported."""
        found: list[tuple[str, metadata.EntryPoint, metadata.Distribution]] = []
        first: dict[str, metadata.Distribution] = {}
        unreadable: set[str] = set()
        for entry_point in self._group():
            dist = entry_point.dist
            if dist is None:
                continue
            where = _where(dist)
            try:
                name, _ = _header(dist)
            except Exception as exc:  # whatever unreadable metadata raises
                if where not in unreadable:
                    unreadable.add(where)
                    self.warnings.append(
                        f"skipped the distribution at {where}: its metadata cannot be read "
                        f"({type(exc).__name__}); reinstall or remove it"
                    )
                continue
            if name is None:
                folder = Path(where).name.partition("-")[0]
                if _normalized(folder) == DISTRIBUTION:
                    # attn's own, half-reinstalled: its built-ins are the code running now.
                    name = DISTRIBUTION
                if where not in unreadable:
                    unreadable.add(where)
                    self.warnings.append(
                        f"the distribution at {where} has no name in its metadata (an "
                        "interrupted install leaves one); loaded as attention-tracer by its "
                        "folder's name; reinstall it"
                        if name is not None
                        else f"skipped the distribution at {where}: its metadata has no name "
                        "(an interrupted install leaves one); reinstall or remove it"
                    )
                if name is None:
                    continue
            key = _normalized(name)
            first.setdefault(key, dist)
            found.append((key, entry_point, dist))
        self._report_second_copies(first)
        found.sort(key=lambda item: (item[0] != DISTRIBUTION, item[0], item[1].name))
        return found

    def _group(self) -> list[metadata.EntryPoint]:
        """The group's entry points; when one distribution's cannot be read (its
        ``entry_points.txt`` unreadable), the others', one distribution at a time."""
        try:
            return list(metadata.entry_points(group=ENTRY_POINT_GROUP))
        except Exception:  # one bad distribution must not hide (or crash) the rest
            pass
        points: list[metadata.EntryPoint] = []
        names: set[str] = set()
        for dist in metadata.distributions():
            try:
                mine = [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]
                key = _normalized(_header(dist)[0] or _where(dist))
            except Exception as exc:  # whatever unreadable metadata raises
                self.warnings.append(
                    f"skipped the distribution at {_where(dist)}: its metadata cannot be read "
                    f"({type(exc).__name__}); reinstall or remove it"
                )
                continue
            if key not in names:  # the first copy on the path, as Python imports
                names.add(key)
                points.extend(mine)
        return points

    def _report_second_copies(self, first: dict[str, metadata.Distribution]) -> None:
        """One warning per plugin distribution found twice on the path in two versions (Python
        imports the first; the other is a stale copy the user may think they are running)."""
        reported: set[str] = set()
        for dist in metadata.distributions():
            try:
                if not any(ep.group == ENTRY_POINT_GROUP for ep in dist.entry_points):
                    continue
                name, version = _header(dist)
            except Exception:  # unreadable: said where it is loaded, if it is
                continue
            key = _normalized(name) if name else ""
            kept = first.get(key)
            if kept is None or key in reported or _where(kept) == _where(dist):
                continue
            # One version twice (an editable install's egg-info beside its dist-info) is the
            # same code; two versions are two different plugins under one name.
            if _version(kept) != version:
                reported.add(key)
                self.warnings.append(
                    f"two versions of distribution '{name}' are on the path: {_version(kept)} "
                    f"({_where(kept)}) and {version} ({_where(dist)}); attn loads "
                    f"{_version(kept)}, the first; uninstall the other"
                )

    def _load_entry_points(self) -> None:
        # Built-ins first: they always keep their names (see _register_variants).
        for dist_name, entry_point, dist in self._entry_points():
            origin = ORIGIN_BUILTIN if dist_name == DISTRIBUTION else ORIGIN_ENTRY_POINT
            if self._builtins_only and origin != ORIGIN_BUILTIN:
                continue
            record = PluginRecord(
                name=entry_point.name,
                origin=origin,
                source=entry_point.value,
                version=_version(dist),
            )
            if record.origin != ORIGIN_BUILTIN:
                record.error = _trial_import(entry_point.load, self._import_timeout)
                if record.error is not None:
                    self._add(record, None)
                    continue
            try:
                with _guarded(record, self._import_timeout):
                    module = entry_point.load()
            except _PLUGIN_ESCAPES as exc:  # a plugin may even call sys.exit() on import
                record.error = _describe(exc)
                self._add(record, None)
                continue
            record.roots = _module_roots(module)
            self._add(record, module)

    def _load_folder(self, folder: Path) -> None:
        """Every ``*.py`` file is a plugin, except ``_*.py`` files: those are helpers.

        The folder is loaded as a package of its own, so a plugin can import a
        helper beside it (``from . import _shared`` or ``import _shared``).
        """
        if not folder.is_dir():
            if folder.exists():
                raise UsageError(f"plugins folder {folder} is not a folder")
            raise UsageError(f"plugins folder not found: {folder}")
        package = _folder_package(folder)
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            name = path.stem
            taken = self._records.get(name)
            if taken is not None and taken.origin != ORIGIN_BUILTIN:
                # An installed package (or another folder) has the name: this file is told
                # apart by its folder, and both load.
                name = f"{folder.resolve().name.replace(':', '_')}/{path.stem}"
            record = PluginRecord(
                name=name, origin=ORIGIN_FOLDER, source=str(path), roots=(str(folder),)
            )
            if taken is not None and name != path.stem:
                record.warnings.append(
                    f"plugin '{path.stem}' is also the {taken.origin} plugin of {taken.source}; "
                    f"this file is plugin '{name}'"
                )
            module_name = f"{package}.{path.stem}"
            if name in self._records:  # refused before any of its code runs
                self._add(record, None)
                continue

            def load(path: Path = path, module_name: str = module_name) -> ModuleType:
                spec = importlib.util.spec_from_file_location(module_name, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module
                with _importable(folder):
                    spec.loader.exec_module(module)
                return module

            record.error = _trial_import(load, self._import_timeout, str(path), folder)
            if record.error is not None:
                self._add(record, None)
                continue
            try:
                spec = importlib.util.spec_from_file_location(module_name, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module
                with _guarded(record, self._import_timeout), _importable(folder):
                    spec.loader.exec_module(module)
            except _PLUGIN_ESCAPES as exc:
                sys.modules.pop(module_name, None)
                record.error = _describe(exc, str(path), folder)
                self._add(record, None)
                continue
            record.version = getattr(module, "__version__", None)
            self._add(record, module)

    def _add(self, record: PluginRecord, module: ModuleType | None) -> None:
        if record.name in self._records:
            other = self._records[record.name]
            if other.origin == ORIGIN_BUILTIN and record.origin == ORIGIN_FOLDER:
                record.error = (
                    f"the file name {Path(record.source).name} clashes with the built-in plugin "
                    f"'{record.name}'; rename the file (for example my_{Path(record.source).name})"
                )
            else:
                record.error = f"another plugin is already named '{record.name}'"
            module = None
        self.plugins.append(record)
        self._records.setdefault(record.name, record)
        if module is None:
            return
        try:
            self.manager.register(module, name=record.name)
            # A misspelled hook (say ``register_variant``) would otherwise do nothing, silently.
            self.manager.check_pending()
        except pluggy.PluginValidationError as exc:
            if self.manager.is_registered(module):
                self.manager.unregister(module)
            record.error = _one_line(str(exc)).replace(f"Plugin {record.name!r}", "plugin").strip()
            record.error = f"invalid hook: {record.error}"
        except ValueError as exc:
            record.error = str(exc)

    def _register_variants(self) -> None:
        """Call each plugin's hook on its own, in loading order: built-ins first.

        A name is kept by whoever registered it first, so built-ins always keep
        theirs; a later plugin's clashing variant is refused with a warning and
        its other variants load.
        """
        order = {record.name: index for index, record in enumerate(self.plugins)}
        impls = sorted(
            self.manager.hook.register_variants.get_hookimpls(),
            key=lambda impl: order.get(impl.plugin_name, len(order)),
        )
        for impl in impls:
            record = self._records[impl.plugin_name]
            found: list[Variant] = []

            def register(variant: Variant, _found: list[Variant] = found) -> None:
                if not isinstance(variant, Variant):
                    raise TypeError(
                        f"register() takes a tracer.Variant, not {type(variant).__name__}"
                    )
                _found.append(variant)

            try:
                with _guarded(record, self._import_timeout):
                    impl.function(**{name: register for name in impl.argnames})
            except _PLUGIN_ESCAPES as exc:
                source = getattr(impl.plugin, "__file__", None)
                record.error = f"register_variants raised {_describe(exc, source)}"
                continue
            for variant in found:
                name = variant.name
                if variant.problem is not None:
                    shown = name if isinstance(name, str) else repr(name)
                    self.broken.setdefault(shown, (record, variant.problem))
                    record.warnings.append(f"variant '{shown}' failed: {variant.problem}")
                    continue
                if name in self.contested or (
                    name in self.variants
                    and self.owner[name].origin != ORIGIN_BUILTIN
                    and self.owner[name] is not record
                ):
                    self._contest(record, variant)
                    continue
                if name in self.variants:
                    # A built-in keeps its name; this one is reached by its plugin's.
                    other = self.owner[name]
                    kind = "built-in " if other.origin == ORIGIN_BUILTIN else ""
                    name = qualified_name(record.name, variant.name)
                    if name in self.variants:
                        record.warnings.append(f"variant '{variant.name}' is registered twice")
                        continue
                    record.warnings.append(
                        f"variant '{variant.name}' is reached as '{name}': the name "
                        f"'{variant.name}' belongs to {kind}plugin '{other.name}'"
                    )
                self.variants[name] = variant
                self.owner[name] = record
                record.variants.append(name)

    def _contest(self, record: PluginRecord, variant: Variant) -> None:
        """Two third-party plugins register one name: it is refused for both (never decided
        by which package was installed first), and each is reached as ``PLUGIN:VARIANT``."""
        name = variant.name
        spelled = self.contested.setdefault(name, [])
        if name in self.variants:  # the first holder gives the bare name up
            first = self.owner.pop(name)
            held = self.variants.pop(name)
            moved = qualified_name(first.name, name)
            self.variants[moved], self.owner[moved] = held, first
            first.variants[first.variants.index(name)] = moved
            spelled.append(moved)
        mine = qualified_name(record.name, name)
        if mine in self.variants:
            record.warnings.append(f"variant '{name}' is registered twice")
            return
        self.variants[mine], self.owner[mine] = variant, record
        record.variants.append(mine)
        spelled.append(mine)
        for qualified in spelled:
            owner = self.owner[qualified]
            others = [f"'{self.owner[q].name}'" for q in spelled if q != qualified]
            plural = len(others) > 1
            note = (
                f"variant '{name}' is also registered by plugin{'s' * plural} "
                f"{' and '.join(others)}; {'none' if plural else 'neither'} takes the name: run "
                f"this one as '{qualified}'"
            )
            owner.warnings = [
                w for w in owner.warnings if not w.startswith(f"variant '{name}' is also")
            ]
            owner.warnings.append(note)


def _trial_import(
    load: Callable[[], ModuleType],
    timeout: float,
    source: str | None = None,
    folder: Path | None = None,
) -> str | None:
    """Import a plugin first in a forked child with a hard deadline: None if it loaded there.

    The child is killed (with its whole process group) when the deadline passes, so a
    plugin that swallows every exception, ignores SIGALRM or never returns is reported as
    failed and never imported here. The child also calls the plugin's
    ``register_variants`` hook, which can hang as well. Off Linux (no safe fork) the
    in-process time limit is all there is.
    """
    if not sys.platform.startswith("linux"):
        return None
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    read_end, write_end = os.pipe()
    with _quiet_fork_warning():
        pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _trial_child(load, write_end, source, folder)
    os.close(write_end)
    with contextlib.suppress(OSError):  # also set in the child: whichever runs first
        os.setpgid(pid, pid)
    try:
        return _trial_result(pid, read_end, timeout, source)
    finally:
        os.close(read_end)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # whatever the plugin started goes too
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _trial_child(
    load: Callable[[], ModuleType], out: int, source: str | None, folder: Path | None
) -> None:
    status = 0
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)  # its own group: killed as one, out of reach of the terminal's ^C
        die_with_parent()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # its printing is shown once, by the real import
            os.dup2(devnull, fd)
        # Fresh streams: the inherited ones may be the app's capture, or locked by a thread
        # that does not exist in this process.
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
        inside = str(folder.resolve()) if folder is not None else source

        def where(signum: int, frame: Any) -> None:
            while frame is not None:
                name = frame.f_code.co_filename
                if inside and (name == source or str(Path(name).resolve()).startswith(inside)):
                    os.write(out, f"W{name}\0{frame.f_lineno}\n".encode())
                    return
                frame = frame.f_back

        with contextlib.suppress(ValueError):  # only the main thread may; after fork it is
            signal.signal(signal.SIGUSR1, where)
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)  # the parent's threads did not fork
        with contextlib.redirect_stdout(sys.stderr):
            module = load()
            hook = getattr(module, "register_variants", None)
            if callable(hook):
                # Only a hang matters here: the real call reports what it raises.
                with contextlib.suppress(Exception):
                    hook(register=lambda variant: None)
        answer = "O"
    except BaseException as exc:  # everything a plugin can raise is its own failure
        answer = "E" + _describe(exc, source, folder)
    try:
        data = answer.encode("utf-8", "replace")[: 2**20].replace(b"\n", b" ")
        os.write(out, data + b"\n")
    except BaseException:
        status = 1
    os._exit(status)


def _trial_result(pid: int, fd: int, timeout: float, source: str | None) -> str | None:
    """Wait for the child's answer until the deadline; kill it then."""
    deadline = time.monotonic() + timeout
    data = b""
    asked = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0 and not asked:
            asked = True  # one grace period to say which line it is stuck on
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1)
            deadline = time.monotonic() + 0.5
            continue
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
        if b"\n" in data:  # its answer (or, once asked, its line): a grandchild may hold the pipe
            break
    lines = data.decode("utf-8", "replace").splitlines()
    for line in lines:
        if line.startswith("O") and not asked:
            return None
        if line.startswith("E") and not asked:
            return line[1:]
    if not asked:
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        how = f"was killed by signal {-code}" if code < 0 else f"exit status {code}"
        return f"ended the process while loading ({how})"
    text = (
        f"took more than {timeout:g} s to load and was stopped; "
        f"if it is only slow, raise the limit with {IMPORT_TIMEOUT_ENV}=SECONDS"
    )
    for line in lines:
        if line.startswith("W"):
            name, _, number = line[1:].partition("\0")
            return f"{text} ({Location(name, int(number))})"
    return text


@contextmanager
def _quiet_fork_warning() -> Iterator[None]:
    """Python 3.12+ warns about fork in a threaded process; the child runs no thread's code."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")
        yield


def _describe(exc: BaseException, source: str | None = None, folder: Path | None = None) -> str:
    """``ImportError: No module named 'x' (plugin.py:3)``: the error and where, in one line."""
    if isinstance(exc, SystemExit):
        text = f"called sys.exit({exc.code!r})"
    elif isinstance(exc, (PluginExit, PluginTimeout)):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {_one_line(str(exc))}".rstrip(": ")
    where = None
    if isinstance(exc, SyntaxError) and exc.filename:
        where = Location(exc.filename, exc.lineno)
    elif source is not None:
        inside = str(folder.resolve()) if folder is not None else None
        for frame in traceback.extract_tb(exc.__traceback__):
            mine = frame.filename == source or (
                inside is not None and str(Path(frame.filename).resolve()).startswith(inside)
            )
            if mine:
                where = Location(frame.filename, frame.lineno)
    return f"{text} ({where})" if where else text


_PLUGIN_ESCAPES = (Exception, SystemExit, GeneratorExit, PluginExit)
"""What a plugin's import or hook may raise that must not end the tool."""


IMPORT_TIMEOUT_ENV = "ATTN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 30.0
"""Seconds importing one plugin (or calling its hook) may take."""


class PluginTimeout(Exception):
    """Importing a plugin took longer than the import time limit."""


def import_timeout() -> float:
    return env_limit(IMPORT_TIMEOUT_ENV, DEFAULT_IMPORT_TIMEOUT, SECONDS)


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt plugin code that runs past ``seconds`` (a loop or a sleep at import).

    Only where a signal can interrupt it: on the main thread of a POSIX system. The
    app loads plugins on a worker thread, where a hang leaves the screen responsive.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise PluginTimeout(
            f"took more than {seconds:g} s to load and was stopped; "
            f"if it is only slow, raise the limit with {IMPORT_TIMEOUT_ENV}=SECONDS"
        )

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def _guarded(record: PluginRecord, timeout: float) -> Iterator[None]:
    """Plugin code at import: prints go to stderr (never into --json), defaults are put back,
    and a plugin that never finishes loading is stopped."""
    changed: list[str] = []
    folder = _cwd()
    try:
        with contextlib.redirect_stdout(sys.stderr), contained(changed), _time_limit(timeout):
            yield
    finally:
        # Relative paths the user typed (an export's -o, --inputs) mean the folder they ran in.
        if folder is not None and _cwd() != folder:
            with contextlib.suppress(OSError):
                os.chdir(folder)
                record.warnings.append("changed the working folder at import; put back")
    if changed:
        record.warnings.append(f"changed torch's {', '.join(changed)} at import; put back")


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed
        return None


@contextmanager
def _importable(folder: Path) -> Iterator[None]:
    """Let ``import _helper`` find files beside the plugin while it is imported."""
    path = str(folder.resolve())
    sys.path.insert(0, path)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(path)


def _folder_package(folder: Path) -> str:
    """A package standing for ``folder`` (so ``from . import _x`` works); one per folder."""
    resolved = folder.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    name = f"attention_tracer_plugins_{digest}"
    if name not in sys.modules:
        package = ModuleType(name)
        package.__path__ = [str(resolved)]
        package.__package__ = name
        sys.modules[name] = package
    return name


def _module_roots(module: ModuleType) -> tuple[str, ...]:
    """Where an entry-point plugin's files live: its package folder, or its one file.

    A module inside a package records lines in the whole top-level package
    (its helpers included); ``tracer.builtin_plugins`` stops at its own folder,
    since the rest of ``tracer`` is the tool, not the plugin.
    """
    name = module.__name__
    top = name.split(".")[0]
    if name.startswith("tracer.builtin_plugins"):
        top = "tracer.builtin_plugins"
    if top != name or hasattr(module, "__path__"):
        package = sys.modules.get(top)
        paths = list(getattr(package, "__path__", []) or [])
        if paths:
            return tuple(paths)
    filename = getattr(module, "__file__", None)
    return (filename,) if filename else ()


def _one_line(text: str) -> str:
    return " ".join(text.split())
