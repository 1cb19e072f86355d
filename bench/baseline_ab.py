"""What the shipped kernels' portable CPU baseline costs: the package's compiled kernels against the same
kernels compiled for this machine's own CPU, side by side in one run.

    python bench/baseline_ab.py --native-cache /tmp/kc-native --out bench/results/baseline-ab.md

The native kernels are the user cache that `TLTOK_NO_SHIPPED_KERNELS=1 TLTOK_KERNEL_CACHE=DIR tltok
warmup` (once per encoding) compiles; the shipped ones are `tltok_jit/compiled/` (the package must be
built: `pip install -e .`). Each number is bench/worker.py's one timed call in a fresh process (warmed
up on other text, timed on unseen text); the two kernel sets alternate, process by process, and each
keeps its fastest of --repeat. Rows: one whole text on one thread, ~1.5 KB documents on two threads.
MB/s per CPU second of the timed call (all its threads): on a machine that is not idle, CPU time
moves far less than wall time, and both kernel sets run the same work.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import prepare  # noqa: E402
from bench.runner import run_job  # noqa: E402


def _timed(job: dict, env_extra: dict, timeout: float) -> dict:
    old = {k: os.environ.get(k) for k in env_extra}
    os.environ.update(env_extra)
    try:
        return run_job(job, timeout)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--native-cache", required=True, type=Path)
    ap.add_argument("--encodings", default="r50k_base,o200k_base")
    ap.add_argument("--corpora", default="english,code,chinese,scripts")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    from tltok_jit.kernels import numba_cache

    if not numba_cache.SHIPPED:
        ap.error(f"no usable shipped kernels: {numba_cache.SHIPPED_WHY}")
    cpu = numba_cache.read_manifest()["cpu"]
    sets = {cpu: {"TLTOK_NO_SHIPPED_KERNELS": ""},
            "native": {"TLTOK_NO_SHIPPED_KERNELS": "1", "TLTOK_KERNEL_CACHE": str(a.native_cache)}}
    encodings, corpora = a.encodings.split(","), a.corpora.split(",")
    inputs = prepare.build_inputs(["whole", "batch"], corpora, prepare.FULL)
    rows = []
    for inp in inputs:
        thr = 1 if inp.mode == "whole" else 2
        for enc in encodings:
            prepare.ensure_oracle(inp, enc)
            job = {"lib": "tltok_jit", "mode": inp.mode, "encoding": enc, "threads": thr, "input": str(inp.path),
                   "oracle": str(inp.oracles.get(enc, ""))}
            best: dict[str, float] = {}
            exact = True
            for _ in range(a.repeat):
                for name, extra in sets.items():
                    res = _timed(job, extra, a.timeout)
                    if res.get("status") != "ok":
                        raise SystemExit(f"{name} {job}: {res}")
                    exact &= res.get("exact", True) is not False
                    mbps = res["bytes"] / max(res["cpu_seconds"], 1e-9) / 1e6
                    best[name] = max(best.get(name, 0.0), mbps)
            rows.append((inp.mode, enc, inp.corpus, thr, best[cpu], best["native"], exact))
            print(f"{inp.mode} {enc} {inp.corpus} t={thr}: {cpu} {best[cpu]:.1f} native {best['native']:.1f} "
                  f"({best[cpu] / best['native']:.3f})", file=sys.stderr, flush=True)
    lines = [f"| mode | encoding | corpus | threads | {cpu} cpuMB/s | native cpuMB/s | {cpu} / native | exact |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for mode, enc, corpus, thr, s, n, ex in rows:
        lines.append(f"| {mode} | {enc} | {corpus} | {thr} | {s:.1f} | {n:.1f} | {s / n:.3f} | {'yes' if ex else 'NO'} |")
    ratios = [s / n for *_, s, n, _ in rows]
    text = (f"# Shipped baseline against native code ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores)\n\n"
            f"`python bench/baseline_ab.py --repeat {a.repeat}`: the same kernels, compiled for {cpu} (shipped) "
            f"and for this CPU, alternating fresh processes; MB per CPU second of the timed call, best of "
            f"{a.repeat} each; load average "
            f"{os.getloadavg()[0]:.1f} at the end.\n\n" + "\n".join(lines)
            + f"\n\n{cpu} / native: {min(ratios):.3f} .. {max(ratios):.3f}, geometric mean "
            f"{_gmean(ratios):.3f}.\n")
    print(text)
    if a.out:
        a.out.write_text(text)
    return 0


def _gmean(xs: list[float]) -> float:
    import math

    return math.exp(sum(math.log(x) for x in xs) / len(xs))


if __name__ == "__main__":
    sys.exit(main())
