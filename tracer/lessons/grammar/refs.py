"""Naming a tensor: a variant, one of its stages, a tensor, a query and operations (a show,
a compare side, a quiz's answer or shown tensor, a live value)."""

from __future__ import annotations

from dataclasses import replace

import yaml

from tracer.lessons.format import (
    ANSWER,
    BINARY_OPERATIONS,
    COMPARISONS,
    FLAG_OPERATIONS,
    OPERATIONS,
    REDUCTIONS,
    REF,
    SHOWN,
)
from tracer.lessons.grammar.base import Entries, _Scope
from tracer.lessons.grammar.nodes import (
    _NULL,
    _at,
    _comparison,
    _is_null,
    _kind,
    _listing,
    _scalar,
    _tokens,
)
from tracer.lessons.grammar.option_values import OptionsReader
from tracer.lessons.model import Operation, Options, TensorRef
from tracer.suggest import did_you_mean

Argument = float | int | bool | str | TensorRef
"""What an operation's value is read as (see :class:`~tracer.lessons.model.Operation`)."""


class RefReader(OptionsReader):
    """Reading the keys that name a tensor (:data:`tracer.lessons.format.REF`)."""

    def _tokens(self, ref: TensorRef) -> tuple[str, ...]:
        """Tokens a ``cell``/``focus`` of ``ref`` may name, with those of the source it reads."""
        assert ref.options.inputs is not None
        return _tokens(ref.options.inputs, self.host.variants.get(ref.variant))

    def step_variant(
        self, node: yaml.Node, entries: Entries, scope: _Scope, what: str
    ) -> tuple[str | None, bool]:
        """The variant a step names, else the one 'defaults' sets; and whether it is known."""
        if "variant" in entries:
            variant = self.variant(entries["variant"][1])
            return variant, variant is not None
        if scope.variant is not None:
            return scope.variant, True
        self.problem(node, f"{what} needs a 'variant' (or set one in 'defaults')")
        return None, False

    def step_options(self, variant: str | None, entries: Entries, scope: _Scope) -> Options:
        """A step's inputs and options over its scope's, checked against its variant."""
        options = self.options(entries, scope.options)
        if variant is None:
            return options
        return self.own_inputs(variant, self.variant_options(variant, options, entries))

    def step_stage(self, node: yaml.Node, variant: str | None) -> str | None:
        """The stage a step names, checked to be one of its variant's (when that is known)."""
        stage = self.text(node, "stage")
        if stage is not None and variant is not None:
            return self.stage(node, variant, stage)
        return stage

    def step_query(
        self, entries: Entries, scope: _Scope, tokens: tuple[str, ...]
    ) -> tuple[int | None, bool]:
        """The query a step names (``~``: every query), else the one 'defaults' sets when
        the step's tokens have it; and whether it could be read."""
        if "query" not in entries:
            inherited = scope.query is not None and scope.query < len(tokens)
            return (scope.query if inherited else None), True
        query = self.query(entries["query"][1], tokens)
        return query, query is not None or _is_null(entries["query"][1])

    def ref(
        self,
        node: yaml.Node,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
        what: str,
    ) -> TensorRef | None:
        """variant/stage/tensor/query/inputs/options/then of a show, a compare side or an answer."""
        variant, ok = self.step_variant(node, entries, scope, what)
        options = self.step_options(variant, entries, scope)
        tokens = options.inputs.tokens if options.inputs is not None else scope.tokens
        stage = None
        if self.require(node, SHOWN, entries, what):
            stage = self.step_stage(entries["stage"][1], variant)
        ok = ok and stage is not None
        tensor = None
        if "tensor" in entries:
            tensor = self.field_text(REF, entries, "tensor")
            ok = ok and tensor is not None
        query, query_ok = self.step_query(entries, scope, tokens)
        ok = ok and query_ok
        then: tuple[Operation, ...] = ()
        if "then" in entries:
            operations = self.operations(entries["then"][1], tokens, entries, scope)
            ok = ok and operations is not None
            then = operations or ()
        if not ok or variant is None or stage is None:
            return None
        return TensorRef(
            variant=variant,
            stage=stage,
            tensor=tensor,
            query=query,
            options=options,
            then=then,
            line=node.start_mark.line + 1,
            column=node.start_mark.column + 1,
            tensor_at=_at(entries["tensor"][1]) if "tensor" in entries else None,
        )

    def variant(self, node: yaml.Node) -> str | None:
        name = self.text(node, "variant")
        if name is None:
            return None
        if name not in self.host.variants:
            known = ", ".join(sorted(self.host.variants)) or "none"
            failed = [r for r in self.host.failures if name in (r.name, r.source)]
            if failed:
                self.problem(
                    node, f"variant '{name}' is unavailable: plugin '{failed[0].name}' failed"
                )
            else:
                hint = did_you_mean(name, self.host.variants)
                if self.missing_plugins:
                    missing = ", ".join(self.missing_plugins)
                    hint = (
                        f"; it probably comes from a plugin this lesson needs that is not "
                        f"installed: {missing}"
                    )
                elif not hint:
                    hint = (
                        "; if it comes from a plugin, that plugin is not installed "
                        "(install it, or give its folder with --plugins-dir)"
                    )
                self.problem(node, f"unknown variant '{name}'{hint}; known variants: {known}")
            return None
        return name

    def stage(self, node: yaml.Node, variant: str, name: str) -> str | None:
        stages = self.host.variants[variant].stages
        if name not in stages:
            self.problem(
                node,
                f"variant '{variant}' has no stage '{name}'{did_you_mean(name, stages)}; "
                f"its stages: {', '.join(stages)}",
            )
            return None
        return name

    def cells_ref(self, node: yaml.Node, scope: _Scope, what: str = "cells") -> TensorRef | None:
        """A tensor a quiz shows: the one whose cells are selected, or one shown with it."""
        if not isinstance(node, yaml.MappingNode):
            self.problem(
                node,
                f"{what} must name a tensor (variant, stage, tensor), not {_kind(node)}",
            )
            return None
        entries = self.mapping(node, what, REF)
        if entries is None:
            return None
        return self.ref(node, entries, scope, what)

    def answer_ref(
        self, node: yaml.MappingNode, scope: _Scope, what: str, *, cell_ok: bool = True
    ) -> TensorRef | None:
        entries = self.mapping(node, what, ANSWER if cell_ok else REF)
        if entries is None:
            return None
        return self.cell_ref(node, entries, scope, what)

    def cell_ref(
        self,
        node: yaml.Node,
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
        what: str,
    ) -> TensorRef | None:
        """A :class:`TensorRef` with an optional ``cell`` picking one value."""
        ref = self.ref(node, entries, scope, what)
        cell: tuple[int, ...] | None = None
        cell_at: tuple[tuple[int, int], ...] = ()
        names: tuple[str, ...] = ()
        if "cell" in entries:
            tokens = self._tokens(ref) if ref and ref.options.inputs else scope.tokens
            cell_node = entries["cell"][1]
            if isinstance(cell_node, yaml.SequenceNode):
                if not cell_node.value:
                    self.problem(cell_node, "cell is empty; give [row, column] or [index]")
                    return None
                picked = [
                    self.index(item, "cell index", tokens, size=1 << 30) for item in cell_node.value
                ]
                if any(p is None for p in picked):
                    return None
                cell = tuple(p for p in picked if p is not None)
                names = tuple(_named_token(item) for item in cell_node.value)
                cell_at = tuple(
                    (item.start_mark.line + 1, item.start_mark.column + 1)
                    for item in cell_node.value
                )
            else:
                index = self.index(cell_node, "cell index", tokens, size=1 << 30)
                if index is None:
                    return None
                cell = (index,)
                names = (_named_token(cell_node),)
                cell_at = ((cell_node.start_mark.line + 1, cell_node.start_mark.column + 1),)
        if ref is None:
            return None
        return replace(ref, cell=cell, cell_at=cell_at, cell_names=names)

    def operations(
        self,
        node: yaml.Node,
        tokens: tuple[str, ...],
        entries: dict[str, tuple[yaml.Node, yaml.Node]],
        scope: _Scope,
    ) -> tuple[Operation, ...] | None:
        items = node.value if isinstance(node, yaml.SequenceNode) else [node]
        found: list[Operation] = []
        ok = True
        for item in items:
            operation = self.operation(item, tokens, entries, scope)
            ok = ok and operation is not None
            if operation is not None:
                found.append(operation)
        return tuple(found) if ok else None

    def operation(
        self,
        node: yaml.Node,
        tokens: tuple[str, ...],
        entries: Entries,
        scope: _Scope,
    ) -> Operation | None:
        named = self.operation_name(node)
        if named is None:
            return None
        name, name_node, value_node = named
        line, column = name_node.start_mark.line + 1, name_node.start_mark.column + 1
        if name not in OPERATIONS:
            self.problem(
                name_node,
                f"unknown operation '{name}'{did_you_mean(name, OPERATIONS)}; "
                f"operations: {_listing(OPERATIONS)}",
            )
            return None
        argument = self.operation_value(name, name_node, value_node, tokens, entries, scope)
        if argument is None:
            return None
        token = _named_token(value_node) if name == "pick" and value_node is not None else ""
        return Operation(name, argument, line, column, token)

    def operation_name(self, node: yaml.Node) -> tuple[str, yaml.Node, yaml.Node | None] | None:
        """An operation's name, where it is written, and its value (None: written bare)."""
        if isinstance(node, yaml.ScalarNode) and node.tag != _NULL:
            return str(node.value), node, None
        if isinstance(node, yaml.MappingNode) and len(node.value) == 1:
            key_node, value_node = node.value[0]
            if not isinstance(key_node, yaml.ScalarNode):
                self.problem(key_node, f"an operation's name must be a word, not {_kind(key_node)}")
                return None
            return str(key_node.value), key_node, value_node
        self.problem(
            node,
            f"an operation is one name and its value, like 'softmax: 0', not {_kind(node)}",
        )
        return None

    def operation_value(
        self,
        name: str,
        node: yaml.Node,
        value_node: yaml.Node | None,
        tokens: tuple[str, ...],
        entries: Entries,
        scope: _Scope,
    ) -> Argument | None:
        """The value of the operation ``name`` (written at ``node``), as its kind reads it."""
        if name in FLAG_OPERATIONS:
            if value_node is not None and _scalar(value_node) is not True:
                self.problem(value_node, f"'{name}' takes no value; write '- {name}'")
                return None
            return True
        if value_node is None:
            if name in REDUCTIONS and name != "sum":
                return True  # over the whole tensor
            self.problem(node, f"'{name}' needs a value: {OPERATIONS[name]}")
            return None
        if name == "pick":
            negative = _scalar(value_node)
            if isinstance(negative, int) and not isinstance(negative, bool) and negative < 0:
                return negative  # refused when run, with the range of the table it picks from
            return self.index(value_node, "pick", tokens, size=1 << 30)
        if name == "scale":
            return self.number(value_node, "scale")
        if name in BINARY_OPERATIONS:
            return self.binary_value(name, value_node, entries, scope)
        if name == "compare":
            return self.comparison(value_node)
        return self.integer(value_node, f"the dimension of '{name}'")

    def binary_value(
        self, name: str, value_node: yaml.Node, entries: Entries, scope: _Scope
    ) -> float | TensorRef | None:
        """A number, or the other tensor: named like an answer, the same variant and query
        by default."""
        if isinstance(value_node, yaml.MappingNode):
            inherited = {k: v for k, v in entries.items() if k in ("variant", "query")}
            other = self.mapping(value_node, f"'{name}'", ANSWER)
            if other is None:
                return None
            return self.cell_ref(value_node, {**inherited, **other}, scope, f"'{name}'")
        number = _scalar(value_node)
        if name == "divide" and isinstance(number, (int, float)) and number == 0:
            self.problem(value_node, "'divide' by 0 has no value; divide by another number")
            return None
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            return float(number)
        self.problem(
            value_node,
            f"'{name}' takes a number or a mapping naming a tensor (stage, tensor...), "
            f"not {_kind(value_node)}",
        )
        return None

    def comparison(self, value_node: yaml.Node) -> str | None:
        """``compare``'s operator and number, normalised (``'> 0'``)."""
        scalar = _scalar(value_node) if isinstance(value_node, yaml.ScalarNode) else None
        comparison = _comparison(str(scalar)) if isinstance(scalar, str) else None
        if comparison is None:
            self.problem(
                value_node,
                "'compare' takes an operator and a number, like '> 0' or '== 0', "
                f"not {_kind(value_node)}; operators: {' '.join(COMPARISONS)}",
            )
        return comparison


def _named_token(node: yaml.Node) -> str:
    """A cell index as written: the token's name, or "" for a number."""
    value = _scalar(node)
    return value if isinstance(value, str) else ""
