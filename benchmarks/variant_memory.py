"""Memory of a traced run: online-softmax against masked, flash-backward against backward.

    python benchmarks/variant_memory.py            # the README table (about a minute)
    python benchmarks/variant_memory.py --quick    # T = 256 / 1,024, for a smoke run

Each (variant, T) runs in a fresh process, so one run's peak cannot hide another's.
In that process the inputs (d_in = d_out = 64) and a warm-up trace on 8 tokens come
first; then the variant is traced to the end with ``Trace.run_to_end()`` (every stage
kept, as the app keeps them). Reported:

- peak: the growth of the process's peak resident memory (``ru_maxrss``) during the
  traced run, over its peak before it: what tracing that variant costs at most;
- held: the bytes of the distinct tensor storages the finished trace keeps;
- largest: the biggest single tensor it keeps.

Targets at T = 8,192: online-softmax's peak is at most a quarter of masked's (the forward
pass), and flash-backward's at most a quarter of backward's (the backward pass). The last
column compares each tiled variant with its naive one.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

D = 64
TILE = 256
PAIRS = (("masked", "online-softmax"), ("backward", "flash-backward"))
"""(naive, tiled): the forward pass, then the backward pass."""

CHILD = """
import json, resource, sys
import torch
from tracer.options import check_options
from tracer.plugin_host import PluginHost
from tracer.tracing import Trace
from tracer.variant import RunContext, Weights

variant_name, tokens, tile, d = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
variant = PluginHost(use_env=False).variant(variant_name)
tiled = variant_name in ("online-softmax", "flash-backward")
options = check_options(variant, {"tile": tile} if tiled else {})
generator = torch.Generator().manual_seed(0)

def context(n):
    x = torch.rand(n, d, generator=generator)
    w = Weights(*(torch.rand(d, d, generator=generator) for _ in range(3)))
    return RunContext(inputs=x, tokens=tuple(map(str, range(n))), weights=w, extra=options)

Trace(variant, context(8)).run_to_end()  # warm-up: plugin import, kernels, line recorder
run = context(tokens)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
trace = Trace(variant, run).run_to_end()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
storages = {}
for stage in trace.stages:
    for tensor in stage.tensors.values():
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
largest = max(t.numel() * t.element_size() for s in trace.stages for t in s.tensors.values())
print(json.dumps({"peak_kib": after - before, "held": sum(storages.values()), "largest": largest}))
"""


def measure(variant: str, tokens: int) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, variant, str(tokens), str(TILE), str(D)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:,.0f} MiB" if n_bytes >= 2**20 else f"{n_bytes / 2**10:,.0f} KiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args()
    sizes = [256, 1024] if args.quick else [1024, 4096, 8192]

    import torch

    print(
        f"machine: {platform.processor() or platform.machine()}, {platform.python_version()}, "
        f"torch {torch.__version__}, 1 intra-op thread"
    )
    print(
        f"command: .venv/bin/python benchmarks/{Path(__file__).name}"
        f"{' --quick' if args.quick else ''}\n"
    )
    print(f"traced run to the end, d = {D}; online-softmax and flash-backward with tile = {TILE}")
    print(
        "| T | variant | peak (RSS growth) | held by the trace | largest tensor "
        "| peak vs the naive one |"
    )
    print("|---:|---|---:|---:|---:|---:|")
    for tokens in sizes:
        for naive, tiled in PAIRS:
            found = {name: measure(name, tokens) for name in (naive, tiled)}
            base = found[naive]["peak_kib"]
            for name, run in found.items():
                ratio = f"{run['peak_kib'] / base:.3f}x of {naive}" if base else "n/a"
                print(
                    f"| {tokens:,} | {name} | {mib(run['peak_kib'] * 1024)} | {mib(run['held'])} "
                    f"| {mib(run['largest'])} | {ratio} |"
                )


if __name__ == "__main__":
    main()
