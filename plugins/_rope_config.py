"""Reading a Hugging Face ``rope_scaling`` mapping for ``rope -o rope_scaling=...``.

The value is either a file or the mapping itself, written inline in YAML's flow
style (``{rope_type: yarn, factor: 4}``, JSON included). A file is either a
model's ``config.json`` (its ``rope_scaling``, or ``rope_parameters`` as
transformers 5 writes it, with the ``rope_theta`` and ``max_position_embeddings``
beside it) or a file holding the mapping alone. What transformers reads, this
reads: ``rope_type`` (or the older ``type``) ``default``, ``linear``,
``dynamic``, ``yarn`` or ``llama3``, and the keys each of them takes. Where
transformers fills a value in from the rest of the configuration, so does this:
the original context length of ``yarn`` and ``llama3`` from
``max_position_embeddings`` when the mapping has none, ``yarn``'s factor as
``max_position_embeddings / original_max_position_embeddings`` when it has none,
and ``dynamic``'s length from ``max_position_embeddings``.

Anything else (another ``rope_type``, a key the type does not take, a value of the
wrong kind) is one error naming ``file:line:column``: the numbers ``rope`` shows
must be the ones the model would compute.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from tracer.errors import InputError, Location, UsageError

MAX_BYTES = 1024 * 1024
"""A model's config.json is a few kilobytes; anything larger is refused before reading."""

TYPES = {
    "default": "none",
    "linear": "linear",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "llama3": "llama3",
}
"""transformers' ``rope_type`` -> rope's ``scaling``."""

TAKES = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor",),
    "yarn": (
        "factor",
        "original_max_position_embeddings",
        "attention_factor",
        "beta_fast",
        "beta_slow",
        "mscale",
        "mscale_all_dim",
        "truncate",
    ),
    "llama3": (
        "factor",
        "original_max_position_embeddings",
        "low_freq_factor",
        "high_freq_factor",
    ),
}
"""The keys each type takes besides ``rope_type``/``type``, ``rope_theta`` and
``partial_rotary_factor`` (as transformers validates them)."""

NEEDS = {
    "linear": ("factor",),
    "dynamic": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor"),
}
"""Keys transformers requires (yarn's factor may come from the context lengths instead)."""

CONFIG_KEYS = (
    "rope_parameters",
    "rope_scaling",
    "model_type",
    "architectures",
    "max_position_embeddings",
)
"""Keys that make a file a model's configuration rather than a rope_scaling mapping."""

Found = dict[str, tuple[Any, Location | None]]
"""Option name -> (value, where the file gave it)."""


class _Source:
    """Where the mapping came from: a file (errors carry file:line:column) or inline text."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    @property
    def name(self) -> str:
        return f"{Path(self.path).name}'s rope_scaling" if self.path else "-o rope_scaling"

    def where(self, node: Any) -> Location | None:
        if self.path is None:
            return None
        mark = getattr(node, "start_mark", None)
        if mark is None:
            return Location(self.path)
        return Location(self.path, mark.line + 1, mark.column + 1)

    def error(self, message: str, node: Any = None) -> Exception:
        if self.path is None:
            column = getattr(getattr(node, "start_mark", None), "column", None)
            at = f" (column {column + 1})" if column is not None else ""
            return UsageError(f"-o rope_scaling{at}: {message}")
        return InputError(message, self.where(node))


def read(spec: str) -> tuple[Found, str]:
    """The options a ``rope_scaling`` value sets, each with where it was written, and a name
    for its source ("config.json's rope_scaling")."""
    text = spec.strip()
    if text.startswith("{"):
        source = _Source(None)
        root = _compose(text, source)
    else:
        path = Path(text).expanduser()
        source = _Source(str(path))
        root = _compose(_read_text(path, source), source)
    return _options(root, source), source.name


def _read_text(path: Path, source: _Source) -> str:
    try:
        if path.is_dir():
            raise source.error(
                "a folder, not a file: give a model's config.json or a rope_scaling file"
            )
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise source.error(
                f"too large ({size / 2**20:.1f} MB; a rope_scaling file or config.json is at most 1 MB)"
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise source.error(
            "not found (-o rope_scaling takes a model's config.json, a file holding a "
            "rope_scaling mapping, or the mapping itself: '{rope_type: yarn, factor: 4}')"
        ) from None
    except OSError as exc:
        raise source.error(f"cannot read it: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise source.error("not UTF-8 text") from None


class _JsonNode:
    """A value read by ``json`` where YAML could not read the file (tabs): no position."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _compose(text: str, source: _Source) -> Any:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        try:
            return _JsonNode(json.loads(text))
        except ValueError:
            pass
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "it cannot be parsed"
        if isinstance(exc, yaml.reader.ReaderError):  # a control character, before parsing
            character = exc.character
            code = f"U+{character:04X}" if isinstance(character, int) else repr(character)
            problem = f"control character {code} is not allowed"
            offset = exc.position
            line = text.count("\n", 0, offset)
            mark = yaml.Mark(
                "", offset, line, offset - (text.rfind("\n", 0, offset) + 1), None, None
            )
        raise source.error(f"not valid JSON or YAML: {problem}", _Marked(mark)) from None
    except RecursionError:
        raise source.error("nested too deeply to be a rope_scaling mapping") from None


