"""pylist: lists of immortal prebuilt int objects written straight into the list (CPython
3.10/3.11), and the gather path everywhere else. Equal values, and reference counts that stay
immortal or balance."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from tltok_jit.engine import pylist
from tltok_jit.engine.pylist import IntObjects


def _ids(n_vocab: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, n_vocab, n).astype(np.uint32)
    ids[: min(n, 50)] = 7  # a small int (a shared singleton), many times
    return ids


@pytest.mark.parametrize("fast,threads", [(True, 1), (True, 2), (True, 3), (False, 1)])
def test_values_and_reference_counts(fast, threads, monkeypatch):
    if fast and not pylist.available():
        pytest.skip("the direct path needs CPython 3.10/3.11 (gather path tested below)")
    monkeypatch.setattr(pylist, "_AVAILABLE", fast)
    monkeypatch.setattr(pylist, "MIN_IDS_PER_WORKER", 1000)  # parts of 20,000 ids on `threads` threads
    objs = IntObjects(5000)
    assert objs.immortal == fast
    ids = _ids(5000, 20_000, 1)
    watch = [int(t) for t in ids[100:110] if t >= 257] + [int(ids[-1]), 4999, 7]
    before = [sys.getrefcount(objs.objects[t]) for t in watch]
    lst = objs.to_list(ids, threads)
    assert type(lst) is list and lst == ids.tolist()
    assert all(type(x) is int for x in lst[:100])
    assert all(lst[i] is objs.objects[int(ids[i])] for i in range(0, len(ids), 97))  # the table's objects
    during = [sys.getrefcount(objs.objects[t]) for t in watch]
    if fast:  # immortal: the list takes no reference; freeing it gives one back per use
        # (small ints are counted by other code too: compiling the fill kernel on a cold cache moved 7's)
        assert all(d == b for t, b, d in zip(watch, before, during) if t >= 257)
        assert min(before) > pylist.IMMORTAL_BIAS // 2
    else:
        for t, b, d in zip(watch, before, during):
            if t >= 257:  # (small ints are counted by other code too)
                assert d - b == int((ids == t).sum()), t
    again = objs.to_list(ids[::-1].copy(), threads)
    assert again == lst[::-1]
    del lst, again
    gc.collect()
    after = [sys.getrefcount(objs.objects[t]) for t in watch]
    for t, b, a in zip(watch, before, after):
        if t >= 257:
            assert b - a == (2 * int((ids == t).sum()) if fast else 0), t


def test_small_ints_are_raised_once_per_process():
    if not pylist.available():
        pytest.skip("the direct path needs CPython 3.10/3.11")
    tables = [IntObjects(300) for _ in range(3)] + [pylist.int_objects(300)]
    assert all(t.immortal for t in tables)
    assert pylist.IMMORTAL_BIAS < sys.getrefcount(7) < 2 * pylist.IMMORTAL_BIAS  # not once per table
    assert pylist.int_objects(10) is pylist.int_objects(300)  # one table per process, grown
    small, big = pylist.int_objects(300), pylist.int_objects(600)
    assert big.objects[299] is small.objects[299] and len(big.addrs) >= 600
    assert big.addrs.tolist() == [id(o) for o in big.objects]  # the addresses, read from the object array
    assert [type(o) for o in big.objects[295:305]] == [int] * 10 and big.objects.tolist() == list(range(len(big.addrs)))


def test_a_failed_fill_leaves_no_object_in_the_list(monkeypatch):
    """When a worker's kernel fails (it could not compile), the list falls back to the gather path and
    the half-filled list is freed without touching what its slots pointed to."""
    if not pylist.available():
        pytest.skip("the direct path needs CPython 3.10/3.11")
    monkeypatch.setattr(pylist, "_AVAILABLE", True)
    monkeypatch.setattr(pylist, "MIN_IDS_PER_WORKER", 1000)
    real = pylist._fill

    def fail_on_worker_1(items, ids, lo, hi, addrs):
        real(items, ids, lo, hi, addrs)  # this part written, then ...
        if lo > 0:
            raise RuntimeError("no kernel")

    monkeypatch.setattr(pylist, "_fill", fail_on_worker_1)
    objs = IntObjects(5000)
    ids = _ids(5000, 20_000, 3)
    watch = sorted({int(t) for t in ids if t >= 257})[:50]
    before = [sys.getrefcount(objs.objects[t]) for t in watch]
    lst = objs.to_list(ids, 2)
    assert lst == ids.tolist() and not pylist.available()
    del lst  # the gather path's list: its own references, given back
    gc.collect()
    assert [sys.getrefcount(objs.objects[t]) for t in watch] == before


def test_list_behaves_like_any_list():
    objs = IntObjects(300)
    ids = _ids(300, 1000, 2)
    lst = objs.to_list(ids)
    lst.append(5)
    lst.sort()
    assert lst == sorted(ids.tolist() + [5])
    assert sum(lst) == int(ids.astype(np.int64).sum()) + 5
    assert objs.to_list(np.zeros(0, dtype=np.uint32)) == []


def test_encode_returns_plain_lists(ours):
    enc = ours("r50k_base")
    text = "Hello world, " * 2000
    ids = enc.encode_ordinary(text)
    assert ids == enc.encode_to_numpy(text).tolist() and type(ids) is list
    rows = enc.encode_ordinary_batch([text, "", text[:300]], num_threads=1)
    assert rows[0] == ids and rows[1] == [] and rows[2] == enc.encode_ordinary(text[:300])


def test_out_of_range_id_is_refused():
    objs = IntObjects(300)
    with pytest.raises(IndexError):
        objs.to_list(np.array([1, 2, 300] * 100, dtype=np.uint32))
