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

import importlib.util
import os
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pluggy

from tracer import hookspecs
from tracer.errors import Location, PluginError, UsageError
from tracer.suggest import did_you_mean
from tracer.variant import RunContext, Variant

if TYPE_CHECKING:
    from tracer.tracing import Trace

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
                }
                for name in self.variants
            ],
            "error": self.error,
        }


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
    ) -> None:
        self.strict = strict_from_env() if strict is None else strict
        self.manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.manager.add_hookspecs(hookspecs)
        self.plugins: list[PluginRecord] = []
        self.variants: dict[str, Variant] = {}
        self.owner: dict[str, PluginRecord] = {}
        self._records: dict[str, PluginRecord] = {}
        if entry_points:
            self._load_entry_points()
        folders = [Path(d) for d in plugin_dirs] + (
            [Path(d) for d in dirs_from_env()] if use_env else []
        )
        for folder in folders:
            self._load_folder(folder)
        self._register_variants()
        if self.strict and self.failures:
            first = self.failures[0]
            raise PluginError(
                f"plugin '{first.name}' failed: {first.error} (ATTN_STRICT_PLUGINS=1)"
            )

    @property
    def failures(self) -> list[PluginRecord]:
        return [record for record in self.plugins if record.error]

    def variant(self, name: str) -> Variant:
        """A variant by name, or a UsageError that suggests the closest name."""
        if name in self.variants:
            return self.variants[name]
        failed = [r for r in self.failures if name in (r.name, r.source)]
        if failed:
            raise PluginError(
                f"variant '{name}' is unavailable: plugin '{failed[0].name}' failed: {failed[0].error}"
            )
        known = ", ".join(sorted(self.variants)) or "none"
        raise UsageError(
            f"unknown variant '{name}'{did_you_mean(name, self.variants)}; known variants: {known}"
        )

    def start(self, name: str, context: RunContext) -> Trace:
        """A fresh trace of variant ``name`` (nothing runs until it is iterated)."""
        from tracer.tracing import Trace

        variant = self.variant(name)
        return Trace(variant, context, plugin=self.owner[name].name)

    # Loading -----------------------------------------------------------------

    def _load_entry_points(self) -> None:
        for entry_point in sorted(
            metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name
        ):
            dist = entry_point.dist
            dist_name = (dist.name if dist else "").lower().replace("_", "-")
            origin = ORIGIN_BUILTIN if dist_name == DISTRIBUTION else ORIGIN_ENTRY_POINT
            record = PluginRecord(
                name=entry_point.name,
                origin=origin,
                source=entry_point.value,
                version=dist.version if dist else None,
            )
            try:
                module = entry_point.load()
            except (Exception, SystemExit) as exc:  # a plugin may even call sys.exit() on import
                record.error = _describe(exc)
                self._add(record, None)
                continue
            self._add(record, module)

    def _load_folder(self, folder: Path) -> None:
        if not folder.is_dir():
            raise UsageError(f"plugins folder not found: {folder}")
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            record = PluginRecord(name=path.stem, origin=ORIGIN_FOLDER, source=str(path))
            module_name = f"attention_tracer_plugins.{path.stem}"
            try:
                spec = importlib.util.spec_from_file_location(module_name, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module
                spec.loader.exec_module(module)
            except (Exception, SystemExit) as exc:
                sys.modules.pop(module_name, None)
                record.error = _describe(exc, str(path))
                self._add(record, None)
                continue
            record.version = getattr(module, "__version__", None)
            self._add(record, module)

    def _add(self, record: PluginRecord, module: ModuleType | None) -> None:
        if record.name in self._records:
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
        for impl in reversed(self.manager.hook.register_variants.get_hookimpls()):
            record = self._records[impl.plugin_name]
            found: list[Variant] = []

            def register(variant: Variant, _found: list[Variant] = found) -> None:
                if not isinstance(variant, Variant):
                    raise TypeError(
                        f"register() takes a tracer.Variant, not {type(variant).__name__}"
                    )
                _found.append(variant)

            try:
                impl.function(**{name: register for name in impl.argnames})
            except (Exception, SystemExit) as exc:
                source = getattr(impl.plugin, "__file__", None)
                record.error = f"register_variants raised {_describe(exc, source)}"
                continue
            for variant in found:
                if variant.name in self.variants:
                    other = self.owner[variant.name].name
                    record.error = (
                        f"variant '{variant.name}' is already registered by plugin '{other}'"
                    )
                    continue
                self.variants[variant.name] = variant
                self.owner[variant.name] = record
                record.variants.append(variant.name)


def _describe(exc: BaseException, source: str | None = None) -> str:
    """``ImportError: No module named 'x' (plugin.py:3)``: the error and where, in one line."""
    text = f"{type(exc).__name__}: {_one_line(str(exc))}".rstrip(": ")
    where = None
    if isinstance(exc, SyntaxError) and exc.filename:
        where = Location(exc.filename, exc.lineno)
    elif source is not None:
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == source:
                where = Location(source, frame.lineno)
    return f"{text} ({where})" if where else text


def _one_line(text: str) -> str:
    return " ".join(text.split())
