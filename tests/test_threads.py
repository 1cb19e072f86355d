"""threads.on_threads: every share runs once, w = 0 on the calling thread, a worker's error reaches the
caller after every worker has finished."""

from __future__ import annotations

import threading
import time

import pytest

from tltok_jit.engine.threads import on_threads


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_every_share_runs_once(threads):
    seen = []
    lock = threading.Lock()

    def work(w):
        with lock:
            seen.append((w, threading.get_ident()))

    on_threads(threads, work)
    assert sorted(w for w, _ in seen) == list(range(threads))
    assert dict(seen)[0] == threading.get_ident()
    assert len({ident for _, ident in seen}) == threads


def test_a_worker_error_after_every_worker_finished():
    finished = []

    def work(w):
        if w == 1:
            raise ValueError("share 1")
        time.sleep(0.05)
        finished.append(w)

    with pytest.raises(ValueError, match="share 1"):
        on_threads(3, work)
    assert sorted(finished) == [0, 2]
