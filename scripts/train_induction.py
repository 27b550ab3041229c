"""Train the small attention-only transformer that the ``induction`` variant ships.

    python scripts/train_induction.py            # writes plugins/induction_weights.pt (+ .sha256)
    python scripts/train_induction.py --steps 200 --out /tmp/w.pt

The model is the one of Elhage et al., "A Mathematical Framework for Transformer
Circuits" (2021): token and learned position embeddings, two layers of causal
multi-head attention that each add their output to the residual stream (no MLPs,
no layer norm, no biases), and an unembedding to next-token logits.

It is trained on sequences that repeat: a few random tokens, then a pattern of
distinct random tokens repeated until the context is full. The length of both
changes from sequence to sequence, so no fixed offset predicts the repeat: the
model has to find the earlier occurrence of the current token, wherever it is,
and copy the token that followed it.
Two layers let it do that the way Olsson et al., "In-context Learning and
Induction Heads" (2022) describe: a layer-0 head moves each token's identity
one position on (a previous-token head), and a layer-1 head matches the current
token against that and attends to the token after its earlier occurrence (an
induction head). The loss only counts positions where the next token is
determined (from the first repeat on).

Everything is drawn from ``torch.Generator`` objects seeded with ``--seed`` and
runs on one thread, so the same seed gives the same weights on one machine.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
import time
from pathlib import Path

import torch

VOCAB = 20
"""Token ids 0..19, shown as the letters A..T."""
CONTEXT = 24
"""The longest sequence the model has positions for."""
D_MODEL = 32
HEADS = 4
LAYERS = 2
MIN_PERIOD, MAX_PERIOD = 4, 10
"""Patterns this long are repeated (at least once) after a prefix of other random tokens."""

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "plugins" / "induction_weights.pt"


def init_params(generator: torch.Generator) -> dict[str, torch.Tensor]:
    """The model's tensors by name, each applied as ``x @ W``; heads are stacked along dim 0."""
    d_head = D_MODEL // HEADS

    def normal(*shape: int, fan_in: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) / math.sqrt(fan_in)

    params = {
        "W_E": normal(VOCAB, D_MODEL, fan_in=1) * 0.5,
        "W_pos": normal(CONTEXT, D_MODEL, fan_in=1) * 0.5,
        "W_U": normal(D_MODEL, VOCAB, fan_in=D_MODEL),
    }
    for layer in range(LAYERS):
        for name in ("W_Q", "W_K", "W_V"):
            params[f"{layer}.{name}"] = normal(HEADS, D_MODEL, d_head, fan_in=D_MODEL)
        params[f"{layer}.W_O"] = normal(HEADS, d_head, D_MODEL, fan_in=D_MODEL)
    return params


def forward(params: dict[str, torch.Tensor], tokens: torch.Tensor) -> torch.Tensor:
    """Next-token logits, (batch, positions, vocab), for token ids (batch, positions)."""
    n = tokens.shape[1]
    x = params["W_E"][tokens] + params["W_pos"][:n]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    for layer in range(LAYERS):
        q = torch.einsum("bnd,hde->bhne", x, params[f"{layer}.W_Q"])
        k = torch.einsum("bnd,hde->bhne", x, params[f"{layer}.W_K"])
        v = torch.einsum("bnd,hde->bhne", x, params[f"{layer}.W_V"])
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        x = x + torch.einsum("bhne,hed->bnd", weights @ v, params[f"{layer}.W_O"])
    return x @ params["W_U"]


def make_batch(size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (size, CONTEXT), and a mask of the positions whose next token is determined.

    Each row is a prefix of random tokens, then a pattern of distinct tokens that appear
    nowhere in the prefix, repeated until the context is full. The prefix moves the
    first occurrence around, so the model must find it at any position.
    """
    tokens = torch.empty(size, CONTEXT, dtype=torch.long)
    known = torch.zeros(size, CONTEXT - 1, dtype=torch.bool)
    periods = torch.randint(MIN_PERIOD, MAX_PERIOD + 1, (size,), generator=generator)
    for row, period in enumerate(periods.tolist()):
        prefix = int(torch.randint(0, CONTEXT - 2 * period + 1, (1,), generator=generator))
        shuffled = torch.randperm(VOCAB, generator=generator)
        pattern, others = shuffled[:period], shuffled[period:]
        noise = others[torch.randint(0, len(others), (prefix,), generator=generator)]
        repeats = pattern.repeat(CONTEXT // period + 1)[: CONTEXT - prefix]
        tokens[row] = torch.cat([noise, repeats])
        known[row, prefix + period :] = True  # from the first repeated token on
    return tokens, known


def loss_and_accuracy(
    params: dict[str, torch.Tensor], tokens: torch.Tensor, known: torch.Tensor
) -> tuple[torch.Tensor, float]:
    """Cross-entropy of the next token where it is determined, and the accuracy there."""
    logits = forward(params, tokens)[:, :-1][known]
    targets = tokens[:, 1:][known]
    loss = torch.nn.functional.cross_entropy(logits, targets)
    accuracy = (logits.argmax(-1) == targets).float().mean().item()
    return loss, accuracy


def train(
    steps: int, seed: int = 0, batch: int = 64, lr: float = 3e-3, log_every: int = 0
) -> tuple[dict[str, torch.Tensor], list[float]]:
    """The trained tensors and the loss at every step."""
    generator = torch.Generator().manual_seed(seed)
    params = {name: p.requires_grad_() for name, p in init_params(generator).items()}
    optimiser = torch.optim.Adam(params.values(), lr=lr)
    losses = []
    for step in range(steps):
        tokens, known = make_batch(batch, generator)
        loss, accuracy = loss_and_accuracy(params, tokens, known)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
        if log_every and (step % log_every == 0 or step == steps - 1):
            print(f"step {step:5d}  loss {loss.item():.4f}  repeat accuracy {accuracy:.3f}")
    return {name: p.detach().clone() for name, p in params.items()}, losses


def save(params: dict[str, torch.Tensor], out: Path) -> str:
    """Write the tensors and ``<out>.sha256`` beside them; return the checksum.

    Saved through a buffer: ``torch.save`` to a path names the archive after the file, so
    the bytes (and the checksum) would depend on where they were written.
    """
    buffer = io.BytesIO()
    torch.save({name: p.contiguous() for name, p in params.items()}, buffer)
    out.write_bytes(buffer.getvalue())
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()
    out.with_suffix(".sha256").write_text(f"{digest}  {out.name}\n")
    return digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    params, _ = train(args.steps, args.seed, log_every=250)
    elapsed = time.perf_counter() - started
    with torch.no_grad():
        tokens, known = make_batch(1000, torch.Generator().manual_seed(args.seed + 1))
        _, accuracy = loss_and_accuracy(params, tokens, known)
    digest = save(params, args.out)
    count = sum(p.numel() for p in params.values())
    print(f"trained in {elapsed:.0f} s; held-out repeat accuracy {accuracy:.3f}")
    print(f"{count} parameters, {args.out.stat().st_size} bytes, sha256 {digest}")


if __name__ == "__main__":
    main()
