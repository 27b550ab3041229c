"""``attn new-plugin``: a pip-installable plugin package with one variant, a test and a README."""

from __future__ import annotations

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
    root = resources.files("tracer.learner") / "templates" / "plugin"
    values = names.substitutions()
    written = []
    for template, path in plan:
        text = Template((root / template).read_text(encoding="utf-8")).substitute(values)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
        written.append(path)
    return written
