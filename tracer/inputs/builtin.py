"""Input sets that ship with the tool, copied from the teaching seeds they come from."""

from __future__ import annotations

from tracer.inputs.sets import InputSet

# The six tokens and 3-d embeddings used by every seed (000-003): "Your journey starts with one step".
YOUR_JOURNEY = InputSet(
    name="your-journey",
    description='"Your journey starts with one step", 3-d embeddings (all seeds)',
    tokens=("Your", "journey", "starts", "with", "one", "step"),
    embeddings=(
        (0.43, 0.15, 0.89),
        (0.55, 0.87, 0.66),
        (0.57, 0.85, 0.64),
        (0.22, 0.58, 0.33),
        (0.77, 0.25, 0.10),
        (0.05, 0.80, 0.55),
    ),
)

# From the numpy example in the course notes: four "words" as 0/1 vectors, with the integer weight matrices that
# numpy.random.seed(42); randint(3, size=(3, 3)) draws for W_Q, W_K, W_V in that order.
FOUR_WORDS = InputSet(
    name="four-words",
    description="four 0/1 word vectors with the numpy example's integer W_Q, W_K, W_V",
    tokens=("word_1", "word_2", "word_3", "word_4"),
    embeddings=((1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1)),
    weights={
        "query": ((2, 0, 2), (2, 0, 0), (2, 1, 2)),
        "key": ((2, 2, 2), (0, 2, 1), (0, 1, 1)),
        "value": ((1, 1, 0), (0, 1, 1), (0, 0, 0)),
    },
)

# Not from the course notes: invented for cross-attention, whose keys and values come from a
# second sequence. "Your journey starts with one step" in French, five tokens of width 4, so that
# by default the weights are target × source (6×5) and the two projections have different widths.
TON_VOYAGE = InputSet(
    name="ton-voyage",
    description="\"Ton voyage commence d'un pas\", 4-d embeddings (cross-attention's default source)",
    tokens=("Ton", "voyage", "commence", "d'un", "pas"),
    embeddings=(
        (0.38, 0.21, 0.84, 0.12),
        (0.61, 0.79, 0.58, 0.27),
        (0.52, 0.88, 0.41, 0.66),
        (0.17, 0.46, 0.29, 0.93),
        (0.09, 0.74, 0.62, 0.35),
    ),
)

BUILTIN_INPUTS: dict[str, InputSet] = {s.name: s for s in (YOUR_JOURNEY, FOUR_WORDS, TON_VOYAGE)}