class _Marked:
    def __init__(self, mark: Any) -> None:
        self.start_mark = mark


def _entries(node: Any, source: _Source, what: str) -> dict[str, tuple[Any, Any]]:
    """A mapping node's keys -> (value node, key node); a JSON fallback's, without nodes."""
    if isinstance(node, _JsonNode):
        if not isinstance(node.value, dict):
            raise source.error(f"{what} must be a mapping, got {_kind(node.value)}")
        return {str(k): (_JsonNode(v), None) for k, v in node.value.items()}
    if not isinstance(node, yaml.MappingNode):
        raise source.error(f"{what} must be a mapping of names to values", node)
    entries: dict[str, tuple[Any, Any]] = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise source.error(f"{what} has a key that is not a name", key)
        if key.value in entries:
            raise source.error(f"'{_short(key.value)}' is given twice", key)
        entries[key.value] = (value, key)
    return entries


def _value(node: Any, source: _Source) -> Any:
    """A plain value (number, text, true/false, null) of a node; anything else an error."""
    if isinstance(node, _JsonNode):
        return node.value
    if not isinstance(node, yaml.ScalarNode):
        return node  # a list or mapping: the caller names what it expected
    try:
        return yaml.SafeLoader("").construct_object(node)
    except yaml.YAMLError:
        raise source.error(f"'{_short(node.value)}' is not a plain value", node) from None


