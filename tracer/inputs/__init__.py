"""Input sets (tokens and embeddings, optionally explicit weights) and weight initialisation."""

from tracer.inputs.input_set import InputSet, load_inputs, parse_input_node

__all__ = ["InputSet", "load_inputs", "parse_input_node"]
