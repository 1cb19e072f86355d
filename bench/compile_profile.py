"""Where compile seconds go: every stage of an encoding compiled in ONE process from an empty kernel
cache, with numba's compile events recorded per kernel (exclusive of the kernels it compiles inside
its own compile) and per compiler pass.

    python bench/compile_profile.py                       # o200k_base stand-in, the base stages
    python bench/compile_profile.py --kind gpt2 --top 40
    python bench/compile_profile.py --stages single,rows  # only these stages, in this order

Prints the wall and CPU seconds of each stage, then the kernels by exclusive seconds (with how many
signatures each compiled) and the passes by exclusive seconds (typing, IR inlining, lowering, ...).
A pass's seconds exclude the nested compiles of callees it triggered; "native_lowering" holds LLVM's
optimization and code generation of that kernel's module.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="o200k", help="stand-in pattern kind (o200k, cl100k, gpt2)")
    ap.add_argument("--stages", default="single,rows,arrow,stream", help="comma-separated stages, in order")
    ap.add_argument("--top", type=int, default=30, help="kernels to list")
    args = ap.parse_args(argv)

    cache = tempfile.mkdtemp(prefix="tltok-compile-profile-")
    os.environ["TLTOK_KERNEL_CACHE"] = cache
    os.environ["TLTOK_CACHE_DIR"] = os.path.join(cache, "user")
    os.environ["TLTOK_COMPILE"] = "foreground"

    import numba.core.event as ev

    stack: list[list] = []  # [kind, name, start, seconds of the compiles nested in it]
    own_kernel: dict = defaultdict(float)
    sigs: dict = defaultdict(int)
    excl_pass: dict = defaultdict(float)

    class Profile(ev.Listener):
        def on_start(self, event):
            if event.kind == "numba:compile":
                name = getattr(event.data["dispatcher"].py_func, "__qualname__", "?")
            else:
                name = event.data["name"]
            stack.append([event.kind, name, time.perf_counter(), 0.0])

        def on_end(self, event):
            kind, name, start, nested = stack.pop()
            total = time.perf_counter() - start
            if kind == "numba:compile":
                sigs[name] += 1
                own_kernel[name] += total - nested
                for frame in reversed(stack):  # up to the kernel whose compile compiled this one
                    frame[3] += total
                    if frame[0] == "numba:compile":
                        break
            else:
                excl_pass[name.split(" [")[0]] += total - nested

    listener = Profile()
    ev.register("numba:compile", listener)
    ev.register("numba:run_pass", listener)

    from tltok_jit.compile import worker as warm_worker

    t0, c0 = time.perf_counter(), time.process_time()
    rows = []
    warm_worker.load_scanner_of(args.kind)
    rows.append(("scanner " + args.kind, time.perf_counter() - t0, time.process_time() - c0))
    t1, c1 = time.perf_counter(), time.process_time()
    enc = warm_worker.compiled_encoding(warm_worker.stand_in_model(args.kind))
    rows.append(("tables (stand-in model)", time.perf_counter() - t1, time.process_time() - c1))
    for stage in args.stages.split(","):
        t1, c1 = time.perf_counter(), time.process_time()
        warm_worker.WARMERS[stage](enc)
        rows.append((stage, time.perf_counter() - t1, time.process_time() - c1))
    total_wall, total_cpu = time.perf_counter() - t0, time.process_time() - c0

    print(f"# compile profile, stand-in {args.kind}, stages {args.stages}, one process, empty cache\n")
    print("| stage | wall s | CPU s |\n|---|---:|---:|")
    for name, w, c in rows:
        print(f"| {name} | {w:.1f} | {c:.1f} |")
    print(f"| **all** | **{total_wall:.1f}** | **{total_cpu:.1f}** |\n")
    print(f"| kernel (top {args.top}) | own s | signatures |\n|---|---:|---:|")
    for name, s in sorted(own_kernel.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"| {name} | {s:.2f} | {sigs[name]} |")
    print(f"| ({len(own_kernel)} kernels in all) | {sum(own_kernel.values()):.1f} | {sum(sigs.values())} |\n")
    print("| pass | s |\n|---|---:|")
    for name, s in sorted(excl_pass.items(), key=lambda kv: -kv[1])[:15]:
        print(f"| {name} | {s:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
