"""Input sets: tokens, their embeddings, and optional explicit weights.

An inputs file is YAML or JSON::

    tokens: [Your, journey, starts]
    embeddings:         # optional for a variant with its own embeddings (induction)
      - [0.43, 0.15, 0.89]
      - [0.55, 0.87, 0.66]
      - [0.57, 0.85, 0.64]
    weights:            # optional, each (d_in, d_out), applied as x @ W
      query: [[1, 0], [0, 1], [1, 1]]
      key:   [[1, 0], [0, 1], [1, 1]]
      value: [[1, 0], [0, 1], [1, 1]]
    padding: [false, false, true]   # optional: tokens never attended to
    source:             # optional: a second sequence, for cross-attention
      tokens: [Le, chat]
      embeddings: [[0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]]   # a width of its own
      weights:          # optional, each (source width, d_out): keys and values from it
        key:   [[1, 0], [0, 1], [1, 1], [0, 0]]
        value: [[1, 0], [0, 1], [1, 1], [0, 0]]
    params:             # optional: the variant's own learnt parameters (Variant(params=...))
      rel_bias: [0.5, -0.25, 0.0]

or, for a variant with its own tokenizer (``model``), text in place of tokens::

    text: "The cat sat. The cat sat."

A ``.json`` file says the same in JSON and is read the same.

Every problem is reported at its line and column. Nothing here imports torch.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tracer.errors import InputError, Location, UsageError
from tracer.inputs.builtin import BUILTIN_INPUTS
from tracer.inputs.sets import InputSet as InputSet
from tracer.inputs.sets import Matrix, ParamValue
from tracer.inputs.sets import SourceSequence as SourceSequence
from tracer.suggest import did_you_mean, one_of
from tracer.yamldoc import (
    DocumentError,
    Problem,
    compose,
    mapping_items,
    problem_at,
    read_text,
    value_of,
)

MAX_TOKENS = 16_384
"""The most tokens an inputs file may hold: their score matrix is the most values a step
may show (``tracer.tracing.checks.MAX_ELEMENTS``, 16,384²)."""
MAX_VALUES = 2**20
"""The most numbers an inputs file may hold (16,384 tokens of width 64; weights included)."""
MAX_YAML_CHARACTERS = 4 * 2**20
"""The largest YAML inputs file read (composing YAML runs at about a megabyte a second)."""
MAX_FILE_BYTES = 64 * 2**20
"""Only a guard against reading a huge file into memory: the real limits are the two above."""
WEIGHT_NAMES = ("query", "key", "value")
KEYS = ("tokens", "embeddings", "weights", "padding", "description", "source", "params", "text")
SOURCE_KEYS = ("tokens", "embeddings", "weights")
SOURCE_WEIGHT_NAMES = ("key", "value")


def load_inputs(spec: str) -> InputSet:
    """A built-in input set by name, or a YAML/JSON file by path. Raises InputError/UsageError."""
    if spec in BUILTIN_INPUTS:
        return BUILTIN_INPUTS[spec]
    path = Path(spec)
    looks_like_file = path.suffix.lower() in (".yaml", ".yml", ".json") or "/" in spec
    if not looks_like_file and not path.exists():
        raise UsageError(
            f"unknown input set '{spec}'{did_you_mean(spec, BUILTIN_INPUTS)}; "
            f"built-in sets: {one_of(BUILTIN_INPUTS)}, or give a .yaml/.json file"
        )
    if not path.is_file():
        if path.is_dir():
            problem = "is a directory, not a file"
        elif path.exists():  # a FIFO, /dev/zero: reading it could wait or run for ever
            problem = "is not a regular file"
        else:
            problem = "not found"
        raise InputError(f"inputs file {problem}: {spec}")
    try:
        text = read_text(path, what="inputs file", limit=MAX_FILE_BYTES)
        if path.suffix.lower() == ".json":
            document = _check_json(text, str(path))
            # A well-formed JSON file is read as JSON (a 4.5 MB file in a second, not minutes);
            # only a file with a problem goes through YAML, which knows every line and column.
            fast = _plain_input_set(document, str(path), path.stem)
            if fast is not None:
                return _within_limits(fast, None)
            text = text.replace("\t", " ")  # same columns; YAML refuses tabs that JSON allows
        if len(text) > MAX_YAML_CHARACTERS:
            # Reading YAML (or finding the line of a JSON file's problem) takes minutes here.
            what = "a JSON file with a problem in it" if path.suffix.lower() == ".json" else "YAML"
            raise InputError(
                f"inputs file is {len(text) / 2**20:.1f} MB; {what} is read up to "
                f"{MAX_YAML_CHARACTERS // 2**20} MB (a well-formed JSON file up to "
                f"{MAX_FILE_BYTES // 2**20} MB)",
                Location(str(path)),
            )
        node = compose(text, str(path))
    except DocumentError as exc:
        raise _first(exc.problems) from None
    except RecursionError:  # [[[[... 100,000 deep: an input set is three levels deep
        raise InputError(
            "inputs file is nested too deeply; an input set is a mapping of lists of numbers",
            Location(str(path), 1, 1),
        ) from None
    input_set, problems = parse_input_node(node, str(path), name=path.stem)
    if problems or input_set is None:
        raise _first(problems)
    return _within_limits(input_set, node)


def inputs_from_data(data: Mapping[str, Any], where: str, *, name: str = "inline") -> InputSet:
    """An input set given as data, as an inputs file gives it (``{"tokens": [...],
    "embeddings": [[...], ...]}``), checked exactly as such a file is (:func:`input_data` is
    the reverse). ``where`` names it in messages. Raises InputError."""
    try:
        text = yaml.safe_dump(_plain_data(data), sort_keys=False, allow_unicode=True)
        node = compose(text, where)
    except DocumentError as exc:
        raise _first(exc.problems) from None
    except (yaml.YAMLError, RecursionError, TypeError, ValueError):
        raise InputError(
            "inputs must be a mapping of tokens (a list of text) and embeddings "
            "(lists of numbers), as an inputs file writes them",
            Location(where),
        ) from None
    input_set, problems = parse_input_node(node, where, name=name)
    if problems or input_set is None:
        raise _first(problems)
    return _within_limits(input_set, node)


def _plain_data(data: object) -> object:
    """Mappings, lists and scalars only (tuples as lists), for YAML to write out."""
    if isinstance(data, Mapping):
        return {str(key): _plain_data(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_plain_data(item) for item in data]
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    raise TypeError(type(data).__name__)


def input_data(input_set: InputSet) -> dict[str, Any]:
    """``input_set`` as an inputs file writes it: plain data (lists, numbers, text) that
    :func:`inputs_from_data` reads back to the same set."""
    data: dict[str, Any] = {"tokens": list(input_set.tokens)}
    if input_set.description:
        data["description"] = input_set.description
    if input_set.embeddings:
        data["embeddings"] = [list(row) for row in input_set.embeddings]
    if input_set.weights:
        data["weights"] = {
            key: [list(row) for row in matrix] for key, matrix in input_set.weights.items()
        }
    if input_set.padding is not None:
        data["padding"] = list(input_set.padding)
    source = input_set.source_sequence
    if source is not None:
        data["source"] = {
            "tokens": list(source.tokens),
            "embeddings": [list(row) for row in source.embeddings],
        }
        if source.weights:
            data["source"]["weights"] = {
                key: [list(row) for row in matrix] for key, matrix in source.weights.items()
            }
    if input_set.params:
        data["params"] = {name: _nested(value) for name, value in input_set.params.items()}
    return data


def _nested(value: ParamValue) -> object:
    """A parameter's values in its shape (a number for shape ())."""

    def build(shape: tuple[int, ...], values: tuple[float, ...]) -> object:
        if not shape:
            return values[0]
        step = len(values) // shape[0] if shape[0] else 0
        return [build(shape[1:], values[i * step : (i + 1) * step]) for i in range(shape[0])]

    return build(value.shape, value.values)


