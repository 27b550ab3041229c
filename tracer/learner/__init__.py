"""Learners' own implementations: checking them stage by stage, exercises, scaffolds."""
