"""Subprocess runner: each measurement in a fresh Python process.

One job: start bench/worker.py with a clean, explicit environment and a
timeout, and return its JSON result (or an error/timeout record).

Environment of every worker:
  RAYON_NUM_THREADS=N, FASTOKENS_BPE_THREADS=N, NUMBA_NUM_THREADS=N, TLTOK_COMPILE=foreground,
  TOKENIZERS_PARALLELISM=true (HF obeys RAYON_NUM_THREADS),
  TIKTOKEN_CACHE_DIR="" (no tiktoken cache), TLTOK_DATA=<shared>/tokenizers
  (unless already set), FASTOKENS_INPUT_CACHE / FASTOKENS_SEGMENT_CACHE unset
  (fastokens' caches stay off, their default).
The worker also pins itself to N CPUs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.data import REPO_ROOT, tokenizers_dir

WORKER = Path(__file__).resolve().parent / "worker.py"
MARK = "@@RESULT@@"


def worker_env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    n = str(max(1, threads))
    env.update(
        RAYON_NUM_THREADS=n,
        FASTOKENS_BPE_THREADS=n,
        NUMBA_NUM_THREADS=n,
        TOKENIZERS_PARALLELISM="true",
        TIKTOKEN_CACHE_DIR="",
        PYTHONUNBUFFERED="1",
        # time the kernels, never the Python encoder that answers while they compile (the warm-up
        # before the timed call compiles or loads them); bench/cold_start.py times first use
        TLTOK_COMPILE="foreground",
    )
    env.setdefault("TLTOK_DATA", str(tokenizers_dir()))
    for k in ("FASTOKENS_INPUT_CACHE", "FASTOKENS_SEGMENT_CACHE"):
        env.pop(k, None)
    pp = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + pp if pp else "")
    return env


def run_job(job: dict, timeout: float) -> dict:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, str(WORKER), json.dumps(job)],
            env=worker_env(int(job.get("threads", 1))),
            cwd=str(REPO_ROOT),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"status": "n/a", "reason": f"timeout > {timeout:.0f}s (whole process)"}
    wall = time.perf_counter() - t0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(MARK):
            res = json.loads(line[len(MARK):])
            res["process_s"] = wall
            return res
    tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
    return {"status": "error", "reason": f"worker exited {proc.returncode}: {' | '.join(tail)[:300]}"}
