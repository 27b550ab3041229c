"""Learners' own implementations: ``attn check``, the exercises, ``attn new-plugin``'s scaffold.

Three subpackages, by job; imports go one way, exercises -> judging -> sandbox:

- :mod:`tracer.learner.sandbox` runs the learner's code, in a process of its own, and sends
  back what it computed (decoded once, in :mod:`tracer.learner.sandbox.payload`);
- :mod:`tracer.learner.judging` compares that with the reference, stage by stage, names the
  mistake and writes the report;
- :mod:`tracer.learner.exercises` is ``attn exercises`` (the exercises, their progress, the
  watch) and the templates ``attn exercises init`` and ``attn new-plugin`` copy.
"""
