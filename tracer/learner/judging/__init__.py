"""Judging a learner's code against the reference: comparing stages, diagnosing mistakes,
re-checking a pass where it could hide one, and the report."""
