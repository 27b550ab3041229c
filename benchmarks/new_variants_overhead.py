"""Tracing overhead of the modern variants at T = 2048, measured side by side in one run.

    python benchmarks/new_variants_overhead.py            # the README table (a few minutes)
    python benchmarks/new_variants_overhead.py --quick    # T = 256, for a smoke run

For each variant the same plugin code runs two ways, in alternation (ABAB...) so that
load from other processes on a shared machine falls on both alike, best of N kept:

- traced: ``Trace(variant, context).run_to_end()``, the line recorder and the
  copy-on-write guard on, every stage kept;
- untraced: the variant's generator iterated directly, with neither.

So the ratio is the cost of tracing itself, not of the variant's teaching stages. Inputs:
T tokens of d = 64, random weights (64 x 64). Loops yield a sub-step per iteration (one
per decoded token, per tile, per optimizer step), which is where tracing costs most.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

D = 64

# (variant, its options for the benchmark, what a row says about them)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("sliding-window", {"window": 256}, "window 256"),
    ("grouped-query", {"heads": 8, "kv_heads": 2}, "8 heads, 2 kv heads"),
    ("kv-cache", {}, "one sub-step per token"),
    ("online-softmax", {"tile": 256}, "tile 256"),
    ("online-softmax", {"tile": 2}, "tile 2 (the default)"),
    ("training", {"steps": 5}, "5 steps"),
]


def best_of(repeats: int, *functions: Callable[[], object]) -> list[float]:
    times: list[list[float]] = [[] for _ in functions]
    for _ in range(repeats):
        for function, found in zip(functions, times, strict=True):
            start = time.perf_counter()
            function()
            found.append(time.perf_counter() - start)
    return [min(found) for found in times]


def measure(variant_name: str, options: dict[str, Any], tokens: int, repeats: int) -> list[float]:
    import torch

    from tracer.options import check_options
    from tracer.plugin_host import PluginHost
    from tracer.tracing import Trace
    from tracer.variant import RunContext, Weights

    variant = PluginHost(use_env=False).variant(variant_name)
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(tokens, D, generator=generator)
    weights = Weights(*(torch.rand(D, D, generator=generator) for _ in range(3)))
    context = RunContext(
        inputs=x,
        tokens=tuple(map(str, range(tokens))),
        weights=weights,
        extra=check_options(variant, options),
    )

    def traced() -> object:
        return Trace(variant, context).run_to_end()

    def untraced() -> object:
        generator = variant.run(context)
        for _ in generator:
            pass
        return generator

    return best_of(repeats, traced, untraced)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 256, few repeats")
    args = parser.parse_args()
    tokens = 256 if args.quick else 2048
    repeats = 2 if args.quick else 5

    import torch

    torch.set_num_threads(1)  # steadier on a shared machine
    print(
        f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}, "
        f"torch {torch.__version__}, 1 intra-op thread"
    )
    print(
        f"command: .venv/bin/python benchmarks/{Path(__file__).name}"
        f"{' --quick' if args.quick else ''}\n"
    )
    print(f"time per full run, T = {tokens}, d = {D} (best of {repeats})")
    print("| variant | options | traced | untraced | traced/untraced |")
    print("|---|---|---:|---:|---:|")
    for variant, options, label in CASES:
        traced, untraced = measure(variant, options, tokens, repeats)
        print(
            f"| {variant} | {label} | {traced * 1e3:,.1f} ms | {untraced * 1e3:,.1f} ms | "
            f"{traced / untraced:.2f}x |"
        )


if __name__ == "__main__":
    main()
