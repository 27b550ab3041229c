"""Lesson scripts: the YAML format, its safe loader, its JSON Schema and running lessons."""
