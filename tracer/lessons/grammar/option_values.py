"""Options and inputs: the lesson's, a section's and a step's, each checked against the
variants that take them (a variant's own options, the trace options, ``heads``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import yaml

from tracer.errors import TracerError, UsageError
from tracer.inputs import InputSet, parse_input_node
from tracer.lessons.grammar.base import _T, Entries, ReaderBase
from tracer.lessons.grammar.keys import OPTION_KEYS, TRACE_KEYS
from tracer.lessons.grammar.nodes import _kind, _scalar
from tracer.lessons.model import LessonStep, Options, OptionValue
from tracer.options import LEGACY_OPTIONS
from tracer.suggest import did_you_mean
from tracer.yamldoc import Problem


class OptionsReader(ReaderBase):
    """Reading ``inputs:`` and ``options:`` wherever they are written."""

    def declared_options(self) -> list[str]:
        """Every option an installed variant declares, other than the shared ones."""
        names = {o.name for v in self.host.variants.values() for o in v.options}
        return sorted(names - set(OPTION_KEYS))

    def unused_shared_options(self) -> None:
        reported: set[str] = set()
        for value in self.shared_values:
            if value.name in self.used_options or value.name in reported:
                continue
            if value.name in LEGACY_OPTIONS:
                continue  # heads was always accepted lesson-wide, whichever variants follow
            reported.add(value.name)
            known = sorted(
                {o.name for v in self.used_variants for o in self.host.variants[v].options}
            )
            variants = ", ".join(sorted(self.used_variants)) or "none"
            self.problem_at(
                value.line, value.column,
                f"no variant in this lesson has an option '{value.name}'"
                f"{did_you_mean(value.name, known)}; the lesson uses {variants}, whose options "
                f"are {', '.join(known) or 'none'}",
            )  # fmt: skip

    def base_options(self) -> Options:
        from tracer.tracing.runner import DEFAULT_INIT, DEFAULT_SEED

        return Options(
            inputs=self.default_inputs, seed=DEFAULT_SEED, init=DEFAULT_INIT, dropout=0.0
        )

    def own_inputs(self, variant: str, options: Options) -> Options:
        """``options`` with the variant's own inputs (``Variant(inputs=...)``) when the lesson
        names none, as ``attn trace`` uses them; the default inputs otherwise."""
        own = self.host.variants[variant].inputs
        if options.inputs is self.default_inputs and own is not None:
            return replace(options, inputs=own)
        return options

    def lesson_inputs(self, options: Options, steps: Sequence[LessonStep]) -> Options:
        """The lesson's inputs: when it names none and every step runs on one variant's own
        inputs (an induction lesson), those, so what says "the lesson's inputs" names them."""
        if options.inputs is not self.default_inputs:
            return options
        used: dict[int, InputSet] = {}
        for step in steps:
            refs = [*step.tables(), step.reported_at]
            # A loop names its options itself: it shows no TensorRef.
            own = getattr(step, "options", None)
            for given in [r.options for r in refs if r is not None] + ([own] if own else []):
                if given.inputs is not None:
                    used[id(given.inputs)] = given.inputs
        if len(used) == 1:
            (only,) = used.values()
            if only is not self.default_inputs:
                return replace(options, inputs=only)
        return options

    def named_input_sets(self) -> dict[str, InputSet]:
        """Input sets the installed variants bring (their own inputs and default sources),
        by name: a lesson may name them as it names a built-in set."""
        found: dict[str, InputSet] = {}
        for variant in self.host.variants.values():
            for given in (variant.inputs, variant.default_source):
                if isinstance(given, InputSet):
                    found.setdefault(given.name, given)
        return found

    def options(
        self,
        entries: Entries,
        base: Options,
        *,
        shared: bool = False,
    ) -> Options:
        """``inputs`` and ``options`` from a mapping's entries, over ``base``.

        Names other than the shared ones are the variant's own options, kept as
        written; :meth:`variant_options` checks them once the variant is known.
        ``shared``: lesson-wide (or section) options, which apply only to the
        variants that declare them.
        """
        before = len(self.problems)
        inputs = self.inputs(entries["inputs"][1]) if "inputs" in entries else None
        if shared and "inputs" in entries and inputs is None:
            self.stop_at(before, "the steps are not checked until the inputs can be read")
        seed = init = d_out = dropout = None
        values: list[OptionValue] = []
        trace_at: list[OptionValue] = []
        if "options" in entries:
            fields = self.mapping(entries["options"][1], "options", None) or {}
            values = self.variant_values(fields, shared=shared)
            # The trace options: read as their type here, then checked by the one validator
            # the command line uses too, and reported at the value in the lesson's own words.
            if "seed" in fields:
                seed = self.trace_option(fields["seed"][1], "seed", self.integer)
            if "init" in fields:
                init = self.trace_option(fields["init"][1], "init", self.text)
            if "d_out" in fields:
                d_out = self.trace_option(fields["d_out"][1], "d_out", self.integer)
            if "dropout" in fields:
                dropout = self.trace_option(fields["dropout"][1], "dropout", self.number)
            for name, value in (("seed", seed), ("init", init), ("d_out", d_out)):
                if value is not None:
                    trace_at.append(_written(name, value, fields[name][1]))
            if dropout is not None:
                trace_at.append(_written("dropout", dropout, fields["dropout"][1]))
        merged = Options(
            inputs, seed, init, d_out, dropout, values=tuple(values), trace_at=tuple(trace_at)
        ).over(base)
        explicit = merged.inputs.d_out if merged.inputs is not None else None
        if explicit is not None and merged.d_out not in (None, explicit) and "options" in entries:
            self.problem(
                entries["options"][1],
                f"d_out {merged.d_out} disagrees with the weights of the inputs, "
                f"which have d_out = {explicit}",
            )
        return merged

    def variant_values(self, fields: Entries, *, shared: bool) -> list[OptionValue]:
        """The options in ``fields`` other than the trace options: each an option some
        installed variant declares (or ``heads``), kept as written for the step's variant to
        check (:meth:`variant_options`)."""
        declared = self.declared_options()
        values: list[OptionValue] = []
        for name, (key_node, value_node) in fields.items():
            if name in TRACE_KEYS:
                continue
            if name not in declared and name not in LEGACY_OPTIONS:
                # No installed variant has it: a slip, reported where it is written.
                self.problem(
                    key_node, f"unknown key '{name}' in options"
                    f"{did_you_mean(name, (*OPTION_KEYS, *declared))}; expected "
                    f"{', '.join(OPTION_KEYS)}, or an option a variant declares"
                    f"{' (' + ', '.join(declared) + ')' if declared else ''}",
                )  # fmt: skip
                continue
            value = self.option_value(name, value_node)
            if value is None:
                continue
            line, column = value_node.start_mark.line + 1, value_node.start_mark.column + 1
            option_value = OptionValue(name, value, line, column)
            values.append(option_value)
            if shared:
                self.shared_values.append(option_value)
        return values

    def option_value(self, name: str, node: yaml.Node) -> object | None:
        """A variant option's value as written (``heads``: as its type, within its bounds)."""
        if name in LEGACY_OPTIONS:
            # Every variant may be passed it (heads): read and bounded by its legacy
            # declaration now, as written; a variant that declares it checks it again.
            return self.legacy_option(node, name)
        value = _scalar(node)
        if not isinstance(node, yaml.ScalarNode) or value is None:
            self.problem(
                node, f"option '{name}' must be a number, true/false or text, not {_kind(node)}"
            )
            return None
        return value

    def trace_option(
        self, node: yaml.Node, name: str, read: Callable[[yaml.Node, str], _T | None]
    ) -> _T | None:
        """A trace option (seed, init, d_out, dropout) checked by
        :func:`tracer.options.check_trace_option`, or None after reporting it at ``node``."""
        from tracer.errors import UsageError
        from tracer.options import check_trace_option

        value = read(node, name)
        if value is None:
            return None
        try:
            check_trace_option(name, value, name)
        except UsageError as error:
            self.problem(node, error.message)
            return None
        return value

    def legacy_option(self, node: yaml.Node, name: str) -> object | None:
        """An option every variant may be passed (``heads``), as its type within the bounds of
        :func:`tracer.options.legacy_option`, or None after reporting it at ``node``."""
        from tracer.errors import UsageError
        from tracer.options import convert, legacy_option

        option = legacy_option(name)
        value: object | None = (
            self.integer(node, name) if option.type is int else self.number(node, name)
        )
        if value is None:
            return None
        try:
            converted: object = convert(option, value, name)
            return converted
        except UsageError as error:
            self.problem(node, error.message)
            return None

    def tokenized(self, input_set: InputSet | None, node: yaml.Node) -> InputSet | None:
        """Inputs that give ``text:``, split by the tokenizer of the variant that reads text
        (``model``) with its default options, so steps can name its tokens; each run splits
        the text again with the step's own options."""
        if input_set is None or input_set.text is None or input_set.tokens:
            return input_set
        from tracer.errors import TracerError
        from tracer.options import check_options
        from tracer.tracing.runner import tokenized

        readers = [v for v in self.host.variants.values() if v.tokenize is not None]
        if not readers:
            self.problem(node, "text: needs a variant with its own tokenizer (such as 'model')")
            return None
        try:
            return tokenized(input_set, readers[0], check_options(readers[0], {}))
        except TracerError as error:
            self.problem(node, error.message)
            return None

    def inputs(self, node: yaml.Node) -> InputSet | None:
        from tracer.inputs import load_inputs

        if isinstance(node, yaml.MappingNode):
            input_set, problems = parse_input_node(node, self.path, name="inline")
            self.problems.extend(problems)
            return self.tokenized(input_set, node)
        spec = self.text(node, "inputs")
        if spec is None:
            return None
        from tracer.inputs.builtin import BUILTIN_INPUTS

        brought = self.named_input_sets()
        if spec not in BUILTIN_INPUTS and spec in brought:
            return brought[spec]
        if spec not in BUILTIN_INPUTS:
            candidate = self.base_dir / spec
            looks_like_file = Path(spec).suffix.lower() in (".yaml", ".yml", ".json") or "/" in spec
            if not looks_like_file:
                named = sorted({*BUILTIN_INPUTS, *brought})
                self.problem(
                    node,
                    f"unknown input set '{spec}'{did_you_mean(spec, named)}; "
                    f"built-in sets: {', '.join(sorted(BUILTIN_INPUTS))}"
                    + (f"; the variants' own: {', '.join(sorted(brought))}" if brought else "")
                    + ", or give a .yaml/.json file",
                )
                return None
            if not candidate.is_file():
                self.problem(node, f"inputs file not found: {candidate}")
                return None
            spec = str(candidate)
        try:
            return self.tokenized(load_inputs(spec), node)
        except TracerError as exc:
            where = exc.location
            if where is not None and where.line is not None:
                self.problems.append(
                    Problem(where.line, where.column or 1, exc.message, where.path)
                )
            else:
                self.problem(node, exc.message)
            return None

    def variant_options(
        self, variant: str, options: Options, entries: dict[str, tuple[yaml.Node, yaml.Node]]
    ) -> Options:
        """``options`` for ``variant``: its declared options checked and converted.

        An option the variant does not declare is a problem where the step sets it,
        and skipped where it comes from the lesson's or a section's options.
        """
        from tracer.options import convert, option_for

        self.used_variants.add(variant)
        found = self.host.variants[variant]
        declared = [option.name for option in found.options]
        shared = {id(value) for value in self.shared_values}
        resolved: list[OptionValue] = []
        for value in options.values:
            option = option_for(found, value.name)
            if option is None and value.name in LEGACY_OPTIONS:
                continue  # a variant with options of its own but not heads: not for it
            if option is None:
                if id(value) not in shared:
                    takes = f"it takes {', '.join(declared)}" if declared else "it takes no options"
                    self.problem_at(
                        value.line, value.column,
                        f"variant '{variant}' has no option '{value.name}'"
                        f"{did_you_mean(value.name, declared)}; {takes}",
                    )  # fmt: skip
                continue
            self.used_options.add(value.name)
            try:
                converted = convert(option, value.value, f"option '{value.name}'", variant)
            except UsageError as error:
                self.problem_at(value.line, value.column, error.message)
                continue
            resolved.append(replace(value, value=converted))
        return replace(options, values=tuple(resolved), heads=None)  # heads follows values


def _written(name: str, value: object, node: yaml.Node) -> OptionValue:
    """A trace option's value and where it is written (its value node)."""
    return OptionValue(name, value, node.start_mark.line + 1, node.start_mark.column + 1)
