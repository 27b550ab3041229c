"""Tracer overhead, memory and start-up, measured side by side in one run.

    python benchmarks/trace_overhead.py            # full table (about two minutes)
    python benchmarks/trace_overhead.py --quick    # smaller sizes, for a smoke run

(a) trainable and masked, traced vs the same torch operations untraced (target <= 1.10x at T=2048),
    twice: once letting each intermediate go as soon as it is used, once keeping every stage's
    tensors as a trace must. The gap between the two is paging in fresh memory, not tracing.
(b) the same sizes against F.scaled_dot_product_attention, the floor
(c) naive-loop peak RSS at T=512: stepping 10,000 sub-steps and running to the end, vs the
    untraced loop (target <= 1.2x); each in its own process, since peak RSS is per process
(d) whole-process `attn trace trainable` vs `python -c "import torch"`
(e) the cost of running a variant in a worker process (how third-party plugins run), vs in process
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

D = 64


def best_of(repeats: int, *functions: Callable[[], object]) -> list[float]:
    """Minimum wall time of each function, run in alternation (ABCABC...) so that load from
    other processes on a shared machine falls on all of them alike."""
    times: list[list[float]] = [[] for _ in functions]
    for _ in range(repeats):
        for function, found in zip(functions, times, strict=True):
            start = time.perf_counter()
            function()
            found.append(time.perf_counter() - start)
    return [min(found) for found in times]


def untraced_trainable(x, w_q, w_k, w_v, keep=False):  # type: ignore[no-untyped-def]
    """The plugin's torch operations; ``keep`` returns every stage's tensor, as a trace holds them."""
    import torch

    queries, keys, values = x @ w_q, x @ w_k, x @ w_v
    scores = queries @ keys.T
    scaled = scores / keys.shape[-1] ** 0.5
    weights = torch.softmax(scaled, dim=-1)
    context = weights @ values
    return (queries, keys, values, scores, scaled, weights, context) if keep else context


def untraced_masked(x, w_q, w_k, w_v, keep=False):  # type: ignore[no-untyped-def]
    import torch

    n = x.shape[0]
    queries, keys, values = x @ w_q, x @ w_k, x @ w_v
    scores = queries @ keys.T
    scaled = scores / keys.shape[-1] ** 0.5
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    softmax = torch.softmax(scaled, dim=-1)
    zeroed = softmax.masked_fill(mask, 0.0)
    renormalized = zeroed / zeroed.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    masked_scores = scaled.masked_fill(mask, float("-inf"))
    weights = torch.softmax(masked_scores, dim=-1).nan_to_num(0.0)
    difference = weights - renormalized
    context = weights @ values
    kept = (queries, keys, values, scores, scaled, mask, softmax, zeroed, renormalized)
    return (*kept, masked_scores, weights, difference, context) if keep else context


def measure(
    variant: str, untraced: Callable[..., object], tokens: int, repeats: int
) -> tuple[float, float, float, float]:
    """(traced, untraced, untraced keeping every stage, sdpa) seconds for one variant at one size."""
    import torch
    import torch.nn.functional as F

    from tracer.plugin_host import PluginHost
    from tracer.tracing import Trace
    from tracer.variant import RunContext, Weights

    found = PluginHost(use_env=False).variant(variant)
    generator = torch.Generator().manual_seed(0)
    x = torch.rand(tokens, D, generator=generator)
    w = [torch.rand(D, D, generator=generator) for _ in range(3)]
    context = RunContext(inputs=x, tokens=tuple(map(str, range(tokens))), weights=Weights(*w))
    causal = variant == "masked"

    def traced() -> object:
        return Trace(found, context).run_to_end()

    def plain() -> object:
        return untraced(x, *w)

    def kept() -> object:
        return untraced(x, *w, keep=True)

    def floor() -> object:
        return F.scaled_dot_product_attention(x @ w[0], x @ w[1], x @ w[2], is_causal=causal)

    traced_s, plain_s, kept_s, floor_s = best_of(repeats, traced, plain, kept, floor)
    return traced_s, plain_s, kept_s, floor_s


def overhead_rows(
    sizes: list[int], repeats: int
) -> list[tuple[str, int, float, float, float, float]]:
    import torch

    torch.set_num_threads(1)  # steadier on a shared 2-core machine
    rows = []
    for variant, untraced in (("trainable", untraced_trainable), ("masked", untraced_masked)):
        for tokens in sizes:
            rows.append((variant, tokens, *measure(variant, untraced, tokens, repeats)))
    return rows


def worker_rows(sizes: list[int], repeats: int) -> list[tuple[int, float, float]]:
    """(T, in process, in a worker) seconds for a whole run of trainable."""
    import torch

    from tracer.plugin_host import PluginHost
    from tracer.tracing import Trace
    from tracer.tracing.worker import WorkerTrace
    from tracer.variant import RunContext, Weights

    torch.set_num_threads(1)  # the worker runs with one thread; compare like with like
    found = PluginHost(use_env=False).variant("trainable")
    rows = []
    for tokens in sizes:
        generator = torch.Generator().manual_seed(0)
        x = torch.rand(tokens, D, generator=generator)
        w = [torch.rand(D, D, generator=generator) for _ in range(3)]
        context = RunContext(inputs=x, tokens=tuple(map(str, range(tokens))), weights=Weights(*w))
        local, remote = best_of(
            repeats,
            lambda context=context: Trace(found, context).run_to_end(),
            lambda context=context: WorkerTrace(found, context).run_to_end(),
        )
        rows.append((tokens, local, remote))
    return rows


NAIVE_SCENARIO = """
import resource, sys, itertools, torch
import tracer.tracing.trace
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.variant import RunContext
mode, tokens = sys.argv[1], int(sys.argv[2])
x = torch.rand(tokens, 3, generator=torch.Generator().manual_seed(0))
if mode == "untraced":
    n = x.shape[0]
    scores = torch.zeros(n, n)
    for i in range(n):
        for j in range(n):
            scores[i, j] = torch.dot(x[i], x[j])
    weights = torch.softmax(scores, dim=-1)
    context = torch.zeros_like(x)
    for i in range(n):
        for j in range(n):
            context[i] += weights[i, j] * x[j]
