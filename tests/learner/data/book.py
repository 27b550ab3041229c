"""Numbers printed in "Build a Large Language Model (From Scratch)", chapter 3.

Source: rasbt/LLMs-from-scratch, ch03/01_main-chapter-code/ch03.ipynb, the cells
after ``torch.manual_seed(123)`` that build ``MultiHeadAttentionWrapper`` and
``MultiHeadAttention`` with d_in=3, d_out=2, num_heads=2, dropout 0.0 on the six
"Your journey starts with one step" embeddings (seed 000's inputs), batch of 2.
Printed to 4 decimals; both batch rows are identical, so one is kept.
"""

WRAPPER_CONTEXT = (
    (-0.4519, 0.2216, 0.4772, 0.1063),
    (-0.5874, 0.0058, 0.5891, 0.3257),
    (-0.6300, -0.0632, 0.6202, 0.3860),
    (-0.5675, -0.0843, 0.5478, 0.3589),
    (-0.5526, -0.0981, 0.5321, 0.3428),
    (-0.5299, -0.1081, 0.5077, 0.3493),
)

MULTIHEAD_CONTEXT = (
    (0.3190, 0.4858),
    (0.2943, 0.3897),
    (0.2856, 0.3593),
    (0.2693, 0.3873),
    (0.2639, 0.3928),
    (0.2575, 0.4028),
)