def _options(root: Any, source: _Source) -> Found:
    if root is None:
        raise source.error("empty: it must hold a rope_scaling mapping")
    top = _entries(root, source, "the file")
    config: dict[str, tuple[Any, Any]] = {}
    mapping_node = root
    entries: dict[str, tuple[Any, Any]] = top
    if any(key in top for key in CONFIG_KEYS):  # a model's config.json
        config, entries = top, {}
        key = next((key for key in ("rope_parameters", "rope_scaling") if key in top), None)
        if key is not None and _value(top[key][0], source) is not None:
            mapping_node = top[key][0]
            entries = _entries(mapping_node, source, key)
        elif "rope_theta" not in top:
            raise source.error(
                "a model's configuration with no rope_scaling, rope_parameters or "
                "rope_theta: its model may not turn its queries and keys at all"
            )
    found: Found = {}

    def number(key: str, node: Any, *, whole: bool = False) -> float | int:
        value = _value(node, source)
        if whole and not (isinstance(value, int) and not isinstance(value, bool)):
            raise source.error(f"{key} must be a whole number, got {_show(value)}", node)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise source.error(f"{key} must be a number, got {_show(value)}", node)
        if not math.isfinite(value):
            raise source.error(f"{key} must be a finite number, got {_show(value)}", node)
        return value

    if any(isinstance(_value(v, source), yaml.MappingNode) for v, _ in entries.values()) or any(
        isinstance(v, _JsonNode) and isinstance(v.value, dict) for v, _ in entries.values()
    ):
        raise source.error(
            "one rope mapping per layer type: rope computes one: give that layer type's "
            "mapping alone (a file, or inline)",
            mapping_node if config else root,
        )
    type_key = "rope_type" if "rope_type" in entries else "type"
    if type_key not in entries:
        if not entries and config:
            rope_type, type_node = "default", None
        else:
            raise source.error(
                "no rope_type: rope takes " + ", ".join(TYPES),
                mapping_node if config else root,
            )
    else:
        type_node = entries[type_key][0]
        rope_type = _value(type_node, source)
        if rope_type not in TYPES:
            raise source.error(
                f"rope_type {_show(rope_type)} is not one rope computes; it computes "
                + ", ".join(TYPES),
                type_node,
            )
    found["scaling"] = (TYPES[rope_type], source.where(type_node))
    takes = TAKES[rope_type]
    for key, (node, key_node) in entries.items():
        if key in ("rope_type", "type"):
            continue
        if key == "rope_theta":
            found["base"] = (number(key, node), source.where(node))
        elif key == "partial_rotary_factor":
            if number(key, node) != 1:
                raise source.error(
                    f"partial_rotary_factor {_show(_value(node, source))}: rope turns every "
                    "feature of the head (1); it cannot leave some unturned",
                    node,
                )
        elif key not in takes:
            listed = ", ".join(takes) if takes else "no other keys"
            raise source.error(
                f"'{_short(key)}' is not a key of {rope_type} (it takes {listed})",
                key_node or node,
            )
        elif key == "truncate":
            value = _value(node, source)
            if not isinstance(value, bool):
                raise source.error(f"truncate must be true or false, got {_show(value)}", node)
            found[key] = (value, source.where(node))
        else:
            whole = key == "original_max_position_embeddings"
            found[key] = (number(key, node, whole=whole), source.where(node))
    for key in NEEDS.get(rope_type, ()):
        if key not in found:
            raise source.error(
                f"{rope_type} needs '{key}', as transformers does",
                mapping_node if config else root,
            )
    # What transformers fills in from the rest of a model's config.
    if config:
        if "rope_theta" in config and "base" not in found:
            theta = config["rope_theta"][0]
            found["base"] = (number("rope_theta", theta), source.where(theta))
        longest_node = config.get("max_position_embeddings", (None, None))[0]
        longest = (
            None
            if longest_node is None
            else number("max_position_embeddings", longest_node, whole=True)
        )
        if rope_type in ("yarn", "llama3") and "original_max_position_embeddings" not in found:
            outside = config.get("original_max_position_embeddings", (longest_node, None))[0]
            if outside is not None:
                original = number("original_max_position_embeddings", outside, whole=True)
                found["original_max_position_embeddings"] = (original, source.where(outside))
        if rope_type == "dynamic" and longest is not None:
            found["original_max_position_embeddings"] = (longest, source.where(longest_node))
        if rope_type == "yarn" and "factor" not in found and longest is not None:
            original = found.get("original_max_position_embeddings", (None, None))[0]
            if original:
                found["factor"] = (longest / original, source.where(longest_node))
    if rope_type == "yarn" and "factor" not in found:
        raise source.error(
            "yarn needs 'factor' (or a config's max_position_embeddings and "
            "original_max_position_embeddings, whose ratio it is)",
            mapping_node if config else root,
        )
    return found


def _kind(value: Any) -> str:
    return {list: "a list", str: "text", bool: "true or false"}.get(type(value), "a number")


def _short(text: Any) -> str:
    shown = str(text)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _show(value: Any) -> str:
    if isinstance(value, (yaml.SequenceNode, list)):
        return "a list"
    if isinstance(value, (yaml.MappingNode, dict)):
        return "a mapping"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"'{_short(value)}'"
    return f"{value:g}" if isinstance(value, float) else str(value)