else:
    # Memory is measured past the tool's sub-step limit (16,384 per loop), which refuses a
    # whole run at this size; the limit is lifted here, not in any command.
    tracer.tracing.trace.MAX_SUBSTEPS_PER_LOOP = 10**9
    trace = Trace(PluginHost(use_env=False).variant("naive-loop"),
                  RunContext(inputs=x, tokens=tuple(map(str, range(tokens))), weights=None))
    if mode == "step":
        for _ in itertools.islice(trace, 10_000):
            pass
    else:
        trace.run_to_end()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def naive_memory(tokens: int) -> dict[str, tuple[float, float]]:
    """Peak RSS (MiB) and wall seconds of each scenario, each in a fresh process."""
    found = {}
    for mode in ("untraced", "step", "end"):
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-c", NAIVE_SCENARIO, mode, str(tokens)],
            capture_output=True,
            text=True,
            check=True,
        )
        seconds = time.perf_counter() - start
        found[mode] = (int(result.stdout.strip()) / 1024, seconds)
    return found


def process_times(repeats: int) -> tuple[float, float]:
    attn = [sys.executable, "-m", "tracer", "trace", "trainable"]
    torch_only = [sys.executable, "-c", "import torch"]

    def run(argv: list[str]) -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return run(attn), run(torch_only)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = parser.parse_args()
    sizes = [64, 256] if args.quick else [64, 512, 2048]
    repeats = 3 if args.quick else 7
    naive_tokens = 128 if args.quick else 512

    import torch

    print(
        f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}, "
        f"torch {torch.__version__}, 1 intra-op thread"
    )
    print(
        f"command: .venv/bin/python benchmarks/{Path(__file__).name}{' --quick' if args.quick else ''}\n"
    )

    print(f"(a, b) time per full run, d = 64 (best of {repeats})")
    print(
        "| variant | T | traced | untraced | traced/untraced | untraced, stages kept "
        "| traced/kept | F.sdpa | traced/sdpa |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for variant, tokens, traced, plain, kept, sdpa in overhead_rows(sizes, repeats):
        print(
            f"| {variant} | {tokens} | {traced * 1e3:.2f} ms | {plain * 1e3:.2f} ms | "
            f"{traced / plain:.2f}x | {kept * 1e3:.2f} ms | {traced / kept:.2f}x | "
            f"{sdpa * 1e3:.2f} ms | {traced / sdpa:.2f}x |"
        )

    memory = naive_memory(naive_tokens)
    base_rss = memory["untraced"][0]
    print(f"\n(c) naive-loop at T = {naive_tokens}: peak RSS of the whole process")
    print("| scenario | peak RSS | vs untraced | wall time |")
    print("|---|---:|---:|---:|")
    labels = {
        "untraced": "untraced loop, to the end",
        "step": "traced, stepping 10,000 sub-steps",
        "end": "traced, running to the end",
    }
    for mode, (rss, seconds) in memory.items():
        print(f"| {labels[mode]} | {rss:.0f} MiB | {rss / base_rss:.2f}x | {seconds:.1f} s |")

    attn_s, torch_s = process_times(3 if args.quick else 5)
    print("\n(d) whole process, median wall time")
    print("| command | time | vs import torch |")
    print("|---|---:|---:|")
    print(f"| python -c 'import torch' | {torch_s:.2f} s | 1.00x |")
    print(f"| attn trace trainable | {attn_s:.2f} s | {attn_s / torch_s:.2f}x |")

    print(f"\n(e) trainable, whole run in process vs in a worker process (best of {repeats})")
    print("| T | in process | in a worker | worker/in process |")
    print("|---:|---:|---:|---:|")
    for tokens, local, remote in worker_rows(sizes, repeats):
        print(
            f"| {tokens} | {local * 1e3:.2f} ms | {remote * 1e3:.2f} ms | {remote / local:.2f}x |"
        )


if __name__ == "__main__":
    main()
