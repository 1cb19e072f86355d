"""Running one call's kernels on several cores: the number of workers a call asks for, Python threads
that each run a serial kernel (every kernel releases the GIL), and the lock the shared per-Encoding
parallel workspaces are used under.

No kernel uses numba's `parallel=True`: a parallel loop compiled a second copy of its body (a third
of the column kernels' compile time), and numba's threading layer breaks `fork` after a call (GNU
OpenMP kills the children of a process that used it). Threads are started per call, never pooled,
so a forked child starts clean.
"""

from __future__ import annotations

import _thread
import threading
from collections.abc import Callable

import numba
import numpy as np

from .args import check_threads

# Held while a call uses an Encoding's parallel workspace (piece caches and scratch rows, one per
# worker), which every multi-threaded call of that Encoding shares.
PARALLEL_LOCK = threading.Lock()

# A thread costs ~50-100 us to start and join: below this many bytes a worker's share would not pay
# for it, so a call that small runs on the calling thread alone.
MIN_BYTES_PER_WORKER = 1 << 15


def resolve_threads(num_threads: int | None) -> int:
    """The number of workers for `num_threads`: 0, less or None means every core numba may use."""
    limit = numba.config.NUMBA_NUM_THREADS
    num_threads = check_threads(num_threads)
    if num_threads is None or num_threads <= 0:
        return limit
    return min(int(num_threads), limit)


def workers_for(threads: int, total_bytes: int) -> int:
    """`threads`, or fewer when `total_bytes` leaves a worker less than MIN_BYTES_PER_WORKER."""
    return max(1, min(threads, total_bytes // MIN_BYTES_PER_WORKER))


def balanced_bounds(offsets: np.ndarray, parts: int) -> np.ndarray:
    """int64 row bounds [0, ..., n] cutting rows with cumulative sizes `offsets` (n + 1 entries) into
    `parts` contiguous chunks of about equal size (a chunk may be empty)."""
    n = len(offsets) - 1
    total = int(offsets[-1] - offsets[0]) if n > 0 else 0
    targets = offsets[0] + (np.arange(1, parts, dtype=np.int64) * total) // parts
    inner = np.searchsorted(offsets, targets, side="left").astype(np.int64)
    bounds = np.concatenate(([0], np.clip(inner, 0, n), [n])).astype(np.int64)
    return np.maximum.accumulate(bounds)


def on_threads(threads: int, work: Callable[[int], object]) -> None:
    """work(w) for w in range(threads): w = 0 on the calling thread, the others on threads of their
    own. The first error is raised, after every worker has finished.

    The others start through `_thread`, each releasing a lock of its own when done: `Thread.start`
    waits until the new thread runs (~80 us on a 2-core VM, the calling thread's own share waiting with it);
    `_thread.start_new_thread` returns in ~10."""
    if threads <= 1:
        work(0)
        return
    errors: list[BaseException] = []

    def run(w: int, done) -> None:
        try:
            work(w)
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            errors.append(e)
        finally:
            if done is not None:
                done.release()

    waits = []
    for w in range(1, threads):
        done = _thread.allocate_lock()
        done.acquire()
        try:
            _thread.start_new_thread(run, (w, done))
        except RuntimeError:  # no thread to be had: the calling thread does this share too
            done.release()
            run(w, None)
            continue
        waits.append(done)
    run(0, None)
    for done in waits:
        done.acquire()
    if errors:
        raise errors[0]
