"""``attn new-plugin``: a pip-installable plugin package with one variant, a test and a README."""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from tracer.errors import UsageError
from tracer.variant import VARIANT_NAME

# (template, path in the package); $module in a path becomes the module name.
FILES = (
    ("pyproject.toml.tmpl", "pyproject.toml"),
    ("module.py.tmpl", "$module.py"),
    ("tests/test_variant.py.tmpl", "tests/test_$module.py"),
    ("README.md.tmpl", "README.md"),
    ("gitignore.tmpl", ".gitignore"),
)


@dataclass(frozen=True)
class PluginNames:
    name: str
    """The variant and entry-point name, e.g. ``sparse-window``."""

    @property
    def module(self) -> str:
        return "attn_" + self.name.replace("-", "_")

    @property
    def distribution(self) -> str:
        return "attn-" + self.name

    @property
    def function(self) -> str:
        return self.name.replace("-", "_")

    def substitutions(self) -> dict[str, str]:
        title = self.name.replace("-", " ").capitalize()
        return {
            "name": self.name,
            "module": self.module,
            "distribution": self.distribution,
            "function": self.function,
            "title": f"{title}: scaled dot-product attention, ready to change",
        }


def check_name(name: str, taken: set[str] | frozenset[str] = frozenset()) -> PluginNames:
    if not VARIANT_NAME.match(name) or name.endswith("-"):
        raise UsageError(
            f"plugin name '{name}' must be lower-case letters, digits and hyphens, "
            "starting with a letter (e.g. sparse-window)"
        )
    if name in taken:
        raise UsageError(
            f"a variant named '{name}' already exists (see 'attn plugins'); choose another name"
        )
    return PluginNames(name)


def planned_files(names: PluginNames, folder: Path) -> list[tuple[str, Path]]:
    return [
        (template, folder / Template(target).substitute(module=names.module))
        for template, target in FILES
    ]


def scaffold(names: PluginNames, folder: Path) -> list[Path]:
    """Write the package into ``folder``; refuse, before writing anything, to replace a file."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} exists and is not a folder")
    plan = planned_files(names, folder)
    for _, path in plan:
        if path.exists():
            raise UsageError(
                f"{path} already exists; attn new-plugin never overwrites files (choose another DIR)"
            )
    root = resources.files("tracer.learner.exercises") / "templates" / "plugin"
    # Nothing of this machine goes into the files (no environment's path): the package is
    # shared and travels; the "Next:" lines printed after writing name this machine's tools.
    values = names.substitutions()
    written = []
    for template, path in plan:
        text = Template((root / template).read_text(encoding="utf-8")).substitute(values)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
        written.append(path)
    return written


def environment_bin(folder: Path) -> str | None:
    """The ``bin/`` of the virtual environment this attn runs in, as seen from ``folder``
    (relative when it is near, else absolute); None outside a virtual environment."""
    if sys.prefix == sys.base_prefix:
        return None
    # Not resolved: a virtual environment's python is a link to the system's.
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    relative = os.path.relpath(bin_dir, os.path.abspath(folder))
    return relative if relative.split(os.sep).count("..") <= 2 else bin_dir


def next_steps(names: PluginNames, folder: Path) -> list[str]:
    """The commands that install, run and test the new package, as they run in a fresh shell.

    The package must go into the environment this attn runs in, and a fresh shell has none of
    that environment's tools on PATH (or the system's ``pip`` and ``pytest`` there), so each
    command names that environment's ``bin/``.
    """
    tools = environment_bin(folder)
    if tools is None:  # no virtual environment: this python's own pip and pytest
        python = shlex.quote(sys.executable)
        pip, attn, pytest = f"{python} -m pip", "attn", f"{python} -m pytest"
    else:
        pip, attn, pytest = (shlex.quote(f"{tools}/{tool}") for tool in ("pip", "attn", "pytest"))
    return [
        f"cd {shlex.quote(str(folder))}",
        f"{pip} install -e '.[test]'",
        f"{attn} trace {names.name}",
        pytest,
    ]
