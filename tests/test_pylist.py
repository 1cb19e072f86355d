"""pylist: lists of prebuilt int objects written straight into the list (CPython 3.10/3.11), and
the gather path everywhere else. Equal values, and reference counts that balance."""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

from tltok_jit import pylist
from tltok_jit.pylist import IntObjects


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
    ids = _ids(5000, 20_000, 1)
    # objects of this IntObjects only (small ints are shared singletons that other code counts too)
    watch = [int(t) for t in ids[100:110] if t >= 257] + [int(ids[-1]), 4999]
    before = [sys.getrefcount(objs.objects[t]) for t in watch]
    lst = objs.to_list(ids, threads)
    assert type(lst) is list and lst == ids.tolist()
    assert all(type(x) is int for x in lst[:100])
    during = [sys.getrefcount(objs.objects[t]) for t in watch]
    for t, b, d in zip(watch, before, during):
        assert d - b == int((ids == t).sum()), t
    again = objs.to_list(ids[::-1].copy(), threads)
    assert again == lst[::-1]
    del lst, again
    gc.collect()
    assert [sys.getrefcount(objs.objects[t]) for t in watch] == before
    assert not any(u.any() for u in objs.uses)  # the scratch counts are back to zero
    if fast:
        assert len(objs.uses) == threads


def test_a_failed_fill_leaves_no_reference_behind(monkeypatch):
    """When a worker's kernel fails (it could not compile), the list falls back to the gather path and
    no object keeps a reference the half-filled list held."""
    if not pylist.available():
        pytest.skip("the direct path needs CPython 3.10/3.11")
    monkeypatch.setattr(pylist, "_AVAILABLE", True)
    monkeypatch.setattr(pylist, "MIN_IDS_PER_WORKER", 1000)
    real = pylist._fill

    def fail_on_worker_1(items, ids, lo, hi, addrs, uses, seen):
        k = real(items, ids, lo, hi, addrs, uses, seen)  # this part written and counted, then ...
        if lo > 0:
            raise RuntimeError("no kernel")
        return k

    monkeypatch.setattr(pylist, "_fill", fail_on_worker_1)
    objs = IntObjects(5000)
    ids = _ids(5000, 20_000, 3)
    watch = sorted({int(t) for t in ids if t >= 257})[:50]
    before = [sys.getrefcount(objs.objects[t]) for t in watch]
    lst = objs.to_list(ids, 2)
    assert lst == ids.tolist() and not pylist.available()
    del lst
    gc.collect()
    assert [sys.getrefcount(objs.objects[t]) for t in watch] == before
    assert not any(u.any() for u in objs.uses)


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
