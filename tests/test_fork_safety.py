"""Parallel calls leave a process that can still fork workers (multiprocessing's fork start method,
`datasets.map(num_proc=)`), and many Python threads may share one Encoding."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FORK_AFTER_PARALLEL = """
import multiprocessing as mp
import tltok_jit
enc = tltok_jit.get_encoding("r50k_base")
texts = ["hello world %d, and some more text" % i for i in range(200)]
expected = enc.encode_batch(texts, num_threads=2)        # a parallel call in the parent first
with mp.get_context("fork").Pool(2) as pool:
    got = pool.map(enc.encode_ordinary, texts, chunksize=20)
    got_batches = pool.map(enc.encode_ordinary_batch, [texts[:100], texts[100:]])
assert got == expected, "fork pool ids differ"
assert got_batches[0] + got_batches[1] == expected
import numba
try:
    layer = numba.threading_layer()
except ValueError:  # never started: no kernel is a numba parallel loop
    layer = "none"
print("OK", layer)
"""


def test_fork_pool_after_a_parallel_call():
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMBA_THREADING_LAYER", None)
    p = subprocess.run([sys.executable, "-c", FORK_AFTER_PARALLEL], env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.startswith("OK"), p.stdout
    # the parallel calls ran on Python threads: numba's threading layer (GNU OpenMP kills the
    # children of a process that used it) was never started
    assert p.stdout.split()[1] == "none", p.stdout


def test_threads_sharing_one_encoding(ours, tiktoken_oracle):
    enc = ours("r50k_base")
    oracle = tiktoken_oracle("r50k_base")
    texts = [f"thread text {i} with words and 12345 digits, ünïcode 日本語" for i in range(400)]
    expected = [oracle.encode_ordinary(t) for t in texts]
    results: dict[int, list] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            if k % 2:
                results[k] = enc.encode_ordinary_batch(texts, num_threads=2)
            else:
                results[k] = [enc.encode_ordinary(t) for t in texts]
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert len(results) == 8
    for r in results.values():
        assert r == expected
