"""Judging a learner's code against the reference: comparing stages, diagnosing mistakes, and the report."""
