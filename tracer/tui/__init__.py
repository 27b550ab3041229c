"""The Textual step-through app."""