def _within_limits(input_set: InputSet, node: yaml.Node | None) -> InputSet:
    """Refuse what the tool could not draw: too many tokens or values (not too many bytes)."""
    where = Location(input_set.source, 1, 1)
    if isinstance(node, yaml.MappingNode):
        for key, key_node, _ in mapping_items(node):
            if key == "tokens":
                where = problem_at(key_node, "", input_set.source).location
    count = len(input_set.tokens)
    if count > MAX_TOKENS:
        raise InputError(
            f"{count:,} tokens; the most the tool can draw is {MAX_TOKENS:,} "
            f"(their score matrix is {MAX_TOKENS:,}² values)",
            where,
        )
    values = (
        count * input_set.d_in
        + sum(len(matrix) * len(matrix[0]) for matrix in (input_set.weights or {}).values())
        + sum(len(param.values) for param in (input_set.params or {}).values())
    )
    if values > MAX_VALUES:
        raise InputError(
            f"{values:,} numbers (embeddings and weights); the most an inputs file may hold "
            f"is {MAX_VALUES:,} (for example {MAX_TOKENS:,} tokens of width 64)",
            where,
        )
    return input_set


def _plain_input_set(document: object, path: str, name: str) -> InputSet | None:
    """The input set of a parsed JSON document with nothing wrong in it, else None."""

    def number(value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        try:
            return math.isfinite(value) and abs(value) <= FLOAT32_MAX
        except OverflowError:  # an integer beyond any float: the slow path says where
            return False

    def matrix(value: object) -> Matrix | None:
        if not isinstance(value, list) or not value:
            return None
        if not all(isinstance(row, list) and row and len(row) == len(value[0]) for row in value):
            return None
        if not all(number(cell) for row in value for cell in row):
            return None
        return tuple(tuple(float(cell) for cell in row) for row in value)

    if not isinstance(document, dict) or not set(document) <= set(KEYS):
        return None
    if "source" in document or "params" in document:
        return None  # read by the one parser below, exactly as the same YAML is
    tokens = document.get("tokens")
    if not isinstance(tokens, list) or not tokens:
        return None
    if not all(isinstance(token, str) and token for token in tokens):
        return None
    embeddings = matrix(document.get("embeddings"))
    if embeddings is None or len(embeddings) != len(tokens):
        return None
    weights: dict[str, Matrix] | None = None
    if "weights" in document:
        given = document["weights"]
        if not isinstance(given, dict) or set(given) != set(WEIGHT_NAMES):
            return None
        weights = {}
        for key in WEIGHT_NAMES:
            found = matrix(given[key])
            if found is None or len(found) != len(embeddings[0]):
                return None
            if weights and len(found[0]) != len(weights["query"][0]):
                return None
            weights[key] = found
    padding = document.get("padding")
    if padding is not None and not (
        isinstance(padding, list)
        and len(padding) == len(tokens)
        and all(isinstance(item, bool) for item in padding)
    ):
        return None
    description = document.get("description", "")
    if not isinstance(description, str):
        return None
    return InputSet(
        name=name,
        tokens=tuple(tokens),
        embeddings=embeddings,
        weights=weights,
        padding=tuple(padding) if padding is not None else None,
        description=description,
        source=path,
    )


def _first(problems: list[Problem]) -> InputError:
    problem = problems[0]
    return InputError(problem.message, problem.location)


def _check_json(text: str, path: str) -> object:
    def refuse_constant(name: str) -> float:
        return math.nan  # reported below, with its position, as a non-finite value

    try:
        return json.loads(text, parse_constant=refuse_constant, object_pairs_hook=_no_repeats)
    except json.JSONDecodeError as exc:
        problem = Problem(exc.lineno, exc.colno, f"malformed JSON: {exc.msg}", path)
        raise DocumentError([problem]) from None


_REPEATED = "\0repeated key"


def _no_repeats(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object; one with a repeated key is marked, so YAML reports it at its line."""
    document = dict(pairs)
    if len(document) != len(pairs):
        document[_REPEATED] = True
    return document


def parse_input_node(
    node: yaml.Node | None, path: str, *, name: str = "inputs"
) -> tuple[InputSet | None, list[Problem]]:
    """Validate a composed YAML node as an input set, collecting every problem."""
    problems: list[Problem] = []
    if node is None:
        return None, [
            Problem(1, 1, "inputs file is empty; it needs 'tokens' and 'embeddings'", path)
        ]
    if not isinstance(node, yaml.MappingNode):
        message = "inputs must be a mapping with 'tokens' and 'embeddings'"
        return None, [problem_at(node, message, path)]

    entries = {}
    for key, key_node, value_node in mapping_items(node):
        if key not in KEYS:
            hint = did_you_mean(key, KEYS)
            message = f"unknown key '{key}'{hint}; expected one of {', '.join(KEYS)}"
            problems.append(problem_at(key_node, message, path))
        entries[key] = value_node
    text = None
    if "text" in entries:
        value = entries["text"]
        if isinstance(value, yaml.ScalarNode) and str(value.value).strip():
            text = str(value.value)
        else:
            problems.append(problem_at(value, "text must be a non-empty string", path))
        if "tokens" in entries or "embeddings" in entries:
            problems.append(
                problem_at(
                    node,
                    "give 'text' alone (the variant's tokenizer splits it) or 'tokens', not both",
                    path,
                )
            )
        if problems:
            return None, problems
        return InputSet(name=name, tokens=(), embeddings=(), source=path, text=text), []
    if "tokens" not in entries:
        problems.append(problem_at(node, "missing 'tokens'", path))
    if "embeddings" not in entries and "weights" in entries:
        problems.append(problem_at(node, "missing 'embeddings' (the weights apply to them)", path))
    if problems:
        return None, problems

    tokens = _tokens(entries["tokens"], path, problems)
    # Tokens alone are enough for a variant with its own embeddings (a trained model);
    # a variant that needs embeddings says so when it is given such inputs.
    embeddings: Matrix | None = ()
    if "embeddings" in entries:
        embeddings = _matrix(entries["embeddings"], "embeddings", path, problems)
    if tokens is not None and embeddings and len(tokens) != len(embeddings):
        message = (
            f"{len(tokens)} tokens but {len(embeddings)} embedding rows; give one row per token"
        )
        problems.append(problem_at(entries["embeddings"], message, path))
    weights = None
    if "weights" in entries and embeddings is not None:
        # With a source, the keys and values may come from it alone (cross-attention uses no
        # main key and value weights): then 'weights' may give W_query alone.
        weights = _weights(
            entries["weights"], len(embeddings[0]), path, problems, query_alone="source" in entries
        )
    padding = None
    if "padding" in entries and tokens is not None:
        padding = _padding(entries["padding"], len(tokens), path, problems)
    source_sequence = None
    if "source" in entries and embeddings is not None:
        d_out = len(weights["query"][0]) if weights else None
        source_sequence = _source(entries["source"], d_out, path, problems)
    params = None
    if "params" in entries:
        params = _params(entries["params"], path, problems)
    description = ""
    if "description" in entries:
        value = entries["description"]
        if isinstance(value, yaml.ScalarNode):
            description = str(value.value)
        else:
            problems.append(problem_at(value, "description must be text", path))
    if problems or tokens is None or embeddings is None:
        return None, problems
    return (
        InputSet(
            name=name,
            tokens=tokens,
            embeddings=embeddings,
            weights=weights,
            padding=padding,
            description=description,
            source=path,
            source_sequence=source_sequence,
            params=params,
        ),
        [],
    )


def _source(
    node: yaml.Node, d_out: int | None, path: str, problems: list[Problem]
) -> SourceSequence | None:
    """The ``source:`` section: tokens and embeddings of their own width, optional weights."""
    if not isinstance(node, yaml.MappingNode):
        problems.append(
            problem_at(node, "source must be a mapping with 'tokens' and 'embeddings'", path)
        )
        return None
    entries = {}
    found = len(problems)
    for key, key_node, value_node in mapping_items(node):
        if key not in SOURCE_KEYS:
            hint = did_you_mean(key, SOURCE_KEYS)
            message = f"unknown key 'source.{key}'{hint}; expected one of {', '.join(SOURCE_KEYS)}"
            problems.append(problem_at(key_node, message, path))
        entries[key] = value_node
    for required in ("tokens", "embeddings"):
        if required not in entries:
            problems.append(problem_at(node, f"source is missing '{required}'", path))
    if len(problems) > found:
        return None
    tokens = _tokens(entries["tokens"], path, problems)
    embeddings = _matrix(entries["embeddings"], "source.embeddings", path, problems)
    if tokens is None or embeddings is None:
        return None
    if len(tokens) != len(embeddings):
        message = (
            f"source has {len(tokens)} tokens but {len(embeddings)} embedding rows; "
            "give one row per token"
        )
        problems.append(problem_at(entries["embeddings"], message, path))
        return None
    weights = None
    if "weights" in entries:
        weights = _source_weights(entries["weights"], len(embeddings[0]), d_out, path, problems)
        if weights is None:
            return None
    return SourceSequence(tokens=tokens, embeddings=embeddings, weights=weights)


def _source_weights(
    node: yaml.Node, d_in: int, d_out: int | None, path: str, problems: list[Problem]
) -> dict[str, Matrix] | None:
    """``source.weights``: key and value, (source width, d_out), beside the main weights
    (at least ``query``: the queries come from the main sequence, and their d_out is the
    source weights' too)."""
    if d_out is None:
        message = (
            "source.weights needs the main 'weights' too: the queries come from the main "
            "sequence, so its query weights must be given with them (weights: {query: ...})"
        )
        problems.append(problem_at(node, message, path))
        return None
    if not isinstance(node, yaml.MappingNode):
        problems.append(
            problem_at(node, "source.weights must be a mapping with key and value", path)
        )
        return None
    found = {}
    for key, key_node, value_node in mapping_items(node):
        if key not in SOURCE_WEIGHT_NAMES:
            hint = did_you_mean(key, SOURCE_WEIGHT_NAMES)
            message = f"unknown weight 'source.weights.{key}'{hint}; expected key and value"
            problems.append(problem_at(key_node, message, path))
            return None
        found[key] = value_node
    missing = [name for name in SOURCE_WEIGHT_NAMES if name not in found]
    if missing:
        problems.append(problem_at(node, f"source.weights is missing {', '.join(missing)}", path))
        return None
    matrices: dict[str, Matrix] = {}
    for name in SOURCE_WEIGHT_NAMES:
        label = f"source.weights.{name}"
        matrix = _matrix(found[name], label, path, problems)
        if matrix is None:
            return None
        if len(matrix) != d_in or len(matrix[0]) != d_out:
            message = (
                f"{label} is {len(matrix)}×{len(matrix[0])} but must be source width × d_out "
                f"= {d_in}×{d_out} (the source embeddings' width, the main weights' d_out)"
            )
            problems.append(problem_at(found[name], message, path))
            return None
        matrices[name] = matrix
    return matrices


PARAM_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _params(node: yaml.Node, path: str, problems: list[Problem]) -> dict[str, ParamValue] | None:
    """``params:``: a variant's learnt parameters by name, each a number or nested lists.

    Whether the names and shapes fit is checked against the variant when it runs
    (``Variant(params=...)`` declares them); here only that each is a rectangular block
    of finite numbers."""
    if not isinstance(node, yaml.MappingNode):
        message = "params must be a mapping from a parameter's name to its values"
        problems.append(problem_at(node, message, path))
        return None
    found: dict[str, ParamValue] = {}
    for name, key_node, value_node in mapping_items(node):
        if not PARAM_NAME.match(name):
            message = f"parameter name '{name}' must be lower-case letters, digits and underscores"
            problems.append(problem_at(key_node, message, path))
            continue
        block = _block(value_node, f"params.{name}", path, problems)
        if block is None:
            continue
        shape, values = block
        found[name] = ParamValue(
            shape=shape,
            values=values,
            where=problem_at(value_node, "", path).location,
            name_at=problem_at(key_node, "", path).location,
        )
    return found


def _block(
    node: yaml.Node, label: str, path: str, problems: list[Problem]
) -> tuple[tuple[int, ...], tuple[float, ...]] | None:
    """A number, or a rectangular nesting of lists of numbers: its shape and its values."""
    if isinstance(node, yaml.ScalarNode):
        number = _number(node, label, path, problems)
        return None if number is None else ((), (number,))
    if not isinstance(node, yaml.SequenceNode):
        problems.append(problem_at(node, f"{label} must be a number or a list", path))
        return None
    if not node.value:
        problems.append(problem_at(node, f"{label} is empty", path))
        return None
    parts: list[tuple[tuple[int, ...], tuple[float, ...]]] = []
    for index, item in enumerate(node.value):
        part = _block(item, f"{label}[{index + 1}]", path, problems)
        if part is None:
            return None
        if parts and part[0] != parts[0][0]:
            message = (
                f"{label}[{index + 1}] has shape {_shape(part[0])} but {label}[1] has "
                f"{_shape(parts[0][0])}; every entry must have the same shape"
            )
            problems.append(problem_at(item, message, path))
            return None
        parts.append(part)
    values = tuple(value for _, block in parts for value in block)
    return (len(parts), *parts[0][0]), values


def _shape(shape: tuple[int, ...]) -> str:
    return "×".join(str(size) for size in shape) if shape else "a single number"


def _tokens(node: yaml.Node, path: str, problems: list[Problem]) -> tuple[str, ...] | None:
    if not isinstance(node, yaml.SequenceNode):
        problems.append(problem_at(node, "tokens must be a list of words", path))
        return None
    if not node.value:
        problems.append(problem_at(node, "no tokens: give at least one", path))
        return None
    tokens = []
    for index, item in enumerate(node.value):
        if not isinstance(item, yaml.ScalarNode) or item.value == "":
            problems.append(problem_at(item, f"token {index + 1} must be a word", path))
            return None
        tokens.append(str(item.value))
    return tuple(tokens)


def _matrix(node: yaml.Node, label: str, path: str, problems: list[Problem]) -> Matrix | None:
    """A non-empty, rectangular list of lists of finite numbers."""
    if not isinstance(node, yaml.SequenceNode):
        problems.append(problem_at(node, f"{label} must be a list of rows of numbers", path))
        return None
    if not node.value:
        problems.append(problem_at(node, f"{label} is empty: give one row per token", path))
        return None
    rows: list[tuple[float, ...]] = []
    found = len(problems)
    for r, row in enumerate(node.value, start=1):
        if not isinstance(row, yaml.SequenceNode):
            problems.append(problem_at(row, f"{label} row {r} must be a list of numbers", path))
            continue
        if not row.value:
            problems.append(problem_at(row, f"{label} row {r} is empty", path))
            continue
        values = []
        for c, cell in enumerate(row.value, start=1):
            number = _number(cell, f"{label}[{r}][{c}]", path, problems)
            values.append(number if number is not None else 0.0)
        if rows and len(values) != len(rows[0]):
            message = (
                f"{label} row {r} has {_values(len(values))} but row 1 has {len(rows[0])}; "
                "every row must be the same length"
            )
            problems.append(problem_at(row, message, path))
        rows.append(tuple(values))
    if len(problems) > found:
        return None
    return tuple(rows)


def _plain_float(node: yaml.ScalarNode) -> float | None:
    if node.style is not None:  # quoted: the author said text
        return None
    try:
        return float(str(node.value))
    except ValueError:
        return None


def _values(count: int) -> str:
    return f"{count} value" if count == 1 else f"{count} values"


FLOAT32_MAX = 3.4028234663852886e38
"""The largest float32: embeddings and weights become float32 tensors."""
_NON_FINITE_WORDS = {"nan", ".nan", "inf", ".inf", "-inf", "-.inf", "+inf", "infinity", "-infinity"}


def _number(node: yaml.Node, label: str, path: str, problems: list[Problem]) -> float | None:
    if not isinstance(node, yaml.ScalarNode):
        problems.append(problem_at(node, f"{label} must be a number", path))
        return None
    text = str(node.value)
    if text.lower() in _NON_FINITE_WORDS:
        problems.append(problem_at(node, f"{label} is {text}; values must be finite numbers", path))
        return None
    # YAML 1.1 reads 1e-3 (no dot) as text; people mean a number, so accept it unquoted.
    numeric = node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    value = float(value_of(node)) if numeric else _plain_float(node)
    if value is None:
        shown = text if text else "empty"
        problems.append(problem_at(node, f"{label} is '{shown}', not a number", path))
        return None
    if not math.isfinite(value):  # e.g. 1e999
        problems.append(problem_at(node, f"{label} is not a finite number", path))
        return None
    if abs(value) > FLOAT32_MAX:  # e.g. 1e308: infinite once it is a float32 tensor
        problems.append(problem_at(node, f"{label} is {text}, beyond float32's ±3.4028e+38", path))
        return None
    return value


def _weights(
    node: yaml.Node, d_in: int, path: str, problems: list[Problem], *, query_alone: bool = False
) -> dict[str, Matrix] | None:
    """``weights``: query, key and value, each (d_in, d_out); ``query_alone``: the inputs
    have a source, so query may be given alone (key and value are then drawn from the seed)."""
    if not isinstance(node, yaml.MappingNode):
        problems.append(
            problem_at(node, "weights must be a mapping with query, key and value", path)
        )
        return None
    found = {}
    for key, key_node, value_node in mapping_items(node):
        if key not in WEIGHT_NAMES:
            hint = did_you_mean(key, WEIGHT_NAMES)
            message = f"unknown weight '{key}'{hint}; expected query, key and value"
            problems.append(problem_at(key_node, message, path))
            continue
        found[key] = value_node
    missing = [name for name in WEIGHT_NAMES if name not in found]
    if missing and not (query_alone and missing == ["key", "value"]):
        hint = (
            "; with a 'source:' section, query may be given alone (the keys and values "
            "then come from the source)"
            if query_alone
            else ""
        )
        problems.append(problem_at(node, f"weights is missing {', '.join(missing)}{hint}", path))
        return None
    matrices: dict[str, Matrix] = {}
    for name in WEIGHT_NAMES:
        if name not in found:
            continue
        matrix = _matrix(found[name], f"weights.{name}", path, problems)
        if matrix is None:
            return None
        if len(matrix) != d_in:
            message = (
                f"weights.{name} has {len(matrix)} rows but the embeddings have {d_in} "
                f"columns; it must be d_in×d_out = {d_in}×d_out"
            )
            problems.append(problem_at(found[name], message, path))
            return None
        d_out = len(matrices["query"][0]) if matrices else len(matrix[0])
        if len(matrix[0]) != d_out:
            message = (
                f"weights.{name} has {len(matrix[0])} columns but weights.query has {d_out}; "
                "query, key and value share d_out"
            )
            problems.append(problem_at(found[name], message, path))
            return None
        matrices[name] = matrix
    return matrices


def _padding(
    node: yaml.Node, count: int, path: str, problems: list[Problem]
) -> tuple[bool, ...] | None:
    if not isinstance(node, yaml.SequenceNode) or not all(
        isinstance(item, yaml.ScalarNode) and item.tag == "tag:yaml.org,2002:bool"
        for item in node.value
    ):
        problems.append(
            problem_at(node, "padding must be a list of true/false, one per token", path)
        )
        return None
    if len(node.value) != count:
        message = f"padding has {len(node.value)} entries but there are {count} tokens"
        problems.append(problem_at(node, message, path))
        return None
    return tuple(item.value.lower() in ("true", "yes", "on") for item in node.value)
