"""Presenting tensors: token labels for axes, plain text and JSON."""
