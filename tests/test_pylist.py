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


@pytest.mark.parametrize("fast", [True, False])
def test_values_and_reference_counts(fast, monkeypatch):
    if fast and not pylist.available():
        pytest.skip("the direct path needs CPython 3.10/3.11 (gather path tested below)")
    monkeypatch.setattr(pylist, "_AVAILABLE", fast)
    objs = IntObjects(5000)
    ids = _ids(5000, 20_000, 1)
    # objects of this IntObjects only (small ints are shared singletons that other code counts too)
    watch = [int(t) for t in ids[100:110] if t >= 257] + [4999]
    before = [sys.getrefcount(objs.objects[t]) for t in watch]
    lst = objs.to_list(ids)
    assert type(lst) is list and lst == ids.tolist()
    assert all(type(x) is int for x in lst[:100])
    during = [sys.getrefcount(objs.objects[t]) for t in watch]
    for t, b, d in zip(watch, before, during):
        assert d - b == int((ids == t).sum()), t
    again = objs.to_list(ids[::-1].copy())
    assert again == lst[::-1]
    del lst, again
    gc.collect()
    assert [sys.getrefcount(objs.objects[t]) for t in watch] == before
    assert not objs.uses.any()  # the scratch counts are back to zero


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
