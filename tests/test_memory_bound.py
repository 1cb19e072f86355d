"""Encoding an endless stream of unique text keeps RSS flat: the piece caches have a fixed budget.

bench/memory_soak.py encodes 200 MB of newly generated random words with o200k_base, 1 MB per
call, in a fresh process and reads VmRSS after every call. After the first 64 MB (the caches have
filled and been cleared, every kernel has run) RSS may move by page-cache and allocator noise,
but not grow with the text: the bound, 64 MB, is less than half of the 136 MB encoded after the
warm-up, so anything kept per megabyte encoded (half a megabyte or more) fails it. The long run
(2 GB, four libraries) is the bench's: bench/results/memory-soak.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import memory_soak  # noqa: E402

MB_ENCODED = 200
WARMUP_MB = 64
GROWTH_BOUND_MB = 64


def test_rss_flat_on_unique_text(ours):
    ours("o200k_base")  # skips, naming the rank file, when it is missing
    env = dict(os.environ)
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "memory_soak.py"), "--libs", "ours",
                          "--mb", str(MB_ENCODED), "--json"], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    run = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(run["rss"]) == MB_ENCODED and run["ids"] > MB_ENCODED * 100_000
    s = memory_soak.stats(run, WARMUP_MB)
    print(f"\nRSS (MB): before {run['rss_before']}, at warm-up end {s['warm']}, max after {s['max']}, "
          f"last {s['last']}; {MB_ENCODED} MB in {run['seconds']} s")
    assert s["growth"] < GROWTH_BOUND_MB, (s, run["rss"])


def test_stats_measure_growth_after_warmup():
    """The statistic the bound is put on: growth after the warm-up, not the warm-up's own."""
    run = {"rss": [100.0, 150.0, 151.0, 149.0, 215.0, 160.0]}
    assert memory_soak.stats(run, 2) == {"warm": 150.0, "max": 215.0, "last": 160.0, "growth": 65.0}
    assert memory_soak.stats({"rss": [100.0, 300.0, 120.0]}, 2)["growth"] == 0.0


def test_word_stream_is_unique_text():
    """The stream's megabytes do not repeat (each call's words are new to the caches)."""
    s = memory_soak.WordStream(3)
    a, b = s.text(1 << 20), s.text(1 << 20)
    assert len(a) == len(b) == 1 << 20 and a.isascii() and a != b
    words = a.split()
    long_words = [w for w in words if len(w) >= 6]
    assert len(set(long_words)) > 0.95 * len(long_words)
    assert len(words) > 100_000
