"""Train the small model that the ``model`` variant opens when no ``-o model=`` is given.

    python scripts/train_model.py                 # writes plugins/letters_model/
    python scripts/train_model.py --steps 300 --out /tmp/letters

It is a Hugging Face transformers ``LlamaForCausalLM`` (token embeddings, RMSNorm,
rotary positions, attention and MLPs: Llama's architecture, only small; ``--arch
gpt2`` trains a GPT-2 instead, which learns the task more slowly), trained on
lesson 13's task with the batches of ``scripts/train_induction.py``: random
letters A to T, then a pattern of distinct letters that repeats. To predict a
repeat it needs the two heads Olsson et al. (2022) describe: a previous-token
head in layer 0 and an induction head in layer 1. The script prints each head's
previous-token and induction scores on held-out repeats once trained.

The folder is written with ``save_pretrained`` (weights as safetensors), with a
tokenizer that splits text into letters (spaces are ignored, lower case is read
as upper case, anything else is ``?``), and ``checksums.sha256`` for its files.
Everything is seeded and runs on one thread (about four minutes on a busy core).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_induction import CONTEXT, VOCAB, make_batch

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "plugins" / "letters_model"
LETTERS = [chr(ord("A") + i) for i in range(VOCAB)]
UNKNOWN = "?"


def make_tokenizer():
    from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {letter: i for i, letter in enumerate(LETTERS)} | {UNKNOWN: VOCAB}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token=UNKNOWN))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Replace(letter.lower(), letter) for letter in LETTERS]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex("."), "isolated")]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token=UNKNOWN)


def make_model(seed: int, arch: str = "llama"):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    if arch == "llama":
        return LlamaForCausalLM(
            LlamaConfig(
                vocab_size=VOCAB + 1,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=4,
                max_position_embeddings=CONTEXT,
                bos_token_id=VOCAB,
                eos_token_id=VOCAB,
                attn_implementation="eager",
            )
        )
    config = GPT2Config(
        vocab_size=VOCAB + 1,
        n_positions=CONTEXT,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_inner=64,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=VOCAB,
        eos_token_id=VOCAB,
        attn_implementation="eager",
    )
    return GPT2LMHeadModel(config)


def loss_and_accuracy(model, tokens, known):
    logits = model(input_ids=tokens).logits[:, :-1][known]
    targets = tokens[:, 1:][known]
    loss = torch.nn.functional.cross_entropy(logits, targets)
    return loss, (logits.argmax(-1) == targets).float().mean().item()


def roles(model, generator):
    """Mean previous-token and induction weight per (layer, head) on held-out repeats."""
    tokens, _ = make_batch(50, generator)
    with torch.no_grad():
        attentions = model(input_ids=tokens, output_attentions=True).attentions
    n = tokens.shape[1]
    found = {}
    for layer, weights in enumerate(attentions):  # (batch, heads, n, n)
        rows = torch.arange(1, n)
        previous = weights[:, :, rows, rows - 1].mean(dim=(0, 2))
        induction = torch.zeros(weights.shape[1])
        count = 0
        for b in range(tokens.shape[0]):
            for i in range(n):
                earlier = [k + 1 for k in range(i) if tokens[b, k] == tokens[b, i]]
                if earlier:
                    induction += weights[b, :, i, earlier].sum(dim=-1)
                    count += 1
        found[layer] = (previous, induction / max(count, 1))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--arch", choices=("llama", "gpt2"), default="llama")
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(args.seed)
    model = make_model(args.seed, args.arch)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    started = time.perf_counter()
    for step in range(args.steps):
        tokens, known = make_batch(64, generator)
        loss, accuracy = loss_and_accuracy(model, tokens, known)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % 250 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  repeat accuracy {accuracy:.3f}")
    elapsed = time.perf_counter() - started
    model.eval()
    held_out = torch.Generator().manual_seed(args.seed + 1)
    with torch.no_grad():
        tokens, known = make_batch(1000, held_out)
        _, accuracy = loss_and_accuracy(model, tokens, known)
    for layer, (previous, induction) in roles(model, held_out).items():
        print(
            f"layer {layer}: previous-token {[round(float(v), 2) for v in previous]}, "
            f"induction {[round(float(v), 2) for v in induction]}"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    make_tokenizer().save_pretrained(args.out)
    lines = []
    for path in sorted(args.out.iterdir()):
        if path.is_file() and path.name != "checksums.sha256":
            lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}")
    (args.out / "checksums.sha256").write_text("\n".join(lines) + "\n")
    size = sum(p.stat().st_size for p in args.out.iterdir())
    print(f"trained in {elapsed:.0f} s; held-out repeat accuracy {accuracy:.3f}; {size} bytes")


if __name__ == "__main__":
    main()
