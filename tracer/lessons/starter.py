"""The commented starter lesson that ``attn lesson new PATH`` writes."""

from __future__ import annotations

from tracer.lessons.schema import MODELINE

STARTER = """\
{modeline}
# A lesson for attention-tracer. Check it with:  attn lesson check THIS_FILE
# Read it as text with:  attn lesson run THIS_FILE --plain
# The full format, with an example of every step kind, is in docs/lessons.md.

title: My first lesson
summary: How much does "journey" attend to each word of the sentence?

# Optional. A built-in input set (your-journey, four-words), a .yaml/.json file
# next to this lesson, or inline tokens and embeddings.
inputs: your-journey

# Optional options for every step (each step may override them under 'options').
options:
  seed: 123      # the weights are drawn under this seed
  init: rand     # rand, randn or linear
  d_out: 2       # width of queries, keys and values

# Optional. Live values that prose shows as {{{{name}}}} (or {{{{name:.2f}}}}).
values:
  journey-journey: {{variant: naive-loop, stage: scores, cell: [journey, journey]}}

steps:
  # Narration is plain text, shown exactly as written. {{{{name}}}} shows a live
  # value from 'values:' above, computed when the lesson runs.
  - narration: |
      Each token's embedding is a vector. The dot product of two of them
      measures how well they align: that is the attention score. "journey"
      with itself scores {{{{journey-journey}}}}.

  # Show one stage of a variant ('attn plugins' lists variants and stages).
  # focus: a token, or {{row: ...}}, {{column: ...}}, {{cell: [row, column]}};
  # tokens or 0-based indices both work.
  - show:
      variant: naive-loop
      stage: scores
      focus: {{row: journey}}
      caption: The scores of every pair of tokens; look at the row for "journey".

  # Step through a loop, one sub-step at a time, for one query.
  - loop:
      variant: naive-loop
      stage: scores
      query: journey
      caption: One dot product per key.

  # A number quiz. The answer is computed live from the variant, so it is
  # always right; 'tolerance' says how close a guess must be (0.01, or 1%).
  # {{{{answer}}}} in the explanation shows the computed answer.
  - quiz:
      question: What is the score of "journey" with "Your"?
      answer: {{variant: naive-loop, stage: scores, cell: [journey, Your]}}
      tolerance: 0.01
      hints:  # one per line: in a [ ] list, a comma would start a new hint
        - Multiply the two embeddings component by component, then add.
      explanation: "0.55 × 0.43 + 0.87 × 0.15 + 0.66 × 0.89 = {{{{answer}}}}, the dot product."

  # A choice quiz: 'answer' is the text of the right choice.
  - quiz:
      question: Which normalisation makes every weight positive, whatever the scores?
      choices: [dividing by the sum, softmax]
      answer: softmax
      explanation: exp(x) is positive for every x, so softmax never gives a negative weight.

  # Compare two tensors (two variants, or one under two option sets).
  - compare:
      variant: naive-loop
      stage: weights
      left: {{tensor: sum_normalized, label: divide by the sum}}
      right: {{tensor: weights, label: softmax}}
      caption: Softmax favours the largest scores more than a plain sum does.

  - checkpoint:
      title: Summary
      points:
        - A score is the dot product of a query with a key.
        - Softmax turns a row of scores into weights that sum to 1.
"""


def starter_lesson() -> str:
    """The starter text; its modeline names the schema 'attn lesson new' writes beside it."""
    return STARTER.format(modeline=MODELINE)
