"""One text encoded with every piece unseen, then again seen, in one process: what merging costs.

    python bench/unseen.py o200k_base english          # the first third of the corpus, 15 calls each
    python bench/unseen.py r50k_base code --calls 25 --whole

Before each "unseen" call the thread's piece cache is emptied in place, so every piece that is not a
whole token is merged again (the tables stay warm in the CPU caches, as they are in a long job); the
"seen" call right after it finds them cached. Printed: min and median MB/s of each. The difference
between the two is the merge route's cost (merge.merge_side_by_side and merge_piece, the cache
writes). For an A/B of two trees, run it alternately from each checkout with its own
TLTOK_KERNEL_CACHE, several processes each: on a shared 2-core machine the speed of a process moves
by up to 2x, so compare medians over alternating processes, not one pair.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import data  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("encoding")
    ap.add_argument("corpus", choices=data.CORPORA)
    ap.add_argument("--calls", type=int, default=15)
    ap.add_argument("--whole", action="store_true", help="the whole corpus (default: its first third)")
    a = ap.parse_args(argv)
    import tltok_jit
    from tltok_jit.kernels.cache import empty_cache

    enc = tltok_jit.get_encoding(a.encoding)
    if enc.compile_state != "compiled":
        enc.encode_to_numpy("x")  # the kernels, not the Python encoder that answers while they compile
    warm = data.warmup_text()
    for _ in range(2):
        enc.encode_to_numpy(warm, num_threads=1)
    text = data.corpus(a.corpus)
    if not a.whole:
        text = text[:len(text) // 3]
    nbytes = len(text.encode("utf-8"))
    cache, _ = enc.engine.serial_workspace()
    unseen, seen = [], []
    for _ in range(a.calls):
        empty_cache(cache)
        for times in (unseen, seen):
            t0 = time.perf_counter()
            enc.encode_to_numpy(text, num_threads=1)
            times.append(time.perf_counter() - t0)

    def mbps(times: list[float]) -> str:
        return f"min {nbytes / min(times) / 1e6:6.1f} med {nbytes / float(np.median(times)) / 1e6:6.1f} MB/s"

    print(f"{a.encoding} {a.corpus} ({nbytes:,} bytes): unseen {mbps(unseen)} | seen {mbps(seen)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
