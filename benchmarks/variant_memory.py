"""Memory of a traced run: online-softmax against masked at T = 1,024 / 4,096 / 8,192.

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

Target: online-softmax's peak at T = 8,192 is at most a quarter of masked's.
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
options = check_options(variant, {"tile": tile} if variant_name == "online-softmax" else {})
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
    print(f"traced run to the end, d = {D}; online-softmax with tile = {TILE} keys")
    print(
        "| T | variant | peak (RSS growth) | held by the trace | largest tensor | peak vs masked |"
    )
    print("|---:|---|---:|---:|---:|---:|")
    for tokens in sizes:
        masked = measure("masked", tokens)
        online = measure("online-softmax", tokens)
        for name, found in (("masked", masked), ("online-softmax", online)):
            ratio = found["peak_kib"] / masked["peak_kib"] if masked["peak_kib"] else float("nan")
            print(
                f"| {tokens:,} | {name} | {mib(found['peak_kib'] * 1024)} | {mib(found['held'])} "
                f"| {mib(found['largest'])} | {ratio:.3f}x |"
            )


if __name__ == "__main__":
    main()
