"""numba's threads: a fork-safe threading layer, the number of workers a call asks for, and the one
lock every parallel kernel call runs under."""

from __future__ import annotations

import contextlib
import os
import threading

import numba

from .args import check_threads

# A fork-safe threading layer unless the user chose one: with GNU OpenMP (numba's pick where it is
# installed), a process that forks after a parallel call kills its children ("fork() called from a
# process already using GNU OpenMP"), which breaks multiprocessing pools and `datasets.map(num_proc=)`.
# numba takes it from its config at the first parallel call; "forksafe" picks tbb if installed, else
# the workqueue layer, which must not be entered by two threads at once (hence the lock).
if not os.environ.get("NUMBA_THREADING_LAYER") and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "forksafe"

PARALLEL_LOCK = threading.Lock()


def resolve_threads(num_threads: int | None) -> int:
    """The number of workers for `num_threads`: 0, less or None means every core numba may use."""
    limit = numba.config.NUMBA_NUM_THREADS
    num_threads = check_threads(num_threads)
    if num_threads is None or num_threads <= 0:
        return limit
    return min(int(num_threads), limit)


@contextlib.contextmanager
def parallel(workers: int):
    """Run the body's parallel kernel calls on `workers` threads, holding PARALLEL_LOCK (numba's
    thread count is process-wide, and the workqueue layer takes one caller at a time)."""
    with PARALLEL_LOCK:
        prev = numba.get_num_threads()
        numba.set_num_threads(max(1, workers))
        try:
            yield
        finally:
            numba.set_num_threads(prev)
